"""``macdma --help`` and every command's ``--help`` (sim/cli.py, issue 42): each command
says what it does, and no help text shows reStructuredText markup (double backquotes)."""

from __future__ import annotations

import argparse

import pytest

from macdma.sim.cli import build_parser


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_the_top_level_help_is_plain_text_and_lists_every_command():
    text = build_parser().format_help()
    assert "``" not in text, text
    assert "simulate the Ethernet MAC" in text
    for name in commands():
        assert f"\n    {name} " in text, f"{name} missing from:\n{text}"


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_has_a_description_in_plain_text(name):
    command = commands()[name]
    assert command.description and len(command.description) > 40, (
        f"'macdma {name} --help' has no description"
    )
    assert "``" not in command.format_help()
