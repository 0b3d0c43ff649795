"""IEEE 1588 hardware timestamps: the PTP hardware clock as the driver reads it
(``gettime64``) and the extension of the descriptors' 32-bit times against the latest
reading (:func:`~.descriptor.extend_timestamp`)."""

from __future__ import annotations

from . import regs
from .descriptor import extend_timestamp
from .io import DeviceIo

__all__ = ["Phc", "PtpUnsupportedError"]


class PtpUnsupportedError(RuntimeError):
    """DriverConfig.ptp asked for on hardware built without PTP (-EOPNOTSUPP)."""


class Phc:
    """The device's PTP clock. Members: ``ns`` (the last reading, 64-bit PTP ns),
    ``fresh`` (read during the current poll or clean already)."""

    def __init__(self, io: DeviceIo) -> None:
        self.io = io
        self.ns = 0
        self.fresh = False

    async def enable(self) -> None:
        """Hardware timestamps (DriverConfig.ptp), after checking the build has them:
        RX timestamping on (HWTSTAMP_FILTER_ALL), then a first reading."""
        features = await self.io.readl(regs.ID_FEATURES)
        if not features & regs.ID_FEATURES_PTP_MASK:
            raise PtpUnsupportedError(
                "PTP timestamps asked for, but this macdma build has none "
                f"(ID_FEATURES = 0x{features:08x}, ptp bit clear): build the SoC with "
                "SocParams(ptp=True) or open with ptp off"
            )
        await self.io.writel(regs.PTP_CTRL, regs.PTP_CTRL_RX_TIMESTAMP_MASK)
        await self.read()

    async def read(self) -> int:
        """gettime64: PTP_TIME_LO (which latches the high word), then PTP_TIME_HI."""
        low = await self.io.readl(regs.PTP_TIME_LO)
        high = await self.io.readl(regs.PTP_TIME_HI)
        self.ns = high << 32 | low
        return self.ns

    def begin_pass(self) -> None:
        """A poll or clean starts: the first timestamp it meets reads the clock again."""
        self.fresh = False

    async def extend(self, low_ns: int) -> int:
        """A descriptor's 32-bit time as 64-bit PTP ns. The PHC is read again once per
        poll or clean that meets a timestamp (the readings stay well within the 2.1 s
        the extension needs)."""
        if not self.fresh:
            await self.read()
            self.fresh = True
        return extend_timestamp(low_ns, self.ns)
