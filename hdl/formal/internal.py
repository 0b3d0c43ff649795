"""Look up a component's internal registers for linking invariants.

k-induction starts from any state in which the assertions held for k cycles, including
states where a checker's record (say, "an AW is held at address A") disagrees with what the
component holds internally; such unreachable states make induction fail. A proof closes them
by asserting that the checker agrees with the component's own register (which is itself
proven). The HDL stays untouched: the register is found by name in the elaborated fragment.
"""

from amaranth.hdl import Fragment, Signal

__all__ = ["elaborated", "internal_signal", "in_state", "mover_fragment", "subfragment"]


def elaborated(component):
    """The component elaborated once, to be added as a submodule and searched."""
    return Fragment.get(component, None)


def _signals(fragment, domain=None):
    for statement_domain, statements in fragment.statements.items():
        if domain is not None and statement_domain != domain:
            continue
        for statement in statements:
            yield from statement._lhs_signals()


def internal_signal(
    fragment, name: str, within: str | None = None, domain: str | None = None
) -> Signal:
    """The one signal called ``name`` driven by ``fragment`` itself (not its submodules),
    or by its submodule named ``within`` (a dotted path such as ``"words.unbuffered"``
    reaches a submodule of a submodule); ``domain`` keeps only signals driven in that
    domain (``"comb"`` or a clock domain's name), for a name used twice. Raises
    ``LookupError`` naming ``name`` if there is none or more than one, so a renamed
    register breaks the proof loudly instead of silently weakening it."""
    if within is not None:
        fragment = subfragment(fragment, within)
    found = {
        id(s): s for s in _signals(fragment, domain) if isinstance(s, Signal) and s.name == name
    }
    if len(found) != 1:
        raise LookupError(
            f"Expected one internal signal named {name!r} in the component, found {len(found)}"
        )
    return next(iter(found.values()))


def subfragment(fragment, path: str):
    """The submodule of ``fragment`` at the dotted ``path`` (``"core.writer"``). Raises
    ``LookupError`` naming the step that has not exactly one such submodule."""
    for step in path.split("."):
        subs = [sub for sub, sub_name, _ in fragment.subfragments if sub_name == step]
        if len(subs) != 1:
            raise LookupError(f"Expected one submodule named {step!r}, found {len(subs)}")
        fragment = subs[0]
    return fragment


def mover_fragment(fragment, path: str, marker: str):
    """The fragment at ``path`` (as for :func:`subfragment`) that drives the register
    ``marker`` itself, or, if a wrapper sits there (a test's mutant wraps a mover to change
    what it sees or serves), the one inside it: the wrapper's only submodule, followed down
    until one drives ``marker``. Raises ``LookupError`` if none does, so a renamed register
    still breaks the proof."""
    found = subfragment(fragment, path)
    while True:
        try:
            internal_signal(found, marker)
            return found
        except LookupError:
            if len(found.subfragments) != 1:
                raise LookupError(f"No register {marker!r} at {path!r} or inside it") from None
            found = found.subfragments[0][0]


def in_state(fsm_state: Signal, name: str):
    """High while the FSM whose state register is ``fsm_state`` (an FSM's ``<name>_state``,
    found with :func:`internal_signal`) is in state ``name``. Raises ``LookupError`` naming
    the states if it has none called ``name``."""
    states = {}
    for value in range(2 ** len(fsm_state)):
        try:
            label = fsm_state.decoder(value)
        except KeyError:
            continue
        states[label.rsplit("/", 1)[0]] = value
    if name not in states:
        raise LookupError(f"No FSM state {name!r}; the states are {sorted(states)}")
    return fsm_state == states[name]
