"""How the vendor tools print one value: ``42``, ``"42 %"``, ``{"value": 42, "unit": "%"}``, ``"65536 MB"``,
``N/A`` / ``[Not Supported]``, and JSON after warning lines. One home for both readers of that output: the dump
parsers (``diagnostics/parsers``: amd-smi, nvidia-smi, rocm-smi pasted or captured by a probe) and the GPU watch
(``diagnostics/monitor/parse.py``: a sample per tick).

Both leave a value the tool does not have (N/A-like) out, never guessed. They differ in one thing, chosen by
``strict``: the watch reads a format it asked for, so a value that is not a number means the source is broken and
raises :class:`BadOutput` (``strict=True``); a pasted dump is read for what it holds, so such a value is only
unknown (``strict=False`` gives None). Standard library only: the watch runs beside the generation child on
machines that have torch but none of the doctor's other dependencies.
"""
from __future__ import annotations

import json
import re
from typing import Any

MIB = 1024 ** 2
UNIT_BYTES = {"b": 1, "kb": 1024, "kib": 1024, "mb": MIB, "mib": MIB, "gb": 1024 ** 3, "gib": 1024 ** 3,
              "tb": 1024 ** 4, "tib": 1024 ** 4}
NOT_AVAILABLE = ("N/A", "NA", "NONE", "UNKNOWN", "NOT SUPPORTED")

_NUM_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$")
_UNIT_SUFFIX_RE = re.compile(r"\s*(%|W|MiB|MB|MHz|Mhz|C|°C|B)$")
_VALUE_UNIT_RE = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*([^\d\s]*)\s*$")
_MEM_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B)\b", re.IGNORECASE)


class BadOutput(ValueError):
    """The source printed something that is not the format it should have printed."""


def not_available(text: str) -> bool:
    """``""``, ``[N/A]``, ``[Not Supported]``, ``N/A``, ``unknown`` ...: the tool has no value here."""
    s = text.strip()
    return not s or s.startswith("[") or s.upper() in NOT_AVAILABLE


def number(text: Any, *, strict: bool = True) -> float | None:
    """A number from a field (a trailing %, W, MiB, MB, MHz, C or B allowed), None for N/A-like values; anything
    else raises BadOutput, or gives None when not *strict*."""
    if text is None or isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text)
    s = str(text)
    if not_available(s):
        return None
    s = _UNIT_SUFFIX_RE.sub("", s.strip())
    if not _NUM_RE.match(s):
        if not strict:
            return None
        raise BadOutput(f"not a number: {str(text)[:40]!r}")
    return float(s)


def value_unit(obj: Any, *, strict: bool = True) -> tuple[float | None, str]:
    """``{"value": 42, "unit": "%"}``, ``"196592 MB"``, ``42`` or ``"N/A"`` -> (number, unit)."""
    if isinstance(obj, dict):
        return number(obj.get("value"), strict=strict), str(obj.get("unit") or "")
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return float(obj), ""
    if isinstance(obj, str):
        m = _VALUE_UNIT_RE.match(obj)
        if m:
            return float(m.group(1)), m.group(2)
        return number(obj, strict=strict), ""
    return None, ""


def mem_bytes(obj: Any, default_unit: str = "mb", *, strict: bool = True) -> int | None:
    """A memory size in bytes from ``{"value": 65536, "unit": "MB"}``, ``"65536 MB"``, ``"64 GiB (used)"`` or a bare
    number in *default_unit*; None for N/A-like values and for a unit that is not a byte unit (never guessed)."""
    if isinstance(obj, dict):
        v, unit = obj.get("value"), str(obj.get("unit") or default_unit)
        if isinstance(v, str) and not not_available(v):
            return mem_bytes(f"{v} {unit}", default_unit, strict=strict)
        n = number(v, strict=strict)
        factor = UNIT_BYTES.get(unit.strip().lower())
        return int(n * factor) if n is not None and factor else None
    if isinstance(obj, bool) or obj is None:
        return None
    if isinstance(obj, (int, float)):
        return int(obj * UNIT_BYTES[default_unit])
    s = str(obj)
    m = _MEM_RE.match(s)
    if m:
        return int(float(m.group(1)) * UNIT_BYTES[m.group(2).lower()]) if m.group(2).lower() in UNIT_BYTES else None
    m = _VALUE_UNIT_RE.match(s)
    if m:  # a bare number is in default_unit; another unit is not a size
        return None if m.group(2) else int(float(m.group(1)) * UNIT_BYTES[default_unit])
    n = number(s, strict=strict)
    return None if n is None else int(n * UNIT_BYTES[default_unit])


def json_from(text: str) -> Any:
    """The first JSON value in *text* (tools print warning lines before it); BadOutput when there is none."""
    start = min([i for i in (text.find("["), text.find("{")) if i >= 0], default=-1)
    if start < 0:
        raise BadOutput("no JSON in the output: " + text.strip()[:80])
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except ValueError as e:
        raise BadOutput(f"unreadable JSON: {e}") from None
