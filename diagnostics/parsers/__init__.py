"""One parser per tool output.  Live probes hand their raw text to the same parser that reads a pasted dump.

Each module in KINDS exports ``OPENING`` (a ``base.Opening``: its kind, and how its text is opened before its
own reading), ``detect(text) -> float`` (0..1, how sure it is that *text* is its tool's output) and
``parse(text) -> ParseResult``.  ``parse`` must never raise on any input: unknown
or truncated text yields the facts it can plus a note.
"""
from __future__ import annotations

import importlib

from ..textnorm import clean_log, strip_ansi, unescaped
from .base import ParseResult, strip_log_layers

KINDS = ("collect_env", "rocminfo", "rocm_smi", "amd_smi", "hipconfig", "dmesg", "nvidia_smi", "check_script", "hf_env", "app_log",
         "shell_access", "host_checks", "windows_host")

MAX_PARSE_BYTES = 8 * 1024 * 1024


def _module(kind: str):
    return importlib.import_module(f"{__name__}.{kind}")


def available_kinds() -> list[str]:
    out = []
    for k in KINDS:
        try:
            _module(k)
        except ImportError:
            continue
        out.append(k)
    return out


# dmesg is read as the kernel printed it: the paste normaliser would take its "[   12.345]" stamps for a log prefix
# (only terminal colours are taken out: `dmesg --color=always` colours the stamps and the facility)
RAW_KINDS = ("dmesg",)


def _raw(text: str) -> str:
    return strip_ansi(text)


def normalised(text: str) -> str:
    """The paste as the parsers other than RAW_KINDS read it: logging prefixes ('2024-05-01 12:00:01 INFO ',
    'webui-1  | ', '[stdout] ') stripped, full-width colons and HTML line breaks folded (textnorm.clean_log, one
    linear pass), and a dump quoted as a string (docker's json-file log, a repr) or Markdown-escaped read as the
    text it stands for (textnorm.unescaped).  A tool's own output is unchanged by it (every fixture parses to the
    same facts either way)."""
    try:
        return strip_log_layers(clean_log(strip_log_layers(unescaped(text))))
    except Exception:
        return text


def _scores(text: str, norm: str | None = None) -> dict[str, float]:
    norm = normalised(text) if norm is None else norm
    out: dict[str, float] = {}
    for k in available_kinds():
        try:
            score = float(_module(k).detect(text))
            if k not in RAW_KINDS and norm != text:
                score = max(score, float(_module(k).detect(norm)))
            elif k in RAW_KINDS and "\x1b" in text:
                score = max(score, float(_module(k).detect(_raw(text))))
        except Exception:  # a detector must never break detection of the others
            continue
        out[k] = score
    return out


def detect_kind(text: str, norm: str | None = None) -> str | None:
    """The most likely kind of *text* (as pasted, or once normalised), or None when no parser recognises it."""
    best, best_score = None, 0.0
    for k, score in _scores(text, norm).items():
        if score > best_score:
            best, best_score = k, score
    return best if best_score >= 0.3 else None


def holds_facts(text: str) -> bool:
    """Whether a pasted log is worth parsing for facts: a tool output is recognised in it, or it holds the
    unambiguous check-script forms (``export HIP_VISIBLE_DEVICES=1``, ``print(torch.__version__)`` and its value,
    a failed ``import torch``) or an app's banner and device lines (``pytorch version: 2.3.0+rocm6.0``,
    ``Device: cuda:0 AMD Radeon RX 7900 XTX : native``, ollama's ``inference compute``) somewhere inside a longer log."""
    norm = normalised(text)
    if detect_kind(text, norm) is not None:
        return True
    for k in EMBEDDED_ALWAYS:
        try:
            if _module(k).parse_embedded(norm).facts:
                return True
        except Exception:
            continue
    return False


def parse(text: str, kind: str = "auto") -> ParseResult:
    if len(text) > MAX_PARSE_BYTES:
        text = text[:MAX_PARSE_BYTES]
        truncated = True
    else:
        truncated = False
    if kind != "auto" and kind not in KINDS:
        raise ValueError(f"unknown dump kind {kind!r}; choose one of: auto, {', '.join(KINDS)}")
    norm = normalised(text)
    auto = kind == "auto"
    if auto:
        detected = detect_kind(text, norm)
        if detected is None:
            result = ParseResult(kind="unknown", notes=["no parser recognised this text; it is matched as a plain log"])
            _add_embedded(text, norm, result)
            if result.facts:
                result.notes[0] = "no tool output recognised as a whole; the facts below come from parts of it"
            if truncated:
                result.notes.append(f"input longer than {MAX_PARSE_BYTES} bytes; only the first part was parsed")
            return result
        kind = detected
    try:
        result = _module(kind).parse(_raw(text) if kind in RAW_KINDS else norm)
    except Exception as exc:  # defensive: a parser bug must not lose the user's input
        result = ParseResult(kind=kind, notes=[f"the {kind} parser failed on this input ({type(exc).__name__}); facts may be incomplete"])
    if auto:
        _add_embedded(text, norm, result)
    if truncated:
        result.notes.append(f"input longer than {MAX_PARSE_BYTES} bytes; only the first part was parsed")
    return result


EMBEDDED_MIN = 0.7   # how sure another parser must be before its facts are added to the main one's
# readers whose every form is tied to one tool's own line, so they run on every paste (after the others, so a tool's
# own dump keeps its values): the check-script forms and the apps' banners
EMBEDDED_ALWAYS = ("check_script", "app_log", "shell_access", "host_checks", "windows_host")


def _add_embedded(text: str, norm: str, result: ParseResult) -> None:
    """A paste often holds several tools' outputs (an issue template asks for collect_env *and* rocminfo; a
    nvidia-smi table is followed by ``print(torch.__version__)``).  Other parsers that recognise the text strongly,
    and the unambiguous check-script forms, add the facts the main parser did not establish; on a conflict the
    main parser's value stays and a note says so.  Each parser is linear, so this is a few more linear passes."""
    extra: list[tuple[str, ParseResult]] = []
    for k, score in _scores(text, norm).items():
        if k == result.kind or k in EMBEDDED_ALWAYS or score < EMBEDDED_MIN:
            continue
        try:
            extra.append((k, _module(k).parse(_raw(text) if k in RAW_KINDS else norm)))
        except Exception:
            continue
    for k in EMBEDDED_ALWAYS:
        if result.kind == k:
            continue
        try:
            extra.append((k, _module(k).parse_embedded(norm)))
        except Exception:
            continue
    for k, r in extra:
        added = []
        for name, value in r.facts.items():
            if name == "env.set_names":
                continue
            if name not in result.facts:
                result.facts[name] = value
                added.append(name)
            elif result.facts[name] != value and not name.startswith("gpu.vendors"):
                result.notes.append(f"{k} output in the same paste says {name} = {value!r}; "
                                    f"the {result.kind} value {result.facts[name]!r} is kept")
        if added:
            result.notes.append(f"also read as {k}: {', '.join(sorted(added))}")
            result.errors.extend(e for e in r.errors if e not in result.errors)
    env_names = sorted(n[4:] for n in result.facts if n.startswith("env.") and n != "env.set_names")
    if env_names:
        result.facts["env.set_names"] = env_names
