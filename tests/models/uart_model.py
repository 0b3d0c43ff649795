"""The host's UART for the board tests in Amaranth's simulator (tests/test_synth_*.py).

cocotbext-uart (UartSource/UartSink, used by the cocotb board bench tests/cocotb/board_bench.py)
needs cocotb and so cannot drive an Amaranth ``Simulator``; this is its counterpart there,
written once: 8N1, LSB first, one bit every ``bit_cycles`` clocks of the domain it runs in.
"""

from __future__ import annotations


class SimUart:
    """Drives ``to_board`` (the board's RX pin) and samples ``from_board`` (its TX pin).

    Add :meth:`receiver` as a background testbench; :meth:`send` and :meth:`reply` are
    called from the testbench. A stop bit read as 0 fails the simulation.
    """

    def __init__(self, to_board, from_board, bit_cycles: int, *, reply_timeout_bytes: int = 200):
        if bit_cycles < 2 or bit_cycles % 2:
            raise ValueError(f"bit_cycles must be an even number >= 2, got {bit_cycles}")
        self.to_board = to_board
        self.from_board = from_board
        self.bit_cycles = bit_cycles
        self.reply_timeout_cycles = reply_timeout_bytes * 10 * bit_cycles
        self.received: list[int] = []

    async def receiver(self, ctx) -> None:
        """Background process: every byte from the board into :attr:`received`."""
        while True:
            await ctx.tick()
            if ctx.get(self.from_board):
                continue
            await ctx.tick().repeat(self.bit_cycles // 2)  # middle of the start bit
            byte = 0
            for index in range(8):
                await ctx.tick().repeat(self.bit_cycles)
                byte |= ctx.get(self.from_board) << index
            await ctx.tick().repeat(self.bit_cycles)
            assert ctx.get(self.from_board) == 1, f"stop bit of 0x{byte:02x} read as 0"
            self.received.append(byte)

    async def send(self, ctx, data: bytes) -> None:
        """Send ``data`` back to back."""
        for byte in data:
            for level in [0, *((byte >> i) & 1 for i in range(8)), 1]:
                ctx.set(self.to_board, level)
                await ctx.tick().repeat(self.bit_cycles)

    async def reply(self, ctx, length: int) -> bytes:
        """The next ``length`` bytes from the board; fewer if it stays silent too long."""
        for _ in range(self.reply_timeout_cycles):
            if len(self.received) >= length:
                break
            await ctx.tick()
        result = bytes(self.received[:length])
        del self.received[:length]
        return result
