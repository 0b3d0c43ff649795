"""Frames-done progress (sim/cosim/progress.py): the benches of ``macdma run`` and ``macdma
soak`` write it through one :class:`FrameProgress` per direction, and the command's
:class:`ProgressFollower` and :class:`RunProgress` read what it wrote (issue 37: one
progress reporting for both commands)."""

from __future__ import annotations

import io
import logging

from macdma.sim.cosim.progress import PROGRESS_ENV, FrameProgress, ProgressFollower, RunProgress


class Clock:
    """A simulated time that moves 10 µs per reading."""

    def __init__(self) -> None:
        self.us = 0.0

    def __call__(self) -> float:
        self.us += 10.0
        return self.us


def test_a_record_every_percent_and_at_the_end_reaches_the_commands_display(tmp_path, monkeypatch):
    path = tmp_path / "progress.jsonl"
    monkeypatch.setenv(PROGRESS_ENV, str(path))
    records = []
    follower = ProgressFollower(path, records.append)
    follower.start()
    tx = FrameProgress("tx", 251, Clock())  # a step of 2 frames: the last one ends no step
    for _ in range(250):
        tx.advance()
    tx.tick(251)
    rx = FrameProgress("rx", 3, Clock())  # fewer frames than steps: every frame
    for _ in range(3):
        rx.advance()
    follower.stop()
    tx_done = [r["done"] for r in records if r["direction"] == "tx"]
    assert tx_done == [*range(2, 251, 2), 251]
    assert [r["done"] for r in records if r["direction"] == "rx"] == [1, 2, 3]
    assert all(r["total"] == 251 for r in records if r["direction"] == "tx")
    assert [r["sim_us"] for r in records if r["direction"] == "rx"] == [10.0, 20.0, 30.0]
    stream = io.StringIO()
    with RunProgress(stream, plain=True) as display:
        for record in records:
            display.update(record)
    assert "tx: 251/251 frames, 1,260.0 µs simulated" in stream.getvalue()


def test_without_a_progress_file_the_log_has_a_line_every_tenth(monkeypatch, caplog):
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    log = logging.getLogger("bench")
    progress = FrameProgress("rx", 100, Clock(), log)
    with caplog.at_level(logging.INFO, logger="bench"):
        for _ in range(100):
            progress.advance()
    assert [r.getMessage() for r in caplog.records][::9] == [
        "rx: 10/100 frames (10%) at 10.0 us",
        "rx: 100/100 frames (100%) at 100.0 us",
    ]
    assert len(caplog.records) == 10
    FrameProgress("rx", 100, Clock()).tick(100)  # and none without a log
