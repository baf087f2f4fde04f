"""Render-time translation of the sentences the probes store in English (issue 18).

Probes, the probe runner and the test generation store plain English (``summary``, ``error``, evidence
``excerpt``, ``notes``) so that saved sessions stay language-neutral and old sessions still render.  Each such
sentence has a template in the catalogue under ``probe_text.<name>`` (``"{n} GPU(s): {targets}"``); at render
time :func:`localize_text` recognises the English sentence by its template, takes the values out of it, and
fills the same key of the target language.  A sentence no template recognises is shown as it is (a gap shows,
nothing is lost).  Values that are themselves sentences (``"hung during '{stage}'"``) are looked up too.

:func:`localize_report` applies this to a whole report (probe titles from ``probe.<id>``, summaries, errors,
evidence, notes, the generation summary) and returns a copy; the stored report is never changed.
"""
from __future__ import annotations

import copy
import re
import string
from functools import lru_cache
from typing import Any

from . import DEFAULT_LANGUAGE, catalogue, normalize_language

PREFIX = "probe_text."
SOURCE_PREFIX = "evidence_source."


@lru_cache(maxsize=None)
def _templates() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(key, compiled regex of its English template), most literal text first (the most specific wins)."""
    out = []
    for key, en in catalogue(DEFAULT_LANGUAGE).items():
        if not key.startswith(PREFIX):
            continue
        parts, literal, seen = [], 0, set()
        for lit, field, _spec, _conv in string.Formatter().parse(en):
            parts.append(re.escape(lit))
            literal += len(lit)
            if field is not None:
                name = field.split(".")[0].split("[")[0]
                parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
                seen.add(name)
        out.append((literal, key, re.compile("^" + "".join(parts) + "$", re.S)))
    out.sort(key=lambda x: -x[0])
    return tuple((k, rx) for _, k, rx in out)


def _one(text: str, lang: str, depth: int) -> str | None:
    for key, rx in _templates():
        m = rx.match(text)
        if m is None:
            continue
        target = catalogue(lang).get(key)
        if not target:
            return None
        vals = {k: _nested(v, lang, depth + 1) if depth < 2 else v for k, v in m.groupdict().items()}
        try:
            return target.format(**vals)
        except (KeyError, IndexError, ValueError):
            return None
    return None


def _nested(text: str, lang: str, depth: int) -> str:
    done = _one(text, lang, depth)
    if done is not None:
        return done
    if "; " in text:  # "rocminfo failed; rocm-smi reported an error", "busy ...; VRAM ...; no throttling"
        parts = text.split("; ")
        loc = [_one(p, lang, depth) for p in parts]
        if any(x is not None for x in loc):
            return "；".join(x if x is not None else p for x, p in zip(loc, parts))
    return text


def localize_text(text: Any, lang: str | None) -> Any:
    """*text* (an English sentence a probe stored) in *lang*; unchanged when no template recognises it."""
    lang = normalize_language(lang) or DEFAULT_LANGUAGE
    if lang == DEFAULT_LANGUAGE or not isinstance(text, str) or not text.strip():
        return text
    return _nested(text, lang, 0)


def source_label(source: Any, lang: str | None) -> Any:
    """An evidence source label ("description", "environment", "groups") in *lang*; paths and tool names stay."""
    lang = normalize_language(lang) or DEFAULT_LANGUAGE
    if lang == DEFAULT_LANGUAGE or not isinstance(source, str):
        return source
    key = SOURCE_PREFIX + source.replace(" ", "_")
    return catalogue(lang).get(key, source)


def probe_title(probe: dict[str, Any], lang: str | None) -> str:
    lang = normalize_language(lang) or DEFAULT_LANGUAGE
    pid = str(probe.get("id") or "")
    title = probe.get("title") or pid
    if lang == DEFAULT_LANGUAGE:
        return title
    return catalogue(lang).get(f"probe.{pid}", localize_text(title, lang))


def localize_evidence(evidence: list[Any], lang: str | None) -> list[Any]:
    out = []
    for e in evidence or []:
        if isinstance(e, dict):
            e = dict(e, excerpt=localize_text(e.get("excerpt", ""), lang), source=source_label(e.get("source", ""), lang))
        out.append(e)
    return out


def localize_report(report: dict[str, Any], lang: str | None) -> dict[str, Any]:
    """A copy of *report* whose probe-authored English sentences are in *lang* (diagnoses' KB text is the
    business of :func:`diagnostics.i18n.localize_diagnoses`)."""
    lang = normalize_language(lang) or DEFAULT_LANGUAGE
    if lang == DEFAULT_LANGUAGE:
        return report
    rep = dict(report)
    probes = []
    for p in report.get("probes") or []:
        if isinstance(p, dict):
            p = dict(p, title=probe_title(p, lang), summary=localize_text(p.get("summary"), lang),
                     error=localize_text(p.get("error"), lang), evidence=localize_evidence(p.get("evidence"), lang),
                     notes=[localize_text(n, lang) for n in p.get("notes") or []])
        probes.append(p)
    if "probes" in report:
        rep["probes"] = probes
    for key in ("diagnoses", "not_ruled_out", "possible"):
        if isinstance(report.get(key), list):
            rep[key] = [dict(d, evidence=localize_evidence(d.get("evidence"), lang)) if isinstance(d, dict)
                        and isinstance(d.get("evidence"), list) else d for d in report[key]]
    if isinstance(report.get("notes"), list):
        rep["notes"] = [localize_text(n, lang) for n in report["notes"]]
    gen = report.get("generation")
    if isinstance(gen, dict):
        gen = copy.copy(gen)
        for k in ("summary", "error"):
            gen[k] = localize_text(gen.get(k), lang)
        if isinstance(gen.get("warnings"), list):
            gen["warnings"] = [localize_text(w, lang) for w in gen["warnings"]]
        if isinstance(gen.get("monitor"), dict):
            gen["monitor"] = dict(gen["monitor"], summary=localize_text(gen["monitor"].get("summary"), lang))
        rep["generation"] = gen
    return rep


__all__ = ["localize_evidence", "localize_report", "localize_text", "probe_title", "source_label"]
