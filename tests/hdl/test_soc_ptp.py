"""PTP clock and timestamps of ``macdma_soc`` (tests/cocotb/soc_ptp_tb.py) on each simulator."""

import pytest
from cocotb_cases import run_cocotb_cases

# Minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus


def test_soc_ptp(cocotb_run, sim, subtests):
    run_cocotb_cases(cocotb_run, subtests, top="macdma_soc", test_module="soc_ptp_tb", sim=sim)


def test_soc_ptp_64_bit_bus(cocotb_run, sim, subtests):
    """The timestamped write-backs with 64-bit beats (16 bytes at offset 0: two beats)."""
    run_cocotb_cases(
        cocotb_run,
        subtests,
        top="macdma_soc",
        test_module="soc_ptp_tb",
        sim=sim,
        params={"data_width": 64},
        testcase=[
            "test_rx_fifo_losses_do_not_shift_timestamps",
            *(f"test_tx_timestamps/speed={n}" for n in range(3)),
        ],
    )
