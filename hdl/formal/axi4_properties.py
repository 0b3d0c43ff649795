"""AXI4 master properties: what a master must do on AR/R and AW/W/B, and what it may assume.

Ref: AMBA AXI and ACE Protocol Specification (ARM IHI 0022E): A3.2.1 handshake (a VALID, once
high, stays high with its payload stable until READY), A3.1.2 reset (VALIDs low
after reset), A3.4.1 burst length (INCR at most 256 beats), A3.4.1 "a burst must not cross a
4KB address boundary", A3.4.1 burst size (at most the data bus width), A3.3 dependencies (the
slave answers with R only after AR, B only after the last W beat and the AW), A3.2.2 RLAST
and WLAST (on the last beat of the burst only).

The checkers observe a master-view interface (:mod:`macdma.hdl.bus.axi4`). By default they
``Assert`` what the master drives and ``Assume`` what the slave drives, so the slave is any
protocol-correct slave, free to stall any channel for any time; with ``proven="slave"`` the
roles swap (the component under proof is the slave, e.g. an arbiter's slave-side port, and
the master is any protocol-correct master). They are written after the rules, not after the
movers, and are used for every AXI4 interface in the proofs.

IDs: ``ids`` lists the ID values the master uses (default: only 0, as the DMA's movers).
The slave may answer bursts of different IDs in any order (and interleave read data), but
those of one ID in the order of their addresses (A5.3), so the checker keeps one queue of
bursts per ID.
"""

from amaranth import *
from amaranth.hdl import Assert, Assume
from amaranth.utils import exact_log2

from ..bus.axi4 import BURST_INCR, MAX_BURST_BEATS, PAGE_BYTES
from .queue import RecordQueue

__all__ = ["Axi4ReadProperties", "Axi4WriteProperties", "clamped_burst_cap"]

#: ``proven``: whose rules are asserted; "neither" assumes both sides' (a proof of something
#: else that relies on the master's rules proven elsewhere).
ROLES = ("master", "slave", "neither")


class _Rules:
    """Which side's rules are asserted (the component under proof), which assumed."""

    def __init__(self, proven: str):
        if proven not in ROLES:
            raise ValueError(f"proven must be 'master', 'slave' or 'neither', not {proven!r}")
        self._proven = proven

    def master(self, expr):
        """A rule the master must keep."""
        return Assert(expr) if self._proven == "master" else Assume(expr)

    def slave(self, expr):
        """A rule the slave must keep."""
        return Assert(expr) if self._proven == "slave" else Assume(expr)


def _check_ids(ids, id_width):
    ids = tuple(ids)
    if not ids or len(set(ids)) != len(ids) or any(not 0 <= i < 2**id_width for i in ids):
        raise ValueError(f"ids must be distinct values of {id_width} bits, not {ids!r}")
    return ids


def _member(value, ids):
    return Cat(value == i for i in ids).any()


def clamped_burst_cap(burst_beats: Value) -> Value:
    """The BURST_BEATS register as the movers document it: 0 reads as 1, above 256 as 256."""
    return Mux(
        burst_beats == 0, 1, Mux(burst_beats > MAX_BURST_BEATS, MAX_BURST_BEATS, burst_beats)
    )


def _request_rules(m, rules, bus, prefix, started, held, burst_cap, beat_bytes, ids):
    """Rules of one address channel (AR or AW) of a master: reset, hold, burst shape."""
    valid = getattr(bus, f"{prefix}valid")
    ready = getattr(bus, f"{prefix}ready")
    addr = getattr(bus, f"{prefix}addr")
    length = getattr(bus, f"{prefix}len")
    size = getattr(bus, f"{prefix}size")
    burst = getattr(bus, f"{prefix}burst")
    payload = Cat(
        addr,
        length,
        size,
        burst,
        getattr(bus, f"{prefix}id"),
        getattr(bus, f"{prefix}lock"),
        getattr(bus, f"{prefix}cache"),
        getattr(bus, f"{prefix}prot"),
    )
    # VALID low in the first cycle after reset.
    with m.If(~started):
        m.d.comb += rules.master(~valid)
    # A VALID not yet accepted stays, with the same payload.
    past_waiting, past_payload = held(valid & ~ready, payload)
    with m.If(started & past_waiting):
        m.d.comb += rules.master(valid & (payload == past_payload))
    page_offset = addr[: exact_log2(PAGE_BYTES)]
    burst_bytes = (length + 1) << exact_log2(beat_bytes)
    with m.If(valid):
        m.d.comb += [
            # Only INCR bursts of full-width beats from a beat-aligned address.
            rules.master(burst == BURST_INCR),
            rules.master(size == exact_log2(beat_bytes)),
            rules.master(addr[: exact_log2(beat_bytes)] == 0),
            # Never across a 4 KiB boundary.
            rules.master(page_offset + burst_bytes <= PAGE_BYTES),
            # Never longer than the programmed BURST_BEATS.
            rules.master(length + 1 <= burst_cap),
            # Only the IDs the master is documented to use.
            rules.master(_member(getattr(bus, f"{prefix}id"), ids)),
        ]


class _Held:
    """``past(cond)`` and ``past(payload)`` registers for handshake-hold rules."""

    def __init__(self, m):
        self._m = m
        self._count = 0

    def __call__(self, cond, payload):
        self._count += 1
        past_cond = Signal(name=f"held{self._count}_waiting")
        past_payload = Signal(len(Value.cast(payload)), name=f"held{self._count}_payload")
        self._m.d.sync += [past_cond.eq(cond), past_payload.eq(payload)]
        return past_cond, past_payload


class Axi4ReadProperties(Elaboratable):
    """Properties of the read half (AR, R) of an AXI4 master ``bus`` (master view).

    Parameters:
        bus:             an :class:`~macdma.hdl.bus.axi4.Axi4ReadSignature` (or full) interface.
        started:         0 in the first cycle after reset, 1 afterwards.
        burst_beats:     the master's BURST_BEATS input (held constant by the harness).
        max_outstanding: most bursts accepted on AR whose last R beat has not arrived.
        ids:             the ARID values the master uses (default: only 0).
        proven:          ``"master"`` (default): the master's rules are asserted and the
                         slave's assumed; ``"slave"``: the other way round.

    Master's rules: VALID low after reset; ARVALID held with a stable payload until
    ARREADY; INCR, full-width, beat-aligned bursts, never across 4 KiB, never longer than
    BURST_BEATS, only the IDs in ``ids``; at most ``max_outstanding`` bursts outstanding.
    Slave's rules: R only for an outstanding burst of its RID, those of one ID in order,
    RLAST exactly on the burst's ARLEN + 1-th beat; RVALID held with a stable payload until
    RREADY.

    Members for covers and further properties: ``ar_accepted``, ``r_accepted``,
    ``outstanding``, ``r_beat`` (beat index of the current R beat inside its burst),
    ``r_addr`` (byte address of the current R beat), ``r_len`` (its burst's ARLEN).
    """

    def __init__(
        self, bus, *, started, burst_beats, max_outstanding: int, ids=(0,), proven="master"
    ):
        self._bus = bus
        self._started = started
        self._burst_beats = burst_beats
        self._max_outstanding = max_outstanding
        self._ids = _check_ids(ids, len(bus.arid))
        self._rules = _Rules(proven)
        self.ar_accepted = Signal()
        self.r_accepted = Signal()
        self.outstanding = Signal(range(len(self._ids) * (max_outstanding + 1) + 1))
        self.r_beat = Signal(8)
        self.r_addr = Signal(len(bus.araddr))
        self.r_len = Signal(8)
        #: After elaboration, per ID (in ``ids`` order): its queue of bursts and the beat
        #: count of its current burst (for linking invariants).
        self.bursts = []
        self.r_beats = []

    def elaborate(self, platform):
        m = Module()
        bus = self._bus
        rules = self._rules
        started = self._started
        beat_bytes = len(bus.rdata) // 8
        held = _Held(m)

        _request_rules(
            m,
            rules,
            bus,
            "ar",
            started,
            held,
            clamped_burst_cap(self._burst_beats),
            beat_bytes,
            self._ids,
        )

        m.d.comb += [
            self.ar_accepted.eq(bus.arvalid & bus.arready),
            self.r_accepted.eq(bus.rvalid & bus.rready),
        ]
        # One queue of bursts and one beat count per ID; the R beat's RID picks them.
        levels = []
        r_known = C(0)
        for index, value in enumerate(self._ids):
            bursts = RecordQueue(
                m,
                f"ar_bursts{index}",
                self._max_outstanding + 1,
                {"len": 8, "addr": len(bus.araddr)},
            )
            beat = Signal(8, name=f"r_beat{index}")
            this_id = bus.rid == value
            bursts.push(self.ar_accepted & (bus.arid == value), len=bus.arlen, addr=bus.araddr)
            bursts.pop(self.r_accepted & this_id & bus.rlast)
            with m.If(self.r_accepted & this_id):
                m.d.sync += beat.eq(Mux(bus.rlast, 0, beat + 1))
            with m.If(this_id):
                m.d.comb += [
                    self.r_beat.eq(beat),
                    self.r_len.eq(bursts.head("len")),
                    self.r_addr.eq(bursts.head("addr") + (beat << exact_log2(beat_bytes))),
                ]
            r_known = r_known | (this_id & (bursts.level != 0))
            levels.append(bursts.level)
            self.bursts.append(bursts)
            self.r_beats.append(beat)
        m.d.comb += self.outstanding.eq(sum(levels))

        m.d.comb += rules.master(self.outstanding <= self._max_outstanding)

        # ---- the slave's rules -------------------------------------------------------------
        with m.If(~started):
            m.d.comb += rules.slave(~bus.rvalid)
        with m.If(bus.rvalid):
            m.d.comb += [
                rules.slave(r_known),
                rules.slave(bus.rlast == (self.r_beat == self.r_len)),
            ]
        r_payload = Cat(bus.rdata, bus.rresp, bus.rlast, bus.rid)
        past_waiting, past_payload = held(bus.rvalid & ~bus.rready, r_payload)
        with m.If(started & past_waiting):
            m.d.comb += rules.slave(bus.rvalid & (r_payload == past_payload))
        return m


class Axi4WriteProperties(Elaboratable):
    """Properties of the write half (AW, W, B) of an AXI4 master ``bus`` (master view).

    Parameters as :class:`Axi4ReadProperties`; ``max_outstanding`` counts bursts from AW
    accepted to B received.

    Master's rules: the AW rules of the read side; WVALID low after reset and held with
    stable WDATA/WSTRB/WLAST until WREADY; a W beat only once its burst's AW is on the bus
    (this design's rule, stricter than AXI, which lets W lead AW); exactly AWLEN + 1 beats
    per burst with WLAST on the last only, in AW order; at most ``max_outstanding`` bursts
    from AW to B. Slave's rules: B only for a burst of its BID whose AW and last W beat were
    both accepted, those of one ID in order; BVALID held with a stable BRESP and BID until
    BREADY.

    Members: ``aw_accepted``, ``w_accepted``, ``b_accepted``, ``outstanding``, ``w_beat``,
    ``w_addr`` (byte address of the current W beat: its burst's AWADDR plus the beat index
    times the beat size), ``w_id`` (the AWID of the current W beat's burst).
    """

    def __init__(
        self, bus, *, started, burst_beats, max_outstanding: int, ids=(0,), proven="master"
    ):
        self._bus = bus
        self._started = started
        self._burst_beats = burst_beats
        self._max_outstanding = max_outstanding
        self._ids = _check_ids(ids, len(bus.awid))
        self._rules = _Rules(proven)
        self.aw_accepted = Signal()
        self.w_accepted = Signal()
        self.b_accepted = Signal()
        self.outstanding = Signal(range(len(self._ids) * (max_outstanding + 1) + 1))
        self.w_beat = Signal(8)
        self.w_addr = Signal(len(bus.awaddr))
        self.w_id = Signal(len(bus.awid))

    def elaborate(self, platform):
        m = Module()
        bus = self._bus
        rules = self._rules
        started = self._started
        beat_bytes = len(bus.wdata) // 8
        depth = self._max_outstanding + 1
        held = _Held(m)

        _request_rules(
            m,
            rules,
            bus,
            "aw",
            started,
            held,
            clamped_burst_cap(self._burst_beats),
            beat_bytes,
            self._ids,
        )

        # Bursts whose AW has been shown (AWVALID, accepted or not) and whose W is not done.
        past_aw_waiting = Signal()
        m.d.sync += past_aw_waiting.eq(bus.awvalid & ~bus.awready)
        aw_shown = bus.awvalid & ~past_aw_waiting
        w_bursts = RecordQueue(
            m, "w_bursts", depth, {"len": 8, "addr": len(bus.awaddr), "id": len(bus.awid)}
        )
        w_bursts.push(aw_shown, len=bus.awlen, addr=bus.awaddr, id=bus.awid)
        w_last_accepted = bus.wvalid & bus.wready & bus.wlast
        w_bursts.pop(w_last_accepted)
        # The burst a W beat belongs to: the oldest one shown, which may be the AW that
        # appears in this very cycle (the queue holds it only from the next one).
        queue_empty = w_bursts.level == 0
        w_len = Mux(queue_empty, bus.awlen, w_bursts.head("len"))
        w_id = self.w_id
        m.d.comb += w_id.eq(Mux(queue_empty, bus.awid, w_bursts.head("id")))

        m.d.comb += [
            self.aw_accepted.eq(bus.awvalid & bus.awready),
            self.w_accepted.eq(bus.wvalid & bus.wready),
            self.b_accepted.eq(bus.bvalid & bus.bready),
            self.w_addr.eq(
                Mux(queue_empty, bus.awaddr, w_bursts.head("addr"))
                + (self.w_beat << exact_log2(beat_bytes))
            ),
        ]
        # Per ID: bursts from AW accepted to B, and bursts fully written but not answered.
        # Bursts of one ID are accepted, written and answered in the same order, so a B is
        # legal exactly when its ID's next unanswered burst has both.
        aw_open_all = []
        b_known = C(0)
        for index, value in enumerate(self._ids):
            aw_open = Signal(range(depth + 1), name=f"aw_open{index}")
            w_done_open = Signal(range(depth + 1), name=f"w_done_open{index}")
            answered = self.b_accepted & (bus.bid == value)
            m.d.sync += [
                aw_open.eq(aw_open + (self.aw_accepted & (bus.awid == value)) - answered),
                w_done_open.eq(w_done_open + (w_last_accepted & (w_id == value)) - answered),
            ]
            b_known = b_known | ((bus.bid == value) & (aw_open != 0) & (w_done_open != 0))
            aw_open_all.append(aw_open)
        m.d.comb += self.outstanding.eq(sum(aw_open_all))
        with m.If(self.w_accepted):
            m.d.sync += self.w_beat.eq(Mux(bus.wlast, 0, self.w_beat + 1))

        m.d.comb += [
            rules.master(self.outstanding <= self._max_outstanding),
            rules.master(w_bursts.level <= self._max_outstanding),
        ]

        # ---- W -----------------------------------------------------------------------------
        with m.If(~started):
            m.d.comb += rules.master(~bus.wvalid)
        w_payload = Cat(bus.wdata, bus.wstrb, bus.wlast)
        past_w_waiting, past_w_payload = held(bus.wvalid & ~bus.wready, w_payload)
        with m.If(started & past_w_waiting):
            m.d.comb += rules.master(bus.wvalid & (w_payload == past_w_payload))
        with m.If(bus.wvalid):
            m.d.comb += [
                rules.master(~queue_empty | aw_shown),
                rules.master(bus.wlast == (self.w_beat == w_len)),
            ]

        # ---- the slave's rules for B -------------------------------------------------------
        with m.If(~started):
            m.d.comb += rules.slave(~bus.bvalid)
        with m.If(bus.bvalid):
            m.d.comb += rules.slave(b_known)
        past_b_waiting, past_bresp = held(bus.bvalid & ~bus.bready, Cat(bus.bresp, bus.bid))
        with m.If(started & past_b_waiting):
            m.d.comb += rules.slave(bus.bvalid & (Cat(bus.bresp, bus.bid) == past_bresp))
        return m
