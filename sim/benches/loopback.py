"""``macdma_gmii_loopback``: the speed reference of ``macdma bench``.

A top with the SoC's PHY-side pins and nothing behind them: the receive pins are wired
straight to the transmit pins. Driven by the same :class:`~.gmii.GmiiPhy` clocks and
cocotbext-eth models as every MAC bench, it costs what the GMII side alone costs, so the
bench can say how much slower the whole SoC simulates than its wire models do.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

# No `from __future__ import annotations`: wiring.Component reads the port annotations.

LOOPBACK_TOP = "macdma_gmii_loopback"


class GmiiLoopback(wiring.Component):
    """GMII receive pins wired to the transmit pins (no register, no logic).

    The clock, reset and clock-enable inputs exist only so :class:`~.gmii.GmiiPhy` binds
    to the same pin names it uses on the MAC and the SoC.
    """

    tx_clk: In(1)
    rx_clk: In(1)
    tx_rst: In(1)
    rx_rst: In(1)
    tx_clk_enable: In(1)
    rx_clk_enable: In(1)
    gmii_rxd: In(8)
    gmii_rx_dv: In(1)
    gmii_rx_er: In(1)
    gmii_txd: Out(8)
    gmii_tx_en: Out(1)
    gmii_tx_er: Out(1)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [
            self.gmii_txd.eq(self.gmii_rxd),
            self.gmii_tx_en.eq(self.gmii_rx_dv),
            self.gmii_tx_er.eq(self.gmii_rx_er),
        ]
        return m
