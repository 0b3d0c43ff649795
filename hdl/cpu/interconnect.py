"""The soft core's buses: an address decoder for a Wishbone master, and bridges from
Wishbone to the SoC's AXI4 (host memory) and AXI4-Lite (registers).

:class:`WishboneDecoder` routes a master's cycle to the target whose regions hold its
address (region-relative word address, so a target never sees its base) and answers
``err`` for an address no region holds. :class:`WishboneToAxi4` turns a cycle into one
AXI4 transaction: a single write, a single read, or, for an incrementing burst (a cache
line refill), one read burst to the end of the cache line, so a refill contends with the
DMA as one burst, the way a cache's AXI port asks for it. :class:`WishboneToAxiLite` does
single reads and writes. An AXI error response ends the Wishbone cycle with ``err``.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..bus.axi4 import BURST_INCR, RESP_OKAY, Axi4Signature
from ..bus.axi_lite import AxiLiteSignature
from .memory_map import Region
from .wishbone import CTI_INCREMENTING, WishboneSignature

__all__ = ["WishboneDecoder", "WishboneToAxi4", "WishboneToAxiLite"]

#: VexRiscv_Full's cache lines: 32 bytes (``bytePerLine`` in the package's VexRiscv_Full.yaml).
CACHE_LINE_WORDS = 8
_WORD_SIZE = 2  # AxSIZE of a 32-bit beat


class WishboneDecoder(wiring.Component):
    """Routes ``bus`` to the targets of ``targets`` (a dict: target name -> the
    :class:`Region` s it answers), each an ``Out(WishboneSignature())`` member of that
    name whose ``adr`` is the word address within the region. A cycle to an address no
    region holds ends with ``err`` the clock after it starts.
    """

    def __init__(self, targets: dict[str, tuple[Region, ...]]):
        if not targets:
            raise ValueError("a decoder needs at least one target")
        self.targets = {name: tuple(regions) for name, regions in targets.items()}
        members = {"bus": In(WishboneSignature())}
        members.update({name: Out(WishboneSignature()) for name in self.targets})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        hits = []
        for name, regions in self.targets.items():
            target = getattr(self, name)
            region_hits = []
            adr = Signal(30, name=f"{name}_adr")
            for region in regions:
                word_bits = exact_log2(region.size) - 2
                hit = bus.adr[word_bits:] == (region.base >> 2) >> word_bits
                region_hits.append(hit)
                with m.If(hit):
                    m.d.comb += adr.eq(bus.adr[:word_bits])
            selected = Signal(name=f"{name}_selected")
            m.d.comb += selected.eq(Cat(*region_hits).any())
            hits.append(selected)
            m.d.comb += [
                target.adr.eq(adr),
                target.dat_w.eq(bus.dat_w),
                target.sel.eq(bus.sel),
                target.we.eq(bus.we),
                target.cti.eq(bus.cti),
                target.bte.eq(bus.bte),
                target.cyc.eq(bus.cyc & selected),
                target.stb.eq(bus.stb & selected),
            ]
            with m.If(selected):
                m.d.comb += bus.dat_r.eq(target.dat_r)
        m.d.comb += [
            bus.ack.eq(Cat(*(getattr(self, name).ack for name in self.targets)).any()),
        ]
        # Nobody's address: a bus error, once per cycle.
        unmapped_err = Signal()
        m.d.sync += unmapped_err.eq(bus.cyc & bus.stb & ~Cat(*hits).any() & ~unmapped_err)
        errs = [getattr(self, name).err for name in self.targets]
        m.d.comb += bus.err.eq(Cat(unmapped_err, *errs).any())
        return m


class WishboneToAxi4(wiring.Component):
    """A Wishbone slave that makes AXI4 transactions at byte address ``adr << 2``.

    Members
    -------
    wb : In(WishboneSignature())
    axi : Out(Axi4Signature(32, 32, id_width))
        ID 0 always; one transaction at a time.

    A write is one beat (``wstrb`` = ``sel``), acknowledged when its B response arrives.
    A read in an incrementing burst (``cti`` = 0b010) reads to the end of its
    ``CACHE_LINE_WORDS`` line in one AXI burst and acknowledges each beat as it arrives;
    if the master ends its burst early, or a beat answers an error, the rest of the burst
    is drained without acknowledging.
    """

    def __init__(self, id_width: int = 2):
        self.id_width = id_width
        super().__init__(
            {"wb": In(WishboneSignature()), "axi": Out(Axi4Signature(32, 32, id_width))}
        )

    def elaborate(self, platform):
        m = Module()
        wb, axi = self.wb, self.axi
        line_bits = exact_log2(CACHE_LINE_WORDS)
        address = Cat(C(0, 2), wb.adr)
        m.d.comb += [
            axi.awsize.eq(_WORD_SIZE),
            axi.awburst.eq(BURST_INCR),
            axi.awlen.eq(0),
            axi.wlast.eq(1),
            axi.arsize.eq(_WORD_SIZE),
            axi.arburst.eq(BURST_INCR),
            axi.bready.eq(1),
        ]
        requesting = wb.cyc & wb.stb
        with m.FSM(name="wb_to_axi4"):
            with m.State("Idle"):
                with m.If(requesting & wb.we):
                    m.d.sync += [
                        axi.awaddr.eq(address),
                        axi.awvalid.eq(1),
                        axi.wdata.eq(wb.dat_w),
                        axi.wstrb.eq(wb.sel),
                        axi.wvalid.eq(1),
                    ]
                    m.next = "Write"
                with m.Elif(requesting):
                    in_burst = wb.cti == CTI_INCREMENTING
                    m.d.sync += [
                        axi.araddr.eq(address),
                        axi.arlen.eq(Mux(in_burst, ~wb.adr[:line_bits], 0)),
                        axi.arvalid.eq(1),
                    ]
                    m.next = "Read"
            with m.State("Write"):
                with m.If(axi.awready):
                    m.d.sync += axi.awvalid.eq(0)
                with m.If(axi.wready):
                    m.d.sync += axi.wvalid.eq(0)
                with m.If(axi.bvalid):
                    m.d.comb += [
                        wb.ack.eq(axi.bresp == RESP_OKAY),
                        wb.err.eq(axi.bresp != RESP_OKAY),
                    ]
                    m.next = "Idle"
            with m.State("Read"):
                with m.If(axi.arready):
                    m.d.sync += axi.arvalid.eq(0)
                m.d.comb += [axi.rready.eq(requesting), wb.dat_r.eq(axi.rdata)]
                with m.If(axi.rvalid & requesting):
                    okay = axi.rresp == RESP_OKAY
                    m.d.comb += [wb.ack.eq(okay), wb.err.eq(~okay)]
                    with m.If(axi.rlast):
                        m.next = "Idle"
                    with m.Elif(~okay | (wb.cti != CTI_INCREMENTING)):
                        m.next = "Drain"
            with m.State("Drain"):
                m.d.comb += axi.rready.eq(1)
                with m.If(axi.rvalid & axi.rlast):
                    m.next = "Idle"
        return m


class WishboneToAxiLite(wiring.Component):
    """A Wishbone slave that makes one AXI4-Lite read or write per cycle, at byte address
    ``adr << 2`` (its low ``addr_width`` bits), acknowledged (or ``err`` on SLVERR) when
    the response arrives.

    Members
    -------
    wb : In(WishboneSignature())
    axil : Out(AxiLiteSignature(addr_width, 32))
    """

    def __init__(self, addr_width: int = 12):
        super().__init__(
            {"wb": In(WishboneSignature()), "axil": Out(AxiLiteSignature(addr_width, 32))}
        )

    def elaborate(self, platform):
        m = Module()
        wb, axil = self.wb, self.axil
        address = Cat(C(0, 2), wb.adr)[: len(axil.awaddr)]
        requesting = wb.cyc & wb.stb
        m.d.comb += [axil.bready.eq(1), axil.rready.eq(1), wb.dat_r.eq(axil.rdata)]
        with m.FSM(name="wb_to_axil"):
            with m.State("Idle"):
                with m.If(requesting & wb.we):
                    m.d.sync += [
                        axil.awaddr.eq(address),
                        axil.awvalid.eq(1),
                        axil.wdata.eq(wb.dat_w),
                        axil.wstrb.eq(wb.sel),
                        axil.wvalid.eq(1),
                    ]
                    m.next = "Write"
                with m.Elif(requesting):
                    m.d.sync += [axil.araddr.eq(address), axil.arvalid.eq(1)]
                    m.next = "Read"
            with m.State("Write"):
                with m.If(axil.awready):
                    m.d.sync += axil.awvalid.eq(0)
                with m.If(axil.wready):
                    m.d.sync += axil.wvalid.eq(0)
                with m.If(axil.bvalid):
                    m.d.comb += [
                        wb.ack.eq(axil.bresp == RESP_OKAY),
                        wb.err.eq(axil.bresp != RESP_OKAY),
                    ]
                    m.next = "Idle"
            with m.State("Read"):
                with m.If(axil.arready):
                    m.d.sync += axil.arvalid.eq(0)
                with m.If(axil.rvalid):
                    m.d.comb += [
                        wb.ack.eq(axil.rresp == RESP_OKAY),
                        wb.err.eq(axil.rresp != RESP_OKAY),
                    ]
                    m.next = "Idle"
        return m
