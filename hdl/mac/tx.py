"""MAC transmit path: client byte stream in, GMII/MII symbols out.

``MacTx`` frames each packet on the wire: 7 bytes of preamble and the SFD, the client's
bytes, zero padding up to 60 bytes, the FCS, then an idle gap of ``cfg_ifg`` byte times
before the next preamble. It runs in its own clock domain (rename ``sync`` to ``tx``).
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .frame import (
    ETHERNET_CRC,
    FCS_LENGTH,
    MIN_DATA_LENGTH,
    PREAMBLE_BYTE,
    PREAMBLE_LENGTH,
    SFD_BYTE,
    ByteBeat,
    TxStatus,
)
from .gmii import GmiiTxSignature


class MacTx(wiring.Component):
    """Ethernet transmitter.

    Members
    -------
    i : In(stream ByteBeat)
        Frames from the client. ``error`` on the last beat aborts the frame: its last
        byte goes out with ``tx_er`` and no FCS, so no receiver accepts it. If ``valid``
        drops in the middle of a frame (underrun), the MAC sends one symbol with
        ``tx_er``, ends the frame and discards the rest of it from the client.
    gmii : Out(GmiiTxSignature)
        Registered outputs.
    clk_enable : In(1)
        The MAC advances only on clocks where this is high (1 in N for slower links
        on a fixed clock).
    mii_select : In(1)
        1: MII, one nibble per enabled clock on ``txd[3:0]``, low nibble first.
    cfg_enable : In(1)
        Sampled before each frame; while 0 frames wait in the client.
    cfg_ifg : In(8)
        Idle byte times between frames; values below 1 count as 1 so frames never merge.
    status : Out(stream TxStatus, always ready)
        One beat per frame, after its last symbol.
    idle : Out(1)
        Between frames: not sending and not in the inter-frame gap.
    sfd : Out(1)
        One-cycle strobe, one per frame: the first symbol after the SFD goes onto the
        pins at this clock edge (IEEE 1588's message timestamp point, :mod:`.ptp`).
    """

    i: In(stream.Signature(ByteBeat))
    gmii: Out(GmiiTxSignature())
    clk_enable: In(1)
    mii_select: In(1)
    cfg_enable: In(1)
    cfg_ifg: In(8)
    status: Out(stream.Signature(TxStatus, always_ready=True))
    idle: Out(1)
    sfd: Out(1)

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = ETHERNET_CRC.create()

        # The framer produces one symbol (byte) per `advance`; the output stage below
        # puts it on the pins, as two nibbles in MII mode.
        # nibble_phase is only ever set in MII mode (the output stage below), so it alone
        # says a high nibble is still to go: mii_select, a configuration bit from another
        # clock domain, stays off the path from `advance` to the CRC and the FSM.
        nibble_phase = Signal()
        advance = Signal()
        m.d.comb += advance.eq(self.clk_enable & ~nibble_phase)

        symbol = Signal(8)
        symbol_en = Signal()
        symbol_er = Signal()

        preamble_count = Signal(range(PREAMBLE_LENGTH))
        data_count = Signal(16)  # bytes after the SFD so far, padding included
        fcs_index = Signal(range(FCS_LENGTH))
        ifg_left = Signal(8)  # IFG byte times still to wait after this one
        next_count = data_count + 1
        # next_count < MIN_DATA_LENGTH, kept in a register beside data_count so the padding
        # decision does not wait for the 16-bit increment and comparison. Where data_count
        # becomes next_count, short becomes next_count + 1 < MIN, i.e. data_count < MIN - 2.
        short = Signal()

        m.d.sync += self.status.valid.eq(0)

        def report(length, *, aborted=0, underrun=0):
            m.d.sync += [
                self.status.valid.eq(1),
                self.status.p.length.eq(length),
                self.status.p.aborted.eq(aborted),
                self.status.p.underrun.eq(underrun),
            ]

        with m.FSM(name="tx_fsm") as fsm:
            with m.State("Idle"):
                with m.If(advance & self.cfg_enable & self.i.valid):
                    m.d.comb += [symbol.eq(PREAMBLE_BYTE), symbol_en.eq(1)]
                    m.d.sync += preamble_count.eq(1)
                    m.next = "Preamble"

            with m.State("Preamble"):
                m.d.comb += [symbol.eq(PREAMBLE_BYTE), symbol_en.eq(1)]
                with m.If(advance):
                    m.d.sync += preamble_count.eq(preamble_count + 1)
                    with m.If(preamble_count == PREAMBLE_LENGTH - 1):
                        m.next = "Start Delimiter"

            with m.State("Start Delimiter"):
                # The CRC restarts on every clock of this state, `advance` or not, so its
                # `start` comes from the state register alone (it feeds the CRC's XOR tree).
                m.d.comb += [symbol.eq(SFD_BYTE), symbol_en.eq(1), crc.start.eq(1)]
                with m.If(advance):
                    m.d.sync += [data_count.eq(0), short.eq(1)]
                    m.next = "Frame Data"

            with m.State("Frame Data"):
                m.d.comb += symbol_en.eq(1)
                with m.If(advance):
                    m.d.comb += self.sfd.eq(data_count == 0)
                    with m.If(self.i.valid):
                        m.d.comb += [
                            self.i.ready.eq(1),
                            symbol.eq(self.i.p.data),
                            crc.valid.eq(1),
                        ]
                        m.d.sync += [
                            data_count.eq(next_count),
                            short.eq(data_count < MIN_DATA_LENGTH - 2),
                        ]
                        with m.If(self.i.p.last & self.i.p.error):
                            m.d.comb += symbol_er.eq(1)
                            report(next_count, aborted=1)
                            m.next = "Inter-Frame Gap"
                        with m.Elif(self.i.p.last & short):
                            m.next = "Pad"
                        with m.Elif(self.i.p.last):
                            m.d.sync += fcs_index.eq(0)
                            m.next = "Frame Check Sequence"
                    with m.Else():
                        m.d.comb += symbol_er.eq(1)
                        report(next_count, underrun=1)
                        m.next = "Discard Rest"

            with m.State("Pad"):
                m.d.comb += symbol_en.eq(1)
                with m.If(advance):
                    m.d.comb += crc.valid.eq(1)
                    m.d.sync += [
                        data_count.eq(next_count),
                        short.eq(data_count < MIN_DATA_LENGTH - 2),
                    ]
                    with m.If(~short):
                        m.d.sync += fcs_index.eq(0)
                        m.next = "Frame Check Sequence"

            with m.State("Frame Check Sequence"):
                m.d.comb += [symbol.eq(crc.crc.word_select(fcs_index, 8)), symbol_en.eq(1)]
                with m.If(advance):
                    m.d.sync += fcs_index.eq(fcs_index + 1)
                    with m.If(fcs_index == FCS_LENGTH - 1):
                        report(data_count + FCS_LENGTH)
                        m.next = "Inter-Frame Gap"

            with m.State("Discard Rest"):
                # The client still owes the rest of the underrun frame; drop it so the
                # next frame starts clean.
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid & self.i.p.last):
                    m.next = "Inter-Frame Gap"

            with m.State("Inter-Frame Gap"):
                with m.If(advance):
                    m.d.sync += ifg_left.eq(ifg_left - 1)
                    with m.If(ifg_left == 0):
                        m.next = "Idle"

        m.d.comb += self.idle.eq(fsm.ongoing("Idle"))
        # The CRC's data, like its `start`, depends on registers only (the client's byte,
        # or zero while padding); `advance` reaches the CRC through `valid` alone, the
        # enable of its register, not through the XOR tree.
        m.d.comb += crc.data.eq(Mux(fsm.ongoing("Pad"), 0, self.i.p.data))

        # Counted down from the configured gap (0 counts as 1), so no adder or comparison
        # with the configuration sits on the path to the state register.
        with m.If(~fsm.ongoing("Inter-Frame Gap")):
            m.d.sync += ifg_left.eq(Mux(self.cfg_ifg == 0, 0, self.cfg_ifg - 1))

        high_nibble = Signal(4)
        with m.If(self.clk_enable):
            with m.If(~self.mii_select):
                m.d.sync += [
                    self.gmii.txd.eq(symbol),
                    self.gmii.tx_en.eq(symbol_en),
                    self.gmii.tx_er.eq(symbol_er),
                    nibble_phase.eq(0),
                ]
            with m.Elif(~nibble_phase):
                m.d.sync += [
                    self.gmii.txd.eq(symbol[:4]),
                    high_nibble.eq(symbol[4:]),
                    self.gmii.tx_en.eq(symbol_en),
                    self.gmii.tx_er.eq(symbol_er),
                    nibble_phase.eq(1),
                ]
            with m.Else():
                m.d.sync += [self.gmii.txd.eq(high_nibble), nibble_phase.eq(0)]

        return m
