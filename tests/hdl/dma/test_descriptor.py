"""The descriptor layout: the HDL data.Struct and the driver's plain-Python mirror agree."""

import random
import subprocess
import sys

import pytest
from amaranth import Module, Signal
from amaranth.lib import data
from amaranth.sim import Simulator

from macdma.firmware import descriptor as fw
from macdma.hdl.dma import descriptor as hw
from macdma.hdl.mac.frame import RxError


def hdl_fields():
    """``[(name, bit offset, width)]`` of the HDL struct, in layout order."""
    return [(name, f.offset, f.width) for name, f in hw.Descriptor.as_shape()]


def hdl_named_fields():
    return [entry for entry in hdl_fields() if not entry[0].startswith("reserved_")]


def test_hdl_and_firmware_layouts_agree_field_by_field():
    firmware = [(bf.name, bf.offset, bf.width) for bf in fw.Descriptor.layout()]
    assert hdl_named_fields() == firmware


def test_hdl_struct_is_16_bytes_and_reserved_fields_fill_the_gaps():
    fields = hdl_fields()
    assert hw.Descriptor.as_shape().size == 8 * fw.DESCRIPTOR_BYTES == 128
    # Contiguous: the struct has no implicit holes, so padding is always named.
    end = 0
    for name, offset, width in fields:
        assert offset == end, name
        end = offset + width
        # Reserved names carry their word and first bit, and no field crosses a word.
        if name.startswith("reserved_"):
            assert name == f"reserved_w{offset // 32}_{offset % 32}"
        assert offset // 32 == (offset + width - 1) // 32, name
    assert end == 128


def test_layout_matches_the_documented_positions():
    # Written from docs/descriptors.md, independently of either definition.
    documented = {
        "addr": (0, 0, 32),
        "done_length": (1, 0, 16),
        "rx_csum": (1, 16, 16),
        "frame_length": (2, 0, 16),
        "rx_error": (2, 16, 3),
        "rx_truncated": (2, 19, 1),
        "csum_start": (2, 20, 10),
        "timestamped": (2, 30, 1),
        "error": (2, 31, 1),
        "length": (3, 0, 16),
        "csum_offset": (3, 16, 8),
        "ioc": (3, 24, 1),
        "csum_insert": (3, 25, 1),
        "ip_csum_insert": (3, 26, 1),
        "ts_request": (3, 27, 1),
        "sop": (3, 28, 1),
        "eop": (3, 29, 1),
        "own": (3, 31, 1),
    }
    assert {bf.name: (bf.word, bf.lsb, bf.width) for bf in fw.Descriptor.layout()} == documented


def test_rx_error_enum_and_constants_agree():
    assert [(m.name, m.value) for m in RxError] == [(m.name, m.value) for m in fw.RxErrorCause]
    assert hw.Descriptor.as_shape()["rx_error"].shape is RxError
    assert hw.DESCRIPTOR_BYTES == fw.DESCRIPTOR_BYTES
    assert hw.DESCRIPTOR_WORDS == fw.DESCRIPTOR_WORDS
    assert hw.MIN_RX_BUFFER_BYTES == fw.MIN_RX_BUFFER_BYTES
    assert hw.MAX_BUFFER_BYTES == fw.MAX_BUFFER_BYTES
    assert hw.WRITEBACK_FIRST_WORD == fw.WRITEBACK_FIRST_WORD
    assert (fw.WRITEBACK_OFFSET, fw.WRITEBACK_BYTES) == (4, 12)


def test_pack_gives_the_documented_bytes():
    desc = fw.Descriptor.tx(0x1234_5678, 1514, sop=True, eop=True, ioc=True)
    # word3 = 0x05EA | IOC (bit 24) | SOP (28) | EOP (29) | OWN (31) = 0xB100_05EA
    words = ("78563412", "00000000", "00000000", "ea0500b1")
    assert desc.pack() == bytes.fromhex("".join(words))
    # RX EOP write-back: addr 0x1000; 0x40 bytes in this buffer; frame 0x2A bytes with
    # rx_error FCS (5) at bit 16 and error at bit 31 (word2 = 0x8005_002A); length 0x200
    # with EOP (word3 = 0x2000_0200).
    words = ("00100000", "40000000", "2a000580", "00020020")
    rx = fw.Descriptor.unpack(bytes.fromhex("".join(words)))
    assert (rx.addr, rx.length, rx.eop, rx.own, rx.sop) == (0x1000, 0x200, True, False, False)
    assert (rx.done_length, rx.frame_length, rx.rx_error, rx.error) == (0x40, 0x2A, 5, True)
    assert rx.rx_error == fw.RxErrorCause.FCS


def random_descriptor(rng: random.Random) -> fw.Descriptor:
    values = {}
    for bf in fw.Descriptor.layout():
        limit = len(fw.RxErrorCause) - 1 if bf.name == "rx_error" else bf.max_value
        value = rng.randint(0, limit)
        values[bf.name] = bool(value) if bf.width == 1 else value
    return fw.Descriptor(**values)


def test_firmware_bytes_decode_identically_in_the_hdl_view():
    rng = random.Random(7)
    for _ in range(300):
        desc = random_descriptor(rng)
        image = desc.pack()
        # The DMA reads the four words little-endian, word 0 in the low bits of the struct.
        view = data.Const(hw.Descriptor, int.from_bytes(image, "little"))
        for bf in fw.Descriptor.layout():
            got = view[bf.name]
            got = got.value if isinstance(got, RxError) else int(got)
            assert got == int(getattr(desc, bf.name)), bf.name
        assert fw.Descriptor.unpack(image) == desc


def test_hdl_constant_encodes_identically_to_firmware_pack():
    rng = random.Random(11)
    for _ in range(300):
        desc = random_descriptor(rng)
        init = {bf.name: int(getattr(desc, bf.name)) for bf in fw.Descriptor.layout()}
        init["rx_error"] = RxError(init["rx_error"])
        bits = hw.Descriptor.const(init).as_value().value
        assert bits.to_bytes(16, "little") == desc.pack()


def test_pack_descriptor_encodes_like_firmware_pack_and_zeroes_the_rest():
    """The write-back encoder: signals packed into the layout give the firmware's bytes;
    fields left out (and the reserved bits) are 0; an unknown field is refused."""
    rng = random.Random(13)
    names = [bf.name for bf in fw.Descriptor.layout()]
    signals = {name: Signal(hw.Descriptor.as_shape().size, name=name) for name in names}
    cases = []
    for _ in range(40):
        desc = random_descriptor(rng)
        given = rng.sample(names, rng.randrange(len(names) + 1))
        expected = fw.Descriptor(**{name: getattr(desc, name) for name in given})
        cases.append(({name: int(getattr(desc, name)) for name in given}, expected.pack()))
    packed = {
        tuple(sorted(given)): hw.pack_descriptor(**{name: signals[name] for name in given})
        for given, _ in cases
    }

    async def bench(ctx):
        for given, image in cases:
            for name, value in given.items():
                ctx.set(signals[name], value)
            bits = ctx.get(packed[tuple(sorted(given))].as_value())
            assert bits.to_bytes(16, "little") == image, sorted(given)

    sim = Simulator(Module())
    sim.add_testbench(bench)
    sim.run()
    with pytest.raises(ValueError, match="no field.*ownn"):
        hw.pack_descriptor(ownn=1)


def test_reserved_bits_are_written_zero_and_ignored_on_read():
    assert fw.Descriptor().pack() == bytes(16)
    every_named_bit = fw.Descriptor(
        **{bf.name: (True if bf.width == 1 else bf.max_value) for bf in fw.Descriptor.layout()}
    )
    named_mask = int.from_bytes(every_named_bit.pack(), "little")
    reserved_mask = ((1 << 128) - 1) & ~named_mask
    expected_reserved = sum(
        ((1 << width) - 1) << offset
        for name, offset, width in hdl_fields()
        if name.startswith("reserved_")
    )
    assert reserved_mask == expected_reserved
    assert fw.Descriptor.unpack(reserved_mask.to_bytes(16, "little")) == fw.Descriptor()


def test_constructors_and_pack_reject_bad_values():
    with pytest.raises(ValueError, match="TX fragment length 0"):
        fw.Descriptor.tx(0, 0, sop=True, eop=True)
    with pytest.raises(ValueError, match="RX buffer size 63"):
        fw.Descriptor.rx(0, 63)
    with pytest.raises(ValueError, match="RX buffer size 65536"):
        fw.Descriptor.rx(0, 65536)
    with pytest.raises(ValueError, match="addr = 4294967296"):
        fw.Descriptor.tx(1 << 32, 64, sop=True, eop=True)
    with pytest.raises(ValueError, match="done_length = -1"):
        fw.Descriptor(done_length=-1).pack()
    with pytest.raises(ValueError, match="csum_start = 1024"):
        fw.Descriptor.tx(0, 64, sop=True, eop=True, csum_start=1024, csum_insert=True)
    with pytest.raises(ValueError, match="belongs on the SOP fragment"):
        fw.Descriptor.tx(0, 64, sop=False, eop=True, csum_insert=True)
    with pytest.raises(ValueError, match="16 bytes, not 12"):
        fw.Descriptor.unpack(bytes(12))
    rx = fw.Descriptor.rx(0x8000_0003, 64, ioc=True)
    assert (rx.own, rx.sop, rx.eop, rx.ioc, rx.length) == (True, False, False, True, 64)


def test_firmware_module_does_not_import_amaranth():
    code = (
        "import sys, macdma.firmware.descriptor; "
        "sys.exit('amaranth' in sys.modules or 'macdma.hdl' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_timestamp_fields_round_trip_and_their_rules():
    # A TX SOP asking for its time: word 3 bit 27.
    asked = fw.Descriptor.tx(0x1000, 100, sop=True, eop=True, ts_request=True)
    assert asked.words()[3] & (1 << 27) and fw.Descriptor.unpack(asked.pack()) == asked
    with pytest.raises(ValueError, match="timestamp request belongs on the SOP"):
        fw.Descriptor.tx(0x1000, 100, sop=False, eop=True, ts_request=True)
    # A timestamped EOP write-back: word 0 is the time, word 2 bit 30 says so.
    stamped = fw.Descriptor(addr=0xDEAD_BEEF, done_length=100, eop=True, timestamped=True)
    words = stamped.words()
    assert words[0] == 0xDEAD_BEEF and words[2] == 1 << 30
    back = fw.Descriptor.unpack(stamped.pack())
    assert back == stamped and back.timestamp_low_ns == 0xDEAD_BEEF
    assert fw.Descriptor(addr=0x1234, eop=True).timestamp_low_ns is None


@pytest.mark.parametrize("data_width", [32, 64])
def test_writeback_writes_words_1_to_3_or_all_four_when_stamped(data_width):
    """DescriptorWriteback, as both channels write a descriptor back: 12 bytes at offset 4
    (words 1..3, own in the last), or 16 at offset 0 when stamped; its beats, laid out from
    the write's address as the AXI writer lays them out, give the descriptor's bytes from
    that offset on, and the last beat's byte count ends the write exactly."""
    rng = random.Random(data_width)
    beat_bytes = data_width // 8
    value = Signal(128)
    stamped = Signal()
    entry = Signal(32)
    index = Signal(range(16 // beat_bytes + 1))
    writeback = hw.DescriptorWriteback(hw.Descriptor(value), stamped, data_width)
    address = writeback.address(entry)
    beat = writeback.beat(index)

    async def bench(ctx):
        for _ in range(20):
            image = rng.randbytes(16)
            for is_stamped in (0, 1):
                base = rng.randrange(1 << 28) << 4
                ctx.set(value, int.from_bytes(image, "little"))
                ctx.set(stamped, is_stamped)
                ctx.set(entry, base)
                offset = 0 if is_stamped else 4 * hw.WRITEBACK_FIRST_WORD
                length = ctx.get(writeback.length)
                beats = ctx.get(writeback.beats)
                assert ctx.get(address) == base + offset
                assert length == 16 - offset
                assert beats == -(-length // beat_bytes)
                assert ctx.get(writeback.last_count) == length - (beats - 1) * beat_bytes
                written = b""
                for i in range(beats):
                    ctx.set(index, i)
                    written += ctx.get(beat).to_bytes(beat_bytes, "little")
                assert written[:length] == image[offset:]
        assert writeback.max_beats == 16 // beat_bytes

    sim = Simulator(Module())
    sim.add_testbench(bench)
    sim.run()
