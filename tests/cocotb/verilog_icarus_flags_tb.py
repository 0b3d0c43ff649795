"""A user's first cocotb bench on an exported top, nothing of the project's benches in it
(tests/sim/cosim/test_verilog_icarus_flags.py builds it on Icarus with -g2012 and with -g2005).

The pytest side reads the top's ports from its Verilog and passes them in env
``EXPORT_PORTS`` (JSON): ``outputs``, ``inputs``, ``clocks``, ``resets`` and ``held_high``
(inputs such as clock enables that stay 1). Every other input is held at 0.
"""

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamMonitor, AxiStreamSource
from cocotbext.eth import GmiiFrame, GmiiSink, GmiiSource

PORTS = json.loads(os.environ["EXPORT_PORTS"])
CLOCK_PERIOD_NS = 8
RESET_CYCLES = 4
CHECKED_CYCLES = 32  # after reset is released, every output is checked on each of these


async def reset(dut) -> float:
    """Hold every input at its idle value, start every clock, pulse every reset; return the
    time (ns) reset is released at."""
    for name in PORTS["inputs"]:
        getattr(dut, name).value = 1 if name in PORTS["held_high"] else 0
    for name in PORTS["clocks"]:
        cocotb.start_soon(Clock(getattr(dut, name), CLOCK_PERIOD_NS, unit="ns").start())
    clock = getattr(dut, PORTS["clocks"][0])
    for name in PORTS["resets"]:
        getattr(dut, name).value = 1
    await ClockCycles(clock, RESET_CYCLES)
    for name in PORTS["resets"]:
        getattr(dut, name).value = 0
    return get_sim_time("ns")


def unknown_outputs(dut) -> dict[str, str]:
    """The outputs holding an X or a Z bit, with their values."""
    values = {name: getattr(dut, name).value for name in PORTS["outputs"]}
    return {name: str(value) for name, value in values.items() if not value.is_resolvable}


@cocotb.test()
async def test_no_output_unknown_after_reset(dut) -> None:
    """Once reset is released, no output of the top is X or Z on any of the next cycles."""
    released_ns = await reset(dut)
    clock = getattr(dut, PORTS["clocks"][0])
    first_seen: dict[str, str] = {}  # output -> "value at time"
    for _ in range(CHECKED_CYCLES):
        await ReadOnly()  # first in the time step reset is released in
        now = get_sim_time("ns")
        for name, value in unknown_outputs(dut).items():
            first_seen.setdefault(name, f"{value} at {now:g} ns")
        await RisingEdge(clock)
    assert not first_seen, (
        f"outputs unknown after reset (released at {released_ns:g} ns): "
        + ", ".join(f"{name}={seen}" for name, seen in sorted(first_seen.items()))
    )


def _frame_bytes(length: int) -> bytes:
    return bytes((7 * index + 3) & 0xFF for index in range(length))


@cocotb.test()
async def test_mac_frame_passes_both_ways(dut) -> None:
    """macdma_eth_mac: a frame sent on tx_axis leaves on GMII padded and with a good FCS;
    a frame arriving on GMII leaves on rx_axis without its FCS, not marked bad."""
    await reset(dut)
    dut.cfg_ifg.value = 12
    dut.cfg_rx_max_length.value = 1518
    tx_sink = GmiiSink(dut.gmii_txd, dut.gmii_tx_er, dut.gmii_tx_en, dut.tx_clk, dut.tx_rst)
    rx_source = GmiiSource(dut.gmii_rxd, dut.gmii_rx_er, dut.gmii_rx_dv, dut.rx_clk, dut.rx_rst)
    tx_source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "tx_axis"), dut.tx_clk, dut.tx_rst)
    rx_monitor = AxiStreamMonitor(AxiStreamBus.from_prefix(dut, "rx_axis"), dut.rx_clk, dut.rx_rst)

    sent = _frame_bytes(46)
    await tx_source.send(AxiStreamFrame(sent))
    wire = await with_timeout(tx_sink.recv(), 10, "us")
    assert wire.check_fcs(), "bad FCS on the wire"
    assert wire.get_payload() == sent + bytes(60 - len(sent)), "TX payload changed"

    arriving = _frame_bytes(100)
    await rx_source.send(GmiiFrame.from_payload(arriving))  # the model appends the FCS
    received = await with_timeout(rx_monitor.recv(), 10, "us")
    assert bytes(received.tdata) == arriving, "RX frame changed"
    tuser = received.tuser if isinstance(received.tuser, list) else [received.tuser]
    assert not tuser[-1], "a good frame marked bad"
