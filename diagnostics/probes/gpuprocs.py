"""Who else is on the GPU: helpers the nvidia and rocm probes share.

The doctor's own processes are not "other": the probe child itself, the doctor (its parent) and every
descendant of the doctor (the torch probe's smoke test, the HIP probe, a generation child) are recognised
by walking /proc/<pid>/stat parent links up to the doctor's pid.  A pid the tool reports that is not in
this pid namespace (another container, the host) cannot be walked and counts as other.
"""
from __future__ import annotations

import os
from typing import Any, Callable


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so cut at the last ')'
    rest = data[data.rfind(")") + 2:].split()
    try:
        return int(rest[1])
    except (IndexError, ValueError):
        return None


def own_pids_checker(doctor_pid: int | None = None, me: int | None = None) -> Callable[[int], bool]:
    """A predicate: is *pid* the doctor (default: this process's parent), this process (default: os.getpid())
    or one of their descendants?"""
    me = me if me is not None else os.getpid()
    doctor = doctor_pid if doctor_pid is not None else os.getppid()
    own = {me, doctor}

    def is_own(pid: int) -> bool:
        seen = 0
        p: int | None = pid
        while p and p > 1 and seen < 64:
            if p in own:
                return True
            p = _ppid(p)
            seen += 1
        return False

    return is_own


def load_facts(gpus: list[dict[str, Any]], samples: list[list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """gpu.busy_percent (busiest GPU, lowest of its samples) and gpu.mem_used_fraction (most-used GPU) from
    per-GPU dicts ``{"index", "busy", "used", "total"}``; *samples* are further readings of the same GPUs."""
    facts: dict[str, Any] = {}
    rounds = [gpus] + list(samples or [])
    busy: dict[Any, list[float]] = {}
    for r in rounds:
        for g in r:
            if g.get("busy") is not None:
                busy.setdefault(g.get("index"), []).append(float(g["busy"]))
    if busy:
        facts["gpu.busy_percent"] = max(min(v) for v in busy.values())
    fracs = [g["used"] / g["total"] for g in gpus if g.get("used") is not None and g.get("total")]
    if fracs:
        facts["gpu.mem_used_fraction"] = round(max(fracs), 4)
    return facts


def other_fraction(procs: list, gpus: list[dict[str, Any]], own: Callable[[int], bool]) -> float | None:
    """Largest share of one GPU's memory held by other processes (GPU matched by index or UUID; a process
    whose GPU is not said counts only where there is a single GPU); None when no GPU total is known."""
    totals = {}
    for g in gpus:
        if g.get("total"):
            totals[str(g.get("index"))] = g["total"]
            if g.get("uuid"):
                totals[str(g["uuid"])] = g["total"]
    if not totals:
        return None
    per_gpu: dict[str, int] = {}
    for p in procs:
        if own(p.pid) or p.mem_bytes is None:
            continue
        key = p.gpu if p.gpu in totals else (str(gpus[0].get("index")) if len(gpus) == 1 else None)
        if key is None:
            continue
        per_gpu[key] = per_gpu.get(key, 0) + p.mem_bytes
    if not per_gpu:
        return 0.0
    return round(max(v / totals[k] for k, v in per_gpu.items()), 4)


def load_line(g: dict[str, Any]) -> str:
    """One evidence line per GPU: its busy % and memory in use before the test generation."""
    busy = "busy unknown" if g.get("busy") is None else f"{g['busy']:.0f}% busy"
    mem = (f"{g['used'] / 2**30:.1f} of {g['total'] / 2**30:.1f} GiB in use" if g.get("used") is not None and g.get("total")
           else "memory in use unknown")
    return f"GPU {g.get('index')}: {busy}, {mem} (before the test generation)"



def emit_processes(out: Any, facts: dict[str, Any], listed: bool, text: str, log_name: str, source: str,
                   idle: str) -> None:
    """Report the process facts, the tool's output (*listed*: it named any process) and one evidence line for
    each of the first five other processes; *idle* says what a process without a memory figure is doing."""
    out.facts(facts)
    if listed:
        out.log(log_name, text)
    for tok in facts["gpu.processes"][:5]:
        pid, name, mem = tok.split(":", 2)
        out.evidence(source, f"process {pid} ({name}) holds {int(mem) / 2**30:.1f} GiB of GPU memory" if mem
                     else f"process {pid} ({name}) {idle}")
