"""The output of the little check scripts that setup guides tell people to run, read for facts like any dump.

Guides (the Chinese ROCm guide our users follow, AMD's and PyTorch's install pages, app READMEs) end with a
"verify" step, and what people paste back is its output:

    PyTorch version: 2.4.1+rocm6.0          print(f"PyTorch version: {torch.__version__}")
    Is ROCm available? False                print(f"Is ROCm available? {torch.cuda.is_available()}")
    Device name: CPU                        print(f"Device name: {... else 'CPU'}")
    GPU count: 0 / torch.version.hip: 6.0.32830-d62f6a171 / CUDA available: True / torch: 2.5.0+cu121 cuda: True

or an interactive session (``>>> torch.cuda.is_available()`` then ``False``), or ``python -c "import torch;
print(torch.cuda.is_available())"`` then ``False`` (after whatever warnings torch printed).  Every label spelling
maps to one catalogue fact; a value that does not have the fact's shape is ignored, never guessed.  What
``torch.cuda.device_count()`` says sets ``gpu.count`` only when it is above zero (a CPU build of torch counts
zero GPUs on a machine that has some).
"""
from __future__ import annotations

import re
from typing import Any

from ..textnorm import clean_log
from .base import ParseResult, guarded_parse

KIND = "check_script"
MAX_LINES = 20_000
LOOKAHEAD = 12   # lines between ``python -c "...print(X)..."`` and its value (warnings torch printed first)

# label spellings -> fact group; matched case-insensitively on the label before ':', '=' or '?'
_LABELS: list[tuple[str, str]] = [
    ("version", r"(?:py)?torch(?:[ _]version|\.__version__|\s+__version__)?|torch\.version|version of (?:py)?torch"),
    ("hip", r"torch\.version\.hip|(?:rocm/)?hip(?:[ _]version)?|rocm/hip version|torch hip version|rocm version \(torch\)"),
    ("cuda", r"torch\.version\.cuda|cuda(?:[ _]version)?(?: \(torch\))?|torch cuda version"),
    ("available", r"(?:is )?(?:cuda|rocm|hip|gpu|cuda/rocm|rocm/cuda|cuda/hip|cuda \(rocm\))(?: is)? available"
                  r"|(?:torch\.)?cuda\.is_available\(\)|is_available\(\)|cuda|gpu available|gpu acceleration"),
    ("count", r"(?:gpu|device|cuda device|hip device|rocm device)s?(?:[ _]count)?|number of (?:gpus|devices)"
              r"|(?:torch\.)?cuda\.device_count\(\)|device_count\(\)|gpus available"),
    ("name", r"(?:gpu|device|cuda device|hip device)(?: ?\d)?(?:[ _]name)?|(?:torch\.)?cuda\.get_device_name\(\d?\)"
             r"|get_device_name\(\d?\)|gpu \d"),
    ("arch", r"(?:torch\.)?cuda\.get_arch_list\(\)|arch(?:itecture)?[ _]list|get_arch_list\(\)"),
    ("gcn", r"gcnarchname|gcn arch(?: name)?"),
]
_LABEL_RX = re.compile(
    r"(?i)(?:^|(?<=[\s,|;]))(?:[✓✔✗✘*•-]\s*)?(" + "|".join(p for _, p in _LABELS) + r")\s*(?::|=|\?)\s*")
_GROUP_RX = [(g, re.compile(p, re.I)) for g, p in _LABELS]
_EXPR_RX = re.compile(
    r"^(?:print\()?\s*(?P<expr>torch\.cuda\.is_available\(\)|torch\.__version__|torch\.version\.hip"
    r"|torch\.version\.cuda|torch\.cuda\.device_count\(\)|torch\.cuda\.get_device_name\(\d?\)"
    r"|(?:pprint\.pp\()?torch\.cuda\.get_arch_list\(\)\)?)\s*\)?\s*$")
_PYC_RX = re.compile(r"python[\d.]*\s+-c\s+.*print\((?P<expr>torch\.cuda\.is_available\(\)|torch\.__version__"
                     r"|torch\.version\.hip|torch\.version\.cuda|torch\.cuda\.device_count\(\))\)")
_EXPR_GROUP = {"torch.cuda.is_available()": "available", "torch.__version__": "version", "torch.version.hip": "hip",
               "torch.version.cuda": "cuda", "torch.cuda.device_count()": "count"}
_TORCH_VERSION = re.compile(r"^v?(\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?(?:\.dev\d+)?(?:\+[\w.]+)?)$")
_HIP_VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?(?:[-.][0-9a-f]+)*$")
_CUDA_VERSION = re.compile(r"^\d{1,2}\.\d{1,2}(?:\.\d+)?$")
_BOOL = {"true": True, "false": False, "yes": True, "no": False}
_NOT_A_NAME = {"cpu", "cuda", "cuda:0", "mps", "none", "n/a", "no gpu", "no cuda", "not available", "hip", "rocm",
               "cpu only", "-", ""}
_GFX = re.compile(r"gfx[0-9a-f]+(?![0-9a-z])")
_SM = re.compile(r"\b(?:sm|compute)_\d+\b")
_ENV_ONLY = ("Collecting environment information", "Is debug build:", "ROCM used to build PyTorch:", "HSA Agents",
             "NVIDIA-SMI", "== hipconfig", "GPU[0]", "Versions of relevant libraries")


def _scalar(v: str) -> str:
    v = v.strip().rstrip(",;|").strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"`":
        v = v[1:-1]
    return v.strip()


def _value(group: str, raw: str) -> tuple[str, Any] | None:
    v = _scalar(raw)
    low = v.lower()
    if group == "version":
        m = _TORCH_VERSION.match(v.split()[0]) if v else None
        return ("torch.version", m.group(1)) if m else None
    if group == "hip":
        return ("torch.hip_version", v) if _HIP_VERSION.match(v) else None
    if group == "cuda":
        return ("torch.cuda_version", v) if _CUDA_VERSION.match(v) else None
    if group == "available":
        word = low.split()[0].rstrip(".!,") if low else ""
        return ("torch.cuda_available", _BOOL[word]) if word in _BOOL else None
    if group == "count":
        return ("torch.device_count", int(v)) if v.isdigit() and len(v) < 4 else None
    if group == "name":
        if low in _NOT_A_NAME or low.startswith(("cuda:", "<", "device(")) or len(v) > 120 or _BOOL.get(low) is not None:
            return None
        if v.isdigit():
            return None
        return ("torch.device_names", re.sub(r"\s*\(UUID:.*$", "", v))
    if group in ("arch", "gcn"):
        found = _GFX.findall(v) or _SM.findall(v)
        fact = "torch.arch_list" if group == "arch" else "torch.gcn_arch_names"
        return (fact, list(dict.fromkeys(found))) if found else None
    return None


def _pairs(line: str) -> list[tuple[str, Any]]:
    """(fact, value) for each 'label: value' in one line ('torch: 2.5.0+cu121 cuda: True' holds two).  A label
    that several groups spell ('GPU:' a count or a name, 'cuda:' a version or a flag) takes the first group
    whose value has the right shape."""
    ms = list(_LABEL_RX.finditer(line))
    out = []
    for i, m in enumerate(ms):
        end = ms[i + 1].start() if i + 1 < len(ms) else len(line)
        label, raw = m.group(1), line[m.end():end]
        for group, rx in _GROUP_RX:
            if rx.fullmatch(label):
                got = _value(group, raw)
                if got:
                    out.append((group, got))
                    break
    return out


def detect(text: str) -> float:
    head = text[:200_000]
    if any(marker in head for marker in _ENV_ONLY):
        return 0.0   # collect_env, rocminfo, nvidia-smi, hipconfig, rocm-smi: their own parsers read them
    groups: set[str] = set()
    for line in clean_log(head).split("\n")[:MAX_LINES]:
        s = line.strip()
        if not s or len(s) > 300:
            continue
        if ":" in s or "=" in s or "?" in s:
            for g, _ in _pairs(s):
                groups.add(g)
        if "torch." in s:
            m = _EXPR_RX.match(s) or _PYC_RX.search(s)
            if m:
                groups.add("expr:" + m.group("expr"))
    real = {g for g in groups if not g.startswith("expr:")}
    exprs = len(groups) - len(real)
    if exprs and not real:
        return 0.5 if exprs >= 2 else 0.4
    if len(groups) >= 3 and {"version", "available"} & real:
        return 0.7
    if len(groups) >= 2 and {"version", "available"} & real:
        return 0.6
    return 0.0


def parse(text: str) -> ParseResult:
    return guarded_parse(KIND, text, _parse_into, "check script")


def _put(facts: dict[str, Any], fact: str, value: Any) -> None:
    if fact == "torch.device_names":
        names = facts.setdefault(fact, [])
        if value not in names:
            names.append(value)
    else:
        facts.setdefault(fact, value)


def _bare(line: str) -> str | None:
    """A line that is only a value (what the REPL or a print of one expression shows)."""
    s = line.strip()
    if not s or len(s) > 400:
        return None
    if s in ("True", "False", "None") or s.isdigit() or s[0] in "'\"[":
        return s
    return None


def _parse_into(text: str, res: ParseResult) -> None:
    lines = clean_log(text).split("\n")[:MAX_LINES]
    facts: dict[str, Any] = {}
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        i += 1
        if not s or len(s) > 2000:
            continue
        m = _EXPR_RX.match(s) or _PYC_RX.search(s)
        if m:
            expr = m.group("expr")
            group = "arch" if "get_arch_list" in expr else "name" if "get_device_name" in expr else _EXPR_GROUP.get(expr)
            if group is None:
                continue
            for j in range(i, min(len(lines), i + LOOKAHEAD)):
                val = _bare(lines[j])
                if val is None:
                    if _EXPR_RX.match(lines[j].strip()):
                        break      # the next expression: this one printed nothing we can read
                    continue
                if val.startswith("[") and "]" not in val:   # a pretty-printed list over several lines
                    k = j
                    while k + 1 < len(lines) and "]" not in lines[k] and k - j < 64:
                        k += 1
                    val = " ".join(x.strip() for x in lines[j:k + 1])
                got = _value(group, val)
                if got:
                    _put(facts, *got)
                    i = j + 1
                break
            continue
        for _, got in _pairs(s):
            _put(facts, *got)
    if not facts:
        res.notes.append("no check-script values recognised (torch version, is_available, device count or name)")
        return
    _derive(facts)
    res.facts.update(facts)


def _derive(facts: dict[str, Any]) -> None:
    ver = facts.get("torch.version")
    if isinstance(ver, str) and "+" in ver:
        local = ver.split("+", 1)[1].lower()
        build = "rocm" if local.startswith("rocm") else "cuda" if local.startswith("cu") else \
            "cpu" if local.startswith("cpu") else None
        if build:
            facts.setdefault("torch.build", build)
    if "torch.build" not in facts:
        if facts.get("torch.hip_version"):
            facts["torch.build"] = "rocm"
        elif facts.get("torch.cuda_version"):
            facts["torch.build"] = "cuda"
    facts.setdefault("torch.installed", True)
    n = facts.get("torch.device_count")
    if isinstance(n, int) and n > 0:
        facts.setdefault("gpu.count", n)
    names = facts.get("torch.device_names")
    if names:
        facts.setdefault("gpu.names", list(names))
        vendors = []
        joined = " ".join(names).lower()
        if re.search(r"\b(amd|radeon|instinct)\b", joined):
            vendors.append("amd")
        if re.search(r"\b(nvidia|geforce|rtx|gtx|quadro|tesla)\b", joined):
            vendors.append("nvidia")
        if vendors:
            facts.setdefault("gpu.vendors", vendors)
    gcn = facts.get("torch.gcn_arch_names")
    if gcn and "gpu.gfx_targets" not in facts:
        facts["gpu.gfx_targets"] = [g for g in gcn if g.startswith("gfx")]
