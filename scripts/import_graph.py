"""Count the imports that run back up a layer and the module import cycles.

    .venv/bin/python scripts/import_graph.py          # the figures
    .venv/bin/python scripts/import_graph.py -v       # and each import / cycle

The layers are those of the import-linter layers contract in pyproject.toml
(clients above the daemon, the daemon above orchestration, and so on down to core),
read with grimp, the graph import-linter checks; siblings on one line (``a | b``)
are not counted against each other. Without that contract (a checkout from before
it), the order issue 29 names. An import counts wherever it sits: at module level,
in a function, or under ``TYPE_CHECKING``. Packages in no layer (settings, errors,
...) are left out. For another checkout: ``PYTHONPATH=<checkout>/src`` and
``--pyproject <checkout>/pyproject.toml``.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


# Issue 29's order, for a checkout without the layers contract.
ISSUE_LAYERS = [
    "agentdeck.cli | agentdeck.tui | agentdeck.bridges | agentdeck.serve",
    "agentdeck.web",
    "agentdeck.daemon",
    "agentdeck.orchestration | agentdeck.notify",
    "agentdeck.runner | agentdeck.hooks",
    "agentdeck.governance | agentdeck.memory",
    "agentdeck.store | agentdeck.worktrees | agentdeck.sandbox | agentdeck.mockmodel",
    "agentdeck.core",
]


def read_layers(pyproject: Path) -> list[list[str]]:
    """The layers contract of ``pyproject``, top to bottom: the packages of each
    layer (``a | b``: independent siblings) without the ``agentdeck.`` prefix."""
    config = tomllib.loads(pyproject.read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    found = [c["layers"] for c in contracts if c["type"] == "layers"]
    lines = found[0] if found else ISSUE_LAYERS
    return [[name.strip().split(".", 1)[1] for name in line.split("|")] for line in lines]


LAYERS: list[list[str]] = []


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None
    for index, names in enumerate(LAYERS):
        if parts[1] in names:
            return index
    return None


def back_up(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    found = []
    for importer in sorted(graph.modules):
        low = layer_of(importer)
        if low is None:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            high = layer_of(imported)
            if high is not None and high < low:
                found.append((importer, imported))
    return found


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(m for m in graph.modules if m.startswith("agentdeck"))
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            nexts = edges.get(node, [])
            if i < len(nexts):
                work.append((node, i + 1))
                child = nexts[i]
                if child not in edges:
                    continue
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def main(argv: list[str]) -> int:
    pyproject = ROOT / "pyproject.toml"
    if "--pyproject" in argv:
        pyproject = Path(argv[argv.index("--pyproject") + 1])
    LAYERS[:] = read_layers(pyproject)
    graph = grimp.build_graph("agentdeck", cache_dir=None)
    arrows = back_up(graph)
    circles = cycles(graph)
    sys.stdout.write(f"imports running back up a layer: {len(arrows)}\n")
    sys.stdout.write(f"module import cycles: {len(circles)}\n")
    if "-v" in argv:
        for importer, imported in arrows:
            sys.stdout.write(f"  up: {importer} -> {imported}\n")
        for circle in circles:
            sys.stdout.write(f"  cycle: {' '.join(circle)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
