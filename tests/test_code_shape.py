"""Issue 17's bar on the parsers and the test generation: no function longer than 80 lines (a parser is a scanner
plus small extractors, the generation child a run of stage functions)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 80
FILES = sorted(p for d in ("parsers", "generation") for p in (ROOT / "diagnostics" / d).rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_long_function(path: Path) -> None:
    long = [f"{node.name}: {node.end_lineno - node.lineno + 1} lines (line {node.lineno})"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_LINES]
    assert not long, long
