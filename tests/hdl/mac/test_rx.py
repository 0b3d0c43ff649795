"""GmiiRxDecoder + MacRx + RxStatistics in Amaranth's simulator."""

import pytest
from amaranth import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator
from mac_reference import PREAMBLE, fcs, make_payload, wire_frame

from macdma.hdl.mac.frame import RxError
from macdma.hdl.mac.rx import GmiiRxDecoder, MacRx
from macdma.hdl.mac.stats import RxStatistics


class RxPath(Elaboratable):
    def __init__(self):
        self.decoder = GmiiRxDecoder()
        self.mac = MacRx()
        self.stats = RxStatistics()

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = self.decoder
        m.submodules.mac = self.mac
        m.submodules.stats = self.stats
        m.d.comb += self.mac.i.eq(self.decoder.o)
        wiring.connect(m, self.mac.status, self.stats.status)
        m.d.comb += [
            self.stats.preamble_error.eq(self.mac.preamble_error),
            self.stats.dropped_disabled.eq(self.mac.dropped_disabled),
        ]
        return m


def receive(wire_symbols, *, mii=False, split=True, max_length=1518, enabled=True):
    """Drive (rxd, rx_dv, rx_er) symbols, one per clock (in MII mode bytes are split into
    nibbles unless ``split`` is False), and return the delivered frames
    [(bytes, error)], the statuses and the counters."""
    dut = RxPath()
    frames, statuses, current = [], [], bytearray()
    if mii and split:
        wire_symbols = [
            (nibble, dv, er) for byte, dv, er in wire_symbols for nibble in (byte & 15, byte >> 4)
        ]

    async def drive(ctx):
        ctx.set(dut.decoder.mii_select, mii)
        ctx.set(dut.decoder.clk_enable, 1)
        ctx.set(dut.mac.cfg_enable, enabled)
        ctx.set(dut.mac.cfg_max_length, max_length)
        for rxd, dv, er in wire_symbols + [(0, 0, 0)] * 20:
            ctx.set(dut.decoder.gmii.rxd, rxd)
            ctx.set(dut.decoder.gmii.rx_dv, dv)
            ctx.set(dut.decoder.gmii.rx_er, er)
            await ctx.tick()

    async def monitor(ctx):
        o, status = dut.mac.o, dut.mac.status
        async for _clk, _rst, valid, beat, status_valid, st in ctx.tick().sample(
            o.valid, o.p, status.valid, status.p
        ):
            if valid:
                current.append(beat.data)
                if beat.last:
                    frames.append((bytes(current), beat.error))
                    current.clear()
            if status_valid:
                statuses.append((st.length, RxError(st.error)))

    sim = Simulator(dut)
    sim.add_clock(8e-9)
    sim.add_process(monitor)
    sim.add_testbench(drive)
    counters = {}

    async def read_counters(ctx):
        await ctx.tick().repeat(len(wire_symbols) + 19)
        for name, _ in dut.stats.counters.signature.members.items():
            counters[name] = ctx.get(getattr(dut.stats.counters, name))

    sim.add_testbench(read_counters)
    sim.run()
    return frames, statuses, counters


def symbols(raw: bytes, *, errors=()):
    return [(b, 1, int(i in errors)) for i, b in enumerate(raw)] + [(0, 0, 0)] * 12


def good(payload):
    return PREAMBLE + wire_frame(payload)


@pytest.mark.parametrize("mii", [False, True], ids=["gmii", "mii"])
@pytest.mark.parametrize("length", [60, 61, 200, 1514])
def test_good_frame_is_delivered_without_fcs(length, mii):
    payload = make_payload(length)
    frames, statuses, counters = receive(symbols(good(payload)), mii=mii)
    assert frames == [(payload, 0)]
    assert statuses == [(length + 4, RxError.NONE)]
    assert counters["rx_frames_good"] == 1 and counters["rx_bytes_good"] == length + 4
    assert counters["rx_frames_bad"] == 0


@pytest.mark.parametrize(
    "preamble", [b"\xd5", b"\x55\xd5", b"\x55" * 3 + b"\xd5", b"\x55" * 12 + b"\xd5"]
)
def test_short_and_long_preambles_are_accepted(preamble):
    payload = make_payload(64)
    for mii in (False, True):
        frames, _, _ = receive(symbols(preamble + wire_frame(payload)), mii=mii)
        assert frames == [(payload, 0)]


def test_carrier_without_sfd_is_counted_not_delivered():
    payload = make_payload(64)
    raw = symbols(b"\x55\x55\x13\x55\xd5" + wire_frame(payload)) + symbols(good(payload))
    frames, _, counters = receive(raw)
    assert frames == [(payload, 0)]
    assert counters["rx_preamble_errors"] == 1


@pytest.mark.parametrize(
    "case, expected",
    [
        ("fcs", RxError.FCS),
        ("runt", RxError.RUNT),
        ("phy", RxError.PHY),
        ("oversize", RxError.OVERSIZE),
        ("tiny", RxError.RUNT),
    ],
)
def test_bad_frame_is_flagged_counted_and_next_frame_delivered(case, expected):
    payload = make_payload(100)
    errors = ()
    if case == "fcs":
        raw = PREAMBLE + payload + bytes([fcs(payload)[0] ^ 1]) + fcs(payload)[1:]
    elif case == "runt":
        raw = PREAMBLE + payload[:40] + fcs(payload[:40])
    elif case == "phy":
        raw, errors = good(payload), (30,)
    elif case == "oversize":
        big = make_payload(1515)
        raw = good(big)
    else:
        raw = PREAMBLE + b"\x01\x02\x03"
    next_payload = make_payload(70, 7)
    frames, statuses, counters = receive(symbols(raw, errors=errors) + symbols(good(next_payload)))
    assert len(frames) == 2
    assert frames[0][1] == 1, "bad frame must carry error on its last beat"
    assert frames[1] == (next_payload, 0)
    assert statuses[0][1] == expected and statuses[1][1] == RxError.NONE
    cause_counter = {
        RxError.FCS: "rx_fcs_errors",
        RxError.RUNT: "rx_runts",
        RxError.PHY: "rx_phy_errors",
        RxError.OVERSIZE: "rx_oversize",
    }[expected]
    assert counters[cause_counter] == 1
    assert counters["rx_frames_bad"] == 1 and counters["rx_frames_good"] == 1
    if case == "oversize":
        # Bytes past the limit are not delivered (1518 - 4 data bytes, then the bad last beat).
        assert len(frames[0][0]) == 1514 + 1


def test_vlan_tagged_frame_may_be_four_bytes_longer():
    tagged = make_payload(12) + b"\x81\x00\x00\x05" + make_payload(1502, 3)
    assert len(tagged) == 1518
    frames, statuses, _ = receive(symbols(good(tagged)))
    assert frames == [(tagged, 0)] and statuses[0] == (1522, RxError.NONE)
    untagged = make_payload(1518, 4)
    frames, statuses, _ = receive(symbols(good(untagged)))
    assert statuses[0][1] == RxError.OVERSIZE


@pytest.mark.parametrize("max_length", [64, 1518, 9018])
@pytest.mark.parametrize("tagged", [False, True])
def test_length_limit_is_exact(max_length, tagged):
    # The longest good frame (FCS included) is max_length, +4 with a VLAN tag; one byte
    # more is oversize. Checked at both sides of the edge, untagged and tagged.
    limit = max_length + 4 * tagged
    tag = b"\x81\x00\x00\x05" if tagged else make_payload(4, 9)
    for extra, expected in ((0, RxError.NONE), (1, RxError.OVERSIZE)):
        payload = make_payload(12) + tag + make_payload(limit - 4 - 16 + extra, 3)
        _, statuses, _ = receive(symbols(good(payload)), max_length=max_length)
        assert statuses == [(limit + extra, expected)], (max_length, tagged, extra)


def test_runt_limit_is_exact():
    # 64 bytes with the FCS is the shortest good frame; 63 is a runt.
    for length, expected in ((63, RxError.RUNT), (64, RxError.NONE)):
        payload = make_payload(length - 4, 5)
        _, statuses, _ = receive(symbols(PREAMBLE + payload + fcs(payload)))
        assert statuses == [(length, expected)], length


def test_jumbo_frames_pass_when_max_length_allows():
    payload = make_payload(9000)
    frames, statuses, _ = receive(symbols(good(payload)), max_length=9018)
    assert frames == [(payload, 0)]


def test_mii_odd_nibble_is_an_alignment_error():
    payload = make_payload(80)
    nibbles = [(n, 1, 0) for b in good(payload) for n in (b & 15, b >> 4)]
    nibbles += [(0xA, 1, 0)] + [(0, 0, 0)] * 24
    frames, statuses, counters = receive(nibbles, mii=True, split=False)
    assert statuses == [(84, RxError.ALIGNMENT)]
    assert frames[0][1] == 1 and counters["rx_alignment_errors"] == 1


def test_receiver_disabled_drops_and_counts():
    frames, _, counters = receive(symbols(good(make_payload(64))), enabled=False)
    assert frames == []
    assert counters["rx_dropped_disabled"] == 1
