"""The readings of a regression report (sim/regress/readings.py): each conclusion printed only
when the numbers support it, both ways, on synthetic results."""

from __future__ import annotations

import dataclasses

from macdma.sim.regress import (
    DEFAULT_SWEEP,
    Experiment,
    load_sweep,
    readings,
)
from macdma.sim.run.scenario import Scenario


def reading_point(summary: dict, **scenario) -> dict:
    """A stored result with just what the readings read."""
    base = dataclasses.asdict(Scenario(direction="tx", frame_size=1500, cpu="microblaze-66"))
    full = {
        "throughput_ci_mbps": 1.0,
        "line_rate_pct": 10.0,
        "irqs_per_packet": 1.0,
        "irqs_per_second": 1e4,
        "cycles_per_packet": 5000.0,
        "cpu_utilisation_pct": 99.0,
        "cpu_bound_mbps": 150.0,
        "frames_dropped": 0,
        "queue_stops": 0,
        "bus_utilisation_pct": 50.0,
        **summary,
    }
    return {"scenario": {**base, **scenario}, "summary": full}


def experiment_named(name: str) -> Experiment:
    return next(e for e in load_sweep(DEFAULT_SWEEP).experiments if e.name == name)


def test_reading_ideal_concludes_only_at_line_rate():
    exp = experiment_named("ideal")
    good = [reading_point({"tx_line_rate_pct": 100.0, "rx_line_rate_pct": 99.8}, cpu="ideal")]
    bad = [reading_point({"tx_line_rate_pct": 100.0, "rx_line_rate_pct": 97.0}, cpu="ideal")]
    assert "the RTL alone holds line rate" in readings.reading_ideal(exp, good)
    text = readings.reading_ideal(exp, bad)
    assert "RTL alone holds" not in text and "below 99%" in text


def fragments_results(*, eop0: float, napi5: float, coalesce5: float, eop5_cpu: float):
    return [
        reading_point({"throughput_mbps": eop0, "cycles_per_packet": 3400.0}, irq="eop", frags=0),
        reading_point(
            {
                "throughput_mbps": 116.0,
                "cycles_per_packet": 6900.0,
                "cpu_utilisation_pct": eop5_cpu,
            },
            irq="eop",
            frags=5,
        ),  # fmt: skip
        reading_point(
            {"throughput_mbps": 110.0, "cycles_per_packet": 7300.0}, irq="per-desc", frags=5
        ),
        reading_point({"throughput_mbps": napi5, "cycles_per_packet": 6500.0}, irq="napi", frags=5),
        reading_point(
            {"throughput_mbps": coalesce5, "cycles_per_packet": 6600.0}, irq="coalesce", frags=5
        ),
    ]


def test_reading_fragments_irq_both_ways():
    exp = experiment_named("fragments_irq")
    text = readings.reading_fragments_irq(
        exp, fragments_results(eop0=230.0, napi5=125.0, coalesce5=124.5, eop5_cpu=99.0)
    )
    assert "the CPU is 99.0% busy, the bottleneck" in text
    assert "napi and coalesce are within their ± of each other" in text
    assert "is fastest" not in text
    assert "(6,900 - 3,400) / 5 = 700 cycles per packet" in text
    assert "napi instead of per-desc saves 800, 1.1 fragments' worth" in text
    assert "both levers matter and neither alone" in text

    text = readings.reading_fragments_irq(
        exp, fragments_results(eop0=120.0, napi5=140.0, coalesce5=124.5, eop5_cpu=80.0)
    )
    assert "napi is fastest beyond the measurement's ±" in text
    assert "the bottleneck" not in text and "something else limits too" in text
    assert "moderating interrupts alone brings back the unfragmented 120.0 Mb/s" in text
    assert "both levers" not in text


def budget_results(capped: float, free: float):
    return [
        reading_point({"throughput_mbps": mbps, "throughput_ci_mbps": 2.0},
                      cpu="mips-router", frags=3, tx_ring=ring, tx_clean_budget=budget)
        for ring in (64, 192)
        for budget, mbps in ((32, capped), (0, free))
    ]  # fmt: skip


def test_reading_tx_budget_both_ways():
    exp = experiment_named("tx_budget")
    text = readings.reading_tx_budget(exp, budget_results(capped=380.0, free=530.0))
    assert "32 frames x 1000 ticks/s x 12,000 bits = 384.0 Mb/s" in text
    assert "the budget binds" in text and "does not bind" not in text
    text = readings.reading_tx_budget(exp, budget_results(capped=380.0, free=382.0))
    assert "the budget does not bind" in text and "helps only until" not in text


def rx_results(big_cycles: float, ratio_goodput: float):
    return [
        reading_point({"throughput_mbps": 982.0 / ratio_goodput, "cycles_per_packet": big_cycles,
                       "cpu_bound_mbps": 1e9 / big_cycles * 12112 / 1e6},
                      direction="rx", frame_size=1514, rx_buf_bytes=9216, cpu="armv7-noncoherent"),
        reading_point({"throughput_mbps": 982.0, "cycles_per_packet": 6000.0,
                       "cpu_bound_mbps": 1e9 / 6000 * 12112 / 1e6},
                      direction="rx", frame_size=1514, rx_buf_bytes=1536, cpu="armv7-noncoherent"),
        reading_point({"throughput_mbps": 982.0, "cycles_per_packet": 7600.0,
                       "cpu_bound_mbps": 1e9 / 7600 * 12112 / 1e6},
                      direction="rx", frame_size=1514, rx_buf_bytes=256, cpu="armv7-noncoherent"),
    ]  # fmt: skip


def test_reading_rx_buffers_both_ways():
    exp = experiment_named("rx_buffers")
    text = readings.reading_rx_buffers(exp, rx_results(big_cycles=13_200.0, ratio_goodput=1.3))
    assert "13,200 / 6,000 = 2.20x" in text and "— the report's 'more than doubled'." in text
    assert "The delivered goodput shows it too." in text
    assert "cost more than MTU-sized ones" in text
    text = readings.reading_rx_buffers(exp, rx_results(big_cycles=9_000.0, ratio_goodput=1.0))
    assert "not the report's 'more than doubled' (1.50x)" in text
    assert "does not differ beyond its ±" in text


def irq_results(napi_mbps: float, eop_cpu: float):
    out = []
    for link, eop, napi in ((100, 98.4, 98.4), (1000, 228.6, napi_mbps)):
        pct = 100.0 if link == 100 else 23.0
        out.append(reading_point({"throughput_mbps": eop, "line_rate_pct": pct,
                                  "cpu_utilisation_pct": eop_cpu, "irqs_per_second": 19_051.0},
                                 irq="eop", link_mbps=link))  # fmt: skip
        out.append(reading_point({"throughput_mbps": napi, "line_rate_pct": pct,
                                  "irqs_per_packet": 0.2}, irq="napi", link_mbps=link))  # fmt: skip
    return out


def test_reading_irq_rate_both_ways_and_its_arithmetic():
    exp = experiment_named("irq_rate")
    text = readings.reading_irq_rate(exp, irq_results(napi_mbps=300.0, eop_cpu=99.5))
    assert "At 100 Mb/s every strategy is at line rate" in text
    fps = 228.6e6 / 12000
    assert f"{fps:,.0f} frames/s x 12,000 bits = 228.6 Mb/s" in text
    assert "the CPU is the cap" in text
    text = readings.reading_irq_rate(exp, irq_results(napi_mbps=229.0, eop_cpu=99.5))
    assert "No strategy beats one IRQ per packet" in text and "the CPU is the cap" not in text
    text = readings.reading_irq_rate(exp, irq_results(napi_mbps=300.0, eop_cpu=60.0))
    assert "the CPU is the cap" not in text and "eop leaves the CPU 60.0% busy" in text


def burst_results(lo: float, hi: float, prefetch_effect: float):
    return [
        reading_point({"throughput_mbps": mbps + (prefetch_effect if prefetch == 8 else 0.0)},
                      cpu="ideal", burst_beats=burst, prefetch=prefetch, mem_latency_cycles=20)
        for burst, mbps in ((2, lo), (16, hi))
        for prefetch in (1, 8)
    ]  # fmt: skip


def test_reading_burst_prefetch_both_ways():
    exp = experiment_named("burst_prefetch")
    text = readings.reading_burst_prefetch(exp, burst_results(300.0, 980.0, 10.0))
    assert "Short bursts spend most of the bus time waiting" in text
    assert "under 5% of the rate" in text
    text = readings.reading_burst_prefetch(exp, burst_results(950.0, 980.0, 100.0))
    assert "Burst length changes the rate by less than 10%" in text
    assert "descriptor fetches matter as much" in text


def test_reading_fragments_irq_quotes_the_field_reports_figures_from_the_sweep_file():
    exp = experiment_named("fragments_irq")
    results = fragments_results(eop0=230.0, napi5=125.0, coalesce5=124.5, eop5_cpu=99.0)
    assert "the field report: 232 -> 116 Mb/s" in readings.reading_fragments_irq(exp, results)
    bare = dataclasses.replace(exp, conditions=())
    assert "field report" not in readings.reading_fragments_irq(bare, results)
