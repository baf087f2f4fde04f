"""Parser for ``rocminfo`` output, every layout since ROCm 5 (and the older error lines).

What it reads:

* the preamble rocminfo prints before touching the runtime: ``ROCk module [version X] is loaded``,
  ``ROCk module is NOT loaded/NOT live, possibly no GPU devices``, ``Unable to open /dev/kfd
  read-write: <strerror>``, the group-membership lines, ``WSL environment detected.``;
* the HSA failure lines: ``hsa api call failure at: <file>:<line>`` + ``Call returned HSA_STATUS_...``
  (older builds: ``hsa api call failure at line N, file: ... Call returned 4104``);
* ``HSA System Attributes`` (``Runtime Version``, ``XNACK enabled`` since ROCm 6.x);
* the agents: CPU, GPU and DSP (the XDNA NPU shows up as ``aie2`` of Device Type DSP on Strix Halo),
  their ``Name`` / ``Marketing Name`` / ``Uuid`` / ``Device Type`` / ``Memory Properties`` (``APU``
  since ROCm 6.x) / first coarse-grained pool, and their ISA names
  (``amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-``; ROCm 7 adds ``...--gfx11-generic``);
* filtered pastes users make: ``rocminfo | grep -E "Name|Marketing"``, ``grep -A 14 "Agent "``
  (with grep's ``--`` separators), ``grep xnack`` (ISA lines only), indented inside Markdown.

rocminfo's source (ROCm/rocminfo, rocminfo.cc) shows where each line comes from; the group check
uses ``getgrouplist`` on the *group database*, so "is member of render group" says nothing about the
running session, and no group fact is taken from it.

This module also holds small helpers the rocm_smi and amd_smi parsers share (gfx normalisation,
the APU/dGPU table, ANSI stripping).  Only the standard library is used; every pattern is simple and
linear.
"""
from __future__ import annotations

import re
from typing import Any

from ..textnorm import strip_ansi  # noqa: F401  (re-exported for rocm_smi / amd_smi)
from .base import ParseResult, guarded_parse

KIND = "rocminfo"

# --- helpers shared with rocm_smi / amd_smi ---------------------------------------------------------

# a gfx target keeps all its hex digits (gfx90a, gfx90c, gfx1151); "gfx9-generic" / "gfx11-generic"
# are generic ISAs, not targets, and must not match as "gfx9" / "gfx11".
GFX_RE = re.compile(r"gfx[0-9a-f]+(?![0-9a-zA-Z_-])")
_VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)*")

# Which gfx targets exist only as integrated GPUs (APUs) and which only as discrete cards.  From the
# processor table of LLVM's AMDGPU backend (https://llvm.org/docs/AMDGPUUsage.html#processors, the
# "dGPU"/"APU" column) and AMD's product lists.  Targets used by both kinds (gfx940/gfx942: MI300A is an
# APU, MI300X is not) are deliberately absent: they are classified only when the tool says so.
APU_TARGETS = frozenset({
    "gfx801", "gfx902", "gfx909", "gfx90c", "gfx1013", "gfx1033", "gfx1035", "gfx1036", "gfx1037",
    "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
})
DGPU_TARGETS = frozenset({
    "gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx950", "gfx1010", "gfx1011", "gfx1012",
    "gfx1030", "gfx1031", "gfx1032", "gfx1034", "gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201",
})
# targets whose hardware has no XNACK feature at all (RDNA2 and later): XNACK cannot be on there.
_NO_XNACK_PREFIXES = ("gfx103", "gfx11", "gfx12")


_CUT_MARKER_RE = re.compile(r"(?m)^[ \t]*(?:\[[Oo]utput truncated\]|\[truncated\]|\(truncated\)|-{2,}[ \t]*snipped[ \t]*-{2,}"
                            r"|\[\.\.\.\]|\.\.\.[ \t]*(?:snip|cut|more)\b[^\n]*)[ \t]*$")


def cut_marker(text: str) -> str | None:
    """The line by which a paste says it was shortened ('[output truncated]', '---- snipped ----'), if any."""
    if "truncated" not in text and "snipped" not in text and "..." not in text:
        return None  # the usual case, decided without a regex pass over a large paste
    m = _CUT_MARKER_RE.search(text)
    return m.group(0).strip() if m else None




def normalise_gfx(token: str) -> tuple[str | None, bool]:
    """Return (canonical gfx target, was_rewritten) for a token like 'gfx90a', 'gfx9010', 'gfx90010'.

    Some rocm-smi/amd-smi releases print the KFD ``gfx_target_version`` in decimal: the stepping of
    gfx90a (9.0.10) comes out as ``gfx9010`` (rocm-smi, ROCm/rocm_smi_lib#159) or the whole number as
    ``gfx90010``.  Those are rewritten to the real target; hex targets are kept as they are.
    """
    token = token.strip().lower()
    if not token.startswith("gfx"):
        return None, False
    digits = token[3:]
    if not digits or not all(c in "0123456789abcdef" for c in digits):
        return None, False
    if any(c in "abcdef" for c in digits):
        return token, False
    if len(digits) >= 5:  # MMmmss as one decimal number: 90010, 90402, 110501
        n = int(digits)
        major, minor, step = n // 10000, (n // 100) % 100, n % 100
        if major < 1 or minor > 15 or step > 15:
            return None, False
        return f"gfx{major}{minor:x}{step:x}", True
    if len(digits) == 4 and digits[0] in "6789":  # single-digit major with a two-digit decimal stepping
        major, minor, step = int(digits[0]), int(digits[1]), int(digits[2:])
        if step > 15:
            return None, False
        return f"gfx{major}{minor}{step:x}", True
    return token, False


def gpu_list_facts(names: list[str | None], targets: list[str | None], memory: list[tuple[int | None, int | None, int | None]],
                   selected: bool) -> dict[str, Any]:
    """Facts common to the SMI tools from per-GPU (name, gfx, (total, used, free)) in enumeration order.

    Integrated/discrete counts are only given for a full listing (*selected* False); VRAM is the biggest GPU's.
    """
    facts: dict[str, Any] = {}
    if names and all(names):
        facts["gpu.names"] = list(names)
    if targets and all(targets):
        facts["gpu.gfx_targets"] = list(targets)
        kinds = [classify_gfx(t) for t in targets]
        if all(kinds) and not selected:
            facts["gpu.integrated_count"] = kinds.count("integrated")
            facts["gpu.discrete_count"] = kinds.count("discrete")
            facts["gpu.first_is_integrated"] = kinds[0] == "integrated" and "discrete" in kinds
    with_total = [m for m in memory if m[0] is not None]
    if with_total:
        total, used, free = max(with_total, key=lambda m: m[0] or 0)
        facts["gpu.vram_total_bytes"] = total
        if used is not None:
            facts["gpu.vram_used_bytes"] = used
        if free is not None:
            facts["gpu.vram_free_bytes"] = free
        elif used is not None and total is not None and total >= used:
            facts["gpu.vram_free_bytes"] = total - used
    return facts


def classify_gfx(gfx: str | None) -> str | None:
    if gfx in APU_TARGETS:
        return "integrated"
    if gfx in DGPU_TARGETS:
        return "discrete"
    return None


def lacks_xnack(gfx: str | None) -> bool:
    return bool(gfx) and gfx.startswith(_NO_XNACK_PREFIXES)


def looks_like_driver_version(value: str, kernel: str | None = None) -> bool:
    """True for an amdgpu DKMS module version such as '6.10.5' (not a kernel release like '6.8.0-45-generic').

    Tools fall back to the kernel release when the in-tree driver has no module version, so only a
    bare dotted number that is not the kernel release counts as a driver version.
    """
    value = value.strip()
    if not re.fullmatch(r"\d+\.\d+(?:\.\d+){0,2}", value):
        return False
    return not (kernel and kernel.strip().startswith(value))


def is_placeholder(value: str) -> bool:
    """'N/A', empty, or a bare PCI id like '0x738c' (what old tools print when they cannot name a card)."""
    v = value.strip()
    return (not v or v.upper() in ("N/A", "NA", "NONE", "UNKNOWN", "UNSUPPORTED")
            or bool(re.fullmatch(r"0x[0-9a-fA-F]+", v)))


# --- rocminfo itself -------------------------------------------------------------------------------

_STRERROR_TO_ERRNO = {
    "permission denied": "EACCES",
    "operation not permitted": "EPERM",
    "no such file or directory": "ENOENT",
    "no such device": "ENODEV",
    "no such device or address": "ENXIO",
    "cannot allocate memory": "ENOMEM",
    "invalid argument": "EINVAL",
    "device or resource busy": "EBUSY",
    "input/output error": "EIO",
    "too many open files": "EMFILE",
}

_ROCK_VERSION_RE = re.compile(r"ROCk module version (\S+) is loaded")
_KB_RE = re.compile(r"(\d+)\(0x[0-9a-fA-F]+\)\s*KB")


def detect(text: str) -> float:
    head = strip_ansi(text[:200_000])
    score = 0.0
    if "HSA System Attributes" in head or "HSA Agents" in head:
        score = 0.95
    if "ROCk module" in head and ("is loaded" in head or "NOT loaded" in head or "NOT live" in head):
        score = max(score, 0.9)
    if "Unable to open /dev/kfd read-write" in head or "hsa api call failure at" in head:
        score = max(score, 0.85)
    if "Marketing Name:" in head:
        score = max(score, 0.8)
    if "Device Type:" in head and "Agent " in head:
        score = max(score, 0.75)
    if "amdgcn-amd-amdhsa--" in head and "Name:" in head:
        score = max(score, 0.6)
    return score


class _Agent:
    __slots__ = ("name", "marketing", "uuid", "device_type", "mem_props", "isas", "coarse_kb",
                 "_pool_is_coarse", "complete")

    def __init__(self) -> None:
        self.name: str | None = None
        self.marketing: str | None = None
        self.uuid: str | None = None
        self.device_type: str | None = None
        self.mem_props: str | None = None   # None: line absent; "": present and empty; "APU"
        self.isas: list[str] = []
        self.coarse_kb: int | None = None
        self._pool_is_coarse = False
        self.complete = False

    def is_gpu(self) -> bool:
        if self.device_type is not None:
            return self.device_type.upper() == "GPU"
        if self.name and GFX_RE.fullmatch(self.name):
            return True
        return bool(self.isas)

    def gfx(self) -> str | None:
        if self.name:
            m = GFX_RE.match(self.name)
            if m:
                return m.group(0)
        for isa in self.isas:
            m = GFX_RE.search(isa)
            if m and "generic" not in isa:
                return m.group(0)
        return None

    def native_isa(self) -> str | None:
        for isa in self.isas:
            if "generic" not in isa:
                return isa
        return None


def _xnack_of(isa: str) -> bool | None:
    if ":xnack+" in isa:
        return True
    if ":xnack-" in isa:
        return False
    return None


def parse(text: str) -> ParseResult:
    return guarded_parse(KIND, text, _parse_into, "rocminfo")


def _parse_into(text: str, res: ParseResult) -> None:
    if not isinstance(text, str):
        text = str(text)
    text = strip_ansi(text).replace("\x00", "")
    if not text.strip():
        res.notes.append("empty input")
        return

    facts: dict[str, Any] = {}
    errors: list[str] = []
    primary_error: str | None = None
    agents: list[_Agent] = []
    orphan_isas: list[str] = []
    cur: _Agent | None = None
    rock_loaded: bool | None = None
    kfd_errno: str | None = None
    kfd_group_line: str | None = None
    saw_attributes = saw_agents_header = saw_done = False
    system_xnack: bool | None = None
    in_pool = False

    def set_primary(line: str) -> None:
        nonlocal primary_error
        if primary_error is None:
            primary_error = line

    for raw in text.splitlines():
        # pastes carry Markdown around the text: "``` ROCk module is loaded", "> Name: ..."
        line = raw.strip().lstrip("`>").strip()
        if not line:
            continue
        # --- preamble and error lines ------------------------------------------------------------
        if line.startswith("ROCk module"):
            m = _ROCK_VERSION_RE.search(line)
            if m:
                rock_loaded = True
                facts["_rock_version"] = m.group(1)
            elif "NOT loaded" in line or "NOT live" in line:
                rock_loaded = False
                errors.append(line)
                set_primary(line)
                if "NOT live" in line:
                    res.notes.append("the amdgpu module is present but not live (its initialisation did not finish)")
            elif "is loaded" in line:
                rock_loaded = True
            continue
        if line.startswith("Unable to open /dev/kfd read-write"):
            errors.append(line)
            set_primary(line)
            reason = line.partition("read-write:")[2].strip().lower()
            kfd_errno = _STRERROR_TO_ERRNO.get(reason, "OTHER")
            continue
        if " member of " in line and "group" in line:
            kfd_group_line = line
            if " is not member of " in line:
                errors.append(line)
            continue
        if line.startswith(("Failed to get user name", "Failed to get group info", "Failed to find pwd entry",
                            "Failed to get user group list")):
            errors.append(line)
            continue
        if line.startswith("hsa api call failure"):
            errors.append(line)
            set_primary(line)
            continue
        if line.startswith("Call returned"):
            errors.append(line)
            set_primary(line)
            continue
        if line.startswith(("libkmod: ERROR", "Error: could not get list of modules")):
            errors.append(line)
            continue
        if line.startswith(("Segmentation fault", "Aborted (core dumped)", "Bus error")):
            errors.append(line)  # the shell's report that rocminfo itself crashed
            set_primary(line)
            continue
        if line.startswith("WSL environment detected"):
            facts["container.kind"] = "wsl"
            facts["container.present"] = True
            continue
        # --- structure -------------------------------------------------------------------------------
        if line.startswith("HSA System Attributes"):
            saw_attributes = True
            continue
        if line.startswith("HSA Agents"):
            saw_agents_header = True
            continue
        if line.startswith("*** Done ***"):
            saw_done = True
            if cur is not None:
                cur.complete = True
            continue
        if line.startswith("Agent ") and line[6:].strip().isdigit():
            if cur is not None:
                cur.complete = True
            cur = _Agent()
            agents.append(cur)
            in_pool = False
            continue
        key, sep, val = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        val = val.strip()
        if key == "Name":
            if val.startswith("amdgcn-"):
                if cur is not None:
                    cur.isas.append(val)
                else:
                    orphan_isas.append(val)
                continue
            if cur is None or cur.name is not None:
                if cur is not None:
                    cur.complete = True
                cur = _Agent()
                agents.append(cur)
                in_pool = False
            cur.name = val
            continue
        if key == "Runtime Version" and "hsa.runtime_version" not in facts:
            m = _VERSION_RE.match(val)
            if m:
                facts["hsa.runtime_version"] = m.group(0)
            continue
        if key == "XNACK enabled":
            if val.upper().startswith("YES"):
                system_xnack = True
            elif val.upper().startswith("NO"):
                system_xnack = False
            continue
        if cur is None:
            continue
        if key == "Marketing Name":
            cur.marketing = val
        elif key == "Uuid":
            cur.uuid = val
        elif key == "Device Type":
            cur.device_type = val.split()[0] if val else val
        elif key == "Memory Properties":
            cur.mem_props = val
        elif key == "Pool Info":
            in_pool = True
        elif key == "Segment" and in_pool:
            cur._pool_is_coarse = val.startswith("GLOBAL") and "COARSE GRAINED" in val and "KERNARG" not in val
        elif key == "Size" and in_pool and cur._pool_is_coarse and cur.coarse_kb is None:
            m = _KB_RE.match(val)
            if m:
                cur.coarse_kb = int(m.group(1))
        elif key == "ISA Info":
            in_pool = False

    full_format = saw_attributes or saw_agents_header
    truncated = full_format and bool(agents) and not saw_done
    marker = cut_marker(text)
    if marker and agents:
        truncated = True
        res.notes.append(f"the paste says it was shortened ({marker!r}): GPU counts are not taken from it")
    elif truncated:
        last = agents[-1]
        where = "mid-agent" if (last.device_type is None or (last.is_gpu() and not last.isas)) else "before '*** Done ***'"
        res.notes.append(f"output ends {where}: truncated? GPU counts are not taken from a partial listing")

    # --- driver and /dev/kfd -------------------------------------------------------------------------
    if rock_loaded is not None:
        facts["driver.amdgpu_loaded"] = rock_loaded
    rock_version = facts.pop("_rock_version", None)
    if rock_version and looks_like_driver_version(rock_version):
        facts["driver.amdgpu_version"] = rock_version
    if kfd_group_line and " is not member of " in kfd_group_line and kfd_errno is None:
        # older rocminfo warns about the group even when /dev/kfd opened fine: a warning, not the failure
        errors.remove(kfd_group_line)
        res.notes.append("rocminfo warned: " + kfd_group_line)
    if kfd_errno is not None:
        facts["kfd.open_error"] = kfd_errno
        facts["kfd.present"] = kfd_errno != "ENOENT"
        facts["kfd.permission_denied"] = kfd_errno in ("EACCES", "EPERM")
        if kfd_errno == "ENOENT":
            res.notes.append("/dev/kfd does not exist: the amdgpu/KFD driver is not loaded, or the device nodes were not passed into the container")
        elif kfd_errno in ("EACCES", "EPERM"):
            hint = "opening /dev/kfd was refused (permissions)"
            if kfd_group_line and " is not member of " in kfd_group_line:
                hint += ("; the group database does not list this user in the group that owns /dev/kfd: add the user "
                         "to it (usermod -aG) and log in again")
            elif kfd_group_line and " is member of " in kfd_group_line:
                hint += ("; rocminfo reads the group database, so 'is member of' with this error usually means the "
                         "group was added but this session has not logged in again (or a container lacks the group id)")
            res.notes.append(hint)
        elif kfd_errno == "EINVAL":
            res.notes.append("opening /dev/kfd failed with EINVAL: the driver is loaded but no usable compute device was initialised (see dmesg)")
    elif rock_loaded and agents and full_format:
        # rocminfo only lists agents after open("/dev/kfd", O_RDWR) succeeded
        facts["kfd.present"] = True
        facts["kfd.permission_denied"] = False

    # --- agents --------------------------------------------------------------------------------------
    gpus = [a for a in agents if a.is_gpu()]
    # a snippet with neither the header nor '*** Done ***' nor the CPU agent that opens every listing (one GPU agent
    # copied out of it) shows some GPUs, not how many there are; a grep over the whole listing keeps the CPU agent
    snippet = not full_format and not saw_done and bool(agents) and all(a.is_gpu() for a in agents)
    if gpus:
        if not truncated and not snippet:
            facts["gpu.count"] = len(gpus)
        elif snippet and not truncated:
            res.notes.append("a part of rocminfo's listing (no header, no '*** Done ***'): the GPU count is not taken from it")
        names = [a.marketing for a in gpus]
        if all(n for n in names):
            facts["gpu.names"] = names
        targets = [a.gfx() for a in gpus]
        if all(targets):
            facts["gpu.gfx_targets"] = targets
        isas = [a.native_isa() for a in gpus]
        if all(isas):
            facts["gpu.isa_names"] = isas
        # what ROCR_VISIBLE_DEVICES=GPU-... is checked against ("GPU-XX": a GPU without a unique id)
        uuids = [a.uuid for a in gpus]
        if not truncated and all(u and re.fullmatch(r"GPU-[0-9A-Fa-f]{16}", u) for u in uuids):
            facts["gpu.uuids"] = uuids
        # integrated or discrete: "Memory Properties: APU" where rocminfo prints that line (ROCm 6.x+),
        # else the target's table entry; "Uuid: GPU-XX" alone proves nothing (RX 6800 prints it too).
        kinds: list[str | None] = []
        for a in gpus:
            if a.mem_props is not None:
                kinds.append("integrated" if "APU" in a.mem_props.upper() else "discrete")
            else:
                kinds.append(classify_gfx(a.gfx()))
        if all(kinds) and not truncated and not snippet:
            n_int = kinds.count("integrated")
            n_dis = kinds.count("discrete")
            facts["gpu.integrated_count"] = n_int
            facts["gpu.discrete_count"] = n_dis
            facts["gpu.first_is_integrated"] = kinds[0] == "integrated" and n_dis > 0
            sizes = [a.coarse_kb for a, k in zip(gpus, kinds) if k == "discrete"]
            if sizes and all(s is not None for s in sizes):
                facts["gpu.vram_total_bytes"] = max(sizes) * 1024
        # XNACK
        states = [_xnack_of(a.native_isa() or "") for a in gpus]
        if any(s is True for s in states):
            facts["gpu.xnack_enabled"] = True
        elif system_xnack is not None:
            facts["gpu.xnack_enabled"] = system_xnack
        elif all(s is False or (s is None and lacks_xnack(a.gfx())) for s, a in zip(states, gpus)):
            facts["gpu.xnack_enabled"] = False
    elif orphan_isas:
        native = [i for i in orphan_isas if "generic" not in i]
        if native:
            facts["gpu.isa_names"] = native
            targets = [GFX_RE.search(i) for i in native]
            if all(targets):
                facts["gpu.gfx_targets"] = [m.group(0) for m in targets]  # type: ignore[union-attr]
            states = [_xnack_of(i) for i in native]
            if any(s is True for s in states):
                facts["gpu.xnack_enabled"] = True
            elif all(s is False for s in states):
                facts["gpu.xnack_enabled"] = False
            res.notes.append("only ISA lines are present (a filtered paste): the number of GPUs cannot be read from it")
    elif system_xnack is not None:
        facts["gpu.xnack_enabled"] = system_xnack

    if agents and not gpus and not truncated and full_format and not errors:
        facts["gpu.count"] = 0
        res.notes.append("rocminfo listed agents but no GPU agent")

    # --- verdict -----------------------------------------------------------------------------------
    if primary_error is not None:
        facts["rocminfo.ok"] = False
        facts["rocminfo.error"] = primary_error
    elif agents:
        facts["rocminfo.ok"] = True
    if not agents and not errors and not orphan_isas and not facts:
        res.notes.append("no rocminfo content recognised")

    res.facts.update(facts)
    res.errors.extend(errors)
