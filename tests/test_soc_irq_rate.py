"""The interrupt rate limit at line rate (tests/cocotb/soc_irq_rate_tb.py) on each
simulator: 8,000 interrupts/s at IRQ_MIN_INTERVAL = 125 µs, no cause lost."""

import json


def test_soc_irq_rate(cocotb_run, sim, tmp_path):
    measured = tmp_path / "irq_rate.json"
    result = cocotb_run(
        top="macdma_soc",
        test_module="soc_irq_rate_tb",
        sim=sim,
        extra_env={"SOC_IRQ_RATE_JSON": measured},
    )
    assert result.failed == 0 and result.passed == 2
    limited = json.loads(measured.read_text())["125"]
    assert abs(limited["irqs_per_second"] - 8000) <= 80
    print(f"{sim}: {limited['irqs_per_second']:,.1f} IRQs/s at 125 µs, {limited['irqs']} IRQs")
