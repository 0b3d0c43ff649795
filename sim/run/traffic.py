"""The traffic models of ``macdma run --traffic`` (docs/traffic.md): for each, the far end
of the link (what sends frames into the SoC's RX and takes its TX frames off the wire)
and the application on the modelled CPU (socket sends and receives, forwarding).

Every frame carries a sequence number and content derived from it, and every frame is
checked where it arrives: a damaged, reordered or silently lost frame fails the run.
The application's CPU work is in one place per model (the ``app_*`` methods) and runs as
one CPU context (``process``; the stack's own work, in the driver's NAPI poll, is
``softirq``). Per-packet costs are the CPU file's ``socket_send_per_packet``,
``socket_recv_per_packet`` and ``forward_per_packet``.

A model exposes ``on_receive`` (the driver's stack callback), :meth:`Traffic.start`
(the tasks the bench waits for) and :meth:`Traffic.record` (the raw facts for
:func:`macdma.sim.run.scenario.compute_metrics`).

With ``flow_control`` on, the far end's MAC honours 802.3x PAUSE
(:class:`~macdma.sim.benches.pausing_peer.PausingPeer`): its RX frames go out one at a
time, held at a frame boundary while a PAUSE from the SoC is in force, and the SoC's
PAUSE frames are taken off the TX wire before the models read it.
"""

from __future__ import annotations

from collections import Counter, deque

import cocotb
from cocotb.triggers import Event, First, Timer
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.driver import UDP_CSUM_OFFSET, UDP_CSUM_START
from macdma.sim.benches.pausing_peer import PausingPeer
from macdma.sim.cosim.progress import FrameProgress
from macdma.sim.run.frames import (
    ACK_SOURCE,
    HEADER_BYTES,
    RX_SOURCE,
    SEQ_OFFSET,
    TX_SOURCE,
    frame_family,
    frame_seq,
    make_frame,
    split,
)
from macdma.sim.run.scenario import (
    ACK_FRAME_BYTES,
    TCP_HEADER_BYTES,
    TSO_PAGE_BYTES,
    Scenario,
)

#: pktgen's re-try of a stopped queue: one check of the queue state per this many ns, the
#: CPU held meanwhile (pktgen busy-loops on a frozen queue; it does not sleep).
PKTGEN_SPIN_NS = 200.0
#: A socket's receive buffer is the scenario's ``socket_rcvbuf_bytes``. Each queued
#: packet takes its RX buffer plus an sk_buff (SKB_TRUESIZE_BYTES) of it, as truesize
#: does; a packet that does not fit is dropped and counted (``socket_backlog``).
SKB_TRUESIZE_BYTES = 256  # engineering estimate: sizeof(struct sk_buff) + shared info
#: The qdisc in front of a stopped TX queue when forwarding: txqueuelen 1000 (Linux's
#: default); a frame that finds it full is dropped and counted (``qdisc``).
QDISC_PACKETS = 1000
#: stream: without an acknowledgement for this long while the hardware counted RX drops,
#: the sender frees the lost segments' window slots (no retransmission is modelled).
STREAM_LOSS_CHECK_NS = 20_000.0


def with_udp_checksum(frame: bytes) -> bytes:
    """``frame`` as TX checksum insertion leaves it for the driver's ``tx_checksum`` hw
    request (firmware/config.py: sum from byte 34, written at 40; RFC 768's 0 -> 0xFFFF)."""
    data = frame[UDP_CSUM_START:]
    data += b"\0" * (len(data) % 2)
    total = sum(int.from_bytes(data[n : n + 2], "big") for n in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    value = (~total & 0xFFFF) or 0xFFFF
    at = UDP_CSUM_START + UDP_CSUM_OFFSET
    return frame[:at] + value.to_bytes(2, "big") + frame[at + 2 :]


def sim_time_us() -> float:
    """The simulated time in µs (a :class:`FrameProgress` clock)."""
    return get_sim_time("ns") / 1e3


def _wire_stamp(frame) -> dict:
    return {
        "start_ps": frame.sim_time_start,
        "end_ps": frame.sim_time_end,
        "length": len(frame.get_payload(strip_fcs=False)),
    }


class Traffic:
    """What every model shares: the far end's RX source and TX sink, the frame checks,
    the socket receive queue, the counts the record needs."""

    name = ""

    def __init__(self, scenario: Scenario, bench, platform, costs, log):
        self.scenario, self.bench, self.platform, self.costs, self.log = (
            scenario, bench, platform, costs, log,
        )  # fmt: skip
        self.driver = None  # set by attach(): the driver takes on_receive at construction
        self.frames = scenario.frames
        self.tx_wire: list[dict] = []
        self.xmit_ns: list[float] = []
        self.tx_offered = 0
        self.rx_wire: list[dict | None] = [None] * scenario.frames
        self.rx_sent = 0
        self.received: list[tuple[int, float]] = []  # (seq, time) reaching the application
        # Frames the driver flagged bad (ok False), in two kinds: the ring's truncations are
        # also in RX_DROPS (each lost frame counts once), the rest (FCS, rx_er, ...) only here.
        self.errored: list[int | None] = []
        self.truncated: list[int | None] = []
        self.errors: list[str] = []
        self.drops: Counter = Counter()  # software drops, by where they happened
        self.last_seq = -1
        self.rx_progress = FrameProgress("rx", scenario.frames, sim_time_us, log)
        self.tx_progress = FrameProgress("tx", scenario.frames, sim_time_us, log)
        self.changed = Event()  # something the waiting application or far end cares about
        self.socket: deque = deque()  # one entry per skb: a tuple of its segments
        self.socket_held = 0  # segments queued on the socket
        truesize = scenario.rx_buf_bytes + SKB_TRUESIZE_BYTES
        self.socket_packets = max(1, scenario.socket_rcvbuf_bytes // truesize)
        # the far end's 802.3x MAC control, when the scenario turns flow control on
        self.peer: PausingPeer | None = None
        if scenario.flow_control == "on":
            self.peer = PausingPeer(bench.rx_source, bench.tx_sink, scenario.byte_time_ns)
            self.peer.start()

    def attach(self, driver) -> None:
        self.driver = driver

    # -- pacing -----------------------------------------------------------------------------
    @property
    def interval_ns(self) -> float | None:
        """ns between two frames at ``rate_mbps`` (frame bytes, FCS excluded); None = as
        fast as possible."""
        rate = self.scenario.rate_mbps
        return self.scenario.frame_size * 8 * 1e3 / rate if rate else None

    # -- the far end's RX source ------------------------------------------------------------
    def send_rx(self, seq: int) -> None:
        """Queue RX frame ``seq`` at the far end (it goes out when the link is free)."""

        def done(frame):
            self.rx_wire[seq] = {
                "start_ps": frame.sim_time_start,
                "end_ps": frame.sim_time_end,
                "length": len(frame.data) - 8,
            }

        data = make_frame(RX_SOURCE, seq, self.scenario.frame_size)
        frame = GmiiFrame.from_payload(data, tx_complete=done)
        (self.peer or self.bench.rx_source).send_nowait(frame)
        self.rx_sent += 1

    async def recv_tx(self):
        """The next frame the SoC put on its TX wire (a PAUSE frame is the far end's MAC
        control's, never a model's)."""
        if self.peer is not None:
            return await self.peer.recv_tx()
        return await self.bench.tx_sink.recv()

    async def offer_rx(self) -> None:
        """Every RX frame at ``rate_mbps`` offered (all at once for line rate)."""
        interval = self.interval_ns
        started = get_sim_time("ns")
        for seq in range(self.frames):
            if interval is not None:
                due = started + seq * interval - get_sim_time("ns")
                if due > 0:
                    await Timer(round(due * 1000), "ps")
            self.send_rx(seq)

    async def hw_drops(self) -> int:
        return await self.bench.read_reg(regs.RX_DROPS) + await self.bench.read_reg(
            regs.RX_FIFO_OVERFLOWS
        )

    async def rx_settled(self) -> None:
        """Every RX frame offered is delivered, flagged, or counted as dropped somewhere."""
        while self.rx_sent < self.frames:
            await Timer(5, "us")
        await (self.peer or self.bench.rx_source).wait()
        while True:
            accounted = len(self.received) + len(self.errored) + sum(self.drops.values())
            if accounted >= self.frames or accounted + await self.hw_drops() >= self.frames:
                return
            await Timer(5, "us")

    # -- checks -----------------------------------------------------------------------------
    def check_rx(self, data: bytes, ok: bool, meta=None) -> int | None:
        """The sequence number of a good RX frame in order, else None (counted/flagged)."""
        data = bytes(data)
        seq = frame_seq(data)
        if not ok:
            # Flagged by the hardware (cut short, FCS, ...): reported, never taken as data.
            truncated = meta is not None and meta.rx_truncated
            (self.truncated if truncated else self.errored).append(seq)
            return None
        if seq is None or seq >= self.frames:
            self.errors.append(f"RX frame of {len(data)} bytes with no valid sequence number")
            return None
        if data != make_frame(RX_SOURCE, seq, self.scenario.frame_size):
            self.errors.append(f"RX frame {seq} damaged ({len(data)} bytes)")
        if seq <= self.last_seq:
            self.errors.append(f"RX frame {seq} after {self.last_seq}: out of order")
        self.last_seq = max(self.last_seq, seq)
        return seq

    def deliver(self, seq: int) -> None:
        """RX frame ``seq`` reached the application (the goodput event)."""
        self.received.append((seq, get_sim_time("ns")))
        self.rx_progress.tick(len(self.received))
        self.changed.set()

    def check_tx(self, frame, tag: int, seq: int, size: int) -> None:
        payload = bytes(frame.get_payload())
        expected = make_frame(tag, seq, size)
        if self.scenario.tx_checksum == "hw":
            expected = with_udp_checksum(expected)
        if frame.error is not None or not frame.check_fcs():
            self.errors.append(f"TX frame {seq}: bad FCS or error on the wire")
        if payload != expected + bytes(max(0, 60 - len(expected))):
            self.errors.append(f"TX frame {seq} damaged or out of order (seq {frame_seq(payload)})")

    async def wait_changed(self) -> None:
        """Sleep (no CPU context held) until something changes."""
        self.changed.clear()
        await self.changed.wait()

    # -- sending from the CPU ----------------------------------------------------------------
    async def xmit_blocking(self, fragments: list[bytes]) -> None:
        """Hand a frame to xmit with bottom halves disabled, sleeping while the queue is
        stopped (a blocking socket send, a qdisc waiting for the wake)."""
        while True:
            await self.driver.wait_for_wake()
            called = self.platform.now_ns()
            async with self.platform.context("softirq"):
                sent = await self.driver.xmit(fragments)
            if sent:
                self.xmit_ns.append(called)
                return

    # -- the socket receive queue (udp, stream, rr) ------------------------------------------
    def to_socket(self, seq: int | tuple[int, ...]) -> None:
        """The stack queues a received packet (with GRO a merged one: a tuple of its
        segments) on the socket, or drops it when full."""
        segments = seq if isinstance(seq, tuple) else (seq,)
        if self.socket_held + len(segments) > self.socket_packets:
            self.drops["socket_backlog"] += len(segments)
            return
        self.socket.append(segments)
        self.socket_held += len(segments)
        self.changed.set()

    async def app_receive_skb(self) -> tuple[int, ...]:
        """The application takes the next skb off its socket (sleeping until there is
        one): ``socket_recv_per_packet`` once in process context, however many segments
        GRO merged into it. Returns their sequence numbers."""
        while not self.socket:
            await self.wait_changed()
        async with self.platform.context("process", core=self.scenario.app_core):
            segments = self.socket.popleft()
            self.socket_held -= len(segments)
            await self.platform.charge(self.costs.socket_recv_per_packet, "socket_recv_per_packet")
        for seq in segments:
            self.deliver(seq)
        return segments

    async def app_receive(self) -> int:
        """:meth:`app_receive_skb` of a model without GRO: one packet, its number."""
        return (await self.app_receive_skb())[-1]

    async def app_send(self, fragments: list[bytes]) -> None:
        """The application sends one datagram: ``socket_send_per_packet`` in process
        context, then xmit (blocking while the queue is stopped)."""
        async with self.platform.context("process", core=self.scenario.app_core):
            await self.platform.charge(self.costs.socket_send_per_packet, "socket_send_per_packet")
            await self.xmit_blocking(fragments)

    # -- the model's interface --------------------------------------------------------------
    async def on_receive(self, data: bytes, ok: bool = True, meta=None) -> None:
        raise NotImplementedError

    def start(self) -> list:
        raise NotImplementedError

    def record(self) -> dict:
        """The raw facts of the run: ``tx``/``rx`` as compute_metrics reads them, and
        ``traffic`` (the model, software drops, round trips)."""
        record: dict = {
            "traffic": {
                "model": self.name,
                "drops": dict(self.drops),
                "socket_packets": self.socket_packets,
            }
        }
        if self.tx_wire or self.tx_offered or self.scenario.sends_tx:
            record["tx"] = {"offered": self.tx_offered, "wire": self.tx_wire,
                            "xmit_ns": self.xmit_ns}  # fmt: skip
        if self.rx_sent:
            record["rx"] = {
                "wire": [w for w in self.rx_wire if w is not None],
                "received": self.received,
                "errored": len(self.errored),
                "truncated": len(self.truncated),
            }
        if self.peer is not None:
            record["peer"] = {
                "pauses": self.peer.pauses,  # (end ps, quanta) of each PAUSE the SoC sent
                "quantum_ps": self.peer.quantum_ps,
                "stalled_ps": self.peer.stalled_ps,
            }
        return record


class Pktgen(Traffic):
    """pktgen: xmit as fast as the queue accepts (or paced at ``rate_mbps``); RX frames at
    line rate (or ``rate_mbps``) go to the stack, which only counts them."""

    name = "pktgen"

    async def on_receive(self, data: bytes, ok: bool = True, meta=None) -> None:
        seq = self.check_rx(data, ok, meta)
        if seq is not None:
            self.deliver(seq)

    def start(self) -> list:
        tasks = []
        if self.scenario.sends_rx:
            cocotb.start_soon(self.offer_rx())
            tasks.append(cocotb.start_soon(self.rx_settled()))
        if self.scenario.sends_tx:
            self.tx_offered = self.frames
            tasks.append(cocotb.start_soon(self.collect_tx()))
            cocotb.start_soon(self.transmit())
        return tasks

    def tx_fragments(self, seq: int) -> list[bytes]:
        frame = make_frame(TX_SOURCE, seq, self.scenario.frame_size)
        return split(frame, self.scenario.fragment_sizes)

    async def collect_tx(self) -> None:
        for seq in range(self.frames):
            frame = await self.recv_tx()
            self.check_tx(frame, TX_SOURCE, seq, self.scenario.frame_size)
            self.tx_wire.append(_wire_stamp(frame))
            self.tx_progress.tick(seq + 1)

    async def pace(self, started_ns: float, seq: int) -> None:
        """Sleep until frame ``seq``'s turn at ``rate_mbps`` (the CPU is free meanwhile)."""
        if self.interval_ns is not None:
            due = started_ns + seq * self.interval_ns - self.platform.now_ns()
            if due > 0:
                await self.platform.sleep_ns(due)

    async def transmit(self) -> None:
        """pktgen's loop, process context, spinning (``pktgen_spin``) while the queue is
        stopped; each xmit with bottom halves disabled (``local_bh_disable();
        ndo_start_xmit()``), so only a hard IRQ preempts it."""
        started = self.platform.now_ns()
        async with self.platform.context("process", core=self.scenario.app_core):
            for seq in range(self.frames):
                await self.pace(started, seq)
                fragments = self.tx_fragments(seq)
                while True:
                    if self.driver.queue_stopped:
                        await self.platform.spin_ns(PKTGEN_SPIN_NS, "pktgen_spin")
                        continue
                    called = self.platform.now_ns()
                    async with self.platform.context("softirq"):
                        sent = await self.driver.xmit(fragments)
                    if sent:
                        self.xmit_ns.append(called)
                        break


class Udp(Pktgen):
    """iperf -u: the sending application writes datagrams at ``rate_mbps`` offered
    (blocking while the queue is stopped); the receiving application reads them off its
    socket, which drops what does not fit its buffer."""

    name = "udp"

    async def on_receive(self, data: bytes, ok: bool = True, meta=None) -> None:
        seq = self.check_rx(data, ok, meta)
        if seq is not None:
            self.to_socket(seq)

    def start(self) -> list:
        tasks = super().start()
        if self.scenario.sends_rx:
            cocotb.start_soon(self.reader())
        return tasks

    async def reader(self) -> None:
        while True:
            await self.app_receive()

    async def transmit(self) -> None:
        started = self.platform.now_ns()
        for seq in range(self.frames):
            await self.pace(started, seq)
            await self.app_send(self.tx_fragments(seq))


class Forward(Traffic):
    """A router: each received frame is forwarded in the NAPI poll (``forward_per_packet``,
    routing and NAT) and sent back out; while the queue is stopped frames wait in the
    qdisc (QDISC_PACKETS, then dropped). Throughput is what leaves.

    The far end offers frames at line rate or ``rate_mbps`` (open loop, a UDP flood), or,
    with ``window``, keeps at most that many frames inside the router: a frame coming back
    out (or lost and counted) lets the next one in, as a TCP sender's ACK clock does
    through a bottleneck router (no congestion control; a lost frame's slot is freed as
    stream frees a lost segment's).

    With ``forward_acks`` the stream through the router is TCP's both ways: the far end's
    receiver answers every second data frame that comes out (and the last) with an
    ACK_FRAME_BYTES-byte ACK sent back into the router, which routes it like any frame
    (the RX and TX driver work, ``forward_per_packet``) back out to the sender. The ACKs
    are checked where they come out and counted apart (``acks``): the rates are the data
    frames'."""

    name = "forward"

    def __init__(self, *args):
        super().__init__(*args)
        self.qdisc: deque = deque()
        self.forwarded = 0
        self.last_forwarded = -1
        self.window = self.scenario.window_frames
        self.returned = 0  # frames back out at the far end, or lost and counted
        self.losses_seen = 0
        self.returned_event = Event()
        self.acks_sent = 0  # ACKs the far end's receiver sent into the router
        self.acks_routed = 0  # ACKs the router received and routed
        self.acks_back = 0  # ACKs that came back out to the sender

    async def offer_rx(self) -> None:
        if self.window is None:
            await super().offer_rx()
            return
        started = get_sim_time("ns")
        interval = self.interval_ns
        for seq in range(self.frames):
            while seq - self.returned >= self.window:
                self.returned_event.clear()
                timeout = Timer(round(STREAM_LOSS_CHECK_NS), "ns")
                await First(self.returned_event.wait(), timeout)
                if not self.returned_event.is_set():
                    await self.count_lost()
            if interval is not None:
                due = started + seq * interval - get_sim_time("ns")
                if due > 0:
                    await Timer(round(due * 1000), "ps")
            self.send_rx(seq)

    async def count_lost(self) -> None:
        """Nothing came back for STREAM_LOSS_CHECK_NS: frames lost since the last look
        (counted by the hardware, flagged bad, or dropped by the qdisc) free their slots."""
        lost = await self.hw_drops() + len(self.errored) + sum(self.drops.values())
        if lost > self.losses_seen:
            self.returned += lost - self.losses_seen
            self.losses_seen = lost

    def send_ack(self, ack: int) -> None:
        """The far end's receiver sends ACK ``ack`` back through the router."""
        data = make_frame(ACK_SOURCE, ack, ACK_FRAME_BYTES)
        (self.peer or self.bench.rx_source).send_nowait(GmiiFrame.from_payload(data))
        self.acks_sent += 1

    async def on_receive(self, data: bytes, ok: bool = True, meta=None) -> None:
        if self.scenario.forward_acks and ok and frame_family(bytes(data)) == ACK_SOURCE:
            ack = frame_seq(bytes(data))
            if bytes(data) != make_frame(ACK_SOURCE, ack, ACK_FRAME_BYTES):
                self.errors.append(f"forward: ACK {ack} damaged on its way in")
            self.acks_routed += 1
        else:
            seq = self.check_rx(data, ok, meta)
            if seq is None:
                return
            self.deliver(seq)
        await self.platform.charge(self.costs.forward_per_packet, "forward_per_packet")
        if len(self.qdisc) >= QDISC_PACKETS:
            self.drops["qdisc"] += 1
            return
        self.qdisc.append(bytes(data))
        self.changed.set()
        if len(self.qdisc) == 1 and not self.driver.queue_stopped:
            await self.send_head()  # dev_queue_xmit straight through an empty qdisc

    async def send_head(self) -> None:
        """dev_queue_xmit of the qdisc's first frame. The frame came in by DMA (its lines
        invalidated) and the router wrote only its headers (the Ethernet header by the
        neighbour output, TTL, checksum and NAT in the IPv4 and TCP headers:
        TCP_HEADER_BYTES), so the map's clean writes back only those lines; with
        ``rx_fixup`` the driver's copy 2 bytes along wrote the whole frame."""
        frame = self.qdisc[0]
        called = self.platform.now_ns()
        dirty = None if self.scenario.rx_fixup else TCP_HEADER_BYTES
        if await self.driver.xmit([frame], dirty_bytes=dirty):
            self.qdisc.popleft()
            self.xmit_ns.append(called)
            self.forwarded += 1

    async def drain(self) -> None:
        """net_tx_action: send the qdisc's frames once the queue wakes (softirq)."""
        while True:
            while not self.qdisc:
                await self.wait_changed()
            await self.driver.wait_for_wake()
            # net_tx_action runs where the NAPI poll raised it: the IRQ core.
            async with self.platform.context("softirq", core=self.scenario.irq_core):
                if self.qdisc and not self.driver.queue_stopped:
                    await self.send_head()

    async def collect_tx(self) -> None:
        while True:
            frame = await self.recv_tx()
            payload = bytes(frame.get_payload())
            seq = frame_seq(payload)
            if self.scenario.forward_acks and frame_family(payload) == ACK_SOURCE:
                self.check_tx(frame, ACK_SOURCE, seq, ACK_FRAME_BYTES)
                self.acks_back += 1
                self.changed.set()
                continue
            if seq is None or seq <= self.last_forwarded:
                self.errors.append(f"forwarded frame {seq} after {self.last_forwarded}: reordered")
            else:
                self.check_tx(frame, RX_SOURCE, seq, self.scenario.frame_size)
                self.last_forwarded = seq
            self.tx_wire.append(_wire_stamp(frame))
            self.tx_progress.tick(len(self.tx_wire))
            self.returned += 1
            self.returned_event.set()
            self.changed.set()
            last = seq == self.frames - 1
            if self.scenario.forward_acks and (len(self.tx_wire) % 2 == 0 or last):
                self.send_ack(seq + 1)

    async def finished(self) -> None:
        """Every frame in is accounted, and every one routed has left (or was dropped)."""
        await self.rx_settled()
        while (
            self.forwarded + self.drops["qdisc"] < len(self.received) + self.acks_routed
            or len(self.tx_wire) + self.acks_back < self.forwarded
        ):
            await Timer(5, "us")
        # The last ACKs on their way back (the run's CPU work includes routing them); one
        # the hardware dropped ends the wait once nothing has moved for the loss check.
        idle_ns = 0.0
        while self.acks_back < self.acks_sent and idle_ns < STREAM_LOSS_CHECK_NS:
            back = self.acks_back
            await Timer(5, "us")
            idle_ns = 0.0 if self.acks_back > back else idle_ns + 5000.0

    def start(self) -> list:
        cocotb.start_soon(self.offer_rx())
        cocotb.start_soon(self.collect_tx())
        cocotb.start_soon(self.drain())
        return [cocotb.start_soon(self.finished())]

    def record(self) -> dict:
        record = super().record()
        record["tx"]["offered"] = len(self.received)  # the frames the router had to send
        record["traffic"]["window_frames"] = self.window
        if self.scenario.forward_acks:
            record["traffic"]["acks"] = {
                "sent": self.acks_sent, "routed": self.acks_routed, "back": self.acks_back,
            }  # fmt: skip
        return record


class RequestResponse(Traffic):
    """netperf TCP_RR-like: the far end sends one request frame and waits for the
    response before the next; the application receives each request off its socket and
    sends a response of the same size. Round trip: request's first bit on the wire to the
    response's last bit off it."""

    name = "rr"

    def __init__(self, *args):
        super().__init__(*args)
        self.round_trips: list[tuple[float, float]] = []  # (response end ns, round trip ns)

    async def on_receive(self, data: bytes, ok: bool = True, meta=None) -> None:
        seq = self.check_rx(data, ok, meta)
        if seq is not None:
            self.to_socket(seq)

    async def server(self) -> None:
        while True:
            seq = await self.app_receive()
            response = make_frame(TX_SOURCE, seq, self.scenario.frame_size)
            await self.app_send(split(response, self.scenario.fragment_sizes))

    async def client(self) -> None:
        for seq in range(self.frames):
            self.send_rx(seq)
            self.tx_offered += 1
            frame = await self.recv_tx()
            self.check_tx(frame, TX_SOURCE, seq, self.scenario.frame_size)
            stamp = _wire_stamp(frame)
            self.tx_wire.append(stamp)
            request = self.rx_wire[seq]
            if request is None:
                self.errors.append(f"rr: response {seq} before its request left the far end")
                continue
            self.round_trips.append(
                (stamp["end_ps"] / 1e3, (stamp["end_ps"] - request["start_ps"]) / 1e3)
            )
            self.tx_progress.tick(seq + 1)

    def start(self) -> list:
        cocotb.start_soon(self.server())
        return [cocotb.start_soon(self.client())]

    def record(self) -> dict:
        record = super().record()
        record["traffic"]["round_trips"] = self.round_trips
        return record


class Stream(Traffic):
    """A TCP-like window-limited stream into the SoC, for a CPU-bound receiver: the far
    end keeps at most ``window`` segments in flight, and never more than the socket holds
    (the receive window of TCP's flow control); the application reads them off its
    socket and acknowledges every second segment (and the last) with an
    ACK_FRAME_BYTES-byte frame the other way. No congestion control, no retransmission
    (a lost segment frees its window slot once the hardware has counted it)."""

    name = "stream"

    def __init__(self, *args):
        super().__init__(*args)
        self.acked = 0  # segments the far end counts as done (acknowledged or lost)
        self.last_ack = 0  # the highest acknowledgement seen on the wire
        self.losses_seen = 0
        self.acking = False
        self.ack_event = Event()
        # TCP's flow control: never more in flight than the receiver's socket can hold
        self.window = min(self.scenario.window_frames, self.socket_packets)
        self.gro_batch: list[int] = []  # segments GRO merged since its last flush

    def attach(self, driver) -> None:
        super().attach(driver)
        if self.scenario.gro:
            driver.on_gro_flush = self.gro_flush

    async def on_receive(self, data: bytes, ok: bool = True, meta=None) -> None:
        seq = self.check_rx(data, ok, meta)
        if seq is None:
            return
        if self.scenario.gro:
            self.gro_batch.append(seq)
        else:
            self.to_socket(seq)

    def gro_flush(self) -> None:
        """The driver's GRO handed a merged batch up: one skb on the socket."""
        if self.gro_batch:
            self.to_socket(tuple(self.gro_batch))
            self.gro_batch = []

    async def reader(self) -> None:
        consumed = 0
        while True:
            segments = await self.app_receive_skb()
            seq = segments[-1]
            consumed += len(segments)
            # TCP acknowledges at once an skb of more than one full segment (a GRO
            # batch), else every second segment.
            if len(segments) > 1 or consumed % 2 == 0 or seq == self.frames - 1:
                self.acking = True  # an ACK is on its way to xmit
                ack = make_frame(ACK_SOURCE, seq + 1, ACK_FRAME_BYTES)
                self.tx_offered += 1
                await self.app_send([ack])
                self.acking = False

    async def acks(self) -> None:
        while True:
            frame = await self.recv_tx()
            ack = frame_seq(bytes(frame.get_payload()))
            if ack is None or ack <= self.last_ack:
                self.errors.append(f"stream: ACK {ack} after {self.last_ack}: out of order")
            else:
                self.check_tx(frame, ACK_SOURCE, ack, ACK_FRAME_BYTES)
                self.last_ack = ack
                self.acked = max(self.acked, ack)
            self.tx_wire.append(_wire_stamp(frame))
            self.ack_event.set()

    async def sender(self) -> None:
        started = get_sim_time("ns")
        interval = self.interval_ns
        for seq in range(self.frames):
            while seq - self.acked >= self.window:
                self.ack_event.clear()
                await First(self.ack_event.wait(), Timer(round(STREAM_LOSS_CHECK_NS), "ns"))
                if not self.ack_event.is_set():
                    await self.free_lost(seq)
            if interval is not None:
                due = started + seq * interval - get_sim_time("ns")
                if due > 0:
                    await Timer(round(due * 1000), "ps")
            self.send_rx(seq)

    async def free_lost(self, next_seq: int) -> None:
        """No ACK for STREAM_LOSS_CHECK_NS: the slots of segments lost since the last look
        (counted by the hardware or the socket) are freed; they are never acknowledged."""
        lost = await self.hw_drops() + len(self.errored) + sum(self.drops.values())
        if lost > self.losses_seen:
            window_start = next_seq - self.window
            self.acked = max(self.acked, window_start + lost - self.losses_seen)
            self.losses_seen = lost

    async def finished(self) -> None:
        """Every segment accounted, and every ACK the application sent is on the wire."""
        await self.rx_settled()
        while len(self.tx_wire) < self.tx_offered or self.acking:
            await Timer(5, "us")

    def start(self) -> list:
        cocotb.start_soon(self.sender())
        cocotb.start_soon(self.reader())
        cocotb.start_soon(self.acks())
        return [cocotb.start_soon(self.finished())]

    def record(self) -> dict:
        record = super().record()
        record["tx"]["frame_bytes"] = ACK_FRAME_BYTES
        record["traffic"]["window_segments"] = self.window
        return record


def tcp_segment(seq: int, size: int) -> bytes:
    """stream_tx's segment of ``size`` bytes whose TCP sequence number is ``seq`` (its
    first payload byte's offset in the stream, mod 2**32): the test frame's header with
    ``seq`` as its sequence number, zeros to :data:`TCP_HEADER_BYTES` (the rest of the
    IPv4 and TCP headers), then payload derived from ``seq``. The driver's TSO builds
    each segment's headers from the first one's by advancing the number at
    :data:`~macdma.sim.run.frames.SEQ_OFFSET` (firmware/tx_queue.py ``tso_header``)."""
    header = make_frame(TX_SOURCE, seq, HEADER_BYTES) + bytes(TCP_HEADER_BYTES - HEADER_BYTES)
    body = make_frame(TX_SOURCE, seq, size - TCP_HEADER_BYTES + HEADER_BYTES)[HEADER_BYTES:]
    return header + body


class StreamTx(Traffic):
    """A TCP-like window-limited stream out of the SoC (iperf on the board sending): the
    sending application keeps at most ``window`` segments in flight; the far end
    acknowledges every second segment (and the last) with an ACK_FRAME_BYTES-byte frame
    into the SoC's RX, whose arrival (in the NAPI poll, the stack's ``tcp_ack``) opens
    the window and wakes the sender.

    Per skb handed to the driver the sender pays ``socket_send_per_packet`` (tcp_sendmsg
    to dev_queue_xmit) and ``per_byte_memcpy`` over its payload (the copy from user
    space), in process context on ``app_core``. ``tx_segmentation`` linear: one skb per
    MSS segment, a linear frame through ``xmit``; tso: one skb per super-segment (what
    the window allows, at most 64 KiB) of page fragments (:data:`TSO_PAGE_BYTES` pages
    the stream's bytes fill in turn) through the driver's ``xmit_tso``, which cuts it.
    No congestion control, no retransmission: an ACK the hardware dropped is sent again
    by the far end once the sender has waited STREAM_LOSS_CHECK_NS (ACKs are
    cumulative, so only a lost last one would stall the stream)."""

    name = "stream_tx"

    def __init__(self, *args):
        super().__init__(*args)
        self.window = self.scenario.window_frames
        self.mss = self.scenario.mss
        self.acked = 0  # segments the far end acknowledged, as the SoC's stack has seen
        self.sent = 0  # segments handed to the driver
        self.max_in_flight = 0
        self.xmits = 0  # skbs handed to the driver (super-segments with tso)
        self.rx_wire = []  # the far end's ACKs, in the order it sent them
        self.ack_values: list[int] = []  # the cumulative count each ACK carries
        self.ack_index: dict[int, int] = {}  # latest ACK carrying a count
        self.delivered_segments = 0  # segments the far end took off the wire
        self.losses_seen = 0
        # the far end acknowledges every second segment and the last
        acks = -(-self.frames // 2)
        self.rx_progress = FrameProgress("rx", acks, sim_time_us, self.log)

    def segment_seq(self, n: int) -> int:
        """Segment ``n``'s TCP sequence number: its payload's offset, mod 2**32."""
        return n * self.mss % (1 << 32)

    # -- the far end ------------------------------------------------------------------------
    def send_ack(self) -> None:
        """The far end acknowledges every segment it has so far (a cumulative ACK)."""
        value, index = self.delivered_segments, len(self.rx_wire)
        self.rx_wire.append(None)
        self.ack_values.append(value)
        self.ack_index[value] = index

        def done(frame):
            self.rx_wire[index] = {
                "start_ps": frame.sim_time_start,
                "end_ps": frame.sim_time_end,
                "length": len(frame.data) - 8,
            }

        data = make_frame(ACK_SOURCE, value, ACK_FRAME_BYTES)
        (self.peer or self.bench.rx_source).send_nowait(
            GmiiFrame.from_payload(data, tx_complete=done)
        )
        self.rx_sent += 1

    async def receive_segments(self) -> None:
        """Take the SoC's segments off the wire, each checked, and acknowledge every
        second one and the last."""
        size = self.scenario.frame_size
        for n in range(self.frames):
            frame = await self.recv_tx()
            payload = bytes(frame.get_payload())
            if frame.error is not None or not frame.check_fcs():
                self.errors.append(f"stream_tx: segment {n}: bad FCS or error on the wire")
            if payload != tcp_segment(self.segment_seq(n), size):
                found = frame_seq(payload)
                self.errors.append(f"stream_tx: segment {n} damaged or out of order (seq {found})")
            self.tx_wire.append(_wire_stamp(frame))
            self.tx_progress.tick(n + 1)
            self.delivered_segments = n + 1
            if (n + 1) % 2 == 0 or n + 1 == self.frames:
                self.send_ack()

    # -- the SoC's stack --------------------------------------------------------------------
    async def on_receive(self, data: bytes, ok: bool = True, meta=None) -> None:
        """An ACK reaches the stack (tcp_ack in the NAPI poll): it frees the acknowledged
        segments' window slots and wakes the sender."""
        data = bytes(data)
        if not ok:
            truncated = meta is not None and meta.rx_truncated
            (self.truncated if truncated else self.errored).append(frame_seq(data))
            return
        value = frame_seq(data)
        if frame_family(data) != ACK_SOURCE or value not in self.ack_index:
            self.errors.append(f"stream_tx: a {len(data)}-byte RX frame that is no ACK sent")
            return
        if data != make_frame(ACK_SOURCE, value, ACK_FRAME_BYTES):
            self.errors.append(f"stream_tx: ACK {value} damaged")
        if value < self.acked:
            self.errors.append(f"stream_tx: ACK {value} after {self.acked}: out of order")
        self.acked = max(self.acked, value)
        self.received.append((self.ack_index[value], get_sim_time("ns")))
        self.rx_progress.tick(len(self.received))
        self.changed.set()

    # -- the sending application ------------------------------------------------------------
    async def sender(self) -> None:
        """iperf's writes: as many segments as the window lets out, then sleep until an
        ACK opens it (sk_stream_wait_memory: the CPU free meanwhile)."""
        limit = self.scenario.tso_max_segments if self.scenario.tso else 1
        while self.sent < self.frames:
            while self.sent - self.acked >= self.window:
                self.changed.clear()
                await First(self.changed.wait(), Timer(round(STREAM_LOSS_CHECK_NS), "ns"))
                if not self.changed.is_set():
                    await self.resend_lost_ack()
            count = min(limit, self.window - (self.sent - self.acked), self.frames - self.sent)
            await self.send_skb(self.sent, count)
            self.sent += count
            self.max_in_flight = max(self.max_in_flight, self.sent - self.acked)

    async def resend_lost_ack(self) -> None:
        """No ACK for STREAM_LOSS_CHECK_NS while the hardware counted a new RX loss: the
        far end's retransmission timer would have the sender resend and the far end
        acknowledge again; here the far end sends its latest ACK again."""
        lost = await self.hw_drops() + len(self.errored) + len(self.truncated)
        if lost > self.losses_seen:
            self.losses_seen = lost
            self.send_ack()

    async def send_skb(self, first: int, count: int) -> None:
        """One skb of segments ``first`` .. ``first + count - 1`` down the stack and into
        the driver, blocking while the queue is stopped."""
        size = self.scenario.frame_size
        segments = [tcp_segment(self.segment_seq(n), size) for n in range(first, first + count)]
        payload = b"".join(segment[TCP_HEADER_BYTES:] for segment in segments)
        async with self.platform.context("process", core=self.scenario.app_core):
            await self.platform.charge(self.costs.socket_send_per_packet, "socket_send_per_packet")
            await self.platform.charge(self.costs.per_byte_memcpy * len(payload), "per_byte_memcpy")
            self.tx_offered += count
            self.xmits += 1
            if not self.scenario.tso:
                await self.xmit_blocking(segments)
                return
            # the payload lies in the socket's page fragments, filled in stream order
            start = first * self.mss
            cuts = [
                cut - start
                for cut in range((start // TSO_PAGE_BYTES + 1) * TSO_PAGE_BYTES,
                                 start + len(payload), TSO_PAGE_BYTES)
            ]  # fmt: skip
            bounds = [0, *cuts, len(payload)]
            pages = [payload[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
            header = segments[0][:TCP_HEADER_BYTES]
            while True:
                await self.driver.wait_for_wake()
                called = self.platform.now_ns()
                async with self.platform.context("softirq"):
                    queued = await self.driver.xmit_tso(
                        header, pages, self.mss, seq_offset=SEQ_OFFSET
                    )
                if queued:
                    self.xmit_ns.extend([called] * count)
                    return

    async def finished(self) -> None:
        """Every segment on the wire and every ACK delivered, flagged or counted lost."""
        while len(self.tx_wire) < self.frames:
            await Timer(5, "us")
        await (self.peer or self.bench.rx_source).wait()
        while True:
            accounted = len(self.received) + len(self.errored) + len(self.truncated)
            if accounted >= self.rx_sent or accounted + await self.hw_drops() >= self.rx_sent:
                return
            await Timer(5, "us")

    def start(self) -> list:
        cocotb.start_soon(self.sender())
        cocotb.start_soon(self.receive_segments())
        return [cocotb.start_soon(self.finished())]

    def record(self) -> dict:
        record = super().record()
        record["rx"]["frame_bytes"] = ACK_FRAME_BYTES
        record["traffic"].update(
            window_segments=self.window,
            max_in_flight=self.max_in_flight,
            xmits=self.xmits,
            segments_per_xmit=self.sent / self.xmits if self.xmits else None,
            acks=len(self.ack_values),
        )
        return record


MODELS = {model.name: model for model in (Pktgen, Udp, Stream, StreamTx, Forward, RequestResponse)}


def make_traffic(scenario: Scenario, bench, platform, costs, log) -> Traffic:
    """The traffic model ``scenario.traffic`` names."""
    return MODELS[scenario.traffic](scenario, bench, platform, costs, log)
