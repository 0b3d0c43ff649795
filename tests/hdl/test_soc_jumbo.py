"""Jumbo frames through ``macdma_soc`` (tests/cocotb/soc_jumbo_tb.py) on each simulator."""

import pytest
from cocotb_cases import run_cocotb_cases

# Minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus


def test_soc_jumbo(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_jumbo_tb", sim=sim)
