"""Every top ``make verilog`` writes simulates on Icarus under -g2012 (cocotb's default) and
-g2005, with no X or Z on any output once reset is released, and the MAC passes a frame
both ways: a user's own cocotb bench needs no simulator flag (issue 36 §4).

The bench (tests/cocotb/verilog_icarus_flags_tb.py) is plain cocotb plus cocotbext-eth and
cocotbext-axi, as a user would write it. The runner's ICARUS_BUILD_ARGS is set to the
generation under test, so cocotb's Icarus runner compiles with that flag and no other.
"""

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from amaranth import Module
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from macdma.sim.cosim import runner
from macdma.sim.cosim.simulators import prepare
from macdma.sim.cosim.verilog import (
    elaborate_verilog,
    export_verilog,
    registered_tops,
    wake_processes_at_time_zero,
)

TEST_MODULE = "verilog_icarus_flags_tb"

#: The Icarus language generations a user's bench may compile with: cocotb's default, and
#: the Verilog-2005 one.
GENERATIONS = ("-g2012", "-g2005")


@dataclass(frozen=True)
class TopPins:
    """How the bench drives a top: its ``clocks``, the ``resets`` it pulses, and the inputs
    ``held_high`` (clock enables, enables); every other input is held at 0."""

    clocks: tuple[str, ...]
    resets: tuple[str, ...]
    held_high: tuple[str, ...] = ()


_SOC_PINS = TopPins(
    clocks=("clk", "tx_clk", "rx_clk"),
    resets=("rst", "tx_rst", "rx_rst"),
    held_high=("tx_clk_enable", "rx_clk_enable"),
)
_WIRE_SOC_PINS = TopPins(
    clocks=_SOC_PINS.clocks, resets=(*_SOC_PINS.resets, "wire_rst"), held_high=_SOC_PINS.held_high
)

#: Every registered top, by module name (a new top must be added here).
TOP_PINS = {
    "macdma_eth_mac": TopPins(
        clocks=("tx_clk", "rx_clk"),
        resets=("tx_rst", "rx_rst"),
        held_high=("tx_clk_enable", "rx_clk_enable", "cfg_tx_enable", "cfg_rx_enable"),
    ),
    "macdma_soc": _SOC_PINS,
    "macdma_soc_hostmem": _SOC_PINS,
    "macdma_soc_wire": _WIRE_SOC_PINS,
    "macdma_soc_hostmem_wire": _WIRE_SOC_PINS,
    "macdma_soc_cpu": _SOC_PINS,
    "macdma_board": TopPins(clocks=("clk", "tx_clk", "tx90_clk", "rgmii_rxc"), resets=("rst",)),
}


def top_ports(verilog: str, module: str) -> dict[str, list[str]]:
    """The input and output port names of *module* in *verilog*."""
    body = verilog[verilog.index(f"module {module}(") :]
    body = body[: body.index("endmodule")]
    ports: dict[str, list[str]] = {"input": [], "output": []}
    for direction, name in re.findall(
        r"^\s*(input|output)\s+(?:\[\d+:\d+\]\s+)?(\w+);", body, re.M
    ):
        ports[direction].append(name)
    return ports


def bench_env(top: str, verilog: Path) -> dict[str, str]:
    """The bench's EXPORT_PORTS: the top's ports read from its Verilog, and how to drive them."""
    pins = TOP_PINS[top]
    ports = top_ports(verilog.read_text(), top)
    named = set(pins.clocks + pins.resets + pins.held_high)
    missing = sorted(named - set(ports["input"]))
    assert not missing, f"{top} has no input(s) {missing}"
    description = {
        "outputs": ports["output"],
        "inputs": [name for name in ports["input"] if name not in pins.clocks],
        "clocks": list(pins.clocks),
        "resets": list(pins.resets),
        "held_high": list(pins.held_high),
    }
    return {"EXPORT_PORTS": json.dumps(description)}


def test_every_registered_top_is_driven() -> None:
    assert sorted(registered_tops()) == sorted(TOP_PINS)


@pytest.mark.parametrize("generation", GENERATIONS)
@pytest.mark.parametrize("top", sorted(TOP_PINS))
def test_outputs_known_after_reset(top: str, generation: str, cocotb_run, monkeypatch) -> None:
    """No output is X or Z on any of 32 cycles after reset, under either generation."""
    monkeypatch.setattr(runner, "ICARUS_BUILD_ARGS", (generation,))
    cocotb_run(
        top=top,
        test_module=TEST_MODULE,
        sim="icarus",
        testcase="test_no_output_unknown_after_reset",
        extra_env=bench_env(top, export_verilog(top)),
    )


@pytest.mark.parametrize("generation", GENERATIONS)
def test_mac_passes_a_frame(generation: str, cocotb_run, monkeypatch) -> None:
    """macdma_eth_mac carries a frame each way under either generation."""
    top = "macdma_eth_mac"
    monkeypatch.setattr(runner, "ICARUS_BUILD_ARGS", (generation,))
    cocotb_run(
        top=top,
        test_module=TEST_MODULE,
        sim="icarus",
        testcase="test_mac_frame_passes_both_ways",
        extra_env=bench_env(top, export_verilog(top)),
    )


class _Fsm(wiring.Component):
    """Two states; ``busy`` is decoded from the state register alone, which reset leaves
    where its initialiser put it: the kind of block that never ran under -g2012."""

    go: In(1)
    busy: Out(1)

    def elaborate(self, platform) -> Module:
        m = Module()
        with m.FSM():
            with m.State("Idle"):
                with m.If(self.go):
                    m.next = "Busy"
            with m.State("Busy"):
                m.d.comb += self.busy.eq(1)
                m.next = "Idle"
        return m


_FSM_BENCH = """
module bench;
  reg clk, rst, go;
  wire busy;
  fsm dut(.clk(clk), .rst(rst), .go(go), .busy(busy));
  always #4 clk = ~clk;
  initial begin
    clk = 0; rst = 1; go = 0;  // at time 0, as a cocotb bench drives its inputs
    #20 rst = 0;
    #20 $display("busy=%b", busy);
    $finish;
  end
endmodule
"""


def busy_after_reset(verilog: str, generation: str, folder: Path) -> str:
    """Compile *verilog* (module ``fsm``) with a plain Verilog bench on Icarus under
    *generation* and return what ``busy`` is 20 ns after reset."""
    prepare("icarus")
    (folder / "fsm.v").write_text(verilog + _FSM_BENCH)
    subprocess.run(
        ["iverilog", generation, "-o", "fsm.vvp", "-s", "bench", "fsm.v"], cwd=folder, check=True
    )
    run = subprocess.run(["vvp", "-n", "fsm.vvp"], cwd=folder, check=True, capture_output=True)
    return re.search(r"busy=(\S+)", run.stdout.decode()).group(1)


@pytest.mark.parametrize("generation", GENERATIONS)
def test_a_decode_of_an_unchanged_register_is_known_after_reset(generation, tmp_path) -> None:
    assert busy_after_reset(elaborate_verilog("fsm", _Fsm, {}), generation, tmp_path) == "0"


def test_without_the_rewrite_icarus_2012_never_runs_that_decode(tmp_path) -> None:
    """The hazard the rewrite removes: Amaranth's own text leaves ``busy`` X under -g2012
    (and 0 under -g2005). Should Icarus change, this says the rewrite may go."""
    text = verilog.convert(_Fsm(), name="fsm")
    assert busy_after_reset(text, "-g2005", tmp_path) == "0"
    assert busy_after_reset(text, "-g2012", tmp_path) == "x"


def test_every_wake_up_register_gets_its_value_in_an_initial_statement() -> None:
    text = elaborate_verilog("fsm", _Fsm, {})
    read = set(re.findall(r"always @\* begin\n\s*if \((\\\S+ )\) begin end", text))
    assert read, "no always @* block in the FSM's Verilog"
    for trigger in read:
        assert f"reg {trigger};" in text and f"initial {trigger} = 1'h0;" in text
    assert not re.search(r"reg \\\S+ +=", text), "a wake-up register kept its initialiser"


def test_a_block_without_a_wake_up_read_is_refused() -> None:
    with pytest.raises(ValueError, match="1 of 1 always @\\* blocks do not start by reading"):
        wake_processes_at_time_zero("  always @* begin\n    x = a;\n  end\n")


def test_a_wake_up_register_without_its_declaration_is_refused() -> None:
    block = "  always @* begin\n    if (\\t ) begin end\n    x = a;\n  end\n"
    with pytest.raises(ValueError, match=r"no `reg \.\.\. = 0;` declaration of .*\\t"):
        wake_processes_at_time_zero("  reg \\t ;\n" + block)
