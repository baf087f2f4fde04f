"""Pure functions that turn a report dict into the store's columns (no database here)."""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Any

from ..verdicts import compute
SEVERITY_RANK = {"critical": 0, "error": 1, "warning": 2, "info": 3}


def dumps(obj: Any) -> str:
    """The stored form of a report: key order kept, UTF-8, compact. Byte-identical on every round trip."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def canonical_bytes(obj: Any) -> bytes:
    """Order-independent form used for checksums."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True,
                      allow_nan=False).encode("utf-8")


def sha256_of(obj: Any) -> str:
    """sha256 of :func:`canonical_bytes` of *obj*, hashed piece by piece (a long string in 1 MiB pieces), so the
    canonical text and its bytes are never built whole (they were two more copies of a 64 MB log at save)."""
    h = hashlib.sha256()
    for chunk in iter_json(obj, sort_keys=True):
        h.update(chunk.encode("utf-8"))
    return h.hexdigest()


JSON_PIECE = 1 << 20  # a string longer than this is encoded a piece at a time


def json_size(obj: Any) -> int:
    """The length in UTF-8 bytes of :func:`dumps` of *obj*, counted piece by piece (nothing built whole)."""
    return sum(len(c) if c.isascii() else len(c.encode("utf-8", "surrogatepass")) for c in iter_json(obj))


def json_bytes(obj: Any, size: int | None = None) -> Any:
    """:func:`dumps` of *obj* as UTF-8 bytes, in pieces of about *size* characters (default :data:`JSON_PIECE`;
    joined: ``dumps(obj).encode()``)."""
    size = size or JSON_PIECE
    buf: list[str] = []
    n = 0
    for chunk in iter_json(obj):
        buf.append(chunk)
        n += len(chunk)
        if n >= size:
            yield "".join(buf).encode("utf-8")
            buf, n = [], 0
    if buf:
        yield "".join(buf).encode("utf-8")


class Pieces:
    """A string given as the pieces *make()* yields (a fresh iterator on each call): :func:`iter_json` writes it
    as one JSON string without ever joining it."""

    def __init__(self, make: Any) -> None:
        self.make = make


def _scalar(o: Any) -> str | None:
    """The JSON text of None, a bool, an int or a float, as json.dumps writes it; None for anything else."""
    if o is None:
        return "null"
    if isinstance(o, bool):  # before int: a bool is an int too
        return "true" if o else "false"
    if isinstance(o, int):
        return int.__repr__(o)
    if isinstance(o, float):
        return _float(o)
    return None


def _json_key(k: Any) -> str:
    """A dict key as json.dumps writes it: a string as it is, a scalar as its JSON text."""
    text = k if isinstance(k, str) else _scalar(k)
    if text is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")
    return text


def _float(o: float) -> str:
    if o != o or o in (float("inf"), float("-inf")):
        raise ValueError("Out of range float values are not JSON compliant: " + repr(o))
    return float.__repr__(o)


def iter_json(obj: Any, *, sort_keys: bool = False, indent: int | None = None) -> Any:
    """The text of ``json.dumps(obj, ensure_ascii=False, allow_nan=False, sort_keys=..., indent=...)`` (compact
    separators without *indent*), chunk by chunk: byte-identical once joined, but a long string comes out in
    pieces of :data:`JSON_PIECE` characters (JSON escapes one character at a time, so a piece needs nothing of its
    neighbours), and :class:`Pieces` are streamed."""
    enc = json.encoder.encode_basestring  # ensure_ascii=False
    item_sep, key_sep = (",", ":") if indent is None else (",", ": ")

    def quoted(pieces: Any) -> Any:
        yield '"'
        for piece in pieces:
            for i in range(0, len(piece), JSON_PIECE):
                yield enc(piece[i:i + JSON_PIECE])[1:-1]
        yield '"'

    def walk(o: Any, level: int) -> Any:
        scalar = _scalar(o)
        if scalar is not None:
            yield scalar
        elif isinstance(o, str):
            yield from (enc(o),) if len(o) <= JSON_PIECE else quoted((o,))
        elif isinstance(o, Pieces):
            yield from quoted(o.make())
        elif isinstance(o, (list, tuple)):
            if not o:
                yield "[]"
                return
            nl = "" if indent is None else "\n" + " " * (indent * (level + 1))
            yield "[" + nl
            for i, v in enumerate(o):
                if i:
                    yield item_sep + nl
                yield from walk(v, level + 1)
            yield ("" if indent is None else "\n" + " " * (indent * level)) + "]"
        elif isinstance(o, dict):
            if not o:
                yield "{}"
                return
            nl = "" if indent is None else "\n" + " " * (indent * (level + 1))
            yield "{" + nl
            pairs = sorted(o.items(), key=lambda kv: kv[0]) if sort_keys else o.items()  # as json sorts: raw keys
            items = [(_json_key(k), v) for k, v in pairs]
            for i, (k, v) in enumerate(items):
                yield (item_sep + nl if i else "") + enc(k) + key_sep
                yield from walk(v, level + 1)
            yield ("" if indent is None else "\n" + " " * (indent * level)) + "}"
        else:
            raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

    return walk(obj, 0)


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def parse_time(value: Any) -> datetime | None:
    """ISO-8601 string / datetime -> naive UTC datetime (None when unparseable)."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str) and value.strip():
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt


def _is_benign(d: dict[str, Any]) -> bool:
    return bool(d.get("benign")) or str(d.get("severity", "")).lower() == "info"


def top_diagnosis(report: dict[str, Any]) -> dict[str, Any] | None:
    """The first non-benign diagnosis (the list is best first), else the first one."""
    diags = [d for d in report.get("diagnoses") or [] if isinstance(d, dict)]
    for d in diags:
        if not _is_benign(d):
            return d
    return diags[0] if diags else None


def verdict(report: dict[str, Any]) -> str:
    """The shared rule of diagnostics.verdicts (problems, unexplained, incomplete, healthy), recomputed from the
    report's diagnoses and checks: a 'verdict' key stored in the report is never trusted (it could say
    "problems" over zero diagnoses)."""
    return compute(report)


def gpu_names(report: dict[str, Any]) -> list[str]:
    facts = report.get("facts") if isinstance(report.get("facts"), dict) else {}
    for key in ("gpu.names", "torch.device_names"):
        v = facts.get(key)
        if isinstance(v, list) and v:
            return [str(x) for x in v]
    return []


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    """The summary columns of the sessions table for *report*."""
    facts = report.get("facts") if isinstance(report.get("facts"), dict) else {}
    top = top_diagnosis(report)
    gpus = gpu_names(report)
    tv = facts.get("torch.version")
    diags = [d for d in report.get("diagnoses") or [] if isinstance(d, dict)]
    parts: list[str] = [str(report.get("host") or ""), str(report.get("source") or ""),
                        str(report.get("kb_version") or ""), verdict(report)]
    parts += gpus
    for key in ("gpu.gfx_targets",):
        v = facts.get(key)
        if isinstance(v, list):
            parts += [str(x) for x in v]
    for key in ("torch.version", "rocm.version", "os.name", "os.kernel", "torch.build", "container.kind"):
        v = facts.get(key)
        if isinstance(v, str):
            parts.append(v)
    for d in diags:
        parts.append(str(d.get("id") or ""))
        parts.append(str(d.get("title") or ""))
    for lg in report.get("logs") or []:
        if isinstance(lg, dict) and lg.get("name"):
            parts.append(str(lg["name"]))
    return {
        "verdict": verdict(report),
        "top_diagnosis_id": (str(top.get("id"))[:128] if top and top.get("id") is not None else None),
        "top_severity": (str(top.get("severity"))[:16] if top and top.get("severity") else None),
        "diagnosis_count": len(diags),
        "gpu_names": "|".join(gpus),
        "torch_version": tv[:128] if isinstance(tv, str) else None,
        "search_text": " \n".join(p for p in parts if p).lower()[:20000],
    }
