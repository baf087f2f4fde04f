"""Concurrency and load over the real service, probes and CLI (issue 8).

- Several "sessions" in one process (what the Streamlit server does: one script thread per browser tab)
  diagnosing text and running the live probes at once; a KB entry edited while they match.
- Many `run --json --no-generate --save` processes writing to one SQLite file, and to PostgreSQL when the
  server binaries exist (tests/pgserver.py): every session is there afterwards, byte for byte, and no
  "database is locked" reaches a user.
The store's own concurrent-writer and kill tests are in tests/test_store_crash.py; these go through the CLI.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from diagnostics import service
from tests.pgserver import db_url, pg_url  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
LOGS = {
    "abort": '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\nAborted (core dumped)\n',
    "idf": "RuntimeError: HIP error: invalid device function\nHIP kernel errors might be asynchronously reported\n",
    "oom": "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "23.98 GiB of which 1.02 GiB is free.\n",
    "healthy": "step 1 loss 0.5\nstep 2 loss 0.4\n",
}


def _ids(res: dict) -> list[str]:
    return [d["id"] for d in res["diagnoses"]]


def _own_children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE}


def _wait_no_new_children(before: set[int], timeout: float = 5.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = _own_children() - before
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def test_many_sessions_diagnose_text_at_once():
    serial = {k: _ids(service.diagnose_text(logs=[(k, v)])) for k, v in LOGS.items()}
    assert serial["abort"][0] == "hip-no-binary-for-gpu" and serial["oom"]
    jobs = [k for k in LOGS for _ in range(12)]
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=16) as ex:
        got = list(ex.map(lambda k: (k, _ids(service.diagnose_text(logs=[(k, LOGS[k])]))), jobs))
    assert time.monotonic() - t0 < 60
    for k, ids in got:
        assert ids == serial[k], (k, ids, serial[k])


def test_kb_edited_while_sessions_match(tmp_path):
    """An entry file rewritten (as the KB editor page does) while 8 threads match: each answer comes from
    the old or the new KB, never an exception or a half-loaded one."""
    kb = tmp_path / "kb"
    shutil.copytree(ROOT / "kb", kb)
    entry = kb / "hip-no-binary-for-gpu.yaml"
    original = entry.read_text()
    edited = original.replace("severity: critical", "severity: error")
    stop = threading.Event()
    errors: list[BaseException] = []
    severities: set[str] = set()

    latest: list[str] = []
    picked_up: list[float] = []

    def editor():
        try:
            for i in range(1, 5):  # four saves; each must be seen by some session within 20 s
                time.sleep(0.2)
                tmp = entry.with_suffix(".tmp")
                tmp.write_text(edited if i % 2 else original)
                want = "error" if i % 2 else "critical"
                t0 = time.monotonic()
                os.replace(tmp, entry)  # atomic, like an editor's save
                latest.clear()
                while time.monotonic() - t0 < 20 and want not in latest:
                    time.sleep(0.02)
                assert want in latest, f"save {i} not picked up within 20 s"
                picked_up.append(time.monotonic() - t0)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            stop.set()

    def session(_):
        try:
            while not stop.is_set():
                res = service.diagnose_text(logs=[("log", LOGS["abort"])], kb_dir=str(kb))
                d = res["diagnoses"][0]
                assert d["id"] == "hip-no-binary-for-gpu", _ids(res)
                severities.add(d["severity"])
                latest.append(d["severity"])
                assert not res["kb_errors"], res["kb_errors"]
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised below
            errors.append(exc)

    ed = threading.Thread(target=editor)
    ed.start()
    try:
        with ThreadPoolExecutor(max_workers=8) as ex:
            list(ex.map(session, range(8)))
    finally:
        ed.join()
    assert not errors, errors[0]
    assert severities <= {"critical", "error"}
    assert len(picked_up) == 4 and max(picked_up) < 20, picked_up


def test_several_live_runs_at_once_and_one_cancelled(tmp_path, monkeypatch):
    """Three browser tabs press "Diagnose this machine" together; a fourth cancels.  All three reports are
    complete, the cancelled one ends promptly, and no probe process is left.  The torch is one the test brings
    (CPU-only), so the reports are the same on any machine."""
    from tests.fakes import CPU_ONLY, make_fake_torch

    monkeypatch.setenv("PYTHONPATH", str(make_fake_torch(tmp_path, CPU_ONLY)))
    before = _own_children()
    cancel = threading.Event()
    t_cancel: dict[str, float] = {}

    def live(_):
        return service.run_local(generate=False, timeout=60)

    def cancelled():
        t0 = time.monotonic()
        threading.Timer(1.0, cancel.set).start()
        rep = service.run_local(generate=False, timeout=60, cancel=cancel)
        t_cancel["s"] = time.monotonic() - t0
        return rep

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as ex:
        futs = [ex.submit(live, i) for i in range(3)]
        fc = ex.submit(cancelled)
        reports = [f.result(timeout=180) for f in futs]
        crep = fc.result(timeout=180)
    wall = time.monotonic() - t0
    ids = {r["session_id"] for r in reports}
    assert len(ids) == 3
    for r in reports:
        assert {p["id"] for p in r["probes"]} >= {"torch", "devices", "system", "env"}
        assert all(p["status"] != "timeout" for p in r["probes"]), [(p["id"], p["status"]) for p in r["probes"]]
        assert r["facts"].get("torch.build") == "cpu"
        assert _ids(r) == _ids(reports[0])
    assert t_cancel["s"] < 10, t_cancel
    # a stopped run says so, and the checks it cut short are "skipped: stopped by the user", not hangs (issue 18)
    assert crep.get("stopped") is True
    assert all(p["status"] != "timeout" for p in crep["probes"]), [(p["id"], p["status"]) for p in crep["probes"]]
    assert any(p.get("summary") == "stopped by the user" for p in crep["probes"]) or t_cancel["s"] < 5
    assert wall < 120
    assert not _wait_no_new_children(before), "probe processes left behind"


# ---------------------------------------------------------------------------------------- run --save


def _run_save(url: str, i: int, env: dict[str, str]) -> subprocess.Popen:
    log = ROOT / "kb" / "hip-no-binary-for-gpu.yaml"  # any readable text; adds log evidence to the report
    return subprocess.Popen([sys.executable, "-m", "diagnostics", "run", "--json", "--no-generate", "--save",
                             "--db", url, "--timeout", "60", "--log", str(log)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("n", [5])
def test_many_run_save_processes_one_database(db_url, n):  # noqa: F811
    from diagnostics.store import Store
    from diagnostics.store import _redact_noting
    from diagnostics.store.summary import dumps

    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    Store(db_url).close()  # schema first: this test is about concurrent saves, the migration race is tested apart
    t0 = time.monotonic()
    procs = [_run_save(db_url, i, env) for i in range(n)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        outs.append((p.returncode, out, err))
    wall = time.monotonic() - t0
    saved = {}
    for rc, out, err in outs:
        assert "locked" not in err.lower(), err[-2000:]
        assert rc in (0, 1), (rc, err[-2000:])
        rep = json.loads(out)
        assert "id" in rep["saved"], rep["saved"]
        saved[rep["saved"]["id"]] = rep
    assert len(saved) == n
    with Store(db_url) as st:
        assert st.count() == n
        for sid, rep in saved.items():
            rep = dict(rep)
            rep.pop("saved")
            expected = _redact_noting(rep, False)
            expected["session_id"] = sid
            stored = st.get_json(sid)
            assert json.loads(stored) == json.loads(dumps(expected)), sid
            assert stored == st.get_json(sid)  # and reading it again gives the same bytes
    assert wall < 240, wall


# ---------------------------------------------------------------------------------------- the web app


def test_several_app_sessions_diagnose_at_once(tmp_path, monkeypatch):
    """Three browser sessions of the Streamlit app press "Diagnose this machine" together while a fourth
    diagnoses a pasted log (AppTest runs the real pages; the live diagnoses run as background jobs in this
    one process, as on the server).  Each session gets its own complete report; none sees an exception."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'sessions.db'}")
    before = _own_children()
    live = [AppTest.from_file("../app.py", default_timeout=60).run() for _ in range(3)]
    for at in live:
        assert not at.exception
        at.button[0].click().run()
    paste = AppTest.from_file("../ui/diagnose.py", default_timeout=60).run()
    paste.text_area(key="paste").input(LOGS["idf"] + LOGS["abort"])
    paste.button(key="diagnose_text").click().run()
    assert not paste.exception
    assert {"hip-no-binary-for-gpu", "hip-invalid-device-function"} <= set(_ids(paste.session_state["report"]))
    t0 = time.monotonic()
    pending = list(live)
    while pending and time.monotonic() - t0 < 120:
        time.sleep(0.3)
        for at in list(pending):
            at.run()
            assert not at.exception, at.exception
            if "report" in at.session_state:
                pending.remove(at)
    assert not pending, "a session never got its report"
    reports = [at.session_state["report"] for at in live]
    assert len({r["session_id"] for r in reports}) == 3
    for r in reports:
        assert r["probes"] and all(p["status"] != "timeout" for p in r["probes"])
        assert _ids(r) == _ids(reports[0])
    assert not _wait_no_new_children(before), "probe processes left behind"
