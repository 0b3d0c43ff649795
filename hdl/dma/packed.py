"""The DMA's packed word: the beat every stream between memory and the frame FIFOs carries."""

from amaranth import C, Cat, Value
from amaranth.lib import data
from amaranth.utils import bits_for

__all__ = ["pack_struct", "packed_layout"]


def packed_layout(data_width: int, *flags: str) -> data.StructLayout:
    """``data``, ``count`` valid bytes from lane 0, ``last``, then a 1-bit field per flag
    (``"error"``, ``"overflow"``) in the order given."""
    fields = {"data": data_width, "count": bits_for(data_width // 8), "last": 1}
    fields.update({name: 1 for name in flags})
    return data.StructLayout(fields)


def pack_struct(shape, **fields) -> Value:
    """A value of the struct ``shape`` from ``fields`` (name -> value, each zero-extended or
    cut to its field's width; every other field 0), as one concatenation in layout order.

    Why not a ``Signal(shape)`` with an ``.eq`` per field: the Verilog backend may split such
    a signal's constant bits into ``always @*`` blocks that read nothing, which Icarus never
    runs, so those bits stay X (Verilator shows them as 0). A concatenation is one
    assignment."""
    layout = data.Layout.cast(shape)
    unknown = sorted(set(fields) - {name for name, _ in layout})
    if unknown:
        raise ValueError(f"{shape!r} has no field(s) {', '.join(unknown)}")
    pieces = []
    for name, fld in sorted(layout, key=lambda item: item[1].offset):
        value = Value.cast(fields.get(name, 0)).as_unsigned()
        pieces.append(value[: fld.width] if len(value) >= fld.width else value)
        if len(value) < fld.width:
            pieces.append(C(0, fld.width - len(value)))
    return Cat(*pieces)
