"""``Axi4Ram``: on-chip block RAM behind an AXI4 slave port, for a board's descriptor rings
and packet buffers.

Small and simple rather than fast: one burst in flight per direction (reads and writes
proceed at the same time), one beat per clock once a burst runs, INCR bursts of full bus
width (the DMA engines issue nothing else). Byte strobes are honoured. An address at or
beyond ``size_bytes`` answers SLVERR for the whole burst and writes nothing; the RAM's
base address is 0 (a top that maps it elsewhere subtracts the base first).

With ``bench_ports=True`` (a simulation top's host memory, not a board's) the RAM also has
the ports a bench drives: a per-burst latency, error windows, and counters of the bursts
and beats it took (in all and per address class) with the last one's address and length,
so a bench measures the traffic without watching every burst; and its AXI timing is then
not the board's but that of cocotbext-axi's AxiRam with the bench's per-burst latency
(:class:`_BenchTiming`), so a scenario gives the same numbers on either host memory. With
``verilog_array=True`` its words are a plain Verilog array (:data:`ARRAY_VERILOG`, which
the exported file must carry beside the design) that a bench reads and writes through the
simulator's handle, and that holds up to 64 MiB without an initialiser per word in the
netlist (Amaranth's simulator cannot run that one).
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from .axi4 import RESP_OKAY, RESP_SLVERR, Axi4Signature

__all__ = ["ADDRESS_CLASSES", "ARRAY_MODULE", "ARRAY_VERILOG", "COUNTERS", "Axi4Ram"]

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
  input wire [31:0] write_data,
  input wire [3:0] write2_en,
  input wire [ADDR_BITS-1:0] write2_addr,
  input wire [31:0] write2_data
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
    if (write2_en[0]) words[write2_addr][7:0] <= write2_data[7:0];
    if (write2_en[1]) words[write2_addr][15:8] <= write2_data[15:8];
    if (write2_en[2]) words[write2_addr][23:16] <= write2_data[23:16];
    if (write2_en[3]) words[write2_addr][31:24] <= write2_data[31:24];
  end
endmodule
"""

#: Error windows a bench-port RAM offers.
ERROR_WINDOWS = 2
#: Width of the bench-port RAM's ``latency_cycles`` input.
LATENCY_BITS = 10
#: Width of the bench-port RAM's counters (``ar_bursts``, ``aw_beats``, ``cycles``...).
BURST_COUNT_BITS = 32
#: Address classes (windows) whose bursts a bench-port RAM also counts on their own.
ADDRESS_CLASSES = 2
#: The counters a bench-port RAM keeps per direction (``ar_<name>``, ``aw_<name>``).
COUNTERS = (
    "bursts",
    "beats",
    *(f"class{i}_{what}" for i in range(ADDRESS_CLASSES) for what in ("bursts", "beats")),
)
#: Width of a beat's cost in the shared timing, in 1/16 SoC clocks (up to 64 clocks a beat).
BEAT_COST_BITS = 10
#: The shared timing's bench ports (a RAM with ``cpu_id_bit``) and their widths; each is
#: described in :class:`Axi4Ram`.
SHARED_TIMING_PORTS = {
    "shared": 1,
    "page_hit_cycles": LATENCY_BITS,
    "page_miss_cycles": LATENCY_BITS,
    "turnaround_cycles": LATENCY_BITS,
    "page_bytes_log2": 5,
    "bank_bits": 2,
    "beat_cost_x16": BEAT_COST_BITS,
    "cpu_beat_cost_x16": BEAT_COST_BITS,
}


class Axi4Ram(wiring.Component):
    """AXI4 slave RAM of ``size_bytes`` (a power of two, 4 KiB .. 1 MiB).

    Members
    -------
    axi : In(Axi4Signature(addr_width, data_width, id_width))
        The slave port; connect the master's port to it directly.

    Without bench ports, reads have one clock of latency after AR is accepted, then stream
    one beat per clock while RREADY is high, and a write burst's B response follows one
    clock after WLAST. FIXED and WRAP bursts are treated as INCR; AxSIZE is assumed to be
    the bus width.

    With ``verilog_array``, 32-bit data only and ``size_bytes`` up to 64 MiB. With
    ``bench_ports`` also:

    latency_cycles : In(10)
        Clocks every burst waits, from when the RAM takes it from its address queue, before
        its beats move (AxiRam's timing: the take comes while the previous burst's last
        beats still stream, so the wait overlaps them).
    err<i>_start, err<i>_end : In(addr_width); err<i>_read, err<i>_write : In(1)
        Error window ``i`` (0..1): a read (write) burst any of whose bytes lies in
        [start, end) answers SLVERR for the whole burst and writes nothing.
    ar_bursts, aw_bursts, ar_beats, aw_beats : Out(32)
        Read (write) bursts taken so far, and their beats: counted when the RAM takes a
        burst from its address queue, the moment AxiRam's coroutine takes it (and the
        bench's ``HostMemory`` records it); never reset, wrapping at 2**32. A bench reads
        them at the two ends of a measurement window (``HdlHostMemory.count_from_here``)
        instead of watching every burst.
    class<i>_start, class<i>_end : In(addr_width)
        Address class ``i`` (0..1, e.g. the two descriptor rings): a burst whose AxADDR
        lies in [start, end) is also counted by the class's counters below.
    ar_class<i>_bursts, ar_class<i>_beats, aw_class<i>_bursts, aw_class<i>_beats : Out(32)
        The bursts (beats) counted above whose address was in class ``i`` when taken.
    ar_took, aw_took : Out(1)
        Whether the last rising edge took a burst (so a bench reading the counters once
        a time step settled knows what that step's edge added).
    cycles : Out(32)
        Rising edges of the RAM's clock (never reset, wrapping): the bench checks the
        edge a reading falls on against it.
    ar_burst_addr, ar_burst_len, aw_burst_addr, aw_burst_len : Out
        The last taken burst's AxADDR and AxLEN, held until the next one (a bench that
        records every burst wakes on ``ar_bursts``'s change and reads them).

    With ``cpu_id_bit`` (bench ports only): the bursts whose AxID has that bit set are the
    CPU traffic port's (:class:`~macdma.hdl.bus.cpu_traffic.CpuTrafficMaster` behind an
    arbiter); the counters above leave them out. And the RAM has a second timing, the
    memory system's, on while ``shared`` is 1 (:class:`_SharedPort`; with ``shared`` 0 the
    timing is the one above, clock for clock):

    shared : In(1)
        One port for both directions: a burst of either is taken only when the memory is
        free (reads and writes serialise; when both wait, they alternate).
    page_hit_cycles, page_miss_cycles : In(10)
        A burst's first-access latency when its page is the one open in its bank, or not.
    turnaround_cycles : In(10)
        Added when the burst's direction differs from the previous burst's.
    page_bytes_log2 : In(5); bank_bits : In(2)
        The page size (a power of two) and the number of banks, ``2**bank_bits`` (the
        bank is the page number's low bits); each bank keeps one page open.
    beat_cost_x16, cpu_beat_cost_x16 : In(10)
        The memory's data time for one beat of the DMA (4 bytes) and of the CPU port, in
        1/16 SoC clocks (at least 1).

    A burst then holds the memory for its first-access latency plus ``ceil(beats x cost /
    16)`` clocks; its beats wait for the latency, and, when the memory is slower than the
    bus, as long again as they would otherwise overtake it.
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
        cpu_id_bit: int | None = None,
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
        if cpu_id_bit is not None and (not bench_ports or not 0 <= cpu_id_bit < id_width):
            raise ValueError(
                f"cpu_id_bit must name an ID bit (0..{id_width - 1}) of a bench-port RAM, "
                f"not {cpu_id_bit!r} (bench_ports={bench_ports})"
            )
        self.cpu_id_bit = cpu_id_bit
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
            if cpu_id_bit is not None:
                members.update({name: In(shape) for name, shape in SHARED_TIMING_PORTS.items()})
            for index in range(ADDRESS_CLASSES):
                members[f"class{index}_start"] = In(addr_width)
                members[f"class{index}_end"] = In(addr_width)
            for channel in ("ar", "aw"):
                for counter in COUNTERS:
                    members[f"{channel}_{counter}"] = Out(BURST_COUNT_BITS)
                members[f"{channel}_took"] = Out(1)
                members[f"{channel}_burst_addr"] = Out(addr_width)
                members[f"{channel}_burst_len"] = Out(8)
            members["cycles"] = Out(BURST_COUNT_BITS)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        bus = self.axi
        bytes_per_word = self.data_width // 8
        depth = self.size_bytes // bytes_per_word
        word_shift = exact_log2(bytes_per_word)
        word_bits = exact_log2(depth)
        addr_width = len(bus.araddr)

        read_port, write_ports = self._storage(m, depth, word_bits)

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

        def burst_error(channel):
            addr, length = getattr(bus, f"{channel}addr"), getattr(bus, f"{channel}len")
            kind = "read" if channel == "ar" else "write"
            return out_of_range(addr) | in_error_window(addr, length, kind)

        if self.bench_ports:
            shared = None
            if self.cpu_id_bit is not None:
                shared = _SharedPort(
                    SimpleNamespace(**{name: getattr(self, name) for name in SHARED_TIMING_PORTS}),
                    self.cpu_id_bit,
                )
            timing = _BenchTiming(bus, word_shift, word_bits, self.latency_cycles, shared)
            takes = timing.elaborate(m, read_port, write_ports, burst_error)
            for channel, (take, head) in takes.items():
                if self.cpu_id_bit is not None:
                    # The record is the DMA's: the CPU port's bursts are counted by its master.
                    take = take & ~head["id"][self.cpu_id_bit]
                self._count_takes(m, channel, take, head)
            cycles = Signal(BURST_COUNT_BITS, name="cycles_counted", reset_less=True)
            m.d.sync += cycles.eq(cycles + 1)
            m.d.comb += self.cycles.eq(cycles)
        else:
            m.d.comb += [port.en.eq(0) for port in write_ports[1:]]
            self._one_burst_datapath(
                m, read_port, write_ports[0], word_shift, word_bits, burst_error
            )
        return m

    def _count_takes(self, m, channel: str, take, head) -> None:
        """The counters of the bursts ``channel`` takes (``take``, the queue's ``head``):
        registers of their own, outside reset, so a reset never takes a count back."""
        addr_in, beats_in = head["axaddr"], head["beats"]
        counts = {}
        for counter in COUNTERS:
            counts[counter] = Signal(
                BURST_COUNT_BITS, name=f"{channel}_{counter}_counted", reset_less=True
            )
            m.d.comb += getattr(self, f"{channel}_{counter}").eq(counts[counter])
        addr = Signal.like(addr_in, name=f"{channel}_taken_addr", reset_less=True)
        length = Signal(8, name=f"{channel}_taken_len", reset_less=True)
        took = Signal(name=f"{channel}_took_last", reset_less=True)
        m.d.sync += took.eq(take)
        with m.If(take):
            m.d.sync += [
                counts["bursts"].eq(counts["bursts"] + 1),
                counts["beats"].eq(counts["beats"] + beats_in),
                addr.eq(addr_in),
                length.eq(beats_in - 1),
            ]
            for index in range(ADDRESS_CLASSES):
                start = getattr(self, f"class{index}_start")
                end = getattr(self, f"class{index}_end")
                with m.If((start <= addr_in) & (addr_in < end)):
                    bursts, beats = counts[f"class{index}_bursts"], counts[f"class{index}_beats"]
                    m.d.sync += [bursts.eq(bursts + 1), beats.eq(beats + beats_in)]
        m.d.comb += [
            getattr(self, f"{channel}_took").eq(took),
            getattr(self, f"{channel}_burst_addr").eq(addr),
            getattr(self, f"{channel}_burst_len").eq(length),
        ]

    def _one_burst_datapath(self, m, read_port, write_port, word_shift, word_bits, burst_error):
        """The board's RAM: one burst per direction at a time, no latency of its own."""
        bus = self.axi

        # Read: a pipeline of one stage. The memory's output register only advances when
        # the R beat it holds is taken (or there is none), so RREADY low stalls cleanly.
        read_busy = Signal()
        read_addr = Signal(word_bits)
        read_left = Signal(8)  # beats still to issue after the current one
        read_error = Signal()
        read_id = Signal.like(bus.arid)
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
                read_error.eq(burst_error("ar")),
                read_id.eq(bus.arid),
            ]
        # RID and RRESP change with the burst's first beat, not at its AR handshake: the
        # previous burst's last beat may still be waiting for RREADY then.
        with m.If(advance & read_busy):
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
            bus.wready.eq(write_busy),
            write_port.addr.eq(write_addr),
            write_port.data.eq(bus.wdata),
        ]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [
                write_busy.eq(1),
                write_addr.eq(bus.awaddr[word_shift:]),
                write_error.eq(burst_error("aw")),
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

    def _storage(self, m, depth: int, word_bits: int):
        """The word store's read port and two write ports: an Amaranth Memory, or the plain
        Verilog array behind ports of the same shape."""
        if not self.verilog_array:
            m.submodules.memory = memory = Memory(
                shape=self.data_width, depth=depth, init=self._init
            )
            return memory.read_port(), [memory.write_port(granularity=8) for _ in range(2)]
        read_port = SimpleNamespace(addr=Signal(word_bits), en=Signal(), data=Signal(32))
        write_ports = [
            SimpleNamespace(addr=Signal(word_bits), en=Signal(4), data=Signal(32)) for _ in range(2)
        ]
        m.submodules.array = Instance(
            ARRAY_MODULE,
            p_DEPTH=depth,
            p_ADDR_BITS=word_bits,
            i_clk=ClockSignal(),
            i_read_en=read_port.en,
            i_read_addr=read_port.addr,
            o_read_data=read_port.data,
            i_write_en=write_ports[0].en,
            i_write_addr=write_ports[0].addr,
            i_write_data=write_ports[0].data,
            i_write2_en=write_ports[1].en,
            i_write2_addr=write_ports[1].addr,
            i_write2_data=write_ports[1].data,
        )
        return read_port, write_ports


#: Entries each bench-timing queue holds: cocotbext-axi's AXI slave gives each channel of
#: AxiRam a queue_occupancy_limit of 2.
QUEUE_DEPTH = 2


class _Slots:
    """A queue of :data:`QUEUE_DEPTH` entries of named fields in registers, slot 0 the
    head, with at most two entries taken and two added per clock (taken first)."""

    def __init__(self, name: str, **fields):
        self.fields = fields
        self.slots = [
            {f: Signal(shape, name=f"{name}{i}_{f}") for f, shape in fields.items()}
            for i in range(QUEUE_DEPTH)
        ]
        self.count = Signal(range(QUEUE_DEPTH + 1), name=f"{name}_count")

    def head(self):
        return self.slots[0]

    def update(self, m, taken, added: list):
        """Append ``added`` (a list of (valid, entry dict), the valid ones first), then drop
        ``taken`` entries from the head: the result is entries ``taken ..`` of the queue
        followed by the added ones (a sink's handshake and its consumer's take in one
        clock, or a source's beat out and its producer's beats in)."""
        for index, slot in enumerate(self.slots):
            position = taken + index  # in the queue followed by the added entries
            with m.If((position == 0) & (self.count > 0)):
                m.d.sync += [slot[f].eq(self.slots[0][f]) for f in self.fields]
            with m.Elif((position == 1) & (self.count > 1)):
                m.d.sync += [slot[f].eq(self.slots[1][f]) for f in self.fields]
            for offset, (_, entry) in enumerate(added):
                with m.Elif(position == self.count + offset):
                    m.d.sync += [slot[f].eq(entry[f]) for f in self.fields]
        m.d.sync += self.count.eq(self.count + sum(valid for valid, _ in added) - taken)


#: Width of a burst's wait before its first beat (the shared timing's latency plus data
#: time can exceed the bench latency's 10 bits).
WAIT_BITS = 16
#: Banks the shared timing keeps a page open in (``bank_bits`` up to 3).
MAX_BANKS = 8


class _SharedPort:
    """The memory system's timing (a RAM with ``cpu_id_bit``, on while its ``shared``
    port is 1): one port for reads and writes, with DRAM-like first-access latencies.

    The memory is one server. Taking a burst of either direction holds it for the burst's
    first-access latency (the page hit or miss latency of the burst's bank, plus the
    turnaround when the direction changes) plus its data time (``ceil(beats x cost /
    16)`` clocks at the beat's cost, the DMA's or the CPU port's); the next burst of
    either direction is taken only when it is free. When both directions wait, they take
    turns. The burst's own beats start after its latency plus whatever its data time
    exceeds its beats (a memory slower than the bus paces them). Left out: refresh, bank
    parallelism (one access at a time), write buffering and read/write reordering.
    """

    def __init__(self, ports, cpu_id_bit: int):
        self.ports = ports
        self.cpu_id_bit = cpu_id_bit
        self.wants = {channel: Signal(name=f"{channel}_wants") for channel in ("ar", "aw")}
        self.busy = Signal(WAIT_BITS, name="memory_busy")
        self.prefer_write = Signal(name="memory_prefer_write")
        self.last_write = Signal(name="memory_last_write")
        self.any_taken = Signal(name="memory_any_taken")
        self.rows = [Signal(32, name=f"bank{index}_page") for index in range(MAX_BANKS)]
        self.open = [Signal(name=f"bank{index}_open") for index in range(MAX_BANKS)]
        self.taken = {}

    def gate(self, m, channel: str, wants):
        """Whether ``channel`` takes the burst it ``wants`` this clock."""
        m.d.comb += self.wants[channel].eq(wants)
        other = self.wants["aw" if channel == "ar" else "ar"]
        first = self.prefer_write if channel == "aw" else ~self.prefer_write
        free = (self.busy == 0) & (~other | first)
        return wants & (~self.ports.shared | free)

    def wait(self, m, channel: str, head, bench_latency):
        """The clocks ``head`` waits from its take to its first beat (the bench's
        ``latency_cycles`` while ``shared`` is 0); records its hold for :meth:`update`."""
        ports = self.ports
        page = Signal(32, name=f"{channel}_page")
        bank = Signal(3, name=f"{channel}_bank")
        hit = Signal(name=f"{channel}_page_hit")
        first = Signal(LATENCY_BITS + 1, name=f"{channel}_first_access")
        data = Signal(WAIT_BITS, name=f"{channel}_data_cycles")
        wait = Signal(WAIT_BITS, name=f"{channel}_wait_cycles")
        hold = Signal(WAIT_BITS, name=f"{channel}_hold_cycles")
        beats = head["beats"]
        cost = Mux(head["id"][self.cpu_id_bit], ports.cpu_beat_cost_x16, ports.beat_cost_x16)
        turn = self.any_taken & (self.last_write != (channel == "aw"))
        m.d.comb += [
            page.eq(head["axaddr"] >> ports.page_bytes_log2),
            bank.eq(page & ((C(1, 4) << ports.bank_bits) - 1)),
            hit.eq(Array(self.open)[bank] & (Array(self.rows)[bank] == page)),
            first.eq(
                Mux(hit, ports.page_hit_cycles, ports.page_miss_cycles)
                + Mux(turn, ports.turnaround_cycles, 0)
            ),
            data.eq((beats * cost + 15) >> 4),
            wait.eq(Mux(ports.shared, first + Mux(data > beats, data - beats, 0), bench_latency)),
            hold.eq(first + data),
        ]
        self.taken[channel] = (page, bank, hold)
        return wait

    def update(self, m, takes: dict) -> None:
        """The memory's state after this clock's take (``takes``: channel -> take)."""
        with m.If(self.busy != 0):
            m.d.sync += self.busy.eq(self.busy - 1)
        for channel, take in takes.items():
            page, bank, hold = self.taken[channel]
            write = channel == "aw"
            with m.If(take & self.ports.shared):
                m.d.sync += [
                    self.busy.eq(hold - 1),
                    self.last_write.eq(write),
                    self.prefer_write.eq(not write),
                    self.any_taken.eq(1),
                ]
                for index, (row, is_open) in enumerate(zip(self.rows, self.open, strict=True)):
                    with m.If(bank == index):
                        m.d.sync += [row.eq(page), is_open.eq(1)]


class _BenchTiming:
    """The bench RAM's AXI timing: cocotbext-axi's ``AxiRam`` with the bench's per-burst
    latency, clock for clock (sim/benches/soc.py ``HostMemory``), so either host memory
    gives a scenario the same rates.

    That model is a sink queue of two per address and W channel, one coroutine per
    direction that takes a burst from its address queue, waits ``latency_cycles`` clocks,
    then moves its beats (into a two-beat R queue; out of the W queue), and a source queue
    of two for R and B. Its timing, as each becomes a register here:

    - a sink's READY for the next clock is "its queue holds fewer than two" after this
      clock's handshake (the coroutine's take in the same clock is seen a clock later);
    - a burst is taken as soon as the previous one is done (its last beat queued or
      consumed, its B queued) and one is queued, even one accepted in this clock; the
      latency counts from that take, so it overlaps the previous burst's queued beats;
    - a source offers a queued beat the clock after it was queued, and the next one in the
      clock its VALID handshake completes.
    """

    def __init__(self, bus, word_shift: int, word_bits: int, latency, shared=None):
        self.bus = bus
        self.word_shift = word_shift
        self.word_bits = word_bits
        self.latency = latency
        self.shared = shared  # a _SharedPort, or None

    def _gate(self, m, channel: str, wants):
        """This clock's take: ``wants`` (the burst AxiRam's coroutine would take), unless
        the shared port holds it back."""
        take = Signal(name=f"{channel}_take")
        m.d.comb += take.eq(wants if self.shared is None else self.shared.gate(m, channel, wants))
        return take

    def _wait(self, m, channel: str, head):
        """Clocks from a take of ``head`` to its first beat."""
        if self.shared is None:
            return self.latency
        return self.shared.wait(m, channel, head, self.latency)

    def _address_queue(self, m, channel: str, burst_error):
        """The AR or AW sink: the queue, its READY register and this clock's view of it
        (count and head after the handshake, before the coroutine takes)."""
        bus = self.bus
        queue = _Slots(
            channel,
            addr=self.word_bits,
            axaddr=len(getattr(bus, f"{channel}addr")),  # for the burst record
            beats=9,
            id=len(getattr(bus, f"{channel}id")),
            error=1,
        )
        ready = getattr(bus, f"{channel}ready")
        fire = getattr(bus, f"{channel}valid") & ready
        incoming = {
            "addr": getattr(bus, f"{channel}addr")[self.word_shift :][: self.word_bits],
            "axaddr": getattr(bus, f"{channel}addr"),
            "beats": getattr(bus, f"{channel}len") + 1,
            "id": getattr(bus, f"{channel}id"),
            "error": burst_error(channel),
        }
        count = Signal(range(QUEUE_DEPTH + 1), name=f"{channel}_queued")
        head = {f: Signal(queue.fields[f], name=f"{channel}_head_{f}") for f in queue.fields}
        m.d.comb += [
            count.eq(queue.count + fire),
            *[head[f].eq(Mux(queue.count == 0, incoming[f], queue.head()[f])) for f in head],
        ]
        m.d.sync += ready.eq(count < QUEUE_DEPTH)
        return queue, fire, incoming, count, head

    def _burst_state(self, channel: str):
        return SimpleNamespace(
            active=Signal(name=f"{channel}_active"),
            wait=Signal(WAIT_BITS, name=f"{channel}_wait"),
            addr=Signal(self.word_bits, name=f"{channel}_addr"),
            left=Signal(9, name=f"{channel}_left"),
            id=Signal(len(getattr(self.bus, f"{channel}id")), name=f"{channel}_id"),
            error=Signal(name=f"{channel}_error"),
        )

    def _take(self, m, cur, head, take, moved_now, latency):
        """Burst bookkeeping for this clock: a take of ``head`` (moving ``moved_now`` of
        its beats at once when ``latency`` is 0), else the current burst's progress."""
        with m.If(take):
            m.d.sync += [
                cur.id.eq(head["id"]),
                cur.error.eq(head["error"]),
                cur.addr.eq(head["addr"] + moved_now),
                cur.left.eq(head["beats"] - moved_now),
                cur.active.eq(1),
                cur.wait.eq(Mux(latency == 0, 0, latency - 1)),
            ]
        with m.Elif(cur.active & (cur.wait != 0)):
            m.d.sync += cur.wait.eq(cur.wait - 1)

    def elaborate(self, m, read_port, write_ports, burst_error):
        """Add the timing to ``m``; return ``{"ar": (take, head), "aw": (take, head)}``:
        each direction's take of a burst from its address queue in this clock, and the
        queue's head it takes (the fields of :meth:`_address_queue`)."""
        takes = {
            "ar": self._read(m, read_port, burst_error),
            "aw": self._write(m, write_ports, burst_error),
        }
        if self.shared is not None:
            self.shared.update(m, {channel: take for channel, (take, _) in takes.items()})
        return takes

    def _read(self, m, read_port, burst_error):
        bus = self.bus
        arq, ar_fire, ar_in, ar_count, head = self._address_queue(m, "ar", burst_error)
        latency = self._wait(m, "ar", head)
        cur = self._burst_state("ar")
        rq = _Slots("rq", addr=self.word_bits, last=1, id=len(bus.arid), error=1)

        # The R source: the head beat goes out when the output is free.
        pop = Signal()
        m.d.comb += pop.eq((~bus.rvalid | bus.rready) & (rq.count != 0))
        with m.If(~bus.rvalid | bus.rready):
            m.d.sync += bus.rvalid.eq(rq.count != 0)
        beat = rq.head()
        with m.If(pop):
            m.d.sync += [
                bus.rlast.eq(beat["last"]),
                bus.rid.eq(beat["id"]),
                bus.rresp.eq(Mux(beat["error"], RESP_SLVERR, RESP_OKAY)),
            ]
        m.d.comb += [
            read_port.addr.eq(beat["addr"]),
            read_port.en.eq(pop),
            bus.rdata.eq(Mux(bus.rresp == RESP_OKAY, read_port.data, 0)),
        ]

        # The read coroutine: queue beats of the current burst while the R queue has room;
        # when all are queued, take the next burst.
        space = Signal(range(QUEUE_DEPTH + 1))
        m.d.comb += space.eq(QUEUE_DEPTH - (rq.count - pop))
        moving = cur.active & (cur.wait == 0)
        old = Signal(range(QUEUE_DEPTH + 1))
        m.d.comb += old.eq(Mux(moving, Mux(cur.left < space, cur.left, space), 0))
        done = moving & (old == cur.left)
        take = self._gate(m, "ar", (~cur.active | done) & (ar_count != 0))
        new = Signal(range(QUEUE_DEPTH + 1))
        new_now = take & (latency == 0) & (old == 0)
        m.d.comb += new.eq(Mux(new_now, Mux(head["beats"] < space, head["beats"], space), 0))

        source = {f: Mux(old != 0, getattr(cur, f), head[f]) for f in ("addr", "id", "error")}
        source["left"] = Mux(old != 0, cur.left, head["beats"])
        added = []
        for index in range(QUEUE_DEPTH):
            added.append(
                (
                    (old + new) > index,
                    {
                        "addr": source["addr"] + index,
                        "last": source["left"] == index + 1,
                        "id": source["id"],
                        "error": source["error"],
                    },
                )
            )
        rq.update(m, pop, added)
        arq.update(m, take, [(ar_fire, ar_in)])

        self._take(m, cur, head, take, new, latency)
        with m.If(take & new_now & (new == head["beats"])):
            m.d.sync += cur.active.eq(0)
        with m.If(~take & (old != 0)):
            m.d.sync += [cur.addr.eq(cur.addr + old), cur.left.eq(cur.left - old)]
            with m.If(done):
                m.d.sync += cur.active.eq(0)
        return take, head

    def _write(self, m, write_ports, burst_error):
        bus = self.bus
        awq, aw_fire, aw_in, aw_count, head = self._address_queue(m, "aw", burst_error)
        latency = self._wait(m, "aw", head)
        cur = self._burst_state("aw")
        wq = _Slots("wq", data=len(bus.wdata), strb=len(bus.wstrb))
        bq = _Slots("bq", id=len(bus.awid), error=1)

        # The W sink, then this clock's view of its queue.
        w_fire = bus.wvalid & bus.wready
        w_in = {"data": bus.wdata, "strb": bus.wstrb}
        w_count = Signal(range(QUEUE_DEPTH + 1))
        m.d.comb += w_count.eq(wq.count + w_fire)
        m.d.sync += bus.wready.eq(w_count < QUEUE_DEPTH)
        w_beats = [
            {f: Mux(wq.count == 0, w_in[f], wq.slots[0][f]) for f in w_in},
            {f: Mux(wq.count == 1, w_in[f], wq.slots[1][f]) for f in w_in},
        ]

        # The B source.
        b_pop = Signal()
        m.d.comb += b_pop.eq((~bus.bvalid | bus.bready) & (bq.count != 0))
        with m.If(~bus.bvalid | bus.bready):
            m.d.sync += bus.bvalid.eq(bq.count != 0)
        with m.If(b_pop):
            m.d.sync += [
                bus.bid.eq(bq.head()["id"]),
                bus.bresp.eq(Mux(bq.head()["error"], RESP_SLVERR, RESP_OKAY)),
            ]
        b_kept = Signal(range(QUEUE_DEPTH + 1))
        m.d.comb += b_kept.eq(bq.count - b_pop)

        # The write coroutine: consume the current burst's beats as they are queued; after
        # the last, queue its B (waiting for room); then take the next burst.
        moving = cur.active & (cur.wait == 0)
        old = Signal(range(QUEUE_DEPTH + 1))
        m.d.comb += old.eq(Mux(moving, Mux(cur.left < w_count, cur.left, w_count), 0))
        old_b = Signal()
        m.d.comb += old_b.eq(moving & (old == cur.left) & (b_kept < QUEUE_DEPTH))
        take = self._gate(m, "aw", (~cur.active | old_b) & (aw_count != 0))
        new_now = take & (latency == 0) & (old == 0)
        new = Signal(range(QUEUE_DEPTH + 1))
        m.d.comb += new.eq(Mux(new_now, Mux(head["beats"] < w_count, head["beats"], w_count), 0))
        new_b = Signal()
        m.d.comb += new_b.eq(new_now & (new == head["beats"]) & (b_kept + old_b < QUEUE_DEPTH))

        for index, port in enumerate(write_ports):
            # Beat `index` of this clock's consumed ones: the current burst's first, then
            # the new burst's.
            from_old = index < old
            addr = Mux(from_old, cur.addr + index, head["addr"] + index - old)
            error = Mux(from_old, cur.error, head["error"])
            m.d.comb += [
                port.addr.eq(addr),
                port.data.eq(w_beats[index]["data"]),
                port.en.eq(Mux((index < old + new) & ~error, w_beats[index]["strb"], 0)),
            ]
        wq.update(m, old + new, [(w_fire, w_in)])
        # Two B responses in one clock only when a B that waited for room goes with a burst
        # taken and finished at once.
        first_b = {f: Mux(old_b, getattr(cur, f), head[f]) for f in ("id", "error")}
        bq.update(
            m,
            b_pop,
            [(old_b | new_b, first_b), (old_b & new_b, {"id": head["id"], "error": head["error"]})],
        )
        awq.update(m, take, [(aw_fire, aw_in)])

        self._take(m, cur, head, take, new, latency)
        with m.If(take & new_b):
            m.d.sync += cur.active.eq(0)
        with m.If(~take & moving):
            m.d.sync += [cur.addr.eq(cur.addr + old), cur.left.eq(cur.left - old)]
            with m.If(old_b):
                m.d.sync += cur.active.eq(0)
        return take, head
