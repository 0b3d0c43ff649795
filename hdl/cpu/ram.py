"""``CpuRam``: the soft core's on-chip RAM, one array with an instruction port and a data
port (both Wishbone slaves), for code, data and stack.

The words are a plain Verilog array (:data:`CPU_RAM_VERILOG`, carried beside the design
like the host memory's): a bench loads the firmware image through the array's handle
while the core is held in reset, so one simulator build runs any firmware, and the array
needs no initialiser per word in the netlist. ``init_file`` (a ``$readmemh`` file) gives a
synthesised board its image (the words past it are then zeros in block RAM, undefined in a
simulator; without it every word starts at zero).

Each port answers one clock after a request (``ack`` registered, the BRAM's read
latency) and reads ahead during an incrementing burst (``cti`` = 0b010), so a cache line
refill moves one word per clock after the first. An address past the RAM's size answers
``err``.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In
from amaranth.utils import exact_log2

from .wishbone import CTI_INCREMENTING, WishboneSignature

__all__ = ["CPU_RAM_MODULE", "CPU_RAM_VERILOG", "CpuRam"]

CPU_RAM_MODULE = "macdma_cpu_ram_array"

# Block RAM in true dual-port mode: the data port reads and writes at one address, the
# instruction port reads. Either of these would make yosys build the RAM twice (twice the
# DP16KDs): a write address of its own (a third port), or the instruction port's word
# defined when the data port writes it in the same clock (the block RAM leaves that
# collision undefined; `no_rw_check` says it may). A fetch of code the core is storing is
# undefined anyway until a `fence.i`. Simulators ignore the attribute (the old word). The
# metacomment keeps the words reachable from a bench on a Verilator model built without
# --public-flat-rw.
CPU_RAM_VERILOG = f"""
module {CPU_RAM_MODULE} #(parameter DEPTH = 1024, parameter ADDR_BITS = 10,
                          parameter INIT_FILE = "") (
  input wire clk,
  input wire i_read_en,
  input wire [ADDR_BITS-1:0] i_read_addr,
  output reg [31:0] i_read_data,
  input wire d_read_en,
  input wire [ADDR_BITS-1:0] d_addr,
  output reg [31:0] d_read_data,
  input wire [3:0] d_write_en,
  input wire [31:0] d_write_data
);
  (* no_rw_check *) reg [31:0] words [0:DEPTH-1] /*verilator public_flat_rw*/;
  integer i;
  initial begin
    // Either, not both: yosys lets the loop's zeros win over the file's words.
    if (INIT_FILE != "") $readmemh(INIT_FILE, words);
    else for (i = 0; i < DEPTH; i = i + 1) words[i] = 32'd0;
    i_read_data = 32'd0;
    d_read_data = 32'd0;
  end
  always @(posedge clk) begin
    if (i_read_en) i_read_data <= words[i_read_addr];
    if (d_read_en) d_read_data <= words[d_addr];
    if (d_write_en[0]) words[d_addr][7:0] <= d_write_data[7:0];
    if (d_write_en[1]) words[d_addr][15:8] <= d_write_data[15:8];
    if (d_write_en[2]) words[d_addr][23:16] <= d_write_data[23:16];
    if (d_write_en[3]) words[d_addr][31:24] <= d_write_data[31:24];
  end
endmodule
"""


class CpuRam(wiring.Component):
    """``size_bytes`` of RAM (a power of two, 4 KiB .. 1 MiB) behind two Wishbone slave
    ports. Their ``adr`` is the word address within the RAM's region (a decoder in front
    clears the region's base bits); words past ``size_bytes`` answer ``err``.

    Members
    -------
    ibus : In(WishboneSignature())
        The instruction port: reads only (a write answers ``err``).
    dbus : In(WishboneSignature())
        The data port: reads, and writes of the lanes in ``sel``.

    The array is the Verilog module :data:`CPU_RAM_MODULE` instantiated as ``array``; a
    bench reaches its ``words``.
    """

    def __init__(self, size_bytes: int = 65536, *, init_file: str = ""):
        if not isinstance(size_bytes, int) or size_bytes & (size_bytes - 1):
            raise ValueError(f"size_bytes must be a power of two, not {size_bytes!r}")
        if not 4096 <= size_bytes <= 1 << 20:
            raise ValueError(f"size_bytes must be in 4 KiB .. 1 MiB, not {size_bytes!r}")
        self.size_bytes = size_bytes
        self.init_file = init_file
        super().__init__({"ibus": In(WishboneSignature()), "dbus": In(WishboneSignature())})

    def elaborate(self, platform):
        m = Module()
        depth = self.size_bytes // 4
        word_bits = exact_log2(depth)
        ports = {}
        for name, bus in (("i", self.ibus), ("d", self.dbus)):
            ports[name] = self._port(m, name, bus, word_bits, writable=name == "d")
        m.submodules.array = Instance(
            CPU_RAM_MODULE,
            p_DEPTH=depth,
            p_ADDR_BITS=word_bits,
            p_INIT_FILE=self.init_file,
            i_clk=ClockSignal(),
            i_i_read_en=ports["i"]["read_en"],
            i_i_read_addr=ports["i"]["read_addr"],
            o_i_read_data=self.ibus.dat_r,
            i_d_read_en=ports["d"]["read_en"],
            # A write is a request, never a burst's read-ahead: its address is the bus's.
            i_d_addr=ports["d"]["read_addr"],
            o_d_read_data=self.dbus.dat_r,
            i_d_write_en=ports["d"]["write_en"],
            i_d_write_data=self.dbus.dat_w,
        )
        return m

    @staticmethod
    def _port(m, name, bus, word_bits, *, writable):
        """One port's handshake: ``ack`` (or ``err``) the clock after a request; during an
        incrementing burst the next word is read while this one is acknowledged."""
        ack = Signal(name=f"{name}_ack")
        err = Signal(name=f"{name}_err")
        request = bus.cyc & bus.stb & ~ack & ~err
        continues = ack & bus.cyc & bus.stb & (bus.cti == CTI_INCREMENTING)
        in_range = bus.adr[word_bits:] == 0
        allowed = in_range & (bus.we == 0 if not writable else 1)
        read_addr = Signal(word_bits, name=f"{name}_read_addr")
        write_en = Signal(4, name=f"{name}_write_en")
        m.d.comb += [
            bus.ack.eq(ack),
            bus.err.eq(err),
            read_addr.eq(Mux(continues, bus.adr[:word_bits] + 1, bus.adr[:word_bits])),
        ]
        if writable:
            m.d.comb += write_en.eq(Mux(request & allowed & bus.we, bus.sel, 0))
        # The read-ahead word of a burst is acknowledged in the next clock, when the
        # master has moved to its address.
        m.d.sync += [
            ack.eq((request | continues) & allowed),
            err.eq(request & ~allowed),
        ]
        return {"read_en": C(1, 1), "read_addr": read_addr, "write_en": write_en}
