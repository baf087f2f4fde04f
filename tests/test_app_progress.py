"""The Diagnose page while a run is going (issue 18): every planned step is on the board from the start, the
bar is weighted and never goes back, and Stop ends the run with a report that says it was stopped.  AppTest."""
from __future__ import annotations

import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from diagnostics.probes import PROBES


@pytest.fixture(autouse=True)
def temp_db(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'sessions.db'}")


def _board(at) -> str | None:
    return next((m.value for m in at.markdown if m.value.startswith("| | Check | Result")), None)


def test_progress_counts_every_step_and_stop_marks_the_report(tmp_path, monkeypatch):
    from tests.fakes import HANG, make_fake_torch

    # a torch whose import hangs: the run cannot finish on its own within the test, so Stop must end it
    monkeypatch.setenv("PYTHONPATH", str(make_fake_torch(tmp_path, HANG)))
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    at.button[0].click().run()
    fractions, boards, infos = [], [], []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:
        at.run()
        b = _board(at)
        if b:
            boards.append(b)
        infos += [i.value for i in at.info]
        fractions += [p.value for p in at.get("progress")]
        if boards and time.monotonic() - t0 > 3:
            break
        time.sleep(0.3)
    assert boards, "no progress board while running"
    # every planned check has a row from the first board on, waiting ones included
    assert boards[0].count("\n") == len(PROBES) + 1, boards[0]
    assert any(f"of {len(PROBES)} checks finished" in i for i in infos), infos
    assert fractions == sorted(fractions) and all(0 <= f < 100 for f in fractions)  # percent, fractions
    stop = next(b for b in at.button if b.key == "stop")
    t_stop = time.monotonic()
    stop.click().run()
    while "report" not in at.session_state and time.monotonic() - t_stop < 30:
        time.sleep(0.3)
        at.run()
    assert "report" in at.session_state, "Stop did not end the run"
    assert time.monotonic() - t_stop < 20
    rep = at.session_state["report"]
    assert rep.get("stopped") is True
    torch = next(p for p in rep["probes"] if p["id"] == "torch")
    assert torch["status"] == "skipped" and torch["summary"] == "stopped by the user"
    assert any("Stopped by you" in w.value for w in at.warning)
    assert not at.exception
