"""A clause 22 PHY on the MDC/MDIO pins of an Amaranth simulation, written from IEEE 802.3
22.2.4.5 (frame structure) and 22.3.4 (timing), not from the master under test.

:class:`MdioPhy` watches ``mdc``/``mdio_o``/``mdio_oe`` of any design that has them (the
``MdioMaster``, ``MacDmaSoc``, ``BoardCore``) and drives ``mdio_i`` with the wire's value:
the PHY's bit when it drives, else the master's bit when it drives, else 1 (the bus's
pull-up). Like a real PHY it samples MDIO on each rising edge of MDC, recognises frames
after at least 32 preamble ones, answers reads for its own address (turnaround: released,
then 0; then 16 data bits, each changed ``delay_cycles`` after the MDC rising edge that
ends the previous bit) and stores writes to its own address in :attr:`registers`.

Every frame it recognises is appended to :attr:`frames`, every MDC edge to :attr:`rises` /
:attr:`falls` (system clock cycle numbers), and every rising edge's master-side pin state
``(mdio_oe, mdio_o)`` to :attr:`sampled`, so a test can check the exact bits on the wire.
"""

from dataclasses import dataclass, field

__all__ = ["MdioFrame", "MdioPhy", "OP_READ", "OP_WRITE", "PREAMBLE_BITS"]

OP_WRITE = 0b01
OP_READ = 0b10
PREAMBLE_BITS = 32
HEADER_BITS = 12  # after the start bits: opcode 2, PHY address 5, register address 5


@dataclass
class MdioFrame:
    """One management frame as the PHY saw it."""

    op: int
    phy: int
    reg: int
    data: int | None = None  # write: the data received; read: the data the PHY drove
    turnaround: tuple[int, int] | None = None  # write frames: the two TA bits on the wire


@dataclass
class MdioPhy:
    """The PHY model; run :meth:`process` as a background testbench."""

    pins: object  # an MdioPinsSignature interface: mdc, o, oe, i
    address: int = 1
    registers: dict[int, int] = field(default_factory=dict)
    delay_cycles: int = 0  # MDC rising edge to MDIO change, in system clocks (<= 300 ns)
    frames: list[MdioFrame] = field(default_factory=list)
    rises: list[int] = field(default_factory=list)
    falls: list[int] = field(default_factory=list)
    sampled: list[tuple[int, int]] = field(default_factory=list)
    contention: int = 0  # rising edges where the master and the PHY both drove MDIO

    def __post_init__(self):
        self._drive: int | None = None  # the PHY's output: 0, 1 or None (released)
        self._pending: list[tuple[int, int | None]] = []  # (due cycle, new output)
        self._state = "preamble"
        self._ones = 0
        self._bits: list[int] = []
        self._frame: MdioFrame | None = None

    def _schedule(self, now: int, value: int | None) -> None:
        self._pending.append((now + self.delay_cycles, value))

    def _line(self, ctx) -> int:
        oe = ctx.get(self.pins.oe)
        if oe and self._drive is not None:
            return ctx.get(self.pins.o) & self._drive  # open-drain-ish: a 0 wins
        if self._drive is not None:
            return self._drive
        if oe:
            return ctx.get(self.pins.o)
        return 1

    async def process(self, ctx):
        cycle = 0
        previous_mdc = 0
        while True:
            due = [entry for entry in self._pending if entry[0] <= cycle]
            for entry in due:
                self._drive = entry[1]
                self._pending.remove(entry)
            ctx.set(self.pins.i, self._line(ctx))
            await ctx.tick()
            cycle += 1
            mdc = ctx.get(self.pins.mdc)
            if mdc and not previous_mdc:
                self.rises.append(cycle)
                oe = ctx.get(self.pins.oe)
                self.sampled.append((oe, ctx.get(self.pins.o)))
                if oe and self._drive is not None:
                    self.contention += 1
                self._rising_edge(cycle, self._line(ctx))
            elif previous_mdc and not mdc:
                self.falls.append(cycle)
            previous_mdc = mdc

    def _rising_edge(self, cycle: int, bit: int) -> None:
        if self._state == "preamble":
            if bit:
                self._ones += 1
            elif self._ones >= PREAMBLE_BITS:
                self._state = "start"
            else:
                self._ones = 0
        elif self._state == "start":
            self._ones = 0
            if bit:
                self._state, self._bits = "header", []
            else:
                self._state = "preamble"
        elif self._state == "header":
            self._bits.append(bit)
            if len(self._bits) == HEADER_BITS:
                value = int("".join(map(str, self._bits)), 2)
                self._frame = MdioFrame(value >> 10, (value >> 5) & 0x1F, value & 0x1F)
                self._bits = []
                if self._frame.op == OP_READ and self._frame.phy == self.address:
                    self._frame.data = self.registers.get(self._frame.reg, 0) & 0xFFFF
                    self._state = "read"  # TA bit 1: released (we are not driving yet)
                elif self._frame.op == OP_WRITE:
                    self._state = "write"
                else:
                    self._state = "ignore"  # another PHY's read, or a bad opcode
        elif self._state == "read":
            # Edges after the header: 1 = TA bit 1, 2 = TA bit 2 (we drive 0), 3..18 = data.
            self._bits.append(bit)
            edge = len(self._bits)
            data = self._frame.data
            if edge == 1:
                self._schedule(cycle, 0)
            elif edge < 18:
                self._schedule(cycle, (data >> (17 - edge)) & 1)
            else:
                self._schedule(cycle, None)
                self._finish()
        elif self._state == "write":
            self._bits.append(bit)
            if len(self._bits) == 18:
                frame = self._frame
                frame.turnaround = (self._bits[0], self._bits[1])
                frame.data = int("".join(map(str, self._bits[2:])), 2)
                if frame.phy == self.address and frame.turnaround == (1, 0):
                    self.registers[frame.reg] = frame.data
                self._finish()
        elif self._state == "ignore":
            self._bits.append(bit)
            if len(self._bits) == 18:
                self._finish()

    def _finish(self) -> None:
        self.frames.append(self._frame)
        self._frame = None
        self._bits = []
        self._state = "preamble"
        self._ones = 0
