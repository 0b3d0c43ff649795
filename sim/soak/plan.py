"""What a soak run does, decided from its seed alone: the segments (driver settings, AXI
latency and back-pressure, sizes) and every frame's size and TX fragment layout.

Pure Python (no cocotb), shared by ``macdma soak`` (sim/soak/command.py), which prints and records
it, and the cocotb bench (sim/soak/soak_tb.py), which runs it; so a seed replays a run
exactly. Between segments the driver closes and re-opens the device with the next
segment's settings (as ``ethtool -C`` / ``-G`` do on many drivers). A segment's driver
settings are values of ``macdma run``'s knobs (sim/run/scenario.py), and its DriverConfig
is built from them as ``macdma run`` builds its own (:meth:`Segment.driver_config`).
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from macdma.firmware import regs
from macdma.firmware.driver import IRQ_STRATEGIES, DriverConfig, IrqStrategyName
from macdma.sim.run.knobs import driver_config, scenario_from_values
from macdma.sim.run.scenario import AUTO_WIRE, MAX_EXTRA_FRAGMENTS, WIRES, Scenario

#: Frame sizes without FCS: the smallest untagged frame to the largest.
MIN_FRAME_BYTES, MAX_FRAME_BYTES = 60, 1514
MAX_FRAGMENTS = 16
#: The driver stops its TX queue while fewer descriptors than a frame of this many extra
#: fragments needs are free (the ``frags`` knob): the most ``macdma run`` takes, 17
#: descriptors as the driver's default (MAX_SKB_FRAGS + 1), room for the soak's frames.
DRIVER_EXTRA_FRAGMENTS = MAX_EXTRA_FRAGMENTS
assert MAX_FRAGMENTS <= DRIVER_EXTRA_FRAGMENTS + 1
#: The driver model runs on the ideal CPU (the soak checks correctness, not CPU time) with
#: the SoC's system clock on the boards.
SOAK_CPU = "ideal"
SYS_CLK_MHZ = 125
MIN_RX_BUF_BYTES, MAX_RX_BUF_BYTES = 64, 2048
#: Each TX ring slot's fragment window: two 4 KiB pages, so a fragment can cross one.
TX_WINDOW_BYTES = 8192
PAGE_BYTES = 4096
SEGMENT_FRAMES = 500  # frames per direction per segment (the last one takes the rest)
MAX_TX_RING, MAX_RX_RING = 128, 128
#: The burst caps the soak cycles through: every power of two the BURST_BEATS register
#: accepts (the register map's range; 1..256 beats).
BURST_CAPS = tuple(
    1 << n
    for n in range(regs.TX_BURST_BEATS_MAX.bit_length())
    if regs.TX_BURST_BEATS_MIN <= 1 << n <= regs.TX_BURST_BEATS_MAX
)
#: RX buffer sizes and coalescing counts are drawn class by class (each class once per
#: round of segments), uniformly inside the class: the soak's coverage bins.
RX_BUF_CLASSES = ((64, 127), (128, 255), (256, 511), (512, 1023), (1024, 1535), (1536, 2048))
COALESCE_FRAME_CLASSES = ((1, 1), (2, 7), (8, 31), (32, 255))
COALESCE_US_CLASSES = ((1, 9), (10, 99), (100, 200))
#: The IRQ strategies the segments cycle through: the driver's, but for dim, which the
#: soak predates; adding it would reshuffle every seed's plan (the CI profiles' and the
#: recorded runs' segments), so it stays out until the soak is re-baselined with it.
IRQ_STRATEGY_NAMES = tuple(name for name in IRQ_STRATEGIES if name != IrqStrategyName.DIM)
#: The five AXI channels of host memory (the DMA's one master port).
AXI_CHANNELS = ("aw", "w", "b", "ar", "r")

#: Fault classes and their injection sites (docs/reliability.md: what each does).
AXI_SITES = (
    "tx-desc-fetch",
    "tx-data-read",
    "tx-writeback",
    "rx-desc-fetch",
    "rx-data-write",
    "rx-writeback",
)
WIRE_SITES = ("rx_er", "bad-fcs", "runt", "oversize", "no-sfd", "cut-short", "short-gap")
#: A faulty driver: one bad post (descriptor or doorbell) in the TX or the RX stream, made
#: by a bench-side hook in the driver model's ring and MMIO path (sim/soak/soak_tb.py).
DRIVER_SITES = (
    "tx-own-zero-length",
    "tx-buffer-outside-memory",
    "tx-tail-beyond-ring",
    "tx-own-twice",
    "rx-own-zero-length",
    "rx-buffer-outside-memory",
    "rx-tail-beyond-ring",
    "rx-own-twice",
)
#: The `driver` sites whose bad RX descriptor halts the channel only when the DMA comes to
#: use it: one ring lap after its post. Their segments get the smallest RX ring, so that
#: lap ends well inside the segment's traffic.
RX_LAP_SITES = ("rx-own-zero-length", "rx-buffer-outside-memory")
MIN_RX_RING = 16
FAULT_SITES = {
    "axi-slverr": AXI_SITES,
    "axi-decerr": AXI_SITES,
    "wire": WIRE_SITES,
    "reset": ("tx-channel", "rx-channel", "soc"),
    "exhaustion": ("rx-no-buffers", "tx-irq-masked"),
    "driver": DRIVER_SITES,
}
FAULT_CLASSES = tuple(FAULT_SITES)
FAULT_SEGMENT_FRAMES = 200  # shorter segments with faults: one fault per segment
WIRE_FAULT_FRAMES = 3  # bad frames sent at a wire fault (good ones at short-gap: 8)

#: Bugs the bench can plant in the stack it plays (SoakConfig.plant), to show that its
#: accounting catches them (docs/reliability.md, "Planted faults"): `double-count` hands
#: the first RX frame delivered intact to the stack twice, `lost-frame` drops it there
#: with no counter.
PLANTS = ("double-count", "lost-frame")

SOAK_ENV = "MACDMA_SOAK"  # the SoakConfig as JSON, for the cocotb bench
RECORD_ENV = "MACDMA_SOAK_RECORD"  # where the bench appends its JSON lines


@dataclass(frozen=True)
class SoakConfig:
    """One soak run: *frames* per direction, *seed*, *segment_frames* per segment, the
    fault classes to inject (sim/soak/command.py ``FAULT_CLASSES``; empty for a clean soak), and
    *plant*: "" or one of :data:`PLANTS`, a bug the bench plants in its own stack (a
    self-test of its accounting: the run must fail); *wire*: the GMII wire, as ``macdma
    run``'s (``auto``: the frame wire on Verilator, cocotbext-eth's models on Icarus;
    :meth:`on` resolves it for a simulator)."""

    frames: int = 50_000
    seed: int = 1
    segment_frames: int = SEGMENT_FRAMES
    faults: tuple[str, ...] = ()
    plant: str = ""
    wire: str = "auto"

    def __post_init__(self) -> None:
        if isinstance(self.frames, bool) or not isinstance(self.frames, int) or self.frames < 1:
            raise ValueError(f"--frames must be a whole number >= 1, got {self.frames!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"--seed must be a whole number >= 0, got {self.seed!r}")
        if not isinstance(self.segment_frames, int) or self.segment_frames < 1:
            raise ValueError(f"segment_frames must be >= 1, got {self.segment_frames!r}")
        object.__setattr__(self, "faults", tuple(self.faults))
        unknown = [name for name in self.faults if name not in FAULT_SITES]
        if unknown:
            raise ValueError(
                f"unknown fault class {', '.join(unknown)}: choose from {', '.join(FAULT_CLASSES)}"
            )
        if self.plant not in ("", *PLANTS):
            raise ValueError(f"plant must be one of {', '.join(PLANTS)}, not {self.plant!r}")
        if self.wire not in ("auto", *WIRES):
            raise ValueError(f"--wire must be auto or one of {', '.join(WIRES)}, not {self.wire!r}")

    def on(self, sim: str) -> SoakConfig:
        """This run on simulator *sim*: ``auto`` resolved to the wire it uses there."""
        return replace(self, wire=AUTO_WIRE[sim]) if self.wire == "auto" else self

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SoakConfig:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class Segment:
    """One segment's settings: the driver's (rings, RX buffer, burst cap, prefetch, IRQ
    strategy and coalescing, rate limit) and the bench's (host memory latency per burst,
    back-pressure per AXI channel as a paused fraction, RX idle gaps)."""

    index: int
    tx_frames: int
    rx_frames: int
    tx_ring: int
    rx_ring: int
    rx_buf: int
    burst_beats: int
    prefetch: int
    irq: str
    coalesce_frames: int
    coalesce_us: int
    poll_us: int
    budget: int
    irq_min_interval_us: int
    mem_latency_cycles: int
    pause_fraction: dict[str, float] = field(default_factory=dict)
    rx_gap_fraction: float = 0.0
    fault_class: str = ""  # the segment's one fault ("" for none), at which frame
    fault_site: str = ""
    fault_at_frame: int = 0

    def describe(self) -> str:
        coalesce = ""
        if self.irq in ("coalesce", "napi") and (self.coalesce_frames > 1 or self.coalesce_us):
            coalesce = f" frames={self.coalesce_frames} us={self.coalesce_us}"
        pauses = " ".join(f"{c}={p:.0%}" for c, p in self.pause_fraction.items())
        return (
            f"segment {self.index}: {self.irq}{coalesce} rings {self.tx_ring}/{self.rx_ring} "
            f"rx_buf {self.rx_buf} burst {self.burst_beats} prefetch {self.prefetch} "
            f"latency {self.mem_latency_cycles} pauses {pauses}"
            + (f" fault {self.fault_class}/{self.fault_site}" if self.fault_class else "")
        )

    def knob_values(self) -> dict[str, Any]:
        """The segment's settings as values of ``macdma run``'s knobs, by knob name (every
        other knob keeps its default)."""
        return {
            "cpu": SOAK_CPU,
            "sys_mhz": SYS_CLK_MHZ,
            "frags": DRIVER_EXTRA_FRAGMENTS,
            "tx_ring": self.tx_ring,
            "rx_ring": self.rx_ring,
            "rx_buf_bytes": self.rx_buf,
            "burst_beats": self.burst_beats,
            "prefetch": self.prefetch,
            "irq": self.irq,
            "coalesce_frames": self.coalesce_frames,
            "coalesce_us": self.coalesce_us,
            "poll_us": self.poll_us,
            "budget": self.budget,
            "irq_min_interval_us": self.irq_min_interval_us,
            "mem_latency_cycles": self.mem_latency_cycles,
        }

    def driver_config(self, cpu_driver: dict[str, Any] | None = None) -> DriverConfig:
        """The driver's configuration for this segment: its knob values checked as
        ``macdma run`` checks its own (a Scenario) and turned into a DriverConfig the one
        way (:func:`macdma.sim.run.knobs.driver_config`), over the CPU file's driver
        settings ``cpu_driver``."""
        scenario = scenario_from_values(Scenario, self.knob_values(), f"soak segment {self.index}")
        return driver_config(scenario, cpu_driver)


def _cycle(rng: random.Random, values: tuple, count: int) -> list:
    """*count* values going through *values* in shuffled rounds, so that every value
    comes up once in each len(values) segments (coverage without luck)."""
    out: list = []
    while len(out) < count:
        round_ = list(values)
        rng.shuffle(round_)
        out.extend(round_)
    return out[:count]


def plan_segments(config: SoakConfig) -> list[Segment]:
    """The run's segments, from ``config.seed``: frames split into segments of
    ``segment_frames`` per direction; IRQ strategy, burst cap, RX buffer size class and
    coalescing classes cycle through every value."""
    rng = random.Random(f"soak-plan-{config.seed}")
    count = -(-config.frames // config.segment_frames)
    strategies = _cycle(rng, IRQ_STRATEGY_NAMES, count)
    bursts = _cycle(rng, BURST_CAPS, count)
    rx_bufs = [rng.randint(*c) for c in _cycle(rng, RX_BUF_CLASSES, count)]
    coalesce_counts = iter(_cycle(rng, COALESCE_FRAME_CLASSES, 2 * count))
    coalesce_timers = iter(_cycle(rng, COALESCE_US_CLASSES, 2 * count))
    faults = [(c, site) for c in config.faults for site in FAULT_SITES[c]]
    segments = []
    for index in range(count):
        frames = min(config.segment_frames, config.frames - index * config.segment_frames)
        irq = strategies[index]
        coalesce_frames, coalesce_us = 1, 0
        if irq == "coalesce" or (irq == "napi" and rng.random() < 0.5):
            coalesce_frames = rng.randint(*next(coalesce_counts))
            # A count without a timer would strand the last frames of a burst.
            coalesce_us = rng.randint(*next(coalesce_timers))
        pause_fraction = {
            channel: rng.choice((0.0, 0.0, 0.05, 0.2, 0.4)) for channel in AXI_CHANNELS
        }
        segment = Segment(
            index=index,
            tx_frames=frames,
            rx_frames=frames,
            tx_ring=rng.choice((32, 64, 128)),
            rx_ring=rng.choice((MIN_RX_RING, 32, 64, 128)),
            rx_buf=rx_bufs[index],
            burst_beats=bursts[index],
            prefetch=rng.randint(1, 15),
            irq=irq,
            coalesce_frames=coalesce_frames,
            coalesce_us=coalesce_us,
            poll_us=rng.choice((5, 10, 20)),
            budget=rng.choice((8, 16, 64)),
            irq_min_interval_us=rng.choice((0, 0, 0, 5, 20)),
            mem_latency_cycles=rng.choice((0, 2, 8, 20)),
            pause_fraction=pause_fraction,
            rx_gap_fraction=rng.choice((0.0, 0.02, 0.1)),
            **_fault_fields(faults, index, frames, rng),
        )
        if segment.fault_site in RX_LAP_SITES:
            # After the draws, so the other segments' settings stay as the seed made them.
            segment = replace(segment, rx_ring=MIN_RX_RING)
        segments.append(segment)
    return segments


def _fault_fields(faults: list[tuple[str, str]], index: int, frames: int, rng) -> dict:
    """Segment *index*'s fault: the next (class, site) in turn, at a random frame in the
    segment's second fifth to third fifth (traffic running before and after it)."""
    if not faults:
        return {}
    fault_class, site = faults[index % len(faults)]
    at = rng.randint(frames // 5, max(frames // 5, frames * 3 // 5))
    return {"fault_class": fault_class, "fault_site": site, "fault_at_frame": at}


@dataclass(frozen=True)
class TxLayout:
    """One TX frame as the stack hands it over: fragment lengths and, per fragment, its
    byte offset inside its ring slot's :data:`TX_WINDOW_BYTES` window."""

    lengths: tuple[int, ...]
    offsets: tuple[int, ...]


def frame_sizes(seed: int, segment: int, direction: str, count: int) -> list[int]:
    """*count* random frame sizes (60..1514 bytes without FCS) for one segment."""
    rng = random.Random(f"soak-sizes-{seed}-{segment}-{direction}")
    return [rng.randint(MIN_FRAME_BYTES, MAX_FRAME_BYTES) for _ in range(count)]


def tx_layouts(seed: int, segment: int, sizes: list[int]) -> list[TxLayout]:
    """A fragment layout per TX frame: 1..16 fragments cut at random points; each placed
    at a random, often odd, offset, a third of them across the 4 KiB page boundary in the
    middle of the slot's window."""
    rng = random.Random(f"soak-layout-{seed}-{segment}")
    layouts = []
    for size in sizes:
        count = rng.randint(1, min(MAX_FRAGMENTS, size))
        cuts = sorted(rng.sample(range(1, size), count - 1))
        lengths = tuple(b - a for a, b in zip([0, *cuts], [*cuts, size], strict=True))
        offsets = tuple(fragment_offset(rng, length) for length in lengths)
        layouts.append(TxLayout(lengths, offsets))
    return layouts


def fragment_offset(rng: random.Random, length: int) -> int:
    """Where a fragment of *length* bytes starts in its window: across the page boundary
    (a third of the time, when it has 2 bytes or more), else anywhere it fits."""
    if length >= 2 and rng.random() < 1 / 3:
        return rng.randint(PAGE_BYTES - length + 1, PAGE_BYTES - 1)
    return rng.randint(0, TX_WINDOW_BYTES - length)


def crosses_page(offset: int, length: int) -> bool:
    """Whether ``[offset, offset + length)`` crosses a 4 KiB boundary."""
    return offset // PAGE_BYTES != (offset + length - 1) // PAGE_BYTES
