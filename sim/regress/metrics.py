"""The metrics a sweep reports per point: :data:`METRICS` (CSV columns, plot axes) and
:func:`summarise`, which reads them from one run's metrics (``compute_metrics`` output,
sim/run/scenario.py). Every figure is measured there; the only arithmetic here is
``cpu_bound_mbps`` (clock / cycles per packet x frame bits) and the choice of direction."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """A column of the CSV and a plottable quantity: ``label`` and ``unit`` for axes;
    ``ci`` names the metric holding its ±95% when it has one (tables and error bars)."""

    name: str
    label: str
    unit: str
    ci: str | None = None


METRICS = {
    m.name: m
    for m in (
        Metric("throughput_mbps", "throughput", "Mb/s", ci="throughput_ci_mbps"),
        Metric("line_rate_pct", "line rate", "%"),
        Metric("tx_mbps", "TX throughput", "Mb/s"),
        Metric("tx_line_rate_pct", "TX line rate", "%"),
        Metric("rx_mbps", "RX throughput", "Mb/s"),
        Metric("rx_line_rate_pct", "RX line rate", "%"),
        Metric("frames_dropped", "frames dropped", "frames"),
        Metric("pause_frames", "PAUSE frames sent (XOFF + XON)", "frames"),
        Metric("partner_paused_pct", "far end paused by PAUSE", "%"),
        Metric("irqs_per_packet", "IRQs per packet", "IRQs/packet"),
        Metric("irqs_per_second", "IRQ rate", "IRQs/s"),
        Metric("cycles_per_packet", "CPU cycles per packet", "cycles"),
        Metric("cpu_bound_mbps", "throughput the CPU could sustain", "Mb/s"),
        Metric("cpu_utilisation_pct", "CPU utilisation", "%"),
        Metric("cpu_pct", "CPU busy over all cores", "%"),
        Metric("queue_stops", "TX queue stops", "stops"),
        Metric("throughput_ci_mbps", "throughput ±95% (batch means)", "Mb/s"),
        Metric("bus_utilisation_pct", "busier AXI data channel occupancy (beats/cycle)", "%"),
        Metric("bus_bytes_per_beat", "bytes per AXI data beat (measured)", "bytes"),
        Metric("window_frames", "frames in the measurement window", "frames"),
        Metric("window_ok", "window long enough (frames, batches)", ""),
        Metric("axi_bursts_per_frame", "AXI bursts per frame", "bursts"),
        Metric("latency_p99_us", "p99 latency", "µs"),
        Metric("sim_ms", "simulated time", "ms"),
        Metric("wall_seconds", "wall time", "s"),
    )
}

#: Where ``cpu_pct`` came from: the run's own all-cores figure, or (a run that reports
#: none, i.e. a one-core CPU model) its single core's utilisation.
CPU_PCT_ALL_CORES = "all cores"
CPU_PCT_ONE_CORE = "single core"


def cpu_pct(metrics: dict) -> tuple[float, str]:
    """(CPU busy over all cores in %, 0..100; its source): the run's ``cpu_pct`` (under
    ``cpu`` or at the top level) when it reports one, else the single core's work
    utilisation, which is the same figure for a one-core CPU."""
    cpu = metrics["cpu"]
    for value in (cpu.get("cpu_pct"), metrics.get("cpu_pct")):
        if value is not None:
            return float(value), CPU_PCT_ALL_CORES
    return 100.0 * cpu["utilisation"], CPU_PCT_ONE_CORE


def summarise(metrics: dict) -> dict:
    """The flat numbers of one run's metrics (:func:`compute_metrics` output) that the
    CSV, plots, checks and readings use. Every rate and per-packet figure is the one
    compute_metrics measured over the run's measurement window (docs/driver-model.md);
    throughput is TX's when the run sends TX, else RX's (delivered goodput). Every value
    is a number or None (the results database stores each as a metric)."""
    scenario = metrics["scenario"]
    tx, rx = metrics.get("tx"), metrics.get("rx")
    main = tx if tx is not None else rx
    latency = main["latency"]["p99_ns"] if main else None
    cpu = metrics["cpu"]
    cpu_hz = cpu["mhz"] * 1e6
    cycles = cpu["cycles_per_packet"]
    bus = metrics["bus"]
    flow = metrics.get("flow_control", {})  # absent from runs recorded before 802.3x
    return {
        "throughput_mbps": main["mbps"] if main else 0.0,
        "throughput_ci_mbps": main["mbps_ci"] if main else None,
        "line_rate_pct": main["percent_of_line_rate"] if main else 0.0,
        "tx_mbps": tx["mbps"] if tx else None,
        "tx_line_rate_pct": tx["percent_of_line_rate"] if tx else None,
        "rx_mbps": rx["mbps"] if rx else None,
        "rx_line_rate_pct": rx["percent_of_line_rate"] if rx else None,
        "frames_dropped": sum(d["frames_dropped"] for d in (tx, rx) if d is not None),
        "pause_frames": flow.get("pause_frames_sent"),
        "partner_paused_pct": flow.get("partner_paused_pct"),
        "irqs_per_packet": metrics["irqs_per_packet"],
        "irqs_per_second": metrics["irqs_per_second"],
        "cycles_per_packet": cycles,
        "cpu_bound_mbps": cpu_hz / cycles * scenario["frame_size"] * 8 / 1e6 if cycles else None,
        "cpu_utilisation_pct": 100.0 * cpu["utilisation"],
        "cpu_pct": cpu_pct(metrics)[0],
        "queue_stops": metrics["driver"].get("queue_stops", 0),
        "bus_utilisation_pct": max(bus["read_pct"], bus["write_pct"]),
        "bus_bytes_per_beat": bus.get("bytes_per_beat"),
        "axi_bursts_per_frame": main["axi_bursts_per_frame"] if main else None,
        "latency_p99_us": latency / 1e3 if latency is not None else None,
        "window_frames": metrics["window"].get("frames"),
        "window_ok": metrics["window"].get("ok"),
        "sim_ms": (metrics.get("sim_ns") or 0) / 1e6,
        "wall_seconds": metrics.get("wall_seconds"),
    }
