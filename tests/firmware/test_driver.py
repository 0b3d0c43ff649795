"""The driver model against a scripted fake device: rings, xmit, clean, RX poll, IRQ/NAPI,
error recovery and cost accounting. Pure Python and fast: no simulator.

The fake platform keeps memory in a bytearray, registers in a dict and sums charged cycles
per cost name; :class:`FakeDevice` plays the DMA engine on request (clears own, fills the
write-back fields, raises IRQ causes). The test drives the driver with asyncio; the driver
itself never imports it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections import defaultdict

import pytest

from macdma.firmware import regs
from macdma.firmware.cache import COHERENT, CacheHierarchy, CacheLevel
from macdma.firmware.config import GRO_MAX_SEGMENTS
from macdma.firmware.costs import CpuCosts
from macdma.firmware.descriptor import DESCRIPTOR_BYTES, Descriptor, RxErrorCause
from macdma.firmware.dim import DIM_RX_PROFILES
from macdma.firmware.driver import (
    MDC_MAX_HZ,
    MDIO_POLL_LIMIT,
    MDIO_POLL_NS,
    WAKE_POLL_NS,
    DriverConfig,
    IrqStrategy,
    MacDmaDriver,
    MdioTimeoutError,
    mdc_clk_div,
)
from macdma.hdl.regmap import REGISTER_MAP

DONE = regs.IRQ_STATUS_TX_DONE_MASK | regs.IRQ_STATUS_RX_DONE_MASK
ERRORS = (
    regs.IRQ_STATUS_TX_ERROR_MASK | regs.IRQ_STATUS_RX_ERROR_MASK | regs.IRQ_STATUS_CFG_ERROR_MASK
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


def assert_own_written_last(platform: FakePlatform, desc_address: int) -> None:
    """The descriptor's stores: words 0..2 first, then word 3 alone, last."""
    stores = [
        (a, n)
        for a, n in platform.mem_writes
        if desc_address <= a < desc_address + DESCRIPTOR_BYTES
    ]
    assert stores[-2:] == [(desc_address, 12), (desc_address + 12, 4)]


# -- open ----------------------------------------------------------------------------------


def test_open_programs_registers_from_config_and_posts_rx_buffers():
    async def body():
        driver, p, _, _ = await make(
            tx_ring=32,
            rx_ring=8,
            rx_buf=256,
            burst_beats=64,
            prefetch=5,
            sys_clk_mhz=125,
            irq_min_interval_us=125,
            dma_poll_us=7,
            strategy=IrqStrategy.parse("coalesce:frames=8,us=50"),
        )
        r = p.regs
        assert r[regs.TX_RING_SIZE] == 32 and r[regs.RX_RING_SIZE] == 8
        assert r[regs.TX_RING_BASE] % 16 == 0 and r[regs.RX_RING_BASE] % 16 == 0
        assert r[regs.TX_BURST_BEATS] == r[regs.RX_BURST_BEATS] == 64
        assert r[regs.TX_PREFETCH] == r[regs.RX_PREFETCH] == 5
        assert r[regs.TX_POLL_US] == r[regs.RX_POLL_US] == 7
        mode = int(regs.IrqMode.COALESCE)
        assert r[regs.IRQ_MODE] == mode | mode << regs.IRQ_MODE_RX_MODE_SHIFT
        assert r[regs.IRQ_TX_COALESCE] == r[regs.IRQ_RX_COALESCE] == 8 | 50 << 16
        assert r[regs.IRQ_SYS_CLK_MHZ] == 125
        assert r[regs.IRQ_MIN_INTERVAL] == 125
        assert r[regs.MAC_CTRL] == regs.MAC_CTRL_TX_ENABLE_MASK | regs.MAC_CTRL_RX_ENABLE_MASK
        assert r[regs.IRQ_ENABLE] == DONE | ERRORS
        assert r[regs.TX_CTRL] == r[regs.RX_CTRL] == regs.TX_CTRL_RUN_MASK
        # Both channels were reset first, run set last (after the RX doorbell).
        writes = [(off, v) for kind, off, v in p.mmio_log if kind == "w"]
        assert writes[0] == (regs.TX_CTRL, regs.TX_CTRL_RESET_MASK)
        assert writes[1] == (regs.RX_CTRL, regs.RX_CTRL_RESET_MASK)
        assert writes.index((regs.RX_TAIL, 7)) < writes.index((regs.RX_CTRL, 1))
        assert writes[-2:] == [(regs.TX_CTRL, 1), (regs.RX_CTRL, 1)]
        # rx_ring - 1 buffers posted with own, word 3 stored after words 0..2.
        assert r[regs.RX_TAIL] == 7
        addresses = set()
        for i in range(7):
            d = ring_desc(p, regs.RX_RING_BASE, i)
            assert d.own and d.length == 256 and not d.ioc
            addresses.add(d.addr)
            assert_own_written_last(p, r[regs.RX_RING_BASE] + 16 * i)
        assert len(addresses) == 7
        assert not ring_desc(p, regs.RX_RING_BASE, 7).own
        assert driver.stats.mmio_writes == len(writes)
        # Each channel's STATUS read once after the resets (the reset is over: 0), then
        # TX_FRAMES (what a TX recovery compares with), before anything else is programmed.
        assert driver.stats.mmio_reads == 3
        log = [(kind, off) for kind, off, _ in p.mmio_log]
        assert log[2:5] == [("r", regs.TX_STATUS), ("r", regs.RX_STATUS), ("r", regs.TX_FRAMES)]

    run(body())


@pytest.mark.parametrize(
    "spec, mode",
    [
        ("per-desc", regs.IrqMode.PER_DESC),
        ("eop", regs.IrqMode.EOP),
        ("coalesce", regs.IrqMode.COALESCE),
        ("polling", regs.IrqMode.NONE),
        ("napi", regs.IrqMode.EOP),
        ("napi:frames=4", regs.IrqMode.COALESCE),
        ("napi:us=20", regs.IrqMode.COALESCE),
    ],
)
def test_irq_mode_per_strategy(spec, mode):
    async def body():
        _, p, _, _ = await make(strategy=IrqStrategy.parse(spec), tx_ring=32, rx_ring=4)
        assert p.regs[regs.IRQ_MODE] == int(mode) | int(mode) << regs.IRQ_MODE_RX_MODE_SHIFT

    run(body())


@pytest.mark.parametrize(
    ("spec", "rx_mode", "rx_coalesce"),
    [
        ("napi", regs.IrqMode.EOP, 1),
        ("eop", regs.IrqMode.EOP, 1),
        ("per-desc", regs.IrqMode.PER_DESC, 1),
        ("coalesce:frames=8,us=20", regs.IrqMode.COALESCE, 8 | 20 << 16),
        ("dim", regs.IrqMode.COALESCE, None),  # RX: DIM's starting profile
    ],
)
def test_tx_coalescing_programs_the_tx_channel_apart_from_rx(spec, rx_mode, rx_coalesce):
    async def body():
        strategy = IrqStrategy.parse(spec, tx_coalesce_frames=24, tx_coalesce_us=50)
        driver, p, _, _ = await make(strategy=strategy, tx_ring=32, rx_ring=4)
        tx_mode = int(regs.IrqMode.COALESCE)
        assert p.regs[regs.IRQ_MODE] == tx_mode | int(rx_mode) << regs.IRQ_MODE_RX_MODE_SHIFT
        assert p.regs[regs.IRQ_TX_COALESCE] == 24 | 50 << 16
        expected = rx_coalesce
        if expected is None:
            frames, us = driver.dim.profile
            expected = frames | us << 16
        assert p.regs[regs.IRQ_RX_COALESCE] == expected

    run(body())


def test_tx_coalescing_unset_member_takes_the_shared_setting():
    async def body():
        strategy = IrqStrategy.parse("napi:frames=4,tx_us=30")
        _, p, _, _ = await make(strategy=strategy, tx_ring=32, rx_ring=4)
        coalesce = int(regs.IrqMode.COALESCE)
        assert p.regs[regs.IRQ_MODE] == coalesce | coalesce << regs.IRQ_MODE_RX_MODE_SHIFT
        assert p.regs[regs.IRQ_TX_COALESCE] == 4 | 30 << 16
        assert p.regs[regs.IRQ_RX_COALESCE] == 4

    run(body())


@pytest.mark.parametrize("timer, restart", [("first", 0), ("last", 1)])
def test_coalesce_timer_sets_timer_restart_in_both_directions(timer, restart):
    async def body():
        strategy = IrqStrategy("dim", tx_coalesce_frames=24, tx_coalesce_us=50,
                               coalesce_timer=timer)  # fmt: skip
        driver, p, _, _ = await make(strategy=strategy, tx_ring=32, rx_ring=4)
        tx_bit = restart << regs.IRQ_TX_COALESCE_TIMER_RESTART_SHIFT
        rx_bit = restart << regs.IRQ_RX_COALESCE_TIMER_RESTART_SHIFT
        assert p.regs[regs.IRQ_TX_COALESCE] == 24 | tx_bit | 50 << 16
        frames, us = driver.dim.profile
        assert p.regs[regs.IRQ_RX_COALESCE] == frames | rx_bit | us << 16

    run(body())


def test_a_bad_coalesce_timer_is_named():
    with pytest.raises(ValueError, match="coalesce_timer 'middle'"):
        IrqStrategy("napi", coalesce_timer="middle")


def test_napi_with_tx_coalescing_still_masks_both_causes_and_cleans_tx_in_the_poll():
    async def body():
        strategy = IrqStrategy("napi", tx_coalesce_frames=2, tx_coalesce_us=50)
        driver, p, device, _ = await make(strategy=strategy, tx_ring=64, rx_ring=8)
        for _ in range(2):
            await driver.xmit([bytes(100)])
        device.complete_tx(2)  # the second completion reaches the threshold: TX done
        await driver.isr()
        assert p.regs[regs.IRQ_ENABLE] == ERRORS, "the ISR masks both done causes"
        assert driver.napi_scheduled and driver.stats.tx_packets == 0
        await driver.napi_poll()
        assert driver.stats.tx_packets == 2, "the poll reaps TX"
        assert p.regs[regs.IRQ_ENABLE] == DONE | ERRORS

    run(body())


def test_per_desc_posts_rx_buffers_with_ioc():
    async def body():
        _, p, _, _ = await make(strategy=IrqStrategy("per-desc"), tx_ring=32, rx_ring=4)
        assert all(ring_desc(p, regs.RX_RING_BASE, i).ioc for i in range(3))

    run(body())


# -- xmit ----------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["eop", "per-desc"])
@pytest.mark.parametrize("nfrags", list(range(1, 18)))
def test_xmit_writes_one_descriptor_per_fragment_and_rings_once(nfrags, strategy):
    async def body():
        driver, p, device, _ = await make(strategy=IrqStrategy(strategy), tx_ring=64, rx_ring=4)
        fragments = [bytes([i + 1]) * (10 + 7 * i) for i in range(nfrags)]
        tails_before = len(p.writes_to(regs.TX_TAIL))
        assert await driver.xmit(fragments) is True
        assert p.writes_to(regs.TX_TAIL)[tails_before:] == [nfrags]
        base = p.regs[regs.TX_RING_BASE]
        for i, frag in enumerate(fragments):
            d = ring_desc(p, regs.TX_RING_BASE, i)
            assert d.own and d.length == len(frag)
            assert (d.sop, d.eop) == (i == 0, i == nfrags - 1)
            assert d.ioc == (strategy == "per-desc")
            assert p.mem_read(d.addr, d.length) == frag
            assert_own_written_last(p, base + 16 * i)
        assert not ring_desc(p, regs.TX_RING_BASE, nfrags).own
        assert driver.stats.tx_descriptors == nfrags
        # The device sees exactly the concatenated frame.
        assert device.complete_tx() == nfrags
        assert device.sent == [b"".join(fragments)]

    run(body())


def test_a_descriptor_handed_over_twice_is_refused_and_counted():
    """`own` handed over twice (the soak's driver/tx-own-twice): the ring refuses a post at
    a slot the DMA owns (posted, not reaped), counts it, and leaves the slot alone, so the
    frame goes out once; once reaped, the slot is the driver's again."""

    async def body():
        driver, p, device, _ = await make(tx_ring=8, rx_ring=4)
        assert await driver.xmit([b"\x11" * 60]) is True
        tx = driver.tx
        posted = ring_desc(p, regs.TX_RING_BASE, 0)
        writes = len(p.mem_writes)
        tx.post(0, posted)  # the same descriptor again, while the DMA owns it
        assert tx.double_posts == 1 and len(p.mem_writes) == writes
        assert device.complete_tx() == 1 and device.sent == [b"\x11" * 60]
        await driver.tx_clean()
        assert driver.stats.tx_packets == 1 and not tx.handed_over(0)
        tx.post(0, posted)  # reaped: the slot is the driver's, the post goes through
        assert tx.double_posts == 1 and ring_desc(p, regs.TX_RING_BASE, 0).own

    run(body())


def test_an_rx_descriptor_handed_over_twice_is_refused_and_counted():
    """The RX mirror (the soak's driver/rx-own-twice), with the one refusal of the rings'
    base class: a post at a slot the DMA owns (handed over by the last doorbell) or has
    written back unreaped is refused and counted, and the slot left alone, so the frame
    in it is delivered once and its reap does not stall on ``own``; once reaped and
    refilled, the ring posts as usual."""

    async def body():
        driver, p, device, received = await make(tx_ring=8, rx_ring=8, rx_buf=64)
        rx = driver.rx
        last = ring_desc(p, regs.RX_RING_BASE, 6)  # the doorbell handed over slots 0..6
        writes = len(p.mem_writes)
        rx.post(6, last)
        assert rx.double_posts == 1 and len(p.mem_writes) == writes
        first = ring_desc(p, regs.RX_RING_BASE, 0)
        frame = bytes(range(60))
        assert device.receive(frame) == 1  # written back into slot 0, not reaped yet
        rx.post(0, first)
        assert rx.double_posts == 2 and not ring_desc(p, regs.RX_RING_BASE, 0).own
        assert await driver.rx_poll(64) == 1
        assert [(data, ok) for data, ok, _ in received] == [(frame, True)]
        assert not rx.handed_over(0) and ring_desc(p, regs.RX_RING_BASE, 7).own
        assert rx.double_posts == 2 and driver.stats.rx_packets == 1

    run(body())


def test_xmit_rejects_empty_fragments_and_oversized_frames():
    async def body():
        driver, *_ = await make(tx_ring=8, rx_ring=4, max_frags=3)
        with pytest.raises(ValueError, match="Fragment length 0"):
            await driver.xmit([b"a", b""])
        with pytest.raises(ValueError, match="8 fragments"):
            await driver.xmit([b"a"] * 8)

    run(body())


def test_queue_stops_below_max_frags_and_wakes_with_hysteresis():
    async def body():
        driver, p, device, _ = await make(tx_ring=64, rx_ring=4, max_frags=17)
        assert driver.config.wake_threshold == 34
        sent = 0
        while not driver.queue_stopped:
            assert await driver.xmit([b"x" * 60])
            sent += 1
        # Stopped once fewer than 17 of the 63 usable descriptors were free.
        assert sent == 63 - 16
        assert driver.stats.queue_stops == 1
        tails = len(p.writes_to(regs.TX_TAIL))
        assert await driver.xmit([b"y" * 60]) is False  # NETDEV_TX_BUSY
        assert len(p.writes_to(regs.TX_TAIL)) == tails
        assert not ring_desc(p, regs.TX_RING_BASE, sent).own

        waiter = asyncio.ensure_future(driver.wait_for_wake())
        device.complete_tx(10)
        assert await driver.tx_clean() == 10
        assert driver.queue_stopped  # 26 free < 34: hysteresis keeps it stopped
        await p.advance(WAKE_POLL_NS)
        assert not waiter.done()
        device.complete_tx(8)
        assert await driver.tx_clean() == 8
        assert not driver.queue_stopped  # 34 free
        assert driver.stats.queue_wakes == 1
        await p.advance(WAKE_POLL_NS)
        assert waiter.done()
        assert await driver.xmit([b"z" * 60])

    run(body())


def test_tx_clean_honours_budget_and_waits_for_the_whole_frame():
    async def body():
        driver, _, device, _ = await make(tx_ring=64, rx_ring=4)
        for i in range(10):
            assert await driver.xmit([bytes(100 + i)])
        device.complete_tx()
        assert [await driver.tx_clean(4) for _ in range(4)] == [4, 4, 2, 0]
        assert driver.stats.tx_packets == 10
        assert driver.stats.tx_bytes == sum(100 + i for i in range(10))
        # A three-fragment frame is reaped only when its EOP descriptor is written back.
        assert await driver.xmit([b"a" * 10, b"b" * 10, b"c" * 10])
        device.complete_tx(2)
        assert await driver.tx_clean() == 0
        device.complete_tx(1)
        assert await driver.tx_clean() == 1
        assert driver.tx.unused() == 63

    run(body())


# -- RX ------------------------------------------------------------------------------------


def test_rx_poll_reassembles_a_three_buffer_frame_and_refills():
    async def body():
        driver, p, device, received = await make(tx_ring=8, rx_ring=8, rx_buf=64)
        frame = bytes(range(150))
        assert device.receive(frame) == 3
        tails = len(p.writes_to(regs.RX_TAIL))
        assert await driver.rx_poll(64) == 1
        [(data, ok, meta)] = received
        assert data == frame and ok
        assert (meta.buffers, meta.frame_length, meta.rx_error) == (3, 150, RxErrorCause.NONE)
        # Refilled: 3 buffers re-posted behind the old tail, doorbell rung once.
        assert p.writes_to(regs.RX_TAIL)[tails:] == [(7 + 3) % 8]
        for i in (7, 0, 1):
            d = ring_desc(p, regs.RX_RING_BASE, i)
            assert d.own and d.length == 64 and d.done_length == 0 and not d.eop
        assert not ring_desc(p, regs.RX_RING_BASE, 2).own
        assert driver.stats.rx_packets == 1 and driver.stats.rx_bytes == 150

    run(body())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rx_error": int(RxErrorCause.FCS)},
        {"rx_error": int(RxErrorCause.RUNT)},
        {"truncated": True},
        # Each cause alone marks the frame bad, even without the summary error bit.
        {"rx_error": int(RxErrorCause.PHY), "error_bit": False},
        {"truncated": True, "error_bit": False},
    ],
)
def test_rx_poll_delivers_bad_frames_with_ok_false(kwargs):
    async def body():
        driver, _, device, received = await make(tx_ring=8, rx_ring=8, rx_buf=64)
        device.receive(bytes(100), **kwargs)
        device.receive(bytes(80))
        assert await driver.rx_poll(64) == 2
        (bad, bad_ok, meta), (_, good_ok, _) = received
        assert not bad_ok and good_ok
        assert meta.error == kwargs.get("error_bit", True)
        assert meta.rx_error == RxErrorCause(kwargs.get("rx_error", 0))
        assert meta.rx_truncated == kwargs.get("truncated", False)
        assert driver.stats.rx_errors == 1 and driver.stats.rx_packets == 1

    run(body())


def test_rx_poll_budget_counts_frames_and_rings_once():
    async def body():
        driver, p, device, received = await make(tx_ring=8, rx_ring=16, rx_buf=64)
        for n in range(5):
            device.receive(bytes([n]) * 100)  # two buffers each
        tails = len(p.writes_to(regs.RX_TAIL))
        assert await driver.rx_poll(2) == 2
        assert len(p.writes_to(regs.RX_TAIL)) == tails + 1
        assert await driver.rx_poll(2) == 2
        assert await driver.rx_poll(2) == 1
        assert await driver.rx_poll(2) == 0
        assert [f[0][0] for f in received] == [0, 1, 2, 3, 4]

    run(body())


def test_rx_frame_split_across_polls_is_kept_until_its_eop():
    async def body():
        driver, _, device, received = await make(tx_ring=8, rx_ring=8, rx_buf=64)
        frame = bytes(range(150))
        # The DMA has written two buffers of the frame; the EOP is not there yet.
        device.receive(frame, complete=False)
        assert await driver.rx_poll(64) == 0 and received == []
        # It finishes the frame (the device restarts the same frame from buffer 3 here).
        device.rx_head = 2
        address, desc = device._desc("rx", 2)
        device.p.mem[desc.addr : desc.addr + 22] = frame[128:]
        device._write_back(
            address,
            dataclasses.replace(desc, done_length=22, eop=True, frame_length=150, own=False),
        )
        assert await driver.rx_poll(64) == 1
        assert received[0][0] == frame and received[0][1]

    run(body())


def test_close_reads_hardware_drop_counters():
    async def body():
        driver, p, _, _ = await make(tx_ring=8, rx_ring=4)
        p.regs[regs.RX_DROPS] = 3
        p.regs[regs.RX_FIFO_OVERFLOWS] = 2
        await driver.close()
        assert driver.stats.rx_dropped_hw == 5
        assert p.regs[regs.TX_CTRL] == p.regs[regs.RX_CTRL] == 0
        assert p.regs[regs.IRQ_ENABLE] == 0

    run(body())


# -- interrupts, NAPI, polling -------------------------------------------------------------


def test_eop_isr_acks_and_cleans_both_directions():
    async def body():
        driver, p, device, received = await make(strategy=IrqStrategy("eop"), rx_ring=8)
        await driver.xmit([b"t" * 64])
        device.complete_tx()
        device.receive(b"r" * 64)
        await driver.isr()
        assert p.writes_to(regs.IRQ_STATUS)[-1] == DONE
        assert p.regs[regs.IRQ_STATUS] == 0
        assert driver.stats.tx_packets == 1 and len(received) == 1
        assert driver.stats.irqs == 1

    run(body())


def test_napi_isr_masks_and_poll_unmasks_only_below_budget():
    async def body():
        driver, p, device, received = await make(
            strategy=IrqStrategy("napi", budget=4), rx_ring=16, rx_buf=64
        )
        device.receive(bytes(70))
        device.receive(bytes(70))
        await driver.isr()
        assert p.regs[regs.IRQ_ENABLE] == ERRORS  # done causes masked
        assert driver.napi_scheduled and received == []
        assert await driver.napi_poll() == 2
        assert not driver.napi_scheduled
        assert p.regs[regs.IRQ_ENABLE] == DONE | ERRORS

        for _ in range(6):
            device.receive(bytes(70))
        await driver.isr()
        assert await driver.napi_poll() == 4  # budget used up: stay in polling
        assert driver.napi_scheduled and p.regs[regs.IRQ_ENABLE] == ERRORS
        assert await driver.napi_poll() == 2
        assert not driver.napi_scheduled and p.regs[regs.IRQ_ENABLE] == DONE | ERRORS
        assert len(received) == 8 and driver.stats.polls == 3

    run(body())


def test_napi_run_end_to_end_through_the_interrupt_line():
    async def body():
        costs = CpuCosts(irq_entry_exit=500)
        driver, p, device, received = await make(
            costs, strategy=IrqStrategy("napi", budget=2), rx_ring=16, rx_buf=64
        )
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        await settle()
        for n in range(5):
            device.receive(bytes([n]) * 70)
        await driver.xmit([b"a" * 60, b"b" * 60])
        device.complete_tx()
        await settle()
        assert [f[0][0] for f in received] == [0, 1, 2, 3, 4]
        assert driver.stats.tx_packets == 1
        assert driver.stats.irqs == 1 and p.cycles["irq_entry_exit"] == 500
        assert driver.stats.polls == 3  # 2 + 2 + 1: the third poll completes NAPI
        assert p.regs[regs.IRQ_ENABLE] == DONE | ERRORS and not p.irq_line()
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())


def test_polling_never_enables_done_irqs_and_polls_on_a_timer():
    async def body():
        driver, p, device, received = await make(
            strategy=IrqStrategy.parse("polling:us=5,budget=8"), rx_ring=8, rx_buf=64
        )
        assert all(v & DONE == 0 for v in p.writes_to(regs.IRQ_ENABLE))
        assert p.regs[regs.IRQ_ENABLE] == ERRORS
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        await settle()
        device.receive(bytes(70), irq=False)
        await driver.xmit([b"q" * 60])
        device.complete_tx(irq=False)
        await p.advance(4000)
        assert received == [] and driver.stats.polls == 0
        await p.advance(1000)
        assert len(received) == 1 and driver.stats.tx_packets == 1
        assert driver.stats.polls == 1 and driver.stats.irqs == 0
        assert all(v & DONE == 0 for v in p.writes_to(regs.IRQ_ENABLE))
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())


def test_housekeeping_tick_cleans_tx_with_its_budget():
    async def body():
        driver, p, device, _ = await make(
            strategy=IrqStrategy("polling", poll_us=1_000_000),
            housekeeping_hz=1000,
            tx_clean_budget=2,
            tx_ring=16,
            max_frags=1,
            rx_ring=4,
        )
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        for _ in range(5):
            assert await driver.xmit([b"h" * 60])
        device.complete_tx(irq=False)
        await p.advance(999_000)
        assert driver.stats.tx_packets == 0
        await p.advance(1_000)
        assert driver.stats.tx_packets == 2
        await p.advance(2_000_000)
        assert driver.stats.tx_packets == 5
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())


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


@pytest.mark.parametrize(
    ("work_cycles", "expiries", "polls", "overruns"), [(2000, 9, 9, 0), (7000, 5, 4, 4)]
)
def test_polling_timer_runs_on_absolute_deadlines_and_counts_overruns(
    work_cycles, expiries, polls, overruns
):
    """A 5 us poll timer started at 1 us, whose expiry costs an IRQ entry + its work, over
    48 us: with 2 us of work it expires at 6, 11, ... 46 us (9 times; sleeping 5 us after
    the work would give 7); with 7 us it cannot keep up: it runs at 6, 16, ... 46 us, the
    expiries in between are skipped and counted, and the last poll is still running."""

    async def body():
        costs = CpuCosts(irq_entry_exit=1000, timer_tick_overhead=work_cycles - 1000)
        driver, p, _ = await make_timed(
            costs, strategy=IrqStrategy.parse("polling:us=5,budget=8"), rx_ring=8, rx_buf=64
        )
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        await settle()
        await p.advance(48_000)
        assert driver.stats.timer_irqs == expiries and driver.stats.polls == polls
        assert driver.stats.timer_overruns == overruns
        # a timer tick is an interrupt: its entry is charged every time
        assert p.charge_calls["irq_entry_exit"] == expiries
        assert driver.stats.irqs == 0, "no device interrupt"
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())


# -- errors --------------------------------------------------------------------------------


def test_tx_error_irq_resets_the_channel_and_recovers():
    async def body():
        driver, p, device, _ = await make(
            strategy=IrqStrategy("eop"), tx_ring=16, rx_ring=4, max_frags=10
        )
        for _ in range(3):
            assert await driver.xmit([b"e" * 60, b"f" * 10])
        assert driver.queue_stopped  # 9 free < 10
        device.complete_tx(2, irq=False)
        device.halt("tx", regs.DmaErrorCode.DATA_READ_BUS_ERROR)
        await driver.isr()
        [record] = driver.errors
        assert record.channel == "tx" and record.code == regs.DmaErrorCode.DATA_READ_BUS_ERROR
        ctrl = p.writes_to(regs.TX_CTRL)
        assert ctrl[-2:] == [regs.TX_CTRL_RESET_MASK, regs.TX_CTRL_RUN_MASK]
        assert driver.stats.tx_packets == 1 and driver.stats.tx_dropped == 2
        assert driver.stats.dma_errors == 1
        assert not driver.queue_stopped and driver.stats.queue_wakes == 1
        assert all(not ring_desc(p, regs.TX_RING_BASE, i).own for i in range(16))
        assert p.regs[regs.TX_TAIL] == 0 and driver.tx.next_to_use == 0
        # Traffic resumes from slot 0, where the reset put HEAD.
        assert await driver.xmit([b"g" * 60])
        assert device.complete_tx() == 1 and device.sent[-1] == b"g" * 60
        assert await driver.tx_clean() == 1

    run(body())


def test_rx_error_irq_discards_the_cut_frame_and_reposts_the_ring():
    async def body():
        driver, p, device, received = await make(
            strategy=IrqStrategy("eop"), tx_ring=8, rx_ring=8, rx_buf=64
        )
        device.receive(b"A" * 70, irq=False)  # complete before the halt: delivered
        device.receive(bytes(200), complete=False, irq=False)  # cut by the halt: discarded
        device.halt("rx", regs.DmaErrorCode.DATA_WRITE_BUS_ERROR)
        await driver.isr()
        assert driver.errors[0].channel == "rx"
        assert driver.errors[0].code == regs.DmaErrorCode.DATA_WRITE_BUS_ERROR
        assert [f[0] for f in received] == [b"A" * 70]
        assert driver.stats.rx_dropped == 1
        assert p.writes_to(regs.RX_CTRL)[-2:] == [regs.RX_CTRL_RESET_MASK, 1]
        assert p.regs[regs.RX_TAIL] == 7
        assert all(ring_desc(p, regs.RX_RING_BASE, i).own for i in range(7))
        device.receive(b"B" * 70)
        await driver.isr()
        assert [f[0] for f in received] == [b"A" * 70, b"B" * 70]

    run(body())


def test_device_reset_folds_counters_drops_what_was_queued_and_reopens():
    """reset_device: the counters are folded before the reset (which zeroes them), frames
    the DMA completed are reaped or delivered, the rest dropped and counted, and the
    device is opened again with traffic resuming from slot 0."""

    async def body():
        driver, p, device, received = await make(
            strategy=IrqStrategy("eop"), tx_ring=16, rx_ring=8, rx_buf=64, max_frags=2
        )
        dropped_slots = []
        driver.on_tx_dropped = dropped_slots.append
        for n in range(3):
            assert await driver.xmit([bytes([n]) * 60])
        device.complete_tx(1, irq=False)
        device.receive(b"A" * 70, irq=False)  # written back before the reset: delivered
        device.receive(bytes(200), complete=False, irq=False)  # half-received: dropped
        p.regs[regs.RX_DROPS] = 4
        p.regs[regs.TX_DROPS] = 2
        p.regs[regs.STATS_TX_FRAMES_GOOD] = 7
        seen = {}

        async def assert_reset():
            seen["irq_enable"] = p.regs[regs.IRQ_ENABLE]
            seen["queue_stopped"] = driver.queue_stopped
            for offset in (regs.RX_DROPS, regs.TX_DROPS, regs.STATS_TX_FRAMES_GOOD):
                p.regs[offset] = 0  # the reset zeroes the counters
            device.reset("tx")
            device.reset("rx")

        await driver.reset_device(assert_reset)
        assert seen == {"irq_enable": 0, "queue_stopped": True}
        assert driver.hw_totals["RX_DROPS"] == 4 and driver.hw_totals["TX_DROPS"] == 2
        assert driver.hw_totals["STATS_TX_FRAMES_GOOD"] == 7 and driver.device_resets == 1
        assert driver.stats.tx_packets == 1 and driver.stats.tx_dropped == 2
        assert dropped_slots == [1, 2]
        assert [f[0] for f in received] == [b"A" * 70] and driver.stats.rx_dropped == 1
        assert driver.is_open and not driver.queue_stopped
        assert p.regs[regs.IRQ_ENABLE] == driver.strategy.irq_enable
        p.regs[regs.RX_DROPS] = 1  # counted after the reset: totals add the fold
        await driver.read_hw_stats()
        assert driver.stats.rx_dropped_hw == 5
        assert await driver.xmit([b"g" * 60])
        assert device.complete_tx() == 1 and device.sent[-1] == b"g" * 60

    run(body())


def test_cfg_error_is_recorded_and_acked():
    async def body():
        driver, p, _, _ = await make(strategy=IrqStrategy("eop"), tx_ring=8, rx_ring=4)
        p.regs[regs.ID_CFG_ERROR] = regs.ID_CFG_ERROR_TX_BURST_BEATS_MASK
        p.raise_cause(regs.IRQ_STATUS_CFG_ERROR_MASK)
        await driver.isr()
        assert driver.stats.cfg_errors == 1
        assert driver.errors[0].status == regs.ID_CFG_ERROR_TX_BURST_BEATS_MASK
        assert p.regs[regs.ID_CFG_ERROR] == 0 and not p.irq_line()

    run(body())


# -- PHY management (mii_bus read/write) ---------------------------------------------------


class MdioFakePlatform(FakePlatform):
    """FakePlatform with the MDIO block as docs/registers.md describes it: a write to
    MDIO_CMD starts a frame that reads as busy for ``busy_polls`` MDIO_STATUS reads (None:
    forever) and then acts on ``phy_regs[(phy, reg)]`` (an absent register reads 0xFFFF,
    the pull-up); a command while busy starts nothing and sets cmd_ignored."""

    def __init__(self, busy_polls: int | None = 3) -> None:
        super().__init__()
        self.busy_polls = busy_polls
        self.phy_regs: dict[tuple[int, int], int] = {}
        self.frames: list[tuple[bool, int, int, int]] = []  # (write, phy, reg, data) started
        self.status_reads = 0
        self._frame: tuple[bool, int, int, int] | None = None
        self._remaining: int | None = 0

    def start_frame(self, command: int, busy_polls: int | None) -> None:
        if self._frame is not None:
            self.regs[regs.MDIO_STATUS] |= regs.MDIO_STATUS_CMD_IGNORED_MASK
            return
        self._frame = (
            bool(command & regs.MDIO_CMD_WRITE_MASK),
            (command & regs.MDIO_CMD_PHY_MASK) >> regs.MDIO_CMD_PHY_SHIFT,
            (command & regs.MDIO_CMD_REG_MASK) >> regs.MDIO_CMD_REG_SHIFT,
            command & regs.MDIO_CMD_DATA_MASK,
        )
        self.frames.append(self._frame)
        self._remaining = busy_polls
        self.regs[regs.MDIO_STATUS] |= regs.MDIO_STATUS_BUSY_MASK

    async def mmio_write(self, offset: int, value: int) -> None:
        await super().mmio_write(offset, value)
        if offset == regs.MDIO_CMD:
            self.start_frame(value, self.busy_polls)

    async def mmio_read(self, offset: int) -> int:
        if offset == regs.MDIO_STATUS:
            self.status_reads += 1
            if self._frame is not None:
                if self._remaining == 0:
                    self._finish_frame()
                elif self._remaining is not None:
                    self._remaining -= 1
        return await super().mmio_read(offset)

    def let_frame_finish(self) -> None:
        """The running frame ends at the next MDIO_STATUS read; later ones at once."""
        self.busy_polls = self._remaining = 0

    def _finish_frame(self) -> None:
        write, phy, reg, data = self._frame
        if write:
            self.phy_regs[(phy, reg)] = data
        else:
            data = self.phy_regs.get((phy, reg), 0xFFFF)
        sticky = self.regs[regs.MDIO_STATUS] & regs.MDIO_STATUS_CMD_IGNORED_MASK
        self.regs[regs.MDIO_STATUS] = sticky | (0 if write else data)
        self._frame = None


async def until_done(platform: FakePlatform, coro, step_ns: float = MDIO_POLL_NS):
    """Run ``coro`` while virtual time moves on (its polls sleep between reads)."""
    task = asyncio.ensure_future(coro)
    while not task.done():
        await platform.advance(step_ns)
    return task.result()


def mdio_command(*, write: bool, phy: int, reg: int, data: int = 0) -> int:
    return (
        (int(write) << regs.MDIO_CMD_WRITE_SHIFT)
        | (phy << regs.MDIO_CMD_PHY_SHIFT)
        | (reg << regs.MDIO_CMD_REG_SHIFT)
        | (data << regs.MDIO_CMD_DATA_SHIFT)
    )


def test_mdio_write_and_read_like_a_mii_bus():
    async def body():
        p = MdioFakePlatform(busy_polls=3)
        p.phy_regs[(1, 2)] = 0x0141
        driver = MacDmaDriver(p, DriverConfig(sys_clk_mhz=125))
        await until_done(p, driver.mdio_write(1, 0, 0x1140))
        assert p.phy_regs[(1, 0)] == 0x1140
        assert await until_done(p, driver.mdio_read(1, 2)) == 0x0141
        assert await until_done(p, driver.mdio_read(3, 2)) == 0xFFFF  # no PHY 3
        # MDC divider programmed once, for 2.5 MHz at 125 MHz; then one command per call.
        assert p.writes_to(regs.MDIO_CTRL) == [25]
        assert p.writes_to(regs.MDIO_CMD) == [
            mdio_command(write=True, phy=1, reg=0, data=0x1140),
            mdio_command(write=False, phy=1, reg=2),
            mdio_command(write=False, phy=3, reg=2),
        ]
        # Per call: one idle check, then 3 busy polls (sleeping between them) and the last.
        assert p.status_reads == 3 * (1 + 3 + 1)
        assert p.time_ns >= 3 * 3 * MDIO_POLL_NS
        assert not p.regs[regs.MDIO_STATUS] & regs.MDIO_STATUS_CMD_IGNORED_MASK

    run(body())


def test_mdio_waits_for_idle_before_writing_its_command():
    async def body():
        p = MdioFakePlatform(busy_polls=1)
        p.start_frame(mdio_command(write=True, phy=1, reg=4, data=0x01E1), busy_polls=5)
        driver = MacDmaDriver(p, DriverConfig())
        await until_done(p, driver.mdio_write(1, 9, 0x0200))
        assert not p.regs[regs.MDIO_STATUS] & regs.MDIO_STATUS_CMD_IGNORED_MASK
        assert p.phy_regs == {(1, 4): 0x01E1, (1, 9): 0x0200}
        cmd_at = p.mmio_log.index(
            ("w", regs.MDIO_CMD, mdio_command(write=True, phy=1, reg=9, data=0x0200))
        )
        kind, offset, status = p.mmio_log[cmd_at - 1]
        assert (kind, offset) == ("r", regs.MDIO_STATUS) and not status & regs.MDIO_STATUS_BUSY_MASK

    run(body())


def test_mdio_timeout_is_bounded_charged_and_releases_the_bus():
    async def body():
        costs = CpuCosts(mmio_read=7.0, mmio_write=11.0)
        p = MdioFakePlatform(busy_polls=None)  # the master never finishes
        driver = MacDmaDriver(p, DriverConfig(), costs=costs)
        with pytest.raises(MdioTimeoutError, match="read of PHY 1 register 3.*busy"):
            await until_done(p, driver.mdio_read(1, 3), step_ns=100 * MDIO_POLL_NS)
        assert p.status_reads == 1 + MDIO_POLL_LIMIT
        assert p.cycles["mmio_read"] == 7.0 * driver.stats.mmio_reads == 7.0 * p.status_reads
        assert p.cycles["mmio_write"] == 11.0 * 2  # MDIO_CTRL and MDIO_CMD
        # The frame ends at last: the lock was released, the next call works.
        p.let_frame_finish()
        p.phy_regs[(1, 3)] = 0x0C87
        assert await until_done(p, driver.mdio_read(1, 3)) == 0x0C87

    run(body())


@pytest.mark.parametrize(
    ("args", "bad"), [((32, 0), "phy = 32"), ((0, -1), "reg = -1"), ((0, 0, 0x10000), "65536")]
)
def test_mdio_arguments_are_checked(args, bad):
    async def body():
        driver = MacDmaDriver(MdioFakePlatform(), DriverConfig())
        call = driver.mdio_write(*args) if len(args) == 3 else driver.mdio_read(*args)
        with pytest.raises(ValueError, match=bad):
            await call

    run(body())


def test_mdc_clk_div_is_the_fastest_legal_mdc():
    clk_div = REGISTER_MAP.field("MDIO_CTRL", "clk_div")
    assert [mdc_clk_div(mhz) for mhz in (1, 50, 100, 125, 160, 1000)] == [2, 10, 20, 25, 32, 200]
    for mhz in range(1, 1001):
        div = mdc_clk_div(mhz)
        assert clk_div.accepts(div), (mhz, div)
        assert mhz * 1e6 / (2 * div) <= MDC_MAX_HZ
        assert div == 2 or mhz * 1e6 / (2 * (div - 1)) > MDC_MAX_HZ, "not the fastest"


# -- cost accounting -----------------------------------------------------------------------


def test_costs_are_charged_to_their_named_fields():
    async def body():
        names = CpuCosts.cost_names()
        # A distinct cost per field, so a charge to the wrong name cannot pass.
        costs = CpuCosts(**{name: float(i + 1) for i, name in enumerate(names)})
        driver, p, device, _ = await make(
            costs, strategy=IrqStrategy("eop"), tx_ring=32, rx_ring=8, rx_buf=128
        )
        p.cycles.clear()
        reads, writes = driver.stats.mmio_reads, driver.stats.mmio_writes

        fragments = [b"a" * 100, b"b" * 50, b"c" * 7]
        await driver.xmit(fragments)
        assert p.cycles["tx_per_packet"] == costs.tx_per_packet
        assert p.cycles["tx_per_fragment_map"] == 3 * costs.tx_per_fragment_map
        assert p.cycles["tx_per_descriptor"] == 3 * costs.tx_per_descriptor

        device.complete_tx(irq=False)
        await driver.tx_clean()
        assert p.cycles["tx_clean_per_descriptor"] == 3 * costs.tx_clean_per_descriptor

        device.receive(bytes(300), irq=False)  # three 128-byte buffers
        await driver.rx_poll(8)
        assert p.cycles["rx_per_descriptor"] == 3 * costs.rx_per_descriptor
        assert p.cycles["rx_per_packet"] == costs.rx_per_packet
        assert p.cycles["per_byte_copy"] == 300 * costs.per_byte_copy

        await driver.napi_poll(64)
        assert p.cycles["napi_poll_overhead"] == costs.napi_poll_overhead

        n_reads = driver.stats.mmio_reads - reads
        n_writes = driver.stats.mmio_writes - writes
        assert p.cycles["mmio_read"] == n_reads * costs.mmio_read
        assert p.cycles["mmio_write"] == n_writes * costs.mmio_write
        assert set(p.cycles) <= set(names)

    run(body())


# -- DMA cache maintenance: per line, per level, per pass ---------------------------------

#: A non-coherent CPU with 32-byte lines and two levels whose costs tell the ops apart.
TWO_LEVELS = CacheHierarchy(
    line_bytes=32,
    levels=(
        CacheLevel("L1", 32 * 1024, clean=2.0, invalidate=3.0, clean_invalidate=5.0),
        CacheLevel("L2", 1 << 20, clean=20.0, invalidate=30.0, clean_invalidate=50.0),
    ),
    coherent_dma=False,
)


def test_tx_map_cleans_every_line_of_each_fragment_at_every_level_and_writes_it_back():
    async def body():
        driver, p, device, _ = await make(caches=TWO_LEVELS, tx_ring=32, rx_ring=4)
        p.cycles.clear()
        p.traffic.clear()
        # Each fragment lands at a 64-byte aligned slot buffer: 100 bytes span 4 lines,
        # 50 span 2, 7 one: 7 lines, cleaned at L1 (2) and L2 (20) once (the map).
        await driver.xmit([b"a" * 100, b"b" * 50, b"c" * 7])
        assert p.cycles["cache_clean"] == 7 * (2 + 20)
        assert "cache_invalidate" not in p.cycles
        assert p.traffic["cache_clean"] == [0, 7 * 32]  # the dirty lines written back
        # The fragments were in the cache: the clean's write-back is their only way to
        # memory, never a store of the write path as well (counted once)
        assert sorted(n for _, n in p.cached_writes) == [7, 50, 100]
        assert not {n for _, n in p.mem_writes} & {7, 50, 100}
        device.complete_tx(irq=False)
        await driver.tx_clean()
        assert p.cycles["cache_clean"] == 7 * (2 + 20)  # unmap (to device): no pass

    run(body())


@pytest.mark.parametrize(
    ("rx_sync", "post_dma", "lines_per_frame"),
    [
        ("unmap", True, 8 + 8),  # unmap the whole 256-byte buffer, map its replacement
        ("unmap", False, 8),  # a core that never speculates: the map only
        ("sync", True, 4 + 4),  # 100 bytes (4 lines) for the CPU, then for the device
        ("sync", False, 4),  # for the device only
    ],
)
def test_rx_invalidates_the_bytes_the_driver_really_maintains(rx_sync, post_dma, lines_per_frame):
    """unmap (dma_unmap_single + dma_map_single) pays for the whole posted buffer per frame,
    sync (dma_sync_single_for_cpu/for_device) only for the bytes received; every buffer is
    mapped whole once at open."""

    async def body():
        caches = dataclasses.replace(TWO_LEVELS, post_dma_invalidate=post_dma)
        driver, p, device, received = await make(
            caches=caches, rx_sync=rx_sync, tx_ring=8, rx_ring=8, rx_buf=256
        )
        assert p.cycles["cache_invalidate"] == 7 * 8 * (3 + 30)  # the map at open
        for _ in range(8):  # a lap: the slot left empty at open gets its buffer mapped
            device.receive(bytes(100), irq=False)
            await driver.rx_poll(8)
        p.cycles.clear()
        p.traffic.clear()
        maintained = driver.stats.cache_lines_maintained
        for _ in range(3):
            device.receive(bytes(100), irq=False)
            await driver.rx_poll(8)
        assert len(received) == 8 + 3
        assert p.cycles["cache_invalidate"] == 3 * lines_per_frame * (3 + 30)
        assert "cache_invalidate" not in p.traffic  # an invalidate moves no data
        assert driver.stats.cache_lines_maintained - maintained == 3 * lines_per_frame

    run(body())


def test_a_coherent_dma_maintains_nothing_and_reads_its_ring_cached():
    async def body():
        for caches, maintained in ((COHERENT, False), (TWO_LEVELS, True)):
            driver, p, device, _ = await make(caches=caches, tx_ring=8, rx_ring=8, rx_buf=256)
            await driver.xmit([b"x" * 1000])
            device.complete_tx(irq=False)
            await driver.tx_clean()
            device.receive(bytes(500), irq=False)
            await driver.rx_poll(8)
            charged = {name for name in p.cycles if name.startswith("cache_")}
            assert bool(charged) is maintained
            # The ring is dma_alloc_coherent memory: uncached on a non-coherent DMA, so
            # each descriptor word the driver reads is memory traffic; cached (and
            # snooped) on a coherent one. The descriptors it posts are write-path stores
            # (mem_write) either way, never memory traffic on top.
            reads, writes = p.traffic["descriptor_uncached"]
            assert (reads > 0) is maintained
            assert reads % 4 == 0 and writes == 0

    run(body())


def test_a_cache_hierarchy_refuses_what_no_machine_has():
    with pytest.raises(ValueError, match="power of two"):
        CacheHierarchy(line_bytes=48)
    with pytest.raises(ValueError, match="at least one cache level"):
        CacheHierarchy(coherent_dma=False)
    with pytest.raises(ValueError, match="invalidate = -1"):
        CacheLevel("L1", 1024, clean=1.0, invalidate=-1, clean_invalidate=1.0)
    with pytest.raises(ValueError, match="rx_sync"):
        DriverConfig(rx_sync="dma_sync")
    assert TWO_LEVELS.lines(31, 2) == 2 and TWO_LEVELS.lines(32, 32) == 1
    assert TWO_LEVELS.lines(0, 0) == 0


def test_ideal_cpu_charges_nothing_and_costs_are_validated():
    async def body():
        driver, p, device, _ = await make(tx_ring=8, rx_ring=4)
        await driver.xmit([b"x" * 64])
        device.complete_tx()
        await driver.isr()
        assert sum(p.cycles.values()) == 0

    run(body())
    with pytest.raises(ValueError, match="-1"):
        CpuCosts(mmio_read=-1)


# -- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        ({"tx_ring": 1}, "1"),
        ({"tx_ring": 4097}, "4097"),
        ({"rx_ring": 0}, "0"),
        ({"rx_buf": 63}, "63"),
        ({"rx_buf": 65536}, "65536"),
        ({"burst_beats": 0}, "0"),
        ({"burst_beats": 257}, "257"),
        ({"prefetch": 17}, "17"),
        ({"sys_clk_mhz": 1001}, "1001"),
        ({"irq_min_interval_us": 10001}, "10001"),
        ({"irq_min_interval_us": -1}, "-1"),
        ({"max_frags": 0}, "0"),
        ({"tx_ring": 16, "max_frags": 16}, "16"),
        ({"max_frags": 17, "wake_threshold": 16}, "16"),
        ({"tx_clean_budget": 0}, "0"),
        ({"housekeeping_hz": -5}, "-5"),
        ({"dma_poll_us": 70000}, "70000"),
        ({"tx_ring": 2.5}, "2.5"),
        ({"strategy": "interrupts"}, "'interrupts'"),
    ],
)
def test_invalid_driver_config_names_the_value(kwargs, bad):
    with pytest.raises(ValueError, match=bad.replace(".", r"\.")):
        DriverConfig(**kwargs)


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        ({"name": "nope"}, "'nope'"),
        ({"name": "coalesce", "coalesce_frames": 0}, "0"),
        ({"name": "coalesce", "coalesce_frames": 256}, "256"),
        ({"name": "coalesce", "coalesce_us": 65536}, "65536"),
        ({"name": "polling", "poll_us": 0}, "0"),
        ({"name": "napi", "budget": 0}, "0"),
        ({"name": "napi", "tx_coalesce_frames": 0}, "tx_coalesce_frames = 0"),
        ({"name": "napi", "tx_coalesce_frames": 256}, "tx_coalesce_frames = 256"),
        ({"name": "dim", "tx_coalesce_us": 65536}, "tx_coalesce_us = 65536"),
        ({"name": "eop", "tx_coalesce_us": 2.5}, "tx_coalesce_us = 2.5"),
        ({"name": "polling", "tx_coalesce_frames": 8}, "polling takes no TX interrupts"),
    ],
)
def test_invalid_irq_strategy_names_the_value(kwargs, bad):
    with pytest.raises(ValueError, match=bad):
        IrqStrategy(**kwargs)


def test_irq_strategy_parse():
    assert IrqStrategy.parse("coalesce:frames=8,us=50") == IrqStrategy("coalesce", 8, 50)
    assert IrqStrategy.parse("polling:us=20,budget=16") == IrqStrategy(
        "polling", poll_us=20, budget=16
    )
    assert IrqStrategy.parse("napi", budget=32).budget == 32
    assert DriverConfig(strategy="eop").strategy == IrqStrategy("eop")
    assert IrqStrategy.parse("dim:tx_frames=24,tx_us=50") == IrqStrategy(
        "dim", tx_coalesce_frames=24, tx_coalesce_us=50
    )
    assert not IrqStrategy("napi").tx_moderated
    for text, bad in [("fast", "'fast'"), ("napi:weight=3", "weight"), ("eop:frames=x", "'x'")]:
        with pytest.raises(ValueError, match=bad):
            IrqStrategy.parse(text)
    with pytest.raises(ValueError, match="300"):
        IrqStrategy.parse("coalesce:frames=300")


def test_driver_imports_no_scheduler():
    import ast
    import pathlib

    import macdma.firmware as fw

    for path in pathlib.Path(fw.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in ("asyncio", "cocotb"), (path, name)


# -- RX buffer handling and the NAPI weights ------------------------------------------------


@pytest.mark.parametrize(
    ("rx_buffers", "rx_sync", "per_frame"),
    [
        # unmap + alloc + map, the skb allocated before reception
        ("alloc_map", "unmap", {"rx_skb_alloc": 1, "rx_map_call": 2}),
        # a page fragment instead, the skb built around the filled buffer
        ("build_skb", "unmap", {"rx_frag_alloc": 1, "rx_map_call": 2, "rx_build_skb": 1}),
        # the page stays mapped: no map call, a recycled page, the skb built
        ("page_pool", "sync", {"rx_page_recycle": 1, "rx_build_skb": 1}),
    ],
)
def test_rx_buffer_handling_charges_what_its_code_does(rx_buffers, rx_sync, per_frame):
    async def body():
        names = ("rx_map_call", "rx_skb_alloc", "rx_frag_alloc", "rx_build_skb", "rx_page_recycle")
        costs = CpuCosts(**{name: float(10**i) for i, name in enumerate(names)})
        driver, p, device, received = await make(
            costs, caches=TWO_LEVELS, rx_buffers=rx_buffers, rx_sync=rx_sync, tx_ring=8,
            rx_ring=8, rx_buf=1536,
        )  # fmt: skip
        for _ in range(8):  # a lap, so every slot has had its first map
            device.receive(bytes(200), irq=False)
            await driver.rx_poll(8)
        p.cycles.clear()
        for _ in range(4):
            device.receive(bytes(200), irq=False)
            await driver.rx_poll(8)
        assert len(received) == 12
        charged = {name: p.cycles[name] / getattr(costs, name) / 4 for name in names}
        assert charged == {name: per_frame.get(name, 0) for name in names}
        # Mapped once (page pool): only the 200 received bytes (7 lines) are invalidated,
        # for the CPU and for the device; otherwise the whole 1536-byte buffer (48 lines),
        # at unmap and at the next map.
        lines = 2 * 7 if rx_sync == "sync" else 2 * 48
        assert p.cycles["cache_invalidate"] == 4 * lines * (3 + 30)

    run(body())


def test_the_tx_napi_weight_caps_a_polls_tx_clean_and_keeps_napi_scheduled():
    async def body():
        for weight, cleaned, still_scheduled in ((None, 5, False), (2, 2, True)):
            driver, p, device, _ = await make(
                strategy=IrqStrategy("napi"), tx_napi_weight=weight, tx_ring=64, rx_ring=4
            )
            for _ in range(5):
                await driver.xmit([b"x" * 100])
            device.complete_tx()
            await driver.isr()  # TX done: NAPI scheduled
            assert driver.napi_scheduled
            work = await driver.napi_poll()
            assert driver.stats.tx_packets == cleaned
            assert driver.napi_scheduled is still_scheduled
            assert work == (64 if still_scheduled else 0)

    run(body())
    with pytest.raises(ValueError, match="needs rx_sync = 'sync'"):
        DriverConfig(rx_buffers="page_pool")
    with pytest.raises(ValueError, match="tx_napi_weight = 0"):
        DriverConfig(tx_napi_weight=0)


# -- the TX coalescing timer ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "arms", "arm_cost", "expiry_irqs"),
    [
        ("timer_list", 5, "timer_list_arm", 0),  # every xmit; runs off the tick's softirq
        ("hrtimer", 5, "hrtimer_arm", 1),  # every xmit; its expiry is an interrupt
        ("hrtimer_idle", 5, "hrtimer_arm", 1),  # every xmit: NAPI is not scheduled
    ],
)
def test_the_tx_timer_is_armed_as_its_kind_says_and_its_expiry_cleans_tx(
    kind, arms, arm_cost, expiry_irqs
):
    """Five frames 1 µs apart, written back without an interrupt: only the timer brings
    the clean, 20 µs after the last arming; each kind arms it as its code does."""

    async def body():
        costs = CpuCosts(timer_list_arm=7, hrtimer_arm=11, irq_entry_exit=100)
        driver, p, device = await make_timed(
            costs, strategy=IrqStrategy("napi"), tx_timer=kind, tx_timer_us=20, tx_ring=64,
            rx_ring=4,
        )  # fmt: skip
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        await settle()
        for _ in range(5):
            sent = asyncio.ensure_future(driver.xmit([b"t" * 100]))
            await p.advance(1000)
            assert sent.done() and sent.result()
        device.complete_tx(irq=False)
        await p.advance(10_000)
        assert driver.stats.tx_packets == 0  # nothing cleans yet
        await p.advance(30_000)
        assert driver.stats.tx_timer_arms == arms
        assert p.cycles[arm_cost] == arms * getattr(costs, arm_cost)
        assert driver.stats.tx_timer_expiries == 1
        assert driver.stats.tx_packets == 5  # the expiry's NAPI poll cleaned them
        assert p.charge_calls["irq_entry_exit"] == expiry_irqs
        assert driver.stats.irqs == 0 and not driver.napi_scheduled
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())


def test_a_tx_timer_needs_napi():
    with pytest.raises(ValueError, match="needs a NAPI strategy"):
        DriverConfig(strategy=IrqStrategy("eop"), tx_timer="hrtimer")
    with pytest.raises(ValueError, match="tx_timer = 'jiffy'"):
        DriverConfig(tx_timer="jiffy")


# -- alignment copies: the TX bounce buffer and the RX fix-up --------------------------------


@pytest.mark.parametrize(("tx_bounce", "rx_fixup"), [(True, True), (False, True), (False, False)])
def test_alignment_copies_cost_what_they_copy(tx_bounce, rx_fixup):
    """arge-align's three steps: bounce + fix-up, fix-up only, neither. A bounce copies
    each TX fragment (cache-hot: CPU cycles only); the fix-up copies each received frame,
    reading it from memory (its lines were invalidated for the DMA)."""

    async def body():
        costs = CpuCosts(per_byte_memcpy=2.0)
        driver, p, device, received = await make(
            costs, tx_bounce=tx_bounce, rx_fixup=rx_fixup, tx_ring=16, rx_ring=8
        )
        await driver.xmit([b"h" * 54, b"p" * 1000])
        device.receive(bytes(600), irq=False)
        await driver.rx_poll(8)
        assert received and received[0][0] == bytes(600)  # the copy changes no byte
        copied = (1054 if tx_bounce else 0) + (600 if rx_fixup else 0)
        assert p.cycles["per_byte_memcpy"] == 2.0 * copied
        assert p.traffic["rx_fixup"] == [600 if rx_fixup else 0, 0]
        assert (driver.stats.tx_bounced, driver.stats.rx_fixups) == (
            2 if tx_bounce else 0,
            1 if rx_fixup else 0,
        )

    run(body())


# -- DIM tables ------------------------------------------------------------------------------


def test_the_axienet_dim_table_starts_at_its_second_profile_and_counts_rx_interrupts():
    """axienet's DIM: frames 1, 4, 16, 64, 255 at a fixed 16 µs, from (4, 16); its events
    are RX interrupts, so TX-only interrupts do not move a measurement along."""

    async def body():
        stock, p0, _, _ = await make(strategy=IrqStrategy("dim"), tx_ring=16, rx_ring=8)
        assert stock.dim is not None and stock.dim.profile == DIM_RX_PROFILES[0]
        driver, p, device, _ = await make(
            strategy=IrqStrategy("dim"), dim_table="axienet", tx_ring=16, rx_ring=8
        )
        assert driver.dim is not None
        assert driver.dim.profiles == ((1, 16), (4, 16), (16, 16), (64, 16), (255, 16))
        assert driver.dim.profile == (4, 16)
        rx_coalesce = p.writes_to(regs.IRQ_RX_COALESCE)[-1]
        assert (rx_coalesce & regs.IRQ_RX_COALESCE_FRAMES_MASK) >> (
            regs.IRQ_RX_COALESCE_FRAMES_SHIFT
        ) == 4
        await driver.xmit([b"t" * 100])
        device.complete_tx()
        await driver.isr()  # TX done only
        device.receive(bytes(100))
        await driver.isr()  # RX done
        assert (driver.stats.irqs, driver.stats.rx_irqs) == (2, 1)

    run(body())


# -- GRO -------------------------------------------------------------------------------------


def test_gro_pays_the_protocol_work_once_per_merged_batch():
    """Four frames in one poll: GRO's per-segment work four times, the stack's protocol
    work once, one flush to the stack; without GRO the protocol work four times."""

    async def body():
        costs = CpuCosts(rx_per_packet=1000.0, gro_per_segment=10.0)
        for gro, protocol, merging, flushes in ((True, 1, 4, 1), (False, 4, 0, 0)):
            driver, p, device, received = await make(costs, gro=gro, tx_ring=8, rx_ring=16)
            heard: list[int] = []
            driver.on_gro_flush = functools.partial(
                lambda heard, received: heard.append(len(received)), heard, received
            )
            for _ in range(4):
                device.receive(bytes(200), irq=False)
            await driver.rx_poll(16)
            assert len(received) == 4
            assert p.cycles["rx_per_packet"] == protocol * 1000.0
            assert p.cycles["gro_per_segment"] == merging * 10.0
            assert heard == [4] * flushes and driver.stats.gro_flushes == flushes

    run(body())


def test_gro_flushes_a_full_batch_before_the_poll_ends():
    async def body():
        driver, p, device, received = await make(
            CpuCosts(rx_per_packet=1.0), gro=True, tx_ring=8, rx_ring=64, rx_buf=256
        )
        for _ in range(GRO_MAX_SEGMENTS + 3):
            device.receive(bytes(100), irq=False)
        await driver.rx_poll(None)
        assert driver.stats.gro_flushes == 2  # 45, then the 3 left at the poll's end
        assert p.cycles["rx_per_packet"] == 2.0

    run(body())


# -- software TSO ----------------------------------------------------------------------------


def test_software_tso_cuts_a_super_segment_into_frames_with_copied_headers():
    """A 54-byte header and 10,000 bytes in three page fragments, MSS 1448: seven frames,
    each the header (copied into the header buffer, posted uncached) and descriptors into
    the fragments; each piece of a page mapped and cleaned on its own (fec maps per
    piece), the stack's xmit paid once."""

    async def body():
        costs = CpuCosts(
            tx_per_packet=1000.0, tx_per_fragment_map=100.0, tx_per_descriptor=10.0,
            per_byte_memcpy=1.0,
        )  # fmt: skip
        driver, p, device, _ = await make(costs, caches=TWO_LEVELS, tx_ring=64, rx_ring=4)
        p.cycles.clear()
        p.traffic.clear()
        header = bytes(range(54))
        payload = [b"a" * 4096, b"b" * 4096, b"c" * 1808]
        assert await driver.xmit_tso(header, payload, 1448)
        device.complete_tx(irq=False)
        await driver.tx_clean()
        # 10,000 / 1,448: six full segments and one of 1,312; two cross a page boundary
        assert len(device.sent) == 7 and driver.stats.tso_segments == 7
        assert all(frame[:54] == header for frame in device.sent)
        assert b"".join(frame[54:] for frame in device.sent) == b"".join(payload)
        assert [len(frame) - 54 for frame in device.sent] == [1448] * 6 + [1312]
        assert driver.stats.tx_packets == 7 and driver.stats.tx_descriptors == 7 + 9
        assert p.cycles["tx_per_packet"] == 1000.0  # once per super-segment
        assert p.cycles["tx_per_fragment_map"] == 9 * 100.0  # each piece mapped
        assert p.cycles["tx_per_descriptor"] == 16 * 10.0
        assert p.cycles["per_byte_memcpy"] == 7 * 54.0  # a header copy per segment
        # The pieces (offset in their page, bytes), each cleaned over its own lines
        pieces = [(0, 1448), (1448, 1448), (2896, 1200), (0, 248), (248, 1448),
                  (1696, 1448), (3144, 952), (0, 496), (496, 1312)]  # fmt: skip
        lines = sum(TWO_LEVELS.lines(offset, length) for offset, length in pieces)
        assert p.cycles["cache_clean"] == lines * (2 + 20)
        # the header copies' and the descriptors' stores are write-path stores (uncached
        # on this non-coherent DMA), each once: none is memory traffic on top
        assert p.traffic["descriptor_uncached"][1] == 0
        header_buffer = driver.tx.tso_headers
        headers = [(a, n) for a, n in p.mem_writes if n == 54 and a >= header_buffer]
        assert len(headers) == 7

    run(body())


def test_software_tso_advances_each_segments_tcp_sequence_number():
    """tso_build_hdr: segment k's header carries the super-segment's sequence number plus
    the payload bytes of the segments before it (mod 2**32); the rest of the header is
    copied as is."""

    async def body():
        driver, _, device, _ = await make(tx_ring=64, rx_ring=4)
        start = (1 << 32) - 2000  # wraps inside the super-segment
        header = bytes(14) + start.to_bytes(4, "big") + bytes(range(36))
        assert await driver.xmit_tso(header, [bytes(5000)], 1448, seq_offset=14)
        device.complete_tx(irq=False)
        seqs = [int.from_bytes(frame[14:18], "big") for frame in device.sent]
        assert seqs == [(start + n * 1448) % (1 << 32) for n in range(4)]
        assert all(frame[:14] + frame[18:54] == header[:14] + header[18:] for frame in device.sent)
        with pytest.raises(ValueError, match="no 32-bit sequence number at 52"):
            await driver.xmit_tso(header, [bytes(100)], 1448, seq_offset=52)

    run(body())


def test_software_tso_bounces_only_pieces_off_the_dma_alignment():
    """With tx_bounce (a TX DMA reading only 4-byte-aligned buffers), a TSO payload piece
    that starts off 4 bytes is copied into a bounce buffer first; aligned ones are not."""

    async def body():
        driver, p, device, _ = await make(
            CpuCosts(per_byte_memcpy=1.0), tx_ring=64, rx_ring=4, tx_bounce=True
        )
        p.cycles.clear()
        # MSS 1446: pieces start at 0, 1446 (off 4), 2892 (aligned), 4338 (off 4)
        assert await driver.xmit_tso(bytes(54), [bytes(5000)], 1446)
        assert driver.stats.tx_bounced == 2
        assert p.cycles["per_byte_memcpy"] == 4 * 54 + 1446 + (5000 - 3 * 1446)

    run(body())
