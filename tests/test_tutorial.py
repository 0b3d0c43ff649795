"""docs/tutorial.md runs: every fenced ```sh block, in order, in a scratch folder, with the
files the tutorial tells the reader to write, so the tutorial cannot rot.

A file the reader writes is a fenced block preceded by a marker line:
``<!-- file: NAME -->`` (write NAME with the block) or ``<!-- append: NAME -->`` (add the
block to the end of NAME). Each ```sh block runs as one ``bash -e -o pipefail`` script in
the scratch folder, with the repository's .venv/bin first on PATH and ``REPO`` set to the
checkout (the tutorial tells the reader to set it). The simulations are Verilator runs of a
few tens of frames each, on the cached build.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = REPO / "docs" / "tutorial.md"
MARKER = re.compile(r"^<!--\s*(file|append):\s*(\S+)\s*-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")
# Longest any one block may take before the test gives up on it (a hung simulator).
BLOCK_TIMEOUT_S = 600


@dataclass(frozen=True)
class Step:
    """One thing the reader does: run a shell block, or write/append a file."""

    kind: str  # "sh", "file" or "append"
    text: str
    line: int  # where the block starts in the tutorial (1-based), for messages
    name: str = ""  # the file, for "file" and "append"


def extract_steps(markdown: str) -> list[Step]:
    """The tutorial's ```sh blocks and marked file blocks, in document order. Other fenced
    blocks (output shown to the reader) are skipped. A marker not followed by a fenced
    block is an error, so a typo cannot silently drop a file."""
    lines = markdown.splitlines()
    steps: list[Step] = []
    pending: tuple[str, str, int] | None = None
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if marker:
            pending = (marker.group(1), marker.group(2), i + 1)
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if not fence:
            if pending and lines[i].strip():
                raise ValueError(
                    f"tutorial line {pending[2]}: marker for {pending[1]} is not followed by "
                    "a fenced block"
                )
            i += 1
            continue
        start = i + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"tutorial line {i + 1}: fenced block is never closed")
        body = "\n".join(lines[start:end]) + "\n"
        if pending:
            steps.append(Step(pending[0], body, start, pending[1]))
            pending = None
        elif fence.group(1) == "sh":
            steps.append(Step("sh", body, start))
        i = end + 1
    if pending:
        raise ValueError(f"tutorial line {pending[2]}: marker for {pending[1]} ends the file")
    return steps


def run_steps(steps: list[Step], folder: Path, env: dict[str, str]) -> None:
    """Carry out the steps in ``folder``; the first shell block that exits non-zero fails
    the test with its commands and output."""
    for step in steps:
        if step.kind == "file":
            (folder / step.name).write_text(step.text)
        elif step.kind == "append":
            target = folder / step.name
            if not target.is_file():
                pytest.fail(f"tutorial line {step.line}: appends to {step.name}, not written yet")
            target.write_text(target.read_text() + step.text)
        else:
            done = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", step.text],
                cwd=folder,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=BLOCK_TIMEOUT_S,
            )
            if done.returncode != 0:
                pytest.fail(
                    f"tutorial line {step.line}: exit status {done.returncode} from\n"
                    f"{step.text}\n--- output (last 6000 characters) ---\n"
                    f"{done.stdout[-6000:]}",
                    pytrace=False,
                )


def tutorial_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["REPO"] = str(REPO)
    return env


def test_the_tutorial_runs(tmp_path: Path):
    steps = extract_steps(TUTORIAL.read_text())
    shell = [s for s in steps if s.kind == "sh"]
    commands = "".join(s.text for s in shell)
    # The points of the tutorial, each with a command the test runs.
    for needed in (
        "macdma run",
        "macdma regress",
        "--cpu ./mine.toml",
        "--scheduler local:2",
        "macdma compare",
    ):
        assert needed in commands, f"docs/tutorial.md runs no `{needed}` command"
    run_steps(steps, tmp_path, tutorial_env())
    # What the reader is told to open exists.
    for output in ("runs/first/report.md", "runs/first/results.csv", "runs/first/plots"):
        assert (tmp_path / output).exists(), f"the tutorial's {output} was not written"


def test_extract_keeps_order_and_skips_output_blocks():
    text = (
        "intro\n```sh\necho one\n```\n```\noutput only\n```\n"
        "<!-- file: a.toml -->\n```toml\nx = 1\n```\n"
        "<!-- append: a.toml -->\n```toml\ny = 2\n```\n```sh\necho two\n```\n"
    )
    steps = extract_steps(text)
    assert [(s.kind, s.name, s.text) for s in steps] == [
        ("sh", "", "echo one\n"),
        ("file", "a.toml", "x = 1\n"),
        ("append", "a.toml", "y = 2\n"),
        ("sh", "", "echo two\n"),
    ]


def test_a_marker_without_a_block_is_an_error():
    with pytest.raises(ValueError, match="mine.toml is not followed by a fenced block"):
        extract_steps("<!-- file: mine.toml -->\nsome prose\n```toml\nx = 1\n```\n")


def test_a_failing_block_fails_with_its_command_and_output(tmp_path: Path):
    steps = [Step("sh", "echo before-the-error\nfalse\necho never\n", 7)]
    with pytest.raises(pytest.fail.Exception) as failure:
        run_steps(steps, tmp_path, tutorial_env())
    message = str(failure.value)
    assert "tutorial line 7: exit status 1" in message
    assert "false" in message and "before-the-error" in message
    assert "never" not in message.split("---")[-1]
