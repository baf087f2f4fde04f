"""Languages: the message catalogue for user-facing strings and the translations of KB entries.

Two halves, both plain data:

* ``en.json`` / ``zh.json`` hold every user-facing string of the reports, keyed by a stable dotted name.
  ``t(key, lang, **kwargs)`` looks a key up (falling back to English, then to the key itself) and fills
  ``str.format`` placeholders.  ``pick_language`` chooses the language: an explicit setting first, then the
  browser's ``Accept-Language``, then the locale environment (``LC_ALL``, ``LC_MESSAGES``, ``LANG``,
  ``LANGUAGE``).
* KB entries carry ``translations.<lang>.{title,symptoms,cause,fix,source_hash}``.  ``source_hash`` is
  :func:`translation_hash` of the English text the translation was made from, so
  :func:`stale_translations` can tell when the English changed after translating.
"""
from __future__ import annotations

import hashlib
import json
import os
import string
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

HERE = Path(__file__).resolve().parent
LANGUAGES = ("en", "zh")          # every catalogue language; English is the source language
DEFAULT_LANGUAGE = "en"
TRANSLATED_LANGUAGES = ("zh",)    # languages every KB entry should carry a translation for
ENTRY_FIELDS = ("title", "symptoms", "cause", "fix")
LANGUAGE_NAMES = {"en": "English", "zh": "简体中文"}
SETTING_ENV = "GPU_DOCTOR_LANG"   # explicit choice for the CLI (the UI keeps its own setting)


# --------------------------------------------------------------------------------------------------
# message catalogue


@lru_cache(maxsize=None)
def catalogue(lang: str) -> dict[str, str]:
    """The messages of one language (``{}`` for a language without a catalogue file)."""
    p = HERE / f"{lang}.json"
    if not p.is_file():
        return {}
    data = json.loads(p.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def normalize_language(tag: str | None) -> str | None:
    """Map a language tag or locale name to a catalogue language: ``zh-CN``, ``zh_TW.UTF-8``,
    ``zh-Hans`` -> ``zh``; ``en_US`` -> ``en``; anything else -> ``None``."""
    if not tag:
        return None
    t = tag.strip().split(".")[0].split("@")[0].replace("_", "-").lower()
    if not t or t in ("c", "posix", "*"):
        return None
    primary = t.split("-")[0]
    return primary if primary in LANGUAGES else None


def parse_accept_language(header: str) -> list[tuple[str, float]]:
    """``'zh-CN,zh;q=0.9,en;q=0.8'`` -> ``[('zh-CN', 1.0), ('zh', 0.9), ('en', 0.8)]``, best first."""
    out: list[tuple[int, str, float]] = []
    for i, part in enumerate((header or "")[:2000].split(",")):
        bits = part.strip().split(";")
        tag = bits[0].strip()
        if not tag:
            continue
        q = 1.0
        for b in bits[1:]:
            b = b.strip()
            if b.startswith("q="):
                try:
                    q = float(b[2:])
                except ValueError:
                    q = 0.0
        if q > 0:
            out.append((i, tag, q))
    out.sort(key=lambda x: (-x[2], x[0]))
    return [(tag, q) for _, tag, q in out]


def pick_language(accept_language: str | None = None, env: Mapping[str, str] | None = None,
                  setting: str | None = None) -> str:
    """The language to speak: *setting* (an explicit choice) if it names a known language, else
    ``GPU_DOCTOR_LANG`` from *env*, else the best known language of the ``Accept-Language`` header, else the
    locale variables of *env* (``LC_ALL``, ``LC_MESSAGES``, ``LANG``, then the ``LANGUAGE`` list), else
    English.  *env* defaults to ``os.environ``."""
    env = os.environ if env is None else env
    for cand in (setting, env.get(SETTING_ENV)):
        lang = normalize_language(cand)
        if lang:
            return lang
    if accept_language:
        for tag, _q in parse_accept_language(accept_language):
            lang = normalize_language(tag)
            if lang:
                return lang
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        val = env.get(var)
        if val:
            # the first variable that is set decides, as in POSIX; C/POSIX means "no preference"
            lang = normalize_language(val)
            if lang:
                return lang
            break
    for tag in (env.get("LANGUAGE") or "").split(":"):
        lang = normalize_language(tag)
        if lang:
            return lang
    return DEFAULT_LANGUAGE


def t(key: str, lang: str | None = None, **kwargs: Any) -> str:
    """The message *key* in *lang* (default English), with ``{placeholders}`` filled from *kwargs*.

    A key missing in *lang* falls back to English; a key missing everywhere comes back as the key itself,
    so a gap shows up in the output instead of crashing a report."""
    lang = normalize_language(lang) or DEFAULT_LANGUAGE
    msg = catalogue(lang).get(key)
    if msg is None:
        msg = catalogue(DEFAULT_LANGUAGE).get(key, key)
    if not kwargs:
        return msg
    try:
        return msg.format(**kwargs)
    except (KeyError, IndexError, ValueError):
        return catalogue(DEFAULT_LANGUAGE).get(key, key).format(**kwargs)


def placeholders(msg: str) -> set[str]:
    """The ``str.format`` field names of a message (``{n}``, ``{rate:.1f}`` -> ``{'n', 'rate'}``)."""
    return {f.split(".")[0].split("[")[0] for _, f, _, _ in string.Formatter().parse(msg) if f is not None}


def catalogue_problems() -> list[str]:
    """Keys missing in a language, keys only a translation has, and placeholder mismatches."""
    problems = []
    en = catalogue(DEFAULT_LANGUAGE)
    for lang in LANGUAGES:
        if lang == DEFAULT_LANGUAGE:
            continue
        other = catalogue(lang)
        for k in sorted(set(en) - set(other)):
            problems.append(f"{lang}: missing key {k!r}")
        for k in sorted(set(other) - set(en)):
            problems.append(f"{lang}: key {k!r} is not in the English catalogue")
        for k in sorted(set(en) & set(other)):
            a, b = placeholders(en[k]), placeholders(other[k])
            if a != b:
                problems.append(f"{lang}: {k!r} placeholders {sorted(b)} differ from English {sorted(a)}")
    return problems


# --------------------------------------------------------------------------------------------------
# KB entry translations


def _field(entry: Any, name: str) -> str:
    if isinstance(entry, Mapping):
        return str(entry.get(name) or "")
    return str(getattr(entry, name, "") or "")


def translation_hash(entry: Any) -> str:
    """First 12 hex digits of sha256 over the English ``title + "\\n" + symptoms + "\\n" + cause + "\\n" + fix``.

    *entry* is a :class:`diagnostics.kb.Entry` or a mapping with those keys (as loaded from YAML)."""
    text = "\n".join(_field(entry, f) for f in ENTRY_FIELDS)
    variants = _variants(entry)
    if variants:  # vendor variants (kb `variants:`) are part of the English text; entries without keep their hash
        text += "".join(f"\n[{v}.{f}]\n{variants[v][f]}" for v in sorted(variants)
                        for f in ENTRY_FIELDS if variants[v].get(f))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _variants(entry: Any) -> Mapping[str, Mapping[str, str]]:
    v = entry.get("variants") if isinstance(entry, Mapping) else getattr(entry, "variants", None)
    return v or {}


def _translations(entry: Any) -> Mapping[str, Mapping[str, str]]:
    tr = entry.get("translations") if isinstance(entry, Mapping) else getattr(entry, "translations", None)
    return tr or {}


def translation_status(entry: Any, lang: str) -> str | None:
    """``None`` when *entry* has an up-to-date, complete translation into *lang*; else the reason."""
    tr = _translations(entry).get(lang)
    if not tr:
        return "missing translation"
    empty = [f for f in ENTRY_FIELDS if not str(tr.get(f) or "").strip()]
    if empty:
        return "translation lacks " + ", ".join(empty)
    tv = tr.get("variants") or {}
    lacking = [f"variants.{v}.{f}" for v, fields in sorted(_variants(entry).items()) for f in ENTRY_FIELDS
               if fields.get(f) and not str((tv.get(v) or {}).get(f) or "").strip()]
    if lacking:
        return "translation lacks " + ", ".join(lacking)
    have = str(tr.get("source_hash") or "")
    if not have:
        return "translation has no source_hash"
    want = translation_hash(entry)
    if have != want:
        return f"stale translation: the English text changed since it was translated (source_hash {have}, now {want})"
    return None


def stale_translations(kb: Any, langs: Iterable[str] = TRANSLATED_LANGUAGES) -> list[tuple[str, str, str]]:
    """``(entry id, lang, reason)`` for every missing, incomplete or stale translation.

    *kb* is a :class:`diagnostics.kb.KnowledgeBase` or an iterable of entries."""
    entries = getattr(kb, "entries", kb)
    out = []
    for e in sorted(entries, key=lambda e: _field(e, "id")):
        for lang in langs:
            reason = translation_status(e, lang)
            if reason:
                out.append((_field(e, "id"), lang, reason))
    return out


def translation_warnings(kb: Any, langs: Iterable[str] = TRANSLATED_LANGUAGES) -> list[str]:
    """:func:`stale_translations` as ``kb lint``-style lines: ``kb/<id>.yaml:1:1: warning: zh: <reason>``."""
    entries = {(_field(e, "id")): e for e in getattr(kb, "entries", kb)}
    out = []
    for eid, lang, reason in stale_translations(kb, langs):
        e = entries.get(eid)
        path = (getattr(e, "path", "") if e is not None and not isinstance(e, Mapping) else "") or f"kb/{eid}.yaml"
        out.append(f"{path}:1:1: warning: {lang}: {reason}")
    return out


def localized_entry(entry: Any, lang: str | None) -> dict[str, Any]:
    """title/symptoms/cause/fix of *entry* in *lang*, falling back to English field by field.

    Also returns ``lang`` (the language actually used for the title) and ``stale`` (the translation exists but
    its English source has changed since: show it, with a note that the English may be newer)."""
    lang = normalize_language(lang) or DEFAULT_LANGUAGE
    out: dict[str, Any] = {f: _field(entry, f) for f in ENTRY_FIELDS}
    out["lang"], out["stale"] = DEFAULT_LANGUAGE, False
    if lang == DEFAULT_LANGUAGE:
        return out
    tr = _translations(entry).get(lang) or {}
    for f in ENTRY_FIELDS:
        if str(tr.get(f) or "").strip():
            out[f] = tr[f]
    if str(tr.get("title") or "").strip():
        out["lang"] = lang
        out["stale"] = tr.get("source_hash") != translation_hash(entry)
    return out


def localize_diagnoses(diagnoses: list[dict[str, Any]], kb: Any, lang: str | None) -> list[dict[str, Any]]:
    """Copies of matcher diagnoses (``{"id", "title", "fix", ...}``) with title/symptoms/cause/fix in *lang*."""
    lang = normalize_language(lang) or DEFAULT_LANGUAGE
    if lang == DEFAULT_LANGUAGE:
        return [dict(d) for d in diagnoses]
    by_id = {e.id: e for e in getattr(kb, "entries", kb)}
    out = []
    for d in diagnoses:
        d = dict(d)
        e = by_id.get(d.get("id"))
        if e is not None:
            loc = localized_entry(e, lang)
            var = d.get("variant")
            if var and hasattr(e, "variant_text"):  # the vendor text the matcher chose, in *lang*
                loc.update(e.variant_text(var, lang))
            for f in ENTRY_FIELDS:
                if f in d or f in ("title", "fix"):
                    d[f] = loc[f]
            d["lang"], d["translation_stale"] = loc["lang"], loc["stale"]
            if isinstance(d.get("placeholders"), dict):  # fill the translated text with the report's values
                from ..support import fill

                for f in ENTRY_FIELDS:
                    if isinstance(d.get(f), str):
                        d[f] = fill(d[f], d["placeholders"], lang)
        out.append(d)
    return out


__all__ = ["LANGUAGES", "LANGUAGE_NAMES", "catalogue", "catalogue_problems", "localize_diagnoses",
           "localized_entry", "normalize_language", "parse_accept_language", "pick_language", "placeholders",
           "stale_translations", "t", "translation_hash", "translation_status", "translation_warnings"]
