"""IRQ moderation (hdl/dma/irq.py) in Amaranth's simulator.

Moderator tests drive one IrqModerator cycle by cycle and assert the exact cycles in
which ``done_set`` pulses. Controller tests put the IrqController behind the real CsrBank
and act like a driver: AXI4-Lite writes for the configuration, reads and W1C clears of
IRQ_STATUS, reads of IRQ_COUNT.

Cycle numbering: cycle k is the k-th clock period of the run; an input "in cycle k" is high
during it, and a registered output "in cycle k" is its value during it.
"""

import pytest
from amaranth import *
from amaranth.back import verilog
from amaranth.lib.wiring import connect
from amaranth.sim import Simulator
from axi_lite_master import AxiLiteMaster
from unbuilt import rejected

from macdma.hdl.bus.csr_bank import CsrBank
from macdma.hdl.dma.irq import IrqController, IrqMode, IrqModerator, irq_causes_layout
from macdma.hdl.dma.us_timer import MicrosecondTimer
from macdma.hdl.regmap import IRQ_MODE, REGISTER_MAP
from macdma.hdl.regmodel import Block, Field, Register, RegisterMap

STROBES = ("desc_done", "desc_ioc", "frame_done", "error")
A = REGISTER_MAP.address


# -- IrqModerator harness ----------------------------------------------------------------


def run_moderator(cycles, config, events=None, changes=None):
    """Simulate ``cycles`` cycles of an IrqModerator.

    ``config``: input values from cycle 0 (``mode``, ``coalesce_frames``, ``timer_us``,
    ``sys_clk_mhz``). ``events``: ``{cycle: ("frame_done", ...)}`` strobes high in that
    cycle (``"ioc_desc"`` is shorthand for desc_done + desc_ioc). ``changes``:
    ``{cycle: {input: value}}`` configuration changed from that cycle on.

    Returns a dict of per-cycle lists: ``done_set``, ``error_set``, ``pending``, ``running``.
    """
    dut = IrqModerator()
    events = events or {}
    changes = dict(changes or {})
    changes[0] = {**config, **changes.get(0, {})}
    trace = {"done_set": [], "error_set": [], "pending": [], "running": []}

    async def bench(ctx):
        for cycle in range(cycles):
            for name, value in changes.get(cycle, {}).items():
                ctx.set(getattr(dut, name), value)
            high = set(events.get(cycle, ()))
            if "ioc_desc" in high:
                high |= {"desc_done", "desc_ioc"}
            for name in STROBES:
                ctx.set(getattr(dut.events, name), name in high)
            trace["done_set"].append(ctx.get(dut.done_set))
            trace["error_set"].append(ctx.get(dut.error_set))
            trace["pending"].append(ctx.get(dut.pending_frames))
            trace["running"].append(ctx.get(dut.timer_running))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return trace


def high_cycles(values):
    return [cycle for cycle, value in enumerate(values) if value]


def coalesce(frames, timer_us=0, mhz=100, restart=False):
    return {
        "mode": IrqMode.COALESCE,
        "coalesce_frames": frames,
        "timer_us": timer_us,
        "timer_restart": restart,
        "sys_clk_mhz": mhz,
    }


# -- modes -------------------------------------------------------------------------------


def test_irq_mode_mirrors_the_register_map():
    assert [(m.name, m.value) for m in IrqMode] == [(v.name, v.value) for v in IRQ_MODE.values]
    assert IrqMode.as_shape().width == REGISTER_MAP.field("IRQ_MODE", "tx_mode").width


def test_per_desc_mode_raises_only_for_descriptors_with_ioc():
    events = {
        3: ("ioc_desc",),
        6: ("desc_done",),  # no IOC: silent
        8: ("frame_done",),  # frames do not count in this mode
        10: ("ioc_desc", "frame_done"),
        11: ("ioc_desc",),
        14: ("desc_ioc",),  # IOC without desc_done means nothing
    }
    trace = run_moderator(20, {"mode": IrqMode.PER_DESC}, events)
    assert high_cycles(trace["done_set"]) == [4, 11, 12]


def test_eop_mode_raises_for_every_frame():
    events = {2: ("frame_done",), 3: ("frame_done",), 5: ("ioc_desc",), 9: ("frame_done",)}
    trace = run_moderator(14, {"mode": IrqMode.EOP}, events)
    assert high_cycles(trace["done_set"]) == [3, 4, 10]


def test_none_mode_never_raises_done():
    events = {c: ("ioc_desc", "frame_done") for c in range(2, 12)}
    trace = run_moderator(16, {**coalesce(1, timer_us=1, mhz=1), "mode": IrqMode.NONE}, events)
    assert high_cycles(trace["done_set"]) == []
    assert max(trace["pending"]) == 0


@pytest.mark.parametrize("mode", list(IrqMode))
def test_error_strobe_passes_through_in_every_mode(mode):
    events = {4: ("error",), 7: ("error", "frame_done", "ioc_desc")}
    trace = run_moderator(12, {**coalesce(255), "mode": mode}, events)
    assert high_cycles(trace["error_set"]) == [5, 8]
    expected_done = {
        IrqMode.PER_DESC: [8],
        IrqMode.EOP: [8],
        IrqMode.COALESCE: [],
        IrqMode.NONE: [],
    }[mode]
    assert high_cycles(trace["done_set"]) == expected_done


# -- coalescing by count -----------------------------------------------------------------


@pytest.mark.parametrize("frames", [1, 2, 8, 255])
def test_coalesce_by_count(frames):
    # 2 * frames + 1 frames, one every other cycle from cycle 2: two full batches and one
    # frame left pending (no timer).
    total = 2 * frames + 1
    frame_cycles = [2 + 2 * i for i in range(total)]
    trace = run_moderator(
        frame_cycles[-1] + 4, coalesce(frames), {c: ("frame_done",) for c in frame_cycles}
    )
    expected = [frame_cycles[frames - 1] + 1, frame_cycles[2 * frames - 1] + 1]
    if frames == 1:
        expected.append(frame_cycles[2] + 1)
    assert high_cycles(trace["done_set"]) == expected
    assert trace["pending"][-1] == (0 if frames == 1 else 1)


def test_coalesce_by_count_with_back_to_back_frames():
    events = {c: ("frame_done",) for c in range(5, 5 + 24)}
    trace = run_moderator(35, coalesce(8), events)
    assert high_cycles(trace["done_set"]) == [13, 21, 29]


def test_coalesce_ignores_descriptor_completions():
    events = {c: ("ioc_desc",) for c in range(2, 10)}
    trace = run_moderator(14, coalesce(1, timer_us=1, mhz=1), events)
    assert high_cycles(trace["done_set"]) == []


# -- coalescing by timer -----------------------------------------------------------------


@pytest.mark.parametrize("mhz", [100, 125])
@pytest.mark.parametrize("timer_us", [1, 20])
def test_coalesce_timer_fires_exactly_timer_us_after_the_first_frame(mhz, timer_us):
    first = 5
    window = timer_us * mhz
    # More frames while the timer runs do not restart it.
    events = {
        first: ("frame_done",),
        first + 3: ("frame_done",),
        first + window: ("frame_done",),  # in the expiry cycle
    }
    trace = run_moderator(first + window + 6, coalesce(255, timer_us, mhz), events)
    assert high_cycles(trace["done_set"]) == [first + window + 1]
    # The frame completing in the expiry cycle is flushed with the others.
    assert trace["pending"][first + window] == 2
    assert trace["pending"][first + window + 1] == 0
    assert trace["running"][first + window + 1] == 0


def test_coalesce_timer_with_a_1_mhz_clock_counts_single_cycles():
    trace = run_moderator(12, coalesce(255, timer_us=3, mhz=1), {2: ("frame_done",)})
    assert high_cycles(trace["done_set"]) == [6]


def test_timer_restarts_from_the_next_frame_after_a_count_flush():
    # frames=2 flushes at the second frame; the leftover timer must not fire at 10+100+1.
    events = {10: ("frame_done",), 20: ("frame_done",), 50: ("frame_done",)}
    trace = run_moderator(200, coalesce(2, timer_us=1, mhz=100), events)
    assert high_cycles(trace["done_set"]) == [21, 151]


def test_timer_restarts_from_the_next_frame_after_a_timer_flush():
    events = {10: ("frame_done",), 130: ("frame_done",)}
    trace = run_moderator(260, coalesce(8, timer_us=1, mhz=100), events)
    assert high_cycles(trace["done_set"]) == [111, 231]
    # Idle between the two: the timer is stopped, not free-running.
    assert not any(trace["running"][112:131])


def test_count_and_timer_reached_together_give_one_pulse():
    events = {10: ("frame_done",), 110: ("frame_done",)}
    trace = run_moderator(120, coalesce(2, timer_us=1, mhz=100), events)
    assert high_cycles(trace["done_set"]) == [111]


# -- the idle timer (timer_restart = 1) -------------------------------------------------


@pytest.mark.parametrize("mhz", [100, 125])
@pytest.mark.parametrize("timer_us", [1, 20])
def test_restart_timer_fires_exactly_timer_us_after_the_last_frame(mhz, timer_us):
    first = 5
    window = timer_us * mhz
    # The third frame comes one cycle before the first frame's timer would expire.
    last = first + window - 1
    events = {first: ("frame_done",), first + 3: ("frame_done",), last: ("frame_done",)}
    cycles = last + window + 6
    restarted = run_moderator(cycles, coalesce(255, timer_us, mhz, restart=True), events)
    assert high_cycles(restarted["done_set"]) == [last + window + 1]
    assert restarted["pending"][last + window] == 3
    assert restarted["running"][last + window + 1] == 0
    # The same frames with the timer from the first frame: it fires first + window + 1.
    from_first = run_moderator(cycles, coalesce(255, timer_us, mhz), events)
    assert high_cycles(from_first["done_set"]) == [first + window + 1]


def test_restart_timer_flushes_a_frame_of_its_expiry_cycle_with_the_others():
    events = {10: ("frame_done",), 110: ("frame_done",)}
    trace = run_moderator(130, coalesce(255, timer_us=1, mhz=100, restart=True), events)
    assert high_cycles(trace["done_set"]) == [111]
    assert trace["pending"][111] == 0


def test_restart_timer_never_fires_while_frames_come_faster_than_timer_us():
    # A frame every 99 cycles under a 100-cycle timer: no interrupt until they stop.
    frames = [10 + 99 * k for k in range(8)]
    events = {cycle: ("frame_done",) for cycle in frames}
    trace = run_moderator(frames[-1] + 110, coalesce(255, 1, 100, restart=True), events)
    assert high_cycles(trace["done_set"]) == [frames[-1] + 100 + 1]
    assert trace["pending"][frames[-1] + 100] == len(frames)


def test_restart_timer_still_flushes_by_count():
    events = {10: ("frame_done",), 50: ("frame_done",), 90: ("frame_done",)}
    trace = run_moderator(220, coalesce(2, timer_us=1, mhz=100, restart=True), events)
    assert high_cycles(trace["done_set"]) == [51, 191]


def test_switching_restart_on_takes_effect_at_the_next_frame():
    # Timer from 10 (first-frame mode); restart enabled at 50, frame at 60 restarts it.
    events = {10: ("frame_done",), 60: ("frame_done",)}
    changes = {50: {"timer_restart": True}}
    trace = run_moderator(180, coalesce(255, timer_us=1, mhz=100), events, changes)
    assert high_cycles(trace["done_set"]) == [161]


# -- configuration changes never lose a completion -----------------------------------------


@pytest.mark.parametrize("new_mode", [IrqMode.EOP, IrqMode.PER_DESC])
def test_leaving_coalesce_with_pending_frames_raises_at_once(new_mode):
    events = {3: ("frame_done",), 5: ("frame_done",), 7: ("frame_done",)}
    trace = run_moderator(16, coalesce(8), events, changes={10: {"mode": new_mode}})
    assert trace["pending"][10] == 3
    assert high_cycles(trace["done_set"]) == [11]
    assert trace["pending"][11] == 0


def test_lowering_coalesce_frames_to_the_pending_count_raises_at_once():
    events = {3: ("frame_done",), 5: ("frame_done",), 7: ("frame_done",)}
    trace = run_moderator(16, coalesce(8), events, changes={10: {"coalesce_frames": 2}})
    assert high_cycles(trace["done_set"]) == [11]


def test_none_mode_keeps_pending_frames_and_pauses_the_timer():
    # Frame at 10 starts a 100-cycle timer; 100 cycles of NONE pause it (cycles 50..149),
    # so it expires at 210, not 110. Frames in NONE are not counted.
    events = {10: ("frame_done",), 60: ("frame_done",), 70: ("frame_done",)}
    changes = {50: {"mode": IrqMode.NONE}, 150: {"mode": IrqMode.COALESCE}}
    trace = run_moderator(230, coalesce(8, timer_us=1, mhz=100), events, changes)
    assert high_cycles(trace["done_set"]) == [211]
    assert trace["pending"][149] == 1


def test_none_then_eop_raises_for_frames_pending_from_coalesce():
    changes = {8: {"mode": IrqMode.NONE}, 20: {"mode": IrqMode.EOP}}
    trace = run_moderator(26, coalesce(8), {3: ("frame_done",)}, changes)
    assert high_cycles(trace["done_set"]) == [21]


def test_switching_the_timer_on_with_frames_pending_starts_it():
    events = {10: ("frame_done",)}
    trace = run_moderator(140, coalesce(8), events, changes={30: {"timer_us": 1}})
    assert high_cycles(trace["done_set"]) == [131]


def test_switching_the_timer_off_stops_it_and_keeps_the_frames():
    events = {10: ("frame_done",)}
    trace = run_moderator(140, coalesce(8, timer_us=1), events, changes={50: {"timer_us": 0}})
    assert high_cycles(trace["done_set"]) == []
    assert (trace["pending"][-1], trace["running"][-1]) == (1, 0)


# -- MicrosecondTimer ----------------------------------------------------------------------


def run_timer(cycles, us, mhz, inputs):
    """Simulate a MicrosecondTimer; ``inputs``: ``{cycle: ("start", "stop", "hold", ...)}``
    (or ``{"us": value}`` entries to change ``us`` from that cycle). Returns the per-cycle
    ``running`` and ``expires`` lists."""
    dut = MicrosecondTimer()
    trace = {"running": [], "expires": []}

    async def bench(ctx):
        ctx.set(dut.us, us)
        ctx.set(dut.sys_clk_mhz, mhz)
        for cycle in range(cycles):
            high = inputs.get(cycle, ())
            for name in ("start", "stop", "hold"):
                ctx.set(getattr(dut, name), name in high)
            for item in high:
                if isinstance(item, dict):
                    ctx.set(dut.us, item["us"])
            trace["running"].append(ctx.get(dut.running))
            trace["expires"].append(ctx.get(dut.expires))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return trace


def test_timer_expires_us_times_mhz_cycles_after_its_start():
    trace = run_timer(20, us=2, mhz=5, inputs={3: ("start",)})
    assert high_cycles(trace["expires"]) == [13]
    assert high_cycles(trace["running"]) == list(range(4, 14))


@pytest.mark.parametrize(("us", "mhz", "cycles"), [(1, 1, 1), (3, 1, 3), (3, 0, 3), (2, 2, 4)])
def test_timer_at_the_slowest_clocks(us, mhz, cycles):
    # sys_clk_mhz 0 acts as 1; each µs is then one cycle.
    trace = run_timer(12, us=us, mhz=mhz, inputs={2: ("start",)})
    assert high_cycles(trace["expires"]) == [2 + cycles]
    assert high_cycles(trace["running"]) == list(range(3, 3 + cycles))


def test_timer_restarted_in_its_last_cycle_runs_on_without_a_gap():
    trace = run_timer(30, us=1, mhz=10, inputs={3: ("start",), 13: ("start",)})
    assert high_cycles(trace["expires"]) == [13, 23]
    assert high_cycles(trace["running"]) == list(range(4, 24))


def test_timer_keeps_the_length_it_started_with():
    trace = run_timer(30, us=1, mhz=10, inputs={3: ("start",), 5: ({"us": 2},)})
    assert high_cycles(trace["expires"]) == [13]


def test_timer_hold_pauses_it_and_stop_wins_over_start():
    trace = run_timer(30, us=1, mhz=10, inputs={3: ("start",), 6: ("hold",), 7: ("hold",)})
    assert high_cycles(trace["expires"]) == [15]
    trace = run_timer(20, us=1, mhz=10, inputs={3: ("start", "stop")})
    assert high_cycles(trace["running"]) == []
    trace = run_timer(20, us=1, mhz=10, inputs={3: ("start",), 8: ("stop",)})
    assert high_cycles(trace["running"]) == list(range(4, 9))
    assert high_cycles(trace["expires"]) == []


def test_timer_started_with_zero_us_does_not_run():
    trace = run_timer(20, us=0, mhz=10, inputs={3: ("start",)})
    assert high_cycles(trace["running"]) == []


# -- IrqController behind the real CsrBank ---------------------------------------------------


class IrqWithCsrBank(Elaboratable):
    """The CSR bank and the IRQ controller wired like the SoC top wires them."""

    def __init__(self):
        self.bank = CsrBank(REGISTER_MAP)
        self.irq = IrqController(REGISTER_MAP)

    def elaborate(self, platform):
        m = Module()
        m.submodules.bank = self.bank
        m.submodules.irq = self.irq
        connect(m, self.bank.irq, self.irq.regs)
        return m


STATUS = {f.name: f.mask for f in REGISTER_MAP.register("IRQ_STATUS").fields}
MODE_SHIFT = {d: REGISTER_MAP.field_shift("IRQ_MODE", f"{d}_mode") for d in ("tx", "rx")}


def run_system(bench, *sources):
    """Run ``bench(ctx, top, axi, trace)``. ``trace`` gets one dict per cycle, recorded in
    the background, of registered signals only (so the order in which the testbenches
    run within a cycle cannot matter): ``irq``, ``rx_done_set``, ``rx_done`` and
    ``tx_done`` (the status bits), ``tx_done_enable`` and ``holdoff`` (the rate limit holds
    a low irq low; a function of registers only). Each of ``sources``,
    ``source(ctx, top)``, runs as a further testbench beside ``bench`` (e.g. a stream of
    completion strobes)."""
    top = IrqWithCsrBank()
    trace = []
    watched = {
        "irq": top.irq.irq,
        "rx_done_set": top.irq.regs.status.rx_done_set,
        "rx_done": top.bank.irq.status.rx_done,
        "tx_done": top.bank.irq.status.tx_done,
        "tx_done_enable": top.bank.irq.enable.tx_done,
        "holdoff": top.irq.holdoff,
    }

    async def recorder(ctx):
        while True:
            trace.append({name: ctx.get(signal) for name, signal in watched.items()})
            await ctx.tick()

    async def testbench(ctx):
        await bench(ctx, top, AxiLiteMaster(ctx, top.bank.bus), trace)

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(recorder, background=True)
    sim.add_testbench(testbench)
    for source in sources:

        async def run_source(ctx, source=source):
            await source(ctx, top)

        sim.add_testbench(run_source)
    sim.run()


def first_high(trace, name):
    return next(i for i, entry in enumerate(trace) if entry[name])


async def strobe(ctx, events, *names, cycles=1):
    for name in names:
        ctx.set(getattr(events, name), 1)
    await ctx.tick().repeat(cycles)
    for name in names:
        ctx.set(getattr(events, name), 0)


async def set_modes(axi, tx, rx):
    await axi.write_ok(
        A("IRQ_MODE"), (tx.value << MODE_SHIFT["tx"]) | (rx.value << MODE_SHIFT["rx"])
    )


def test_reenabling_with_a_cause_pending_fires_at_once():
    async def bench(ctx, top, axi, trace):
        await set_modes(axi, IrqMode.EOP, IrqMode.EOP)
        await strobe(ctx, top.irq.tx, "frame_done")
        await ctx.tick().repeat(3)
        assert await axi.read_ok(A("IRQ_STATUS")) == STATUS["tx_done"]
        assert ctx.get(top.irq.irq) == 0  # masked: status alone does not raise irq
        await axi.write_ok(A("IRQ_ENABLE"), STATUS["tx_done"])
        assert ctx.get(top.irq.irq) == 1
        # irq rose exactly one cycle after the enable bit did (registered output).
        assert first_high(trace, "irq") == first_high(trace, "tx_done_enable") + 1
        assert await axi.read_ok(A("IRQ_COUNT")) == 1

    run_system(bench)


def test_irq_follows_status_and_enable_with_w1c_clearing():
    async def bench(ctx, top, axi, trace):
        await set_modes(axi, IrqMode.EOP, IrqMode.EOP)
        await axi.write_ok(A("IRQ_ENABLE"), STATUS["tx_done"] | STATUS["rx_done"])
        # done_set in cycle N+1 (see the moderator tests), status N+2, irq N+3.
        await strobe(ctx, top.irq.rx, "frame_done")
        await ctx.tick().repeat(4)
        done_set = first_high(trace, "rx_done_set")
        assert first_high(trace, "rx_done") == done_set + 1
        assert first_high(trace, "irq") == done_set + 2
        # A second cause while irq is high: no new edge.
        await strobe(ctx, top.irq.tx, "frame_done")
        await ctx.tick().repeat(3)
        assert await axi.read_ok(A("IRQ_STATUS")) == STATUS["tx_done"] | STATUS["rx_done"]
        await axi.write_ok(A("IRQ_STATUS"), STATUS["rx_done"])  # W1C one cause
        assert ctx.get(top.irq.irq) == 1
        await axi.write_ok(A("IRQ_STATUS"), STATUS["tx_done"])
        assert ctx.get(top.irq.irq) == 0
        assert await axi.read_ok(A("IRQ_STATUS")) == 0
        assert await axi.read_ok(A("IRQ_COUNT")) == 1
        # A new completion after the clear is a new edge.
        await strobe(ctx, top.irq.tx, "frame_done")
        await ctx.tick().repeat(3)
        assert ctx.get(top.irq.irq) == 1
        assert await axi.read_ok(A("IRQ_COUNT")) == 2
        # Masking lowers irq without clearing status; unmasking is a third edge.
        await axi.write_ok(A("IRQ_ENABLE"), 0)
        assert ctx.get(top.irq.irq) == 0
        await axi.write_ok(A("IRQ_ENABLE"), STATUS["tx_done"])
        assert ctx.get(top.irq.irq) == 1
        assert await axi.read_ok(A("IRQ_COUNT")) == 3
        irq = [entry["irq"] for entry in trace]
        assert sum(1 for a, b in zip(irq, irq[1:], strict=False) if b and not a) == 3

    run_system(bench)


def test_coalescing_configured_through_registers():
    async def bench(ctx, top, axi, trace):
        await axi.write_ok(A("IRQ_SYS_CLK_MHZ"), 125)
        # RX: 3 frames or 2 µs; TX: per-descriptor.
        await axi.write_ok(A("IRQ_RX_COALESCE"), 3 | (2 << 16))
        await set_modes(axi, IrqMode.PER_DESC, IrqMode.COALESCE)
        await axi.write_ok(A("IRQ_ENABLE"), STATUS["rx_done"] | STATUS["tx_done"])
        for _ in range(2):
            await strobe(ctx, top.irq.rx, "frame_done")
        await ctx.tick().repeat(4)
        assert ctx.get(top.irq.irq) == 0
        await strobe(ctx, top.irq.rx, "frame_done")
        await ctx.tick().repeat(3)
        assert await axi.read_ok(A("IRQ_STATUS")) == STATUS["rx_done"]
        await axi.write_ok(A("IRQ_STATUS"), STATUS["rx_done"])
        # One frame, then the 2 µs timer at 125 MHz: 250 cycles, status 2 cycles later.
        await strobe(ctx, top.irq.rx, "frame_done")
        await ctx.tick().repeat(250)
        assert ctx.get(top.bank.irq.status.rx_done) == 0
        await ctx.tick()
        assert ctx.get(top.bank.irq.status.rx_done) == 1
        # TX descriptor without IOC is silent; with IOC raises tx_done.
        await strobe(ctx, top.irq.tx, "desc_done")
        await ctx.tick().repeat(3)
        assert ctx.get(top.bank.irq.status.tx_done) == 0
        await strobe(ctx, top.irq.tx, "desc_done", "desc_ioc")
        await ctx.tick().repeat(3)
        assert ctx.get(top.bank.irq.status.tx_done) == 1

    run_system(bench)


def test_restart_timer_configured_through_registers():
    async def bench(ctx, top, axi, trace):
        await axi.write_ok(A("IRQ_SYS_CLK_MHZ"), 100)
        timer_restart = 1 << REGISTER_MAP.register("IRQ_TX_COALESCE").field("timer_restart").lsb
        # TX: 255 frames or 1 µs after the last frame; RX: 1 µs after the first.
        await axi.write_ok(A("IRQ_TX_COALESCE"), 255 | timer_restart | (1 << 16))
        await axi.write_ok(A("IRQ_RX_COALESCE"), 255 | (1 << 16))
        await set_modes(axi, IrqMode.COALESCE, IrqMode.COALESCE)
        await strobe(ctx, top.irq.tx, "frame_done")
        await strobe(ctx, top.irq.rx, "frame_done")
        await ctx.tick().repeat(48)
        await strobe(ctx, top.irq.tx, "frame_done")  # 50 cycles after the first
        await strobe(ctx, top.irq.rx, "frame_done")
        # RX fires 100 cycles after its first frame; TX (from the first it would have fired
        # with RX) 100 cycles after its second.
        await ctx.tick().repeat(60)
        assert ctx.get(top.bank.irq.status.rx_done) == 1
        assert ctx.get(top.bank.irq.status.tx_done) == 0
        await ctx.tick().repeat(45)
        assert ctx.get(top.bank.irq.status.tx_done) == 1

    run_system(bench)


def test_error_causes_are_independent_of_mode():
    async def bench(ctx, top, axi, trace):
        await set_modes(axi, IrqMode.NONE, IrqMode.NONE)
        await axi.write_ok(A("IRQ_ENABLE"), STATUS["tx_error"] | STATUS["rx_error"])
        await strobe(ctx, top.irq.tx, "error", "frame_done", "desc_done", "desc_ioc")
        await ctx.tick().repeat(3)
        assert await axi.read_ok(A("IRQ_STATUS")) == STATUS["tx_error"]
        assert ctx.get(top.irq.irq) == 1
        await strobe(ctx, top.irq.rx, "error")
        await ctx.tick().repeat(3)
        assert await axi.read_ok(A("IRQ_STATUS")) == STATUS["tx_error"] | STATUS["rx_error"]

    run_system(bench)


def test_cfg_error_cause_also_drives_irq():
    async def bench(ctx, top, axi, trace):
        await axi.write_ok(A("IRQ_ENABLE"), STATUS["cfg_error"])
        await axi.write_ok(A("IRQ_TX_COALESCE"), 0)  # frames = 0 is rejected by the bank
        assert ctx.get(top.irq.irq) == 1
        assert ctx.get(top.bank.irq.tx_coalesce.frames) == 1

    run_system(bench)


# -- construction ------------------------------------------------------------------------


def test_components_convert_to_verilog():
    assert "module" in verilog.convert(IrqModerator(), name="irq_moderator")
    assert "module" in verilog.convert(IrqController(), name="irq_controller")
    top = IrqWithCsrBank()
    ports = [top.bank.bus.awaddr, top.irq.irq, top.irq.tx.frame_done]
    assert "module" in verilog.convert(top, name="irq_with_csr", ports=ports)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"frames_width": 0}, "frames_width"),
        ({"timer_us_width": 33}, "timer_us_width"),
        ({"sys_clk_mhz_width": "10"}, "sys_clk_mhz_width"),
    ],
)
def test_moderator_rejects_bad_widths(kwargs, name):
    with rejected(ValueError, f"{name} must be an integer in 1..32, not"):
        IrqModerator(**kwargs)


def test_controller_rejects_a_map_without_an_irq_block():
    scratch = Register("SCRATCH", 0, (Field("scratch", (0, 32), "rw"),))
    tiny = RegisterMap((Block("ID", 0, (scratch,)),))
    with rejected(TypeError, "regmap must be a RegisterMap"):
        IrqController("REGISTER_MAP")
    with rejected(ValueError, "IRQ_STATUS"):
        IrqController(tiny)


def test_cause_layout_lines_up_with_the_status_register():
    layout = irq_causes_layout()
    for name, fld in layout:
        assert 1 << fld.offset == STATUS[name]


# -- interrupt rate limit (IRQ_MIN_INTERVAL) ---------------------------------------------------


def rising_edges(trace):
    irq = [entry["irq"] for entry in trace]
    return [cycle for cycle in range(1, len(irq)) if irq[cycle] and not irq[cycle - 1]]


async def configure_rate_limit(axi, mhz, interval_us, enable):
    await axi.write_ok(A("IRQ_SYS_CLK_MHZ"), mhz)
    await axi.write_ok(A("IRQ_MIN_INTERVAL"), interval_us)
    await set_modes(axi, IrqMode.EOP, IrqMode.EOP)
    await axi.write_ok(A("IRQ_ENABLE"), enable)


async def acknowledge_until(ctx, top, axi, trace, last_cycle, seen):
    """An ISR: whenever irq is high, read IRQ_STATUS and clear what it read (W1C); append
    each value read to ``seen``; return in cycle ``last_cycle`` (``len(trace)`` is the
    current cycle)."""
    while len(trace) < last_cycle:
        if ctx.get(top.irq.irq):
            status = await axi.read_ok(A("IRQ_STATUS"))
            seen.append(status)
            await axi.write_ok(A("IRQ_STATUS"), status)
        else:
            await ctx.tick()


def test_rate_limit_spaces_rises_by_the_interval_and_loses_no_cause():
    # Per-frame interrupts: a TX frame every 9 cycles, 120 frames; 2 µs at 100 MHz = 200
    # cycles between rises. Every rise is acknowledged at once, so the line falls during
    # each interval and a new cause is pending long before the interval ends.
    interval = 200
    first_frame, spacing, frames = 60, 9, 120
    frame_cycles = set(range(first_frame, first_frame + spacing * frames, spacing))
    last_frame = max(frame_cycles)
    seen, traces = [], []

    async def frame_source(ctx, top):
        for cycle in range(last_frame + 1):
            ctx.set(top.irq.tx.frame_done, cycle in frame_cycles)
            await ctx.tick()
        ctx.set(top.irq.tx.frame_done, 0)

    async def bench(ctx, top, axi, trace):
        traces.append(trace)
        await configure_rate_limit(axi, 100, 2, STATUS["tx_done"])
        assert len(trace) < first_frame  # configured before the first frame
        await acknowledge_until(ctx, top, axi, trace, last_frame + 2 * interval, seen)
        assert await axi.read_ok(A("IRQ_COUNT")) == len(rising_edges(trace))
        assert await axi.read_ok(A("IRQ_STATUS")) == 0  # every cause was served

    run_system(bench, frame_source)
    (trace,) = traces
    # The status bit is set 2 cycles after a frame and irq a cycle later; then exactly one
    # rise per interval, the last one for the frames completed during the last interval.
    first_rise = first_frame + 3
    intervals = -(-(last_frame - first_frame) // interval)  # ceiling
    expected = [first_rise + interval * k for k in range(intervals + 1)]
    assert rising_edges(trace) == expected
    # Each read found the cause (a clear that meets a new completion leaves the bit set,
    # so an ISR may read twice per rise), and nothing else.
    assert len(seen) >= len(expected) and set(seen) == {STATUS["tx_done"]}
    # The line fell during every interval (the ISR's clear) and stayed low until its end.
    for rise in expected[1:]:
        assert not trace[rise - 1]["irq"] and trace[rise - 2]["tx_done"]


async def wait_for_irq(ctx, top, trace):
    """Tick until irq is high; return the cycle it rose in."""
    while not ctx.get(top.irq.irq):
        await ctx.tick()
    return len(trace) - 1 if trace[-1]["irq"] else len(trace)


def test_a_cause_during_the_interval_raises_irq_exactly_when_it_ends():
    # 1 µs at 125 MHz: 125 cycles. The ISR masks (NAPI-style) instead of clearing, then
    # re-enables with a new cause pending: the line still waits for the interval's end.
    interval = 125
    traces = []

    async def bench(ctx, top, axi, trace):
        traces.append(trace)
        both = STATUS["tx_done"] | STATUS["rx_done"]
        await configure_rate_limit(axi, 125, 1, both)
        await strobe(ctx, top.irq.tx, "frame_done")
        rise = await wait_for_irq(ctx, top, trace)
        await axi.write_ok(A("IRQ_ENABLE"), 0)  # napi_schedule: mask
        assert ctx.get(top.irq.irq) == 0
        await axi.write_ok(A("IRQ_STATUS"), STATUS["tx_done"])
        await ctx.tick().repeat(rise + 40 - len(trace))
        await strobe(ctx, top.irq.rx, "frame_done")  # completes during the interval
        await ctx.tick().repeat(rise + 60 - len(trace))
        await axi.write_ok(A("IRQ_ENABLE"), both)  # napi_complete: unmask, cause pending
        await ctx.tick().repeat(rise + interval + 5 - len(trace))
        assert await axi.read_ok(A("IRQ_STATUS")) == STATUS["rx_done"]
        assert await axi.read_ok(A("IRQ_COUNT")) == 2

    run_system(bench)
    (trace,) = traces
    first = rising_edges(trace)[0]
    assert rising_edges(trace) == [first, first + interval]
    assert trace[first + 43]["rx_done"]  # pending from 2 cycles after the strobe
    assert not any(entry["irq"] for entry in trace[first + 43 : first + interval])
    # Held off from the rise to the interval's last cycle, which lets the line rise.
    holdoff = [entry["holdoff"] for entry in trace]
    assert holdoff[first : first + interval - 1] == [1] * (interval - 1)
    assert not holdoff[first - 1] and not holdoff[first + interval - 1]


def test_without_an_interval_irq_rises_again_at_once():
    async def bench(ctx, top, axi, trace):
        await configure_rate_limit(axi, 100, 0, STATUS["tx_done"])
        for _ in range(3):
            await strobe(ctx, top.irq.tx, "frame_done")
            rise = await wait_for_irq(ctx, top, trace)
            await axi.write_ok(A("IRQ_STATUS"), STATUS["tx_done"])
            assert ctx.get(top.irq.irq) == 0
        await ctx.tick()
        assert await axi.read_ok(A("IRQ_COUNT")) == 3
        assert rise < 60  # three rises within a few cycles of their causes

    run_system(bench)


def test_writing_zero_ends_a_running_interval_at_once():
    async def bench(ctx, top, axi, trace):
        await configure_rate_limit(axi, 100, 100, STATUS["tx_done"])  # 10,000 cycles
        await strobe(ctx, top.irq.tx, "frame_done")
        rise = await wait_for_irq(ctx, top, trace)
        await axi.write_ok(A("IRQ_STATUS"), STATUS["tx_done"])
        await strobe(ctx, top.irq.tx, "frame_done")
        await ctx.tick().repeat(20)
        assert ctx.get(top.irq.irq) == 0 and ctx.get(top.irq.holdoff) == 1
        await axi.write_ok(A("IRQ_MIN_INTERVAL"), 0)
        # Like an enable: irq follows the register one cycle after it changes.
        assert ctx.get(top.irq.holdoff) == 0
        await ctx.tick()
        assert ctx.get(top.irq.irq) == 1
        assert len(trace) - rise < 100

    run_system(bench)


def test_invalid_intervals_are_rejected_and_flagged():
    cfg_bit = REGISTER_MAP.field("ID_CFG_ERROR", "irq_min_interval_us").mask

    async def bench(ctx, top, axi, trace):
        port = top.bank.irq.min_interval.us
        await axi.write_ok(A("IRQ_MIN_INTERVAL"), 125)
        for bad in (10001, 0xFFFF):
            await axi.write_ok(A("IRQ_MIN_INTERVAL"), bad)  # rejected, still OKAY
            assert ctx.get(port) == 125
            assert await axi.read_ok(A("ID_CFG_ERROR")) == cfg_bit
            assert await axi.read_ok(A("IRQ_STATUS")) == STATUS["cfg_error"]
            await axi.write_ok(A("ID_CFG_ERROR"), cfg_bit)
            await axi.write_ok(A("IRQ_STATUS"), STATUS["cfg_error"])
        await axi.write_ok(A("IRQ_MIN_INTERVAL"), 10000)  # 100 interrupts/s: the longest
        assert ctx.get(port) == 10000
        assert await axi.read_ok(A("ID_CFG_ERROR")) == 0
        assert await axi.read_ok(A("IRQ_MIN_INTERVAL")) == 10000

    run_system(bench)
