"""One parser per tool output.  Live probes hand their raw text to the same parser that reads a pasted dump.

Each module in KINDS exports ``KIND`` (str), ``detect(text) -> float`` (0..1, how sure it is that *text*
is its tool's output) and ``parse(text) -> ParseResult``.  ``parse`` must never raise on any input: unknown
or truncated text yields the facts it can plus a note.
"""
from __future__ import annotations

import importlib

from .base import ParseResult

KINDS = ("collect_env", "rocminfo", "rocm_smi", "amd_smi", "hipconfig", "dmesg", "nvidia_smi", "check_script")

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


def detect_kind(text: str) -> str | None:
    """The most likely kind of *text*, or None when no parser recognises it."""
    best, best_score = None, 0.0
    for k in available_kinds():
        try:
            score = float(_module(k).detect(text))
        except Exception:  # a detector must never break detection of the others
            continue
        if score > best_score:
            best, best_score = k, score
    return best if best_score >= 0.3 else None


def parse(text: str, kind: str = "auto") -> ParseResult:
    if len(text) > MAX_PARSE_BYTES:
        text = text[:MAX_PARSE_BYTES]
        truncated = True
    else:
        truncated = False
    if kind == "auto":
        detected = detect_kind(text)
        if detected is None:
            return ParseResult(kind="unknown", notes=["no parser recognised this text; it is matched as a plain log"])
        kind = detected
    if kind not in KINDS:
        raise ValueError(f"unknown dump kind {kind!r}; choose one of: auto, {', '.join(KINDS)}")
    try:
        result = _module(kind).parse(text)
    except Exception as exc:  # defensive: a parser bug must not lose the user's input
        result = ParseResult(kind=kind, notes=[f"the {kind} parser failed on this input ({type(exc).__name__}); facts may be incomplete"])
    if truncated:
        result.notes.append(f"input longer than {MAX_PARSE_BYTES} bytes; only the first part was parsed")
    return result
