"""802.3x link-level flow control: MAC control frames and PAUSE, both directions.

Ref: IEEE Std 802.3-2018 clause 31 (MAC Control) and annex 31B (PAUSE operation).

A MAC control frame is an ordinary frame with EtherType 0x8808; its first two payload
bytes are an opcode, the rest are parameters. PAUSE (opcode 0x0001) carries one parameter,
``pause_time`` in *quanta* of 512 bit times: the receiver of a PAUSE stops sending client
frames for that long, from the end of the frame in progress; a PAUSE with 0 quanta (XON)
lets it resume at once.

The blocks here follow verilog-ethernet's ``eth_mac_1g`` (its ``mac_ctrl_rx``,
``mac_ctrl_tx``, ``mac_pause_ctrl_rx`` and ``mac_pause_ctrl_tx``) in what their ports
mean, so the exported MAC carries that core's link-level flow-control ports, in packet
order:

receive: ``McfReceiver`` (recognise control frames; flag them bad in the client
stream as ``eth_mac_1g`` does, or take them out of it) -> ``PauseReceiver`` (the pause
timer a received PAUSE loads; ``rx_lfc_req``);

transmit: ``PauseTransmitter`` (XOFF when ``tx_lfc_req`` rises, refreshed while it
stays high, XON when it falls) -> ``McfTransmitter`` (puts the control frame on the
wire between client frames and holds client frames back while paused).

Quanta are counted with 8 fractional bits on each enabled PHY clock: 8 bits (GMII) or 4
bits (MII) per clock, i.e. 4/256 or 2/256 of a quantum.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from .frame import ByteBeat, RxError, RxStatus

MAC_CONTROL_ETHERTYPE = 0x8808
PAUSE_OPCODE = 0x0001
#: The reserved multicast address PAUSE frames are sent to (802.3 annex 31B.1).
PAUSE_MULTICAST_ADDRESS = 0x0180C2000001
QUANTUM_BIT_TIMES = 512
#: Fractional bits of the quanta counters (a quantum is 2**8 counter steps).
QUANTA_FRACTION_BITS = 8
#: Destination, source, EtherType, opcode and the 2-byte PAUSE parameter.
MAC_CONTROL_HEADER_BYTES = 18
#: Bytes before the drop decision: destination, source, EtherType and opcode.
MAC_CONTROL_DECISION_BYTES = 16


def quanta_step(mii_select):
    """Counter steps per enabled PHY clock: the bits that clock carries, in 1/256 quanta."""
    gmii_step = 8 * (1 << QUANTA_FRACTION_BITS) // QUANTUM_BIT_TIMES
    mii_step = 4 * (1 << QUANTA_FRACTION_BITS) // QUANTUM_BIT_TIMES
    return Mux(mii_select, mii_step, gmii_step)


class QuantaTimer(wiring.Component):
    """Counts pause quanta (512 bit times) down to zero, in the PHY's clock domain.

    Whole quanta and the fraction of the current one are counted apart: the fraction
    counts up by :func:`quanta_step` per counting clock and each wrap takes one quantum,
    so no wide comparison or saturating subtraction sits on the counter's path (the
    24-bit ``timer - step`` with ``timer > step`` it replaced was the tx clock's critical
    path in a board build). A timer loaded with Q quanta runs out after exactly Q * 512
    bit times of counting clocks.

    Members
    -------
    load : In(1)
        Load ``quanta`` (0 stops the timer); wins over ``count``.
    quanta : In(16)
    count : In(1)
        One PHY clock's worth of bit times has passed (clock enable, and whatever else
        the timer waits for).
    mii_select : In(1)
        MII: a clock carries 4 bits, not 8.
    running : Out(1)
        Quanta remain (a register's bit).
    expire : Out(1)
        This clock's count takes the last quantum: ``running`` falls at the clock edge
        (unless a ``load`` in the same clock starts the timer again).
    """

    load: In(1)
    quanta: In(16)
    count: In(1)
    mii_select: In(1)
    running: Out(1)
    expire: Out(1)

    def elaborate(self, platform):
        m = Module()
        # Whole quanta left less one, as a 17-bit two's complement number: its sign bit is
        # "stopped", so neither `running` nor the expiry needs a comparison of its own.
        remaining = Signal(17, init=(1 << 17) - 1)
        fraction = Signal(QUANTA_FRACTION_BITS)
        step = quanta_step(self.mii_select)
        advanced = fraction + step
        wraps = advanced[QUANTA_FRACTION_BITS]
        decremented = remaining - 1
        m.d.comb += [
            self.running.eq(~remaining[16]),
            self.expire.eq(self.count & self.running & wraps & decremented[16]),
        ]
        with m.If(self.load):
            m.d.sync += [remaining.eq(self.quanta - 1), fraction.eq(0)]
        with m.Elif(self.count & self.running):
            m.d.sync += fraction.eq(advanced)
            with m.If(wraps):
                m.d.sync += remaining.eq(decremented)
        return m


def _big_endian(byte_values):
    """The value of bytes in wire order (first byte most significant), as on the wire."""
    return Cat(*reversed(byte_values))


class McfRxConfig(data.Struct):
    """What makes a received frame a MAC control frame (``eth_mac_1g``'s ``cfg_mcf_rx_*``).

    A frame is one when ``enable`` is set, its EtherType is ``eth_type``, its destination
    is ``eth_dst_mcast`` or ``eth_dst_ucast`` (each compared only when its ``check_`` bit
    is set; with neither set any destination matches), its source is ``eth_src`` (if
    ``check_eth_src``) and its opcode is ``opcode_lfc`` (if ``check_opcode_lfc``).
    Such frames are not for the client unless ``forward`` is set: :class:`McfReceiver`
    flags them bad or takes them out of its stream.
    """

    eth_dst_mcast: 48
    check_eth_dst_mcast: 1
    eth_dst_ucast: 48
    check_eth_dst_ucast: 1
    eth_src: 48
    check_eth_src: 1
    eth_type: 16
    opcode_lfc: 16
    check_opcode_lfc: 1
    forward: 1
    enable: 1


class PauseRxConfig(data.Struct):
    """``cfg_rx_lfc_*``: a MAC control frame with this opcode loads the pause timer."""

    opcode: 16
    en: 1


class PauseTxConfig(data.Struct):
    """``cfg_tx_lfc_*``: the PAUSE frames the MAC sends, and whether it sends any.

    ``quanta`` goes into each XOFF; while ``tx_lfc_req`` stays high the XOFF is sent again
    every ``refresh`` quanta (so the peer's timer never runs out; 0: no refresh)."""

    eth_dst: 48
    eth_src: 48
    eth_type: 16
    opcode: 16
    en: 1
    quanta: 16
    refresh: 16


class MacControlEvent(data.Struct):
    """A received, good MAC control frame: its opcode and first parameter (PAUSE quanta)."""

    opcode: 16
    quanta: 16


class TxFlowStats(data.Struct):
    """``stat_tx_*`` of ``eth_mac_1g``: one-cycle strobes, except the level ``lfc_paused``
    (an XOFF is in force: sent and not yet revoked by an XON)."""

    mcf: 1
    lfc_pkt: 1
    lfc_xon: 1
    lfc_xoff: 1
    lfc_paused: 1


class RxFlowStats(data.Struct):
    """``stat_rx_*`` of ``eth_mac_1g``: one-cycle strobes, except the level ``lfc_paused``
    (a received PAUSE's timer is running)."""

    mcf: 1
    lfc_pkt: 1
    lfc_xon: 1
    lfc_xoff: 1
    lfc_paused: 1


class McfReceiver(wiring.Component):
    """Recognises MAC control frames in the received stream; flags them or takes them out.

    Whether a frame is a MAC control frame is known once its opcode (byte 16) is in; what
    happens to one that is not forwarded (``config.forward`` 0) is a build choice:

    - ``remove=False``, as ``eth_mac_1g``: it stays in the stream, its last beat flagged
      bad (``error``), as a client of that core expects. Every beat passes one register,
      so the client sees each frame one clock later than MacRx gives it.
    - ``remove=True``: it leaves the stream, so a client that takes every frame it is
      given (the SoC's RX FIFO and DMA) never sees it. The receive stream has no
      backpressure, so every frame waits for the decision in a small FIFO while
      recognition is on (``config.enable``): the client sees it
      :data:`MAC_CONTROL_DECISION_BYTES` bytes later (plus the FIFO's two cycles and one
      for the registered field matches). With ``config.enable`` low the decision is made
      at the first byte. A runt that ends right after its opcode (16 or 17 bytes) may be
      removed or delivered flagged bad depending on the link speed; it is counted as a
      runt either way and never acted on.

    Either way the frame's status comes out unchanged (the wire's verdict: a PAUSE is a
    good frame received), so the statistics count every frame on the wire.

    Members
    -------
    i : In(stream ByteBeat, always ready); i_status : In(stream RxStatus, always ready)
        From :class:`~.rx.MacRx` (status with the last beat).
    o : Out(stream ByteBeat, always ready); o_status : Out(stream RxStatus, always ready)
        Every frame (with ``remove``: but the control frames not forwarded), status with
        its last beat. A removed frame's status still comes out, without beats.
    config : In(McfRxConfig)
        Quasi-static.
    event : Out(stream MacControlEvent, always ready)
        One beat per received control frame without errors, at its end (also when
        forwarded).
    stat_mcf : Out(1)
        Strobe with each ``event``.
    """

    i: In(stream.Signature(ByteBeat, always_ready=True))
    i_status: In(stream.Signature(RxStatus, always_ready=True))
    o: Out(stream.Signature(ByteBeat, always_ready=True))
    o_status: Out(stream.Signature(RxStatus, always_ready=True))
    config: In(McfRxConfig)
    event: Out(stream.Signature(MacControlEvent, always_ready=True))
    stat_mcf: Out(1)

    #: Beats held while a decision is pending, plus slack for the FIFO's own latency.
    BEAT_DEPTH = 32
    #: Frames in flight through the FIFO: frames shorter than the decision point follow
    #: each other closely, but each needs at least three symbols on the wire.
    FRAME_DEPTH = 4

    def __init__(self, *, remove: bool):
        if not isinstance(remove, bool):
            raise TypeError(f"remove must be True or False, not {remove!r}")
        self.remove = remove
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        cfg = self.config

        # ---- input side: capture the header, decide, store ------------------------------
        header = [Signal(8, name=f"header{n}") for n in range(MAC_CONTROL_HEADER_BYTES)]
        index = Signal(range(MAC_CONTROL_HEADER_BYTES + 1))  # bytes of the frame so far
        decided = Signal()  # this frame's decision is made
        matched = Signal()  # ... and it was "a control frame"

        dst = _big_endian(header[0:6])
        src = _big_endian(header[6:12])
        eth_type = _big_endian(header[12:14])
        opcode = _big_endian(header[14:16])
        quanta = _big_endian(header[16:18])
        # Each field's match is registered (48-bit comparisons and their combination do
        # not fit one 8 ns cycle together); the header bytes compared no longer change
        # once stored, so the flags are right from the cycle after the opcode is in.
        checking_dst = cfg.check_eth_dst_mcast | cfg.check_eth_dst_ucast
        dst_ok, src_ok, type_ok, opcode_ok = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [
            dst_ok.eq(
                ~checking_dst
                | (cfg.check_eth_dst_mcast & (dst == cfg.eth_dst_mcast))
                | (cfg.check_eth_dst_ucast & (dst == cfg.eth_dst_ucast))
            ),
            src_ok.eq(~cfg.check_eth_src | (src == cfg.eth_src)),
            type_ok.eq(eth_type == cfg.eth_type),
            opcode_ok.eq(~cfg.check_opcode_lfc | (opcode == cfg.opcode_lfc)),
        ]
        is_control = cfg.enable & dst_ok & src_ok & type_ok & opcode_ok
        header_seen = Signal()  # the flags above cover bytes 0..15 of this frame
        m.d.sync += header_seen.eq(index >= MAC_CONTROL_DECISION_BYTES)

        with m.If(self.i.valid):
            with m.Switch(index):
                for n, byte in enumerate(header):
                    with m.Case(n):
                        m.d.sync += byte.eq(self.i.p.data)
            with m.If(index != MAC_CONTROL_HEADER_BYTES):
                m.d.sync += index.eq(index + 1)

        # The decision: at the first byte while recognition is off, once the opcode is in
        # while it is on, and at the last byte for a frame too short to be one.
        decide_now = ~decided & (
            (self.i.valid & ~cfg.enable) | header_seen | (self.i.valid & self.i.p.last)
        )
        recognised = header_seen & is_control
        with m.If(decide_now):
            m.d.sync += [decided.eq(1), matched.eq(recognised)]
        control_frame = matched | (decide_now & recognised)  # this frame, from the decision

        # A good control frame is acted on at its end; it needs its PAUSE parameter.
        frame_end = self.i.valid & self.i.p.last
        good_end = frame_end & (self.i_status.p.error == RxError.NONE)
        holds_parameter = index >= MAC_CONTROL_HEADER_BYTES - 1  # the last byte is byte 17+
        m.d.sync += [self.event.valid.eq(0), self.stat_mcf.eq(0)]
        with m.If(good_end & holds_parameter & control_frame):
            last_quanta = Mux(
                index == MAC_CONTROL_HEADER_BYTES - 1,
                Cat(self.i.p.data, header[16]),
                quanta,
            )
            m.d.sync += [
                self.event.valid.eq(1),
                self.event.p.opcode.eq(opcode),
                self.event.p.quanta.eq(last_quanta),
                self.stat_mcf.eq(1),
            ]
        with m.If(frame_end):
            m.d.sync += [index.eq(0), decided.eq(0), matched.eq(0), header_seen.eq(0)]

        if self.remove:
            self._remove_unforwarded(m, decide_now, recognised & ~cfg.forward)
        else:
            self._flag_unforwarded(m, control_frame & ~cfg.forward)
        return m

    def _flag_unforwarded(self, m, unforwarded):
        """Every beat one clock later; a control frame not forwarded flagged bad at its
        last beat (by then its decision is long made: a frame without errors is 60 bytes
        or more, and one with errors is flagged already)."""
        m.d.sync += [
            self.o.valid.eq(self.i.valid),
            self.o.p.eq(self.i.p),
            self.o_status.valid.eq(self.i_status.valid),
            self.o_status.p.eq(self.i_status.p),
        ]
        with m.If(self.i.p.last & unforwarded):
            m.d.sync += self.o.p.error.eq(1)

    def _remove_unforwarded(self, m, decide_now, remove_frame):
        """Every frame waits in a FIFO for its decision (taken when ``decide_now``:
        ``remove_frame`` or not); the removed ones leave it without a beat on ``o``."""
        m.submodules.beats = beats = SyncFIFOBuffered(
            width=len(self.i.p.as_value()), depth=self.BEAT_DEPTH
        )
        m.submodules.decisions = decisions = SyncFIFOBuffered(width=1, depth=self.FRAME_DEPTH)
        m.submodules.statuses = statuses = SyncFIFOBuffered(
            width=len(self.i_status.p.as_value()), depth=self.FRAME_DEPTH
        )
        m.d.comb += [
            beats.w_data.eq(self.i.p),
            beats.w_en.eq(self.i.valid),
            statuses.w_data.eq(self.i_status.p),
            statuses.w_en.eq(self.i_status.valid),
        ]
        with m.If(decide_now):
            m.d.comb += [decisions.w_en.eq(1), decisions.w_data.eq(remove_frame)]

        # One beat per cycle once its frame is decided.
        beat = Signal.like(self.i.p)
        m.d.comb += beat.eq(beats.r_data)
        can_read = beats.r_rdy & decisions.r_rdy & (~beat.last | statuses.r_rdy)
        m.d.sync += [self.o.valid.eq(0), self.o_status.valid.eq(0)]
        with m.If(can_read):
            m.d.comb += beats.r_en.eq(1)
            m.d.sync += [self.o.valid.eq(~decisions.r_data), self.o.p.eq(beat)]
            with m.If(beat.last):
                m.d.comb += [decisions.r_en.eq(1), statuses.r_en.eq(1)]
                m.d.sync += [self.o_status.valid.eq(1), self.o_status.p.eq(statuses.r_data)]


class PauseReceiver(wiring.Component):
    """The pause timer a received PAUSE loads (``mac_pause_ctrl_rx``'s role).

    A control event whose opcode is ``config.opcode`` (with ``config.en``) loads the
    timer with its quanta (0: XON, ends a pause). ``rx_lfc_req`` is high while the timer
    is not 0 and ``rx_lfc_en`` and ``config.en`` are set; the timer counts down only
    while ``rx_lfc_ack`` says the transmitter has stopped, so the pause lasts the quanta
    from the end of the frame the transmitter was sending.

    Members
    -------
    event : In(stream MacControlEvent, always ready)
    config : In(PauseRxConfig)
    rx_lfc_en, rx_lfc_ack : In(1); rx_lfc_req : Out(1)
    clk_enable, mii_select : In(1)
        The PHY clock enable and MII mode of this path: what one clock is worth in bits.
    stats : Out(RxFlowStats)
        ``lfc_pkt``/``lfc_xon``/``lfc_xoff`` strobes, ``lfc_paused`` = ``rx_lfc_req``;
        ``mcf`` is not driven here.
    """

    event: In(stream.Signature(MacControlEvent, always_ready=True))
    config: In(PauseRxConfig)
    rx_lfc_en: In(1)
    rx_lfc_ack: In(1)
    rx_lfc_req: Out(1)
    clk_enable: In(1)
    mii_select: In(1)
    stats: Out(RxFlowStats)

    def elaborate(self, platform):
        m = Module()
        m.submodules.timer = timer = QuantaTimer()
        pause = self.event.valid & self.config.en & (self.event.p.opcode == self.config.opcode)
        m.d.comb += [
            timer.load.eq(pause),
            timer.quanta.eq(self.event.p.quanta),
            timer.count.eq(self.clk_enable & self.rx_lfc_ack),
            timer.mii_select.eq(self.mii_select),
        ]

        m.d.sync += [
            self.rx_lfc_req.eq(timer.running & self.rx_lfc_en & self.config.en),
            self.stats.lfc_pkt.eq(0),
            self.stats.lfc_xon.eq(0),
            self.stats.lfc_xoff.eq(0),
        ]
        m.d.comb += self.stats.lfc_paused.eq(self.rx_lfc_req)

        with m.If(pause):
            m.d.sync += [
                self.stats.lfc_pkt.eq(1),
                self.stats.lfc_xon.eq(self.event.p.quanta == 0),
                self.stats.lfc_xoff.eq(self.event.p.quanta != 0),
            ]
        return m


class PauseFrameRequest(data.Struct):
    """A control frame for :class:`McfTransmitter` to send: the PAUSE quanta it carries."""

    quanta: 16


class PauseTransmitter(wiring.Component):
    """Decides when to send PAUSE frames (``mac_pause_ctrl_tx``'s role).

    With ``config.en``: when ``tx_lfc_req`` rises an XOFF (``config.quanta``) goes out,
    and again every ``config.refresh`` quanta while it stays high; when it falls an XON
    (quanta 0) goes out, if an XOFF went out before. ``tx_lfc_resend`` sends an XOFF in
    force again (nothing once its XON has gone out).

    Members
    -------
    tx_lfc_req, tx_lfc_resend : In(1)
    config : In(PauseTxConfig)
    clk_enable, mii_select : In(1)
    request : Out(stream PauseFrameRequest)
        To :class:`McfTransmitter`; taken when that frame starts.
    stats : Out(TxFlowStats)
        ``lfc_pkt``/``lfc_xon``/``lfc_xoff`` strobes when a PAUSE is handed over,
        ``lfc_paused`` while the MAC asks the peer to pause (``tx_lfc_req`` as acted on);
        ``mcf`` is not driven here.
    """

    tx_lfc_req: In(1)
    tx_lfc_resend: In(1)
    config: In(PauseTxConfig)
    clk_enable: In(1)
    mii_select: In(1)
    request: Out(stream.Signature(PauseFrameRequest))
    stats: Out(TxFlowStats)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        requested = Signal()  # tx_lfc_req as last acted on
        xoff_in_force = Signal()  # an XOFF went out and no XON since
        send = Signal()  # a PAUSE reflecting `requested` is due
        m.submodules.refresh_timer = refresh_timer = QuantaTimer()
        m.d.comb += [
            refresh_timer.count.eq(self.clk_enable),
            refresh_timer.mii_select.eq(self.mii_select),
        ]

        m.d.comb += self.stats.lfc_paused.eq(requested)
        m.d.sync += [
            self.stats.lfc_pkt.eq(0),
            self.stats.lfc_xon.eq(0),
            self.stats.lfc_xoff.eq(0),
        ]
        with m.If(self.request.ready):
            m.d.sync += self.request.valid.eq(0)

        send_next = Signal()
        m.d.comb += send_next.eq(send | self.tx_lfc_resend)
        with m.If(refresh_timer.expire & requested):
            m.d.comb += send_next.eq(1)
        m.d.sync += send.eq(send_next)

        with m.If(cfg.en & ~self.request.valid):
            with m.If(requested != self.tx_lfc_req):
                m.d.sync += [requested.eq(self.tx_lfc_req), send.eq(1)]
            with m.Elif(send):
                # An XON is only worth sending when an XOFF is in force.
                with m.If(requested | xoff_in_force):
                    m.d.sync += [
                        self.request.valid.eq(1),
                        self.request.p.quanta.eq(Mux(requested, cfg.quanta, 0)),
                        self.stats.lfc_pkt.eq(1),
                        self.stats.lfc_xon.eq(~requested),
                        self.stats.lfc_xoff.eq(requested),
                    ]
                m.d.sync += [send.eq(0), xoff_in_force.eq(requested)]
                m.d.comb += [
                    refresh_timer.load.eq(1),
                    refresh_timer.quanta.eq(Mux(requested, cfg.refresh, 0)),
                ]
        return m


class McfTransmitter(wiring.Component):
    """Puts MAC control frames into the transmit stream between client frames, and holds
    client frames back while paused (``mac_ctrl_tx``'s role).

    At a frame boundary a pending control frame goes first; then, unless ``pause_req`` is
    high, the next client frame. ``pause_ack`` rises once paused at a frame boundary and
    the transmitter behind has finished its frame (FCS and gap included), so a pause
    timer waiting for it times the pause from the end of the last frame on the wire.
    Control frames still go out while paused, as 802.3 clause 31 requires.

    Members
    -------
    i : In(stream ByteBeat)
        Client frames.
    o : Out(stream ByteBeat)
        To :class:`~.tx.MacTx`. A control frame is 18 bytes (the MAC pads it to 60).
    request : In(stream PauseFrameRequest)
    config : In(PauseTxConfig)
        Addresses, EtherType and opcode of the control frames.
    pause_req : In(1); pause_ack : Out(1)
    mac_idle : In(1)
        The transmitter behind is between frames (not sending, not in its gap).
    stat_mcf : Out(1)
        Strobe per control frame sent.
    """

    i: In(stream.Signature(ByteBeat))
    o: Out(stream.Signature(ByteBeat))
    request: In(stream.Signature(PauseFrameRequest))
    config: In(PauseTxConfig)
    pause_req: In(1)
    pause_ack: Out(1)
    mac_idle: In(1)
    stat_mcf: Out(1)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        index = Signal(range(MAC_CONTROL_HEADER_BYTES))
        quanta = Signal(16)

        header = Signal(MAC_CONTROL_HEADER_BYTES * 8)
        fields = [(cfg.eth_dst, 6), (cfg.eth_src, 6), (cfg.eth_type, 2), (cfg.opcode, 2)]
        fields.append((quanta, 2))
        wire_bytes = []
        for value, length in fields:
            wire_bytes += [value.word_select(length - 1 - n, 8) for n in range(length)]
        m.d.comb += header.eq(Cat(*wire_bytes))

        m.d.sync += [self.stat_mcf.eq(0), self.pause_ack.eq(0)]
        with m.FSM(name="mcf_tx_fsm"):
            with m.State("Between Frames"):
                with m.If(self.request.valid):
                    m.d.comb += self.request.ready.eq(1)
                    m.d.sync += [quanta.eq(self.request.p.quanta), index.eq(0)]
                    m.next = "Control Frame"
                with m.Elif(~self.pause_req):
                    m.d.comb += [
                        self.o.valid.eq(self.i.valid),
                        self.o.p.eq(self.i.p),
                        self.i.ready.eq(self.o.ready),
                    ]
                    with m.If(self.i.valid & self.o.ready & ~self.i.p.last):
                        m.next = "Client Frame"
                with m.Else():
                    m.d.sync += self.pause_ack.eq(self.mac_idle)

            with m.State("Client Frame"):
                m.d.comb += [
                    self.o.valid.eq(self.i.valid),
                    self.o.p.eq(self.i.p),
                    self.i.ready.eq(self.o.ready),
                ]
                with m.If(self.i.valid & self.o.ready & self.i.p.last):
                    m.next = "Between Frames"

            with m.State("Control Frame"):
                m.d.comb += [
                    self.o.valid.eq(1),
                    self.o.p.data.eq(header.word_select(index, 8)),
                    self.o.p.last.eq(index == MAC_CONTROL_HEADER_BYTES - 1),
                ]
                with m.If(self.o.ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index == MAC_CONTROL_HEADER_BYTES - 1):
                        m.d.sync += self.stat_mcf.eq(1)
                        m.next = "Between Frames"
        return m
