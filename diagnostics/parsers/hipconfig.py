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

from .base import ParseResult, guarded_parse

KIND = "hipconfig"

_VERSION_LINE = re.compile(r"^HIP version\s*:\s*(\S+)")
_KV = re.compile(r"^([A-Z][A-Z0-9_]+)\s*:\s?(.*)$")
_BARE_VERSION = re.compile(r"^(\d+\.\d+\.\d+)(?:-[0-9a-f]{6,})?$")
_CLANG = re.compile(r"^(?:AMD |HCC )?clang version (\S+)")
_ROCM_DIR = re.compile(r"(?:^|/)rocm-(\d+\.\d+(?:\.\d+)?)/*$")
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
WINDOW = 2_000_000


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


def parse(text: str) -> ParseResult:
    return guarded_parse(KIND, text, _parse_into, "hipconfig")


def _parse_into(text: str, res: ParseResult) -> None:
    if not text or not text.strip():
        res.notes.append("empty input")
        return
    starts = [i for i in (text.find(m) for m in ("HIP version", "== hipconfig", "==hipconfig")) if i >= 0]
    begin = max(0, min(starts) - 10_000) if starts else 0
    if begin > 0 or len(text) - begin > WINDOW:
        res.notes.append(f"long input: only {WINDOW // 1_000_000} MB around the hipconfig report were read")
        text = text[begin:begin + WINDOW]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    facts = res.facts
    stripped = text.strip()

    # --- the one-value options -----------------------------------------------------------------------
    if "\n" not in stripped and len(stripped) < 300:
        m = _BARE_VERSION.match(stripped)
        if m:
            facts["hip.runtime_version"] = m.group(1)
            res.notes.append("a bare version string: taken as the output of 'hipconfig --version'")
            return
        if stripped.lower() in _PLATFORMS:
            facts["hip.platform"] = _PLATFORMS[stripped.lower()]
            res.notes.append("a bare platform name: taken as the output of 'hipconfig --platform'")
            return
        if _BARE_ROCM_PATH.match(stripped):
            facts["rocm.path"] = stripped.rstrip("/") or "/"
            m = _ROCM_DIR.search(stripped)
            if m:
                facts["rocm.version"] = m.group(1)
            res.notes.append("a bare path: taken as the output of 'hipconfig --rocmpath'")
            return

    values: dict[str, str] = {}
    env: dict[str, str] = {}
    errors: list[str] = []
    seen: set[str] = set()
    section = ""
    clang_version = None
    kernel = None
    distro = None
    saw_header = False

    for raw in text.split("\n"):
        line = raw.rstrip()
        if len(line) > 8000:
            continue
        s = line.strip()
        if not s:
            continue
        if s.startswith("==="):
            section = s.strip("= ").lower()
            continue
        if s.startswith("=="):
            section = s.strip("= ").lower()
            saw_header = True
            continue

        if any(w in s for w in _ERROR_WORDS) and _ERROR.search(s):
            if s not in seen and len(errors) < MAX_ERRORS:
                seen.add(s)
                errors.append(s)
            # the runtime's errors are printed into a value ("hip-clang-cxxflags : HSA Error: ...");
            # such a line carries no clean value
            continue

        m = _VERSION_LINE.match(s) if s.startswith("HIP version") else None
        if m and "hip_version" not in values:
            values["hip_version"] = m.group(1)
            continue

        if section == "environment variables":
            m = _ENV.match(s)
            if m:
                env[m.group(1)] = m.group(2)
            continue
        if section == "linux kernel":
            m = _KERNEL.match(s)
            if m and kernel is None:
                kernel = m.group(1)
                continue
            key, sep, value = s.partition(":")
            if sep and key.strip() == "Description" and distro is None:
                distro = value.strip()
            continue

        m = _CLANG.match(s) if clang_version is None and "clang version" in s else None
        if m:
            clang_version = m.group(1)
            continue

        m = _KV.match(s) if ":" in s and s[:1].isupper() else None
        if m:
            key, value = m.group(1), m.group(2).strip()
            if key not in values:
                values[key] = value

    # --- facts ------------------------------------------------------------------------------------------
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
    if clang_version:
        facts["hip.clang_version"] = clang_version
    if kernel:
        facts["os.kernel"] = kernel
    if distro:
        facts["os.name"] = distro
    gpu_env = {k: v for k, v in env.items() if k.startswith(GPU_ENV_PREFIXES)}
    for k, v in gpu_env.items():
        facts[f"env.{k}"] = v
    if gpu_env:
        facts["env.set_names"] = sorted(gpu_env)

    if not facts and not errors:
        res.notes.append("no hipconfig lines recognised")
    if hv and not saw_header and "HIP_PATH" not in values:
        res.notes.append("only the version line is present: output cut after the first line?")
    if saw_header and "HIP_PLATFORM" not in values:
        res.notes.append("the hipconfig section has no HIP_PLATFORM line: truncated?")
    res.errors.extend(errors)
