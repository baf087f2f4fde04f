"""AppTest smoke tests of the pages (the real-browser tests live in tests/e2e)."""
import time

from streamlit.testing.v1 import AppTest


def wait_for(at, key, limit=120):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        at.run()
        if key in at.session_state:
            return True
        time.sleep(0.3)
    return False


def test_diagnose_page_runs_and_shows_result():
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value.startswith("🩺")
    at.button[0].click().run()
    assert wait_for(at, "report")
    assert not at.exception
    rep = at.session_state["report"]
    assert rep["probes"] and "diagnoses" in rep
    labels = [e.label for e in at.expander]
    assert any("All facts" in lab for lab in labels)


def test_diagnose_page_survives_a_crashing_torch(tmp_path, monkeypatch):
    from tests.fakes import SEGFAULT, make_fake_torch

    monkeypatch.setenv("PYTHONPATH", str(make_fake_torch(tmp_path, SEGFAULT)))
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    at.button[0].click().run()
    assert wait_for(at, "report")
    assert not at.exception
    torch = next(p for p in at.session_state["report"]["probes"] if p["id"] == "torch")
    assert torch["status"] == "crashed"
