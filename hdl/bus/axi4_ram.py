"""``Axi4Ram``: on-chip block RAM behind an AXI4 slave port, for a board's descriptor rings
and packet buffers.

Small and simple rather than fast: one burst in flight per direction (reads and writes
proceed at the same time), one beat per clock once a burst runs, INCR bursts of full bus
width (the DMA engines issue nothing else). Byte strobes are honoured. An address at or
beyond ``size_bytes`` answers SLVERR for the whole burst and writes nothing; the RAM's
base address is 0 (a top that maps it elsewhere subtracts the base first).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In
from amaranth.utils import exact_log2

from .axi4 import RESP_OKAY, RESP_SLVERR, Axi4Signature

__all__ = ["Axi4Ram"]


class Axi4Ram(wiring.Component):
    """AXI4 slave RAM of ``size_bytes`` (a power of two, 4 KiB .. 1 MiB).

    Members
    -------
    axi : In(Axi4Signature(addr_width, data_width, id_width))
        The slave port; connect the master's port to it directly.

    Reads have one clock of latency after AR is accepted, then stream one beat per clock
    while RREADY is high. A write burst's B response follows one clock after WLAST.
    FIXED and WRAP bursts are treated as INCR; AxSIZE is assumed to be the bus width.
    """

    def __init__(
        self,
        size_bytes: int = 16384,
        *,
        addr_width: int = 32,
        data_width: int = 32,
        id_width: int = 2,
        init=(),
    ):
        try:
            if not isinstance(size_bytes, int) or size_bytes & (size_bytes - 1):
                raise ValueError(f"size_bytes must be a power of two, not {size_bytes!r}")
            if not 4096 <= size_bytes <= 1 << 20:
                raise ValueError(f"size_bytes must be in 4 KiB .. 1 MiB, not {size_bytes!r}")
            if addr_width < exact_log2(size_bytes):
                raise ValueError(
                    f"addr_width {addr_width} cannot address a RAM of {size_bytes} bytes"
                )
        except ValueError:
            # The half-built object would otherwise warn "created but never used" at GC.
            self._MustUse__silence = True
            raise
        self.size_bytes = size_bytes
        self.data_width = data_width
        self._init = list(init)
        super().__init__({"axi": In(Axi4Signature(addr_width, data_width, id_width))})

    def elaborate(self, platform):
        m = Module()
        bus = self.axi
        bytes_per_word = self.data_width // 8
        depth = self.size_bytes // bytes_per_word
        word_shift = exact_log2(bytes_per_word)
        word_bits = exact_log2(depth)
        addr_width = len(bus.araddr)

        m.submodules.memory = memory = Memory(shape=self.data_width, depth=depth, init=self._init)
        read_port = memory.read_port()
        write_port = memory.write_port(granularity=8)

        def out_of_range(addr):
            if addr_width <= word_shift + word_bits:
                return C(0, 1)
            return addr[word_shift + word_bits :] != 0

        # Read: a pipeline of one stage. The memory's output register only advances when
        # the R beat it holds is taken (or there is none), so RREADY low stalls cleanly.
        read_busy = Signal()
        read_addr = Signal(word_bits)
        read_left = Signal(8)  # beats still to issue after the current one
        read_error = Signal()
        advance = ~bus.rvalid | bus.rready
        m.d.comb += [
            read_port.addr.eq(read_addr),
            read_port.en.eq(advance),
            bus.arready.eq(~read_busy),
            bus.rdata.eq(Mux(bus.rresp == RESP_OKAY, read_port.data, 0)),
        ]
        with m.If(advance):
            m.d.sync += [
                bus.rvalid.eq(read_busy),
                bus.rlast.eq(read_busy & (read_left == 0)),
            ]
            with m.If(read_busy):
                m.d.sync += [read_addr.eq(read_addr + 1), read_left.eq(read_left - 1)]
                with m.If(read_left == 0):
                    m.d.sync += read_busy.eq(0)
        with m.If(bus.arvalid & bus.arready):
            m.d.sync += [
                read_busy.eq(1),
                read_addr.eq(bus.araddr[word_shift:]),
                read_left.eq(bus.arlen),
                read_error.eq(out_of_range(bus.araddr)),
                bus.rid.eq(bus.arid),
            ]
        with m.If(advance & read_busy):
            m.d.sync += bus.rresp.eq(Mux(read_error, RESP_SLVERR, RESP_OKAY))

        # Write: accept AW, then the W beats, then answer B.
        write_busy = Signal()
        write_addr = Signal(word_bits)
        write_error = Signal()
        m.d.comb += [
            bus.awready.eq(~write_busy & ~bus.bvalid),
            bus.wready.eq(write_busy),
            write_port.addr.eq(write_addr),
            write_port.data.eq(bus.wdata),
        ]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [
                write_busy.eq(1),
                write_addr.eq(bus.awaddr[word_shift:]),
                write_error.eq(out_of_range(bus.awaddr)),
                bus.bid.eq(bus.awid),
            ]
        with m.If(bus.wvalid & bus.wready):
            m.d.comb += write_port.en.eq(Mux(write_error, 0, bus.wstrb))
            m.d.sync += write_addr.eq(write_addr + 1)
            with m.If(bus.wlast):
                m.d.sync += [
                    write_busy.eq(0),
                    bus.bvalid.eq(1),
                    bus.bresp.eq(Mux(write_error, RESP_SLVERR, RESP_OKAY)),
                ]
        with m.If(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)
        return m
