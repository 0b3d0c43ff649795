"""Driver model: talks to the hardware through a small platform interface only.

- ``platform``: the Platform protocol, the only door to the hardware.
- ``regs``: register offsets and fields (generated from the register map).
- ``descriptor``: the DMA descriptor layout, pack/unpack.
- ``costs``: the CPU cost table (``CpuCosts``) and presets.
- ``driver``: ``MacDmaDriver`` with ``DriverConfig``, ``IrqStrategy``, ``DriverStats``.

Nothing here imports cocotb, asyncio or Amaranth.
"""
