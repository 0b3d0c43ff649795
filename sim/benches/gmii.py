"""The PHY side of a bench: GMII/MII clocks, clock enables and cocotbext-eth wire models.

``GmiiPhy`` drives the receive pins from a ``GmiiSource`` and collects the transmit pins
in a ``GmiiSink``; both stamp every frame, and the rate helpers below turn those stamps
into gaps, frames/s and percent of line rate. Used by every bench with a MAC inside.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadWrite, Timer
from cocotbext.eth import GmiiSink, GmiiSource

PREAMBLE_AND_SFD = 8

CLOCK_IMPL_ENV = "MACDMA_CLOCK_IMPL"
CLOCK_IMPLS = ("gpi", "py")


def clock_impl() -> str:
    """How the benches' clocks toggle: ``"gpi"`` (default) or ``"py"`` from env
    ``MACDMA_CLOCK_IMPL``.

    cocotb 2.1 picks its Python clock unless told otherwise: a task that wakes on every
    half period to write the pin. The GPI clock toggles the pin from C, so a clock nobody
    awaits costs no Python at all (docs/performance.md has the measured difference).
    ``py`` is kept to measure that difference again.
    """
    value = os.environ.get(CLOCK_IMPL_ENV, "").strip() or CLOCK_IMPLS[0]
    if value not in CLOCK_IMPLS:
        raise ValueError(f"{CLOCK_IMPL_ENV} must be one of {', '.join(CLOCK_IMPLS)}; got {value!r}")
    return value


def start_clock(signal, period_ns: float, *, high_ns: float | None = None) -> Clock:
    """Start a free-running clock on *signal*, high first (for *high_ns*, default half).

    It starts once this time step's writes are applied, as cocotb's Python clock does: a
    GPI clock's first edge comes as it starts, and the models sampling on it must see the
    resets and enables the bench set in the same step (Icarus still shows X or Z there).
    """
    clock = Clock(signal, period_ns, unit="ns", impl=clock_impl(), period_high=high_ns)

    async def start_after_writes():
        await ReadWrite()
        clock.start()

    cocotb.start_soon(start_after_writes())
    return clock


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


class GmiiPhy:
    """Clocks and wire models on a design's ``tx_clk``/``rx_clk``/``gmii_*`` pins.

    ``mii_select`` pins are driven when the design has them; otherwise (the SoC, where
    MII mode is a register) the models are told the mode directly. ``own_resets``: the
    PHY's reset inputs on the design, pulsed with the design's at the bench's reset (none:
    cocotbext-eth's models follow the MAC's ``tx_rst``/``rx_rst``).
    """

    own_resets: tuple = ()

    def __init__(self, dut, mode: LinkMode, ifg: int):
        self.dut = dut
        self.mode = mode
        tx_mii = getattr(dut, "tx_mii_select", None)
        rx_mii = getattr(dut, "rx_mii_select", None)
        self.tx_sink = GmiiSink(
            dut.gmii_txd,
            dut.gmii_tx_er,
            dut.gmii_tx_en,
            dut.tx_clk,
            dut.tx_rst,
            dut.tx_clk_enable,
            tx_mii,
        )
        self.rx_source = GmiiSource(
            dut.gmii_rxd,
            dut.gmii_rx_er,
            dut.gmii_rx_dv,
            dut.rx_clk,
            dut.rx_rst,
            dut.rx_clk_enable,
            rx_mii,
        )
        self.tx_sink.mii_mode = self.rx_source.mii_mode = mode.mii
        # The wire model counts its gap in clocks, which are nibbles in MII mode.
        self.rx_source.ifg = ifg * (2 if mode.mii else 1)
        for model in (self.tx_sink, self.rx_source):
            model.log.setLevel(logging.WARNING)  # they log every frame at INFO

    def start(self):
        """Start the PHY clocks and idle the receive pins (call before reset)."""
        dut = self.dut
        mii = int(self.mode.mii)
        pins = {
            "tx_clk_enable": 1,
            "rx_clk_enable": 1,
            "gmii_rxd": 0,
            "gmii_rx_dv": 0,
            "gmii_rx_er": 0,
            "tx_mii_select": mii,  # only on designs that have the pins
            "rx_mii_select": mii,
        }
        for name, value in pins.items():
            if hasattr(dut, name):
                getattr(dut, name).value = value
        start_clock(dut.tx_clk, self.mode.clock_period_ns)
        start_clock(dut.rx_clk, self.mode.clock_period_ns)
        if self.mode.enable_every > 1:
            cocotb.start_soon(self._start_clock_enables(self.mode.enable_every))

    async def _start_clock_enables(self, every: int):
        # Both directions share one enable pattern, high for one PHY clock in `every`, as
        # a PHY at 10/100 on a fixed clock. The enables are clocks of their own (period:
        # `every` PHY clocks), started a quarter period after a PHY clock edge so they
        # never change on one, instead of a task that wakes on every PHY clock.
        period_ns = self.mode.clock_period_ns
        await Timer(period_ns * (every - 1) + period_ns // 4, "ns")
        for enable in (self.dut.tx_clk_enable, self.dut.rx_clk_enable):
            start_clock(enable, period_ns * every, high_ns=period_ns)

    def byte_clocks(self, byte_times: int) -> int:
        """PHY clocks that ``byte_times`` bytes take on the wire."""
        return byte_times * self.mode.enable_every * (2 if self.mode.mii else 1)
