"""The startup banners and device lines of the apps people run, read for facts from any pasted log.

The logs users paste most are not tool dumps but what their app printed while it started: the same facts a probe
reads (torch's version and build, the GPU's name and target, VRAM, environment overrides) are in its first lines.

    Total VRAM 24560 MB, total RAM 64213 MB            ComfyUI, Forge, Fooocus (comfy model_management)
    pytorch version: 2.3.0+rocm6.0                     ... also 'PyTorch Version: 2.11.0+cu130' (Forge classic)
    AMD arch: gfx1150 / ROCm version: (6, 4)           newer ComfyUI on ROCm
    Device: cuda:0 AMD Radeon RX 7900 XTX : native     ... 'Device: NVIDIA GeForce RTX 3080 (cuda:0) - cudaMallocAsync'
    ** Python version: 3.12.0 (tags/...) [MSC v.1935 64 bit (AMD64)]       ComfyUI; A1111: 'Python 3.10.6 (tags/...'
    version: v1.10.1  •  python: 3.10.6  •  torch: 2.1.2+cu121  •  ...     the A1111 footer
    RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test ...     A1111's is_available() check
    Torch 2.3.0+rocm6.0  /  Torch reports GPU not available  /  Torch detected GPU: ... VRAM 8188 Arch (8, 9)   kohya_ss
    msg="inference compute" id=0 library=rocm variant="" compute=gfx1102 driver=0.0 name=1002:7480 total="8.0 GiB"
    msg="amdgpu is not supported (supported types:[gfx1103])" gpu_type=gfx1150 gpu=0      ollama serve
    msg="server config" env="map[... HSA_OVERRIDE_GFX_VERSION:10.3.0 ...]"               ollama serve
    ggml_cuda_init: found 1 ROCm devices:  /  Device 0: AMD Radeon 780M Graphics, gfx1103 (0x1103), VMM: no   llama.cpp
    ... -> physical GPU (device: 0, name: Tesla T4, pci bus id: 0000:00:07.0, compute capability: 7.5)     TensorFlow
    INFO ... vLLM API server version 0.8.5                                                vLLM
    Successfully installed ... torch-2.4.1+cu121 ...                                      pip
    01:00.0 VGA compatible controller: NVIDIA Corporation GA107M [GeForce RTX 3050 Mobile] (rev a1)    lspci (vendor only)
    GPU id = 1 (Radeon 8060S Graphics (RADV GFX1151))  beside  Board name: Radeon 8060S Graphics / Name: gfx1201
        Mesa's name for the chip against the target the ROCm runtime reports for the same board (clinfo,
        llama.cpp's device line, rocminfo): a different target is an override (gpu.gfx_reported_mismatch)

Every reader is one anchored or bounded regular expression on one line (linear; lines over 4000 characters are
skipped), and every value must have its fact's shape.  A fact the log cannot establish stays unknown: a 'Device:
cpu' line says nothing about the GPU, an ollama device named by its PCI id gives no name, and two runs in one paste
that disagree on a one-run fact leave it unknown.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..textnorm import clean_log
from .base import Opening, ParseResult, build_flavour, kernel_facts

MAX_LINES = 50_000
MAX_LINE = 4000
MIB = 1024 * 1024

_VER = r"\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?(?:\.dev\d+)?(?:\+[\w.]+)?"
_TORCH_VERSION = re.compile(rf"^{_VER}$")

_AMD_NAME = re.compile(r"(?i)\b(amd|radeon|instinct)\b")
_NVIDIA_NAME = re.compile(r"(?i)\b(nvidia|geforce|rtx|gtx|quadro|tesla)\b")
_IGPU_NAME = re.compile(r"(?i)\bRadeon(?:\(TM\))? (?:\d{3}M|Graphics|Vega \d+ Graphics)\b|\bRadeon(?:\(TM\))? Vega\b")

# what one run answers: two runs in one paste that disagree leave the fact unknown
_ONE_RUN = ("torch.version", "torch.cuda_available", "python.version", "ollama.version", "pkg.vllm", "gpu.count",
            "hip.device_count", "torch.hip_version")


@dataclass
class _Seen:
    facts: dict[str, Any] = field(default_factory=dict)
    conflicts: set[str] = field(default_factory=set)
    pip_torch: str | None = None          # the last torch pip installed (used only when nothing ran torch)
    vram_bytes: list[int] = field(default_factory=list)
    ollama_ids: set[str] = field(default_factory=set)
    zluda: bool = False
    directml: bool = False
    hits: set[str] = field(default_factory=set)   # which readers fired (detect's evidence)
    radv: dict[str, str] = field(default_factory=dict)       # board name (normalised) -> Mesa's gfx target
    reported: dict[str, set[str]] = field(default_factory=dict)  # board name -> targets the ROCm runtime reported
    board: str | None = None      # the last clinfo 'Board name:' not yet paired with its 'Name: gfx...'
    agent_gfx: str | None = None  # the last rocminfo 'Name: gfx...' not yet paired with its 'Marketing Name:'

    def report_gfx(self, name: str, gfx: str) -> None:
        self.reported.setdefault(_board_key(name), set()).add(gfx)

    def put(self, fact: str, value: Any) -> None:
        old = self.facts.get(fact)
        if old is None:
            self.facts[fact] = value
        elif old != value and fact in _ONE_RUN:
            self.conflicts.add(fact)

    def add(self, fact: str, item: str) -> None:
        items = self.facts.setdefault(fact, [])
        if item not in items:
            items.append(item)

    def amd_targets(self, *targets: str) -> None:
        """gfx targets the log names: an AMD GPU."""
        for target in targets:
            self.add("gpu.gfx_targets", target)
        self.add("gpu.vendors", "amd")


def detect(text: str) -> float:
    """0.5 when an app banner or device line is found: enough to be read when nothing else recognises the paste,
    never enough to displace a tool's own parser (the registry always reads app lines as embedded facts)."""
    seen = _scan(text[:200_000])
    return 0.5 if seen.hits and seen.facts else 0.0


OPENING = Opening("app_log", "app log", empty=False)


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


def parse_embedded(text: str) -> ParseResult:
    """The same readers: each one is tied to its app's own line, so they are safe inside any other paste."""
    return parse(text)


def _parse_into(text: str, res: ParseResult) -> None:
    seen = _scan(text)
    _finish(seen, res)


def _scan(text: str) -> _Seen:
    seen = _Seen()
    for line in clean_log(text).split("\n")[:MAX_LINES]:
        s = line.strip().strip("`").strip()
        if not s or len(s) > MAX_LINE:
            continue
        if s.startswith(("- **", "**")) and ":**" in s:   # a markdown report: '- **PyTorch Version:** 2.7.1+cu128'
            s = s.replace("**", "").lstrip("-").strip()
        if "ZLUDA" in s:
            seen.zluda = True
        if "directml" in s.lower() and ("Using directml" in s or "--directml" in s or "torch_directml" in s):
            seen.directml = True
        _read(s, seen)
    return seen


# ollama's 'inference compute' line: its KEY=value pairs, the GPU's size and a PCI id given for a name
_KV = re.compile(r"(\w{1,40})=(\"[^\"]{0,300}\"|\S{0,300})")
_SIZE = re.compile(r"^\"?(\d{1,6}(?:\.\d{1,3})?) ?(GiB|MiB|GB|MB)\"?$")
_PCI_ID_NAME = re.compile(r"(?i)^\"?(?:[0-9a-f]{4}:[0-9a-f]{4}|ROCm\d|CUDA\d)\"?$")


def _ollama_compute(kv: dict[str, str], seen: _Seen) -> None:
    """One 'inference compute' line: a GPU ollama will use (the CPU line, library=cpu, says nothing)."""
    lib = kv.get("library", "").strip('"').lower()
    if lib not in ("rocm", "cuda"):
        return
    key = f"{lib}:{kv.get('id', '')}"
    if key in seen.ollama_ids:
        return            # the same GPU listed again by a restart of the server
    seen.ollama_ids.add(key)
    seen.hits.add("ollama")
    compute = kv.get("compute", "").strip('"')
    if lib == "rocm":
        seen.add("gpu.vendors", "amd")
        if re.fullmatch(r"gfx[0-9a-f]{3,4}", compute):
            seen.add("gpu.gfx_targets", compute)
    else:
        seen.add("gpu.vendors", "nvidia")
        cc = re.fullmatch(r"(\d{1,2})\.(\d)", compute)
        if cc:
            seen.add("nvidia.compute_caps", f"sm_{cc.group(1)}{cc.group(2)}")
        drv = kv.get("driver", "").strip('"')
        if re.fullmatch(r"\d{1,2}\.\d{1,2}", drv) and drv != "0.0":
            seen.put("nvidia.cuda_version", drv)   # cuDriverGetVersion: the CUDA version the driver supports
    name = (kv.get("description") or kv.get("name") or "").strip('"').strip()
    if name and not _PCI_ID_NAME.match(name):
        _gpu_name(name, seen)
    size = _SIZE.match(kv.get("total", ""))
    if size:
        mib = float(size.group(1)) * (1024 if size.group(2) in ("GiB", "GB") else 1)
        if "type" not in kv or kv.get("type", "").strip('"') != "iGPU":
            seen.vram_bytes.append(int(mib * MIB))


def _comfy_vram(m: re.Match[str], seen: _Seen) -> None:
    seen.vram_bytes.append(int(m.group(1)) * MIB)
    seen.put("host.mem_total_bytes", int(m.group(2)) * MIB)


# the mark ZLUDA's builds put after the device's name
_ZLUDA = re.compile(r"\s*\[ZLUDA\]\s*$")


def _app_device(name: str, seen: _Seen) -> None:
    """The cuda device the app picked: torch.cuda.is_available() said True (ZLUDA's mark taken off the name)."""
    if _ZLUDA.search(name):
        seen.zluda = True
        name = _ZLUDA.sub("", name)
    _gpu_name(name, seen)
    seen.put("torch.cuda_available", True)


def _python(version: str, windows: bool, seen: _Seen) -> None:
    seen.put("python.version", version)
    _windows(windows, seen)


def _windows(yes: bool, seen: _Seen) -> None:
    if yes:
        seen.put("os.name", "Windows")


def _a1111_footer(m: re.Match[str], seen: _Seen) -> None:
    seen.put("python.version", m.group(1))
    _torch_version(m.group(2), seen, "a1111")


def _torch_no_gpu(m: re.Match[str], seen: _Seen) -> None:
    seen.put("torch.cuda_available", False)
    seen.put("torch.installed", True)


_PIP_TORCH = re.compile(rf"(?:^|\s)torch-({_VER})(?=\s|$)")


def _pip_installed(m: re.Match[str], seen: _Seen) -> None:
    t = _PIP_TORCH.search(m.group(1))
    if t:
        seen.pip_torch = t.group(1)
        seen.hits.add("pip")


def _pip_satisfied(m: re.Match[str], seen: _Seen) -> None:
    seen.pip_torch = m.group(1)


# ollama's 'server config' env map
_ENV_IN_MAP = re.compile(r"(?:^|[\s\[])(HSA_OVERRIDE_GFX_VERSION|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES"
                         r"|CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL):(\S{0,200})")


def _ollama_env(m: re.Match[str], seen: _Seen) -> None:
    for name, value in _ENV_IN_MAP.findall(m.string):
        value = value.rstrip("]\"")
        if value:
            seen.put(f"env.{name}", value)


def _ggml_found(m: re.Match[str], seen: _Seen) -> None:
    n = int(m.group(1))
    seen.put("gpu.count", n)
    if m.group(2) == "ROCm":
        seen.put("hip.device_count", n)
        seen.add("gpu.vendors", "amd")
        seen.facts["_ggml_rocm"] = True


def _ggml_gfx(m: re.Match[str], seen: _Seen) -> None:
    if m.group(1).strip():
        _gpu_name(m.group(1), seen)
        seen.report_gfx(m.group(1), m.group(2))
    seen.amd_targets(m.group(2))


def _board_key(name: str) -> str:
    """'AMD Radeon(TM) 8060S Graphics' and 'Radeon 8060S Graphics' name the same board."""
    key = re.sub(r"\((?:TM|R)\)", "", name, flags=re.I).lower()
    key = re.sub(r"^amd\s+", "", key.strip())
    return " ".join(key.split())


def _radv(m: re.Match[str], seen: _Seen) -> None:
    seen.radv[_board_key(m.group(1))] = "gfx" + m.group(2).lower()


def _board(m: re.Match[str], seen: _Seen) -> None:
    if m.group(1) == "Board name":             # clinfo: the target follows
        seen.board = m.group(2)
    elif seen.agent_gfx is not None:          # rocminfo: the agent's target came first
        seen.report_gfx(m.group(2), seen.agent_gfx)
    seen.agent_gfx = None


def _agent_gfx(m: re.Match[str], seen: _Seen) -> None:
    seen.add("gpu.gfx_targets", m.group(1))
    if seen.board is not None:                # clinfo: the board came first
        seen.report_gfx(seen.board, m.group(1))
        seen.board = None
    else:
        seen.agent_gfx = m.group(1)


def _gfx_mismatch(seen: _Seen, res: ParseResult) -> None:
    """gpu.gfx_reported_mismatch: a board the ROCm runtime reports under another target than Mesa names its chip."""
    pairs = [(name, seen.radv[name], seen.reported[name]) for name in seen.radv if name in seen.reported]
    if not pairs:
        return
    wrong = [(name, own, rep) for name, own, rep in pairs if rep != {own}]
    seen.facts["gpu.gfx_reported_mismatch"] = bool(wrong)
    for name, own, rep in wrong:
        res.notes.append(f"Mesa names {name!r} {own}, the ROCm runtime reports it as {', '.join(sorted(rep))}: "
                         "an HSA_OVERRIDE_GFX_VERSION (or another override) is in effect")


def _ggml_cc(m: re.Match[str], seen: _Seen) -> None:
    if m.group(1).strip():
        _gpu_name(m.group(1), seen)
    if not seen.facts.get("_ggml_rocm"):   # a ROCm build prints the gfx major/minor as a 'compute capability'
        seen.add("nvidia.compute_caps", f"sm_{m.group(2)}{m.group(3)}")


def _ggml_no_device(m: re.Match[str], seen: _Seen) -> None:
    seen.put("hip.device_count", 0)
    seen.put("hip.error", "hipErrorNoDevice")   # hipGetErrorString(hipErrorNoDevice)


def _tf_device(m: re.Match[str], seen: _Seen) -> None:
    _gpu_name(m.group(1), seen)
    if m.group(2):
        seen.add("nvidia.compute_caps", f"sm_{m.group(2)}{m.group(3)}")
        seen.add("gpu.vendors", "nvidia")


def _vllm(m: re.Match[str], seen: _Seen) -> None:
    seen.put("pkg.vllm", m.group(1))
    build = build_flavour(m.group(1))
    if build:
        seen.put("pkg.vllm_build", build)


# a bug-report template's GPU value: ROCm torch's 'NAME (gfx1100)', or a word for none
_NAME_GFX = re.compile(r"^(.{0,120}?)\s*\((gfx[0-9a-f]{3,4})(?::[\w+:-]{0,40})?\)\s*$")
_TEMPLATE_UNKNOWN = re.compile(r"(?i)^(?:n/?a|none|no|unknown|could not collect|no cuda|no gpus?|-|\?|cpu(?: only)?)\.?$")


def _template_gpu(m: re.Match[str], seen: _Seen) -> None:
    value = m.group(1).strip()
    g = _NAME_GFX.match(value)   # ROCm torch's own form: 'AMD Radeon RX 7900 XTX (gfx1100)'
    if g:
        value = g.group(1)
        seen.amd_targets(g.group(2))
    if value and not _TEMPLATE_UNKNOWN.match(value):
        _gpu_name(value, seen)
        seen.hits.add("template")


# the vendor of an lspci display device: its name or its PCI vendor id
_LSPCI_VENDOR = (("amd", re.compile(r"^(?:Advanced Micro Devices|ATI Technologies)|\[AMD(?:/ATI)?\]|\[1002:[0-9a-f]{4}\]")),
                 ("nvidia", re.compile(r"^NVIDIA Corporation|\[10de:[0-9a-f]{4}\]")),
                 ("intel", re.compile(r"^Intel Corporation|\[8086:[0-9a-f]{4}\]")))


def _lspci(m: re.Match[str], seen: _Seen) -> None:
    for vendor, rx in _LSPCI_VENDOR:
        if rx.search(m.group(1)):
            seen.add("gpu.vendors", vendor)
            seen.hits.add("lspci")
            break


def _cuda_not_available(m: re.Match[str], seen: _Seen) -> None:
    seen.facts["_cuda_not_available"] = True


def _uname(m: re.Match[str], seen: _Seen) -> None:
    k: dict[str, Any] = {}
    kernel_facts(m.group(1), k)
    for name, value in k.items():
        seen.put(name, value)


_Act = Callable[[re.Match[str], _Seen], None]

# The readers, in the order they are tried; the first that reads a line reads it alone.  A row: a literal the line
# must hold before the pattern is tried (one the pattern itself requires, so it only saves time; None: none), the
# pattern (searched in the line; one anchored with '^' reads it from its start), the app its reading names (None:
# the action says so itself, or it names none), and what it does with the match.  Compiled once, by the loop below.
_READER_ROWS: tuple[tuple[str | None, str, str | None, _Act], ...] = (
    # ComfyUI / Forge / Fooocus (comfy.model_management and its forks)
    (None, r"^Total VRAM (\d{1,8}) MB, total RAM (\d{1,9}) MB\b", "comfy", _comfy_vram),
    (None, r"(?i)^py ?torch version: (\S{1,80})", None, lambda m, seen: _torch_version(m.group(1), seen, "comfy")),
    (None, r"^Device: (cuda:\d{1,2}) (.{1,120}?) : [\w.-]{1,40}\s*$", "comfy-device",
     lambda m, seen: _app_device(m.group(2), seen)),
    # the 'System Information' / 'Devices' part of ComfyUI's error report (markdown, '- **Name:** ...' once unbolded)
    (None, r"^Name: (cuda:\d{1,2}) (.{1,120}?) : [\w.-]{1,40}\s*$", "comfy-device",
     lambda m, seen: _app_device(m.group(2), seen)),
    (None, r"^Device: (.{1,120}?) \((cuda:\d{1,2})\)(?: - \S.*)?$", "comfy-device",
     lambda m, seen: _app_device(m.group(1), seen)),
    (None, r"^AMD arch: (gfx[0-9a-f]{3,4})\s*$", "comfy", lambda m, seen: seen.amd_targets(m.group(1))),
    (None, r"^ROCm version: \((\d{1,2}), (\d{1,2})\)\s*$", "comfy",
     lambda m, seen: seen.put("torch.hip_version", f"{int(m.group(1))}.{int(m.group(2))}")),
    (None, r"^(?:\*\* )?(?i:Python version): (\d\.\d{1,2}\.\d{1,2})\b", None,
     lambda m, seen: _python(m.group(1), "[MSC v." in m.string, seen)),
    (None, r"^VRAM Total: (\d{6,15})\s*$", "comfy", lambda m, seen: seen.vram_bytes.append(int(m.group(1)))),
    (None, r"^OS: (nt|win32|posix|linux|darwin)\s*$", None,
     lambda m, seen: _windows(m.group(1) in ("nt", "win32"), seen)),
    (None, r"^\*\* Platform: (Windows|Linux|Darwin)\s*$", "comfy",
     lambda m, seen: _windows(m.group(1) == "Windows", seen)),
    # A1111 / Forge launch, pip
    ("Python ", r"^Python (\d\.\d{1,2}\.\d{1,2})\s\((?:tags/|main|default|[^)]{0,80}\d{4})[^)]{0,120}\)(.{0,120})$",
     None, lambda m, seen: _python(m.group(1), "[MSC v." in m.group(2), seen)),
    ("torch: ", r"\bpython: (\d\.\d{1,2}\.\d{1,2})\s+\S\s+torch: (\S{1,80})", None, _a1111_footer),
    ("Torch is not able to use GPU", r"(?:^|RuntimeError: |AssertionError: )Torch is not able to use GPU\b", "a1111",
     _torch_no_gpu),
    # kohya_ss's torch check (setup/validate_requirements.py; rich's time and level are gone after clean_log):
    # 'Torch 2.3.0+rocm6.0', then 'Torch backend: AMD ROCm HIP 6.0.32830-d62f6a171' or 'Torch backend: nVidia CUDA
    # 11.8 cuDNN 8905' and 'Torch detected GPU: NAME VRAM 8188 Arch (8, 9) Cores 24' (newer: 'VRAM 8188MB Arch 8.9'),
    # or 'Torch reports GPU not available' when torch.cuda.is_available() is False
    ("Torch ", r"^Torch (\d+\.\d+\.\d+\S{0,60})\s*$", None, lambda m, seen: _torch_version(m.group(1), seen, "kohya")),
    ("Torch reports GPU not available", r"^Torch reports GPU not available\s*$", "kohya", _torch_no_gpu),
    ("Torch backend: ", r"^Torch backend: AMD ROCm HIP (\d+\.\d+[\w.-]{0,40})\s*$", "kohya",
     lambda m, seen: seen.put("torch.hip_version", m.group(1))),
    ("Torch detected GPU: ", r"^Torch detected GPU: (.{1,120}?) VRAM \d{1,7}(?: ?MB)? Arch ", "kohya",
     lambda m, seen: _app_device(m.group(1), seen)),
    (None, r"^Successfully installed (.{1,3000})$", None, _pip_installed),
    (None, rf"^Requirement already satisfied: torch(?:==\S+)? in \S.{{0,300}}? \(({_VER})\)\s*$", "pip",
     _pip_satisfied),
    # ollama serve: 'msg="Listening on 127.0.0.1:11434 (version 0.5.7)"'; before the structured log (0.1.x, 2023)
    # the line was '2023/12/18 21:59:15 routes.go:871: Listening on 127.0.0.1:11434 (version 0.1.16)'
    ("Listening on ", r"(?:msg=\"|^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d routes\.go:\d{1,5}: )Listening on \S{1,200} "
     r"\(version ([0-9][\w.+-]{0,40})\)", "ollama", lambda m, seen: seen.put("ollama.version", m.group(1))),
    ("inference compute", r"msg=\"?inference compute\"?\s(.{1,1500})$", None,
     lambda m, seen: _ollama_compute(dict(_KV.findall(m.group(1))), seen)),
    ("server config", r"msg=\"?server config\"? env=\"map\[", "ollama", _ollama_env),
    ("skipping rocm", r"msg=\"skipping rocm gfx compatibility check\" HSA_OVERRIDE_GFX_VERSION=(\S{1,40})", "ollama",
     lambda m, seen: seen.put("env.HSA_OVERRIDE_GFX_VERSION", m.group(1).strip("\"'"))),
    ("amdgpu is ", r"msg=\"amdgpu is (?:not )?supported[^\"]{0,600}\"(?:\s\S{1,300})*?\sgpu_type=(gfx[0-9a-f]{3,4})\b",
     "ollama", lambda m, seen: seen.amd_targets(m.group(1))),
    ("amdgpu [", r"amdgpu \[\d{1,2}\] (gfx[0-9a-f]{3,4}) is not supported by ", "ollama",
     lambda m, seen: seen.amd_targets(m.group(1))),
    ("detected amdgpu", r"detected amdgpu versions \[((?:gfx[0-9a-f]{3,4} ?){1,16})\]", "ollama",
     lambda m, seen: seen.amd_targets(*m.group(1).split())),
    # llama.cpp (ggml's CUDA/HIP backend)
    ("ggml_", r"^ggml_(?:cuda_init|init_cublas): found (\d{1,3}) (ROCm|CUDA) devices:", "ggml", _ggml_found),
    ("Device ", r"^\s*Device \d{1,3}: (.{0,120}?), (gfx[0-9a-f]{3,4})(?::[\w+:-]{0,40})? \(0x[0-9a-f]{3,4}\), "
     r"VMM: (?:yes|no)", "ggml", _ggml_gfx),
    ("Device ", r"^\s*Device \d{1,3}: (.{0,120}?), compute capability (\d{1,2})\.(\d), VMM: (?:yes|no)", "ggml",
     _ggml_cc),
    ("ggml_cuda_init", r"^ggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected", "ggml",
     _ggml_no_device),
    # TensorFlow
    ("physical GPU", r"physical GPU \(device: \d{1,3}, name: ([^,()]{1,120}), pci bus id: [0-9a-fA-F:.]{1,20}"
     r"(?:, compute capability: (\d{1,2})\.(\d))?\)", "tensorflow", _tf_device),
    ("Ignoring visible", r"Ignoring visible gpu device \(device: \d{1,3}, name: ([^,()]{1,120}), pci bus id: "
     r"[0-9a-fA-F:.]{1,20}, compute capability: (\d{1,2})\.(\d)\)", "tensorflow", _tf_device),
    # vLLM
    ("LLM ", rf"(?:vLLM API server version |Initializing an? (?:V\d )?LLM engine \(v)({_VER})\b", "vllm", _vllm),
    # the GitHub bug-report templates of PyTorch and its neighbours ('- GPU models and configuration: AMD Raven'); the
    # collect_env output of the same name is read by its own parser first (its 'GPU 0: NAME' lines)
    ("GPU models", r"^(?:[-*]\s*)?GPU models and configuration\s*:\s*(?:GPU \d{1,2}: )?(\S.{0,118})$", None,
     _template_gpu),
    # lspci (plain, -nn, -k, -v): '03:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA107M [GeForce RTX
    # 3050 Mobile] [10de:25a2] (rev a1)'; only display and 3D classes (the card's HDMI audio function is another class)
    ("controller", r"(?i)^(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] (?:VGA compatible controller|3D controller"
     r"|Display controller)(?: \[03[0-9a-f]{2}\])?: (.{1,240})$", None, _lspci),
    # a check script's own sentence for torch.cuda.is_available() == False ('CUDA is not available. PyTorch will use
    # the CPU.'), only when the same paste also shows torch's version (so the sentence is torch's check, not another's)
    ("CUDA ", r"^(?:torch\.)?CUDA (?:is )?not available\b", None, _cuda_not_available),
    # uname -a
    ("Linux ", r"^Linux \S{1,64} (\d+\.\d+\.\d+[\w.+~-]{0,80}) #\d{1,6}", None, _uname),
    # an agent's name line of rocminfo, alone (``rocminfo | grep gfx`` / ``grep -i name``): the GPUs' targets, in
    # order (targets only: the vendor follows from them in derive, as it does for a whole rocminfo)
    # Mesa's Vulkan driver names the chip itself, whatever HSA_OVERRIDE_GFX_VERSION says: vulkaninfo ('deviceName =
    # AMD Radeon Graphics (RADV GFX1151)', 'GPU id = 1 (Radeon 8060S Graphics (RADV GFX1151))') and llama.cpp
    # ('ggml_vulkan: 0 = Radeon 8060S Graphics (RADV GFX1151) (radv) | ...'); chips Mesa names by a codename
    # (RADV NAVI31) are not mapped
    ("(RADV GFX", r"(?:= |\()([^=()]{1,120}?) \(RADV GFX([0-9]{3,4}|[0-9]{2,3}[0-9A-F])(?:_R[0-9])?\)", None, _radv),
    # clinfo (rocm-clinfo, clinfo) prints a device's board before its target: 'Board name: AMD Radeon AI PRO R9700'
    # ... 'Name: gfx1201'; rocminfo the other way round ('Name: gfx1100' ... 'Marketing Name: Radeon RX 7900 XTX')
    ("ame:", r"^(Board name|Marketing Name):\s+(\S.{0,118}?)\s*$", None, _board),
    ("Name:", r"^\s*Name:\s+(gfx[0-9][0-9a-f]{1,3})\s*$", None, _agent_gfx),
)
_READERS = tuple((literal, re.compile(pattern).search, app, act) for literal, pattern, app, act in _READER_ROWS)


def _read(s: str, seen: _Seen) -> None:
    for literal, find, app, act in _READERS:
        if literal is not None and literal not in s:
            continue
        m = find(s)
        if m:
            act(m, seen)
            if app:
                seen.hits.add(app)
            return


def _torch_version(raw: str, seen: _Seen, app: str) -> None:
    v = raw.strip().rstrip(",;")
    if not _TORCH_VERSION.match(v):
        return
    seen.put("torch.version", v)
    seen.put("torch.installed", True)
    build = build_flavour(v)
    if build:
        seen.put("torch.build", build)
    seen.hits.add(app)


def _gpu_name(name: str, seen: _Seen) -> None:
    name = name.strip().strip('"').strip()
    if not name or len(name) > 120 or name.lower() in ("cpu", "none", "n/a"):
        return
    seen.add("gpu.names", name)
    if _AMD_NAME.search(name):
        seen.add("gpu.vendors", "amd")
    elif _NVIDIA_NAME.search(name):
        seen.add("gpu.vendors", "nvidia")


def _finish(seen: _Seen, res: ParseResult) -> None:
    facts = seen.facts
    _gfx_mismatch(seen, res)
    facts.pop("_ggml_rocm", None)
    if facts.pop("_cuda_not_available", False) and (facts.get("torch.version") or seen.pip_torch):
        seen.put("torch.cuda_available", False)
    for fact in sorted(seen.conflicts):
        res.notes.append(f"the log holds runs that disagree on {fact}; it is left unknown")
        facts.pop(fact, None)
    if "torch.version" not in facts and "torch.version" not in seen.conflicts and seen.pip_torch:
        facts["torch.version"] = seen.pip_torch       # what pip left installed, when no run of torch says otherwise
        facts.setdefault("torch.installed", True)
        build = build_flavour(seen.pip_torch)
        if build:
            facts.setdefault("torch.build", build)
    if "torch.build" not in facts and facts.get("torch.hip_version"):
        facts["torch.build"] = "rocm"                 # ComfyUI prints 'ROCm version:' from torch.version.hip
    if seen.vram_bytes and not seen.directml:
        names = facts.get("gpu.names") or []
        if not any(_IGPU_NAME.search(n) for n in names):   # an APU's figure counts shared memory too
            facts["gpu.vram_total_bytes"] = max(seen.vram_bytes)
    if seen.zluda:
        res.notes.append("the log runs a CUDA build of torch through ZLUDA on an AMD GPU")
    if seen.directml:
        res.notes.append("the log runs torch-directml; its VRAM figure is not the GPU's")
    if not facts:
        res.notes.append("no app banner or device line recognised")
        return
    env_names = sorted(k[4:] for k in facts if k.startswith("env."))
    if env_names:
        facts["env.set_names"] = env_names
    res.facts.update(facts)
