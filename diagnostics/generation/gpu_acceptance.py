"""The GPU acceptance run of the test generation (issue 5), in one command on a machine with a GPU:

  python3 -m diagnostics.generation.gpu_acceptance --out acceptance.json

1. the built-in tiny model on the GPU, compared with the CPU;
2. a ~1 B-parameter random-weight Llama built there (builtin:1b), on the GPU, compared with the CPU,
   with the estimate before loading next to the measured peak;
3. an out-of-memory on load provoked for real: GPU_DOCTOR_GPU_MEMORY_FRACTION caps the child's share of
   the GPU (torch.cuda.set_per_process_memory_fraction) below the 1 B model's weights;
4. a partial offload provoked for real: device_map="auto" under a 1 GiB GPU budget (accelerate's max_memory);
5. a config too large for the GPU (no weights): the estimate refuses it before loading.

Only the standard library and this package are imported here; torch runs in the children.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from . import run_generation

GIB = 1024 ** 3


def _summary(name: str, g: dict) -> dict:
    keep = ("status", "error_kind", "error", "device", "dtype", "model", "new_tokens", "tokens_per_s", "ttft_s",
            "load_s", "cpu_tokens_per_s", "gpu_vs_cpu_ratio", "peak_gpu_bytes", "peak_gpu_reserved_bytes",
            "peak_rss_bytes", "gpu_free_bytes", "gpu_total_bytes", "gpu_name", "host_available_bytes",
            "torch_version", "transformers_version", "duration_s", "warnings", "notes", "text", "hf_device_map",
            "cpu_compare_skipped", "cpu_compare_error", "gpu_memory_fraction")
    s = {k: g.get(k) for k in keep}
    s["step"] = name
    s["estimate"] = g.get("estimate")
    s["facts"] = g.get("facts")
    s["evidence"] = g.get("evidence")
    s["log_tail"] = (g.get("log") or "")[-3000:]
    pd = g.get("param_devices") or {}
    counts: dict[str, int] = {}
    for d in pd.values():
        counts[d] = counts.get(d, 0) + 1
    s["param_device_counts"] = counts
    if g.get("estimate") and g.get("peak_gpu_bytes"):
        e = g["estimate"]
        s["estimate_vs_measured"] = {
            "estimated_allocations_bytes": e["weights_bytes"] + e["kv_cache_bytes"] + e["activations_bytes"],
            "estimated_total_bytes": e["total_bytes"], "measured_peak_allocated_bytes": g["peak_gpu_bytes"],
            "measured_peak_reserved_bytes": g.get("peak_gpu_reserved_bytes")}
    return s


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--oom-fraction", default="0.005")
    args = ap.parse_args()
    steps = []

    def step(name: str, **kw) -> dict:
        t0 = time.monotonic()
        print(f"== {name}", flush=True)
        g = run_generation(args.python, progress=lambda m: print(f"   .. {m}", flush=True), **kw)
        s = _summary(name, g)
        steps.append(s)
        print(f"   -> {s['status']} {s['error_kind'] or ''} device={s['device']} tok/s={s['tokens_per_s']} "
              f"cpu tok/s={s['cpu_tokens_per_s']} ratio={s['gpu_vs_cpu_ratio']} peak_gpu={s['peak_gpu_bytes']} "
              f"est={(s['estimate'] or {}).get('total_bytes')} ({time.monotonic() - t0:.1f}s)", flush=True)
        if s["error"]:
            print(f"   error: {s['error'][:600]}", flush=True)
        with open(args.out, "w", encoding="utf-8") as f:       # after every step: a timeout keeps the rest
            json.dump(steps, f, indent=1, default=str)
        return g

    step("tiny-gpu", model="builtin:tiny", device="cuda", max_new_tokens=64, timeout=240)
    step("1b-gpu", model="builtin:1b", device="cuda", max_new_tokens=64, timeout=400)
    step("1b-oom-on-load", model="builtin:1b", device="cuda", max_new_tokens=32, timeout=240,
         env={"GPU_DOCTOR_GPU_MEMORY_FRACTION": args.oom_fraction}, compare_cpu=False)
    step("1b-offload", model="builtin:1b", device="cuda", max_new_tokens=16, timeout=300, device_map="auto",
         env={"GPU_DOCTOR_MAX_GPU_MEMORY": "1GiB"}, compare_cpu=False)
    huge = os.path.join(os.environ.get("TMPDIR", "/tmp"), "gpu-doctor-huge-model")
    os.makedirs(huge, exist_ok=True)
    with open(os.path.join(huge, "config.json"), "w") as f:     # ~100 B parameters: 200 GB in bf16
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 12288,
                   "intermediate_size": 33792, "num_hidden_layers": 56, "num_attention_heads": 96,
                   "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False}, f)
    step("too-large-for-vram", model=huge, device="cuda", max_new_tokens=32, timeout=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
