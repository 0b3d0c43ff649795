"""The interrupt rate limit at line rate (tests/cocotb/soc_irq_rate_tb.py) on each
simulator: 8,000 interrupts/s at IRQ_MIN_INTERVAL = 125 µs, no cause lost."""

import json

import pytest
from cocotb_cases import run_cocotb_cases

# Minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus


def test_soc_irq_rate(cocotb_run, sim, tmp_path, subtests):
    measured = tmp_path / "irq_rate.json"
    run_cocotb_cases(
        cocotb_run,
        subtests,
        top="macdma_soc",
        test_module="soc_irq_rate_tb",
        sim=sim,
        # 200 frames per direction span 19 intervals; Icarus is ~7x slower per clock, so
        # it runs 100 (9 intervals: the rate comes from the spacing of the rises).
        extra_env={
            "SOC_IRQ_RATE_JSON": measured,
            "SOC_IRQ_RATE_FRAMES": 200 if sim == "verilator" else 100,
        },
    )
    limited = json.loads(measured.read_text())["125"]
    assert abs(limited["irqs_per_second"] - 8000) <= 80
    print(f"{sim}: {limited['irqs_per_second']:,.1f} IRQs/s at 125 µs, {limited['irqs']} IRQs")
