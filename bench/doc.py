"""Shared by the benchmarks: each one owns one '## ' section of docs/BENCHMARKS.md and rewrites only that."""
from __future__ import annotations

from pathlib import Path


def replace_section(path: Path | str, heading: str, block: str) -> None:
    """Put *block* (which starts with *heading*, e.g. '## Matcher') in place of that section, or append it."""
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    block = block.rstrip("\n") + "\n"
    start = text.find(heading + "\n")
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + block
    else:
        nxt = text.find("\n## ", start + len(heading))
        text = text[:start] + block + (text[nxt:] if nxt != -1 else "")
    path.write_text(text, encoding="utf-8")
