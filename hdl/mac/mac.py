"""The Ethernet MAC core: transmitter and receiver, with per-frame status reports.

``EthMac`` uses two clock domains, ``tx`` and ``rx``, which the enclosing design
defines (the PHY's clocks). Everything on the client side of each path lives in that
path's domain; the SoC puts async FIFOs between them and its system clock.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out, connect, flipped

from .flow_control import (
    McfReceiver,
    McfRxConfig,
    McfTransmitter,
    PauseReceiver,
    PauseRxConfig,
    PauseTransmitter,
    PauseTxConfig,
    RxFlowStats,
    TxFlowStats,
)
from .frame import TS_ID_BITS, ByteBeat, RxByteBeat, RxError, RxStatus, TxByteBeat, TxStatus
from .gmii import GmiiRxSignature, GmiiTxSignature
from .rx import GmiiRxDecoder, MacRx
from .slice import StreamRegisterSlice
from .tx import MacTx


class MacConfig(data.Struct):
    """Run-time settings. Quasi-static: change them while the paths are idle."""

    ifg: 8  # idle byte times between transmitted frames (default 12)
    tx_enable: 1
    rx_enable: 1
    rx_max_length: 16  # longest good frame including FCS (default 1518)


#: The members every build has.
_MEMBERS = {
    "tx": In(stream.Signature(TxByteBeat)),
    "rx": Out(stream.Signature(RxByteBeat, always_ready=True)),
    "gmii_tx": Out(GmiiTxSignature()),
    "gmii_rx": Out(GmiiRxSignature()),
    "tx_clk_enable": In(1),
    "rx_clk_enable": In(1),
    "tx_mii_select": In(1),
    "rx_mii_select": In(1),
    "config": In(MacConfig),
    "tx_status": Out(stream.Signature(TxStatus, always_ready=True)),
    "rx_status": Out(stream.Signature(RxStatus, always_ready=True)),
    "rx_preamble_error": Out(1),
    "rx_dropped_disabled": Out(1),
    "tx_error_underflow": Out(1),
    "rx_error_bad_frame": Out(1),
    "rx_error_bad_fcs": Out(1),
}

#: The members a build with flow control adds (docstring of :class:`EthMac`).
_FLOW_CONTROL_MEMBERS = {
    "tx_lfc_req": In(1),
    "tx_lfc_resend": In(1),
    "tx_lfc_pause_en": In(1),
    "tx_pause_req": In(1),
    "tx_pause_ack": Out(1),
    "rx_lfc_en": In(1),
    "rx_lfc_ack": In(1),
    "rx_lfc_req": Out(1),
    "mcf_rx_config": In(McfRxConfig),
    "rx_lfc_config": In(PauseRxConfig),
    "tx_lfc_config": In(PauseTxConfig),
    "tx_flow_stats": Out(TxFlowStats),
    "rx_flow_stats": Out(RxFlowStats),
}


#: The members a build with PTP timestamps adds (docstring of :class:`EthMac`).
_PTP_MEMBERS = {
    "tx_ts_sfd": Out(1),
    "tx_ts_id": Out(TS_ID_BITS),
    "rx_sfd": Out(1),
}

#: Frames between the transmit stream's input and MacTx's SFD at once: two beats in the
#: register slice (each may be a one-byte frame) and the frame MacTx is starting.
TX_FRAMES_IN_FLIGHT = 4


class EthMac(wiring.Component):
    """Ethernet MAC for GMII (1000 Mb/s) and MII (10/100 Mb/s).

    Members
    -------
    tx : In(stream TxByteBeat), ``tx`` domain
        Frames to send, without FCS. ``error`` on the last beat aborts the frame. With
        ``ptp=True``, ``ts_request`` on a frame's first beat is 0 or the number of the
        frame's request for its SFD time (ignored otherwise).
    rx : Out(stream RxByteBeat, always ready), ``rx`` domain
        Received frames without FCS; ``error`` on the last beat marks a bad frame, and
        that beat's ``meta.cause`` says why (the ``rx_status`` report of the same cycle;
        the MAC leaves ``meta``'s other fields 0).
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

    With ``flow_control=True`` (802.3x PAUSE, :mod:`.flow_control`), also, with the
    meanings of verilog-ethernet ``eth_mac_1g``'s ports of the same names:

    tx_lfc_req, tx_lfc_resend, tx_lfc_pause_en, tx_pause_req : In(1), ``tx`` domain
        Ask the peer to pause (XOFF while high, XON when it falls); send the current
        state again; let received PAUSE frames pause this transmitter; pause it anyway.
    tx_pause_ack : Out(1), ``tx`` domain
        The transmitter is paused at a frame boundary.
    rx_lfc_en, rx_lfc_ack : In(1); rx_lfc_req : Out(1), ``rx`` domain
        Act on received PAUSE frames; a received PAUSE's timer is running (it counts only
        while acknowledged: by ``rx_lfc_ack`` or, with ``tx_lfc_pause_en``, by this
        transmitter's ``tx_pause_ack``).
    mcf_rx_config : In(McfRxConfig), rx_lfc_config : In(PauseRxConfig), ``rx`` domain
    tx_lfc_config : In(PauseTxConfig), ``tx`` domain
    tx_flow_stats : Out(TxFlowStats), ``tx`` domain; rx_flow_stats : Out(RxFlowStats),
        ``rx`` domain

    ``remove_control_frames`` (only with flow control) says what becomes of a recognised
    MAC control frame that is not forwarded (``mcf_rx_config.forward`` 0): False, as
    ``eth_mac_1g``, it reaches ``rx`` with ``error`` on its last beat, one ``rx`` clock
    later than any frame without flow control; True, it never reaches ``rx`` (for a client
    that takes every frame it is given: the SoC's RX FIFO and DMA), and every frame
    reaches ``rx`` 16 bytes later while recognition is on. Either way ``rx_status``
    reports it as the wire delivered it (a good PAUSE is a good frame).

    With ``ptp=True`` (timestamps, :mod:`.ptp`), also:

    tx_ts_sfd : Out(1); tx_ts_id : Out(TS_ID_BITS), ``tx`` domain
        Strobe: the SFD of a frame that asked goes onto the pins at the next symbol;
        the request's number.
    rx_sfd : Out(1), ``rx`` domain
        Strobe: an SFD was received (one per frame start, delivered or not).
    """

    def __init__(
        self,
        *,
        flow_control: bool = False,
        remove_control_frames: bool = False,
        ptp: bool = False,
    ):
        for name, value in (
            ("flow_control", flow_control),
            ("remove_control_frames", remove_control_frames),
            ("ptp", ptp),
        ):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be True or False, not {value!r}")
        if remove_control_frames and not flow_control:
            raise ValueError("remove_control_frames=True needs flow_control=True")
        self.flow_control = flow_control
        self.remove_control_frames = remove_control_frames
        self.ptp = ptp
        members = dict(_MEMBERS)
        if flow_control:
            members.update(_FLOW_CONTROL_MEMBERS)
        if ptp:
            members.update(_PTP_MEMBERS)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        tx_domain = DomainRenamer("tx")
        rx_domain = DomainRenamer("rx")

        m.submodules.tx_mac = tx_mac = tx_domain(MacTx())
        # MacTx's CRC and FSM must start from flip-flops to close 125 MHz: the slice
        # registers the stream (and its ready) between whatever feeds it and MacTx.
        m.submodules.tx_slice = tx_slice = tx_domain(StreamRegisterSlice(ByteBeat))
        connect(m, tx_slice.o, tx_mac.i)
        # What enters the slice is committed to the wire: MacTx sends it as soon as it
        # can. While the transmitter is off, a frame's first byte waits outside (the rest
        # of a frame that already entered still follows), so a frame that cannot start
        # stays where a TX channel reset can still flush it whole: never held in the slice
        # and sent as a runt (the start of a flushed frame, then the FIFO's abort byte)
        # when the transmitter is turned on again (issue 17).
        # `may_enter` is a register (the transmitter's enable as seen one clock earlier), so
        # the ready the TX FIFO's read side waits on is two flip-flops and one LUT away.
        tx_slice_in = stream.Signature(ByteBeat).flip().create()
        slice_in_frame = Signal()  # the slice has taken a frame's first byte, not its last
        may_enter = Signal()  # slice_in_frame | tx_enable
        m.d.comb += [
            tx_slice.i.payload.eq(tx_slice_in.payload),
            tx_slice.i.valid.eq(tx_slice_in.valid & may_enter),
            tx_slice_in.ready.eq(tx_slice.i.ready & may_enter),
        ]
        slice_in_frame_next = Mux(
            tx_slice.i.valid & tx_slice.i.ready, ~tx_slice.i.p.last, slice_in_frame
        )
        m.d.tx += [
            slice_in_frame.eq(slice_in_frame_next),
            may_enter.eq(slice_in_frame_next | self.config.tx_enable),
        ]
        # The bytes go on; the timestamp request is taken as a frame enters the slice.
        client_tx = stream.Signature(ByteBeat).create(path=("client_tx",))
        m.d.comb += [
            client_tx.valid.eq(self.tx.valid),
            client_tx.p.data.eq(self.tx.p.data),
            client_tx.p.last.eq(self.tx.p.last),
            client_tx.p.error.eq(self.tx.p.error),
            self.tx.ready.eq(client_tx.ready),
        ]
        if self.flow_control:
            self._flow_control_tx(m, tx_mac, tx_slice, client_tx, tx_slice_in)
        else:
            connect(m, client_tx, tx_slice_in)
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
        if self.ptp:
            frame_entering = tx_slice.i.valid & tx_slice.i.ready & ~slice_in_frame
            self._tx_timestamp_requests(m, tx_mac, frame_entering)

        m.submodules.rx_decoder = rx_decoder = rx_domain(GmiiRxDecoder())
        m.submodules.rx_mac = rx_mac = rx_domain(MacRx())
        connect(m, rx_decoder.gmii, flipped(self.gmii_rx))
        if self.flow_control:
            client_rx, client_status = self._flow_control_rx(m, rx_mac)
        else:
            client_rx, client_status = rx_mac.o, rx_mac.status
        self._rx_client(m, client_rx, client_status)
        m.d.comb += [
            rx_decoder.clk_enable.eq(self.rx_clk_enable),
            rx_decoder.mii_select.eq(self.rx_mii_select),
            rx_mac.i.eq(rx_decoder.o),
            rx_mac.cfg_enable.eq(self.config.rx_enable),
            rx_mac.cfg_max_length.eq(self.config.rx_max_length),
            self.rx_preamble_error.eq(rx_mac.preamble_error),
            self.rx_dropped_disabled.eq(rx_mac.dropped_disabled),
        ]
        if self.ptp:
            m.d.comb += self.rx_sfd.eq(rx_decoder.o.start)
        # The frame-error pulses come from the MAC's own checks, before any control frame
        # is flagged or taken out of the stream: a PAUSE never pulses them.
        rx_status = rx_mac.status
        m.d.rx += [
            self.rx_error_bad_frame.eq(rx_status.valid & (rx_status.p.error != RxError.NONE)),
            self.rx_error_bad_fcs.eq(rx_status.valid & (rx_status.p.error == RxError.FCS)),
        ]
        return m

    def _tx_timestamp_requests(self, m, tx_mac, frame_entering):
        """Which MacTx SFD belongs to a frame that asked for a time: one flag per frame
        entering the register slice (``frame_entering``: its first byte does; client
        frames carry ``ts_request`` in ``tx``, control frames never ask), taken off in order by
        MacTx's SFDs, one per frame."""
        tx_domain = DomainRenamer("tx")
        m.submodules.tx_ts_flags = flags = tx_domain(
            SyncFIFO(width=TS_ID_BITS, depth=TX_FRAMES_IN_FLIGHT)
        )
        # The flag goes into the queue a clock after its frame's first byte entered the
        # slice, so the queue's level logic is not at the end of the handshake's path
        # (the tx clock's critical path on the Versa); MacTx's SFD for that frame comes at
        # least the preamble's 8 byte times later.
        client = self.tx.valid & self.tx.ready  # the beat entering is the client's
        push = Signal()
        push_id = Signal(TS_ID_BITS)
        m.d.tx += [push.eq(frame_entering), push_id.eq(Mux(client, self.tx.p.ts_request, 0))]
        m.d.comb += [
            flags.w_en.eq(push),
            flags.w_data.eq(push_id),
            flags.r_en.eq(tx_mac.sfd),
            self.tx_ts_sfd.eq(tx_mac.sfd & flags.r_rdy & (flags.r_data != 0)),
            self.tx_ts_id.eq(flags.r_data),
        ]

    def _flow_control_tx(self, m, tx_mac, tx_slice, client_tx, tx_slice_in):
        """Client -> control frame insertion and pause gate -> register slice -> MacTx;
        the PAUSE sender."""
        tx_domain = DomainRenamer("tx")
        m.submodules.mcf_tx = mcf_tx = tx_domain(McfTransmitter())
        m.submodules.pause_tx = pause_tx = tx_domain(PauseTransmitter())
        connect(m, client_tx, mcf_tx.i)
        connect(m, mcf_tx.o, tx_slice_in)
        connect(m, pause_tx.request, mcf_tx.request)
        # A received PAUSE (rx domain) pauses this transmitter when tx_lfc_pause_en.
        rx_pause_req = Signal()
        m.submodules.rx_lfc_req_sync = FFSynchronizer(self.rx_lfc_req, rx_pause_req, o_domain="tx")
        # Registered: with the slice ready for a byte, the client's ready would otherwise
        # follow the tx_pause_req pin combinationally.
        pause_req = Signal()
        m.d.tx += pause_req.eq(self.tx_pause_req | (self.tx_lfc_pause_en & rx_pause_req))
        m.d.comb += [
            pause_tx.tx_lfc_req.eq(self.tx_lfc_req),
            pause_tx.tx_lfc_resend.eq(self.tx_lfc_resend),
            pause_tx.config.eq(self.tx_lfc_config),
            pause_tx.clk_enable.eq(self.tx_clk_enable),
            pause_tx.mii_select.eq(self.tx_mii_select),
            mcf_tx.config.eq(self.tx_lfc_config),
            mcf_tx.pause_req.eq(pause_req),
            # A byte still in the slice is a frame MacTx has not finished (or started).
            mcf_tx.mac_idle.eq(tx_mac.idle & ~tx_slice.occupied),
            self.tx_pause_ack.eq(mcf_tx.pause_ack),
            self.tx_flow_stats.eq(pause_tx.stats),
            self.tx_flow_stats.mcf.eq(mcf_tx.stat_mcf),
        ]

    def _rx_client(self, m, beats, status):
        """The client's ``rx`` stream: the bytes, with the frame's cause in the last beat's
        ``meta`` (each status report comes in the cycle of its frame's last byte)."""
        connect(m, status, flipped(self.rx_status))
        m.d.comb += [
            self.rx.valid.eq(beats.valid),
            self.rx.p.data.eq(beats.p.data),
            self.rx.p.last.eq(beats.p.last),
            self.rx.p.error.eq(beats.p.error),
            self.rx.p.meta.cause.eq(status.p.error),
        ]

    def _flow_control_rx(self, m, rx_mac):
        """MacRx -> control frame recogniser (flags or removes) -> client; the pause timer.
        Returns the byte and status streams the client sees."""
        rx_domain = DomainRenamer("rx")
        m.submodules.mcf_rx = mcf_rx = rx_domain(McfReceiver(remove=self.remove_control_frames))
        m.submodules.pause_rx = pause_rx = rx_domain(PauseReceiver())
        connect(m, rx_mac.o, mcf_rx.i)
        connect(m, rx_mac.status, mcf_rx.i_status)
        connect(m, mcf_rx.event, pause_rx.event)
        # The pause timer runs while the transmitter (tx domain) says it has stopped.
        tx_paused = Signal()
        m.submodules.tx_pause_ack_sync = FFSynchronizer(
            self.tx_pause_ack & self.tx_lfc_pause_en, tx_paused, o_domain="rx"
        )
        m.d.comb += [
            mcf_rx.config.eq(self.mcf_rx_config),
            pause_rx.config.eq(self.rx_lfc_config),
            pause_rx.rx_lfc_en.eq(self.rx_lfc_en),
            pause_rx.rx_lfc_ack.eq(self.rx_lfc_ack | tx_paused),
            pause_rx.clk_enable.eq(self.rx_clk_enable),
            pause_rx.mii_select.eq(self.rx_mii_select),
            self.rx_lfc_req.eq(pause_rx.rx_lfc_req),
            self.rx_flow_stats.eq(pause_rx.stats),
            self.rx_flow_stats.mcf.eq(mcf_rx.stat_mcf),
        ]
        return mcf_rx.o, mcf_rx.o_status
