"""The driver model's MDIO bus (firmware/mdio.py) against a fake MDIO block: reads and writes
as a MII bus does them, waiting for idle, a bounded and charged timeout, checked arguments,
and the MDC divider."""

from __future__ import annotations

import asyncio

import pytest
from driver_fakes import (
    FakePlatform,
    run,
)

from macdma.firmware import regs
from macdma.firmware.costs import CpuCosts
from macdma.firmware.driver import (
    MDC_MAX_HZ,
    MDIO_POLL_LIMIT,
    MDIO_POLL_NS,
    DriverConfig,
    MacDmaDriver,
    MdioTimeoutError,
    mdc_clk_div,
)
from macdma.hdl.regmap import REGISTER_MAP


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
