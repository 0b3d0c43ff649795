"""One experiment on the SoC with the driver model: the knobs (:class:`Scenario`), the
run (:func:`run_scenario`, through ``macdma.sim.run.scenario_tb`` on a simulator) and
the metrics computed from the raw record that bench writes (:func:`compute_metrics`).

The bench records raw facts only (wire stamps, xmit and on_receive times, driver and CPU
counters, AXI bursts); every number a user reads is computed here, from that record, so
the arithmetic is unit-tested without a simulator (tests/sim/run/test_scenario_metrics.py).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from macdma.firmware.descriptor import DESCRIPTOR_BYTES, MAX_BUFFER_BYTES, MIN_RX_BUFFER_BYTES
from macdma.firmware.dim import DIM_TABLES
from macdma.firmware.driver import (
    COALESCE_TIMERS,
    IRQ_STRATEGIES,
    RX_BUFFER_MODES,
    RX_SYNC_MODES,
    TX_CHECKSUM_MODES,
    TX_CLEAN_LOCKS,
    TX_TIMER_KINDS,
    IrqStrategyName,
)

from ..cosim.outputs import write_or_rescue
from ..cosim.progress import PROGRESS_ENV, ProgressFollower
from ..cosim.runner import run_cocotb
from ..model.cpus import MAX_CORES, load_cpu
from .knobs import check_needs, driver_config, knob, knobs_of, register_range

__all__ = [
    "DIRECTIONS",
    "FLOW_CONTROL_SETTINGS",
    "IRQ_MIN_INTERVAL_MAX_US",
    "IRQ_STRATEGIES",
    "LINK_SPEEDS",
    "SCENARIO_ENV",
    "TRAFFIC_MODELS",
    "RECORD_ENV",
    "TX_SEGMENTATION_MODES",
    "Scenario",
    "checked_cpu",
    "compute_metrics",
    "format_summary",
    "run_scenario",
]

from ..cosim.simulators import SIMULATORS

DIRECTIONS = ("tx", "rx", "both")
LINK_SPEEDS = (10, 100, 1000)
#: flow_control: 802.3x PAUSE off, or on both ways (DriverConfig.flow_control).
FLOW_CONTROL_SETTINGS = ("off", "on")
#: The traffic models (docs/traffic.md; the bench's sim/run/traffic.py).
TRAFFIC_MODELS = ("pktgen", "udp", "stream", "stream_tx", "forward", "rr")
#: Models that move frames both ways by themselves (their --direction stays "both").
TWO_WAY_TRAFFIC = ("stream", "stream_tx", "forward", "rr")
#: Models a window limits: stream and stream_tx (always, STREAM_WINDOW_SEGMENTS unless
#: given) and forward (only when given: a TCP-like sender clocked by the frames coming
#: back out).
WINDOWED_TRAFFIC = ("stream", "stream_tx", "forward")
#: stream_tx: how the sending stack hands its TCP segments to the driver: ``linear`` (no
#: scatter-gather, no segmentation offload: each MSS segment copied into one linear
#: buffer, one frame per xmit) or ``tso`` (super-segments of page fragments, cut by the
#: driver's software TSO, firmware/tx_queue.py ``xmit_tso``).
TX_SEGMENTATION_MODES = ("linear", "tso")
#: stream_tx: a segment's Ethernet, IPv4 and TCP headers (14 + 20 + 20 bytes): the part
#: the driver's TSO copies per segment; the rest of ``frame_size`` is the MSS.
TCP_HEADER_BYTES = 54
#: stream_tx with tso: the largest super-segment the stack builds (GSO_MAX_SIZE, 64 KiB,
#: headers included: tcp_xmit_size_goal) and the page fragments its payload lies in
#: (order-3 pages of sk_page_frag, SKB_FRAG_PAGE_ORDER).
TSO_MAX_BYTES = 65_536
TSO_PAGE_BYTES = 32_768
#: stream's window when --window is not given (segments in flight).
STREAM_WINDOW_SEGMENTS = 64
#: A socket's receive buffer: Linux's net.core.rmem_default (212,992 bytes), the
#: default of ``socket_rcvbuf_bytes``.
SOCKET_RCVBUF_BYTES = 212_992
#: stream: the size of an acknowledgement frame (a 64-byte frame with its FCS).
ACK_FRAME_BYTES = 60
MIN_FRAME, MAX_FRAME = 60, 9216  # bytes handed to the MAC, FCS excluded; 9216: jumbo
MAX_EXTRA_FRAGMENTS = 16
#: Most frames per direction of one run: a million full frames is hours of simulation
#: (docs/performance.md); the simulator's counters would overflow long before 1e23.
MAX_FRAMES = 1_000_000


def frame_count_type(least: int = 1) -> Callable[[str], int]:
    """An argparse type for a frame count of ``least``..:data:`MAX_FRAMES` (``soak`` and
    ``bench``: their ``--frames`` takes the same bound as ``run``'s)."""

    def frame_count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not least <= value <= MAX_FRAMES:
            raise argparse.ArgumentTypeError(f"must be {least}..{MAX_FRAMES:,} frames, got {value}")
        return value

    return frame_count


#: The largest IRQ_MIN_INTERVAL (µs) the hardware accepts, from the register map.
IRQ_MIN_INTERVAL_MAX_US = register_range("IRQ_MIN_INTERVAL")[1]
#: The largest ring: no budget can take more packets in one call than a ring holds.
MAX_RING = register_range("RX_RING_SIZE", skip_zero=True)[1]
#: The IRQ strategies (the driver's IrqStrategyName) that program coalescing
#: (coalesce_frames / coalesce_us); that take TX interrupts (tx_coalesce_*); whose ISR
#: cleans (rx_per_irq).
COALESCING_IRQS = tuple(name.value for name in IrqStrategyName if name.coalesces)
TX_IRQS = tuple(name.value for name in IrqStrategyName if name.takes_done_irqs)
CLEANING_ISR_IRQS = tuple(name.value for name in IrqStrategyName if name.isr_cleans)
# On the wire per frame beyond frame_size: preamble+SFD 8, FCS 4; then the gap.
PREAMBLE_SFD_BYTES, FCS_BYTES, IFG_BYTES = 8, 4, 12

SCENARIO_ENV = "MACDMA_SCENARIO"  # the Scenario as JSON, for the cocotb module
RECORD_ENV = "MACDMA_SCENARIO_RECORD"  # where the cocotb module writes its raw record
#: The simulated top per host memory model (the ``memory`` knob): the SoC alone with
#: cocotbext-axi's AxiRam on its AXI4 master, or the SoC with the RAM inside the top.
SCENARIO_TOPS = {"python": "macdma_soc", "hdl": "macdma_soc_hostmem"}
MEMORY_MODELS = tuple(SCENARIO_TOPS)
#: The GMII/MII wire models (the ``wire`` knob): the frame wire inside the simulated top
#: (its top is the memory's with ``_wire`` appended), or cocotbext-eth's per-byte models.
WIRES = ("frames", "cocotbext")
#: What ``wire = "auto"`` means per simulator: the frame wire where it gives exactly what
#: cocotbext-eth's models give (Verilator). On Icarus a frame sent from a timer in the time
#: step of a receive clock edge goes out one clock later on the frame wire (Icarus runs
#: that timer before the edge; the far end's PAUSE timer does that), and the frame wire
#: buys Icarus little (docs/performance.md).
AUTO_WIRE = {"verilator": "frames", "icarus": "cocotbext"}
SCENARIO_MODULE = "macdma.sim.run.scenario_tb"
#: ``--cpu vexriscv-rtl``: no cost table but the real core, running the C driver
#: (firmware/c/) on ``macdma_soc_cpu`` (docs/soft-core.md).
RTL_CPU = "vexriscv-rtl"
RTL_CPU_TOP, RTL_CPU_MODULE = "macdma_soc_cpu", "macdma.sim.run.cpu_scenario_tb"


def checked_cpu(cpu: object) -> str:
    """``cpu`` as the bench will find it: a shipped name as given, a CPU file as its
    absolute path (the bench runs in another directory). The file is loaded and checked
    now, so a bad one stops before any simulator starts."""
    if cpu == RTL_CPU:
        return cpu
    try:
        spec = load_cpu(cpu)
    except ValueError as error:
        raise ValueError(f"cpu: {error}") from None
    return cpu if spec.shipped and cpu == spec.name else str(spec.path)


def _register(key: str, name: str | None = None, **options) -> dict:
    """``low``/``high`` of a knob the hardware bounds, from the register map."""
    low, high = register_range(key, name, **options)
    return {"low": low, "high": high}


@dataclass(frozen=True)
class Scenario:
    """The knobs of one run, each declared once (:func:`macdma.sim.run.knobs.knob`): type,
    range or choices, unit, default, help and the driver setting it feeds. The
    declarations make the Scenario's checks, the ``macdma run`` options, the sweep-file
    validation and the DriverConfig (sim/run/knobs.py); ``__post_init__`` adds the checks
    that tie two knobs together. ``cpu`` is kept as a shipped name or an absolute path.
    """

    sim: str = knob("verilator", str, "simulator", choices=SIMULATORS)
    direction: str = knob("both", str, "which way frames flow", choices=DIRECTIONS)
    frame_size: int = knob(
        1514, int, "bytes handed to the MAC, FCS excluded", unit="bytes", low=MIN_FRAME,
        high=MAX_FRAME, why=" without FCS (60 = 64-byte frame)",
    )  # fmt: skip
    frames: int = knob(
        100, int, "frames per direction", low=2, high=MAX_FRAMES,
        why=" (a rate needs two frames)",
    )  # fmt: skip
    frags: int = knob(
        0, int, "extra TX fragments per frame, equal shares", low=0, high=MAX_EXTRA_FRAGMENTS,
        unit="extra fragments", driver="max_frags", to_driver=lambda frags: frags + 1,
        needs=("direction", ("tx", "both")),
    )  # fmt: skip
    irq: str = knob(
        "napi", str, "the driver's completion strategy", choices=IRQ_STRATEGIES,
        driver="strategy.name",
    )  # fmt: skip
    coalesce_frames: int = knob(
        1, int, "frames per coalesced interrupt (coalesce, napi)",
        **_register("IRQ_TX_COALESCE", "frames"), driver="strategy.coalesce_frames",
        needs=("irq", COALESCING_IRQS),
    )  # fmt: skip
    coalesce_us: int = knob(
        0, int, "coalescing timer (coalesce, napi), 0 = none", unit="µs",
        **_register("IRQ_TX_COALESCE", "timer_us"), driver="strategy.coalesce_us",
        needs=("irq", COALESCING_IRQS),
    )  # fmt: skip
    tx_coalesce_frames: int | None = knob(
        None, int, "TX frames per coalesced TX interrupt, apart from RX (IRQ_MODE tx_mode "
        "COALESCE); unset = TX as RX", optional=True, metavar="N",
        **_register("IRQ_TX_COALESCE", "frames"), driver="strategy.tx_coalesce_frames",
        needs=("irq", TX_IRQS),
    )  # fmt: skip
    tx_coalesce_us: int | None = knob(
        None, int, "TX coalescing timer, apart from RX (IRQ_MODE tx_mode COALESCE), 0 = "
        "none; unset = TX as RX", unit="µs", optional=True, metavar="US",
        **_register("IRQ_TX_COALESCE", "timer_us"), driver="strategy.tx_coalesce_us",
        needs=("irq", TX_IRQS),
    )  # fmt: skip
    coalesce_timer: str = knob(
        "first", str, "when the coalescing timer (both directions) starts: at the first "
        "uncounted completion, or again at every one ('last': fires after that long without "
        "one, the Xilinx AXI DMA's IRQDelay)", choices=COALESCE_TIMERS,
        driver="strategy.coalesce_timer",
    )  # fmt: skip
    poll_us: int = knob(
        10, int, "period of the polling loop", unit="µs", low=1, high=65535,
        driver="strategy.poll_us",
    )  # fmt: skip
    budget: int = knob(64, int, "NAPI / poll budget", unit="packets", low=1, high=MAX_RING,
                       driver="strategy.budget")  # fmt: skip
    burst_beats: int = knob(
        16, int, "AXI burst cap of both DMA channels", unit="beats",
        **_register("TX_BURST_BEATS"), driver="burst_beats",
    )  # fmt: skip
    prefetch: int = knob(
        4, int, "descriptors per descriptor read (the hardware clamps it to "
        "FEATURES.max_prefetch)", unit="descriptors", **_register("TX_PREFETCH"),
        driver="prefetch",
    )  # fmt: skip
    tx_ring: int = knob(
        256, int, "TX ring size", unit="descriptors",
        **_register("TX_RING_SIZE", skip_zero=True), driver="tx_ring",
    )  # fmt: skip
    rx_ring: int = knob(
        256, int, "RX ring size", unit="descriptors",
        **_register("RX_RING_SIZE", skip_zero=True), driver="rx_ring",
    )  # fmt: skip
    rx_buf_bytes: int = knob(
        2048, int, "bytes per RX buffer (smaller than the frame = chained RX)", unit="bytes",
        low=MIN_RX_BUFFER_BYTES, high=MAX_BUFFER_BYTES, driver="rx_buf",
    )  # fmt: skip
    cpu: str = knob(
        "ideal", str, "a shipped CPU or a CPU file (docs/cpus.md)", metavar="NAME|FILE.toml"
    )
    sys_mhz: float = knob(
        100.0, float, "SoC clock", unit="MHz", low=1, high=500, driver="sys_clk_mhz",
        to_driver=round,
    )  # fmt: skip
    link_mbps: int = knob(1000, int, "link speed in Mb/s", choices=LINK_SPEEDS)
    mem_latency_cycles: int = knob(
        0, int, "host-memory SoC cycles before the first beat of every AXI burst",
        unit="cycles", low=0, high=1000, why=" per burst",
    )  # fmt: skip
    memory: str = knob(
        "hdl", str, "host memory model: hdl = an AXI4 RAM inside the simulated top with "
        "AxiRam's timing, faster; python = cocotbext-axi's AxiRam (docs/performance.md)",
        choices=MEMORY_MODELS,
    )  # fmt: skip
    wire: str = knob(
        "auto", str, "GMII/MII wire: frames = a frame player and recorder inside the "
        "simulated top, Python wakes once per frame; cocotbext = cocotbext-eth's per-byte "
        "models; auto = frames on Verilator, cocotbext on Icarus (docs/performance.md)",
        choices=("auto", *WIRES),
    )  # fmt: skip
    tx_clean_budget: int | None = knob(
        None, int, "packets per TX clean (ISR and housekeeping tick), 0 = unlimited; unset "
        "= the CPU file's driver setting", unit="packets", low=0, high=MAX_RING, optional=True,
        metavar="N", driver="tx_clean_budget", to_driver=lambda budget: budget or None,
    )  # fmt: skip
    irq_min_interval_us: int = knob(
        0, int, "hardware interrupt rate limit IRQ_MIN_INTERVAL, minimum µs between "
        "interrupts (125 = at most 8,000/s)", unit="µs", **_register("IRQ_MIN_INTERVAL"),
        why=" (0 = no limit)", metavar="US", driver="irq_min_interval_us",
    )  # fmt: skip
    traffic: str = knob("pktgen", str, "traffic model (docs/traffic.md)", choices=TRAFFIC_MODELS)
    rate_mbps: float = knob(
        0.0, float, "offered rate of frame bytes (FCS excluded), TX and RX, 0 = as fast as "
        "possible (TX) / line rate (RX)", unit="Mb/s", low=0, high=max(LINK_SPEEDS),
    )  # fmt: skip
    window: int | None = knob(
        None, int, "stream: segments the sender keeps in flight (none = "
        f"{STREAM_WINDOW_SEGMENTS}); forward: frames the far end keeps in the router (none "
        "= offered at line rate or --rate-mbps)", unit="frames", low=1, high=4096,
        optional=True, needs=("traffic", WINDOWED_TRAFFIC),
    )  # fmt: skip
    forward_acks: bool = knob(
        False, bool, "forward: the far end's receiver acknowledges every second frame that "
        "comes out with an ACK frame sent back through the router (TCP through NAT: both "
        "directions routed)", needs=("traffic", ("forward",)),
    )  # fmt: skip
    irq_core: int = knob(
        0, int, "core of the IRQ handler, NAPI poll, timers and polling loop (IRQ "
        "affinity), 0..cores-1 of the CPU file", unit="core", low=0, high=MAX_CORES - 1,
        driver="irq_core",
    )  # fmt: skip
    app_core: int = knob(
        0, int, "core of the sending/receiving application, 0..cores-1 of the CPU file",
        unit="core", low=0, high=MAX_CORES - 1,
    )  # fmt: skip
    tx_clean_lock: str = knob(
        "frozen", str, "TX clean: frozen (meets xmit on the ring indices) or queue (holds "
        "the TX queue lock while it reaps)", choices=TX_CLEAN_LOCKS, driver="tx_clean_lock",
    )  # fmt: skip
    rx_per_irq: int | None = knob(
        None, int, "frames handed to the stack per interrupt (per-desc, eop, coalesce); "
        "unset = the strategy's own RX handling", unit="frames", low=1, high=MAX_RING,
        optional=True, metavar="N", driver="rx_per_irq", needs=("irq", CLEANING_ISR_IRQS),
    )  # fmt: skip
    linearize: bool = knob(
        False,
        bool,
        "copy fragmented TX frames into one buffer (no scatter-gather)",
        driver="linearize",
    )
    flow_control: str = knob(
        "off", str, "802.3x PAUSE both ways (the driver's MAC_FC_*; the far end honours the "
        "SoC's PAUSE frames); needs a build with ID_FEATURES.flow_control",
        choices=FLOW_CONTROL_SETTINGS, driver="flow_control", to_driver=lambda fc: fc == "on",
    )  # fmt: skip
    tx_checksum: str = knob(
        "none", str, "who computes the TX UDP checksum: none (pktgen's default), hw "
        "(descriptor request, CHECKSUM_PARTIAL) or sw (the stack, per_byte_csum)",
        choices=TX_CHECKSUM_MODES, driver="tx_checksum",
    )  # fmt: skip
    rx_sync: str = knob(
        "unmap", str, "RX buffers' DMA cache maintenance on a non-coherent CPU: unmap (the "
        "whole buffer invalidated at unmap and at the next map) or sync (only the received "
        "bytes, for the CPU and again for the device); nothing on a coherent one",
        choices=RX_SYNC_MODES, driver="rx_sync",
    )  # fmt: skip
    rx_buffers: str = knob(
        "alloc_map", str, "RX buffer handling: alloc_map (an skb allocated and mapped before "
        "reception), build_skb (a page fragment, the skb built after) or page_pool (pages "
        "recycled, mapped once; needs --rx-sync sync)",
        choices=RX_BUFFER_MODES, driver="rx_buffers",
    )  # fmt: skip
    tx_napi_weight: int | None = knob(
        None, int, "packets one NAPI poll cleans from the TX ring; unset = the budget",
        unit="packets", low=1, high=MAX_RING, optional=True, metavar="N",
        driver="tx_napi_weight",
    )  # fmt: skip
    tx_timer: str = knob(
        "none", str, "the driver's TX coalescing timer, armed by xmit, whose expiry "
        "schedules the TX clean: timer_list (mod_timer every xmit), hrtimer (hrtimer_start "
        "every xmit) or hrtimer_idle (only while NAPI is not scheduled); each also armed by "
        "the TX poll when it leaves frames in the ring; NAPI strategies",
        choices=TX_TIMER_KINDS, driver="tx_timer",
    )  # fmt: skip
    tx_timer_us: int = knob(
        1000, int, "the TX coalescing timer's delay after the xmit that arms it",
        unit="µs", low=1, high=65535, driver="tx_timer_us",
    )  # fmt: skip
    tx_bounce: bool = knob(
        False, bool, "copy every TX fragment into an aligned bounce buffer (a TX DMA that "
        "needs 4-byte-aligned buffers, frames at NET_IP_ALIGN)", driver="tx_bounce",
    )  # fmt: skip
    rx_fixup: bool = knob(
        False, bool, "copy every received frame 2 bytes along to align its IP header (RX "
        "frames landing 4-byte aligned)", driver="rx_fixup",
    )  # fmt: skip
    dim_table: str = knob(
        "net_dim", str, "the dim strategy's profile table: net_dim (the stock RX table, every "
        "interrupt an event) or axienet (frames 1/4/16/64/255 at a fixed 16 µs, from the "
        "second profile, RX interrupts the events)", choices=tuple(DIM_TABLES),
        driver="dim_table",
    )  # fmt: skip
    socket_rcvbuf_bytes: int = knob(
        SOCKET_RCVBUF_BYTES, int, "the receiving socket's buffer, which caps a stream's "
        "window (212,992 = net.core.rmem_default; tcp_rmem's autotuning reaches 6,291,456)",
        unit="bytes", low=4096, high=1 << 26,
    )  # fmt: skip
    tx_segmentation: str = knob(
        "linear", str, "stream_tx: the sending stack's segments: linear (each MSS segment "
        "copied into one buffer, one frame per xmit) or tso (up to 64 KB super-segments of "
        "page fragments, cut into frames by the driver's software TSO)",
        choices=TX_SEGMENTATION_MODES, needs=("traffic", ("stream_tx",)),
    )  # fmt: skip
    gro: bool = knob(
        False, bool, "GRO: the frames of one RX poll merged (up to 64 KB) before the "
        "stack's protocol work; stream: one socket wake-up and one ACK per merged batch",
        driver="gro",
    )  # fmt: skip
    waves: bool = knob(False, bool, "trace a waveform")
    json: str | None = knob(
        None, str, "write every metric (and the raw wire record) here", optional=True,
        metavar="FILE",
    )  # fmt: skip

    def __post_init__(self) -> None:
        for name, (declared, _) in knobs_of(type(self)).items():
            declared.check(name, getattr(self, name))
        check_needs(self)  # a knob set where it does nothing (frags 5 with direction rx)
        object.__setattr__(self, "cpu", checked_cpu(self.cpu))
        if self.frame_size < self.frags + 1:
            raise ValueError(
                f"frame_size {self.frame_size} cannot be split into {self.frags + 1} "
                "fragments of >= 1 byte"
            )
        if self.rx_buffers == "page_pool" and self.rx_sync != "sync":
            raise ValueError(
                "rx_buffers page_pool keeps its pages mapped: it needs rx_sync sync, "
                f"not {self.rx_sync}"
            )
        if self.rate_mbps > self.link_mbps:
            raise ValueError(
                f"rate_mbps {self.rate_mbps:g} is above the link's {self.link_mbps} Mb/s"
            )
        if self.traffic in TWO_WAY_TRAFFIC and self.direction != "both":
            raise ValueError(
                f"traffic {self.traffic} moves frames both ways by itself; direction must "
                f"stay both, got {self.direction!r}"
            )
        if self.traffic in ("stream", "stream_tx", "forward") and self.frags:
            raise ValueError(
                f"traffic {self.traffic} sends single-buffer frames; frags must be 0, "
                f"got {self.frags}"
            )
        spec = None if self.cpu == RTL_CPU else load_cpu(self.cpu)
        cores = 1 if spec is None else spec.cores
        if spec is not None and spec.memory is not None:
            # The memory system is RTL: the shared timing and the CPU's port are in
            # macdma_soc_hostmem, and its latencies are the CPU file's.
            if self.memory != "hdl":
                raise ValueError(
                    f"the CPU {self.cpu} has a [memory] table: its memory system needs "
                    f'memory = "hdl" (cocotbext-axi\'s AxiRam has no CPU port), got {self.memory!r}'
                )
            if self.mem_latency_cycles:
                raise ValueError(
                    f"the CPU {self.cpu} has a [memory] table, which gives the memory's "
                    f"latencies: mem_latency_cycles must stay 0, got {self.mem_latency_cycles}"
                )
        for name in ("irq_core", "app_core"):
            if getattr(self, name) >= cores:
                raise ValueError(
                    f"{name} must be 0..{cores - 1} (the CPU {self.cpu} has {cores} "
                    f"core(s)); got {getattr(self, name)}"
                )
        if self.tx_ring < self.frags + 2:
            raise ValueError(
                f"tx_ring {self.tx_ring} cannot hold one frame of {self.frags + 1} "
                "fragments (needs >= frags + 2 descriptors)"
            )
        if self.traffic == "stream_tx" and self.window_frames < 2:
            raise ValueError(
                "traffic stream_tx: the far end acknowledges every second segment (no "
                f"delayed-ACK timer is modelled), so window must be >= 2; got {self.window}"
            )
        if self.tso:
            if self.tx_checksum != "none":
                raise ValueError(
                    "tx_segmentation tso: the driver's TSO builds each segment's headers "
                    f"itself and requests no checksum; tx_checksum must be none, got "
                    f"{self.tx_checksum!r}"
                )
            if self.tx_ring <= self.tso_max_descriptors:
                raise ValueError(
                    f"tx_segmentation tso: tx_ring {self.tx_ring} cannot hold a "
                    f"{self.tso_max_segments}-segment super-segment "
                    f"({self.tso_max_descriptors} descriptors); give --tx-ring "
                    f">= {self.tso_max_descriptors + 1}"
                )

    def driver_config(self, cpu_driver: dict | None = None, *, mii: bool = False):
        """The DriverConfig of this scenario, derived from its knobs' declarations
        over the CPU file's driver settings ``cpu_driver``; ``mii`` is the link mode's
        (10/100 Mb/s). See :func:`macdma.sim.run.knobs.driver_config`. With
        ``tx_segmentation`` tso the queue stops while a worst-case super-segment no
        longer fits (fec's tx_stop_threshold), so its worst frame is that."""
        config = driver_config(self, cpu_driver, mii=mii)
        if self.tso:
            config = replace(config, max_frags=self.tso_max_descriptors, wake_threshold=None)
        return config

    # -- stream_tx ---------------------------------------------------------------------------
    @property
    def tso(self) -> bool:
        """The stream_tx sender hands super-segments to the driver's software TSO."""
        return self.traffic == "stream_tx" and self.tx_segmentation == "tso"

    @property
    def mss(self) -> int:
        """stream_tx: payload bytes per segment (``frame_size`` less the TCP/IP headers)."""
        return self.frame_size - TCP_HEADER_BYTES

    @property
    def tso_max_segments(self) -> int:
        """Most segments of one super-segment: what fits :data:`TSO_MAX_BYTES`."""
        return max(1, (TSO_MAX_BYTES - TCP_HEADER_BYTES) // self.mss)

    @property
    def tso_max_descriptors(self) -> int:
        """Descriptors a largest super-segment may need: per segment its header and the
        pieces of the page fragments it covers (one, or two where it crosses a page)."""
        segments = self.tso_max_segments
        crossings = -(-segments * self.mss // TSO_PAGE_BYTES)
        return 2 * segments + crossings

    # -- derived ---------------------------------------------------------------------------
    @property
    def fragment_sizes(self) -> list[int]:
        """Equal shares of ``frame_size``; the first ones take the remainder."""
        count = self.frags + 1
        share, extra = divmod(self.frame_size, count)
        return [share + (1 if index < extra else 0) for index in range(count)]

    @property
    def byte_time_ns(self) -> float:
        return 8e3 / self.link_mbps

    @property
    def wire_bytes_per_frame(self) -> int:
        """Preamble, frame, FCS and gap: one frame's slot at line rate."""
        return PREAMBLE_SFD_BYTES + max(self.frame_size, 60) + FCS_BYTES + IFG_BYTES

    @property
    def sends_tx(self) -> bool:
        """The SoC transmits the scenario's own frames (pktgen, udp)."""
        return self.traffic not in TWO_WAY_TRAFFIC and self.direction in ("tx", "both")

    @property
    def sends_rx(self) -> bool:
        """The far end offers the scenario's frames to the SoC's RX."""
        return self.traffic in TWO_WAY_TRAFFIC or self.direction in ("rx", "both")

    @property
    def window_frames(self) -> int | None:
        """The window in force: stream's (``window`` or STREAM_WINDOW_SEGMENTS), forward's
        when given, else None (no window)."""
        if self.traffic in ("stream", "stream_tx"):
            return self.window or STREAM_WINDOW_SEGMENTS
        return self.window if self.traffic == "forward" else None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown scenario field(s): {', '.join(sorted(unknown))}")
        return cls(**data)

    def describe(self) -> str:
        return (
            f"{self.direction} {self.frames} x {self.frame_size} B ({self.frags} extra frags), "
            f"irq {self.irq}, cpu {self.cpu}, link {self.link_mbps} Mb/s, "
            f"sys {self.sys_mhz:g} MHz, "
            f"burst {self.burst_beats}, prefetch {self.prefetch}, "
            f"rings {self.tx_ring}/{self.rx_ring}, "
            f"rx_buf {self.rx_buf_bytes}, mem latency {self.mem_latency_cycles}"
            + ("" if self.tx_clean_budget is None else f", tx clean budget {self.tx_clean_budget}")
            + (
                f", irq min interval {self.irq_min_interval_us} us"
                if self.irq_min_interval_us
                else ""
            )
            + (f", traffic {self.traffic}" if self.traffic != "pktgen" else "")
            + (f" at {self.rate_mbps:g} Mb/s offered" if self.rate_mbps else "")
            + (f", window {self.window_frames}" if self.window_frames else "")
            + (
                f", irq core {self.irq_core}, app core {self.app_core}"
                if self.irq_core or self.app_core
                else ""
            )
            + (f", tx clean lock {self.tx_clean_lock}" if self.tx_clean_lock != "frozen" else "")
            + (f", rx per irq {self.rx_per_irq}" if self.rx_per_irq is not None else "")
            + (", linearize" if self.linearize else "")
            + (f", segmentation {self.tx_segmentation}" if self.traffic == "stream_tx" else "")
            + (", flow control on" if self.flow_control == "on" else "")
            + f", on {self.sim}"
        )


# -- metrics ------------------------------------------------------------------------------
#
# Every rate of a run comes from what happened, inside ONE measurement window shared by all
# metrics (docs/driver-model.md, "The measurement window"):
#   events     TX: the wire start stamps; RX: the times frames reached the application.
#              The directions that carry the traffic's data choose the window: both for
#              pktgen, udp and forward; a stream's data direction alone (stream: RX,
#              stream_tx: TX), its reverse direction being only ACKs (one per GRO batch,
#              a few dozen in a run), as iperf measures the receiver's goodput.
#   warm-up    the first WARMUP_FRACTION of each direction's frames is excluded: the
#              window starts at the first event after them (the later one of the two),
#              or, when that event is one of a batch delivered together (events closer
#              than half a frame's wire slot: frames that queued, then went up at once),
#              at the batch's last event, so no frame queued before the window counts in it.
#   periods    the slowest periodic activity that fires at least twice in the run (poll
#              timer, housekeeping tick, coalescing timer) sets the window's length: a
#              whole number of its periods, cut into equal batches of whole periods;
#              unless the data pauses longer than that period between two events (it
#              then comes in batches the period does not describe, and a window of whole
#              periods would end inside a pause). Otherwise the window runs to the last
#              event and has BATCHES batches, or, when the data pauses longer than a
#              tenth of it, one batch per run of data between two pauses.
#   counting   the cumulative count of frames, linear between two events, is read at the
#              window's and batches' edges; every other counter (CPU busy time, IRQs,
#              bus beats) is sampled through the run and read the same way.
#   precision  batch means: the ± of a rate is the 95% Student-t half-width of the
#              batches' rates; below MIN_WINDOW_FRAMES frames the window is flagged.

WARMUP_FRACTION = 0.25
BATCHES = 10
MIN_WINDOW_FRAMES = 20
#: Student t, two-sided 95%, by degrees of freedom (batches - 1).
_T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
          9: 2.262}  # fmt: skip


def _percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile (p50 of [1,2,3,4] is 2); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def _latency(values_ns: list[float]) -> dict:
    return {
        "p50_ns": _percentile(values_ns, 0.50),
        "p99_ns": _percentile(values_ns, 0.99),
        "max_ns": max(values_ns) if values_ns else None,
        "samples": len(values_ns),
    }


def cumulative(events_ns: list[float], t_ns: float) -> float:
    """Frames done by ``t_ns``: the event count, linear between two events (event ``i``
    is the ``i``-th frame done, counting from 0)."""
    if not events_ns or t_ns < events_ns[0]:
        return 0.0
    if t_ns >= events_ns[-1]:
        return float(len(events_ns) - 1)
    i = bisect.bisect_right(events_ns, t_ns) - 1
    a, b = events_ns[i], events_ns[i + 1]
    return i + ((t_ns - a) / (b - a) if b > a else 0.0)


def _whole_period_batches(periods: int) -> tuple[int, int]:
    """(batches, periods per batch): 2..BATCHES batches of equal whole periods using as
    many of ``periods`` as possible, more batches first among equals; (1, periods) when
    fewer than two periods fit."""
    if periods < 2:
        return 1, periods
    best = (2, periods // 2)
    for k in range(3, min(BATCHES, periods) + 1):
        if k * (periods // k) >= best[0] * best[1]:
            best = (k, periods // k)
    return best


def _batch_end(events: list[float], index: int, batch_gap_ns: float) -> int:
    """The last event of the batch ``events[index]`` belongs to: events closer than
    ``batch_gap_ns`` to the one before went up together (never past the second-to-last)."""
    while index < len(events) - 2 and events[index + 1] - events[index] < batch_gap_ns:
        index += 1
    return index


def _longest_pause(events: list[float], start: float, end: float) -> float:
    """The longest time between two consecutive events inside [start, end]."""
    inside = events[bisect.bisect_left(events, start) : bisect.bisect_right(events, end)]
    return max((b - a for a, b in zip(inside, inside[1:], strict=False)), default=0.0)


def _pause_cuts(lists: list[list[float]], start: float, end: float, limit: float) -> list[float]:
    """The events inside (start, end) after which a list pauses longer than ``limit``."""
    cuts = {
        e[i]
        for e in lists
        for i in range(len(e) - 1)
        if start < e[i] < end and e[i + 1] - e[i] > limit
    }
    return sorted(cuts)


def choose_window(
    event_lists: list[list[float]],
    frames: int,
    periods_ns: list[float],
    batch_gap_ns: float = 0.0,
) -> dict:
    """The measurement window for a run whose data directions finished frames at the
    times of ``event_lists`` (ns, sorted), out of ``frames`` per direction, with periodic
    activities of ``periods_ns``; events closer than ``batch_gap_ns`` went up as one
    batch (0: never). Returns start/end (ns), the period used, the batch edges and flags
    (see the rule above)."""
    lists = [e for e in event_lists if len(e) >= 2]
    if not lists:
        return {"start_ns": 0.0, "end_ns": 0.0, "batches": [], "ok": False,
                "reason": "fewer than two frames done"}  # fmt: skip
    warmup = max(1, int(frames * WARMUP_FRACTION))
    starts = [e[_batch_end(e, min(warmup, len(e) - 2), batch_gap_ns)] for e in lists]
    start = max(starts)
    last = min(e[-1] for e in lists)
    span = last - start
    if span <= 0:
        return {"start_ns": start, "end_ns": start, "batches": [], "ok": False,
                "reason": "no time between the warm-up and the last frame"}  # fmt: skip
    pause = max(_longest_pause(e, start, last) for e in lists)
    fitting = [p for p in periods_ns if pause <= p <= span / 2 and p > 0]
    period = max(fitting) if fitting else None
    if period is not None:
        k, per_batch = _whole_period_batches(int(span // period))
        batch_ns = per_batch * period
        end = start + k * batch_ns
        edges = [(start + i * batch_ns, start + (i + 1) * batch_ns) for i in range(k)]
    else:
        end = last
        # Data that pauses longer than a tenth of the window comes in batches: the
        # batch means are then the batches' own (from one batch's end to the next's).
        cuts = _pause_cuts(lists, start, end, (end - start) / BATCHES)
        bounds = [start, *cuts, end] if cuts else [
            start + i * (end - start) / BATCHES for i in range(BATCHES + 1)
        ]  # fmt: skip
        edges = list(zip(bounds, bounds[1:], strict=False))
        k = len(edges)
    done = sum(cumulative(e, end) - cumulative(e, start) for e in lists)
    window = {
        "start_ns": start,
        "end_ns": end,
        "duration_ns": end - start,
        "warmup_frames": warmup,
        "longest_pause_ns": pause,
        "period_ns": period,
        "periods": round((end - start) / period) if period else None,
        "batches": edges,
        "frames": done,
        "ok": done >= MIN_WINDOW_FRAMES * len(lists) and k >= 2,
        "reason": "",
    }
    if not window["ok"]:
        window["reason"] = (
            f"{done:.0f} frames in the window (want >= {MIN_WINDOW_FRAMES} per direction)"
            if k >= 2
            else "the window holds a single period of the periodic activity"
        )
    return window


def _rate_in(events_ns: list[float], window: dict) -> tuple[float, float | None]:
    """(frames/s over the window, its 95% ± from the batch means or None)."""
    duration = window["end_ns"] - window["start_ns"]
    if duration <= 0:
        return 0.0, None
    rate = cumulative(events_ns, window["end_ns"]) - cumulative(events_ns, window["start_ns"])
    rate = rate / duration * 1e9
    batches = [
        (cumulative(events_ns, b) - cumulative(events_ns, a)) / (b - a) * 1e9
        for a, b in window["batches"]
    ]
    if len(batches) < 2:
        return rate, None
    mean = sum(batches) / len(batches)
    var = sum((x - mean) ** 2 for x in batches) / (len(batches) - 1)
    return rate, _T_975[min(len(batches) - 1, 9)] * math.sqrt(var / len(batches))


class _Samples:
    """The bench's cumulative counters through the run, read at any time (linear)."""

    def __init__(self, record: dict):
        samples = record.get("samples") or {"fields": [], "rows": []}
        self.fields = {name: i for i, name in enumerate(samples["fields"])}
        self.rows = samples["rows"]
        self.times = [row[0] for row in self.rows]

    def at(self, name: str, t_ns: float) -> float:
        if not self.rows or name not in self.fields:
            return 0.0
        column = self.fields[name]
        i = bisect.bisect_right(self.times, t_ns) - 1
        if i < 0:
            return self.rows[0][column]
        if i >= len(self.rows) - 1:
            return self.rows[-1][column]
        a, b = self.rows[i], self.rows[i + 1]
        share = (t_ns - a[0]) / (b[0] - a[0]) if b[0] > a[0] else 0.0
        return a[column] + share * (b[column] - a[column])

    def delta(self, name: str, window: dict) -> float:
        return self.at(name, window["end_ns"]) - self.at(name, window["start_ns"])


def _events(record: dict) -> dict[str, list[float]]:
    events = {}
    if "tx" in record:
        events["tx"] = [w["start_ps"] / 1e3 for w in record["tx"]["wire"]]
    if "rx" in record:
        events["rx"] = sorted(t for _, t in record["rx"]["received"])
    return events


#: The direction carrying a stream's data; its reverse direction carries only ACKs.
STREAM_DATA_DIRECTION = {"stream": "rx", "stream_tx": "tx"}


def window_directions(scenario: Scenario, events: dict[str, list[float]]) -> list[str]:
    """The directions whose events choose the measurement window: a stream's data
    direction alone (its ACKs are few, one per GRO batch, and would put the window
    between the last two of them), every direction of the other traffic models."""
    data = STREAM_DATA_DIRECTION.get(scenario.traffic)
    if data is not None and data in events:
        return [data]
    return list(events)


def compute_metrics(record: dict) -> dict:
    """Turn the bench's raw ``record`` into the reported metrics (see docs/driver-model.md).

    ``record`` keys: ``scenario`` (Scenario fields), ``tx``/``rx`` (per direction: ``wire``
    list of {start_ps, end_ps, length}, ``xmit_ns``, ``received`` (seq, time_ns) pairs...),
    ``driver`` (DriverStats fields), ``cpu`` (CpuModel.report()), ``counters`` (registers),
    ``bursts`` (per-direction AXI burst counts), ``samples`` (the bench's cumulative
    counters through the run), ``periodic_ns``, ``sim_ns``, ``wall_seconds``.

    Counts (frames, drops, IRQs) are exact and cover the whole run; every rate, share and
    per-packet figure covers the measurement window (``window``).
    """
    scenario = Scenario(**record["scenario"])
    driver = record.get("driver", {})
    cpu = record.get("cpu", {})
    counters = record.get("counters", {})
    bursts = record.get("bursts", {})
    samples = _Samples(record)
    byte_ps = scenario.byte_time_ns * 1e3
    slot_s = scenario.wire_bytes_per_frame * scenario.byte_time_ns * 1e-9
    mhz = cpu.get("mhz", 0.0)
    events = _events(record)
    # Events closer than half a data frame's wire slot did not come one by one off the
    # wire: they queued and went up together.
    window = choose_window(
        [events[d] for d in window_directions(scenario, events)],
        scenario.frames,
        record.get("periodic_ns", []),
        batch_gap_ns=slot_s * 1e9 / 2,
    )
    duration_ns = window["end_ns"] - window["start_ns"]
    done = {d: cumulative(e, window["end_ns"]) - cumulative(e, window["start_ns"])
            for d, e in events.items()}  # fmt: skip
    packets = sum(done.values())
    per_packet = packets if packets > 0 else float("nan")
    busy_ns = samples.delta("busy_ns", window)
    spin_ns = samples.delta("spin_ns", window)
    work_ns = busy_ns - spin_ns
    cores = cpu.get("cores", 1)
    core_ns = duration_ns * cores
    per_core = []
    for core in range(cores):
        if f"core{core}_busy_ns" in samples.fields:
            core_spin = samples.delta(f"core{core}_spin_ns", window)
            core_work = samples.delta(f"core{core}_busy_ns", window) - core_spin
        else:  # a record from before per-core samples: one core, the CPU's totals
            core_spin, core_work = spin_ns, work_ns
        per_core.append(
            {
                "core": core,
                "utilisation": core_work / duration_ns if duration_ns > 0 else 0.0,
                "spin_utilisation": core_spin / duration_ns if duration_ns > 0 else 0.0,
            }
        )
    locks = {
        name: {
            "contentions": samples.delta(f"lock_{name}_contentions", window),
            "spin_cycles": samples.delta(f"lock_{name}_spin_ns", window) * mhz / 1e3,
            "contentions_run": run["contentions"],
            "spin_cycles_run": run["spin_ns"] * mhz / 1e3,
            "wait_ns_run": run["wait_ns"],
        }
        for name, run in record.get("locks", {}).items()
    }
    irqs = samples.delta("irqs", window)
    window_cycles = duration_ns * scenario.sys_mhz / 1e3
    read_beats, write_beats = (
        samples.delta("read_beats", window),
        samples.delta("write_beats", window),
    )
    moved = samples.delta("read_bytes", window) + samples.delta("write_bytes", window)
    beats = read_beats + write_beats
    result: dict = {
        "scenario": record["scenario"],
        "sim_ns": record.get("sim_ns"),
        "wall_seconds": record.get("wall_seconds"),
        "sim_ns_per_wall_second": (
            record["sim_ns"] / record["wall_seconds"]
            if record.get("sim_ns") and record.get("wall_seconds")
            else None
        ),
        "window": window,
        "cpu": {
            "preset": scenario.cpu,
            "mhz": mhz,
            "cores": cores,
            # work: every busy cycle except idle spinning (pktgen on a stopped queue), over
            # all cores (1.0 = every core busy); a spin on a lock is work
            "utilisation": work_ns / core_ns if core_ns > 0 else 0.0,
            "cpu_pct": 100.0 * work_ns / core_ns if core_ns > 0 else 0.0,
            "spin_utilisation": spin_ns / core_ns if core_ns > 0 else 0.0,
            "lock_spin_pct": 100.0 * samples.delta("lock_spin_ns", window) / core_ns
            if core_ns > 0
            else 0.0,
            "per_core": per_core,
            "cycles_per_packet": work_ns * mhz / 1e3 / per_packet if packets else None,
            "cycles_by_cost_run": cpu.get("cycles", {}),
            "slice_cycles": cpu.get("slice_cycles"),
            "preemptions": cpu.get("preemptions", 0),
            "preemption_max_ns": cpu.get("preemption_max_ns"),
            "max_step_ns": cpu.get("max_step_ns"),
            "preemption_bound_ns": cpu.get("preemption_bound_ns"),
        },
        "irqs": driver.get("irqs", 0),
        "timer_irqs": driver.get("timer_irqs", 0),
        "timer_overruns": driver.get("timer_overruns", 0),
        "irqs_per_second": irqs / duration_ns * 1e9 if duration_ns > 0 else 0.0,
        "irqs_per_packet": irqs / per_packet if packets else None,
        "timer_irqs_per_second": samples.delta("timer_irqs", window) / duration_ns * 1e9
        if duration_ns > 0
        else 0.0,
        "polls": driver.get("polls", 0),
        "mmio_reads_per_packet": driver.get("mmio_reads", 0)
        / max(driver.get("tx_packets", 0) + driver.get("rx_packets", 0), 1),
        "mmio_writes_per_packet": driver.get("mmio_writes", 0)
        / max(driver.get("tx_packets", 0) + driver.get("rx_packets", 0), 1),
        "bus": {
            "read_beats": read_beats,
            "write_beats": write_beats,
            "bytes_per_beat": moved / beats if beats else None,
            "read_pct": 100.0 * read_beats / window_cycles if window_cycles else 0.0,
            "write_pct": 100.0 * write_beats / window_cycles if window_cycles else 0.0,
            "mbytes_per_second": moved / duration_ns * 1e3 if duration_ns > 0 else 0.0,
        },
        "locks": locks,
        "driver": driver,
        "counters": counters,
        # the CPU's own traffic through the memory system's port over the traffic phase
        "cpu_memory": record.get("cpu_memory", {}),
    }
    if "dim" in record:
        result["dim"] = record["dim"]
    in_window = lambda t: window["start_ns"] <= t < window["end_ns"]  # noqa: E731
    if "tx" in record:
        tx = record["tx"]
        wire = tx["wire"]
        fps, fps_ci = _rate_in(events["tx"], window)
        frame_bytes = tx.get("frame_bytes", scenario.frame_size)  # stream: the ACKs
        gaps = [
            (later["start_ps"] - earlier["end_ps"]) / byte_ps
            for earlier, later in zip(wire, wire[1:], strict=False)
        ]
        latency = [
            w["end_ps"] / 1e3 - sent_ns
            for w, sent_ns in zip(wire, tx["xmit_ns"], strict=False)
            if in_window(w["start_ps"] / 1e3)
        ]
        sent = len(wire)
        result["tx"] = {
            "frames_offered": tx["offered"],
            "frames_sent": sent,
            "frames_dropped": tx["offered"] - sent,
            "frames_in_window": done["tx"],
            "frames_per_second": fps,
            "frame_bytes": frame_bytes,
            "mbps": fps * frame_bytes * 8 / 1e6,
            "mbps_ci": fps_ci * frame_bytes * 8 / 1e6 if fps_ci is not None else None,
            "percent_of_line_rate": 100.0 * fps * slot_s * _slot_share(scenario, frame_bytes),
            "gap_bytes_min": min(gaps) if gaps else None,
            "gap_bytes_max": max(gaps) if gaps else None,
            "latency": _latency(latency),
            "queue_stops": driver.get("queue_stops", 0),
            "axi_bursts_per_frame": bursts.get("tx", 0) / max(sent, 1),
            "wire": wire,
        }
    if "rx" in record:
        rx = record["rx"]
        wire = rx["wire"]  # the source's stamps of every frame offered
        received = rx["received"]  # [seq, time_ns] in delivery order
        fps, fps_ci = _rate_in(events["rx"], window)
        offered_fps, _ = _rate_in([w["start_ps"] / 1e3 for w in wire], window)
        latency = [t - wire[seq]["end_ps"] / 1e3 for seq, t in received if in_window(t)]
        flagged = rx.get("errored", 0) + rx.get("truncated", 0)  # delivered with ok False
        rx_bytes = rx.get("frame_bytes", scenario.frame_size)  # stream_tx: the ACKs
        result["rx"] = {
            "frames_offered": len(wire),
            "frames_received": len(received),
            # not delivered and not flagged: lost before the driver saw them
            "frames_dropped": len(wire) - len(received) - flagged,
            # flagged bad (FCS, rx_er, ...); the ring's truncations are in frames_truncated
            # and, like every frame the hardware lost, in frames_dropped_hw
            "frames_errored": rx.get("errored", 0),
            "frames_truncated": rx.get("truncated", 0),
            "frames_dropped_hw": counters.get("RX_DROPS", 0) + counters.get("RX_FIFO_OVERFLOWS", 0),
            "frames_in_window": done["rx"],
            # goodput: frames delivered to on_receive per second inside the window
            "frames_per_second": fps,
            "frame_bytes": rx_bytes,
            "mbps": fps * rx_bytes * 8 / 1e6,
            "mbps_ci": fps_ci * rx_bytes * 8 / 1e6 if fps_ci is not None else None,
            "percent_of_line_rate": 100.0 * fps * slot_s * _slot_share(scenario, rx_bytes),
            # what the source offered inside the same window (0 once it stopped sending)
            "offered_percent_of_line_rate": 100.0
            * offered_fps
            * slot_s
            * _slot_share(scenario, rx_bytes),
            "latency": _latency(latency),
            "axi_bursts_per_frame": bursts.get("rx", 0) / max(len(received), 1),
            "wire": wire,
        }
    result["traffic"] = _traffic_metrics(scenario, record, result, window)
    result["flow_control"] = _flow_control_metrics(scenario, record, window)
    return result


def paused_intervals_ns(pauses: list, quantum_ps: float) -> list[tuple[float, float]]:
    """When the far end was paused, as (start ns, end ns) intervals: each PAUSE frame
    (end ps, quanta) holds it from its last byte for its quanta, or until the next PAUSE
    replaces its time (an XON, 0 quanta, ends the pause there; a refresh restarts it)."""
    intervals = []
    for index, (end_ps, quanta) in enumerate(pauses):
        until_ps = end_ps + quanta * quantum_ps
        if index + 1 < len(pauses):
            until_ps = min(until_ps, pauses[index + 1][0])
        if until_ps > end_ps:
            intervals.append((end_ps / 1e3, until_ps / 1e3))
    return intervals


def _flow_control_metrics(scenario: Scenario, record: dict, window: dict) -> dict:
    """802.3x (docs/driver-model.md): the PAUSE frames the SoC sent (its STATS_TX_XOFF /
    STATS_TX_XON counters, whole run) and how long they held the far end, over the run
    and as a share of the measurement window."""
    counters = record.get("counters", {})
    peer = record.get("peer")
    xoff, xon = counters.get("STATS_TX_XOFF", 0), counters.get("STATS_TX_XON", 0)
    metrics: dict = {
        "enabled": scenario.flow_control == "on",
        "xoff_sent": xoff,
        "xon_sent": xon,
        "pause_frames_sent": xoff + xon,
        "partner_paused_us": 0.0,
        "partner_paused_pct": 0.0,
        "partner_stalled_us": 0.0,
    }
    if peer is None:
        return metrics
    intervals = paused_intervals_ns(peer["pauses"], peer["quantum_ps"])
    start, end = window["start_ns"], window["end_ns"]
    inside = sum(max(0.0, min(b, end) - max(a, start)) for a, b in intervals)
    metrics.update(
        pause_frames_seen=len(peer["pauses"]),
        partner_paused_us=sum(b - a for a, b in intervals) / 1e3,
        partner_paused_pct=100.0 * inside / (end - start) if end > start else 0.0,
        partner_stalled_us=peer["stalled_ps"] / 1e6,
    )
    return metrics


def _slot_share(scenario: Scenario, frame_bytes: int) -> float:
    """One ``frame_bytes`` frame's wire slot over one ``frame_size`` frame's."""
    slot = PREAMBLE_SFD_BYTES + max(frame_bytes, 60) + FCS_BYTES + IFG_BYTES
    return slot / scenario.wire_bytes_per_frame


def _traffic_metrics(scenario: Scenario, record: dict, result: dict, window: dict) -> dict:
    """What the traffic model's user reads (docs/traffic.md): goodput as iperf/pktgen
    report it (frame bytes per second, FCS excluded, over the window), the drops by place,
    and for rr the round trips ending inside the window."""
    traffic = record.get("traffic", {})
    model = scenario.traffic
    metrics: dict = {
        "model": model,
        "rate_mbps_offered": scenario.rate_mbps or None,
        "drops": traffic.get("drops", {}),
        "socket_packets": traffic.get("socket_packets"),
    }
    # goodput: what the far end's iperf/pktgen counts: frames the application consumed
    # (RX), or frames on the wire (TX; a router's frames that left)
    if model in ("pktgen", "udp"):
        metrics["goodput_mbps"] = {d: result[d]["mbps"] for d in ("tx", "rx") if d in result}
    elif model == "forward":
        metrics["goodput_mbps"] = {"forwarded": result.get("tx", {}).get("mbps", 0.0)}
        if "acks" in traffic:  # forward_acks: the ACKs routed back, counted apart
            metrics["acks"] = traffic["acks"]
    elif model == "stream":
        metrics["goodput_mbps"] = {"rx": result.get("rx", {}).get("mbps", 0.0)}
        # the window in force: --window, capped by what the socket holds (flow control)
        metrics["window_segments"] = traffic.get("window_segments", scenario.window)
    elif model == "stream_tx":
        metrics["goodput_mbps"] = {"tx": result.get("tx", {}).get("mbps", 0.0)}
        metrics["window_segments"] = traffic.get("window_segments", scenario.window)
        metrics["max_in_flight"] = traffic.get("max_in_flight")
        metrics["xmits"] = traffic.get("xmits")
        metrics["segments_per_xmit"] = traffic.get("segments_per_xmit")
        metrics["acks"] = traffic.get("acks")
    elif model == "rr":
        trips = traffic.get("round_trips", [])
        inside = [rtt for end, rtt in trips if window["start_ns"] <= end < window["end_ns"]]
        duration_s = (window["end_ns"] - window["start_ns"]) / 1e9
        metrics["transactions_per_second"] = len(inside) / duration_s if duration_s > 0 else 0.0
        metrics["round_trip"] = _latency(inside)
    return metrics


def _fmt_ns(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f} ms"
    if value >= 1e3:
        return f"{value / 1e3:.1f} us"
    return f"{value:.0f} ns"


def _fmt_ci(value: float | None) -> str:
    return "" if value is None else f"±{value:.1f}"


def _fmt_num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def frames_lost(metrics: dict, direction: str) -> int:
    """Frames of ``direction`` offered but not delivered intact (TX: not on the wire; RX:
    not handed to ``on_receive``), whatever lost them."""
    m = metrics[direction]
    done = m["frames_sent"] if direction == "tx" else m["frames_received"]
    return m["frames_offered"] - done


def _loss_line(metrics: dict, direction: str) -> str | None:
    """Every way the frames of ``direction`` were lost or cut, or None when none was.
    RX: truncated (the RX FIFO or the ring ran out mid-frame: delivered cut short and
    flagged), flagged bad (FCS, rx_er...), and never delivered (dropped whole by the
    hardware or the driver); the hardware's own drop counters, which count every
    truncation too, follow."""
    lost = frames_lost(metrics, direction)
    if lost <= 0:
        return None
    m = metrics[direction]
    if direction == "tx":
        return f"tx lost {lost} of {m['frames_offered']}: never reached the wire"
    causes = [
        f"{m.get('frames_truncated', 0)} truncated (cut short by the RX FIFO or the ring, "
        "delivered flagged)",
        f"{m.get('frames_errored', 0)} flagged bad (FCS, rx_er)",
        f"{m['frames_dropped']} never delivered (dropped whole by the hardware or the software)",
    ]
    return (
        f"rx lost {lost} of {m['frames_offered']}: {', '.join(causes)}; hardware drop "
        f"counters RX_DROPS + RX_FIFO_OVERFLOWS: {m.get('frames_dropped_hw', 0)} (truncations "
        "included)"
    )


def format_summary(metrics: dict) -> str:
    """A human-readable table of a run's metrics (rates over the measurement window).

    ``lost`` counts every frame offered and not delivered intact, and a line per direction
    that lost any says how (:func:`_loss_line`). A frame lost with a counter is a measured
    outcome, not a failure: ``macdma run`` still exits 0 (a frame lost with no counter
    fails the run inside the bench)."""
    lines = []
    header = (
        f"{'dir':>3} {'frames':>13} {'lost':>6} {'Mb/s':>8} {'±95%':>7} {'line %':>7} "
        f"{'lat p50':>9} {'lat p99':>9} {'lat max':>9} {'bursts/fr':>9}"
    )
    lines.append(header)
    for direction in ("tx", "rx"):
        if direction not in metrics:
            continue
        m = metrics[direction]
        done = m["frames_sent"] if direction == "tx" else m["frames_received"]
        count = f"{done}/{m['frames_offered']}"
        lines.append(
            f"{direction:>3} {count:>13} {frames_lost(metrics, direction):>6} "
            f"{m['mbps']:>8.1f} {_fmt_ci(m['mbps_ci']):>7} {m['percent_of_line_rate']:>6.2f}% "
            f"{_fmt_ns(m['latency']['p50_ns']):>9} {_fmt_ns(m['latency']['p99_ns']):>9} "
            f"{_fmt_ns(m['latency']['max_ns']):>9} {m['axi_bursts_per_frame']:>9.2f}"
        )
    lines += [line for d in ("tx", "rx") if d in metrics and (line := _loss_line(metrics, d))]
    window = metrics["window"]
    period = window.get("period_ns")
    lines.append(
        f"window {window['start_ns'] / 1e3:,.1f}..{window['end_ns'] / 1e3:,.1f} us: "
        f"{window.get('frames', 0):.1f} frames, {len(window['batches'])} batches"
        + (f", {window['periods']} periods of {period / 1e3:g} us" if period else "")
        + ("" if window["ok"] else f" (too short: {window['reason']})")
    )
    cpu = metrics["cpu"]
    lines.append(
        f"cpu {cpu['preset']} @ {cpu['mhz']:g} MHz: {100 * cpu['utilisation']:.1f}% busy "
        f"(+{100 * cpu['spin_utilisation']:.1f}% spinning), "
        f"{_fmt_num(cpu['cycles_per_packet'], ',.0f')} cycles/packet; irqs {metrics['irqs']} "
        f"({_fmt_num(metrics['irqs_per_packet'], '.2f')}/packet, "
        f"{metrics['irqs_per_second']:,.0f}/s), timer irqs {metrics['timer_irqs']}, "
        f"polls {metrics['polls']}, queue stops {metrics['driver'].get('queue_stops', 0)}; "
        f"mmio {metrics['mmio_reads_per_packet']:.2f} reads + "
        f"{metrics['mmio_writes_per_packet']:.2f} writes per packet"
    )
    if cpu.get("cores", 1) > 1:
        lines.append(
            f"cpu {cpu['cpu_pct']:.1f}% of {cpu['cores']} cores: "
            + ", ".join(f"core {c['core']} {100 * c['utilisation']:.1f}%" for c in cpu["per_core"])
            + f"; lock spinning {cpu['lock_spin_pct']:.1f}%"
        )
    # spinlocks a context spun on (the test-and-set NAPI states never spin)
    contended = {n: v for n, v in metrics.get("locks", {}).items() if v["spin_cycles_run"]}
    if contended:
        lines.append(
            "locks: "
            + ", ".join(
                f"{name} {v['contentions_run']} contentions, {v['spin_cycles_run']:,.0f} "
                "cycles spinning"
                for name, v in contended.items()
            )
        )
    if "dim" in metrics:
        dim = metrics["dim"]
        lines.append(
            f"dim: {dim['decisions']} decisions, {dim['changes']} profile changes, "
            f"ending at profile {dim['profile_index']} {tuple(dim['profile'])} (frames, us)"
        )
    if "tx" in metrics and metrics["tx"]["gap_bytes_min"] is not None:
        lines.append(
            f"tx gaps {metrics['tx']['gap_bytes_min']:g}..{metrics['tx']['gap_bytes_max']:g} "
            "byte times"
        )
    traffic = metrics.get("traffic", {})
    if traffic.get("model", "pktgen") != "pktgen" or traffic.get("drops"):
        parts = [f"traffic {traffic['model']}"]
        for name, mbps in traffic.get("goodput_mbps", {}).items():
            parts.append(f"goodput {name} {mbps:.1f} Mb/s")
        if "round_trip" in traffic:
            trip = traffic["round_trip"]
            parts.append(
                f"{traffic['transactions_per_second']:,.0f} transactions/s, round trip p50 "
                f"{_fmt_ns(trip['p50_ns'])} p99 {_fmt_ns(trip['p99_ns'])}"
            )
        drops = ", ".join(f"{n} {c}" for n, c in sorted(traffic.get("drops", {}).items()))
        parts.append(f"software drops: {drops or 'none'}")
        lines.append("; ".join(parts))
    flow = metrics.get("flow_control", {})
    if flow.get("enabled"):
        lines.append(
            f"flow control: {flow['xoff_sent']} XOFF + {flow['xon_sent']} XON sent; far end "
            f"paused {flow['partner_paused_us']:,.1f} us ({flow['partner_paused_pct']:.1f}% "
            f"of the window), held a ready frame {flow['partner_stalled_us']:,.1f} us"
        )
    rate = metrics.get("sim_ns_per_wall_second")
    lines.append(
        f"{metrics['sim_ns'] or 0:,.0f} simulated ns in {metrics['wall_seconds'] or 0:.1f} s "
        f"wall" + (f" ({rate:,.0f} sim ns per wall second)" if rate else "")
    )
    return "\n".join(lines)


# -- running ------------------------------------------------------------------------------


def run_scenario(
    scenario: Scenario,
    *,
    log_path: Path | None = None,
    echo_log: bool = False,
    on_progress: Callable[[dict], None] | None = None,
) -> dict:
    """Run ``scenario`` on its simulator and return its metrics (and write ``json``).

    *log_path*/*echo_log* are :func:`macdma.sim.cosim.runner.run_cocotb`'s: where the
    simulator's output goes. *on_progress* is called (from another thread) with each
    progress record of the bench (:mod:`macdma.sim.cosim.progress`).
    Raises :class:`macdma.sim.cosim.runner.CocotbTestFailure` when the bench fails (a frame
    damaged, reordered or lost without being counted, or a timeout).
    """
    with tempfile.TemporaryDirectory() as scratch:
        record_path = Path(scratch) / "record.json"
        env = {
            SCENARIO_ENV: scenario.to_json(),
            RECORD_ENV: str(record_path),
            # Python's own buffering would hold the log lines back.
            "PYTHONUNBUFFERED": "1",
        }
        follower = None
        if on_progress is not None:
            env[PROGRESS_ENV] = str(Path(scratch) / "progress.jsonl")
            follower = ProgressFollower(Path(env[PROGRESS_ENV]), on_progress)
            follower.start()
        started = time.monotonic()
        try:
            top, params = scenario_top(scenario)
            result = run_cocotb(
                top=top,
                params=params,
                test_module=RTL_CPU_MODULE if scenario.cpu == RTL_CPU else SCENARIO_MODULE,
                sim=scenario.sim,
                waves=scenario.waves,
                extra_env=env,
                log_path=log_path,
                echo_log=echo_log,
            )
        finally:
            if follower is not None:
                follower.stop()
        record = json.loads(record_path.read_text())
    # The bench times itself (simulation only); fall back to this process's view.
    record.setdefault("wall_seconds", time.monotonic() - started - result.build_seconds)
    record.setdefault("sim_ns", result.sim_time_ns)
    metrics = compute_metrics(record)
    metrics["build_seconds"] = result.build_seconds
    if result.wave_path is not None:
        metrics["waves"] = str(result.wave_path)
    if scenario.json:
        # Checked writable before the run; should it fail now, the results go elsewhere.
        written = write_or_rescue(scenario.json, json.dumps(metrics, indent=2), "the metrics")
        metrics["json_written"] = str(written)
    return metrics


def memory_bytes_for(scenario: Scenario) -> int:
    """Host memory for rings, RX buffers and per-slot TX buffers, with slack."""
    need = 0x1000 + DESCRIPTOR_BYTES * (scenario.tx_ring + scenario.rx_ring)
    need += scenario.rx_ring * (scenario.rx_buf_bytes + 64)
    need += scenario.tx_ring * (max(scenario.frame_size, 2048) + 64) * 2
    need += 1 << 20
    return 1 << (need - 1).bit_length()


def wire_of(scenario: Scenario) -> str:
    """The GMII wire ``scenario`` runs on (``auto`` resolved for its simulator)."""
    return AUTO_WIRE[scenario.sim] if scenario.wire == "auto" else scenario.wire


def scenario_top(scenario: Scenario) -> tuple[str, dict]:
    """The simulated top ``scenario`` runs on and its design parameters."""
    if scenario.cpu == RTL_CPU:
        return RTL_CPU_TOP, {"memory_bytes": memory_bytes_for(scenario)}
    top = SCENARIO_TOPS[scenario.memory] + ("_wire" if wire_of(scenario) == "frames" else "")
    return top, ({"memory_bytes": memory_bytes_for(scenario)} if scenario.memory == "hdl" else {})


def scenario_from_env() -> Scenario:
    """The Scenario a cocotb module was started with."""
    text = os.environ.get(SCENARIO_ENV)
    if not text:
        raise RuntimeError(f"env {SCENARIO_ENV} is not set: run through macdma run")
    return Scenario.from_json(text)
