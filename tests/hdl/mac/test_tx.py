"""MacTx in Amaranth's simulator: framing, padding, FCS, gap, abort, underrun, MII."""

import pytest
from amaranth.sim import Simulator
from mac_reference import PREAMBLE, make_payload, wire_frame

from macdma.hdl.mac.tx import MacTx


class TxBench:
    """Feeds frames into MacTx and records every symbol it puts on the pins."""

    def __init__(self, *, ifg=12, mii=False, enable_every=1):
        self.dut = MacTx()
        self.ifg = ifg
        self.mii = mii
        self.enable_every = enable_every
        self.symbols = []  # (txd, tx_en, tx_er) per enabled clock
        self.status = []

    def run(self, frames, *, stall_after=None, settle=200):
        """``frames`` are (payload, abort) pairs; ``stall_after`` = (frame index, byte
        index): the source drops valid there for 3 clocks (an underrun)."""
        dut = self.dut

        async def clock_enable(ctx):
            n = 0
            async for _ in ctx.tick():
                n += 1
                ctx.set(dut.clk_enable, n % self.enable_every == 0)

        async def source(ctx):
            ctx.set(dut.cfg_enable, 1)
            ctx.set(dut.cfg_ifg, self.ifg)
            ctx.set(dut.mii_select, self.mii)
            for index, (payload, abort) in enumerate(frames):
                for offset, byte in enumerate(payload):
                    if stall_after == (index, offset):
                        ctx.set(dut.i.valid, 0)
                        await ctx.tick().repeat(3 * self.enable_every * (2 if self.mii else 1))
                    last = offset == len(payload) - 1
                    ctx.set(dut.i.p.data, byte)
                    ctx.set(dut.i.p.last, last)
                    ctx.set(dut.i.p.error, abort and last)
                    ctx.set(dut.i.valid, 1)
                    await ctx.tick().until(dut.i.ready)
                ctx.set(dut.i.valid, 0)
            await ctx.tick().repeat(settle * self.enable_every * (2 if self.mii else 1))

        async def monitor(ctx):
            async for (
                _clk,
                _rst,
                enable,
                txd,
                tx_en,
                tx_er,
                status_valid,
                status,
            ) in ctx.tick().sample(
                dut.clk_enable,
                dut.gmii.txd,
                dut.gmii.tx_en,
                dut.gmii.tx_er,
                dut.status.valid,
                dut.status.p,
            ):
                if status_valid:
                    self.status.append((status.length, status.aborted, status.underrun))
                # Outputs change one clock after an enabled clock; sample them then.
                if self.previous_enable:
                    self.symbols.append((txd, tx_en, tx_er))
                self.previous_enable = enable

        self.previous_enable = False
        sim = Simulator(dut)
        sim.add_clock(8e-9)
        sim.add_process(clock_enable)
        sim.add_process(monitor)
        sim.add_testbench(source)
        sim.run()
        return self

    def wire_frames(self):
        """Split the recorded symbols into frames: (bytes, er flags, gap before)."""
        symbols = self.symbols
        if self.mii:
            symbols = self._join_nibbles(symbols)
        frames, current, errors, gap = [], None, None, 0
        for txd, tx_en, tx_er in symbols:
            if tx_en:
                if current is None:
                    current, errors = bytearray(), []
                current.append(txd)
                errors.append(tx_er)
            elif current is not None:
                frames.append((bytes(current), errors, gap))
                current, gap = None, 1
            else:
                gap += 1
        return frames

    @staticmethod
    def _join_nibbles(symbols):
        joined, pending = [], None
        for txd, tx_en, tx_er in symbols:
            if not tx_en:
                pending = None
                joined.append((0, 0, 0))
                continue
            assert txd < 16, "MII drives only txd[3:0]"
            if pending is None:
                pending = (txd, tx_er)
            else:
                joined.append((pending[0] | txd << 4, 1, pending[1] | tx_er))
                pending = None
        return joined


@pytest.mark.parametrize("length", [1, 14, 59, 60, 61, 100, 1514])
def test_frame_has_preamble_padding_and_fcs(length):
    payload = make_payload(length)
    bench = TxBench().run([(payload, False)])
    ((frame, errors, _),) = bench.wire_frames()
    assert frame == PREAMBLE + wire_frame(payload)
    assert not any(errors)
    assert bench.status == [(len(wire_frame(payload)), 0, 0)]


@pytest.mark.parametrize("ifg", [0, 1, 5, 12, 40])
def test_back_to_back_frames_keep_the_configured_gap(ifg):
    payloads = [make_payload(60, seed) for seed in range(4)]
    bench = TxBench(ifg=ifg).run([(p, False) for p in payloads])
    frames = bench.wire_frames()
    assert [f for f, _, _ in frames] == [PREAMBLE + wire_frame(p) for p in payloads]
    assert [gap for _, _, gap in frames[1:]] == [max(ifg, 1)] * 3


def test_abort_sends_last_byte_with_tx_er_and_no_fcs():
    payload = make_payload(80)
    bench = TxBench().run([(payload, True), (make_payload(70, 1), False)])
    (aborted, errors, _), (good, good_errors, _) = bench.wire_frames()
    assert aborted == PREAMBLE + payload
    assert errors == [0] * (len(aborted) - 1) + [1]
    assert good == PREAMBLE + wire_frame(make_payload(70, 1))
    assert not any(good_errors)
    assert bench.status == [(80, 1, 0), (74, 0, 0)]


def test_underrun_cuts_frame_with_tx_er_and_discards_the_rest():
    first, second = make_payload(200), make_payload(90, 1)
    bench = TxBench().run([(first, False), (second, False)], stall_after=(0, 50))
    (cut, errors, _), (good, good_errors, _) = bench.wire_frames()
    assert cut[: len(PREAMBLE) + 50] == PREAMBLE + first[:50]
    assert len(cut) == len(PREAMBLE) + 51 and errors[-1] == 1 and not any(errors[:-1])
    assert good == PREAMBLE + wire_frame(second) and not any(good_errors)
    assert bench.status == [(51, 0, 1), (94, 0, 0)]


def test_mii_sends_low_nibble_first():
    payload = make_payload(64)
    bench = TxBench(mii=True).run([(payload, False), (payload, False)])
    frames = bench.wire_frames()
    assert [f for f, _, _ in frames] == [PREAMBLE + wire_frame(payload)] * 2
    assert frames[1][2] == 2 * 12  # the gap in nibble times


def test_clock_enable_one_in_three():
    payload = make_payload(61)
    bench = TxBench(enable_every=3).run([(payload, False), (payload, False)])
    frames = bench.wire_frames()
    assert [f for f, _, _ in frames] == [PREAMBLE + wire_frame(payload)] * 2
    assert frames[1][2] == 12
