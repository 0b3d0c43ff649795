"""What the TX and RX DMA channels share: their parameters, the error codes they halt with,
and the members by which the register bank drives a ring and reads its state.

A channel's signature is composed of :func:`ring_control` (the ring's registers and the
doorbell), the channel's own inputs, :func:`ring_state` (HEAD and the run/halt state), its
own outputs and :func:`bus_members` (the AXI4 read and write halves).
"""

from amaranth import C, Cat, Module, ResetInserter, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..bus.axi4 import Axi4ReadSignature, Axi4WriteSignature
from ..regmap import DMA_ERROR_CODE, RING_INDEX_BITS, RING_SIZE_BITS
from .axi_reader import AxiBurstReader
from .axi_writer import AxiBurstWriter
from .ring import RingDoorbell
from .us_timer import MicrosecondTimer

__all__ = ["ERROR_CODES", "DmaChannel", "bus_members", "ring_control", "ring_state"]

#: ``DmaErrorCode`` name -> value (``STATUS.error_code``).
ERROR_CODES = {v.name: v.value for v in DMA_ERROR_CODE.values}


def ring_control(addr_width: int) -> dict:
    """The ring's registers as the channel sees them: CTRL.run and CTRL.reset, RING_BASE
    (16-byte aligned: its low 4 bits are not read), RING_SIZE, TAIL with its write strobe
    (the doorbell), POLL_US, the system clock in MHz (for the µs poll timer), BURST_BEATS
    and PREFETCH."""
    return {
        "run": In(1),
        "reset": In(1),
        "ring_base": In(addr_width),
        "ring_size": In(RING_SIZE_BITS),
        "tail": In(RING_INDEX_BITS),
        "tail_written": In(1),
        "poll_us": In(16),
        "sys_clk_mhz": In(10),
        "burst_beats": In(9),
        "prefetch": In(5),
    }


def ring_state() -> dict:
    """HEAD and STATUS: running, halted, resetting (CTRL.reset in progress), error_code."""
    return {
        "head": Out(RING_INDEX_BITS),
        "running": Out(1),
        "halted": Out(1),
        "resetting": Out(1),
        "error_code": Out(4),
    }


def bus_members(addr_width: int, data_width: int) -> dict:
    """The AXI4 read half (descriptor fetches, TX fragments) and write half (write-backs,
    RX frame data): the channel's reader's and writer's ``axi``."""
    return {
        "axi_read": Out(Axi4ReadSignature(addr_width, data_width, 1)),
        "axi_write": Out(Axi4WriteSignature(addr_width, data_width, 1)),
    }


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

    def entry_address(self, index: Value) -> Value:
        """Byte address of ring entry ``index``. RING_BASE is 16-byte aligned (the register
        map rejects other values), so its low 4 bits are not read: every descriptor access
        is then aligned in the logic too, and the movers' byte-lane logic for it folds
        away."""
        return Cat(C(0, 4), self.ring_base[4:] + index)[: self._addr_width]

    def add_doorbell(self, m: Module, *, reset: Value | None = None) -> RingDoorbell:
        """Add the ring's doorbell to ``m`` as ``doorbell``: on RING_SIZE, TAIL and its
        write strobe, driving ``bad_tail``. ``reset`` resets it (the channel's reset
        strobe); without it, ``m``'s own reset does."""
        doorbell = RingDoorbell()
        m.submodules.doorbell = doorbell if reset is None else ResetInserter(reset)(doorbell)
        m.d.comb += [
            doorbell.ring_size.eq(self.ring_size),
            doorbell.tail.eq(self.tail),
            doorbell.tail_written.eq(self.tail_written),
            self.bad_tail.eq(doorbell.bad_tail),
        ]
        return doorbell

    def add_poll_timer(self, m: Module, runs: Value) -> Value:
        """Add the POLL_US timer to ``m`` as ``poll_timer``; returns its expiry, a strobe
        every POLL_US µs while ``runs`` (never while POLL_US is 0). The count starts again
        whenever ``runs`` rises."""
        timer = MicrosecondTimer()
        m.submodules.poll_timer = timer
        m.d.comb += [
            timer.us.eq(self.poll_us),
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
            reader.burst_beats.eq(self.burst_beats),
            writer.burst_beats.eq(self.burst_beats),
        ]
        return reader, writer

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def max_prefetch(self) -> int:
        return self._max_prefetch
