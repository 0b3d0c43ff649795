"""``BoardTop``: the SoC on an ECP5 board with an RGMII PHY.

::

    oscillator -> Ecp5Pll -> sync (SoC, RAM, host), tx 125 (or 25) MHz, tx90 (TXC)
    UART pins <-> UartRx/UartTx <-> UartBridge -> AXI4-Lite -> MacDmaSoc.csr
                                              \\-> AXI4 (single beats) -+
    MacDmaSoc.axi (DMA) ---------------------------------------------+-> arbiters -> Axi4Ram
    MacDmaSoc.gmii_* <-> RgmiiAdapter <-> RgmiiPins (DDR I/O) <-> PHY
    MacDmaSoc.mdc/mdio_* (MDIO_* registers) -> MDC pin, MDIO tristate buffer <-> PHY

With ``BoardConfig.host == "cpu"`` the soft core (:class:`~macdma.hdl.cpu.subsystem.
CpuSubsystem`: VexRiscv_Full and its on-chip RAM) takes the UART bridge's place: its
AXI4-Lite port drives ``MacDmaSoc.csr``, its AXI4 port is the arbiters' master 1 (the host
memory the DMA uses, as in ``macdma_soc_cpu``) and ``MacDmaSoc.irq`` is its external
interrupt. The UART pins are then unused (TX idles high), the PHY is out of reset and
the RGMII adapter runs at 1000 Mb/s: the bridge's ``PHY`` word has no counterpart on the
core's bus yet.

Every domain's reset is released synchronously to its own clock once the PLL has locked
(``rx`` too, although its clock comes from the PHY, so no SoC domain runs before the
others have a clock).
"""

from dataclasses import dataclass, replace
from pathlib import Path

from amaranth import *
from amaranth.lib import io, wiring
from amaranth.lib.cdc import FFSynchronizer, ResetSynchronizer
from amaranth.lib.wiring import In, Out, connect, flipped

from ..bus.axi4 import connect_read_write
from ..bus.axi4_arbiter import Axi4ReadArbiter, Axi4WriteArbiter
from ..bus.axi4_ram import Axi4Ram
from ..cpu.ram import CPU_RAM_MODULE, CPU_RAM_VERILOG
from ..cpu.subsystem import CpuSubsystem
from ..cpu.vexriscv import vexriscv_verilog_path
from ..mac.mdio import MdioPinsSignature
from ..soc import ADDR_WIDTH, MacDmaSoc, SocParams
from .pll import ClockOutput, Ecp5Pll
from .rgmii import SPEED_1000, RgmiiAdapter, RgmiiPins
from .uart import UartRx, UartTx, bit_cycles
from .uart_bridge import UartBridge

__all__ = ["CPU_FIRMWARE_FILE", "HOSTS", "BoardConfig", "BoardCore", "BoardTop"]

#: What drives the SoC's registers and shares its host memory: the UART bridge (a PC
#: runs the driver model) or the soft core (the C driver runs on the board).
HOSTS = ("uart", "cpu")
#: The soft core's RAM image as a board build names it: ``BoardTop.add_sources`` puts
#: ``BoardConfig.cpu_firmware`` there, in the build folder, where yosys runs (yowasp's yosys
#: sees its own /tmp, not the host's, so a path given there would not open).
CPU_FIRMWARE_FILE = "cpu_firmware.hex"

# docs/soc.md: 24 ns (41.7 MHz) is the slowest system clock that holds 1 Gb/s full duplex
# at every frame size; the need scales with the link rate.
MIN_SYS_CLK_HZ_PER_GBPS = 1 / 24e-9


@dataclass(frozen=True)
class BoardConfig:
    """What differs between boards. ``clk_resource`` is the oscillator's resource name.

    ``link_mbps`` 1000 runs the PHY side at 125 MHz (every speed); 100 builds a 10/100-only
    design with a 25 MHz tx clock and a 25 MHz rx_clk constraint, for parts that cannot
    close timing at 125 MHz."""

    name: str
    clk_resource: str
    clk_hz: float
    sys_clk_hz: float = 62.5e6
    link_mbps: int = 1000
    eth_index: int = 0
    ram_bytes: int = 16384
    uart_baud: int = 115200
    # RX checksum is off in the board builds until it has been synthesised and timed there.
    # Its sys_clk_hz is ignored: BoardCore gives the SoC this board's.
    soc: SocParams = SocParams(rx_checksum=False, ptp=False)
    host: str = "uart"
    # The soft core's on-chip RAM (host "cpu"; boards.py says why each board's size) and
    # its initial words: a $readmemh file of 32-bit words, or "" for zeros.
    cpu_ram_bytes: int = 32768
    cpu_firmware: str = ""

    def __post_init__(self):
        if self.host not in HOSTS:
            raise ValueError(f"host must be one of {', '.join(HOSTS)}, not {self.host!r}")
        if self.link_mbps not in (100, 1000):
            raise ValueError(f"link_mbps must be 100 or 1000, not {self.link_mbps!r}")
        minimum = MIN_SYS_CLK_HZ_PER_GBPS * self.link_mbps / 1000
        if not minimum * (1 - 1e-6) <= self.sys_clk_hz <= 200e6:
            raise ValueError(
                f"sys_clk_hz {self.sys_clk_hz!r} is outside {minimum / 1e6:.2f}..200 MHz "
                f"(the SoC needs at least {minimum / 1e6:.2f} MHz for {self.link_mbps} Mb/s)"
            )

    @property
    def phy_clk_hz(self) -> float:
        """The tx clock and the rx_clk constraint."""
        return 125e6 if self.link_mbps == 1000 else 25e6


class BoardCore(wiring.Component):
    """Everything of the board design but the PLL, the reset synchronisers and the I/O
    buffers, so it can be simulated: the SoC, the RAM and its arbiters, the host (the UART
    bridge, or the soft core with ``config.host == "cpu"``) and the RGMII adapter's logic.
    Domains ``sync``, ``tx`` and ``rx`` come from outside (``BoardTop`` or a test bench).

    Members
    -------
    uart_rx : In(1); uart_tx : Out(1)
        The serial pins (``uart_rx`` idles high).
    rgmii : Out(RgmiiAdapter signature members)
        ``txd_o``, ``tx_ctl_o``, ``txc_o`` (DDR pairs out), ``rxd_i``, ``rx_ctl_i`` (in).
    mdio : Out(MdioPinsSignature())
        PHY management pins, from the SoC's MDIO master (MDIO_* registers).
    phy_reset
        The PHY's reset, from the bridge's ``PHY`` word (held released with the core).
    """

    def __init__(self, config: BoardConfig, *, ram_init=()):
        self.config = config
        self.ram_init = list(ram_init)  # initial RAM words (for simulation)
        self.adapter = RgmiiAdapter(config.phy_clk_hz)
        adapter_members = self.adapter.signature.members
        pins = ("txd_o", "tx_ctl_o", "txc_o", "rxd_i", "rx_ctl_i")
        super().__init__(
            {
                "uart_rx": In(1, init=1),
                "uart_tx": Out(1, init=1),
                **{name: adapter_members[name] for name in pins},
                "mdio": Out(MdioPinsSignature()),
                "phy_reset": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        cfg = self.config

        # The SoC is told the board's system clock: PTP_NOMINAL, the PTP clock's default
        # increment, is its period.
        m.submodules.soc = soc = MacDmaSoc(replace(cfg.soc, sys_clk_hz=cfg.sys_clk_hz))
        m.submodules.rgmii = adapter = self.adapter
        connect(m, soc.gmii_tx, adapter.gmii_tx)
        connect(m, soc.gmii_rx, adapter.gmii_rx)
        m.d.comb += [
            soc.tx_clk_enable.eq(adapter.tx_clk_enable),
            soc.rx_clk_enable.eq(adapter.rx_clk_enable),
        ]
        for index in range(2):
            m.d.comb += [
                self.txd_o[index].eq(adapter.txd_o[index]),
                self.tx_ctl_o[index].eq(adapter.tx_ctl_o[index]),
                self.txc_o[index].eq(adapter.txc_o[index]),
                adapter.rxd_i[index].eq(self.rxd_i[index]),
                adapter.rx_ctl_i[index].eq(self.rx_ctl_i[index]),
            ]

        # The RAM is shared by the DMA (master 0) and the host (master 1).
        width = cfg.soc.data_width
        m.submodules.ram = ram = Axi4Ram(
            cfg.ram_bytes, addr_width=ADDR_WIDTH, data_width=width, id_width=3, init=self.ram_init
        )
        m.submodules.ram_read = read_arbiter = Axi4ReadArbiter(2, ADDR_WIDTH, width, 2)
        m.submodules.ram_write = write_arbiter = Axi4WriteArbiter(2, ADDR_WIDTH, width, 2)
        _split(m, soc.axi, read_arbiter.i0, write_arbiter.i0)
        connect_read_write(m, bus=ram.axi, read=read_arbiter.o, write=write_arbiter.o)

        if cfg.host == "cpu":
            self._cpu_host(m, soc, read_arbiter, write_arbiter, adapter)
        else:
            self._uart_host(m, soc, read_arbiter, write_arbiter, adapter)
        connect(m, flipped(self.mdio), soc.mdio)
        return m

    def _uart_host(self, m, soc, read_arbiter, write_arbiter, adapter):
        """The UART bridge: registers, RAM, interrupt and PHY word over the serial pins."""
        cfg = self.config
        cycles = bit_cycles(int(cfg.sys_clk_hz), cfg.uart_baud)
        m.submodules.uart_rx = uart_rx = UartRx(cycles)
        m.submodules.uart_tx = uart_tx = UartTx(cycles)
        m.submodules.bridge = bridge = UartBridge(
            cycles_per_byte=10 * cycles, ram_bytes=cfg.ram_bytes
        )
        m.d.comb += [uart_rx.rx.eq(self.uart_rx), self.uart_tx.eq(uart_tx.tx)]
        connect(m, uart_rx.o, bridge.rx)
        connect(m, bridge.tx, uart_tx.i)
        connect(m, bridge.csr, soc.csr)
        connect(m, bridge.mem_read, read_arbiter.i1)
        connect(m, bridge.mem_write, write_arbiter.i1)
        m.d.comb += [
            bridge.irq.eq(soc.irq),
            self.phy_reset.eq(bridge.phy_reset),
        ]
        m.submodules.speed_sync = FFSynchronizer(
            bridge.phy_speed, adapter.speed, o_domain="tx", init=SPEED_1000
        )
        m.submodules.status_sync = FFSynchronizer(
            Cat(adapter.inband_link, adapter.inband_speed, adapter.inband_full_duplex),
            bridge.phy_status,
        )

    def _cpu_host(self, m, soc, read_arbiter, write_arbiter, adapter):
        """The soft core: registers through its AXI4-Lite bridge, the RAM through its AXI4
        bridge (cached and uncached windows, memory_map.py), the SoC's interrupt."""
        cfg = self.config
        m.submodules.cpu = cpu = CpuSubsystem(
            cfg.cpu_ram_bytes, id_width=2, ram_init_file=cfg.cpu_firmware
        )
        connect(m, cpu.csr, soc.csr)
        _split(m, cpu.axi, read_arbiter.i1, write_arbiter.i1)
        m.d.comb += [
            cpu.irq.eq(soc.irq),
            cpu.command.eq(0),
            self.uart_tx.eq(1),
            self.phy_reset.eq(0),
            adapter.speed.eq(SPEED_1000),
        ]


class BoardTop(Elaboratable):
    """The board design for ``config``: :class:`BoardCore` plus the PLL, the reset
    synchronisers and the I/O buffers; elaborate it with the board's amaranth-boards
    platform."""

    def __init__(self, config: BoardConfig):
        self.config = config

    def add_sources(self, platform) -> dict:
        """Give ``platform`` the Verilog the design instantiates beside its RTLIL, and
        return the build options (``platform.build`` keywords) that read the rest: with
        the soft core, its RAM array's module, its RAM image (:data:`CPU_FIRMWARE_FILE`)
        and VexRiscv_Full, which yosys reads from the installed pythondata-cpu-vexriscv
        package (no copy is made)."""
        if self.config.host != "cpu":
            return {}
        platform.add_file(f"{CPU_RAM_MODULE}.v", CPU_RAM_VERILOG)
        if self.config.cpu_firmware:
            platform.add_file(CPU_FIRMWARE_FILE, Path(self.config.cpu_firmware).read_text())
        return {"script_after_read": f"read_verilog {vexriscv_verilog_path()}"}

    def elaborate(self, platform):
        m = Module()
        cfg = self.config

        clk_port = platform.request(cfg.clk_resource, dir="-")
        m.submodules.clk_buffer = clk = io.Buffer("i", clk_port)
        m.submodules.pll = pll = Ecp5Pll(
            cfg.clk_hz,
            [
                ClockOutput("tx", cfg.phy_clk_hz),
                ClockOutput("tx90", cfg.phy_clk_hz, 90),
                ClockOutput("sync", cfg.sys_clk_hz),
            ],
        )
        m.d.comb += pll.clki.eq(clk.i)
        for name in ("sync", "tx", "tx90", "rx"):
            m.domains += ClockDomain(name)
            m.submodules[f"{name}_reset"] = ResetSynchronizer(~pll.locked, domain=name)

        # The image is read from the build folder (add_sources).
        image = CPU_FIRMWARE_FILE if cfg.cpu_firmware else ""
        m.submodules.core = core = BoardCore(replace(cfg, cpu_firmware=image))

        eth = platform.request("eth_rgmii", cfg.eth_index, dir="-")
        m.submodules.rgmii_pins = pins = RgmiiPins(core, eth, rx_clk_hz=cfg.phy_clk_hz)
        m.d.comb += pins.phy_reset.eq(core.phy_reset)

        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx_pin = uart_rx_pin = io.Buffer("i", uart.rx)
        m.submodules.uart_tx_pin = uart_tx_pin = io.Buffer("o", uart.tx)
        m.d.comb += [core.uart_rx.eq(uart_rx_pin.i), uart_tx_pin.o.eq(core.uart_tx)]

        m.submodules.mdc = mdc = io.Buffer("o", eth.mdc)
        m.submodules.mdio = mdio = io.Buffer("io", eth.mdio)
        m.d.comb += [
            mdc.o.eq(core.mdio.mdc),
            mdio.o.eq(core.mdio.o),
            mdio.oe.eq(core.mdio.oe),
            core.mdio.i.eq(mdio.i),
        ]
        return m


def _split(m, bus, read, write):
    """Drive the read and write halves ``read``/``write`` (slave side of an arbiter) from
    the full AXI4 master port ``bus``."""
    for half in (read, write):
        for name, member in half.signature.members.items():
            if member.flow == wiring.In:  # the arbiter takes it: the master drives it
                m.d.comb += getattr(half, name).eq(getattr(bus, name))
            else:
                m.d.comb += getattr(bus, name).eq(getattr(half, name))
