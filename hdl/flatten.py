"""Flat Verilog ports for an interface: ``m_axi`` + ``awaddr`` -> ``m_axi_awaddr``.

Amaranth names the ports of a nested interface ``m_axi__awaddr``; bus-functional models
such as cocotbext-axi's ``AxiBus.from_prefix(dut, "m_axi")`` want one underscore. A top
declares the flat members with :func:`flat_members` and joins them to the inner
interface with :func:`connect_flat`.
"""

from amaranth import Module
from amaranth.lib import wiring


def flat_members(prefix: str, member: wiring.Member) -> dict[str, wiring.Member]:
    """The flat port members that stand for ``member`` (an ``In``/``Out`` of a
    signature) at the top level, named ``<prefix>_<path>``."""
    if not member.is_signature:
        raise TypeError(f"{prefix}: expected an interface member, not a port {member!r}")
    # ``member.signature`` is already seen from the component (flipped for ``In``).
    signature = member.signature
    ports = {}
    for path, port in signature.members.flatten():
        if port.is_port:
            ports["_".join((prefix, *map(str, path)))] = port
    return ports


def connect_flat(m: Module, top, prefix: str, interface, member: wiring.Member) -> None:
    """Join the flat ports of ``top`` named ``<prefix>_*`` to ``interface``, an inner
    component's interface whose member description is ``member`` (as seen by that
    component)."""
    signature = member.signature
    for path, port in signature.members.flatten():
        if not port.is_port:
            continue
        inner = interface
        for step in path:
            inner = inner[step] if isinstance(step, int) else getattr(inner, step)
        outer = getattr(top, "_".join((prefix, *map(str, path))))
        if port.flow == wiring.Out:
            m.d.comb += outer.eq(inner)
        else:
            m.d.comb += inner.eq(outer)
