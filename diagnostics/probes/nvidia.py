"""The NVIDIA side: nvidia-smi (driver version, CUDA version it supports, GPUs) through the dump parser."""
from __future__ import annotations

import shutil

from .base import Emitter, probe_main, run_tool


def collect(root: str, out: Emitter) -> None:
    if root not in ("", "/"):
        out.status("skipped", "nvidia-smi can only run on the live system")
        return
    exe = shutil.which("nvidia-smi")
    if not exe:
        out.status("skipped", "nvidia-smi is not installed")
        return
    out.stage("nvidia-smi")
    rc, so, se, prob = run_tool([exe], timeout=20)
    text = (so + ("\n" + se if se else "")).strip()
    try:
        from .. import parsers

        res = parsers.parse(text, "nvidia_smi")
        out.facts(res.facts)
        errors = res.errors
    except (ImportError, ValueError):
        errors = []
    if prob or rc != 0 or errors:
        first = (errors or [ln for ln in text.splitlines() if ln.strip()] or [prob or f"exit {rc}"])[0]
        out.fact("nvidia.smi_error", first.strip()[:300])
        out.log("nvidia-smi", text)
        out.evidence("nvidia-smi", f"nvidia-smi (exit {rc}): {first.strip()[:400]}")
        out.status("fail", "nvidia-smi reports an error")
        return
    out.status("ok", "nvidia-smi answered")


if __name__ == "__main__":
    probe_main(collect)
