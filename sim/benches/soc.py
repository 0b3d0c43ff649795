"""cocotb bench around ``macdma_soc``: system clock, AXI4-Lite register access, host
memory (cocotbext-axi AxiRam) with burst latency, error windows and a burst monitor, and
the GMII PHY models.

The bench plays the host CPU only as far as the tests need: it writes descriptors and
buffers into host memory and rings doorbells through the registers. The driver model
(firmware/) does the same job the way a real driver does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from cocotb.triggers import ClockCycles, Timer
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from macdma.firmware import regs
from macdma.firmware.descriptor import DESCRIPTOR_BYTES, Descriptor

from .bursts import AddressClass, BurstRecord, RecordMeter
from .gmii import GMII_1000, GmiiPhy, LinkMode, start_clock

PAGE_BYTES = 4096


class BusErrorWindow(Exception):
    """Raised inside the memory model so it answers SLVERR."""


class HostMemory(AxiRam):
    """AxiRam that records every burst, can delay each burst by ``latency_cycles`` before
    its first beat, and answers SLVERR for addresses inside ``error_windows``."""

    def __init__(self, bus, clock, reset, size: int):
        super().__init__(bus, clock, reset, size=size)
        self.clock = clock
        self.latency_cycles = 0
        self.bursts: list[BurstRecord] = []
        self.error_windows: list[tuple[int, int, str]] = []  # (start, end, "r"/"w"/"rw")
        for channel, write in ((self.read_if.ar_channel, False), (self.write_if.aw_channel, True)):
            channel.recv = self._recorded(channel.recv, write)
        for interface in (self.read_if, self.write_if):
            interface.log.setLevel(logging.WARNING)
        self.read_if._read = self._guarded_read
        self.write_if._write = self._guarded_write

    def _recorded(self, recv, write: bool):
        async def recv_and_record():
            beat = await recv()
            prefix = "aw" if write else "ar"
            self.bursts.append(
                BurstRecord(
                    write,
                    int(getattr(beat, f"{prefix}addr")),
                    int(getattr(beat, f"{prefix}len")) + 1,
                    int(getattr(beat, f"{prefix}size")),
                )
            )
            if self.latency_cycles:
                await ClockCycles(self.clock, self.latency_cycles)
            return beat

        return recv_and_record

    def count_from_here(self, classes: tuple[AddressClass, ...] = ()) -> RecordMeter:
        """A meter of the traffic from now on (the bursts recorded from here), counting
        apart those whose address lies in each of ``classes`` (``(start, end)``)."""
        return RecordMeter(self.bursts, classes)

    def _check_window(self, address: int, length: int, kind: str):
        for start, end, kinds in self.error_windows:
            if kind in kinds and address < end and start < address + length:
                raise BusErrorWindow(f"{kind} 0x{address:x}")

    async def _guarded_read(self, address, length):
        self._check_window(address, length, "r")
        return self.read(address, length)

    async def _guarded_write(self, address, data):
        self._check_window(address, len(data), "w")
        self.write(address, data)


@dataclass
class Ring:
    """A descriptor ring in host memory, as the host sees it."""

    bench: SocBench
    channel: str  # "TX" or "RX"
    base: int
    size: int
    tail: int = 0
    head: int = 0  # next descriptor the host expects the DMA to complete

    def address(self, index: int) -> int:
        return self.base + DESCRIPTOR_BYTES * (index % self.size)

    def write(self, index: int, descriptor: Descriptor):
        # Words 0..2 first and word 3 (own) last, as a driver must.
        image = descriptor.pack()
        self.bench.memory.write(self.address(index), image[:12])
        self.bench.memory.write(self.address(index) + 12, image[12:])

    def read(self, index: int) -> Descriptor:
        return Descriptor.unpack(self.bench.memory.read(self.address(index), DESCRIPTOR_BYTES))

    def room(self) -> int:
        return self.size - 1 - ((self.tail - self.head) % self.size)

    def post(self, descriptor: Descriptor) -> int:
        """Write ``descriptor`` at the tail and advance the tail (no doorbell yet)."""
        if self.room() < 1:
            raise RuntimeError(f"{self.channel} ring full")
        index = self.tail
        self.write(index, descriptor)
        self.tail = (self.tail + 1) % self.size
        return index

    async def doorbell(self):
        await self.bench.write_reg(getattr(regs, f"{self.channel}_TAIL"), self.tail)

    async def reap(self, timeout_us: float = 200.0) -> Descriptor:
        """Wait until the DMA has written back the descriptor at ``head``; return it."""
        waited = 0.0
        while self.read(self.head).own:
            await Timer(200, "ns")
            waited += 0.2
            if waited > timeout_us:
                raise TimeoutError(f"{self.channel} descriptor {self.head} never written back")
        descriptor = self.read(self.head)
        self.head = (self.head + 1) % self.size
        return descriptor


#: Host memory models a SocBench offers: "python" (cocotbext-axi's AxiRam on the
#: ``m_axi_*`` ports of ``macdma_soc``) or "hdl" (the RAM inside ``macdma_soc_hostmem``).
MEMORY_MODELS = ("python", "hdl")


def _host_memory(model: str, dut, size: int):
    if model == "python":
        return HostMemory(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size)
    if model == "hdl":
        # Imported here for start-up time: the HDL memory reads its RAM's constants from
        # hdl/bus/axi4_ram.py, which loads Amaranth (about a second), and only the benches
        # on macdma_soc_hostmem need it.
        from .hdl_memory import HdlHostMemory

        return HdlHostMemory(dut, size)
    raise ValueError(f"unknown host memory model {model!r}; choose one of {MEMORY_MODELS}")


def _gpi_log_level_in_c() -> None:
    """Tell cocotb's C side the GPI logger's level (the one it has already, so no message
    appears or goes): cocotb passes it down only when the level is set, and until then
    every GPI message, the debug ones of each handle the benches make included, is a
    call into Python that drops it (five per memory word's first touch; measured in
    docs/performance.md)."""
    gpi = logging.getLogger("gpi")
    gpi.setLevel(gpi.getEffectiveLevel())


def _phy(wire: str, dut, mode: LinkMode, ifg: int):
    if wire == "cocotbext":
        return GmiiPhy(dut, mode, ifg)
    if wire == "frames":
        from .frame_wire import FramePhy

        return FramePhy(dut, mode, ifg)
    raise ValueError(f"unknown wire {wire!r}; choose frames or cocotbext")


class SocBench:
    """Everything around one ``macdma_soc`` (or ``macdma_soc_hostmem`` with
    ``memory="hdl"``: see :data:`MEMORY_MODELS`; with ``wire="frames"`` the same top with
    the frame wire, sim/benches/frame_wire.py, instead of cocotbext-eth's GMII models)."""

    def __init__(
        self,
        dut,
        mode: LinkMode = GMII_1000,
        *,
        sys_clk_ns: float = 10.0,
        ifg: int = 12,
        memory_bytes: int = 1 << 20,
        memory: str = "python",
        wire: str = "cocotbext",
    ):
        _gpi_log_level_in_c()
        self.dut = dut
        self.mode = mode
        self.sys_clk_ns = sys_clk_ns
        self.ifg = ifg
        self.phy = _phy(wire, dut, mode, ifg)
        self.tx_sink = self.phy.tx_sink
        self.rx_source = self.phy.rx_source
        self.csr = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.csr.write_if.log.setLevel(logging.WARNING)
        self.csr.read_if.log.setLevel(logging.WARNING)
        self.memory = _host_memory(memory, dut, memory_bytes)
        self.memory_bytes = memory_bytes

    async def start(self):
        """Clocks, reset of all three domains, MAC enabled at the bench's link mode."""
        await self.reset()
        await self.configure_mac()

    async def reset(self):
        """Start the clocks and reset all three domains; nothing is configured."""
        dut = self.dut
        dut.mdio_i.value = 1  # the MDIO line's pull-up: no PHY answers on this bench
        start_clock(dut.clk, self.sys_clk_ns)
        self.phy.start()
        if hasattr(self.memory, "start"):  # the HDL memory's burst recorder
            self.memory.start()
        resets = (dut.rst, dut.tx_rst, dut.rx_rst, *self.phy.own_resets)
        for reset in resets:
            reset.value = 1
        await ClockCycles(dut.clk, 8)
        for reset in resets:
            reset.value = 0
        await ClockCycles(dut.clk, 8)

    async def configure_mac(self):
        """IFG, TX/RX enable and MII mode for the bench's link; the µs timers' clock."""
        mac_ctrl = (
            regs.MAC_CTRL_TX_ENABLE_MASK
            | regs.MAC_CTRL_RX_ENABLE_MASK
            | (regs.MAC_CTRL_MII_SELECT_MASK if self.mode.mii else 0)
        )
        await self.write_reg(regs.MAC_IFG, self.ifg)
        await self.write_reg(regs.MAC_CTRL, mac_ctrl)
        await self.write_reg(regs.IRQ_SYS_CLK_MHZ, round(1000 / self.sys_clk_ns))

    async def write_reg(self, offset: int, value: int):
        await self.csr.write_dword(offset, value)

    async def read_reg(self, offset: int) -> int:
        return await self.csr.read_dword(offset)

    async def read_regs(self, *names: str) -> dict[str, int]:
        return {name: await self.read_reg(getattr(regs, name)) for name in names}

    async def open_ring(
        self, channel: str, base: int, size: int, *, burst_beats: int = 16, prefetch: int = 4
    ) -> Ring:
        """Program a channel's ring registers and set it running; the ring starts empty
        (every descriptor without own)."""
        ring = Ring(self, channel, base, size)
        for index in range(size):
            ring.write(index, Descriptor())
        for register, value in (
            ("RING_BASE", base),
            ("RING_SIZE", size),
            ("BURST_BEATS", burst_beats),
            ("PREFETCH", prefetch),
            ("CTRL", getattr(regs, f"{channel}_CTRL_RUN_MASK")),
        ):
            await self.write_reg(getattr(regs, f"{channel}_{register}"), value)
        return ring

    def snapshot(self) -> bytes:
        """All of host memory, for a memory-guard comparison later."""
        return bytes(self.memory.read(0, self.memory_bytes))

    def changed_ranges(self, before: bytes) -> list[tuple[int, int]]:
        """Address ranges [start, end) whose bytes differ from ``before``."""
        after = self.snapshot()
        ranges, start = [], None
        for address in range(self.memory_bytes):
            differs = before[address] != after[address]
            if differs and start is None:
                start = address
            elif not differs and start is not None:
                ranges.append((start, address))
                start = None
        if start is not None:
            ranges.append((start, self.memory_bytes))
        return ranges

    def check_bursts(self, cap_beats: int):
        """Every burst seen so far respects the beat cap and stays inside a 4 KiB page."""
        lanes = len(self.dut.m_axi_wdata) // 8
        for burst in self.memory.bursts:
            assert 1 <= burst.beats <= cap_beats, f"burst of {burst.beats} beats > {cap_beats}"
            first_page = burst.addr // PAGE_BYTES
            last_byte = (burst.addr // lanes) * lanes + burst.beats * lanes - 1
            assert last_byte // PAGE_BYTES == first_page, f"burst crosses 4 KiB: {burst}"
            assert burst.size == lanes.bit_length() - 1, f"narrow burst: {burst}"
