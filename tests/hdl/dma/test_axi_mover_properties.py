"""Property-based tests of the AXI movers (AxiBurstReader, AxiBurstWriter) in Amaranth's
simulator: hypothesis draws the address (often a few bytes either side of a 4 KiB
boundary), the length, the burst cap, the bus width and the bus stalls; every run must
give exactly the bytes asked for, bursts that never exceed the cap or cross a 4 KiB page,
write strobes only inside the command's bytes, and the burst split of the greedy rule.

The reference split is ``plan_bursts`` of sim/benches/guard.py, written apart from the RTL
and its planner (hdl/dma/bursts.py); the bus model (tests/models/axi_model.py) asserts the AXI
rules (cap, page, size, strobes) on every beat. Example counts are small: each example
is a simulation, and the file must run in well under a minute.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mover_runs import check_command, check_commands, run_reader, run_writer

from macdma.sim.benches.guard import PAGE_BYTES, plan_bursts

CAPS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MEMORY_BYTES = 1 << 16  # AxiMemory's default size
MAX_LENGTH = 3 * PAGE_BYTES // 2

PROPERTY_SETTINGS = settings(
    max_examples=25,
    deadline=None,  # a simulation's wall time depends on the machine's load
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,  # the same examples on every run: CI failures replay exactly
)


@st.composite
def commands(draw, max_commands: int = 3) -> list[tuple[int, int]]:
    """1..max_commands ``(addr, length)`` pairs, inside memory, most near a 4 KiB edge."""
    result = []
    for _ in range(draw(st.integers(1, max_commands))):
        length = draw(st.integers(1, MAX_LENGTH))
        page = draw(st.integers(1, MEMORY_BYTES // PAGE_BYTES - 3))
        offset = draw(
            st.one_of(st.integers(-16, 16), st.integers(-PAGE_BYTES // 2, PAGE_BYTES // 2))
        )
        result.append((page * PAGE_BYTES + offset, length))
    return result


def bus_stalls():
    return st.sampled_from([1.0, 0.9, 0.6])


def check_split(bursts: list[tuple[int, int]], addr: int, length: int, cap: int, w: int):
    """The bursts of one command against the rules, stated directly, and the reference."""
    first_beat, end = addr - addr % w, addr + length
    assert bursts, f"{addr:#x}+{length}: no burst"
    assert bursts[0][0] == first_beat, f"{addr:#x}+{length}: starts at {bursts[0][0]:#x}"
    position = first_beat
    for burst_addr, beats in bursts:
        assert burst_addr == position, f"{addr:#x}+{length}: gap or overlap at {burst_addr:#x}"
        assert 1 <= beats <= cap, f"{addr:#x}+{length}: {beats} beats, cap {cap}"
        last_byte = burst_addr + beats * w - 1
        assert burst_addr // PAGE_BYTES == last_byte // PAGE_BYTES, (
            f"{addr:#x}+{length}: burst {burst_addr:#x} x {beats} crosses 4 KiB"
        )
        position += beats * w
    assert position - w < end <= position, f"{addr:#x}+{length}: beats end at {position:#x}"
    assert bursts == plan_bursts(addr, length, cap, w), f"{addr:#x}+{length}: not greedy"


@PROPERTY_SETTINGS
@given(
    commands=commands(),
    cap=st.sampled_from(CAPS),
    data_width=st.sampled_from([32, 64]),
    ready=bus_stalls(),
    seed=st.integers(0, 2**16),
)
def test_reader_reads_exactly_the_bytes_in_legal_bursts(commands, cap, data_width, ready, seed):
    run = run_reader(
        commands, data_width=data_width, cap=cap, ready_prob=ready, valid_prob=ready, seed=seed
    )
    for k, (addr, length) in enumerate(commands):
        check_command(run, k, cap=cap, data_width=data_width)  # bytes, beats, count, last
        check_split(run.memory.monitor.for_command(k), addr, length, cap, data_width // 8)


@PROPERTY_SETTINGS
@given(
    commands=commands(),
    cap=st.sampled_from(CAPS),
    data_width=st.sampled_from([32, 64]),
    ready=bus_stalls(),
    seed=st.integers(0, 2**16),
)
def test_writer_writes_exactly_the_bytes_in_legal_bursts(commands, cap, data_width, ready, seed):
    run = run_writer(
        commands, data_width=data_width, cap=cap, ready_prob=ready, in_valid_prob=ready, seed=seed
    )
    # Every byte written and nothing else (so no strobe outside the command); the monitor
    # has asserted each WSTRB lane against the command's window on the way.
    check_commands(run, cap=cap, data_width=data_width)
    for k, (addr, payload) in enumerate(run.commands):
        check_split(run.memory.monitor.for_command(k), addr, len(payload), cap, data_width // 8)
