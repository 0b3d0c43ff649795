"""Readings: one paragraph per experiment, written from its measured numbers
(``reading = "<name>"`` in the sweep file; :data:`READINGS`). Every sentence that states a
conclusion has a condition in code and a counter-sentence when the numbers do not support
it (tests/sim/regress/test_command.py runs both branches of each)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .expectations import LINE_RATE_PCT
from .metrics import METRICS


def _label(scenario: dict, fields: Iterable[str]) -> str:
    return ", ".join(f"{k}={scenario[k]}" for k in fields)


def _figure(experiment, key: str, **match) -> float | None:
    """The calibration figure ``key`` of the experiment's field-report condition at
    ``match`` (the sweep file's number, so the prose quotes the one the report checks)."""
    for condition in experiment.conditions:
        if all(condition.at.get(k) == v for k, v in match.items()):
            value = condition.figure.get(key)
            if isinstance(value, int | float):
                return value
    return None


def _value(results: list[dict], metric: str, **match) -> float | None:
    for r in results:
        if all(r["scenario"].get(k) == v for k, v in match.items()):
            return r["summary"].get(metric)
    return None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def reading_generic(experiment, results: list[dict]) -> str:
    metric = experiment.metrics[0]
    meta = METRICS[metric]
    ranked = sorted(
        (r for r in results if r["summary"].get(metric) is not None),
        key=lambda r: r["summary"][metric],
    )
    if not ranked:
        return "No point of this experiment finished."
    swept = list(experiment.sweep)
    low, high = ranked[0], ranked[-1]
    return (
        f"Across {len(results)} points the {meta.label} ranges from "
        f"{_fmt(low['summary'][metric])} {meta.unit} ({_label(low['scenario'], swept)}) to "
        f"{_fmt(high['summary'][metric])} {meta.unit} ({_label(high['scenario'], swept)})."
    )


#: A CPU this busy (work, not spinning) in the window is the bottleneck.
#: A CPU this busy (work, not spinning) in the window is the bottleneck.
CPU_BOUND_PCT = 95.0


def _separated(a: dict, b: dict) -> bool:
    """Whether throughput ``a`` exceeds ``b`` by more than their ±95% together (batch
    means; an unknown ± counts as 0)."""
    margin = (a.get("throughput_ci_mbps") or 0.0) + (b.get("throughput_ci_mbps") or 0.0)
    return a["throughput_mbps"] - b["throughput_mbps"] > margin


def _with_ci(summary: dict) -> str:
    ci = summary.get("throughput_ci_mbps")
    return f"{_fmt(summary['throughput_mbps'])}" + ("" if ci is None else f" ± {_fmt(ci)}")


def reading_ideal(experiment, results: list[dict]) -> str:
    pcts = [
        r["summary"][f"{d}_line_rate_pct"]
        for r in results
        for d in ("tx", "rx")
        if r["summary"].get(f"{d}_line_rate_pct") is not None
    ]
    drops = sum(r["summary"]["frames_dropped"] for r in results)
    if not pcts:
        return reading_generic(experiment, results)
    text = (
        f"With a CPU that costs nothing and memory that answers at once, every direction of "
        f"every point runs at {min(pcts):.2f}..{max(pcts):.2f}% of line rate with {drops} "
        "frames dropped"
    )
    if min(pcts) >= LINE_RATE_PCT and drops == 0:
        return text + (
            ": the RTL alone holds line rate, so any shortfall elsewhere in this report comes "
            "from the CPU model, the driver's strategy or the memory, not the MAC/DMA."
        )
    return text + (
        f": below {LINE_RATE_PCT:g}% or with drops, so the RTL itself (or the bench) limits "
        "some point, and shortfalls elsewhere cannot be put on the CPU model alone."
    )


def reading_fragments_irq(experiment, results: list[dict]) -> str:
    frags = sorted({r["scenario"]["frags"] for r in results})
    if not frags:
        return reading_generic(experiment, results)
    lo, hi = frags[0], frags[-1]
    parts = []
    base = _value(results, "throughput_mbps", irq="eop", frags=lo)
    top = _value(results, "throughput_mbps", irq="eop", frags=hi)
    top_cpu = _value(results, "cpu_utilisation_pct", irq="eop", frags=hi)
    if base and top and hi > lo:
        sentence = (
            f"With one IRQ per packet (eop) the MicroBlaze's TX throughput goes from "
            f"{_fmt(base)} Mb/s at {lo} extra fragments to {_fmt(top)} Mb/s at {hi} "
            f"({100 * (top / base - 1):+.0f}%"
        )
        reported = (_figure(experiment, "mbps", irq="eop", frags=f) for f in (lo, hi))
        reported_lo, reported_hi = reported
        if reported_lo and reported_hi:
            sentence += f"; the field report: {reported_lo:g} -> {reported_hi:g} Mb/s"
        sentence += ")"
        if top < base and top_cpu is not None and top_cpu >= CPU_BOUND_PCT:
            sentence += (
                f": the CPU is {_fmt(top_cpu)}% busy, the bottleneck, and every fragment "
                "costs it a map, a descriptor and a clean."
            )
        elif top < base:
            sentence += f", with the CPU {_fmt(top_cpu)}% busy: something else limits too."
        else:
            sentence += ": fragments do not lower throughput here."
        parts.append(sentence)
    at_hi = {r["scenario"]["irq"]: r["summary"] for r in results if r["scenario"]["frags"] == hi}
    if len(at_hi) >= 2:
        ranked = sorted(at_hi, key=lambda k: -at_hi[k]["throughput_mbps"])
        best, runner_up, worst = ranked[0], ranked[1], ranked[-1]
        b, w = at_hi[best], at_hi[worst]
        listing = ", ".join(
            f"{k} {_with_ci(at_hi[k])} Mb/s ({_fmt(at_hi[k]['irqs_per_packet'], 2)} IRQs, "
            f"{_fmt(at_hi[k]['cycles_per_packet'], 0)} cycles per packet)"
            for k in ranked
        )
        sentence = f"At {hi} fragments: {listing}. "
        if _separated(b, at_hi[runner_up]):
            sentence += f"{best} is fastest beyond the measurement's ±."
        else:
            sentence += (
                f"{best} and {runner_up} are within their ± of each other: no single "
                "fastest strategy."
            )
        parts.append(sentence)
        lo_cycles = _value(results, "cycles_per_packet", irq="eop", frags=lo)
        hi_cycles = _value(results, "cycles_per_packet", irq="eop", frags=hi)
        if lo_cycles and hi_cycles and b["cycles_per_packet"] and w["cycles_per_packet"]:
            per_fragment = (hi_cycles - lo_cycles) / (hi - lo)
            saved = w["cycles_per_packet"] - b["cycles_per_packet"]
            sentence = (
                f"Each extra fragment costs ({_fmt(hi_cycles, 0)} - {_fmt(lo_cycles, 0)}) / "
                f"{hi - lo} = {_fmt(per_fragment, 0)} cycles per packet; {best} instead of "
                f"{worst} saves {_fmt(saved, 0)}"
            )
            if per_fragment > 0 and saved > 0:
                sentence += f", {saved / per_fragment:.1f} fragments' worth"
                if base and b["throughput_mbps"] < base:
                    sentence += (
                        f", so both levers matter and neither alone brings back the "
                        f"unfragmented {_fmt(base)} Mb/s."
                    )
                else:
                    sentence += (
                        f": moderating interrupts alone brings back the unfragmented "
                        f"{_fmt(base)} Mb/s."
                    )
            else:
                sentence += ": moderating interrupts does not save cycles here."
            parts.append(sentence)
    return " ".join(parts) or reading_generic(experiment, results)


def _tick_cap_mbps(results: list[dict], budget: int) -> tuple[float, float] | None:
    """(ticks per second, budget x ticks x frame bits in Mb/s) for the tx_budget points'
    housekeeping tick, from the preset's driver settings."""
    # Imported here for start-up time: the CPU model loads cocotb, which `macdma` does
    # not otherwise load before a simulation.
    from ..model.cpu import PRESET_DRIVER_SETTINGS

    scenario = results[0]["scenario"]
    hz = PRESET_DRIVER_SETTINGS.get(scenario["cpu"], {}).get("housekeeping_hz")
    if not hz:
        return None
    return hz, budget * hz * scenario["frame_size"] * 8 / 1e6


def reading_tx_budget(experiment, results: list[dict]) -> str:
    rings = sorted({r["scenario"]["tx_ring"] for r in results})
    budgets = sorted({r["scenario"]["tx_clean_budget"] or 0 for r in results})
    if not rings or len(budgets) < 2:
        return reading_generic(experiment, results)

    def row(budget):
        def at(metric, ring):
            return _value(results, metric, tx_ring=ring, tx_clean_budget=budget)

        return ", ".join(
            f"{ring}: {_fmt(at('throughput_mbps', ring))} Mb/s / "
            f"{_fmt(at('queue_stops', ring), 0)} stops"
            for ring in rings
        )

    limited = [b for b in budgets if b]
    text = (
        "TX completions are reaped only by the housekeeping tick, so each tick frees at most "
        "min(budget, frames in the ring) frames and the queue stops in between. "
    )
    for budget in limited:
        text += (
            f"With a budget of {budget} per tick (ring: throughput / queue stops) {row(budget)}. "
        )
    if 0 in budgets:
        text += f"Unlimited: {row(0)}. "
    if not limited:
        return text
    big = rings[-1]
    capped = next(
        (r["summary"] for r in results
         if r["scenario"]["tx_ring"] == big and r["scenario"]["tx_clean_budget"] == limited[0]),
        None,
    )  # fmt: skip
    free = next(
        (r["summary"] for r in results
         if r["scenario"]["tx_ring"] == big and r["scenario"]["tx_clean_budget"] == 0),
        None,
    )  # fmt: skip
    cap = _tick_cap_mbps(results, limited[0])
    if cap is not None:
        hz, cap_mbps = cap
        frame_bits = results[0]["scenario"]["frame_size"] * 8
        text += (
            f"The budget caps TX at {limited[0]} frames x {hz:g} ticks/s x {frame_bits:,} bits "
            f"= {_fmt(cap_mbps)} Mb/s. "
        )
    if capped and free:
        if _separated(free, capped):
            text += (
                f"At {big} descriptors the budget binds: {_with_ci(capped)} Mb/s against "
                f"{_with_ci(free)} Mb/s unlimited, so growing the ring helps only until the "
                "budget binds (the report's 'could not keep up at line rate')."
            )
        else:
            text += (
                f"At {big} descriptors the budget does not bind: {_with_ci(capped)} Mb/s "
                f"against {_with_ci(free)} Mb/s unlimited, the same within the ±."
            )
    return text


def reading_burst_prefetch(experiment, results: list[dict]) -> str:
    bursts = sorted({r["scenario"]["burst_beats"] for r in results})
    prefetches = sorted({r["scenario"]["prefetch"] for r in results})
    if len(bursts) < 2:
        return reading_generic(experiment, results)
    latency = results[0]["scenario"]["mem_latency_cycles"]
    lines, gains = [], []
    for prefetch in prefetches:
        lo = _value(results, "throughput_mbps", burst_beats=bursts[0], prefetch=prefetch)
        hi = _value(results, "throughput_mbps", burst_beats=bursts[-1], prefetch=prefetch)
        lines.append(f"prefetch {prefetch}: {_fmt(lo)} -> {_fmt(hi)} Mb/s")
        if lo and hi:
            gains.append(hi / lo)
    lo_bus = _value(results, "bus_utilisation_pct", burst_beats=bursts[0], prefetch=prefetches[-1])
    hi_bus = _value(results, "bus_utilisation_pct", burst_beats=bursts[-1], prefetch=prefetches[-1])
    spread = {
        b: [_value(results, "throughput_mbps", burst_beats=b, prefetch=p) for p in prefetches]
        for b in bursts
    }
    effects = [max(v) - min(v) for v in spread.values() if all(x is not None for x in v)]
    pre_effect = max(effects, default=0.0)
    fastest = max((x for v in spread.values() for x in v if x is not None), default=0.0)
    text = (
        f"Every burst waits {latency} SoC cycles before its first beat. From burst "
        f"{bursts[0]} to {bursts[-1]} beats the TX throughput goes {'; '.join(lines)}, and the "
        f"busier AXI data channel carries a beat in {_fmt(lo_bus)}% -> {_fmt(hi_bus)}% of "
        "the cycles (beats recorded by host memory). "
    )
    if gains and min(gains) > 1.1:
        text += "Short bursts spend most of the bus time waiting: burst length sets the rate. "
    elif gains:
        text += "Burst length changes the rate by less than 10%: latency is not the limit. "
    if len(prefetches) > 1:
        text += f"Descriptor prefetch moves throughput by at most {_fmt(pre_effect)} Mb/s"
        if fastest and pre_effect < 0.05 * fastest:
            text += (
                " at any burst length, under 5% of the rate: descriptor fetches are a small "
                "share of the bursts, and the data bursts set the rate."
            )
        else:
            text += ": descriptor fetches matter as much as the data bursts here."
    return text


def reading_rx_buffers(experiment, results: list[dict]) -> str:
    rows = sorted(results, key=lambda r: -r["scenario"]["rx_buf_bytes"])
    if len(rows) < 2 or any(not r["summary"]["cycles_per_packet"] for r in rows):
        return reading_generic(experiment, results)
    described = "; ".join(
        f"{r['scenario']['rx_buf_bytes']}-byte buffers: {_with_ci(r['summary'])} Mb/s delivered "
        f"({_fmt(r['summary']['line_rate_pct'])}% of line rate), "
        f"{_fmt(r['summary']['cycles_per_packet'], 0)} cycles per packet, CPU "
        f"{_fmt(r['summary']['cpu_utilisation_pct'])}% busy, "
        f"{r['summary']['frames_dropped']} dropped"
        for r in rows
    )
    big = rows[0]["summary"]
    best_row = min(rows, key=lambda r: r["summary"]["cycles_per_packet"])
    best = best_row["summary"]
    ratio = big["cycles_per_packet"] / best["cycles_per_packet"]
    text = (
        f"On the non-coherent ARMv7 every received packet invalidates its whole buffer: "
        f"{described}. The {rows[0]['scenario']['rx_buf_bytes']}-byte buffers cost "
        f"{_fmt(big['cycles_per_packet'], 0)} / {_fmt(best['cycles_per_packet'], 0)} = "
        f"{ratio:.2f}x the cycles of the cheapest ({best_row['scenario']['rx_buf_bytes']} bytes): "
        f"the CPU alone could sustain {_fmt(big['cpu_bound_mbps'], 0)} against "
        f"{_fmt(best['cpu_bound_mbps'], 0)} Mb/s of "
        f"{rows[0]['scenario']['frame_size']}-byte frames"
    )
    text += (
        " — the report's 'more than doubled'."
        if ratio > 2
        else f" — not the report's 'more than doubled' ({ratio:.2f}x)."
    )
    if _separated(best, big):
        text += " The delivered goodput shows it too."
    else:
        text += (
            " The delivered goodput does not differ beyond its ±: the link, not the CPU, caps it."
        )
    small = rows[-1]["summary"]
    whole = [r for r in rows if r["scenario"]["rx_buf_bytes"] >= r["scenario"]["frame_size"] + 4]
    mtu = min(whole, key=lambda r: r["scenario"]["rx_buf_bytes"])["summary"] if whole else None
    if len(rows) > 2 and mtu is not None and small is not mtu:
        if small["cycles_per_packet"] > mtu["cycles_per_packet"]:
            text += (
                f" Small chained buffers ({rows[-1]['scenario']['rx_buf_bytes']} bytes) invalidate "
                "only what the frame uses but pay a descriptor per buffer, and cost more "
                "than MTU-sized ones."
            )
        else:
            text += (
                f" Small chained buffers ({rows[-1]['scenario']['rx_buf_bytes']} bytes) cost no "
                "more than MTU-sized ones."
            )
    return text


def reading_irq_rate(experiment, results: list[dict]) -> str:
    links = sorted({r["scenario"]["link_mbps"] for r in results})
    parts = []
    for link in links:
        at = {
            r["scenario"]["irq"]: r["summary"]
            for r in results
            if r["scenario"]["link_mbps"] == link
        }
        described = ", ".join(
            f"{irq} {_with_ci(s)} Mb/s ({_fmt(s['line_rate_pct'])}%, CPU "
            f"{_fmt(s['cpu_utilisation_pct'])}%) at {_fmt(s['irqs_per_second'], 0)} IRQs/s"
            for irq, s in at.items()
        )
        parts.append(f"at {link} Mb/s: {described}")
    text = "TX on the MicroBlaze, " + "; ".join(parts) + ". "
    slow = {
        r["scenario"]["irq"]: r["summary"]
        for r in results
        if r["scenario"]["link_mbps"] == links[0]
    }
    fast = {
        r["scenario"]["irq"]: r["summary"]
        for r in results
        if r["scenario"]["link_mbps"] == links[-1]
    }
    if len(links) > 1:
        if all(s["line_rate_pct"] >= LINE_RATE_PCT for s in slow.values()):
            text += (
                f"At {links[0]} Mb/s every strategy is at line rate: the link is the limit and "
                "interrupts only cost CPU time. "
            )
        else:
            text += f"At {links[0]} Mb/s not every strategy reaches line rate. "
    if "eop" in fast and len(fast) > 1:
        eop = fast["eop"]
        bits = results[0]["scenario"]["frame_size"] * 8
        fps = eop["throughput_mbps"] * 1e6 / bits
        text += (
            f"At {links[-1]} Mb/s one IRQ per packet takes {_fmt(eop['irqs_per_second'], 0)} "
            f"IRQs/s for {_fmt(fps, 0)} frames/s x {bits:,} bits = "
            f"{_fmt(fps * bits / 1e6)} Mb/s. "
        )
        best = max(fast, key=lambda k: fast[k]["throughput_mbps"])
        if best != "eop" and _separated(fast[best], eop):
            text += (
                f"{best} reaches {_with_ci(fast[best])} Mb/s with "
                f"{_fmt(fast[best]['irqs_per_packet'], 2)} IRQs per packet "
                f"({100 * (fast[best]['throughput_mbps'] / eop['throughput_mbps'] - 1):.0f}% "
                "more)"
            )
            if eop["cpu_utilisation_pct"] >= CPU_BOUND_PCT:
                text += (
                    f": with the CPU {_fmt(eop['cpu_utilisation_pct'])}% busy under eop, the "
                    "CPU is the cap, and an interrupt per packet spends a share of it (the USB "
                    "NIC report's one-packet-per-interrupt ceiling)."
                )
            else:
                text += f", though eop leaves the CPU {_fmt(eop['cpu_utilisation_pct'])}% busy."
        else:
            text += "No strategy beats one IRQ per packet beyond the ±: interrupts are not the cap."
    return text


READINGS: dict[str, Callable[[object, list[dict]], str]] = {
    "generic": reading_generic,
    "ideal": reading_ideal,
    "fragments_irq": reading_fragments_irq,
    "tx_budget": reading_tx_budget,
    "burst_prefetch": reading_burst_prefetch,
    "rx_buffers": reading_rx_buffers,
    "irq_rate": reading_irq_rate,
}
