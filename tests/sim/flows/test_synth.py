"""Board synthesis: PLL settings, report parsing, board elaboration, a yosys run, and the
full build (place and route, timing, bitstream) of both 1 Gb/s boards.

The tools come from the extra ``synth``, which the ``dev`` extra (``make test``) includes;
a missing tool is a failure, not a skip. yosys synthesis of the Colorlight top (no place
and route) takes about 45 s here (90 s on a busy machine); each full build 4 to 8 minutes
(nextpnr is single-threaded), marked ``slow``: ``make test-all`` runs them, CI's ``make test``
does not.
"""

import json
from pathlib import Path

import pytest

from macdma.hdl.boards.pll import ClockOutput, pll_dividers
from macdma.sim.flows.synth import (
    BLOCKS,
    PLACER_TIMING_WEIGHT,
    SynthReport,
    block_of,
    board_config,
    logic_by_block,
    nextpnr_options,
    parse_nextpnr,
    parse_yosys,
    synthesize,
)
from macdma.sim.flows.synth import main as synth_main


@pytest.mark.parametrize("clki_hz, refclk_div", [(25e6, 1), (100e6, 4)])
def test_pll_makes_125_mhz_90_degrees_and_the_system_clock(clki_hz, refclk_div):
    params = pll_dividers(
        clki_hz,
        [ClockOutput("tx", 125e6), ClockOutput("tx90", 125e6, 90), ClockOutput("sync", 62.5e6)],
    )
    vco = params["_vco_hz"]
    assert 400e6 <= vco <= 800e6
    assert params["CLKI_DIV"] == refclk_div
    assert clki_hz / params["CLKI_DIV"] * params["CLKFB_DIV"] == 125e6  # CLKOP feedback
    assert vco / params["CLKOP_DIV"] == 125e6
    assert vco / params["CLKOS_DIV"] == 125e6
    assert vco / params["CLKOS2_DIV"] == 62.5e6
    # 90 degrees of 8 ns = 2 ns = a whole number of VCO cycles here (plus eighths).
    shift_cycles = (params["CLKOS_CPHASE"] - params["CLKOP_CPHASE"]) + params["CLKOS_FPHASE"] / 8
    assert shift_cycles / vco == pytest.approx(2e-9)


def test_board_config_refuses_a_system_clock_too_slow_for_the_link():
    from macdma.hdl.boards.top import BoardConfig

    with pytest.raises(ValueError, match="41.67 MHz for 1000 Mb/s"):
        BoardConfig("b", clk_resource="clk25", clk_hz=25e6, sys_clk_hz=40e6)
    BoardConfig("b", clk_resource="clk25", clk_hz=25e6, sys_clk_hz=40e6, link_mbps=100)


def test_clock_nets_map_to_domains():
    from macdma.sim.flows.synth import clock_domain

    nets = [
        "$glbnet$bridge.clk",
        "$glbnet$pll.tx_clk",
        "$glbnet$pll.tx90_clk",
        "$glbnet$rgmii.rx_clk",
    ]
    assert [clock_domain(net) for net in nets] == ["sync", "tx", "tx90", "rx"]


def test_features_switch_soc_options_for_one_build_only():
    from macdma.hdl.boards.boards import BOARDS

    own = BOARDS["colorlight-5a75b"].config.soc
    assert not own.ptp and own.tx_checksum
    config = board_config("colorlight-5a75b", {"ptp": True, "tx_checksum": False})
    assert config.soc.ptp and not config.soc.tx_checksum
    assert config.soc.tx_fifo_bytes == own.tx_fifo_bytes and config.name == "colorlight-5a75b"
    assert BOARDS["colorlight-5a75b"].config.soc == own  # the board's selection is unchanged
    with pytest.raises(ValueError, match="unknown feature jumbo; known features: flow_control"):
        board_config("colorlight-5a75b", {"jumbo": True})
    with pytest.raises(ValueError, match="unknown board 'nope'"):
        board_config("nope")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--with", "ptp", "--without", "ptp"], "--with and --without both name ptp"),
        (["--with", "jumbo"], "invalid choice: 'jumbo'"),
        (["--seed", "0"], "--seed: must be a whole number >= 1, not '0'"),
        (["--seed", "two"], "--seed: must be a whole number >= 1, not 'two'"),
    ],
)
def test_synth_command_rejects_contradictory_or_unknown_features(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        synth_main(["--board", "colorlight-5a75b", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_nextpnr_gets_the_placer_weight_and_the_seed_only_when_one_is_given():
    weight = f"--placer-heap-timingweight {PLACER_TIMING_WEIGHT}"
    assert nextpnr_options("top") == f"--report top.report.json --timing-allow-fail {weight}"
    assert nextpnr_options("top", 7).endswith(f"--timing-allow-fail {weight} --seed 7")
    with pytest.raises(ValueError, match="seed must be a whole number >= 1, not 0"):
        synthesize("colorlight-5a75b", seed=0)
    report = SynthReport("b", "d", "pnr", seed=7)
    assert "nextpnr seed: 7." in report.to_markdown()
    assert "nextpnr seed" not in SynthReport("b", "d", "pnr").to_markdown()


def test_pll_rejects_an_unreachable_frequency():
    with pytest.raises(ValueError, match="no EHXPLLL setting"):
        pll_dividers(25e6, [ClockOutput("sync", 123.456e6)])


NEXTPNR_REPORT = {
    "utilization": {
        "TRELLIS_COMB": {"used": 9000, "available": 24288},
        "TRELLIS_FF": {"used": 4400, "available": 24288},
        "DP16KD": {"used": 14, "available": 56},
        "TRELLIS_IO": {"used": 18, "available": 197},
        "EHXPLLL": {"used": 1, "available": 2},
    },
    "fmax": {"$glbnet$sync_clk": {"achieved": 70.1234, "constraint": 62.5}},
}
NEXTPNR_LOG = """
Info: Max frequency for clock '$glbnet$sync_clk': 70.12 MHz (PASS at 62.50 MHz)
Info: Max frequency for clock '$glbnet$rx_clk': 118.00 MHz (FAIL at 125.00 MHz)
"""


def test_nextpnr_report_is_parsed_and_failing_clocks_named():
    resources, clocks = parse_nextpnr(NEXTPNR_REPORT, NEXTPNR_LOG)
    assert resources["logic_cells"] == {"used": 9000, "available": 24288}
    assert resources["block_rams"]["used"] == 14
    assert resources["dsps"] == {"used": 0, "available": None}
    by_name = {clock.clock: clock for clock in clocks}
    assert by_name["$glbnet$sync_clk"].achieved_mhz == 70.12 and by_name["$glbnet$sync_clk"].met
    assert not by_name["$glbnet$rx_clk"].met  # from the log: the JSON lacked it
    report = SynthReport("b", "LFE5U-25F-6CABGA256", "pnr", resources, clocks)
    assert not report.timing_met
    assert "**FAILED**" in report.to_markdown()
    assert json.loads(json.dumps(report.to_json()))["timing_met"] is False


@pytest.mark.parametrize(
    ("net", "block"),
    [
        ("core.soc.rx_dma.core.reader.have_held", "RX DMA channel"),
        ("core.soc.tx_fifo.words.queue.level", "TX frame FIFO"),
        ("core.soc.irq$503.pending", "IRQ moderation"),
        ("core.soc.rx_status_cdc.r_data", "MAC statistics"),
        ("core.uart_tx$330.shift", "board: UART bridge"),
        ("core.ram_read.state", "board: on-chip RAM"),
        ("rgmii_pins.phy_rst.o", "MAC (TX, RX, RGMII)"),
        ("core.soc.ptp.clock.time_ns", "PTP clock and timestamps"),
        ("core.soc.ptp.tx_stamper$12.w_gry", "PTP clock and timestamps"),
        ("core.soc.mac.tx_ts_flags.level", "PTP clock and timestamps"),
        ("core.soc.mac.tx_mac.nibble_phase", "MAC (TX, RX, RGMII)"),
        ("core.soc.mac_control.tx_config_sync0.stage1", "MAC (TX, RX, RGMII)"),
        ("core.soc.mac_control.flow_control.water_high", "802.3x flow control"),
        ("core.soc.flow_control.rx_xoff_count", "802.3x flow control"),
        ("pll.locked", "other"),
        ("toplevel_wire", "other"),
    ],
)
def test_nets_map_to_blocks(net, block):
    assert block_of(net) == block


def test_logic_is_counted_by_block():
    """Each cell goes to the block of a named net on its outputs (inputs if none); carry
    and LUT RAM cells count as two LUTs; FFs apart; other cells are not counted."""

    def cell(kind, outputs, inputs):
        ports = {**{p: "output" for p in outputs}, **{p: "input" for p in inputs}}
        return {"type": kind, "port_directions": ports, "connections": {**outputs, **inputs}}

    netlist = {
        "modules": {
            "top": {
                "netnames": {
                    "core.soc.mac.tx_mac.symbol": {"bits": [2, 3]},
                    "core.soc.rx_dma.core.level": {"bits": [4]},
                    "$abc$hidden": {"bits": [5], "hide_name": 1},
                    "core.bridge.state": {"bits": [6]},
                },
                "cells": {
                    "a": cell("LUT4", {"Z": [2]}, {"A": [4]}),
                    "b": cell("CCU2C", {"S0": [5]}, {"A0": [4]}),  # hidden output: by input
                    "c": cell("TRELLIS_FF", {"Q": [6]}, {"DI": [3]}),
                    "d": cell("TRELLIS_DPR16X4", {"DO": [3]}, {"DI": [6]}),
                    "e": cell("DP16KD", {"DO": [4]}, {}),
                },
            },
            "small": {"netnames": {}, "cells": {}},
        }
    }
    blocks = logic_by_block(netlist)
    assert blocks == {
        "MAC (TX, RX, RGMII)": {"logic_cells": 3, "ffs": 0},
        "RX DMA channel": {"logic_cells": 2, "ffs": 0},
        "board: UART bridge": {"logic_cells": 0, "ffs": 1},
    }
    assert list(blocks) == [block for block in BLOCKS if block in blocks]
    report = SynthReport("b", "d", "yosys", {}, [], None, blocks)
    assert "| RX DMA channel | 2 | 0 |" in report.to_markdown()


def test_yosys_stat_is_parsed():
    stat = """
    Printing statistics.
       14   DP16KD
     1500   CCU2C
     6621   LUT4
     4500   TRELLIS_FF
       18   TRELLIS_IO
    """
    resources = parse_yosys(stat)
    assert resources["logic_cells"]["used"] == 6621 + 2 * 1500
    assert resources["ffs"]["used"] == 4500
    assert resources["block_rams"]["used"] == 14
    assert resources["io"]["used"] == 18


@pytest.mark.parametrize(
    "board", ["colorlight-5a75b", "versa-ecp5", "colorlight-5a75b-100m", "versa-ecp5-100m"]
)
def test_board_top_elaborates(board, tmp_path):
    from macdma.hdl.boards.boards import BOARDS, platform_for
    from macdma.hdl.boards.top import BoardTop

    platform = platform_for(board)
    plan = platform.build(
        BoardTop(BOARDS[board].config), name="top", build_dir=str(tmp_path), do_build=False
    )
    plan.extract(str(tmp_path))
    lpf = (tmp_path / "top.lpf").read_text()
    rx_clk_hz = BOARDS[board].config.phy_clk_hz
    assert f'FREQUENCY PORT "eth_rgmii_0__rx_clk__io" {rx_clk_hz:.1f} HZ;' in lpf
    rtlil = (tmp_path / "top.il").read_text()
    for cell in ("EHXPLLL", "IDDRX1F", "ODDRX1F"):
        assert cell in rtlil


def test_yosys_synthesis_of_colorlight(tmp_path):
    from macdma.sim.flows.synth import synthesize

    report = synthesize("colorlight-5a75b", out_dir=tmp_path, yosys_only=True)
    assert report.stage == "yosys"
    # The whole design survived synthesis (nothing was optimised away for being unused):
    # the on-chip RAM and both frame FIFOs in block RAM, the RGMII pins, the DMA's logic.
    assert report.resources["block_rams"]["used"] >= 8 + 2
    assert report.resources["io"]["used"] >= 15
    assert report.resources["logic_cells"]["used"] > 3000
    assert (tmp_path / "report.md").exists() and (tmp_path / "report.json").exists()
    assert sum(block["logic_cells"] for block in report.blocks.values()) > 3000
    # The report says which SoC options were built: the board's own.
    assert report.options == {
        "flow_control": False,
        "ptp": False,
        "rx_checksum": False,
        "tx_checksum": True,
    }
    assert (
        "SoC options: flow_control off, ptp off, rx_checksum off, tx_checksum on."
        in (tmp_path / "report.md").read_text()
    )


@pytest.mark.slow
@pytest.mark.parametrize("cpu", [False, True], ids=["uart", "cpu"])
@pytest.mark.parametrize("board", ["colorlight-5a75b", "versa-ecp5"])
def test_board_builds_and_meets_timing_at_1_gbps(board, cpu, tmp_path):
    """The README's figures: the whole flow to a bitstream, and every clock (sync, tx and
    tx90 at 125 MHz, the PHY's rx at 125 MHz) meets its constraint; with the UART bridge
    and with the soft core as the SoC's host (docs/synthesis.md, "The soft core on the
    boards")."""
    from macdma.sim.flows.synth import synthesize

    report = synthesize(board, out_dir=tmp_path, cpu=cpu)
    assert report.stage == "pnr"
    domains = {clock.domain for clock in report.clocks}
    assert {"sync", "tx", "tx90", "rx"} <= domains
    failing = [
        f"{c.domain} {c.achieved_mhz} < {c.required_mhz}" for c in report.clocks if not c.met
    ]
    assert failing == []
    assert (
        report.bitstream and (tmp_path / report.bitstream.split("/")[-1]).stat().st_size > 100_000
    )
    assert report.blocks["RX DMA channel"]["logic_cells"] > 0
    assert ("soft core: VexRiscv" in report.blocks) == cpu


# -- The soft core as the SoC's host (issue 39) ---------------------------------------------


def _cell_ports(rtlil: str, module: str) -> dict[str, dict[str, str]]:
    """For each cell of the RTLIL module ``module``: port -> the wire it connects to (its
    name without a bit range; a constant as written)."""
    modules = [
        text for text in rtlil.split("\nmodule ")[1:] if text.split("\n", 1)[0] == f"\\{module}"
    ]
    assert len(modules) == 1, f"{len(modules)} modules named {module!r}"
    cells = {}
    for block in modules[0].split("\n  cell ")[1:]:
        name = block.split("\n", 1)[0].split()[-1].lstrip("\\")
        lines = block.split("\n  end", 1)[0].splitlines()[1:]
        cells[name] = {
            line.split()[1].lstrip("\\"): line.split()[2]
            for line in lines
            if line.split()[:1] == ["connect"]
        }
    return cells


def _build_plan(board, tmp_path, *, cpu):
    from macdma.hdl.boards.boards import platform_for
    from macdma.hdl.boards.top import BoardTop

    platform = platform_for(board)
    top = BoardTop(board_config(board, cpu=cpu))
    plan = platform.build(
        top, name="top", build_dir=str(tmp_path), do_build=False, **top.add_sources(platform)
    )
    plan.extract(str(tmp_path))
    return (tmp_path / "top.il").read_text(), (tmp_path / "top.ys").read_text()


@pytest.mark.parametrize("board", ["colorlight-5a75b", "versa-ecp5"])
def test_cpu_board_top_puts_the_core_on_the_socs_registers_memory_and_irq(board, tmp_path):
    """The ``--cpu`` board: VexRiscv from the installed package in place of the UART
    bridge, its register port on the SoC's, its memory port on the arbiters in front of
    the RAM the DMA uses (master 1, beside the DMA's master 0), the SoC's irq its interrupt."""
    import pythondata_cpu_vexriscv

    from macdma.hdl.cpu.ram import CPU_RAM_MODULE
    from macdma.hdl.cpu.vexriscv import vexriscv_verilog_path

    rtlil, script = _build_plan(board, tmp_path, cpu=True)
    package_file = vexriscv_verilog_path()
    assert f"read_verilog {package_file}" in script.splitlines()
    assert package_file.is_relative_to(Path(pythondata_cpu_vexriscv.__file__).parent)
    assert f"{CPU_RAM_MODULE}.v" in script and (tmp_path / f"{CPU_RAM_MODULE}.v").exists()
    assert "cell \\VexRiscv " in rtlil
    cells = _cell_ports(rtlil, "top.core")
    assert "bridge" not in cells and "cpu" in cells
    cpu = set(cells["cpu"].values())

    def wires(cell, prefix, names):
        return {cells[cell][f"{prefix}{name}"] for name in names}

    # The SoC's register port (the wires of every AXI4-Lite channel), its interrupt: the
    # core's.
    soc = set(cells["soc"].values())
    csr = {wire for wire in soc if wire.startswith("\\csr__")}
    assert {"\\csr__awaddr", "\\csr__wdata", "\\csr__rdata", "\\csr__bvalid"} <= csr
    assert len(csr) >= 12 and csr | {cells["soc"]["irq"]} <= cpu
    # The arbiters' master 1: the core's requests and the responses it gets, on both
    # halves; master 0 stays the DMA's.
    assert wires("ram_read", "i1__", ["arvalid", "araddr", "arready", "rvalid", "rready"]) <= cpu
    assert wires("ram_write", "i1__", ["awvalid", "awaddr", "wvalid", "wdata", "bvalid"]) <= cpu
    assert wires("ram_read", "i0__", ["arvalid", "araddr"]) <= soc - cpu
    assert wires("ram_write", "i0__", ["awvalid", "wvalid"]) <= soc - cpu


def test_default_board_top_has_no_core(tmp_path):
    rtlil, script = _build_plan("colorlight-5a75b", tmp_path, cpu=False)
    assert "VexRiscv" not in rtlil and "read_verilog" not in script
    assert "bridge" in _cell_ports(rtlil, "top.core")


def test_cpu_options_are_checked(tmp_path, capsys):
    from macdma.hdl.boards.top import BoardConfig

    with pytest.raises(ValueError, match="host must be one of uart, cpu, not 'arm'"):
        BoardConfig("b", clk_resource="clk25", clk_hz=25e6, host="arm")
    with pytest.raises(ValueError, match="needs the soft core"):
        board_config("colorlight-5a75b", cpu_firmware=__file__)
    with pytest.raises(ValueError, match="is not a file"):
        board_config("colorlight-5a75b", cpu=True, cpu_firmware=str(tmp_path / "none.hex"))
    config = board_config("versa-ecp5", cpu=True, cpu_firmware=__file__)
    assert config.host == "cpu" and config.cpu_firmware == __file__
    assert config.soc == board_config("versa-ecp5").soc  # the board's own SoC options
    with pytest.raises(SystemExit):
        synth_main(["--board", "colorlight-5a75b", "--cpu-firmware", __file__])
    assert "--cpu-firmware needs --cpu" in capsys.readouterr().err
    report = SynthReport("b", "d", "yosys", host={"host": "cpu", "cpu_ram_bytes": 32768})
    assert "Host: the soft core (VexRiscv_Full, 32 KiB of on-chip RAM" in report.to_markdown()


#: Part -> DP16KD block RAMs (ECP5 family data sheet).
BLOCK_RAMS = {"colorlight-5a75b": 56, "versa-ecp5": 108}


@pytest.mark.slow
def test_yosys_synthesis_of_the_cpu_board(tmp_path):
    """yosys on the Colorlight with the soft core (3 to 4 minutes here): the core, its
    bridges and the SoC's register bank survive (nothing they drive is unconnected), its
    RAM is block RAM initialised from the firmware file, and it all fits the 25F's 56
    DP16KD beside the SoC's FIFOs and the board RAM."""
    from macdma.hdl.boards.top import CPU_FIRMWARE_FILE

    board = "colorlight-5a75b"
    firmware = tmp_path / "firmware.hex"
    firmware.write_text("".join(f"{0x5A5A0000 + index:08x}\n" for index in range(64)))
    report = synthesize(
        board, out_dir=tmp_path / "build", yosys_only=True, cpu=True, cpu_firmware=str(firmware)
    )
    cpu_ram_blocks = board_config(board, cpu=True).cpu_ram_bytes // 2048
    assert 15 + cpu_ram_blocks < report.resources["block_rams"]["used"] <= BLOCK_RAMS[board]
    assert report.resources["dsps"]["used"] == 4  # VexRiscv's 32 x 32 multiplier
    blocks = report.blocks
    assert blocks["soft core: VexRiscv"]["logic_cells"] > 2500
    assert blocks["soft core: host memory bridge"]["ffs"] > 0
    assert blocks["soft core: register bridge"]["ffs"] > 0
    assert blocks["register bank"]["logic_cells"] > 1000
    assert "board: UART bridge" not in blocks
    netlist = json.loads((tmp_path / "build" / "macdma_colorlight_5a75b_cpu.json").read_text())
    module = max(netlist["modules"].values(), key=lambda module: len(module["cells"]))
    initialised = [
        name
        for name, cell in module["cells"].items()
        if cell["type"] == "DP16KD"
        and name.startswith("core.cpu.ram.")
        and any(
            key.startswith("INITVAL") and value.removeprefix("0x").strip("0")
            for key, value in cell["parameters"].items()
        )
    ]
    assert initialised, "no block RAM of the core's RAM holds the firmware"
    # yosys read the image from its build folder (yowasp's yosys has its own /tmp).
    assert (tmp_path / "build" / CPU_FIRMWARE_FILE).read_text() == firmware.read_text()
    assert report.host == {
        "host": "cpu",
        "cpu_ram_bytes": 32768,
        "cpu_firmware": str(firmware.resolve()),
    }
