"""cocotb bench around ``macdma_eth_mac``: clocks, AXI-Stream client models, GMII PHY models.

Frames to send go into ``tx_source`` (AXI-Stream); what the MAC puts on the wire arrives
in ``tx_sink`` (cocotbext-eth GmiiSink, which stamps every frame). Frames from the wire
go into ``rx_source`` (GmiiSource); what the MAC delivers arrives in ``rx_sink``.
Timing numbers are taken from the GMII models' per-frame time stamps, never assumed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from cocotbext.eth import GmiiFrame

from macdma.hdl.counters import RX_COUNTERS, TX_COUNTERS
from macdma.hdl.mac.flow_control import (
    MAC_CONTROL_ETHERTYPE,
    PAUSE_MULTICAST_ADDRESS,
    PAUSE_OPCODE,
)
from macdma.hdl.mac.frame import DEFAULT_IFG_BYTES, DEFAULT_MAX_FRAME_LENGTH

from .gmii import GMII_1000, GmiiPhy, LinkMode


@dataclass(frozen=True)
class FlowControl:
    """How the bench drives the MAC's 802.3x pins (all off by default, as a MAC that never
    sees a PAUSE). ``rx_pause``: received PAUSE frames pause the transmitter;
    ``tx_pause``: the MAC sends PAUSE frames when ``tx_lfc_req`` changes; ``forward``:
    recognised control frames still reach the client; ``station``: this MAC's address
    (the PAUSE source; the unicast destination checked when ``check_ucast``)."""

    rx_pause: bool = False
    tx_pause: bool = False
    forward: bool = False
    check_ucast: bool = False
    station: int = 0x5A5152535455
    quanta: int = 0xFFFF
    refresh: int = 0x7FFF

    def pins(self) -> dict[str, int]:
        """Every flow-control input of ``macdma_eth_mac`` and its value."""
        rx, tx = int(self.rx_pause), int(self.tx_pause)
        return {
            "tx_lfc_req": 0,
            "tx_lfc_resend": 0,
            "rx_lfc_en": rx,
            "rx_lfc_ack": 0,
            "tx_lfc_pause_en": rx,
            "tx_pause_req": 0,
            "cfg_mcf_rx_eth_dst_mcast": PAUSE_MULTICAST_ADDRESS,
            "cfg_mcf_rx_check_eth_dst_mcast": 1,
            "cfg_mcf_rx_eth_dst_ucast": self.station,
            "cfg_mcf_rx_check_eth_dst_ucast": int(self.check_ucast),
            "cfg_mcf_rx_eth_src": 0,
            "cfg_mcf_rx_check_eth_src": 0,
            "cfg_mcf_rx_eth_type": MAC_CONTROL_ETHERTYPE,
            "cfg_mcf_rx_opcode_lfc": PAUSE_OPCODE,
            "cfg_mcf_rx_check_opcode_lfc": 1,
            "cfg_mcf_rx_forward": int(self.forward),
            "cfg_mcf_rx_enable": rx,
            "cfg_tx_lfc_eth_dst": PAUSE_MULTICAST_ADDRESS,
            "cfg_tx_lfc_eth_src": self.station,
            "cfg_tx_lfc_eth_type": MAC_CONTROL_ETHERTYPE,
            "cfg_tx_lfc_opcode": PAUSE_OPCODE,
            "cfg_tx_lfc_en": tx,
            "cfg_tx_lfc_quanta": self.quanta,
            "cfg_tx_lfc_refresh": self.refresh,
            "cfg_rx_lfc_opcode": PAUSE_OPCODE,
            "cfg_rx_lfc_en": rx,
        }


class MacBench:
    """Everything around one ``macdma_eth_mac`` instance."""

    def __init__(
        self,
        dut,
        mode: LinkMode = GMII_1000,
        *,
        ifg: int = DEFAULT_IFG_BYTES,
        max_length: int = DEFAULT_MAX_FRAME_LENGTH,
        flow_control: FlowControl = FlowControl(),
    ):
        self.dut = dut
        self.flow_control = flow_control
        self.mode = mode
        self.ifg = ifg
        self.max_length = max_length
        self.phy = GmiiPhy(dut, mode, ifg)
        self.tx_sink = self.phy.tx_sink
        self.rx_source = self.phy.rx_source
        self.tx_source = AxiStreamSource(
            AxiStreamBus.from_prefix(dut, "tx_axis"), dut.tx_clk, dut.tx_rst
        )
        self.rx_sink = AxiStreamSink(
            AxiStreamBus.from_prefix(dut, "rx_axis"), dut.rx_clk, dut.rx_rst
        )
        for model in (self.tx_source, self.rx_sink):
            model.log.setLevel(logging.WARNING)  # they log every frame at INFO
        self.pulses = {"tx_error_underflow": 0, "rx_error_bad_frame": 0, "rx_error_bad_fcs": 0}
        self.rx_last_times_ps: list[int] = []

    async def start(self):
        """Start clocks and monitors, configure the MAC and take it out of reset."""
        dut = self.dut
        self.phy.start()
        dut.cfg_ifg.value = self.ifg
        dut.cfg_tx_enable.value = 1
        dut.cfg_rx_enable.value = 1
        dut.cfg_rx_max_length.value = self.max_length
        self.set_flow_control(self.flow_control)
        for name in self.pulses:
            cocotb.start_soon(self._count_pulses(name))
        cocotb.start_soon(self._stamp_rx_last())
        dut.tx_rst.value = 1
        dut.rx_rst.value = 1
        await ClockCycles(dut.tx_clk, 4)
        dut.tx_rst.value = 0
        dut.rx_rst.value = 0
        await ClockCycles(dut.tx_clk, 2)

    def set_flow_control(self, flow_control: FlowControl):
        """Drive every flow-control input (quasi-static: change it between frames)."""
        self.flow_control = flow_control
        for name, value in flow_control.pins().items():
            getattr(self.dut, name).value = value

    async def _count_pulses(self, name: str):
        signal = getattr(self.dut, name)
        clock = self.dut.tx_clk if name.startswith("tx") else self.dut.rx_clk
        while True:
            await RisingEdge(signal)
            self.pulses[name] += 1
            await RisingEdge(clock)

    async def _stamp_rx_last(self):
        while True:
            await RisingEdge(self.dut.rx_axis_tlast)
            self.rx_last_times_ps.append(get_sim_time("ps"))

    async def counters(self) -> dict[str, int]:
        """Statistics counters, read through the design hierarchy once the last frame's
        status has had time to reach them."""
        await ClockCycles(self.dut.rx_clk, 4)
        values = {}
        for block, names in ((self.dut.tx_stats, TX_COUNTERS), (self.dut.rx_stats, RX_COUNTERS)):
            for name in names:
                values[name] = int(getattr(block, f"counters__{name}").value)
        return values

    async def recv_tx(self, count: int):
        """The next ``count`` frames seen on the transmit wire."""
        return [await self.tx_sink.recv() for _ in range(count)]

    async def recv_rx(self, count: int):
        """The next ``count`` frames the MAC delivered to its receive client."""
        return [await self.rx_sink.recv() for _ in range(count)]

    async def back_to_back(self, payloads):
        """Send ``payloads`` back to back both ways at once; return (frames seen on the
        transmit wire, frames delivered to the receive client)."""
        for data in payloads:
            self.tx_source.send_nowait(AxiStreamFrame(data))
            self.rx_source.send_nowait(GmiiFrame.from_payload(data))
        return await self.recv_tx(len(payloads)), await self.recv_rx(len(payloads))

    async def settle(self, byte_times: int = 64):
        await ClockCycles(self.dut.tx_clk, self.phy.byte_clocks(byte_times))
