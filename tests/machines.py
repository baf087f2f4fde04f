"""Recorded machines (tests/fixtures/sysfs/m-*) and the scenarios built on them (tests/scenarios/m-*.yaml).

A machine scenario names its tree in its note (``tree: tests/fixtures/sysfs/m-...``).  The probes that read files
(devices, system, gpus, rocm; env with the scenario's ``env.*`` values as the environment) are run on that tree, and
what they find -- every fact and each probe's status -- must be what the scenario holds: the scenario is the report
the doctor gives on that machine, not a hand-written guess of it.  The probes that need the live runtime (hip, nvidia,
torch) keep the facts and statuses the scenario states for them.

``python -m tests.machines`` rewrites the tree-owned part of every m-*.yaml after a probe changed (review the diff).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TREE_PROBES = ("devices", "system", "gpus", "env", "rocm")
TREE_RE = re.compile(r"tree: (tests/fixtures/sysfs/[\w.-]+)")


def tree_of(note: str) -> Path | None:
    m = TREE_RE.search(note or "")
    return ROOT / m.group(1) if m else None


def environ_of(facts: dict[str, Any]) -> dict[str, str]:
    return {k[4:]: v for k, v in facts.items() if k.startswith("env.") and k != "env.set_names" and isinstance(v, str)}


def probe_tree(tree: Path, environ: dict[str, str], python: str | None = None) -> dict[str, dict[str, Any]]:
    """probe id -> {"status", "summary", "facts"} as each tree probe reports on *tree*; *python* is the diagnosed
    interpreter (the scenario's ``python.executable``: the rocm probe reads its environment's ROCm wheels)."""
    import importlib

    from diagnostics.probes.base import MemoryEmitter

    out = {}
    for pid in TREE_PROBES:
        mod = importlib.import_module(f"diagnostics.probes.{pid}")
        em = MemoryEmitter()
        em.declared = frozenset(mod.FACTS)
        if pid == "env":
            mod.collect(str(tree), em, environ=environ)
        elif pid == "rocm":
            mod.collect(str(tree), em, python=python)
        else:
            mod.collect(str(tree), em)
        status, summary = em.statuses[-1] if em.statuses else ("ok", None)
        out[pid] = {"status": status, "summary": summary, "facts": em.data, "notes": em.notes, "logs": em.logs}
    return out


def owned(name: str, probes: dict[str, dict[str, Any]]) -> str | None:
    """The tree probe that declares *name* first, in the order the scenario runner gives facts out."""
    import importlib

    from diagnostics.probes.base import declared

    for pid in TREE_PROBES:
        if declared(name, tuple(importlib.import_module(f"diagnostics.probes.{pid}").FACTS)):
            return pid
    return None


# facts a tree probe declares that only the live system can establish (opening a node, running a vendor tool)
LIVE_ONLY = re.compile(r"^(kfd\.permission_denied|kfd\.open_error|dri\.permission_denied|rocminfo\..*|rocm_smi\..*|"
                       r"hip\..*|hsa\.runtime_version|ollama\.version|gpu\.(names|isa_names|xnack_enabled|processes|"
                       r"other_process_.*|busy_percent|mem_used_fraction)|driver\.amdgpu_dkms_status|host\.(arch|shm_total_bytes))$")


def refresh(path: Path) -> bool:
    """Rewrite the tree-owned facts and probe statuses of one scenario; True when it changed."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    tree = tree_of(data.get("note", ""))
    if tree is None:
        return False
    facts = data.get("facts") or {}
    found = probe_tree(tree, environ_of(facts), facts.get("python.executable"))
    by_id = {p["id"]: p for p in data.get("probes") or []}
    # a probe the scenario says crashed or timed out keeps its record and reports no facts at all
    lost = {pid for pid in TREE_PROBES if by_id.get(pid, {}).get("status") in ("crashed", "timeout")}
    keep = {k: v for k, v in facts.items() if owned(k, found) is None or LIVE_ONLY.match(k)}
    new_facts: dict[str, Any] = {}
    for pid in TREE_PROBES:
        if pid not in lost:
            new_facts.update({k: v for k, v in found[pid]["facts"].items() if k not in new_facts})
    new_facts.update({k: v for k, v in keep.items() if k not in new_facts})
    probes = []
    for pid in ("devices", "system", "gpus", "rocm", "env", "hip", "nvidia", "torch"):
        if pid in TREE_PROBES and pid not in lost:
            p = {"id": pid, "status": found[pid]["status"]}
            if found[pid]["summary"]:
                p["summary"] = found[pid]["summary"]
            if found[pid]["logs"]:   # what a probe hands the matcher as log text (the kernel log lines, say)
                p["logs"] = [{"name": lg["name"], "text": lg["text"]} for lg in found[pid]["logs"]]
            probes.append(p)
        elif pid in by_id:
            probes.append(by_id[pid])
    new = dict(data)
    new["facts"] = new_facts
    new["probes"] = probes
    order = ["name", "note", "facts", "logs", "dumps", "probes", "expect"]
    new = {k: new[k] for k in order if k in new}
    if new == data:
        return False
    path.write_text(yaml.safe_dump(new, sort_keys=False, allow_unicode=True, width=110), encoding="utf-8")
    return True


if __name__ == "__main__":
    changed = [p.name for p in sorted((ROOT / "tests" / "scenarios").glob("m-*.yaml")) if refresh(p)]
    print("rewritten:", ", ".join(changed) or "none")
    sys.exit(0)
