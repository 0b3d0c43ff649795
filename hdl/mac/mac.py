"""The Ethernet MAC core: transmitter and receiver, with per-frame status reports.

``EthMac`` uses two clock domains, ``tx`` and ``rx``, which the enclosing design
defines (the PHY's clocks). Everything on the client side of each path lives in that
path's domain; the SoC puts async FIFOs between them and its system clock.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from .frame import ByteBeat, RxError, RxStatus, TxStatus
from .gmii import GmiiRxSignature, GmiiTxSignature
from .rx import GmiiRxDecoder, MacRx
from .tx import MacTx


class MacConfig(data.Struct):
    """Run-time settings. Quasi-static: change them while the paths are idle."""

    ifg: 8  # idle byte times between transmitted frames (default 12)
    tx_enable: 1
    rx_enable: 1
    rx_max_length: 16  # longest good frame including FCS (default 1518)


class EthMac(wiring.Component):
    """Ethernet MAC for GMII (1000 Mb/s) and MII (10/100 Mb/s).

    Members
    -------
    tx : In(stream ByteBeat), ``tx`` domain
        Frames to send, without FCS. ``error`` on the last beat aborts the frame.
    rx : Out(stream ByteBeat, always ready), ``rx`` domain
        Received frames without FCS; ``error`` on the last beat marks a bad frame.
    gmii_tx, gmii_rx
        The PHY pins.
    tx_clk_enable, rx_clk_enable, tx_mii_select, rx_mii_select : In(1)
        Per direction: which clocks carry a symbol, and MII nibble mode.
    config : In(MacConfig)
    tx_status : Out(stream TxStatus, always ready), ``tx`` domain
    rx_status : Out(stream RxStatus, always ready), ``rx`` domain
    rx_preamble_error, rx_dropped_disabled : Out(1), ``rx`` domain
        One report per frame (see :mod:`.frame`) and pulses for frames never delivered:
        what :mod:`.stats` counts. The core keeps no counters itself, so a design can
        count in the PHY's domains (the standalone top) or after crossing to its
        system clock (the SoC).
    tx_error_underflow, rx_error_bad_frame, rx_error_bad_fcs : Out(1)
        Registered one-cycle pulses in their path's domain, one per affected frame.
        ``rx_error_bad_fcs`` comes with ``rx_error_bad_frame`` for an FCS error.
    """

    tx: In(stream.Signature(ByteBeat))
    rx: Out(stream.Signature(ByteBeat, always_ready=True))
    gmii_tx: Out(GmiiTxSignature())
    gmii_rx: Out(GmiiRxSignature())
    tx_clk_enable: In(1)
    rx_clk_enable: In(1)
    tx_mii_select: In(1)
    rx_mii_select: In(1)
    config: In(MacConfig)
    tx_status: Out(stream.Signature(TxStatus, always_ready=True))
    rx_status: Out(stream.Signature(RxStatus, always_ready=True))
    rx_preamble_error: Out(1)
    rx_dropped_disabled: Out(1)
    tx_error_underflow: Out(1)
    rx_error_bad_frame: Out(1)
    rx_error_bad_fcs: Out(1)

    def elaborate(self, platform):
        m = Module()
        tx_domain = DomainRenamer("tx")
        rx_domain = DomainRenamer("rx")

        m.submodules.tx_mac = tx_mac = tx_domain(MacTx())
        connect(m, flipped(self.tx), tx_mac.i)
        connect(m, tx_mac.gmii, flipped(self.gmii_tx))
        connect(m, tx_mac.status, flipped(self.tx_status))
        m.d.comb += [
            tx_mac.clk_enable.eq(self.tx_clk_enable),
            tx_mac.mii_select.eq(self.tx_mii_select),
            tx_mac.cfg_enable.eq(self.config.tx_enable),
            tx_mac.cfg_ifg.eq(self.config.ifg),
        ]
        # Status pulses leave through registers so they cannot glitch.
        m.d.tx += self.tx_error_underflow.eq(tx_mac.status.valid & tx_mac.status.p.underrun)

        m.submodules.rx_decoder = rx_decoder = rx_domain(GmiiRxDecoder())
        m.submodules.rx_mac = rx_mac = rx_domain(MacRx())
        connect(m, rx_decoder.gmii, flipped(self.gmii_rx))
        connect(m, rx_mac.o, flipped(self.rx))
        connect(m, rx_mac.status, flipped(self.rx_status))
        m.d.comb += [
            rx_decoder.clk_enable.eq(self.rx_clk_enable),
            rx_decoder.mii_select.eq(self.rx_mii_select),
            rx_mac.i.eq(rx_decoder.o),
            rx_mac.cfg_enable.eq(self.config.rx_enable),
            rx_mac.cfg_max_length.eq(self.config.rx_max_length),
            self.rx_preamble_error.eq(rx_mac.preamble_error),
            self.rx_dropped_disabled.eq(rx_mac.dropped_disabled),
        ]
        rx_status = rx_mac.status
        m.d.rx += [
            self.rx_error_bad_frame.eq(rx_status.valid & (rx_status.p.error != RxError.NONE)),
            self.rx_error_bad_fcs.eq(rx_status.valid & (rx_status.p.error == RxError.FCS)),
        ]
        return m
