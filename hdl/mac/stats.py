"""MAC statistics counters, one set per direction, each in its own clock domain.

The counter names and meanings live in :mod:`.counters`, which the register map reads
too. Counters are 32 bits and wrap, as a driver reading them periodically expects.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..counters import RX_COUNTERS, TX_COUNTERS
from .frame import RxError, RxStatus, TxStatus

COUNTER_WIDTH = 32

#: Bad-frame causes and the counter each one increments (exactly one per bad frame).
RX_ERROR_COUNTERS = {
    RxError.FCS: "rx_fcs_errors",
    RxError.RUNT: "rx_runts",
    RxError.OVERSIZE: "rx_oversize",
    RxError.PHY: "rx_phy_errors",
    RxError.ALIGNMENT: "rx_alignment_errors",
}


def _bump(m, counter, amount=1):
    m.d.sync += counter.eq(counter + amount)


def counters_signature(names):
    """One 32-bit output per counter name."""
    return wiring.Signature({name: Out(COUNTER_WIDTH) for name in names})


class TxStatistics(wiring.Component):
    """Counts transmitted frames from :class:`~.tx.MacTx` status beats.

    Frame and byte counts include padding and FCS, not preamble. Aborted and underrun
    frames are bad frames; underruns are also counted on their own.
    """

    status: In(stream.Signature(TxStatus, always_ready=True))
    counters: Out(counters_signature(TX_COUNTERS))

    def elaborate(self, platform):
        m = Module()
        c = self.counters
        p = self.status.p
        with m.If(self.status.valid):
            with m.If(p.aborted | p.underrun):
                _bump(m, c.tx_frames_bad)
                _bump(m, c.tx_bytes_bad, p.length)
            with m.Else():
                _bump(m, c.tx_frames_good)
                _bump(m, c.tx_bytes_good, p.length)
            with m.If(p.underrun):
                _bump(m, c.tx_underruns)
        return m


class RxStatistics(wiring.Component):
    """Counts received frames from :class:`~.rx.MacRx` status beats and pulses.

    ``rx_frames_good + rx_frames_bad`` is every frame delivered to the client, and the
    per-cause counters add up to ``rx_frames_bad``. Frames never delivered are counted
    in ``rx_preamble_errors`` (no SFD) and ``rx_dropped_disabled`` (receiver off).
    """

    status: In(stream.Signature(RxStatus, always_ready=True))
    preamble_error: In(1)
    dropped_disabled: In(1)
    counters: Out(counters_signature(RX_COUNTERS))

    def elaborate(self, platform):
        m = Module()
        c = self.counters
        p = self.status.p

        with m.If(self.status.valid):
            with m.If(p.error == RxError.NONE):
                _bump(m, c.rx_frames_good)
                _bump(m, c.rx_bytes_good, p.length)
            with m.Else():
                _bump(m, c.rx_frames_bad)
                _bump(m, c.rx_bytes_bad, p.length)
            for cause, name in RX_ERROR_COUNTERS.items():
                with m.If(p.error == cause):
                    _bump(m, getattr(c, name))
        with m.If(self.preamble_error):
            _bump(m, c.rx_preamble_errors)
        with m.If(self.dropped_disabled):
            _bump(m, c.rx_dropped_disabled)
        return m
