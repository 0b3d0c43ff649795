"""AXI4-Lite slave signature and the CSR bank generated from the register map.

:class:`AxiLiteSignature` is written from the MASTER's point of view (``Out`` members are
driven by the master), like :mod:`macdma.hdl.bus.axi4`; a slave takes it as
``In(AxiLiteSignature())``. Member names are the lower-case AXI signal names, so a top that
flattens the interface as ``s_axil_<member>`` matches cocotbext-axi's
``AxiLiteBus.from_prefix(dut, "s_axil")``.

:class:`CsrBank` is a ``wiring.Component`` built from a
:class:`~macdma.hdl.regmodel.RegisterMap` (by default :data:`~macdma.hdl.regmap.REGISTER_MAP`).

Ports
-----
``bus``: ``In(AxiLiteSignature(addr_width, 32))``. Then one flat port per field, named by
:func:`macdma.hdl.regmodel.port_name`: the lower-case ``<block>_<register>_<field>``, where the
block prefix is not repeated if the register name starts with it, and the field part is
dropped when the field is named like its register. Examples::

    tx_ctrl_run            Out(1)   rw         TX.CTRL.run
    tx_ctrl_reset          Out(1)   wo-pulse   TX.CTRL.reset, high for one cycle
    tx_ring_size           Out(13)  rw         TX.RING_SIZE (single field)
    tx_tail, tx_tail_written  Out   rw + doorbell strobe
    tx_head                In(12)   ro         the DMA engine drives it
    irq_status_tx_done     Out(1)   w1c value  IRQ.IRQ_STATUS.tx_done
    irq_status_tx_done_set In(1)    w1c set    pulse 1 to set the sticky bit
    id_features_data_bytes In(4)    ro         build parameter
    id_cfg_error_tx_ring_size Out(1) w1c       set by the bank itself (no _set port)

Per access kind:

* ``rw``: ``Out`` carrying the current value (a register; reset value from the map).
* ``ro``: ``In``; the bank samples it when the read address is accepted. ``ro`` fields the
  map marks ``constant`` (ID, VERSION) have no port and read as their map value.
* ``w1c``: ``Out`` value and ``In <name>_set``; each set bit set for one cycle makes the
  bit 1 from the next cycle on. Writing 1 clears it; **a hardware set in the same cycle as
  a clearing write wins** (the event is not lost; the bit stays 1).
* ``wo-pulse``: ``Out``, high for exactly one cycle after a write of 1; reads as 0.
* A register with ``write_strobe`` adds ``Out <register>_written``: high for one cycle after
  every write to it that got OKAY (whatever WSTRB was), in the first cycle in which the
  new value is visible on the field ports.

All outputs change on the clock edge that completes a write, i.e. they are registered.

AXI4-Lite behaviour
-------------------
* AW and W are accepted in either order or together; each is held in a one-entry
  buffer. The write is performed in the cycle after both are held, and B is presented
  in the cycle after that (held until BREADY). AWREADY/WREADY are low while the buffer is
  full or a B response is pending: one outstanding transaction per direction.
* AR is accepted whenever no R response is pending; R is presented the next cycle and
  held until RREADY. A read and a write may proceed at the same time; a read in the
  cycle a write completes returns the old value.
* Address decoding uses the word address ``addr[addr_width-1:2]``; the two low address
  bits are ignored (registers are 32-bit words). AWPROT/ARPROT are ignored.
* A read or write of an offset no register occupies answers SLVERR (read data 0).
  A write to a register whose fields are all read-only answers SLVERR and changes
  nothing. The bank never stalls: every accepted address gets a response.
* WSTRB selects bytes: only written bytes of ``rw`` fields change, only written bytes
  of ``w1c`` fields clear, and a ``wo-pulse`` bit pulses only if its byte is written.
* A field with ``valid`` values checks the value it would hold after the write (old
  bytes merged with written bytes). If it is not valid the write to that field is
  rejected: the field keeps its old value (other fields of the register are still
  written), the response is still OKAY, and in the same clock edge the field's bit in the
  sticky CFG_ERROR register and the IRQ cause named by ``cfg_error_irq``
  (IRQ_STATUS.cfg_error) are set.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..regmap import REGISTER_MAP
from ..regmodel import REGISTER_BITS, Field, RegisterMap, port_name

__all__ = ["RESP_OKAY", "RESP_SLVERR", "AxiLiteSignature", "CsrBank"]

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


def _valid_check(fld: Field, value: Value) -> Value:
    """A 1-bit expression: ``value`` is one of ``fld.valid``."""
    top = (1 << fld.width) - 1
    terms = []
    for rng in fld.valid:
        conds = []
        if rng[0] > 0:
            conds.append(value >= rng[0])
        if rng[-1] < top:
            conds.append(value <= rng[-1])
        if rng.step > 1:
            # The map only allows power-of-two steps dividing the start: an alignment.
            conds.append(value[: rng.step.bit_length() - 1] == 0)
        term = C(1, 1)
        for cond in conds:
            term = term & cond
        terms.append(term)
    return _any(terms)


def _byte_spans(lsb: int, width: int):
    """The (start, end) bit spans of the field at ``lsb`` of ``width`` bits, one per byte
    lane it touches (``end`` exclusive)."""
    start, end = lsb, lsb + width
    while start < end:
        stop = min(end, (start // 8 + 1) * 8)
        yield start, stop
        start = stop


def _any(terms) -> Value:
    """OR of 1-bit expressions (0 for none)."""
    result = C(0, 1)
    for term in terms:
        result = result | term
    return result


class CsrBank(wiring.Component):
    """The control/status registers of macdma behind an AXI4-Lite slave port.

    Generated from ``regmap``; see the module docstring for the ports and the bus
    behaviour. Use :meth:`port` to look a field's port up by register key.

    Parameters:
        regmap:     the :class:`~macdma.hdl.regmodel.RegisterMap` to implement.
        addr_width: AXI4-Lite byte address width; the map's window must fit. Addresses
                    beyond the window are undefined offsets (SLVERR).
    """

    def __init__(self, regmap: RegisterMap = REGISTER_MAP, *, addr_width: int = 12):
        if not isinstance(regmap, RegisterMap):
            raise TypeError(f"regmap must be a RegisterMap, not {regmap!r}")
        if not isinstance(addr_width, int) or (1 << addr_width) < regmap.window_bytes:
            raise ValueError(
                f"addr_width {addr_width!r} cannot address the {regmap.window_bytes}-byte "
                "register window"
            )
        self._regmap = regmap
        self._addr_width = addr_width
        members = {"bus": In(AxiLiteSignature(addr_width, REGISTER_BITS))}
        for block, reg in regmap.iter_registers():
            for fld in reg.fields:
                name = port_name(block, reg, fld)
                if fld.access in ("rw", "w1c"):
                    members[name] = Out(fld.width, init=fld.reset)
                elif fld.access == "wo-pulse":
                    members[name] = Out(1)
                elif not fld.constant:
                    members[name] = In(fld.width)
                if fld.access == "w1c" and not regmap.is_cfg_error(block, reg):
                    members[name + "_set"] = In(fld.width)
            if reg.write_strobe:
                members[port_name(block, reg) + "_written"] = Out(1)
        if len(members) != 1 + len(regmap.port_names()):
            raise ValueError("CSR bank port names collide")  # RegisterMap checks this first
        super().__init__(members)

    @property
    def regmap(self) -> RegisterMap:
        return self._regmap

    def port(self, register: str, field: str | None = None):
        """The port of ``field`` (default: the register's only field) of register key
        ``register``, e.g. ``bank.port("TX_CTRL", "run")`` or ``bank.port("TX_TAIL")``."""
        block, reg = self._regmap.lookup(register)
        if field is None:
            if len(reg.fields) != 1:
                raise ValueError(f"Register {register} has several fields; name one")
            fld = reg.fields[0]
        else:
            fld = reg.field(field)
        return getattr(self, port_name(block, reg, fld))

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        regmap = self._regmap

        # ---- write channel: one-entry AW and W buffers ---------------------------------
        aw_full = Signal()
        aw_addr = Signal(self._addr_width)
        w_full = Signal()
        w_data = Signal(REGISTER_BITS)
        w_strb = Signal(REGISTER_BITS // 8)

        m.d.comb += [
            bus.awready.eq(~aw_full & ~bus.bvalid),
            bus.wready.eq(~w_full & ~bus.bvalid),
        ]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(bus.awaddr)]
        with m.If(bus.wvalid & bus.wready):
            m.d.sync += [w_full.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]

        do_write = Signal()
        write_ok = Signal()  # the address decodes to a writable register
        w_bits = Signal(REGISTER_BITS)  # byte strobes widened to bits
        m.d.comb += [
            do_write.eq(aw_full & w_full),
            w_bits.eq(Cat(w_strb[i].replicate(8) for i in range(REGISTER_BITS // 8))),
        ]
        with m.If(do_write):
            m.d.sync += [
                aw_full.eq(0),
                w_full.eq(0),
                bus.bvalid.eq(1),
                bus.bresp.eq(Mux(write_ok, RESP_OKAY, RESP_SLVERR)),
            ]
        with m.Elif(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)

        word_addr = aw_addr[2:]
        write_selects = []  # per writable register: this write targets it
        rejects: dict[str, Value] = {}  # CFG_ERROR field name -> reject pulse (comb)
        w1c_fields = []  # (block, reg, fld, clear expression)
        for block, reg in regmap.iter_registers():
            if reg.read_only:
                continue
            selected = Signal(name=f"{port_name(block, reg)}__wsel")
            m.d.comb += selected.eq(do_write & (word_addr == (block.base + reg.offset) >> 2))
            write_selects.append(selected)
            if reg.write_strobe:
                m.d.sync += getattr(self, port_name(block, reg) + "_written").eq(selected)
            for fld in reg.fields:
                name = port_name(block, reg, fld)
                data = w_data[fld.lsb : fld.lsb + fld.width]
                byte_mask = w_bits[fld.lsb : fld.lsb + fld.width]
                if fld.access == "rw" and fld.valid is None:
                    # Lane by lane: a byte's strobe enables its flip-flops (no merge logic).
                    value = getattr(self, name)
                    for start, end in _byte_spans(fld.lsb, fld.width):
                        with m.If(selected & w_strb[start // 8]):
                            m.d.sync += value[start - fld.lsb : end - fld.lsb].eq(w_data[start:end])
                elif fld.access == "rw":
                    # Checked whole: the value the write would leave must be a valid one.
                    value = getattr(self, name)
                    merged = Signal(fld.width, name=f"{name}__merged")
                    m.d.comb += merged.eq((value & ~byte_mask) | (data & byte_mask))
                    accepted = Signal(name=f"{name}__valid")
                    m.d.comb += accepted.eq(_valid_check(fld, merged))
                    with m.If(selected & accepted):
                        m.d.sync += value.eq(merged)
                    rejects[name] = selected & ~accepted
                elif fld.access == "w1c":
                    w1c_fields.append((block, reg, fld, Mux(selected, data & byte_mask, 0)))
                elif fld.access == "wo-pulse":
                    m.d.sync += getattr(self, name).eq(selected & data[0] & byte_mask[0])

        any_reject = Signal()
        m.d.comb += [
            write_ok.eq(_any(write_selects)),
            any_reject.eq(_any(rejects.values())),
        ]

        # ---- sticky w1c bits: a hardware set in the same cycle wins over a clear -------
        for block, reg, fld, clear in w1c_fields:
            name = port_name(block, reg, fld)
            value = getattr(self, name)
            if regmap.is_cfg_error(block, reg):
                hw_set = rejects[fld.name]
            else:
                hw_set = getattr(self, name + "_set")
                if regmap.cfg_error_irq == (block.name, reg.name, fld.name):
                    hw_set = hw_set | any_reject
            m.d.sync += value.eq((value & ~clear) | hw_set)

        # ---- read channel ---------------------------------------------------------------
        m.d.comb += bus.arready.eq(~bus.rvalid)
        with m.If(bus.arvalid & bus.arready):
            m.d.sync += bus.rvalid.eq(1)
            with m.Switch(bus.araddr[2:]):
                for block, reg in regmap.iter_registers():
                    with m.Case((block.base + reg.offset) >> 2):
                        m.d.sync += [
                            bus.rdata.eq(self._read_value(block, reg)),
                            bus.rresp.eq(RESP_OKAY),
                        ]
                with m.Default():
                    m.d.sync += [bus.rdata.eq(0), bus.rresp.eq(RESP_SLVERR)]
        with m.Elif(bus.rvalid & bus.rready):
            m.d.sync += bus.rvalid.eq(0)

        return m

    def _read_value(self, block, reg) -> Value:
        """The register word as software reads it."""
        pieces = []
        position = 0
        for fld in sorted(reg.fields, key=lambda f: f.lsb):
            if fld.lsb > position:
                pieces.append(C(0, fld.lsb - position))
            if fld.access == "wo-pulse":
                pieces.append(C(0, fld.width))
            elif fld.access == "ro" and fld.constant:
                pieces.append(C(fld.reset, fld.width))
            else:
                pieces.append(getattr(self, port_name(block, reg, fld)))
            position = fld.lsb + fld.width
        if position < REGISTER_BITS:
            pieces.append(C(0, REGISTER_BITS - position))
        return Cat(*pieces)
