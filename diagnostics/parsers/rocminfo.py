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

This module also holds small helpers the rocm_smi and amd_smi parsers share (gfx normalisation and set_gfx,
the APU/dGPU table, ANSI stripping).  Only the standard library is used; every pattern is simple and
linear.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..textnorm import strip_ansi  # noqa: F401  (re-exported for rocm_smi / amd_smi)
from .base import Opening, ParseResult

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


def set_gfx(gpu: Any, value: Any, res: ParseResult, note: str) -> None:
    """Set ``gpu.gfx`` from a tool's gfx field ('gfx1100', 'gfx9010'); a target written in decimal is rewritten and
    *note* (with ``{printed}`` and ``{target}``) says so, once."""
    m = re.match(r"gfx[0-9a-f]+", str(value).strip().lower())
    if not m:
        return
    target, rewritten = normalise_gfx(m.group(0))
    if target:
        gpu.gfx = target
        if rewritten:
            text = note.format(printed=m.group(0), target=target)
            if text not in res.notes:
                res.notes.append(text)


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


OPENING = Opening("rocminfo", "rocminfo", tool=True)


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


def _parse_into(text: str, res: ParseResult) -> None:
    st = _scan(text, res)
    truncated = _truncation(st, text, res)
    _driver_facts(st, res)
    gpus = [a for a in st.agents if a.is_gpu()]
    if gpus:
        _gpu_agent_facts(st, gpus, truncated, res)
    elif st.orphan_isas:
        _orphan_isa_facts(st, res)
    elif st.system_xnack is not None:
        st.facts["gpu.xnack_enabled"] = st.system_xnack
    if st.agents and not gpus and not truncated and st.full_format() and not st.errors:
        st.facts["gpu.count"] = 0
        res.notes.append("rocminfo listed agents but no GPU agent")
    _verdict(st, res)
    res.facts.update(st.facts)
    res.errors.extend(st.errors)


# --------------------------------------------------------------------------------------------------
# the scanner: one pass over the lines into the preamble's findings and the list of agents


@dataclass
class _Listing:
    facts: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    primary_error: str | None = None
    agents: list[_Agent] = field(default_factory=list)
    orphan_isas: list[str] = field(default_factory=list)     # ISA lines outside any agent (grep xnack)
    cur: _Agent | None = None
    rock_loaded: bool | None = None
    rock_line: str | None = None      # the preamble's "ROCk module is NOT loaded/NOT live" line, when printed
    kfd_errno: str | None = None
    kfd_group_line: str | None = None
    saw_attributes: bool = False
    saw_agents_header: bool = False
    saw_done: bool = False
    system_xnack: bool | None = None
    in_pool: bool = False

    def error(self, line: str, primary: bool = False) -> None:
        self.errors.append(line)
        if primary and self.primary_error is None:
            self.primary_error = line

    def new_agent(self) -> _Agent:
        if self.cur is not None:
            self.cur.complete = True
        self.cur = _Agent()
        self.agents.append(self.cur)
        self.in_pool = False
        return self.cur

    def full_format(self) -> bool:
        return self.saw_attributes or self.saw_agents_header


def _scan(text: str, res: ParseResult) -> _Listing:
    st = _Listing()
    for raw in text.splitlines():
        # pastes carry Markdown around the text: "``` ROCk module is loaded", "> Name: ..."
        line = raw.strip().lstrip("`>").strip()
        if not line:
            continue
        if _preamble_line(st, line, res) or _structure_line(st, line):
            continue
        key, sep, val = line.partition(":")
        if sep:
            _key_line(st, key.strip(), val.strip())
    return st


_USER_ERRORS = ("Failed to get user name", "Failed to get group info", "Failed to find pwd entry",
                "Failed to get user group list")
_CRASHES = ("Segmentation fault", "Aborted (core dumped)", "Bus error")   # the shell's report that rocminfo crashed


def _preamble_line(st: _Listing, line: str, res: ParseResult) -> bool:
    """The lines rocminfo prints before the listing, and the error lines; True when *line* was one."""
    if line.startswith("ROCk module"):
        m = _ROCK_VERSION_RE.search(line)
        if m:
            st.rock_loaded = True
            st.facts["_rock_version"] = m.group(1)
        elif "NOT loaded" in line or "NOT live" in line:
            st.rock_loaded = False
            st.rock_line = line
            st.error(line, primary=True)
            if "NOT live" in line:
                res.notes.append("the amdgpu module is present but not live (its initialisation did not finish)")
        elif "is loaded" in line:
            st.rock_loaded = True
    elif line.startswith("Unable to open /dev/kfd read-write"):
        st.error(line, primary=True)
        reason = line.partition("read-write:")[2].strip().lower()
        st.kfd_errno = _STRERROR_TO_ERRNO.get(reason, "OTHER")
    elif " member of " in line and "group" in line:
        st.kfd_group_line = line
        if " is not member of " in line:
            st.error(line)
    elif line.startswith(_USER_ERRORS) or line.startswith(("libkmod: ERROR", "Error: could not get list of modules")):
        st.error(line)
    elif line.startswith(("hsa api call failure", "Call returned")) or line.startswith(_CRASHES):
        st.error(line, primary=True)
    elif line.startswith("WSL environment detected"):
        st.facts["container.kind"] = "wsl"
        st.facts["container.present"] = True
    else:
        return False
    return True


def _structure_line(st: _Listing, line: str) -> bool:
    """The headers, the end marker and 'Agent N' lines; True when *line* was one."""
    if line.startswith("HSA System Attributes"):
        st.saw_attributes = True
    elif line.startswith("HSA Agents"):
        st.saw_agents_header = True
    elif line.startswith("*** Done ***"):
        st.saw_done = True
        if st.cur is not None:
            st.cur.complete = True
    elif line.startswith("Agent ") and line[6:].strip().isdigit():
        st.new_agent()
    else:
        return False
    return True


def _key_line(st: _Listing, key: str, val: str) -> None:
    """A ``Key: value`` line: a system attribute, or a field of the current agent."""
    if key == "Name":
        if val.startswith("amdgcn-"):
            (st.cur.isas if st.cur is not None else st.orphan_isas).append(val)
        else:
            (st.new_agent() if st.cur is None or st.cur.name is not None else st.cur).name = val
        return
    if key == "Runtime Version" and "hsa.runtime_version" not in st.facts:
        m = _VERSION_RE.match(val)
        if m:
            st.facts["hsa.runtime_version"] = m.group(0)
        return
    if key == "XNACK enabled":
        if val.upper().startswith("YES"):
            st.system_xnack = True
        elif val.upper().startswith("NO"):
            st.system_xnack = False
        return
    cur = st.cur
    if cur is None:
        return
    if key == "Marketing Name":
        cur.marketing = val
    elif key == "Uuid":
        cur.uuid = val
    elif key == "Device Type":
        cur.device_type = val.split()[0] if val else val
    elif key == "Memory Properties":
        cur.mem_props = val
    elif key == "Pool Info":
        st.in_pool = True
    elif key == "Segment" and st.in_pool:
        cur._pool_is_coarse = val.startswith("GLOBAL") and "COARSE GRAINED" in val and "KERNARG" not in val
    elif key == "Size" and st.in_pool and cur._pool_is_coarse and cur.coarse_kb is None:
        m = _KB_RE.match(val)
        if m:
            cur.coarse_kb = int(m.group(1))
    elif key == "ISA Info":
        st.in_pool = False


# --------------------------------------------------------------------------------------------------
# the extractors


def _truncation(st: _Listing, text: str, res: ParseResult) -> bool:
    """Whether the listing is partial (cut off, or said to be shortened); a note says why."""
    truncated = st.full_format() and bool(st.agents) and not st.saw_done
    marker = cut_marker(text)
    if marker and st.agents:
        truncated = True
        res.notes.append(f"the paste says it was shortened ({marker!r}): GPU counts are not taken from it")
    elif truncated:
        last = st.agents[-1]
        where = "mid-agent" if (last.device_type is None or (last.is_gpu() and not last.isas)) else "before '*** Done ***'"
        res.notes.append(f"output ends {where}: truncated? GPU counts are not taken from a partial listing")
    return truncated


def _listing_overrules_preamble(st: _Listing, res: ParseResult) -> None:
    """'ROCk module is NOT loaded' followed by a listing of HSA agents: the runtime only lists agents after it opened
    /dev/kfd, so the KFD driver is there and the preamble's module check misfired (older rocminfo looked for a module
    by name, which finds nothing where amdkfd is built into amdgpu or into the kernel). The listing wins; the line
    is kept as a note, not as rocminfo's failure."""
    line = st.rock_line
    if line is None or not st.agents or not st.full_format() or st.kfd_errno is not None:
        return
    if any(e != line and not e.startswith(_USER_ERRORS) and " member of " not in e for e in st.errors):
        return   # an HSA failure or a crash as well: the listing proves nothing
    st.rock_loaded = True
    st.errors.remove(line)
    if st.primary_error == line:
        st.primary_error = None
    res.notes.append(f"rocminfo printed {line!r} but then listed HSA agents, which needs /dev/kfd: the driver is "
                     "loaded (the module check misfired)")


def _driver_facts(st: _Listing, res: ParseResult) -> None:
    """The driver and /dev/kfd."""
    _listing_overrules_preamble(st, res)
    facts = st.facts
    if st.rock_loaded is not None:
        facts["driver.amdgpu_loaded"] = st.rock_loaded
    rock_version = facts.pop("_rock_version", None)
    if rock_version and looks_like_driver_version(rock_version):
        facts["driver.amdgpu_version"] = rock_version
    group_line = st.kfd_group_line
    if group_line and " is not member of " in group_line and st.kfd_errno is None:
        # older rocminfo warns about the group even when /dev/kfd opened fine: a warning, not the failure
        st.errors.remove(group_line)
        res.notes.append("rocminfo warned: " + group_line)
    if st.kfd_errno is not None:
        _kfd_error_facts(st, res)
    elif st.rock_loaded and st.agents and st.full_format():
        # rocminfo only lists agents after open("/dev/kfd", O_RDWR) succeeded
        facts["kfd.present"] = True
        facts["kfd.permission_denied"] = False


def _kfd_error_facts(st: _Listing, res: ParseResult) -> None:
    errno, group_line = st.kfd_errno, st.kfd_group_line
    st.facts["kfd.open_error"] = errno
    st.facts["kfd.present"] = errno != "ENOENT"
    st.facts["kfd.permission_denied"] = errno in ("EACCES", "EPERM")
    if errno == "ENOENT":
        res.notes.append("/dev/kfd does not exist: the amdgpu/KFD driver is not loaded, or the device nodes were not passed into the container")
    elif errno in ("EACCES", "EPERM"):
        hint = "opening /dev/kfd was refused (permissions)"
        if group_line and " is not member of " in group_line:
            hint += ("; the group database does not list this user in the group that owns /dev/kfd: add the user "
                     "to it (usermod -aG) and log in again")
        elif group_line and " is member of " in group_line:
            hint += ("; rocminfo reads the group database, so 'is member of' with this error usually means the "
                     "group was added but this session has not logged in again (or a container lacks the group id)")
        res.notes.append(hint)
    elif errno == "EINVAL":
        res.notes.append("opening /dev/kfd failed with EINVAL: the driver is loaded but no usable compute device was initialised (see dmesg)")


def _gpu_agent_facts(st: _Listing, gpus: list[_Agent], truncated: bool, res: ParseResult) -> None:
    facts = st.facts
    # a snippet with neither the header nor '*** Done ***' nor the CPU agent that opens every listing (one GPU agent
    # copied out of it) shows some GPUs, not how many there are; a grep over the whole listing keeps the CPU agent
    snippet = not st.full_format() and not st.saw_done and all(a.is_gpu() for a in st.agents)
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
    if not truncated and not snippet:
        _gpu_kind_facts(gpus, facts)
    _xnack_facts(st, gpus)


def _gpu_kind_facts(gpus: list[_Agent], facts: dict[str, Any]) -> None:
    """Integrated or discrete: "Memory Properties: APU" where rocminfo prints that line (ROCm 6.x+), else the
    target's table entry; "Uuid: GPU-XX" alone proves nothing (RX 6800 prints it too)."""
    kinds: list[str | None] = []
    for a in gpus:
        if a.mem_props is not None:
            kinds.append("integrated" if "APU" in a.mem_props.upper() else "discrete")
        else:
            kinds.append(classify_gfx(a.gfx()))
    if not all(kinds):
        return
    n_int = kinds.count("integrated")
    n_dis = kinds.count("discrete")
    facts["gpu.integrated_count"] = n_int
    facts["gpu.discrete_count"] = n_dis
    facts["gpu.first_is_integrated"] = kinds[0] == "integrated" and n_dis > 0
    sizes = [a.coarse_kb for a, k in zip(gpus, kinds) if k == "discrete"]
    if sizes and all(s is not None for s in sizes):
        facts["gpu.vram_total_bytes"] = max(sizes) * 1024


def _xnack_facts(st: _Listing, gpus: list[_Agent]) -> None:
    states = [_xnack_of(a.native_isa() or "") for a in gpus]
    if any(s is True for s in states):
        st.facts["gpu.xnack_enabled"] = True
    elif st.system_xnack is not None:
        st.facts["gpu.xnack_enabled"] = st.system_xnack
    elif all(s is False or (s is None and lacks_xnack(a.gfx())) for s, a in zip(states, gpus)):
        st.facts["gpu.xnack_enabled"] = False


def _orphan_isa_facts(st: _Listing, res: ParseResult) -> None:
    """Only ISA lines, no agent (``rocminfo | grep xnack``)."""
    native = [i for i in st.orphan_isas if "generic" not in i]
    if not native:
        return
    facts = st.facts
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


def _verdict(st: _Listing, res: ParseResult) -> None:
    if st.primary_error is not None:
        st.facts["rocminfo.ok"] = False
        st.facts["rocminfo.error"] = st.primary_error
    elif st.agents:
        st.facts["rocminfo.ok"] = True
    if not st.agents and not st.errors and not st.orphan_isas and not st.facts:
        res.notes.append("no rocminfo content recognised")
