"""The web app in a real browser against the floor, in one run (issue 19).

  python bench/bench_ui.py [--rounds 3] [--json FILE] [--write docs/BENCHMARKS.md]

Each round, interleaved so that every measure meets the same machine load:

- floor: ``import torch; torch.cuda.is_available()`` in a fresh interpreter (the one the app diagnoses);
- cold start of the app as ``scripts/app.sh`` starts it (``python -m diagnostics serve``, an empty SQLite
  database, Streamlit's file watcher off as a served tool runs), timed from the spawn: the first page's HTML
  served (``GET /``) and the first page rendered in the browser (the Diagnose title shown);
- on that server, in a fresh tab each: press "Run diagnosis" without the test generation and time the click
  to the verdict on screen; then with the test generation (the built-in model, cached) and time the click to
  the checks' verdict (shown while the generation still runs) and to the full report.

The browser is Debian chromium (/usr/bin/chromium, or GPU_DOCTOR_CHROMIUM) driven by Playwright, started once
before the rounds (its own start is not counted); no browser is ever downloaded.  The probes run for real on
this machine (the app diagnoses its own interpreter), so the verdict times include the real torch import.
Targets: first page served and rendered <= 1.5 s; probe verdict <= 1.5x the floor after pressing Run.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_app import TITLE, WATCHER_OFF, _get, launch_browser, start_server, stop_server, wait_until  # noqa: E402

FLOOR_CODE = "import torch; torch.cuda.is_available()"
VERDICT = ".st-key-gd_verdict_early, .st-key-gd_verdict"    # the checks' verdict, early or in the full report
FULL = ".st-key-gd_verdict"                                  # the full report's headline
TARGET_PAGE_S = 1.5
TARGET_VERDICT = 1.5


def t_floor(python: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([python, "-c", FLOOR_CODE], check=True, capture_output=True)
    return time.perf_counter() - t0


def fresh_tab(browser, url: str):
    page = browser.new_page()
    page.goto(url + "/")
    page.get_by_role("heading", name=TITLE).wait_for(timeout=60_000)
    return page


def press_run(browser, url: str, generate: bool) -> dict:
    page = fresh_tab(browser, url)
    try:
        if generate:
            page.get_by_text("Also run a test generation with a small model").click()
        t0 = time.perf_counter()
        page.get_by_role("button", name="Run diagnosis").click()
        page.locator(VERDICT).first.wait_for(timeout=300_000)
        row = {"verdict_s": time.perf_counter() - t0,
               "early": page.locator(".st-key-gd_verdict_early").count() > 0}
        # the headline's text (the alert's icon is a ligature word such as "report" on its own line)
        row["verdict_text"] = page.locator(VERDICT).first.inner_text().split("\n\n", 1)[-1][:200]
        if generate:
            page.locator(FULL).first.wait_for(timeout=300_000)
            row["full_s"] = time.perf_counter() - t0
        return row
    finally:
        page.close()


def one_round(browser, python: str, tmp: str) -> dict:
    row: dict = {"floor_s": t_floor(python)}
    proc, url, t0 = start_server(tmp, WATCHER_OFF)
    try:
        wait_until(lambda: _get(url + "/") == 200)
        row["http_s"] = time.perf_counter() - t0
        page = browser.new_page()
        page.goto(url + "/", wait_until="load")
        page.get_by_role("heading", name=TITLE).wait_for(timeout=60_000)
        row["render_s"] = time.perf_counter() - t0
        page.close()
        row["run_nogen"] = press_run(browser, url, generate=False)
        row["run_gen"] = press_run(browser, url, generate=True)
    finally:
        stop_server(proc)
    row["floor_after_s"] = t_floor(python)
    return row


def summarize(rows: list[dict]) -> dict:
    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    # each run's ratio to the floor of its own round (the mean of the floors taken before and after it)
    fl = [(r["floor_s"] + r["floor_after_s"]) / 2 for r in rows]
    return {
        "floor_s": med(fl), "http_s": med([r["http_s"] for r in rows]), "render_s": med([r["render_s"] for r in rows]),
        "nogen_verdict_s": med([r["run_nogen"]["verdict_s"] for r in rows]),
        "gen_verdict_s": med([r["run_gen"]["verdict_s"] for r in rows]),
        "gen_full_s": med([r["run_gen"]["full_s"] for r in rows]),
        "nogen_verdict_ratio": med([r["run_nogen"]["verdict_s"] / f for r, f in zip(rows, fl)]),
        "gen_verdict_ratio": med([r["run_gen"]["verdict_s"] / f for r, f in zip(rows, fl)]),
        "gen_full_ratio": med([r["run_gen"]["full_s"] / f for r, f in zip(rows, fl)]),
        "early_shown": [r["run_gen"]["early"] for r in rows],
    }


def render(rows: list[dict], s: dict, python: str, loads: tuple[str, str]) -> str:
    def runs(fn):
        return ", ".join(f"{fn(r):.2f}" for r in rows)

    def met(v: float, tgt: float, unit: str = "") -> str:
        return f"<= {tgt:g}{unit}: " + ("met" if v <= tgt else "NOT met")

    lines = [
        f"Floor: `{FLOOR_CODE}` in a fresh `{python}`, before and after each round; {len(rows)} rounds; "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; load average before/after "
        f"{loads[0]} / {loads[1]}. Browser: Debian chromium through Playwright, started once beforehand.", "",
        "| measure | median | ratio to the floor (median of per-round ratios) | target | all rounds, s |",
        "|---|---|---|---|---|",
        f"| floor (mean of the two in a round) | {s['floor_s']:.2f} s | 1.00 | | "
        f"{runs(lambda r: (r['floor_s'] + r['floor_after_s']) / 2)} |",
        f"| cold start: first page's HTML served | {s['http_s']:.2f} s | | {met(s['http_s'], TARGET_PAGE_S, ' s')} | "
        f"{runs(lambda r: r['http_s'])} |",
        f"| cold start: first page rendered (title shown) | {s['render_s']:.2f} s | | "
        f"{met(s['render_s'], TARGET_PAGE_S, ' s')} | {runs(lambda r: r['render_s'])} |",
        f"| Run pressed -> verdict shown (no test generation) | {s['nogen_verdict_s']:.2f} s | "
        f"{s['nogen_verdict_ratio']:.2f} | {met(s['nogen_verdict_ratio'], TARGET_VERDICT)} | "
        f"{runs(lambda r: r['run_nogen']['verdict_s'])} |",
        f"| Run pressed (with test generation) -> checks' verdict shown | {s['gen_verdict_s']:.2f} s | "
        f"{s['gen_verdict_ratio']:.2f} | {met(s['gen_verdict_ratio'], TARGET_VERDICT)} | "
        f"{runs(lambda r: r['run_gen']['verdict_s'])} |",
        f"| Run pressed (with test generation) -> full report shown | {s['gen_full_s']:.2f} s | "
        f"{s['gen_full_ratio']:.2f} | | {runs(lambda r: r['run_gen']['full_s'])} |",
        "",
        "With the test generation, the checks' verdict was shown before the full report in "
        f"{sum(s['early_shown'])} of {len(rows)} rounds. Verdict shown: "
        f"{rows[-1]['run_gen']['verdict_text']!r}.",
    ]
    return "\n".join(lines) + "\n"


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", default=sys.executable, help="the interpreter of the floor (the app diagnoses "
                                                             "its own, sys.executable)")
    ap.add_argument("--json", help="also write the raw rounds here")
    ap.add_argument("--write", help="put the figures under '## Web app against the floor' in this Markdown file")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    lb = _load()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = launch_browser(pw)
        if browser is None:
            print("no chromium: nothing measured", file=sys.stderr)
            return 2
        t_floor(args.python)  # warm-up: page cache, .pyc files
        for _ in range(args.rounds):
            rows.append(one_round(browser, args.python, tmp))
        browser.close()
    s = summarize(rows)
    out = render(rows, s, args.python, (lb, _load()))
    print(out)
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": rows, "summary": s}, indent=1), encoding="utf-8")
    if args.write:
        from doc import replace_section

        replace_section(Path(args.write), "## Web app against the floor",
                        f"## Web app against the floor\n\nProduced by `bench/bench_ui.py`, measured "
                        f"{time.strftime('%Y-%m-%d %H:%M')} UTC (`python {' '.join(sys.argv)}`).\n\n{out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
