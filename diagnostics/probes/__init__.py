"""The probe registry.  Each probe runs in its own child process (see diagnostics.probing).

``module`` probes run as ``python -m diagnostics.probes.<module> --root ROOT`` with the tool's own
interpreter; ``script`` probes run a self-contained file with the *diagnosed* interpreter (--python).
``provides`` lists the facts a probe is responsible for: when it crashes or times out, the ones it had not
yet reported are unknown, and KB entries that need them are "not ruled out" rather than silently clean.  It is
read from the one declaration of what a probe can emit, the ``FACTS`` tuple of its module (or script); the
emitters note any fact outside it, and tests/test_probe_facts.py checks every probe's source and parsers
against it.
"""
from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ProbeSpec:
    id: str
    title: str
    module: str = ""            # diagnostics.probes.<module>
    script: str = ""            # file under diagnostics/probes/ run by the target interpreter
    timeout: float = 20.0
    gpu_runtime: bool = False   # touches the GPU runtime (may crash or hang in a driver call)
    # seconds each stage the child announces may take before it counts as hung ("" = before the first
    # announcement); a stage not listed has only the probe's whole *timeout* (diagnostics.probing.StageClock)
    stages: tuple[tuple[str, float], ...] = ()

    @property
    def provides(self) -> tuple[str, ...]:
        """Every fact the probe may emit (an entry ending in '*' is a prefix such as 'env.*')."""
        return declared_facts(self.module, self.script)


@lru_cache(maxsize=None)
def declared_facts(module: str, script: str) -> tuple[str, ...]:
    if module:
        return tuple(importlib.import_module(f"{__name__}.{module}").FACTS)
    # a script run by another interpreter is not imported here: its FACTS literal is read from the source
    # (the values of its NEIGHBOURS table, package -> fact, are declared facts too)
    tree = ast.parse((Path(__file__).resolve().parent / script).read_text(encoding="utf-8"))
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id in ("FACTS", "NEIGHBOURS"):
                    found[t.id] = ast.literal_eval(node.value)
    if "FACTS" not in found:
        raise LookupError(f"{script} declares no FACTS")
    return tuple(dict.fromkeys(list(found["FACTS"]) + list((found.get("NEIGHBOURS") or {}).values())))


PROBES: list[ProbeSpec] = [
    ProbeSpec("devices", "amdgpu driver, /dev/kfd and access rights", module="devices", timeout=10),
    ProbeSpec("system", "Operating system, memory, containers, kernel log", module="system", timeout=15),
    ProbeSpec("gpus", "AMD GPUs in sysfs (KFD topology, VRAM)", module="gpus", timeout=10),
    ProbeSpec("rocm", "ROCm userspace (rocminfo, rocm-smi)", module="rocm", timeout=45),
    ProbeSpec("env", "GPU-related environment variables", module="env", timeout=10),
    ProbeSpec("hip", "HIP runtime (libamdhip64, without torch)", module="hip", timeout=30, gpu_runtime=True),
    ProbeSpec("nvidia", "NVIDIA driver (nvidia-smi)", module="nvidia", timeout=40),
    # stage budgets: what each stage normally costs (metadata < 1 s, import 1-5 s, device query < 2 s, smoke test
    # < 5 s on the machines measured, docs/BENCHMARKS.md) with headroom for slow disks, cold caches and many GPUs;
    # a hung first device call is reported about 20 s after it began, not at the probe's 120 s
    ProbeSpec("torch", "PyTorch build, devices and smoke test", script="torch_child.py", timeout=120,
              gpu_runtime=True, stages=(("", 30.0), ("package metadata", 30.0), ("import torch", 60.0),
                                        ("device query", 20.0), ("smoke test", 45.0))),
]


def by_id() -> dict[str, ProbeSpec]:
    return {p.id: p for p in PROBES}
