"""``Axi4Ram``: on-chip block RAM behind an AXI4 slave port, for a board's descriptor rings
and packet buffers.

Small and simple rather than fast: one burst in flight per direction (reads and writes
proceed at the same time), one beat per clock once a burst runs, INCR bursts of full bus
width (the DMA engines issue nothing else). Byte strobes are honoured. An address at or
beyond ``size_bytes`` answers SLVERR for the whole burst and writes nothing; the RAM's
base address is 0 (a top that maps it elsewhere subtracts the base first).

With ``bench_ports=True`` (a simulation top's host memory, not a board's) the RAM also has
the ports a bench drives: a per-burst latency, error windows, and one pulse per accepted
burst with its address and length, so a bench records bursts without watching every
clock. With ``verilog_array=True`` its words are a plain Verilog array
(:data:`ARRAY_VERILOG`, which the exported file must carry beside the design) that a bench
reads and writes through the simulator's handle, and that holds up to 64 MiB without an
initialiser per word in the netlist (Amaranth's simulator cannot run that one).
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from .axi4 import RESP_OKAY, RESP_SLVERR, Axi4Signature

__all__ = ["ARRAY_MODULE", "ARRAY_VERILOG", "Axi4Ram"]

#: Module name of the bench-port RAM's word array.
ARRAY_MODULE = "macdma_ram_array"

# The words as a Verilog array: Amaranth's Memory writes one initialiser per word into the
# netlist (a 2 MiB RAM takes minutes to export); a loop in an initial block zeroes it
# instead. The metacomment makes this one array reachable from a bench on a Verilator
# model built without --public-flat-rw.
ARRAY_VERILOG = f"""
module {ARRAY_MODULE} #(parameter DEPTH = 1024, parameter ADDR_BITS = 10) (
  input wire clk,
  input wire read_en,
  input wire [ADDR_BITS-1:0] read_addr,
  output reg [31:0] read_data,
  input wire [3:0] write_en,
  input wire [ADDR_BITS-1:0] write_addr,
  input wire [31:0] write_data
);
  reg [31:0] words [0:DEPTH-1] /*verilator public_flat_rw*/;
  integer i;
  initial begin
    for (i = 0; i < DEPTH; i = i + 1) words[i] = 32'd0;
    read_data = 32'd0;
  end
  always @(posedge clk) begin
    if (read_en) read_data <= words[read_addr];
    if (write_en[0]) words[write_addr][7:0] <= write_data[7:0];
    if (write_en[1]) words[write_addr][15:8] <= write_data[15:8];
    if (write_en[2]) words[write_addr][23:16] <= write_data[23:16];
    if (write_en[3]) words[write_addr][31:24] <= write_data[31:24];
  end
endmodule
"""

#: Error windows a bench-port RAM offers.
ERROR_WINDOWS = 2
#: Width of the bench-port RAM's ``latency_cycles`` input.
LATENCY_BITS = 10


class Axi4Ram(wiring.Component):
    """AXI4 slave RAM of ``size_bytes`` (a power of two, 4 KiB .. 1 MiB).

    Members
    -------
    axi : In(Axi4Signature(addr_width, data_width, id_width))
        The slave port; connect the master's port to it directly.

    Reads have one clock of latency after AR is accepted, then stream one beat per clock
    while RREADY is high. A write burst's B response follows one clock after WLAST.
    FIXED and WRAP bursts are treated as INCR; AxSIZE is assumed to be the bus width.

    With ``verilog_array``, 32-bit data only and ``size_bytes`` up to 64 MiB. With
    ``bench_ports`` also:

    latency_cycles : In(10)
        Clocks every burst waits after its AR/AW handshake before its first R beat or
        before WREADY rises.
    err<i>_start, err<i>_end : In(addr_width); err<i>_read, err<i>_write : In(1)
        Error window ``i`` (0..1): a read (write) burst any of whose bytes lies in
        [start, end) answers SLVERR for the whole burst and writes nothing.
    ar_seen, aw_seen : Out(1)
        High for the one clock after an AR (AW) handshake; never two clocks in a row (the
        RAM takes one burst per direction at a time).
    ar_seen_addr, ar_seen_len, aw_seen_addr, aw_seen_len : Out
        That burst's address and AxLEN, held until the next one.
    """

    def __init__(
        self,
        size_bytes: int = 16384,
        *,
        addr_width: int = 32,
        data_width: int = 32,
        id_width: int = 2,
        init=(),
        bench_ports: bool = False,
        verilog_array: bool = False,
    ):
        if not isinstance(size_bytes, int) or size_bytes & (size_bytes - 1):
            raise ValueError(f"size_bytes must be a power of two, not {size_bytes!r}")
        top_bytes, top_text = (64 << 20, "64 MiB") if verilog_array else (1 << 20, "1 MiB")
        if not 4096 <= size_bytes <= top_bytes:
            raise ValueError(f"size_bytes must be in 4 KiB .. {top_text}, not {size_bytes!r}")
        if verilog_array and (data_width != 32 or init):
            raise ValueError(
                f"a Verilog-array RAM has 32-bit data and no init, not data_width "
                f"{data_width!r} with {len(list(init))} init words"
            )
        if addr_width < exact_log2(size_bytes):
            raise ValueError(f"addr_width {addr_width} cannot address a RAM of {size_bytes} bytes")
        self.size_bytes = size_bytes
        self.data_width = data_width
        self._init = list(init)
        self.bench_ports = bench_ports
        self.verilog_array = verilog_array
        members = {"axi": In(Axi4Signature(addr_width, data_width, id_width))}
        if bench_ports:
            members["latency_cycles"] = In(LATENCY_BITS)
            for index in range(ERROR_WINDOWS):
                members[f"err{index}_start"] = In(addr_width)
                members[f"err{index}_end"] = In(addr_width)
                members[f"err{index}_read"] = In(1)
                members[f"err{index}_write"] = In(1)
            for channel in ("ar", "aw"):
                members[f"{channel}_seen"] = Out(1)
                members[f"{channel}_seen_addr"] = Out(addr_width)
                members[f"{channel}_seen_len"] = Out(8)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        bus = self.axi
        bytes_per_word = self.data_width // 8
        depth = self.size_bytes // bytes_per_word
        word_shift = exact_log2(bytes_per_word)
        word_bits = exact_log2(depth)
        addr_width = len(bus.araddr)

        read_port, write_port = self._storage(m, depth, word_bits)

        def out_of_range(addr):
            if addr_width <= word_shift + word_bits:
                return C(0, 1)
            return addr[word_shift + word_bits :] != 0

        def in_error_window(addr, length, kind):
            if not self.bench_ports:
                return C(0, 1)
            end = addr + ((length + 1) << word_shift)  # one past the burst's last byte
            hits = [
                getattr(self, f"err{i}_{kind}")
                & (addr < getattr(self, f"err{i}_end"))
                & (getattr(self, f"err{i}_start") < end)
                for i in range(ERROR_WINDOWS)
            ]
            return Cat(*hits).any()

        # Clocks the current burst still waits before its first beat (bench ports only).
        latency = self.latency_cycles if self.bench_ports else C(0, 1)
        read_wait = Signal(LATENCY_BITS)
        write_wait = Signal(LATENCY_BITS)

        # Read: a pipeline of one stage. The memory's output register only advances when
        # the R beat it holds is taken (or there is none), so RREADY low stalls cleanly.
        read_busy = Signal()
        read_addr = Signal(word_bits)
        read_left = Signal(8)  # beats still to issue after the current one
        read_error = Signal()
        read_id = Signal.like(bus.arid)
        advance = ~bus.rvalid | bus.rready
        issuing = read_busy & (read_wait == 0)
        m.d.comb += [
            read_port.addr.eq(read_addr),
            read_port.en.eq(advance),
            bus.arready.eq(~read_busy),
            bus.rdata.eq(Mux(bus.rresp == RESP_OKAY, read_port.data, 0)),
        ]
        with m.If(advance):
            m.d.sync += [
                bus.rvalid.eq(issuing),
                bus.rlast.eq(issuing & (read_left == 0)),
            ]
            with m.If(issuing):
                m.d.sync += [read_addr.eq(read_addr + 1), read_left.eq(read_left - 1)]
                with m.If(read_left == 0):
                    m.d.sync += read_busy.eq(0)
        with m.If(bus.arvalid & bus.arready):
            m.d.sync += [
                read_busy.eq(1),
                read_addr.eq(bus.araddr[word_shift:]),
                read_left.eq(bus.arlen),
                read_error.eq(
                    out_of_range(bus.araddr) | in_error_window(bus.araddr, bus.arlen, "read")
                ),
                read_wait.eq(latency),
                read_id.eq(bus.arid),
            ]
        with m.If(read_busy & (read_wait != 0)):
            m.d.sync += read_wait.eq(read_wait - 1)
        # RID and RRESP change with the burst's first beat, not at its AR handshake: the
        # previous burst's last beat may still be waiting for RREADY then.
        with m.If(advance & issuing):
            m.d.sync += [
                bus.rresp.eq(Mux(read_error, RESP_SLVERR, RESP_OKAY)),
                bus.rid.eq(read_id),
            ]

        # Write: accept AW, then the W beats, then answer B.
        write_busy = Signal()
        write_addr = Signal(word_bits)
        write_error = Signal()
        m.d.comb += [
            bus.awready.eq(~write_busy & ~bus.bvalid),
            bus.wready.eq(write_busy & (write_wait == 0)),
            write_port.addr.eq(write_addr),
            write_port.data.eq(bus.wdata),
        ]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [
                write_busy.eq(1),
                write_addr.eq(bus.awaddr[word_shift:]),
                write_error.eq(
                    out_of_range(bus.awaddr) | in_error_window(bus.awaddr, bus.awlen, "write")
                ),
                write_wait.eq(latency),
                bus.bid.eq(bus.awid),
            ]
        with m.If(write_busy & (write_wait != 0)):
            m.d.sync += write_wait.eq(write_wait - 1)
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

        if self.bench_ports:
            for channel in ("ar", "aw"):
                fire = getattr(bus, f"{channel}valid") & getattr(bus, f"{channel}ready")
                m.d.sync += getattr(self, f"{channel}_seen").eq(fire)
                with m.If(fire):
                    m.d.sync += [
                        getattr(self, f"{channel}_seen_addr").eq(getattr(bus, f"{channel}addr")),
                        getattr(self, f"{channel}_seen_len").eq(getattr(bus, f"{channel}len")),
                    ]
        return m

    def _storage(self, m, depth: int, word_bits: int):
        """The word store's read and write port: an Amaranth Memory, or the plain Verilog
        array behind ports of the same shape."""
        if not self.verilog_array:
            m.submodules.memory = memory = Memory(
                shape=self.data_width, depth=depth, init=self._init
            )
            return memory.read_port(), memory.write_port(granularity=8)
        read_port = SimpleNamespace(addr=Signal(word_bits), en=Signal(), data=Signal(32))
        write_port = SimpleNamespace(addr=Signal(word_bits), en=Signal(4), data=Signal(32))
        m.submodules.array = Instance(
            ARRAY_MODULE,
            p_DEPTH=depth,
            p_ADDR_BITS=word_bits,
            i_clk=ClockSignal(),
            i_read_en=read_port.en,
            i_read_addr=read_port.addr,
            o_read_data=read_port.data,
            i_write_en=write_port.en,
            i_write_addr=write_port.addr,
            i_write_data=write_port.data,
        )
        return read_port, write_port
