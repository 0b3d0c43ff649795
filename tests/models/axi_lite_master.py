"""An AXI4-Lite master for Amaranth simulator testbenches: reads and writes with byte strobes,
AW and W in either order, and a bound on every handshake (a hang fails the test)."""

from __future__ import annotations

from amaranth import *

from macdma.hdl.bus.axi_lite import RESP_OKAY

TIMEOUT = 50  # cycles; a handshake or response slower than this is a hang


class AxiLiteMaster:
    """Drives one AXI4-Lite transaction at a time from a testbench."""

    def __init__(self, ctx, bus):
        self.ctx = ctx
        self.bus = bus

    async def _send(self, *channels):
        """Raise VALID on each ``(valid, ready, [(signal, value), ...])`` channel, hold each
        until its handshake, and return after the clock edge of the last handshake."""
        pending = list(channels)
        for valid, _ready, payload in pending:
            for signal, value in payload:
                self.ctx.set(signal, value)
            self.ctx.set(valid, 1)
        for _ in range(TIMEOUT):
            accepted = [ch for ch in pending if self.ctx.get(ch[1])]
            await self.ctx.tick()
            for ch in accepted:
                self.ctx.set(ch[0], 0)
                pending.remove(ch)
            if not pending:
                return
        raise AssertionError("AXI4-Lite handshake timed out")

    def aw(self, addr):
        bus = self.bus
        return (bus.awvalid, bus.awready, [(bus.awaddr, addr)])

    def w(self, data, strb=0xF):
        bus = self.bus
        return (bus.wvalid, bus.wready, [(bus.wdata, data), (bus.wstrb, strb)])

    async def response(self, valid, payload, ready_delay=0):
        """Wait for VALID on a response channel, keeping READY low ``ready_delay`` cycles."""
        ready = self.bus.bready if valid is self.bus.bvalid else self.bus.rready
        for _ in range(ready_delay):
            await self.ctx.tick()
        self.ctx.set(ready, 1)
        for _ in range(TIMEOUT):
            if self.ctx.get(valid):
                values = [self.ctx.get(signal) for signal in payload]
                await self.ctx.tick()
                self.ctx.set(ready, 0)
                return values
            await self.ctx.tick()
        raise AssertionError("AXI4-Lite response timed out")

    async def write(self, addr, data, strb=0xF, order="together", gap=0, ready_delay=0):
        """Write and return BRESP. ``order``: "together", "aw_first" or "w_first", with
        ``gap`` idle cycles between the two channels."""
        if order == "together":
            await self._send(self.aw(addr), self.w(data, strb))
        else:
            first, second = (self.aw(addr), self.w(data, strb))
            if order == "w_first":
                first, second = second, first
            await self._send(first)
            for _ in range(gap):
                await self.ctx.tick()
            await self._send(second)
        (resp,) = await self.response(self.bus.bvalid, [self.bus.bresp], ready_delay)
        return resp

    async def read(self, addr, ready_delay=0):
        """Read and return ``(RDATA, RRESP)``."""
        bus = self.bus
        await self._send((bus.arvalid, bus.arready, [(bus.araddr, addr)]))
        data, resp = await self.response(bus.rvalid, [bus.rdata, bus.rresp], ready_delay)
        return data, resp

    async def read_ok(self, addr):
        data, resp = await self.read(addr)
        assert resp == RESP_OKAY, f"read of 0x{addr:03X} answered {resp}"
        return data

    async def write_ok(self, addr, data, strb=0xF, **kw):
        resp = await self.write(addr, data, strb, **kw)
        assert resp == RESP_OKAY, f"write of 0x{addr:03X} answered {resp}"
