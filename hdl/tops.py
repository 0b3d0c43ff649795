"""Every design exported to Verilog, by module name. ``make verilog`` writes each one."""

from .boards.sim_top import BoardSimTop
from .cpu.top import CpuSocTop
from .hostmem_top import HostMemSocTop
from .mac.top import EthMacTop
from .sim_wire.tops import HostMemWireSocTop, WireSocTop
from .soc import SocTop

#: Verilog module name -> factory taking the design's build-time parameters.
TOPS = {
    "macdma_eth_mac": EthMacTop,
    "macdma_soc": SocTop,
    "macdma_soc_hostmem": HostMemSocTop,
    "macdma_board": BoardSimTop,
    "macdma_soc_cpu": CpuSocTop,
    # Simulation only: the SoC with the frame wire on its PHY side (hdl/sim_wire/).
    "macdma_soc_wire": WireSocTop,
    "macdma_soc_hostmem_wire": HostMemWireSocTop,
}
