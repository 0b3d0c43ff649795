"""cocotb bench around ``macdma_board`` (hdl/boards/sim_top.py): the board design driven
the way a host drives a board, through its serial port.

- :class:`UartModel`: cocotbext-uart's ``UartSource``/``UartSink``, 8N1 on the board's
  ``uart_rx``/``uart_tx`` pins at the bridge's bit time, read with a timeout.
- :class:`BridgedSerialPort`: a blocking pyserial-like port (``read(n)``/``write(data)``,
  ``read`` returning fewer bytes on timeout) for code running in a :func:`cocotb.task.bridge`
  thread; each call resumes a coroutine of the UART model and blocks until it is done,
  so the unchanged :class:`~macdma.sim.model.platform_serial.SerialPlatform` and the firmware
  driver run on top of it.
- :class:`BoardBench`: clocks (``tx90_clk`` 2 ns = 90 degrees after ``tx_clk``, as the
  PLL's output), the "PLL not locked" reset, cocotbext-eth's ``RgmiiSink`` on the TX pins
  (sampling on both TXC edges) and ``RgmiiSource`` on the RX pins (driving RXC), and
  :meth:`BoardBench.run_host`, which runs an async host function on its own asyncio event
  loop in a bridge thread. While that thread waits for a UART byte, simulated time runs.

RGMII timing: on TX the nibbles change on ``tx_clk`` edges and the sink samples on TXC =
``tx90_clk``, 2 ns later, as a PHY does. On RX, ``RgmiiSource`` changes RXD/RX_CTL in the
time step of an RXC edge (no skew); the design's IDDR model still samples the value from
before that edge because cocotb applies writes after the simulator has evaluated the
edge. That is the timing of a PHY that adds the RGMII RX clock delay (RGMII-ID), which
the board design relies on (docs/synthesis.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import cocotb
from cocotb.clock import Clock
from cocotb.task import bridge, resume
from cocotb.triggers import ClockCycles, SimTimeoutError, Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import RgmiiSink, RgmiiSource
from cocotbext.uart import UartSink, UartSource

from macdma.hdl.boards.sim_top import DEFAULT_SYS_CLK_HZ, DEFAULT_UART_BIT_CYCLES
from macdma.sim.model.platform_serial import SerialPlatform

__all__ = ["BoardBench", "BridgedSerialPort", "UartModel"]

T = TypeVar("T")

PHY_CLK_NS = 8  # 125 MHz: tx_clk, tx90_clk and RXC at 1000 Mb/s
TX90_DELAY_NS = PHY_CLK_NS / 4


def now_ns() -> float:
    return get_sim_time("ns")


class UartModel:
    """The host's UART on the board's pins, from cocotbext-uart: a ``UartSource`` drives
    ``to_board`` (the board's ``uart_rx``) from construction on, holding it idle high; a
    ``UartSink`` on ``from_board`` (``uart_tx``) starts with :meth:`start`, once the board
    is out of reset. Both are 8N1 at the bridge's bit time. :attr:`received` logs
    ``(time_ns, byte)`` of every byte :meth:`read` returned.

    cocotbext-uart times a bit as whole nanoseconds of 1e9 / baud, so the bit time must be
    a whole number of ns (the board simulation's 8 cycles of 10 ns are 80 ns). Its sink
    does not check stop bits: a bad one shifts the bytes that follow, which the bridge
    protocol's replies (a command letter, then a fixed length) then expose.
    """

    def __init__(self, to_board, from_board, bit_ns: float):
        if bit_ns != int(bit_ns) or bit_ns < 1:
            raise ValueError(f"UART bit time must be a whole number of ns, got {bit_ns} ns")
        self.baud = 1e9 / bit_ns
        self.from_board = from_board
        self.source = _quiet(UartSource(to_board, baud=self.baud, bits=8, stop_bits=1))
        self.sink: UartSink | None = None
        self.received: list[tuple[float, int]] = []

    def start(self) -> None:
        """Start receiving (before this, the reset's levels on the pin are not bytes)."""
        self.sink = _quiet(UartSink(self.from_board, baud=self.baud, bits=8, stop_bits=1))

    async def write(self, data: bytes) -> None:
        """Send ``data`` back to back; return once its last stop bit has been sent."""
        await self.source.write(data)
        await self.source.wait()

    async def read(self, size: int, timeout_ns: float) -> bytes:
        """Up to ``size`` bytes; fewer if ``timeout_ns`` of simulated time pass first
        (pyserial's read with a timeout)."""
        if self.sink is None:
            raise RuntimeError("UartModel.read before start(): the receiver is not running")
        data = bytearray()
        deadline = now_ns() + timeout_ns
        while len(data) < size:
            if self.sink.empty():
                remaining = int(deadline - now_ns())
                if remaining < 1:  # less than a nanosecond left: the deadline has come
                    break
                try:
                    byte = (await with_timeout(self.sink.read(1), remaining, "ns"))[0]
                except SimTimeoutError:
                    break
            else:
                byte = self.sink.read_nowait(1)[0]
            self.received.append((now_ns(), byte))
            data.append(byte)
        return bytes(data)


def _quiet(model: T) -> T:
    """cocotbext-uart logs every byte at INFO: keep its warnings only."""
    model.log.setLevel(logging.WARNING)
    return model


class BridgedSerialPort:
    """A pyserial-like port for code in a bridge thread (:meth:`BoardBench.run_host`).

    :attr:`reads` logs ``(time_ns, bytes)`` of every ``read`` (what the host got, when)."""

    def __init__(self, uart: UartModel, timeout_ns: float):
        self.uart = uart
        self.timeout_ns = timeout_ns
        self.reads: list[tuple[float, bytes]] = []
        self._read = resume(self._timed_read)
        self._write = resume(uart.write)

    async def _timed_read(self, size: int) -> bytes:
        data = await self.uart.read(size, self.timeout_ns)
        self.reads.append((now_ns(), data))
        return data

    def read(self, size: int = 1) -> bytes:
        return self._read(size)

    def write(self, data: bytes) -> int:
        self._write(bytes(data))
        return len(data)


class BoardBench:
    """Clocks, reset, the UART and the RGMII PHY models around ``macdma_board``.

    ``sys_clk_hz``, ``uart_bit_cycles`` and ``ram_bytes`` must be the ones the top was
    built with (the defaults are BoardSimTop's). ``port_timeout_ns``: how long a UART read
    waits for the board (a bridge reply takes about 10 byte times).

    Members: ``uart`` (:class:`UartModel`), ``phy_tx`` (``RgmiiSink`` on the TX pins),
    ``phy_rx`` (``RgmiiSource`` on the RX pins), ``rx_sent_ns`` (end times of frames sent
    with :meth:`send_later`).
    """

    def __init__(
        self,
        dut,
        *,
        sys_clk_hz: float = DEFAULT_SYS_CLK_HZ,
        uart_bit_cycles: int = DEFAULT_UART_BIT_CYCLES,
        ram_bytes: int = 16384,
        port_timeout_ns: float = 500_000,
    ):
        self.dut = dut
        self.sys_clk_ns = 1e9 / sys_clk_hz
        self.ram_bytes = ram_bytes
        self.port_timeout_ns = port_timeout_ns
        self.uart = UartModel(dut.uart_rx, dut.uart_tx, uart_bit_cycles * self.sys_clk_ns)
        self.phy_tx = RgmiiSink(dut.rgmii_txd, dut.rgmii_tx_ctl, dut.rgmii_txc)
        self.phy_rx = RgmiiSource(dut.rgmii_rxd, dut.rgmii_rx_ctl, dut.rgmii_rxc)
        for model in (self.phy_tx, self.phy_rx):
            model.log.setLevel(logging.WARNING)  # they log every frame at INFO
        self.rx_sent_ns: list[float] = []

    async def start(self) -> None:
        """Start the clocks, hold the design in reset for a few cycles of every clock,
        release it and start the UART receiver."""
        dut = self.dut
        dut.rst.value = 1
        dut.mdio_i.value = 1  # the MDIO line's pull-up
        Clock(dut.clk, self.sys_clk_ns, unit="ns").start()
        Clock(dut.tx_clk, PHY_CLK_NS, unit="ns").start()
        Clock(dut.rgmii_rxc, PHY_CLK_NS, unit="ns").start()
        await Timer(TX90_DELAY_NS, unit="ns")
        Clock(dut.tx90_clk, PHY_CLK_NS, unit="ns").start()
        await ClockCycles(dut.tx_clk, 8)
        dut.rst.value = 0
        await ClockCycles(dut.clk, 8)
        self.uart.start()

    async def send_later(self, frame, delay_ns: float) -> None:
        """Start a task that sends ``frame`` from the PHY after ``delay_ns`` and records
        the time it has left the PHY in :attr:`rx_sent_ns`; returns at once."""

        async def send():
            await Timer(delay_ns, unit="ns")
            await self.phy_rx.send(frame)
            await self.phy_rx.wait()
            self.rx_sent_ns.append(now_ns())

        cocotb.start_soon(send())

    async def run_host(self, host: Callable[[SerialPlatform], Awaitable[T]]) -> T:
        """Run ``await host(platform)`` in a bridge thread with its own asyncio event loop;
        ``platform`` is a :class:`SerialPlatform` on a :class:`BridgedSerialPort`. Inside
        ``host``, ``cocotb.task.resume(coroutine_function)(...)`` runs a bench coroutine
        and returns its result."""
        port = BridgedSerialPort(self.uart, self.port_timeout_ns)
        platform = SerialPlatform(port, ram_bytes=self.ram_bytes)

        def blocking() -> T:
            return asyncio.run(host(platform))

        return await bridge(blocking)()
