"""Every text path on hostile and ordinary text: time and peak memory as the input grows (issue 16).

Each (path, input kind, size) runs in a fresh child process: the input is built, Linux's peak-RSS mark is reset
(``/proc/self/clear_refs``), the path runs once, and the child reports wall time and the growth of its peak RSS
over what it held before (the input itself included in the base).  The acceptance bar of issue 16: time linear
in the size (seconds per MB flat as the size grows) and peak growth <= 3x the input + a fixed base.

Paths:  redact (the one redaction engine: every save, import, export and share preview runs it), normalise
        (textnorm.clean_log: what the matcher and the parsers read), prefixes (textnorm.strip_prefixes alone),
        save (Store.save of a report holding the text, SQLite file or --db postgresql), export (`sessions export`:
        Store.write_bundle of that session to a file), bundle (Store.export_bundle: the bundle as bytes, the session
        and its checksum; the form with the Markdown and HTML renderings, about 3x the text, is only written to a
        file: export-full),
        download (the web UI's bundle button: its callable, Store.export_bundle, then what Streamlit does with the
        result: convert_data_to_bytes_and_infer_mime and the media store, behind ui.media_guard),
        markdown / html (Store.export_markdown / export_html),
        fold (symptoms.normalize: NFKC + casefold of pasted prose), match (service.diagnose_text: the whole
        `match --log` / UI paste path: dump detection, the KB matcher, the symptom lexicon), terminal (the
        CLI's output sanitiser), import (parse_bundle of a bundle holding the text; bundles stop at 20 MB),
        export-full (`sessions export --with-reports` to a file: Store.write_bundle with reports=True),
        import-same (Store.import_bundle_ex of the stored session's own bundle: the duplicate check finds it),
        import-clash (Store.import_bundle_ex of a small bundle carrying the id of the stored session: the duplicate
        check meets the long stored report), refresh (Store.refresh_fleet: one session's fleet rows derived again
        from its stored report), refresh-all (stats.refresh: every session's), stats (`sessions stats` and
        `sessions unexplained`: stats.overview and stats.unexplained over the store holding that session),
        rediagnose (`sessions rediagnose ID`: sessions.rediagnose_session, today's KB over the stored session; the
        session, saved without a KB version, is restamped: replace_report), rediagnose-again (the same a second
        time: nothing changes, its fleet rows are refreshed: refresh_fleet).
        --bundle-limit MB raises the 20 MB import limit in the child, to measure import paths beyond it.
Inputs: log (ordinary log lines), digits (lines of digits), cjk (pasted Chinese prose with full-width letters),
        hostile (`Authorization:` + spaces, unclosed quoted secrets, token-shaped runs, escape sequences).

    python bench/bench_text.py                          # 1, 4, 16, 64 MB; prints a table
    python bench/bench_text.py --sizes 1 4 --write docs/BENCHMARKS.md
    python bench/bench_text.py --paths terminal --kinds hostile --cpu   # CPU seconds, linearity by CPU time
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATHS = ("redact", "fold", "normalise", "prefixes", "match", "terminal", "save", "export", "bundle", "download",
         "markdown", "html", "import", "export-full", "import-same", "import-clash", "refresh", "refresh-all", "stats",
         "rediagnose", "rediagnose-again")
STORE_PATHS = ("save", "export", "bundle", "download", "markdown", "html", "export-full", "import-same",
               "import-clash", "refresh", "refresh-all", "stats", "rediagnose", "rediagnose-again")
KINDS = ("log", "digits", "cjk", "hostile", "escaped")

LINES = {
    "log": "2024-05-01 12:00:00 INFO step 1234 loss 0.123 lr 1e-4 tokens/s 5321.2 some filler text here ok\n",
    "digits": "1234567890" * 8 + "\n",
    "cjk": "显卡 报错 了，怎么 办？ ｈｉｐ ＥＲＲＯＲ：ｍｅｍｏｒｙ 一 二 三 四 五\n",
    "hostile": ("Authorization:" + " " * 200 + "\nPASSWORD=\"x PASSWORD=\"y " + "hf_" + "a" * 40
                + " \x1b]52;c;AAAA\x07 &#106;avascript: 0x" + "f" * 60 + "\n"),
    # docker's json-file log: every line a quoted string, so the matcher also scans each line decoded
    # (textnorm.escaped_readings): the largest appendix a log can make
    "escaped": ('{"log":"2024-05-01 12:00:00 INFO step 1234 loss 0.123 lr 1e-4 \\"tokens/s\\" 5321.2\\n",'
                '"stream":"stderr","time":"2024-05-01T12:00:00.000000000Z"}\n'),
}


def child(path: str, kind: str, mb: int) -> dict:
    import gc
    import time

    sys.path.insert(0, str(ROOT))
    from diagnostics import service
    from diagnostics.redact import redact_text
    from diagnostics.store import bundle as bundle_mod
    from diagnostics.store.bundle import build_bundle, parse_bundle
    from diagnostics.symptoms import load_lexicon, normalize
    from diagnostics.termsafe import clean
    from diagnostics.textnorm import clean_log, strip_prefixes

    if os.environ.get("BENCH_TEXT_BUNDLE_LIMIT"):  # --bundle-limit: import measured beyond the 20 MB limit
        bundle_mod.MAX_BUNDLE_BYTES = int(os.environ["BENCH_TEXT_BUNDLE_LIMIT"]) * 2**20
    MAX_BUNDLE_BYTES = bundle_mod.MAX_BUNDLE_BYTES
    service.get_kb()
    load_lexicon()
    line = LINES[kind]
    size = mb * 1024 * 1024
    text = line * max(1, size // len(line.encode()))
    arg: object = text
    if path == "import":
        if size > MAX_BUNDLE_BYTES:  # the bundle holds the text once (more where JSON escapes characters)
            return {"skipped": f"bundles stop at {MAX_BUNDLE_BYTES // 2**20} MB"}
        arg = build_bundle({"session_id": "", "logs": [{"name": "x", "text": text}]})
        if len(arg) > MAX_BUNDLE_BYTES:  # type: ignore[arg-type]
            return {"skipped": f"bundles stop at {MAX_BUNDLE_BYTES // 2**20} MB"}
    if path in STORE_PATHS:
        import tempfile

        from diagnostics.store import Store

        tmp = tempfile.mkdtemp(prefix="bench_text_")
        store = Store(os.environ.get("BENCH_TEXT_DB") or f"sqlite:///{tmp}/s.db")
        report = {"session_id": "", "host": "bench", "logs": [{"name": "pasted", "text": text}]}
        if path == "save":
            store.save({"host": "warm-up"})
            arg = report
        else:
            arg = store.save(report)
            del report
        if path == "import-same":  # the bundle of the stored session, imported again: found as a duplicate
            arg = store.export_bundle(str(arg))
            if len(arg) > MAX_BUNDLE_BYTES:  # type: ignore[arg-type]
                return {"skipped": f"bundles stop at {MAX_BUNDLE_BYTES // 2**20} MB"}
        elif path == "import-clash":  # a small, different session under the stored session's id
            arg = build_bundle({"session_id": arg, "host": "other", "logs": [{"name": "x", "text": "small"}]})
        elif path == "rediagnose-again":  # diagnosed with today's KB once already: the second finds nothing new
            _rediagnose(store, str(arg))
    from diagnostics.store import stats as fleet

    fn = {"redact": redact_text, "fold": normalize, "terminal": clean, "import": parse_bundle,
          "normalise": clean_log, "prefixes": strip_prefixes,
          "save": lambda r: store.save(r), "bundle": lambda sid: store.export_bundle(sid),
          "export": lambda sid: _export_to_file(store, sid, f"{tmp}/out.json"),
          "download": _download(store) if path == "download" else None,
          "markdown": lambda sid: store.export_markdown(sid), "html": lambda sid: store.export_html(sid),
          "match": lambda t: service.diagnose_text(logs=[("pasted", t)]),
          "export-full": lambda sid: _export_to_file(store, sid, f"{tmp}/out.json", reports=True),
          "import-same": lambda data: store.import_bundle_ex(data),
          "import-clash": lambda data: store.import_bundle_ex(data),
          "refresh": lambda sid: store.refresh_fleet(sid), "refresh-all": lambda sid: fleet.refresh(store),
          "stats": lambda sid: (fleet.overview(store), fleet.unexplained(store)),
          "rediagnose": lambda sid: _rediagnose(store, sid),
          "rediagnose-again": lambda sid: _rediagnose(store, sid)}[path]
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak-RSS mark to the current RSS

    def rss(field: str) -> int:
        with open("/proc/self/status") as f:
            for ln in f:
                if ln.startswith(field):
                    return int(ln.split()[1]) * 1024
        return 0

    base = rss("VmRSS:")
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(arg)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = rss("VmHWM:")
    del out
    # the input of import is the bundle file (of import-clash: the stored session it meets)
    n = len(arg) if isinstance(arg, bytes) and path != "import-clash" else len(text.encode())
    if path in STORE_PATHS:
        import shutil

        store.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"bytes": n, "seconds": dt, "cpu_seconds": cpu, "peak_growth": max(0, peak - base)}


def _download(store: object) -> object:
    """The UI's bundle download, as Streamlit 1.67 runs a deferred download button's callable on a click: the
    callable (Store.export_bundle), Streamlit's conversion of what it returns, the media store behind ui.media_guard.
    Streamlit is imported here, before the measurement."""
    from streamlit.runtime.download_data_util import convert_data_to_bytes_and_infer_mime
    from streamlit.runtime.media_file_storage import MediaFileKind
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    from ui import media_guard

    storage = MemoryMediaFileStorage("/media")
    media_guard.install(storage)

    def click(sid: str) -> object:
        data = (lambda: store.export_bundle(sid, mask_identity=False))()  # type: ignore[attr-defined]
        data, _ = convert_data_to_bytes_and_infer_mime(data, unsupported_error=TypeError("download data"))
        fid = storage.load_and_get_id(data, "application/json", MediaFileKind.DOWNLOADABLE, "session.json")
        return storage.get_file(fid + ".json")

    return click


def _rediagnose(store: object, sid: str) -> object:
    from diagnostics.sessions import rediagnose_session

    return rediagnose_session(store, sid)  # type: ignore[arg-type]


def _export_to_file(store: object, sid: str, out: str, reports: bool = False) -> int:
    with open(out, "wb") as fp:
        return store.write_bundle(sid, fp, reports=reports)  # type: ignore[attr-defined]


def run_one(path: str, kind: str, mb: int, timeout: float) -> dict:
    try:
        p = subprocess.run([sys.executable, __file__, "--child", path, kind, str(mb)], capture_output=True,
                           text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", nargs="+", type=int, default=[1, 4, 16, 64], help="input sizes in MB")
    ap.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--cpu", action="store_true", help="print CPU seconds too, and the s/MB ratio of CPU time (on a "
                    "shared machine wall time swings with the load; CPU time much less)")
    ap.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite",
                    help="the database of the store paths (save, export, bundle, download, markdown, html): a SQLite "
                    "file per run, or a fresh database per run on a throw-away PostgreSQL server (tests/pgserver.py)")
    ap.add_argument("--bundle-limit", type=int, metavar="MB", help="raise the import limit of bundles (20 MB) to "
                    "this many MB in the children, to measure the import paths beyond it")
    ap.add_argument("--write", metavar="MD", help="replace the '## Text paths' section of this file")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], int(args.child[2]))))
        return 0
    if args.bundle_limit:
        os.environ["BENCH_TEXT_BUNDLE_LIMIT"] = str(args.bundle_limit)
    server = None
    if args.db == "postgresql":
        sys.path.insert(0, str(ROOT))
        from tests.pgserver import PgServer, find_bindir

        bindir = find_bindir()
        if bindir is None:
            ap.error("--db postgresql needs the PostgreSQL server binaries (initdb, pg_ctl); set PG_BINDIR")
        server = PgServer(bindir)
        server.start()
    try:
        rows = _run_all(args, server)
    finally:
        if server is not None:
            server.stop()
    if args.write:
        _write(args, rows)
    return 0


def _run_all(args: argparse.Namespace, server: object) -> list:
    import uuid

    rows = []
    for path in args.paths:
        for kind in args.kinds:
            res = {}
            for mb in args.sizes:
                if server is not None:  # a fresh, empty database for each run
                    os.environ["BENCH_TEXT_DB"] = server.create_database("b_" + uuid.uuid4().hex[:16])  # type: ignore[attr-defined]
                res[mb] = run_one(path, kind, mb, args.timeout)
            cells = []
            worst_mem = 0.0
            per_mb = []
            for mb in args.sizes:
                r = res[mb]
                if "seconds" in r:
                    mbs = r["bytes"] / 2**20
                    per_mb.append((r["cpu_seconds"] if args.cpu else r["seconds"]) / mbs)
                    growth = r["peak_growth"] / r["bytes"]
                    if mb == max(m for m in args.sizes if "seconds" in res[m]):
                        worst_mem = growth
                    cpu = f" (CPU {r['cpu_seconds']:.2f} s)" if args.cpu else ""
                    cells.append(f"{r['seconds']:.2f} s{cpu} / {r['peak_growth'] / 2**20:.0f} MB")
                else:
                    cells.append(r.get("skipped") or r.get("error", "?"))
            lin = f"{per_mb[-1] / per_mb[0]:.2f}" if len(per_mb) > 1 and per_mb[0] > 0 else "-"
            rows.append((path, kind, cells, lin, worst_mem))
            print(f"{path:9} {kind:8} " + " | ".join(cells) + f" | s/MB last/first {lin} | peak {worst_mem:.2f}x",
                  flush=True)
    return rows


def _write(args: argparse.Namespace, rows: list) -> None:
    if args.db != "sqlite":  # the table is the SQLite one; PostgreSQL figures go to their own section by hand
        print("--write keeps the SQLite table: PostgreSQL figures are not written", file=sys.stderr)
        return
    head = "| path | input | " + " | ".join(f"{mb} MB: time / peak growth" for mb in args.sizes) + \
           " | s/MB largest ÷ smallest | peak growth ÷ input (largest) |"
    sep = "|" + "---|" * (4 + len(args.sizes))
    fresh = {(p, k): f"| {p} | {k} | " + " | ".join(c) + f" | {lin} | {m:.2f}x |" for p, k, c, lin, m in rows}
    # rows of paths not run this time stay as they were (same sizes only); the order is PATHS x KINDS
    old_rows: dict = {}
    doc = Path(args.write)
    if doc.exists():
        sec = doc.read_text(encoding="utf-8").split("## Text paths\n", 1)[-1].split("\n## ", 1)[0]
        for ln in sec.splitlines():
            cells = [c.strip() for c in ln.strip().strip("|").split("|")]
            if ln.startswith("| ") and len(cells) == 4 + len(args.sizes) and cells[0] in PATHS:
                old_rows[(cells[0], cells[1])] = ln
    body = "\n".join(fresh.get((p, k)) or old_rows[(p, k)] for p in PATHS for k in KINDS
                     if (p, k) in fresh or (p, k) in old_rows)
    cpu = platform.processor() or platform.machine()
    section = (
        "## Text paths\n\n"
        "`python bench/bench_text.py --write docs/BENCHMARKS.md` (issue 16): every path that takes user text, on "
        "ordinary and hostile input, each run in a fresh child process; *peak growth* is how far the peak RSS "
        "rose above what the process held with the input already built. Bar: time linear (the s/MB ratio near "
        "1 or below) and peak growth <= 3x the input plus a fixed base (the base shows at 1 MB). "
        f"Measured on {os.cpu_count()} CPU(s) ({cpu}), shared with other work, so single figures are noisy.\n\n"
        + head + "\n" + sep + "\n" + body + "\n")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from doc import replace_section

    replace_section(args.write, "## Text paths", section)


if __name__ == "__main__":
    sys.exit(main())
