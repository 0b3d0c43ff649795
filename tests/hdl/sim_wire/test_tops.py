"""The frame wire under a whole SoC scenario: ``macdma run``'s bench on the same RTL with
``wire="cocotbext"`` (cocotbext-eth's per-byte GMII models on ``macdma_soc_hostmem``) and
``wire="frames"`` (the frame wire inside ``macdma_soc_hostmem_wire``) must write the same
raw record: every TX and RX frame's wire stamps, delivery times, the sampled counters
(CPU, IRQs, polls, AXI beats), the driver's statistics and the SoC's own counters. Full
duplex at 1000 Mb/s, 100 Mb/s MII, 10 Mb/s MII with clock enables, jumbo frames, RX
offered below line rate (frames sent from timers between edges), and (on Verilator) RX
held by the SoC's PAUSE frames."""

from __future__ import annotations

import dataclasses
import json

import pytest

from macdma.sim.cosim.runner import run_cocotb
from macdma.sim.run.scenario import (
    RECORD_ENV,
    SCENARIO_ENV,
    SCENARIO_MODULE,
    Scenario,
    scenario_top,
)

# Whole-SoC scenarios, twice each: minutes on Icarus (make test-all).
pytestmark = pytest.mark.long_on_icarus

SCENARIOS = {
    "gmii-both-1514": Scenario(direction="both", frames=12, frame_size=1514, irq="polling"),
    "mii100-both-napi": Scenario(
        direction="both", frames=6, frame_size=300, link_mbps=100, irq="napi"
    ),
    "mii10-both-60": Scenario(direction="both", frames=4, frame_size=60, link_mbps=10),
    "gmii-jumbo": Scenario(
        direction="both",
        frames=3,
        frame_size=9000,
        tx_ring=64,
        rx_ring=64,
        rx_buf_bytes=1536,
        irq="polling",
    ),  # fmt: skip
    "gmii-rx-paced": Scenario(direction="rx", frames=10, frame_size=200, rate_mbps=333.3),
}
# What may differ between two runs of one scenario: the wire itself and the host's time.
_NOT_COMPARED = {"wall_seconds"}
# On Icarus also the simulated time the bench ends at, after the traffic and its last
# register reads: the frame wire hands the last TX frame over once the time step has
# settled (Icarus may call back before the recorder's other ports are set), GmiiSink on
# the clock edge itself, and when a system clock edge falls in that step the closing
# register reads start one system clock apart (10 ns in 2 of the 5 scenarios here).
# Every frame, stamp, delivery time and counter is still compared.
_NOT_COMPARED_ON = {"icarus": {"sim_ns"}}


def _record(scenario: Scenario, tmp_path, wire: str) -> dict:
    scenario = dataclasses.replace(scenario, wire=wire)
    path = tmp_path / f"record-{wire}.json"
    top, params = scenario_top(scenario)
    run_cocotb(
        top=top,
        params=params,
        test_module=SCENARIO_MODULE,
        sim=scenario.sim,
        extra_env={SCENARIO_ENV: scenario.to_json(), RECORD_ENV: str(path)},
        log_path=tmp_path / f"{wire}.log",
    )
    record = json.loads(path.read_text())
    record["scenario"].pop("wire")
    ignored = _NOT_COMPARED | _NOT_COMPARED_ON.get(scenario.sim, set())
    return {key: value for key, value in record.items() if key not in ignored}


def _differences(ours, theirs, where="record") -> list[str]:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found = []
        for key in sorted(set(ours) | set(theirs)):
            found += _differences(ours.get(key), theirs.get(key), f"{where}.{key}")
        return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        found = []
        for index, (mine, ref) in enumerate(zip(ours, theirs, strict=True)):
            found += _differences(mine, ref, f"{where}[{index}]")
        return found
    return [] if ours == theirs else [f"{where}: frames {ours!r} != cocotbext {theirs!r}"]


# A slow CPU overloaded at line rate: the SoC sends PAUSE frames and the far end
# (PausingPeer) holds its frames, on the wire's tx_complete and recorded frames, until the
# pause ends. Compared on Verilator only: on Icarus the far end's answer to the XON comes
# one receive clock later on the frame wire (frame 36 of 48 starts 8 ns later), because
# the frame sink hands a recorded frame over once the time step has settled, and
# GmiiSink in its transmit clock edge's callback, before that step's receive edge
# (docs/performance.md); hence ``wire = "auto"`` is cocotbext on Icarus
# (sim/run/scenario.py, AUTO_WIRE).
PAUSED_RX = Scenario(
    sim="verilator", direction="rx", frames=48, frame_size=256, cpu="armv7-noncoherent",
    rx_ring=32, irq="napi", flow_control="on",
)  # fmt: skip


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_record_same_on_both_wires(sim, tmp_path, name):
    check_same_records(dataclasses.replace(SCENARIOS[name], sim=sim), tmp_path)


def test_paused_rx_record_same_on_both_wires_on_verilator(tmp_path):
    check_same_records(PAUSED_RX, tmp_path)


def check_same_records(scenario: Scenario, tmp_path) -> None:
    frames = _record(scenario, tmp_path, "frames")
    cocotbext = _record(scenario, tmp_path, "cocotbext")
    for direction in ("tx", "rx"):
        if direction in frames:
            assert frames[direction]["wire"], f"no {direction} frame on the wire"
    if scenario.flow_control == "on":
        assert frames["peer"]["pauses"], "the SoC sent no PAUSE frame: nothing was held"
    differences = _differences(frames, cocotbext)
    assert not differences, f"{len(differences)} differences, first: " + "; ".join(differences[:5])
