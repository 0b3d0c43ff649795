"""The driver model's shape: classes a reader can hold in their head, and each list of
IRQ strategies derived from the one enumeration (firmware/config.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from macdma.firmware.driver import IRQ_STRATEGIES, IrqStrategyName
from macdma.sim.run import scenario
from macdma.sim.soak import plan as soak_plan

ROOT = Path(__file__).resolve().parents[2]
#: The longest class firmware/ may hold (docstring and blank lines included).
MAX_CLASS_LINES = 400


def long_classes(source: str, filename: str) -> list[str]:
    """``file: Class (N lines)`` for every class longer than MAX_CLASS_LINES."""
    return [
        f"{filename}: {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source, filename))
        if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES
    ]


def restated_strategies(source: str, filename: str) -> list[str]:
    """Literal tuples, lists and sets of strings that restate the IRQ strategies: all of
    them, or all but one (a list that forgot one)."""
    names = set(IRQ_STRATEGIES)
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Tuple | ast.List | ast.Set) or not node.elts:
            continue
        if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            continue
        values = {e.value for e in node.elts}
        if values <= names and len(values) >= len(names) - 1:
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def _python(*folders: str):
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield str(path.relative_to(ROOT)), path.read_text()


def test_no_class_in_firmware_is_longer_than_a_reader_holds():
    found = [line for name, text in _python("firmware") for line in long_classes(text, name)]
    assert not found, f"classes over {MAX_CLASS_LINES} lines: {found}"


def test_the_irq_strategies_are_listed_once():
    found = [
        line
        for name, text in _python("firmware", "sim", "tests")
        for line in restated_strategies(text, name)
    ]
    assert not found, "IRQ strategies restated instead of derived from IrqStrategyName:\n" + (
        "\n".join(found)
    )


def test_the_lists_of_strategies_derive_from_the_enumeration():
    assert IRQ_STRATEGIES == tuple(name.value for name in IrqStrategyName)
    assert scenario.IRQ_STRATEGIES is IRQ_STRATEGIES
    # The soak cycles through every strategy but dim (soak_plan says why).
    assert set(IRQ_STRATEGIES) - set(soak_plan.IRQ_STRATEGY_NAMES) == {"dim"}
    assert list(soak_plan.IRQ_STRATEGY_NAMES) == [n for n in IRQ_STRATEGIES if n != "dim"]
    by_property = {
        "coalesces": scenario.COALESCING_IRQS,
        "takes_done_irqs": scenario.TX_IRQS,
        "isr_cleans": scenario.CLEANING_ISR_IRQS,
    }
    for prop, derived in by_property.items():
        assert derived == tuple(n.value for n in IrqStrategyName if getattr(n, prop)), prop
    assert "polling" not in scenario.TX_IRQS and "dim" in scenario.COALESCING_IRQS


def test_the_checks_catch_what_they_look_for():
    assert restated_strategies('X = ("per-desc", "eop", "coalesce", "polling", "napi")', "x")
    assert restated_strategies("X = [" + ", ".join(map(repr, IRQ_STRATEGIES)) + "]", "x")
    assert not restated_strategies('X = ("per-desc", "eop")', "x")
    body = "\n".join(f"    x{n} = {n}" for n in range(MAX_CLASS_LINES))
    assert long_classes(f"class Big:\n{body}\n", "x")
    assert not long_classes("class Small:\n    x = 1\n", "x")
