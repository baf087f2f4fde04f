"""What the test generation's transformers stages cost, by the way the model is loaded (issue 19).

  python bench/bench_gen_imports.py [--rounds 4] [--python PATH] [--model-dir DIR]

Fresh interpreters of PATH, alternating, each: ``import torch`` (not timed), then timed in wall and CPU seconds:

- ``auto``:     ``AutoTokenizer.from_pretrained`` + ``AutoModelForCausalLM.from_pretrained`` (a user's directory);
- ``concrete``: ``PreTrainedTokenizerFast.from_pretrained`` + ``LlamaForCausalLM.from_pretrained`` (the built-in
  model since issue 19 round 5);

with the number of modules each imported after torch, and (one extra run with ``-X importtime``) the heaviest
modules of the concrete variant by their own import time.  The model directory defaults to the built-in tiny
model in the doctor's cache (built there by ``python -m diagnostics generate`` once; never downloaded).
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

CHILD = r'''
import json, os, sys, time
os.environ["HF_HUB_OFFLINE"] = "1"; os.environ["TRANSFORMERS_OFFLINE"] = "1"
variant, d = sys.argv[1], sys.argv[2]
import torch
before = set(sys.modules)
w0, c0 = time.perf_counter(), time.process_time()
import transformers
w1, c1 = time.perf_counter(), time.process_time()
if variant == "auto":
    from transformers import AutoTokenizer as T
else:
    from transformers import PreTrainedTokenizerFast as T
tok = T.from_pretrained(d, local_files_only=True)
w2, c2 = time.perf_counter(), time.process_time()
if variant == "auto":
    from transformers import AutoModelForCausalLM as M
else:
    from transformers import LlamaForCausalLM as M
model = M.from_pretrained(d, local_files_only=True)
w3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({"import_transformers": [w1 - w0, c1 - c0], "tokenizer": [w2 - w1, c2 - c1],
                  "model": [w3 - w2, c3 - c2], "total": [w3 - w0, c3 - c0],
                  "modules": len(set(sys.modules) - before), "transformers": transformers.__version__,
                  "names": sorted(set(sys.modules) - before)}))
os._exit(0)
'''


def default_model_dir() -> str:
    # as diagnostics.generation.default_cache_dir (platformdirs' user cache dir on Linux), without importing it
    base = os.environ.get("GPU_DOCTOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "gpu-doctor")
    return os.path.join(base, "models", "builtin-tiny-v1")


def one(python: str, variant: str, model_dir: str, importtime: bool = False) -> dict:
    argv = [python] + (["-X", "importtime"] if importtime else []) + ["-c", CHILD, variant, model_dir]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if p.returncode != 0:
        raise SystemExit(f"{variant}: {p.stderr[-2000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if importtime:
        out["importtime"] = p.stderr
    return out


def heaviest(importtime: str, names: set[str], n: int = 12) -> list[tuple[float, str]]:
    rows = []
    for ln in importtime.splitlines():
        if ln.startswith("import time:") and "cumulative" not in ln:
            self_us, _cum, name = ln.split("|")
            name = name.strip()
            if name in names:
                rows.append((int(self_us.split(":")[1]) / 1e6, name))
    return sorted(rows, reverse=True)[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--model-dir", default=default_model_dir())
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.model_dir, "config.json")):
        print(f"no model in {args.model_dir}: run `python -m diagnostics generate` once to build it", file=sys.stderr)
        return 2
    res: dict[str, list[dict]] = {"auto": [], "concrete": []}
    one(args.python, "concrete", args.model_dir)          # warm-up: page cache, .pyc files
    for r in range(args.rounds):
        for v in (("auto", "concrete") if r % 2 == 0 else ("concrete", "auto")):
            res[v].append(one(args.python, v, args.model_dir))
    prof = one(args.python, "concrete", args.model_dir, importtime=True)
    ver = res["auto"][0]["transformers"]
    print(f"transformers {ver}, {args.rounds} alternating rounds, fresh `{args.python}` each, torch imported "
          f"before the clock; {os.cpu_count()} CPUs; load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{time.strftime('%Y-%m-%d %H:%M')} UTC.\n")
    print("| variant | import transformers | tokenizer | model load | total (wall / CPU s, medians) | modules "
          "imported after torch |")
    print("|---|---|---|---|---|---|")
    for v, rows in res.items():
        def m(k, i):
            return statistics.median(x[k][i] for x in rows)
        print(f"| {v} | {m('import_transformers', 0):.2f} / {m('import_transformers', 1):.2f} | "
              f"{m('tokenizer', 0):.2f} / {m('tokenizer', 1):.2f} | {m('model', 0):.2f} / {m('model', 1):.2f} | "
              f"{m('total', 0):.2f} / {m('total', 1):.2f} | {statistics.median(x['modules'] for x in rows):.0f} |")
    a, c = set(res["auto"][0]["names"]), set(res["concrete"][0]["names"])
    print(f"\nModules only the Auto variant imports: {len(a - c)} ({', '.join(sorted(a - c)) or 'none'}); only the "
          f"concrete one: {len(c - a)}.\n")
    print("Heaviest modules of the concrete variant (own import time, one `-X importtime` run):\n")
    print("| s | module |\n|---|---|")
    for s, name in heaviest(prof["importtime"], set(prof["names"])):
        print(f"| {s:.3f} | {name} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
