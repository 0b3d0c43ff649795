"""``BoardSimTop`` (Verilog ``macdma_board``): the board design with real RGMII pins, for
cocotb on Icarus and Verilator.

It is :class:`~.top.BoardTop` without vendor primitives: :class:`~.top.BoardCore` and the
unchanged :class:`~.rgmii.RgmiiPins` (so TXC's ``tx90`` re-timing is the hardware's),
whose DDR buffers come from :class:`SimIoPlatform`, behavioural models of ODDRX1F/IDDRX1F
with :class:`amaranth.lib.io.DDRBuffer`'s timing. What replaces the rest of ``BoardTop``:

- the PLL: the bench drives ``clk`` (sync), ``tx_clk`` (125 MHz) and ``tx90_clk`` (the
  same clock 2 ns later, the PLL's 90 degree output); ``rgmii_rxc`` is the PHY's RXC.
- "PLL not locked": ``rst`` (asynchronous, active high), released into every domain
  through the same ``ResetSynchronizer`` as on the board.
- the MDIO tristate buffer: ``mdc``, ``mdio_o``, ``mdio_oe``, ``mdio_i`` as separate
  pins (the PHY model resolves the wire), as in ``macdma_soc``.
- the UART pin buffers: plain ``uart_rx``/``uart_tx``.

Pins (Verilog ports): ``rgmii_txd[3:0]``, ``rgmii_tx_ctl``, ``rgmii_txc``, ``phy_reset``
out; ``rgmii_rxd[3:0]``, ``rgmii_rx_ctl``, ``rgmii_rxc`` in. At 1000 Mb/s TXD/TX_CTL
change on ``tx_clk`` edges (rising: TXD[3:0] and TX_EN, falling: TXD[7:4] and
TX_EN ^ TX_ER) and TXC is ``tx90_clk``, so each TXC edge is in the middle of its nibble:
a PHY model sampling on both TXC edges (cocotbext-eth's ``RgmiiSink``) reads the frame.
RXD/RX_CTL are sampled on both edges of ``rgmii_rxc`` (rising: low nibble and RX_DV).

Default build: 100 MHz system clock, UART at 8 system clocks per bit (12.5 Mbaud), so a
bridge register access (about 10 bytes) takes 8 us of simulated time.
"""

from dataclasses import dataclass

from amaranth import *
from amaranth.hdl import IOBufferInstance, IOPort
from amaranth.lib import io, wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out

from ..flatten import connect_flat
from ..mac.mdio import MDIO_PIN_NAMES
from .rgmii import RgmiiPins
from .top import BoardConfig, BoardCore

__all__ = ["DEFAULT_SYS_CLK_HZ", "DEFAULT_UART_BIT_CYCLES", "BoardSimTop", "SimIoPlatform"]

DEFAULT_SYS_CLK_HZ = 100e6
DEFAULT_UART_BIT_CYCLES = 8  # the fastest UartRx/UartTx allow (bit_cycles: >= 8)


def _invert_mask(port) -> int:
    return sum(bit << index for index, bit in enumerate(port.invert))


class _DdrOutputModel(Elaboratable):
    """ODDR: ``o[0]`` and ``o[1]`` are registered on the rising edge of ``o_domain``;
    the pin shows ``o[0]`` while the clock is high and ``o[1]`` while it is low (output
    latency 1 in DDRBuffer's terms: the pair goes out in the cycle after it was set)."""

    def __init__(self, buffer: io.DDRBuffer):
        self.buffer = buffer

    def elaborate(self, platform):
        m = Module()
        buffer, port = self.buffer, self.buffer.port
        rise = Signal(len(port), reset_less=True)
        fall = Signal(len(port), reset_less=True)
        m.d[buffer.o_domain] += [rise.eq(buffer.o[0]), fall.eq(buffer.o[1])]
        pin = Mux(ClockSignal(buffer.o_domain), rise, fall) ^ _invert_mask(port)
        m.submodules.pin = IOBufferInstance(port.io, o=pin, oe=buffer.oe)
        return m


class _DdrInputModel(Elaboratable):
    """IDDR: the pin is sampled on the rising edge of ``i_domain`` (``i[0]``) and on the
    falling edge that follows (``i[1]``); both appear together on the next rising edge
    (input latency 1, as DDRBuffer's diagram)."""

    def __init__(self, buffer: io.DDRBuffer):
        self.buffer = buffer

    def elaborate(self, platform):
        m = Module()
        buffer, port = self.buffer, self.buffer.port
        pin = Signal(len(port))
        m.submodules.pin = IOBufferInstance(port.io, i=pin)
        domain = buffer.i_domain
        fall_domain = f"{domain}_fall"
        m.domains += ClockDomain(fall_domain, clk_edge="neg", local=True, reset_less=True)
        m.d.comb += ClockSignal(fall_domain).eq(ClockSignal(domain))
        # DDR registers have no reset.
        rise = Signal(len(port), reset_less=True)
        fall = Signal(len(port), reset_less=True)
        pair = Signal(2 * len(port), reset_less=True)
        m.d[domain] += rise.eq(pin ^ _invert_mask(port))
        m.d[fall_domain] += fall.eq(pin ^ _invert_mask(port))
        m.d[domain] += pair.eq(Cat(rise, fall))
        m.d.comb += [buffer.i[0].eq(pair[: len(port)]), buffer.i[1].eq(pair[len(port) :])]
        return m


class SimIoPlatform:
    """Just enough of an Amaranth platform for :class:`~.rgmii.RgmiiPins` outside a
    vendor toolchain: ``io.DDRBuffer`` becomes the behavioural models above, ``io.Buffer``
    Amaranth's generic buffer, and clock constraints are recorded in
    :attr:`clock_constraints` (signal -> Hz) and otherwise ignored."""

    def __init__(self):
        self.clock_constraints = {}

    def add_clock_constraint(self, signal, frequency):
        self.clock_constraints[signal] = frequency

    def get_io_buffer(self, buffer):
        if isinstance(buffer, io.DDRBuffer):
            if buffer.direction == io.Direction.Output:
                return _DdrOutputModel(buffer)
            if buffer.direction == io.Direction.Input:
                return _DdrInputModel(buffer)
            raise NotImplementedError(f"no simulation model of a bidirectional {buffer!r}")
        if isinstance(buffer, io.Buffer):
            return buffer.elaborate(None)  # Amaranth's generic IOBufferInstance buffer
        raise NotImplementedError(f"no simulation model of {buffer!r}")


class _OnPlatform(Elaboratable):
    """Elaborate ``design`` with ``platform`` instead of the platform of the whole."""

    def __init__(self, design, platform):
        self.design = design
        self.platform = platform

    def elaborate(self, platform):
        return Fragment.get(self.design, self.platform)


@dataclass(frozen=True)
class _RgmiiResource:
    """What ``platform.request("eth_rgmii", 0, dir="-")`` returns, for RgmiiPins."""

    tx_clk: io.SingleEndedPort
    tx_data: io.SingleEndedPort
    tx_ctl: io.SingleEndedPort
    rx_clk: io.SingleEndedPort
    rx_data: io.SingleEndedPort
    rx_ctl: io.SingleEndedPort
    rst: io.SingleEndedPort


def _pin(width: int, name: str, direction: str) -> io.SingleEndedPort:
    return io.SingleEndedPort(IOPort(width, name=name), direction=direction)


class BoardSimTop(wiring.Component):
    """``BoardTop`` for simulation (see the module docstring for the pins and clocks).

    Parameters: ``sys_clk_hz`` (the frequency the bench runs ``clk`` at; it sets the UART
    bit time and must hold 1 Gb/s: BoardConfig's minimum), ``uart_bit_cycles`` (system
    clocks per UART bit, >= 8) and ``ram_bytes`` (on-chip RAM). The link is 1000 Mb/s.
    """

    def __init__(
        self,
        *,
        sys_clk_hz: float = DEFAULT_SYS_CLK_HZ,
        uart_bit_cycles: int = DEFAULT_UART_BIT_CYCLES,
        ram_bytes: int = 16384,
    ):
        if not isinstance(uart_bit_cycles, int) or uart_bit_cycles < 8:
            raise ValueError(f"uart_bit_cycles must be an integer >= 8, not {uart_bit_cycles!r}")
        self.config = BoardConfig(
            name="sim",
            clk_resource="clk",
            clk_hz=sys_clk_hz,
            sys_clk_hz=sys_clk_hz,
            link_mbps=1000,
            ram_bytes=ram_bytes,
            uart_baud=round(sys_clk_hz / uart_bit_cycles),
        )
        self.uart_bit_cycles = uart_bit_cycles
        self.platform = SimIoPlatform()
        self.rgmii = _RgmiiResource(
            tx_clk=_pin(1, "rgmii_txc", "o"),
            tx_data=_pin(4, "rgmii_txd", "o"),
            tx_ctl=_pin(1, "rgmii_tx_ctl", "o"),
            rx_clk=_pin(1, "rgmii_rxc", "i"),
            rx_data=_pin(4, "rgmii_rxd", "i"),
            rx_ctl=_pin(1, "rgmii_rx_ctl", "i"),
            rst=_pin(1, "phy_reset", "o"),
        )
        super().__init__(
            {
                "clk": In(1),
                "tx_clk": In(1),
                "tx90_clk": In(1),
                "rst": In(1),
                "uart_rx": In(1, init=1),
                "uart_tx": Out(1, init=1),
                "mdc": Out(1),
                "mdio_o": Out(1),
                "mdio_oe": Out(1),
                "mdio_i": In(1, init=1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        for name in ("sync", "tx", "tx90", "rx"):
            m.domains += ClockDomain(name)
            m.submodules[f"{name}_reset"] = ResetSynchronizer(self.rst, domain=name)
        m.d.comb += [
            ClockSignal("sync").eq(self.clk),
            ClockSignal("tx").eq(self.tx_clk),
            ClockSignal("tx90").eq(self.tx90_clk),
        ]  # rx: RgmiiPins drives it from rgmii_rxc

        m.submodules.core = core = BoardCore(self.config)
        pins = RgmiiPins(core, self.rgmii, rx_clk_hz=self.config.phy_clk_hz)
        m.submodules.rgmii_pins = _OnPlatform(pins, self.platform)
        m.d.comb += [
            pins.phy_reset.eq(core.phy_reset),
            core.uart_rx.eq(self.uart_rx),
            self.uart_tx.eq(core.uart_tx),
        ]
        mdio = core.signature.members["mdio"]
        connect_flat(m, self, "mdio", core.mdio, mdio, MDIO_PIN_NAMES)
        return m
