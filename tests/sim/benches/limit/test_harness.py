"""The limit harnesses (sim/benches/limit/: C++ on Verilator, plain Verilog on Icarus):
each builds around the SoC's exported Verilog with the register map's and the descriptor
layout's generated headers, runs a short full-duplex workload with every frame checked,
and fails, with a message, when a frame is damaged: a planted fault in host memory (TX)
and on the wire (RX)."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from macdma.sim.benches.limit.harness import (
    HOST_WORDS_PATH,
    LimitBuildError,
    LimitHarnessFailure,
    build_harness,
    model_header,
    run_harness,
    verilog_descriptor_header,
    verilog_regs_header,
)
from macdma.sim.run.bench import limit_scenario, limit_workload
from macdma.sim.run.scenario import scenario_top

FRAMES = 4


@functools.cache
def built(sim: str):
    scenario = limit_scenario(FRAMES, sim)
    top, params = scenario_top(scenario)
    return build_harness(top, params, sim), limit_workload(scenario)


@pytest.fixture
def harness(sim):
    return built(sim)


def test_the_harness_checks_a_short_full_duplex_run(harness):
    build, workload = harness
    assert build.top == "macdma_soc_hostmem"
    result = run_harness(build, workload)
    assert result.frames == FRAMES
    assert result.record["tx_frames"] == result.record["rx_frames"] == FRAMES
    assert result.record["tx_reaped"] == FRAMES  # every TX descriptor written back
    # Four 1514-byte frames each way at 1 Gb/s take 4 x 12.3 us on the wire.
    wire_ns = FRAMES * (workload.frame_bytes + 4 + 8 + workload.ifg) * 8
    assert wire_ns < result.record["traffic_ns"] < 3 * wire_ns
    assert result.sim_ns_per_cpu_second > 0


def test_a_tx_buffer_changed_after_it_was_posted_fails_the_run(harness):
    build, workload = harness
    with pytest.raises(LimitHarnessFailure, match=r"TX frame 2 byte 42: .* on the wire"):
        run_harness(build, workload, fault="tx-buffer", fault_frame=2)


def test_an_rx_frame_damaged_on_the_wire_fails_the_run(harness):
    build, workload = harness
    # The MAC finds the bad FCS and says so in the descriptor (cause 5: FCS).
    with pytest.raises(LimitHarnessFailure, match=r"RX frame 1: descriptor 1 says error \(cause 5"):
        run_harness(build, workload, fault="rx-wire", fault_frame=1)


@pytest.mark.long_on_icarus
def test_more_frames_than_the_rings_hold_are_kept_flowing(harness):
    build, workload = harness
    # Rings of 8: the polling driver must reap and refill both rings several times over.
    small = dataclasses.replace(workload, frames=20, tx_ring=8, rx_ring=8)
    result = run_harness(build, small)
    assert result.record["tx_frames"] == result.record["rx_frames"] == 20


@pytest.mark.long_on_icarus
def test_too_few_rx_buffers_are_a_failure_not_a_silent_drop(harness):
    build, workload = harness
    # Two RX descriptors (one usable), a poll every 100 us: the frames behind the first
    # find no buffer and are dropped; the harness stops and says how far RX got.
    starved = dataclasses.replace(workload, frames=6, rx_ring=2, poll_us=100)
    with pytest.raises(LimitHarnessFailure, match=r"timed out at .* RX 6 of 6 sent, 1 received"):
        run_harness(build, starved)


def test_the_model_header_names_the_word_array_or_refuses():
    member = "__DOT__".join(("top", *HOST_WORDS_PATH))
    header = model_header("top", f"    VlUnpacked<IData, 1024> {member};\n")
    assert f"((model)->rootp->{member})" in header
    with pytest.raises(LimitBuildError, match="has no member top__DOT__host_memory__DOT__host_ram"):
        model_header("top", "    VlUnpacked<IData, 1024> top__DOT__other__DOT__words;\n")


def test_a_workload_that_does_not_fit_the_memory_is_refused():
    workload = limit_workload(limit_scenario(FRAMES))
    with pytest.raises(ValueError, match="need .* bytes of host memory"):
        dataclasses.replace(workload, memory_bytes=1 << 16)
    with pytest.raises(ValueError, match="do not fit an RX buffer"):
        dataclasses.replace(workload, rx_buf_bytes=1024)


def test_the_verilog_headers_carry_the_register_map_and_the_descriptor_layout():
    from macdma.firmware import regs
    from macdma.firmware.descriptor import Descriptor

    assert f"`define MACDMA_TX_TAIL 32'd{regs.TX_TAIL}\n" in verilog_regs_header()
    own = next(field for field in Descriptor.layout() if field.name == "own")
    descriptor = verilog_descriptor_header()
    assert f"`define MACDMA_DESC_OWN_WORD {own.word}\n" in descriptor
    assert (
        f"`define MACDMA_DESC_GET_OWN(desc) ((desc[{32 * own.word} +: 32] & "
        f"32'h{own.word_mask:08X}) >> {own.lsb})"
    ) in descriptor
