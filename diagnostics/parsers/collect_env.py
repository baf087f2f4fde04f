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

from .base import ParseResult, guarded_parse
from .hipconfig import GPU_ENV_PREFIXES

KIND = "collect_env"

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
_LINUX_PLATFORM = re.compile(r"^Linux-(.+?)-(?:x86_64|aarch64|ppc64le|s390x|armv7l|riscv64|i686)(?:-|$)")
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
WINDOW = 2_000_000


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


def _flavour(version: str) -> str | None:
    """Build flavour from a local version label: +rocm6.2 -> rocm, +cu121 -> cuda, +cpu -> cpu."""
    _, plus, local = version.partition("+")
    if not plus:
        return None
    local = local.lower()
    if local.startswith("rocm"):
        return "rocm"
    if local.startswith("cu") and len(local) > 2 and local[2].isdigit():
        return "cuda"
    if local.startswith("cpu"):
        return "cpu"
    return None


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


def parse(text: str) -> ParseResult:
    return guarded_parse(KIND, text, _parse_into, "collect_env")


def _parse_into(text: str, res: ParseResult) -> None:
    if not text or not text.strip():
        res.notes.append("empty input")
        return
    # a collect_env report is a few kB; in a huge paste, read a window around where the report starts
    starts = [i for i in (text.find(m) for m in ("Collecting environment information", "PyTorch version:",
                                                 "Traceback (most recent call last)")) if i >= 0]
    begin = max(0, min(starts) - 20_000) if starts else 0
    if begin > 0 or len(text) - begin > WINDOW:
        res.notes.append(f"long input: only {WINDOW // 1_000_000} MB around the collect_env report were read")
        text = text[begin:begin + WINDOW]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")

    values: dict[str, str] = {}
    env: dict[str, str] = {}
    gpu_lines: list[str] = []
    pkg_lines: list[tuple[str, str]] = []
    cpu_block: list[str] = []
    errors: list[str] = []
    seen_errors: set[str] = set()

    def add_error(line: str) -> None:
        if line not in seen_errors and len(errors) < MAX_ERRORS:
            seen_errors.add(line)
            errors.append(line)

    in_gpu = False
    in_cpu = False
    in_traceback = False
    traceback_lines: list[str] = []
    torch_import_error: str | None = None
    saw_libs_header = False

    for raw in lines:
        if len(raw) > 4000:  # a binary blob or a minified line: not collect_env text
            continue
        line = _QUOTE_PREFIX.sub("", raw, count=1).rstrip() if raw[:1] in " \t>" else raw.rstrip()

        if line[:1] in ' \t"' and '":' in line:
            jm = _JSON_LINE.match(line)
            if jm and jm.group("key") in _JSON_KEYS:
                jv = jm.group("val")
                if jv.startswith('"'):
                    try:
                        jv = json.loads(jv)
                    except ValueError:
                        jv = None
                    name = _JSON_KEYS[jm.group("key")]
                    if isinstance(jv, str) and name not in values:
                        if name == "gpu_models" and "GPU " in jv:
                            gpu_lines.extend(g.strip() for g in jv.split("\n") if _GPU_LINE.match(g.strip()))
                        values[name] = jv.split("\n", 1)[0].strip()
                continue

        # a paste that lost its line breaks: "Collecting environment information...   PyTorch version: 2.7"
        cut = line.find("PyTorch version:")
        if cut > 0:
            line = line[cut:]

        # tracebacks printed by collect_env itself (or by import torch inside it); users often
        # paste only the last frames, starting at a 'File "..."' line
        if line.startswith("Traceback (most recent call last)") or (
            not in_traceback and line.startswith('File "') and ", line " in line
        ):
            in_traceback = True
            traceback_lines = [line]
            continue
        if in_traceback:
            if len(line) < 1000 and _EXC_LINE.match(line):
                add_error(line)
                tb = "\n".join(traceback_lines)
                if "import torch" in tb or "torch/__init__.py" in tb or "torch\\__init__.py" in tb:
                    torch_import_error = line
                in_traceback = False
            else:
                traceback_lines.append(line)
            continue
        if "Warning: " in line and len(line) < 1000 and _WARN_LINE.search(line):
            add_error(line.strip())

        if in_gpu:
            m = _GPU_LINE.match(line)
            if m:
                gpu_lines.append(line)
                continue
            if line == "":
                if gpu_lines:
                    in_gpu = False
                continue
            in_gpu = False  # fall through: this line is the next key

        if line == "CPU:" or line == "CPU Info":  # "CPU Info" is the banner of vLLM's 2025 layout
            in_cpu = True
            continue
        if "=" in line and not in_cpu:
            m = _ENV_LINE.match(line)
            if m and m.group(1).startswith(GPU_ENV_PREFIXES):
                env.setdefault(m.group(1), m.group(2))
                continue
        if line.startswith("Versions of relevant libraries"):
            in_cpu = False
            saw_libs_header = True
            continue

        m = _PKG_LINE.match(line)
        if m:
            pkg_lines.append((m.group(1), m.group(2).strip()))
            continue

        key, sep, value = line.partition(":")
        k = key.strip().lower()
        if sep and k in _KEYS and not in_cpu:
            name = _KEYS[k]
            # a copy that joined lines with runs of spaces: keep only the first field
            value = _WIDE_GAP.split(value.strip(), 1)[0]
            if name not in values:
                values[name] = value
            if name == "gpu_models":
                if value == "":
                    in_gpu = True
                elif _GPU_LINE.match(value):
                    gpu_lines.append(value)
                    in_gpu = True
            continue
        if in_cpu:
            cpu_block.append(line)

    if in_traceback:
        res.notes.append("a traceback in the output has no final exception line: truncated?")

    facts = res.facts

    # --- torch itself ---------------------------------------------------------------------
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

    build = _flavour(tv) if _known(tv) else None
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

    if torch_import_error:
        facts["torch.import_error"] = torch_import_error

    # --- GPUs -----------------------------------------------------------------------------------
    gm = values.get("gpu_models")
    if gpu_lines:
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
    elif _known(gm):
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

    nd = values.get("nvidia_driver")
    if _known(nd) and _NUMERIC_VERSION.match(nd):
        facts["nvidia.driver_version"] = nd.split()[0]

    hr = values.get("hip_runtime")
    if _known(hr) and _NUMERIC_VERSION.match(hr):
        facts["hip.runtime_version"] = hr

    # --- OS and Python ------------------------------------------------------------------------------
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
        m = _LINUX_PLATFORM.match(pp)
        if m:
            kernel = m.group(1)
            facts["os.kernel"] = kernel
            if "microsoft" in kernel.lower() and "wsl" in kernel.lower():
                facts["container.kind"] = "wsl"
                facts["container.present"] = True

    # --- CPU block (lscpu on Linux, wmic-like on Windows) ---------------------------------------------
    for cl in cpu_block:
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

    # --- packages -------------------------------------------------------------------------------------
    torch_dists: list[str] = []
    pip_torch_seen = False
    nvidia_wheels: list[str] = []
    pkg_from_pip: set[str] = set()
    for tool, spec in pkg_lines:
        if tool == "conda":
            parts = spec.split()
            if len(parts) < 2:
                continue
            name, version = _norm_pkg(parts[0]), parts[1]
            if name == "pytorch":
                name = "torch"
        else:
            m = _PIP_REQ.match(spec)
            if not m:
                continue
            name, version = _norm_pkg(m.group(1)), m.group(2)
            if name in _TORCH_DISTS:
                pip_torch_seen = True
                torch_dists.append(f"{name}=={version}")
        fact = _PKG_FACTS.get(name)
        if fact and (tool != "conda" or fact not in pkg_from_pip):
            if tool != "conda":
                pkg_from_pip.add(fact)
            facts[fact] = version
            if fact == "pkg.vllm":
                fl = _flavour(version)
                if fl:
                    facts["pkg.vllm_build"] = fl
        if _NVIDIA_WHEEL.match(name) and name not in nvidia_wheels:
            nvidia_wheels.append(name)
        if name == "torch" and tool == "conda" and "torch.installed" not in facts and version:
            facts["torch.installed"] = True
    vv = values.get("vllm_version")
    vv = vv.split()[0] if vv and vv.split() else vv  # "0.9.1.dev325+g9d880f594 (git sha: 9d880f594)"
    if _known(vv) and _NUMERIC_VERSION.match(vv) and "pkg.vllm" not in facts:
        facts["pkg.vllm"] = vv
        fl = _flavour(vv)
        if fl:
            facts["pkg.vllm_build"] = fl
    if nvidia_wheels:
        facts["pkg.nvidia_wheels"] = nvidia_wheels
    if len(set(torch_dists)) >= 2:
        facts["pkg.torch_duplicates"] = sorted(set(torch_dists))
    if pip_torch_seen:
        facts["torch.installed"] = True
    elif tv is not None and tv.strip().lower() == "n/a" and saw_libs_header and any(t != "conda" for t, _ in pkg_lines):
        facts["torch.installed"] = False

    for k, v in env.items():
        facts[f"env.{k}"] = v
    if env:
        facts["env.set_names"] = sorted(env)

    # --- plain-language notes -------------------------------------------------------------------------
    if "torch_version" not in values and values:
        res.notes.append("no 'PyTorch version' line: the beginning of the output is missing?")
    if "torch_version" in values and not saw_libs_header and not errors:
        res.notes.append("output ends before 'Versions of relevant libraries': truncated?")
    if not values and not errors:
        res.notes.append("no collect_env lines recognised")
    if not values and errors:
        res.notes.append(f"collect_env itself failed before printing its report: {errors[-1]}")
    res.errors.extend(errors)
