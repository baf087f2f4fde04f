"""Write and check the ``translations:`` block of KB entries without touching the rest of the file.

    python -m diagnostics.i18n.kbtrans status [--lang zh]          # missing / stale translations
    python -m diagnostics.i18n.kbtrans export ID... [--lang zh]    # English text + current translation, as YAML
    python -m diagnostics.i18n.kbtrans apply FILE [--lang zh]      # FILE: {id: {title, symptoms, cause, fix}}

``apply`` stamps each translation with ``source_hash`` (the hash of today's English text) and rewrites only
the entry's top-level ``translations:`` block (appended at the end when the entry has none yet); comments and
layout of every other key stay byte for byte.  The result is re-parsed and checked before it is written.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from . import ENTRY_FIELDS, TRANSLATED_LANGUAGES, stale_translations, translation_hash
from .. import kb as kbmod

_TOP_KEY = re.compile(r"^[A-Za-z_][\w-]*\s*:")


def _scalar(key: str, value: str, indent: int) -> str:
    """One YAML mapping entry ``key: value`` that reads back exactly as *value*: a literal block for
    multi-line text, a double-quoted scalar otherwise (or whenever the block would not round-trip)."""
    pad = " " * indent
    if "\n" in value.rstrip("\n"):
        if value.endswith("\n\n"):
            chomp = "+"
        elif value.endswith("\n"):
            chomp = ""
        else:
            chomp = "-"
        lines = (value[:-1] if value.endswith("\n") else value).split("\n")
        indicator = "2" if lines[0][:1] in (" ", "\t") else ""
        block = f"{pad}{key}: |{indicator}{chomp}\n" + "".join(f"{pad}  {ln}\n" if ln else "\n" for ln in lines)
        try:
            if yaml.safe_load(block) == {key: value} or yaml.safe_load("x:\n" + block)["x"] == {key: value}:
                return block
        except (yaml.YAMLError, TypeError, KeyError):
            pass
    return f"{pad}{key}: {json.dumps(value, ensure_ascii=False)}\n"


def render_block(translations: dict[str, dict[str, str]]) -> str:
    out = ["translations:\n"]
    for lang in sorted(translations):
        out.append(f"  {lang}:\n")
        tr = translations[lang]
        for k in (*ENTRY_FIELDS, "source_hash"):
            if k in tr:
                out.append(_scalar(k, tr[k], 4))
        if tr.get("variants"):  # translated vendor variants (kb `variants:`)
            out.append("    variants:\n")
            for vendor in sorted(tr["variants"]):
                out.append(f"      {vendor}:\n")
                for k in ENTRY_FIELDS:
                    if k in tr["variants"][vendor]:
                        out.append(_scalar(k, tr["variants"][vendor][k], 8))
    return "".join(out)


def replace_block(text: str, block: str) -> str:
    """*text* with its top-level ``translations:`` block replaced by *block* (or *block* appended)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.startswith("translations:")), None)
    if start is None:
        if text and not text.endswith("\n"):
            text += "\n"
        return text + block
    end = start + 1
    while end < len(lines) and not _TOP_KEY.match(lines[end]):
        end += 1
    # keep trailing comment/blank lines that introduce the next key with that key
    while end > start + 1 and (lines[end - 1].strip() == "" or lines[end - 1].startswith("#")) and end < len(lines):
        end -= 1
    return "".join(lines[:start]) + block + "".join(lines[end:])


def write_translation(path: str | Path, lang: str, fields: dict[str, str]) -> str:
    """Set ``translations.<lang>`` of the entry in *path* to *fields* (title, symptoms, cause, fix), stamped
    with the hash of the entry's current English text.  Returns the hash."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    entry = kbmod.parse_entry(text, str(p), expected_id=p.stem)
    missing = [f for f in ENTRY_FIELDS if not str(fields.get(f) or "").strip()]
    if missing:
        raise ValueError(f"{p.stem}: translation lacks {', '.join(missing)}")
    trs = {k: dict(v) for k, v in entry.translations.items()}
    h = translation_hash(entry)
    trs[lang] = {f: fields[f] for f in ENTRY_FIELDS} | {"source_hash": h}
    if fields.get("variants"):
        trs[lang]["variants"] = {v: dict(x) for v, x in fields["variants"].items()}
    new = replace_block(text, render_block(trs))
    again = kbmod.parse_entry(new, str(p), expected_id=p.stem)
    for f in ("title", "symptoms", "cause", "fix", "links"):
        if getattr(again, f) != getattr(entry, f):
            raise RuntimeError(f"{p}: rewriting the translations block changed {f}")
    if again.translations.get(lang, {}).get("fix") != fields["fix"]:
        raise RuntimeError(f"{p}: the translation did not read back as written")
    p.write_text(new, encoding="utf-8")
    return h


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m diagnostics.i18n.kbtrans")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("status")
    s.add_argument("--lang", action="append")
    e = sub.add_parser("export")
    e.add_argument("ids", nargs="*")
    e.add_argument("--lang", default="zh")
    a = sub.add_parser("apply")
    a.add_argument("file")
    a.add_argument("--lang", default="zh")
    for x in (s, e, a):
        x.add_argument("--kb", default=None)
    args = ap.parse_args(argv)
    kb = kbmod.load_kb(args.kb)
    if args.cmd == "status":
        rows = stale_translations(kb, args.lang or TRANSLATED_LANGUAGES)
        for eid, lang, reason in rows:
            print(f"{eid}\t{lang}\t{reason}")
        print(f"{len(rows)} problem(s) in {len(kb.entries)} entries", file=sys.stderr)
        return 1 if rows else 0
    if args.cmd == "export":
        out = {}
        for en in kb.entries:
            if args.ids and en.id not in args.ids:
                continue
            out[en.id] = {"en": {f: getattr(en, f) for f in ENTRY_FIELDS}
                          | ({"variants": {v: {f: x[f] for f in ENTRY_FIELDS if f in x} for v, x in en.variants.items()}}
                             if en.variants else {}),
                          args.lang: en.translations.get(args.lang, {})}
        yaml.safe_dump(out, sys.stdout, allow_unicode=True, sort_keys=False, width=120)
        return 0
    data = yaml.safe_load(Path(args.file).read_text(encoding="utf-8")) or {}
    by_id = kb.by_id()
    bad = 0
    for eid, fields in data.items():
        if eid not in by_id:
            print(f"{eid}: no such entry", file=sys.stderr)
            bad += 1
            continue
        h = write_translation(Path(kb.directory) / f"{eid}.yaml", args.lang, fields)
        print(f"{eid}: {args.lang} written (source_hash {h})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
