"""The GPU support matrix (``kb/support/gpu-matrix.yaml``): loading with a strict schema, the facts derived from
it, the install command computed from it, and the fix-text placeholders filled from it.

The matrix is data like the KB entries: it is composed with the same alias-free YAML loader, every problem is
reported as ``file:line:column: message``, and nothing in it runs.  Facts derived here never override a fact a
probe or a parser established; an answer the matrix cannot give is left out (unknown), never guessed.
"""
from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from .gfx import OVERRIDE_RE, override_to_gfx
from .kb import KB_DIR, PLACEHOLDER_RE, PLACEHOLDERS, KBError, _compose, _Ctx, _rel, parse_version

MATRIX_NAME = os.path.join("support", "gpu-matrix.yaml")
INDEX_BASE = "https://download.pytorch.org/whl/"
VERIFY_CMD = 'python -c "import torch; print(torch.cuda.get_arch_list())"'
# the pip of the interpreter that will import torch: a bare `pip` is whichever is first on PATH, possibly another
# Python's (https://packaging.python.org/en/latest/tutorials/installing-packages/#use-pip-for-installing)
PIP = "python -m pip"

GFX_RE = re.compile(r"^gfx[0-9]{3,4}[a-f]?$|^gfx[0-9]{2}[a-f]$")
CC_RE = re.compile(r"^sm_[0-9]{2,3}$")
VER_RE = re.compile(r"^[0-9]+(\.[0-9]+){1,2}$")
# a wheel's release (the part before its local "+tag"): AMD's index also publishes PEP 440 pre-releases and four-part
# versions as the stable trio of a ROCm release (torchvision 0.29.0a0, torchaudio 2.11.0.3 of ROCm 10.1.0)
WHEEL_VER_RE = re.compile(r"^[0-9]+(\.[0-9]+){1,3}((a|b|rc)[0-9]+)?$")

AMD_KEYS = {"gfx": True, "family": True, "names": True, "official": True, "official_since": False,
            "native_bf16": True, "override": True, "legacy": False, "source": True}
NV_KEYS = {"cc": True, "family": True, "names": True, "native_bf16": True, "source": True}
FOLDER_KEYS = {"folder": True, "stack": True, "version": True, "torch": True, "index": False, "device_extras": False}
PYPI_INDEX = "https://pypi.org/simple"
WHEEL_KEYS = {"torch": True, "torchvision": True, "torchaudio": True, "archs": False, "libs_missing": False,
              "python": False, "source": True}
DRIVER_KEYS = {"cuda": True, "driver": True, "source": True}
TOP_KEYS = {"checked": True, "sources": True, "amd": True, "nvidia": True, "wheels": True, "cuda_min_driver": True}


@dataclass
class Wheel:
    folder: str
    stack: str                  # rocm | cuda
    stack_version: str          # '6.2.4', '12.8'
    torch: str
    torchvision: str
    torchaudio: str
    archs: list[str] | None     # measured torch.cuda.get_arch_list(); None: not established
    source: list[str]
    # targets the arch list names but the libraries bundled in the wheel do not serve (rocBLAS without Tensile
    # kernels for them): never recommended for those targets
    libs_missing: list[str] = field(default_factory=list)
    # the index that serves this folder's wheels when it is not download.pytorch.org/whl/<folder>: PyPI (whose Linux
    # torch is one CUDA build, e.g. 2.15.0+cu132) or AMD's own index (TheRock's multi-arch wheels)
    index: str | None = None
    # AMD's multi-arch index: the GPU code comes from a `[device-gfxNNNN]` extra of torch and torchvision
    # (amd-torch-device-gfxNNNN packages), and the versions carry the folder as their local tag (2.12.0+rocm7.14.0)
    device_extras: bool = False
    # the oldest Python the release has wheels for, where established (torch 2.15.0: 3.11, no cp310 wheel): a
    # machine whose Python is older is never computed this wheel
    python_min: str | None = None

    def runs(self, target: str) -> bool:
        """The wheel's code and bundled libraries carry *target* (natively or, NVIDIA, through PTX)."""
        return bool(self.archs) and target not in self.libs_missing and arch_runs(target, self.archs or [])

    @property
    def index_url(self) -> str:
        return self.index or (INDEX_BASE + self.folder)

    @property
    def index_kind(self) -> str:
        """'pytorch' (download.pytorch.org/whl/<folder>), 'pypi' or 'amd' (AMD's device-extras index)."""
        if self.device_extras:
            return "amd"
        if self.index and self.index.rstrip("/") == PYPI_INDEX:
            return "pypi"
        return "pytorch" if not self.index else "other"


@dataclass
class Matrix:
    checked: str = ""
    sources: dict[str, str] = field(default_factory=dict)
    amd: dict[str, dict[str, Any]] = field(default_factory=dict)
    nvidia: dict[str, dict[str, Any]] = field(default_factory=dict)
    wheels: list[Wheel] = field(default_factory=list)
    cuda_min_driver: dict[str, str] = field(default_factory=dict)
    errors: list[KBError] = field(default_factory=list)
    path: str = ""

    # ---- lookups
    def row(self, target: str) -> dict[str, Any] | None:
        return self.amd.get(target) or self.nvidia.get(target)

    def target_from_name(self, name: str) -> str | None:
        """'AMD Radeon RX 6700 XT' -> 'gfx1031' (exact marketing name, case and spacing ignored)."""
        key = _norm_name(name)
        if not key:
            return None
        best: tuple[int, str] | None = None
        for table in (self.amd, self.nvidia):
            for t, row in table.items():
                for n in row["names"]:
                    nn = _norm_name(n)
                    # exact, or the listed name followed by a non-alphanumeric suffix ('a100' in 'a100-sxm4-80gb',
                    # never 'a10' in 'a100'); the longest listed name wins
                    if key == nn or (key.startswith(nn) and not key[len(nn)].isalnum()):
                        if best is None or len(nn) > best[0]:
                            best = (len(nn), t)
        return best[1] if best else None

    def wheel_for(self, torch_version: str) -> Wheel | None:
        """The wheel a version string like '2.5.1+rocm6.2' came from (None: not a listed official wheel)."""
        base, _, local = str(torch_version).partition("+")
        for w in self.wheels:
            if w.torch == base and w.folder == local:
                return w
        return None

    def wheel_carries(self, w: Wheel, target: str) -> bool | None:
        if w.archs is None:
            return None
        return arch_runs(target, w.archs)


def _norm_name(name: str) -> str:
    n = re.sub(r"\s+", " ", str(name)).strip().lower()
    n = re.sub(r"^(amd|nvidia) ", "", n)
    n = re.sub(r" graphics$", "", n)  # rocminfo names iGPUs 'Radeon 8060S Graphics'
    return n


def arch_runs(target: str, archs: list[str]) -> bool:
    """Does a build with *archs* carry code that runs on *target*?

    AMD: the exact gfx target must be listed.  NVIDIA: binary code for the same major capability with a lower or
    equal minor (sm_86 code runs on sm_89), or PTX (compute_XY) of a capability not above it (see carried_arch)."""
    return carried_arch(target, archs) is not None


def carried_arch(target: str, archs: list[str]) -> str | None:
    """The entry of *archs* (a ``get_arch_list()``) whose code runs *target*: the target itself when listed, else
    (NVIDIA) the highest binary code of the same major capability below it (a cu126 wheel's sm_60 for an sm_61 GPU,
    sm_86 for an sm_89 one), else the highest PTX not above it; None when nothing runs it (see arch_runs)."""
    listed = list(dict.fromkeys(a.split(":", 1)[0] for a in archs))
    if target in listed:
        return target
    want = _cc_num(target) if target.startswith("sm_") else None
    if want is None:
        return None
    best: tuple[int, int, str] | None = None
    for a in listed:
        have = _cc_num(a)
        if have is None or have > want:
            continue
        if a.startswith("sm_") and have // 10 == want // 10:
            key = (1, have, a)      # binary code of the same major version beats PTX the driver must compile
        elif a.startswith("compute_"):
            key = (0, have, a)
        else:
            continue
        if best is None or key > best:
            best = key
    return best[2] if best else None


def _cc_num(a: str) -> int | None:
    m = re.match(r"^(?:sm|compute)_([0-9]+)[af]?$", a)
    return int(m.group(1)) if m else None


# --------------------------------------------------------------------------------------------------
# loading and linting


def matrix_path(kb_dir: str | os.PathLike | None = None) -> Path:
    d = Path(kb_dir) if kb_dir else Path(os.environ.get("GPU_DOCTOR_KB") or KB_DIR)
    return d / MATRIX_NAME


def parse_matrix(text: str, path: str) -> Matrix:
    """Parse and check the matrix; every problem found is collected (not only the first)."""
    m = Matrix(path=path)
    ctx = _Ctx(path)
    try:
        root = _compose(text, path)
    except KBError as exc:
        m.errors.append(exc)
        return m
    if not isinstance(root, yaml.MappingNode):
        m.errors.append(ctx.err(root, "the support matrix must be a mapping"))
        return m
    top = _keys(ctx, root, TOP_KEYS, "the support matrix", m.errors)
    if "checked" in top:
        m.checked = str(_scalar(top["checked"]))
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", m.checked):
            m.errors.append(ctx.err(top["checked"], "checked must be a date like '2026-12-01'"))
    if "sources" in top:
        node = top["sources"]
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                url = _scalar(v)
                if not isinstance(url, str) or not re.match(r"^https?://\S+$", url):
                    m.errors.append(ctx.err(v, f"source {_scalar(k)!r} must be an http(s) URL"))
                m.sources[str(_scalar(k))] = str(url)
        else:
            m.errors.append(ctx.err(node, "sources must map a short name to a URL"))
    names_seen: dict[str, str] = {}
    for section, keys, idkey, idre, table in (("amd", AMD_KEYS, "gfx", GFX_RE, m.amd),
                                             ("nvidia", NV_KEYS, "cc", CC_RE, m.nvidia)):
        node = top.get(section)
        if node is None:
            continue
        for item in _seq(ctx, node, section, m.errors):
            f = _keys(ctx, item, keys, f"a row of {section}", m.errors)
            if idkey not in f:
                continue
            tid = _scalar(f[idkey])
            if not isinstance(tid, str) or not idre.match(tid):
                m.errors.append(ctx.err(f[idkey], f"{idkey} {tid!r} is not a valid target name"))
                continue
            if tid in table:
                m.errors.append(ctx.err(f[idkey], f"duplicate target {tid!r}"))
                continue
            row: dict[str, Any] = {"target": tid, "line": f[idkey].start_mark.line + 1}
            for k, v in f.items():
                if k == idkey:
                    continue
                val = _plain(v)
                if k in ("names", "source"):
                    if not (isinstance(val, list) and val and all(isinstance(x, str) and x.strip() for x in val)):
                        m.errors.append(ctx.err(v, f"{k} must be a non-empty list of strings"))
                        val = []
                    if k == "source":
                        for i, s in enumerate(val):
                            if s not in m.sources:
                                m.errors.append(ctx.err(v.value[i], f"unknown source {s!r} (define it under sources:)"))
                    else:
                        for i, n in enumerate(val):
                            key = _norm_name(n)
                            if key in names_seen:
                                m.errors.append(ctx.err(v.value[i], f"name {n!r} is also given to {names_seen[key]}"))
                            names_seen[key] = tid
                elif k in ("official", "native_bf16", "legacy"):
                    if not isinstance(val, bool):
                        m.errors.append(ctx.err(v, f"{k} must be true or false"))
                elif k == "official_since":
                    if not (isinstance(val, str) and VER_RE.match(val)):
                        m.errors.append(ctx.err(v, "official_since must be a quoted ROCm version like '6.4.2'"))
                elif k == "override":
                    if val is not None and not (isinstance(val, str) and OVERRIDE_RE.match(val)):
                        m.errors.append(ctx.err(v, "override must be null or a quoted MAJOR.MINOR.STEP value like '10.3.0'"))
                elif k == "family":
                    if not isinstance(val, str) or not val.strip():
                        m.errors.append(ctx.err(v, "family must be a string"))
                row[k] = val
            if section == "amd" and row.get("official") is True and "official_since" not in row:
                m.errors.append(ctx.err(item, "an officially supported target needs official_since"))
            if section == "amd" and row.get("official") is False and "official_since" in row:
                m.errors.append(ctx.err(f["official_since"], "official_since given for a target marked official: false"))
            table[tid] = row
    # overrides must land on a target of the table
    for tid, row in m.amd.items():
        ov = row.get("override")
        if ov and override_to_gfx(ov) not in m.amd:
            m.errors.append(KBError(path, row["line"], 1, f"override {ov} of {tid} maps to {override_to_gfx(ov)}, which has no row"))
    node = top.get("wheels")
    folders: set[str] = set()
    if node is not None:
        for item in _seq(ctx, node, "wheels", m.errors):
            f = _keys(ctx, item, FOLDER_KEYS, "a wheel folder", m.errors)
            if not {"folder", "stack", "version", "torch"} <= set(f):
                continue
            folder, stack, ver = _scalar(f["folder"]), _scalar(f["stack"]), _scalar(f["version"])
            if stack not in ("rocm", "cuda"):
                m.errors.append(ctx.err(f["stack"], "stack must be rocm or cuda"))
                continue
            if not (isinstance(ver, str) and VER_RE.match(ver)):
                m.errors.append(ctx.err(f["version"], "version must be a quoted version like '6.2.4' or '12.8'"))
                continue
            want = "rocm" + ver if stack == "rocm" else "cu" + ver.replace(".", "")
            if folder != want:
                m.errors.append(ctx.err(f["folder"], f"folder {folder!r} does not match {stack} {ver} (expected {want!r})"))
                continue
            if folder in folders:
                m.errors.append(ctx.err(f["folder"], f"duplicate folder {folder!r}"))
                continue
            folders.add(folder)
            index = None
            if "index" in f:
                index = _scalar(f["index"])
                if not (isinstance(index, str) and re.match(r"^https://\S+$", index)):
                    m.errors.append(ctx.err(f["index"], "index must be an https URL (a PEP 503 simple index)"))
                    index = None
                elif index.startswith(INDEX_BASE):
                    m.errors.append(ctx.err(f["index"], "index names download.pytorch.org, which is the default: leave "
                                                        "it out"))
                    index = None
            extras = False
            if "device_extras" in f:
                extras = _scalar(f["device_extras"])
                if not isinstance(extras, bool):
                    m.errors.append(ctx.err(f["device_extras"], "device_extras must be true or false"))
                    extras = False
                elif extras and (stack != "rocm" or not index):
                    m.errors.append(ctx.err(f["device_extras"], "device_extras is for a ROCm folder with its own index "
                                                                "(AMD's multi-arch index)"))
                    extras = False
            for w in _seq(ctx, f["torch"], "torch", m.errors):
                wf = _keys(ctx, w, WHEEL_KEYS, "a wheel", m.errors)
                if not {"torch", "torchvision", "torchaudio", "source"} <= set(wf):
                    continue
                vals = {}
                for k in ("torch", "torchvision", "torchaudio"):
                    v = _scalar(wf[k])
                    if not (isinstance(v, str) and WHEEL_VER_RE.match(v)):
                        m.errors.append(ctx.err(wf[k], f"{k} must be a version like 2.5.1 (or 0.29.0a0)"))
                    vals[k] = str(v)
                archs = None
                if "archs" in wf:
                    archs = _plain(wf["archs"])
                    if not (isinstance(archs, list) and archs and all(isinstance(a, str) for a in archs)):
                        m.errors.append(ctx.err(wf["archs"], "archs must be a non-empty list of targets"))
                        archs = None
                    else:
                        table = m.amd if stack == "rocm" else m.nvidia
                        for i, a in enumerate(archs):
                            base = re.sub(r"^compute_", "sm_", a)
                            if base not in table:
                                m.errors.append(ctx.err(wf["archs"].value[i], f"arch {a!r} has no row under {'amd' if stack == 'rocm' else 'nvidia'}"))
                missing: list[str] = []
                if "libs_missing" in wf:
                    missing = _plain(wf["libs_missing"])
                    if not (isinstance(missing, list) and missing and archs
                            and all(isinstance(a, str) and a in archs for a in missing)):
                        m.errors.append(ctx.err(wf["libs_missing"], "libs_missing must be a non-empty list of targets "
                                                                    "from the wheel's archs"))
                        missing = []
                pymin = None
                if "python" in wf:
                    pymin = _scalar(wf["python"])
                    if not (isinstance(pymin, str) and re.match(r"^3\.[0-9]+$", pymin)):
                        m.errors.append(ctx.err(wf["python"], "python must be the oldest supported Python as a quoted "
                                                              "version like '3.11'"))
                        pymin = None
                src = _plain(wf["source"])
                if not (isinstance(src, list) and src):
                    m.errors.append(ctx.err(wf["source"], "source must be a non-empty list of source names"))
                    src = []
                for i, s in enumerate(src):
                    if s not in m.sources:
                        m.errors.append(ctx.err(wf["source"].value[i], f"unknown source {s!r} (define it under sources:)"))
                m.wheels.append(Wheel(folder, stack, ver, vals["torch"], vals["torchvision"], vals["torchaudio"],
                                      archs, [str(s) for s in src], [str(a) for a in missing], index, bool(extras),
                                      pymin))
    node = top.get("cuda_min_driver")
    if node is not None:
        for item in _seq(ctx, node, "cuda_min_driver", m.errors):
            f = _keys(ctx, item, DRIVER_KEYS, "a driver row", m.errors)
            if {"cuda", "driver"} <= set(f):
                m.cuda_min_driver[str(_scalar(f["cuda"]))] = str(_scalar(f["driver"]))
    return m


def _scalar(node: yaml.Node) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        return None
    try:
        return yaml.constructor.SafeConstructor().construct_object(node)
    except (yaml.YAMLError, ValueError, OverflowError):  # e.g. a date with month 13: keep the raw text for the error
        return node.value


def _plain(node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return [_plain(n) for n in node.value]
    return {str(_scalar(k)): _plain(v) for k, v in node.value} if isinstance(node, yaml.MappingNode) else None


def _seq(ctx: _Ctx, node: yaml.Node, what: str, errors: list[KBError]) -> list[yaml.Node]:
    if not isinstance(node, yaml.SequenceNode):
        errors.append(ctx.err(node, f"{what} must be a list"))
        return []
    return list(node.value)


def _keys(ctx: _Ctx, node: yaml.Node, allowed: dict[str, bool], what: str, errors: list[KBError]) -> dict[str, yaml.Node]:
    out: dict[str, yaml.Node] = {}
    if not isinstance(node, yaml.MappingNode):
        errors.append(ctx.err(node, f"{what} must be a mapping"))
        return out
    for k, v in node.value:
        key = _scalar(k)
        if key not in allowed:
            errors.append(ctx.err(k, f"unknown key {key!r} in {what}; allowed: {', '.join(allowed)}"))
            continue
        if key in out:
            errors.append(ctx.err(k, f"duplicate key {key!r} in {what}"))
            continue
        out[key] = v
    for k, required in allowed.items():
        if required and k not in out:
            errors.append(ctx.err(node, f"{what} lacks required key {k!r}"))
    return out


def load_matrix_file(path: str | os.PathLike) -> Matrix:
    p = Path(path)
    rel = _rel(p)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Matrix(path=rel, errors=[KBError(rel, 1, 1, f"cannot read the support matrix: {exc}")])
    return parse_matrix(text, rel)


_cache_lock = threading.Lock()
_cache: dict[str, tuple[tuple, Matrix]] = {}


def get_matrix(kb_dir: str | os.PathLike | None = None) -> Matrix:
    """The matrix of the KB in use (``GPU_DOCTOR_KB`` or ``kb/``), reloaded when the file changes; an empty one when
    that KB has no matrix."""
    p = matrix_path(kb_dir)
    try:
        st = p.stat()
        stamp: tuple = (st.st_mtime_ns, st.st_size)
    except OSError:
        return Matrix(path=str(p))
    with _cache_lock:
        hit = _cache.get(str(p))
        if hit and hit[0] == stamp:
            return hit[1]
        m = load_matrix_file(p)
        _cache[str(p)] = (stamp, m)
        return m


def lint(kb_dir: str | os.PathLike | None = None) -> list[KBError]:
    p = matrix_path(kb_dir)
    if not p.exists():
        return []
    return load_matrix_file(p).errors


# --------------------------------------------------------------------------------------------------
# targets and derived facts


def _base(a: str) -> str:
    a = a.strip()
    if "--" in a:
        a = a.split("--", 1)[1]
    return a.split(":", 1)[0]


def amd_targets(facts: dict[str, Any], matrix: Matrix) -> tuple[list[str], str]:
    """The native gfx targets of the visible AMD GPUs and where they were read from."""
    if facts.get("gpu.native_gfx_targets"):
        return [_base(t) for t in facts["gpu.native_gfx_targets"]], "gpu.native_gfx_targets"
    over = facts.get("hsa_override.value") or facts.get("env.HSA_OVERRIDE_GFX_VERSION")
    for key in ("gpu.gfx_targets", "torch.gcn_arch_names"):
        vals = [_base(t) for t in facts.get(key) or [] if _base(t).startswith("gfx")]
        if vals and not over:  # with an override in force these show the overridden name, not the GPU's own
            return vals, key
    names = facts.get("gpu.names") or facts.get("torch.device_names") or []
    found = [matrix.target_from_name(n) for n in names]
    found = [t for t in found if t and t.startswith("gfx")]
    if found and len(found) == len(names):
        return found, "gpu.names"
    return [], ""


def nvidia_targets(facts: dict[str, Any], matrix: Matrix) -> list[str]:
    caps = [c for c in facts.get("nvidia.compute_caps") or [] if c.startswith("sm_")]
    if caps:
        return caps
    names = facts.get("gpu.names") or facts.get("torch.device_names") or []
    found = [matrix.target_from_name(n) for n in names]
    found = [t for t in found if t and t.startswith("sm_")]
    return found if found and len(found) == len(names) else []


def torch_archs(facts: dict[str, Any], matrix: Matrix) -> tuple[list[str] | None, str]:
    """torch's arch list: as torch reported it, else the measured list of the official wheel it came from."""
    al = facts.get("torch.arch_list")
    if isinstance(al, list) and al:
        return [_base(a) for a in al], "torch"
    ver = facts.get("torch.version")
    if ver:
        w = matrix.wheel_for(ver)
        # a device-extras build (AMD's multi-arch index) carries the code of whichever `[device-gfx...]` extras were
        # installed, not the row's list (which only says which extras the source shows): no arch list from it
        if w is not None and w.archs is not None and not w.device_extras:
            return list(w.archs), "matrix"
    return None, ""


def _rocm_archs_bounds(facts: dict[str, Any], amd: list[str], m: Matrix) -> tuple[list[str] | None, str]:
    """For an official ROCm wheel whose own arch list was never measured (2.3.0+rocm6.0, 2.4.1+rocm6.1): what every
    measured official ROCm wheel carries, when each of the machine's targets is either carried by all of them or by
    none (gfx1031, gfx1032, gfx90c: never in an official wheel; gfx1030, gfx1100: in every one).  A target that some
    measured wheels carry and others lack says nothing about this one: unknown, as before."""
    base, _, folder = str(facts.get("torch.version") or "").partition("+")
    rocm = [w for w in m.wheels if w.stack == "rocm" and not w.device_extras and not w.index]
    if not re.fullmatch(r"\d+\.\d+\.\d+", base) or folder not in {w.folder for w in rocm}:
        return None, ""   # a nightly or pre-release is another build (new targets land there first)
    measured = [{_base(a) for a in w.archs} for w in rocm if w.archs]
    if not measured:
        return None, ""
    always = set.intersection(*measured)
    never = [t for t in amd if not any(t in a for a in measured)]
    if not never or not all(t in always or t in never for t in amd):
        return None, ""
    return sorted(always), "matrix-all"


def derive_support(facts: dict[str, Any], matrix: Matrix | None = None,
                   visible: Callable[[dict[str, Any], list[str]], list[str]] | None = None) -> dict[str, Any]:
    """New facts from the support matrix (only ones the given facts do not already hold); *visible* gives the AMD
    targets the device masks leave visible (derive.amd_visible_targets)."""
    m = matrix or get_matrix()
    new: dict[str, Any] = {}
    if not m.amd and not m.nvidia:
        return new
    ver = str(facts.get("torch.version") or "")
    if "+" in ver:
        new["torch.wheel_folder"] = ver.split("+", 1)[1]
    build = facts.get("torch.build")
    amd, amd_src = amd_targets(facts, m)
    nv = nvidia_targets(facts, m)
    targets = amd or nv
    if targets:
        new["support.targets"] = list(dict.fromkeys(targets))
        rows = [m.row(t) for t in targets]
        if all(r is not None for r in rows):
            new["support.native_bf16"] = all(bool(r.get("native_bf16")) for r in rows)  # type: ignore[union-attr]
    if amd:
        rows = [m.amd.get(t) for t in amd]
        if all(r is not None for r in rows):
            rocm = facts.get("rocm.version") or facts.get("torch.hip_version")
            unofficial = []
            for t, r in zip(amd, rows):
                ok = bool(r.get("official"))  # type: ignore[union-attr]
                if ok and rocm and r.get("official_since"):  # type: ignore[union-attr]
                    ok = (parse_version(rocm) or (0,))[:3] >= (parse_version(r["official_since"]) or (0,))  # type: ignore[index]
                if not ok:
                    unofficial.append(t)
            new["support.official"] = not unofficial
            new["support.unofficial_targets"] = sorted(set(unofficial))
        native_wheel = [any(w.archs and t in w.archs for w in m.wheels if w.stack == "rocm") for t in amd]
        new["support.native_wheel_available"] = all(native_wheel)
    archs, src = torch_archs(facts, m)
    if archs is None and build == "rocm" and amd:
        archs, src = _rocm_archs_bounds(facts, amd, m)
    if src:
        new["support.torch_archs_source"] = src
    override = facts.get("hsa_override.value")
    if override is None and facts.get("env.HSA_OVERRIDE_GFX_VERSION"):
        override = str(facts["env.HSA_OVERRIDE_GFX_VERSION"]).strip().strip("'\"")
    if build == "rocm" and amd and archs is not None:
        listed = set(archs)
        eff_gfx = override_to_gfx(override) if override else None
        # a GPU the masks hide is never loaded by the runtime, so only the visible ones need code in the wheel
        # (derive's rule, passed in; targets read before the masks only: torch's gcn_arch_names come after them)
        masked = visible is not None and amd_src in ("gpu.native_gfx_targets", "gpu.gfx_targets")
        visible_amd = visible(facts, amd) if masked else amd  # type: ignore[misc]
        effective = [eff_gfx or t for t in visible_amd]
        missing = sorted({t for t in effective if t not in listed})
        native_missing = sorted({t for t in amd if t not in listed})
        if "torch.arch_list" not in facts or not facts.get("torch.arch_list"):
            new["torch.arch_supported"] = not missing
            new["torch.unsupported_archs"] = missing
        # the override that would let this torch run every GPU
        recs = set()
        possible = True
        for t in native_missing:
            r = m.amd.get(t)
            ov = r.get("override") if r else None
            if ov and override_to_gfx(ov) in listed:
                recs.add(ov)
            else:
                possible = False
        rec = next(iter(recs)) if (possible and len(recs) == 1) else None
        if rec:
            new["support.override_recommended"] = rec
        if not native_missing:
            status = "unnecessary" if override else "not-needed"
        elif rec is None:
            status = "impossible"
        elif not override:
            status = "missing"
        elif override_to_gfx(override) == override_to_gfx(rec):
            status = "ok"
        else:
            status = "wrong"
        new["support.override_status"] = status
    elif build == "cuda" and nv and archs is not None and not facts.get("torch.arch_list"):
        missing = sorted({c for c in nv if not arch_runs(c, archs)})
        new["torch.arch_supported"] = not missing
        new["torch.unsupported_archs"] = missing
    del amd_src
    return {k: v for k, v in new.items() if k not in facts}


# --------------------------------------------------------------------------------------------------
# the install command


@dataclass
class Install:
    wheel: Wheel
    override: str | None        # HSA_OVERRIDE_GFX_VERSION still needed with this wheel
    targets: list[str]
    check_target: str           # what get_arch_list() must contain afterwards
    # the installed torch release when it is newer than this wheel's (e.g. 2.15.0 while the matrix's newest established
    # arch list is 2.14's): the command is then a downgrade, and the report says so instead of presenting it as current
    newer_installed: str | None = None

    def device_targets(self) -> list[str]:
        """The targets the installed torch must run: every GPU's, or with an override in force the sibling whose
        code the runtime loads."""
        return list(dict.fromkeys([self.check_target] if self.override else (self.targets or [self.check_target])))

    def checks(self) -> list[tuple[str, str]]:
        """(arch, target) pairs: what ``get_arch_list()`` of the installed wheel must name for each GPU target.  An
        NVIDIA GPU is often run by code of a lower minor capability (cu126's list has sm_60, not the GTX 10xx's
        sm_61; cu130's sm_86, not the RTX 40xx's sm_89), so the check names the entry the wheel really carries."""
        out = []
        for t in self.device_targets():
            a = carried_arch(t, self.wheel.archs or []) or t
            out.append((a, t))
        return out

    def check_phrase(self, lang: str = "en") -> str:
        """`sm_60` (its code runs on your sm_61), for the install sentence."""
        parts = []
        for a, t in self.checks():
            if a == t:
                parts.append(f"`{a}`")
            elif lang == "zh":
                parts.append(f"`{a}`（该代码可在你的 {t} 上运行）")
            else:
                parts.append(f"`{a}` (its code runs on your {t})")
        return ("、" if lang == "zh" else " and ").join(parts)

    def command(self) -> str:
        w = self.wheel
        if w.device_extras:
            # AMD's multi-arch index: one `device-gfxNNNN` extra per GPU target on torch and torchvision, versions
            # pinned with the folder's local tag as AMD's install page writes them
            # (with an override in force the runtime loads the sibling's code, so that is the device package to get)
            ex = ",".join(f"device-{t}" for t in self.device_targets())
            loc = "+" + w.folder
            return (f'{PIP} uninstall -y torch torchvision torchaudio && {PIP} install "torch[{ex}]=={w.torch}{loc}" '
                    f'"torchvision[{ex}]=={w.torchvision}{loc}" "torchaudio=={w.torchaudio}{loc}" '
                    f"--index-url {w.index_url}")
        return (f"{PIP} uninstall -y torch torchvision torchaudio && {PIP} install torch=={w.torch} "
                f"torchvision=={w.torchvision} torchaudio=={w.torchaudio} --index-url {w.index_url}")


def _driver_ok(w: Wheel, facts: dict[str, Any], m: Matrix) -> bool:
    if w.stack != "cuda":
        return True
    top = facts.get("nvidia.cuda_version")
    if top and (parse_version(top) or (0,))[:2] < (parse_version(w.stack_version) or (0,))[:2]:
        return False
    drv = facts.get("nvidia.driver_version")
    need = m.cuda_min_driver.get(w.stack_version)
    if drv and need and (parse_version(drv) or (0,)) < (parse_version(need) or (0,)):
        return False
    return True


def _tv(v: str) -> tuple[int, ...]:
    return parse_version(v) or (0,)


# torch releases before 2.6 execute code from a crafted checkpoint even with torch.load(weights_only=True)
# (CVE-2025-32434, fixed in 2.6.0): never computed as the install to make, whatever the GPU or driver allows
MIN_SAFE_TORCH = (2, 6)


def recommend_install(facts: dict[str, Any], matrix: Matrix | None = None) -> Install | None:
    """:func:`_recommend_install`, marked ``newer_installed`` when the installed torch is a newer release than the
    wheel computed (a downgrade: the matrix holds no established arch list of that release yet)."""
    inst = _recommend_install(facts, matrix)
    if inst is not None:
        base = str(facts.get("torch.version") or "").partition("+")[0]
        pv = parse_version(base) if base else None
        if pv and pv[:3] > _tv(inst.wheel.torch)[:3]:
            inst.newer_installed = ".".join(str(x) for x in pv[:3])
    return inst


def _recommend_install(facts: dict[str, Any], matrix: Matrix | None = None) -> Install | None:
    """The newest official wheel whose measured arch list carries every visible GPU (natively when possible, else
    through the GPU's override), within what the NVIDIA driver supports, and never a torch older than
    MIN_SAFE_TORCH.  None when that cannot be established (the fix text then says what to look for)."""
    m = matrix or get_matrix()
    amd, _ = amd_targets(facts, m)
    nv = [] if amd else nvidia_targets(facts, m)
    py = parse_version(str(facts.get("python.version") or ""))
    safe = [w for w in m.wheels if w.archs and _tv(w.torch)[:2] >= MIN_SAFE_TORCH
            and not (py and w.python_min and py[:2] < _tv(w.python_min)[:2])]
    if amd:
        cands = [w for w in safe if w.stack == "rocm"]
        native = [w for w in cands if all(w.runs(t) for t in amd)]
        if native:
            w = max(native, key=lambda w: (_tv(w.torch), _tv(w.stack_version)))
            return Install(w, None, amd, amd[0])
        ovs = {(m.amd.get(t) or {}).get("override") for t in amd if t}
        if len(ovs) == 1 and None not in ovs:
            ov = ovs.pop()
            g = override_to_gfx(ov)  # type: ignore[arg-type]
            via = [w for w in cands if g and w.runs(g)]
            if via:
                w = max(via, key=lambda w: (_tv(w.torch), _tv(w.stack_version)))
                return Install(w, ov, amd, g or "")
        return None
    if nv:
        cands = [w for w in safe if w.stack == "cuda" and all(w.runs(c) for c in nv)
                 and _driver_ok(w, facts, m)]
        if cands:
            w = max(cands, key=lambda w: (_tv(w.torch), _tv(w.stack_version)))
            return Install(w, None, nv, nv[0])
    return None


# --------------------------------------------------------------------------------------------------
# fix-text placeholders


# {override} where no single value runs every GPU of the machine (support.override_status "impossible")
# {override} where the one GPU's target has no override known to work (the matrix's row has none)
OVERRIDE_NONE = {
    "en": "<none known to work for {target}: install a build that lists {target} instead>",
    "zh": "<没有已知可用于 {target} 的值：请改装列出 {target} 的版本>",
}
OVERRIDE_IMPOSSIBLE = {
    "en": "<none: no one value runs {targets} together; hide the GPU the build lacks with HIP_VISIBLE_DEVICES instead>",
    "zh": "<无：没有一个值能同时用于 {targets}；请改用 HIP_VISIBLE_DEVICES 隐藏该版本不支持的那块 GPU>",
}
# {torch_install} for an AMD GPU on Windows: download.pytorch.org's ROCm folders hold Linux wheels only (pip finds no
# win_amd64 file, e.g. OneTrainer#1381), so no command computed from the matrix applies; AMD's Windows wheels (its
# "PyTorch via PIP installation" page for Windows, Python 3.12) and TheRock's nightlies are where they come from
WINDOWS_AMD_INSTALL = {
    "en": ("a ROCm build of torch made for Windows - the ROCm folders of download.pytorch.org hold Linux wheels only, "
           "so pip finds no `win_amd64` file there. First `python -m pip uninstall -y torch torchvision torchaudio`, "
           "then AMD's Windows wheels (Python 3.12; Radeon RX 7000/9000 and Ryzen AI): the pip commands on "
           "https://rocm.docs.amd.com/projects/radeon-ryzen/en/latest/docs/install/installrad/windows/install-pytorch.html, "
           "or for other Radeon families TheRock's nightly Windows wheels (https://github.com/ROCm/TheRock/blob/main/RELEASES.md), "
           "or Linux under WSL2 with AMD's ROCm for WSL; afterwards `" + VERIFY_CMD + "` must list {gfx}"),
    "zh": ("为 Windows 构建的 ROCm 版 torch——download.pytorch.org 的 ROCm 目录只有 Linux 的 wheel，pip 在那里找不到 "
           "`win_amd64` 文件。先 `python -m pip uninstall -y torch torchvision torchaudio`，再用 AMD 的 Windows wheel"
           "（Python 3.12；Radeon RX 7000/9000 与 Ryzen AI）：见 "
           "https://rocm.docs.amd.com/projects/radeon-ryzen/en/latest/docs/install/installrad/windows/install-pytorch.html "
           "中的 pip 命令；其他 Radeon 系列可用 TheRock 的 Windows 每日构建（https://github.com/ROCm/TheRock/blob/main/RELEASES.md），"
           "或在 WSL2 中使用 AMD 的 ROCm for WSL；之后 `" + VERIFY_CMD + "` 必须列出 {gfx}"),
}


def windows_amd(facts: dict[str, Any], matrix: Matrix | None = None) -> bool:
    """The facts say Windows (os.name) and an AMD GPU: no wheel of the matrix installs there."""
    if not re.match(r"(?i)\s*(microsoft\s+)?windows\b", str(facts.get("os.name") or "")):
        return False
    amd, _ = amd_targets(facts, matrix or get_matrix())
    return bool(amd) or "amd" in (facts.get("gpu.vendors") or [])


GENERIC = {
    "en": {
        "torch_install": ("the torch, torchvision and torchaudio trio of one release from the PyTorch wheel folder "
                          "that carries your GPU's target (pick it on https://pytorch.org/get-started/locally/): first "
                          "`python -m pip uninstall -y torch torchvision torchaudio`, then `python -m pip install "
                          "torch==X torchvision==Y torchaudio==Z --index-url https://download.pytorch.org/whl/<folder>` "
                          "(`--index-url`, not `--extra-index-url`, which gives no priority); afterwards "
                          "`" + VERIFY_CMD + "` must list your GPU's target (NVIDIA: or an `sm_` of the same major "
                          "version below it, e.g. `sm_60` for an sm_61 GPU, whose code runs there)"),
        "torch_index_url": "the PyTorch index for your ROCm or CUDA version (https://download.pytorch.org/whl/<folder>, see https://pytorch.org/get-started/locally/)",
        "gfx": "your GPU's gfx target (`rocminfo | grep -m1 -o 'gfx[0-9a-f]*'`)",
        "override": "the value of your GPU's family (RDNA2: 10.3.0, RDNA3: 11.0.0; none for a target the wheel carries)",
        "rocm_version": ("your ROCm version (`cat /opt/rocm/.info/version`; ROCm 10 packages: "
                         "`cat /opt/rocm/core/.info/version`)"),
        "cuda_version": "the CUDA version your driver supports (top right of `nvidia-smi`)",
    },
    "zh": {
        "torch_install": ("同一版本的 torch、torchvision、torchaudio 三件套，来自包含你 GPU 目标架构的 PyTorch wheel 目录"
                          "（在 https://pytorch.org/get-started/locally/ 选择）：先 `python -m pip uninstall -y torch torchvision torchaudio`，"
                          "再 `python -m pip install torch==X torchvision==Y torchaudio==Z --index-url https://download.pytorch.org/whl/<目录>`"
                          "（用 `--index-url`，`--extra-index-url` 不提供优先级）；之后 `" + VERIFY_CMD + "` 必须列出你 GPU 的目标架构"
                          "（NVIDIA：或同一主版本、比它低的 `sm_`，例如 sm_61 的 GPU 对应 `sm_60`，该代码可在其上运行）"),
        "torch_index_url": "与你的 ROCm 或 CUDA 版本对应的 PyTorch 索引（https://download.pytorch.org/whl/<目录>，见 https://pytorch.org/get-started/locally/）",
        "gfx": "你 GPU 的 gfx 目标架构（`rocminfo | grep -m1 -o 'gfx[0-9a-f]*'`）",
        "override": "与你 GPU 同一家族的值（RDNA2：10.3.0，RDNA3：11.0.0；wheel 已包含的目标无需设置）",
        "rocm_version": "你的 ROCm 版本（`cat /opt/rocm/.info/version`；ROCm 10 的软件包：`cat /opt/rocm/core/.info/version`）",
        "cuda_version": "你的驱动支持的 CUDA 版本（`nvidia-smi` 右上角）",
    },
}


def placeholders_in(text: str) -> list[str]:
    return PLACEHOLDER_RE.findall(text or "")


def unknown_placeholders(text: str) -> list[str]:
    return sorted({p for p in placeholders_in(text) if p not in PLACEHOLDERS})


def placeholder_values(facts: dict[str, Any], matrix: Matrix | None = None) -> dict[str, str | None]:
    """Each placeholder's value for these facts; None where it cannot be established."""
    m = matrix or get_matrix()
    vals: dict[str, str | None] = {p: None for p in PLACEHOLDERS}
    amd, _ = amd_targets(facts, m)
    if amd and len(set(amd)) == 1:
        vals["gfx"] = amd[0]
    elif amd:
        vals["gfx"] = ", ".join(dict.fromkeys(amd))
    rec = facts.get("support.override_recommended")
    if rec is None:
        d = derive_support(facts, m)
        rec = d.get("support.override_recommended")
    inst = recommend_install(facts, m)
    if inst is not None and windows_amd(facts, m):
        inst = None
        vals["_windows_amd"] = vals.get("gfx") or "your GPU's target"
    status = facts.get("support.override_status") or derive_support(facts, m).get("support.override_status")
    if rec:
        vals["override"] = rec
    elif inst is not None and inst.override:
        vals["override"] = inst.override
    elif status == "impossible" and len(set(amd)) == 1:
        # the one GPU's target has no override known to work (the matrix's row carries none, e.g. gfx1103): say so,
        # never a family's generic value
        vals["_override_none"] = amd[0]
    elif status == "impossible" and amd:
        # no one value runs every GPU here (e.g. gfx1102 next to gfx1103): say so, never a family's generic value
        vals["_override_impossible"] = " + ".join(dict.fromkeys(amd))
    elif status is None and len(set(amd)) == 1 and amd[0] in m.amd:
        # the torch's GPU list is not known (no torch facts, or a wheel folder the matrix has not measured): the GPU's
        # own row still says which sibling runs it, or that none is known to work
        ov = m.amd[amd[0]].get("override")
        if ov:
            vals["override"] = ov
        else:
            vals["_override_none"] = amd[0]
    rv = facts.get("rocm.version") or facts.get("torch.hip_version")
    if rv:
        pv = parse_version(rv)
        vals["rocm_version"] = ".".join(str(x) for x in pv[:3]) if pv else str(rv)
    if facts.get("nvidia.cuda_version"):
        vals["cuda_version"] = str(facts["nvidia.cuda_version"])
    if inst is not None:
        # AMD's device-extras index installs no GPU code for a plain `torch torchvision`, the form the entries that
        # use {torch_index_url} write (e.g. a web UI's TORCH_COMMAND): those keep the generic wording
        vals["torch_index_url"] = None if inst.wheel.device_extras else inst.wheel.index_url
        cmd = f"`{inst.command()}`"
        check = f"`{VERIFY_CMD}` must then list {inst.check_phrase()}"
        if inst.override:
            cmd = f"{cmd} (this build runs the GPU only with `HSA_OVERRIDE_GFX_VERSION={inst.override}` set)"
        if inst.newer_installed:
            cmd = (f"{cmd} (older than your torch {inst.newer_installed}: it is the newest release whose GPU list this "
                   f"tool has established; if `{VERIFY_CMD}` in your torch {inst.newer_installed} already lists "
                   f"{inst.check_phrase()}, keep your torch instead)")
        vals["torch_install"] = f"{cmd}; {check}"
    return vals


_ZH_INSTALL = ("`{cmd}`{ov}{newer}；之后 `" + VERIFY_CMD + "` 必须列出 {tgt}")
_ZH_NEWER = ("（比你已安装的 torch {v} 旧：这是本工具已确认 GPU 列表的最新版本；如果你的 torch {v} 的 `" + VERIFY_CMD
             + "` 已列出 {tgt}，请保留现有 torch）")


def _in_code(text: str, pos: int) -> bool:
    """Whether *pos* of *text* lies in a code span or block: an odd number of backticks before it on its line, or a
    line inside a ``` fence."""
    start = text.rfind("\n", 0, pos) + 1
    line_before = text[start:pos]
    fences = sum(1 for ln in text[:start].split("\n") if ln.lstrip().startswith("```"))
    return fences % 2 == 1 or line_before.replace("```", "").count("`") % 2 == 1


def fill(text: str, values: dict[str, str | None], lang: str = "en") -> str:
    """*text* with every known placeholder replaced: by its value, or by generic wording when unknown."""
    if not text or "{" not in text:
        return text
    generic = GENERIC.get(lang) or GENERIC["en"]

    def rep(mo: re.Match) -> str:
        name = mo.group(1)
        if name not in PLACEHOLDERS:
            return mo.group(0)
        v = values.get(name)
        if _in_code(text, mo.start()):
            # inside a command the user copies: a short marker when unknown (the generic wording has code spans of
            # its own), several targets the way PYTORCH_ROCM_ARCH / GPU_TARGETS take them
            if name == "gfx" and v and "," in v:
                joined = ";".join(t.strip() for t in v.split(","))
                return f'"{joined}"' if text[mo.start() - 1:mo.start()] == "=" else joined
            if v is None and "`" in generic[name] and not (name == "override" and (values.get("_override_none") or
                                                                                   values.get("_override_impossible"))):
                return f"<{name}>"
        if name == "override" and v is None and values.get("_override_none"):
            return OVERRIDE_NONE.get(lang, OVERRIDE_NONE["en"]).format(target=values["_override_none"])
        if name == "override" and v is None and values.get("_override_impossible"):
            return OVERRIDE_IMPOSSIBLE.get(lang, OVERRIDE_IMPOSSIBLE["en"]).format(targets=values["_override_impossible"])
        if name == "torch_install" and v is None and values.get("_windows_amd"):
            return WINDOWS_AMD_INSTALL.get(lang, WINDOWS_AMD_INSTALL["en"]).replace("{gfx}", str(values["_windows_amd"]))
        if v is None:
            return generic[name]
        if lang == "zh" and name == "torch_install" and values.get("_install_cmd"):
            ov = values.get("_install_override")
            nv = values.get("_install_newer")
            # the zh check phrase (`sm_60`（该代码可在你的 sm_61 上运行）); a stored report without it: the bare target
            tgt = values.get("_install_check_zh") or f"`{values.get('_install_check') or ''}`"
            return _ZH_INSTALL.format(cmd=values["_install_cmd"],
                                      ov=f"（此版本需设置 `HSA_OVERRIDE_GFX_VERSION={ov}` 才能使用该 GPU）" if ov else "",
                                      newer=_ZH_NEWER.format(v=nv, tgt=tgt) if nv else "",
                                      tgt=tgt)
        return v

    return PLACEHOLDER_RE.sub(rep, text)


def report_values(facts: dict[str, Any], matrix: Matrix | None = None) -> dict[str, str | None]:
    """placeholder_values plus the parts other languages rebuild the install sentence from."""
    m = matrix or get_matrix()
    vals = placeholder_values(facts, m)
    inst = None if vals.get("_windows_amd") else recommend_install(facts, m)
    if inst is not None:
        vals["_install_cmd"] = inst.command()
        vals["_install_override"] = inst.override
        vals["_install_check"] = inst.check_target
        vals["_install_check_zh"] = inst.check_phrase("zh")
        vals["_install_newer"] = inst.newer_installed
    return vals


TEXT_FIELDS = ("title", "symptoms", "cause", "fix")
DIAG_KEYS = ("diagnoses", "not_ruled_out", "possible")


def fill_diagnoses(result: dict[str, Any], kb_dir: str | None = None, lang: str = "en") -> dict[str, Any]:
    """Fill the placeholders of every diagnosis in *result* (in place) from ``result['facts']``.  The raw text is
    kept as ``<field>_template`` and the values as ``placeholders``, so another language can be filled later."""
    lists = [result.get(k) for k in DIAG_KEYS]
    if not any(lists):
        return result
    try:
        m = get_matrix(kb_dir)
        vals = report_values(dict(result.get("facts") or {}), m)
    except Exception:  # a matrix problem costs the filled values, never the report
        vals = {p: None for p in PLACEHOLDERS}
    for lst in lists:
        for d in lst or []:
            if not isinstance(d, dict):
                continue
            used = False
            for f in TEXT_FIELDS:
                src = d.get(f + "_template", d.get(f))
                if isinstance(src, str) and placeholders_in(src):
                    d[f + "_template"] = src
                    d[f] = fill(src, vals, lang)
                    used = True
            if used:
                d["placeholders"] = vals
    return result
