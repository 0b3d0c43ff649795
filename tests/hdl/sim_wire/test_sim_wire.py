"""The frame wire (hdl/sim_wire/, sim/benches/frame_wire.py) against cocotbext-eth's
per-byte GMII models, on each simulator and link mode (tests/cocotb/frame_wire_tb.py):
the same frames through both, side by side in one simulation, must give the same pins on
every receive clock, the same frames, errors and stamps, at the same times. The top holds
the wire and the pins only (:class:`WireCheckTop`);
tests/hdl/sim_wire/test_tops.py checks a whole SoC scenario both ways."""

from __future__ import annotations

import pytest
from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from cocotb_cases import run_cocotb_cases

from macdma.hdl.sim_wire.tops import FrameWireTop

TOP = "macdma_sim_wire_check"
BENCH = "frame_wire_tb"
LINK_MODES = ("gmii_1000", "mii_100", "mii_10")


class _CheckPins(wiring.Component):
    """The PHY side of a SoC without the SoC, for checking the wire against cocotbext-eth:
    ``gmii_tx*`` repeat ``src_tx*`` (a bench's GmiiSource plays the MAC), and every
    ``rx_clk`` edge compares the receive pins with ``ref_rx*`` (a second GmiiSource fed the
    same frames), counting the edges where they differ in ``rx_mismatches`` and keeping
    the first one's cycle in ``rx_first_mismatch``."""

    def __init__(self):
        members = {name: In(1) for name in ("tx_clk", "tx_rst", "rx_clk", "rx_rst")}
        members.update(tx_clk_enable=In(1), rx_clk_enable=In(1))
        members.update(gmii_rxd=In(8), gmii_rx_dv=In(1), gmii_rx_er=In(1))
        members.update(gmii_txd=Out(8), gmii_tx_en=Out(1), gmii_tx_er=Out(1))
        members.update(src_txd=In(8), src_tx_en=In(1), src_tx_er=In(1))
        members.update(ref_rxd=In(8), ref_rx_dv=In(1), ref_rx_er=In(1))
        members.update(rx_mismatches=Out(32), rx_first_mismatch=Out(48), rx_edges=Out(48))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.domains.check = ClockDomain("check", local=True, reset_less=True)
        m.d.comb += [
            ClockSignal("check").eq(self.rx_clk),
            self.gmii_txd.eq(self.src_txd),
            self.gmii_tx_en.eq(self.src_tx_en),
            self.gmii_tx_er.eq(self.src_tx_er),
        ]
        ours = Cat(self.gmii_rxd, self.gmii_rx_dv, self.gmii_rx_er)
        theirs = Cat(self.ref_rxd, self.ref_rx_dv, self.ref_rx_er)
        m.d.check += self.rx_edges.eq(self.rx_edges + 1)
        with m.If(ours != theirs):
            m.d.check += self.rx_mismatches.eq(self.rx_mismatches + 1)
            with m.If(self.rx_mismatches == 0):
                m.d.check += self.rx_first_mismatch.eq(self.rx_edges)
        return m


class WireCheckTop(FrameWireTop):
    """``macdma_sim_wire_check``: the frame wire on :class:`_CheckPins`, for the test that
    the wire gives what cocotbext-eth's GmiiSource and GmiiSink give
    (tests/cocotb/frame_wire_tb.py)."""

    def __init__(self):
        super().__init__(_CheckPins())


@pytest.mark.parametrize("link", LINK_MODES)
def test_frame_wire_equals_cocotbext(cocotb_run, sim, subtests, link):
    run_cocotb_cases(
        cocotb_run,
        subtests,
        top=TOP,
        factory=WireCheckTop,
        test_module=BENCH,
        sim=sim,
        extra_env={"FRAME_WIRE_LINK": link},
    )
