"""The firmware platform (firmware/platform.py) over the board's UART host bridge.

The same driver model that runs on the cocotb bench drives a board: registers, on-chip
RAM and the interrupt all go through the bridge's byte protocol
(hdl/boards/uart_bridge.py, docs/synthesis.md)::

    import serial                                   # pyserial (the `synth` extra)
    from macdma.sim.model.platform_serial import SerialPlatform
    platform = SerialPlatform(serial.Serial("/dev/ttyUSB0", 115200, timeout=1))

Any object with pyserial's ``read(n)`` / ``write(data)`` works as the port (the tests use
a Python model of the bridge). CPU cost is not modelled on hardware: ``charge`` only
tallies cycles per cost entry in :attr:`SerialPlatform.charged` (and the CPU's memory
traffic in bytes in :attr:`SerialPlatform.traffic`).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Protocol

from macdma.hdl.boards.uart_bridge import (
    CMD_READ,
    CMD_WRITE,
    NOTIFY_IRQ,
    RAM_BASE,
    REPLY_DATA,
    REPLY_DONE,
    REPLY_ERROR,
)
from macdma.hdl.regmap import REGISTER_MAP

__all__ = ["BridgeError", "SerialBridge", "SerialPlatform"]


class Port(Protocol):
    def read(self, size: int) -> bytes: ...
    def write(self, data: bytes) -> int | None: ...


class BridgeError(IOError):
    """The bridge answered ``'E'`` (bus error or unmapped address) or nothing at all."""


class SerialBridge:
    """The bridge protocol: 32-bit reads and writes, and ``'!'`` IRQ notifications, which
    may arrive before any reply and are counted in :attr:`irq_events`."""

    def __init__(self, port: Port):
        self.port = port
        self.irq_events = 0

    def _read(self, size: int) -> bytes:
        data = self.port.read(size)
        if len(data) != size:
            raise BridgeError(f"bridge timed out: wanted {size} bytes, got {len(data)}")
        return data

    def next_reply(self) -> int:
        """The next reply header, counting the notifications before it."""
        while True:
            header = self._read(1)[0]
            if header != NOTIFY_IRQ:
                return header
            self.irq_events += 1

    def write32(self, address: int, value: int) -> None:
        self.port.write(bytes([CMD_WRITE]) + address.to_bytes(4, "big") + value.to_bytes(4, "big"))
        header = self.next_reply()
        if header != REPLY_DONE:
            raise BridgeError(f"write of 0x{value:08x} to 0x{address:08x} answered {header!r}")

    def read32(self, address: int) -> int:
        self.port.write(bytes([CMD_READ]) + address.to_bytes(4, "big"))
        header = self.next_reply()
        if header == REPLY_ERROR or header != REPLY_DATA:
            raise BridgeError(f"read of 0x{address:08x} answered {header!r}")
        return int.from_bytes(self._read(4), "big")

    def wait_notification(self) -> None:
        """Block until a ``'!'`` arrives (or one already has); consume it."""
        while self.irq_events == 0:
            if self._read(1)[0] == NOTIFY_IRQ:
                self.irq_events += 1
        self.irq_events -= 1


class SerialPlatform:
    """:class:`macdma.firmware.platform.Platform` on a board through :class:`SerialBridge`.

    ``ram_bytes`` is the board's on-chip RAM (``BoardConfig.ram_bytes``); ``dma_alloc``
    hands it out from address 0 (the DMA's view; the bridge adds ``RAM_BASE``)."""

    def __init__(self, port: Port, *, ram_bytes: int = 16384):
        self.bridge = SerialBridge(port)
        self.ram_bytes = ram_bytes
        self._next_free = 0
        self.charged: Counter = Counter()
        self.traffic: Counter = Counter()
        self._irq_status = REGISTER_MAP.address("IRQ_STATUS")
        self._irq_enable = REGISTER_MAP.address("IRQ_ENABLE")

    async def mmio_read(self, offset: int) -> int:
        return self.bridge.read32(offset)

    async def mmio_write(self, offset: int, value: int) -> None:
        self.bridge.write32(offset, value)

    def dma_alloc(self, size: int, align: int = 16) -> int:
        start = -(-self._next_free // align) * align
        if size <= 0 or start + size > self.ram_bytes:
            raise MemoryError(
                f"cannot allocate {size} bytes: {self.ram_bytes - start} of the board's "
                f"{self.ram_bytes} bytes of RAM are left"
            )
        self._next_free = start + size
        return start

    def mem_read(self, address: int, length: int) -> bytes:
        first = address & ~3
        words = range(first, address + length, 4)
        data = b"".join(self.bridge.read32(RAM_BASE + a).to_bytes(4, "little") for a in words)
        return data[address - first : address - first + length]

    def mem_write(self, address: int, data: bytes) -> None:
        first = address & ~3
        end = -(-(address + len(data)) // 4) * 4
        buffer = bytearray(end - first)
        # Words only partly written keep their other bytes (the bridge writes whole words).
        if address != first:
            buffer[:4] = self.mem_read(first, 4)
        if end - 4 >= first and (address + len(data)) != end:
            buffer[-4:] = self.mem_read(end - 4, 4)
        buffer[address - first : address - first + len(data)] = data
        for offset in range(0, len(buffer), 4):
            word = int.from_bytes(buffer[offset : offset + 4], "little")
            self.bridge.write32(RAM_BASE + first + offset, word)

    def mem_write_cached(self, address: int, data: bytes) -> None:
        """On a board the frame is written to its RAM as any store (its cache is real)."""
        self.mem_write(address, data)

    async def charge(self, cycles: float, what: str) -> None:
        self.charged[what] += cycles

    async def memory_traffic(self, what: str, read_bytes: int, write_bytes: int) -> None:
        """On a board the CPU's memory traffic is real: only tallied (bytes) here."""
        self.traffic[what] += read_bytes + write_bytes
        await asyncio.sleep(0)

    def now_ns(self) -> float:
        return float(time.monotonic_ns())

    async def sleep_ns(self, ns: float) -> None:
        await asyncio.sleep(ns / 1e9)

    async def wait_irq(self) -> None:
        # The bridge reports rising edges; a line already high is seen in the registers.
        if self.bridge.irq_events:
            self.bridge.irq_events -= 1
            return
        status = self.bridge.read32(self._irq_status)
        enable = self.bridge.read32(self._irq_enable)
        if status & enable:
            return
        self.bridge.wait_notification()
