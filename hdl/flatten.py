"""Flat Verilog ports for an interface: ``m_axi`` + ``awaddr`` -> ``m_axi_awaddr``.

Amaranth names the ports of a nested interface ``m_axi__awaddr``; bus-functional models
such as cocotbext-axi's ``AxiBus.from_prefix(dut, "m_axi")`` want one underscore. A top
declares the flat members with :func:`flat_members` and joins them to the inner
interface with :func:`connect_flat`. Where a contract names the pins otherwise (MDIO:
``mdc``, ``mdio_o``, not ``mdio_mdc``), ``names`` gives each member's flat name.
"""

from collections.abc import Mapping

from amaranth import ClockDomain, Module
from amaranth.lib import wiring


def _flat_name(prefix: str, path, names: Mapping[str, str] | None) -> str:
    joined = "_".join(map(str, path))
    return names[joined] if names is not None else f"{prefix}_{joined}"


def flat_members(
    prefix: str, member: wiring.Member, names: Mapping[str, str] | None = None
) -> dict[str, wiring.Member]:
    """The flat port members that stand for ``member`` (an ``In``/``Out`` of a
    signature) at the top level, named ``<prefix>_<path>`` (or ``names[<path>]``)."""
    if not member.is_signature:
        raise TypeError(f"{prefix}: expected an interface member, not a port {member!r}")
    # ``member.signature`` is already seen from the component (flipped for ``In``).
    signature = member.signature
    ports = {}
    for path, port in signature.members.flatten():
        if port.is_port:
            ports[_flat_name(prefix, path, names)] = port
    return ports


def connect_flat(
    m: Module,
    top,
    prefix: str,
    interface,
    member: wiring.Member,
    names: Mapping[str, str] | None = None,
) -> None:
    """Join the flat ports of ``top`` named ``<prefix>_*`` (or ``names[<path>]``) to
    ``interface``, an inner component's interface whose member description is ``member``
    (as seen by that component)."""
    signature = member.signature
    for path, port in signature.members.flatten():
        if not port.is_port:
            continue
        inner = interface
        for step in path:
            inner = inner[step] if isinstance(step, int) else getattr(inner, step)
        outer = getattr(top, _flat_name(prefix, path, names))
        if port.flow == wiring.Out:
            m.d.comb += outer.eq(inner)
        else:
            m.d.comb += inner.eq(outer)


def flat_clock_domains(m: Module, top, domains=("sync", "tx", "rx")) -> None:
    """Give ``m`` a local clock domain per name in ``domains``, clocked and reset by the
    flat ports of ``top``: ``clk``/``rst`` for ``sync``, ``<domain>_clk``/``<domain>_rst``
    for the others (the exported tops' contract)."""
    for domain in domains:
        prefix = "" if domain == "sync" else f"{domain}_"
        cd = ClockDomain(domain, local=True)
        m.domains += cd
        m.d.comb += [
            cd.clk.eq(getattr(top, f"{prefix}clk")),
            cd.rst.eq(getattr(top, f"{prefix}rst")),
        ]
