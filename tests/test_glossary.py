"""The zh glossary of docs/TRANSLATING.md holds: no forbidden variant in the message catalogue or in any KB
entry's Chinese translation (issue 18).  The table in the doc is the single source: this test parses it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from diagnostics.i18n import catalogue
from diagnostics.kb import load_kb

ROOT = Path(__file__).resolve().parent.parent


def glossary() -> list[tuple[str, str, list[str]]]:
    """(English, the word to use, forbidden variants) from the "Glossary (zh)" table."""
    text = (ROOT / "docs" / "TRANSLATING.md").read_text(encoding="utf-8")
    section = text.split("## Glossary (zh)", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("English", "---") or set(cells[0]) <= {"-"}:
            continue
        never = [w.strip() for w in cells[2].split("、") if w.strip() and w.strip() != "—"]
        rows.append((cells[0], cells[1], never))
    return rows


def _kb_texts() -> list[tuple[str, str]]:
    out = []
    for e in load_kb().entries:
        tr = (e.translations or {}).get("zh") or {}
        for f in ("title", "symptoms", "cause", "fix"):
            out.append((f"kb/{e.id}.yaml zh.{f}", str(tr.get(f) or "")))
        for v, fields in (tr.get("variants") or {}).items():
            for f, txt in fields.items():
                out.append((f"kb/{e.id}.yaml zh.variants.{v}.{f}", str(txt or "")))
    return out


def test_the_glossary_is_there_and_parsed():
    rows = glossary()
    english = {r[0].split(",")[0] for r in rows}
    assert {"hang", "offload (layers to the CPU or disk)", "fall back", "utilisation", "iGPU", "watch",
            "uninstall"} <= english, english
    forbidden = {w for _, _, never in rows for w in never}
    assert {"挂起", "卸载到", "退回", "利用率", "核显", "监视", "测试生成"} <= forbidden


@pytest.mark.parametrize("english,use,never", glossary())
def test_catalogue_and_kb_keep_to_the_glossary(english, use, never):
    texts = [(f"zh.json {k}", v) for k, v in catalogue("zh").items()] + _kb_texts()
    bad = [f"{where}: {w!r} ({english} -> {use})" for where, txt in texts for w in never if w in txt]
    assert not bad, "\n".join(bad)


def test_uninstall_keeps_its_word():
    # 卸载 stays for uninstall: the fix of torch-cpu-only-wheel tells the reader to remove the wrong build
    fixes = " ".join(t for w, t in _kb_texts() if "torch-cpu-only-wheel" in w)
    assert "卸载" in fixes and not re.search("卸载到", fixes)
