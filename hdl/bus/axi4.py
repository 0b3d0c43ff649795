"""AXI4 (full) master signatures.

The signatures are written from the MASTER's point of view: ``Out`` members are driven by the
master, ``In`` members by the slave. Member names are the lower-case AXI4 signal names, so a top
level that flattens the interface as ``m_axi_<member>`` matches what cocotbext-axi's
``AxiBus.from_prefix(dut, "m_axi")`` expects.

The read (AR/R) and write (AW/W/B) halves are also available on their own, because a DMA's
reader and writer are separate blocks that each own one half; :func:`connect_read_write` joins
the two halves onto one full interface.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = [
    "RESP_OKAY",
    "RESP_EXOKAY",
    "RESP_SLVERR",
    "RESP_DECERR",
    "BURST_FIXED",
    "BURST_INCR",
    "BURST_WRAP",
    "PAGE_BYTES",
    "MAX_BURST_BEATS",
    "Axi4ReadSignature",
    "Axi4WriteSignature",
    "Axi4Signature",
    "connect_read_write",
]

# xRESP codes (AXI4 spec A3.4.4).
RESP_OKAY = 0
RESP_EXOKAY = 1
RESP_SLVERR = 2
RESP_DECERR = 3

# AxBURST codes. The movers only issue INCR.
BURST_FIXED = 0
BURST_INCR = 1
BURST_WRAP = 2

# An AXI4 burst must not cross a 4 KiB address boundary, and an INCR burst has at most 256 beats.
PAGE_BYTES = 4096
MAX_BURST_BEATS = 256


def _check_params(addr_width, data_width, id_width):
    if not isinstance(addr_width, int) or not 12 <= addr_width <= 64:
        raise ValueError(f"AXI4 addr_width must be an integer in 12..64, not {addr_width!r}")
    if data_width not in (32, 64) or not isinstance(data_width, int):
        raise ValueError(f"AXI4 data_width must be 32 or 64, not {data_width!r}")
    if not isinstance(id_width, int) or not 1 <= id_width <= 32:
        raise ValueError(f"AXI4 id_width must be an integer in 1..32, not {id_width!r}")


def _read_members(addr_width, data_width, id_width):
    return {
        "arid": Out(id_width),
        "araddr": Out(addr_width),
        "arlen": Out(8),
        "arsize": Out(3),
        "arburst": Out(2),
        "arlock": Out(1),
        "arcache": Out(4),
        "arprot": Out(3),
        "arvalid": Out(1),
        "arready": In(1),
        "rid": In(id_width),
        "rdata": In(data_width),
        "rresp": In(2),
        "rlast": In(1),
        "rvalid": In(1),
        "rready": Out(1),
    }


def _write_members(addr_width, data_width, id_width):
    return {
        "awid": Out(id_width),
        "awaddr": Out(addr_width),
        "awlen": Out(8),
        "awsize": Out(3),
        "awburst": Out(2),
        "awlock": Out(1),
        "awcache": Out(4),
        "awprot": Out(3),
        "awvalid": Out(1),
        "awready": In(1),
        "wdata": Out(data_width),
        "wstrb": Out(data_width // 8),
        "wlast": Out(1),
        "wvalid": Out(1),
        "wready": In(1),
        "bid": In(id_width),
        "bresp": In(2),
        "bvalid": In(1),
        "bready": Out(1),
    }


class _Axi4SignatureBase(wiring.Signature):
    def __init__(self, members, addr_width, data_width, id_width):
        self._addr_width = addr_width
        self._data_width = data_width
        self._id_width = id_width
        super().__init__(members)

    @property
    def addr_width(self) -> int:
        return self._addr_width

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def id_width(self) -> int:
        return self._id_width

    def __eq__(self, other):
        return (
            type(self) is type(other)
            and self.addr_width == other.addr_width
            and self.data_width == other.data_width
            and self.id_width == other.id_width
        )

    def __hash__(self):
        return hash((type(self), self.addr_width, self.data_width, self.id_width))

    def __repr__(self):
        return (
            f"{type(self).__name__}(addr_width={self.addr_width}, "
            f"data_width={self.data_width}, id_width={self.id_width})"
        )


class Axi4ReadSignature(_Axi4SignatureBase):
    """Read half (AR and R channels) of an AXI4 master interface.

    Members (master view): ``arid araddr arlen arsize arburst arlock arcache arprot arvalid``
    (out), ``arready`` (in), ``rid rdata rresp rlast rvalid`` (in), ``rready`` (out).

    Raises :class:`ValueError` unless ``addr_width`` is in 12..64, ``data_width`` is 32 or 64
    and ``id_width`` is in 1..32.
    """

    def __init__(self, addr_width: int = 32, data_width: int = 32, id_width: int = 1):
        _check_params(addr_width, data_width, id_width)
        super().__init__(
            _read_members(addr_width, data_width, id_width), addr_width, data_width, id_width
        )


class Axi4WriteSignature(_Axi4SignatureBase):
    """Write half (AW, W and B channels) of an AXI4 master interface.

    Members (master view): ``awid awaddr awlen awsize awburst awlock awcache awprot awvalid``
    (out), ``awready`` (in), ``wdata wstrb wlast wvalid`` (out), ``wready`` (in),
    ``bid bresp bvalid`` (in), ``bready`` (out).

    Raises :class:`ValueError` on the same parameter ranges as :class:`Axi4ReadSignature`.
    """

    def __init__(self, addr_width: int = 32, data_width: int = 32, id_width: int = 1):
        _check_params(addr_width, data_width, id_width)
        super().__init__(
            _write_members(addr_width, data_width, id_width), addr_width, data_width, id_width
        )


class Axi4Signature(_Axi4SignatureBase):
    """Full AXI4 master interface: the members of :class:`Axi4WriteSignature` followed by
    those of :class:`Axi4ReadSignature`.

    ``addr_width`` 12..64, ``data_width`` 32 or 64 (``wstrb`` has ``data_width // 8`` bits),
    ``id_width`` 1..32; anything else raises :class:`ValueError` naming the value.
    """

    def __init__(self, addr_width: int = 32, data_width: int = 32, id_width: int = 1):
        _check_params(addr_width, data_width, id_width)
        members = {
            **_write_members(addr_width, data_width, id_width),
            **_read_members(addr_width, data_width, id_width),
        }
        super().__init__(members, addr_width, data_width, id_width)


def connect_read_write(m: Module, *, bus, read=None, write=None) -> None:
    """Drive the full AXI4 master interface ``bus`` from a read half and/or a write half.

    ``bus`` is a master-view :class:`Axi4Signature` interface (e.g. a top's own port); ``read``
    and ``write`` are master-view halves of sub-blocks. A missing half is tied off idle (no
    requests, ready high) so an unused channel never stalls a slave.
    """
    for half, members in ((read, _read_members), (write, _write_members)):
        names = members(1, 32, 1)  # only the names and directions are used
        for name, member in names.items():
            if half is None:
                if member.flow == wiring.Out:
                    # Ready outputs are tied high, requests low.
                    m.d.comb += getattr(bus, name).eq(1 if name in ("rready", "bready") else 0)
                continue
            if member.flow == wiring.Out:
                m.d.comb += getattr(bus, name).eq(getattr(half, name))
            else:
                m.d.comb += getattr(half, name).eq(getattr(bus, name))
