"""Driver model: talks to the hardware through a small platform interface only.

- ``platform``: the Platform protocol, the only door to the hardware.
- ``regs``: register offsets and fields (generated from the register map).
- ``descriptor``: the DMA descriptor layout, pack/unpack.
- ``costs``: the CPU cost table (``CpuCosts``) and presets.
- ``driver``: ``MacDmaDriver``, the netdev, and every public name of the modules it is
  split into (docs/driver-model.md): ``config``, ``tx_queue``, ``rx_queue``, ``ring``,
  ``moderation``, ``dim``, ``locks``, ``timers``, ``io``, ``mdio``, ``ptp``, ``stats``,
  ``hooks`` (the documented way in for a test bench).

Nothing here imports cocotb, asyncio or Amaranth.
"""
