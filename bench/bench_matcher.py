"""Matcher throughput: MB/s over realistic noisy logs, its growth with log size and with KB size.

Run: .venv/bin/python bench/bench_matcher.py [--write docs/BENCHMARKS.md]
The log is built from real-looking noise (progress bars, warnings, tracebacks) with a few real error lines.
Reports MB/s at 1, 10 and 50 MB, and the 10 MB time against the whole KB vs a KB of a quarter and a half of it,
plus the floor: one RE2 pass of a single literal over the same text (the least any scan can cost).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import re2  # noqa: E402

from diagnostics.kb import KnowledgeBase, load_kb  # noqa: E402
from diagnostics.matcher import Matcher  # noqa: E402

NOISE = [
    "Loading checkpoint shards:  {p}%|█████     | {i}/8 [00:0{i}<00:0{j}, 1.2{i}it/s]",
    "/usr/lib/python3/dist-packages/torch/nn/modules/module.py:{i}: UserWarning: TypedStorage is deprecated",
    "  File \"/home/user/project/train.py\", line {i}, in <module>",
    "INFO:root:step {i} loss={p}.{j} lr=3e-05 tokens/s=1{p}",
    "MIOpen(HIP): Warning [SQLiteBase] Missing system database file: gfx1030_30.kdb Performance may degrade.",
    "[2024-05-0{j} 12:0{i}:3{j}] WARNING: {p} layers offloaded",
]
ERRORS = [
    "\"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\"",
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.98 GiB",
]


def make_log(size: int, seed: int = 1) -> str:
    rnd = random.Random(seed)
    parts, n = [], 0
    while n < size:
        line = rnd.choice(NOISE).format(i=rnd.randint(1, 9), j=rnd.randint(1, 9), p=rnd.randint(10, 99))
        parts.append(line)
        n += len(line) + 1
    for e in ERRORS:
        parts.insert(rnd.randrange(len(parts)), e)
    return "\n".join(parts)


def best_of(fn, n=3) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", help="append the figures to this Markdown file's '## Matcher' section")
    args = ap.parse_args()
    kb = load_kb()
    full = Matcher(kb)
    patterns = len(full.scan.patterns)
    rows = []
    for mb in (1, 10, 50):
        text = make_log(mb * 1024 * 1024)
        t = best_of(lambda: full.match({}, [("log", text)]))
        floor = re2.compile("hipErrorNoBinaryForGpu")
        tf = best_of(lambda: floor.search(text) and None)
        rows.append((mb, t, mb / t, t / tf if tf else float("nan")))
    text10 = make_log(10 * 1024 * 1024)
    kb_rows = []
    for frac in (0.25, 0.5, 1.0):
        sub = KnowledgeBase(kb.entries[: max(1, int(len(kb.entries) * frac))], [])
        m = Matcher(sub)
        t = best_of(lambda: m.match({}, [("log", text10)]))
        kb_rows.append((len(sub.entries), len(m.scan.patterns), t))
    res = full.match({}, [("log", text10)])
    top = [d["id"] for d in res["diagnoses"][:3]]
    lines = [f"KB: {len(kb.entries)} entries, {patterns} distinct log patterns; top hits on the 10 MB log: {top}", "",
             "| log size | time (best of 3) | throughput | vs one-literal RE2 floor |", "|---|---|---|---|"]
    lines += [f"| {mb} MB | {t * 1000:.0f} ms | {mbps:.0f} MB/s | {ratio:.1f}x |" for mb, t, mbps, ratio in rows]
    lines += ["", "| KB entries | patterns | 10 MB log |", "|---|---|---|"]
    lines += [f"| {n} | {p} | {t * 1000:.0f} ms |" for n, p, t in kb_rows]
    out = "\n".join(lines)
    print(out)
    if args.write:
        write_section(Path(args.write), "## Matcher", out + "\n")


def write_section(path: Path, heading: str, body: str) -> None:
    from doc import replace_section

    replace_section(path, heading, f"{heading}\n\nMeasured {time.strftime('%Y-%m-%d')} on this project's 2-core machine "
                                   f"(`python {' '.join(sys.argv)}`).\n\n{body}")




if __name__ == "__main__":
    main()
