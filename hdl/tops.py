"""Every design exported to Verilog, by module name. ``make verilog`` writes each one."""

from .mac.top import EthMacTop

#: Verilog module name -> factory taking the design's build-time parameters.
TOPS = {
    "macdma_eth_mac": EthMacTop,
}
