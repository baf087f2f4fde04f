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
    return hashlib.sha256(canonical_bytes(obj)).hexdigest()


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
