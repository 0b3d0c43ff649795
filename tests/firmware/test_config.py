"""The driver's configuration (firmware/config.py): each setting checked, a bad value named."""

from __future__ import annotations

import pytest

from macdma.firmware.driver import (
    DriverConfig,
)


def test_the_driver_config_takes_only_a_bool():
    with pytest.raises(ValueError, match=r"DriverConfig.flow_control = 'on' must be a bool"):
        DriverConfig(flow_control="on")
