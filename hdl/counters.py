"""The MAC's statistics counters: names and meanings, in register order.

Plain Python (no Amaranth) so the register map can list them too: this is the one
source of truth for the counters in :mod:`.stats` and for the STATS register block.
"""

TX_COUNTERS = {
    "tx_frames_good": "Frames transmitted without error.",
    "tx_bytes_good": "Bytes of good transmitted frames (padding and FCS included).",
    "tx_frames_bad": "Frames transmitted with tx_er: aborted by the client or underrun.",
    "tx_bytes_bad": "Bytes of bad transmitted frames.",
    "tx_underruns": "Frames cut short because the client ran dry mid-frame.",
}

RX_COUNTERS = {
    "rx_frames_good": "Frames received without error.",
    "rx_bytes_good": "Bytes of good received frames (FCS included).",
    "rx_frames_bad": "Frames received with an error (sum of the cause counters below).",
    "rx_bytes_bad": "Bytes of bad received frames.",
    "rx_fcs_errors": "Received frames whose only fault is a bad FCS.",
    "rx_runts": "Received frames shorter than 64 bytes including FCS.",
    "rx_oversize": "Received frames longer than MAC_MAX_LEN (+4 with a VLAN tag).",
    "rx_phy_errors": "Received frames with rx_er asserted.",
    "rx_alignment_errors": "Received frames ending on half a byte (MII).",
    "rx_preamble_errors": "Carrier without a start-of-frame delimiter; nothing delivered.",
    "rx_dropped_disabled": "Frames dropped because MAC_CTRL.rx_enable was 0.",
}

#: TX checksum insertion (builds with ``SocParams.tx_checksum``; 0 without).
CHECKSUM_COUNTERS = {
    "tx_csum_skipped": "Frames whose TX checksum request was not honoured and that were "
    "sent as given: cut-through (larger than the TX FIFO) or a request the frame cannot hold.",
}

#: 802.3x flow control (builds with ``SocParams.flow_control``; 0 without).
FLOW_CONTROL_COUNTERS = {
    "tx_pause_frames": "PAUSE frames sent (XOFF and XON).",
    "tx_xoff": "XOFF frames sent (PAUSE with MAC_FC_QUANTA.quanta), refreshes included.",
    "tx_xon": "XON frames sent (PAUSE with quanta 0).",
    "tx_mac_control": "MAC control frames sent.",
    "rx_pause_frames": "PAUSE frames received and acted on (MAC_FC_CTRL.rx_pause).",
    "rx_xoff": "Received PAUSE frames with quanta other than 0.",
    "rx_xon": "Received PAUSE frames with quanta 0.",
    "rx_mac_control": "Good MAC control frames recognised (taken out of the RX stream, "
    "or forwarded with MAC_FC_CTRL.forward).",
}
