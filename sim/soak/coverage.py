"""Functional coverage of the soak and the fault campaign, with cocotb-coverage.

cocotb-coverage is the field's library for this (SystemVerilog-style cover points and
bins for cocotb benches); its cover points are sampled by calling the decorated functions
below. :class:`SoakCoverage` is what the bench calls; :meth:`SoakCoverage.report` gives
every cover point's bins and hits, from which ``macdma soak`` prints the coverage and
names the empty bins (sim/soak/command.py).
"""

from __future__ import annotations

from cocotb_coverage.coverage import CoverPoint, coverage_db

from macdma.sim.soak.plan import (
    AXI_CHANNELS,
    BURST_CAPS,
    IRQ_STRATEGY_NAMES,
    MAX_FRAGMENTS,
    TxLayout,
    crosses_page,
)

PREFIX = "soak"


def _ranges(*bounds: tuple[int, int]) -> dict:
    """Cover point arguments for ranges of integers: bins ``(lo, hi)``, labels ``lo..hi``."""
    return {
        "bins": list(bounds),
        "bins_labels": [f"{lo}" if lo == hi else f"{lo}..{hi}" for lo, hi in bounds],
        "rel": lambda value, bin_: bin_[0] <= value <= bin_[1],
    }


FRAME_SIZE_BINS = _ranges((60, 63), (64, 127), (128, 511), (512, 1023), (1024, 1513), (1514, 1514))


@CoverPoint(f"{PREFIX}.tx.fragments", bins=list(range(1, MAX_FRAGMENTS + 1)))
def _tx_fragments(count: int) -> None:
    pass


@CoverPoint(
    f"{PREFIX}.tx.fragment_alignment",
    bins=[0, 1, 2, 3],
    bins_labels=["4-byte aligned", "+1", "+2", "+3"],
)
def _tx_alignment(byte_offset: int) -> None:
    pass


@CoverPoint(f"{PREFIX}.tx.page_crossing", bins=[False, True], bins_labels=["inside", "crosses"])
def _tx_crossing(crosses: bool) -> None:
    pass


@CoverPoint(f"{PREFIX}.tx.frame_bytes", **FRAME_SIZE_BINS)
def _tx_frame_bytes(size: int) -> None:
    pass


@CoverPoint(f"{PREFIX}.rx.frame_bytes", **FRAME_SIZE_BINS)
def _rx_frame_bytes(size: int) -> None:
    pass


@CoverPoint(
    f"{PREFIX}.rx.buffers_per_frame", **_ranges((1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 24))
)
def _rx_buffers(count: int) -> None:
    pass


@CoverPoint(
    f"{PREFIX}.rx.buffer_bytes",
    **_ranges((64, 127), (128, 255), (256, 511), (512, 1023), (1024, 1535), (1536, 2048)),
)
def _rx_buffer_bytes(size: int) -> None:
    pass


@CoverPoint(f"{PREFIX}.dma.burst_cap", bins=list(BURST_CAPS))
def _burst_cap(beats: int) -> None:
    pass


@CoverPoint(f"{PREFIX}.irq.strategy", bins=list(IRQ_STRATEGY_NAMES))
def _irq_strategy(name: str) -> None:
    pass


@CoverPoint(f"{PREFIX}.irq.coalesce_frames", **_ranges((1, 1), (2, 7), (8, 31), (32, 255)))
def _coalesce_frames(frames: int) -> None:
    pass


@CoverPoint(f"{PREFIX}.irq.coalesce_us", **_ranges((0, 0), (1, 9), (10, 99), (100, 65535)))
def _coalesce_us(us: int) -> None:
    pass


@CoverPoint(
    f"{PREFIX}.irq.rate_limit", bins=[False, True], bins_labels=["off", "IRQ_MIN_INTERVAL on"]
)
def _rate_limit(on: bool) -> None:
    pass


@CoverPoint(f"{PREFIX}.axi.backpressure", bins=list(AXI_CHANNELS))
def _backpressure(channel: str) -> None:
    pass


class SoakCoverage:
    """The soak's cover points; the bench samples them with the ``sample_*`` methods.
    Fault cover points (class x site) are created by :meth:`fault_sites` for the sites a
    run plans, so that an empty bin names a site that was planned and never hit."""

    def __init__(self) -> None:
        self._fault_points: dict[str, object] = {}

    def sample_tx_frame(self, layout: TxLayout) -> None:
        _tx_fragments(len(layout.lengths))
        _tx_frame_bytes(sum(layout.lengths))
        for offset, length in zip(layout.offsets, layout.lengths, strict=True):
            _tx_alignment(offset % 4)
            _tx_crossing(crosses_page(offset, length))

    def sample_rx_frame(self, size: int, buffers: int) -> None:
        _rx_frame_bytes(size)
        _rx_buffers(buffers)

    def sample_segment(self, segment) -> None:
        _rx_buffer_bytes(segment.rx_buf)
        _burst_cap(segment.burst_beats)
        _irq_strategy(segment.irq)
        if segment.irq in ("coalesce", "napi"):
            _coalesce_frames(segment.coalesce_frames)
            _coalesce_us(segment.coalesce_us)
        _rate_limit(segment.irq_min_interval_us > 0)
        for channel, fraction in segment.pause_fraction.items():
            if fraction > 0:
                _backpressure(channel)

    def fault_sites(self, fault_class: str, sites: list[str]) -> None:
        """Create the cover point of *fault_class* with one bin per site."""
        name = f"{PREFIX}.faults.{fault_class}"
        if name in self._fault_points:
            return

        @CoverPoint(name, bins=list(sites))
        def sample(site: str) -> None:
            pass

        self._fault_points[name] = sample

    def sample_fault(self, fault_class: str, site: str) -> None:
        self._fault_points[f"{PREFIX}.faults.{fault_class}"](site)

    def report(self) -> dict[str, dict[str, int]]:
        """Every cover point's bins (labels) and their hit counts."""
        out = {}
        for name, item in coverage_db.items():
            if name.startswith(PREFIX + ".") and hasattr(item, "_hits"):
                out[name] = {str(label): hits for label, hits in item.detailed_coverage.items()}
        return out
