"""The Verilog export refuses what Icarus and Verilator would simulate differently: bits set
only by a constant in an ``always @*`` block (Icarus never runs a block that reads nothing,
so they stay X there; Verilator shows 0)."""

import pytest
from amaranth import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from macdma.sim.cosim.verilog import check_no_idle_processes, elaborate_verilog


class _Word(data.Struct):
    low: 8
    flags: 4
    spare: 4
    high: 8


class _FieldByField(wiring.Component):
    """A struct signal driven whole with 0, then field by field (one field under an If):
    the backend leaves ``spare``'s constant in an always @* block of its own."""

    o: Out(24)
    a: In(8)
    b: In(8)
    sel: In(1)

    def elaborate(self, platform):
        m = Module()
        word = Signal(_Word)
        m.d.comb += [word.eq(0), word.low.eq(self.a)]
        with m.If(self.sel):
            m.d.comb += word.high.eq(self.b)
        m.d.comb += self.o.eq(word)
        return m


class _OneExpression(_FieldByField):
    """The same word as one concatenation: a continuous assignment."""

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.o.eq(Cat(self.a, 0, self.b & self.sel.replicate(8)))
        return m


def test_a_struct_assigned_field_by_field_is_refused_with_the_signal_named():
    with pytest.raises(ValueError, match=r"dut: Verilog sets o\[15:8\] only by a constant"):
        elaborate_verilog("dut", _FieldByField, {})


def test_the_same_value_as_one_expression_exports():
    assert "module dut" in elaborate_verilog("dut", _OneExpression, {})


def test_a_process_that_reads_a_signal_passes():
    check_no_idle_processes("  always @*\n    o[7:0] = a;\n", "dut")
    with pytest.raises(ValueError, match=r"o\[7:0\]"):
        check_no_idle_processes("  always @*\n    o[7:0] = 8'h00;\n", "dut")
