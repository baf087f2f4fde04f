"""The message catalogue (every key in both languages, placeholders equal), language choice, and the
KB translation hashes (issue 10)."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from diagnostics import i18n
from diagnostics.i18n import (catalogue, catalogue_problems, localize_diagnoses, localized_entry, pick_language,
                              placeholders, stale_translations, t, translation_hash)
from diagnostics.i18n import kbtrans
from diagnostics.kb import load_kb, parse_entry

HERE = Path(i18n.__file__).resolve().parent


# ---------------------------------------------------------------------------------------------- catalogue

def test_every_key_in_both_languages():
    en, zh = catalogue("en"), catalogue("zh")
    assert en and zh
    assert set(en) == set(zh), (set(en) ^ set(zh))
    assert catalogue_problems() == []


@pytest.mark.parametrize("key", sorted(json.loads((HERE / "en.json").read_text(encoding="utf-8"))))
def test_placeholders_match(key):
    if key.startswith("_"):
        return
    en = json.loads((HERE / "en.json").read_text(encoding="utf-8"))
    zh = json.loads((HERE / "zh.json").read_text(encoding="utf-8"))
    assert placeholders(en[key]) == placeholders(zh[key]), key
    assert zh[key].strip(), key


def test_catalogue_files_are_valid_utf8_json_objects():
    for lang in i18n.LANGUAGES:
        data = json.loads((HERE / f"{lang}.json").read_text(encoding="utf-8"))
        assert isinstance(data, dict)
        assert all(isinstance(v, str) for v in data.values())


def test_report_strings_are_seeded():
    # strings of diagnostics/report.py and the probe states of the contract
    for k in ("report.no_match", "report.fix", "report.benign_header", "report.not_ruled_out_header",
              "report.checks", "report.diagnosis", "report.title", "report.generation_ok"):
        assert k in catalogue("en")
    for status in ("ok", "warn", "fail", "timeout", "crashed", "skipped"):
        assert f"status.{status}" in catalogue("zh")
        assert f"glyph.{status}" in catalogue("zh")
    for sev in ("critical", "error", "warning", "info"):
        assert f"severity.{sev}" in catalogue("zh")
    from diagnostics import report
    assert set(report.GLYPHS) <= {k.split(".", 1)[1] for k in catalogue("en") if k.startswith("glyph.")}
    assert t("report.no_match", "en") == "No known problem matched."


def test_t_formats_and_falls_back():
    assert t("report.diagnosis", "zh") == "诊断："
    line = t("report.diagnosis_line", "zh", rank=1, glyph="✗", severity=t("severity.error", "zh"),
             title="标题", id="x", confidence=0.9)
    assert "置信度 0.90" in line and line.startswith("1. [✗ 错误]")
    assert t("report.diagnosis", "fr") == "Diagnosis:"          # unknown language -> English
    assert t("report.diagnosis", "zh-CN") == "诊断："
    assert t("no.such.key", "zh") == "no.such.key"              # a gap shows, never crashes
    assert t("report.parsed", "en", name="a.txt", kind="rocminfo", count=3) == "Read a.txt as rocminfo (3 facts)"


def test_placeholders_helper():
    assert placeholders("{a} and {b:.1f} {c[0]} {{literal}}") == {"a", "b", "c"}


# ---------------------------------------------------------------------------------------------- language choice

@pytest.mark.parametrize("header,want", [
    ("zh-CN,zh;q=0.9,en;q=0.8", "zh"),
    ("en-US,en;q=0.9,zh-CN;q=0.8", "en"),
    ("fr-FR,fr;q=0.9,zh-TW;q=0.5", "zh"),
    ("de,fr", "en"),
    ("en;q=0.1, zh-Hans;q=0.9", "zh"),
    ("zh;q=0, en", "en"),
    ("*", "en"),
    ("", "en"),
    ("garbage;;q=x,,", "en"),
])
def test_accept_language(header, want):
    assert pick_language(header, env={}) == want


def test_locale_env_and_explicit_setting():
    assert pick_language(None, env={"LANG": "zh_CN.UTF-8"}) == "zh"
    assert pick_language(None, env={"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}) == "en"
    assert pick_language(None, env={"LC_ALL": "C", "LANGUAGE": "zh_CN:en"}) == "zh"
    assert pick_language(None, env={}) == "en"
    # an explicit choice wins over the browser and the locale
    assert pick_language("zh-CN", env={"LANG": "zh_CN.UTF-8"}, setting="en") == "en"
    assert pick_language("en", env={"GPU_DOCTOR_LANG": "zh"}) == "zh"
    # the browser wins over the server's locale
    assert pick_language("en-US", env={"LANG": "zh_CN.UTF-8"}) == "en"
    assert pick_language(None, env={}, setting="klingon") == "en"


# ---------------------------------------------------------------------------------------------- KB translations

ENTRY = """\
id: demo-entry
title: Demo title
severity: error
when: {log: 'demo'}
symptoms: |
  what you see
cause: |
  why
fix: |
  1. do this
links: [https://example.com/x]
tests:
  - {name: a, logs: demo, expect: fire}
  - {name: b, logs: other, expect: silent}
"""


def test_translation_hash_is_the_documented_formula():
    e = parse_entry(ENTRY, "kb/demo-entry.yaml")
    want = hashlib.sha256(("Demo title" + "\n" + "what you see\n" + "\n" + "why\n" + "\n" + "1. do this\n")
                          .encode()).hexdigest()[:12]
    assert translation_hash(e) == want
    assert translation_hash({"title": "Demo title", "symptoms": "what you see\n", "cause": "why\n",
                             "fix": "1. do this\n"}) == want


def test_stale_missing_and_fresh(tmp_path):
    kbdir = tmp_path / "kb"
    kbdir.mkdir()
    (kbdir / "demo-entry.yaml").write_text(ENTRY, encoding="utf-8")
    kb = load_kb(kbdir)
    assert stale_translations(kb) == [("demo-entry", "zh", "missing translation")]
    h = kbtrans.write_translation(kbdir / "demo-entry.yaml", "zh",
                                  {"title": "演示", "symptoms": "看到的现象\n", "cause": "原因\n", "fix": "1. 这样做\n"})
    kb = load_kb(kbdir)
    assert kb.errors == []
    assert stale_translations(kb) == []
    assert kb.entries[0].translations["zh"]["source_hash"] == h == translation_hash(kb.entries[0])
    # the English changes after translating -> stale
    p = kbdir / "demo-entry.yaml"
    p.write_text(p.read_text(encoding="utf-8").replace("  why\n", "  a better why\n", 1), encoding="utf-8")
    rows = stale_translations(load_kb(kbdir))
    assert len(rows) == 1 and rows[0][:2] == ("demo-entry", "zh") and rows[0][2].startswith("stale translation")
    warn = i18n.translation_warnings(load_kb(kbdir))
    assert len(warn) == 1 and warn[0].endswith(rows[0][2]) and "demo-entry.yaml:1:1: warning: zh: " in warn[0]
    loc = localized_entry(load_kb(kbdir).entries[0], "zh")
    assert loc["title"] == "演示" and loc["stale"] is True and loc["lang"] == "zh"


def test_write_translation_touches_only_the_block(tmp_path):
    src = Path(load_kb().directory) / "hip-out-of-memory.yaml"
    dst = tmp_path / "hip-out-of-memory.yaml"
    shutil.copy(src, dst)
    before = src.read_text(encoding="utf-8")
    head = before.split("\ntranslations:\n")[0]
    kbtrans.write_translation(dst, "xx", {"title": "t", "symptoms": "  leading space\nline\n", "cause": "c: d",
                                          "fix": "1. a\n\n2. b\n"})
    after = dst.read_text(encoding="utf-8")
    assert after.startswith(head)
    e = parse_entry(after, str(dst), expected_id="hip-out-of-memory")
    assert e.translations["xx"]["symptoms"] == "  leading space\nline\n"
    assert e.translations["xx"]["fix"] == "1. a\n\n2. b\n"
    assert e.translations["xx"]["cause"] == "c: d"
    # writing again is idempotent
    kbtrans.write_translation(dst, "xx", {"title": "t", "symptoms": "  leading space\nline\n", "cause": "c: d",
                                          "fix": "1. a\n\n2. b\n"})
    assert dst.read_text(encoding="utf-8") == after


def test_incomplete_translation_is_reported():
    e = {"id": "x", "title": "T", "symptoms": "s", "cause": "c", "fix": "f",
         "translations": {"zh": {"title": "标题", "symptoms": "", "cause": "原因", "fix": "修复", "source_hash": "0"}}}
    rows = stale_translations([e])
    assert rows == [("x", "zh", "translation lacks symptoms")]


def test_localize_diagnoses_falls_back_to_english():
    kb = load_kb()
    e = kb.entries[0]
    d = [{"id": e.id, "title": e.title, "fix": e.fix}, {"id": "not-in-kb", "title": "Other", "fix": "x"}]
    out = localize_diagnoses(d, kb, "zh")
    assert out[1]["title"] == "Other"
    if e.translations.get("zh"):
        assert out[0]["title"] == e.translations["zh"]["title"]
    assert localize_diagnoses(d, kb, "en")[0]["title"] == e.title
    assert d[0]["title"] == e.title   # input untouched
