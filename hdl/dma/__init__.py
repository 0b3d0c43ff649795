"""Scatter-gather DMA engine: AXI4 data movers, descriptor fetch/write-back, TX and RX."""
