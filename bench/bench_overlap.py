"""What can overlap inside the generation child on a GPU (issue 19, round 6): measured, not assumed.

  python bench/bench_overlap.py [--rounds 3] [--python PATH] [--importtime FILE]

Fresh interpreters of PATH, alternating variants, each timed from its spawn:

- ``child``: the real generation child hosting the torch probe (``generation/child.py --torch-probe``), the
  built-in tiny model from the cache, with ``GPU_DOCTOR_PREWARM`` 0 and 1 (the GPU pre-warm beside the
  transformers import): when the probe's final record, each generation stage and the result arrived, and when
  the process had exited (a CUDA process's exit is not free);
- ``devq``: ``import torch``, then the torch probe's device query and smoke test, then transformers' model
  classes; ``devq-thread`` imports those classes in a thread started right after ``import torch``: does the
  device query leave the GIL free for an import beside it?
- ``torchimp``: ``import torch`` then torch-free modules transformers needs (numpy, sympy, scipy.optimize,
  jinja2, huggingface_hub, safetensors, tokenizers); ``torchimp-thread`` imports them in a thread during
  ``import torch``: does the torch import (the shared libraries' loading) leave the GIL free?

``--importtime FILE`` also writes one ``-X importtime`` run of torch + the model classes and prints the heaviest
modules of the chain by cumulative time.  Each run's figures are printed as it ends, the medians at the end.
Only the standard library is imported here.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = ROOT / "diagnostics" / "generation" / "child.py"
PROBE = ROOT / "diagnostics" / "probes" / "torch_child.py"

DEVQ = r'''
import json, os, sys, threading, time
t0 = time.perf_counter()
import torch
t_torch = time.perf_counter() - t0
out = {"torch": t_torch}
def imp():
    import transformers
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast
    out["imported"] = time.perf_counter() - t0
th = None
if sys.argv[1] == "thread":
    th = threading.Thread(target=imp); th.start()
torch.cuda.is_available(); torch.cuda.device_count(); torch.cuda.get_device_properties(0)
out["devq"] = time.perf_counter() - t0
a = torch.randn(256, 256); b = torch.randn(256, 256)
(a.to("cuda") @ b.to("cuda")).to("cpu"); torch.cuda.synchronize()
out["smoke"] = time.perf_counter() - t0
if th is None:
    imp()
else:
    th.join()
out["cpu"] = time.process_time()
print(json.dumps(out)); sys.stdout.flush(); os._exit(0)
'''

TORCHIMP = r'''
import json, os, sys, threading, time
t0 = time.perf_counter()
out = {}
def pre():
    import numpy, sympy, jinja2, scipy.optimize, huggingface_hub, safetensors, tokenizers
    out["pre"] = time.perf_counter() - t0
th = None
if sys.argv[1] == "thread":
    th = threading.Thread(target=pre); th.start()
import torch
out["torch"] = time.perf_counter() - t0
if th is None:
    pre()
else:
    th.join()
out["both"] = time.perf_counter() - t0
import transformers
from transformers import LlamaForCausalLM
out["model_classes"] = time.perf_counter() - t0
out["cpu"] = time.process_time()
print(json.dumps(out)); sys.stdout.flush(); os._exit(0)
'''


def run_code(python: str, code: str, mode: str) -> dict:
    p = subprocess.run([python, "-c", code, mode], capture_output=True, text=True, cwd=tempfile.gettempdir())
    if p.returncode != 0:
        return {"error": p.stderr[-800:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_child(python: str, cache_dir: str, prewarm: str) -> dict:
    env = dict(os.environ, GPU_DOCTOR_PREWARM=prewarm, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1")
    argv = [python, str(CHILD), "--cache-dir", cache_dir, "--torch-probe", str(PROBE), "--bf16-targets", "sm_90"]
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                         cwd=tempfile.gettempdir())
    marks: dict[str, float] = {}
    result: dict = {}
    assert p.stdout is not None
    for line in p.stdout:
        now = time.perf_counter() - t0
        if not line.startswith("@@DIAG "):
            continue
        rec = json.loads(line[7:])
        if rec.get("done"):
            marks.setdefault("probe done", now)
        elif "stage" in rec:
            marks.setdefault(f"probe: {rec['stage']}", now)
        elif "progress" in rec:
            marks.setdefault(f"gen: {rec['progress']}", now)
        elif "result" in rec:
            marks["result"] = now
            result = rec["result"]
        elif "error" in rec:
            marks["error"] = now
            result = {"error": rec["error"]}
    p.wait()
    marks["exited"] = time.perf_counter() - t0
    keep = ("stage_s", "prewarm_s", "prewarm_wait_s", "prewarm_error", "dtype", "device", "tokens_per_s",
            "warmup_tokens_per_s", "error")
    return {"marks": marks, **{k: result.get(k) for k in keep if k in result}}


def med(rows: list[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return round(statistics.median(vals), 3) if vals else None


def top_packages(importtime: str, n: int = 25) -> list[tuple[float, str]]:
    """The heaviest modules of the chain by cumulative seconds, nested up to three levels deep."""
    rows = []
    for ln in importtime.splitlines():
        if not ln.startswith("import time:") or "cumulative" in ln:
            continue
        _self, cum, name = ln.split("|")
        depth = (len(name) - len(name.lstrip())) // 2
        rows.append((int(cum) / 1e6, depth, name.strip()))
    flat = sorted(((c, f"{'  ' * (d - 1)}{nm}") for c, d, nm in rows if d <= 3), reverse=True)
    return flat[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "gd-overlap-cache"))
    ap.add_argument("--importtime")
    ap.add_argument("--only", default="child,devq,torchimp")
    args = ap.parse_args()
    only = set(args.only.split(","))
    subprocess.run([args.python, str(CHILD), "--cache-dir", args.cache_dir, "--build-only"], check=True,
                   capture_output=True)
    out: dict[str, list[dict]] = {}
    plan = []
    if "child" in only:
        plan += [("child prewarm=0", lambda: run_child(args.python, args.cache_dir, "0")),
                 ("child prewarm=1", lambda: run_child(args.python, args.cache_dir, "1"))]
    if "devq" in only:
        plan += [("devq", lambda: run_code(args.python, DEVQ, "seq")),
                 ("devq-thread", lambda: run_code(args.python, DEVQ, "thread"))]
    if "torchimp" in only:
        plan += [("torchimp", lambda: run_code(args.python, TORCHIMP, "seq")),
                 ("torchimp-thread", lambda: run_code(args.python, TORCHIMP, "thread"))]
    for _name, fn in plan:          # warm-up: page cache, .pyc files
        fn()
    for r in range(args.rounds):
        order = plan if r % 2 == 0 else plan[::-1]
        for name, fn in order:
            row = fn()
            out.setdefault(name, []).append(row)
            # each run at once (a run cut short by a time limit still shows what it measured)
            print(f"round {r + 1} {name}: " + json.dumps(row.get("marks", row))[:400], flush=True)
    print(f"{args.rounds} rounds, alternating, fresh `{args.python}` each; {os.cpu_count()} CPUs; "
          f"{time.strftime('%Y-%m-%d %H:%M')} UTC\n")
    for name, rows in out.items():
        if name.startswith("child"):
            marks: dict[str, list[float]] = {}
            for r in rows:
                for k, v in r["marks"].items():
                    marks.setdefault(k, []).append(v)
            print(f"## {name} (median s since spawn)\n")
            for k, v in sorted(marks.items(), key=lambda kv: statistics.median(kv[1])):
                print(f"  {statistics.median(v):7.3f}  {k}   ({', '.join(f'{x:.2f}' for x in v)})")
            stages: dict[str, list[float]] = {}
            for r in rows:
                for k, v in (r.get("stage_s") or {}).items():
                    stages.setdefault(k, []).append(v)
            print("  stage_s: " + ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in stages.items()))
            print("  other: " + json.dumps({k: [r.get(k) for r in rows] for k in
                                            ("prewarm_s", "prewarm_wait_s", "prewarm_error", "dtype", "device",
                                             "tokens_per_s", "warmup_tokens_per_s", "error")
                                            if any(r.get(k) is not None for r in rows)}))
            print()
        else:
            keys = sorted({k for r in rows for k in r})
            print(f"## {name}: " + ", ".join(f"{k} {med(rows, k)}" for k in keys if k != "error")
                  + ("  ERROR " + rows[0]["error"] if rows and "error" in rows[0] else ""))
            print("   all: " + json.dumps(rows)[:600] + "\n")
    if args.importtime:
        code = "import torch, transformers\nfrom transformers import PreTrainedTokenizerFast, LlamaForCausalLM"
        p = subprocess.run([args.python, "-X", "importtime", "-c", code], capture_output=True, text=True,
                           cwd=tempfile.gettempdir())
        Path(args.importtime).write_text(p.stderr, encoding="utf-8")
        print("## heaviest modules of the chain (cumulative s, -X importtime, nesting <= 3)\n")
        for c, nm in top_packages(p.stderr, 45):
            print(f"  {c:7.3f}  {nm}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
