"""The NVIDIA side: nvidia-smi (driver version, CUDA version it supports, GPUs) through the dump parser, then
who else is on the GPUs: the compute processes with their memory and each GPU's busy % and memory, read
before any test generation (every call with its own timeout: nvidia-smi can hang on a wedged GPU)."""
from __future__ import annotations

import shutil
import time

from .base import Emitter, probe_main, run_tool

# every fact this probe may emit: what the nvidia-smi parser finds, and the tool's own error
FACTS = ("nvidia.driver_version", "nvidia.cuda_version", "nvidia.smi_error", "nvidia.compute_caps", "driver.nvidia_loaded",
         "gpu.count", "gpu.names", "gpu.vendors", "gpu.uuids", "gpu.vram_total_bytes", "gpu.vram_used_bytes",
         "gpu.vram_free_bytes",
         # the compute processes and the GPU's load (diagnostics/probes/gpuprocs.py, parsers.base.process_facts)
         "gpu.processes", "gpu.other_process_count", "gpu.other_process_mem_bytes",
         "gpu.other_process_mem_fraction", "gpu.busy_percent", "gpu.mem_used_fraction",
         # the table's own process list against its memory column (parsers/nvidia_smi.py)
         "gpu.unlisted_mem_bytes", "gpu.unlisted_mem_fraction")


def collect(root: str, out: Emitter) -> None:
    if root not in ("", "/"):
        out.status("skipped", "nvidia-smi can only run on the live system")
        return
    exe = shutil.which("nvidia-smi")
    if not exe:
        out.status("skipped", "nvidia-smi is not installed")
        return
    out.stage("nvidia-smi")
    rc, so, se, prob = run_tool([exe], timeout=15)
    text = (so + ("\n" + se if se else "")).strip()
    try:
        from .. import parsers

        res = parsers.parse(text, "nvidia_smi")
        out.facts(res.facts)
        errors = res.errors
    except (ImportError, ValueError):
        errors = []
    if prob or rc != 0 or errors:
        first = f"nvidia-smi {prob}" if prob else (  # a signal or timeout is the error, not its first line
            errors or [ln for ln in text.splitlines() if ln.strip()] or [f"exit {rc}"])[0]
        out.fact("nvidia.smi_error", first.strip()[:300])
        out.log("nvidia-smi", text)
        out.evidence("nvidia-smi", f"nvidia-smi (exit {rc}): {first.strip()[:400]}")
        out.status("fail", "nvidia-smi reports an error")
        return
    summary = _others(exe, out)
    out.status("ok", "nvidia-smi answered" + (f"; {summary}" if summary else ""))


QUERY_GPU = "--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total"
QUERY_APPS = "--query-compute-apps=pid,process_name,used_gpu_memory,gpu_uuid"
CSV = "--format=csv,noheader,nounits"


def _others(exe: str, out: Emitter) -> str:
    """Processes and load; returns a short summary for the probe board ('' when nothing to say)."""
    from ..parsers import nvidia_smi
    from ..parsers.base import process_facts
    from .gpuprocs import emit_processes, load_facts, load_line, other_fraction, own_pids_checker

    own = own_pids_checker()
    out.stage("nvidia-smi --query-gpu")
    gpus, samples = [], []
    for i in range(3):  # three readings ~0.4 s apart: a short blip (ours or not) is not "kept busy"
        rc, so, se, prob = run_tool([exe, QUERY_GPU, CSV], timeout=5)
        if prob or rc != 0:
            break
        rows = nvidia_smi.parse_gpu_load(so)
        if not rows:
            break
        if i == 0:
            gpus = rows
        else:
            samples.append(rows)
        if i < 2:
            time.sleep(0.4)
    load = load_facts(gpus, samples)
    out.facts(load)
    for g in gpus[:16]:
        out.evidence("nvidia-smi", load_line(g))
    out.stage("nvidia-smi --query-compute-apps")
    rc, so, se, prob = run_tool([exe, QUERY_APPS, CSV], timeout=8)
    if prob or rc != 0:
        out.note(f"nvidia-smi could not list the compute processes ({prob or f'exit {rc}'}: "
                 f"{(se or so).strip()[:200]})")
        return ""
    procs = nvidia_smi.parse_compute_apps(so)
    facts = process_facts(procs, own)
    if gpus:
        frac = other_fraction(procs, gpus, own)
        if frac is not None:
            facts["gpu.other_process_mem_fraction"] = frac
    emit_processes(out, facts, bool(procs), so, "nvidia-smi compute apps", "nvidia-smi", "is on the GPU")
    n = facts["gpu.other_process_count"]
    busy = load.get("gpu.busy_percent")
    parts = []
    if n:
        parts.append(f"{n} other process(es) on the GPU, {facts['gpu.other_process_mem_bytes'] / 2**30:.1f} GiB")
    if busy is not None and busy >= 50:
        parts.append(f"GPU {busy:.0f}% busy before the test")
    return "; ".join(parts)


if __name__ == "__main__":
    probe_main(collect, FACTS)
