"""What ``macdma run`` prints: progress and the summary, the simulator's output in a log
file whose path it prints (streamed too with ``-v``) (sim/cli.py, sim/cosim/progress.py,
sim/cosim/runner.py ``output_to_log``). A failing run naming its log:
tests/sim/test_cli_errors.py."""

from __future__ import annotations

import dataclasses
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from macdma.sim.cosim.progress import ProgressFollower, RunProgress
from macdma.sim.cosim.verilog import ROOT
from macdma.sim.run.scenario import Scenario, compute_metrics, format_summary

SUMMARY_HEADER = re.compile(r"^dir\s+frames\s+lost\s+Mb/s", re.MULTILINE)
# What only the simulator prints: cocotb's start-up banner and its results table.
COCOTB_BANNER = "Running on Verilator"
COCOTB_RESULTS = "TESTS=1 PASS=1 FAIL=0"


def macdma_run(*options: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "macdma.sim.cli", "run", "--frames", "4", *options]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def log_of(output: str) -> Path:
    found = re.search(r"^log: (\S+)$", output, re.MULTILINE)
    assert found, f"no log path printed:\n{output}"
    return Path(found.group(1))


@pytest.fixture(scope="module")
def quiet_run():
    done = macdma_run("--direction", "tx")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_default_output_is_progress_and_summary_without_the_simulator_log(quiet_run):
    out = quiet_run.stdout
    assert SUMMARY_HEADER.search(out), out
    assert re.search(r"^tx: 4/4 frames, [\d,.]+ µs simulated, ETA ", out, re.MULTILINE), out
    for simulator_text in (COCOTB_BANNER, COCOTB_RESULTS, "DeprecationWarning", "cocotb"):
        assert simulator_text not in out + quiet_run.stderr
    assert quiet_run.stderr == ""


def test_the_log_file_holds_the_simulator_output(quiet_run):
    log = log_of(quiet_run.stdout).read_text()
    assert COCOTB_BANNER in log and COCOTB_RESULTS in log


def test_verbose_streams_the_log_and_still_prints_the_summary():
    done = macdma_run("--direction", "rx", "-v")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert COCOTB_BANNER in done.stdout and COCOTB_RESULTS in done.stdout
    assert SUMMARY_HEADER.search(done.stdout)
    log = log_of(done.stdout).read_text()
    assert COCOTB_RESULTS in log


# -- the progress display, without a simulator -------------------------------------------


def record(direction: str, done: int, total: int = 20, sim_us: float = 1.5) -> dict:
    return {"direction": direction, "done": done, "total": total, "sim_us": sim_us}


def test_plain_progress_prints_a_line_per_tenth_of_each_direction():
    stream = io.StringIO()
    with RunProgress(stream) as progress:
        for done in range(1, 21):
            progress.update(record("tx", done))
        progress.update(record("rx", 1))
    lines = stream.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [f"tx: {n}/20 frames" for n in range(2, 21, 2)]
    assert all(
        re.fullmatch(r"tx: \d+/20 frames, 1\.5 µs simulated, ETA [\d.]+ (s|min)", line)
        for line in lines
    ), lines
    assert lines[-1].endswith("ETA 0 s")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_per_direction():
    stream = FakeTerminal()
    with RunProgress(stream) as progress:
        progress.update(record("tx", 5, sim_us=12.5))
        progress.update(record("rx", 20))
    shown = stream.getvalue()
    assert "tx" in shown and "5/20" in shown and "12.5 µs simulated" in shown
    assert "20/20" in shown


def test_the_follower_reads_only_complete_lines(tmp_path):
    path = tmp_path / "progress.jsonl"
    seen: list[dict] = []
    follower = ProgressFollower(path, seen.append)
    follower._read_new()  # no file yet: nothing
    path.write_text('{"done": 1}\n{"done": 2}\n{"do')
    follower._read_new()
    assert seen == [{"done": 1}, {"done": 2}]
    with open(path, "a") as progress:
        progress.write('ne": 3}\n')
    follower.start()
    follower.stop()
    assert seen == [{"done": 1}, {"done": 2}, {"done": 3}]


# -- frames lost or cut: the summary says how ---------------------------------------------

TRUNCATING = ("--direction", "rx", "--frame-size", "9216", "--rx-buf-bytes", "64",
              "--rx-ring", "16")  # fmt: skip


def rx_record(offered: int, received: int, truncated: int, errored: int, hw_drops: int):
    """A synthetic RX run (no simulator): ``offered`` frames 10 us apart, the first
    ``received`` delivered 1 us after their last bit, the next ones flagged or lost."""
    scenario = Scenario(direction="rx", frame_size=1500, frames=offered, cpu="ideal")
    wire = [{"start_ps": n * 10_000_000, "end_ps": n * 10_000_000 + 12_000_000, "length": 1504}
            for n in range(offered)]  # fmt: skip
    return {
        "scenario": dataclasses.asdict(scenario),
        "rx": {
            "wire": wire,
            "received": [[n, wire[n]["end_ps"] / 1e3 + 1000] for n in range(received)],
            "truncated": truncated,
            "errored": errored,
        },
        "driver": {"rx_packets": received},
        "cpu": {"mhz": 100.0},
        "counters": {"RX_DROPS": hw_drops, "RX_FIFO_OVERFLOWS": 0},
        "sim_ns": 1e6,
        "wall_seconds": 1.0,
    }


def test_a_run_whose_frames_were_all_truncated_never_says_none_were_lost():
    # The case: 9216-byte frames into 16 buffers of 64 bytes, both cut short by
    # the ring (flagged, and counted in RX_DROPS), none delivered.
    summary = format_summary(compute_metrics(rx_record(2, 0, truncated=2, errored=0, hw_drops=2)))
    row = next(line for line in summary.splitlines() if line.lstrip().startswith("rx "))
    assert row.split()[1:3] == ["0/2", "2"], summary
    assert (
        "rx lost 2 of 2: 2 truncated (cut short by the RX FIFO or the ring, delivered "
        "flagged), 0 flagged bad (FCS, rx_er), 0 never delivered" in summary
    ), summary
    assert "RX_DROPS + RX_FIFO_OVERFLOWS: 2" in summary


def test_every_cause_of_loss_is_counted_and_a_clean_run_has_no_loss_line():
    m = compute_metrics(rx_record(40, 30, truncated=3, errored=2, hw_drops=8))
    summary = format_summary(m)
    row = next(line for line in summary.splitlines() if line.lstrip().startswith("rx "))
    assert row.split()[1:3] == ["30/40", "10"], summary
    assert "rx lost 10 of 40: 3 truncated" in summary
    assert "2 flagged bad (FCS, rx_er), 5 never delivered" in summary
    clean = format_summary(compute_metrics(rx_record(40, 40, truncated=0, errored=0, hw_drops=0)))
    assert "lost" not in clean.split("\n", 1)[1], clean


def test_the_run_command_shows_truncated_frames_and_exits_0():
    """A frame lost with a counter is a measured outcome: exit 0, and the summary says it."""
    done = macdma_run(*TRUNCATING)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"^ +rx +0/4 +4 ", done.stdout, re.MULTILINE), done.stdout
    assert "rx lost 4 of 4: 4 truncated" in done.stdout, done.stdout
