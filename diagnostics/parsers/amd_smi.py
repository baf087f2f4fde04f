"""Parser for ``amd-smi`` output (ROCm 6.x and 7.x): ``amd-smi version``, ``amd-smi list``, ``amd-smi static``,
``amd-smi metric``, their ``--json`` forms, the default summary table of AMD-SMI 26 (``amd-smi`` with no
arguments), and the tool's errors.

Shapes seen in real reports:

* ``AMDSMI Tool: 24.7.1+8dc45db | AMDSMI Library version: 25.1.0.0 | ROCm version: 6.3.3`` (``| amdgpu
  version: ...`` added later; on the in-tree driver that "version" is the kernel's);
* ``GPU: 0`` blocks with nested ``KEY: value`` lines (``ASIC: MARKET_NAME / TARGET_GRAPHICS_VERSION``,
  ``VRAM: SIZE: 65536 MB``, ``MEM_USAGE: TOTAL_VRAM / USED_VRAM / FREE_VRAM``, ``DRIVER: VERSION``), memory in
  MB meaning MiB;
* the boxed summary: ``| AMD-SMI 26.2.2+...  amdgpu version: ... ROCm version: 7.2.1 |`` then per GPU a
  ``| <BDF>  <name> | ...`` row and a ``|  <gpu> <hip-id> ... | ... used/total MB |`` row;
* JSON: a list of ``{"gpu": 0, "asic": {...}, "vram": {"size": {"value": .., "unit": "MB"}}}`` objects (or
  wrapped in ``{"gpu_data": [...]}``), values either ``{"value", "unit"}`` pairs or strings like ``"196592 MB"``;
* errors: ``ERROR: Unable to detect any GPU devices, check amdgpu version and module status``,
  ``AMDSMI_STATUS_*`` codes, Python tracebacks of the CLI.

Standard library only.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..smi_values import UNIT_BYTES, mem_bytes
from .base import Opening, ParseResult, SmiGpu, json_values
from .rocminfo import cut_marker, gpu_list_facts, is_placeholder, looks_like_driver_version, set_gfx, strip_ansi

_GPU_HEADER_RE = re.compile(r"^GPU:\s*(\d+)\s*$")
_ROCM_VERSION_RE = re.compile(r"ROCm version:\s*(\d+\.\d+(?:\.\d+)*)")
_AMDGPU_VERSION_RE = re.compile(r"amdgpu version:\s*([^\s|]+)")
_BOX_NAME_ROW_RE = re.compile(r"^\|\s*([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.*?)\s*\|")
_BOX_IDX_ROW_RE = re.compile(r"^\|\s*(\d+)\s+\S+.*?\|.*?(\d+)\s*/\s*(\d+)\s*MB\s*\|")
_SELECTION_RE = re.compile(r"amd-smi\b[^\n]*\s(?:-g|--gpu)\s+\d")
_JSON_START_RE = re.compile(r"(?m)^[ \t]*[\[{]")

_MONITOR_HEADER_RE = re.compile(r"(?m)^[ \t]*GPU[ \t]+(?:XCP[ \t]+)?(?:POWER|GPU_T|MEM_T|GFX_|MEM_|VRAM_|ENC_|DEC_|SINGLE_ECC|PCIE_)")
_BOX_LINE_RE = re.compile(r"(?m)^[ \t]*\|[^\n]*$")

# the tool's error lines: a line starting ERROR, or one holding a marker (the markers alone: a cheap whole-text check)
_ERROR_MARKERS = ("Unable to detect any GPU devices", "AMDSMI_STATUS_", "Traceback (most recent call last)",
                  "ModuleNotFoundError", "ImportError", "amdsmi_init", "Permission denied")
_ERROR_LINE_RE = re.compile(r"(?m)^[^\n]*(?:^[ \t]*ERROR|" + "|".join(map(re.escape, _ERROR_MARKERS)) + r")[^\n]*$")


def detect(text: str) -> float:
    head = strip_ansi(text[:200_000])
    score = 0.0
    if "AMDSMI Tool:" in head or "| AMD-SMI " in head or "AMD-SMI " in head and "ROCm version:" in head:
        score = 0.95
    if "Unable to detect any GPU devices, check amdgpu version" in head or "AMDSMI_STATUS_" in head:
        score = max(score, 0.9)
    if "MARKET_NAME:" in head or "TARGET_GRAPHICS_VERSION:" in head or "TOTAL_VRAM:" in head:
        score = max(score, 0.85)
    if re.search(r"(?m)^[ \t]*GPU:[ \t]*\d+[ \t]*$", head) and ("BDF:" in head or "UUID:" in head or "KFD_ID:" in head):
        score = max(score, 0.8)
    if '"market_name"' in head or '"target_graphics_version"' in head or '"total_vram"' in head \
            or '"amdsmi_library_version"' in head or ('"bdf"' in head and '"gpu"' in head):
        score = max(score, 0.85)
    if _MONITOR_HEADER_RE.search(head):
        score = max(score, 0.85)
    if ("amdsmi" in head.lower() or "amd-smi" in head) and score < 0.6:
        score = 0.6
    return score


OPENING = Opening("amd_smi", "amd-smi", tool=True)


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


def _bytes(value: Any) -> int | None:
    """'65536 MB' / {'value': 65536, 'unit': 'MB'} / 65536 (MB) -> bytes; None for N/A and unreadable values."""
    return mem_bytes(value, "mb", strict=False)


def _set_gfx(gpu: SmiGpu, value: str, res: ParseResult) -> None:
    set_gfx(gpu, value, res, "amd-smi printed {printed}, which is {target} (the target version written in decimal)")


def _json_gpus(obj: Any) -> list[dict]:
    if isinstance(obj, list):
        return [o for o in obj if isinstance(o, dict) and "gpu" in o]
    if isinstance(obj, dict):
        if "gpu" in obj and isinstance(obj.get("gpu"), int):
            return [obj]
        for v in obj.values():
            if isinstance(v, list) and any(isinstance(o, dict) and "gpu" in o for o in v):
                return [o for o in v if isinstance(o, dict) and "gpu" in o]
    return []


def _find_key(obj: Any, needle: str, depth: int = 0) -> Any:
    if depth > 3:
        return None
    if isinstance(obj, dict):
        for k, v in obj.items():
            if needle in str(k).lower():
                return v
        for v in obj.values():
            r = _find_key(v, needle, depth + 1)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj[:8]:
            r = _find_key(v, needle, depth + 1)
            if r is not None:
                return r
    return None


def _parse_json(text: str, gpus: dict[int, SmiGpu], state: dict[str, Any], res: ParseResult) -> None:
    for obj in json_values(text, _JSON_START_RE):
        rocm = _find_key(obj, "rocm_version")
        if isinstance(rocm, str) and re.fullmatch(r"\d+\.\d+(?:\.\d+)*", rocm.strip()):
            state["rocm_version"] = rocm.strip()
        items = _json_gpus(obj)
        for item in items:
            idx = item.get("gpu")
            if not isinstance(idx, int) or isinstance(idx, bool):
                continue
            _json_gpu(item, gpus.setdefault(idx, SmiGpu()), res)
        if items or rocm:
            state["json"] = True
            return
    if "{" in text and ('"gpu"' in text or '"asic"' in text):
        res.notes.append("the JSON part could not be read: truncated? only per-GPU names and targets are taken from it")
        _salvage_json_lines(text, gpus, state, res)


def _json_gpu(item: dict, gpu: SmiGpu, res: ParseResult) -> None:
    """One GPU object of the --json output."""
    asic = item.get("asic") if isinstance(item.get("asic"), dict) else {}
    name = asic.get("market_name")
    if isinstance(name, str) and not is_placeholder(name):
        gpu.name = name.strip()
    tgv = asic.get("target_graphics_version")
    if tgv is not None:
        _set_gfx(gpu, str(tgv), res)
    vram = item.get("vram") if isinstance(item.get("vram"), dict) else {}
    if "size" in vram:
        _set_bytes(gpu, "total", vram.get("size"))
    mem = item.get("mem_usage") if isinstance(item.get("mem_usage"), dict) else {}
    for key, attr in (("total_vram", "total"), ("used_vram", "used"), ("free_vram", "free")):
        if key in mem:
            _set_bytes(gpu, attr, mem.get(key))
    drv = item.get("driver") if isinstance(item.get("driver"), dict) else {}
    if isinstance(drv.get("version"), str):
        gpu.driver = drv["version"]
    if isinstance(drv.get("os_kernel_version"), str):
        gpu.kernel = drv["os_kernel_version"]


_J_GPU_RE = re.compile(r'^\s*"gpu"\s*:\s*(\d+)\s*,?\s*$')
_J_STR_RE = re.compile(r'^\s*"(market_name|target_graphics_version|rocm_version)"\s*:\s*"([^"]*)"')


def _salvage_json_lines(text: str, gpus: dict[int, SmiGpu], state: dict[str, Any], res: ParseResult) -> None:
    """Read what a cut-off JSON paste still says, line by line; the GPU count stays unknown."""
    cur: SmiGpu | None = None
    for line in text.splitlines():
        m = _J_GPU_RE.match(line)
        if m:
            cur = gpus.setdefault(int(m.group(1)), SmiGpu())
            continue
        m = _J_STR_RE.match(line)
        if not m:
            continue
        key, val = m.group(1), m.group(2)
        if key == "rocm_version" and re.fullmatch(r"\d+\.\d+(?:\.\d+)*", val):
            state["rocm_version"] = val
        elif cur is not None and key == "market_name" and not is_placeholder(val):
            cur.name = val
        elif cur is not None and key == "target_graphics_version":
            _set_gfx(cur, val, res)
    state["partial"] = True


@dataclass
class _Found:
    """What the scans found: the GPUs by index, the tool's error lines and the version strings."""
    gpus: dict[int, SmiGpu] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    primary: str | None = None
    state: dict[str, Any] = field(default_factory=dict)   # rocm_version, amdgpu_version, json, partial
    no_gpus: bool = False
    driver_not_loaded: bool = False


def _parse_into(text: str, res: ParseResult) -> None:
    text = text.replace("\r", "")
    # Each kind of line is found by its own scan, so a 10 MB paste costs a few regex passes, not a Python
    # loop over every line.  Scans that cannot match (marker absent from the whole text) are skipped.
    found = _Found()
    if "ERROR" in text or any(m in text for m in _ERROR_MARKERS):
        _scan_errors(text, found)
    _scan_versions(text, found.state)
    if "|" in text:
        _scan_box(text, found.gpus)
    if "GPU:" in text:
        _scan_gpu_blocks(text, found.gpus, res)
    if _MONITOR_HEADER_RE.search(text):
        _scan_monitor(text, found.gpus)
    marker = cut_marker(text)
    if marker:
        found.state["partial"] = True
        res.notes.append(f"the paste says it was shortened ({marker!r}): the GPU count is not taken from it")
    if "{" in text or "[" in text:
        if re.search(r'"(gpu|asic|market_name|rocm_version|mem_usage|amdsmi_library_version)"', text):
            _parse_json(text, found.gpus, found.state, res)
    _facts(text, found, res)


def _scan_errors(text: str, found: _Found) -> None:
    for m in _ERROR_LINE_RE.finditer(text):
        line = m.group(0).strip()
        if "SyntaxWarning" in line:
            continue
        found.errors.append(line)
        if found.primary is None:
            found.primary = line
        if "Unable to detect any GPU devices" in line:
            found.no_gpus = True
        if "DRIVER_NOT_LOADED" in line or "Driver not loaded" in line:
            found.driver_not_loaded = True


def _scan_versions(text: str, state: dict[str, Any]) -> None:
    """The version strings of ``amd-smi version`` and of the summary box header; the last one wins."""
    if "ROCm version:" in text:
        for m in _ROCM_VERSION_RE.finditer(text):
            state["rocm_version"] = m.group(1)
    if "amdgpu version:" in text:
        for m in _AMDGPU_VERSION_RE.finditer(text):
            state["amdgpu_version"] = m.group(1)


def _scan_box(text: str, gpus: dict[int, SmiGpu]) -> None:
    """The summary box of AMD-SMI 26: a "| <BDF> <name> |" row, then "| <gpu> ... | used/total MB |"."""
    pending_box: str | None = None
    for m in _BOX_LINE_RE.finditer(text):
        line = m.group(0).strip()
        bm = _BOX_NAME_ROW_RE.match(line)
        if bm:
            pending_box = bm.group(2).strip()
            continue
        bm = _BOX_IDX_ROW_RE.match(line)
        if bm and pending_box is not None:
            gpu = gpus.setdefault(int(bm.group(1)), SmiGpu())
            if not is_placeholder(pending_box):
                gpu.name = pending_box
            gpu.used = int(bm.group(2)) * UNIT_BYTES["mb"]
            gpu.total = int(bm.group(3)) * UNIT_BYTES["mb"]
            pending_box = None


def _scan_gpu_blocks(text: str, gpus: dict[int, SmiGpu], res: ParseResult) -> None:
    """"GPU: N" blocks: headers, sections (a key with no value) and the few keys that are read.  A cheap
    substring filter keeps only the lines that can matter before any per-line work is done."""
    cand = [ln for ln in text.split("\n") if ln.endswith(":") or "GPU:" in ln or "VRAM:" in ln
            or "MARKET_NAME:" in ln or "SIZE:" in ln or "VERSION:" in ln]
    cur: SmiGpu | None = None
    stack: list[tuple[int, str]] = []
    for ln in cand:
        body = ln.strip()
        if not body:
            continue
        indent = len(ln.expandtabs()) - len(ln.expandtabs().lstrip())
        if body.startswith("GPU:"):
            num = body[4:].strip()
            if num.isdigit():
                cur = gpus.setdefault(int(num), SmiGpu())
                stack = []
            continue
        if cur is None:
            continue
        key, _, val = body.partition(":")
        key = key.strip()
        val = val.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not val:
            if key and key.replace("_", "").replace(" ", "").isalnum():
                stack.append((indent, key))
            continue
        _block_key(cur, key, val, stack[-1][1] if stack else "", res)


_BLOCK_MEM_KEYS = {"TOTAL_VRAM": "total", "USED_VRAM": "used", "FREE_VRAM": "free"}


def _block_key(gpu: SmiGpu, key: str, val: str, section: str, res: ParseResult) -> None:
    """One ``KEY: value`` line of a "GPU: N" block, inside *section* (the nearest key above it with no value)."""
    if key == "MARKET_NAME":
        if not is_placeholder(val):
            gpu.name = val
    elif key == "TARGET_GRAPHICS_VERSION":
        _set_gfx(gpu, val, res)
    elif key == "SIZE":
        if section == "VRAM":
            _set_bytes(gpu, "total", val)
    elif key in _BLOCK_MEM_KEYS:
        _set_bytes(gpu, _BLOCK_MEM_KEYS[key], val)
    elif key == "VERSION":
        if section == "DRIVER":
            gpu.driver = val
    elif key == "OS_KERNEL_VERSION":
        gpu.kernel = val


def _set_bytes(gpu: SmiGpu, attr: str, value: Any) -> None:
    b = _bytes(value)
    if b is not None:
        setattr(gpu, attr, b)


def _scan_monitor(text: str, gpus: dict[int, SmiGpu]) -> None:
    """amd-smi monitor: a "GPU  POWER  GPU_TEMP ..." header, then one row per GPU (columns split by 2+ spaces)."""
    cols: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _MONITOR_HEADER_RE.match(line):
            cols = re.split(r"\s{2,}", line)
            continue
        if cols is None:
            continue
        if not line[0].isdigit():
            cols = None
            continue
        cells = re.split(r"\s{2,}", line)
        idx = cells[0].split()[0]
        if not idx.isdigit():
            continue
        gpu = gpus.setdefault(int(idx), SmiGpu())
        row = dict(zip(cols, cells))
        if "VRAM_TOTAL" in row:
            _set_bytes(gpu, "total", row["VRAM_TOTAL"])
        if "VRAM_USED" in row:
            _set_bytes(gpu, "used", row["VRAM_USED"])


def _facts(text: str, found: _Found, res: ParseResult) -> None:
    gpus, state = found.gpus, found.state
    facts: dict[str, Any] = {}
    if "rocm_version" in state:
        facts["rocm.version"] = state["rocm_version"]
    selected = bool(_SELECTION_RE.search(text)) or bool(state.get("partial"))
    if gpus:
        order = sorted(gpus)
        if state.get("partial"):
            pass  # a cut-off paste: the note above says so, and the count is unknown
        elif selected:
            res.notes.append("the command selected GPUs (-g): the number of GPUs on the machine cannot be read from it")
        else:
            facts["gpu.count"] = len(order)
        facts["driver.amdgpu_loaded"] = True
        facts.update(gpu_list_facts([gpus[i].name for i in order], [gpus[i].gfx for i in order],
                                    [(gpus[i].total, gpus[i].used, gpus[i].free) for i in order], selected))
        drivers = {(g.driver, g.kernel) for g in gpus.values() if g.driver}
        for drv, kernel in drivers:
            if looks_like_driver_version(drv, kernel):
                facts["driver.amdgpu_version"] = drv.strip()
                break
    elif found.no_gpus and not selected:
        facts["gpu.count"] = 0
    if "driver.amdgpu_version" not in facts and state.get("amdgpu_version"):
        v = state["amdgpu_version"]
        if looks_like_driver_version(v) and "-" not in v:
            facts["driver.amdgpu_version"] = v
    if found.driver_not_loaded:
        facts["driver.amdgpu_loaded"] = False
    if found.primary is not None:
        facts["rocm_smi.error"] = found.primary
    if not gpus and not found.errors and "rocm_version" not in state:
        res.notes.append("no amd-smi content recognised")
    res.facts.update(facts)
    res.errors.extend(found.errors)


# --------------------------------------------------------------------------------------------------
# the process list (amd-smi process --json)


def parse_process_json(text: str) -> list:
    """``amd-smi process --json``: per GPU ``{"gpu": N, "process_list": [{"process_info": {"name", "pid",
    "memory_usage": {"vram_mem": {"value", "unit"}}, "mem": ...}}]}`` (ROCm 6.x), or the by-pid shape of newer
    releases (``{"pid", "name", "gpus": [{"gpu_index", "memory_usage": {"vram_mem": ...}}]}``).  Entries
    that say "No running processes detected" are skipped."""
    from .base import GpuProcess

    start = _JSON_START_RE.search(text)
    if not start:
        return []
    try:
        data = json.loads(text[start.start():])
    except ValueError:
        return []
    out = []

    def mem_of(d: Any) -> int | None:
        if not isinstance(d, dict):
            return None
        mu = d.get("memory_usage")
        if isinstance(mu, dict) and "vram_mem" in mu:
            return _bytes(mu["vram_mem"])
        return _bytes(d.get("mem")) if "mem" in d else None

    def visit(obj: Any, gpu: str, depth: int = 0) -> None:
        if depth > 8:
            return
        if isinstance(obj, list):
            for x in obj[:2000]:
                visit(x, gpu, depth + 1)
            return
        if not isinstance(obj, dict):
            return
        if "gpu" in obj and not isinstance(obj.get("gpu"), (dict, list)):
            gpu = str(obj["gpu"])
        info = obj.get("process_info", obj)
        if isinstance(info, dict) and "pid" in info and str(info.get("pid")).isdigit():
            pid, name = int(info["pid"]), str(info.get("name") or "")
            gpus = info.get("gpus")
            if isinstance(gpus, list) and gpus:
                for g in gpus:
                    if isinstance(g, dict):
                        out.append(GpuProcess(pid, name, mem_of(g), str(g.get("gpu_index", ""))))
            else:
                out.append(GpuProcess(pid, name, mem_of(info), gpu))
            return
        for k, v in obj.items():
            if isinstance(v, (list, dict)):
                visit(v, gpu, depth + 1)

    visit(data, "")
    return out
