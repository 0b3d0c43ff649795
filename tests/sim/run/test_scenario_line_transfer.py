"""Cache lines handed between cores on the SoC RTL (docs/cpus.md, "Cache lines between
cores"): xmit on one core and the TX clean on another pay the CPU file's line_transfer
for the lines they hand each other (the TX lock, the ring indices, each frame's
bookkeeping and skb); on one core, or on two hardware threads of one pipeline (one L1),
nothing moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from macdma.firmware.tx_queue import TX_FRAME_LINES
from macdma.sim.run.scenario import Scenario, run_scenario

# A whole-SoC scenario: minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus

CPU_DIR = Path(__file__).parents[2] / "cpus"
FRAMES, RING = 60, 16
LINE_TRANSFER = 150.0  # both test CPU files' caches.line_transfer


def _run(sim: str, cpu: str, app_core: int) -> dict:
    return run_scenario(
        Scenario(
            sim=sim, direction="tx", frames=FRAMES, frame_size=1000, tx_ring=RING,
            cpu=str(CPU_DIR / cpu), irq_core=0, app_core=app_core,
        )
    )  # fmt: skip


def test_lines_move_only_between_contexts_on_different_cores(sim):
    apart = _run(sim, "two-cores.toml", app_core=1)
    moved = apart["driver"]["line_transfers"]
    # every frame's lines move to the cleaning core, and back to xmit's when its slot
    # is reused (all but the first RING - 1 frames)
    assert moved >= TX_FRAME_LINES * (2 * FRAMES - RING)
    assert apart["cpu"]["cycles_by_cost_run"]["line_transfer"] == pytest.approx(
        moved * LINE_TRANSFER
    )
    for cpu, app_core in (("two-cores.toml", 0), ("vpe-pair.toml", 1)):
        together = _run(sim, cpu, app_core)
        assert together["driver"]["line_transfers"] == 0, (cpu, app_core)
        assert "line_transfer" not in together["cpu"]["cycles_by_cost_run"]
        assert together["tx"]["frames_sent"] == FRAMES
