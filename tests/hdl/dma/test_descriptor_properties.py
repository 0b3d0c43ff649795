"""Property-based tests of the descriptor layout: hypothesis draws descriptors (every field
anywhere in its range, edges included) and raw 16-byte images; the driver's pack/unpack
(firmware/descriptor.py) must round-trip, ignore reserved bits, and agree bit for bit with
the HDL ``data.Struct`` (hdl/dma/descriptor.py) in both directions."""

from __future__ import annotations

from amaranth.lib import data
from hypothesis import given, settings
from hypothesis import strategies as st

from macdma.firmware import descriptor as fw
from macdma.hdl.dma import descriptor as hw
from macdma.hdl.mac.frame import RxError

LAYOUT = fw.Descriptor.layout()
NAMED_MASK = sum(((1 << bf.width) - 1) << bf.offset for bf in LAYOUT)
DESCRIPTOR_SETTINGS = settings(max_examples=300, deadline=None, derandomize=True)


def field_values(bf: fw.BitField):
    if bf.width == 1:
        return st.booleans()
    if bf.name == "rx_error":  # the HDL field is the RxError enum: only its members
        return st.sampled_from([cause.value for cause in fw.RxErrorCause])
    return st.integers(0, bf.max_value)


descriptors = st.builds(fw.Descriptor, **{bf.name: field_values(bf) for bf in LAYOUT})
images = st.binary(min_size=fw.DESCRIPTOR_BYTES, max_size=fw.DESCRIPTOR_BYTES)


@DESCRIPTOR_SETTINGS
@given(descriptors)
def test_pack_then_unpack_gives_the_descriptor_back(descriptor):
    image = descriptor.pack()
    assert len(image) == fw.DESCRIPTOR_BYTES
    assert fw.Descriptor.unpack(image) == descriptor
    assert int.from_bytes(image, "little") & ~NAMED_MASK == 0, "reserved bits not written 0"


@DESCRIPTOR_SETTINGS
@given(images)
def test_unpack_ignores_reserved_bits_and_repacks_the_named_ones(image):
    descriptor = fw.Descriptor.unpack(image)
    assert (
        int.from_bytes(descriptor.pack(), "little") == int.from_bytes(image, "little") & NAMED_MASK
    )


@DESCRIPTOR_SETTINGS
@given(descriptors)
def test_the_hdl_struct_reads_the_driver_bytes_field_by_field(descriptor):
    # The DMA reads the four words little-endian, word 0 in the low bits of the struct.
    view = data.Const(hw.Descriptor, int.from_bytes(descriptor.pack(), "little"))
    for bf in LAYOUT:
        got = view[bf.name]
        got = got.value if isinstance(got, RxError) else int(got)
        assert got == int(getattr(descriptor, bf.name)), bf.name


@DESCRIPTOR_SETTINGS
@given(descriptors)
def test_an_hdl_constant_is_the_bytes_the_driver_unpacks(descriptor):
    init = {bf.name: int(getattr(descriptor, bf.name)) for bf in LAYOUT}
    init["rx_error"] = RxError(init["rx_error"])
    bits = hw.Descriptor.const(init).as_value().value
    assert fw.Descriptor.unpack(bits.to_bytes(fw.DESCRIPTOR_BYTES, "little")) == descriptor
