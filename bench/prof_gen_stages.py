"""Profile what the test generation's load and warm-up stages spend their time on (issue 19).

One process, the built-in model, the stages in the order the generation child runs them; each stage's wall and
CPU seconds, and for the load and the warm-up a cProfile listing (by own time and by cumulative time).  A second
load and a model built from its config on the device show what is a first-time cost and what is from_pretrained's.
Run on a GPU machine: ``python3 bench/prof_gen_stages.py [--device cuda] [--dtype bfloat16] [--top 30]``."""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "diagnostics", "generation"))
import child  # noqa: E402  (self-contained: standard library only at import time)


def stage(name, fn, top=0):
    pr = cProfile.Profile() if top else None
    w0, c0 = time.perf_counter(), time.process_time()
    if pr:
        pr.enable()
    out = fn()
    if pr:
        pr.disable()
    print(f"## {name}: wall {time.perf_counter() - w0:.3f} s, CPU {time.process_time() - c0:.3f} s", flush=True)
    if pr:
        for key in ("tottime", "cumulative"):
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats(key).print_stats(top)
            print(f"### {name} by {key}\n" + "\n".join(s.getvalue().splitlines()[6:]), flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--cache", choices=["dynamic", "static"], default="dynamic",
                    help="static: generate(cache_implementation='static'): one KV shape for every decoding step")
    ap.add_argument("--warmup-tokens", type=int, default=None, help="tokens of the warm-up (default: --tokens)")
    ap.add_argument("--attn", default=None, help="attention implementation set after the load (eager, sdpa)")
    ap.add_argument("--sdp-backends", default=None,
                    help="comma list of SDPA backends left on (flash,mem_efficient,math,cudnn); the rest off")
    ap.add_argument("--no-profile", action="store_true", help="stage times only (cProfile inflates Python-bound stages)")
    a = ap.parse_args()
    if a.no_profile:
        a.top = 0
    torch = stage("import torch", lambda: __import__("torch"))
    if a.sdp_backends is not None:
        on = set(a.sdp_backends.split(","))
        for name in ("flash", "mem_efficient", "math", "cudnn"):
            getattr(torch.backends.cuda, f"enable_{name}_sdp")(name in on)
    if a.device == "cuda":
        stage("first CUDA call", lambda: torch.zeros(1, device="cuda").sum().item())
    stage("import transformers + LlamaForCausalLM", lambda: __import__("transformers").LlamaForCausalLM)
    cache = tempfile.mkdtemp(prefix="gd-prof-")
    d = stage("build the built-in model (CPU)", lambda: child.build_builtin(cache, "tiny"))
    model = stage("load (first)", lambda: child.load_model(d, a.device, a.dtype, None, True), a.top)
    from transformers import AutoTokenizer
    tok = stage("tokenizer", lambda: AutoTokenizer.from_pretrained(d, local_files_only=True))
    if a.attn:
        model.set_attn_implementation(a.attn)
    print(f"attention: {model.config._attn_implementation}", flush=True)
    inputs = child.prompt_inputs(torch, tok, model)
    if a.cache == "static":
        model.generation_config.cache_implementation = "static"
    wt = a.warmup_tokens or a.tokens
    stage(f"warm-up generation ({wt} tokens, {a.cache} cache)",
          lambda: child.timed_generate(model, inputs, wt, a.device, report_progress=False), a.top)
    for i in (1, 2):
        g = stage(f"timed generation {i} ({a.tokens} tokens)",
                  lambda: child.timed_generate(model, inputs, a.tokens, a.device, report_progress=False))
        print(f"tokens/s {g['tokens_per_s']:.1f}")
    stage("load (second)", lambda: child.load_model(d, a.device, a.dtype, None, True))
    import transformers
    cfg = transformers.AutoConfig.from_pretrained(d)

    def from_config():
        with torch.device(a.device):
            m = transformers.LlamaForCausalLM._from_config(cfg, dtype=getattr(torch, a.dtype))
        return m.eval()
    m2 = stage("from config on the device", from_config)
    stage("warm-up generation, model from config", lambda: child.timed_generate(m2, inputs, a.tokens, a.device, report_progress=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
