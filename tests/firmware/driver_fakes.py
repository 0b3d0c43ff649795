"""The driver tests' stand-ins for the world: a platform that records every register access and
a scripted device that plays the DMA's side of the rings (no simulator runs)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import defaultdict

from macdma.firmware import regs
from macdma.firmware.cache import COHERENT, CacheHierarchy, CacheLevel
from macdma.firmware.costs import CpuCosts
from macdma.firmware.descriptor import DESCRIPTOR_BYTES, Descriptor
from macdma.firmware.driver import (
    DriverConfig,
    MacDmaDriver,
)


class FakePlatform:
    """A Platform: bytearray memory, dict registers, per-name cycle sums, virtual time."""

    def __init__(self, mem_bytes: int = 1 << 22) -> None:
        self.mem = bytearray(mem_bytes)
        self._brk = 0x1000
        self.regs: dict[int, int] = defaultdict(int)
        self.mmio_log: list[tuple[str, int, int]] = []
        self.mem_writes: list[tuple[int, int]] = []  # (address, length), driver stores only
        self.cached_writes: list[tuple[int, int]] = []  # (address, length): frames to send
        self.cycles: dict[str, float] = defaultdict(float)
        self.charge_calls: dict[str, int] = defaultdict(int)
        # memory_traffic per name: [bytes read, bytes written]
        self.traffic: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.time_ns = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future]] = []
        self._seq = 0
        self._irq_waiters: list[asyncio.Future] = []
        self.device: FakeDevice | None = None

    # registers
    async def mmio_read(self, offset: int) -> int:
        await asyncio.sleep(0)  # a bus access lets other contexts run
        value = self.regs[offset]
        self.mmio_log.append(("r", offset, value))
        return value

    async def mmio_write(self, offset: int, value: int) -> None:
        await asyncio.sleep(0)
        self.mmio_log.append(("w", offset, value))
        if offset in (regs.IRQ_STATUS, regs.ID_CFG_ERROR):
            self.regs[offset] &= ~value  # W1C
        elif offset in (regs.TX_CTRL, regs.RX_CTRL):
            if value & regs.TX_CTRL_RESET_MASK and self.device is not None:
                self.device.reset("tx" if offset == regs.TX_CTRL else "rx")
            self.regs[offset] = value & regs.TX_CTRL_RUN_MASK
        else:
            self.regs[offset] = value
        self._irq_changed()

    def writes_to(self, offset: int) -> list[int]:
        return [v for kind, off, v in self.mmio_log if kind == "w" and off == offset]

    # memory
    def dma_alloc(self, size: int, align: int = 16) -> int:
        address = -(-self._brk // align) * align
        self._brk = address + size
        assert self._brk <= len(self.mem), "fake memory exhausted"
        return address

    def mem_read(self, address: int, length: int) -> bytes:
        return bytes(self.mem[address : address + length])

    def mem_write(self, address: int, data: bytes) -> None:
        self.mem_writes.append((address, len(data)))
        self.mem[address : address + len(data)] = data

    def mem_write_cached(self, address: int, data: bytes) -> None:
        self.cached_writes.append((address, len(data)))
        self.mem[address : address + len(data)] = data

    # time and cost
    async def charge(self, cycles: float, what: str) -> None:
        self.cycles[what] += cycles
        self.charge_calls[what] += 1

    async def memory_traffic(self, what: str, read_bytes: int, write_bytes: int) -> None:
        self.traffic[what][0] += read_bytes
        self.traffic[what][1] += write_bytes

    def now_ns(self) -> float:
        return self.time_ns

    async def sleep_ns(self, ns: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self._seq += 1
        self._sleepers.append((self.time_ns + ns, self._seq, future))
        await future

    async def advance(self, ns: float) -> None:
        """Move virtual time forward, waking sleepers in order."""
        target = self.time_ns + ns
        await settle()
        while True:
            due = sorted(s for s in self._sleepers if s[0] <= target)
            if not due:
                break
            entry = due[0]
            self._sleepers.remove(entry)
            self.time_ns = entry[0]
            entry[2].set_result(None)
            await settle()
        self.time_ns = target
        await settle()

    # interrupts
    def irq_line(self) -> bool:
        return bool(self.regs[regs.IRQ_STATUS] & self.regs[regs.IRQ_ENABLE])

    def raise_cause(self, mask: int) -> None:
        self.regs[regs.IRQ_STATUS] |= mask
        self._irq_changed()

    def _irq_changed(self) -> None:
        if self.irq_line():
            for future in self._irq_waiters:
                if not future.done():
                    future.set_result(None)
            self._irq_waiters.clear()

    async def wait_irq(self) -> None:
        while not self.irq_line():
            future = asyncio.get_running_loop().create_future()
            self._irq_waiters.append(future)
            await future


class FakeDevice:
    """The DMA engine, scripted: completes descriptors when the test says so."""

    def __init__(self, platform: FakePlatform) -> None:
        self.p = platform
        platform.device = self
        self.tx_head = 0
        self.rx_head = 0
        self.sent: list[bytes] = []
        self._tx_frame = bytearray()

    def reset(self, channel: str) -> None:
        if channel == "tx":
            self.tx_head = 0
            self.p.regs[regs.TX_STATUS] = 0
        else:
            self.rx_head = 0
            self.p.regs[regs.RX_STATUS] = 0

    def _desc(self, channel: str, index: int) -> tuple[int, Descriptor]:
        base = self.p.regs[regs.TX_RING_BASE if channel == "tx" else regs.RX_RING_BASE]
        address = base + index * DESCRIPTOR_BYTES
        return address, Descriptor.unpack(self.p.mem[address : address + DESCRIPTOR_BYTES])

    def _write_back(self, address: int, desc: Descriptor) -> None:
        # Words 1..3 in address order, own (word 3) last, as the real DMA does.
        self.p.mem[address + 4 : address + 16] = desc.pack()[4:]

    def complete_tx(self, count: int | None = None, irq: bool = True) -> int:
        """Write back up to ``count`` owned TX descriptors between HEAD and TAIL."""
        size = self.p.regs[regs.TX_RING_SIZE]
        done = 0
        while self.tx_head != self.p.regs[regs.TX_TAIL] and (count is None or done < count):
            address, desc = self._desc("tx", self.tx_head)
            if not desc.own:
                break
            self._tx_frame += self.p.mem[desc.addr : desc.addr + desc.length]
            if desc.eop:
                self.sent.append(bytes(self._tx_frame))
                self._tx_frame = bytearray()
            self._write_back(address, dataclasses.replace(desc, done_length=desc.length, own=False))
            self.tx_head = (self.tx_head + 1) % size
            done += 1
        if done and irq:
            self.p.raise_cause(regs.IRQ_STATUS_TX_DONE_MASK)
        return done

    def receive(
        self,
        frame: bytes,
        *,
        rx_error: int = 0,
        truncated: bool = False,
        error_bit: bool | None = None,
        complete: bool = True,
        irq: bool = True,
    ) -> int:
        """Write ``frame`` into owned RX buffers from HEAD; returns buffers used.
        ``complete=False`` stops before the EOP (a frame cut by a halt)."""
        size = self.p.regs[regs.RX_RING_SIZE]
        address, desc = self._desc("rx", self.rx_head)
        if not desc.own:
            self.p.regs[regs.RX_DROPS] += 1
            return 0
        offset, used = 0, 0
        while True:
            address, desc = self._desc("rx", self.rx_head)
            assert desc.own, "test frame larger than the posted buffers"
            chunk = frame[offset : offset + desc.length]
            self.p.mem[desc.addr : desc.addr + len(chunk)] = chunk
            offset += len(chunk)
            eop = offset >= len(frame)
            if eop and not complete:
                return used
            bad = bool(rx_error) or truncated if error_bit is None else error_bit
            wb = dataclasses.replace(
                desc,
                done_length=len(chunk),
                sop=used == 0,
                eop=eop,
                frame_length=len(frame) if eop else 0,
                rx_error=rx_error if eop else 0,
                rx_truncated=truncated and eop,
                error=bad and eop,
                own=False,
            )
            self._write_back(address, wb)
            self.rx_head = (self.rx_head + 1) % size
            used += 1
            if eop:
                break
        if irq:
            self.p.raise_cause(regs.IRQ_STATUS_RX_DONE_MASK)
        return used

    def halt(self, channel: str, code: regs.DmaErrorCode) -> None:
        status_reg = regs.TX_STATUS if channel == "tx" else regs.RX_STATUS
        self.p.regs[status_reg] = regs.TX_STATUS_HALTED_MASK | (
            int(code) << regs.TX_STATUS_ERROR_CODE_SHIFT
        )
        self.p.raise_cause(
            regs.IRQ_STATUS_TX_ERROR_MASK if channel == "tx" else regs.IRQ_STATUS_RX_ERROR_MASK
        )


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def run(coro, timeout_s: float = 10.0):
    """Run a test body; a driver stuck in a loop fails instead of hanging."""
    return asyncio.run(asyncio.wait_for(coro, timeout_s))


async def make(
    costs: CpuCosts | None = None, caches: CacheHierarchy = COHERENT, **config
) -> tuple[MacDmaDriver, FakePlatform, FakeDevice, list]:
    platform = FakePlatform()
    device = FakeDevice(platform)
    received: list = []
    cfg = DriverConfig(**config)
    driver = MacDmaDriver(
        platform,
        cfg,
        lambda f, ok, meta: received.append((f, ok, meta)),
        costs or CpuCosts(),
        caches=caches,
    )
    await driver.open()
    return driver, platform, device, received


def ring_desc(platform: FakePlatform, base_reg: int, index: int) -> Descriptor:
    address = platform.regs[base_reg] + index * DESCRIPTOR_BYTES
    return Descriptor.unpack(platform.mem[address : address + DESCRIPTOR_BYTES])


DONE = regs.IRQ_STATUS_TX_DONE_MASK | regs.IRQ_STATUS_RX_DONE_MASK


ERRORS = (
    regs.IRQ_STATUS_TX_ERROR_MASK | regs.IRQ_STATUS_RX_ERROR_MASK | regs.IRQ_STATUS_CFG_ERROR_MASK
)


def assert_own_written_last(platform: FakePlatform, desc_address: int) -> None:
    """The descriptor's stores: words 0..2 first, then word 3 alone, last."""
    stores = [
        (a, n)
        for a, n in platform.mem_writes
        if desc_address <= a < desc_address + DESCRIPTOR_BYTES
    ]
    assert stores[-2:] == [(desc_address, 12), (desc_address + 12, 4)]


class TimedPlatform(FakePlatform):
    """A FakePlatform on which a charge takes time: one cycle = one nanosecond."""

    async def charge(self, cycles: float, what: str) -> None:
        await super().charge(cycles, what)
        await self.sleep_ns(cycles)


async def make_timed(costs: CpuCosts, *, platform: TimedPlatform | None = None, **config):
    platform = TimedPlatform() if platform is None else platform
    device = FakeDevice(platform)
    driver = MacDmaDriver(platform, DriverConfig(**config), None, costs)
    task = asyncio.ensure_future(driver.open())
    while not task.done():
        await platform.advance(1000)
    return driver, platform, device


#: A non-coherent CPU with 32-byte lines and two levels whose costs tell the ops apart.
TWO_LEVELS = CacheHierarchy(
    line_bytes=32,
    levels=(
        CacheLevel("L1", 32 * 1024, clean=2.0, invalidate=3.0, clean_invalidate=5.0),
        CacheLevel("L2", 1 << 20, clean=20.0, invalidate=30.0, clean_invalidate=50.0),
    ),
    coherent_dma=False,
)
