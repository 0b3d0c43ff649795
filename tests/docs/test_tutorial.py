"""docs/tutorial.md runs: every fenced ```sh block, in order, in a scratch folder, with the
files the tutorial tells the reader to write, and what each block prints is checked
against the output the tutorial shows after it, so the tutorial cannot rot or drift.

A file the reader writes is a fenced block preceded by a marker line:
``<!-- file: NAME -->`` (write NAME with the block) or ``<!-- append: NAME -->`` (add the
block to the end of NAME). Each ```sh block runs as one ``bash -e -o pipefail`` script in
the scratch folder, with the repository's .venv/bin first on PATH and ``REPO`` set to the
checkout (the tutorial tells the reader to set it). The simulations are Verilator runs of a
few tens of frames each.

A plain fenced block (no language) after a ```sh block is what that block printed: every
line of it must appear in the block's output, in order (:func:`output_matches`). Numbers
are free (they follow the simulated sources, and wall times the machine), and so are
point keys and ``...``; the words, column names and the lines themselves are not. The
checkout's path reads as ``~/macdma`` and the scratch folder's as ``~/macdma-tutorial``,
the folders the tutorial's set-up names.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "docs" / "tutorial.md"
MARKER = re.compile(r"^<!--\s*(file|append):\s*(\S+)\s*-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")
# Longest any one block may take before the test gives up on it (a hung simulator).
BLOCK_TIMEOUT_S = 600


# What may differ between the output shown and the output printed, as regular
# expressions: wall times (5s, 2m09s), point keys (16 hex digits), numbers (1,234.5).
DURATION = r"(?:\d+h)?(?:\d+m)?\d+s"
KEY = r"[0-9a-f]{16}"
NUMBER = r"\d[\d,]*(?:\.\d+)?"
FREE = re.compile(rf"\.\.\.|\b{DURATION}\b|\b{KEY}\b|{NUMBER}")


@dataclass(frozen=True)
class Step:
    """One thing the reader does: run a shell block, or write/append a file; or what the
    last shell block printed, as the tutorial shows it."""

    kind: str  # "sh", "file", "append" or "output"
    text: str
    line: int  # where the block starts in the tutorial (1-based), for messages
    name: str = ""  # the file, for "file" and "append"


def _free_pattern(token: str) -> str:
    if token == "...":
        return ".*"
    if re.fullmatch(DURATION, token):
        return DURATION
    if re.fullmatch(KEY, token):
        return KEY
    return NUMBER


def line_pattern(shown: str) -> re.Pattern:
    """A shown output line as a pattern: its text, with any number, duration, point key
    or ``...`` in it free, and any run of spaces as any run of spaces."""
    parts, last = [], 0
    text = " ".join(shown.split())
    for match in FREE.finditer(text):
        parts.append(re.escape(text[last : match.start()]))
        parts.append(_free_pattern(match.group()))
        last = match.end()
    parts.append(re.escape(text[last:]))
    return re.compile("".join(parts).replace("\\ ", " +"))


def output_matches(shown: str, printed: str) -> str | None:
    """None when every non-blank line of ``shown`` (other than a lone ``...``) matches a
    line of ``printed``, in order; else the first shown line that does not."""
    lines = [" ".join(line.split()) for line in printed.splitlines()]
    at = 0
    for line in shown.splitlines():
        if not line.strip() or line.strip() == "...":
            continue
        pattern = line_pattern(line)
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return line
        at += 1
    return None


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
        elif fence.group(1) == "" and any(step.kind == "sh" for step in steps):
            steps.append(Step("output", body, start))
        i = end + 1
    if pending:
        raise ValueError(f"tutorial line {pending[2]}: marker for {pending[1]} ends the file")
    return steps


def as_the_reader_sees_it(printed: str, folder: Path) -> str:
    """``printed`` with the checkout's and the scratch folder's paths as the tutorial's
    set-up names them."""
    for path, shown in ((folder, "~/macdma-tutorial"), (REPO, "~/macdma")):
        for form in {str(path.resolve()), str(path)}:
            printed = printed.replace(form, shown)
    return printed


def run_steps(steps: list[Step], folder: Path, env: dict[str, str]) -> None:
    """Carry out the steps in ``folder``; the first shell block that exits non-zero, or
    whose output lacks a line the tutorial shows for it, fails the test with its commands
    and output."""
    printed, ran = "", None
    for step in steps:
        if step.kind == "output":
            missing = output_matches(step.text, printed)
            if missing is not None:
                pytest.fail(
                    f"tutorial line {step.line}: the output shown for the block at line "
                    f"{ran.line} has a line the commands did not print:\n{missing}\n"
                    f"--- what they printed (last 6000 characters) ---\n{printed[-6000:]}",
                    pytrace=False,
                )
        elif step.kind == "file":
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
            printed, ran = as_the_reader_sees_it(done.stdout, folder), step


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
    # Every command's output is shown (and so checked), but a file-writing block's.
    shown = {i - 1 for i, step in enumerate(steps) if step.kind == "output"}
    silent = [s.line for i, s in enumerate(steps) if s.kind == "sh" and i not in shown]
    assert not silent, f"docs/tutorial.md: no output shown for the blocks at lines {silent}"
    run_steps(steps, tmp_path, tutorial_env())
    # What the reader is told to open exists.
    for output in ("runs/first/report.md", "runs/first/results.csv", "runs/first/plots"):
        assert (tmp_path / output).exists(), f"the tutorial's {output} was not written"


def test_extract_keeps_order_and_takes_output_blocks_after_commands():
    text = (
        "```\nbefore any command: not an output\n```\n"
        "intro\n```sh\necho one\n```\n```\noutput only\n```\n```console\n$ shown\n```\n"
        "<!-- file: a.toml -->\n```toml\nx = 1\n```\n"
        "<!-- append: a.toml -->\n```toml\ny = 2\n```\n```sh\necho two\n```\n"
    )
    steps = extract_steps(text)
    assert [(s.kind, s.name, s.text) for s in steps] == [
        ("sh", "", "echo one\n"),
        ("output", "", "output only\n"),
        ("file", "a.toml", "x = 1\n"),
        ("append", "a.toml", "y = 2\n"),
        ("sh", "", "echo two\n"),
    ]


def test_shown_output_must_match_the_printed_lines_in_order():
    printed = (
        "macdma run: tx 40 x 1500 B, link 1000 Mb/s\n"
        "dir        frames  lost     Mb/s    ±95%\n"
        " tx         40/40      0    228.6    ±0.0\n"
        "2/2 points in runs/first (1m05s wall this run)\n"
        "| eop | 228.6 ± 0.00 | `26bf0f2ca473e8b6` |\n"
    )
    # numbers, wall times, keys and "..." are free; spacing is not significant
    shown = (
        "macdma run: tx 40 x 1500 B, link 1000 Mb/s\n...\n"
        "dir frames lost Mb/s ±95%\n tx 39/40 1 227.1 ±3.5\n"
        "2/2 points in runs/first (5s wall this run)\n"
        "| eop | 1.0 ± 2.00 | `0123456789abcdef` |\n"
    )
    assert output_matches(shown, printed) is None
    assert output_matches("| eop | ... |\nmacdma run: ...\n", printed) == "macdma run: ..."
    # a renamed column, a changed word or a line the tool no longer prints is caught
    assert output_matches("dir frames drops Mb/s ±95%\n", printed) == "dir frames drops Mb/s ±95%"
    assert output_matches("tx 40/40 0 228.6 ±0.0 extra\n", printed) is not None
    assert output_matches("key,irq,throughput_mbps\n", printed) is not None


def test_a_drifted_output_fails_with_the_line_and_what_was_printed(tmp_path):
    steps = [Step("sh", "echo 'dir frames lost'\n", 3), Step("output", "dir frames drops\n", 5)]
    with pytest.raises(pytest.fail.Exception) as failure:
        run_steps(steps, tmp_path, tutorial_env())
    message = str(failure.value)
    assert "tutorial line 5: the output shown for the block at line 3" in message
    assert "dir frames drops" in message and "dir frames lost" in message


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
