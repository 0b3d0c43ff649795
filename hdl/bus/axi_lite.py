"""AXI4-Lite: the bus signature and its response codes.

:class:`AxiLiteSignature` is written from the MASTER's point of view (``Out`` members are
driven by the master), like :mod:`macdma.hdl.bus.axi4`; a slave takes it as
``In(AxiLiteSignature())``. Member names are the lower-case AXI signal names, so a top that
flattens the interface as ``s_axil_<member>`` matches cocotbext-axi's
``AxiLiteBus.from_prefix(dut, "s_axil")``.

The register bank behind this bus is :class:`macdma.hdl.bus.csr_bank.CsrBank`.
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RESP_OKAY", "RESP_SLVERR", "AxiLiteSignature"]

# xRESP codes (AXI spec A3.4.4); AXI4-Lite has no EXOKAY.
RESP_OKAY = 0
RESP_SLVERR = 2


class AxiLiteSignature(wiring.Signature):
    """AXI4-Lite interface, master's point of view.

    Parameters:
        addr_width: byte address width, 2..64 (12 for the 4 KiB CSR window).
        data_width: 32 or 64.
    """

    def __init__(self, addr_width: int = 12, data_width: int = 32):
        if not isinstance(addr_width, int) or not 2 <= addr_width <= 64:
            raise ValueError(
                f"AXI4-Lite addr_width must be an integer in 2..64, not {addr_width!r}"
            )
        if not isinstance(data_width, int) or data_width not in (32, 64):
            raise ValueError(f"AXI4-Lite data_width must be 32 or 64, not {data_width!r}")
        self._addr_width = addr_width
        self._data_width = data_width
        super().__init__(
            {
                "awaddr": Out(addr_width),
                "awprot": Out(3),
                "awvalid": Out(1),
                "awready": In(1),
                "wdata": Out(data_width),
                "wstrb": Out(data_width // 8),
                "wvalid": Out(1),
                "wready": In(1),
                "bresp": In(2),
                "bvalid": In(1),
                "bready": Out(1),
                "araddr": Out(addr_width),
                "arprot": Out(3),
                "arvalid": Out(1),
                "arready": In(1),
                "rdata": In(data_width),
                "rresp": In(2),
                "rvalid": In(1),
                "rready": Out(1),
            }
        )

    @property
    def addr_width(self) -> int:
        return self._addr_width

    @property
    def data_width(self) -> int:
        return self._data_width

    def __eq__(self, other):
        return (
            type(other) is type(self)
            and other.addr_width == self.addr_width
            and other.data_width == self.data_width
        )

    def __hash__(self):
        return hash((type(self), self._addr_width, self._data_width))

    def __repr__(self):
        return f"AxiLiteSignature(addr_width={self._addr_width}, data_width={self._data_width})"
