"""SocParams, the SoC's build-time parameters: every bad value is refused with a message
naming it, before anything is built."""

import pytest

from macdma.hdl.regmap import REGISTER_MAP
from macdma.hdl.soc import MAX_BUILD_PREFETCH, SocParams


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"data_width": 16}, "data_width must be 32 or 64, not 16"),
        ({"tx_fifo_bytes": 3000}, "tx_fifo_bytes must be a power of two >= 2048, not 3000"),
        ({"rx_fifo_bytes": 1024}, "rx_fifo_bytes must be a power of two >= 2048, not 1024"),
        ({"max_prefetch": 0}, "max_prefetch must be 1..15 .* not 0"),
        ({"max_prefetch": 16}, "max_prefetch must be 1..15 .* not 16"),
        ({"max_prefetch": 4.0}, "max_prefetch must be 1..15 .* not 4.0"),
        ({"ptp": 1}, "ptp must be True or False, not 1"),
        ({"sys_clk_hz": 0}, "sys_clk_hz must be a positive frequency in Hz, not 0"),
    ],
)
def test_bad_parameters_are_refused(params, message):
    with pytest.raises(ValueError, match=message):
        SocParams(**params)


def test_the_largest_prefetch_is_what_the_features_register_can_report():
    width = REGISTER_MAP.field("ID_FEATURES", "max_prefetch").width
    assert MAX_BUILD_PREFETCH == (1 << width) - 1
    assert SocParams(max_prefetch=MAX_BUILD_PREFETCH).max_prefetch == MAX_BUILD_PREFETCH
