"""The modelled CPU the driver runs on: one core, a clock rate and a cost table.

``CpuModel`` holds one cocotb ``Lock``: every piece of driver work (a cost-table charge,
an MMIO access) takes the CPU for its duration, so the interrupt context, the poll loop and
the transmit path serialize the way they do on a single core. Work is charged at the
granularity of one cost-table entry, so contexts interleave between charges (an ISR gets
the CPU after the current charge, not in the middle of it) -- close enough for throughput,
and a few hundred cycles optimistic for worst-case latency.

Time on the CPU is ``cycles / mhz`` microseconds of simulated time; busy time is kept per
cost name (``tx_per_packet``, ``mmio_bus``, ...) so a run can say where the cycles went.

``CPU_PRESETS`` maps a preset name to ``(mhz, CpuCosts)``; each constant says where it
comes from (a field report in /work/shared/DESIGN.md, or an engineering estimate).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict

from cocotb.triggers import Lock, Timer
from cocotb.utils import get_sim_time

from macdma.firmware.costs import CpuCosts

__all__ = ["CPU_PRESETS", "CpuModel", "cpu_preset"]


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
# microblaze-66: a 66 MHz MicroBlaze with a custom MAC/DMA IP, pktgen, 1500-byte UDP
# frames, IRQ on TX done (field report, DESIGN.md). The report gives 232, 192, 159, 141,
# 130, 116 Mb/s for 0..5 extra fragments. 66e6 / (232e6 / 12000 bits) = 3413 cycles per
# frame at 0 extra fragments; the fall to 116 Mb/s (6828 cycles) is ~683 cycles per extra
# fragment (a straight-line fit; the report's middle points sit within 5% of it). One
# TX-done interrupt "took about 810 timer ticks" (report): entry/exit plus the ISR's
# status read and acknowledge. The split of the rest is an estimate for a MicroBlaze
# without an MMU-friendly DMA API: mapping a fragment (dma_map_single + cache flush set-up
# + bookkeeping) dominates the per-fragment cost; the cache flush per byte is a
# write-back D-cache flushed a 32-byte line at a time (~8 cycles a line = 0.25/byte).
# tx_per_packet (pktgen skb handling + the stack) is what is left of 3413 after the
# measured driver's other charges; it is tuned against the RTL run (docs/driver-model.md).
_MB66_MMIO_READ = 40.0  # uncached AXI4-Lite read through the interconnect: estimate
_MB66_MMIO_WRITE = 20.0  # posted write, fewer stall cycles: estimate
_MB66_IRQ_TOTAL = 810.0  # field report: one TX-done interrupt ~810 timer ticks
_MB66_PER_FRAGMENT = 683.0  # field report fit: (3413 - 6828) / 5
_MB66_FRAGMENT_MAP = 400.0  # estimate, of the 683 per fragment
_MB66_DESCRIPTOR = 150.0  # estimate: four uncached-stores-to-RAM + ring bookkeeping
_MB66_CLEAN = _MB66_PER_FRAGMENT - _MB66_FRAGMENT_MAP - _MB66_DESCRIPTOR  # 133: unmap+free
_MB66_CACHE_PER_BYTE = 0.25  # estimate: 8 cycles per 32-byte line flush
_MB66_TX_PER_PACKET = 1490.0  # calibrated: 3413 per frame at 0 extra fragments (see doc)

MICROBLAZE_66 = CpuCosts(
    irq_entry_exit=_MB66_IRQ_TOTAL - _MB66_MMIO_READ - _MB66_MMIO_WRITE,
    mmio_read=_MB66_MMIO_READ,
    mmio_write=_MB66_MMIO_WRITE,
    tx_per_packet=_MB66_TX_PER_PACKET,
    tx_per_descriptor=_MB66_DESCRIPTOR,
    tx_per_fragment_map=_MB66_FRAGMENT_MAP,
    tx_clean_per_descriptor=_MB66_CLEAN,
    # RX on this CPU is not in the report: same stack cost as TX, refill like a map.
    rx_per_packet=_MB66_TX_PER_PACKET,
    rx_per_descriptor=_MB66_FRAGMENT_MAP + _MB66_CLEAN,
    per_byte_cache=_MB66_CACHE_PER_BYTE,
    per_byte_copy=0.0,
    napi_poll_overhead=200.0,  # estimate: softirq entry + poll bookkeeping
    timer_tick_overhead=300.0,  # estimate: timer interrupt + softirq
    cpu_mhz=66.0,
)

# mips-router: Lantiq xRX200 (MIPS 34Kc, ~500 MHz) running OpenWrt (field report: TX
# housekeeping from a ~1 kHz tick with a budget of 32 packets per call, descriptors 64 ->
# 128 -> 192, IRQ moved from end-of-descriptor to end-of-packet). Cycle counts are
# estimates scaled from the MicroBlaze numbers for a 5-stage in-order core with caches
# and a real kernel: IRQ ~1200 cycles (34Kc vectored interrupt + kernel genirq),
# stack work per packet ~2500 (routing path), uncached MMIO ~60 cycles over the FPI bus.
# Housekeeping rate and budget are driver settings (DriverConfig.housekeeping_hz = 1000,
# tx_clean_budget = 32), listed in MIPS_ROUTER_DRIVER below.
MIPS_ROUTER = CpuCosts(
    irq_entry_exit=1200.0,
    mmio_read=60.0,
    mmio_write=30.0,
    tx_per_packet=2500.0,
    tx_per_descriptor=120.0,
    tx_per_fragment_map=250.0,
    tx_clean_per_descriptor=150.0,
    rx_per_packet=2500.0,
    rx_per_descriptor=300.0,
    per_byte_cache=0.125,  # 32-byte lines, ~4 cycles per cache op
    per_byte_copy=0.0,
    napi_poll_overhead=300.0,
    timer_tick_overhead=800.0,
    cpu_mhz=500.0,
)
MIPS_ROUTER_DRIVER = {"housekeeping_hz": 1000, "tx_clean_budget": 32}

# armv7-noncoherent: lan743x on a non-coherent ARMv7 (~1 GHz Cortex-A) (field report: RX
# buffers always 9 KB, every packet invalidated the whole buffer; MTU-sized buffers plus
# chained RX more than doubled RX throughput). The per-byte invalidate is the point of the
# preset: ~1 cycle per byte (a 64-byte line by MVA takes ~40-60 cycles on a Cortex-A9
# through the outer L2 cache controller: estimate), so a 9 KB buffer costs ~9000 cycles
# per packet against ~1500 for a 1.5 KB one -- which reproduces "more than doubled".
# Other costs are engineering estimates for a kernel NIC driver on a 1 GHz Cortex-A.
ARMV7_NONCOHERENT = CpuCosts(
    irq_entry_exit=1500.0,
    mmio_read=150.0,  # PCIe read round trip (~150 ns): estimate
    mmio_write=20.0,  # posted
    tx_per_packet=2000.0,
    tx_per_descriptor=80.0,
    tx_per_fragment_map=300.0,
    tx_clean_per_descriptor=150.0,
    rx_per_packet=2000.0,
    rx_per_descriptor=300.0,
    per_byte_cache=1.0,
    per_byte_copy=0.0,
    napi_poll_overhead=400.0,
    timer_tick_overhead=500.0,
    cpu_mhz=1000.0,
)

CPU_PRESETS: dict[str, tuple[float, CpuCosts]] = {
    # No CPU cost at all: only the real bus time of MMIO accesses. The clock only scales
    # the (zero) cycle counts, so any value works.
    "ideal": (1000.0, CpuCosts(cpu_mhz=1000.0)),
    "microblaze-66": (66.0, MICROBLAZE_66),
    "mips-router": (500.0, MIPS_ROUTER),
    "armv7-noncoherent": (1000.0, ARMV7_NONCOHERENT),
}

#: Driver settings that belong with a preset (the field report's driver, not its CPU).
PRESET_DRIVER_SETTINGS: dict[str, dict] = {"mips-router": MIPS_ROUTER_DRIVER}


def cpu_preset(name: str) -> tuple[float, CpuCosts]:
    """``(mhz, CpuCosts)`` of preset ``name``; ValueError naming the choices otherwise."""
    try:
        return CPU_PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown CPU preset {name!r}; choose one of: {', '.join(CPU_PRESETS)}"
        ) from None
