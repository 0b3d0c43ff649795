"""PHY management: the ``mii_bus`` read/write ops over the MAC's MDIO master, as macb
does them: program the MDC divider once, wait for idle, write MDIO_CMD, poll
MDIO_STATUS.busy (bounded), one frame at a time under ``mii_bus->mdio_lock``."""

from __future__ import annotations

from . import regs
from .config import check_int, field_value
from .locks import SpinLock, mutex_lock
from .netdev import NetDevice

__all__ = [
    "MDC_MAX_HZ",
    "MDIO_POLL_LIMIT",
    "MDIO_POLL_NS",
    "MdioTimeoutError",
    "MiiBus",
    "mdc_clk_div",
]

#: Fastest MDC the driver programs (IEEE 802.3 22.2.2.11).
MDC_MAX_HZ = 2_500_000
#: MDIO_STATUS reads before mdio_read/mdio_write give up (readl_poll_timeout's bound). A
#: frame is 64 MDC periods: 26 µs at 2.5 MHz, at most 2 * 255 * 64 system clocks.
MDIO_POLL_LIMIT = 1000
#: Pause between two MDIO_STATUS polls (the poll's sleep_us; the CPU is free meanwhile).
MDIO_POLL_NS = 1000.0


class MdioTimeoutError(TimeoutError):
    """MDIO_STATUS.busy stayed set for :data:`MDIO_POLL_LIMIT` polls (-ETIMEDOUT)."""


def mdc_clk_div(sys_clk_mhz: int) -> int:
    """MDIO_CTRL.clk_div for the fastest MDC not above :data:`MDC_MAX_HZ`
    (MDC = sys_clk / (2 * clk_div)), within the register's 2..255."""
    return min(255, max(2, -(-sys_clk_mhz * 1_000_000 // (2 * MDC_MAX_HZ))))


class MiiBus:
    """The netdev's ``mii_bus``: clause 22 :meth:`read` and :meth:`write` of a PHY
    register. The first frame programs MDIO_CTRL.clk_div from the netdev's
    ``config.sys_clk_mhz`` (the probe step). Members: ``netdev``, ``lock`` (``mdio``, a
    mutex: one frame at a time), ``ready`` (MDIO_CTRL programmed)."""

    def __init__(self, netdev: NetDevice) -> None:
        self.netdev = netdev
        self.io = netdev.io
        self.lock = SpinLock("mdio")  # mii_bus->mdio_lock (a mutex): one frame at a time
        self.ready = False

    async def read(self, phy: int, reg: int) -> int:
        """mii_bus->read: a clause 22 read of register ``reg`` of PHY ``phy``; returns the
        16-bit value. Raises :class:`MdioTimeoutError` if the MDIO master stays busy."""
        status = await self._frame(phy, reg, write=False, value=0)
        return field_value(
            status, regs.MDIO_STATUS_READ_DATA_MASK, regs.MDIO_STATUS_READ_DATA_SHIFT
        )

    async def write(self, phy: int, reg: int, value: int) -> None:
        """mii_bus->write: a clause 22 write of ``value`` (16 bits) to register ``reg`` of PHY
        ``phy``; returns when the frame is on the wire. Raises :class:`MdioTimeoutError`."""
        await self._frame(phy, reg, write=True, value=value)

    async def _frame(self, phy: int, reg: int, *, write: bool, value: int) -> int:
        check_int("mdio", "phy", phy, 0, 31)
        check_int("mdio", "reg", reg, 0, 31)
        check_int("mdio", "value", value, 0, 0xFFFF)
        await mutex_lock(self.io.platform, self.lock)
        try:
            if not self.ready:
                clk_div = mdc_clk_div(self.netdev.config.sys_clk_mhz)
                await self.io.writel(regs.MDIO_CTRL, clk_div << regs.MDIO_CTRL_CLK_DIV_SHIFT)
                self.ready = True
            # Wait for idle first: a command written while busy would be ignored.
            what = f"{'write' if write else 'read'} of PHY {phy} register {reg}"
            await self._wait_idle(what)
            command = (
                (int(write) << regs.MDIO_CMD_WRITE_SHIFT)
                | (phy << regs.MDIO_CMD_PHY_SHIFT)
                | (reg << regs.MDIO_CMD_REG_SHIFT)
                | (value << regs.MDIO_CMD_DATA_SHIFT)
            )
            await self.io.writel(regs.MDIO_CMD, command)
            return await self._wait_idle(what)
        finally:
            self.lock.release()

    async def _wait_idle(self, what: str) -> int:
        """Poll MDIO_STATUS until busy is 0 (the hardware sets it before a read that
        follows the MDIO_CMD write can see it); return that status word."""
        for _ in range(MDIO_POLL_LIMIT):
            status = await self.io.readl(regs.MDIO_STATUS)
            if not status & regs.MDIO_STATUS_BUSY_MASK:
                return status
            await self.io.platform.sleep_ns(MDIO_POLL_NS)
        raise MdioTimeoutError(
            f"MDIO {what}: MDIO_STATUS.busy still set after {MDIO_POLL_LIMIT} polls"
        )
