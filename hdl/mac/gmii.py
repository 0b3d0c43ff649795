"""GMII/MII pin groups as seen from the MAC.

In MII mode (10/100 Mb/s) the same pins carry one nibble per enabled clock on bits 3:0,
low nibble first; in GMII mode (1000 Mb/s) one byte per enabled clock.
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


class GmiiTxSignature(wiring.Signature):
    """Transmit pins, driven by the MAC."""

    def __init__(self):
        super().__init__({"txd": Out(8), "tx_en": Out(1), "tx_er": Out(1)})


class GmiiRxSignature(wiring.Signature):
    """Receive pins, driven by the PHY (the MAC side is ``In``)."""

    def __init__(self):
        super().__init__({"rxd": In(8), "rx_dv": In(1), "rx_er": In(1)})
