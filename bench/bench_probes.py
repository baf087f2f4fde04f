"""A full live probe run against the unavoidable floor.

The floor: the diagnosed interpreter doing ``import torch; torch.cuda.is_available()`` in a fresh process
(the doctor cannot know more about torch without at least that).  Measured against it, in one run, with the
three interleaved and their order rotated each round (so drift and caches hit all three alike):

- ``diagnostics.probing.run_all()`` in-process (every probe in its own child, as the UI runs them);
- the CLI ``python -m diagnostics run --json --no-generate`` (adds interpreter start, imports, the KB load
  and the matching).

Medians; the ratio to the floor is the figure of merit (target < 1.2).  Per-probe durations of the
in-process runs show where the time goes.

Run: .venv/bin/python bench/bench_probes.py [--rounds 9] [--python PATH] [--write docs/BENCHMARKS.md]
"""
from __future__ import annotations

import argparse
import os
import resource
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FLOOR_CODE = "import torch; torch.cuda.is_available()"


def t_floor(python: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([python, "-c", FLOOR_CODE], check=True, capture_output=True)
    return time.perf_counter() - t0


def t_run_all(python: str, per_probe: dict[str, list[float]]) -> float:
    from diagnostics.probing import run_all

    t0 = time.perf_counter()
    res = run_all(python=python)
    dt = time.perf_counter() - t0
    for p in res:
        per_probe.setdefault(p["id"], []).append(p["duration_s"])
    return dt


def t_cli(python: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "diagnostics", "run", "--json", "--no-generate", "--python", python],
                   cwd=ROOT, capture_output=True)
    return time.perf_counter() - t0


def _cpu() -> float:
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    return c.ru_utime + c.ru_stime + me.ru_utime + me.ru_stime


def measure(python: str, rounds: int) -> dict:
    per_probe: dict[str, list[float]] = {}
    kinds = {
        "floor": lambda: t_floor(python),
        "run_all": lambda: t_run_all(python, per_probe),
        "cli": lambda: t_cli(python),
    }
    order = list(kinds)
    times: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    # one warm-up of each (page cache, .pyc files), not counted
    for k in order:
        kinds[k]()
    per_probe.clear()
    for r in range(rounds):
        rot = order[r % 3:] + order[:r % 3]
        for k in rot:
            c0 = _cpu()
            times[k].append(kinds[k]())
            cpu[k].append(_cpu() - c0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"times": times, "median": med, "cpu": {k: statistics.median(v) for k, v in cpu.items()}, "per_probe": {k: statistics.median(v) for k, v in per_probe.items()},
            "rounds": rounds}


def torch_version(python: str) -> str:
    p = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    return p.stdout.strip() or "?"


def render(res: dict, python: str) -> str:
    med = res["median"]
    floor = med["floor"]
    lines = [
        f"Floor: `{FLOOR_CODE}` in a fresh `{python}` (torch {torch_version(python)}); "
        f"{res['rounds']} interleaved rounds (order rotated each round) after one warm-up; "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}.",
        "",
        "| what | median wall s | ratio to floor | median CPU s (all processes) | CPU ratio | all runs, wall s |",
        "|---|---|---|---|---|---|",
    ]
    names = {"floor": "floor (import torch + is_available)", "run_all": "`probing.run_all()` (all probes)",
             "cli": "`python -m diagnostics run --json --no-generate`"}
    for k in ("floor", "run_all", "cli"):
        runs = ", ".join(f"{x:.2f}" for x in res["times"][k])
        c = res["cpu"]
        lines.append(f"| {names[k]} | {med[k]:.2f} | {med[k] / floor:.2f} | {c[k]:.2f} | "
                     f"{c[k] / c['floor']:.2f} | {runs} |")
    lines += ["", "Per probe (median wall time inside `run_all`, each in its own child, run concurrently):", "",
              "| probe | median s |", "|---|---|"]
    for k, v in sorted(res["per_probe"].items(), key=lambda kv: -kv[1]):
        lines.append(f"| {k} | {v:.2f} |")
    ra, cli = med["run_all"] / floor, med["cli"] / floor
    verdict = "meets" if ra < 1.2 else "misses"
    lines += ["", f"**`run_all` / floor = {ra:.2f}** ({verdict} the < 1.2 target); the CLI / floor = {cli:.2f} "
                  "(the CLI also starts an interpreter, loads and compiles the KB and matches)."]
    return "\n".join(lines)


def write_section(path: Path, heading: str, body: str) -> None:
    """Replace (or append) only this benchmark's section of the shared file."""
    from doc import replace_section

    replace_section(path, heading, f"{heading}\n\nProduced by `bench/bench_probes.py`, measured {time.strftime('%Y-%m-%d')} "
                                   f"(`python {' '.join(sys.argv)}`).\n\n{body}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--python", default=sys.executable, help="the diagnosed interpreter (default: this one)")
    ap.add_argument("--write", help="put the figures under '## Probe run' in this Markdown file")
    args = ap.parse_args()
    res = measure(args.python, args.rounds)
    out = render(res, args.python)
    print(out)
    if args.write:
        write_section(Path(args.write), "## Probe run", out)


if __name__ == "__main__":
    main()
