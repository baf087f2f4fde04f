"""Every KB entry carries an up-to-date Simplified Chinese translation that keeps the verbatim parts verbatim."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from diagnostics.i18n import ENTRY_FIELDS, stale_translations, translation_hash
from diagnostics.kb import load_kb

KB = load_kb()
REQUIRED_IDS = [e.id for e in KB.entries]
_REQ_TEXT = (Path(__file__).parent / "data" / "kb-required-ids.md").read_text()
# the ids the product promises (shared/kb-required-ids.md): these must always be translated and current;
# an entry a contributor adds may land with only the lint warning until a maintainer translates it
PROMISED = {i for i in re.findall(r"^\| ([a-z0-9-]+) \|", _REQ_TEXT, re.M) if i != "id"}
_CJK = re.compile(r"[\u4e00-\u9fff]")
_CODE = re.compile(r"`([^`\n]+)`")


def test_kb_loads_with_translations():
    assert KB.errors == []


def test_no_missing_or_stale_translation():
    rows = [r for r in stale_translations(KB) if r[0] in PROMISED]
    assert rows == [], "\n".join(f"{i} {lang}: {r}" for i, lang, r in rows)


@pytest.mark.parametrize("eid", REQUIRED_IDS)
def test_translation_is_chinese_and_keeps_code_verbatim(eid):
    e = KB.by_id()[eid]
    tr = e.translations.get("zh")
    if not tr:
        pytest.fail(f"{eid}: no zh translation")
    assert tr["source_hash"] == translation_hash(e)
    for f in ENTRY_FIELDS:
        assert _CJK.search(tr[f]), f"{eid}.{f}: no Chinese text"
    # inline code (commands, env vars, paths, error strings) of the English fix survives verbatim
    en_code = set(_CODE.findall(e.fix))
    zh_code = set(_CODE.findall(tr["fix"]))
    lost = en_code - zh_code
    assert len(lost) <= max(1, len(en_code) // 5), f"{eid}: fix lost inline code {sorted(lost)[:5]}"
    # numbered steps keep their count
    steps = lambda s: len(re.findall(r"(?m)^\s*\d+\.\s", s))
    assert steps(tr["fix"]) == steps(e.fix), f"{eid}: fix has {steps(tr['fix'])} steps, English {steps(e.fix)}"
