"""The 802.3x blocks of hdl/mac/flow_control.py in Amaranth's simulator: the PAUSE sender's
XOFF/XON/refresh/resend decisions, the pause timer's counting, and what the control frame
receiver does with a PAUSE (flag it as eth_mac_1g does, or remove it)."""

import pytest
from amaranth.sim import Simulator
from unbuilt import rejected

from macdma.hdl.mac.flow_control import (
    MAC_CONTROL_ETHERTYPE,
    PAUSE_MULTICAST_ADDRESS,
    PAUSE_OPCODE,
    QUANTUM_BIT_TIMES,
    McfReceiver,
    PauseReceiver,
    PauseTransmitter,
)
from macdma.hdl.mac.frame import FCS_LENGTH, MIN_DATA_LENGTH, RxError
from macdma.hdl.mac.mac import EthMac

GMII_CLOCKS_PER_QUANTUM = QUANTUM_BIT_TIMES // 8
MII_CLOCKS_PER_QUANTUM = QUANTUM_BIT_TIMES // 4


def run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(8e-9)
    sim.add_testbench(bench)
    sim.run()


def pause_sender_requests(steps, *, quanta=0x1234, refresh=0, mii=False):
    """Drive a PauseTransmitter through ``steps`` of (clocks, tx_lfc_req, resend) and take
    every request at once; return [(clock, quanta)] of the PAUSE frames it asked for."""
    dut = PauseTransmitter()
    requests = []

    async def bench(ctx):
        ctx.set(dut.config.en, 1)
        ctx.set(dut.config.quanta, quanta)
        ctx.set(dut.config.refresh, refresh)
        ctx.set(dut.clk_enable, 1)
        ctx.set(dut.mii_select, mii)
        ctx.set(dut.request.ready, 1)
        clock = 0
        for clocks, req, resend in steps:
            ctx.set(dut.tx_lfc_req, req)
            for n in range(clocks):
                ctx.set(dut.tx_lfc_resend, resend and n == 0)
                if ctx.get(dut.request.valid):
                    requests.append((clock, ctx.get(dut.request.p.quanta)))
                await ctx.tick()
                clock += 1

    run(dut, bench)
    return requests


def test_xoff_when_requested_and_xon_when_released():
    requests = pause_sender_requests([(10, 0, 0), (20, 1, 0), (20, 0, 0), (20, 0, 0)])
    assert [q for _, q in requests] == [0x1234, 0]


def test_no_xon_without_an_xoff_before():
    """A request that rises and falls while sending is off leaves nothing to revoke."""
    dut = PauseTransmitter()
    requests = []

    async def bench(ctx):
        ctx.set(dut.config.quanta, 5)
        ctx.set(dut.clk_enable, 1)
        ctx.set(dut.request.ready, 1)
        ctx.set(dut.tx_lfc_req, 1)
        await ctx.tick().repeat(10)
        ctx.set(dut.tx_lfc_req, 0)
        await ctx.tick().repeat(10)
        ctx.set(dut.config.en, 1)  # enabled only now: tx_lfc_req is 0, nothing was sent
        for _ in range(30):
            if ctx.get(dut.request.valid):
                requests.append(ctx.get(dut.request.p.quanta))
            await ctx.tick()

    run(dut, bench)
    assert requests == []


def test_refresh_every_refresh_quanta_while_requested():
    refresh = 3
    steps = [(5, 0, 0), (12 * GMII_CLOCKS_PER_QUANTUM, 1, 0)]
    requests = pause_sender_requests(steps, refresh=refresh)
    times = [clock for clock, quanta in requests]
    assert all(quanta == 0x1234 for _, quanta in requests)
    intervals = {b - a for a, b in zip(times, times[1:], strict=False)}
    # The refresh timer is loaded when a PAUSE is handed over and counts 1/256 quanta.
    assert len(times) == 4 and max(intervals) - min(intervals) <= 1
    expected = refresh * GMII_CLOCKS_PER_QUANTUM
    assert expected <= min(intervals) <= expected + 3


def test_refresh_counts_mii_quanta():
    steps = [(5, 0, 0), (5 * MII_CLOCKS_PER_QUANTUM, 1, 0)]
    requests = pause_sender_requests(steps, refresh=2, mii=True)
    times = [clock for clock, _ in requests]
    assert 2 * MII_CLOCKS_PER_QUANTUM <= times[1] - times[0] <= 2 * MII_CLOCKS_PER_QUANTUM + 3


def test_resend_repeats_the_xoff_but_not_a_sent_xon():
    """As eth_mac_1g: a resend repeats an XOFF in force; once the XON is out there is
    nothing to repeat."""
    requests = pause_sender_requests([(5, 0, 0), (20, 1, 0), (20, 1, 1), (20, 0, 0), (20, 0, 1)])
    assert [q for _, q in requests] == [0x1234, 0x1234, 0]


def pause_timer_run(quanta, *, ack_from=0, mii=False, clocks=400):
    """Load a PauseReceiver with ``quanta`` and return the clock at which rx_lfc_req falls;
    ``rx_lfc_ack`` is high from clock ``ack_from``."""
    dut = PauseReceiver()
    result = {}

    async def bench(ctx):
        ctx.set(dut.config.en, 1)
        ctx.set(dut.config.opcode, PAUSE_OPCODE)
        ctx.set(dut.rx_lfc_en, 1)
        ctx.set(dut.clk_enable, 1)
        ctx.set(dut.mii_select, mii)
        ctx.set(dut.event.valid, 1)
        ctx.set(dut.event.p.opcode, PAUSE_OPCODE)
        ctx.set(dut.event.p.quanta, quanta)
        await ctx.tick()
        ctx.set(dut.event.valid, 0)
        seen_high = False
        for clock in range(clocks):
            ctx.set(dut.rx_lfc_ack, clock >= ack_from)
            await ctx.tick()
            high = ctx.get(dut.rx_lfc_req)
            seen_high |= high
            if seen_high and not high:
                result["fell"] = clock
                return

    run(dut, bench)
    return result.get("fell")


def test_pause_timer_lasts_the_quanta_once_acknowledged():
    assert pause_timer_run(3) == 3 * GMII_CLOCKS_PER_QUANTUM
    assert pause_timer_run(3, ack_from=50) == 50 + 3 * GMII_CLOCKS_PER_QUANTUM
    assert pause_timer_run(2, mii=True, clocks=600) == 2 * MII_CLOCKS_PER_QUANTUM


def test_other_opcodes_do_not_pause():
    assert pause_timer_run(3) is not None
    dut = PauseReceiver()

    async def bench(ctx):
        ctx.set(dut.config.en, 1)
        ctx.set(dut.config.opcode, PAUSE_OPCODE)
        ctx.set(dut.rx_lfc_en, 1)
        ctx.set(dut.event.valid, 1)
        ctx.set(dut.event.p.opcode, 0x0101)  # priority flow control: out of scope
        ctx.set(dut.event.p.quanta, 100)
        await ctx.tick()
        ctx.set(dut.event.valid, 0)
        for _ in range(10):
            await ctx.tick()
            assert not ctx.get(dut.rx_lfc_req)
            assert not ctx.get(dut.stats.lfc_pkt)

    run(dut, bench)


def pause_events_run(events, *, clocks):
    """Drive a PauseReceiver with PAUSE events {clock: quanta} (rx_lfc_ack always high);
    return the clocks at which rx_lfc_req is high."""
    dut = PauseReceiver()
    high = []

    async def bench(ctx):
        ctx.set(dut.config.en, 1)
        ctx.set(dut.config.opcode, PAUSE_OPCODE)
        ctx.set(dut.rx_lfc_en, 1)
        ctx.set(dut.rx_lfc_ack, 1)
        ctx.set(dut.clk_enable, 1)
        ctx.set(dut.event.p.opcode, PAUSE_OPCODE)
        for clock in range(clocks):
            ctx.set(dut.event.valid, clock in events)
            ctx.set(dut.event.p.quanta, events.get(clock, 0))
            await ctx.tick()
            if ctx.get(dut.rx_lfc_req):
                high.append(clock)

    run(dut, bench)
    return high


def test_a_new_pause_restarts_the_count_and_an_xon_ends_it():
    # A second PAUSE mid-count starts its own quanta from its own clock, fraction included.
    high = pause_events_run({0: 1, 40: 2}, clocks=300)
    assert high == list(range(1, 41 + 2 * GMII_CLOCKS_PER_QUANTUM))
    # An XON (quanta 0) ends the pause at once.
    high = pause_events_run({0: 100, 10: 0}, clocks=50)
    assert high == list(range(1, 11))


def pause_frame_bytes(quanta: int) -> bytes:
    header = (
        PAUSE_MULTICAST_ADDRESS.to_bytes(6, "big")
        + bytes.fromhex("02aabbccddee")
        + MAC_CONTROL_ETHERTYPE.to_bytes(2, "big")
        + PAUSE_OPCODE.to_bytes(2, "big")
        + quanta.to_bytes(2, "big")
    )
    return header + bytes(MIN_DATA_LENGTH - len(header))


ORDINARY_FRAME = bytes(range(MIN_DATA_LENGTH))


def mcf_receiver_run(frames, *, remove, forward=False):
    """Feed ``frames`` (good, one byte per clock, 12 idle clocks between) to a McfReceiver
    that recognises PAUSE frames; return (frames delivered as (bytes, flagged bad),
    statuses delivered, PAUSE quanta reported)."""
    dut = McfReceiver(remove=remove)
    delivered, statuses, events = [], [], []

    async def bench(ctx):
        ctx.set(dut.config.enable, 1)
        ctx.set(dut.config.eth_dst_mcast, PAUSE_MULTICAST_ADDRESS)
        ctx.set(dut.config.check_eth_dst_mcast, 1)
        ctx.set(dut.config.eth_type, MAC_CONTROL_ETHERTYPE)
        ctx.set(dut.config.opcode_lfc, PAUSE_OPCODE)
        ctx.set(dut.config.check_opcode_lfc, 1)
        ctx.set(dut.config.forward, forward)
        schedule = []  # per clock: (byte, last, frame length) or None (idle)
        for frame in frames:
            schedule += [(byte, n == len(frame) - 1, len(frame)) for n, byte in enumerate(frame)]
            schedule += [None] * 12
        current = bytearray()
        for beat in schedule + [None] * 40:
            ctx.set(dut.i.valid, beat is not None)
            ctx.set(dut.i_status.valid, beat is not None and beat[1])
            if beat is not None:
                ctx.set(dut.i.p.data, beat[0])
                ctx.set(dut.i.p.last, beat[1])
                ctx.set(dut.i_status.p.length, beat[2] + FCS_LENGTH)
                ctx.set(dut.i_status.p.error, RxError.NONE)
            await ctx.tick()
            if ctx.get(dut.o.valid):
                current.append(ctx.get(dut.o.p.data))
                if ctx.get(dut.o.p.last):
                    delivered.append((bytes(current), bool(ctx.get(dut.o.p.error))))
                    current = bytearray()
            if ctx.get(dut.o_status.valid):
                statuses.append(ctx.get(dut.o_status.p.error))
            if ctx.get(dut.event.valid):
                events.append(ctx.get(dut.event.p.quanta))

    run(dut, bench)
    return delivered, statuses, events


def test_a_pause_not_forwarded_is_flagged_in_place_as_eth_mac_1g_does():
    frames = [ORDINARY_FRAME, pause_frame_bytes(7), ORDINARY_FRAME]
    delivered, statuses, events = mcf_receiver_run(frames, remove=False)
    assert delivered == [(ORDINARY_FRAME, False), (frames[1], True), (ORDINARY_FRAME, False)]
    assert statuses == [RxError.NONE] * 3, "the statuses keep the wire's verdict"
    assert events == [7]


def test_a_pause_not_forwarded_is_removed_for_the_soc():
    frames = [ORDINARY_FRAME, pause_frame_bytes(7), ORDINARY_FRAME]
    delivered, statuses, events = mcf_receiver_run(frames, remove=True)
    assert delivered == [(ORDINARY_FRAME, False), (ORDINARY_FRAME, False)]
    assert statuses == [RxError.NONE] * 3, "a removed frame's status still comes out"
    assert events == [7]


@pytest.mark.parametrize("remove", [False, True])
def test_a_forwarded_pause_passes_unflagged(remove):
    frames = [pause_frame_bytes(9)]
    delivered, _statuses, events = mcf_receiver_run(frames, remove=remove, forward=True)
    assert delivered == [(frames[0], False)]
    assert events == [9]


def test_control_frame_choices_are_checked():
    with rejected(TypeError, "remove must be True or False"):
        McfReceiver(remove=1)
    with rejected(ValueError, "needs flow_control=True"):
        EthMac(remove_control_frames=True)
    with rejected(TypeError, "remove_control_frames must be True or False"):
        EthMac(flow_control=True, remove_control_frames="yes")
