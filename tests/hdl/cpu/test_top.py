"""The C driver on the soft core against the SoC RTL (tests/cocotb/soc_cpu_tb.py):
frames intact both ways under every IRQ strategy, and a bad descriptor's halt recovered,
on Verilator; a few frames each way on Icarus (about 3,400 CPU cycles per second there)."""

from cocotb_cases import run_cocotb_cases

from macdma.firmware.c.build import build_firmware

TOP = "macdma_soc_cpu"


def test_soc_cpu(cocotb_run, sim, subtests):
    build_firmware()  # a compiler error shows here, not inside the simulation
    run_cocotb_cases(
        cocotb_run,
        subtests,
        top=TOP,
        test_module="soc_cpu_tb" if sim == "verilator" else "soc_cpu_smoke_tb",
        sim=sim,
    )
