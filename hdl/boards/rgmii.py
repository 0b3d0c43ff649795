"""RGMII between the SoC's GMII/MII port and an RGMII PHY.

:class:`RgmiiAdapter` is the logic (simulatable, no vendor primitives): it pairs GMII bytes
into the rising/falling-edge nibbles of RGMII, makes the MAC's clock enables and the TXC
pattern for 10/100 Mb/s, and decodes the PHY's in-band link status. :class:`RgmiiPins`
puts DDR I/O buffers (``IDDRX1F``/``ODDRX1F`` on ECP5, through ``amaranth.lib.io``)
between the adapter and a platform's ``eth_rgmii`` resource.

Clocks: ``tx`` runs at 125 MHz at every speed (from the PLL); ``tx90`` is the same clock
90 degrees later and only clocks TXC, so TXC's edges fall in the middle of the data eye
(the PHY needs no internal TX delay). ``rx`` is the PHY's RXC (125, 25 or 2.5 MHz).

Speeds: at 1000 Mb/s every ``tx`` clock carries a byte, TXD[3:0] on the rising edge and
TXD[7:4] on the falling edge. At 100 and 10 Mb/s the MAC runs in MII nibble mode
(MAC_CTRL.mii_select) with ``tx_clk_enable`` every 5 or 50 clocks; the nibble is sent on
both edges and TXC is 25 or 2.5 MHz with a 50 % duty cycle made from DDR half-cycles. On
receive the PHY's RXC already runs at the nibble rate, so ``rx_clk_enable`` is always 1.
"""

from amaranth import *
from amaranth.lib import io, wiring
from amaranth.lib.wiring import In, Out

from ..mac.gmii import GmiiRxSignature, GmiiTxSignature

__all__ = ["SPEED_10", "SPEED_100", "SPEED_1000", "RgmiiAdapter", "RgmiiPins"]

# In-band status / speed encoding (RGMII 2.0 table 4): RXD[2:1] between frames.
SPEED_10 = 0b00
SPEED_100 = 0b01
SPEED_1000 = 0b10


class RgmiiAdapter(wiring.Component):
    """Members
    -------
    gmii_tx : In(GmiiTxSignature()); gmii_rx : In(GmiiRxSignature())
        Connect to the SoC's ``gmii_tx`` / ``gmii_rx`` (``tx`` / ``rx`` domains).
    tx_clk_enable : Out(1); rx_clk_enable : Out(1)
        To the SoC's clock enables.
    speed : In(2)
        The link speed the TX side runs at (``tx`` domain; SPEED_*); quasi-static. With
        ``tx_clk_hz`` other than 125 MHz, SPEED_1000 is not available (runs as 100).
    inband_link, inband_speed, inband_full_duplex
        The PHY's in-band status, sampled between frames (``rx`` domain).
    txd_o, tx_ctl_o, txc_o : Out
        DDR pairs (index 0 rising edge, 1 falling edge) for the TX pins; ``txc_o`` is
        meant for a buffer clocked by ``tx90``.
    rxd_i, rx_ctl_i : In
        DDR pairs from the RX pins (``rx`` domain).
    """

    def __init__(self, tx_clk_hz: float = 125e6):
        # A tx clock of 125 MHz serves every speed; 25 MHz (or any multiple of 2.5 MHz)
        # serves 10/100 only, for parts that cannot close timing at 125 MHz.
        if tx_clk_hz <= 0 or tx_clk_hz % 25e6:
            raise ValueError(f"tx_clk_hz must be a multiple of 25 MHz, not {tx_clk_hz!r}")
        self.tx_clk_hz = tx_clk_hz
        self.gigabit = tx_clk_hz == 125e6
        self.nibble_period = {
            SPEED_100: max(1, round(tx_clk_hz / 25e6)),
            SPEED_10: round(tx_clk_hz / 2.5e6),
        }
        super().__init__(
            {
                "gmii_tx": In(GmiiTxSignature()),
                "gmii_rx": In(GmiiRxSignature()),
                "tx_clk_enable": Out(1),
                "rx_clk_enable": Out(1),
                "speed": In(2, init=SPEED_1000),
                "inband_link": Out(1),
                "inband_speed": Out(2),
                "inband_full_duplex": Out(1),
                "txd_o": Out(4).array(2),
                "tx_ctl_o": Out(1).array(2),
                "txc_o": Out(1).array(2),
                "rxd_i": In(4).array(2),
                "rx_ctl_i": In(1).array(2),
            }
        )

    def elaborate(self, platform):
        m = Module()
        self._transmit(m)
        self._receive(m)
        return m

    def _transmit(self, m):
        tx = self.gmii_tx
        # The speed is registered, and everything that depends on it is a comparison of
        # ``phase`` with a constant of the selected speed: no arithmetic on the speed
        # reaches the pins' registers at 125 MHz.
        gigabit = Signal()
        speed_10 = Signal()
        m.d.tx += [
            gigabit.eq(self.speed == SPEED_1000 if self.gigabit else 0),
            speed_10.eq(self.speed == SPEED_10),
        ]
        periods = self.nibble_period
        phase = Signal(range(max(periods.values())))

        def per_speed(test):
            """``test(period)`` of the selected 10/100 speed's nibble period."""
            return Mux(speed_10, test(periods[SPEED_10]), test(periods[SPEED_100]))

        last = per_speed(lambda period: phase == period - 1)
        next_phase = Mux(gigabit | last, 0, phase + 1)
        m.d.tx += phase.eq(next_phase)
        # The MAC steps at phase 1 (0 if a nibble lasts one clock) and its nibble is
        # loaded at the last phase, so it is on the pins from phase 0 to the end of the
        # period: TXC rises half-way and falls when the data changes. The enable is a
        # register: it starts the MAC's and the TX FIFO's longest paths.
        m.d.tx += self.tx_clk_enable.eq(
            gigabit | per_speed(lambda period: next_phase == (0 if period == 1 else 1))
        )
        ctl_rise = tx.tx_en
        ctl_fall = tx.tx_en ^ tx.tx_er
        with m.If(gigabit):
            m.d.tx += [
                self.txd_o[0].eq(tx.txd[:4]),
                self.txd_o[1].eq(tx.txd[4:]),
                self.tx_ctl_o[0].eq(ctl_rise),
                self.tx_ctl_o[1].eq(ctl_fall),
                self.txc_o[0].eq(1),
                self.txc_o[1].eq(0),
            ]
        with m.Else():
            with m.If(last):
                m.d.tx += [
                    self.txd_o[0].eq(tx.txd[:4]),
                    self.txd_o[1].eq(tx.txd[:4]),
                    self.tx_ctl_o[0].eq(ctl_rise),
                    self.tx_ctl_o[1].eq(ctl_fall),
                ]

            # In half-cycles of the next phase n: high from period/2 (rounded into the
            # half-cycle grid) on, i.e. 2n >= period and 2n + 1 >= period, written as
            # comparisons of the current phase (n = phase + 1, or 0 after the last).
            def txc_next(half):
                def test(period):
                    if period == 1:
                        return C(int(half >= period))
                    after = phase >= -(-(period - half) // 2) - 1  # 2(phase+1)+half >= period
                    return Mux(phase == period - 1, int(half >= period), after)

                return per_speed(test)

            m.d.tx += [self.txc_o[0].eq(txc_next(0)), self.txc_o[1].eq(txc_next(1))]

    def _receive(self, m):
        rx = self.gmii_rx
        rx_dv = self.rx_ctl_i[0]
        rx_er = self.rx_ctl_i[0] ^ self.rx_ctl_i[1]
        m.d.comb += [
            self.rx_clk_enable.eq(1),
            rx.rxd.eq(Cat(self.rxd_i[0], self.rxd_i[1])),
            rx.rx_dv.eq(rx_dv),
            rx.rx_er.eq(rx_er),
        ]
        with m.If(~rx_dv & ~rx_er):  # between frames RXD carries the link status
            m.d.rx += [
                self.inband_link.eq(self.rxd_i[0][0]),
                self.inband_speed.eq(self.rxd_i[0][1:3]),
                self.inband_full_duplex.eq(self.rxd_i[0][3]),
            ]


class RgmiiPins(wiring.Component):
    """The DDR buffers between an :class:`RgmiiAdapter` (or anything with its pin members
    ``txd_o``, ``tx_ctl_o``, ``txc_o``, ``rxd_i``, ``rx_ctl_i``) and a platform resource.

    ``resource`` is what ``platform.request("eth_rgmii", n, dir="-")`` returns; boards
    name the control pins ``tx_ctl``/``rx_ctl`` or ``tx_ctrl``/``rx_ctrl`` and both work.
    ``rx_clk`` is constrained on its pin to ``rx_clk_hz`` and drives ``ClockSignal("rx")``.
    """

    def __init__(self, adapter, resource, rx_clk_hz: float = 125e6):
        self.adapter = adapter
        self.resource = resource
        self.rx_clk_hz = rx_clk_hz
        super().__init__({"phy_reset": In(1)})

    @staticmethod
    def _pin(resource, *names):
        for name in names:
            if hasattr(resource, name):
                return getattr(resource, name)
        raise ValueError(f"RGMII resource has none of the pins {names}")

    def elaborate(self, platform):
        m = Module()
        res, adapter = self.resource, self.adapter
        platform.add_clock_constraint(res.rx_clk.io, self.rx_clk_hz)
        m.submodules.rx_clk = rx_clk = io.Buffer("i", res.rx_clk)
        m.d.comb += ClockSignal("rx").eq(rx_clk.i)

        m.submodules.rxd = rxd = io.DDRBuffer("i", res.rx_data, i_domain="rx")
        rx_ctl_port = self._pin(res, "rx_ctl", "rx_ctrl")
        m.submodules.rx_ctl = rx_ctl = io.DDRBuffer("i", rx_ctl_port, i_domain="rx")
        m.submodules.txd = txd = io.DDRBuffer("o", res.tx_data, o_domain="tx")
        tx_ctl_port = self._pin(res, "tx_ctl", "tx_ctrl")
        m.submodules.tx_ctl = tx_ctl = io.DDRBuffer("o", tx_ctl_port, o_domain="tx")
        m.submodules.txc = txc = io.DDRBuffer("o", res.tx_clk, o_domain="tx90")
        m.submodules.phy_rst = phy_rst = io.Buffer("o", res.rst)
        m.d.comb += [
            adapter.rxd_i[0].eq(rxd.i[0]),
            adapter.rxd_i[1].eq(rxd.i[1]),
            adapter.rx_ctl_i[0].eq(rx_ctl.i[0]),
            adapter.rx_ctl_i[1].eq(rx_ctl.i[1]),
            txd.o[0].eq(adapter.txd_o[0]),
            txd.o[1].eq(adapter.txd_o[1]),
            tx_ctl.o[0].eq(adapter.tx_ctl_o[0]),
            tx_ctl.o[1].eq(adapter.tx_ctl_o[1]),
            phy_rst.o.eq(self.phy_reset),
        ]
        # TXC's pattern comes from the tx domain. A tx90 rising edge is only 2 ns after
        # a tx edge, so the pattern is re-timed on the falling edge of tx90 (6 ns after
        # tx) and the ODDR takes it 4 ns later. TXC thereby lags the data by one clock
        # more than designed, which only moves the 10/100 TXC edge within its 40 ns eye.
        m.domains.tx90_fall = ClockDomain("tx90_fall", clk_edge="neg", local=True)
        m.d.comb += [
            ClockSignal("tx90_fall").eq(ClockSignal("tx90")),
            ResetSignal("tx90_fall").eq(ResetSignal("tx90")),
        ]
        txc_pattern = Signal(2)
        m.d.tx90_fall += txc_pattern.eq(Cat(adapter.txc_o[0], adapter.txc_o[1]))
        m.d.comb += [txc.o[0].eq(txc_pattern[0]), txc.o[1].eq(txc_pattern[1])]
        return m
