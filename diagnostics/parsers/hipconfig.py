"""Parser for ``hipconfig`` output: the default / ``--full`` report and the one-value options.

Layouts handled:
* the Perl hipconfig of ROCm 1.x-5.x: ``HIP version  : 5.3.22062-659cc197`` then ``== hipconfig`` with
  aligned ``KEY : value`` lines, ``== hcc`` (HCC era) or ``== hip-clang`` sections, and with ``--full``
  ``=== Environment Variables`` and ``== Linux Kernel``;
* the C++ hipconfig of ROCm 6.x/7.x: ``HIP version: 6.2.41133-dd7f95766`` / ``==hipconfig`` /
  ``HIP_PATH           :/opt/rocm-6.2.0`` (no space after the colon);
* ``hipconfig --version`` (a bare ``6.2.41133-dd7f95766``), ``--platform`` (``amd``), ``--path`` and
  ``--rocmpath`` (a bare path);
* the tool's own failures: Perl's ``Can't exec ...``, ``HSA Error: ...`` lines that the runtime prints
  into the report, ``command not found``.
Only the standard library; every pattern is anchored and linear.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import host_checks
from .base import Opening, ParseResult

_VERSION_LINE = re.compile(r"^HIP version\s*:\s*(\S+)")
_KV = re.compile(r"^([A-Z][A-Z0-9_]+)\s*:\s?(.*)$")
_BARE_VERSION = re.compile(r"^(\d+\.\d+\.\d+)(?:-[0-9a-f]{6,})?$")
_CLANG = re.compile(r"^(?:AMD |HCC )?clang version (\S+)")
# the release in a ROCm prefix: legacy /opt/rocm-6.2.4, ROCm Core SDK (10.0 on) /opt/rocm/core-10.0
_ROCM_DIR = re.compile(r"(?:^|/)rocm(?:/core)?-(\d+\.\d+(?:\.\d+)?)/*$")
_KERNEL = re.compile(r"^Linux \S+ (\d+\.\d+\S*) #")
_BARE_ROCM_PATH = re.compile(r"^/[^\s:]{0,200}rocm[^\s:]{0,80}$")
_ENV = re.compile(r"^([A-Z][A-Z0-9_]*)=(.*)$")
_ERROR = re.compile(
    r"(?:Can't exec|HSA Error|[Cc]ommand not found|No such file or directory|cannot find|[Ee]rror:|"
    r"(?:^|: )Warning: |^hipconfig: )"
)

_ERROR_WORDS = ("Can't exec", "HSA Error", "ommand not found", "No such file", "cannot find", "rror:",
                "Warning: ", "hipconfig: ")
# environment variables that change how the GPU stack behaves (shared with the collect_env parser)
GPU_ENV_PREFIXES = (
    "HSA_", "HIP_VISIBLE", "HIP_PLATFORM", "HIP_PATH", "HIP_CLANG_PATH", "HIP_COMPILER", "HIP_RUNTIME",
    "HIP_LAUNCH_BLOCKING", "HIP_FORCE", "ROCR_", "ROCM_", "ROCBLAS_", "MIOPEN_", "HCC_", "AMD_", "GPU_DEVICE_ORDINAL",
    "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING", "PYTORCH_ROCM_ARCH", "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_TUNABLEOP_", "TORCH_ROCM_", "HIPBLASLT_", "TENSILE_", "NCCL_", "RCCL_",
)
_PLATFORMS = {"amd": "amd", "hcc": "amd", "nvidia": "nvidia", "nvcc": "nvidia"}

MAX_ERRORS = 50


def detect(text: str) -> float:
    head = text[:200_000]
    if "== hipconfig" in head or "==hipconfig" in head:
        return 0.95
    if "HIP_PLATFORM" in head and "HIP_PATH" in head:
        return 0.8
    stripped = head.strip()
    if "\n" not in stripped and len(stripped) < 80:
        if _BARE_VERSION.match(stripped) and "-" in stripped:
            return 0.45  # hipconfig --version prints the version with its git hash and no newline
        if stripped.lower() in _PLATFORMS:
            return 0.35
        if _BARE_ROCM_PATH.match(stripped):
            return 0.35  # hipconfig --rocmpath / --path
    if _VERSION_LINE.search(head[:2000]) and "HIP" in head:
        return 0.5
    return 0.0


OPENING = Opening("hipconfig", "hipconfig", markers=("HIP version", "== hipconfig", "==hipconfig"), lead=10_000,
                  what="the hipconfig report")


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


def _parse_into(text: str, res: ParseResult) -> None:
    if _one_value(text.strip(), res):
        return
    sec = _scan(text.split("\n"))
    hv = sec.values.get("hip_version")
    _hip_facts(sec, res)
    _host_facts(sec, res)
    _env_facts(sec, res)
    if not res.facts and not sec.errors:
        res.notes.append("no hipconfig lines recognised")
    if hv and not sec.saw_header and "HIP_PATH" not in sec.values:
        res.notes.append("only the version line is present: output cut after the first line?")
    if sec.saw_header and "HIP_PLATFORM" not in sec.values:
        res.notes.append("the hipconfig section has no HIP_PLATFORM line: truncated?")
    res.errors.extend(sec.errors)


def _one_value(stripped: str, res: ParseResult) -> bool:
    """The one-value options (--version, --platform, --rocmpath / --path); True when the text was one."""
    if "\n" in stripped or len(stripped) >= 300:
        return False
    facts = res.facts
    m = _BARE_VERSION.match(stripped)
    if m:
        facts["hip.runtime_version"] = m.group(1)
        res.notes.append("a bare version string: taken as the output of 'hipconfig --version'")
        return True
    if stripped.lower() in _PLATFORMS:
        facts["hip.platform"] = _PLATFORMS[stripped.lower()]
        res.notes.append("a bare platform name: taken as the output of 'hipconfig --platform'")
        return True
    if _BARE_ROCM_PATH.match(stripped):
        facts["rocm.path"] = stripped.rstrip("/") or "/"
        m = _ROCM_DIR.search(stripped)
        if m:
            facts["rocm.version"] = m.group(1)
        res.notes.append("a bare path: taken as the output of 'hipconfig --rocmpath'")
        return True
    return False


@dataclass
class _Sections:
    values: dict[str, str] = field(default_factory=dict)   # KEY : value lines (and "hip_version"), first wins
    env: dict[str, str] = field(default_factory=dict)      # === Environment Variables
    errors: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    section: str = ""
    clang_version: str | None = None
    kernel: str | None = None                              # == Linux Kernel
    distro: str | None = None
    lsb: dict[str, str] = field(default_factory=dict)      # lsb_release's Distributor ID / Release in that section
    saw_header: bool = False


def _scan(lines: list[str]) -> _Sections:
    sec = _Sections()
    for raw in lines:
        line = raw.rstrip()
        if len(line) > 8000:
            continue
        s = line.strip()
        if s:
            _scan_line(sec, s)
    return sec


def _scan_line(sec: _Sections, s: str) -> None:
    if s.startswith("==="):
        sec.section = s.strip("= ").lower()
        return
    if s.startswith("=="):
        sec.section = s.strip("= ").lower()
        sec.saw_header = True
        return
    if any(w in s for w in _ERROR_WORDS) and _ERROR.search(s):
        if s not in sec.seen and len(sec.errors) < MAX_ERRORS:
            sec.seen.add(s)
            sec.errors.append(s)
        # the runtime's errors are printed into a value ("hip-clang-cxxflags : HSA Error: ...");
        # such a line carries no clean value
        return
    m = _VERSION_LINE.match(s) if s.startswith("HIP version") else None
    if m and "hip_version" not in sec.values:
        sec.values["hip_version"] = m.group(1)
        return
    if sec.section == "environment variables":
        m = _ENV.match(s)
        if m:
            sec.env[m.group(1)] = m.group(2)
        return
    if sec.section == "linux kernel":
        _kernel_line(sec, s)
        return
    m = _CLANG.match(s) if sec.clang_version is None and "clang version" in s else None
    if m:
        sec.clang_version = m.group(1)
        return
    m = _KV.match(s) if ":" in s and s[:1].isupper() else None
    if m:
        key, value = m.group(1), m.group(2).strip()
        if key not in sec.values:
            sec.values[key] = value


def _kernel_line(sec: _Sections, s: str) -> None:
    m = _KERNEL.match(s)
    if m and sec.kernel is None:
        sec.kernel = m.group(1)
        return
    key, sep, value = s.partition(":")
    if sep and key.strip() == "Description" and sec.distro is None:
        sec.distro = value.strip()
    elif sep and key.strip() in ("Distributor ID", "Release"):
        sec.lsb.setdefault(key.strip(), value.strip())


def _hip_facts(sec: _Sections, res: ParseResult) -> None:
    facts, values = res.facts, sec.values
    hv = values.get("hip_version")
    if hv:
        m = _BARE_VERSION.match(hv)
        facts["hip.runtime_version"] = m.group(1) if m else hv
    plat = values.get("HIP_PLATFORM", "").strip().lower()
    if plat in _PLATFORMS:
        facts["hip.platform"] = _PLATFORMS[plat]
        if plat in ("hcc", "nvcc"):
            res.notes.append(f"HIP_PLATFORM '{plat}' is the pre-ROCm-4.1 spelling of '{_PLATFORMS[plat]}'")
    rp = values.get("ROCM_PATH", "").strip().strip('"')
    if rp:
        facts["rocm.path"] = rp
        m = _ROCM_DIR.search(rp)
        if m:
            facts["rocm.version"] = m.group(1)
    if sec.clang_version:
        facts["hip.clang_version"] = sec.clang_version


def _host_facts(sec: _Sections, res: ParseResult) -> None:
    if sec.kernel:
        res.facts["os.kernel"] = sec.kernel
    if sec.distro:
        res.facts["os.name"] = sec.distro
        # the distribution's id and release, as the system-check reader reads lsb_release anywhere
        lsb = "\n".join(f"{k}: {v}" for k, v in sec.lsb.items()) + f"\nDescription: {sec.distro}\n"
        for name in ("os.id", "os.version_id"):
            value = host_checks.parse(lsb).facts.get(name)
            if value:
                res.facts[name] = value


def _env_facts(sec: _Sections, res: ParseResult) -> None:
    gpu_env = {k: v for k, v in sec.env.items() if k.startswith(GPU_ENV_PREFIXES)}
    for k, v in gpu_env.items():
        res.facts[f"env.{k}"] = v
    if gpu_env:
        res.facts["env.set_names"] = sorted(gpu_env)
