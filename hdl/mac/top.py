"""``macdma_eth_mac``: the MAC alone, with flat Verilog ports.

Port names follow verilog-ethernet's ``eth_mac_1g`` where the two overlap, so a design
or test bench built around that core can switch to this one. The statistics counters are
not ports of this top (its port list is a contract); they count in the PHY clock
domains and stay reachable in the hierarchy as ``tx_stats.counters__*`` and
``rx_stats.counters__*``.
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out, connect

from .flow_control import McfRxConfig, PauseRxConfig, PauseTxConfig, RxFlowStats, TxFlowStats
from .mac import EthMac
from .stats import RxStatistics, TxStatistics

#: eth_mac_1g's link-level flow-control ports, each an EthMac member of the same name.
LFC_CONTROL_PORTS = {
    "tx_lfc_req": In(1),
    "tx_lfc_resend": In(1),
    "rx_lfc_en": In(1),
    "rx_lfc_req": Out(1),
    "rx_lfc_ack": In(1),
    "tx_lfc_pause_en": In(1),
    "tx_pause_req": In(1),
    "tx_pause_ack": Out(1),
}

#: ``cfg_<prefix><field>`` ports and the EthMac configuration struct each one belongs to.
LFC_CONFIG_PORTS = (
    ("cfg_mcf_rx_", "mcf_rx_config", McfRxConfig),
    ("cfg_tx_lfc_", "tx_lfc_config", PauseTxConfig),
    ("cfg_rx_lfc_", "rx_lfc_config", PauseRxConfig),
)

#: ``stat_<prefix><field>`` strobes and the EthMac statistics struct each one comes from.
LFC_STAT_PORTS = (
    ("stat_tx_", "tx_flow_stats", TxFlowStats),
    ("stat_rx_", "rx_flow_stats", RxFlowStats),
)


#: The ports of eth_mac_1g without flow control, in its order.
_PORTS = {
    "rx_clk": In(1),
    "rx_rst": In(1),
    "tx_clk": In(1),
    "tx_rst": In(1),
    "tx_axis_tdata": In(8),
    "tx_axis_tvalid": In(1),
    "tx_axis_tready": Out(1),
    "tx_axis_tlast": In(1),
    "tx_axis_tuser": In(1),
    "rx_axis_tdata": Out(8),
    "rx_axis_tvalid": Out(1),
    "rx_axis_tlast": Out(1),
    "rx_axis_tuser": Out(1),
    "gmii_rxd": In(8),
    "gmii_rx_dv": In(1),
    "gmii_rx_er": In(1),
    "gmii_txd": Out(8),
    "gmii_tx_en": Out(1),
    "gmii_tx_er": Out(1),
    "rx_clk_enable": In(1),
    "tx_clk_enable": In(1),
    "rx_mii_select": In(1),
    "tx_mii_select": In(1),
    "cfg_ifg": In(8),
    "cfg_tx_enable": In(1),
    "cfg_rx_enable": In(1),
    "cfg_rx_max_length": In(16),
    "tx_error_underflow": Out(1),
    "rx_error_bad_frame": Out(1),
    "rx_error_bad_fcs": Out(1),
}


def _lfc_members():
    members = dict(LFC_CONTROL_PORTS)
    for prefix, _member, layout in LFC_CONFIG_PORTS:
        for name, field in data.Layout.cast(layout):
            members[f"{prefix}{name}"] = In(field.shape)
    for prefix, _member, layout in LFC_STAT_PORTS:
        for name, field in data.Layout.cast(layout):
            members[f"{prefix}{name}"] = Out(field.shape)
    return members


class EthMacTop(wiring.Component):
    """The standalone MAC. ``tx_clk``/``rx_clk`` clock the ``tx`` and ``rx`` domains;
    ``tx_rst``/``rx_rst`` are active high and synchronous to them."""

    def __init__(self):
        super().__init__({**_PORTS, **_lfc_members()})

    def elaborate(self, platform):
        m = Module()
        m.domains.tx = tx = ClockDomain("tx", local=True)
        m.domains.rx = rx = ClockDomain("rx", local=True)
        m.d.comb += [
            tx.clk.eq(self.tx_clk),
            tx.rst.eq(self.tx_rst),
            rx.clk.eq(self.rx_clk),
            rx.rst.eq(self.rx_rst),
        ]
        m.submodules.mac = mac = EthMac(flow_control=True)
        m.submodules.tx_stats = tx_stats = DomainRenamer("tx")(TxStatistics())
        m.submodules.rx_stats = rx_stats = DomainRenamer("rx")(RxStatistics())
        connect(m, mac.tx_status, tx_stats.status)
        connect(m, mac.rx_status, rx_stats.status)
        m.d.comb += [
            rx_stats.preamble_error.eq(mac.rx_preamble_error),
            rx_stats.dropped_disabled.eq(mac.rx_dropped_disabled),
        ]

        m.d.comb += [
            mac.tx.p.data.eq(self.tx_axis_tdata),
            mac.tx.p.last.eq(self.tx_axis_tlast),
            mac.tx.p.error.eq(self.tx_axis_tuser),
            mac.tx.valid.eq(self.tx_axis_tvalid),
            self.tx_axis_tready.eq(mac.tx.ready),
            self.rx_axis_tdata.eq(mac.rx.p.data),
            self.rx_axis_tlast.eq(mac.rx.p.last),
            self.rx_axis_tuser.eq(mac.rx.p.error),
            self.rx_axis_tvalid.eq(mac.rx.valid),
            mac.gmii_rx.rxd.eq(self.gmii_rxd),
            mac.gmii_rx.rx_dv.eq(self.gmii_rx_dv),
            mac.gmii_rx.rx_er.eq(self.gmii_rx_er),
            self.gmii_txd.eq(mac.gmii_tx.txd),
            self.gmii_tx_en.eq(mac.gmii_tx.tx_en),
            self.gmii_tx_er.eq(mac.gmii_tx.tx_er),
            mac.tx_clk_enable.eq(self.tx_clk_enable),
            mac.rx_clk_enable.eq(self.rx_clk_enable),
            mac.tx_mii_select.eq(self.tx_mii_select),
            mac.rx_mii_select.eq(self.rx_mii_select),
            mac.config.ifg.eq(self.cfg_ifg),
            mac.config.tx_enable.eq(self.cfg_tx_enable),
            mac.config.rx_enable.eq(self.cfg_rx_enable),
            mac.config.rx_max_length.eq(self.cfg_rx_max_length),
            self.tx_error_underflow.eq(mac.tx_error_underflow),
            self.rx_error_bad_frame.eq(mac.rx_error_bad_frame),
            self.rx_error_bad_fcs.eq(mac.rx_error_bad_fcs),
        ]
        for name in LFC_CONTROL_PORTS:
            port, member = getattr(self, name), getattr(mac, name)
            pair = (port, member) if LFC_CONTROL_PORTS[name].flow == In else (member, port)
            m.d.comb += pair[1].eq(pair[0])
        for prefix, member, layout in LFC_CONFIG_PORTS:
            for name, _field in data.Layout.cast(layout):
                m.d.comb += getattr(getattr(mac, member), name).eq(getattr(self, prefix + name))
        for prefix, member, layout in LFC_STAT_PORTS:
            for name, _field in data.Layout.cast(layout):
                m.d.comb += getattr(self, prefix + name).eq(getattr(getattr(mac, member), name))
        return m
