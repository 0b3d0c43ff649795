"""The boards ``make synth BOARD=...`` knows, by name.

The amaranth-boards platform is named by module and class so that importing this file
needs no optional dependency; :func:`platform_for` imports it.
"""

import importlib
from dataclasses import dataclass

from ..soc import SocParams
from .top import BoardConfig

__all__ = ["Board", "BOARDS", "platform_for"]


@dataclass(frozen=True)
class Board:
    """A board: its amaranth-boards platform (``module:Class``) and its :class:`BoardConfig`."""

    platform: str
    config: BoardConfig


COLORLIGHT = "amaranth_boards.colorlight_5a75b_r7_0:Colorlight_5A75B_R70Platform"
VERSA = "amaranth_boards.versa_ecp5:VersaECP5Platform"
# The speed-6 Colorlight misses 125 MHz with issue 15's options: in its synthesis with
# them, tx reached 102.7 MHz (the 16 KiB TX FIFO's block-RAM read-ahead) and rx 116.4 MHz
# (802.3x control-frame recognition, since registered). Its builds keep the 4 KiB TX FIFO
# (jumbo frames go cut-through) and leave flow control and RX checksum out. TX checksum
# insertion stays in since the TX FIFO's read side was pipelined (tx 138.7 MHz, 107.8
# before): with or without it the tx clock's critical path is the TX FIFO's block RAM to
# its first register (5.83 ns clock-to-output, then 1.4 to 2.2 ns of routing depending on
# placement: 124.0 to 138.7 MHz over two seeds each, docs/synthesis.md).
# PTP and flow control each close timing on it on their own (`--with ptp`: tx 132.4, rx
# 130.9, sync 49.2 MHz; `--with flow_control`: 130.4 / 139.3 / 48.1), RX checksum misses by
# 0.02 % (the TX FIFO -> MAC handshake) and the three together by 6 to 8 % (routing on
# the speed-6 part), so the board keeps them off; `python -m macdma.sim.flows.synth --with`
# switches one on for a build (docs/synthesis.md, "Options on the Colorlight").
COLORLIGHT_SOC = SocParams(tx_fifo_bytes=4096, flow_control=False, rx_checksum=False, ptp=False)

# The Versa has every option. With TX checksum insertion its tx clock had fallen to
# 115.96 MHz (the TX FIFO's read side: frame start and word pop chains); with that read
# side pipelined it reached 146.3 MHz. PTP then took it to 115.0 MHz (the TX SFD strobe
# into an AsyncFIFO's write pointer logic); with that crossing's pointer moved by the
# strobe alone: sync 60.7, tx 127.8, rx 138.6 MHz, all met (docs/synthesis.md). The
# versa-ecp5-100m build keeps BoardConfig's default options (no RX checksum, no PTP).
VERSA_SOC = SocParams(tx_checksum=True, ptp=True)

# The soft core's RAM (the `--cpu` builds, BoardConfig.host "cpu"), in block RAMs: VexRiscv_Full
# takes 10 DP16KD (4 KiB instruction and data caches with their tags, the register file
# twice), its RAM one per 2 KiB. The Colorlight's LFE5U-25F has 56: the SoC and the 16 KiB
# board RAM take 15, the core 10, which leaves room for 32 KiB (16; 41 in all), not 64
# (57). The Versa's LFE5UM-45F has 108: its SoC and board RAM take 25, so 64 KiB (67 in
# all) fits, the size the C firmware is linked for (firmware/c/build.py) and
# macdma_soc_cpu's.
COLORLIGHT_CPU_RAM_BYTES = 32768
VERSA_CPU_RAM_BYTES = 65536

BOARDS = {
    # LFE5U-25F speed 6, 25 MHz oscillator, two RGMII PHYs (the first is used). The
    # system clock is the slowest that holds 1 Gb/s line rate (docs/soc.md), 125/3 MHz.
    "colorlight-5a75b": Board(
        COLORLIGHT,
        BoardConfig(
            "colorlight-5a75b",
            clk_resource="clk25",
            clk_hz=25e6,
            sys_clk_hz=125e6 / 3,
            soc=COLORLIGHT_SOC,
            cpu_ram_bytes=COLORLIGHT_CPU_RAM_BYTES,
        ),
    ),
    # LFE5UM-45F speed 8, 100 MHz oscillator, two RGMII PHYs (the first is used).
    "versa-ecp5": Board(
        VERSA,
        BoardConfig(
            "versa-ecp5",
            clk_resource="clk100",
            clk_hz=100e6,
            sys_clk_hz=50e6,
            soc=VERSA_SOC,
            cpu_ram_bytes=VERSA_CPU_RAM_BYTES,
        ),
    ),
    # 10/100-only builds (25 MHz PHY clocks) for when 125 MHz does not close.
    "colorlight-5a75b-100m": Board(
        COLORLIGHT,
        BoardConfig(
            "colorlight-5a75b-100m",
            clk_resource="clk25",
            clk_hz=25e6,
            sys_clk_hz=31.25e6,
            link_mbps=100,
            soc=COLORLIGHT_SOC,
        ),
    ),
    "versa-ecp5-100m": Board(
        VERSA,
        BoardConfig(
            "versa-ecp5-100m",
            clk_resource="clk100",
            clk_hz=100e6,
            sys_clk_hz=31.25e6,
            link_mbps=100,
        ),
    ),
}


def platform_for(name: str):
    """A fresh platform instance for board ``name`` (ValueError naming the known boards)."""
    if name not in BOARDS:
        raise ValueError(f"unknown board {name!r}; known boards: {', '.join(BOARDS)}")
    module_name, class_name = BOARDS[name].platform.split(":")
    return getattr(importlib.import_module(module_name), class_name)()
