"""The test frames every bench shares (sim/run/frames.py): a frame follows from its family,
sequence number and size alone, no two frames share their bytes, and no other module of
sim/ makes or parses frames of its own (issue 37: one frame generator)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from macdma.sim.run.frames import (
    ACK_SOURCE,
    BAD_SOURCE,
    HEADER_BYTES,
    RX_SOURCE,
    TX_SOURCE,
    frame_family,
    frame_seq,
    make_frame,
    split,
)

ROOT = Path(__file__).resolve().parents[3]
FAMILIES = (TX_SOURCE, RX_SOURCE, ACK_SOURCE, BAD_SOURCE)


@given(
    family=st.sampled_from(FAMILIES),
    seq=st.integers(0, (1 << 32) - 1),
    size=st.integers(HEADER_BYTES, 9216),
)
def test_a_frame_follows_from_its_family_sequence_and_size(family, seq, size):
    frame = make_frame(family, seq, size)
    assert len(frame) == size and frame == make_frame(family, seq, size)
    assert (frame_family(frame), frame_seq(frame)) == (family, seq)


def test_no_two_frames_share_their_bytes():
    # Every family against every other, over the sequence numbers where a seed shared
    # between families would show (the old run generator seeded seq * 2 + family: an ACK
    # frame was then TX frame seq + 1's body).
    bodies = {}
    for family in FAMILIES:
        for seq in range(300):
            body = make_frame(family, seq, 200)[HEADER_BYTES:]
            assert body not in bodies, f"{(family, seq)} has the body of {bodies[body]}"
            bodies[body] = (family, seq)


def test_short_frames_and_bad_arguments():
    assert len(make_frame(TX_SOURCE, 1, 10)) == 10
    assert frame_seq(make_frame(TX_SOURCE, 1, 10)) is None
    assert frame_family(b"\x02" * 11) is None
    with pytest.raises(ValueError, match="one byte .* got 256"):
        make_frame(256, 0, 60)
    with pytest.raises(ValueError, match="32 bits, got -1"):
        make_frame(TX_SOURCE, -1, 60)


def test_split_cuts_a_frame_into_its_fragments_and_refuses_sizes_that_do_not_add_up():
    frame = make_frame(TX_SOURCE, 3, 100)
    parts = split(frame, (1, 59, 40))
    assert [len(p) for p in parts] == [1, 59, 40] and b"".join(parts) == frame
    with pytest.raises(ValueError, match=r"fragments of \[1, 59\] bytes do not make a 100-byte"):
        split(frame, (1, 59))


#: What sim/run/frames.py holds for every bench: no other module of sim/ defines one.
SHARED = {"make_frame", "frame_seq", "frame_family", "split", "ETHERTYPE"}


def test_the_benches_take_their_frames_from_the_one_module():
    own = ROOT / "sim" / "run" / "frames.py"
    found = []
    for path in sorted((ROOT / "sim").rglob("*.py")):
        if path == own:
            continue
        for node in ast.parse(path.read_text(), str(path)).body:
            names = []
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n in SHARED]
    assert not found, f"frames made or parsed outside sim/run/frames.py: {found}"
