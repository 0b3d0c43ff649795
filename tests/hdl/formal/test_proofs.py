"""The formal proofs pass on the real components, and each fails on a planted bug.

Every proof of ``make formal`` runs here as there (property task and covers, a few bounded
ones shallower: ``Proof.ci_depth``), on the pip-installed tools; each mutant of
tests/hdl/formal/formal_mutants.py must make its proof fail with a counterexample trace, which shows
that the property can bite.
"""

import pytest
from formal_mutants import MUTANTS
from unbuilt import rejected

from macdma.hdl.formal.channel_proofs import RxOwnershipHarness
from macdma.hdl.formal.proofs import PENDING, PROOFS, Proof, proof_by_name
from macdma.sim.flows import formal

# Long runs (make test-all; make formal runs every proof in full): the 36-step cover of a
# multi-buffer frame (its property task, which reaches the RX write-back, runs in CI), the
# TX ownership induction (8 minutes of CPU; its covers and mutants run in CI) and the RX
# one (its 32 goal tasks, about 3 minutes of CPU; its covers, its mutants and their check
# on the real channel run in CI).
LONG_COVERS = {"rx_multi_buffer"}
LONG_PROOFS = {"tx_ownership_induction", "rx_ownership_induction"}


def _marked(value, long: bool):
    return pytest.param(value, marks=pytest.mark.slow) if long else value


def _passes(proof, task, tmp_path):
    results = formal.run_proof(proof, tmp_path, tasks=(task,))
    assert results  # one, or one per goal of a split proof
    for result in results:
        assert result.task == task
        assert result.status == "PASS", (
            f"{proof.name} {result.label}: {result.status}, see {result.workdir}"
        )


@pytest.mark.parametrize(
    "proof", [_marked(p, p.name in LONG_PROOFS) for p in PROOFS], ids=lambda p: p.name
)
def test_proof_passes(proof, tmp_path):
    proof = proof.for_ci()
    _passes(proof, proof.mode, tmp_path)


@pytest.mark.parametrize(
    "proof", [_marked(p, p.name in LONG_COVERS) for p in PROOFS], ids=lambda p: p.name
)
def test_proof_covers_are_reached(proof, tmp_path):
    _passes(proof.for_ci(), "cover", tmp_path)


@pytest.mark.parametrize(
    ("name", "mutant", "bug", "checker"),
    MUTANTS,
    ids=[f"{entry[1].__name__}-{entry[0]}" for entry in MUTANTS],
)
def test_mutant_fails_with_a_counterexample(name, mutant, bug, checker, tmp_path):
    proof = proof_by_name(name).for_mutants()
    (result,) = formal.run_proof(proof, tmp_path, make_dut=mutant, tasks=(proof.mode,))
    assert result.status == "FAIL", f"{bug}: {name} gave {result.status}, not FAIL"
    assert result.traces, f"{bug}: no counterexample trace in {result.workdir}"
    assert all(trace.stat().st_size > 0 for trace in result.traces)
    # The property this mutant targets is the one that fails, not some other rule.
    assert any(where.split(":")[0].endswith(checker) for where in result.failed_assertions), (
        f"{bug}: failed {result.failed_assertions}, expected an assertion of {checker}"
    )


def test_every_property_class_has_a_mutant():
    assert {entry[0] for entry in MUTANTS} == {proof.name for proof in PROOFS + PENDING}


def test_unknown_proof_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="no_such_proof.*axi4_read_master"):
        proof_by_name("no_such_proof")


def test_proof_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="'induction'"):
        Proof(
            name="x",
            harness=object,
            mode="induction",
            depth=1,
            cover_depth=1,
            component="none",
        )


def test_proof_rejects_a_ci_depth_beyond_its_depth():
    with pytest.raises(ValueError, match="ci_depth must be in 1..depth \\(4\\), not 9"):
        Proof(
            name="x",
            harness=object,
            mode="bmc",
            depth=4,
            ci_depth=9,
            cover_depth=1,
            component="none",
        )


def test_ci_profile_runs_the_shallower_depth():
    proof = Proof(
        name="x", harness=object, mode="bmc", depth=14, ci_depth=10, cover_depth=1, component="-"
    )
    assert proof.for_ci().depth == 10
    assert proof.depth == 14


def test_mutant_check_is_for_a_prove_proof_only():
    with pytest.raises(ValueError, match="mutant_check is for a prove proof.*'bmc' and 18"):
        Proof(
            name="x",
            harness=object,
            mode="bmc",
            depth=4,
            cover_depth=1,
            component="-",
            mutant_check=(object, 18),
        )


def test_mutants_of_a_shallow_induction_run_its_bounded_check():
    """A prove proof whose k is below its mutants' counterexamples hands them a bounded
    check of its deep base-case harness; the others run as the suite runs them."""
    proof = proof_by_name("tx_ownership_induction")
    harness, depth = proof.mutant_check
    check = proof.for_mutants()
    assert (check.mode, check.depth, check.harness) == ("bmc", depth, harness)
    assert depth > proof.depth
    plain = proof_by_name("rx_multi_buffer")
    assert plain.for_mutants() == plain.for_ci()


@pytest.mark.parametrize(
    "proof",
    [p for p in PROOFS + PENDING if p.mutant_check is not None],
    ids=lambda p: p.name,
)
def test_mutant_check_passes_on_the_real_design(proof, tmp_path):
    """The bounded check a shallow induction's mutants run passes on the real channel, so
    that a mutant failing it is the mutant's doing; it reaches the channel's write-backs
    (TX: its first W beat at step 16, RX at 17), which the one-cycle base case does not."""
    _passes(proof.for_mutants(), "bmc", tmp_path)


def test_missing_tool_is_named(monkeypatch):
    monkeypatch.setattr(formal, "SOLVER", "no-such-solver-smt2")
    with pytest.raises(RuntimeError, match="no-such-solver-smt2.*formal"):
        formal.formal_env()


def test_tasks_run_side_by_side_with_their_cpu_measured(tmp_path):
    """make formal's scheduler: every task of every proof (property task, then covers), in
    that order, each proof elaborated once, each task's CPU time measured (sby's and its
    tools', which the wall time of a shared machine does not tell)."""
    proofs = [proof_by_name("irq_w1c"), proof_by_name("axi_lite_csr_slave")]
    reported = []
    results = formal.run_tasks(proofs, tmp_path, 2, reported.append)
    assert [(r.proof, r.task) for r in results] == [
        ("irq_w1c", "prove"),
        ("irq_w1c", "cover"),
        ("axi_lite_csr_slave", "prove"),
        ("axi_lite_csr_slave", "cover"),
    ]
    assert sorted(map(id, reported)) == sorted(map(id, results))
    assert all(r.passed for r in results)
    # The solver ran in a child of sby: its time is in the task's (more than the tools'
    # start-up alone, and no more than the wall time on two cores).
    assert all(0 < r.cpu_seconds <= 2 * r.seconds + 1 for r in results)


def test_proofs_elaborate_one_at_a_time(tmp_path):
    """Harnesses patch module constants while they elaborate (rx_buffer_ends lowers the RX
    channel's buffer minimum), and make formal elaborates from two threads: a proof
    elaborated while another's patch is on must not see it (it once gave rx_ownership
    the 4-byte minimum, and a false counterexample)."""
    import threading
    import time
    import types
    from unittest import mock

    from amaranth import Elaboratable, Module, Signal

    shared = types.SimpleNamespace(minimum=64)
    patched = threading.Event()
    seen = {}

    class Tiny(Elaboratable):
        def __init__(self):
            self.o = Signal()
            self.ports = [self.o]

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.o.eq(1)
            return m

    class Patching(Tiny):
        def elaborate(self, platform):
            with mock.patch.object(shared, "minimum", 4):
                patched.set()
                time.sleep(0.5)  # the other proof elaborates now, if it may
            return super().elaborate(platform)

    class Reading(Tiny):
        def elaborate(self, platform):
            seen["minimum"] = shared.minimum
            return super().elaborate(platform)

    def proof(name, harness):
        return Proof(name=name, harness=harness, mode="bmc", depth=1, cover_depth=1, component="-")

    first = threading.Thread(
        target=formal.write_design, args=(proof("patching", Patching), tmp_path / "a")
    )
    first.start()
    assert patched.wait(10)
    formal.write_design(proof("reading", Reading), tmp_path / "b")
    first.join()
    assert seen == {"minimum": 64}


def test_cli_exits_nonzero_on_an_unknown_proof(capsys):
    assert formal.main(["--only", "no_such_proof"]) == 2
    assert "no_such_proof" in capsys.readouterr().err


def test_rx_harness_rejects_a_buffer_minimum_above_the_channels():
    with rejected(ValueError, "min_buffer_bytes must be in 1..64, not 65"):
        RxOwnershipHarness(min_buffer_bytes=65)


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_register_fifo_behaves_as_sync_fifo(depth):
    """The proof builds' register FIFO (hdl/formal/register_fifo.py) is Amaranth's SyncFIFO
    cycle for cycle: side by side on the same random traffic, every output the same in
    every cycle (r_data too, also while empty: both read the word at the read pointer)."""
    import random

    from amaranth import Module
    from amaranth.lib.fifo import SyncFIFO
    from amaranth.sim import Simulator

    from macdma.hdl.formal.register_fifo import RegisterFifo

    m = Module()
    m.submodules.reference = reference = SyncFIFO(width=8, depth=depth)
    m.submodules.registers = registers = RegisterFifo(width=8, depth=depth)
    outputs = ("w_rdy", "r_rdy", "level", "r_data", "w_level", "r_level")
    mismatches = []

    async def traffic(ctx):
        rng = random.Random(depth)
        for cycle in range(3000):
            w_en, r_en, w_data = rng.random() < 0.55, rng.random() < 0.5, rng.randrange(256)
            for fifo in (reference, registers):
                ctx.set(fifo.w_en, w_en)
                ctx.set(fifo.r_en, r_en)
                ctx.set(fifo.w_data, w_data)
            for name in outputs:
                want = ctx.get(getattr(reference, name))
                got = ctx.get(getattr(registers, name))
                if want != got:
                    mismatches.append((cycle, name, want, got))
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(traffic)
    sim.run()
    assert not mismatches, (
        f"first mismatches (cycle, output, SyncFIFO, RegisterFifo): {mismatches[:5]}"
    )


@pytest.mark.parametrize(
    "mutant", [None, "TxChannelIgnoresOwn", "TxChannelWritesBackPreviousEntry"]
)
def test_tx_induction_harness_builds_with_every_invariant(mutant, tmp_path):
    """The TX channel's linking invariants (hdl/formal/channel_induction.py) find every
    register they name in the channel built with register FIFOs, also through a mutant's
    wrapper around a mover; a renamed register fails here, not silently."""
    import formal_mutants

    make_dut = None if mutant is None else getattr(formal_mutants, mutant)
    sby_file = formal.write_design(proof_by_name("tx_ownership_induction"), tmp_path, make_dut)
    design = (tmp_path / "design.il").read_text()
    # The walker's store is a register FIFO: its entries are registers of the netlist.
    assert "entry0" in design and "entry1" in design
    assert sby_file.exists()


def test_rx_induction_harness_builds_with_every_invariant(tmp_path):
    """The RX channel's linking invariants (hdl/formal/rx_induction.py, proven goal by goal:
    docs/formal.md) find every register they name: the walker's store and the command
    queue are register FIFOs, and each queued command gets its entry."""
    formal.write_design(proof_by_name("rx_ownership_induction"), tmp_path)
    design = (tmp_path / "design.il").read_text()
    assert "cmd_entry_0" in design and "cur_entry" in design
