"""Each knob of a scenario declared once: its type, its range or choices, its unit, its
default, its help line and the driver setting it feeds.

A :class:`~macdma.sim.run.scenario.Scenario` field is declared with :func:`knob`, which stores
a :class:`Knob` in the field's metadata. From that one declaration derive:

- the Scenario's validation (:meth:`Knob.check`, called for every field in
  ``Scenario.__post_init__``; a bad value raises ValueError naming the field and the value),
- the ``macdma run`` options (:func:`add_knob_options`: ``--<name-with-dashes>``, parsed
  and checked by the same :meth:`Knob.check`, so the CLI and the Scenario say the same),
- the sweep-file validation (:func:`scenario_from_values`: unknown keys and bad values named),
- the driver configuration (:func:`driver_config`, from :func:`driver_settings`: every knob
  with a ``driver`` target), for ``macdma run`` and ``macdma soak`` alike (a soak segment
  is the knob values it varies, the rest at their defaults: sim/soak/plan.py),
- the dependencies between knobs (``needs``: a knob that only acts when another has one of
  some values; :func:`check_needs` refuses it elsewhere, :func:`unneeded` finds it).

Every number a knob takes is finite and inside a declared range on both sides: NaN, an
infinity or a value no run could finish with is refused here, with the knob's name and its
range, before any simulator starts.

Ranges the hardware sets are read from the register map (:func:`register_range`), never
restated. Adding a knob is one ``knob(...)`` line in the Scenario (and, when the driver
needs it, its DriverConfig field).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from macdma.firmware.driver import DriverConfig, IrqStrategy
from macdma.hdl.regmap import REGISTER_MAP

__all__ = [
    "KNOB_KEY",
    "Knob",
    "KnobConflict",
    "check_needs",
    "add_knob_options",
    "driver_config",
    "driver_settings",
    "knob",
    "knobs_of",
    "register_range",
    "scenario_from_args",
    "scenario_from_values",
    "unneeded",
]

KNOB_KEY = "knob"  # the dataclass field metadata key holding the Knob


def register_range(
    key: str, name: str | None = None, *, skip_zero: bool = False
) -> tuple[int, int]:
    """(low, high) of the values register ``key`` field ``name`` accepts (its ``valid``
    ranges; without them, every value of its width). ``skip_zero`` drops a lone 0 that
    means "off" (RING_SIZE accepts 0 = not configured, which no scenario asks for)."""
    register = REGISTER_MAP.register(key)
    field = register.field(name or register.fields[0].name)
    if field.valid is None:
        return 0, (1 << field.width) - 1
    ranges = [r for r in field.valid if not (skip_zero and list(r) == [0])]
    low = min(r[0] for r in ranges)
    high = max(r[-1] for r in ranges)
    covered = sum(len(r) for r in ranges)
    if covered != high - low + 1:
        raise ValueError(
            f"register {key}.{field.name}: valid values {field.valid_text()} are not one span"
        )
    return low, high


def _number_text(value: float | None) -> str:
    """A bound as typed: ``1000000``, ``0.5`` (never ``1e+06``)."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _alternatives(values: tuple) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


@dataclass(frozen=True)
class Knob:
    """One knob's declaration.

    Members:
        kind:     int, float, str or bool: the type a value must have (a bool is never
                  taken as a number; an int is taken where a float is asked).
        help:     one line for ``--help`` (the range, unit and default are appended).
        unit:     the unit, shown in help and errors ("bytes", "µs"); "" for none.
        low, high: the inclusive range of a number (None = unbounded that side).
        choices:  the allowed values, instead of a range.
        optional: None is also a value (it means "not set": see ``help``).
        why:      what an out-of-range value is told besides the range ("(0 = off)").
        driver:   the DriverConfig field it feeds (``"strategy.budget"`` for a member of
                  the IRQ strategy); None when the driver does not see it.
        to_driver: converts the Scenario value to the driver's (default: as is).
        cli:      False for a field the command line sets another way.
        metavar:  the option's argument name in ``--help``.
        needs:    ``(other knob, its values)``: this knob acts only when the other knob has
                  one of those values; set to anything but its default otherwise, it is
                  refused (:func:`check_needs`) instead of being silently ignored.
    """

    kind: type
    help: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    optional: bool = False
    why: str = ""
    driver: str | None = None
    to_driver: Callable[[Any], Any] | None = None
    cli: bool = True
    metavar: str | None = None
    needs: tuple[str, tuple] | None = None

    def __post_init__(self) -> None:
        # A number without a bound on one side would let 1e23 frames or a 0.001 MHz clock
        # through to the simulator: every numeric knob states its whole range.
        if self.kind in (int, float) and self.choices is None:
            for side, bound in (("low", self.low), ("high", self.high)):
                if bound is None or not math.isfinite(bound):
                    raise ValueError(f"knob {self.help!r}: a number needs a finite {side} bound")

    def limit_text(self) -> str:
        """``60..1514 bytes``, ``>= 2``, ``one of tx, rx, both``."""
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        low, high = _number_text(self.low), _number_text(self.high)
        if self.low is not None and self.high is not None:
            text = f"{low}..{high}"
        elif self.low is not None:
            text = f">= {low}"
        elif self.high is not None:
            text = f"<= {high}"
        else:
            text = "any value"
        return f"{text} {self.unit}" if self.unit else text

    def check(self, name: str, value: Any) -> Any:
        """``value`` if it is one this knob takes, else ValueError naming ``name`` and it."""
        if value is None and self.optional:
            return value
        if self.kind is bool:
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
            return value
        if self.kind is str:
            allowed = self.choices is None or value in self.choices
            if not isinstance(value, str) or not allowed:
                raise ValueError(f"{name} must be {self.limit_text()}{self.why}; got {value!r}")
            return value
        kinds = int if self.kind is int else int | float
        if isinstance(value, bool) or not isinstance(value, kinds):
            kind = "a whole number" if self.kind is int else "a number"
            raise ValueError(f"{name} must be {kind}, got {value!r}")
        if not math.isfinite(value):  # NaN passes every comparison; infinity is no setting
            raise ValueError(f"{name} must be {self.limit_text()}{self.why}; got {value!r}")
        bad = (
            value not in self.choices
            if self.choices is not None
            else (self.low is not None and value < self.low)
            or (self.high is not None and value > self.high)
        )
        if bad:
            raise ValueError(f"{name} must be {self.limit_text()}{self.why}; got {value!r}")
        return value

    def parse(self, text: str) -> Any:
        """A command-line argument as this knob's value (before :meth:`check`)."""
        if self.optional and text.lower() == "none":
            return None
        if self.kind is int:
            try:
                return int(text)
            except ValueError:
                raise ValueError(f"expected a whole number, got {text!r}") from None
        if self.kind is float:
            try:
                return float(text)
            except ValueError:
                raise ValueError(f"expected a number, got {text!r}") from None
        return text


class KnobConflict(ValueError):
    """A knob set to a value it only acts on when another knob has other values.

    Members: ``name``/``value`` (the knob set), ``other``/``actual`` (the knob it needs and
    its value) and ``allowed`` (the values of ``other`` it acts with)."""

    def __init__(self, name: str, value: Any, other: str, actual: Any, allowed: tuple):
        self.name, self.value, self.other, self.actual, self.allowed = (
            name, value, other, actual, allowed,
        )  # fmt: skip
        super().__init__(self.text(name, other))

    def text(self, name: str, other: str) -> str:
        """The message, with the knobs spelled ``name`` and ``other`` (option names on the
        command line, field names in a sweep file)."""
        allowed = _alternatives(self.allowed)
        return (
            f"{name} {self.value} has no effect unless {other} is {allowed} "
            f"({other} is {self.actual}); leave {name} out or change {other}"
        )


def unneeded(cls, values: Mapping[str, Any]) -> list[KnobConflict]:
    """The knobs of ``cls`` given in ``values`` (a Scenario's, or a sweep point's merged
    values: a knob missing from them has its default) at a value other than their default
    while the knob they need does not have one of the values they act with."""
    known = knobs_of(cls)
    found = []
    for name, (declared, default) in known.items():
        if declared.needs is None or name not in values or values[name] == default:
            continue
        other, allowed = declared.needs
        actual = values.get(other, known[other][1])
        if actual not in allowed:
            found.append(KnobConflict(name, values[name], other, actual, allowed))
    return found


def check_needs(instance) -> None:
    """Raise the first :class:`KnobConflict` of a dataclass instance declared with
    :func:`knob` (called from ``Scenario.__post_init__``)."""
    values = {name: getattr(instance, name) for name in knobs_of(type(instance))}
    conflicts = unneeded(type(instance), values)
    if conflicts:
        raise conflicts[0]


def knob(default: Any, kind: type, help: str, **declaration) -> Any:
    """A Scenario field declared by its :class:`Knob` (``kind``, ``help`` and the keyword
    arguments of :class:`Knob`), with ``default``."""
    return dataclasses.field(
        default=default, metadata={KNOB_KEY: Knob(kind=kind, help=help, **declaration)}
    )


def knobs_of(cls) -> dict[str, tuple[Knob, Any]]:
    """{field name: (Knob, default)} of a dataclass declared with :func:`knob`, in order."""
    return {
        f.name: (f.metadata[KNOB_KEY], f.default)
        for f in dataclasses.fields(cls)
        if KNOB_KEY in f.metadata
    }


def option_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def _argument_type(name: str, declared: Knob) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return declared.check(name, declared.parse(text))
        except ValueError as error:
            # argparse names the option; the message keeps the rule and the value.
            message = str(error)
            message = message[len(name) + 1 :] if message.startswith(name + " ") else message
            raise argparse.ArgumentTypeError(message) from None

    parse.__name__ = name  # argparse's "invalid <name> value" fallback
    return parse


def _help_text(declared: Knob, default: Any) -> str:
    parts = [declared.help]
    if declared.choices is None and declared.kind in (int, float):
        parts.append(f"{declared.limit_text()}{declared.why}")
    shown = default
    if default is None:
        shown = "unset"
    elif isinstance(default, float):
        shown = f"{default:g}"
    if declared.kind is not bool:
        parts.append(f"default {shown}")
    return "; ".join(parts)


def add_knob_options(parser: argparse.ArgumentParser, cls) -> None:
    """One ``--option`` per command-line knob of ``cls``, from its declaration."""
    for name, (declared, default) in knobs_of(cls).items():
        if not declared.cli:
            continue
        if declared.kind is bool:
            parser.add_argument(option_name(name), action="store_true", default=default,
                                help=_help_text(declared, default))  # fmt: skip
            continue
        metavar = declared.metavar
        if metavar is None and declared.choices is not None:
            metavar = "{" + ",".join(map(str, declared.choices)) + "}"
        elif metavar is None:  # the unit says what to type: BYTES, US, BEATS; else N
            words = declared.unit.replace("µ", "u").split()
            metavar = words[-1].upper() if words else "N" if declared.kind is int else "X"
        parser.add_argument(
            option_name(name),
            dest=name,
            type=_argument_type(name, declared),
            default=default,
            metavar=metavar,
            help=_help_text(declared, default),
        )


def scenario_from_args(cls, args: argparse.Namespace):
    """The ``cls`` instance of parsed options (every command-line knob; the rest default).
    A value argparse converted to a Path is passed as its text. A :class:`KnobConflict`
    names both knobs as options (``--frags 5 has no effect unless --direction is ...``)."""
    values = {}
    for name, (declared, _) in knobs_of(cls).items():
        if declared.cli and hasattr(args, name):
            value = getattr(args, name)
            values[name] = str(value) if value is not None and declared.kind is str else value
    try:
        return cls(**values)
    except KnobConflict as conflict:
        message = conflict.text(option_name(conflict.name), option_name(conflict.other))
        raise ValueError(message) from None


def scenario_from_values(cls, values: Mapping[str, Any], where: str = "scenario"):
    """``cls(**values)`` for a sweep file's merged values: an unknown key is named with the
    known ones (instead of a TypeError), a bad value by the field's own check."""
    known = knobs_of(cls)
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(
            f"{where}: unknown scenario field(s) {', '.join(unknown)} "
            f"(the fields are: {', '.join(known)})"
        )
    return cls(**values)


def driver_settings(scenario) -> tuple[dict[str, Any], dict[str, Any]]:
    """(DriverConfig keyword arguments, IrqStrategy keyword arguments) of ``scenario``:
    every knob with a ``driver`` target, converted by its ``to_driver``. An optional knob
    left at None ("not set") is left out, so the DriverConfig default or the CPU file's
    setting stands."""
    config: dict[str, Any] = {}
    strategy: dict[str, Any] = {}
    for name, (declared, _) in knobs_of(type(scenario)).items():
        if declared.driver is None:
            continue
        value = getattr(scenario, name)
        if value is None and declared.optional:
            continue
        if declared.to_driver is not None:
            value = declared.to_driver(value)
        target, _, member = declared.driver.partition(".")
        if member:
            if target != "strategy":
                raise ValueError(f"knob {name}: unknown driver target {declared.driver!r}")
            strategy[member] = value
        else:
            config[target] = value
    return config, strategy


def driver_config(
    instance, cpu_driver: Mapping[str, Any] | None = None, *, mii: bool = False
) -> DriverConfig:
    """The DriverConfig of ``instance`` (a dataclass declared with :func:`knob`, a
    Scenario): its knobs' :func:`driver_settings` over the CPU file's driver settings
    ``cpu_driver``; ``mii`` is the link mode's (10/100 Mb/s). The one way from knob values
    to the driver's configuration: ``macdma run``'s bench and the soak's segments both
    come through here, so a knob declared once reaches both."""
    settings, strategy = driver_settings(instance)
    merged = {**(cpu_driver or {}), **settings}
    return DriverConfig(**merged, strategy=IrqStrategy(**strategy), mii=mii)
