"""Parser for ``rocm-smi`` output: the concise table (old and new layouts), ``GPU[n] : key: value``
sections (``--showproductname``, ``--showmeminfo vram``, ``-i``, ``--showallinfo``), ``--json`` and
``--csv``, and the tool's error lines.

Layouts seen in real reports:

* ROCm 5.x concise table: ``GPU  Temp   AvgPwr  SCLK  MCLK  Fan  Perf  PwrCap  VRAM%  GPU%``, one row per
  GPU starting with its index;
* ROCm 6.x/7.x concise table: ``Device  Node  IDs  Temp  Power  Partitions  SCLK ...`` with a second header
  line ``(DID,     GUID)  (Edge)  (Avg)  (Mem, Compute, ID)`` and a ruler before the rows;
* ``GPU[0]\t\t: Card series: \t\t...`` (tabs, or spaces after a copy), keys spelt ``Card series`` (ROCm <= 5)
  or ``Card Series`` (6.x), ``GFX Version: gfx1100`` on newer releases;
* ``--json``: ``{"card0": {...}, ...}``; ``--csv``: ``device,Card series,...`` then ``card0,...``.

Errors: ``ERROR:root:Driver not initialized (amdgpu not found in modules)`` (driver absent; rocm-smi still
exits 0), ``WARNING: No AMD GPUs specified`` (nothing listed), ``Unable to get devices, /sys/class/drm is
empty or missing`` / ``ERROR: No DRM devices available. Exiting`` (ROCm 3.x).

rocm-smi's "GFX Version" of some releases prints the stepping in decimal (``gfx9010`` for gfx90a,
ROCm/rocm_smi_lib#159); it is normalised.  Standard library only.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from typing import Any

from .base import Opening, ParseResult, SmiGpu, json_values
from .rocminfo import cut_marker, gpu_list_facts, is_placeholder, set_gfx, strip_ansi

_GPU_LINE_RE = re.compile(r"^\s*GPU\[(\d+)\]\s*:\s*(.*)$")
_ROW_RE = re.compile(r"^\s*(\d+)\s+\S")
_GFX_TOKEN_RE = re.compile(r"\bgfx[0-9a-f]+\b")
_JSON_START_RE = re.compile(r"(?m)^[ \t]*\{")
_SELECTION_RE = re.compile(r"rocm-smi\b[^\n]*\s(?:-d|--device)\s+\d")

_NAME_KEYS = ("card series", "card_series")
_FALLBACK_NAME_KEYS = ("device name", "marketing name")
_GFX_KEYS = ("gfx version",)
_VRAM_TOTAL_KEYS = ("vram total memory (b)",)
_VRAM_USED_KEYS = ("vram total used memory (b)",)

_ERROR_PATTERNS = (
    ("Driver not initialized (amdgpu not found in modules)", "driver_missing"),
    ("No AMD GPUs specified", "no_gpus"),
    ("/sys/class/drm is empty or missing", "no_gpus"),
    ("No DRM devices available", "no_gpus"),
)


def detect(text: str) -> float:
    head = strip_ansi(text[:200_000])
    score = 0.0
    if "ROCm System Management Interface" in head or "End of ROCm SMI Log" in head:
        score = 0.95
    if "Driver not initialized (amdgpu not found in modules)" in head or "No AMD GPUs specified" in head:
        score = max(score, 0.9)
    if "No DRM devices available" in head or "/sys/class/drm is empty or missing" in head:
        score = max(score, 0.85)
    m = re.search(r"(?mi)^[ \t]*device,([^\n]*)", head)
    if m and re.search(r"(?i)card series|gpu use|vram total|temperature|driver version|unique id|gfx version|card model",
                       m.group(1)):
        score = max(score, 0.85)
    if re.search(r'"card\d+"\s*:\s*\{', head) and ("Card" in head or "VRAM Total" in head or "GFX Version" in head
                                                    or "Device Name" in head or "Temperature (Sensor" in head):
        score = max(score, 0.85)
    if "GPU[" in head and re.search(
            r"GPU\[\d+\]\s*:\s*(Card series|Card Series|VRAM Total|Device Name|Device ID|GFX Version|Temperature)", head):
        score = max(score, 0.8)
    if "Concise Info" in head and "Temp" in head:
        score = max(score, 0.7)
    return score


OPENING = Opening("rocm_smi", "rocm-smi", tool=True)


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


def _int(value: Any) -> int | None:
    try:
        s = str(value).strip()
        return int(s) if s.isdigit() else None
    except Exception:
        return None


def _apply_kv(gpu: SmiGpu, key: str, value: Any, res: ParseResult) -> None:
    k = key.strip().lower().rstrip(":")
    v = str(value).strip()
    if k in _NAME_KEYS:
        if not is_placeholder(v):
            gpu.name = v
    elif k in _FALLBACK_NAME_KEYS:
        if not is_placeholder(v):
            gpu.fallback_name = v
    elif k in _GFX_KEYS:
        set_gfx(gpu, v, res, "rocm-smi printed {printed}, which is {target} (its stepping written in decimal)")
    elif k in _VRAM_TOTAL_KEYS:
        n = _int(v)
        if n is not None:
            gpu.total = n
    elif k in _VRAM_USED_KEYS:
        n = _int(v)
        if n is not None:
            gpu.used = n


def _parse_json(text: str, gpus: dict[int, SmiGpu], res: ParseResult) -> bool:
    for obj in json_values(text, _JSON_START_RE):
        if not isinstance(obj, dict):
            continue
        found = False
        for card, data in obj.items():
            cm = re.fullmatch(r"card(\d+)", str(card))
            if not cm or not isinstance(data, dict):
                continue
            found = True
            gpu = gpus.setdefault(int(cm.group(1)), SmiGpu())
            for k, v in data.items():
                _apply_kv(gpu, str(k), v, res)
        if found:
            return True
    if "{" in text and '"card' in text:
        res.notes.append("the JSON part could not be read: truncated?")
    return False


def _parse_csv(lines: list[str], gpus: dict[int, SmiGpu], res: ParseResult) -> None:
    header: list[str] | None = None
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if s.lower().startswith("device,"):
            header = next(csv.reader([s]))
            continue
        if header is None:
            continue
        m = re.match(r"card(\d+),", s)
        if not m:
            continue
        row = next(csv.reader([s]))
        gpu = gpus.setdefault(int(m.group(1)), SmiGpu())
        for k, v in zip(header[1:], row[1:]):
            _apply_kv(gpu, k, v, res)


@dataclass
class _Found:
    """What the line scan found: the GPUs by index, the tool's error lines, the frame and table state."""
    gpus: dict[int, SmiGpu] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    primary: str | None = None
    driver_missing: bool = False
    no_gpus: bool = False
    in_table: bool = False
    saw_smi_frame: bool = False


def _parse_into(text: str, res: ParseResult) -> None:
    found = _Found()
    lines = text.splitlines()
    for raw in lines:
        line = raw.strip()
        if line and not _error_line(found, line, res):
            _scan_line(found, line, res)
    if '"card' in text and "{" in text:
        _parse_json(text, found.gpus, res)
    if re.search(r"(?mi)^[ \t]*device,", text):
        _parse_csv(lines, found.gpus, res)
    _facts(text, found, res)


def _error_line(found: _Found, line: str, res: ParseResult) -> bool:
    """The tool's error and warning lines; True when *line* was one."""
    hit = None
    for pattern, what in _ERROR_PATTERNS:
        if pattern in line:
            hit = what
            break
    if hit is not None:
        found.errors.append(line)
        if found.primary is None:
            found.primary = line
        if hit == "driver_missing":
            found.driver_missing = True
        else:
            found.no_gpus = True
        return True
    if line.startswith("WARNING") and "fail" not in line.lower():
        # e.g. "WARNING: AMD GPU device(s) is/are in a low-power state": information, not a failure
        note = "rocm-smi warned: " + line
        if note not in res.notes and len(res.notes) < 20:
            res.notes.append(note)
        return True
    if line.startswith(("ERROR", "WARNING")) or line.startswith("cat: /sys/module/amdgpu"):
        found.errors.append(line)
        # "ERROR: GPU[0] : Unable to get ..." is one unsupported reading of a working GPU, not the tool failing
        if found.primary is None and line.startswith("ERROR") and not re.match(r"ERROR:\s*GPU\[\d+\]", line):
            found.primary = line
        m = re.match(r"ERROR:\s*GPU\[(\d+)\]", line)
        if m:
            found.gpus.setdefault(int(m.group(1)), SmiGpu())
        return True
    return False


def _scan_line(found: _Found, line: str, res: ParseResult) -> None:
    """The frame, the concise table's rows and the ``GPU[n] : key: value`` lines."""
    if "ROCm System Management Interface" in line or "End of ROCm SMI Log" in line:
        found.saw_smi_frame = True
        found.in_table = False
        return
    if "Concise Info" in line or "Concise Hardware Info" in line:
        found.in_table = True
        return
    m = _GPU_LINE_RE.match(line)
    if m:
        found.in_table = False
        key, sep, val = m.group(2).partition(":")
        gpu = found.gpus.setdefault(int(m.group(1)), SmiGpu())
        if sep:
            _apply_kv(gpu, key, val, res)
        return
    if found.in_table:
        _table_row(found, line, res)


def _table_row(found: _Found, line: str, res: ParseResult) -> None:
    first = line.split(None, 1)[0]
    if first in ("GPU", "Device") or line.startswith("("):
        return  # header lines
    if line.startswith("=") or line.startswith("-"):
        return  # rulers (the new layout has one between header and rows)
    rm = _ROW_RE.match(line)
    if rm:
        gpu = found.gpus.setdefault(int(rm.group(1)), SmiGpu())
        if "gfx" in line:  # --showhw of ROCm 6+: a "GFX VER" column
            gm = _GFX_TOKEN_RE.search(line)
            if gm:
                _apply_kv(gpu, "GFX Version", gm.group(0), res)


def _facts(text: str, found: _Found, res: ParseResult) -> None:
    gpus = found.gpus
    facts: dict[str, Any] = {}
    selected = bool(_SELECTION_RE.search(text))
    marker = cut_marker(text)
    if marker:
        selected = True
        res.notes.append(f"the paste says it was shortened ({marker!r}): the GPU count is not taken from it")
    if gpus:
        order = sorted(gpus)
        if selected and not marker:
            res.notes.append("the command selected devices (-d): the number of GPUs on the machine cannot be read from it")
        else:
            facts["gpu.count"] = len(order)
        facts["driver.amdgpu_loaded"] = True
        facts.update(gpu_list_facts([gpus[i].name or gpus[i].fallback_name for i in order],
                                    [gpus[i].gfx for i in order],
                                    [(gpus[i].total, gpus[i].used, None) for i in order], selected))
    elif found.no_gpus and not selected:
        facts["gpu.count"] = 0
    if found.driver_missing:
        facts["driver.amdgpu_loaded"] = False
    if found.primary is not None:
        facts["rocm_smi.error"] = found.primary
    if not gpus and not found.errors and not found.saw_smi_frame:
        res.notes.append("no rocm-smi content recognised")
    if not gpus and found.saw_smi_frame and not found.errors:
        res.notes.append("rocm-smi printed its frame but no GPU lines: truncated or filtered?")
    res.facts.update(facts)
    res.errors.extend(found.errors)


# --------------------------------------------------------------------------------------------------
# the KFD process list (rocm-smi --showpids)

_PID_ROW = re.compile(r"^\s*(\d{1,10})\s+(.*?)\s+(\d{1,4})\s+(\d{1,20}|UNKNOWN|N/A)\s+\S+\s+\S+\s*$")


def parse_showpids(text: str) -> list:
    """``rocm-smi --showpids``: ``PID  PROCESS NAME  GPU(s)  VRAM USED  SDMA USED  CU OCCUPANCY`` rows, tab- or
    space-separated.  The GPU(s) column is the *number* of GPUs the process uses (ROCm/rocm_smi_lib#166), so
    ``gpu`` stays empty; VRAM USED is in bytes (``UNKNOWN`` where the library cannot say).  "No KFD PIDs
    currently running" gives []."""
    from .base import GpuProcess

    out = []
    inside = False
    for ln in strip_ansi(text).replace("\r", "").split("\n")[:5000]:
        if "KFD process information" in ln:
            inside = True
            continue
        if not inside or ln.strip().startswith(("PID", "=")):
            continue
        m = _PID_ROW.match(ln.replace("\t", " "))
        if m:
            mem = int(m.group(4)) if m.group(4).isdigit() else None
            out.append(GpuProcess(int(m.group(1)), m.group(2).strip(), mem, ""))
    return out
