"""Parser for ``nvidia-smi`` output in its common forms, old and new:

* the default table (R3xx layout without "CUDA Version", R4xx-R5xx layout, the R55x+ wide layout, and R610+
  where the header says ``KMD Version`` / ``CUDA UMD Version``); Windows rows show WDDM/TCC;
* ``nvidia-smi -q`` / ``-a`` (``==============NVSMI LOG==============``);
* ``--query-gpu=... --format=csv`` with a header line (units optional);
* ``nvidia-smi -L`` (``GPU 0: NAME (UUID: GPU-...)``);
* its error outputs ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
  "Failed to initialize NVML: Driver/library version mismatch", "No devices were found", ...).

Names in the default table are truncated by nvidia-smi itself ("NVIDIA GeForce RTX 4060 ..."); they are
kept as printed, and a note says so.  Only the standard library; anchored, linear patterns.
"""
from __future__ import annotations

import re

from ..smi_values import MIB, number
from .base import GpuProcess, Opening, ParseResult

_HDR_DRIVER = re.compile(r"(?:Driver|KMD) Version:\s*(\d+(?:\.\d+)+)")
_HDR_CUDA = re.compile(r"CUDA (?:UMD )?Version:\s*(\d+(?:\.\d+)+)")
_HDR_SMI = re.compile(r"NVIDIA-SMI\s+(\d+(?:\.\d+)+)")
# "|   0  NVIDIA GeForce RTX 4090        On  |   00000000:01:00.0  On |   Off |"
_ROW = re.compile(
    r"^\|\s+(\d+)\s+(.+?)\s+(On|Off|WDDM|TCC|N/A)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)"
)
_MEM = re.compile(r"\|\s*(\d+)Mi?B\s*/\s*(\d+)Mi?B\s*\|")  # drivers before 331 print "MB" (meaning MiB)
# a row of the table's process list: GPU, (GI and CI ids since the MIG-era drivers), PID, type, name, memory
#   "|    0   N/A  N/A      1234      C   python                          10240MiB |"
#   "|    0      1234      C   python                                       1234MiB |"   (older drivers)
_PROC_ROW = re.compile(r"^\|\s+(\d{1,2})\s+(?:\S{1,6}\s+\S{1,6}\s+)?(\d{1,10})\s+(?:C|G|M|C\+G|M\+C)\s+\S.{0,200}?\s"
                       r"(\d{1,9}Mi?B|N/A)\s*\|\s*$")
_Q_KV = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9 ./()_-]*?)\s*:\s*(.*)$")
_L_LINE = re.compile(r"^GPU (\d+): (.+?) \(UUID: (GPU-[0-9A-Fa-f-]+)?")
_MIB_VALUE = re.compile(r"^(\d+)(?:\s*MiB)?$")
_CC = re.compile(r"^(\d+)\.(\d+)$")
_X_DRIVER = re.compile(r"<driver_version>([^<]{1,40})</driver_version>")
_X_CUDA = re.compile(r"<cuda_version>([^<]{1,40})</cuda_version>")
_X_ATTACHED = re.compile(r"<attached_gpus>(\d+)</attached_gpus>")
_X_NAME = re.compile(r"<product_name>([^<]{1,200})</product_name>")
_X_FB = re.compile(r"<fb_memory_usage>\s*<total>(\d+) MiB</total>\s*(?:<reserved>\d+ MiB</reserved>\s*)?"
                   r"<used>(\d+) MiB</used>\s*<free>(\d+) MiB</free>")

_ERROR_MESSAGES = (
    "NVIDIA-SMI has failed",
    "Failed to initialize NVML",
    "No devices were found",
    "couldn't find libnvidia-ml.so",
    "Unable to determine the device handle",
    "nvidia-smi: command not found",
    "nvidia-smi: not found",
    "is not recognized as an internal or external command",
    "NVML library version:",
    "GPU is lost",
    "Unknown Error",
    "Insufficient Permissions",
)

_CSV_FIELDS = ("name", "driver_version", "memory.total", "memory.used", "memory.free", "index", "pci.bus_id",
               "compute_cap", "uuid", "gpu_name", "count", "utilization.gpu", "temperature.gpu", "power.limit")


def detect(text: str) -> float:
    head = text[:300_000]
    if "NVSMI LOG" in head or "<nvidia_smi_log>" in head:
        return 0.97
    if "NVIDIA-SMI" in head and ("Driver Version" in head or "KMD Version" in head):
        return 0.97
    for e in _ERROR_MESSAGES[:6]:
        if e in head:
            return 0.9
    for line in head.split("\n", 50)[:50]:
        s = line.strip().lower()
        if s and "," in s and s.split(",", 1)[0].strip() in _CSV_FIELDS:
            cols = [c.strip().split(" ", 1)[0] for c in s.split(",")]
            if sum(1 for c in cols if c in _CSV_FIELDS) >= 2:
                return 0.85
    if "(UUID: GPU-" in head:
        return 0.8
    if "NVIDIA-SMI" in head:
        return 0.6
    return 0.0


OPENING = Opening("nvidia_smi", "nvidia-smi", markers=("NVIDIA-SMI", "NVSMI LOG", "<nvidia_smi_log>",
                  "Failed to initialize NVML", "GPU 0: ", "name, ", "index, "), lead=10_000, what="the nvidia-smi output")


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


def _set_memory(facts: dict, totals: list[int], used: list[int | None], free: list[int | None] | None = None) -> None:
    """Memory facts of the GPU with the most VRAM (MiB in, bytes out); 'free' as printed when printed."""
    if not totals:
        return
    i = max(range(len(totals)), key=lambda k: totals[k])
    facts["gpu.vram_total_bytes"] = totals[i] * MIB
    if i < len(used) and used[i] is not None:
        facts["gpu.vram_used_bytes"] = used[i] * MIB
    if free is not None and i < len(free) and free[i] is not None:
        facts["gpu.vram_free_bytes"] = free[i] * MIB
    elif i < len(used) and used[i] is not None:
        facts["gpu.vram_free_bytes"] = max(totals[i] - used[i], 0) * MIB


def _set_unlisted(facts: dict, mems: list[tuple[int, int]], procs: list[tuple[int, int | None]]) -> None:
    """gpu.unlisted_mem_*: memory in use on a GPU that the table's own process list does not account for (a process
    in another container or pid namespace, or memory a dead process never gave back); the GPU where that is largest.
    Unknown when a listed process's memory is not shown (N/A, as under Windows WDDM) or a row names no GPU seen."""
    listed = [0] * len(mems)
    for gpu, mib in procs:
        if mib is None or gpu >= len(mems):
            return
        listed[gpu] += mib
    best = max(range(len(mems)), key=lambda i: mems[i][1] - listed[i])
    total, used = mems[best]
    unlisted = max(0, used - listed[best])
    if total > 0:
        facts["gpu.unlisted_mem_bytes"] = unlisted * MIB
        facts["gpu.unlisted_mem_fraction"] = round(unlisted / total, 4)


def _parse_into(text: str, res: ParseResult) -> None:
    lines = [ln for ln in text.split("\n") if len(ln) <= 4000]
    facts = res.facts

    # --- the tool's own errors: first line verbatim -----------------------------------------------------
    for ln in lines:
        s = ln.strip()
        if any(e in s for e in _ERROR_MESSAGES):
            if s not in res.errors and len(res.errors) < 50:
                res.errors.append(s)
    if res.errors:
        facts["nvidia.smi_error"] = res.errors[0]

    if "<nvidia_smi_log>" in text:
        _parse_xml(text, res)
    elif any("NVSMI LOG" in ln for ln in lines[:200]):
        _parse_query(lines, res)
    elif any(("NVIDIA-SMI" in ln and ("Version:" in ln)) for ln in lines):
        _parse_table(lines, res)
    elif not _parse_csv(lines, res):
        _parse_list(lines, res)

    if facts.get("nvidia.driver_version"):
        facts["driver.nvidia_loaded"] = True
        facts["gpu.vendors"] = ["nvidia"]
    elif facts.get("gpu.names"):
        facts["gpu.vendors"] = ["nvidia"]
    if not facts and not res.errors:
        res.notes.append("no nvidia-smi output recognised")


def _parse_table(lines: list[str], res: ParseResult) -> None:
    facts = res.facts
    names: list[str] = []
    mems: list[tuple[int, int] | None] = []  # (total MiB, used MiB) per GPU row
    in_processes = False
    proc_rows: list[tuple[int, int | None]] | None = None   # (GPU index, MiB or None) once the list's header is passed
    proc_done = False
    pending_mem = 0
    truncated_names = False
    for ln in lines:
        s = ln.strip()
        if "Driver Version" in s or "KMD Version" in s:
            m = _HDR_DRIVER.search(s)
            if m and "nvidia.driver_version" not in facts:
                facts["nvidia.driver_version"] = m.group(1)
            m = _HDR_CUDA.search(s)
            if m and "nvidia.cuda_version" not in facts:
                facts["nvidia.cuda_version"] = m.group(1)
            continue
        if "rocesses:" in s and s.startswith("|"):  # "| Processes:" / "| Compute processes:"
            in_processes = True
        if in_processes:
            if s.startswith("|="):
                proc_rows = []
            elif proc_rows is not None:
                m = _PROC_ROW.match(s)
                if m:
                    mem = m.group(3)
                    proc_rows.append((int(m.group(1)), None if mem == "N/A" else int(mem.rstrip("MiB"))))
                elif s.startswith("+") or (s and not s.startswith("|")):
                    proc_done = True
            continue
        m = _ROW.match(s) if s.startswith("|") and "." in s else None
        if m:
            name = m.group(2).strip()
            if name.endswith("..."):
                truncated_names = True
            names.append(name)
            mems.append(None)
            pending_mem = 2
            continue
        if pending_mem:
            pending_mem -= 1
            m = _MEM.search(s)
            if m:
                mems[-1] = (int(m.group(2)), int(m.group(1)))
                pending_mem = 0
    if "nvidia.driver_version" not in facts:
        for ln in lines:
            m = _HDR_SMI.search(ln)
            if m:
                facts["nvidia.driver_version"] = m.group(1)
                res.notes.append("driver version taken from the NVIDIA-SMI banner")
                break
    if names and not in_processes:
        # the process table follows the GPU rows; without it the paste may have lost GPUs
        res.notes.append(f"the GPU table is not followed by the process table: output truncated? "
                         f"({len(names)} GPU rows seen; count, names and memory not established)")
    elif names:
        facts["gpu.names"] = names
        facts["gpu.count"] = len(names)
        if mems and all(x is not None for x in mems):
            _set_memory(facts, [x[0] for x in mems], [x[1] for x in mems])
        if mems and all(x is not None for x in mems) and proc_rows is not None and proc_done:
            _set_unlisted(facts, mems, proc_rows)  # type: ignore[arg-type]
    if truncated_names:
        res.notes.append("nvidia-smi's table truncates long GPU names ('...'); they are kept as printed")
    if "nvidia.cuda_version" not in facts and "nvidia.driver_version" in facts:
        res.notes.append("this nvidia-smi does not print the CUDA version the driver supports (old driver)")


def _parse_query(lines: list[str], res: ParseResult) -> None:
    facts = res.facts
    names: list[str] = []
    totals: list[int] = []
    used: list[int | None] = []
    free: list[int | None] = []
    attached = None
    in_fb = False
    fb_indent = 0
    for ln in lines:
        m = _Q_KV.match(ln)
        if not m:
            ind = len(ln) - len(ln.lstrip())
            if ln.strip().startswith("FB Memory Usage"):
                in_fb = True
                fb_indent = ind
            elif in_fb and ln.strip() and ind <= fb_indent:
                in_fb = False  # the next section ("BAR1 Memory Usage", ...) starts
            continue
        indent, key, value = len(m.group(1)), m.group(2).strip(), m.group(3).strip()
        if in_fb and indent <= fb_indent:
            in_fb = False
        if key in ("Driver Version", "KMD Version") and "nvidia.driver_version" not in facts and value:
            facts["nvidia.driver_version"] = value
        elif key in ("CUDA Version", "CUDA UMD Version") and "nvidia.cuda_version" not in facts and value not in ("", "N/A"):
            facts["nvidia.cuda_version"] = value
        elif key == "Attached GPUs" and value.isdigit():
            attached = int(value)
        elif key == "Product Name":
            names.append(value)
        elif in_fb and key == "Total":
            mm = _MIB_VALUE.match(value)
            if mm:
                totals.append(int(mm.group(1)))
                used.append(None)
                free.append(None)
        elif in_fb and key == "Used":
            mm = _MIB_VALUE.match(value)
            if mm and used:
                used[-1] = int(mm.group(1))
        elif in_fb and key == "Free":
            mm = _MIB_VALUE.match(value)
            if mm and free and free[-1] is None:
                free[-1] = int(mm.group(1))
    if attached is not None:
        facts["gpu.count"] = attached
    if names and (attached is None or attached == len(names)):
        facts["gpu.names"] = names
    elif names:
        res.notes.append(f"{attached} GPUs attached but only {len(names)} described (nvidia-smi -q -i?)")
    if totals:
        _set_memory(facts, totals, used, free)


def _parse_xml(text: str, res: ParseResult) -> None:
    """``nvidia-smi -q -x``: the same report as XML (read with patterns, not an XML parser, so that a
    truncated paste still yields what it holds)."""
    facts = res.facts
    m = _X_DRIVER.search(text)
    if m:
        facts["nvidia.driver_version"] = m.group(1).strip()
    m = _X_CUDA.search(text)
    if m and m.group(1).strip() not in ("", "N/A"):
        facts["nvidia.cuda_version"] = m.group(1).strip()
    m = _X_ATTACHED.search(text)
    attached = int(m.group(1)) if m else None
    if attached is not None:
        facts["gpu.count"] = attached
    names = [n.strip() for n in _X_NAME.findall(text)]
    if names and (attached is None or attached == len(names)):
        facts["gpu.names"] = names
    totals, used, free = [], [], []
    for t, u, f in _X_FB.findall(text):
        totals.append(int(t))
        used.append(int(u))
        free.append(int(f))
    if totals:
        _set_memory(facts, totals, used, free)
    if "</nvidia_smi_log>" not in text:
        res.notes.append("the XML report is not closed: output truncated?")


def _parse_csv(lines: list[str], res: ParseResult) -> bool:
    facts = res.facts
    header_idx = None
    cols: list[str] = []
    for i, ln in enumerate(lines[:200]):
        s = ln.strip()
        if not s or "," not in s:
            continue
        parts = [c.strip() for c in s.split(",")]
        keys = [p.split(" ", 1)[0].lower() for p in parts]
        if keys[0] in _CSV_FIELDS and sum(1 for k in keys if k in _CSV_FIELDS) >= 2:
            header_idx, cols = i, keys
            break
    if header_idx is None:
        return False
    names: list[str] = []
    totals: list[int] = []
    used: list[int | None] = []
    caps: list[str] = []
    drivers: list[str] = []
    for ln in lines[header_idx + 1:]:
        s = ln.strip()
        if not s:
            if names or totals:
                break
            continue
        parts = [c.strip() for c in s.split(",")]
        if len(parts) != len(cols):
            break
        row = dict(zip(cols, parts))
        if "name" in row:
            names.append(row["name"])
        if "driver_version" in row and row["driver_version"] not in ("", "[N/A]", "N/A"):
            drivers.append(row["driver_version"])
        if "memory.total" in row:
            m = _MIB_VALUE.match(row["memory.total"])
            if m:
                totals.append(int(m.group(1)))
                u = _MIB_VALUE.match(row.get("memory.used", ""))
                f = _MIB_VALUE.match(row.get("memory.free", ""))
                if u:
                    used.append(int(u.group(1)))
                elif f:
                    used.append(max(int(m.group(1)) - int(f.group(1)), 0))
                else:
                    used.append(None)
        if "compute_cap" in row:
            c = _CC.match(row["compute_cap"])
            if c:
                cap = f"sm_{c.group(1)}{c.group(2)}"
                if cap not in caps:
                    caps.append(cap)
    if names:
        facts["gpu.names"] = names
        facts["gpu.count"] = len(names)
    if drivers:
        facts["nvidia.driver_version"] = drivers[0]
    if totals:
        _set_memory(facts, totals, used)
    if caps:
        facts["nvidia.compute_caps"] = caps
    return True


def _parse_list(lines: list[str], res: ParseResult) -> None:
    names: list[str] = []
    uuids: list[str] = []
    for ln in lines:
        m = _L_LINE.match(ln.strip())
        if m:
            names.append(m.group(2).strip())
            if m.group(3):
                uuids.append(m.group(3))
    if names:
        res.facts["gpu.names"] = names
        res.facts["gpu.count"] = len(names)
        if len(uuids) == len(names):  # what CUDA_VISIBLE_DEVICES=GPU-... is checked against
            res.facts["gpu.uuids"] = uuids


# --------------------------------------------------------------------------------------------------
# the compute processes and the GPUs' load, as the probe asks for them


_NA = ("[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Insufficient Permissions]", "")


def parse_compute_apps(text: str) -> list:
    """``nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory,gpu_uuid --format=csv,noheader,nounits``
    (a header line and units are tolerated): one :class:`GpuProcess` per row.  Names may contain commas
    (process names are the program's path), so pid is read from the left and memory and UUID from the right.
    "No running processes found" and an empty output give []."""
    out = []
    for ln in text.replace("\r", "").split("\n")[:5000]:
        s = ln.strip()
        if not s or s.lower().startswith("pid") or "," not in s:
            continue
        head, _, rest = s.partition(",")
        tail = rest.rsplit(",", 2)
        if len(tail) != 3 or not head.strip().isdigit():
            continue
        name, mem_s, gpu = tail[0].strip(), tail[1].strip(), tail[2].strip()
        parts = [head.strip()]
        m = re.match(r"^(\d+)(?:\s*MiB)?$", mem_s)
        mem = int(m.group(1)) * MIB if m else None
        out.append(GpuProcess(int(parts[0]), name, mem, gpu))
    return out


def parse_gpu_load(text: str) -> list[dict]:
    """``nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits``:
    one dict per GPU with index, uuid, busy (percent or None), used and total (bytes or None)."""
    out = []
    for ln in text.replace("\r", "").split("\n")[:1000]:
        parts = [p.strip() for p in ln.split(",")]
        if len(parts) != 5 or not parts[0].isdigit():
            continue
        busy, used, total = (number(x, strict=False) for x in parts[2:5])
        out.append({"index": int(parts[0]), "uuid": parts[1], "busy": busy,
                    "used": int(used) * MIB if used is not None else None,
                    "total": int(total) * MIB if total is not None else None})
    return out
