"""AXI4 N:1 arbiters: merge several AXI4 masters (e.g. the TX and RX DMA channels) onto one port.

:class:`Axi4ReadArbiter` merges read halves (AR/R), :class:`Axi4WriteArbiter` write halves
(AW/W/B). Both are purely combinational on the data path (zero added latency); the only state
is the round-robin pointer, the grant lock that keeps a waiting address stable, and (writes)
the FIFO of granted masters that orders the W channel.

ID scheme: the output ID is ``Cat(input_id, master_index)``, i.e. the master's index occupies
the upper ``ceil_log2(n)`` bits of ARID/AWID and the master's own ID the lower
``id_width_in`` bits. Responses (R, B) are routed back by those upper bits of RID/BID and
returned with only the lower ``id_width_in`` bits. Because every master has its own ID
space, a slave may reorder and interleave responses of different masters as AXI permits,
and per-master ordering is whatever the master's own IDs imply.

Use :func:`macdma.hdl.bus.axi4.connect_read_write` to join the two arbiters' ``o`` halves
onto one full ``m_axi`` port.
"""

from amaranth import *
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from .axi4 import Axi4ReadSignature, Axi4WriteSignature

__all__ = ["Axi4ReadArbiter", "Axi4WriteArbiter"]

MAX_MASTERS = 16


def _check_params(cls, n, addr_width, data_width, id_width_in):
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_MASTERS:
        raise ValueError(f"{cls.__name__} n must be an integer in 1..{MAX_MASTERS}, not {n!r}")
    if not isinstance(id_width_in, int) or isinstance(id_width_in, bool) or id_width_in < 1:
        raise ValueError(
            f"{cls.__name__} id_width_in must be a positive integer, not {id_width_in!r}"
        )
    if id_width_in + ceil_log2(n) > 32:
        raise ValueError(
            f"{cls.__name__} id_width_in {id_width_in!r} + ceil_log2(n={n}) index bits "
            f"exceeds the 32-bit AXI ID limit"
        )
    # Width checks (addr_width 12..64, data_width 32/64) are done by the signature itself;
    # build one now so a bad value fails before any member is created.
    Axi4ReadSignature(addr_width, data_width, id_width_in)


def _address_arbiter(m, prefix, valids, o_ready, *, block=None):
    """Round-robin arbitration of one address channel (AR or AW).

    Returns ``(grant, o_valid, fire)``. ``grant`` is the selected master: the round-robin pick
    among the requesting masters, or, while a granted address waits for ready, the locked
    master (AXI: a valid address must stay stable until its handshake). ``block`` keeps any
    new address from being offered (the write FIFO is full). After each handshake the
    priority pointer moves past the winner, so every requester is served within ``n`` grants.
    """
    n = len(valids)
    if block is None:
        block = C(0)
    req = Cat(*valids)
    locked = Signal(name=f"{prefix}_locked")
    held = Signal(range(n), name=f"{prefix}_held")
    prio = Signal(range(n), name=f"{prefix}_prio")
    pick = Signal(range(n), name=f"{prefix}_pick")
    grant = Signal(range(n), name=f"{prefix}_grant")
    o_valid = Signal(name=f"{prefix}_valid")

    with m.Switch(prio):
        for p in range(n):
            with m.Case(p):
                # Lowest priority first so the highest-priority requester is assigned last.
                for k in reversed(range(n)):
                    idx = (p + k) % n
                    with m.If(req[idx]):
                        m.d.comb += pick.eq(idx)

    with m.If(locked):
        m.d.comb += [grant.eq(held), o_valid.eq(req.bit_select(held, 1))]
    with m.Else():
        m.d.comb += [grant.eq(pick), o_valid.eq(req.any() & ~block)]

    fire = o_valid & o_ready
    m.d.sync += [locked.eq(o_valid & ~o_ready), held.eq(grant)]
    with m.If(fire):
        m.d.sync += prio.eq(Mux(grant == n - 1, 0, grant + 1))
    return grant, o_valid, fire


def _mux_channel(m, inputs, o, names, grant):
    """Drive the master-driven ``names`` of ``o`` from the input selected by ``grant``."""
    for name in names:
        with m.Switch(grant):
            for k, inp in enumerate(inputs):
                with m.Case(k):
                    m.d.comb += getattr(o, name).eq(getattr(inp, name))


def _route_response(m, inputs, o, prefix, id_width_in, names):
    """Route a response channel (R or B) to the master named by the upper ID bits.

    ``names`` are the payload members broadcast to every input; valid goes only to the
    addressed master and the output ready comes from it. An ID naming no master (only
    possible for a non-power-of-two ``n`` and a misbehaving slave) is drained.
    """
    n = len(inputs)
    o_id = getattr(o, f"{prefix}id")
    o_valid = getattr(o, f"{prefix}valid")
    o_ready = getattr(o, f"{prefix}ready")
    sel = o_id[id_width_in:]
    m.d.comb += o_ready.eq(1)
    for k, inp in enumerate(inputs):
        hit = sel == k if n > 1 else C(1)
        m.d.comb += [
            getattr(inp, f"{prefix}id").eq(o_id[:id_width_in]),
            getattr(inp, f"{prefix}valid").eq(o_valid & hit),
        ]
        for name in names:
            m.d.comb += getattr(inp, name).eq(getattr(o, name))
        with m.If(hit):
            m.d.comb += o_ready.eq(getattr(inp, f"{prefix}ready"))


class _ArbiterBase(wiring.Component):
    def __init__(self, signature_cls, n, addr_width, data_width, id_width_in, extra=None):
        _check_params(type(self), n, addr_width, data_width, id_width_in)
        if extra is not None:
            extra()
        self._n = n
        self._addr_width = addr_width
        self._data_width = data_width
        self._id_width_in = id_width_in
        self._index_bits = ceil_log2(n)
        members = {
            f"i{k}": In(signature_cls(addr_width, data_width, id_width_in)) for k in range(n)
        }
        members["o"] = Out(signature_cls(addr_width, data_width, id_width_in + self._index_bits))
        super().__init__(members)

    @property
    def n(self) -> int:
        return self._n

    @property
    def addr_width(self) -> int:
        return self._addr_width

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def id_width_in(self) -> int:
        return self._id_width_in

    @property
    def id_width_out(self) -> int:
        return self._id_width_in + self._index_bits

    @property
    def inputs(self) -> tuple:
        """The input interfaces ``(i0, i1, ...)`` in master-index order."""
        return tuple(getattr(self, f"i{k}") for k in range(self._n))


class Axi4ReadArbiter(_ArbiterBase):
    """Round-robin N:1 arbiter for the read half (AR/R) of AXI4 masters.

    Parameters
    ----------
    n : 1..16
        Number of masters.
    addr_width : 12..64
    data_width : 32 or 64
    id_width_in : >= 1
        ID width of each master; the output ID is ``id_width_in + ceil_log2(n)`` bits
        (at most 32).

    Members
    -------
    i0, i1, ..., i{n-1} : In(Axi4ReadSignature(addr_width, data_width, id_width_in))
        One slave-side port per master (connect a master's ``Out(Axi4ReadSignature)`` to it).
        The :attr:`inputs` property returns them as a tuple, index = master index.
    o : Out(Axi4ReadSignature(addr_width, data_width, id_width_in + ceil_log2(n)))
        The merged master port. ``ARID = Cat(master ARID, master index)``.

    Behaviour: each AR request is arbitrated round-robin among the masters with ARVALID
    high; the winner's address is passed through combinationally (same cycle) and, if the
    slave does not take it at once, held (grant locked) until ARREADY. R beats are routed by
    the upper RID bits combinationally, with the master's own RID in the lower bits, so any
    number of bursts of different masters may be outstanding and the slave may return them
    in any order AXI allows (even interleaved per beat across masters).
    """

    def __init__(
        self, n: int = 2, addr_width: int = 32, data_width: int = 32, id_width_in: int = 1
    ):
        super().__init__(Axi4ReadSignature, n, addr_width, data_width, id_width_in)

    def elaborate(self, platform):
        m = Module()
        inputs, o = self.inputs, self.o

        grant, valid, _ = _address_arbiter(m, "ar", [inp.arvalid for inp in inputs], o.arready)
        _mux_channel(
            m, inputs, o,
            ["araddr", "arlen", "arsize", "arburst", "arlock", "arcache", "arprot"],
            grant,
        )  # fmt: skip
        arid = Signal(self._id_width_in)
        with m.Switch(grant):
            for k, inp in enumerate(inputs):
                with m.Case(k):
                    m.d.comb += arid.eq(inp.arid)
        m.d.comb += [o.arid.eq(Cat(arid, grant[: self._index_bits])), o.arvalid.eq(valid)]
        for k, inp in enumerate(inputs):
            m.d.comb += inp.arready.eq(o.arready & valid & (grant == k))

        _route_response(m, inputs, o, "r", self._id_width_in, ["rdata", "rresp", "rlast"])
        return m


class Axi4WriteArbiter(_ArbiterBase):
    """Round-robin N:1 arbiter for the write half (AW/W/B) of AXI4 masters.

    Parameters
    ----------
    n : 1..16
        Number of masters.
    addr_width : 12..64
    data_width : 32 or 64
    id_width_in : >= 1
        ID width of each master; the output ID is ``id_width_in + ceil_log2(n)`` bits.
    w_fifo_depth : >= 1 (default 8)
        Granted AWs whose W data has not been fully forwarded yet. When full, no further AW
        is granted until a burst's WLAST passes (a throttle, never a deadlock). Make it at
        least the total number of bursts the masters keep outstanding to avoid the throttle.

    Members
    -------
    i0, i1, ..., i{n-1} : In(Axi4WriteSignature(addr_width, data_width, id_width_in))
        One slave-side port per master; :attr:`inputs` returns them as a tuple.
    o : Out(Axi4WriteSignature(addr_width, data_width, id_width_in + ceil_log2(n)))
        The merged master port. ``AWID = Cat(master AWID, master index)``.

    Behaviour: AW is arbitrated round-robin per request, passed through combinationally and
    held (grant locked) until AWREADY. Every AW handshake pushes the winner's index into a
    FIFO; W beats are forwarded (combinationally) only from the master at the FIFO head, up to
    and including its WLAST, so the output W order always equals the output AW order. W beats
    of other masters are simply not accepted yet (their WREADY stays low), so a master may
    present W before or while its AW waits. When the FIFO is empty, W of the master whose AW
    is currently offered on ``o`` is forwarded already before AWREADY: a slave that waits
    for WVALID before raising AWREADY (legal AXI4) therefore cannot deadlock. If that burst's
    W completes before its AW handshake, the AW is not queued (its data already went out)
    and no further W passes until the AW is taken. B responses are routed back by the upper
    BID bits, combinationally.
    """

    def __init__(
        self,
        n: int = 2,
        addr_width: int = 32,
        data_width: int = 32,
        id_width_in: int = 1,
        w_fifo_depth: int = 8,
    ):
        def check_depth():
            if (
                not isinstance(w_fifo_depth, int)
                or isinstance(w_fifo_depth, bool)
                or not 1 <= w_fifo_depth <= 256
            ):
                raise ValueError(
                    f"Axi4WriteArbiter w_fifo_depth must be an integer in 1..256, "
                    f"not {w_fifo_depth!r}"
                )

        super().__init__(
            Axi4WriteSignature, n, addr_width, data_width, id_width_in, extra=check_depth
        )
        self._w_fifo_depth = w_fifo_depth

    @property
    def w_fifo_depth(self) -> int:
        return self._w_fifo_depth

    def elaborate(self, platform):
        m = Module()
        n = self._n
        inputs, o = self.inputs, self.o

        # Masters granted on AW whose W burst has not passed completely; head = current W.
        m.submodules.w_order = order = fifo.SyncFIFO(
            width=max(1, ceil_log2(n)), depth=self._w_fifo_depth
        )

        grant, aw_valid, aw_fire = _address_arbiter(
            m, "aw", [inp.awvalid for inp in inputs], o.awready, block=~order.w_rdy
        )
        _mux_channel(
            m, inputs, o,
            ["awaddr", "awlen", "awsize", "awburst", "awlock", "awcache", "awprot"],
            grant,
        )  # fmt: skip
        awid = Signal(self._id_width_in)
        with m.Switch(grant):
            for k, inp in enumerate(inputs):
                with m.Case(k):
                    m.d.comb += awid.eq(inp.awid)
        m.d.comb += [o.awid.eq(Cat(awid, grant[: self._index_bits])), o.awvalid.eq(aw_valid)]
        for k, inp in enumerate(inputs):
            m.d.comb += inp.awready.eq(o.awready & aw_valid & (grant == k))

        # ---- W: from the FIFO head, or early from the AW on offer when nothing is queued ------
        # The W burst of the AW currently on offer (not yet accepted) has already passed.
        w_done_early = Signal()
        early = ~order.r_rdy & aw_valid & ~w_done_early
        w_en = order.r_rdy | early
        w_sel = Signal(range(n))
        m.d.comb += w_sel.eq(Mux(order.r_rdy, order.r_data, grant))

        m.d.comb += o.wvalid.eq(0)
        with m.Switch(w_sel):
            for k, inp in enumerate(inputs):
                with m.Case(k):
                    m.d.comb += [
                        o.wdata.eq(inp.wdata),
                        o.wstrb.eq(inp.wstrb),
                        o.wlast.eq(inp.wlast),
                        o.wvalid.eq(inp.wvalid & w_en),
                    ]
        for k, inp in enumerate(inputs):
            m.d.comb += inp.wready.eq(o.wready & w_en & (w_sel == k))
        w_last_fire = o.wvalid & o.wready & o.wlast

        m.d.comb += [
            order.w_data.eq(grant),
            # Queue the granted master unless its burst's W has already gone out in full.
            order.w_en.eq(aw_fire & ~w_done_early & ~(early & w_last_fire)),
            order.r_en.eq(order.r_rdy & w_last_fire),
        ]
        with m.If(aw_fire):
            m.d.sync += w_done_early.eq(0)
        with m.Elif(early & w_last_fire):
            m.d.sync += w_done_early.eq(1)

        _route_response(m, inputs, o, "b", self._id_width_in, ["bresp"])
        return m
