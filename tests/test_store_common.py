"""Shared helpers for the store tests: realistic session reports (no tests here).

The log and error lines are real ROCm/PyTorch output as users report it:
- "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!" (ROCm/ROCm#2536 and many more)
- "Memory access fault by GPU node-1 (Agent handle: 0x...) on address 0x...(nil). Reason: Page not present or
  supervisor privilege." (ROCm/ROCm#2196)
- "ROCk module is NOT loaded, possibly no GPU devices" (rocminfo without the amdgpu driver; seen on this machine)
"""
from __future__ import annotations

import copy
import uuid
from typing import Any

HF_SECRET = "hf_Qm7VzR2kLpX9sT4bNc8WfYh3JdGa6EuKo1"   # shaped like a real token, not a real one
GH_SECRET = "ghp_R8mZk2LqW5vXc9Tn3Hb7Yp4Gd6Fs1Ja0Ke2U"
PW_SECRET = "Sup3r-Secret-Pw!"

_BASE: dict[str, Any] = {
    "session_id": "",
    "created_at": "2026-11-30T05:28:43+00:00",
    "host": "gpu-node-07.lab.example.org",
    "tool_version": "0.1.0",
    "kb_version": "2026.11.30",
    "source": "live",
    "facts": {
        "os.name": "Ubuntu 22.04.4 LTS",
        "os.kernel": "6.8.0-45-generic",
        "python.version": "3.11.7",
        "python.executable": "/home/alice/venvs/llm/bin/python",
        "user.groups": ["alice", "video"],
        "user.in_render_group": False,
        "gpu.count": 1,
        "gpu.names": ["AMD Radeon RX 7900 XTX"],
        "gpu.gfx_targets": ["gfx1100"],
        "rocm.version": "6.2.4",
        "torch.version": "2.5.1+rocm6.2",
        "torch.build": "rocm",
        "torch.cuda_available": True,
        "torch.arch_list": ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"],
        "env.HSA_OVERRIDE_GFX_VERSION": "11.0.0",
        "env.HF_TOKEN": HF_SECRET,
        "gpu.vram_total_bytes": 25753026560,
    },
    "probes": [
        {"id": "devices", "title": "GPU device nodes", "status": "ok", "duration_s": 0.02, "error": None,
         "facts": {"kfd.present": True}, "evidence": [], "output_tail": ""},
        {"id": "torch", "title": "PyTorch on the GPU", "status": "crashed", "duration_s": 3.4,
         "error": "killed by signal 6 (SIGABRT)",
         "facts": {"torch.version": "2.5.1+rocm6.2"},
         "evidence": [{"source": "torch", "excerpt": "hipErrorNoBinaryForGpu: Unable to find code object for all "
                                                     "current devices!"}],
         "output_tail": "rocBLAS warning: No paths matched /opt/rocm/lib/rocblas/library/*gfx1100*co.\n"
                        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
                        "Aborted (core dumped)\n"},
    ],
    "diagnoses": [
        {"id": "hip-no-binary-for-gpu", "title": "The torch build has no GPU code for this GPU",
         "severity": "critical", "confidence": 0.9,
         "evidence": [{"source": "probe:torch", "excerpt": "hipErrorNoBinaryForGpu: Unable to find code object"}],
         "fix": "1. Install a torch wheel built for your ROCm release.\n2. Check `torch.cuda.get_arch_list()`."},
        {"id": "miopen-missing-kdb-warning", "title": "MIOpen kernel database missing (harmless)",
         "severity": "info", "confidence": 0.8, "benign": True, "evidence": [], "fix": "Nothing to do."},
    ],
    "not_ruled_out": [{"id": "user-not-in-render-video-group", "title": "Not in the render group",
                       "reason": "the devices probe could not open /dev/kfd"}],
    "generation": {"device": "cuda", "model": "sshleifer/tiny-gpt2", "new_tokens": 32, "tokens_per_s": 41.5,
                   "load_s": 1.25, "ttft_s": 0.08, "peak_rss_bytes": 3_221_225_472, "peak_gpu_bytes": None,
                   "text": "Hello"},
    "logs": [{"name": "train.log",
              "text": "$ export HF_TOKEN=" + HF_SECRET + "\n"
                      "git clone https://alice:" + GH_SECRET + "@github.com/lab/llm.git\n"
                      "DATABASE_URL=postgresql://alice:" + PW_SECRET + "@db.lab.example.org/runs\n"
                      "Memory access fault by GPU node-1 (Agent handle: 0x55d0a8f2e570) on address 0x7f2a1c000000. "
                      "Reason: Page not present or supervisor privilege.\n"
                      "/home/alice/venvs/llm/lib/python3.11/site-packages/torch/cuda/__init__.py:129\n"}],
}


def sample_report(**overrides: Any) -> dict[str, Any]:
    """A full session report with planted secrets; each call gets its own random session id."""
    r = copy.deepcopy(_BASE)
    r["session_id"] = str(uuid.uuid4())
    for k, v in overrides.items():
        r[k] = v
    return r


def secrets() -> list[str]:
    return [HF_SECRET, GH_SECRET, PW_SECRET]


def full_bundle(store: Any, sid: str, mask_identity: bool = False) -> bytes:
    """The bundle with its Markdown and HTML renderings (`sessions export --with-reports`), which the store only
    writes to a file (``write_bundle(..., reports=True)``), never returns as bytes: collected here for a test."""
    import io

    fp = io.BytesIO()
    store.write_bundle(sid, fp, mask_identity=mask_identity, reports=True)
    return fp.getvalue()
