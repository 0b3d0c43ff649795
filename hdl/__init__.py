"""Synthesizable Amaranth HDL of the macdma MAC, DMA engine and SoC top. Imports no simulator."""
