"""The DMA's packed word: the beat every stream between memory and the frame FIFOs carries."""

from amaranth.lib import data
from amaranth.utils import bits_for

__all__ = ["packed_layout"]


def packed_layout(data_width: int, *flags: str) -> data.StructLayout:
    """``data``, ``count`` valid bytes from lane 0, ``last``, then a 1-bit field per flag
    (``"error"``, ``"overflow"``) in the order given."""
    fields = {"data": data_width, "count": bits_for(data_width // 8), "last": 1}
    fields.update({name: 1 for name in flags})
    return data.StructLayout(fields)
