"""Benchmark: what watching the GPU costs the test generation, and what the watch records.

In one run: the doctor's test generation (``run_generation``, fresh child each time) alternately with and
without the monitor (order swapped every round, so drift hits both sides alike), ``--rounds`` times; the
medians of tokens/s are compared (target: under 2 % slower with the monitor).  Then the sampler alone, with
nothing else running, for ``--idle-s`` seconds: its own CPU time (this process and its children) per second.
The samples of the last monitored run are written with their facts, summary and chart.

  python bench/bench_monitor.py [--device cpu|cuda] [--model builtin:tiny|builtin:1b|DIR] [--max-new-tokens N]
                                [--rounds R] [--interval S] [--tools nvidia-smi] [--out DIR] [--budget-s S]

Only the standard library and the doctor's stdlib-only modules are imported (it runs on machines that have
torch but none of the doctor's other dependencies); a PNG is drawn only if matplotlib is importable.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from diagnostics import monitor  # noqa: E402
from diagnostics.generation import run_generation  # noqa: E402


def cpu_s() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def gen_kwargs(a: argparse.Namespace) -> dict:
    return dict(python=a.python, model=a.model, device=a.device, max_new_tokens=a.max_new_tokens,
                timeout=a.timeout, compare_cpu=False)


def one(a: argparse.Namespace, watched: bool) -> tuple[dict, list | None, float]:
    t0 = time.perf_counter()
    if watched:
        g, samples = monitor.watch(run_generation, interval=a.interval, tools=a.tools, **gen_kwargs(a))
    else:
        g, samples = run_generation(**gen_kwargs(a)), None
    return g, samples, time.perf_counter() - t0


def png(samples: list, path: str) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        return f"no PNG: matplotlib not importable ({type(e).__name__})"
    rows = monitor.chart_data(samples)
    spans = monitor.phase_spans([s for s in samples if s.get("gpu") == monitor.pick_gpu(samples)])
    keys = [k for k in ("busy_pct", "vram_used_gib", "power_w", "temp_c") if any(r[k] is not None for r in rows)]
    fig, axes = plt.subplots(len(keys), 1, figsize=(9, 2.0 * len(keys)), sharex=True)
    axes = axes if len(keys) > 1 else [axes]
    colours = {"loading": "#fde2b8", "warming up": "#fff3b0", "generating": "#c9f0c9"}
    for ax, k in zip(axes, keys):
        for sp in spans:
            if sp["phase"] in colours:
                ax.axvspan(sp["start_s"], sp["end_s"], color=colours[sp["phase"]], label=sp["phase"])
        ax.plot([r["t_s"] for r in rows], [r[k] for r in rows])
        ax.set_ylabel(k)
    axes[-1].set_xlabel("seconds")
    h, lab = axes[0].get_legend_handles_labels()
    seen = dict(zip(lab, h))
    if seen:
        axes[0].legend(seen.values(), seen.keys(), loc="upper left", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--model", default=None)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--tools", default=None, help="comma-separated sources to try (default: auto)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--idle-s", type=float, default=5.0)
    ap.add_argument("--budget-s", type=float, default=0, help="start no new round after this many seconds (0: none)")
    ap.add_argument("--out", default=None, help="folder for bench_monitor.json, samples, chart")
    a = ap.parse_args(argv)
    t_start = time.perf_counter()
    report: dict = {"host": platform.node(), "python": sys.version.split()[0], "device": a.device, "model": a.model,
                    "max_new_tokens": a.max_new_tokens, "interval_s": a.interval, "runs": []}

    print("warm-up run (builds/caches the model, not counted)", file=sys.stderr, flush=True)
    g, _, wall = one(a, False)
    report["warmup"] = {"status": g.get("status"), "error": g.get("error"), "tokens_per_s": g.get("tokens_per_s"),
                        "wall_s": round(wall, 2), "model": g.get("model"), "device": g.get("device")}
    if g.get("status") not in ("ok", "warn"):
        print(json.dumps(report, indent=2, default=str))
        print(f"warm-up failed: {g.get('error')}", file=sys.stderr)
        return 1

    last_samples = None
    last_g = None
    for i in range(a.rounds):
        if i and a.budget_s and time.perf_counter() - t_start > a.budget_s:
            report["rounds_cut"] = f"stopped after {i} rounds (budget {a.budget_s:g} s)"
            break
        for watched in ((False, True) if i % 2 == 0 else (True, False)):
            g, samples, wall = one(a, watched)
            run = {"round": i, "watched": watched, "status": g.get("status"), "tokens_per_s": g.get("tokens_per_s"),
                   "new_tokens": g.get("new_tokens"), "wall_s": round(wall, 2)}
            if samples is not None:
                run["samples"] = len(samples)
                run["source"] = samples.source
                run["notes"] = samples.notes
                last_samples, last_g = samples, g
            report["runs"].append(run)
            print(json.dumps(run), file=sys.stderr, flush=True)

    def med(w: bool) -> float | None:
        v = [r["tokens_per_s"] for r in report["runs"] if r["watched"] == w and isinstance(r["tokens_per_s"], (int, float))]
        return statistics.median(v) if v else None

    plain, watched = med(False), med(True)
    report["tokens_per_s_without"] = plain
    report["tokens_per_s_with"] = watched
    if plain and watched:
        report["slowdown_pct"] = round(100.0 * (plain - watched) / plain, 2)
        pairs = []
        for i in range(a.rounds):
            p = [r["tokens_per_s"] for r in report["runs"] if r["round"] == i and not r["watched"]]
            w = [r["tokens_per_s"] for r in report["runs"] if r["round"] == i and r["watched"]]
            if p and w and p[0] and w[0]:
                pairs.append(round(100.0 * (p[0] - w[0]) / p[0], 2))
        report["slowdown_pct_by_round"] = pairs

    # the sampler alone: its own CPU per second of watching
    c0, t0 = cpu_s(), time.perf_counter()
    mon = monitor.Monitor(interval=a.interval, tools=a.tools).start()
    time.sleep(a.idle_s)
    idle = mon.stop()
    c1, t1 = cpu_s(), time.perf_counter()
    report["sampler_alone"] = {"wall_s": round(t1 - t0, 2), "cpu_s": round(c1 - c0, 3),
                               "cpu_share_of_one_core_pct": round(100.0 * (c1 - c0) / (t1 - t0), 2),
                               "samples": len(idle), "source": idle.source, "notes": idle.notes}

    if last_samples is not None:
        rec = monitor.to_record(last_samples)
        report["watched_run"] = {"summary": rec["summary"], "facts": rec["facts"], "notes": rec["notes"],
                                 "phases": rec["phases"], "generation_facts": (last_g or {}).get("facts"),
                                 "tokens_per_s": (last_g or {}).get("tokens_per_s"),
                                 "peak_gpu_bytes": (last_g or {}).get("peak_gpu_bytes")}
        print(rec["summary"], file=sys.stderr)
        if a.out:
            os.makedirs(a.out, exist_ok=True)
            with open(os.path.join(a.out, "monitor_samples.json"), "w") as f:
                json.dump(rec, f, indent=1, default=str)
            with open(os.path.join(a.out, "monitor_chart.svg"), "w") as f:
                f.write(monitor.svg_chart(last_samples, title=f"GPU during the test generation ({a.model or 'builtin:tiny'}, "
                                                               f"{a.device})"))
            if getattr(last_samples, "raw", None):
                with open(os.path.join(a.out, "tool_lines_watched.txt"), "w") as f:
                    f.write("\n".join(last_samples.raw) + "\n")
            why = png(last_samples, os.path.join(a.out, "monitor_chart.png"))
            report["png"] = why or "monitor_chart.png"
    report["total_s"] = round(time.perf_counter() - t_start, 1)
    text = json.dumps(report, indent=2, default=str)
    if a.out:
        with open(os.path.join(a.out, "bench_monitor.json"), "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
