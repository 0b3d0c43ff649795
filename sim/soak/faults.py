"""Faults a bench injects into a running SoC: AXI error responses from host memory and
malformed frames on the wire (cocotbext-eth), for the soak's fault campaign
(sim/soak/soak_tb.py, docs/reliability.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from cocotb.utils import get_sim_time
from cocotbext.axi import AxiResp
from cocotbext.eth import GmiiFrame

from ..benches.soc import BusErrorWindow

PREAMBLE = 0x55
HOLD_NS = 1000  # an armed error answers until this long after its latest hit: the whole burst
HEADER_BYTES = 18  # Ethernet header + the sequence number


@dataclass
class ArmedError:
    """One error response waiting at ``[start, end)`` for an access of *kind* ("r"/"w")."""

    start: int
    end: int
    kind: str
    decode_error: bool  # DECERR instead of SLVERR
    site: str
    fired_ns: float | None = None  # the first hit
    last_hit_ns: float | None = None

    def over(self, now_ns: float) -> bool:
        """The error has fired and no access hit it for :data:`HOLD_NS`: every beat of
        the burst it failed has been answered with the error."""
        return self.last_hit_ns is not None and now_ns - self.last_hit_ns > HOLD_NS


class BusErrors:
    """One-shot AXI error responses from host memory (a :class:`HostMemory`).

    :meth:`arm` an error at an address window; accesses there of its kind get SLVERR (or
    DECERR) until none came for :data:`HOLD_NS` (every beat of the burst fails, as from a
    slave that cannot take it: cocotbext-axi calls the check once per beat), then the
    window disarms, so the recovery that follows runs on a healthy bus. cocotbext-axi's
    RAM answers SLVERR when its read or write raises; DECERR is that response rewritten on
    its way out (R beat or B response).

    An access past the end of memory gets DECERR always (armed or not): the interconnect
    decodes no slave there (the `driver` fault class's buffer outside memory). Each such
    access is listed in ``outside`` as (time in ns, kind, address).
    """

    def __init__(self, memory):
        self.memory = memory
        self.memory_bytes = memory.size
        self.outside: list[tuple[float, str, int]] = []
        self.armed: list[ArmedError] = []
        self._decode_pending = {"r": 0, "w": 0}
        memory._check_window = self._check
        self._rewrite(memory.read_if.r_channel, "rresp", "r")
        self._rewrite(memory.write_if.b_channel, "bresp", "w")

    def arm(self, error: ArmedError) -> ArmedError:
        self.armed.append(error)
        return error

    def disarm(self) -> None:
        self.armed.clear()

    def _check(self, address: int, length: int, kind: str) -> None:
        now = get_sim_time("ns")
        if address + length > self.memory_bytes:
            self.outside.append((now, kind, address))
            self._decode_pending[kind] += 1
            raise BusErrorWindow(f"outside memory: {kind} 0x{address:x}")
        for error in list(self.armed):
            if error.over(now):
                self.armed.remove(error)
                continue
            if error.kind == kind and address < error.end and error.start < address + length:
                if error.fired_ns is None:
                    error.fired_ns = now
                error.last_hit_ns = now
                self._decode_pending[kind] += error.decode_error
                raise BusErrorWindow(f"{error.site}: {kind} 0x{address:x}")

    def _rewrite(self, channel, field: str, kind: str) -> None:
        send = channel.send

        async def send_with_decode_error(transaction):
            if self._decode_pending[kind] and int(getattr(transaction, field)) == AxiResp.SLVERR:
                self._decode_pending[kind] -= 1
                setattr(transaction, field, AxiResp.DECERR)
            await send(transaction)

        channel.send = send_with_decode_error


def bad_frame(site: str, payload: bytes, rng: random.Random) -> tuple[GmiiFrame, bool]:
    """The wire fault *site* made from *payload* (a frame without FCS): the GMII frame and
    whether it has an SFD (a frame without one reaches no host; the MAC counts it)."""
    if site == "rx_er":
        frame = GmiiFrame.from_payload(payload)
        frame.error = [0] * len(frame.data)
        frame.error[rng.randint(8 + HEADER_BYTES, len(frame.data) - 5)] = 1
        return frame, True
    if site == "bad-fcs":
        frame = GmiiFrame.from_payload(payload)
        frame.data[-1 - rng.randint(0, 3)] ^= 1 << rng.randint(0, 7)
        return frame, True
    if site == "runt":
        return GmiiFrame.from_payload(payload[: rng.randint(1, 59)], min_len=0), True
    if site == "oversize":
        return GmiiFrame.from_payload(payload), True  # the caller makes it long
    if site == "no-sfd":
        return GmiiFrame(bytearray([PREAMBLE] * rng.randint(2, 40))), False
    if site == "cut-short":
        frame = GmiiFrame.from_payload(payload)
        frame.data = frame.data[: rng.randint(8 + 5, len(frame.data) - 1)]
        return frame, True
    raise ValueError(f"no wire fault called {site!r}")
