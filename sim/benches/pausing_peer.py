"""The link partner's 802.3x MAC control (IEEE 802.3 annex 31B), played by the bench.

:class:`PausingPeer` stands between a bench and its GMII models: the frames the far end
sends into the SoC's RX go through it, one at a time, and it reads everything the SoC
puts on its TX wire. A PAUSE frame there (to 01-80-C2-00-00-01, EtherType 0x8808, opcode
0x0001) holds the partner's transmitter for the quanta it carries, each 512 bit times at
the link speed, counted from the PAUSE frame's last byte: a frame already on the wire
finishes, the next one starts only once the pause has expired or an XON (quanta 0) has
ended it. Every other TX frame is passed on, unchanged and in order, to whoever reads
:meth:`PausingPeer.recv_tx`.

Frames are handed to the GMII source only when the previous one has left it (its
``tx_complete``), in the same simulation step, so an unpaused partner still sends back
to back at line rate; the decision to start the next frame is taken at the end of the one
before (a PAUSE that arrives during that frame's inter-frame gap holds the frame after).
"""

from __future__ import annotations

from collections import deque

import cocotb
from cocotb.queue import Queue
from cocotb.triggers import Event, First, Timer
from cocotb.utils import get_sim_time

from macdma.hdl.mac.flow_control import (
    MAC_CONTROL_ETHERTYPE,
    PAUSE_MULTICAST_ADDRESS,
    PAUSE_OPCODE,
    QUANTUM_BIT_TIMES,
)

__all__ = ["PausingPeer", "pause_quanta"]

_PAUSE_HEADER = PAUSE_MULTICAST_ADDRESS.to_bytes(6, "big")
_PAUSE_TYPE = MAC_CONTROL_ETHERTYPE.to_bytes(2, "big") + PAUSE_OPCODE.to_bytes(2, "big")


def pause_quanta(payload: bytes) -> int | None:
    """The quanta of a PAUSE frame (``payload`` without FCS), None for any other frame."""
    if payload[:6] != _PAUSE_HEADER or payload[12:16] != _PAUSE_TYPE or len(payload) < 18:
        return None
    return int.from_bytes(payload[16:18], "big")


class PausingPeer:
    """The far end's MAC control: a GMII ``source`` into the SoC's RX that honours the
    PAUSE frames the SoC sends on its TX wire (read from ``sink``).

    ``byte_time_ns`` is the link's (8 at 1000 Mb/s); ``station``, when given, is the
    48-bit address every PAUSE must come from (the SoC's MAC_ADDR); a PAUSE with a bad
    FCS or another source fails the bench. Call :meth:`start` once, then
    :meth:`send_nowait` frames and :meth:`wait` for them to be on the wire.

    Records (for the metrics): ``pauses``, ``(end ps, quanta)`` of every PAUSE frame
    seen, in order; ``stalled_ps``, the time a frame was ready but held by a pause.
    """

    def __init__(self, source, sink, byte_time_ns: float, station: int | None = None):
        self.source, self.sink = source, sink
        self.quantum_ps = round(QUANTUM_BIT_TIMES / 8 * byte_time_ns * 1000)
        self.station = station
        self.pauses: list[tuple[int, int]] = []
        self.stalled_ps = 0
        self.paused_until_ps = 0
        self._pending: deque = deque()
        self._queued = Event()
        self._pause_changed = Event()
        self._idle = Event()
        self._idle.set()
        self._tx_frames: Queue = Queue()

    def start(self) -> None:
        """Start watching the SoC's TX wire and feeding the source."""
        cocotb.start_soon(self._watch())
        cocotb.start_soon(self._feed())

    # -- the SoC's TX wire ------------------------------------------------------------------
    async def _watch(self) -> None:
        while True:
            frame = await self.sink.recv()
            payload = bytes(frame.get_payload())
            quanta = pause_quanta(payload)
            if quanta is None:
                self._tx_frames.put_nowait(frame)
                continue
            assert frame.check_fcs(), "bad FCS on a PAUSE frame the SoC sent"
            if self.station is not None:
                source = int.from_bytes(payload[6:12], "big")
                assert source == self.station, f"PAUSE from {source:012x}, not MAC_ADDR"
            self.pauses.append((frame.sim_time_end, quanta))
            self.paused_until_ps = frame.sim_time_end + quanta * self.quantum_ps
            self._pause_changed.set()

    async def recv_tx(self):
        """The next frame the SoC transmitted that is not a PAUSE (a GmiiFrame)."""
        return await self._tx_frames.get()

    @property
    def tx_frames_unread(self) -> int:
        """Frames the SoC transmitted (not PAUSE) that nobody has read yet."""
        return self._tx_frames.qsize()

    @property
    def xoff_seen(self) -> int:
        return sum(1 for _, quanta in self.pauses if quanta)

    @property
    def xon_seen(self) -> int:
        return sum(1 for _, quanta in self.pauses if not quanta)

    # -- the partner's transmitter ----------------------------------------------------------
    def send_nowait(self, frame) -> None:
        """Queue ``frame`` (a GmiiFrame) to go out when the link is free and not paused."""
        self._pending.append(frame)
        self._idle.clear()
        self._queued.set()

    async def wait(self) -> None:
        """Until every queued frame has left the source."""
        await self._idle.wait()

    async def _until_unpaused(self) -> None:
        while True:
            remaining_ps = self.paused_until_ps - get_sim_time("ps")
            if remaining_ps <= 0:
                return
            self._pause_changed.clear()  # an XON or a refresh moves the end
            await First(Timer(remaining_ps, "ps"), self._pause_changed.wait())

    async def _feed(self) -> None:
        while True:
            while not self._pending:
                self._idle.set()
                self._queued.clear()
                await self._queued.wait()
            ready_ps = get_sim_time("ps")
            await self._until_unpaused()
            self.stalled_ps += get_sim_time("ps") - ready_ps
            frame = self._pending.popleft()
            left = Event()
            callback = frame.tx_complete

            def complete(sent, callback=callback, left=left):
                if callable(callback):
                    callback(sent)
                left.set()

            frame.tx_complete = complete
            self.source.send_nowait(frame)
            await left.wait()
