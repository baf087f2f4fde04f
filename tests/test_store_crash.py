"""Crash safety and concurrency: SIGKILL in the middle of save(), and several processes saving at once."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import text

from diagnostics.store import Store
from tests.pgserver import db_url, pg_url  # noqa: F401
from tests.test_store_common import sample_report

ROOT = Path(__file__).resolve().parents[1]

# A child that dies by SIGKILL at an exact point inside save(): right after the facts were inserted, while the
# transaction is still open (the session row and its probes are already written but not committed).
KILL_INSIDE_SAVE = r"""
import os, signal, sys
from sqlalchemy import event
from diagnostics.store import Store
from tests.test_store_common import sample_report
store = Store(sys.argv[1])
@event.listens_for(store.engine, "after_cursor_execute")
def die(conn, cursor, statement, params, context, executemany):
    if statement.lstrip().upper().startswith("INSERT INTO FACTS"):
        os.kill(os.getpid(), signal.SIGKILL)
store.save(sample_report())
print("NOT KILLED", flush=True)
"""

# A child that saves big sessions in a loop and prints each id once save() has returned (committed).
SAVE_LOOP = r"""
import sys
from diagnostics.store import Store
from tests.test_store_common import sample_report
store = Store(sys.argv[1])
n = int(sys.argv[2])
big = int(sys.argv[3])
i = 0
while n < 0 or i < n:
    rep = sample_report(host=f"node-{sys.argv[4]}")
    for k in range(big):
        rep["facts"][f"env.EXTRA_VAR_{k}"] = "x" * 40
    rep["logs"].append({"name": "big.log", "text": "hipErrorNoBinaryForGpu\n" * (big * 20)})
    print(store.save(rep), flush=True)
    i += 1
"""


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _check_consistent(url: str) -> set[str]:
    """Every stored session is whole; nothing refers to a missing session. Returns the stored ids."""
    store = Store(url)
    try:
        with store.engine.connect() as conn:
            if store.dialect == "sqlite":
                assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
                assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
                n_fts = conn.exec_driver_sql("SELECT count(*) FROM sessions_fts").scalar()
                assert n_fts == conn.exec_driver_sql("SELECT count(*) FROM sessions").scalar(), "search index in step"
            for t in ("session_reports", "probe_results", "facts", "diagnoses", "generation_results", "notes"):
                orphans = conn.execute(text(f"SELECT count(*) FROM {t} WHERE session_id NOT IN "
                                            "(SELECT id FROM sessions)")).scalar()
                assert orphans == 0, f"half-saved rows in {t}"
            rows = conn.execute(text("SELECT s.id, r.report_json FROM sessions s LEFT JOIN session_reports r "
                                     "ON r.session_id = s.id")).all()
            for sid, rj in rows:
                assert rj is not None, f"session {sid} has no report"
                rep = json.loads(rj)
                n_f = conn.execute(text("SELECT count(*) FROM facts WHERE session_id=:s"), {"s": sid}).scalar()
                n_p = conn.execute(text("SELECT count(*) FROM probe_results WHERE session_id=:s"), {"s": sid}).scalar()
                n_d = conn.execute(text("SELECT count(*) FROM diagnoses WHERE session_id=:s"), {"s": sid}).scalar()
                assert (n_f, n_p, n_d) == (len(rep["facts"]), len(rep["probes"]), len(rep["diagnoses"])), sid
        return {r[0] for r in rows}
    finally:
        store.close()


def test_sigkill_at_a_fixed_point_inside_save(db_url: str) -> None:  # noqa: F811
    store = Store(db_url)
    keep = store.save(sample_report())
    store.close()
    r = subprocess.run([sys.executable, "-c", KILL_INSIDE_SAVE, db_url], cwd=ROOT, env=_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stdout, r.stderr)
    assert "NOT KILLED" not in r.stdout
    assert _check_consistent(db_url) == {keep}, "the killed save left nothing behind"
    s = Store(db_url)
    try:
        assert s.save(sample_report()) and s.count() == 2, "the database still takes writes"
    finally:
        s.close()


def test_sigkill_at_random_moments(db_url: str) -> None:  # noqa: F811
    rng = random.Random(1234)
    committed: set[str] = set()
    Store(db_url).close()  # create the schema first so the kills land in saves, not in the migration
    for round_ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", SAVE_LOOP, db_url, "-1", "1500", str(round_)], cwd=ROOT,
                                env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            for _ in range(2):  # let it commit a couple, then kill it somewhere in the next one
                line = proc.stdout.readline().strip()
                assert line, proc.stderr.read() if proc.stderr else ""
                committed.add(line)
            time.sleep(rng.uniform(0.0, 0.6))  # a save of this size takes ~0.4 s
            os.kill(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate(timeout=60)
            committed.update(x for x in out.split() if x)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL
    stored = _check_consistent(db_url)
    assert committed <= stored, "a save that returned was lost"
    assert len(stored) >= 12


def test_several_processes_saving_at_once(db_url: str) -> None:  # noqa: F811
    """Four processes open a brand-new database at the same moment (racing to create the schema) and each
    saves 15 sessions; every session is there afterwards."""
    procs = [subprocess.Popen([sys.executable, "-c", SAVE_LOOP, db_url, "15", "20", str(i)], cwd=ROOT, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    ids: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        ids += out.split()
    assert len(ids) == 60 and len(set(ids)) == 60
    assert _check_consistent(db_url) == set(ids)
    s = Store(db_url)
    try:
        for i in range(4):
            assert s.list_sessions(host=f"node-{i}")[1] == 15
    finally:
        s.close()
