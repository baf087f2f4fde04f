"""The environment reports of the Hugging Face tools: ``transformers env`` (``transformers-cli env``),
``accelerate env`` and ``diffusers-cli env``.  Their issue templates ask for them, so they are pasted as often as
collect_env, and they import torch in their own process, so what they print about it is what torch said:

    - `transformers` version: 4.40.0                 - 🤗 Diffusers version: 0.28.0.dev0
    - Platform: Linux-6.8.0-31-generic-x86_64-with-glibc2.39      (diffusers: 'Ubuntu 24.04 LTS - Linux-...')
    - Python version: 3.10.12
    - PyTorch version (GPU?): 2.2.2+rocm5.7 (True)    the value in brackets is torch.cuda.is_available()
    - PyTorch version (accelerator?): 2.6.0+cu124 (CUDA)     (newer transformers: the accelerator's name, or NA)
    - PyTorch version (GPU?): not installed (NA)      torch is missing
    - GPU type: NVIDIA GeForce RTX 3090                (accelerate)

Each line is read on its own (anchored, linear); a value that does not have the fact's shape is ignored.
"""
from __future__ import annotations

import re
from typing import Any

from ..textnorm import clean_log
from .base import Opening, ParseResult, build_flavour, platform_kernel

MAX_LINES = 20_000

_LINE = re.compile(r"^[-*•]?\s*(?P<label>[^:\n]{1,60}?)\s*:\s*(?P<value>.{0,300})$")
_TOOL_LINE = re.compile(r"(?i)^[-*•]?\s*(?:🤗\s*)?`?(transformers|accelerate|diffusers|peft|trl|datasets)`?\s+version\s*:")
_TORCH_LABEL = re.compile(r"(?i)^py ?torch version \((gpu|accelerator)\?\)$")
_TORCH_VALUE = re.compile(r"^(?P<ver>\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?(?:\.dev\d+)?(?:\+[\w.]+)?)\s*\((?P<flag>[^)]{1,40})\)\s*$")
_NOT_INSTALLED = re.compile(r"(?i)^not installed\b")
_PLATFORM = re.compile(r"^(?:(?P<distro>[^-][^\n]{0,80}?) - )?(?P<plat>(?:Linux|Windows|macOS|Darwin)-\S+)$")
_PYVER = re.compile(r"^(\d+\.\d+(?:\.\d+)?)")
_PKG = {"transformers": "pkg.transformers", "accelerate": "pkg.accelerate", "bitsandbytes": "pkg.bitsandbytes"}
_NOT_A_GPU = {"", "n/a", "na", "none", "not available", "<fill in>", "cpu"}


def detect(text: str) -> float:
    head = text[:200_000]
    if "version (GPU?)" not in head and "version (accelerator?)" not in head:
        return 0.0
    tools = torch_line = 0
    for line in clean_log(head).split("\n")[:MAX_LINES]:
        s = line.strip()
        if len(s) > 400:
            continue
        if _TOOL_LINE.match(s):
            tools += 1
        m = _LINE.match(s)
        if m and _TORCH_LABEL.match(m.group("label").strip()):
            torch_line += 1
    if tools and torch_line:
        return 0.9
    if torch_line:
        return 0.6
    return 0.0


OPENING = Opening("hf_env", "transformers/accelerate/diffusers env", empty=False)


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


def _parse_into(text: str, res: ParseResult) -> None:
    facts: dict[str, Any] = {}
    for line in clean_log(text).split("\n")[:MAX_LINES]:
        s = line.strip()
        if not s or len(s) > 400:
            continue
        m = _LINE.match(s)
        if not m:
            continue
        label = m.group("label").strip().strip("`").strip()
        value = m.group("value").strip()
        low = label.lower().replace("`", "").replace("🤗", "").strip()
        tm = _TORCH_LABEL.match(label)
        if tm:
            if _NOT_INSTALLED.match(value):
                facts.setdefault("torch.installed", False)
                continue
            v = _TORCH_VALUE.match(value)
            if not v:
                continue
            facts.setdefault("torch.version", v.group("ver"))
            facts["torch.installed"] = True
            build = build_flavour(v.group("ver"))
            if build:
                facts.setdefault("torch.build", build)
            flag = v.group("flag").strip().lower()
            if tm.group(1).lower() == "gpu" and flag in ("true", "false"):
                facts.setdefault("torch.cuda_available", flag == "true")
            elif tm.group(1).lower() == "accelerator" and flag in ("cuda", "rocm", "hip"):
                facts.setdefault("torch.cuda_available", True)   # 'NA' is left unknown: not every accelerator is named
            continue
        if low == "platform":
            p = _PLATFORM.match(value)
            if not p:
                continue
            if p.group("distro"):
                facts.setdefault("os.name", p.group("distro").strip())
            kernel = platform_kernel(p.group("plat"))
            if kernel:
                facts.setdefault("os.kernel", kernel)
                if "microsoft" in kernel.lower():   # WSL2 '...-microsoft-standard-WSL2', WSL1 '4.4.0-19041-Microsoft'
                    facts.setdefault("container.kind", "wsl")
                    facts.setdefault("container.present", True)
            continue
        if low == "python version":
            pv = _PYVER.match(value)
            if pv:
                facts.setdefault("python.version", pv.group(1))
            continue
        if low in ("gpu type", "gpu", "gpu name"):
            name = re.sub(r",\s*\d+\s*[MG]i?B\s*$", "", value).strip()
            if name.lower() not in _NOT_A_GPU and len(name) <= 120 and not name.startswith("<"):
                names = facts.setdefault("gpu.names", [])
                if name not in names:
                    names.append(name)
            continue
        pk = low.removesuffix(" version").strip()
        if low.endswith(" version") and pk in _PKG:
            pv = re.match(r"^(\d+(?:\.[\w]+)*)", value)
            if pv:
                facts.setdefault(_PKG[pk], pv.group(1))
    names = facts.get("gpu.names") or []
    joined = " ".join(names).lower()
    vendors = [v for v, rx in (("amd", r"\b(amd|radeon|instinct)\b"), ("nvidia", r"\b(nvidia|geforce|rtx|gtx|quadro|tesla)\b"))
               if re.search(rx, joined)]
    if vendors:
        facts["gpu.vendors"] = vendors
    if not facts:
        res.notes.append("no transformers/accelerate/diffusers env lines recognised")
        return
    if facts.get("torch.installed") is False:
        res.notes.append("the tool reports torch as not installed in the interpreter it ran in")
    res.facts.update(facts)
