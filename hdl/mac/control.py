"""``MacControl``: the hardware behind the register map's MAC block.

Its ``regs`` port takes the CSR bank's ``bank.mac`` (MAC_CTRL, MAC_IFG, MAC_MAX_LEN and,
with flow control, MAC_ADDR_*, MAC_FC_*) in the ``sync`` (system) domain, and its other
ports are :class:`~macdma.hdl.mac.mac.EthMac`'s settings in the PHY domains that use them.
MAC settings are quasi-static (change them while the paths are idle), so each bit is simply
synchronised into its PHY domain (two flip-flops, no handshake).

802.3x PAUSE: the MAC acts on PAUSE frames to 01-80-C2-00-00-01 (and to the station address
with MAC_FC_CTRL.check_ucast) and sends an XOFF while the RX FIFO is at or above
MAC_FC_WATER.high (or MAC_FC_CTRL.xoff is 1), an XON once it is below MAC_FC_WATER.low: the
hysteresis runs in the ``rx`` domain, where the FIFO level is counted.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from ..bus.csr_bank import block_signature
from ..regmap import REGISTER_MAP
from .flow_control import (
    MAC_CONTROL_ETHERTYPE,
    PAUSE_MULTICAST_ADDRESS,
    PAUSE_OPCODE,
    McfRxConfig,
    PauseRxConfig,
    PauseTxConfig,
)
from .mac import MacConfig

__all__ = ["MacControl"]


class MacControl(wiring.Component):
    """The MAC block's registers to the MAC's settings, across the clock domains.

    Parameters:
        flow_control: the MAC has 802.3x PAUSE (``EthMac(flow_control=True)``); without it
                      the MAC_ADDR_* and MAC_FC_* registers act on nothing and
                      MAC_FC_STATUS reads 0.
        fill_width:   width of the RX FIFO's fill level in bytes (``RxFrameFifo.fill_bytes``).

    Members
    -------
    regs : In(block_signature(MAC block))
        The CSR bank's ``bank.mac``, ``sync`` domain.
    config : Out(MacConfig)
        ``ifg``, ``tx_enable`` in the ``tx`` domain; ``rx_max_length``, ``rx_enable`` in
        the ``rx`` domain.
    tx_mii_select, rx_mii_select : Out(1)
        MAC_CTRL.mii_select in the ``tx`` and ``rx`` domains.

    With ``flow_control``:

    rx_lfc_en : Out(1); mcf_rx_config : Out(McfRxConfig); rx_lfc_config : Out(PauseRxConfig)
        ``rx`` domain: which received MAC control frames are PAUSE frames and whether they
        act (MAC_FC_CTRL.rx_pause, forward, check_ucast, the station address).
    tx_lfc_pause_en : Out(1); tx_lfc_config : Out(PauseTxConfig); tx_lfc_req : Out(1)
        ``tx`` domain: received PAUSE frames stop the transmitter (rx_pause), what the
        XOFF/XON frames sent carry (tx_pause, MAC_FC_QUANTA, the station address), and the
        XOFF request (the RX FIFO's hysteresis or MAC_FC_CTRL.xoff).
    rx_fifo_fill_bytes : In(fill_width)
        The RX FIFO's fill level, ``rx`` domain.
    rx_paused, xoff_sent : In(1)
        Levels from the MAC (``rx_lfc_req``, ``tx_flow_stats.lfc_paused``), any domain:
        read back in MAC_FC_STATUS.
    wait_for_buffers : Out(1)
        ``sync`` domain, for the RX DMA channel: MAC_FC_CTRL.tx_pause (a frame without a
        buffer waits in the FIFO, so the FIFO's level is the driver's backlog and the XOFF
        pushes back instead of frames being dropped).
    """

    def __init__(self, *, flow_control: bool, fill_width: int):
        if not isinstance(flow_control, bool):
            raise TypeError(f"flow_control must be True or False, not {flow_control!r}")
        if not isinstance(fill_width, int) or fill_width < 1:
            raise ValueError(f"fill_width must be a positive integer, not {fill_width!r}")
        self._flow_control = flow_control
        members = {
            "regs": In(block_signature(REGISTER_MAP.block("MAC"))),
            "config": Out(MacConfig),
            "tx_mii_select": Out(1),
            "rx_mii_select": Out(1),
        }
        if flow_control:
            members.update(
                {
                    "rx_lfc_en": Out(1),
                    "mcf_rx_config": Out(McfRxConfig),
                    "rx_lfc_config": Out(PauseRxConfig),
                    "tx_lfc_pause_en": Out(1),
                    "tx_lfc_config": Out(PauseTxConfig),
                    "tx_lfc_req": Out(1),
                    "rx_fifo_fill_bytes": In(fill_width),
                    "rx_paused": In(1),
                    "xoff_sent": In(1),
                    "wait_for_buffers": Out(1),
                }
            )
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        regs = self.regs
        _synchronise(
            m,
            "config",
            {
                "tx": [
                    (regs.ifg, self.config.ifg),
                    (regs.ctrl.tx_enable, self.config.tx_enable),
                    (regs.ctrl.mii_select, self.tx_mii_select),
                ],
                "rx": [
                    (regs.max_len, self.config.rx_max_length),
                    (regs.ctrl.rx_enable, self.config.rx_enable),
                    (regs.ctrl.mii_select, self.rx_mii_select),
                ],
            },
        )
        if self._flow_control:
            # A submodule, so the synthesis report can count what flow control costs.
            m.submodules.flow_control = self._pause(Module())
        return m

    def _pause(self, m):
        regs = self.regs
        fc = regs.fc_ctrl
        station = Cat(regs.addr_lo, regs.addr_hi)
        mcf, lfc_rx, lfc_tx = self.mcf_rx_config, self.rx_lfc_config, self.tx_lfc_config
        _synchronise(
            m,
            "fc",
            {
                "rx": [
                    (fc.rx_pause, self.rx_lfc_en),
                    (fc.rx_pause, mcf.enable),
                    (fc.rx_pause, lfc_rx.en),
                    (fc.forward, mcf.forward),
                    (fc.check_ucast, mcf.check_eth_dst_ucast),
                    (station, mcf.eth_dst_ucast),
                ],
                "tx": [
                    (fc.rx_pause, self.tx_lfc_pause_en),
                    (fc.tx_pause, lfc_tx.en),
                    (station, lfc_tx.eth_src),
                    (regs.fc_quanta.quanta, lfc_tx.quanta),
                    (regs.fc_quanta.refresh, lfc_tx.refresh),
                ],
            },
        )
        m.d.comb += [
            self.wait_for_buffers.eq(fc.tx_pause),
            mcf.eth_dst_mcast.eq(PAUSE_MULTICAST_ADDRESS),
            mcf.check_eth_dst_mcast.eq(1),
            mcf.eth_type.eq(MAC_CONTROL_ETHERTYPE),
            mcf.opcode_lfc.eq(PAUSE_OPCODE),
            mcf.check_opcode_lfc.eq(1),
            lfc_rx.opcode.eq(PAUSE_OPCODE),
            lfc_tx.eth_dst.eq(PAUSE_MULTICAST_ADDRESS),
            lfc_tx.eth_type.eq(MAC_CONTROL_ETHERTYPE),
            lfc_tx.opcode.eq(PAUSE_OPCODE),
        ]

        # The XOFF condition, with hysteresis, where the FIFO level is counted (rx clock).
        water = regs.fc_water
        high = Signal(len(water.high), name="water_high")
        low = Signal(len(water.low), name="water_low")
        forced = Signal(len(fc.xoff), name="xoff_forced")
        _synchronise(m, "water", {"rx": [(water.high, high), (water.low, low), (fc.xoff, forced)]})
        fill = self.rx_fifo_fill_bytes
        above_high = Signal()
        with m.If(fill >= high):
            m.d.rx += above_high.eq(1)
        with m.Elif(fill < low):
            m.d.rx += above_high.eq(0)
        xoff_wanted = Signal()
        m.d.rx += xoff_wanted.eq(above_high | forced)
        m.submodules.tx_lfc_req_sync = FFSynchronizer(xoff_wanted, self.tx_lfc_req, o_domain="tx")

        status = regs.fc_status
        m.submodules.fc_rx_paused_sync = FFSynchronizer(
            self.rx_paused, status.rx_paused, o_domain="sync"
        )
        m.submodules.fc_xoff_sent_sync = FFSynchronizer(
            self.xoff_sent, status.xoff_sent, o_domain="sync"
        )
        return m


def _synchronise(m, name, settings):
    """One :class:`FFSynchronizer` per ``(source, target)`` pair of ``settings`` (a dict
    from the target's domain to its pairs), named ``<domain>_<name>_sync<index>``."""
    for domain, pairs in settings.items():
        for index, (source, target) in enumerate(pairs):
            m.submodules[f"{domain}_{name}_sync{index}"] = FFSynchronizer(
                source, target, o_domain=domain
            )
