"""CsrBank (hdl/bus/csr_bank.py) in Amaranth's simulator, driven by a small AXI4-Lite master
written here."""

import pytest
from amaranth import *
from amaranth.back import verilog
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator
from axi_lite_master import AxiLiteMaster
from unbuilt import elaborate, rejected

from macdma.hdl.bus.axi_lite import RESP_OKAY, RESP_SLVERR, AxiLiteSignature
from macdma.hdl.bus.csr_bank import FIELD_ACCESS, CsrBank, block_signature, field_port
from macdma.hdl.regmap import REGISTER_MAP
from macdma.hdl.regmodel import ACCESS_KINDS, Block, Field, Register, RegisterMap

A = REGISTER_MAP.address  # byte address of a register key


def simulate(bench, dut=None):
    """Run ``bench(ctx, dut, master)`` as a testbench on a fresh CsrBank."""
    dut = dut or CsrBank(REGISTER_MAP)

    async def testbench(ctx):
        await bench(ctx, dut, AxiLiteMaster(ctx, dut.bus))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return dut


def test_reset_values_read_back():
    async def bench(ctx, dut, axi):
        for block, reg in REGISTER_MAP.iter_registers():
            hw_bits = sum(f.mask for f in reg.fields if f.hardware_supplied)
            value = await axi.read_ok(block.base + reg.offset)
            assert value & ~hw_bits == reg.reset, reg.name
        assert await axi.read_ok(A("ID")) == 0x4D444D41
        assert await axi.read_ok(A("ID_VERSION")) == 0x0000_0001
        assert ctx.get(dut.tx.burst_beats) == 16
        assert ctx.get(dut.mac.max_len) == 1518
        assert ctx.get(dut.irq.sys_clk_mhz) == 100

    simulate(bench)


def test_rw_register_honours_byte_strobes():
    async def bench(ctx, dut, axi):
        await axi.write_ok(A("ID_SCRATCH"), 0x1122_3344)
        assert await axi.read_ok(A("ID_SCRATCH")) == 0x1122_3344
        await axi.write_ok(A("ID_SCRATCH"), 0xAABB_CCDD, strb=0b0101)
        assert await axi.read_ok(A("ID_SCRATCH")) == 0x11BB_33DD
        await axi.write_ok(A("ID_SCRATCH"), 0xFFFF_FFFF, strb=0)
        assert await axi.read_ok(A("ID_SCRATCH")) == 0x11BB_33DD
        assert ctx.get(dut.id.scratch) == 0x11BB_33DD
        # A field across two byte lanes takes only the lanes strobed.
        await axi.write_ok(A("TX_TAIL"), 0xFFF)
        await axi.write_ok(A("TX_TAIL"), 0x3A5, strb=0b0001)
        assert await axi.read_ok(A("TX_TAIL")) == 0xFA5
        await axi.write_ok(A("TX_TAIL"), 0x3A5, strb=0b0010)
        assert await axi.read_ok(A("TX_TAIL")) == 0x3A5
        # Fields of one register, and bits beyond the fields, are independent.
        await axi.write_ok(A("IRQ_MODE"), 0xFFFF_FFFF)
        assert await axi.read_ok(A("IRQ_MODE")) == 0x0303
        assert (ctx.get(dut.irq.mode.tx_mode), ctx.get(dut.irq.mode.rx_mode)) == (3, 3)

    simulate(bench)


def test_ro_register_reads_the_input_port():
    async def bench(ctx, dut, axi):
        ctx.set(dut.tx.head, 0x123)
        ctx.set(dut.rx.status.halted, 1)
        ctx.set(dut.rx.status.error_code, 5)
        ctx.set(dut.id.features.data_bytes, 8)
        ctx.set(dut.id.features.max_prefetch, 4)
        ctx.set(dut.stats.rx_fcs_errors, 0xDEAD_BEEF)
        assert await axi.read_ok(A("TX_HEAD")) == 0x123
        assert await axi.read_ok(A("RX_STATUS")) == 0x52
        assert await axi.read_ok(A("ID_FEATURES")) == 0x0400_0008
        assert await axi.read_ok(A("STATS_RX_FCS_ERRORS")) == 0xDEAD_BEEF
        ctx.set(dut.tx.head, 0x7)
        assert await axi.read_ok(A("TX_HEAD")) == 0x7

    simulate(bench)


def test_write_to_read_only_register_is_slverr_without_effect():
    async def bench(ctx, dut, axi):
        ctx.set(dut.tx.head, 0x55)
        for key in ("ID", "ID_VERSION", "TX_HEAD", "TX_STATUS", "STATS_TX_FRAMES_GOOD"):
            assert await axi.write(A(key), 0xFFFF_FFFF) == RESP_SLVERR, key
        assert await axi.read_ok(A("ID")) == 0x4D444D41
        assert await axi.read_ok(A("TX_HEAD")) == 0x55
        assert await axi.read_ok(A("ID_CFG_ERROR")) == 0

    simulate(bench)


def _past_block(name: str) -> int:
    """The first offset after a block's last register (the map decides, not this test)."""
    block = next(b for b in REGISTER_MAP.blocks if b.name == name)
    return block.base + max(r.offset for r in block.registers) + 4


def test_undefined_offsets_answer_slverr_and_do_not_hang():
    async def bench(ctx, dut, axi):
        await axi.write_ok(A("ID_SCRATCH"), 0x600D)
        # After ID_SCRATCH, the gap at TX +0x24, past the RX, IRQ and STATS blocks, the top.
        for addr in (0x014, 0x124, *(_past_block(name) for name in ("RX", "IRQ", "STATS")), 0xFFC):
            assert await axi.read(addr) == (0, RESP_SLVERR), hex(addr)
            assert await axi.write(addr, 0xFFFF_FFFF) == RESP_SLVERR, hex(addr)
        assert await axi.read_ok(A("ID_SCRATCH")) == 0x600D
        assert await axi.read_ok(A("ID_CFG_ERROR")) == 0

    simulate(bench)


def test_low_address_bits_are_ignored():
    async def bench(ctx, dut, axi):
        await axi.write_ok(A("ID_SCRATCH") + 3, 0xCAFE)
        assert await axi.read_ok(A("ID_SCRATCH") + 2) == 0xCAFE

    simulate(bench)


async def _pulse(ctx, signal, value=1):
    ctx.set(signal, value)
    await ctx.tick()
    ctx.set(signal, 0)


def test_w1c_clears_only_bits_written_one():
    async def bench(ctx, dut, axi):
        causes = ("tx_done", "rx_done", "tx_error", "rx_error", "cfg_error")
        for cause in causes:
            await _pulse(ctx, getattr(dut.irq.status, f"{cause}_set"))
        assert await axi.read_ok(A("IRQ_STATUS")) == 0b11111
        await axi.write_ok(A("IRQ_STATUS"), 0b00101)
        assert await axi.read_ok(A("IRQ_STATUS")) == 0b11010
        assert ctx.get(dut.irq.status.tx_done) == 0 and ctx.get(dut.irq.status.rx_done) == 1
        await axi.write_ok(A("IRQ_STATUS"), 0b11111, strb=0)  # no byte written, no clear
        assert await axi.read_ok(A("IRQ_STATUS")) == 0b11010
        await axi.write_ok(A("IRQ_STATUS"), 0)
        assert await axi.read_ok(A("IRQ_STATUS")) == 0b11010
        await axi.write_ok(A("IRQ_STATUS"), 0xFFFF_FFFF)
        assert await axi.read_ok(A("IRQ_STATUS")) == 0

    simulate(bench)


@pytest.mark.parametrize("set_during_write", [False, True])
def test_w1c_hardware_set_wins_over_clear_in_the_same_cycle(set_during_write):
    async def bench(ctx, dut, axi):
        await _pulse(ctx, dut.irq.status.tx_done_set)
        assert ctx.get(dut.irq.status.tx_done) == 1
        # AW and W are taken on one edge; the bank writes on the next edge (documented).
        await axi._send(axi.aw(A("IRQ_STATUS")), axi.w(0b1))
        await _pulse(ctx, dut.irq.status.tx_done_set, int(set_during_write))
        assert ctx.get(dut.bus.bvalid) == 1, "the write must complete on this edge"
        assert await axi.response(dut.bus.bvalid, [dut.bus.bresp]) == [RESP_OKAY]
        assert ctx.get(dut.irq.status.tx_done) == int(set_during_write)
        assert await axi.read_ok(A("IRQ_STATUS")) == int(set_during_write)

    simulate(bench)


def test_wo_pulse_is_one_cycle_and_reads_zero():
    async def bench(ctx, dut, axi):
        seen = []
        # run=1 and the reset pulse; record tx_ctrl_reset on every cycle from the handshake.
        await axi._send(axi.aw(A("TX_CTRL")), axi.w(0b11))
        ctx.set(dut.bus.bready, 1)
        for _ in range(6):
            seen.append((ctx.get(dut.tx.ctrl.reset), ctx.get(dut.bus.bvalid)))
            await ctx.tick()
        ctx.set(dut.bus.bready, 0)
        assert [r for r, _ in seen] == [0, 1, 0, 0, 0, 0]
        assert seen[1][1] == 1  # the strobe comes with the response, after the write
        assert ctx.get(dut.tx.ctrl.run) == 1
        assert ctx.get(dut.rx.ctrl.reset) == 0
        assert await axi.read_ok(A("TX_CTRL")) == 0b01
        # Writing 0 to the pulse bit (and writing run=0) pulses nothing.
        await axi.write_ok(A("TX_CTRL"), 0b00)
        for _ in range(3):
            assert ctx.get(dut.tx.ctrl.reset) == 0
            await ctx.tick()
        assert ctx.get(dut.tx.ctrl.run) == 0

    simulate(bench)


def test_written_strobe_pulses_once_with_the_new_value():
    async def bench(ctx, dut, axi):
        await axi._send(axi.aw(A("TX_TAIL")), axi.w(0x0C0))
        trace = []
        for _ in range(5):
            trace.append((ctx.get(dut.tx.tail_written), ctx.get(dut.tx.tail)))
            assert ctx.get(dut.rx.tail_written) == 0
            await ctx.tick()
        assert [w for w, _ in trace] == [0, 1, 0, 0, 0]
        assert trace[0][1] == 0 and trace[1][1] == 0x0C0  # new value visible with the strobe
        await axi.response(dut.bus.bvalid, [dut.bus.bresp])
        # A write elsewhere does not ring the doorbell; rewriting the same value does.
        strobes = 0
        await axi.write_ok(A("TX_POLL_US"), 10)
        await axi._send(axi.aw(A("TX_TAIL")), axi.w(0x0C0, strb=0))
        for _ in range(3):
            strobes += ctx.get(dut.tx.tail_written)
            await ctx.tick()
        assert strobes == 1 and ctx.get(dut.tx.tail) == 0x0C0
        await axi.response(dut.bus.bvalid, [dut.bus.bresp])

    simulate(bench)


def test_invalid_value_is_rejected_and_flagged_in_cfg_error():
    bit = {f.name: f.lsb for f in REGISTER_MAP.register("ID_CFG_ERROR").fields}

    async def bench(ctx, dut, axi):
        await axi.write_ok(A("TX_RING_SIZE"), 192)
        assert ctx.get(dut.tx.ring_size) == 192
        assert await axi.write(A("TX_RING_SIZE"), 1) == RESP_OKAY  # rejected, still OKAY
        assert ctx.get(dut.tx.ring_size) == 192
        assert await axi.read_ok(A("ID_CFG_ERROR")) == 1 << bit["tx_ring_size"]
        assert ctx.get(dut.id.cfg_error.tx_ring_size) == 1
        assert ctx.get(dut.irq.status.cfg_error) == 1
        for bad in (4097, 0x1FFF):
            await axi.write_ok(A("TX_RING_SIZE"), bad)
            assert ctx.get(dut.tx.ring_size) == 192
        await axi.write_ok(A("TX_RING_SIZE"), 0)  # 0 = not configured is valid
        assert ctx.get(dut.tx.ring_size) == 0

        await axi.write_ok(A("RX_RING_BASE"), 0x8000_1008)  # not 16-byte aligned
        assert ctx.get(dut.rx.ring_base) == 0
        await axi.write_ok(A("RX_RING_BASE"), 0x8000_1010)
        assert ctx.get(dut.rx.ring_base) == 0x8000_1010

        # Only the invalid field of a register is rejected.
        await axi.write_ok(A("IRQ_TX_COALESCE"), (500 << 16) | 0)  # frames=0 is invalid
        assert ctx.get(dut.irq.tx_coalesce.frames) == 1
        assert ctx.get(dut.irq.tx_coalesce.timer_us) == 500

        # With byte strobes, the merged value is what is checked: 1518 = 0x05EE.
        await axi.write_ok(A("MAC_MAX_LEN"), 0x10, strb=0b01)  # 0x0510 = 1296: valid
        assert ctx.get(dut.mac.max_len) == 0x0510
        await axi.write_ok(A("MAC_MAX_LEN"), 0x0000, strb=0b10)  # 0x0010 = 16: too short
        assert ctx.get(dut.mac.max_len) == 0x0510

        expected = sum(
            1 << bit[name]
            for name in ("tx_ring_size", "rx_ring_base", "irq_tx_coalesce_frames", "mac_max_len")
        )
        assert await axi.read_ok(A("ID_CFG_ERROR")) == expected
        await axi.write_ok(A("ID_CFG_ERROR"), 1 << bit["rx_ring_base"])  # w1c
        assert await axi.read_ok(A("ID_CFG_ERROR")) == expected & ~(1 << bit["rx_ring_base"])
        await axi.write_ok(A("ID_CFG_ERROR"), 0xFFFF_FFFF)
        await axi.write_ok(A("IRQ_STATUS"), 1 << 4)
        assert await axi.read_ok(A("ID_CFG_ERROR")) == 0
        assert ctx.get(dut.irq.status.cfg_error) == 0

    simulate(bench)


def test_every_validated_field_checks_its_bounds():
    async def bench(ctx, dut, axi):
        for index, (block, reg, fld) in enumerate(REGISTER_MAP.validated_fields()):
            addr = block.base + reg.offset
            port = field_port(dut, block, reg, fld)
            low, high = min(r[0] for r in fld.valid), max(r[-1] for r in fld.valid)
            bad = [v for v in (low - 1, high + 1, low + 1) if 0 <= v < 1 << fld.width]
            bad = [v for v in bad if not fld.accepts(v)]
            assert bad, fld.name
            for value in (high, *bad):
                before = ctx.get(port)
                await axi.write_ok(addr, value << fld.lsb)
                expect = value if fld.accepts(value) else before
                assert ctx.get(port) == expect, (fld.name, value)
            cfg = await axi.read_ok(A("ID_CFG_ERROR"))
            assert cfg == (1 << (index + 1)) - 1, fld.name

    simulate(bench)


@pytest.mark.parametrize(
    "order, gap",
    [("together", 0), ("aw_first", 0), ("aw_first", 5), ("w_first", 0), ("w_first", 5)],
)
def test_aw_and_w_in_any_order(order, gap):
    async def bench(ctx, dut, axi):
        await axi.write_ok(A("ID_SCRATCH"), 0x0BAD_F00D, order=order, gap=gap)
        assert ctx.get(dut.id.scratch) == 0x0BAD_F00D
        await axi.write_ok(A("TX_POLL_US"), 0x1234, order=order, gap=gap, ready_delay=3)
        assert await axi.read_ok(A("TX_POLL_US")) == 0x1234

    simulate(bench)


def test_one_outstanding_write():
    async def bench(ctx, dut, axi):
        bus = dut.bus
        await axi._send(axi.aw(A("ID_SCRATCH")))
        assert ctx.get(bus.awready) == 0  # the address buffer is full until W arrives
        for _ in range(4):
            await ctx.tick()
            assert ctx.get(bus.awready) == 0 and ctx.get(bus.bvalid) == 0
        await axi._send(axi.w(0x77))
        # A response waits for BREADY; meanwhile no new write is accepted.
        for _ in range(4):
            await ctx.tick()
            assert ctx.get(bus.bvalid) == 1 and ctx.get(bus.bresp) == RESP_OKAY
            assert ctx.get(bus.awready) == 0 and ctx.get(bus.wready) == 0
        await axi.response(bus.bvalid, [bus.bresp])
        assert ctx.get(bus.awready) == 1 and ctx.get(bus.wready) == 1
        # Reads are likewise one at a time: R is held until RREADY.
        await axi._send((bus.arvalid, bus.arready, [(bus.araddr, A("ID_SCRATCH"))]))
        for _ in range(3):
            await ctx.tick()
            assert ctx.get(bus.rvalid) == 1 and ctx.get(bus.arready) == 0
            assert ctx.get(bus.rdata) == 0x77
        assert await axi.response(bus.rvalid, [bus.rdata, bus.rresp]) == [0x77, RESP_OKAY]

    simulate(bench)


def test_back_to_back_transactions():
    async def bench(ctx, dut, axi):
        values = [0x0101_0101 * i for i in range(1, 9)]
        for value in values:
            await axi.write_ok(A("ID_SCRATCH"), value)
            assert await axi.read_ok(A("ID_SCRATCH")) == value
        keys = ("TX_POLL_US", "RX_POLL_US", "TX_TAIL", "RX_TAIL", "MAC_IFG", "IRQ_ENABLE")
        for i, key in enumerate(keys):
            await axi.write_ok(A(key), i + 3)
        for i, key in enumerate(keys):
            assert await axi.read_ok(A(key)) == i + 3

    simulate(bench)


def test_read_and_write_in_flight_together():
    async def bench(ctx, dut, axi):
        bus = dut.bus
        await axi.write_ok(A("ID_SCRATCH"), 1)
        # AR, AW and W all on one edge: the read returns the value before the write.
        await axi._send(
            axi.aw(A("ID_SCRATCH")),
            axi.w(2),
            (bus.arvalid, bus.arready, [(bus.araddr, A("ID_SCRATCH"))]),
        )
        assert await axi.response(bus.rvalid, [bus.rdata, bus.rresp]) == [1, RESP_OKAY]
        assert await axi.response(bus.bvalid, [bus.bresp]) == [RESP_OKAY]
        assert await axi.read_ok(A("ID_SCRATCH")) == 2

    simulate(bench)


def test_ports_are_grouped_by_block_and_register():
    bank = CsrBank(REGISTER_MAP)
    elaborate(bank)
    assert list(bank.signature.members) == [
        "bus", "id", "tx", "rx", "irq", "mac", "mdio", "stats", "ptp",
    ]  # fmt: skip
    assert list(bank.signature.members["tx"].signature.members) == [
        "ctrl", "status", "ring_base", "ring_size", "tail", "tail_written", "head", "poll_us",
        "burst_beats", "prefetch", "desc_fetched", "bursts", "bytes", "frames", "drops",
        "fifo_overflows", "reset_discards",
    ]  # fmt: skip
    assert list(bank.signature.members["irq"].signature.members) == [
        "status", "enable", "mode", "tx_coalesce", "rx_coalesce", "sys_clk_mhz", "count",
        "min_interval",
    ]  # fmt: skip
    mdio = bank.signature.members["mdio"].signature.members

    def ports(register):
        return {name: (m.flow, m.shape) for name, m in mdio[register].signature.members.items()}

    assert ports("cmd") == {
        "data": (Out, 16), "reg": (Out, 5), "phy": (Out, 5), "write": (Out, 1),
        "written": (Out, 1),
    }  # fmt: skip
    assert ports("status") == {
        "read_data": (In, 16), "busy": (In, 1), "cmd_ignored": (Out, 1),
        "cmd_ignored_set": (In, 1),
    }  # fmt: skip
    assert len(bank.tx.ring_size) == 13
    assert bank.signature.members["tx"].signature.members["burst_beats"] == Out(9, init=16)
    # Every field with a port, found by walking the map, is the member the rule names.
    block, reg = REGISTER_MAP.lookup("TX_CTRL")
    assert field_port(bank, block, reg, reg.field("run")) is bank.tx.ctrl.run
    block, reg = REGISTER_MAP.lookup("IRQ_STATUS")
    assert field_port(bank, block, reg, reg.field("tx_done"), set_port=True) is (
        bank.irq.status.tx_done_set
    )
    assert not hasattr(bank.id.cfg_error, "tx_ring_size_set")  # set by the bank itself
    assert not hasattr(bank.id, "id") and not hasattr(bank.id, "version")  # constants
    # The hardware behind a block takes the same signature, flipped: they connect.
    assert block_signature(REGISTER_MAP.block("MDIO")).flip().flip() == (
        bank.signature.members["mdio"].signature
    )


def test_a_misspelt_register_or_field_fails_when_the_design_is_built():
    class ReadsRun(Elaboratable):
        def __init__(self, field):
            self.bank = CsrBank(REGISTER_MAP)
            self.field = field

        def elaborate(self, platform):
            m = Module()
            m.submodules.bank = self.bank
            run = Signal()
            m.d.comb += run.eq(getattr(self.bank.tx.ctrl, self.field))
            return m

    elaborate(ReadsRun("run"))
    with rejected(AttributeError, "object has no attribute 'rnu'"):
        elaborate(ReadsRun("rnu"))
    bank = CsrBank(REGISTER_MAP)
    elaborate(bank)
    with pytest.raises(AttributeError, match="ctlr"):
        bank.tx.ctlr  # noqa: B018
    with pytest.raises(AttributeError, match="tail_writen"):
        bank.rx.tail_writen  # noqa: B018


def _one_block_map(*registers, name="B"):
    return RegisterMap((Block(name, 0, registers),))


def test_two_registers_with_one_member_name_are_refused_when_built():
    # Keys B and B_B differ (flat names b, b_b), but without the block prefix both are "b".
    regmap = _one_block_map(
        Register("B", 0, (Field("b", (0, 32), "rw"),)),
        Register("B_B", 4, (Field("b_b", (0, 32), "rw"),)),
    )
    with pytest.raises(
        ValueError,
        match="Register block B: register B_B and register B would both be the member 'b'",
    ):
        block_signature(regmap.blocks[0], regmap)
    with rejected(ValueError, "register B_B and register B would both be the member 'b'"):
        CsrBank(regmap)


def test_names_no_interface_can_hold_are_refused_when_built():
    # Flat keys do not collide (B_CTRL_SIGNATURE, B_CTRL_RUN), but "signature" is every
    # interface's own attribute.
    ctrl = Register("CTRL", 0, (Field("run", (0, 1), "rw"), Field("signature", (1, 1), "rw")))
    regmap = _one_block_map(ctrl)
    with pytest.raises(ValueError, match=r"Register B\.CTRL: field signature would be the member"):
        block_signature(regmap.blocks[0], regmap)
    # A field named like a Python keyword cannot be read as an attribute either.
    ctrl = Register("CTRL", 0, (Field("run", (0, 1), "rw"), Field("if", (1, 1), "rw")))
    regmap = _one_block_map(ctrl)
    with pytest.raises(ValueError, match="field if would be the member 'if'"):
        block_signature(regmap.blocks[0], regmap)
    # A block named like the bank's bus port.
    scratch = Register("SCRATCH", 0, (Field("scratch", (0, 32), "rw"),))
    with rejected(ValueError, "CsrBank: block BUS and the bus would both be the member 'bus'"):
        CsrBank(_one_block_map(scratch, name="BUS"))
    with rejected(ValueError, "CsrBank: block REGMAP would be the member 'regmap'"):
        CsrBank(_one_block_map(scratch, name="REGMAP"))


def test_block_signature_checks_its_block():
    other = _one_block_map(Register("SCRATCH", 0, (Field("scratch", (0, 32), "rw"),)))
    with pytest.raises(ValueError, match="Block B is not a block of the register map"):
        block_signature(other.blocks[0])
    with pytest.raises(TypeError, match="regmap must be a RegisterMap"):
        block_signature(REGISTER_MAP.block("TX"), "REGISTER_MAP")


def test_exports_to_verilog():
    text = verilog.convert(CsrBank(REGISTER_MAP), name="csr")
    assert "module csr" in text
    for port in (
        "bus__awaddr",
        "tx__tail_written",
        "irq__status__tx_done_set",
        "stats__rx_runts",
        "mdio__cmd__written",
    ):
        assert port in text


def test_parameter_checks():
    with rejected(ValueError, "cannot address the 4096-byte register window"):
        CsrBank(REGISTER_MAP, addr_width=10)
    with rejected(TypeError, "regmap must be a RegisterMap"):
        CsrBank({})
    with pytest.raises(ValueError, match="data_width must be 32 or 64, not 16"):
        AxiLiteSignature(12, 16)
    sig = AxiLiteSignature()
    assert sig == AxiLiteSignature(12, 32) and sig != AxiLiteSignature(16, 32)
    assert list(sig.members) == [
        "awaddr", "awprot", "awvalid", "awready", "wdata", "wstrb", "wvalid", "wready",
        "bresp", "bvalid", "bready", "araddr", "arprot", "arvalid", "arready", "rdata",
        "rresp", "rvalid", "rready",
    ]  # fmt: skip


def test_every_access_kind_of_the_map_has_a_behaviour():
    """The bank has one FieldAccess class per access kind the register model knows, each
    under the kind's own name: a kind added to the model without hardware fails here."""
    assert sorted(FIELD_ACCESS) == sorted(ACCESS_KINDS)
    assert all(kind == access.kind for kind, access in FIELD_ACCESS.items())
