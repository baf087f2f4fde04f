"""GPU-related environment variables as the diagnosed process will see them.

Only variables that steer the GPU stack are reported (never the whole environment: it holds secrets).
HSA_OVERRIDE_GFX_VERSION is reported as in force, with quotes and malformed values called out.
"""
from __future__ import annotations

import os
import re

from ..gfx import override_facts
from .base import Emitter, probe_main

PREFIXES = ("HSA_", "HIP_", "ROCR_", "ROCM_", "ROCBLAS_", "HIPBLASLT_", "MIOPEN_", "AMD_", "HCC_", "GPU_",
            "CUDA_", "NCCL_", "RCCL_", "PYTORCH_", "TORCH_", "NVIDIA_", "OLLAMA_", "VLLM_", "HF_HUB_OFFLINE")
EXACT = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PATH_ROCM")
SECRETISH = re.compile(r"(?i)(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|CREDENTIAL)")
MASKS = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")

# every fact this probe may emit ('env.*': the value of each GPU-related variable that is set)
FACTS = ("env.set_names", "env.*", "visible_devices.masks", "hsa_override.value", "hsa_override.valid",
         "hsa_override.gfx")


def relevant(name: str) -> bool:
    if SECRETISH.search(name):
        return False
    return name in EXACT or name.startswith(PREFIXES)


def collect(root: str, out: Emitter, environ: dict[str, str] | None = None) -> None:
    env = dict(os.environ if environ is None else environ)
    names = sorted(n for n in env if relevant(n))
    out.fact("env.set_names", names)
    for n in names:
        out.fact(f"env.{n}", env[n][:2000])
    # what the masks leave visible depends on the devices present: judged after every probe ended, by
    # diagnostics.derive.visible_devices (the one rule, also for pasted facts)
    masks = [f"{n}={env[n]}" for n in MASKS if n in env]
    out.fact("visible_devices.masks", masks)
    for m in masks:
        out.evidence("environment", m)
    status, summary = "ok", f"{len(names)} GPU-related variable(s) set"
    if "HSA_OVERRIDE_GFX_VERSION" in env:
        raw = env["HSA_OVERRIDE_GFX_VERSION"]
        ov = override_facts(raw)
        for name, v in ov.items():
            out.fact(name, v)
        valid, gfx = ov["hsa_override.valid"], ov.get("hsa_override.gfx")
        if not valid:
            out.evidence("environment", f"HSA_OVERRIDE_GFX_VERSION={raw!r} is not of the form MAJOR.MINOR.STEP "
                                        "(quotes or spaces are taken literally)")
            status, summary = "warn", "HSA_OVERRIDE_GFX_VERSION is malformed"
        else:
            out.evidence("environment", f"HSA_OVERRIDE_GFX_VERSION={raw} (the runtime will treat every GPU as {gfx})")
    if masks:
        summary += "; visible-device masks: " + ", ".join(masks)
    out.status(status, summary)


if __name__ == "__main__":
    probe_main(collect, FACTS)
