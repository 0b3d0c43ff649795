"""PTP in the driver model against the scripted fake device of tests/firmware/driver_fakes.py: the
64-bit extension of the descriptors' 32-bit times, RX timestamps in RxFrameMeta, TX
timestamps through ``on_tx_timestamp``, and a build without PTP refused at open."""

from __future__ import annotations

import dataclasses

import pytest
from driver_fakes import make, ring_desc, run

from macdma.firmware import regs
from macdma.firmware.descriptor import DESCRIPTOR_BYTES, extend_timestamp
from macdma.firmware.driver import PtpUnsupportedError

WRAP = 1 << 32


@pytest.mark.parametrize(
    ("low", "reference", "expected"),
    [
        (1000, 5 * WRAP + 2000, 5 * WRAP + 1000),  # reading just after the event
        (WRAP - 100, 6 * WRAP + 50, 6 * WRAP - 100),  # event before the low word wrapped
        (30, 6 * WRAP - 70, 6 * WRAP + 30),  # reading before the event, across the wrap
        (0, 0, 0),
        (WRAP - 1, 0, 0xFFFF_FFFF_FFFF_FFFF),  # before 0 wraps the 64-bit clock too
        (123, 7 * WRAP + 123 + (1 << 31) - 1, 7 * WRAP + 123),  # 2.1 s away: still right
    ],
)
def test_extend_timestamp_across_a_wrap(low, reference, expected):
    assert extend_timestamp(low, reference) == expected


@pytest.mark.parametrize(("low", "reference"), [(-1, 0), (WRAP, 0), (0, 1 << 64), (0.5, 0)])
def test_extend_timestamp_rejects_bad_values(low, reference):
    with pytest.raises(ValueError, match="must be"):
        extend_timestamp(low, reference)


def _phc(platform, ns: int) -> None:
    platform.regs[regs.PTP_TIME_LO] = ns & 0xFFFF_FFFF
    platform.regs[regs.PTP_TIME_HI] = ns >> 32


def _stamp(platform, base_reg: int, index: int, low_ns: int) -> None:
    """What the DMA does to a timestamped EOP write-back: word 0 and ``timestamped``."""
    address = platform.regs[base_reg] + index * DESCRIPTOR_BYTES
    platform.mem[address : address + 4] = low_ns.to_bytes(4, "little")
    word2 = int.from_bytes(platform.mem[address + 8 : address + 12], "little")
    word2 |= 1 << 30
    platform.mem[address + 8 : address + 12] = word2.to_bytes(4, "little")


def test_ptp_open_rx_and_tx_timestamps():
    # make() builds a fresh platform whose ID_FEATURES is 0: PTP is refused.
    async def refused():
        with pytest.raises(PtpUnsupportedError, match="ptp bit clear"):
            await make(ptp=True)

    run(refused())

    async def stamped():
        driver, p, device, received = await make()
        # Re-open with PTP on the same platform, now advertising it.
        p.regs[regs.ID_FEATURES] = regs.ID_FEATURES_PTP_MASK
        driver.config = dataclasses.replace(driver.config, ptp=True)
        _phc(p, 9 * WRAP + 500)
        await driver.open()
        assert p.regs[regs.PTP_CTRL] == regs.PTP_CTRL_RX_TIMESTAMP_MASK
        # RX: a frame stamped just before the low word wrapped, polled just after.
        used = device.receive(b"\x5a" * 100)
        assert used == 1
        _stamp(p, regs.RX_RING_BASE, 0, WRAP - 40)
        _phc(p, 10 * WRAP + 60)
        await driver.rx_poll(None)
        assert received[-1][2].hw_timestamp_ns == 10 * WRAP - 40
        device.receive(b"\xa5" * 80)  # not stamped
        await driver.rx_poll(None)
        assert received[-1][2].hw_timestamp_ns is None
        # TX: the frame that asked reports its time, the other one nothing.
        times = []
        driver.on_tx_timestamp = times.append
        assert await driver.xmit([b"\x01" * 60, b"\x02" * 30], hw_timestamp=True)
        assert await driver.xmit([b"\x03" * 64])
        first = ring_desc(p, regs.TX_RING_BASE, 0)
        assert first.ts_request and first.sop
        assert not ring_desc(p, regs.TX_RING_BASE, 1).ts_request
        assert not ring_desc(p, regs.TX_RING_BASE, 2).ts_request
        device.complete_tx(irq=False)
        _stamp(p, regs.TX_RING_BASE, 1, 777)
        await driver.tx_clean()
        assert times == [10 * WRAP + 777]
        with pytest.raises(ValueError, match="ptp=True"):
            driver.config = dataclasses.replace(driver.config, ptp=False)
            await driver.xmit([b"\x04" * 64], hw_timestamp=True)

    run(stamped())
