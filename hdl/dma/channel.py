"""What the TX and RX DMA channels share: their parameters, the error codes they halt with,
their register port, and one model of halt and reset.

A channel's signature is composed of :func:`register_members` (``regs``, the channel's
register block of the CSR bank, and ``sys_clk_mhz``), the channel's own members and
:func:`bus_members` (the AXI4 read and write halves). The SoC connects the port with
``wiring.connect(m, bank.tx, tx_dma.regs)`` (``bank.rx``, ``rx_dma.regs``): every member of
the block is the channel's to read or to drive.
"""

from dataclasses import dataclass

from amaranth import Module, ResetInserter, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..bus.axi4 import Axi4ReadSignature, Axi4WriteSignature
from ..bus.csr_bank import block_signature
from ..regmap import DMA_ERROR_CODE, REGISTER_MAP
from .axi_reader import AxiBurstReader
from .axi_writer import AxiBurstWriter
from .ring import RingDoorbell
from .us_timer import MicrosecondTimer

__all__ = ["ERROR_CODES", "ChannelHalt", "DmaChannel", "bus_members", "register_members"]

#: ``DmaErrorCode`` name -> value (``STATUS.error_code``).
ERROR_CODES = {v.name: v.value for v in DMA_ERROR_CODE.values}

#: IRQ_SYS_CLK_MHZ: the system clock in MHz, the µs prescaler of the poll timer.
SYS_CLK_MHZ = REGISTER_MAP.field("IRQ_SYS_CLK_MHZ", "sys_clk_mhz")


def register_members(block: str) -> dict:
    """``regs``: the register block ``block`` ("TX" or "RX") of the register map, as the
    CSR bank's ``bank.tx`` / ``bank.rx`` (:func:`~macdma.hdl.bus.csr_bank.block_signature`),
    from the channel's side: the channel reads CTRL (run; reset, a one-cycle strobe),
    RING_BASE (16-byte aligned: its low 4 bits are not read), RING_SIZE, TAIL with its write
    strobe ``tail_written`` (the doorbell), POLL_US, BURST_BEATS and PREFETCH, and drives
    STATUS (running, halted, bad_tail, resetting, error_code), HEAD and the counters
    (DESC_FETCHED, BURSTS, BYTES, FRAMES, DROPS, FIFO_OVERFLOWS, RESET_DISCARDS).
    ``sys_clk_mhz``: IRQ_SYS_CLK_MHZ (another block's register), the poll timer's µs
    prescaler; 0 acts as 1."""
    return {
        "regs": In(block_signature(REGISTER_MAP.block(block))),
        "sys_clk_mhz": In(SYS_CLK_MHZ.width),
    }


def bus_members(addr_width: int, data_width: int) -> dict:
    """The AXI4 read half (descriptor fetches, TX fragments) and write half (write-backs,
    RX frame data): the channel's reader's and writer's ``axi``."""
    return {
        "axi_read": Out(Axi4ReadSignature(addr_width, data_width, 1)),
        "axi_write": Out(Axi4WriteSignature(addr_width, data_width, 1)),
    }


@dataclass(frozen=True)
class ChannelHalt:
    """A channel's halt (:meth:`DmaChannel.add_halt`): ``request`` with ``code`` (comb,
    driven by the channel) halts it; ``halted`` reads STATUS.halted; ``halting`` is the
    strobe of the cycle it halts (``events.error``)."""

    request: Signal
    code: Signal
    halted: Value
    halting: Value


class DmaChannel(wiring.Component):
    """A DMA channel's parameters, checked before anything is built; a subclass gives its
    members in :meth:`channel_members` (composed as the module docstring says).

    Parameters
    ----------
    data_width : 32 or 64
        AXI data width.
    addr_width : int
        AXI address width.
    max_prefetch : 1..16
        Descriptors one fetch may read (and the channel may hold) at the most.
    """

    def __init__(self, data_width: int, addr_width: int, max_prefetch: int):
        if data_width not in (32, 64):
            raise ValueError(f"data_width must be 32 or 64, not {data_width!r}")
        if not isinstance(max_prefetch, int) or not 1 <= max_prefetch <= 16:
            raise ValueError(f"max_prefetch must be an integer in 1..16, not {max_prefetch!r}")
        self._data_width = data_width
        self._addr_width = addr_width
        self._max_prefetch = max_prefetch
        super().__init__(self.channel_members())

    def channel_members(self) -> dict:
        raise NotImplementedError

    def add_reset(
        self, m: Module, core: Module, quiet: Value, *, winding: Value | int = 0
    ) -> tuple[Value, Signal]:
        """CTRL.reset, the same for both channels: the strobe sets STATUS.resetting and
        holds the channel (``hold``, returned: start no new command or frame); once
        ``quiet`` (no AXI transaction of the channel in flight, so none can land later)
        the whole state in ``core`` (added to ``m`` as ``core``, behind a ResetInserter) is
        reset in one cycle (``clear``, returned) and STATUS.resetting returns to 0, or
        later, while ``winding`` is 1 (TX: until the TX FIFO's flush is over and the
        counters have taken the frames it left). What ``m`` drives itself (the counters)
        is kept. Returns ``(hold, clear)``."""
        resetting = Signal()
        clear = Signal()
        with m.If(self.regs.ctrl.reset):
            m.d.sync += resetting.eq(1)
        with m.Elif(resetting & quiet):
            m.d.sync += resetting.eq(0)
        m.d.comb += [
            clear.eq(resetting & quiet),
            self.regs.status.resetting.eq(resetting | winding),
        ]
        m.submodules.core = ResetInserter({"sync": clear})(core)
        return self.regs.ctrl.reset | resetting, clear

    def add_halt(self, core: Module) -> ChannelHalt:
        """The halt, the same for both channels: the first ``request`` sets
        STATUS.error_code to its ``code``; the channel is halted (STATUS.halted) while the
        code is not NONE, until a reset clears it with ``core``."""
        status = self.regs.status
        request = Signal()
        code = Signal(len(status.error_code))
        halted = status.error_code != ERROR_CODES["NONE"]
        halting = request & ~halted
        core.d.comb += status.halted.eq(halted)
        with core.If(halting):
            core.d.sync += status.error_code.eq(code)
        return ChannelHalt(request, code, halted, halting)

    def add_doorbell(self, m: Module, *, reset: Value | None = None) -> RingDoorbell:
        """Add the ring's doorbell to ``m`` as ``doorbell``: on RING_SIZE, TAIL and its
        write strobe, driving STATUS.bad_tail. ``reset`` resets it (the channel's reset
        strobe); without it, ``m``'s own reset does."""
        doorbell = RingDoorbell()
        m.submodules.doorbell = doorbell if reset is None else ResetInserter(reset)(doorbell)
        m.d.comb += [
            doorbell.ring_size.eq(self.regs.ring_size),
            doorbell.tail.eq(self.regs.tail),
            doorbell.tail_written.eq(self.regs.tail_written),
            self.regs.status.bad_tail.eq(doorbell.bad_tail),
        ]
        return doorbell

    def add_poll_timer(self, m: Module, runs: Value) -> Value:
        """Add the POLL_US timer to ``m`` as ``poll_timer``; returns its expiry, a strobe
        every POLL_US µs while ``runs`` (never while POLL_US is 0). The count starts again
        whenever ``runs`` rises."""
        timer = MicrosecondTimer(
            us_width=len(self.regs.poll_us), sys_clk_mhz_width=len(self.sys_clk_mhz)
        )
        m.submodules.poll_timer = timer
        m.d.comb += [
            timer.us.eq(self.regs.poll_us),
            timer.sys_clk_mhz.eq(self.sys_clk_mhz),
            timer.start.eq(~timer.running | timer.expires),
            timer.stop.eq(~runs),
        ]
        return timer.expires

    def add_movers(self, m: Module) -> tuple[AxiBurstReader, AxiBurstWriter]:
        """Add the channel's AXI4 burst reader and writer to ``m`` as ``reader`` and
        ``writer``, on the channel's bus halves and capped by BURST_BEATS."""
        m.submodules.reader = reader = AxiBurstReader(self._data_width, self._addr_width)
        m.submodules.writer = writer = AxiBurstWriter(self._data_width, self._addr_width)
        wiring.connect(m, wiring.flipped(self.axi_read), reader.axi)
        wiring.connect(m, wiring.flipped(self.axi_write), writer.axi)
        m.d.comb += [
            reader.burst_beats.eq(self.regs.burst_beats),
            writer.burst_beats.eq(self.regs.burst_beats),
        ]
        return reader, writer

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def max_prefetch(self) -> int:
        return self._max_prefetch
