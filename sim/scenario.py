"""One experiment on the SoC with the driver model: the knobs (:class:`Scenario`), the
run (:func:`run_scenario`, through ``macdma.sim.benches.scenario_tb`` on a simulator) and
the metrics computed from the raw record that bench writes (:func:`compute_metrics`).

The bench records raw facts only (wire stamps, xmit and on_receive times, driver and CPU
counters, AXI bursts); every number a user reads is computed here, from that record, so
the arithmetic is unit-tested without a simulator (tests/test_cli_run.py).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from macdma.hdl.regmap import REGISTER_MAP

__all__ = [
    "DIRECTIONS",
    "IRQ_MIN_INTERVAL_MAX_US",
    "IRQ_STRATEGIES",
    "LINK_SPEEDS",
    "SCENARIO_ENV",
    "RECORD_ENV",
    "Scenario",
    "compute_metrics",
    "format_summary",
    "run_scenario",
]

from .simulators import SIMULATORS

DIRECTIONS = ("tx", "rx", "both")
IRQ_STRATEGIES = ("per-desc", "eop", "coalesce", "polling", "napi")
LINK_SPEEDS = (10, 100, 1000)
MIN_FRAME, MAX_FRAME = 60, 1514  # bytes handed to the MAC, FCS excluded; no jumbo support
MAX_EXTRA_FRAGMENTS = 16
#: The largest IRQ_MIN_INTERVAL (µs) the hardware accepts, from the register map.
IRQ_MIN_INTERVAL_MAX_US = max(r[-1] for r in REGISTER_MAP.field("IRQ_MIN_INTERVAL", "us").valid)
# On the wire per frame beyond frame_size: preamble+SFD 8, FCS 4; then the gap.
PREAMBLE_SFD_BYTES, FCS_BYTES, IFG_BYTES = 8, 4, 12

SCENARIO_ENV = "MACDMA_SCENARIO"  # the Scenario as JSON, for the cocotb module
RECORD_ENV = "MACDMA_SCENARIO_RECORD"  # where the cocotb module writes its raw record
SCENARIO_TOP = "macdma_soc"
SCENARIO_MODULE = "macdma.sim.benches.scenario_tb"


def _checked_cpu(cpu: object) -> str:
    """``cpu`` as the bench will find it: a shipped name as given, a CPU file as its
    absolute path (the bench runs in another directory). The file is loaded and checked
    now, so a bad one stops before any simulator starts."""
    from .cpu import MODELLED_CORES
    from .cpus import load_cpu

    try:
        spec = load_cpu(cpu)
    except ValueError as error:
        raise ValueError(f"cpu: {error}") from None
    if spec.cores > MODELLED_CORES:
        raise ValueError(
            f"cpu: {spec.path}: cores = {spec.cores}: the CPU model runs every context on "
            f"{MODELLED_CORES} core"
        )
    return cpu if spec.shipped and cpu == spec.name else str(spec.path)


@dataclass(frozen=True)
class Scenario:
    """The knobs of one run. Every field is checked in ``__post_init__``.

    ``frame_size``: bytes handed to the MAC without FCS (60 = the 64-byte minimum frame).
    ``frags``: extra TX fragments beyond the first; each gets an equal share of the frame.
    ``irq``: the driver's completion strategy; ``coalesce_frames``/``coalesce_us`` feed
    ``coalesce`` (and ``napi``), ``poll_us`` the ``polling`` loop, ``budget`` NAPI/poll.
    ``burst`` (beats) and ``prefetch`` (descriptors) are DMA registers; ``tx_ring``,
    ``rx_ring`` descriptors, ``rx_buf`` bytes per RX buffer. ``cpu`` a shipped CPU's name or
    the path of a CPU file (docs/cpus.md; kept absolute). ``sys_mhz`` the SoC clock,
    ``link`` Mb/s.
    ``mem_latency``: host-memory cycles (SoC clock) before the first beat of every AXI
    burst (``HostMemory.latency_cycles``). ``tx_clean_budget``: packets per TX clean
    (ISR and housekeeping tick); None = the CPU preset's driver setting, 0 = unlimited.
    ``irq_min_interval_us``: IRQ_MIN_INTERVAL, the hardware's minimum interval between
    interrupts (125 = at most 8,000/s); 0 = no limit.
    """

    sim: str = "verilator"
    direction: str = "both"
    frame_size: int = 1514
    frames: int = 100
    frags: int = 0
    irq: str = "napi"
    coalesce_frames: int = 1
    coalesce_us: int = 0
    poll_us: int = 10
    budget: int = 64
    burst: int = 16
    prefetch: int = 4
    tx_ring: int = 256
    rx_ring: int = 256
    rx_buf: int = 2048
    cpu: str = "ideal"
    sys_mhz: float = 100.0
    link: int = 1000
    mem_latency: int = 0
    tx_clean_budget: int | None = None
    irq_min_interval_us: int = 0
    waves: bool = False
    json: str | None = None

    def __post_init__(self) -> None:
        def choose(name, allowed):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(
                    f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}"
                )

        def span(name, low, high=None, why="", whole=True):
            value = getattr(self, name)
            kinds = int if whole else int | float
            if isinstance(value, bool) or not isinstance(value, kinds):
                kind = "a whole number" if whole else "a number"
                raise ValueError(f"{name} must be {kind}, got {value!r}")
            if value < low or (high is not None and value > high):
                limit = f">= {low}" if high is None else f"{low}..{high}"
                raise ValueError(f"{name} must be {limit}{why}; got {value!r}")

        choose("sim", SIMULATORS)
        choose("direction", DIRECTIONS)
        choose("irq", IRQ_STRATEGIES)
        choose("link", LINK_SPEEDS)
        object.__setattr__(self, "cpu", _checked_cpu(self.cpu))
        span("frame_size", MIN_FRAME, MAX_FRAME, " bytes without FCS (60 = 64-byte frame)")
        span("frames", 2, None, " (a rate needs two frames)")
        span("frags", 0, MAX_EXTRA_FRAGMENTS, " extra fragments")
        if self.frame_size < self.frags + 1:
            raise ValueError(
                f"frame_size {self.frame_size} cannot be split into {self.frags + 1} "
                "fragments of >= 1 byte"
            )
        span("coalesce_frames", 1, 255)
        span("coalesce_us", 0, 65535)
        span("poll_us", 1, 65535)
        span("budget", 1, None)
        span("burst", 1, 256, " beats")
        span("prefetch", 1, 15, " descriptors")
        span("tx_ring", 2, 4096, " descriptors")
        span("rx_ring", 2, 4096, " descriptors")
        span("rx_buf", 64, 65535, " bytes")
        span("sys_mhz", 1, 500, whole=False)
        span("mem_latency", 0, 1000, " cycles per burst")
        span("irq_min_interval_us", 0, IRQ_MIN_INTERVAL_MAX_US, " µs (0 = no limit)")
        if self.tx_clean_budget is not None:
            span("tx_clean_budget", 0, None, " packets (0 = unlimited)")
        if self.tx_ring < self.frags + 2:
            raise ValueError(
                f"tx_ring {self.tx_ring} cannot hold one frame of {self.frags + 1} "
                "fragments (needs >= frags + 2 descriptors)"
            )

    # -- derived ---------------------------------------------------------------------------
    @property
    def fragment_sizes(self) -> list[int]:
        """Equal shares of ``frame_size``; the first ones take the remainder."""
        count = self.frags + 1
        share, extra = divmod(self.frame_size, count)
        return [share + (1 if index < extra else 0) for index in range(count)]

    @property
    def byte_time_ns(self) -> float:
        return 8e3 / self.link

    @property
    def wire_bytes_per_frame(self) -> int:
        """Preamble, frame, FCS and gap: one frame's slot at line rate."""
        return PREAMBLE_SFD_BYTES + max(self.frame_size, 60) + FCS_BYTES + IFG_BYTES

    @property
    def sends_tx(self) -> bool:
        return self.direction in ("tx", "both")

    @property
    def sends_rx(self) -> bool:
        return self.direction in ("rx", "both")

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
            f"irq {self.irq}, cpu {self.cpu}, link {self.link} Mb/s, sys {self.sys_mhz:g} MHz, "
            f"burst {self.burst}, prefetch {self.prefetch}, rings {self.tx_ring}/{self.rx_ring}, "
            f"rx_buf {self.rx_buf}, mem latency {self.mem_latency}"
            + ("" if self.tx_clean_budget is None else f", tx clean budget {self.tx_clean_budget}")
            + (
                f", irq min interval {self.irq_min_interval_us} us"
                if self.irq_min_interval_us
                else ""
            )
            + f", on {self.sim}"
        )


# -- metrics ------------------------------------------------------------------------------


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


def _rate(times_ps: list[int], frame_size: int) -> tuple[float, float]:
    """(frames/s, Mb/s as pktgen counts it: frame_size bytes per frame) over the span
    from the first to the last time stamp."""
    if len(times_ps) < 2 or times_ps[-1] <= times_ps[0]:
        return 0.0, 0.0
    frames_per_second = (len(times_ps) - 1) / ((times_ps[-1] - times_ps[0]) * 1e-12)
    return frames_per_second, frames_per_second * frame_size * 8 / 1e6


def _percent_of_line(starts_ps: list[int], scenario: Scenario) -> float:
    """Wire occupancy from frame start stamps: ideal time for the frames (incl. preamble,
    FCS and IFG) over the time they took, first start to last start."""
    if len(starts_ps) < 2:
        return 0.0
    ideal_ps = (len(starts_ps) - 1) * scenario.wire_bytes_per_frame * scenario.byte_time_ns * 1e3
    return 100.0 * ideal_ps / (starts_ps[-1] - starts_ps[0])


def compute_metrics(record: dict) -> dict:
    """Turn the bench's raw ``record`` into the reported metrics (see docs/driver-model.md).

    ``record`` keys: ``scenario`` (Scenario fields), ``tx``/``rx`` (per direction: ``wire``
    list of {start_ps, end_ps, length}, ``xmit_ns``, ``received`` (seq, time_ns) pairs...),
    ``driver`` (DriverStats fields), ``cpu`` (CpuModel.report()), ``counters`` (registers),
    ``bursts`` (per-direction AXI burst counts), ``sim_ns``, ``wall_seconds``.
    """
    scenario = Scenario(**record["scenario"])
    driver = record.get("driver", {})
    cpu = record.get("cpu", {})
    counters = record.get("counters", {})
    bursts = record.get("bursts", {})
    byte_ps = scenario.byte_time_ns * 1e3
    mhz = cpu.get("mhz", 0.0)
    busy_ns = sum(cpu.get("busy_ns", {}).values())
    elapsed_ns = cpu.get("elapsed_ns", 0.0)
    packets = driver.get("tx_packets", 0) + driver.get("rx_packets", 0)
    per_packet = max(packets, 1)
    result: dict = {
        "scenario": record["scenario"],
        "sim_ns": record.get("sim_ns"),
        "wall_seconds": record.get("wall_seconds"),
        "sim_ns_per_wall_second": (
            record["sim_ns"] / record["wall_seconds"]
            if record.get("sim_ns") and record.get("wall_seconds")
            else None
        ),
        "cpu": {
            "preset": scenario.cpu,
            "mhz": mhz,
            "utilisation": busy_ns / elapsed_ns if elapsed_ns else 0.0,
            "cycles_per_packet": busy_ns * mhz / 1e3 / per_packet,
            "cycles_by_cost": cpu.get("cycles", {}),
        },
        "irqs": driver.get("irqs", 0),
        "irqs_per_packet": driver.get("irqs", 0) / per_packet,
        "polls": driver.get("polls", 0),
        "mmio_reads_per_packet": driver.get("mmio_reads", 0) / per_packet,
        "mmio_writes_per_packet": driver.get("mmio_writes", 0) / per_packet,
        "driver": driver,
        "counters": counters,
    }
    if "tx" in record:
        tx = record["tx"]
        wire = tx["wire"]
        starts = [w["start_ps"] for w in wire]
        frames_per_second, mbps = _rate(starts, scenario.frame_size)
        gaps = [
            (later["start_ps"] - earlier["end_ps"]) / byte_ps
            for earlier, later in zip(wire, wire[1:], strict=False)
        ]
        latency = [
            w["end_ps"] / 1e3 - sent_ns for w, sent_ns in zip(wire, tx["xmit_ns"], strict=False)
        ]
        sent = len(wire)
        result["tx"] = {
            "frames_offered": tx["offered"],
            "frames_sent": sent,
            "frames_dropped": tx["offered"] - sent,
            "frames_per_second": frames_per_second,
            "mbps": mbps,
            "percent_of_line_rate": _percent_of_line(starts, scenario),
            "gap_bytes_min": min(gaps) if gaps else None,
            "gap_bytes_max": max(gaps) if gaps else None,
            "latency": _latency(latency),
            "queue_stops": driver.get("queue_stops", 0),
            "axi_bursts_per_frame": bursts.get("tx", 0) / max(sent, 1),
            "cycles_per_packet": busy_ns * mhz / 1e3 / max(driver.get("tx_packets", 0), 1)
            if not scenario.sends_rx
            else None,
            "wire": wire,
        }
    if "rx" in record:
        rx = record["rx"]
        wire = rx["wire"]  # the source's stamps of every frame offered
        received = rx["received"]  # [seq, time_ns] in delivery order
        offered_starts = [w["start_ps"] for w in wire]
        # Goodput: the offered rate (source stamps) times the share delivered. Delivery
        # times come in poll-sized batches, so a rate taken from them is noisy; every
        # offered frame ends up delivered or counted as dropped, so this is exact.
        offered_fps, _ = _rate(offered_starts, scenario.frame_size)
        frames_per_second = offered_fps * len(received) / max(len(wire), 1)
        mbps = frames_per_second * scenario.frame_size * 8 / 1e6
        # Goodput as wire occupancy: delivered frames' slots over the offered span.
        # The offered span: first start to last start plus the last frame's slot (start
        # stamps mean the same in every mode; the source's end stamp is MII-dependent).
        span_ps = wire[-1]["start_ps"] - wire[0]["start_ps"]
        span_ps += scenario.wire_bytes_per_frame * byte_ps
        delivered_slots = len(received) * scenario.wire_bytes_per_frame * byte_ps
        latency = [t - wire[seq]["end_ps"] / 1e3 for seq, t in received]
        result["rx"] = {
            "frames_offered": len(wire),
            "frames_received": len(received),
            "frames_dropped": len(wire) - len(received) - rx.get("errored", 0),
            "frames_errored": rx.get("errored", 0),
            "frames_dropped_hw": counters.get("RX_DROPS", 0) + counters.get("RX_FIFO_OVERFLOWS", 0),
            "frames_per_second": frames_per_second,
            "mbps": mbps,
            "percent_of_line_rate": min(100.0, 100.0 * delivered_slots / span_ps)
            if span_ps > 0
            else 0.0,
            "offered_percent_of_line_rate": _percent_of_line(offered_starts, scenario),
            "latency": _latency(latency),
            "axi_bursts_per_frame": bursts.get("rx", 0) / max(len(received), 1),
            "cycles_per_packet": busy_ns * mhz / 1e3 / max(driver.get("rx_packets", 0), 1)
            if not scenario.sends_tx
            else None,
            "wire": wire,
        }
    return result


def _fmt_ns(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f} ms"
    if value >= 1e3:
        return f"{value / 1e3:.1f} us"
    return f"{value:.0f} ns"


def format_summary(metrics: dict) -> str:
    """A human-readable table of a run's metrics."""
    lines = []
    header = (
        f"{'dir':>3} {'frames':>13} {'drops':>6} {'Mb/s':>8} {'line %':>7} "
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
            f"{direction:>3} {count:>13} {m['frames_dropped']:>6} "
            f"{m['mbps']:>8.1f} {m['percent_of_line_rate']:>6.2f}% "
            f"{_fmt_ns(m['latency']['p50_ns']):>9} {_fmt_ns(m['latency']['p99_ns']):>9} "
            f"{_fmt_ns(m['latency']['max_ns']):>9} {m['axi_bursts_per_frame']:>9.2f}"
        )
    cpu = metrics["cpu"]
    lines.append(
        f"cpu {cpu['preset']} @ {cpu['mhz']:g} MHz: {100 * cpu['utilisation']:.1f}% busy, "
        f"{cpu['cycles_per_packet']:,.0f} cycles/packet; irqs {metrics['irqs']} "
        f"({metrics['irqs_per_packet']:.2f}/packet), polls {metrics['polls']}, "
        f"queue stops {metrics['driver'].get('queue_stops', 0)}; mmio "
        f"{metrics['mmio_reads_per_packet']:.2f} reads + "
        f"{metrics['mmio_writes_per_packet']:.2f} writes per packet"
    )
    if "tx" in metrics and metrics["tx"]["gap_bytes_min"] is not None:
        lines.append(
            f"tx gaps {metrics['tx']['gap_bytes_min']:g}..{metrics['tx']['gap_bytes_max']:g} "
            "byte times"
        )
    rate = metrics.get("sim_ns_per_wall_second")
    lines.append(
        f"{metrics['sim_ns'] or 0:,.0f} simulated ns in {metrics['wall_seconds'] or 0:.1f} s "
        f"wall" + (f" ({rate:,.0f} sim ns per wall second)" if rate else "")
    )
    return "\n".join(lines)


# -- running ------------------------------------------------------------------------------


def run_scenario(scenario: Scenario) -> dict:
    """Run ``scenario`` on its simulator and return its metrics (and write ``json``).

    Raises :class:`macdma.sim.runner.CocotbTestFailure` when the bench fails (a frame
    damaged, reordered or lost without being counted, or a timeout).
    """
    from .runner import run_cocotb

    with tempfile.TemporaryDirectory() as scratch:
        record_path = Path(scratch) / "record.json"
        started = time.monotonic()
        result = run_cocotb(
            top=SCENARIO_TOP,
            test_module=SCENARIO_MODULE,
            sim=scenario.sim,
            waves=scenario.waves,
            extra_env={
                SCENARIO_ENV: scenario.to_json(),
                RECORD_ENV: str(record_path),
                # Python's own buffering would hold the progress lines back.
                "PYTHONUNBUFFERED": "1",
            },
        )
        record = json.loads(record_path.read_text())
    # The bench times itself (simulation only); fall back to this process's view.
    record.setdefault("wall_seconds", time.monotonic() - started - result.build_seconds)
    record.setdefault("sim_ns", result.sim_time_ns)
    metrics = compute_metrics(record)
    metrics["build_seconds"] = result.build_seconds
    if result.wave_path is not None:
        metrics["waves"] = str(result.wave_path)
    if scenario.json:
        Path(scenario.json).write_text(json.dumps(metrics, indent=2))
    return metrics


def scenario_from_env() -> Scenario:
    """The Scenario a cocotb module was started with."""
    text = os.environ.get(SCENARIO_ENV)
    if not text:
        raise RuntimeError(f"env {SCENARIO_ENV} is not set: run through macdma run")
    return Scenario.from_json(text)
