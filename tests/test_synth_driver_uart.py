"""The firmware driver model drives the simulated board (BoardCore) through the UART
bridge, exactly as it would drive a board over a serial port: SerialPlatform's port is a
pair of byte queues into Amaranth's simulator, which runs in a thread."""

import asyncio
import queue
import threading
import zlib

import pytest
from amaranth import *
from amaranth.sim import Simulator

from macdma.firmware.driver import DriverConfig, IrqStrategy, MacDmaDriver
from macdma.hdl.boards.top import BoardConfig, BoardCore
from macdma.sim.platform_serial import SerialPlatform

SYS_HZ = 50e6
BIT = 8
TX_FRAME = bytes(range(1, 61))
RX_FRAME = bytes(range(200, 256)) + bytes(range(0, 16))  # 72 bytes


class SimulatedBoard:
    """BoardCore in a simulator thread; ``read``/``write`` are its serial port."""

    def __init__(self):
        config = BoardConfig("sim", "clk", 25e6, sys_clk_hz=SYS_HZ, uart_baud=int(SYS_HZ / BIT))
        self.core = BoardCore(config)
        self.to_board = queue.Queue()
        self.from_board = queue.Queue()
        self.wire = []  # frames seen on the RGMII TX pairs
        self.send_rx_frame = threading.Event()
        self.stop = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def write(self, data):
        for byte in data:
            self.to_board.put(byte)
        return len(data)

    def read(self, size):
        data = bytearray()
        try:
            while len(data) < size:
                data.append(self.from_board.get(timeout=120))
        except queue.Empty:
            pass
        return bytes(data)

    def _run(self):
        core = self.core
        m = Module()
        for name in ("sync", "tx", "rx"):
            m.domains += ClockDomain(name)
        m.submodules.core = core
        sim = Simulator(m)
        sim.add_clock(1 / SYS_HZ, domain="sync")
        sim.add_clock(8e-9, domain="tx")
        sim.add_clock(8e-9, domain="rx")

        async def uart_in(ctx):  # host -> board
            while not self.stop.is_set():
                try:
                    byte = self.to_board.get_nowait()
                except queue.Empty:
                    await ctx.tick().repeat(BIT)
                    continue
                for level in [0, *((byte >> i) & 1 for i in range(8)), 1]:
                    ctx.set(core.uart_rx, level)
                    await ctx.tick().repeat(BIT)

        async def uart_out(ctx):  # board -> host
            while True:
                await ctx.tick()
                if ctx.get(core.uart_tx):
                    continue
                await ctx.tick().repeat(BIT // 2)
                byte = 0
                for index in range(8):
                    await ctx.tick().repeat(BIT)
                    byte |= ctx.get(core.uart_tx) << index
                await ctx.tick().repeat(BIT)
                self.from_board.put(byte)

        async def rgmii(ctx):
            frame = bytearray()
            ctx.set(core.rxd_i[0], 0b1101)  # in-band: link up, 1000 Mb/s, full duplex
            while True:
                await ctx.tick("tx")
                if ctx.get(core.tx_ctl_o[0]):
                    frame.append(ctx.get(core.txd_o[0]) | ctx.get(core.txd_o[1]) << 4)
                elif frame:
                    self.wire.append(bytes(frame))
                    frame.clear()
                if self.send_rx_frame.is_set():
                    self.send_rx_frame.clear()
                    fcs = zlib.crc32(RX_FRAME).to_bytes(4, "little")
                    for byte in b"\x55" * 7 + b"\xd5" + RX_FRAME + fcs:
                        ctx.set(core.rxd_i[0], byte & 0xF)
                        ctx.set(core.rxd_i[1], byte >> 4)
                        ctx.set(core.rx_ctl_i[0], 1)
                        ctx.set(core.rx_ctl_i[1], 1)
                        await ctx.tick("rx")
                    ctx.set(core.rx_ctl_i[0], 0)
                    ctx.set(core.rx_ctl_i[1], 0)
                    ctx.set(core.rxd_i[0], 0b1101)

        sim.add_testbench(uart_out, background=True)
        sim.add_testbench(rgmii, background=True)
        sim.add_testbench(uart_in)
        try:
            sim.run()
        except Exception as error:  # reported by the test, not lost in the thread
            self.error = error


@pytest.mark.slow
def test_driver_model_sends_and_receives_through_the_uart_bridge():
    board = SimulatedBoard()
    board.thread.start()
    received = []

    async def host():
        platform = SerialPlatform(board, ram_bytes=16384)
        config = DriverConfig(
            tx_ring=4,
            rx_ring=4,
            rx_buf=128,
            prefetch=2,
            strategy=IrqStrategy.parse("polling"),
            sys_clk_mhz=int(SYS_HZ / 1e6),
        )
        driver = MacDmaDriver(
            platform, config, on_receive=lambda f, ok, meta: received.append((f, ok))
        )
        await driver.open()
        assert await driver.xmit([TX_FRAME])
        board.send_rx_frame.set()
        for _ in range(20):
            await driver.rx_poll(None)
            if received:
                break
        await driver.tx_clean()
        return driver

    try:
        driver = asyncio.run(host())
    finally:
        board.stop.set()
        board.thread.join(timeout=60)
    assert board.error is None
    fcs = zlib.crc32(TX_FRAME).to_bytes(4, "little")
    assert board.wire == [b"\x55" * 7 + b"\xd5" + TX_FRAME + fcs]
    assert received == [(RX_FRAME, True)]
    assert driver.stats.mmio_writes > 10  # every register access went over the UART
