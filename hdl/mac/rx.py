"""MAC receive path: GMII/MII symbols in, client byte stream out.

Two stages, in the order a frame meets them:

``GmiiRxDecoder`` finds the start of each frame (any number of preamble symbols, down
to none, then the SFD), assembles MII nibbles into bytes and marks where the frame ends.
``MacRx`` checks the frame (FCS, rx_er, length, alignment), strips the FCS and hands the
bytes to the client, flagging a bad frame with ``error`` on its last beat. The wire
cannot wait, so neither stage has backpressure. Both run in the ``rx`` clock domain
(rename ``sync``).
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .frame import (
    ETHERNET_CRC,
    FCS_LENGTH,
    MIN_FRAME_LENGTH,
    PREAMBLE_BYTE,
    SFD_BYTE,
    VLAN_TAG_LENGTH,
    VLAN_TPID,
    ByteBeat,
    RxError,
    RxStatus,
)
from .gmii import GmiiRxSignature


class RxSymbol(data.Struct):
    """One event from the decoder; at most one of ``start``, ``byte`` and ``end``."""

    start: 1  # SFD seen: the frame's bytes follow
    byte: 1  # ``data`` is the next byte of the frame
    data: 8
    phy_error: 1  # with ``byte``: rx_er was high during it
    end: 1  # rx_dv fell: the frame is over
    misaligned: 1  # with ``end``: the frame ended on half a byte
    preamble_error: 1  # rx_dv rose and fell (or saw garbage) without an SFD


class GmiiRxDecoder(wiring.Component):
    """Turns GMII/MII receive symbols into frame bytes and frame boundaries.

    Members
    -------
    gmii : In(GmiiRxSignature)
        Sampled into registers first.
    clk_enable, mii_select : In(1)
        As for the transmitter: only enabled clocks carry a symbol; MII carries
        nibbles on ``rxd[3:0]``, low nibble first.
    o : Out(RxSymbol)
        One event per clock at most, valid for one cycle.
    """

    gmii: Out(GmiiRxSignature())  # Out(In(...)): pins flow into the MAC
    clk_enable: In(1)
    mii_select: In(1)
    o: Out(RxSymbol)

    def elaborate(self, platform):
        m = Module()

        rxd = Signal(8)
        rx_dv = Signal()
        rx_er = Signal()
        enabled = Signal()
        m.d.sync += [
            rxd.eq(self.gmii.rxd),
            rx_dv.eq(self.gmii.rx_dv),
            rx_er.eq(self.gmii.rx_er),
            enabled.eq(self.clk_enable),
        ]

        # In MII mode a preamble symbol is the nibble 0x5 and the SFD ends on nibble 0xD.
        is_preamble = Mux(self.mii_select, rxd[:4] == (PREAMBLE_BYTE & 0xF), rxd == PREAMBLE_BYTE)
        is_sfd = Mux(self.mii_select, rxd[:4] == (SFD_BYTE >> 4), rxd == SFD_BYTE)

        low_nibble = Signal(4)
        low_nibble_error = Signal()
        half_byte = Signal()  # MII: a low nibble is waiting for its high nibble

        with m.FSM(name="rx_decoder_fsm"):
            with m.State("Idle"):
                with m.If(enabled & rx_dv):
                    with m.If(is_sfd):
                        m.d.comb += self.o.start.eq(1)
                        m.d.sync += half_byte.eq(0)
                        m.next = "Frame Data"
                    with m.Elif(is_preamble):
                        m.next = "Preamble"
                    with m.Else():
                        m.next = "Bad Preamble"

            with m.State("Preamble"):
                with m.If(enabled):
                    with m.If(~rx_dv):
                        m.d.comb += self.o.preamble_error.eq(1)
                        m.next = "Idle"
                    with m.Elif(is_sfd):
                        m.d.comb += self.o.start.eq(1)
                        m.d.sync += half_byte.eq(0)
                        m.next = "Frame Data"
                    with m.Elif(~is_preamble):
                        m.next = "Bad Preamble"

            with m.State("Bad Preamble"):
                # Carrier without a start delimiter: nothing to deliver, but count it.
                with m.If(enabled & ~rx_dv):
                    m.d.comb += self.o.preamble_error.eq(1)
                    m.next = "Idle"

            with m.State("Frame Data"):
                with m.If(enabled):
                    with m.If(~rx_dv):
                        m.d.comb += [self.o.end.eq(1), self.o.misaligned.eq(half_byte)]
                        m.next = "Idle"
                    with m.Elif(~self.mii_select):
                        m.d.comb += [
                            self.o.byte.eq(1),
                            self.o.data.eq(rxd),
                            self.o.phy_error.eq(rx_er),
                        ]
                    with m.Elif(~half_byte):
                        m.d.sync += [
                            low_nibble.eq(rxd[:4]),
                            low_nibble_error.eq(rx_er),
                            half_byte.eq(1),
                        ]
                    with m.Else():
                        m.d.comb += [
                            self.o.byte.eq(1),
                            self.o.data.eq(Cat(low_nibble, rxd[:4])),
                            self.o.phy_error.eq(rx_er | low_nibble_error),
                        ]
                        m.d.sync += half_byte.eq(0)

        return m


class MacRx(wiring.Component):
    """Checks received frames and delivers them without their FCS.

    Every frame that reached an SFD while ``cfg_enable`` was high comes out as exactly
    one stream frame; a bad one has ``error`` on its last beat, and ``status`` says why.
    The client sees each byte 5 symbols late: the last 4 bytes on the wire are the FCS,
    and holding one more byte lets the MAC put ``last`` on the final data byte.

    Members
    -------
    i : In(RxSymbol)
        From :class:`GmiiRxDecoder`.
    o : Out(stream ByteBeat, always ready)
        Registered. A frame of fewer than 5 bytes (nothing but FCS, or less) is
        delivered as a single beat ``last=1, error=1``. Bytes past the maximum length
        are not delivered; the frame still ends with a ``last`` beat flagged bad.
    cfg_enable : In(1)
        Sampled at the SFD; frames that start while it is low are dropped and counted
        (``dropped_disabled``).
    cfg_max_length : In(16)
        Longest good frame including FCS, sampled at the SFD; a VLAN-tagged frame
        (TPID 0x8100) may be 4 bytes longer.
    status : Out(stream RxStatus, always ready)
        One beat per delivered frame, in the same cycle as its last beat.
    preamble_error, dropped_disabled : Out(1)
        One-cycle pulses for frames that were not delivered at all.
    """

    i: In(RxSymbol)
    o: Out(stream.Signature(ByteBeat, always_ready=True))
    cfg_enable: In(1)
    cfg_max_length: In(16)
    status: Out(stream.Signature(RxStatus, always_ready=True))
    preamble_error: Out(1)
    dropped_disabled: Out(1)

    HOLD = FCS_LENGTH + 1

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = ETHERNET_CRC.create()

        receiving = Signal()
        length = Signal(16)  # bytes after the SFD, FCS included; saturates
        held = Signal(range(self.HOLD + 1))
        delay = [Signal(8, name=f"delay{n}") for n in range(self.HOLD)]
        oldest = delay[self.HOLD - 1]
        phy_error = Signal()
        max_length = Signal(16)
        vlan_tpid_high = Signal()
        vlan_tag_seen = Signal()  # pulse: bytes 12..13 were the VLAN TPID

        # Limits of this frame, kept in registers (set at the start, raised by the tag's
        # length once the frame shows a VLAN tag) so no adder sits before the comparisons:
        # the longest frame without being oversize, and the length up to which the byte
        # leaving the delay line is data (length - HOLD < data bytes allowed).
        length_limit = Signal(17)
        data_end = Signal(17)
        # length > length_limit and length < MIN_FRAME_LENGTH, kept in registers as the
        # length grows by one a byte, so that no comparison sits between the length and the
        # frame's last beat. The limit is raised by a VLAN tag before the length can reach
        # it (MAC_MAX_LEN is at least 64).
        oversize = Signal()
        runt = Signal(init=1)

        m.d.sync += [self.o.valid.eq(0), self.status.valid.eq(0)]
        m.d.comb += [
            self.preamble_error.eq(self.i.preamble_error),
            self.dropped_disabled.eq(self.i.start & ~self.cfg_enable),
        ]

        # Raised the cycle after the tag is seen, long before a limit is compared (frames
        # are at least 64 bytes long before their length matters).
        with m.If(vlan_tag_seen):
            m.d.sync += [
                length_limit.eq(max_length + VLAN_TAG_LENGTH),
                data_end.eq(max_length + (self.HOLD - FCS_LENGTH + VLAN_TAG_LENGTH)),
            ]
        m.d.sync += vlan_tag_seen.eq(0)

        with m.If(self.i.start):
            m.d.comb += crc.start.eq(1)
            m.d.sync += [
                receiving.eq(self.cfg_enable),
                length.eq(0),
                oversize.eq(0),
                runt.eq(1),
                held.eq(0),
                phy_error.eq(0),
                max_length.eq(self.cfg_max_length),
                length_limit.eq(self.cfg_max_length),
                data_end.eq(self.cfg_max_length + (self.HOLD - FCS_LENGTH)),
            ]

        with m.If(self.i.byte & receiving):
            m.d.comb += [crc.valid.eq(1), crc.data.eq(self.i.data)]
            m.d.sync += [delay[0].eq(self.i.data)]
            m.d.sync += [delay[n].eq(delay[n - 1]) for n in range(1, self.HOLD)]
            m.d.sync += [
                length.eq(Mux(length == 0xFFFF, length, length + 1)),
                oversize.eq(oversize | ((length == length_limit) & (length != 0xFFFF))),
                runt.eq(runt & (length != MIN_FRAME_LENGTH - 1)),
                held.eq(Mux(held == self.HOLD, held, held + 1)),
                phy_error.eq(phy_error | self.i.phy_error),
            ]
            with m.If(length == 12):
                m.d.sync += vlan_tpid_high.eq(self.i.data == VLAN_TPID >> 8)
            with m.If(length == 13):
                m.d.sync += vlan_tag_seen.eq(vlan_tpid_high & (self.i.data == (VLAN_TPID & 0xFF)))
            # The byte falling out of the delay line is data, not FCS.
            with m.If((held == self.HOLD) & (length < data_end)):
                m.d.sync += [
                    self.o.valid.eq(1),
                    self.o.p.data.eq(oldest),
                    self.o.p.last.eq(0),
                    self.o.p.error.eq(0),
                ]

        error = Signal(RxError)
        with m.If(phy_error):
            m.d.comb += error.eq(RxError.PHY)
        with m.Elif(self.i.misaligned):
            m.d.comb += error.eq(RxError.ALIGNMENT)
        with m.Elif(oversize):
            m.d.comb += error.eq(RxError.OVERSIZE)
        with m.Elif(runt):
            m.d.comb += error.eq(RxError.RUNT)
        with m.Elif(~crc.match_detected):
            m.d.comb += error.eq(RxError.FCS)

        with m.If(self.i.end & receiving):
            m.d.sync += [
                receiving.eq(0),
                self.o.valid.eq(1),
                self.o.p.data.eq(Mux(held == self.HOLD, oldest, 0)),
                self.o.p.last.eq(1),
                self.o.p.error.eq(error != RxError.NONE),
                self.status.valid.eq(1),
                self.status.p.length.eq(length),
                self.status.p.error.eq(error),
            ]

        return m
