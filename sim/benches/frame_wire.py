"""The bench side of the frame wire (hdl/sim_wire/): GMII/MII frames in and out of the
simulated top, handed over whole, so Python wakes once per frame, not once per byte clock.

:class:`FramePhy` stands where :class:`~.gmii.GmiiPhy` stands (same clocks, enables and
link modes) on a top built with the wire (``macdma_soc_wire``,
``macdma_soc_hostmem_wire``). Its ``rx_source`` (:class:`FrameSource`) and ``tx_sink``
(:class:`FrameSink`) offer what the benches use of cocotbext-eth's ``GmiiSource`` and
``GmiiSink``: ``send``/``send_nowait``/``wait``/``idle`` and ``recv``/``recv_nowait``,
:class:`GmiiFrame` objects with ``sim_time_start``, ``sim_time_sfd``, ``sim_time_end`` (ps)
and ``error``, and ``tx_complete`` called when a frame has left. The HDL does per clock
what those models do per clock (hdl/sim_wire/player.py, recorder.py say exactly what),
so the frames, their stamps and everything the SoC does with them are the same; the tests
of that are tests/hdl/sim_wire/test_sim_wire.py (the wire beside cocotbext-eth's models) and
tests/hdl/sim_wire/test_tops.py (a whole scenario's record on either wire), on both
simulators. Where in a time step a frame is handed to the player decides the clock edge
it starts on, as for ``GmiiSource``: see :meth:`FrameSource._load`.

The wire moves one frame at a time each way: the source writes a frame into the
player's memory when the one before has left (in the time step of its last symbol, so
back-to-back frames keep their gap), and the sink reads a frame in the time step the
recorder finishes it.
"""

from __future__ import annotations

import logging
from collections import deque

import cocotb
from cocotb.handle import Immediate
from cocotb.queue import Queue
from cocotb.triggers import Event, First, ReadOnly, ReadWrite, RisingEdge, Timer, ValueChange
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from .gmii import GmiiPhy, LinkMode

__all__ = ["FramePhy", "FrameSink", "FrameSource", "pair_nibbles"]

_WORD_BYTES = 4
_ERROR_BITS = 32
_SFD = 0xD5
# cocotb's GPI write action "no delay" (what Immediate passes on), for the memory words.
_GPI_NO_DELAY = 3


class _Words:
    """A memory of the wire (a Verilog array of 32-bit words) through the simulator
    objects of its words (as sim/benches/hdl_memory.py reaches the host memory: a cocotb
    handle per word costs tens of microseconds)."""

    def __init__(self, words):
        self.depth = len(words)
        self._words = words._handle
        self._handles: dict[int, object] = {}

    def _word(self, index: int):
        handle = self._handles.get(index)
        if handle is None:
            handle = self._handles[index] = self._words.get_handle_by_index(index)
        return handle

    def read(self, index: int) -> int:
        bits = self._word(index).get_signal_val_binstr()
        try:
            return int(bits, 2)
        except ValueError:
            raise ValueError(f"frame wire memory word {index} holds X or Z bits: {bits}") from None

    def write(self, index: int, value: int) -> None:
        self._word(index).set_signal_val_int(_GPI_NO_DELAY, value)


class _Clock:
    """Turns a free-running cycle counter of the wire into simulated time (ps): the counter
    steps on every rising edge of ``clock``, whose period is ``period_ps``."""

    def __init__(self, clock, counter, period_ps: int):
        self.clock, self.counter, self.period_ps = clock, counter, period_ps
        self.origin_ps: int | None = None  # the time of the edge where the counter read 0
        self.calibrated = Event()

    async def calibrate(self) -> None:
        await RisingEdge(self.clock)
        await ReadOnly()  # the counter has stepped past this edge
        edge_ps = round(get_sim_time("ps"))
        self.origin_ps = edge_ps - (int(self.counter.value) - 1) * self.period_ps
        self.calibrated.set()

    def time_ps(self, cycle: int) -> int:
        """When the rising edge numbered ``cycle`` came (the counter read ``cycle`` before
        it stepped there)."""
        if self.origin_ps is None:
            raise RuntimeError("frame wire: a stamp before the clock was calibrated")
        return self.origin_ps + cycle * self.period_ps


def _int(handle) -> int:
    return int(handle.value)


class FrameSource:
    """Frames into the SoC's receive pins through the top's frame player (``play_*``).

    As cocotbext-eth's ``GmiiSource``: ``ifg`` is the gap after a frame in symbols (nibbles
    in MII mode, at least 1), ``mii_mode`` the symbol size; a frame sent is copied, its
    ``error`` list (``rx_er`` per byte) stretched to its length, and the copy is stamped
    and handed to its ``tx_complete`` (an Event or a callable) in the time step of its
    last symbol. A frame is given whole (preamble and FCS included): a bad FCS, a missing
    SFD or a cut-short frame are only other bytes.
    """

    def __init__(self, dut, clock: _Clock):
        self.dut = dut
        self.log = logging.getLogger(f"cocotb.{dut._path}.frame_source")
        self.ifg = 12
        self._mii = False
        self._clock = clock
        self._data = _Words(dut.wire_rx.play.data_words)
        self._errors = _Words(dut.wire_rx.play.error_words)
        self.capacity_bytes = self._data.depth * _WORD_BYTES
        self._frame_bytes_limit = (1 << len(dut.play_frame_bytes)) - 1
        self._pending: deque[GmiiFrame] = deque()
        self._playing: GmiiFrame | None = None
        self._queued = 0  # frames handed to the player (its ``queued`` input)
        self._done = 0  # frames the player finished, as this side has seen them
        self._idle = Event()
        self._idle.set()
        self._started = False
        self.frames_sent = 0

    @property
    def mii_mode(self) -> bool:
        return self._mii

    @mii_mode.setter
    def mii_mode(self, value: bool) -> None:
        self._mii = bool(value)
        self.dut.wire_mii.value = int(self._mii)

    def start(self) -> None:
        """Idle the player's inputs; follow its finished frames from now on."""
        self.dut.wire_mii.value = int(self._mii)
        self._set_inputs(0, 0, 0, 0)
        self._started = True
        cocotb.start_soon(self._follow())

    # -- what the benches call -----------------------------------------------------------
    async def send(self, frame) -> None:
        """Queue ``frame`` (no limit on the queue)."""
        self.send_nowait(frame)

    def send_nowait(self, frame) -> None:
        """Queue ``frame``; it goes out when the wire is free and the gap has passed."""
        frame = GmiiFrame(frame)
        if not frame.data:
            raise ValueError("frame wire: an empty frame cannot go on the wire")
        if len(frame.data) > min(self.capacity_bytes, self._frame_bytes_limit):
            raise ValueError(
                f"frame wire: a frame of {len(frame.data)} bytes is longer than the player's "
                f"{self.capacity_bytes}-byte memory"
            )
        frame.normalize()
        self._pending.append(frame)
        self._idle.clear()
        if self._playing is None:
            self._load()

    def count(self) -> int:
        """Frames queued and not yet in play."""
        return len(self._pending)

    def empty(self) -> bool:
        return not self._pending

    def idle(self) -> bool:
        return self._idle.is_set()

    async def wait(self) -> None:
        """Until every frame sent has left and the gap after the last has passed (the time
        step where cocotbext-eth's source would find its queue empty)."""
        await self._idle.wait()

    # -- the player ------------------------------------------------------------------------
    def _load(self) -> None:
        """Write the next pending frame into the player's memory and queue it."""
        if not self._started:
            raise RuntimeError("frame wire: send before the PHY started")
        frame = self._pending.popleft()
        self._playing = frame
        data = bytes(frame.data)
        padded = data + bytes(-len(data) % _WORD_BYTES)
        for index in range(len(padded) // _WORD_BYTES):
            at = index * _WORD_BYTES
            self._data.write(index, int.from_bytes(padded[at : at + _WORD_BYTES], "little"))
        flagged = any(frame.error)
        if flagged:
            for index in range((len(data) + _ERROR_BITS - 1) // _ERROR_BITS):
                bits = frame.error[index * _ERROR_BITS : (index + 1) * _ERROR_BITS]
                self._errors.write(index, sum(1 << n for n, bit in enumerate(bits) if bit))
        self._queued += 1
        count_mask = (1 << len(self.dut.play_queued)) - 1
        self._set_inputs(len(data), max(self.ifg, 1), int(flagged), self._queued & count_mask)

    def _set_inputs(self, frame_bytes: int, gap: int, errors: int, queued: int) -> None:
        """The player's frame inputs, so that it takes the frame on the clock edge where
        ``GmiiSource``, woken on every rising edge, would find it queued.

        With the receive clock low, this step's rising edge (if it has one) has not come
        yet: a send in a timer at an edge's time runs there on both simulators, and
        ``GmiiSource`` takes that frame on that edge. The inputs are then written at once;
        the player's clocked process reads them itself (hdl/sim_wire/player.py says why
        that matters on Icarus). With the clock high, the edge has been taken: the inputs
        are written as cocotb writes, after this step's edges, for the next one.
        """
        dut = self.dut
        values = (
            (dut.play_frame_bytes, frame_bytes),
            (dut.play_frame_gap, gap),
            (dut.play_frame_errors, errors),
            (dut.play_queued, queued),
        )
        if str(dut.rx_clk.value) == "0":
            for handle, value in values:
                handle.set(Immediate(value))
        else:
            for handle, value in values:
                handle.value = value

    async def _follow(self) -> None:
        done = self.dut.play_done
        await self._clock.calibrated.wait()
        cocotb.start_soon(self._follow_idle())
        while True:
            await ValueChange(done)
            # The stamps change in the same edge as the count, but a simulator may call
            # back before it applied them (Icarus does): read once the step has settled,
            # while writes still go into this step.
            await ReadWrite()
            count = _int(done) & 0xFFFF
            if count != self._done & 0xFFFF:
                self._finished(count)

    async def _follow_idle(self) -> None:
        # Woken on the change itself, not once the step has settled: GmiiSource wakes its
        # waiters on the clock edge, and what they do next (a register access on the
        # system clock, whose edge may fall in the same step) must start in the same
        # place of the step.
        idle = self.dut.play_idle
        while True:
            await ValueChange(idle)
            if str(idle.value) == "1" and self._playing is None and not self._pending:
                self._idle.set()

    def _finished(self, count: int) -> None:
        if (count - self._done) & 0xFFFF != 1 or self._playing is None:
            raise AssertionError(
                f"frame wire: the player finished frame {count}, the bench expected "
                f"{self._done + 1}"
            )
        self._done += 1
        dut, clock = self.dut, self._clock
        frame, self._playing = self._playing, None
        frame.sim_time_start = clock.time_ps(_int(dut.play_start_cycle))
        frame.sim_time_sfd = (
            clock.time_ps(_int(dut.play_sfd_cycle)) if _int(dut.play_sfd_seen) else None
        )
        frame.sim_time_end = clock.time_ps(_int(dut.play_end_cycle))
        self.frames_sent += 1
        if self._pending:
            self._load()  # in this step: the player takes it once the gap has passed
        frame.handle_tx_complete()


def pair_nibbles(samples: bytes, errors: list[int]) -> tuple[bytearray, list[int]]:
    """MII symbols (one per sample, low nibble) paired into bytes as cocotbext-eth's
    GmiiSink pairs them: a byte is the newest nibble above the one before it; until the
    first 0xD5 every other sample ends a byte, from that SFD on the pairs start again
    there; a byte's error is set when any of its nibbles had one."""
    data, flags = bytearray(), []
    window = 0
    emit = True  # flips before every sample: the first sample ends no byte
    synced = False
    error = 0
    for sample, sample_error in zip(samples, errors, strict=True):
        emit = not emit
        window = ((sample & 0x0F) << 4) | (window >> 4)
        error |= sample_error
        if not synced and window == _SFD:
            synced = emit = True
        if emit:
            data.append(window)
            flags.append(error)
            error = 0
    return data, flags


class FrameSink:
    """Frames the SoC puts on its transmit pins, through the top's frame recorder
    (``rec_*``), as cocotbext-eth's ``GmiiSink`` records them (hdl/sim_wire/recorder.py
    says how, the dropped first symbol included)."""

    def __init__(self, dut, clock: _Clock):
        self.dut = dut
        self.log = logging.getLogger(f"cocotb.{dut._path}.frame_sink")
        self.mii_mode = False
        self._clock = clock
        self._data = _Words(dut.wire_tx.data_words.words)
        self._errors = _Words(dut.wire_tx.error_words.words)
        self.queue: Queue = Queue()
        self.active_event = Event()
        self.frames_recorded = 0

    def start(self) -> None:
        """Follow the recorder from now on."""
        cocotb.start_soon(self._follow())

    def _recv(self, frame: GmiiFrame, compact: bool) -> GmiiFrame:
        if self.queue.empty():
            self.active_event.clear()
        if compact:
            frame.compact()
        return frame

    async def recv(self, compact: bool = True) -> GmiiFrame:
        """The next frame (waits for one)."""
        return self._recv(await self.queue.get(), compact)

    def recv_nowait(self, compact: bool = True) -> GmiiFrame:
        return self._recv(self.queue.get_nowait(), compact)

    def count(self) -> int:
        return self.queue.qsize()

    def empty(self) -> bool:
        return self.queue.empty()

    async def wait(self, timeout: float = 0, timeout_unit: str = "ns") -> None:
        """Until a frame is there (or ``timeout`` passed)."""
        if not self.empty():
            return
        if timeout:
            await First(self.active_event.wait(), Timer(timeout, timeout_unit))
        else:
            await self.active_event.wait()

    async def _follow(self) -> None:
        dut = self.dut
        frames = dut.rec_frames
        await self._clock.calibrated.wait()
        seen = _int(frames)
        while True:
            await ValueChange(frames)
            await ReadWrite()  # the record's other ports are settled (see FrameSource)
            count = _int(frames)
            if count == seen:
                continue
            if (count - seen) & 0xFFFF != 1:
                raise AssertionError(
                    f"frame wire: the recorder finished frame {count}, the bench saw {seen}"
                )
            seen = count
            self.queue.put_nowait(self._read_frame())
            self.active_event.set()

    def _read_frame(self) -> GmiiFrame:
        dut, clock = self.dut, self._clock
        length = _int(dut.rec_samples)
        if _int(dut.rec_overflowed):
            raise AssertionError(
                f"frame wire: the SoC sent a frame of {length} symbols, more than the "
                f"recorder's {self._data.depth * _WORD_BYTES}"
            )
        words = (length + _WORD_BYTES - 1) // _WORD_BYTES
        samples = b"".join(
            self._data.read(index).to_bytes(_WORD_BYTES, "little") for index in range(words)
        )[:length]
        errors = [0] * length
        if _int(dut.rec_errors):
            for index in range((length + _ERROR_BITS - 1) // _ERROR_BITS):
                word = self._errors.read(index)
                for bit in range(_ERROR_BITS):
                    at = index * _ERROR_BITS + bit
                    if at < length:
                        errors[at] = (word >> bit) & 1
        if self.mii_mode:
            data, errors = pair_nibbles(samples, errors)
        else:
            data = bytearray(samples)
        frame = GmiiFrame(data, errors)
        frame.compact()
        frame.sim_time_start = clock.time_ps(_int(dut.rec_start_cycle))
        frame.sim_time_sfd = (
            clock.time_ps(_int(dut.rec_sfd_cycle)) if _int(dut.rec_sfd_seen) else None
        )
        frame.sim_time_end = clock.time_ps(_int(dut.rec_end_cycle))
        self.frames_recorded += 1
        return frame


class FramePhy(GmiiPhy):
    """:class:`~.gmii.GmiiPhy` with the frame wire instead of cocotbext-eth's models: the
    same clocks, enables and link modes; ``rx_source`` a :class:`FrameSource`,
    ``tx_sink`` a :class:`FrameSink`."""

    def __init__(self, dut, mode: LinkMode, ifg: int):
        self.dut = dut
        self.mode = mode
        period_ps = mode.clock_period_ns * 1000
        self._rx_clock = _Clock(dut.rx_clk, dut.play_cycle, period_ps)
        self._tx_clock = _Clock(dut.tx_clk, dut.rec_cycle, period_ps)
        self.rx_source = FrameSource(dut, self._rx_clock)
        self.tx_sink = FrameSink(dut, self._tx_clock)
        self.tx_sink.mii_mode = self.rx_source.mii_mode = mode.mii
        # The gap is counted in symbols, which are nibbles in MII mode (as GmiiPhy's).
        self.rx_source.ifg = ifg * (2 if mode.mii else 1)

    @property
    def own_resets(self) -> tuple:
        """The wire's reset (``wire_rst``): the bench pulses it with the SoC's at start; a
        reset of the SoC alone leaves the wire running, as a PHY does."""
        return (self.dut.wire_rst,)

    def start(self):
        """Start the PHY clocks, idle the player and follow both ends of the wire."""
        super().start()
        for clock in (self._rx_clock, self._tx_clock):
            cocotb.start_soon(clock.calibrate())
        self.rx_source.start()
        self.tx_sink.start()
