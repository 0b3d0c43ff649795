"""The package's import graph: hdl/, sim/ and firmware/ import each other without a circle.

Every import is read from the source (top-level and inside functions alike), so a circle
hidden behind an import in a function body fails here as one at the top would. A circle
makes the order modules load in matter and hides which module is the lower floor; the
failure names each circle and the imports that close it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hdl", "sim", "firmware")


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package by dotted name (``macdma.sim.cli``, ``macdma.hdl``)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(["macdma", *parts])] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The first-party modules *name* (at *path*) imports, anywhere in its body.

    ``from package import name`` is an import of the submodule when ``package.name`` is a
    module, else of the package itself (its ``__init__``).
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                for alias in node.names
            ]
        else:
            continue
        yield from (target for target in targets if target.startswith("macdma."))


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the first-party modules it imports."""
    modules = module_files(root)
    return {
        name: {target for target in imported_modules(name, path, modules) if target != name}
        for name, path in modules.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of *graph* with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative depth-first search: the graph is deep enough for Python's recursion.
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe(component: list[str], graph: dict[str, set[str]]) -> str:
    members = set(component)
    edges = [
        f"    {source} -> {target}"
        for source in component
        for target in sorted(graph[source] & members)
    ]
    return f"  circle of {len(component)} modules:\n" + "\n".join(edges)


def test_no_import_circle():
    graph = import_graph()
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(describe(c, graph) for c in found)


def test_every_first_party_import_names_a_module():
    """An import of ``macdma.*`` names a module that exists (function-level imports are
    only run when their function is, so a moved module would otherwise fail late)."""
    modules = module_files()
    missing = sorted(
        f"{name}: {target}"
        for name, path in modules.items()
        for target in imported_modules(name, path, modules)
        if target not in modules
    )
    assert not missing, "imports of missing modules:\n" + "\n".join(missing)


def test_circles_finds_a_planted_circle():
    """The search itself: a three-module circle beside a chain is found, the chain is not."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
