"""cocotb bench around ``macdma_eth_mac``: clocks, AXI-Stream client models, GMII PHY models.

Frames to send go into ``tx_source`` (AXI-Stream); what the MAC puts on the wire arrives
in ``tx_sink`` (cocotbext-eth GmiiSink, which stamps every frame). Frames from the wire
go into ``rx_source`` (GmiiSource); what the MAC delivers arrives in ``rx_sink``.
Timing numbers are taken from the GMII models' per-frame time stamps, never assumed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from cocotbext.eth import GmiiFrame, GmiiSink, GmiiSource

from macdma.hdl.mac.counters import RX_COUNTERS, TX_COUNTERS
from macdma.hdl.mac.frame import DEFAULT_IFG_BYTES, DEFAULT_MAX_FRAME_LENGTH

PREAMBLE_AND_SFD = 8


@dataclass(frozen=True)
class LinkMode:
    """How symbols move on the GMII/MII pins at one link speed."""

    name: str
    clock_period_ns: int
    mii: bool
    enable_every: int = 1  # clock enable high on 1 of N clocks

    @property
    def byte_time_ns(self) -> int:
        return self.clock_period_ns * self.enable_every * (2 if self.mii else 1)

    @property
    def line_rate_mbps(self) -> float:
        return 8e3 / self.byte_time_ns


GMII_1000 = LinkMode("1000 Mb/s GMII", 8, mii=False)
MII_100 = LinkMode("100 Mb/s MII", 40, mii=True)
MII_10 = LinkMode("10 Mb/s MII (1 in 10)", 40, mii=True, enable_every=10)


@dataclass(frozen=True)
class WireRecord:
    """One frame as the GMII model saw it: times in ps, length after the SFD."""

    start_ps: int
    end_ps: int
    length: int


def wire_records(frames) -> list[WireRecord]:
    return [
        WireRecord(f.sim_time_start, f.sim_time_end, len(f.get_payload(strip_fcs=False)))
        for f in frames
    ]


@dataclass(frozen=True)
class RateMeasurement:
    """Back-to-back frames in one direction, timed from the bench's time stamps.

    ``gaps_bytes`` is the idle time between consecutive frames in byte times;
    ``elapsed_ps`` runs from the first frame to the last (same reference point in each),
    ``ideal_ps`` is what that span takes at full line rate with the configured IFG.
    """

    direction: str
    frames: int
    frame_bytes: int  # per frame on the wire after the SFD, FCS included
    gaps_bytes: tuple[float, ...]
    elapsed_ps: int
    ideal_ps: int

    @property
    def percent_of_line_rate(self) -> float:
        return 100.0 * self.ideal_ps / self.elapsed_ps

    @property
    def frames_per_second(self) -> float:
        return (self.frames - 1) / (self.elapsed_ps * 1e-12)

    @property
    def mbps(self) -> float:
        """Frame bits per second (FCS included, preamble and gap not), in Mb/s."""
        return self.frames_per_second * self.frame_bytes * 8 / 1e6

    def as_dict(self) -> dict:
        return {
            "direction": self.direction,
            "frames": self.frames,
            "frame_bytes": self.frame_bytes,
            "gap_bytes_min": min(self.gaps_bytes),
            "gap_bytes_max": max(self.gaps_bytes),
            "frames_per_second": self.frames_per_second,
            "mbps": self.mbps,
            "percent_of_line_rate": self.percent_of_line_rate,
        }


def _rate(direction, times_ps, durations_ps, frame_bytes, mode, ifg) -> RateMeasurement:
    """``times_ps``: one reference time per frame; ``durations_ps``: each frame's length
    on the wire (preamble to last FCS byte)."""
    if len(times_ps) < 2:
        raise ValueError("a rate needs at least two frames")
    byte_ps = mode.byte_time_ns * 1000
    gaps = tuple(
        (later - earlier - duration) / byte_ps
        for earlier, later, duration in zip(times_ps, times_ps[1:], durations_ps, strict=False)
    )
    ideal = sum(duration + ifg * byte_ps for duration in durations_ps[:-1])
    return RateMeasurement(
        direction, len(times_ps), frame_bytes, gaps, times_ps[-1] - times_ps[0], ideal
    )


def tx_rate(frames, mode: LinkMode, ifg: int) -> RateMeasurement:
    """From the GMII sink's per-frame stamps (start = first symbol with tx_en)."""
    records = wire_records(frames)
    return _rate(
        "tx",
        [r.start_ps for r in records],
        [r.end_ps - r.start_ps for r in records],
        records[0].length,
        mode,
        ifg,
    )


def rx_rate(last_times_ps, frame_bytes: int, mode: LinkMode, ifg: int) -> RateMeasurement:
    """From the times the client saw each frame's last byte; the MAC's delay is the same
    for every frame, so spacing there is spacing on the wire."""
    duration = (PREAMBLE_AND_SFD + frame_bytes) * mode.byte_time_ns * 1000
    return _rate("rx", list(last_times_ps), [duration] * len(last_times_ps), frame_bytes, mode, ifg)


class MacBench:
    """Everything around one ``macdma_eth_mac`` instance."""

    def __init__(
        self,
        dut,
        mode: LinkMode = GMII_1000,
        *,
        ifg: int = DEFAULT_IFG_BYTES,
        max_length: int = DEFAULT_MAX_FRAME_LENGTH,
    ):
        self.dut = dut
        self.mode = mode
        self.ifg = ifg
        self.max_length = max_length
        self.tx_source = AxiStreamSource(
            AxiStreamBus.from_prefix(dut, "tx_axis"), dut.tx_clk, dut.tx_rst
        )
        self.tx_sink = GmiiSink(
            dut.gmii_txd,
            dut.gmii_tx_er,
            dut.gmii_tx_en,
            dut.tx_clk,
            dut.tx_rst,
            dut.tx_clk_enable,
            dut.tx_mii_select,
        )
        self.rx_source = GmiiSource(
            dut.gmii_rxd,
            dut.gmii_rx_er,
            dut.gmii_rx_dv,
            dut.rx_clk,
            dut.rx_rst,
            dut.rx_clk_enable,
            dut.rx_mii_select,
        )
        self.rx_sink = AxiStreamSink(
            AxiStreamBus.from_prefix(dut, "rx_axis"), dut.rx_clk, dut.rx_rst
        )
        # The wire model counts its gap in clocks, which are nibbles in MII mode.
        self.rx_source.ifg = ifg * (2 if mode.mii else 1)
        for model in (self.tx_source, self.tx_sink, self.rx_source, self.rx_sink):
            model.log.setLevel(logging.WARNING)  # they log every frame at INFO
        self.pulses = {"tx_error_underflow": 0, "rx_error_bad_frame": 0, "rx_error_bad_fcs": 0}
        self.rx_last_times_ps: list[int] = []

    async def start(self):
        """Start clocks and monitors, configure the MAC and take it out of reset."""
        dut = self.dut
        period = self.mode.clock_period_ns
        Clock(dut.tx_clk, period, unit="ns").start()
        Clock(dut.rx_clk, period, unit="ns").start()
        dut.tx_mii_select.value = int(self.mode.mii)
        dut.rx_mii_select.value = int(self.mode.mii)
        dut.tx_clk_enable.value = 1
        dut.rx_clk_enable.value = 1
        dut.cfg_ifg.value = self.ifg
        dut.cfg_tx_enable.value = 1
        dut.cfg_rx_enable.value = 1
        dut.cfg_rx_max_length.value = self.max_length
        dut.gmii_rxd.value = 0
        dut.gmii_rx_dv.value = 0
        dut.gmii_rx_er.value = 0
        if self.mode.enable_every > 1:
            cocotb.start_soon(self._clock_enables(self.mode.enable_every))
        for name in self.pulses:
            cocotb.start_soon(self._count_pulses(name))
        cocotb.start_soon(self._stamp_rx_last())
        dut.tx_rst.value = 1
        dut.rx_rst.value = 1
        await ClockCycles(dut.tx_clk, 4)
        dut.tx_rst.value = 0
        dut.rx_rst.value = 0
        await ClockCycles(dut.tx_clk, 2)

    async def _clock_enables(self, every: int):
        # Both directions share one enable pattern, as a PHY at 10/100 on a fixed clock.
        n = 0
        while True:
            await RisingEdge(self.dut.tx_clk)
            n += 1
            value = int(n % every == 0)
            self.dut.tx_clk_enable.value = value
            self.dut.rx_clk_enable.value = value

    async def _count_pulses(self, name: str):
        signal = getattr(self.dut, name)
        clock = self.dut.tx_clk if name.startswith("tx") else self.dut.rx_clk
        while True:
            await RisingEdge(signal)
            self.pulses[name] += 1
            await RisingEdge(clock)

    async def _stamp_rx_last(self):
        while True:
            await RisingEdge(self.dut.rx_axis_tlast)
            self.rx_last_times_ps.append(get_sim_time("ps"))

    async def counters(self) -> dict[str, int]:
        """Statistics counters, read through the design hierarchy once the last frame's
        status has had time to reach them."""
        await ClockCycles(self.dut.rx_clk, 4)
        mac = self.dut.mac
        values = {}
        for block, names in ((mac.tx_stats, TX_COUNTERS), (mac.rx_stats, RX_COUNTERS)):
            for name in names:
                values[name] = int(getattr(block, f"counters__{name}").value)
        return values

    async def recv_tx(self, count: int):
        """The next ``count`` frames seen on the transmit wire."""
        return [await self.tx_sink.recv() for _ in range(count)]

    async def recv_rx(self, count: int):
        """The next ``count`` frames the MAC delivered to its receive client."""
        return [await self.rx_sink.recv() for _ in range(count)]

    async def back_to_back(self, payloads):
        """Send ``payloads`` back to back both ways at once; return (frames seen on the
        transmit wire, frames delivered to the receive client)."""
        for data in payloads:
            self.tx_source.send_nowait(AxiStreamFrame(data))
            self.rx_source.send_nowait(GmiiFrame.from_payload(data))
        return await self.recv_tx(len(payloads)), await self.recv_rx(len(payloads))

    async def settle(self, byte_times: int = 64):
        await ClockCycles(
            self.dut.tx_clk, byte_times * self.mode.enable_every * (2 if self.mode.mii else 1)
        )
