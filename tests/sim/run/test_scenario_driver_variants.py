"""Cores, locks and the driver variants on the SoC RTL (issue 12 §1, §2): each one
changes what the run measures, in the direction its mechanism demands."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from macdma.firmware.costs import CpuCosts
from macdma.sim.run.scenario import Scenario, run_scenario

# A whole-SoC scenario: minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus

# A CPU whose xmit (14 us) and TX clean (10 us per frame) both matter: on one core they
# add up, on two they overlap, unless the clean holds the queue lock xmit needs.
CONTENDED_COSTS = {
    **{f.name: 0.0 for f in dataclasses.fields(CpuCosts)},
    "irq_entry_exit": 1500.0,
    "mmio_read": 150.0,
    "mmio_write": 20.0,
    "tx_per_packet": 14000.0,
    "tx_per_descriptor": 80.0,
    "tx_per_fragment_map": 300.0,
    "tx_clean_per_descriptor": 10000.0,
    "napi_poll_overhead": 400.0,
}


def cpu_file(folder: Path, cores: int) -> str:
    path = folder / f"contended-{cores}.toml"
    costs = "\n".join(f"{name} = {value}" for name, value in CONTENDED_COSTS.items())
    path.write_text(
        f'description = "test CPU: estimates"\nclock_mhz = 1000.0\ncores = {cores}\n'
        f"\n[costs]\n{costs}\n\n[caches]\nline_bytes = 64\ncoherent_dma = true\n"
    )
    return str(path)


_contended: dict[str, dict] = {}


@pytest.fixture
def contended_runs(tmp_path_factory, sim):
    """The three runs of the lock test, once per simulator (shared by two tests)."""
    if sim not in _contended:
        folder = tmp_path_factory.mktemp("cpus")
        base = dict(sim=sim, direction="tx", frame_size=1500, frames=100, irq="napi")
        _contended[sim] = {
            "one core": run_scenario(Scenario(cpu=cpu_file(folder, 1), **base)),
            "two cores, frozen": run_scenario(
                Scenario(cpu=cpu_file(folder, 2), app_core=1, tx_clean_lock="frozen", **base)
            ),
            "two cores, queue lock": run_scenario(
                Scenario(cpu=cpu_file(folder, 2), app_core=1, tx_clean_lock="queue", **base)
            ),
        }
    return _contended[sim]


def test_a_tx_clean_holding_the_queue_lock_makes_xmit_on_the_other_core_spin(contended_runs):
    """The issue's test: xmit on core 1, TX clean (NAPI) on core 0 taking the queue lock:
    spin time > 0, and throughput strictly between the single-core run and the lock-free
    two-core run."""
    one, frozen, locked = (
        contended_runs[k]["tx"]["mbps"]
        for k in ("one core", "two cores, frozen", "two cores, queue lock")
    )
    assert one < locked < frozen, (one, locked, frozen)
    lock = contended_runs["two cores, queue lock"]["locks"]["tx_queue"]
    assert lock["spin_cycles"] > 0 and lock["contentions"] > 0
    assert contended_runs["two cores, queue lock"]["cpu"]["lock_spin_pct"] > 0
    free = contended_runs["two cores, frozen"]["locks"]["tx_queue"]
    assert free["contentions_run"] == 0 and free["spin_cycles_run"] == 0


def test_per_core_utilisation_and_cpu_pct_cover_every_core(contended_runs):
    one = contended_runs["one core"]["cpu"]
    assert one["cores"] == 1 and one["cpu_pct"] == pytest.approx(100 * one["utilisation"])
    assert one["per_core"][0]["utilisation"] == pytest.approx(one["utilisation"])
    two = contended_runs["two cores, frozen"]["cpu"]
    assert two["cores"] == 2 and len(two["per_core"]) == 2
    mean = sum(c["utilisation"] for c in two["per_core"]) / 2
    assert two["cpu_pct"] == pytest.approx(100 * mean)
    # pktgen on core 1 never stops; core 0 only cleans: both busy, neither idle
    assert all(0.3 < c["utilisation"] <= 1.0 for c in two["per_core"])


def test_one_core_never_contends_for_a_spinlock_even_with_the_isr_taking_it(sim):
    """On one core the TX queue lock is taken irqsave when the hard IRQ cleans under it:
    the ISR waits for xmit to release, it never spins on it (which would never end), and
    it never preempts xmit."""
    base = dict(sim=sim, direction="tx", frame_size=1500, frames=40, irq="eop",
                cpu="microblaze-66", tx_ring=16)  # fmt: skip
    locked = run_scenario(Scenario(tx_clean_lock="queue", **base))
    frozen = run_scenario(Scenario(**base))
    assert locked["tx"]["frames_sent"] == 40
    assert locked["locks"]["tx_queue"]["contentions_run"] == 0
    # xmit holds it with interrupts off: a TX done waits for xmit to end, so causes
    # that arrive meanwhile merge into one interrupt (frozen: one per frame)
    assert frozen["irqs_per_packet"] == pytest.approx(1.0, abs=0.05)
    assert locked["irqs_per_packet"] < 0.75 * frozen["irqs_per_packet"]
    assert locked["cpu"]["preemptions"] == 0


def test_linearize_copies_fragments_into_one_descriptor(sim):
    """MicroBlaze, 5 extra fragments: linearized, every frame is one descriptor and pays
    per_byte_memcpy per byte instead of five more maps, descriptors and cleans."""
    base = dict(sim=sim, direction="tx", frame_size=1500, frames=40, frags=5, irq="eop",
                cpu="microblaze-66", tx_ring=32)  # fmt: skip
    sg = run_scenario(Scenario(**base))
    flat = run_scenario(Scenario(linearize=True, **base))
    assert sg["driver"]["tx_descriptors"] == 6 * 40 and sg["driver"]["tx_linearized"] == 0
    assert flat["driver"]["tx_descriptors"] == 40 and flat["driver"]["tx_linearized"] == 40
    copy = flat["cpu"]["cycles_by_cost_run"]["per_byte_memcpy"]
    assert copy == pytest.approx(1.5 * 1500 * 40)  # microblaze-66: 1.5 cycles per byte
    assert "per_byte_memcpy" not in sg["cpu"]["cycles_by_cost_run"]
    # 2,250 copy cycles against 5 x 683 for the extra fragments: linearizing wins here
    assert flat["tx"]["mbps"] > sg["tx"]["mbps"]
    assert flat["tx"]["axi_bursts_per_frame"] < sg["tx"]["axi_bursts_per_frame"]


def test_tx_checksum_sw_pays_per_byte_and_hw_sets_the_descriptor_request(sim):
    """MicroBlaze, 1500-byte frames in 2 fragments: sw pays per_byte_csum for each byte
    of the UDP segment (1500 - 34); hw pays nothing and the frames leave with the checksum
    the hardware inserted (the bench checks every wire frame against the expected bytes,
    inserted checksum included, and fails on a difference); none pays nothing either."""
    base = dict(sim=sim, direction="tx", frame_size=1500, frames=40, frags=1, irq="eop",
                cpu="microblaze-66", tx_ring=16)  # fmt: skip
    sw = run_scenario(Scenario(tx_checksum="sw", **base))
    hw = run_scenario(Scenario(tx_checksum="hw", **base))
    assert sw["cpu"]["cycles_by_cost_run"]["per_byte_csum"] == pytest.approx(0.6 * 1466 * 40)
    assert "per_byte_csum" not in hw["cpu"]["cycles_by_cost_run"]
    assert hw["tx"]["frames_sent"] == sw["tx"]["frames_sent"] == 40
    assert hw["tx"]["mbps"] > sw["tx"]["mbps"]


def test_one_frame_per_interrupt_under_a_rate_limit_caps_rx_at_the_interrupt_rate(sim):
    """rx_per_irq 1 with IRQ_MIN_INTERVAL 125 us: 8,000 interrupts/s, one frame each,
    so 8,000 frames/s reach the stack; the rest are dropped and counted (the bench fails
    on a frame lost silently). Taking every pending frame per interrupt holds line rate."""
    base = dict(sim=sim, direction="rx", frame_size=1514, frames=300, irq="eop",
                irq_min_interval_us=125)  # fmt: skip
    one = run_scenario(Scenario(rx_per_irq=1, **base))
    every = run_scenario(Scenario(**base))
    assert one["irqs_per_second"] == pytest.approx(8000, rel=0.01)
    assert one["rx"]["frames_per_second"] == pytest.approx(8000, rel=0.01)
    assert one["rx"]["frames_dropped_hw"] > 0
    assert one["rx"]["frames_dropped_hw"] == one["rx"]["frames_dropped"]
    assert every["rx"]["percent_of_line_rate"] > 95
    assert every["rx"]["frames_dropped"] == 0


def test_dim_raises_moderation_on_a_small_frame_stream(sim):
    """60-byte frames at line rate, ideal CPU: DIM steps up its profile table (fewer
    interrupts for the same traffic) and ends with fewer IRQs/s than static NAPI."""
    base = dict(sim=sim, direction="rx", frame_size=60, frames=1500)
    dim = run_scenario(Scenario(irq="dim", **base))
    napi = run_scenario(Scenario(irq="napi", **base))
    assert dim["dim"]["decisions"] >= 1 and dim["dim"]["profile_index"] > 0
    assert dim["irqs_per_second"] < napi["irqs_per_second"]
    assert dim["rx"]["frames_dropped"] == 0


@pytest.mark.parametrize("irq", ["per-desc", "eop"])
def test_one_frame_per_interrupt_strands_nothing_when_the_ring_runs_out(sim, irq):
    """rx_per_irq 1 with chained RX (three buffers per frame) and an 8-entry ring that
    overflows: every frame is delivered, flagged or counted as dropped (the bench fails
    the run otherwise), the run ends (no frame left behind in the ring without an
    interrupt to fetch it), and each interrupt hands over at most one frame."""
    frames = 24
    metrics = run_scenario(
        Scenario(sim=sim, direction="rx", frame_size=300, frames=frames, irq=irq,
                 rx_per_irq=1, rx_ring=8, rx_buf_bytes=128, cpu="mips-router")
    )  # fmt: skip
    rx = metrics["rx"]
    assert rx["frames_received"] + rx["frames_errored"] + rx["frames_dropped_hw"] == frames
    assert rx["frames_dropped_hw"] > 0, "the ring ran out: this scenario must exercise drops"
    assert metrics["irqs"] >= rx["frames_received"] + rx["frames_errored"]
