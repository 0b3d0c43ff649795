"""The modelled CPU the driver runs on: ``cores`` cores, a clock rate, a cost table and,
per core, a scheduler that behaves like a kernel's on one CPU.

Every context runs on one core (IRQ affinity, the application's CPU: the caller names
it). On one core the rules below serialise the contexts; contexts on different cores run
in parallel and meet only in the driver's spinlocks (firmware/locks.py), where a
context that finds a lock held spins with its core busy (``lock_spin``).

Every piece of driver work runs inside a *context* of one of three levels, highest
priority first: ``hardirq`` (an interrupt handler, a timer interrupt), ``softirq`` (NAPI,
timer callbacks, and process code with bottom halves disabled, such as pktgen's xmit) and
``process`` (pktgen's loop, the stack). The rules on each core, which are what Linux
does on one CPU:

- A context of a higher level *preempts* a lower one at the next charge boundary: the
  preempted context resumes only when every higher context has finished.
- A context never preempts one of its own level or a higher one: it waits, in arrival
  order. So a softirq runs its work to completion against process context, and process
  code that raised itself to ``softirq`` (bottom halves disabled) cannot be interrupted by
  NAPI, only by a hard IRQ.
- Charges longer than :data:`SLICE_CYCLES` are split into slices of at most that many
  cycles; a pending preemption is taken between slices. An MMIO access is one
  non-preemptible step (the core is stalled on the bus), and so is each step of the CPU's
  own memory traffic through the memory system (a *stall*, at most 1 KiB each way). So the
  *preemption latency* -- from a higher context asking for the CPU to it running -- is at
  most one slice plus one MMIO bus transaction or memory stall; every such latency is
  recorded (``preemption_ns``) and the bound is tested (tests/test_scenario_sim.py).
- Busy waiting (a spin on a lock, pktgen re-trying a stopped queue) holds the CPU and is
  accounted (``spin``); sleeping waits (a timer, an IRQ line) do not use the CPU at all.

Hardware threads (``threads_per_pipeline`` 2, a MIPS 34K's two VPEs): the ``cores`` are
then the CPUs Linux sees, and each pair of them (0 and 1, 2 and 3, ...) shares one
pipeline. A core *issues* while it runs a charge or a spin; while both threads of a
pipeline issue, each advances at ``thread_share`` of the clock (0.5: the issue slots
split evenly; more when each thread's stalls leave slots to the other), and a thread
whose sibling issues nothing gets the whole pipeline: an idle sibling costs nothing. A
thread stalled on the bus (an MMIO access, a memory stall) does not issue. The rate is
re-read whenever the sibling starts or stops issuing, so a charge of C cycles takes
exactly C / mhz when alone and C / (mhz x share) beside a busy sibling.

Time on the CPU is ``cycles / mhz`` microseconds of simulated time; busy time is kept per
cost name (``tx_per_packet``, ``mmio_bus``, ...) so a run can say where the cycles went,
and cumulative totals can be sampled at any moment (:meth:`CpuModel.totals`) so a
measurement window can be cut after the run.

The CPUs themselves are data: ``sim/model/cpus/<name>.toml`` (:mod:`macdma.sim.model.cpus`,
docs/cpus.md) gives each one's clock, cores, costs with their sources and driver settings;
``CPU_PRESETS`` maps the shipped names to them.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from dataclasses import asdict, dataclass, field

import cocotb
from cocotb.triggers import Event, First, Timer
from cocotb.utils import get_sim_time

from macdma.firmware.costs import CpuCosts

from .cpus import CpuSpec, load_cpu, shipped_cpus

__all__ = [
    "CONTEXT_LEVELS",
    "CPU_PRESETS",
    "LOCK_SPIN",
    "PRESET_DRIVER_SETTINGS",
    "SLICE_CYCLES",
    "SPIN_NAMES",
    "CpuModel",
    "cpu_preset",
]

#: Context levels, highest priority first (lower number wins).
CONTEXT_LEVELS = {"hardirq": 0, "softirq": 1, "process": 2}
#: The longest stretch of CPU work taken without a chance to preempt it. A modelling
#: choice, not a hardware figure: short enough that an interrupt waits at most a few
#: microseconds on the slowest preset (500 cycles = 7.6 us at 66 MHz, 0.5 us at 1 GHz),
#: long enough that splitting costs few simulator events.
SLICE_CYCLES = 500.0
#: Accounting names of idle busy waiting (the CPU held with nothing to do: pktgen re-trying
#: a stopped queue); excluded from work cycles. A write barrier's drain (``store_drain``)
#: is the driver's cost and counts as work.
SPIN_NAMES = ("pktgen_spin",)
#: Accounting name of a context spinning on a spinlock another core holds: the core is
#: busy (it counts as work in the utilisation, as a kernel's system time does).
LOCK_SPIN = "lock_spin"


@dataclass(eq=False)
class _Context:
    """One running or waiting context: its level, core, the task it runs in, its wake-up."""

    level: int
    task: object
    core: _Core
    wake: Event = field(default_factory=Event)
    depth: int = 1  # nested entries of the same task
    asked_ns: float = 0.0
    blocker: object = None  # the lower context it waits to preempt, if any


class _Core:
    """One core's scheduler state: its stack of running and preempted contexts, the
    contexts waiting for it, and its busy time per cost name."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.stack: list[_Context] = []  # running context on top, preempted below it
        self.waiting: list[_Context] = []  # in arrival order
        self.in_step: _Context | None = None  # the top is inside a non-preemptible step
        self.open: tuple[float, str] | None = None  # (start, what) of the busy step running
        self.busy_ns: dict[str, float] = defaultdict(float)
        self.pipeline: _Pipeline | None = None  # shared with a hardware-thread sibling


class _Pipeline:
    """One pipeline that two hardware threads share: how many of them issue now, each
    one's rate while both do (``share``), and an event that fires when that count changes
    (a thread in the middle of a charge then re-reads its rate)."""

    def __init__(self, share: float) -> None:
        self.share = share
        self.issuing = 0
        self.changed = Event()

    def rate(self) -> float:
        """The fraction of the clock one issuing thread advances at."""
        return self.share if self.issuing > 1 else 1.0

    def set_issuing(self, delta: int) -> None:
        self.issuing += delta
        changed, self.changed = self.changed, Event()
        changed.set()


class CpuModel:
    """A CPU of ``cores`` cores at ``mhz`` with the cost table ``costs``; each core has a
    priority scheduler of its own.

    Every context runs on one core (``context(level, core=N)``; core 0 by default): on
    one core contexts serialise by the rules above, on different cores they run in
    parallel. Members: ``mhz``, ``cores``, ``costs``, ``slice_cycles``, ``busy_ns`` and
    ``cycles`` (per cost name, all cores), ``charges`` (count per cost name),
    ``preemption_ns`` (every wait of a context for a lower-priority one on its core to
    reach a boundary), ``max_step_ns`` (the longest non-preemptible step taken: a slice, a
    barrier's drain slice or an MMIO bus access), ``max_mmio_ns`` (the longest MMIO access),
    ``max_stall_ns`` (the longest memory stall: a step of the CPU's own memory traffic).

    ``threads_per_pipeline`` 2 makes each pair of cores hardware threads of one pipeline,
    each issuing at ``thread_share`` of the clock while its sibling issues too (above).
    """

    def __init__(
        self,
        mhz: float,
        costs: CpuCosts,
        *,
        cores: int = 1,
        slice_cycles: float = SLICE_CYCLES,
        threads_per_pipeline: int = 1,
        thread_share: float = 1.0,
    ):
        if not mhz > 0:
            raise ValueError(f"CPU clock must be > 0 MHz, got {mhz!r}")
        if not slice_cycles > 0:
            raise ValueError(f"slice_cycles must be > 0, got {slice_cycles!r}")
        if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
            raise ValueError(f"cores must be a whole number >= 1, got {cores!r}")
        if threads_per_pipeline not in (1, 2) or cores % threads_per_pipeline:
            raise ValueError(
                f"threads_per_pipeline must be 1 or 2 and divide cores ({cores}), got "
                f"{threads_per_pipeline!r}"
            )
        if not 0.5 <= thread_share <= 1.0:
            raise ValueError(f"thread_share must be 0.5..1, got {thread_share!r}")
        self.mhz = float(mhz)
        self.cores = cores
        self.costs = costs
        self.slice_cycles = float(slice_cycles)
        self.busy_ns: dict[str, float] = defaultdict(float)
        self.cycles: dict[str, float] = defaultdict(float)
        self.charges: dict[str, int] = defaultdict(int)
        self.preemption_ns: list[float] = []
        self.max_step_ns = 0.0
        self.max_mmio_ns = 0.0
        self.max_stall_ns = 0.0
        self._cores = [_Core(index) for index in range(cores)]
        self.threads_per_pipeline = threads_per_pipeline
        self.thread_share = float(thread_share)
        if threads_per_pipeline > 1:
            for first in range(0, cores, threads_per_pipeline):
                pipeline = _Pipeline(self.thread_share)
                for core in self._cores[first : first + threads_per_pipeline]:
                    core.pipeline = pipeline
        self._by_task: dict[object, _Context] = {}
        self._started_ns = get_sim_time("ns")

    # -- time --------------------------------------------------------------------------------
    def cycles_to_ns(self, cycles: float) -> float:
        return cycles * 1e3 / self.mhz

    @property
    def slice_ns(self) -> float:
        return self.cycles_to_ns(self.slice_cycles)

    # -- contexts ----------------------------------------------------------------------------
    def _core(self, core: int | None) -> _Core:
        if core is None:
            return self._cores[0]
        if isinstance(core, bool) or not isinstance(core, int) or not 0 <= core < self.cores:
            raise ValueError(
                f"core {core!r} does not exist: this CPU has cores 0..{self.cores - 1}"
            )
        return self._cores[core]

    def current_core(self) -> int | None:
        """The core the calling task's context runs on, or None outside any context."""
        ctx = self._by_task.get(cocotb.task.current_task())
        return None if ctx is None else ctx.core.index

    def cache_domain(self, core: int) -> int:
        """The L1 cache ``core`` works against: its own, or the one its pipeline's
        hardware threads share (a core index divided by ``threads_per_pipeline``)."""
        return core // self.threads_per_pipeline

    @contextlib.asynccontextmanager
    async def context(self, level: str, core: int | None = None):
        """Run the body as a context of ``level`` ("hardirq", "softirq", "process") on
        ``core`` (0..cores - 1; default 0).

        Re-entered by a task that already runs a context, it only raises that context's
        priority for the body (``local_bh_disable`` or ``spin_lock_irqsave`` inside it)
        and never lowers it; the context stays on its core (``core`` must then be None or
        that core)."""
        if level not in CONTEXT_LEVELS:
            raise ValueError(f"context level {level!r} is not one of {', '.join(CONTEXT_LEVELS)}")
        rank = CONTEXT_LEVELS[level]
        task = cocotb.task.current_task()
        mine = self._by_task.get(task)
        if mine is not None:
            if core is not None and self._core(core) is not mine.core:
                raise ValueError(
                    f"a context on core {mine.core.index} cannot enter core {core}: a task "
                    "runs on one core"
                )
            saved = mine.level
            mine.level = min(saved, rank)
            mine.depth += 1
            try:
                yield
            finally:
                mine.depth -= 1
                mine.level = saved
                await self._boundary(mine)  # a lowered priority may let a waiter in
            return
        ctx = _Context(rank, task, self._core(core))
        self._by_task[task] = ctx
        try:
            await self._enter(ctx)
            yield
        finally:
            self._leave(ctx)

    async def _enter(self, ctx: _Context) -> None:
        ctx.asked_ns = get_sim_time("ns")
        core = ctx.core
        top = core.stack[-1] if core.stack else None
        if top is None or (ctx.level < top.level and core.in_step is not top):
            self._run(ctx)
            return
        ctx.blocker = top if ctx.level < top.level else None
        core.waiting.append(ctx)
        ctx.wake.clear()
        await ctx.wake.wait()

    def _run(self, ctx: _Context) -> None:
        """Put ``ctx`` on top of its core's stack and let it go."""
        stack = ctx.core.stack
        if ctx.blocker is not None and stack and stack[-1] is ctx.blocker:
            # Waited only for a lower context to reach a boundary: a preemption latency.
            self.preemption_ns.append(get_sim_time("ns") - ctx.asked_ns)
        ctx.blocker = None
        if stack:
            stack[-1].wake.clear()  # the one below is preempted
        stack.append(ctx)
        ctx.wake.set()

    @staticmethod
    def _best_waiter(core: _Core) -> _Context | None:
        best = None
        for ctx in core.waiting:
            if best is None or ctx.level < best.level:
                best = ctx
        return best

    def _dispatch(self, core: _Core) -> None:
        """At a boundary of the top context of ``core``, or with the core free: run the
        highest waiter if it outranks the top (or nothing runs); otherwise resume the top."""
        best = self._best_waiter(core)
        top = core.stack[-1] if core.stack else None
        if best is not None and (top is None or best.level < top.level):
            core.waiting.remove(best)
            self._run(best)
        elif top is not None:
            top.wake.set()

    def _leave(self, ctx: _Context) -> None:
        core = ctx.core
        if ctx in core.waiting:  # cancelled while waiting
            core.waiting.remove(ctx)
        elif core.stack and core.stack[-1] is ctx:
            core.stack.pop()
        elif ctx in core.stack:
            core.stack.remove(ctx)
        self._by_task.pop(ctx.task, None)
        self._dispatch(core)

    async def _boundary(self, ctx: _Context) -> None:
        """A charge boundary of ``ctx``: take a pending preemption, wait until resumed."""
        core = ctx.core
        self._dispatch(core)
        while core.stack and core.stack[-1] is not ctx:
            await ctx.wake.wait()
        ctx.wake.set()

    @contextlib.asynccontextmanager
    async def step(self, what: str | None = None, *, stall: bool = False):
        """A non-preemptible step of the current context (an MMIO bus access); the time
        it takes is accounted to ``what`` when given. ``stall``: the core waits on the
        memory system (the CPU's own traffic), a step that counts in the preemption bound
        as an MMIO access does. Outside any context it runs as a process context of its
        own on core 0."""
        ctx = self._by_task.get(cocotb.task.current_task())
        if ctx is None:
            async with self.context("process"):
                async with self.step(what, stall=stall):
                    yield
            return
        core = ctx.core
        core.in_step = ctx
        started = get_sim_time("ns")
        if what is not None:
            core.open = (started, what)
        try:
            yield
        finally:
            core.in_step = None
            core.open = None
            taken = get_sim_time("ns") - started
            self.max_step_ns = max(self.max_step_ns, taken)
            if what == "mmio_bus":
                self.max_mmio_ns = max(self.max_mmio_ns, taken)
            if stall:
                self.max_stall_ns = max(self.max_stall_ns, taken)
            if what is not None:
                self._account(core, what, taken)
        await self._boundary(ctx)

    async def sleep(self, ns: float) -> None:
        """A sleeping wait of ``ns``: the caller's context gives its core up meanwhile
        (lower contexts run) and asks for it again at its level when the time is up."""
        ps = round(ns * 1000)
        ctx = self._by_task.get(cocotb.task.current_task())
        if ctx is None:
            if ps > 0:
                await Timer(ps, unit="ps")
            return
        core = ctx.core
        if ctx in core.stack:
            core.stack.remove(ctx)
        self._dispatch(core)
        if ps > 0:
            await Timer(ps, unit="ps")
        await self._enter(ctx)

    # -- charging ----------------------------------------------------------------------------
    async def charge(self, cycles: float, what: str) -> None:
        """Spend ``cycles`` cycles of work on ``what`` in the current context (a process
        context of its own on core 0 when the caller runs none), in slices of
        ``slice_cycles``."""
        if cycles < 0:
            raise ValueError(f"cannot charge {cycles!r} cycles to {what!r}")
        self.charges[what] += 1
        if cycles == 0:
            return
        remaining = float(cycles)
        while remaining > 0:
            part = min(remaining, self.slice_cycles)
            await self._hold(self.cycles_to_ns(part), what)
            remaining -= part

    async def spin(self, ns: float, what: str) -> None:
        """Busy-wait ``ns`` on ``what`` (pktgen's :data:`SPIN_NAMES`, or ``lock_spin``):
        the core is held and the time is accounted, preemptible at slice boundaries."""
        remaining = float(ns)
        while remaining > 0:
            part = min(remaining, self.slice_ns)
            await self._hold(part, what)
            remaining -= part

    async def _hold(self, ns: float, what: str) -> None:
        async with self.step():
            core = self._by_task[cocotb.task.current_task()].core
            core.open = (get_sim_time("ns"), what)
            if core.pipeline is None:
                ps = round(ns * 1000)
                if ps > 0:
                    await Timer(ps, unit="ps")
                taken = ns
            else:
                taken = await self._issue(core.pipeline, ns)
            core.open = None
            self._account(core, what, taken)

    @staticmethod
    async def _issue(pipeline: _Pipeline, ns: float) -> float:
        """``ns`` of work at the full clock on a pipeline shared with a sibling thread:
        advance at the pipeline's rate, re-read whenever the sibling starts or stops
        issuing. Returns the time it took (ns)."""
        started_ps = get_sim_time("ps")
        pipeline.set_issuing(+1)
        try:
            remaining_ps = ns * 1000
            while True:
                rate = pipeline.rate()
                ps = round(remaining_ps / rate)
                if ps <= 0:
                    break
                changed = pipeline.changed
                begun = get_sim_time("ps")
                await First(Timer(ps, unit="ps"), changed.wait())
                remaining_ps -= (get_sim_time("ps") - begun) * rate
                if not changed.is_set():
                    break  # the work is done
        finally:
            pipeline.set_issuing(-1)
        return (get_sim_time("ps") - started_ps) / 1000

    async def spend(self, cycles: float, what: str) -> None:
        """Alias of :meth:`charge` (the charge already runs in the caller's context)."""
        await self.charge(cycles, what)

    def account(self, what: str, ns: float) -> None:
        """Record ``ns`` of busy time on ``what`` (spent elsewhere, e.g. a bus stall) on
        the caller's core (core 0 outside any context)."""
        ctx = self._by_task.get(cocotb.task.current_task())
        self._account(self._cores[0] if ctx is None else ctx.core, what, ns)

    def _account(self, core: _Core, what: str, ns: float) -> None:
        self.busy_ns[what] += ns
        self.cycles[what] += ns * self.mhz / 1e3
        core.busy_ns[what] += ns

    def preemption_bound_ns(self) -> float:
        """The documented bound on preemption latency: one slice, or the longest MMIO
        access or memory stall seen (neither is split), whichever is longer."""
        return max(self.slice_ns, self.max_mmio_ns, self.max_stall_ns)

    # -- accounting --------------------------------------------------------------------------
    def total_busy_ns(self) -> float:
        return sum(self.busy_ns.values())

    def spin_ns(self) -> float:
        return sum(self.busy_ns.get(name, 0.0) for name in SPIN_NAMES)

    def totals(self) -> dict:
        """Cumulative busy and idle-spin time now, the running steps' parts included (for
        samples cut into a window later): ``busy_ns``/``spin_ns`` over all cores,
        ``core_busy_ns``/``core_spin_ns`` per core, ``lock_spin_ns`` over all cores."""
        now = get_sim_time("ns")
        core_busy, core_spin = [], []
        lock_spin = 0.0
        for core in self._cores:
            busy = sum(core.busy_ns.values())
            spin = sum(core.busy_ns.get(name, 0.0) for name in SPIN_NAMES)
            lock_spin += core.busy_ns.get(LOCK_SPIN, 0.0)
            if core.open is not None:
                running = now - core.open[0]
                busy += running
                if core.open[1] in SPIN_NAMES:
                    spin += running
                elif core.open[1] == LOCK_SPIN:
                    lock_spin += running
            core_busy.append(busy)
            core_spin.append(spin)
        return {
            "busy_ns": sum(core_busy),
            "spin_ns": sum(core_spin),
            "core_busy_ns": core_busy,
            "core_spin_ns": core_spin,
            "lock_spin_ns": lock_spin,
        }

    def reset_accounting(self) -> None:
        """Start fresh totals now (the run's start)."""
        self.busy_ns.clear()
        self.cycles.clear()
        self.charges.clear()
        for core in self._cores:
            core.busy_ns.clear()
        self.preemption_ns.clear()
        self.max_step_ns = 0.0
        self.max_mmio_ns = 0.0
        self.max_stall_ns = 0.0
        self._started_ns = get_sim_time("ns")

    def elapsed_ns(self) -> float:
        return get_sim_time("ns") - self._started_ns

    def utilisation(self) -> float:
        """Busy time / (elapsed time x cores) since construction or
        :meth:`reset_accounting` (1.0 = every core busy all the time)."""
        elapsed = self.elapsed_ns()
        return self.total_busy_ns() / (elapsed * self.cores) if elapsed > 0 else 0.0

    def report(self) -> dict:
        return {
            "mhz": self.mhz,
            "cores": self.cores,
            "threads_per_pipeline": self.threads_per_pipeline,
            "thread_share": self.thread_share,
            "costs": asdict(self.costs),
            "elapsed_ns": self.elapsed_ns(),
            "busy_ns": dict(self.busy_ns),
            "core_busy_ns": [dict(core.busy_ns) for core in self._cores],
            "cycles": dict(self.cycles),
            "charges": dict(self.charges),
            "utilisation": self.utilisation(),
            "slice_cycles": self.slice_cycles,
            "slice_ns": self.slice_ns,
            "max_step_ns": self.max_step_ns,
            "max_mmio_ns": self.max_mmio_ns,
            "max_stall_ns": self.max_stall_ns,
            "preemption_bound_ns": self.preemption_bound_ns(),
            "preemptions": len(self.preemption_ns),
            "preemption_max_ns": max(self.preemption_ns, default=0.0),
        }


# -- presets ------------------------------------------------------------------------------
#
# The shipped CPUs are files, sim/model/cpus/<name>.toml (macdma.sim.model.cpus loads and
# checks them; docs/cpus.md); each constant's source is commented there. Kept here under
# their old names for the code that looks a CPU up by name.

#: Every shipped CPU by name.
CPU_PRESETS: dict[str, CpuSpec] = {name: load_cpu(name) for name in shipped_cpus()}

#: Driver settings that belong with a shipped CPU (the field report's driver, not its CPU).
PRESET_DRIVER_SETTINGS: dict[str, dict] = {
    name: dict(spec.driver) for name, spec in CPU_PRESETS.items() if spec.driver
}


def cpu_preset(cpu: str) -> tuple[float, CpuCosts]:
    """``(clock MHz, CpuCosts)`` of ``cpu``: a shipped name or a path to a CPU file;
    ValueError (:class:`~macdma.sim.model.cpus.CpuFileError`) naming the problem otherwise."""
    spec = load_cpu(cpu)
    return spec.clock_mhz, spec.costs
