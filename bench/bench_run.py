"""The whole diagnosis against the floor, in one run: where each second of `run` goes (issue 19).

The floor: the diagnosed interpreter doing ``import torch; torch.cuda.is_available()`` in a fresh process
(the doctor cannot know anything about torch for less).  Measured against it, interleaved, the order rotated
each round (so drift and caches hit every kind alike):

- ``python -m diagnostics run --json``               (every probe and the test generation, model cached)
- ``python -m diagnostics run --json --no-generate``  (every probe)

Targets: full run <= 2.0x the floor (the time of two torch imports), --no-generate <= 1.15x.

Every CLI run writes a trace (GPU_DOCTOR_TRACE: each progress event and the CLI's phases with wall-clock
times), read back into a profile: when the interpreter got to the CLI, when each torch-probe stage and each
generation stage began (as the parent saw its record), when the probes ended, when the report was printed and
the process exited; the generation child's own stage seconds come from the report (``stage_s``, wall; ``stage_cpu_s``, CPU of
that process: on a shared machine the wall seconds mostly measure the load).

Run: python bench/bench_run.py [--rounds 5] [--python PATH] [--write docs/BENCHMARKS.md] [--json FILE]
Only the standard library is imported here; torch is imported by the children.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

FLOOR_CODE = "import torch; torch.cuda.is_available()"
KINDS = ("floor", "run", "run_nogen")
NAMES = {"floor": "floor: `python -c \"import torch; torch.cuda.is_available()\"`",
         "run": "`python -m diagnostics run --json` (test generation, model cached)",
         "run_nogen": "`python -m diagnostics run --json --no-generate`"}
TARGET = {"run": 2.0, "run_nogen": 1.15}


def t_floor(python: str) -> dict:
    t0 = time.perf_counter()
    subprocess.run([python, "-c", FLOOR_CODE], check=True, capture_output=True)
    return {"wall": time.perf_counter() - t0}


def t_cli(python: str, generate: bool, extra_env: dict[str, str] | None = None, root: Path = ROOT) -> dict:
    fd, trace = tempfile.mkstemp(prefix="gd-trace-", suffix=".jsonl")
    os.close(fd)
    env = dict(os.environ, GPU_DOCTOR_TRACE=trace, **(extra_env or {}))
    argv = [python, "-m", "diagnostics", "run", "--json"] + ([] if generate else ["--no-generate"])
    start = time.time()
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=root, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    end = time.time()
    try:
        events = [json.loads(ln) for ln in Path(trace).read_text(encoding="utf-8").splitlines() if ln.strip()]
    finally:
        os.unlink(trace)
    try:
        report = json.loads(p.stdout)
    except ValueError:
        report = {}
    return {"wall": wall, "profile": profile(events, report, start, end), "rc": p.returncode,
            "verdict": report.get("verdict"),
            "gen_status": (report.get("generation") or {}).get("status")}


def profile(events: list[dict], report: dict, start: float, end: float) -> dict[str, float]:
    """Seconds from the spawn of the CLI to each milestone."""
    out: dict[str, float] = {}

    def mark(key: str, wall: float) -> None:
        out.setdefault(key, round(wall - start, 3))

    probe_end = 0.0
    for ev in events:
        w = ev.get("wall", start)
        kind, probe = ev.get("event"), ev.get("probe")
        if kind == "phase":
            mark(f"cli: {ev['phase']}", w)
        elif probe == "torch" and kind == "stage":
            mark(f"torch probe: {ev['stage']}", w)
        elif probe == "torch" and kind == "end":
            mark("torch probe: ended", w)
        elif probe == "generation" and kind == "stage":
            stage = str(ev["stage"]).split(" (")[0]
            mark(f"generation: {stage}", w)
        elif probe == "generation" and kind == "end":
            mark("generation: ended", w)
        if kind == "end" and probe != "generation":
            probe_end = max(probe_end, w)
    if probe_end:
        mark("all probes ended", probe_end)
    mark("process exited", end)
    gen = report.get("generation") or {}
    for k, v in (gen.get("stage_s") or {}).items():
        out[f"generation child, seconds in: {k}"] = v
    if gen.get("pycache_prefix"):   # the child kept its bytecode under the doctor's cache (child.bytecode_cache)
        out["generation child, bytecode under the doctor's cache (1 = yes)"] = 1
    for k in ("prewarm_s", "prewarm_wait_s"):   # the GPU pre-warm beside the transformers import, and its wait
        if isinstance(gen.get(k), (int, float)):
            out[f"generation child, {k}"] = gen[k]
    for k, v in ((report.get("generation") or {}).get("stage_cpu_s") or {}).items():
        out[f"generation child, CPU seconds in: {k}"] = v
    for p in report.get("probes") or []:
        out[f"probe seconds: {p['id']}"] = p.get("duration_s") or 0.0
    return out


def measure(python: str, rounds: int, base: Path | None = None, partial: Path | None = None) -> dict:
    fns = {"floor": lambda: t_floor(python), "run": lambda: t_cli(python, True),
           "run_nogen": lambda: t_cli(python, False)}
    if base is not None:  # another checkout's CLI in the same rounds: before/after under the same load
        fns["run@base"] = lambda: t_cli(python, True, root=base)
        fns["run_nogen@base"] = lambda: t_cli(python, False, root=base)
    kinds = list(fns)
    for k in kinds:  # warm-up: page cache, .pyc files, the built-in model built once
        fns[k]()
    res: dict[str, list[dict]] = {k: [] for k in kinds}
    for r in range(rounds):
        n = r % len(kinds)
        for k in kinds[n:] + kinds[:n]:
            res[k].append(fns[k]())
        if partial is not None:     # each finished round kept: a run cut short by a time limit still says something
            partial.write_text(json.dumps({"runs": res, "rounds_done": r + 1}, indent=1), encoding="utf-8")
    return res


def _load() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def torch_version(python: str) -> str:
    p = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    return p.stdout.strip() or "?"


def summarize(res: dict) -> dict:
    med = {k: statistics.median(x["wall"] for x in v) for k, v in res.items()}
    # each run's ratio to the floor of its own round, then the median of those (drift between rounds cancels)
    per_round = {k: [x["wall"] / f["wall"] for x, f in zip(v, res["floor"])] for k, v in res.items()}
    ratio = {k: statistics.median(v) for k, v in per_round.items()}
    prof: dict[str, dict[str, float]] = {}
    for k in [k for k in res if k != "floor"]:
        keys: dict[str, list[float]] = {}
        for x in res[k]:
            for m, v in x["profile"].items():
                keys.setdefault(m, []).append(v)
        prof[k] = {m: statistics.median(v) for m, v in keys.items()}
    return {"median": med, "ratio": ratio, "ratio_of_medians": {k: med[k] / med["floor"] for k in med},
            "profile": prof}


def render(res: dict, s: dict, python: str, load_before: str, load_after: str, base: str | None = None) -> str:
    rounds = len(res["floor"])
    lines = [f"Floor: `{FLOOR_CODE}` in a fresh `{python}` (torch {torch_version(python)}); {rounds} interleaved "
             f"rounds (order rotated each round) after one warm-up of each; {os.cpu_count()} CPUs, Python "
             f"{platform.python_version()}; load average before/after {load_before} / {load_after}.",
             "",
             "| what | median wall s | ratio to the floor (median of per-round ratios) | target | all runs, wall s |",
             "|---|---|---|---|---|"]
    for k in res:
        runs = ", ".join(f"{x['wall']:.2f}" for x in res[k])
        tgt = f"<= {TARGET[k]:.2f}: " + ("met" if s["ratio"][k] <= TARGET[k] else "NOT met") if k in TARGET else ""
        name = NAMES.get(k) or NAMES[k.split("@")[0]] + f", the CLI of `{base}`"
        lines.append(f"| {name} | {s['median'][k]:.2f} | {s['ratio'][k]:.2f} | {tgt} | {runs} |")
    gens = {x.get("gen_status") for x in res["run"]}
    lines += ["", f"Generation status in the full runs: {', '.join(sorted(str(g) for g in gens))}; verdicts: "
              f"{', '.join(sorted({str(x.get('verdict')) for x in res['run'] + res['run_nogen']}))}.", ""]
    for k in ("run", "run_nogen"):
        lines += [f"Profile of {NAMES[k]} (median seconds since the CLI was spawned; a stage's time is when its "
                  "record reached the parent):", "", "| milestone | s |", "|---|---|"]
        prof = s["profile"][k]
        for m, v in sorted(((m, v) for m, v in prof.items() if not m.startswith(("generation child", "probe seconds"))),
                           key=lambda kv: kv[1]):
            lines.append(f"| {m} | {v:.2f} |")
        inner = [(m, v) for m, v in prof.items() if m.startswith(("generation child", "probe seconds"))]
        if inner:
            lines += ["", "| inside (median s) | s |", "|---|---|"]
            for m, v in sorted(inner):
                lines.append(f"| {m} | {v:.2f} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--python", default=sys.executable, help="the diagnosed interpreter, also running the CLI")
    ap.add_argument("--write", help="put the figures under '## Whole run' in this Markdown file")
    ap.add_argument("--json", help="also write the raw runs here")
    ap.add_argument("--base", help="also time the CLI of this other checkout (e.g. the main branch) in the same "
                                   "rounds: before and after under the same load")
    args = ap.parse_args()
    lb = _load()
    res = measure(args.python, args.rounds, Path(args.base) if args.base else None,
                  Path(args.json) if args.json else None)
    s = summarize(res)
    out = render(res, s, args.python, lb, _load(), args.base)
    print(out)
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": res, "summary": s}, indent=1), encoding="utf-8")
    if args.write:
        from doc import replace_section

        replace_section(Path(args.write), "## Whole run",
                        f"## Whole run\n\nProduced by `bench/bench_run.py`, measured {time.strftime('%Y-%m-%d %H:%M')} "
                        f"UTC (`python {' '.join(sys.argv)}`).\n\n{out}")


if __name__ == "__main__":
    main()
