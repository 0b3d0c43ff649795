"""AXI4-Lite slave properties: every request answered, once, with the right response.

Ref: AMBA AXI and ACE Protocol Specification (ARM IHI 0022E) B1 (AXI4-Lite: every
transaction is a single beat, no IDs, no EXOKAY), A3.2.1 handshake (VALID held with a stable
payload until READY), A3.3.1 dependencies (B only after both AW and W, R only after AR),
A3.4.4 responses (SLVERR: the slave received the access but cannot complete it).

The checker observes a master-view :class:`~macdma.hdl.bus.axi_lite.AxiLiteSignature`
interface of a slave: it ``Assume`` s a protocol-correct master (free to wait any time on B
and R) and ``Assert`` s the slave's side.
"""

from amaranth import *
from amaranth.hdl import Assert, Assume

from ..bus.axi_lite import RESP_OKAY, RESP_SLVERR

__all__ = ["AxiLiteSlaveProperties"]


class AxiLiteSlaveProperties(Elaboratable):
    """Properties of an AXI4-Lite slave on ``bus``.

    Parameters:
        bus:               the slave's interface (master view, as the slave's ``bus`` port).
        started:           0 in the first cycle after reset, 1 afterwards.
        readable_words:    word addresses (byte address >> 2) that answer OKAY to a read.
        writable_words:    word addresses that answer OKAY to a write.
        write_response_cycles: most cycles from holding both AW and W to showing B.
        read_response_cycles:  most cycles from accepting AR to showing R.

    Asserted (slave): BVALID/RVALID low after reset and held with a stable payload until
    accepted; B only for a write whose AW and W were both accepted and not yet answered, R
    only for an accepted AR not yet answered (one response per request); each response
    within its bound; RRESP/BRESP SLVERR exactly for the offsets not in
    ``readable_words`` / ``writable_words``, and an erroring read returns 0. Assumed
    (master): VALIDs low after reset and held with a stable payload until READY.

    Members for further properties: ``write_addr``, ``write_data``, ``write_strb`` (the
    accepted write not yet answered), ``write_answered`` (high in the cycle its B appears),
    ``aw_held`` / ``w_held`` / ``ar_held`` (a request accepted and not yet answered).
    """

    def __init__(
        self,
        bus,
        *,
        started,
        readable_words,
        writable_words,
        write_response_cycles: int,
        read_response_cycles: int,
    ):
        self._bus = bus
        self._started = started
        self._readable = sorted(set(readable_words))
        self._writable = sorted(set(writable_words))
        self._write_cycles = write_response_cycles
        self._read_cycles = read_response_cycles
        self.write_addr = Signal(len(bus.awaddr))
        self.write_data = Signal(len(bus.wdata))
        self.write_strb = Signal(len(bus.wstrb))
        self.write_answered = Signal()
        self.aw_held = Signal()
        self.w_held = Signal()
        self.ar_held = Signal()

    @staticmethod
    def _member_of(word: Value, words: list) -> Value:
        hit = C(0, 1)
        for address in words:
            hit = hit | (word == address)
        return hit

    def elaborate(self, platform):
        m = Module()
        bus = self._bus
        started = self._started

        def past(value, name):
            reg = Signal(len(Value.cast(value)), name=f"past_{name}")
            m.d.sync += reg.eq(value)
            return reg

        # ---- the master's rules ------------------------------------------------------------
        for channel, payload in (
            ("aw", Cat(bus.awaddr, bus.awprot)),
            ("w", Cat(bus.wdata, bus.wstrb)),
            ("ar", Cat(bus.araddr, bus.arprot)),
        ):
            valid = getattr(bus, f"{channel}valid")
            ready = getattr(bus, f"{channel}ready")
            waiting = past(valid & ~ready, f"{channel}_waiting")
            old = past(payload, f"{channel}_payload")
            with m.If(~started):
                m.d.comb += Assume(~valid)
            with m.If(started & waiting):
                m.d.comb += Assume(valid & (payload == old))

        # ---- responses held until accepted -------------------------------------------------
        for channel, payload in (("b", bus.bresp), ("r", Cat(bus.rdata, bus.rresp))):
            valid = getattr(bus, f"{channel}valid")
            ready = getattr(bus, f"{channel}ready")
            waiting = past(valid & ~ready, f"{channel}_waiting")
            old = past(payload, f"{channel}_payload")
            with m.If(~started):
                m.d.comb += Assert(~valid)
            with m.If(started & waiting):
                m.d.comb += Assert(valid & (payload == old))

        # ---- one response per request, the right one, in time ------------------------------
        # The slave under proof keeps at most one request per channel (documented for the CSR
        # bank), so one record per channel is enough; a second request is an error.
        aw_held, w_held, ar_held = self.aw_held, self.w_held, self.ar_held
        ar_addr = Signal(len(bus.araddr))
        aw_accepted = bus.awvalid & bus.awready
        w_accepted = bus.wvalid & bus.wready
        ar_accepted = bus.arvalid & bus.arready
        b_accepted = bus.bvalid & bus.bready
        r_accepted = bus.rvalid & bus.rready
        m.d.comb += [
            Assert(~(aw_accepted & aw_held & ~b_accepted)),
            Assert(~(w_accepted & w_held & ~b_accepted)),
            Assert(~(ar_accepted & ar_held & ~r_accepted)),
        ]
        with m.If(aw_accepted):
            m.d.sync += [aw_held.eq(1), self.write_addr.eq(bus.awaddr)]
        with m.Elif(b_accepted):
            m.d.sync += aw_held.eq(0)
        with m.If(w_accepted):
            m.d.sync += [w_held.eq(1), self.write_data.eq(bus.wdata), self.write_strb.eq(bus.wstrb)]
        with m.Elif(b_accepted):
            m.d.sync += w_held.eq(0)
        with m.If(ar_accepted):
            m.d.sync += [ar_held.eq(1), ar_addr.eq(bus.araddr)]
        with m.Elif(r_accepted):
            m.d.sync += ar_held.eq(0)

        past_bvalid = past(bus.bvalid, "bvalid")
        m.d.comb += self.write_answered.eq(bus.bvalid & ~past_bvalid)
        with m.If(bus.bvalid):
            writable = self._member_of(self.write_addr[2:], self._writable)
            m.d.comb += [
                Assert(aw_held & w_held),
                Assert(bus.bresp == Mux(writable, RESP_OKAY, RESP_SLVERR)),
            ]
        with m.If(bus.rvalid):
            readable = self._member_of(ar_addr[2:], self._readable)
            m.d.comb += [
                Assert(ar_held),
                Assert(bus.rresp == Mux(readable, RESP_OKAY, RESP_SLVERR)),
            ]
            with m.If(~readable):
                m.d.comb += Assert(bus.rdata == 0)

        # Cycles a complete request has waited without its response showing.
        write_wait = Signal(range(self._write_cycles + 1))
        read_wait = Signal(range(self._read_cycles + 1))
        with m.If(aw_held & w_held & ~bus.bvalid):
            m.d.sync += write_wait.eq(write_wait + 1)
        with m.Else():
            m.d.sync += write_wait.eq(0)
        with m.If(ar_held & ~bus.rvalid):
            m.d.sync += read_wait.eq(read_wait + 1)
        with m.Else():
            m.d.sync += read_wait.eq(0)
        with m.If(aw_held & w_held & ~bus.bvalid):
            m.d.comb += Assert(write_wait < self._write_cycles)
        with m.If(ar_held & ~bus.rvalid):
            m.d.comb += Assert(read_wait < self._read_cycles)
        return m
