"""GPU target names: what ``HSA_OVERRIDE_GFX_VERSION`` means. A leaf (standard library only), used by the env probe
in its child process, by the facts derived from a paste (``derive``) and by the support matrix (``support``)."""
from __future__ import annotations

import re
from typing import Any

OVERRIDE_RE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")   # HSA_OVERRIDE_GFX_VERSION as the runtime accepts it


def override_to_gfx(value: str) -> str | None:
    """'10.3.0' -> 'gfx1030', '9.0.10' -> 'gfx90a', '11.5.1' -> 'gfx1151' (None for anything else)."""
    m = re.match(r"^\s*([0-9]+)\.([0-9]+)\.([0-9]+)\s*$", str(value))
    if not m:
        return None
    major, minor, step = (int(x) for x in m.groups())
    if minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def override_facts(raw: str) -> dict[str, Any]:
    """The hsa_override.* facts of HSA_OVERRIDE_GFX_VERSION=*raw*: the value (quotes stripped), whether the
    runtime takes it as it stands (quotes or spaces make it malformed), and the gfx target it maps to."""
    value = raw.strip().strip("'\"")
    out: dict[str, Any] = {"hsa_override.value": value, "hsa_override.valid": bool(OVERRIDE_RE.match(raw))}
    gfx = override_to_gfx(value)
    if gfx:
        out["hsa_override.gfx"] = gfx
    return out
