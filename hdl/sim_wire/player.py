"""Frame player: one frame from memory onto a GMII/MII receive pin group.

Simulation only (see the package docstring). The bench writes a frame's bytes as they go
on the wire (preamble, SFD, data and FCS: a bad FCS, a missing SFD or a cut-short frame
is only other bytes) into the word array ``data_words`` (byte ``i`` in lane ``i % 4`` of word
``i // 4``), the ``rx_er`` bit of each byte into ``error_words`` (bit ``i % 32`` of word
``i // 32``, read only when ``frame_errors`` is set), sets ``frame_bytes`` and
``frame_gap`` and then bumps ``queued``. The player plays it on the next enabled clock
once the gap after the previous frame has passed, exactly as cocotbext-eth's
``GmiiSource`` schedules its queue:

- one symbol per enabled clock: a byte in GMII mode, the low then the high nibble of a
  byte in MII mode (``mii``), ``rx_er`` on both nibbles of a flagged byte;
- after a frame's last symbol ``max(frame_gap, 1)`` enabled clocks idle (the source's
  ``ifg``, counted in symbols), then the next queued frame; an empty queue idles;
- the pins change only on enabled clocks and read 0 between frames.

It counts the frames it finished in ``done`` and keeps the last one's stamps, in cycles
of its clock (``cycle``, free running): ``start_cycle`` (first symbol), ``sfd_cycle``
(the first symbol after the one that read 0xD5 or 0x0D, ``sfd_seen`` when there was one)
and ``end_cycle`` (last symbol): where ``GmiiSource`` stamps ``sim_time_start``,
``sim_time_sfd`` and ``sim_time_end``. ``idle`` is high from the enabled clock where the
source would find its queue empty with no gap left to wait (its ``idle_event``) until
the next frame starts.

The player is a Verilog module of its own (:data:`PLAYER_VERILOG`), one clocked process
that reads its inputs and its memory itself. A bench writes a frame's inputs at once when
it sends in the time step of a clock edge before that edge (as ``GmiiSource``, woken on
the edge, still takes such a frame: sim/benches/frame_wire.py); on Icarus such a write
reaches a clocked process's own reads at once, but reaches logic computed outside it
(Amaranth's next-state processes and continuous assignments) only through events of that
time step, some after the edge: an Amaranth player took part of such a frame's start at
the edge and the rest one clock later (counted it taken and never played it).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..bus.axi4_ram import ARRAY_MODULE

_INPUTS = ("enable", "mii", "frame_bytes", "frame_gap", "frame_errors", "queued")
_OUTPUTS = ("rxd", "rx_dv", "rx_er", "done", "start_cycle", "sfd_cycle", "sfd_seen")
_OUTPUTS += ("end_cycle", "idle", "cycle")

__all__ = ["CYCLE_BITS", "PLAYER_MODULE", "PLAYER_VERILOG", "FramePlayer", "word_array"]

#: Width of the free-running cycle counters both ends of the wire stamp with.
CYCLE_BITS = 48
#: Width of the frame counters (``queued``, ``done``; the recorder's ``frames``).
COUNT_BITS = 16

PLAYER_MODULE = "macdma_frame_player"
#: The player's Verilog (the exported file of a top with the wire must carry it). Per
#: enabled clock, in this order as the process runs: a frame starts when none is in play,
#: the gap has passed and ``queued`` differs from the frames taken; the symbol it puts out
#: is read from the memories; the pins show it from this clock on; the preamble ends
#: after the first symbol on the pins that reads 0xD5 or 0x0D (cocotbext-eth leaves the
#: preamble on either), and the SFD stamp goes to the symbol after it.
PLAYER_VERILOG = f"""
module {PLAYER_MODULE} #(
  parameter DATA_WORDS = 4096, parameter ERROR_WORDS = 512,
  parameter LENGTH_BITS = 15, parameter SYMBOL_BITS = 16
) (
  input wire clk, input wire rst, input wire enable, input wire mii,
  input wire [LENGTH_BITS-1:0] frame_bytes, input wire [15:0] frame_gap,
  input wire frame_errors, input wire [{COUNT_BITS - 1}:0] queued,
  output wire [7:0] rxd, output wire rx_dv, output wire rx_er,
  output reg [{COUNT_BITS - 1}:0] done, output reg [{CYCLE_BITS - 1}:0] start_cycle,
  output reg [{CYCLE_BITS - 1}:0] sfd_cycle, output reg sfd_seen,
  output reg [{CYCLE_BITS - 1}:0] end_cycle, output reg idle,
  output reg [{CYCLE_BITS - 1}:0] cycle
);
  reg [31:0] data_words [0:DATA_WORDS-1] /*verilator public_flat_rw*/;
  reg [31:0] error_words [0:ERROR_WORDS-1] /*verilator public_flat_rw*/;
  reg [{COUNT_BITS - 1}:0] taken;
  reg busy, in_preamble;
  reg [SYMBOL_BITS-1:0] symbol;  // the next symbol of the frame in play
  reg [15:0] gap_left;
  // what the pins show, held from the enabled clock that chose it
  reg showing, high_nibble, nibble_mode, flagged;
  reg [1:0] lane;
  reg [4:0] error_bit;
  reg [31:0] word, error_word;
  // the process's own values of this clock
  reg start, active, preamble_left;
  reg [SYMBOL_BITS-1:0] index, byte_index;
  reg [SYMBOL_BITS:0] symbols;
  wire [7:0] lane_byte = word >> {{lane, 3'b000}};
  assign rx_dv = showing;
  assign rxd = !showing ? 8'd0 : !nibble_mode ? lane_byte
    : high_nibble ? {{4'd0, lane_byte[7:4]}} : {{4'd0, lane_byte[3:0]}};
  assign rx_er = showing & flagged & error_word[error_bit];
  integer i;
  initial begin
    for (i = 0; i < DATA_WORDS; i = i + 1) data_words[i] = 32'd0;
    for (i = 0; i < ERROR_WORDS; i = i + 1) error_words[i] = 32'd0;
    cycle = 0; done = 0; start_cycle = 0; sfd_cycle = 0; sfd_seen = 0; end_cycle = 0;
    idle = 1; taken = 0; busy = 0; in_preamble = 0; symbol = 0; gap_left = 0;
    showing = 0; high_nibble = 0; nibble_mode = 0; flagged = 0; lane = 0; error_bit = 0;
    word = 0; error_word = 0;
  end
  always @(posedge clk) begin
    cycle <= cycle + 1;  // free running, reset or not: the bench's time base
    if (rst) begin
      done <= 0; start_cycle <= 0; sfd_cycle <= 0; sfd_seen <= 0; end_cycle <= 0;
      idle <= 1; taken <= 0; busy <= 0; in_preamble <= 0; symbol <= 0; gap_left <= 0;
      showing <= 0; high_nibble <= 0; nibble_mode <= 0; flagged <= 0; lane <= 0;
      error_bit <= 0;
    end else if (enable) begin
      start = !busy && gap_left == 0 && queued != taken;
      active = busy || start;
      index = start ? 0 : symbol;
      byte_index = mii ? index >> 1 : index;
      symbols = mii ? {{frame_bytes, 1'b0}} : frame_bytes;
      word <= data_words[byte_index >> 2];
      error_word <= error_words[byte_index >> 5];
      showing <= active;
      lane <= byte_index[1:0];
      high_nibble <= mii & index[0];
      error_bit <= byte_index[4:0];
      nibble_mode <= mii;
      flagged <= frame_errors;
      preamble_left = in_preamble && !(showing && (rxd == 8'hD5 || rxd == 8'h0D));
      if (!active && gap_left != 0) gap_left <= gap_left - 1;
      if (!active && gap_left == 0) idle <= 1;
      if (busy) begin
        in_preamble <= preamble_left;
        if (!sfd_seen && !preamble_left) begin
          sfd_cycle <= cycle;
          sfd_seen <= 1;
        end
      end
      if (start) begin
        taken <= taken + 1;
        start_cycle <= cycle;
        sfd_seen <= 0;
        idle <= 0;
        in_preamble <= 1;
      end
      if (active) begin
        if (index + 1 == symbols) begin
          busy <= 0;
          gap_left <= frame_gap == 0 ? 16'd1 : frame_gap;
          end_cycle <= cycle;
          done <= done + 1;
          symbol <= 0;
        end else begin
          busy <= 1;
          symbol <= index + 1;
        end
      end
    end
  end
endmodule
"""


def word_array(
    depth: int, *, read_enable, read_addr, read_data, write_enable=0, write_addr=0, write_data=0
) -> Instance:
    """The project's bench-reachable word array (``macdma_ram_array``, hdl/bus/axi4_ram.py)
    with one registered read port and one byte-enable write port, clocked by ``sync``."""
    addr_bits = (depth - 1).bit_length()
    read_addr, write_addr = Value.cast(read_addr), Value.cast(write_addr)
    return Instance(
        ARRAY_MODULE,
        p_DEPTH=depth,
        p_ADDR_BITS=addr_bits,
        i_clk=ClockSignal(),
        i_read_en=read_enable,
        i_read_addr=read_addr[:addr_bits],
        o_read_data=read_data,
        i_write_en=Value.cast(write_enable)[:4],
        i_write_addr=write_addr[:addr_bits],
        i_write_data=Value.cast(write_data)[:32],
        i_write2_en=C(0, 4),
        i_write2_addr=C(0, addr_bits),
        i_write2_data=C(0, 32),
    )


class FramePlayer(wiring.Component):
    """Plays frames of up to ``capacity_bytes`` (a multiple of 128) from its memory.

    Ports: ``enable`` (the PHY clock enable), ``mii``, the frame (``frame_bytes``,
    ``frame_gap``, ``frame_errors``, ``queued``), the pins (``rxd``, ``rx_dv``,
    ``rx_er``) and the record (``done``, ``start_cycle``, ``sfd_cycle``, ``sfd_seen``,
    ``end_cycle``, ``idle``, ``cycle``). Runs in ``sync``; its reset idles the pins and
    forgets the frame in play. Its memories are the instance ``play``'s ``data_words`` and
    ``error_words``.
    """

    def __init__(self, capacity_bytes: int = 16384):
        if capacity_bytes <= 0 or capacity_bytes % 128:
            raise ValueError(
                f"capacity_bytes must be a positive multiple of 128, not {capacity_bytes!r}"
            )
        self.capacity_bytes = capacity_bytes
        length_bits = capacity_bytes.bit_length()
        super().__init__({
            "enable": In(1),
            "mii": In(1),
            "frame_bytes": In(length_bits),
            "frame_gap": In(16),
            "frame_errors": In(1),
            "queued": In(COUNT_BITS),
            "rxd": Out(8),
            "rx_dv": Out(1),
            "rx_er": Out(1),
            "done": Out(COUNT_BITS),
            "start_cycle": Out(CYCLE_BITS),
            "sfd_cycle": Out(CYCLE_BITS),
            "sfd_seen": Out(1),
            "end_cycle": Out(CYCLE_BITS),
            "idle": Out(1, init=1),
            "cycle": Out(CYCLE_BITS),
        })  # fmt: skip

    def elaborate(self, platform):
        m = Module()
        length_bits = len(self.frame_bytes)
        m.submodules.play = Instance(
            PLAYER_MODULE,
            p_DATA_WORDS=self.capacity_bytes // 4,
            p_ERROR_WORDS=self.capacity_bytes // 32,
            p_LENGTH_BITS=length_bits,
            p_SYMBOL_BITS=length_bits + 1,
            i_clk=ClockSignal(),
            i_rst=ResetSignal(),
            **{f"i_{name}": getattr(self, name) for name in _INPUTS},
            **{f"o_{name}": getattr(self, name) for name in _OUTPUTS},
        )
        return m
