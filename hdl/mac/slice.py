"""A register slice for a valid/ready stream: full throughput, every output registered.

Timing closure at 125 MHz needs the transmitter's CRC and FSM to start from flip-flops,
not from whatever logic produces its input stream (a FIFO's read side, the flow-control
byte mux). A plain pipeline register would still pass ``ready`` through combinationally;
this slice registers ``valid``, the payload *and* ``ready``, and keeps one beat per clock
by parking the beat that arrives while the output stalls in a second ("skid") register.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


class StreamRegisterSlice(wiring.Component):
    """Two-entry skid buffer between ``i`` and ``o``.

    ``o.valid``, ``o.payload`` and ``i.ready`` all come straight from flip-flops, so no
    combinational path crosses the slice in either direction. It accepts a beat on every
    clock the consumer takes one (line rate holds) and adds one clock of latency.

    Members
    -------
    i : In(stream payload_shape)
    o : Out(stream payload_shape)
    occupied : Out(1)
        The slice holds at least one beat (``o.valid``); a design asking whether its
        transmit path is idle must count those.
    """

    def __init__(self, payload_shape):
        self._payload_shape = payload_shape
        super().__init__(
            {
                "i": In(stream.Signature(payload_shape)),
                "o": Out(stream.Signature(payload_shape)),
                "occupied": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        skid_valid = Signal()
        skid_payload = Signal(self._payload_shape)

        m.d.comb += [self.i.ready.eq(~skid_valid), self.occupied.eq(self.o.valid)]
        with m.If(self.o.ready | ~self.o.valid):
            # The output register is free on the next clock: refill it from the skid
            # register first (i.ready is low then), else from the input.
            with m.If(skid_valid):
                m.d.sync += [self.o.payload.eq(skid_payload), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(self.i.valid)]
        with m.Elif(self.i.valid & ~skid_valid):
            # The output stalls and a beat arrives: park it.
            m.d.sync += [skid_payload.eq(self.i.payload), skid_valid.eq(1)]
        return m
