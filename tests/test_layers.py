"""The layers of docs/ARCHITECTURE.md, declared once and held over the real import graph (issue 17).

Every import counts: module level, inside functions, ``importlib.import_module("...")`` with a literal name.
A module may import its own layer and the layers below it, never one above; no two modules import each other,
directly or around a loop; the web UI reaches the domain only through the service layer and the i18n catalogue.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# bottom first; a module belongs to the first layer with a prefix that names it (longest prefix wins)
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("diagnostics", "diagnostics.facts", "diagnostics.paths", "diagnostics.textnorm",
              "diagnostics.termsafe", "diagnostics.smi_values", "diagnostics.gfx", "diagnostics.redact", "diagnostics.runner", "diagnostics.parsers",
              "diagnostics.generation.child", "diagnostics.probes.torch_child", "diagnostics.probes.gpuprocs",
              "diagnostics.monitor.parse", "diagnostics.monitor.summary", "diagnostics.store.models")),
    ("knowledge", ("diagnostics.kb", "diagnostics.support", "diagnostics.derive", "diagnostics.verdicts",
                   "diagnostics.kb_lint", "diagnostics.i18n", "diagnostics.store.summary",
                   "diagnostics.store.base")),
    ("engines", ("diagnostics.matcher", "diagnostics.symptoms", "diagnostics.differential", "diagnostics.probes", "diagnostics.probing",
                 "diagnostics.monitor", "diagnostics.generation", "diagnostics.store", "diagnostics.store.migrations", "diagnostics.issue_body",
                 "diagnostics.report")),
    ("service", ("diagnostics.service", "diagnostics.sessions", "diagnostics.contrib", "diagnostics.jobs",
                 "diagnostics.access")),
    ("front", ("diagnostics.cli", "diagnostics.cli_sessions", "diagnostics.cli_generate", "diagnostics.run_cli",
               "diagnostics.__main__", "diagnostics.scenarios", "ui", "app")),
]
# what the web UI may import from diagnostics/: the service layer and the catalogue
UI_MAY_USE = ("diagnostics.service", "diagnostics.sessions", "diagnostics.contrib", "diagnostics.jobs",
              "diagnostics.access", "diagnostics.i18n")


def _modules() -> dict[str, Path]:
    mods = {}
    files = [*(ROOT / "diagnostics").rglob("*.py"), *(ROOT / "ui").rglob("*.py"), ROOT / "app.py"]
    for f in files:
        parts = list(f.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    return mods


MODS = _modules()


def _targets(mod: str, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MODS]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = mod.split(".")
            if MODS[mod].name != "__init__.py":
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
        out = []
        for a in node.names:
            sub = f"{name}.{a.name}"
            out.append(sub if sub in MODS else name)   # `from . import sources` is an edge to the submodule only
        return [o for o in out if o in MODS]
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
        if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in MODS:
            return [node.args[0].value]
    return []


def _graph() -> dict[str, set[str]]:
    g = {}
    for mod, f in MODS.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            deps.update(_targets(mod, node))
        deps.discard(mod)
        g[mod] = deps
    return g


GRAPH = _graph()


def layer_of(mod: str) -> int:
    best, rank = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    return rank


def test_every_module_has_a_layer():
    assert [m for m in MODS if layer_of(m) < 0] == []


def test_the_parser_sees_every_kind_of_import():
    """The walker itself: a function-level import and an importlib call are edges (a checker blind to them
    could not fail)."""
    src = "def f():\n    from diagnostics.service import x\n    importlib.import_module('diagnostics.kb')\n"
    got = set()
    for node in ast.walk(ast.parse(src)):
        got.update(_targets("diagnostics.report", node))
    assert got == {"diagnostics.service", "diagnostics.kb"}


def test_imports_point_down():
    bad = []
    for mod, deps in GRAPH.items():
        for d in deps:
            if layer_of(d) > layer_of(mod):
                bad.append(f"{mod} ({LAYERS[layer_of(mod)][0]}) imports {d} ({LAYERS[layer_of(d)][0]})")
    assert bad == [], "\n".join(sorted(bad))


def test_no_import_cycles():
    # Tarjan's strongly connected components; a component of more than one module is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == []


def test_the_ui_talks_to_the_domain_through_the_service():
    bad = []
    for mod, deps in GRAPH.items():
        if mod != "app" and not mod.startswith("ui"):
            continue
        for d in deps:
            if d.startswith("diagnostics") and not any(d == p or d.startswith(p + ".") for p in UI_MAY_USE):
                bad.append(f"{mod} imports {d}")
    assert bad == [], "\n".join(sorted(bad))


@pytest.mark.parametrize("mod", sorted(m for m in MODS if m.startswith("diagnostics")))
def test_no_fallback_for_a_module_that_is_always_there(mod):
    """``except ImportError`` around an import of this repository's own modules is dead code."""
    tree = ast.parse(MODS[mod].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            own = [t for n in node.body for sub in ast.walk(n) for t in _targets(mod, sub)]
            assert own == [], f"{mod}:{node.lineno}: ImportError fallback around {own}"
