"""Does the web server stay responsive to other visitors while one visitor uploads and diagnoses a 64 MB log?

Real parts: `python -m diagnostics serve` (the e2e fixture's Server), Debian chromium driven by Playwright.
Visitor A opens the Diagnose page, uploads a 64 MB log through its uploader and starts the diagnosis.  Visitor
B (a second browser context, its own Streamlit session) meanwhile loads the Knowledge base page again and again
and times each load from navigation to its heading on screen.  B's load time alone (no upload) is measured in
the same run, before A starts, so the ratio compares like with like on the same machine.

    python bench/bench_upload.py [--mb 64] [--baseline 5] [--write docs/BENCHMARKS.md]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, Server  # noqa: E402

HEADING = "## Responsiveness during a 64 MB upload"

# an ordinary training log with the error a ROCm user pastes in it (the lines of tests/e2e's hip error journey)
FILLER = ("2024-05-01 12:00:{s:02d} INFO step {n} loss 0.{n:04d} lr 1e-4 tokens/s 5321.2 rank 0 worker ok\n")
ERROR = ('RuntimeError: HIP error: hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n'
         'HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below '
         'might be incorrect.\n')


def make_log(path: Path, mb: int) -> int:
    target = mb * 1000 * 1000 - 65536  # the uploader's own limit (server.maxUploadSize 64) counts 10^6-byte MB
    block = "".join(FILLER.format(s=i % 60, n=i) for i in range(2000)).encode()
    with open(path, "wb") as f:
        written = 0
        f.write(ERROR.encode())
        written += len(ERROR)
        while written + len(block) <= target - len(ERROR):
            f.write(block)
            written += len(block)
        f.write(ERROR.encode())
        written += len(ERROR)
    return written


def load_kb(page, url: str) -> float:
    """Seconds from navigation to the Knowledge base heading on screen."""
    t0 = time.monotonic()
    page.goto(url + "/knowledge-base", wait_until="commit")
    page.get_by_role("heading", name="Knowledge base").wait_for(timeout=180_000)
    return time.monotonic() - t0


def kb_search_works(page) -> bool:
    """Type a search on the other visitor's page and see an entry found (the page runs, not only renders)."""
    box = page.get_by_role("textbox", name="Search symptoms, error text or ids")
    box.fill("invalid device function")
    box.press("Enter")
    # the ranked caption shows only for a query that ran; the entry list is one Markdown block (one match)
    page.get_by_text("Best match first", exact=False).wait_for(timeout=180_000)
    page.get_by_role("link", name="invalid device function", exact=False).first.wait_for(timeout=180_000)
    return True


def server_peak_mb(pid: int) -> float | None:
    """Peak resident memory of the server process (VmHWM), MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run(mb: int = 64, baseline_n: int = 5, search: bool = False, timeout_s: float = 600, browser=None) -> dict:
    """Run the scenario once; returns the timings (seconds) and what visitor A saw.  *browser*: a Playwright browser
    already running in this thread (the test suite's), else one is launched for the run."""
    import contextlib

    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="gd-upload-"))
    log = tmp / "big.log"
    size = make_log(log, mb)
    srv = Server(tmp)
    out: dict = {"bytes": size, "startup_s": srv.startup_s, "baseline": [], "upload": [], "diagnose": [],
                 "searches_during": 0}
    try:
        with contextlib.ExitStack() as stack:
            if browser is None:
                pw = stack.enter_context(sync_playwright())
                br = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                stack.callback(br.close)
            else:
                br = browser
            ctx_a = br.new_context(viewport={"width": 1440, "height": 900})
            ctx_b = br.new_context(viewport={"width": 1440, "height": 900})
            a, b = ctx_a.new_page(), ctx_b.new_page()
            a.set_default_timeout(180_000)
            b.set_default_timeout(180_000)
            load_kb(b, srv.url)  # warm: the first load of a page also fetches Streamlit's scripts
            for _ in range(baseline_n):
                out["baseline"].append(load_kb(b, srv.url))
            a.goto(srv.url + "/")
            a.locator('[data-testid="stMain"] h1').wait_for()
            a.get_by_role("tab", name="Paste logs or dumps").click()
            # the end of the upload is the server's answer to the file's PUT (the chip alone shows up at once, and
            # a click before the answer diagnoses nothing: "Paste some text or upload a file first.")
            sent: dict = {}

            def on_response(resp) -> None:
                if "/_stcore/upload_file" in resp.url and resp.request.method == "PUT":
                    sent["at"] = time.monotonic()
                    sent["status"] = resp.status

            a.on("response", on_response)
            t_up = time.monotonic()
            a.locator('[data-testid="stFileUploader"] input[type=file]').set_input_files(str(log))
            # the upload runs in A's page; B loads while it does, A is polled between B's loads
            uploaded = a.locator('[data-testid="stFileChipName"]', has_text="big.log")
            done = a.get_by_text("Diagnosis of the pasted text")
            too_early = a.get_by_text("Paste some text or upload a file first.")
            clicked = None
            out["clicks"] = 0
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if clicked is not None and too_early.count():  # the click still came before the file: again
                    clicked = None
                if clicked is None and "at" in sent and uploaded.count():
                    out["upload_s"] = sent["at"] - t_up
                    out["upload_status"] = sent.get("status")
                    a.get_by_role("button", name="Diagnose the pasted text").click()
                    clicked = time.monotonic()
                    out["clicks"] += 1
                if clicked is not None and done.count():
                    out["diagnose_s"] = time.monotonic() - clicked
                    break

                if clicked is None and a.locator('[data-testid="stFileChipIconError"]').count():
                    out["upload_error"] = a.locator('[data-testid="stFileChip"]').inner_text()
                    break
                phase = "upload" if clicked is None else "diagnose"
                out[phase].append(load_kb(b, srv.url))
                print(f"{time.monotonic() - t_up:7.1f} s  A: {phase:8s}  B's load {out[phase][-1]:.2f} s", flush=True)
                if search and kb_search_works(b):
                    out["searches_during"] += 1
            out["a_finished"] = done.count() > 0
            out["a_text"] = a.locator('[data-testid="stMain"]').inner_text()[:4000] if out["a_finished"] else ""
            out["server_peak_mb"] = server_peak_mb(srv.proc.pid)
            ctx_a.close()
            ctx_b.close()
    finally:
        srv.stop()
        out["server_log"] = (tmp / "server.log").read_text(errors="replace")[-4000:]
        log.unlink(missing_ok=True)
    return out


def _fmt(xs: list[float]) -> str:
    if not xs:
        return "none"
    return f"{statistics.median(xs):.2f} s (max {max(xs):.2f}, n={len(xs)})"


def table(r: dict, mb: int) -> str:
    base = statistics.median(r["baseline"])
    during = r["upload"] + r["diagnose"]
    load = os.getloadavg()[0]
    lines = [HEADING, "",
             f"Produced by `python bench/bench_upload.py --write docs/BENCHMARKS.md` (issue 16; x86_64, "
             f"{os.cpu_count()} CPUs shared with other work, Python {platform.python_version()}, run "
             f"{time.strftime('%Y-%m-%d')}). Visitor A uploads a {r['bytes'] / 2**20:.0f} MB log through the "
             "Diagnose page's uploader (Debian chromium, Playwright) and starts the diagnosis; visitor B, a second "
             "browser context, loads the Knowledge base page again and again, timed from navigation to its heading "
             "on screen. B's load time without the upload is measured in the same run, before A starts. "
             f"Load average (1 min) at the end: {load:.1f}.", "",
             "| B's Knowledge base load | median (max, count) | median ÷ without upload |",
             "|---|---|---|",
             f"| without the upload | {_fmt(r['baseline'])} | 1.00 |"]
    for name, key in (("while A's upload is sent", "upload"), ("while A's diagnosis runs", "diagnose")):
        xs = r[key]
        ratio = f"{statistics.median(xs) / base:.2f} (max {max(xs) / base:.2f})" if xs else "n/a"
        lines.append(f"| {name} | {_fmt(xs)} | {ratio} |")
    lines += ["",
              f"A's upload took {r.get('upload_s', float('nan')):.1f} s, its diagnosis "
              f"{r.get('diagnose_s', float('nan')):.1f} s ({'finished' if r.get('a_finished') else 'NOT finished'}); "
              f"B completed {len(during)} loads meanwhile. Server peak resident memory: "
              f"{r.get('server_peak_mb') or 0:.0f} MB."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--baseline", type=int, default=5)
    ap.add_argument("--write", metavar="BENCHMARKS_MD")
    ap.add_argument("--timeout", type=float, default=900, help="seconds A may take to upload and diagnose")
    args = ap.parse_args()
    r = run(args.mb, args.baseline, timeout_s=args.timeout)
    text = table(r, args.mb)
    print(text)
    if not r.get("a_finished"):
        print(r["server_log"], file=sys.stderr)
    if args.write and r.get("a_finished"):
        from bench.doc import replace_section

        replace_section(args.write, HEADING, text)
    return 0 if r.get("a_finished") else 1


if __name__ == "__main__":
    sys.exit(main())
