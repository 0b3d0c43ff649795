"""Adaptive interrupt moderation in the driver, after Linux's ``net_dim`` (lib/dim).

The driver counts interrupts, packets and bytes; every :data:`DIM_NEVENTS` interrupts it
hands a sample to :meth:`NetDim.sample`, which compares the rates since the previous
sample with the ones before and walks a table of coalescing profiles (frames, µs), one
step at a time, towards the profile that moves the most bytes for the fewest interrupts.
The driver programs the chosen profile into the coalescing register. The hardware is
unchanged: this is only a policy for IRQ_RX_COALESCE.

The rules are net_dim's (``net_dim_decision``, ``net_dim_stats_compare``,
``net_dim_step``), written out so they can be read without the kernel source:

- A measurement spans at least :data:`DIM_NEVENTS` interrupts; its rates are bytes,
  packets and interrupts per millisecond.
- Compared with the previous measurement, one is *better* when its byte rate is
  significantly higher (more than :data:`DIM_SIGNIFICANT_PCT` percent), *worse* when
  significantly lower; with equal byte rates the packet rate decides the same way; with
  equal packet rates, significantly fewer interrupts per ms is better and more is worse;
  otherwise the two are the *same*.
- States: ``going_right`` (towards more moderation), ``going_left`` (towards less),
  ``parking_on_top`` (stay until the traffic changes), ``parking_tired`` (stay for a
  while after too many steps).
- Going right or left: unless the new measurement is better, turn around. Having turned
  after a single step back (the previous profile was the best), park on top. Otherwise
  step one profile in the current direction; at the table's edge park on top; after
  2 x len(table) steps without parking, park tired.
- Parked on top: a measurement that is not the same (the load changed) starts walking
  again, left from any profile but the first, right from the first.
- Parked tired: after 2 x len(table) measurements, start walking again as above.
- A decision that changes the profile starts a new measurement from the current counters.

Pure Python: no cocotb, no asyncio.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AXIENET_DIM_PROFILES",
    "AXIENET_DIM_START",
    "DIM_NEVENTS",
    "DIM_TABLES",
    "DIM_RX_PROFILES",
    "DIM_SIGNIFICANT_PCT",
    "DimSample",
    "NetDim",
]

#: Interrupts per measurement (NET_DIM_NEVENTS in Linux's include/linux/dim.h).
DIM_NEVENTS = 64
#: A rate differs significantly from another when it is more than this many percent of it
#: away (IS_SIGNIFICANT_DIFF in lib/dim/net_dim.c).
DIM_SIGNIFICANT_PCT = 10
#: The RX profile table, least moderation first: (coalesce frames, coalesce µs) pairs,
#: after Linux's NET_DIM_RX_EQE_PROFILES (µs 1, 8, 64, 128, 256 with a packet cap of
#: 256); the frame count is capped at 255, the largest IRQ_RX_COALESCE.frames holds.
DIM_RX_PROFILES: tuple[tuple[int, int], ...] = (
    (255, 1),
    (255, 8),
    (255, 64),
    (255, 128),
    (255, 256),
)

#: The xilinx_axienet driver's own table (its 2025 DIM support, not net_dim's stock one):
#: RX coalescing frame counts 1, 4, 16, 64 and 255, each with the AXI DMA's delay timer
#: fixed at 16 µs (restarted by each completion); the driver starts at the second.
AXIENET_DIM_PROFILES: tuple[tuple[int, int], ...] = ((1, 16), (4, 16), (16, 16), (64, 16),
                                                     (255, 16))  # fmt: skip
AXIENET_DIM_START = 1
#: ``DriverConfig.dim_table``: (profiles, first profile, what a sample's events count).
#: net_dim's stock use counts every interrupt of the device; axienet feeds DIM its RX
#: interrupts only.
DIM_TABLES: dict[str, tuple[tuple[tuple[int, int], ...], int, str]] = {
    "net_dim": (DIM_RX_PROFILES, 0, "irqs"),
    "axienet": (AXIENET_DIM_PROFILES, AXIENET_DIM_START, "rx_irqs"),
}

_PARKING_ON_TOP, _PARKING_TIRED, _GOING_RIGHT, _GOING_LEFT = (
    "parking_on_top",
    "parking_tired",
    "going_right",
    "going_left",
)
_BETTER, _SAME, _WORSE = 1, 0, -1


@dataclass(frozen=True)
class DimSample:
    """Cumulative counters at one moment: ``time_ns``, ``events`` (interrupts),
    ``packets``, ``bytes``."""

    time_ns: float
    events: int
    packets: int
    bytes: int


@dataclass(frozen=True)
class _Rates:
    bytes_per_ms: float
    packets_per_ms: float
    events_per_ms: float


def _significant(value: float, reference: float) -> bool:
    """More than DIM_SIGNIFICANT_PCT percent apart (IS_SIGNIFICANT_DIFF)."""
    if reference == 0:
        return value != 0
    return abs(value - reference) * 100 > DIM_SIGNIFICANT_PCT * abs(reference)


def _compare(current: _Rates, previous: _Rates) -> int:
    """net_dim_stats_compare: better / same / worse, bytes first, then packets, then
    interrupts (fewer is better)."""
    if _significant(current.bytes_per_ms, previous.bytes_per_ms):
        return _BETTER if current.bytes_per_ms > previous.bytes_per_ms else _WORSE
    if _significant(current.packets_per_ms, previous.packets_per_ms):
        return _BETTER if current.packets_per_ms > previous.packets_per_ms else _WORSE
    if _significant(current.events_per_ms, previous.events_per_ms):
        return _BETTER if current.events_per_ms < previous.events_per_ms else _WORSE
    return _SAME


class NetDim:
    """One net_dim instance over ``profiles`` ((frames, µs) pairs, least moderation
    first), starting at ``profile_index``.

    Members: ``profile_index`` (the profile in force), ``state`` (one of the four states
    above), ``decisions`` (measurements compared), ``changes`` (profile changes), and
    ``history`` ((time_ns, profile_index) at every change).
    """

    def __init__(
        self,
        profiles: tuple[tuple[int, int], ...] = DIM_RX_PROFILES,
        *,
        profile_index: int = 0,
        nevents: int = DIM_NEVENTS,
    ) -> None:
        if not profiles:
            raise ValueError("a DIM profile table needs at least one (frames, µs) pair")
        if not 0 <= profile_index < len(profiles):
            raise ValueError(
                f"DIM profile_index {profile_index!r} is outside the table (0..{len(profiles) - 1})"
            )
        if nevents < 1:
            raise ValueError(f"DIM nevents {nevents!r} must be >= 1")
        self.profiles = tuple(profiles)
        self.profile_index = profile_index
        self.nevents = nevents
        self.state = _PARKING_ON_TOP
        self.steps_right = 0
        self.steps_left = 0
        self.tired = 0
        self.decisions = 0
        self.changes = 0
        self.history: list[tuple[float, int]] = []
        self._start: DimSample | None = None
        self._previous: _Rates | None = None

    @property
    def profile(self) -> tuple[int, int]:
        """The (frames, µs) pair in force."""
        return self.profiles[self.profile_index]

    def sample(self, now: DimSample) -> bool:
        """Feed the counters at ``now``; True when the profile changed (the driver then
        programs :attr:`profile`). A measurement completes every :attr:`nevents` events."""
        if self._start is None:
            self._start = now
            return False
        if now.events - self._start.events < self.nevents:
            return False
        span_ms = (now.time_ns - self._start.time_ns) / 1e6
        if span_ms <= 0:
            return False
        rates = _Rates(
            (now.bytes - self._start.bytes) / span_ms,
            (now.packets - self._start.packets) / span_ms,
            (now.events - self._start.events) / span_ms,
        )
        self._start = now
        before = self.profile_index
        self._decide(rates)
        self.decisions += 1
        if self.profile_index != before:
            self.changes += 1
            self.history.append((now.time_ns, self.profile_index))
            return True
        return False

    # -- net_dim_decision ------------------------------------------------------------------

    def _decide(self, rates: _Rates) -> None:
        previous_state = self.state
        if self._previous is None:
            self._previous = rates
            self._exit_parking()
            return
        verdict = _compare(rates, self._previous)
        if self.state == _PARKING_ON_TOP:
            if verdict != _SAME:
                self._exit_parking()
        elif self.state == _PARKING_TIRED:
            self.tired -= 1
            if not self.tired:
                self._exit_parking()
        else:
            if verdict != _BETTER:
                self._turn()
            if self._on_top():
                self._park_on_top()
            else:
                result = self._step()
                if result == "edge":
                    self._park_on_top()
                elif result == "tired":
                    self._park_tired()
        if previous_state != _PARKING_ON_TOP or self.state != _PARKING_ON_TOP:
            self._previous = rates

    def _exit_parking(self) -> None:
        self.state = _GOING_LEFT if self.profile_index else _GOING_RIGHT
        self._step()

    def _turn(self) -> None:
        if self.state == _GOING_RIGHT:
            self.state = _GOING_LEFT
            self.steps_left = 0
        elif self.state == _GOING_LEFT:
            self.state = _GOING_RIGHT
            self.steps_right = 0

    def _on_top(self) -> bool:
        """Turned around right after one step back: the profile before it was the best."""
        if self.state == _GOING_RIGHT:
            return self.steps_left > 1 and self.steps_right == 1
        if self.state == _GOING_LEFT:
            return self.steps_right > 1 and self.steps_left == 1
        return False

    def _step(self) -> str:
        if self.tired == 2 * len(self.profiles):
            return "tired"
        if self.state == _GOING_RIGHT:
            if self.profile_index == len(self.profiles) - 1:
                return "edge"
            self.profile_index += 1
            self.steps_right += 1
        elif self.state == _GOING_LEFT:
            if self.profile_index == 0:
                return "edge"
            self.profile_index -= 1
            self.steps_left += 1
        self.tired += 1
        return "stepped"

    def _park_on_top(self) -> None:
        self.steps_right = self.steps_left = 0
        self.tired = 0
        self.state = _PARKING_ON_TOP

    def _park_tired(self) -> None:
        self.steps_right = self.steps_left = 0
        self.state = _PARKING_TIRED
