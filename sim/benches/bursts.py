"""The record of one AXI burst that both host memory models keep (the cocotbext-axi one in
:mod:`.soc`, the HDL one in :mod:`.hdl_memory`), for the burst checks of the benches."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BurstRecord:
    """One AXI burst seen by host memory."""

    write: bool
    addr: int
    beats: int
    size: int
