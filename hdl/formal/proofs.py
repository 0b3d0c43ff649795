"""The proofs: each real component in a harness with its property checker, and how to prove it.

Every harness takes the component's constructor (``make_dut``) so the tests can hand it a
mutant; :data:`PROOFS` lists what ``make formal`` runs, with mode and depth. The parameters
are small but keep every feature the property is about (docs/formal.md explains each).
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

from amaranth import *
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib.wiring import In, connect

from ..bus.axi_lite import RESP_OKAY, RESP_SLVERR
from ..bus.csr_bank import CsrBank, block_member_name, field_port
from ..dma.axi_reader import AxiBurstReader
from ..dma.axi_writer import AxiBurstWriter
from ..dma.irq import IrqController, IrqEventSignature
from ..dma.prefetch_fifo import AsyncPrefetchFifo
from ..regmap import REGISTER_MAP
from .arbiter_proofs import ReadArbiterHarness, WriteArbiterHarness
from .axi4_properties import Axi4ReadProperties, Axi4WriteProperties
from .axi_lite_properties import AxiLiteSlaveProperties
from .channel_induction import TxInductionBaseCaseHarness, TxOwnershipInductionHarness
from .channel_proofs import (
    RxHaltHarness,
    RxMultiBufferHarness,
    RxOwnershipHarness,
    RxResetWindDownHarness,
    TxHaltHarness,
    TxOwnershipHarness,
    TxResetWindDownHarness,
)
from .crossing_proofs import RxFifoCrossingHarness
from .gray import binary_of, distance, gray_of, in_order, one_bit_steps
from .harness import Harness, drive_free
from .internal import elaborated, internal_signal
from .irq_proofs import IrqSpacingHarness
from .mover_invariants import reader_linking_invariants
from .rx_induction import RxInductionBaseCaseHarness, RxOwnershipInductionHarness
from .streams import free_stream_source

__all__ = ["Proof", "PROOFS", "PENDING", "proof_by_name"]

#: The RX ownership induction's build (``rx_ownership_induction``): the channel's movers
#: with 2 bursts in flight (their default 4) and its command queue 2 deep (8): see
#: docs/formal.md, "Ownership by induction, RX".
RX_INDUCTION_BUILD = {"max_outstanding": 2, "cmd_queue_depth": 2}

#: Mover parameters of the AXI4 proofs: 32-bit data, 14-bit addresses (four 4 KiB pages, so
#: bursts meet page boundaries and the address wraps), two bursts in flight.
MOVER_DATA_WIDTH = 32
MOVER_ADDR_WIDTH = 14
MOVER_MAX_OUTSTANDING = 2


class AxiReaderHarness(Harness):
    """:class:`~macdma.hdl.dma.axi_reader.AxiBurstReader` against any AXI4 slave and any
    command stream, with :class:`~.axi4_properties.Axi4ReadProperties` on its bus."""

    def __init__(self, make_dut: Callable = AxiBurstReader):
        super().__init__()
        self._make_dut = make_dut

    def build(self, m):
        dut = self._make_dut(
            data_width=MOVER_DATA_WIDTH,
            addr_width=MOVER_ADDR_WIDTH,
            max_outstanding=MOVER_MAX_OUTSTANDING,
        )
        m.submodules.dut = fragment = elaborated(dut)
        free_stream_source(self, m, dut.cmd, "cmd")
        burst_beats = self.any_const(9, "burst_beats")
        m.d.comb += [
            dut.burst_beats.eq(burst_beats),
            dut.o.ready.eq(self.any_seq(1, "o_ready")),
        ]
        drive_free(self, m, dut.axi, ["arready", "rid", "rdata", "rresp", "rlast", "rvalid"])
        props = Axi4ReadProperties(
            dut.axi,
            started=self.started,
            burst_beats=burst_beats,
            max_outstanding=MOVER_MAX_OUTSTANDING,
        )
        m.submodules.props = elaborated(props)
        axi = dut.axi
        # Every AR's data is accepted before the command ends: no R beat is left orphaned.
        with m.If(dut.cmd.ready):
            m.d.comb += Assert((props.outstanding == 0) & ~axi.arvalid)
        reader_linking_invariants(
            m,
            fragment,
            props,
            axi,
            beat_bytes=MOVER_DATA_WIDTH // 8,
            max_outstanding=MOVER_MAX_OUTSTANDING,
        )
        # Covers: a 256-beat burst; a burst ending on a 4 KiB boundary that the cap did not
        # cut (the split), followed by the next burst starting the new page.
        ends_on_page = (axi.araddr[:12] + ((axi.arlen + 1) << 2)) == 4096
        split = Signal()
        with m.If(props.ar_accepted):
            m.d.sync += split.eq(ends_on_page & (axi.arlen + 1 < burst_beats))
        m.d.comb += [
            Cover(props.ar_accepted & (axi.arlen == 255)),
            Cover(split & props.ar_accepted & (axi.araddr[:12] == 0)),
        ]


class AxiWriterHarness(Harness):
    """:class:`~macdma.hdl.dma.axi_writer.AxiBurstWriter` against any AXI4 slave, any
    command and any data, with :class:`~.axi4_properties.Axi4WriteProperties` on its bus
    and a check that it strobes exactly the command's bytes."""

    def __init__(self, make_dut: Callable = AxiBurstWriter, *, check_strobes: bool = False):
        super().__init__()
        self._make_dut = make_dut
        self._check_strobes = check_strobes

    def build(self, m):
        dut = self._make_dut(
            data_width=MOVER_DATA_WIDTH,
            addr_width=MOVER_ADDR_WIDTH,
            max_outstanding=MOVER_MAX_OUTSTANDING,
        )
        m.submodules.dut = dut
        free_stream_source(self, m, dut.cmd, "cmd")
        free_stream_source(self, m, dut.i, "i")
        burst_beats = self.any_const(9, "burst_beats")
        m.d.comb += [
            dut.burst_beats.eq(burst_beats),
            dut.done.ready.eq(self.any_seq(1, "done_ready")),
        ]
        drive_free(self, m, dut.axi, ["awready", "wready", "bid", "bresp", "bvalid"])
        m.submodules.props = props = Axi4WriteProperties(
            dut.axi,
            started=self.started,
            burst_beats=burst_beats,
            max_outstanding=MOVER_MAX_OUTSTANDING,
        )
        axi = dut.axi
        beat_bytes = MOVER_DATA_WIDTH // 8
        # The command ends only when every burst is written and answered.
        with m.If(dut.cmd.ready):
            m.d.comb += Assert((props.outstanding == 0) & ~axi.awvalid & ~axi.wvalid)
        ends_on_page = (axi.awaddr[:12] + ((axi.awlen + 1) << 2)) == 4096
        m.d.comb += [
            Cover(props.aw_accepted & (axi.awlen == 255)),
            Cover(props.aw_accepted & ends_on_page & (axi.awlen + 1 < burst_beats)),
            Cover(props.w_accepted & axi.wlast & (axi.wstrb != 0b1111)),
        ]
        if not self._check_strobes:
            return

        # A buffer does not wrap around the end of the address space (the driver's rule).
        with m.If(dut.cmd.valid):
            m.d.comb += Assume(dut.cmd.p.addr + dut.cmd.p.length <= 2**MOVER_ADDR_WIDTH)
        cmd_addr = Signal(MOVER_ADDR_WIDTH)
        cmd_length = Signal(16)
        strobed_bytes = Signal(17)
        with m.If(dut.cmd.valid & dut.cmd.ready):
            m.d.sync += [
                cmd_addr.eq(dut.cmd.p.addr),
                cmd_length.eq(dut.cmd.p.length),
                strobed_bytes.eq(0),
            ]
        with m.Elif(props.w_accepted):
            m.d.sync += strobed_bytes.eq(strobed_bytes + sum(axi.wstrb[j] for j in range(4)))
        # Write strobes only on bytes of the command's buffer ...
        with m.If(axi.wvalid):
            for lane in range(beat_bytes):
                byte = props.w_addr + lane
                with m.If(axi.wstrb[lane]):
                    m.d.comb += Assert((byte >= cmd_addr) & (byte < cmd_addr + cmd_length))
        # ... and, for a command without a bus error, on every one of them.
        with m.If(dut.done.valid & ~dut.done.p.error):
            m.d.comb += Assert(strobed_bytes == cmd_length)


def _drive_free_inputs(h: Harness, m: Module, component, skip=()) -> None:
    """Drive every ``In`` port of ``component`` not named in ``skip`` from a free input."""
    for path, member, value in component.signature.flatten(component):
        name = "__".join(str(part) for part in path)
        if member.flow != In or path[0] in skip or name in skip:
            continue
        m.d.comb += value.eq(h.any_seq(len(value), name))


def _csr_words(regmap):
    """(readable, writable) word addresses of ``regmap``'s registers."""
    readable, writable = [], []
    for block, reg in regmap.iter_registers():
        word = (block.base + reg.offset) >> 2
        readable.append(word)
        if not reg.read_only:
            writable.append(word)
    return readable, writable


#: The CSR bank (its docstring): B in the cycle after the one in which it holds both AW and
#: W, R in the cycle after AR; the checker counts cycles of a complete request without a
#: response, so the bounds are 1 and 0 waiting cycles plus the response cycle.
CSR_WRITE_RESPONSE_CYCLES = 2
CSR_READ_RESPONSE_CYCLES = 1


def _csr_bus_properties(h: Harness, m: Module, bank, fragment) -> AxiLiteSlaveProperties:
    """The AXI4-Lite properties on ``bank``'s bus, and the invariants linking the checker's
    records to the bank's one-entry AW and W buffers (so k-induction closes)."""
    readable, writable = _csr_words(bank.regmap)
    props = AxiLiteSlaveProperties(
        bank.bus,
        started=h.started,
        readable_words=readable,
        writable_words=writable,
        write_response_cycles=CSR_WRITE_RESPONSE_CYCLES,
        read_response_cycles=CSR_READ_RESPONSE_CYCLES,
    )
    m.submodules.bus_props = props
    aw_full = internal_signal(fragment, "aw_full")
    w_full = internal_signal(fragment, "w_full")
    bvalid = bank.bus.bvalid
    m.d.comb += [
        Assert(aw_full == (props.aw_held & ~bvalid)),
        Assert(w_full == (props.w_held & ~bvalid)),
    ]
    with m.If(aw_full):
        m.d.comb += Assert(internal_signal(fragment, "aw_addr") == props.write_addr)
    with m.If(w_full):
        m.d.comb += [
            Assert(internal_signal(fragment, "w_data") == props.write_data),
            Assert(internal_signal(fragment, "w_strb") == props.write_strb),
        ]
    return props


class CsrBankHarness(Harness):
    """The register bank (the full register map, 4 KiB window) behind any AXI4-Lite master,
    every hardware input free, with :class:`~.axi_lite_properties.AxiLiteSlaveProperties`."""

    def __init__(self, make_dut: Callable = CsrBank):
        super().__init__()
        self._make_dut = make_dut

    def build(self, m):
        bank = self._make_dut(REGISTER_MAP, addr_width=12)
        m.submodules.bank = fragment = elaborated(bank)
        _drive_free_inputs(self, m, bank)
        props = _csr_bus_properties(self, m, bank, fragment)
        bus = bank.bus
        m.d.comb += [
            Cover(bus.rvalid & bus.rready & (bus.rresp == RESP_SLVERR)),
            Cover(bus.bvalid & bus.bready & (bus.bresp == RESP_SLVERR)),
            Cover(props.write_answered & (bus.bresp == RESP_OKAY)),
        ]


class IrqHarness(Harness):
    """The IRQ controller wired to the register bank (as in ``macdma_soc``), any channel
    events and any AXI4-Lite master: ``irq`` follows ``IRQ_STATUS & IRQ_ENABLE`` and a
    W1C write clears exactly the bits written."""

    def __init__(self, make_dut: Callable = CsrBank, make_controller: Callable = IrqController):
        super().__init__()
        self._make_dut = make_dut
        self._make_controller = make_controller

    def build(self, m):
        regmap = REGISTER_MAP
        bank = self._make_dut(regmap, addr_width=12)
        controller = self._make_controller(regmap)
        m.submodules.bank = fragment = elaborated(bank)
        m.submodules.controller = controller
        connect(m, bank.irq, controller.regs)
        status_block, status_reg = regmap.lookup("IRQ_STATUS")
        causes = [fld.name for fld in sorted(status_reg.fields, key=lambda f: f.lsb)]
        # The IRQ block is the controller's; every other hardware input of the bank is free.
        _drive_free_inputs(self, m, bank, skip={block_member_name(status_block)})
        for direction in ("tx", "rx"):
            for name, _ in IrqEventSignature().members.items():
                event = getattr(getattr(controller, direction), name)
                m.d.comb += event.eq(self.any_seq(1, f"{direction}_{name}"))
        props = _csr_bus_properties(self, m, bank, fragment)

        status = controller.cause_bits("status")
        enable = controller.cause_bits("enable")
        irq = controller.irq
        # irq is registered. It is high only in the cycle after status & enable is non-zero,
        # stays high while an enabled cause remains, and rises in the cycle after a cause
        # unless the rate limit (IRQ_MIN_INTERVAL) holds it off; with no limit programmed
        # nothing holds it off, so then irq is exactly past(status & enable != 0).
        any_enabled = self.past((status & enable).any(), "any_enabled")
        past_irq = self.past(irq, "irq")
        past_holdoff = self.past(controller.holdoff, "holdoff")
        past_limit_off = self.past(controller.regs.min_interval.us == 0, "limit_off")
        with m.If(~self.started):
            m.d.comb += Assert(~irq)
        with m.Else():
            m.d.comb += [
                Assert(~irq | any_enabled),
                Assert(~(any_enabled & past_irq) | irq),
                Assert(~(any_enabled & ~past_holdoff) | irq),
                Assert(~past_holdoff | ~past_limit_off),
            ]

        # W1C: from one cycle to the next a status bit changes only by a hardware set (which
        # wins) or by a write of 1 to it in an IRQ_STATUS write that got OKAY.
        status_word = (status_block.base + status_reg.offset) >> 2
        sets = Cat(
            field_port(bank, status_block, status_reg, status_reg.field(cause), set_port=True)
            for cause in causes
        )
        strobe_bits = Cat(props.write_strb[i].replicate(8) for i in range(4))
        writes_status = (
            props.write_answered
            & (props.write_addr[2:] == status_word)
            & (bank.bus.bresp == RESP_OKAY)
        )
        clear = Mux(writes_status, (props.write_data & strobe_bits)[: len(status)], 0)
        past_status = self.past(status, "status")
        past_sets = self.past(sets, "sets")
        expected = (past_status & ~clear) | past_sets
        cfg_bit = causes.index(regmap.cfg_error_irq[2])
        with m.If(self.started):
            for bit in range(len(status)):
                if bit == cfg_bit:
                    # Also set by the bank itself when a write is rejected (any register).
                    m.d.comb += Assert(status[bit] >= expected[bit])
                    m.d.comb += Assert(status[bit] <= (expected[bit] | props.write_answered))
                else:
                    m.d.comb += Assert(status[bit] == expected[bit])
        m.d.comb += [
            Cover(irq & ~past_irq),
            Cover(any_enabled & past_holdoff & ~irq),
            Cover(writes_status & (past_status[0] & ~status[0]) & status[1]),
        ]


#: Prefetch FIFO parameters of the crossing proof: 4-bit words, 4 words of RAM (3-bit Gray
#: pointers: the wrap of both pointers is reached within a few cycles).
FIFO_WIDTH = 4
FIFO_DEPTH = 4


class GrayFifoHarness(Elaboratable):
    """:class:`~macdma.hdl.dma.prefetch_fifo.AsyncPrefetchFifo` (the TX FIFO's storage and
    crossing) between two free-running, unrelated clocks, any writer and any reader.

    The two clocks are free inputs (``multiclock on``: the solver picks every edge of each),
    so every phase and frequency ratio is covered. Properties: each Gray pointer changes at
    most one bit per clock of its domain, so its synchronized copy is always a real past
    value; and the RAM never holds more than ``FIFO_DEPTH`` words nor fewer than zero
    (writes never overrun unread words, reads never pass the writer).
    """

    def __init__(self, make_dut: Callable = AsyncPrefetchFifo):
        self._make_dut = make_dut
        self._free = []
        self._w = ClockDomain("w")
        self._r = ClockDomain("r")

    @property
    def ports(self):
        return [self._w.clk, self._w.rst, self._r.clk, self._r.rst, *self._free]

    def _any(self, width, name):
        signal = Signal(width, name=name)
        self._free.append(signal)
        return signal

    def elaborate(self, platform):
        m = Module()
        m.domains.w = self._w
        m.domains.r = self._r
        m.d.comb += [Assume(~self._w.rst), Assume(~self._r.rst)]
        dut = self._make_dut(FIFO_WIDTH, FIFO_DEPTH, w_domain="w", r_domain="r")
        m.submodules.fifo = fragment = elaborated(dut)
        m.d.comb += [
            dut.w_en.eq(self._any(1, "w_en")),
            dut.w_data.eq(self._any(FIFO_WIDTH, "w_data")),
            dut.r.ready.eq(self._any(1, "r_ready")),
        ]
        produce = internal_signal(fragment, "produce")
        fetch = internal_signal(fragment, "fetch")
        for domain, name in (("w", "produce_gray"), ("r", "fetch_gray")):
            gray = internal_signal(fragment, name)
            m.d.comb += Assert(one_bit_steps(m, domain, gray, name))

        # Linking invariants (for k-induction): each Gray register encodes its binary
        # pointer, and every copy of a pointer on its way through a synchronizer is a value
        # the pointer had: the copies and the pointer are in order, no further apart than
        # the RAM is deep.
        m.d.comb += [
            Assert(internal_signal(fragment, "produce_gray") == gray_of(produce)),
            Assert(internal_signal(fragment, "fetch_gray") == gray_of(fetch)),
        ]
        fetch_copies = [
            internal_signal(fragment, "fetched_w"),
            binary_of(internal_signal(fragment, "stage1", within="fetch_sync")),
            binary_of(internal_signal(fragment, "stage0", within="fetch_sync")),
        ]
        produce_copies = [
            binary_of(internal_signal(fragment, "stage1", within="produce_sync")),
            binary_of(internal_signal(fragment, "stage0", within="produce_sync")),
        ]
        m.d.comb += [
            Assert(in_order(*fetch_copies, fetch, *produce_copies, produce)),
            Assert(distance(fetch_copies[0], produce) <= FIFO_DEPTH),
        ]

        # Words in the RAM, modulo the pointer range: 0..depth, never "negative" (wrapped).
        level = Signal(len(produce), name="ram_level")
        m.d.comb += [
            level.eq(produce - fetch),
            Assert(level <= FIFO_DEPTH),
            Cover(level == FIFO_DEPTH),
            Cover(dut.r.valid & dut.r.ready & (produce[-1] != fetch[-1])),
        ]
        return m


@dataclass(frozen=True)
class Proof:
    """One entry of ``make formal``.

    ``mode`` is ``"prove"`` (k-induction: the property holds in every reachable state) or
    ``"bmc"`` (bounded: no violation within ``depth`` cycles of reset; ``reason`` says why
    induction is not used). ``cover_depth`` bounds the search for each ``Cover``.
    ``ci_depth``, if set, is the shallower bounded depth the test suite checks (CI's time
    budget); ``make formal`` always runs ``depth``. ``mutant_check``, if set, is
    ``(harness, depth)``: what the mutants of a ``prove`` proof run instead of the proof,
    when its k is below their counterexamples' steps (a base case that shallow cannot
    fail): a bounded check of ``harness``, which has the proof's assertions (on inputs it
    may narrow, so that its traces are the proof's), to ``depth``. ``split``: the property
    task runs as one task per group of assertions (:mod:`.goals`: each group proven with
    every other assertion held in the cycle before), the groups those the harness files
    its assertions under (its ``split.groups`` once built), each task the harness built
    with ``goal=`` that group; together they are the whole k-induction.
    """

    name: str
    harness: Callable[..., Harness]
    mode: str
    depth: int
    cover_depth: int
    component: str
    reason: str = ""
    options: dict = field(default_factory=dict)
    ci_depth: int | None = None
    mutant_check: tuple[Callable[..., Harness], int] | None = None
    split: bool = False

    def __post_init__(self):
        if self.mode not in ("prove", "bmc"):
            raise ValueError(f"Proof {self.name}: mode must be 'prove' or 'bmc', not {self.mode!r}")
        if not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(
                f"Proof {self.name}: depth must be a positive integer, not {self.depth!r}"
            )
        if self.ci_depth is not None and (
            not isinstance(self.ci_depth, int) or not 1 <= self.ci_depth <= self.depth
        ):
            raise ValueError(
                f"Proof {self.name}: ci_depth must be in 1..depth ({self.depth}), "
                f"not {self.ci_depth!r}"
            )

        if self.split and self.mode != "prove":
            raise ValueError(f"Proof {self.name}: split is for a prove proof, not {self.mode!r}")
        if self.mutant_check is not None:
            _harness, mutant_depth = self.mutant_check
            if self.mode != "prove" or not isinstance(mutant_depth, int) or mutant_depth < 1:
                raise ValueError(
                    f"Proof {self.name}: mutant_check is for a prove proof, with a positive "
                    f"depth, not {self.mode!r} and {mutant_depth!r}"
                )

    def for_ci(self) -> "Proof":
        """This proof as the test suite runs it: at ``ci_depth`` if one is set."""
        if self.ci_depth is None:
            return self
        return replace(self, depth=self.ci_depth)

    def for_mutants(self) -> "Proof":
        """This proof as its mutants run it: :attr:`mutant_check` as a bounded check if set,
        else as the suite runs it."""
        if self.mutant_check is None:
            return self.for_ci()
        harness, depth = self.mutant_check
        return replace(
            self,
            harness=harness,
            mode="bmc",
            depth=depth,
            ci_depth=None,
            mutant_check=None,
            split=False,
        )


_MOVER_REASON = (
    "induction needs the checker's burst queue tied to the writer's own FIFO of burst "
    "lengths, an Amaranth SyncFIFO whose memory the properties cannot read; the depth covers "
    "a command, two bursts in flight and a 4 KiB split"
)

_CHANNEL_REASON = (
    "16 cycles from reset reach a descriptor fetch and the use of its buffer (a cover, "
    "step 15); the write-back (a cover, step 24) lies beyond; induction would need the "
    "checker's table of owned entries tied to the channel's prefetched descriptors, write "
    "queue, staging FIFO and head"
)

_BUFFER_ENDS_REASON = (
    "rx_ownership with buffers from 4 bytes, so that a buffer fills to its end and a frame "
    "goes on past it within the depth (64-byte buffers need 16 data beats); bounded like "
    "rx_ownership"
)

_MULTI_BUFFER_REASON = (
    "rx_buffer_ends on narrowed inputs (owned 4-byte buffers, slaves always ready, OKAY): "
    "the depth reaches the first buffer's whole write-back (its first W beat at step 19, "
    "the last at 21); the cover reaches the multi-buffer frame's EOP write-back at step "
    "35, where the bounded check would cost minutes per step; bounded like rx_ownership"
)

PROOFS = [
    Proof(
        name="axi4_read_master",
        harness=AxiReaderHarness,
        mode="prove",
        depth=5,
        cover_depth=12,
        component="hdl/dma/axi_reader.py AxiBurstReader",
    ),
    Proof(
        name="axi4_write_master",
        harness=AxiWriterHarness,
        mode="bmc",
        depth=12,
        cover_depth=12,
        component="hdl/dma/axi_writer.py AxiBurstWriter",
        reason=_MOVER_REASON,
    ),
    Proof(
        name="axi4_write_strobes",
        harness=partial(AxiWriterHarness, check_strobes=True),
        mode="bmc",
        depth=8,
        cover_depth=8,
        component="hdl/dma/axi_writer.py AxiBurstWriter",
        reason=_MOVER_REASON,
    ),
    Proof(
        name="axi4_read_arbiter",
        harness=ReadArbiterHarness,
        mode="prove",
        depth=4,
        cover_depth=12,
        component="hdl/bus/axi4_arbiter.py Axi4ReadArbiter",
    ),
    Proof(
        name="axi4_write_arbiter",
        harness=WriteArbiterHarness,
        mode="bmc",
        depth=14,
        ci_depth=10,
        cover_depth=12,
        reason=(
            "induction needs the merged port's bursts tied to the arbiter's FIFO of granted "
            "masters, whose entries sit in a memory the properties cannot read; depth 14 "
            "covers both masters' bursts granted, the FIFO full (one entry) and W switching "
            "masters"
        ),
        component="hdl/bus/axi4_arbiter.py Axi4WriteArbiter",
    ),
    Proof(
        name="axi_lite_csr_slave",
        harness=CsrBankHarness,
        mode="prove",
        depth=4,
        cover_depth=8,
        component="hdl/bus/csr_bank.py CsrBank",
    ),
    Proof(
        name="irq_w1c",
        harness=IrqHarness,
        mode="prove",
        depth=4,
        cover_depth=24,
        component="hdl/dma/irq.py IrqController + CsrBank",
    ),
    Proof(
        name="irq_rate_limit",
        harness=IrqSpacingHarness,
        mode="prove",
        depth=4,
        cover_depth=16,
        component="hdl/dma/irq.py IrqController",
    ),
    Proof(
        name="fifo_gray_crossing",
        harness=GrayFifoHarness,
        mode="prove",
        depth=8,
        cover_depth=30,
        component="hdl/dma/prefetch_fifo.py AsyncPrefetchFifo",
        options={"multiclock": "on"},
    ),
    Proof(
        name="rx_fifo_crossing",
        harness=RxFifoCrossingHarness,
        mode="prove",
        depth=16,
        cover_depth=30,
        component="hdl/dma/rx_fifo.py RxFrameFifo",
        options={"multiclock": "on"},
    ),
    Proof(
        name="rx_ownership",
        harness=RxOwnershipHarness,
        mode="bmc",
        depth=16,
        cover_depth=28,
        component="hdl/dma/rx_channel.py RxDmaChannel",
        reason=_CHANNEL_REASON,
    ),
    Proof(
        name="rx_buffer_ends",
        harness=partial(RxOwnershipHarness, min_buffer_bytes=4),
        mode="bmc",
        depth=17,
        cover_depth=17,
        component="hdl/dma/rx_channel.py RxDmaChannel (buffers from 4 bytes)",
        reason=_BUFFER_ENDS_REASON,
    ),
    Proof(
        name="rx_multi_buffer",
        harness=RxMultiBufferHarness,
        mode="bmc",
        depth=22,
        ci_depth=20,
        cover_depth=36,
        component="hdl/dma/rx_channel.py RxDmaChannel (narrowed inputs, 4-byte buffers)",
        reason=_MULTI_BUFFER_REASON,
    ),
    Proof(
        name="rx_halts",
        harness=RxHaltHarness,
        mode="bmc",
        depth=20,
        ci_depth=16,
        cover_depth=20,
        component="hdl/dma/rx_channel.py RxDmaChannel (descriptors with buffers < 64 bytes)",
        reason=(
            "the first halt comes at step 10 (the cover); depth 20 holds it and what follows "
            "(no write, no read started) for every too-small length, slave timing, frame "
            "and doorbell; each step costs about 1.6x the one before (68 s to depth 16, "
            "466 s to 20)"
        ),
    ),
    Proof(
        name="tx_ownership",
        harness=TxOwnershipHarness,
        mode="bmc",
        depth=12,
        cover_depth=20,
        component="hdl/dma/tx_channel.py TxDmaChannel",
        reason=(
            "12 cycles from reset reach a descriptor fetch and the fragment read it allows "
            "(a cover, step 11); the write-back is reached at step 18 (a cover) but the "
            "bounded check costs more than twice as much per cycle beyond 12. Plan: "
            "linking invariants for the channel's descriptor buffer, then induction"
        ),
    ),
    Proof(
        name="tx_halts",
        harness=TxHaltHarness,
        mode="bmc",
        depth=16,
        ci_depth=14,
        cover_depth=20,
        component="hdl/dma/tx_channel.py TxDmaChannel (zero-length descriptors)",
        reason=(
            "the first halt comes at step 11 (the cover); depth 16 holds it and what follows "
            "(no fragment read, no write, no read started) for every slave timing, PREFETCH "
            "and doorbell; each step costs about 1.8x the one before (82 s to depth 14, "
            "273 s to 16)"
        ),
    ),
]


PROOFS += [
    # k = 17: the induction closes at any k from 1; 17 lets the base case reach the mutants'
    # counterexamples (steps 15 and 16), so that they FAIL rather than leave the induction
    # UNKNOWN.
    Proof(
        name="rx_reset_winddown",
        harness=RxResetWindDownHarness,
        mode="prove",
        depth=17,
        cover_depth=24,
        component="hdl/dma/rx_channel.py RxDmaChannel, CTRL.run and CTRL.reset free",
    ),
    Proof(
        name="tx_reset_winddown",
        harness=TxResetWindDownHarness,
        mode="prove",
        depth=17,
        cover_depth=24,
        component="hdl/dma/tx_channel.py TxDmaChannel, CTRL.run and CTRL.reset free",
    ),
]


PROOFS[:0] = [
    # k = 1: the step closes there (the linking invariants of channel_induction.py). Its base
    # case is one cycle, so the mutants run the proof's harness without the linking
    # invariants, on narrowed inputs, as a bounded check to depth 17 (their first wrong
    # access comes at step 11 to 16): a counterexample there is one of the proof's base case.
    Proof(
        name="tx_ownership_induction",
        harness=TxOwnershipInductionHarness,
        mode="prove",
        depth=1,
        cover_depth=24,
        component=(
            "hdl/dma/tx_channel.py TxDmaChannel with register FIFOs, CTRL.run and CTRL.reset "
            "free, every input free"
        ),
        mutant_check=(TxInductionBaseCaseHarness, 17),
    ),
]

PROOFS += [
    # k = 1, split into one task per group of assertions (hdl/formal/goals.py): the step
    # as one query had not answered after 6 minutes of solver CPU, each goal's takes 3 to
    # 30 s. Its
    # mutants' bounded check reaches the first write-back (its first W beat at step 17 on
    # these inputs). The build: movers of 2 bursts in flight and a command queue of 2
    # (docs/formal.md, "Ownership by induction, RX").
    Proof(
        name="rx_ownership_induction",
        harness=partial(RxOwnershipInductionHarness, **RX_INDUCTION_BUILD),
        mode="prove",
        depth=1,
        # rx_ownership's: its frame written back and answered OKAY is not reached by 24.
        cover_depth=28,
        component=(
            "hdl/dma/rx_channel.py RxDmaChannel with register FIFOs, CTRL.run and CTRL.reset "
            "free, every input free"
        ),
        mutant_check=(partial(RxInductionBaseCaseHarness, **RX_INDUCTION_BUILD), 18),
        split=True,
    ),
]

#: The proofs whose tasks cost minutes of CPU, longest first: `make formal` starts them
#: first (two tasks at a time), so that the short ones fill in at the end and neither core
#: idles long while the other finishes (docs/formal.md, "Summary").
LONGEST_FIRST = (
    "tx_ownership_induction",
    "rx_ownership_induction",
    "rx_halts",
    "rx_multi_buffer",
    "tx_halts",
    "rx_buffer_ends",
    "rx_ownership",
)
PROOFS.sort(key=lambda p: LONGEST_FIRST.index(p.name) if p.name in LONGEST_FIRST else 99)


#: Proofs whose harness and mutant check are ready but whose induction step has not closed
#: yet: not in :data:`PROOFS` (``make formal`` would not pass), but found by name
#: (``--only`` runs one) and their mutant checks run in the suite, on the mutants and on the
#: real design. None at present.
PENDING: list[Proof] = []


def proof_by_name(name: str) -> Proof:
    """The entry of :data:`PROOFS` (or :data:`PENDING`) called ``name``; ``ValueError``
    naming the choices if none."""
    for proof in PROOFS + PENDING:
        if proof.name == name:
            return proof
    known = ", ".join(p.name for p in PROOFS + PENDING)
    raise ValueError(f"No proof named {name!r}; known: {known}")
