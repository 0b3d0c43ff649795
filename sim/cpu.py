"""The modelled CPU the driver runs on: one core, a clock rate and a cost table.

``CpuModel`` holds one cocotb ``Lock``: every piece of driver work (a cost-table charge,
an MMIO access) takes the CPU for its duration, so the interrupt context, the poll loop and
the transmit path serialize the way they do on a single core. Work is charged at the
granularity of one cost-table entry, so contexts interleave between charges (an ISR gets
the CPU after the current charge, not in the middle of it) -- close enough for throughput,
and a few hundred cycles optimistic for worst-case latency.

Time on the CPU is ``cycles / mhz`` microseconds of simulated time; busy time is kept per
cost name (``tx_per_packet``, ``mmio_bus``, ...) so a run can say where the cycles went.

The CPUs themselves are data: ``sim/cpus/<name>.toml`` (:mod:`macdma.sim.cpus`,
docs/cpus.md) gives each one's clock, cores, costs with their sources and driver settings;
``CPU_PRESETS`` maps the shipped names to them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict

from cocotb.triggers import Lock, Timer
from cocotb.utils import get_sim_time

from macdma.firmware.costs import CpuCosts

from .cpus import CpuSpec, load_cpu, shipped_cpus

__all__ = ["CPU_PRESETS", "MODELLED_CORES", "PRESET_DRIVER_SETTINGS", "CpuModel", "cpu_preset"]


class CpuModel:
    """One CPU core at ``mhz`` with the cost table ``costs``.

    Members: ``mhz``, ``costs``, ``lock`` (held while the CPU does anything),
    ``busy_ns`` and ``cycles`` (per cost name), ``charges`` (count per cost name).
    """

    def __init__(self, mhz: float, costs: CpuCosts) -> None:
        if not mhz > 0:
            raise ValueError(f"CPU clock must be > 0 MHz, got {mhz!r}")
        self.mhz = float(mhz)
        self.costs = costs
        self.lock = Lock()
        self.busy_ns: dict[str, float] = defaultdict(float)
        self.cycles: dict[str, float] = defaultdict(float)
        self.charges: dict[str, int] = defaultdict(int)
        self._started_ns = get_sim_time("ns")

    def cycles_to_ns(self, cycles: float) -> float:
        return cycles * 1e3 / self.mhz

    async def charge(self, cycles: float, what: str) -> None:
        """Hold the CPU for ``cycles`` cycles of work on ``what``."""
        if cycles < 0:
            raise ValueError(f"cannot charge {cycles!r} cycles to {what!r}")
        self.charges[what] += 1
        if cycles == 0:
            return
        async with self.lock:
            await self.spend(cycles, what)

    async def spend(self, cycles: float, what: str) -> None:
        """Like :meth:`charge` for a caller that already holds :attr:`lock`."""
        if cycles <= 0:
            return
        ps = round(self.cycles_to_ns(cycles) * 1000)
        if ps > 0:
            await Timer(ps, unit="ps")
        self.account(what, self.cycles_to_ns(cycles))

    def account(self, what: str, ns: float) -> None:
        """Record ``ns`` of busy time on ``what`` (spent elsewhere, e.g. a bus stall)."""
        self.busy_ns[what] += ns
        self.cycles[what] += ns * self.mhz / 1e3

    def total_busy_ns(self) -> float:
        return sum(self.busy_ns.values())

    def reset_accounting(self) -> None:
        """Start a fresh measurement window now."""
        self.busy_ns.clear()
        self.cycles.clear()
        self.charges.clear()
        self._started_ns = get_sim_time("ns")

    def elapsed_ns(self) -> float:
        return get_sim_time("ns") - self._started_ns

    def utilisation(self) -> float:
        """Busy time / elapsed time since construction or :meth:`reset_accounting`."""
        elapsed = self.elapsed_ns()
        return self.total_busy_ns() / elapsed if elapsed > 0 else 0.0

    def report(self) -> dict:
        return {
            "mhz": self.mhz,
            "costs": asdict(self.costs),
            "elapsed_ns": self.elapsed_ns(),
            "busy_ns": dict(self.busy_ns),
            "cycles": dict(self.cycles),
            "charges": dict(self.charges),
            "utilisation": self.utilisation(),
        }


# -- presets ------------------------------------------------------------------------------
#
# The shipped CPUs are files, sim/cpus/<name>.toml (macdma.sim.cpus loads and checks them;
# docs/cpus.md); each constant's source is commented there. Kept here under their old names
# for the code that looks a CPU up by name.

#: CpuModel runs every context on one core: a CPU file with more is refused before a run.
MODELLED_CORES = 1

#: Every shipped CPU by name.
CPU_PRESETS: dict[str, CpuSpec] = {name: load_cpu(name) for name in shipped_cpus()}

#: Driver settings that belong with a shipped CPU (the field report's driver, not its CPU).
PRESET_DRIVER_SETTINGS: dict[str, dict] = {
    name: dict(spec.driver) for name, spec in CPU_PRESETS.items() if spec.driver
}


def cpu_preset(cpu: str) -> tuple[float, CpuCosts]:
    """``(clock MHz, CpuCosts)`` of ``cpu``: a shipped name or a path to a CPU file;
    ValueError (:class:`~macdma.sim.cpus.CpuFileError`) naming the problem otherwise."""
    spec = load_cpu(cpu)
    return spec.clock_mhz, spec.costs
