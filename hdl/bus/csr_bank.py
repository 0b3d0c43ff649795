"""The CSR bank: the control/status registers of a register map behind an AXI4-Lite slave.

:class:`CsrBank` is a ``wiring.Component`` built from a
:class:`~macdma.hdl.regmodel.RegisterMap` (by default :data:`~macdma.hdl.regmap.REGISTER_MAP`).
The hardware behind each block of the map declares a ``regs`` port with the signature
:func:`block_signature` gives for that block, and the SoC connects it with
``wiring.connect(m, bank.<block>, <component>.regs)``.

Ports
-----
``bus``: ``In(AxiLiteSignature(addr_width, 32))``. Then one ``Out`` sub-interface per block
of the map, with the signature :func:`block_signature` gives it (written from the bank's
side: ``Out`` members are driven by the bank). Names, applied to every block alike:

* The block's member is the block name in lower case: ``bank.tx``, ``bank.irq``,
  ``bank.mdio``, ``bank.id``.
* Inside it, each register is named by its key (:func:`~macdma.hdl.regmodel.register_key`)
  without the block prefix, in lower case (:func:`register_member_name`): TX.CTRL is
  ``bank.tx.ctrl``, IRQ.IRQ_STATUS (key IRQ_STATUS) is ``bank.irq.status``, IRQ.TX_COALESCE
  is ``bank.irq.tx_coalesce``, MDIO.MDIO_CMD is ``bank.mdio.cmd``. A register named like its
  block (ID.ID) keeps its name: ``bank.id.id``.
* A register whose only field is named like the register (TX.TAIL, field ``tail``) is that
  field's port itself: ``bank.tx.tail``; its w1c set port is ``<register>_set`` and its
  write strobe ``<register>_written``, both in the block: ``bank.tx.tail_written``.
* Any other register is a sub-interface with one member per field, named like the field
  (``bank.tx.ctrl.run``, ``bank.mdio.cmd.phy``), ``<field>_set`` for the set port of a w1c
  field (``bank.irq.status.tx_done_set``) and ``written`` for the write strobe
  (``bank.mdio.cmd.written``).
* Fields without a port (constant ``ro`` fields) are no member; a register left without
  members (ID.ID, ID.VERSION) is no member of its block.

A name the rule produces twice within one interface, a Python keyword, or a name an
interface already has (``signature``; on the bank ``bus`` and its attributes) makes
:func:`block_signature` and :class:`CsrBank` raise ``ValueError`` naming both. A misspelt
register or field (``bank.tx.ctrl.rnu``) raises ``AttributeError`` when the design is built.

Examples (the port's flow is the bank's)::

    bank.tx.ctrl.run            Out(1)   rw         TX.CTRL.run
    bank.tx.ctrl.reset          Out(1)   wo-pulse   TX.CTRL.reset, high for one cycle
    bank.tx.ring_size           Out(13)  rw         TX.RING_SIZE (single field)
    bank.tx.tail, .tail_written Out      rw + doorbell strobe
    bank.tx.head                In(12)   ro         the DMA engine drives it
    bank.irq.status.tx_done     Out(1)   w1c value  IRQ.IRQ_STATUS.tx_done
    bank.irq.status.tx_done_set In(1)    w1c set    pulse 1 to set the sticky bit
    bank.id.features.data_bytes In(4)    ro         build parameter
    bank.id.cfg_error.tx_ring_size Out(1) w1c       set by the bank itself (no _set port)

Per access kind:

* ``rw``: ``Out`` carrying the current value (a register; reset value from the map).
* ``ro``: ``In``; the bank samples it when the read address is accepted. ``ro`` fields the
  map marks ``constant`` (ID, VERSION) have no port and read as their map value.
* ``w1c``: ``Out`` value and ``In <name>_set``; each set bit set for one cycle makes the
  bit 1 from the next cycle on. Writing 1 clears it; **a hardware set in the same cycle as
  a clearing write wins** (the event is not lost; the bit stays 1). The CFG_ERROR register
  named by the map's ``cfg_error`` has no set ports: the bank sets its bits itself.
* ``wo-pulse``: ``Out``, high for exactly one cycle after a write of 1; reads as 0.
* A register with ``write_strobe`` adds an ``Out(1)`` write strobe (``written``, or
  ``<register>_written`` for a single-field register): high for one cycle after every
  write to it that got OKAY (whatever WSTRB was), in the first cycle in which the new value
  is visible on the field ports.

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

import keyword

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..regmap import REGISTER_MAP
from ..regmodel import REGISTER_BITS, Block, Field, Register, RegisterMap, port_name, register_key
from .axi_lite import RESP_OKAY, RESP_SLVERR, AxiLiteSignature

__all__ = [
    "FIELD_ACCESS",
    "CsrBank",
    "FieldAccess",
    "ReadOnly",
    "ReadWrite",
    "WriteOneToClear",
    "WritePulse",
    "block_member_name",
    "block_signature",
    "field_port",
    "register_member_name",
    "write_strobe_port",
]

#: Attributes every interface object has; no member may take these names.
_INTERFACE_ATTRIBUTES = frozenset({"signature"})


def block_member_name(block: Block) -> str:
    """The bank's member for ``block``: its name in lower case (``bank.tx``)."""
    return block.name.lower()


def register_member_name(block: Block, reg: Register) -> str:
    """The block interface's member for ``reg``: its key without the block prefix, in
    lower case (TX.CTRL: ``ctrl``; IRQ.IRQ_STATUS: ``status``; ID.ID: ``id``)."""
    key = register_key(block, reg)
    prefix = block.name + "_"
    return (key[len(prefix) :] if key.startswith(prefix) else key).lower()


def _is_whole(reg: Register) -> bool:
    """The register's only field is named like it: the register member is the field port."""
    return len(reg.fields) == 1 and reg.fields[0].name.upper() == reg.name


class _Write:
    """What one write cycle offers a field: the bank, the register it selects and the
    written bits, and where a field leaves what the bank finishes after the loop."""

    def __init__(self, m: Module, bank, w_data: Value, w_bits: Value, w_strb: Value):
        self.m = m
        self.bank = bank
        self.w_data = w_data
        self.w_bits = w_bits
        self.w_strb = w_strb
        self.rejects: dict[str, Value] = {}  # CFG_ERROR field name -> reject pulse (comb)
        self.w1c_fields: list = []  # (block, reg, fld, clear expression)


class FieldAccess:
    """How a field of one access kind (``kind``, the map's name for it) behaves in the
    bank: the ports it gets, what a write does to it, what a read returns."""

    kind: str = ""

    def members(self, fld: Field, has_set: bool):
        """(suffix, member) of the field's ports, from the bank's side."""
        yield "", In(fld.width)

    def write(self, write: _Write, selected: Value, block: Block, reg: Register, fld: Field):
        """Describe what a write that ``selected`` the field's register does to it."""

    def read(self, bank, block: Block, reg: Register, fld: Field) -> Value:
        """The field's bits in the register word software reads."""
        return field_port(bank, block, reg, fld)


class ReadOnly(FieldAccess):
    """``ro``: the hardware supplies the value (an ``In`` port, sampled at the read), or
    the map gives it as a constant (no port)."""

    kind = "ro"

    def members(self, fld: Field, has_set: bool):
        if not fld.constant:
            yield "", In(fld.width)

    def read(self, bank, block: Block, reg: Register, fld: Field) -> Value:
        if fld.constant:
            return C(fld.reset, fld.width)
        return field_port(bank, block, reg, fld)


class ReadWrite(FieldAccess):
    """``rw``: a register driven to the hardware; with ``valid`` values, a write that
    would leave an invalid value is rejected whole (CFG_ERROR)."""

    kind = "rw"

    def members(self, fld: Field, has_set: bool):
        yield "", Out(fld.width, init=fld.reset)

    def write(self, write: _Write, selected: Value, block: Block, reg: Register, fld: Field):
        m = write.m
        value = field_port(write.bank, block, reg, fld)
        if fld.valid is None:
            # Lane by lane: a byte's strobe enables its flip-flops (no merge logic).
            for start, end in _byte_spans(fld.lsb, fld.width):
                with m.If(selected & write.w_strb[start // 8]):
                    m.d.sync += value[start - fld.lsb : end - fld.lsb].eq(write.w_data[start:end])
            return
        # Checked whole: the value the write would leave must be a valid one.
        name = port_name(block, reg, fld)  # also the name of its CFG_ERROR bit
        data = write.w_data[fld.lsb : fld.lsb + fld.width]
        byte_mask = write.w_bits[fld.lsb : fld.lsb + fld.width]
        merged = Signal(fld.width, name=f"{name}__merged")
        m.d.comb += merged.eq((value & ~byte_mask) | (data & byte_mask))
        accepted = Signal(name=f"{name}__valid")
        m.d.comb += accepted.eq(_valid_check(fld, merged))
        with m.If(selected & accepted):
            m.d.sync += value.eq(merged)
        write.rejects[name] = selected & ~accepted


class WriteOneToClear(FieldAccess):
    """``w1c``: a sticky bit the hardware sets through ``<field>_set`` (or the bank itself,
    in CFG_ERROR); writing 1 clears it; a set in the cycle of the clear wins."""

    kind = "w1c"

    def members(self, fld: Field, has_set: bool):
        yield "", Out(fld.width, init=fld.reset)
        if has_set:
            yield "_set", In(fld.width)

    def write(self, write: _Write, selected: Value, block: Block, reg: Register, fld: Field):
        data = write.w_data[fld.lsb : fld.lsb + fld.width]
        byte_mask = write.w_bits[fld.lsb : fld.lsb + fld.width]
        # Finished after every field is known: CFG_ERROR's sets are other fields' rejects.
        write.w1c_fields.append((block, reg, fld, Mux(selected, data & byte_mask, 0)))


class WritePulse(FieldAccess):
    """``wo-pulse``: writing 1 makes a one-cycle strobe to the hardware; reads as 0."""

    kind = "wo-pulse"

    def members(self, fld: Field, has_set: bool):
        yield "", Out(1)

    def write(self, write: _Write, selected: Value, block: Block, reg: Register, fld: Field):
        data = write.w_data[fld.lsb : fld.lsb + fld.width]
        byte_mask = write.w_bits[fld.lsb : fld.lsb + fld.width]
        write.m.d.sync += field_port(write.bank, block, reg, fld).eq(
            selected & data[0] & byte_mask[0]
        )

    def read(self, bank, block: Block, reg: Register, fld: Field) -> Value:
        return C(0, fld.width)


#: The map's access kind names (:data:`~macdma.hdl.regmodel.ACCESS_KINDS`) -> behaviour.
FIELD_ACCESS: dict[str, FieldAccess] = {
    access.kind: access for access in (ReadOnly(), ReadWrite(), WriteOneToClear(), WritePulse())
}


class _Members:
    """A member dict that refuses names no interface can hold, and names given twice."""

    def __init__(self, owner: str, reserved=_INTERFACE_ATTRIBUTES):
        self.owner = owner
        self.reserved = reserved
        self.members: dict = {}
        self.origins: dict[str, str] = {}

    def add(self, name: str, member, origin: str) -> None:
        if keyword.iskeyword(name) or name in self.reserved:
            raise ValueError(
                f"{self.owner}: {origin} would be the member {name!r}, a name an interface "
                "cannot have; rename it in the register map"
            )
        if name in self.members:
            raise ValueError(
                f"{self.owner}: {origin} and {self.origins[name]} would both be the member "
                f"{name!r}; rename one in the register map"
            )
        self.members[name] = member
        self.origins[name] = origin


def block_signature(block: Block, regmap: RegisterMap = REGISTER_MAP) -> wiring.Signature:
    """The ports of ``block`` (a block of ``regmap``), from the CSR bank's side.

    rw and w1c field values and wo-pulse fields are ``Out``, hardware-supplied ro fields
    ``In``, each w1c field has an ``In <field>_set`` (except in the map's CFG_ERROR
    register, which the bank sets itself), a register's write strobe is an ``Out(1)``.
    Names: the module docstring. The hardware behind the block takes it as
    ``In(block_signature(block))``. Raises ``ValueError`` if two ports would get one name.
    """
    if not isinstance(regmap, RegisterMap):
        raise TypeError(f"regmap must be a RegisterMap, not {regmap!r}")
    if block not in regmap.blocks:
        raise ValueError(f"Block {block.name} is not a block of the register map")
    members = _Members(f"Register block {block.name}")
    for reg in block.registers:
        name = register_member_name(block, reg)
        has_set = not regmap.is_cfg_error(block, reg)
        what = f"register {reg.name}"
        if _is_whole(reg):
            (whole,) = reg.fields
            for suffix, member in FIELD_ACCESS[whole.access].members(whole, has_set):
                members.add(
                    name + suffix, member, what + (f" ({suffix[1:]} port)" if suffix else "")
                )
            if reg.write_strobe:
                members.add(name + "_written", Out(1), f"{what} (write strobe)")
            continue
        fields = _Members(f"Register {block.name}.{reg.name}")
        for fld in reg.fields:
            for suffix, member in FIELD_ACCESS[fld.access].members(fld, has_set):
                fields.add(
                    fld.name + suffix,
                    member,
                    f"field {fld.name}" + (f" ({suffix[1:]} port)" if suffix else ""),
                )
        if reg.write_strobe:
            fields.add("written", Out(1), "the write strobe")
        if fields.members:
            members.add(name, Out(wiring.Signature(fields.members)), what)
    return wiring.Signature(members.members)


def field_port(bank, block: Block, reg: Register, fld: Field, *, set_port: bool = False):
    """The port of ``fld`` (its ``_set`` port with ``set_port``) in ``bank`` or any object
    with the bank's block members; for code that walks the whole map (the bank itself,
    tests, proofs). Hardware names its ports by attribute instead."""
    block_ports = getattr(bank, block_member_name(block))
    name = register_member_name(block, reg)
    suffix = "_set" if set_port else ""
    if _is_whole(reg):
        return getattr(block_ports, name + suffix)
    return getattr(getattr(block_ports, name), fld.name + suffix)


def write_strobe_port(bank, block: Block, reg: Register):
    """The write strobe of ``reg`` (a register with ``write_strobe``) in ``bank``."""
    block_ports = getattr(bank, block_member_name(block))
    name = register_member_name(block, reg)
    if _is_whole(reg):
        return getattr(block_ports, name + "_written")
    return getattr(block_ports, name).written


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

    Generated from ``regmap``; see the module docstring for the ports (``bus`` and one
    member per block, ``bank.tx.ctrl.run``) and the bus behaviour.

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
        taken = {name for name in dir(type(self)) if not name.startswith("_")}
        members = _Members("CsrBank", reserved=_INTERFACE_ATTRIBUTES | taken)
        members.add("bus", In(AxiLiteSignature(addr_width, REGISTER_BITS)), "the bus")
        for block in regmap.blocks:
            members.add(
                block_member_name(block), Out(block_signature(block, regmap)), f"block {block.name}"
            )
        super().__init__(members.members)

    @property
    def regmap(self) -> RegisterMap:
        return self._regmap

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
        write = _Write(m, self, w_data, w_bits, w_strb)
        write_selects = []  # per writable register: this write targets it
        for block, reg in regmap.iter_registers():
            if reg.read_only:
                continue
            selected = Signal(name=f"{register_key(block, reg).lower()}__wsel")
            m.d.comb += selected.eq(do_write & (word_addr == (block.base + reg.offset) >> 2))
            write_selects.append(selected)
            if reg.write_strobe:
                m.d.sync += write_strobe_port(self, block, reg).eq(selected)
            for fld in reg.fields:
                FIELD_ACCESS[fld.access].write(write, selected, block, reg, fld)
        rejects = write.rejects

        any_reject = Signal()
        m.d.comb += [
            write_ok.eq(_any(write_selects)),
            any_reject.eq(_any(rejects.values())),
        ]

        # ---- sticky w1c bits: a hardware set in the same cycle wins over a clear -------
        for block, reg, fld, clear in write.w1c_fields:
            value = field_port(self, block, reg, fld)
            if regmap.is_cfg_error(block, reg):
                hw_set = rejects[fld.name]
            else:
                hw_set = field_port(self, block, reg, fld, set_port=True)
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
            pieces.append(FIELD_ACCESS[fld.access].read(self, block, reg, fld))
            position = fld.lsb + fld.width
        if position < REGISTER_BITS:
            pieces.append(C(0, REGISTER_BITS - position))
        return Cat(*pieces)
