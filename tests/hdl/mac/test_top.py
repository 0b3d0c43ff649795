"""The exported ``macdma_eth_mac`` keeps exactly the port list of its contract."""

import re

from macdma.sim.cosim.verilog import export_verilog

#: name -> (direction, width), as issue "MAC core" and docs/mac.md specify.
CONTRACT = {
    "rx_clk": ("input", 1),
    "rx_rst": ("input", 1),
    "tx_clk": ("input", 1),
    "tx_rst": ("input", 1),
    "tx_axis_tdata": ("input", 8),
    "tx_axis_tvalid": ("input", 1),
    "tx_axis_tready": ("output", 1),
    "tx_axis_tlast": ("input", 1),
    "tx_axis_tuser": ("input", 1),
    "rx_axis_tdata": ("output", 8),
    "rx_axis_tvalid": ("output", 1),
    "rx_axis_tlast": ("output", 1),
    "rx_axis_tuser": ("output", 1),
    "gmii_rxd": ("input", 8),
    "gmii_rx_dv": ("input", 1),
    "gmii_rx_er": ("input", 1),
    "gmii_txd": ("output", 8),
    "gmii_tx_en": ("output", 1),
    "gmii_tx_er": ("output", 1),
    "rx_clk_enable": ("input", 1),
    "tx_clk_enable": ("input", 1),
    "rx_mii_select": ("input", 1),
    "tx_mii_select": ("input", 1),
    "cfg_ifg": ("input", 8),
    "cfg_tx_enable": ("input", 1),
    "cfg_rx_enable": ("input", 1),
    "cfg_rx_max_length": ("input", 16),
    "tx_error_underflow": ("output", 1),
    "rx_error_bad_frame": ("output", 1),
    "rx_error_bad_fcs": ("output", 1),
    # 802.3x link-level flow control, as eth_mac_1g names it (issue 15 §4).
    "tx_lfc_req": ("input", 1),
    "tx_lfc_resend": ("input", 1),
    "rx_lfc_en": ("input", 1),
    "rx_lfc_req": ("output", 1),
    "rx_lfc_ack": ("input", 1),
    "tx_lfc_pause_en": ("input", 1),
    "tx_pause_req": ("input", 1),
    "tx_pause_ack": ("output", 1),
    "cfg_mcf_rx_eth_dst_mcast": ("input", 48),
    "cfg_mcf_rx_check_eth_dst_mcast": ("input", 1),
    "cfg_mcf_rx_eth_dst_ucast": ("input", 48),
    "cfg_mcf_rx_check_eth_dst_ucast": ("input", 1),
    "cfg_mcf_rx_eth_src": ("input", 48),
    "cfg_mcf_rx_check_eth_src": ("input", 1),
    "cfg_mcf_rx_eth_type": ("input", 16),
    "cfg_mcf_rx_opcode_lfc": ("input", 16),
    "cfg_mcf_rx_check_opcode_lfc": ("input", 1),
    "cfg_mcf_rx_forward": ("input", 1),
    "cfg_mcf_rx_enable": ("input", 1),
    "cfg_tx_lfc_eth_dst": ("input", 48),
    "cfg_tx_lfc_eth_src": ("input", 48),
    "cfg_tx_lfc_eth_type": ("input", 16),
    "cfg_tx_lfc_opcode": ("input", 16),
    "cfg_tx_lfc_en": ("input", 1),
    "cfg_tx_lfc_quanta": ("input", 16),
    "cfg_tx_lfc_refresh": ("input", 16),
    "cfg_rx_lfc_opcode": ("input", 16),
    "cfg_rx_lfc_en": ("input", 1),
    "stat_tx_mcf": ("output", 1),
    "stat_rx_mcf": ("output", 1),
    "stat_tx_lfc_pkt": ("output", 1),
    "stat_tx_lfc_xon": ("output", 1),
    "stat_tx_lfc_xoff": ("output", 1),
    "stat_tx_lfc_paused": ("output", 1),
    "stat_rx_lfc_pkt": ("output", 1),
    "stat_rx_lfc_xon": ("output", 1),
    "stat_rx_lfc_xoff": ("output", 1),
    "stat_rx_lfc_paused": ("output", 1),
}


def module_ports(verilog: str, module: str) -> dict[str, tuple[str, int]]:
    body = verilog[verilog.index(f"module {module}(") :]
    body = body[: body.index("endmodule")]
    ports = {}
    for direction, msb, name in re.findall(
        r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", body, re.M
    ):
        ports[name] = (direction, int(msb) + 1 if msb else 1)
    return ports


def test_port_list_is_exactly_the_contract(tmp_path):
    path = export_verilog("macdma_eth_mac", out_dir=tmp_path)
    assert path.name == "macdma_eth_mac.v"
    assert module_ports(path.read_text(), "macdma_eth_mac") == CONTRACT
