"""Benchmark of the fleet view (diagnostics/store/stats.py) at 10,000 and 100,000 sessions, on SQLite (a file,
WAL) and on PostgreSQL (a real server started like the tests do). Each view must answer in <= 300 ms.

    .venv/bin/python bench/bench_fleet.py                 # both backends, 10k and 100k; writes docs/BENCHMARKS.md
    .venv/bin/python bench/bench_fleet.py --sizes 10000 --backends sqlite --no-write

The sessions are the realistic fleet of tests/fleet.py (real user logs from tests/eval/tuning on machines parsed
from the dump fixtures, diagnosed by the real service) spread over 300 hosts and a year; seeding bulk-inserts
the sessions rows and their fleet rows (derived by stats.derive_rows, as save() does). What is timed is the public
stats API, the median of 5 calls after one warm-up call.
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diagnostics.store import Store  # noqa: E402
from diagnostics.store import stats as fleet  # noqa: E402
from diagnostics.store.summary import sha256_of, summarise  # noqa: E402
from tests import fleet as gen  # noqa: E402

LIMIT_MS = 300.0


def seed(store: Store, count: int, rng: random.Random) -> float:
    from sqlalchemy import insert

    from diagnostics.store.models import FacetRow, SessionRow, SignatureRow

    bases = gen.base_reports()
    weights = [8.0 if b.get("_case") == "healthy" else 1.0 / (1 + (i % 17)) for i, b in enumerate(bases)]
    pre = [(summarise(b), sha256_of(b), fleet.derive(b)) for b in bases]
    t0 = datetime(2025, 12, 1)
    now = datetime.utcnow()
    start = time.perf_counter()
    done = 0
    while done < count:
        n = min(5000, count - done)
        sess, facets, sigs = [], [], []
        for _ in range(n):
            k = rng.choices(range(len(bases)), weights)[0]
            summ, sha, (fa, sg) = pre[k]
            sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            created = t0 + timedelta(seconds=rng.randrange(365 * 86400))
            host = f"gpu-node-{rng.randrange(300):03d}.lab.example.org"
            status = rng.choice(["new", "new", "investigating", "resolved"])
            sess.append(dict(id=sid, created_at=created, host=host, source="live", tool_version="0.1.0",
                             kb_version="bench", report_sha256=sha, saved_at=now, updated_at=now,
                             status=status, imported=False, **summ))
            facets += [{"session_id": sid, "created_at": created, "dim": d, "value": v, "host": host,
                        "verdict": summ["verdict"], "status": status} for d, v in fa]
            sigs += [{"session_id": sid, "created_at": created, "host": host, **s} for s in sg]
        with store.engine.begin() as conn:
            conn.execute(insert(SessionRow.__table__), sess)
            conn.execute(insert(FacetRow.__table__), facets)
            if sigs:
                conn.execute(insert(SignatureRow.__table__), sigs)
        done += n
    with store.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
        if store.dialect == "postgresql":
            conn.exec_driver_sql("COMMIT")
    return time.perf_counter() - start


def timed(fn: Callable[[], Any], n: int = 5) -> float:
    fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts)


def views(store: Store) -> list[tuple[str, Callable[[], Any]]]:
    top = fleet.stats(store, "cause", limit=1)["rows"][0]["value"]
    host = fleet.stats(store, "host", limit=1)["rows"][0]["value"]
    F = fleet.Filters
    out: list[tuple[str, Callable[[], Any]]] = [
        (f"stats by {d}", (lambda d=d: fleet.stats(store, d))) for d in fleet.DIMENSIONS]
    out += [
        ("causes per week", lambda: fleet.stats(store, "cause", bucket="week", limit=5000)),
        ("causes per day, last 30 days", lambda: fleet.stats(store, "cause", bucket="day", limit=5000,
                                                             filters=F(since="2026-10-31"))),
        ("causes, one host, one quarter", lambda: fleet.stats(store, "cause", filters=F(host=host, since="2026-07-01",
                                                                                        until="2026-09-30"))),
        ("gfx, verdict=problems, status=new", lambda: fleet.stats(store, "gfx", filters=F(verdict="problems",
                                                                                          status="new"))),
        ("causes, search 'gfx1030'", lambda: fleet.stats(store, "cause", filters=F(query="gfx1030"))),
        ("sessions behind the top cause (1000 ids)", lambda: fleet.session_ids(store, "cause", top, limit=1000)),
        ("unexplained queue (20 groups)", lambda: fleet.unexplained(store, limit=20)),
        ("unexplained queue, one host", lambda: fleet.unexplained(store, F(host=host), limit=20)),
    ]
    return out


def run(backend: str, sizes: list[int]) -> list[str]:
    lines: list[str] = []
    for size in sizes:
        tmp = tempfile.mkdtemp(prefix="bench-fleet-")
        srv = None
        if backend == "sqlite":
            url = f"sqlite:///{tmp}/s.db"
        else:
            from tests.pgserver import PgServer, find_bindir

            bindir = find_bindir()
            if bindir is None:
                print("no PostgreSQL binaries; skipping", file=sys.stderr)
                return lines
            srv = PgServer(bindir, durable=True)
            srv.start()
            url = srv.create_database("bench")
        store = Store(url)
        try:
            secs = seed(store, size, random.Random(size))
            with store.engine.connect() as conn:
                n_f = conn.exec_driver_sql("SELECT count(*) FROM session_facets").scalar()
                n_s = conn.exec_driver_sql("SELECT count(*) FROM session_signatures").scalar()
            print(f"{backend} {size}: seeded in {secs:.1f} s ({n_f} facet rows, {n_s} queue rows)", file=sys.stderr)
            rows = []
            for name, fn in views(store):
                ms = timed(fn)
                rows.append((name, ms))
                print(f"  {name}: {ms:.1f} ms", file=sys.stderr)
            lines.append(f"\n**{size:,} sessions** ({n_f:,} facet rows, {n_s:,} queue rows)\n")
            lines.append("| view | median ms | <= 300 ms |")
            lines.append("|---|---:|:---:|")
            lines += [f"| {n} | {ms:.1f} | {'yes' if ms <= LIMIT_MS else '**no**'} |" for n, ms in rows]
        finally:
            store.close()
            if srv is not None:
                srv.stop()
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"])
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    block = ["## Fleet view", "",
             "`bench/bench_fleet.py`: the fleet view's queries (diagnostics/store/stats.py, `sessions stats` / "
             "`sessions unexplained`, the Fleet page) on the realistic fleet of tests/fleet.py; median of 5 calls "
             f"after a warm-up. Target: every view <= {LIMIT_MS:.0f} ms at 100,000 sessions. Machine: "
             f"{platform.machine()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}, "
             f"measured {datetime.utcnow():%Y-%m-%d}."]
    for b in args.backends:
        lines = run(b, args.sizes)
        if lines:
            block += ["", f"### {'SQLite (WAL, synchronous=NORMAL)' if b == 'sqlite' else 'PostgreSQL (local server)'}"]
            block += lines
    text = "\n".join(block) + "\n"
    print(text)
    if not args.no_write:
        from bench.doc import replace_section

        replace_section(ROOT / "docs" / "BENCHMARKS.md", "## Fleet view", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
