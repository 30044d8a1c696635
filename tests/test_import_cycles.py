"""The package has no import circle (issue 26): each name has one home, and no module imports a
module that imports it back at import time. Static: the module-level imports of every file."""

from __future__ import annotations

import ast
from pathlib import Path

import trainium_lab

ROOT = Path(trainium_lab.__file__).parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    names = {_module_name(p) for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        me = _module_name(path)
        edges = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("trainium_lab"):
                edges.add(node.module)
                edges |= {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name.startswith("trainium_lab")}
        # a package importing its own submodules is how packages are built, not a circle
        graph[me] = {e for e in edges if e in names and e != me and not e.startswith(me + ".")
                     and e != "trainium_lab"}
    return graph


def test_no_import_cycle_in_the_package():
    graph = _graph()
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, stack: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle.extend(stack[stack.index(nxt):] + [node, nxt] if nxt in stack else [node, nxt])
                return True
            if state.get(nxt) is None and visit(nxt, stack + [node]):
                return True
        state[node] = 2
        return False

    for n in sorted(graph):
        if state.get(n) is None and visit(n, []):
            break
    assert not cycle, " -> ".join(cycle)


def test_claim_checks_have_one_home():
    from trainium_lab import claim_checks, cores

    for name in ("check_claim", "check_figure", "check_text", "claims", "claim", "claims_table",
                 "ClaimCheck", "Claim", "VERDICTS"):
        assert hasattr(claim_checks, name) and not hasattr(cores, name), name
