"""Proofs of the AXI4 arbiters (:mod:`macdma.hdl.bus.axi4_arbiter`): the merged master port
follows the protocol, and every response and write beat goes to the master it belongs to.

Each arbiter has two masters on its slave-side ports, each any protocol-correct master (the
AXI4 rules of :mod:`.axi4_properties` *assumed* of it, with the arbiter's side of that port
*asserted*: the arbiter is that master's slave), and any protocol-correct slave on its
master port (the rules the other way round). Parameters: 2 masters, 32-bit data, 14-bit
addresses, one ID bit per master (masters use ID 0, so the merged port's IDs are 0 and 2:
the master's index is the ID's upper bit), each master at most
:data:`ARBITER_MASTER_OUTSTANDING` bursts in flight.
"""

from collections.abc import Callable

from amaranth import *
from amaranth.hdl import Assert, Cover
from amaranth.lib.wiring import In

from ..bus.axi4_arbiter import Axi4ReadArbiter, Axi4WriteArbiter
from .axi4_properties import Axi4ReadProperties, Axi4WriteProperties
from .harness import Harness
from .internal import elaborated

__all__ = ["ReadArbiterHarness", "WriteArbiterHarness", "ARBITER_MASTER_OUTSTANDING"]

ARBITER_MASTERS = 2
ARBITER_ADDR_WIDTH = 12
ARBITER_DATA_WIDTH = 32
#: Bursts each master keeps in flight at most (the DMA's movers: up to 4; 2 keeps the
#: checkers' queues small while two bursts of each master can still interleave).
ARBITER_MASTER_OUTSTANDING = 2
#: The write arbiter's FIFO of granted masters: smaller than the bursts the masters keep in
#: flight, so the proof also covers the throttle when it is full.
ARBITER_W_FIFO_DEPTH = 2


def _drive_inputs(h: Harness, m: Module, component) -> None:
    """Every input of ``component`` (the masters' and the slave's signals) from a free input."""
    for path, member, value in component.signature.flatten(component):
        if member.flow == In:
            name = "__".join(str(part) for part in path)
            m.d.comb += value.eq(h.any_seq(len(value), name))


def _master_id(index: int, arbiter) -> int:
    """The merged port's ID of master ``index``'s ID 0: the index in the upper bits."""
    return index << arbiter.id_width_in


class ReadArbiterHarness(Harness):
    """:class:`~macdma.hdl.bus.axi4_arbiter.Axi4ReadArbiter` between two protocol-correct
    masters and a protocol-correct slave.

    Asserted: the AXI4 master rules on the merged port (:class:`~.axi4_properties.
    Axi4ReadProperties`, IDs 0 and 2, at most 4 bursts in flight); the slave rules on each
    master's port (R only for that master's own outstanding bursts, RLAST on their last
    beat, R held until accepted); and the routing: an R beat of the merged port goes to the
    master its RID names, with its data, response, RLAST and the master's own RID, to no
    other master, and the slave sees that master's RREADY.
    """

    def __init__(self, make_dut: Callable = Axi4ReadArbiter):
        super().__init__()
        self._make_dut = make_dut

    def build(self, m):
        dut = self._make_dut(
            n=ARBITER_MASTERS,
            addr_width=ARBITER_ADDR_WIDTH,
            data_width=ARBITER_DATA_WIDTH,
            id_width_in=1,
        )
        m.submodules.arbiter = dut
        _drive_inputs(self, m, dut)
        burst_beats = self.any_const(9, "burst_beats")
        ports = dut.inputs
        masters = []
        for k, port in enumerate(ports):
            props = Axi4ReadProperties(
                port,
                started=self.started,
                burst_beats=burst_beats,
                max_outstanding=ARBITER_MASTER_OUTSTANDING,
                proven="slave",
            )
            m.submodules[f"master{k}_props"] = elaborated(props)
            masters.append(props)
        ids = tuple(_master_id(k, dut) for k in range(ARBITER_MASTERS))
        merged = Axi4ReadProperties(
            dut.o,
            started=self.started,
            burst_beats=burst_beats,
            max_outstanding=ARBITER_MASTERS * ARBITER_MASTER_OUTSTANDING,
            ids=ids,
        )
        m.submodules.merged_props = elaborated(merged)
        o = dut.o
        # Linking invariants (k-induction): the merged port's bursts of master k's ID are
        # exactly master k's outstanding bursts, in order, at the same beat.
        for k, props in enumerate(masters):
            mine, theirs = merged.bursts[k], props.bursts[0]
            m.d.comb += [
                Assert(mine.consistent),
                Assert(theirs.consistent),
                Assert(mine.level == theirs.level),
                Assert(merged.r_beats[k] == props.r_beats[0]),
            ]
            for age in range(theirs.depth):
                with m.If(age < theirs.level):
                    m.d.comb += [
                        Assert(mine.entry(field, age) == theirs.entry(field, age))
                        for field in ("len", "addr")
                    ]
        owner = o.rid[dut.id_width_in :]
        for k, port in enumerate(ports):
            with m.If(o.rvalid & (owner == k)):
                m.d.comb += [
                    Assert(port.rvalid),
                    Assert(port.rdata == o.rdata),
                    Assert(port.rresp == o.rresp),
                    Assert(port.rlast == o.rlast),
                    Assert(port.rid == o.rid[: dut.id_width_in]),
                    Assert(o.rready == port.rready),
                ]
            with m.Elif(port.rvalid):
                m.d.comb += Assert(o.rvalid & (owner == k))
        # Covers: both masters with bursts in flight; an R beat of master 1 while master 0
        # also waits for data (the slave may answer them in any order).
        m.d.comb += [
            Cover(merged.outstanding == ARBITER_MASTERS * ARBITER_MASTER_OUTSTANDING),
            Cover(ports[1].rvalid & ports[1].rready & (merged.outstanding >= 3)),
        ]


class WriteArbiterHarness(Harness):
    """:class:`~macdma.hdl.bus.axi4_arbiter.Axi4WriteArbiter` between two protocol-correct
    masters and a protocol-correct slave.

    Asserted: the AXI4 master rules on the merged port (exactly AWLEN + 1 W beats per AW,
    in AW order, WLAST on the last, W only once its AW is shown, held until accepted); the
    slave rules on each master's port (B only for that master's written bursts); the W
    beats: each W beat the slave accepts is, in the same cycle, a W beat accepted from the
    master whose burst it belongs to (by the merged AWID), with its data, strobes and
    WLAST, and no master's W beat is accepted without going out; B routing as R above.
    """

    def __init__(
        self,
        make_dut: Callable = Axi4WriteArbiter,
        *,
        master_outstanding: int = 1,
        w_fifo_depth: int = 1,
    ):
        super().__init__()
        self._make_dut = make_dut
        self._master_outstanding = master_outstanding
        self._w_fifo_depth = w_fifo_depth

    def build(self, m):
        dut = self._make_dut(
            n=ARBITER_MASTERS,
            addr_width=ARBITER_ADDR_WIDTH,
            data_width=ARBITER_DATA_WIDTH,
            id_width_in=1,
            w_fifo_depth=self._w_fifo_depth,
        )
        m.submodules.arbiter = dut
        _drive_inputs(self, m, dut)
        burst_beats = self.any_const(9, "burst_beats")
        ports = dut.inputs
        for k, port in enumerate(ports):
            m.submodules[f"master{k}_props"] = Axi4WriteProperties(
                port,
                started=self.started,
                burst_beats=burst_beats,
                max_outstanding=self._master_outstanding,
                proven="slave",
            )
        ids = tuple(_master_id(k, dut) for k in range(ARBITER_MASTERS))
        m.submodules.merged_props = merged = Axi4WriteProperties(
            dut.o,
            started=self.started,
            burst_beats=burst_beats,
            max_outstanding=ARBITER_MASTERS * self._master_outstanding,
            ids=ids,
        )
        o = dut.o
        w_owner = merged.w_id[dut.id_width_in :]
        b_owner = o.bid[dut.id_width_in :]
        for k, port in enumerate(ports):
            port_w_accepted = port.wvalid & port.wready
            with m.If(merged.w_accepted & (w_owner == k)):
                m.d.comb += [
                    Assert(port_w_accepted),
                    Assert(port.wdata == o.wdata),
                    Assert(port.wstrb == o.wstrb),
                    Assert(port.wlast == o.wlast),
                ]
            with m.Elif(port_w_accepted):
                m.d.comb += Assert(merged.w_accepted & (w_owner == k))
            with m.If(o.bvalid & (b_owner == k)):
                m.d.comb += [
                    Assert(port.bvalid),
                    Assert(port.bresp == o.bresp),
                    Assert(port.bid == o.bid[: dut.id_width_in]),
                    Assert(o.bready == port.bready),
                ]
            with m.Elif(port.bvalid):
                m.d.comb += Assert(o.bvalid & (b_owner == k))
        # Covers: both masters' bursts in flight; a W beat of master 1 right after the last
        # W beat of a burst of master 0 (the W order switching masters).
        last_w_owner = Signal(range(ARBITER_MASTERS))
        last_w_was_last = Signal()
        with m.If(merged.w_accepted):
            m.d.sync += [last_w_owner.eq(w_owner), last_w_was_last.eq(o.wlast)]
        m.d.comb += [
            Cover(merged.outstanding == ARBITER_MASTERS * self._master_outstanding),
            Cover(merged.w_accepted & (w_owner == 1) & last_w_was_last & (last_w_owner == 0)),
        ]
