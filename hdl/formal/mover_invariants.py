"""Linking invariants of the AXI movers (:mod:`macdma.hdl.dma.axi_reader`,
:mod:`macdma.hdl.dma.axi_writer`): their own registers tied to the AXI4 checkers' records of
the bus (docs/formal.md, "Linking invariants"), for k-induction on the movers alone and
inside a DMA channel."""

from amaranth import *
from amaranth.hdl import Assert, Assume
from amaranth.utils import exact_log2

from .internal import in_state, internal_signal

__all__ = ["reader_count_invariants", "reader_linking_invariants", "writer_count_invariants"]


def reader_linking_invariants(
    m, fragment, props, axi, *, beat_bytes: int, max_outstanding: int
) -> None:
    """What k-induction needs of the reader: its bursts in flight and beats still to request
    agree with the checker's queue of outstanding bursts, and the bytes it has still to
    output agree with the beats still to arrive. ``fragment`` is the elaborated reader;
    ``beat_bytes`` and ``max_outstanding`` its parameters."""
    (bursts,) = props.bursts
    (r_beat,) = props.r_beats
    state = internal_signal(fragment, "reader_state")
    in_flight = internal_signal(fragment, "in_flight")
    beats_left = internal_signal(fragment, "ar_beats_left")
    out_bytes_left = internal_signal(fragment, "out_bytes_left")
    start_lane = internal_signal(fragment, "start_lane")
    have_held = internal_signal(fragment, "have_held")
    failed = internal_signal(fragment, "failed")
    # Beats the slave still owes: the rest of the burst in progress, the other bursts
    # accepted, the AR waiting on the bus, and those not yet requested.
    owed = Signal(range(2**18), name="beats_owed")
    queued = [
        Mux(age < bursts.level, bursts.entry("len", age) + 1, 0) for age in range(bursts.depth)
    ]
    next_addr = internal_signal(fragment, "ar_next_addr")
    states = ("Idle", "Stream Data", "Flush", "Drain", "Report Error")
    m.d.comb += [
        owed.eq(sum(queued) - r_beat + Mux(axi.arvalid, axi.arlen + 1, 0) + beats_left),
        Assert(Cat(in_state(state, name) for name in states).any()),
        Assert(next_addr[: exact_log2(beat_bytes)] == 0),
        Assert(bursts.consistent),
        Assert(in_flight == bursts.level + axi.arvalid),
        Assert(in_flight <= max_outstanding),
        Assert(Mux(bursts.level == 0, r_beat == 0, r_beat <= bursts.head("len"))),
    ]
    with m.If(in_state(state, "Stream Data")):
        m.d.comb += [
            Assert(~failed),
            Assert(out_bytes_left != 0),
            Assert(
                owed + have_held == (start_lane + out_bytes_left + (beat_bytes - 1)) // beat_bytes
            ),
        ]
    with m.If(in_state(state, "Flush")):
        m.d.comb += [Assert(~failed), Assert(owed == 0), Assert(have_held)]
    with m.If(in_state(state, "Drain")):
        m.d.comb += Assert(failed)
    with m.If(in_state(state, "Idle") | in_state(state, "Report Error")):
        m.d.comb += [Assert(in_flight == 0), Assert((beats_left == 0) | failed)]


def writer_count_invariants(m, fragment, props_fragment, axi) -> None:
    """What k-induction needs of the writer to know that nothing of it is on the bus once it
    is idle: its count of bursts in flight (AW loaded, B not yet back) is the checker's
    bursts accepted and unanswered plus the AW waiting on the bus; the checker's own
    records agree with each other (every burst shown is waiting for its W beats, or for
    its B, or both done); and in ``Idle`` and ``Report`` (``cmd.ready`` or about to be)
    nothing is in flight. ``fragment`` is the elaborated writer, ``props_fragment`` the
    elaborated :class:`~.axi4_properties.Axi4WriteProperties` on its bus (one ID).

    The counts only, not the burst lengths the writer keeps in its ``SyncFIFO``: so the
    checker's rule "exactly AWLEN + 1 W beats per burst" is not inductive with these, and a
    proof using them assumes the master's rules (``proven="neither"``)."""
    state = internal_signal(fragment, "writer_state")
    in_flight = internal_signal(fragment, "in_flight")
    aw_open = internal_signal(props_fragment, "aw_open0")
    w_done_open = internal_signal(props_fragment, "w_done_open0")
    w_waiting = internal_signal(props_fragment, "w_bursts_level")
    past_aw_waiting = internal_signal(props_fragment, "past_aw_waiting")
    # An AW shown for the first time this cycle: the checker queues it from the next one.
    aw_shown = axi.awvalid & ~past_aw_waiting
    # Every burst the checker queues has the one ID the movers use, so each W beat counts
    # towards that ID's records.
    for index in range(props_depth(props_fragment, "w_bursts_id")):
        m.d.comb += Assert(internal_signal(props_fragment, f"w_bursts_id{index}") == 0)
    m.d.comb += [
        Assert(in_flight == aw_open + axi.awvalid),
        Assert(w_waiting + aw_shown + w_done_open == aw_open + axi.awvalid),
    ]
    with m.If(in_state(state, "Idle") | in_state(state, "Report")):
        m.d.comb += [Assert(in_flight == 0), Assert(~axi.awvalid)]


def reader_count_invariants(m, fragment, props, axi) -> None:
    """The reader's counterpart of :func:`writer_count_invariants`, lighter than
    :func:`reader_linking_invariants`: its count of bursts in flight (AR loaded, last R beat
    not yet in) is the checker's queue of accepted bursts plus the AR waiting on the bus,
    and the queue is consistent. That nothing is in flight in ``Idle`` and ``Report Error``
    is *assumed*: it is one of :func:`reader_linking_invariants`, proven by k-induction on
    the reader alone (``axi4_read_master``), whose byte accounting would make a channel's
    induction step cost minutes per step (it did not finish in 10 minutes at k = 3)."""
    (bursts,) = props.bursts
    state = internal_signal(fragment, "reader_state")
    in_flight = internal_signal(fragment, "in_flight")
    m.d.comb += [Assert(bursts.consistent), Assert(in_flight == bursts.level + axi.arvalid)]
    with m.If(in_state(state, "Idle") | in_state(state, "Report Error")):
        m.d.comb += Assume(in_flight == 0)


def props_depth(props_fragment, prefix: str) -> int:
    """How many records a checker's queue holds: its registers ``<prefix>0``, ``<prefix>1``,
    ... found by name in the elaborated checker."""
    depth = 0
    while True:
        try:
            internal_signal(props_fragment, f"{prefix}{depth}")
        except LookupError:
            return depth
        depth += 1
