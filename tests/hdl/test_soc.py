"""The SoC's basic cocotb tests (tests/cocotb/soc_tb.py) on each simulator, with the
default 32-bit and the optional 64-bit AXI4 data path."""

import pytest
from cocotb_cases import run_cocotb_cases


@pytest.mark.parametrize("data_width", [32, 64])
def test_soc(cocotb_run, sim, data_width, subtests):
    run_cocotb_cases(
        cocotb_run,
        subtests,
        top="macdma_soc",
        test_module="soc_tb",
        sim=sim,
        params={"data_width": data_width},
    )
