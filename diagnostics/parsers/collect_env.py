"""Parser for the output of ``python -m torch.utils.collect_env`` (and forks of it, e.g. vLLM's).

Handles every layout since torch 1.x: the old one without a ROCm line ("Is CUDA available: Yes"),
the 1.7+/2.x one with "ROCM used to build PyTorch", "HIP runtime version" and the lscpu "CPU:" block,
the Windows variants, and the 2.7+ lines ("Is XPU available", "Caching allocator config").  Also
the script's own failures: a traceback inside collect_env, or "PyTorch version: N/A" when
``import torch`` failed.

What collect_env prints, and what it does not:
* "GPU models and configuration" comes from ``nvidia-smi -L`` (lines ``GPU n: NAME``; always NVIDIA)
  unless torch is a working ROCm build, where it is ``name (gcnArchName)`` of device 0 only.
* "CUDA runtime version" is nvcc's version, not the driver's; "ROCM used to build PyTorch" is
  ``torch.version.hip``.
Only the standard library is used; every pattern is anchored and linear.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .base import Opening, ParseResult, build_flavour, kernel_facts, platform_kernel
from .hipconfig import GPU_ENV_PREFIXES

_UNKNOWN = {"", "n/a", "none", "could not collect", "no cuda", "unknown"}

_MARKER_RX = re.compile(
    r"^[ \t>]*(PyTorch version|Is debug build|CUDA used to build PyTorch|ROCM used to build PyTorch|Is CUDA available"
    r"|CUDA runtime version|GPU models and configuration|Nvidia driver version|cuDNN version|HIP runtime version"
    r"|MIOpen runtime version|Is XNNPACK available|vLLM Version|Neuron SDK Version|vLLM Build Flags)[ \t]*:",
    re.MULTILINE,
)

_KEYS = {
    "pytorch version": "torch_version",
    "is debug build": "debug",
    "cuda used to build pytorch": "cuda_compiled",
    "rocm used to build pytorch": "hip_compiled",
    "os": "os",
    "python version": "python_version",
    "python platform": "python_platform",
    "is cuda available": "cuda_available",
    "cuda runtime version": "cuda_runtime",
    "gpu models and configuration": "gpu_models",
    "nvidia driver version": "nvidia_driver",
    "cudnn version": "cudnn",
    "hip runtime version": "hip_runtime",
    "miopen runtime version": "miopen_runtime",
    "is xnnpack available": "xnnpack",
    "is xpu available": "xpu",
    "caching allocator config": "allocator",
    "cuda_module_loading set to": "module_loading",
    "libc version": "libc",
    "gcc version": "gcc",
    "clang version": "clang",
    "cmake version": "cmake",
    "vllm version": "vllm_version",  # vLLM's fork of collect_env
}

_QUOTE_PREFIX = re.compile(r"^[ \t>]*")
_GPU_LINE = re.compile(r"^GPU (\d+): (.+)$")
_GFX = re.compile(r"^(.*?)\s*\((gfx[0-9][0-9a-f]*(?:-generic)?(?::[a-z]+[+-])*)\)\s*$")
_PYVER = re.compile(r"^(\d+\.\d+(?:\.\d+)?)")
_ARCH_SUFFIX = re.compile(r"\s*\((?:x86_64|aarch64|arm64|ppc64le|s390x|AMD64|i686|armv7l|riscv64)\)\s*$")
_PKG_LINE = re.compile(r"^\[(pip3?|conda|uv)\]\s+(.*)$")
_PIP_REQ = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==|===)\s*(\S+)")
_EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Fault)\b(?::.*)?$")
_WARN_LINE = re.compile(r"(?:UserWarning|RuntimeWarning|Warning): .*(?:CUDA|HIP|ROCm|NVIDIA|driver|GPU)", re.IGNORECASE)
_NVIDIA_WHEEL = re.compile(
    r"^nvidia-(?:cublas|cuda|cudnn|cufft|cufile|curand|cusolver|cusparse|cusparselt|nccl|nvjitlink|nvtx|nvshmem|cuda-runtime|cuda-nvrtc|cuda-cupti)"
)
_NUMERIC_VERSION = re.compile(r"^\d+(?:\.\d+)*")
_WIDE_GAP = re.compile(r"\s{4,}")
_ENV_LINE = re.compile(r"^([A-Z][A-Z0-9_]{1,80})=(.*)$")
# the same report as JSON: torch's SystemEnv fields, as Stable Diffusion web UI's "Dump sysinfo" ("Torch env
# info": {...}) and other apps embed it
_JSON_KEYS = {
    "torch_version": "torch_version", "cuda_compiled_version": "cuda_compiled", "hip_compiled_version": "hip_compiled",
    "os": "os", "python_version": "python_version", "python_platform": "python_platform",
    "is_cuda_available": "cuda_available", "cuda_runtime_version": "cuda_runtime", "nvidia_gpu_models": "gpu_models",
    "nvidia_driver_version": "nvidia_driver", "hip_runtime_version": "hip_runtime",
    "miopen_runtime_version": "miopen_runtime", "is_debug_build": "debug",
}
_JSON_LINE = re.compile(r'^\s*"(?P<key>[a-z_]{2,40})"\s*:\s*(?P<val>"(?:[^"\\]|\\.){0,2000}"|null|true|false)\s*,?\s*$')
_CE_FRAME = re.compile(r'File "[^"\n]{0,300}collect_env\.py", line \d+')

_PKG_FACTS = {
    "transformers": "pkg.transformers",
    "accelerate": "pkg.accelerate",
    "bitsandbytes": "pkg.bitsandbytes",
    "flash-attn": "pkg.flash_attn",
    "flash-attention": "pkg.flash_attn",
    "vllm": "pkg.vllm",
    "triton": "pkg.triton",
    "pytorch-triton-rocm": "pkg.triton",
    "pytorch-triton": "pkg.triton",
    "triton-rocm": "pkg.triton",
    "onnxruntime": "pkg.onnxruntime",
    "onnxruntime-gpu": "pkg.onnxruntime_gpu",
    "onnxruntime_gpu": "pkg.onnxruntime_gpu",
}
_TORCH_DISTS = {"torch", "torch-rocm", "pytorch-rocm", "torch-cuda", "torch-cpu"}

MAX_ERRORS = 50


def _known(v: str | None) -> bool:
    return v is not None and v.strip().lower() not in _UNKNOWN


def _bool(v: str | None) -> bool | None:
    if v is None:
        return None
    s = v.strip().lower()
    if s in ("true", "yes"):
        return True
    if s in ("false", "no"):
        return False
    return None


def _norm_pkg(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def detect(text: str) -> float:
    head = text[:400_000]
    hits = len(set(m.group(1) for m in _MARKER_RX.finditer(head)))
    hits += sum(1 for m in ("Collecting environment information", "Versions of relevant libraries") if m in head)
    if '"torch_version":' in head and '"is_cuda_available":' in head:
        hits += 2 + ('"cuda_compiled_version":' in head) + ('"python_platform":' in head)
    if hits >= 4:
        return 0.97
    if hits >= 2:
        return 0.75
    if "collect_env" in head and (
        "Traceback (most recent call last)" in head or _CE_FRAME.search(head) is not None
    ):
        return 0.7
    if hits == 1:
        return 0.35
    return 0.0


OPENING = Opening("collect_env", "collect_env", markers=("Collecting environment information", "PyTorch version:",
                  "Traceback (most recent call last)"), lead=20_000, what="the collect_env report")


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


def _parse_into(text: str, res: ParseResult) -> None:
    sec = _scan(text.split("\n"))
    if sec.in_traceback:
        res.notes.append("a traceback in the output has no final exception line: truncated?")
    build = _torch_facts(sec, res)
    _gpu_facts(sec, build, res)
    _os_facts(sec, res)
    _cpu_facts(sec, res)
    _package_facts(sec, res)
    _env_facts(sec, res)
    _notes(sec, res)
    res.errors.extend(sec.errors)


# --------------------------------------------------------------------------------------------------
# the scanner: one pass over the lines, sorting them into sections


@dataclass
class _Sections:
    values: dict[str, str] = field(default_factory=dict)        # "Key: value" lines, first one wins
    env: dict[str, str] = field(default_factory=dict)           # GPU-related NAME=value lines
    gpu_lines: list[str] = field(default_factory=list)          # "GPU n: NAME" (nvidia-smi -L)
    pkg_lines: list[tuple[str, str]] = field(default_factory=list)  # ("pip3"|"conda"|"uv", spec)
    cpu_block: list[str] = field(default_factory=list)          # the lscpu / wmic lines after "CPU:"
    errors: list[str] = field(default_factory=list)
    seen_errors: set[str] = field(default_factory=set)
    in_gpu: bool = False
    in_cpu: bool = False
    in_traceback: bool = False
    traceback_lines: list[str] = field(default_factory=list)
    torch_import_error: str | None = None
    saw_libs_header: bool = False

    def add_error(self, line: str) -> None:
        if line not in self.seen_errors and len(self.errors) < MAX_ERRORS:
            self.seen_errors.add(line)
            self.errors.append(line)


def _scan(lines: list[str]) -> _Sections:
    sec = _Sections()
    for raw in lines:
        if len(raw) > 4000:  # a binary blob or a minified line: not collect_env text
            continue
        line = _QUOTE_PREFIX.sub("", raw, count=1).rstrip() if raw[:1] in " \t>" else raw.rstrip()
        if line[:1] in ' \t"' and '":' in line and _json_line(sec, line):
            continue
        # a paste that lost its line breaks: "Collecting environment information...   PyTorch version: 2.7"
        cut = line.find("PyTorch version:")
        if cut > 0:
            line = line[cut:]
        if _traceback_line(sec, line):
            continue
        if "Warning: " in line and len(line) < 1000 and _WARN_LINE.search(line):
            sec.add_error(line.strip())
        if sec.in_gpu and _gpu_continuation(sec, line):
            continue
        _section_line(sec, line)
    return sec


def _json_line(sec: _Sections, line: str) -> bool:
    """A ``"key": value`` line of the JSON form of the report; True when it was one of its keys."""
    jm = _JSON_LINE.match(line)
    if not jm or jm.group("key") not in _JSON_KEYS:
        return False
    jv = jm.group("val")
    if jv.startswith('"'):
        try:
            jv = json.loads(jv)
        except ValueError:
            jv = None
        name = _JSON_KEYS[jm.group("key")]
        if isinstance(jv, str) and name not in sec.values:
            if name == "gpu_models" and "GPU " in jv:
                sec.gpu_lines.extend(g.strip() for g in jv.split("\n") if _GPU_LINE.match(g.strip()))
            sec.values[name] = jv.split("\n", 1)[0].strip()
    return True


def _traceback_line(sec: _Sections, line: str) -> bool:
    """Tracebacks printed by collect_env itself (or by import torch inside it); users often paste only the last
    frames, starting at a 'File "..."' line.  True when the line belongs to one."""
    if line.startswith("Traceback (most recent call last)") or (
        not sec.in_traceback and line.startswith('File "') and ", line " in line
    ):
        sec.in_traceback = True
        sec.traceback_lines = [line]
        return True
    if not sec.in_traceback:
        return False
    if len(line) < 1000 and _EXC_LINE.match(line):
        sec.add_error(line)
        tb = "\n".join(sec.traceback_lines)
        if "import torch" in tb or "torch/__init__.py" in tb or "torch\\__init__.py" in tb:
            sec.torch_import_error = line
        sec.in_traceback = False
    else:
        sec.traceback_lines.append(line)
    return True


def _gpu_continuation(sec: _Sections, line: str) -> bool:
    """The lines under "GPU models and configuration:"; False (and the block closed) at the next key."""
    if _GPU_LINE.match(line):
        sec.gpu_lines.append(line)
        return True
    if line == "":
        if sec.gpu_lines:
            sec.in_gpu = False
        return True
    sec.in_gpu = False  # fall through: this line is the next key
    return False


def _section_line(sec: _Sections, line: str) -> None:
    if line == "CPU:" or line == "CPU Info":  # "CPU Info" is the banner of vLLM's 2025 layout
        sec.in_cpu = True
        return
    if "=" in line and not sec.in_cpu:
        m = _ENV_LINE.match(line)
        if m and m.group(1).startswith(GPU_ENV_PREFIXES):
            sec.env.setdefault(m.group(1), m.group(2))
            return
    if line.startswith("Versions of relevant libraries"):
        sec.in_cpu = False
        sec.saw_libs_header = True
        return
    m = _PKG_LINE.match(line)
    if m:
        sec.pkg_lines.append((m.group(1), m.group(2).strip()))
        return
    key, sep, value = line.partition(":")
    k = key.strip().lower()
    if sep and k in _KEYS and not sec.in_cpu:
        name = _KEYS[k]
        # a copy that joined lines with runs of spaces: keep only the first field
        value = _WIDE_GAP.split(value.strip(), 1)[0]
        if name not in sec.values:
            sec.values[name] = value
        if name == "gpu_models":
            if value == "":
                sec.in_gpu = True
            elif _GPU_LINE.match(value):
                sec.gpu_lines.append(value)
                sec.in_gpu = True
        return
    if sec.in_cpu:
        sec.cpu_block.append(line)


# --------------------------------------------------------------------------------------------------
# the extractors: one fact group each, from the sections


def _torch_facts(sec: _Sections, res: ParseResult) -> str | None:
    """torch itself; returns the build flavour ("rocm", "cuda", "cpu" or None)."""
    facts, values = res.facts, sec.values
    tv = values.get("torch_version")
    if _known(tv):
        facts["torch.version"] = tv
        facts["torch.installed"] = True
    elif tv is not None and tv.strip().lower() == "n/a":
        res.notes.append("collect_env could not import torch (PyTorch version: N/A)")

    hip_c = values.get("hip_compiled")
    cuda_c = values.get("cuda_compiled")
    if _known(hip_c):
        facts["torch.hip_version"] = hip_c
    if _known(cuda_c) and _NUMERIC_VERSION.match(cuda_c):
        facts["torch.cuda_version"] = cuda_c

    build = build_flavour(tv) if _known(tv) else None
    if build is None and _known(tv):
        if _known(hip_c):
            build = "rocm"
        elif _known(cuda_c) and _NUMERIC_VERSION.match(cuda_c or ""):
            build = "cuda"
        elif "hip_compiled" in values and cuda_c is not None and cuda_c.strip().lower() in ("none", "n/a"):
            # both compiled-with fields present and empty: a CPU-only build
            build = "cpu"
    if build:
        facts["torch.build"] = build

    ca = _bool(values.get("cuda_available"))
    if ca is not None:
        facts["torch.cuda_available"] = ca
    if sec.torch_import_error:
        facts["torch.import_error"] = sec.torch_import_error
    return build


def _gpu_facts(sec: _Sections, build: str | None, res: ParseResult) -> None:
    facts, values = res.facts, sec.values
    gm = values.get("gpu_models")
    if sec.gpu_lines:
        _nvidia_gpu_names(sec.gpu_lines, facts)
    elif _known(gm):
        _torch_gpu_name(gm, build, res)

    nd = values.get("nvidia_driver")
    if _known(nd) and _NUMERIC_VERSION.match(nd):
        facts["nvidia.driver_version"] = nd.split()[0]
    hr = values.get("hip_runtime")
    if _known(hr) and _NUMERIC_VERSION.match(hr):
        facts["hip.runtime_version"] = hr


def _nvidia_gpu_names(gpu_lines: list[str], facts: dict) -> None:
    """``GPU n: NAME (UUID: ...)`` lines, from ``nvidia-smi -L``: every GPU, always NVIDIA."""
    names = []
    for gl in gpu_lines:
        m = _GPU_LINE.match(gl)
        if m:
            name = m.group(2).strip()
            head, sep, _ = name.partition(" (UUID: ")
            names.append(head.strip() if sep else name)
    if names:
        facts["gpu.names"] = names
        facts["gpu.count"] = len(names)
        facts["gpu.vendors"] = ["nvidia"]


def _torch_gpu_name(gm: str, build: str | None, res: ParseResult) -> None:
    """``name (gcnArchName)`` of device 0, what a working ROCm torch prints."""
    facts = res.facts
    name = gm.strip()
    m = _GFX.match(name)
    gfx = None
    if m:
        name, arch = m.group(1).strip(), m.group(2)
        gfx = arch.split(":", 1)[0]
        facts["torch.gcn_arch_names"] = [arch]
        facts["gpu.gfx_targets"] = [gfx]
        if ":xnack+" in arch:
            facts["gpu.xnack_enabled"] = True
    if name.endswith("NoGCNArchNameOnOldPyTorch"):
        name = name[: -len("NoGCNArchNameOnOldPyTorch")].strip()
        res.notes.append("this torch build does not report the gfx target (NoGCNArchNameOnOldPyTorch)")
    if name:
        facts["gpu.names"] = [name]
        facts["torch.device_names"] = [name]
    if gfx is not None or build == "rocm":
        facts["gpu.vendors"] = ["amd"]
    res.notes.append("collect_env shows only the first GPU torch sees; the GPU count is not established")


def _os_facts(sec: _Sections, res: ParseResult) -> None:
    facts, values = res.facts, sec.values
    osv = values.get("os")
    if _known(osv):
        facts["os.name"] = _ARCH_SUFFIX.sub("", osv).strip()
    pv = values.get("python_version")
    if _known(pv):
        m = _PYVER.match(pv)
        if m:
            facts["python.version"] = m.group(1)
    pp = values.get("python_platform")
    if _known(pp):
        kernel = platform_kernel(pp)
        if kernel:
            kernel_facts(kernel, facts)


def _cpu_facts(sec: _Sections, res: ParseResult) -> None:
    """The CPU block: lscpu on Linux, wmic-like on Windows."""
    facts = res.facts
    for cl in sec.cpu_block:
        key, sep, value = cl.partition(":")
        if not sep:
            key, sep, value = cl.partition("=")  # old Windows "Name=Intel(R) ..."
        if not sep:
            continue
        k = key.strip()
        v = value.strip()
        if not v:
            continue
        if k in ("Model name", "Name") and "host.cpu_model" not in facts:
            facts["host.cpu_model"] = v
        elif k == "CPU(s)" and v.isdigit() and "host.cpu_count" not in facts:
            facts["host.cpu_count"] = int(v)


def _package_facts(sec: _Sections, res: ParseResult) -> None:
    """The ``[pip3]`` / ``[conda]`` lines under "Versions of relevant libraries", and vLLM's own version line."""
    facts = res.facts
    torch_dists: list[str] = []
    pip_torch_seen = False
    nvidia_wheels: list[str] = []
    pkg_from_pip: set[str] = set()
    for tool, spec in sec.pkg_lines:
        got = _package(tool, spec)
        if got is None:
            continue
        name, version = got
        if tool != "conda" and name in _TORCH_DISTS:
            pip_torch_seen = True
            torch_dists.append(f"{name}=={version}")
        fact = _PKG_FACTS.get(name)
        if fact and (tool != "conda" or fact not in pkg_from_pip):
            if tool != "conda":
                pkg_from_pip.add(fact)
            _set_package(facts, fact, version)
        if _NVIDIA_WHEEL.match(name) and name not in nvidia_wheels:
            nvidia_wheels.append(name)
        if name == "torch" and tool == "conda" and "torch.installed" not in facts and version:
            facts["torch.installed"] = True
    vv = sec.values.get("vllm_version")
    vv = vv.split()[0] if vv and vv.split() else vv  # "0.9.1.dev325+g9d880f594 (git sha: 9d880f594)"
    if _known(vv) and _NUMERIC_VERSION.match(vv) and "pkg.vllm" not in facts:
        _set_package(facts, "pkg.vllm", vv)
    if nvidia_wheels:
        facts["pkg.nvidia_wheels"] = nvidia_wheels
    if len(set(torch_dists)) >= 2:
        facts["pkg.torch_duplicates"] = sorted(set(torch_dists))
    tv = sec.values.get("torch_version")
    if pip_torch_seen:
        facts["torch.installed"] = True
    elif (tv is not None and tv.strip().lower() == "n/a" and sec.saw_libs_header
          and any(t != "conda" for t, _ in sec.pkg_lines)):
        facts["torch.installed"] = False


def _package(tool: str, spec: str) -> tuple[str, str] | None:
    """(normalised name, version) of one package line; None when it has no version."""
    if tool == "conda":
        parts = spec.split()
        if len(parts) < 2:
            return None
        name, version = _norm_pkg(parts[0]), parts[1]
        return ("torch" if name == "pytorch" else name), version
    m = _PIP_REQ.match(spec)
    if not m:
        return None
    return _norm_pkg(m.group(1)), m.group(2)


def _set_package(facts: dict, fact: str, version: str) -> None:
    facts[fact] = version
    if fact == "pkg.vllm":
        fl = build_flavour(version)
        if fl:
            facts["pkg.vllm_build"] = fl


def _env_facts(sec: _Sections, res: ParseResult) -> None:
    for k, v in sec.env.items():
        res.facts[f"env.{k}"] = v
    if sec.env:
        res.facts["env.set_names"] = sorted(sec.env)


def _notes(sec: _Sections, res: ParseResult) -> None:
    """Plain-language notes on what the paste lacks."""
    values, errors = sec.values, sec.errors
    if "torch_version" not in values and values:
        res.notes.append("no 'PyTorch version' line: the beginning of the output is missing?")
    if "torch_version" in values and not sec.saw_libs_header and not errors:
        res.notes.append("output ends before 'Versions of relevant libraries': truncated?")
    if not values and not errors:
        res.notes.append("no collect_env lines recognised")
    if not values and errors:
        res.notes.append(f"collect_env itself failed before printing its report: {errors[-1]}")
