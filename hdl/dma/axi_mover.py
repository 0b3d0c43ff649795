"""What the AXI4 burst reader and writer share: their parameters, their command stream,
and the address half that issues a command's bursts ahead of its data (:class:`BurstIssuer`).

Each mover adds its own data half: the reader realigns R beats into packed words, the writer
packed words into W beats with strobes.
"""

from contextlib import contextmanager

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In
from amaranth.utils import exact_log2

from ..bus.axi4 import BURST_INCR
from ..regmap import REGISTER_MAP
from .bursts import next_burst_beats

__all__ = ["BURST_BEATS_BITS", "AxiMover", "BurstIssuer", "check_mover_params"]

# AxCACHE "Normal Non-cacheable Bufferable": the usual choice of a DMA master without coherency.
AXCACHE_NORMAL_BUFFERABLE = 0b0011
# AxPROT: unprivileged, secure, data access.
AXPROT_DATA = 0b000
#: Width of the runtime burst cap: the channels' BURST_BEATS register (TX and RX alike).
BURST_BEATS_BITS = REGISTER_MAP.field("TX_BURST_BEATS", "burst_beats").width
# Longest command in bytes: the `length` field is 16 bits wide.
MAX_LENGTH_BYTES = 2**16 - 1


def check_mover_params(data_width, addr_width, max_outstanding):
    """Validate the elaboration parameters shared by the reader and the writer."""
    if not isinstance(data_width, int) or data_width not in (32, 64):
        raise ValueError(f"data_width must be 32 or 64, not {data_width!r}")
    if not isinstance(addr_width, int) or not 12 <= addr_width <= 64:
        raise ValueError(f"addr_width must be an integer in 12..64, not {addr_width!r}")
    if not isinstance(max_outstanding, int) or not 1 <= max_outstanding <= 16:
        raise ValueError(f"max_outstanding must be an integer in 1..16, not {max_outstanding!r}")


class AxiMover(wiring.Component):
    """What the burst reader and writer share: parameter checks, the command stream and the
    runtime burst cap. A subclass adds its data stream and its AXI half in
    :meth:`data_members`, called once the parameters passed.

    Parameters
    ----------
    data_width : 32 or 64
        AXI data width; one beat carries ``W = data_width // 8`` bytes.
    addr_width : 12..64
        AXI address width.
    max_outstanding : 1..16
        Bursts requested (AR or AW issued) and not yet finished (last R beat, B response).

    Members
    -------
    cmd : In(stream of {addr, length})
        One command: byte address (any alignment) and ``length`` in bytes, 1..65535.
        A command is accepted only when the previous one has fully finished.
    burst_beats : In(:data:`BURST_BEATS_BITS`)
        Runtime burst cap in beats: the channel's BURST_BEATS register, 1..256 (0 is read as
        1, above 256 as 256). Sampled per
        burst, so a change applies from the next burst on.
    """

    def __init__(self, data_width: int, addr_width: int, max_outstanding: int):
        check_mover_params(data_width, addr_width, max_outstanding)
        self._data_width = data_width
        self._addr_width = addr_width
        self._max_outstanding = max_outstanding
        command = data.StructLayout({"addr": addr_width, "length": 16})
        super().__init__(
            {
                "cmd": In(stream.Signature(command)),
                "burst_beats": In(BURST_BEATS_BITS),
                **self.data_members(),
            }
        )

    def data_members(self) -> dict:
        raise NotImplementedError

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def addr_width(self) -> int:
        return self._addr_width

    @property
    def max_outstanding(self) -> int:
        return self._max_outstanding

    @property
    def beat_bytes(self) -> int:
        return self._data_width // 8

    @property
    def max_beats(self) -> int:
        """Most beats one command can take (its longest length from the worst lane)."""
        return (MAX_LENGTH_BYTES + 2 * (self.beat_bytes - 1)) // self.beat_bytes


class BurstIssuer:
    """The address channel of a mover (``"ar"`` for the reader, ``"aw"`` for the writer).

    From a command's beat-aligned start and its beat count (:meth:`start`) it requests the
    command's bursts, each as long as :func:`next_burst_beats` allows, ahead of the data up
    to ``max_outstanding`` bursts in flight. AxADDR, AxLEN and AxVALID are registered
    outputs; a new request is loaded when the slot is free or being accepted in this very
    cycle, so back-to-back requests are possible. The mover says when a burst is finished
    (its last R beat, or its B response) in :meth:`count`.
    """

    def __init__(self, mover: AxiMover, channel: str):
        self._mover = mover
        self._port = {
            member: getattr(mover.axi, channel + member)
            for member in (
                "valid",
                "ready",
                "addr",
                "len",
                "id",
                "size",
                "burst",
                "lock",
                "cache",
                "prot",
            )
        }
        self.lane_bits = exact_log2(mover.beat_bytes)
        # Lane of the command's first byte inside its beat (the data half realigns by it).
        self.start_lane = Signal(range(mover.beat_bytes), name="start_lane")
        # Beat-aligned start of the next burst, and the beats not yet requested.
        self.next_addr = Signal(mover.addr_width, name=f"{channel}_next_addr")
        self.beats_left = Signal(range(mover.max_beats + 1), name=f"{channel}_beats_left")
        # Bursts requested (loaded) and not finished yet.
        self.in_flight = Signal(range(mover.max_outstanding + 1), name="in_flight")
        self.burst = next_burst_beats(
            self.next_addr, self.beats_left, mover.burst_beats, mover.beat_bytes
        )

    def start(self, addr: Value, length: Value) -> list:
        """The assignments that aim the issuer at a command of ``length`` bytes at ``addr``."""
        lane_bits = self.lane_bits
        return [
            self.start_lane.eq(addr[:lane_bits]),
            self.next_addr.eq(Cat(Const(0, lane_bits), addr[lane_bits:])),
            self.beats_left.eq(
                (addr[:lane_bits] + length + (self._mover.beat_bytes - 1)) >> lane_bits
            ),
        ]

    @contextmanager
    def taking_command(self, m: Module):
        """Inside the mover's idle state: ready for a command; when one comes, aim the
        issuer at it, then run the with-block (given the command's length) in that cycle."""
        cmd = self._mover.cmd
        m.d.comb += cmd.ready.eq(1)
        with m.If(cmd.valid):
            m.d.sync += self.start(cmd.p.addr, cmd.p.length)
            yield cmd.p.length

    def may_issue(self, *, failed: Value, error_now: Value, gate: Value | None = None) -> Value:
        """Whether a burst may be requested: beats are left (and ``gate``, when given), the
        command has not ``failed``, no bad response is being taken (``error_now``: it stops
        the issuer in the cycle it is accepted, not one later), and a slot is free."""
        left = self.beats_left != 0
        if gate is not None:
            left = gate & left
        return left & ~failed & ~error_now & (self.in_flight < self._mover.max_outstanding)

    def issue(self, m: Module, may_issue: Value) -> Value:
        """Add the request register to ``m``; return the cycle's ``load`` (a burst requested)."""
        port = self._port
        load = may_issue & (~port["valid"] | port["ready"])
        m.d.comb += [
            port["id"].eq(0),
            port["size"].eq(self.lane_bits),
            port["burst"].eq(BURST_INCR),
            port["lock"].eq(0),
            port["cache"].eq(AXCACHE_NORMAL_BUFFERABLE),
            port["prot"].eq(AXPROT_DATA),
        ]
        with m.If(load):
            m.d.sync += [
                port["valid"].eq(1),
                port["addr"].eq(self.next_addr),
                port["len"].eq(self.burst - 1),
                self.next_addr.eq(self.next_addr + (self.burst << self.lane_bits)),
                self.beats_left.eq(self.beats_left - self.burst),
            ]
        with m.Elif(port["ready"]):
            m.d.sync += port["valid"].eq(0)
        return load

    def count(self, m: Module, load: Value, finished: Value) -> None:
        """Keep ``in_flight``: up with each ``load``, down with each burst ``finished``."""
        with m.If(load & ~finished):
            m.d.sync += self.in_flight.eq(self.in_flight + 1)
        with m.Elif(~load & finished):
            m.d.sync += self.in_flight.eq(self.in_flight - 1)
