"""The soft core: VexRiscv_Full with its RAM, timer and buses beside the SoC
(``macdma_soc_cpu``, :mod:`macdma.hdl.cpu.top`; the address map in
:mod:`macdma.hdl.cpu.memory_map`). The firmware it runs is firmware/c/."""
