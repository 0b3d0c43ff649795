"""802.3x flow control in the driver model at open, on the scripted fake device
(tests/firmware/driver_fakes.py): PAUSE programmed both ways with the register map's
defaults before the MAC runs, refused on a build without it, and nothing touched when it is
off."""

from __future__ import annotations

from driver_fakes import FakeDevice, FakePlatform, run

from macdma.firmware import regs
from macdma.firmware.costs import CpuCosts
from macdma.firmware.driver import (
    FC_CTRL_VALUE,
    DriverConfig,
    FlowControlUnsupportedError,
    MacDmaDriver,
)
from macdma.hdl.regmap import REGISTER_MAP

FC_REGISTERS = (regs.MAC_FC_CTRL, regs.MAC_FC_QUANTA, regs.MAC_FC_WATER)


def _open(flow_control: bool, features: int):
    """A driver opened on fake hardware whose ID_FEATURES reads ``features``; the platform,
    or the exception open raised."""

    async def body():
        platform = FakePlatform()
        FakeDevice(platform)
        platform.regs[regs.ID_FEATURES] = features
        driver = MacDmaDriver(
            platform, DriverConfig(flow_control=flow_control), lambda *a: None, CpuCosts()
        )
        try:
            await driver.open()
        except FlowControlUnsupportedError as error:
            return platform, error
        return platform, None

    return run(body())


def test_open_programs_pause_both_ways_with_the_register_maps_defaults_before_the_mac_runs():
    platform, error = _open(True, regs.ID_FEATURES_FLOW_CONTROL_MASK)
    assert error is None
    assert platform.writes_to(regs.MAC_FC_CTRL) == [
        regs.MAC_FC_CTRL_RX_PAUSE_MASK | regs.MAC_FC_CTRL_TX_PAUSE_MASK
    ]
    assert FC_CTRL_VALUE == regs.MAC_FC_CTRL_RX_PAUSE_MASK | regs.MAC_FC_CTRL_TX_PAUSE_MASK
    quanta = REGISTER_MAP.register("MAC_FC_QUANTA")
    water = REGISTER_MAP.register("MAC_FC_WATER")
    assert platform.writes_to(regs.MAC_FC_QUANTA) == [quanta.reset]
    assert platform.writes_to(regs.MAC_FC_WATER) == [water.reset]
    assert (quanta.field("quanta").reset, water.field("high").reset) == (65535, 1024)
    log = [(kind, offset) for kind, offset, _ in platform.mmio_log]
    # quasi-static: every MAC_FC_* write before the write that starts the MAC
    mac_on = log.index(("w", regs.MAC_CTRL))
    assert all(log.index(("w", offset)) < mac_on for offset in FC_REGISTERS)
    assert log.index(("r", regs.ID_FEATURES)) < log.index(("w", regs.MAC_FC_CTRL))


def test_open_refuses_flow_control_on_a_build_without_it():
    other_features = regs.ID_FEATURES_RX_CHECKSUM_MASK | 4  # everything but flow_control
    platform, error = _open(True, other_features)
    assert isinstance(error, FlowControlUnsupportedError)
    assert "flow control asked for, but this macdma build has none" in str(error)
    assert f"ID_FEATURES = 0x{other_features:08x}" in str(error)
    written = {offset for kind, offset, _ in platform.mmio_log if kind == "w"}
    assert not written & set(FC_REGISTERS), "nothing of flow control was programmed"
    assert regs.MAC_CTRL not in written, "the MAC was not started"


def test_off_leaves_the_flow_control_registers_alone():
    platform, error = _open(False, 0)
    assert error is None
    touched = {offset for _, offset, _ in platform.mmio_log}
    assert not touched & {regs.ID_FEATURES, *FC_REGISTERS}
