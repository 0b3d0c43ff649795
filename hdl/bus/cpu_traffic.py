"""``CpuTrafficMaster``: an AXI4 master that moves the modelled CPU's own memory traffic
(copies, checksums, cache-line fills and write-backs, uncached descriptor accesses) as real
bursts, so it meets the DMA's bursts in the host memory clock for clock.

Simulation only: the CPU's bytes stay with the bench (it reads and writes the memory's
words directly); this master moves only the *occupancy* of that traffic. Its write beats
carry zeros with every byte strobe off, so the RAM, which honours strobes, never changes a
byte for them (a CPU burst can never corrupt the DMA's data); its read data is dropped.

A bench gives a command (address, length in bytes, read or write) and is told when it has
completed; the master splits it into bursts that never cross a ``2**burst_bytes_log2``
boundary (the CPU's cache line, or its largest burst), each beat standing for
``2**beat_bytes_log2`` bytes of the memory's data path (so a memory wider or faster than
the SoC's 32-bit bus moves the CPU's bytes in fewer beats; the RAM's shared timing costs
each beat of this master accordingly). The bench wakes once per command, never per beat.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .axi4 import BURST_INCR, Axi4Signature

__all__ = ["CMD_BYTES_BITS", "SEQ_BITS", "CpuTrafficMaster"]

#: Width of ``cmd_bytes``: a command moves up to 16 MiB - 1.
CMD_BYTES_BITS = 24
#: Width of the command and completion sequence numbers.
SEQ_BITS = 8
#: Bursts in flight per command (issued, their last R beat or B not back yet): enough to
#: overlap one burst's access latency with the previous one's data, as a cache's line-fill
#: buffers do.
MAX_OUTSTANDING = 2


class CpuTrafficMaster(wiring.Component):
    """Command-driven AXI4 master of occupancy-only bursts.

    Members
    -------
    axi : Out(Axi4Signature(addr_width, data_width, id_width))
        The master port (ID 0 on every burst; INCR, full bus width).
    cmd_addr : In(addr_width); cmd_bytes : In(24); cmd_write : In(1)
        The command: ``cmd_bytes`` bytes from ``cmd_addr``, stored when ``cmd_write``.
    cmd_seq : In(8)
        A command starts in the clock ``cmd_seq`` differs from the last one taken (the
        bench sets the three fields above and a new ``cmd_seq`` in one time step, and
        gives the next command only after this one completed).
    beat_bytes_log2 : In(3)
        Bytes each beat stands for, as a power of two (2 = 4 bytes .. 7 = 128 bytes).
    burst_bytes_log2 : In(4)
        Bursts split at every ``2**burst_bytes_log2``-byte boundary (4 .. 4096 bytes: a
        burst never crosses AXI's 4 KB boundary; at most 256 beats).
    done_seq : Out(8)
        The ``cmd_seq`` of the last command completed: every burst issued and its last R
        beat or its B taken. A command of 0 bytes completes at once.
    busy : Out(1)
        A command runs.
    bursts : Out(32)
        Bursts issued so far (never reset; wraps).
    """

    def __init__(self, *, addr_width: int = 32, data_width: int = 32, id_width: int = 2):
        self.addr_width = addr_width
        super().__init__(
            {
                "axi": Out(Axi4Signature(addr_width, data_width, id_width)),
                "cmd_addr": In(addr_width),
                "cmd_bytes": In(CMD_BYTES_BITS),
                "cmd_write": In(1),
                "cmd_seq": In(SEQ_BITS),
                "beat_bytes_log2": In(3),
                "burst_bytes_log2": In(4),
                "done_seq": Out(SEQ_BITS),
                "busy": Out(1),
                "bursts": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        bus = self.axi
        width = self.addr_width + 1  # one past the end may carry out of the address space
        word_shift = (len(bus.wdata) // 8).bit_length() - 1

        taken_seq = Signal(SEQ_BITS, reset_less=True)
        done_seq = Signal(SEQ_BITS, reset_less=True)
        write = Signal()
        cursor = Signal(width)  # the next burst's first byte
        end = Signal(width)  # one past the command's last byte
        in_flight = Signal(range(MAX_OUTSTANDING + 1))
        w_left = Signal(9)  # W beats of the accepted AW still to send
        bursts = Signal(32, reset_less=True)
        m.d.comb += [
            self.done_seq.eq(done_seq),
            self.busy.eq(taken_seq != done_seq),
            self.bursts.eq(bursts),
        ]

        # The next burst: from the cursor to the next burst boundary or the end.
        boundary = Signal(width)
        chunk_end = Signal(width)
        beats = Signal(9)
        beat_shift = self.beat_bytes_log2
        m.d.comb += [
            boundary.eq(((cursor >> self.burst_bytes_log2) + 1) << self.burst_bytes_log2),
            chunk_end.eq(Mux(boundary < end, boundary, end)),
            beats.eq(((chunk_end - 1) >> beat_shift) - (cursor >> beat_shift) + 1),
        ]
        more = self.busy & (cursor < end)

        # Address channels: one burst at a time on offer, at most MAX_OUTSTANDING in flight;
        # a write's next AW waits for the previous burst's W beats.
        offer = more & (in_flight < MAX_OUTSTANDING) & (w_left == 0)
        address = Cat(C(0, word_shift), cursor[word_shift : self.addr_width])
        for prefix in ("ar", "aw"):
            m.d.comb += [
                getattr(bus, f"{prefix}addr").eq(address),
                getattr(bus, f"{prefix}len").eq(beats - 1),
                getattr(bus, f"{prefix}size").eq(word_shift),
                getattr(bus, f"{prefix}burst").eq(BURST_INCR),
                getattr(bus, f"{prefix}id").eq(0),
            ]
        m.d.comb += [
            bus.arvalid.eq(offer & ~write),
            bus.awvalid.eq(offer & write),
            bus.wvalid.eq(w_left != 0),
            bus.wlast.eq(w_left == 1),
            bus.wdata.eq(0),
            bus.wstrb.eq(0),  # occupancy only: no byte is ever written
            bus.rready.eq(1),
            bus.bready.eq(1),
        ]
        issued = (bus.arvalid & bus.arready) | (bus.awvalid & bus.awready)
        finished = (bus.rvalid & bus.rlast) | bus.bvalid
        m.d.sync += in_flight.eq(in_flight + issued - finished)
        with m.If(issued):
            m.d.sync += [cursor.eq(chunk_end), bursts.eq(bursts + 1)]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += w_left.eq(beats)
        with m.Elif(bus.wvalid & bus.wready):
            m.d.sync += w_left.eq(w_left - 1)

        # Commands: take a new one when idle; complete when nothing is left or in flight.
        with m.If(~self.busy & (self.cmd_seq != taken_seq)):
            m.d.sync += [
                taken_seq.eq(self.cmd_seq),
                write.eq(self.cmd_write),
                cursor.eq(self.cmd_addr),
                end.eq(self.cmd_addr + self.cmd_bytes),
            ]
        with m.If(self.busy & ~more & (in_flight == 0) & (w_left == 0) & ~issued & ~finished):
            m.d.sync += done_seq.eq(taken_seq)
        return m
