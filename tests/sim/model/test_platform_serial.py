"""SerialPlatform's use of the bridge protocol, against a Python model of the bridge (the
RTL bridge itself is tested in tests/hdl/boards/test_uart_bridge.py)."""

import asyncio

import pytest

from macdma.hdl.boards.uart_bridge import RAM_BASE
from macdma.hdl.regmap import REGISTER_MAP
from macdma.sim.model.platform_serial import BridgeError, SerialPlatform


class BridgeModel:
    """Answers 'W'/'R' like hdl/boards/uart_bridge.py; ``notify`` queues a '!'."""

    def __init__(self, ram_bytes=4096):
        self.ram = bytearray(ram_bytes)
        self.registers = {}
        self.out = bytearray()
        self.accesses = 0

    def notify(self):
        self.out += b"!"

    def write(self, data):
        command, address = data[0], int.from_bytes(data[1:5], "big")
        self.accesses += 1
        if command == ord("W"):
            value = int.from_bytes(data[5:9], "big")
            if address >= RAM_BASE:
                offset = address - RAM_BASE
                self.ram[offset : offset + 4] = value.to_bytes(4, "little")
            else:
                self.registers[address] = value
            self.out += b"A"
        elif address == 0xFFC:
            self.out += b"E"
        elif address >= RAM_BASE:
            offset = address - RAM_BASE
            self.out += b"D" + int.from_bytes(self.ram[offset : offset + 4], "little").to_bytes(
                4, "big"
            )
        else:
            self.out += b"D" + self.registers.get(address, 0).to_bytes(4, "big")
        return len(data)

    def read(self, size):
        data, self.out = bytes(self.out[:size]), self.out[size:]
        return data


def test_unaligned_memory_round_trip_keeps_neighbouring_bytes():
    model = BridgeModel()
    platform = SerialPlatform(model, ram_bytes=4096)
    model.ram[0:12] = bytes(range(100, 112))
    platform.mem_write(3, b"\xaa\xbb\xcc\xdd\xee")
    assert platform.mem_read(0, 12) == bytes([100, 101, 102, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE]) + bytes(
        range(108, 112)
    )
    assert platform.mem_read(5, 2) == b"\xcc\xdd"


def test_registers_and_errors():
    model = BridgeModel()
    platform = SerialPlatform(model)
    asyncio.run(platform.mmio_write(0x10, 0x1234))
    assert asyncio.run(platform.mmio_read(0x10)) == 0x1234
    with pytest.raises(BridgeError, match="0x00000ffc"):
        asyncio.run(platform.mmio_read(0xFFC))


def test_notification_before_a_reply_is_kept_for_wait_irq():
    model = BridgeModel()
    platform = SerialPlatform(model)
    model.notify()  # the IRQ rose before the next reply
    assert asyncio.run(platform.mmio_read(0x10)) == 0
    accesses = model.accesses
    asyncio.run(platform.wait_irq())  # returns at once, without a register read
    assert model.accesses == accesses


def test_wait_irq_reads_the_line_when_no_notification_is_pending():
    model = BridgeModel()
    platform = SerialPlatform(model)
    model.registers[REGISTER_MAP.address("IRQ_STATUS")] = 0b1
    model.registers[REGISTER_MAP.address("IRQ_ENABLE")] = 0b1
    asyncio.run(platform.wait_irq())  # already high
    model.registers[REGISTER_MAP.address("IRQ_ENABLE")] = 0
    with pytest.raises(BridgeError, match="timed out"):  # low, and no '!' ever comes
        asyncio.run(platform.wait_irq())


def test_dma_alloc_aligns_and_refuses_beyond_the_ram():
    platform = SerialPlatform(BridgeModel(), ram_bytes=4096)
    assert platform.dma_alloc(10) == 0
    assert platform.dma_alloc(100, align=64) == 64
    with pytest.raises(MemoryError, match="4096 bytes"):
        platform.dma_alloc(4096)
