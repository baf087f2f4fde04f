"""Feedback and compare on the Sessions and Diagnose pages (issue 18), with AppTest: adding a note keeps the
Notes tab, "Save" disappears once saved, a delete is confirmed, and comparing a pasted log with a live run says
that the sources differ ("not checked there", never a green "gone"), with check titles and telling labels."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from diagnostics import service

NO_BINARY = '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\nAborted (core dumped)\n'


@pytest.fixture(autouse=True)
def temp_db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    return url


@pytest.fixture
def store(temp_db):
    from diagnostics.store import Store

    s = Store(temp_db)
    yield s
    s.close()


def pasted(text: str) -> dict:
    res = service.diagnose_text(logs=[("pasted text", text)])
    rep = service.new_report("pasted")
    rep.update({k: res[k] for k in ("facts", "diagnoses", "not_ruled_out", "kb_version")})
    rep["logs"] = [{"name": "pasted text", "text": text}]
    return rep


def live_like(text: str) -> dict:
    """A live-shaped session (probes and their facts) of a machine whose torch has no code for its GPU."""
    rep = pasted(text)
    rep["source"] = "live"
    rep["facts"].update({"gpu.count": 1, "gpu.gfx_targets": ["gfx1031"], "torch.version": "2.3.0+rocm6.0"})
    rep["probes"] = [{"id": "torch", "title": "PyTorch build, devices and smoke test", "status": "crashed",
                      "duration_s": 3.0, "summary": "crashed with SIGABRT during 'smoke test'"},
                     {"id": "env", "title": "GPU-related environment variables", "status": "ok", "duration_s": 0.1,
                      "summary": "0 GPU-related variable(s) set"}]
    return rep


def _session_page(sid: str) -> AppTest:
    at = AppTest.from_file("../ui/sessions.py", default_timeout=30)
    at.query_params["session"] = sid
    return at.run()


def test_adding_a_note_stays_on_the_notes_tab(store):
    sid = store.save(pasted(NO_BINARY))
    at = _session_page(sid)
    at.text_input(key="note_author").input("ana")
    at.text_area(key="note_text").input("reinstalled the ROCm wheel; works")
    at.button[[b.label for b in at.button].index("Add note")].click().run()
    assert not at.exception
    assert store.notes(sid)[0]["text"] == "reinstalled the ROCm wheel; works"
    # the tab in use is the Notes tab (with its new count), and the addition is confirmed
    assert at.session_state[f"tab_{sid}"] == "Notes (1)"
    assert any("Note added" in s.value for s in at.success)


def test_delete_is_confirmed_on_the_list(store):
    sid = store.save(pasted(NO_BINARY))
    keep = store.save(pasted(NO_BINARY + "x\n"))
    at = _session_page(sid)
    at.checkbox(key="delete_sure").check().run()
    at.button(key="delete").click().run()
    assert not at.exception
    assert store.count() == 1 and store.get(keep)
    assert any(f"Session {sid[:8]} deleted" in s.value for s in at.success)


def test_compare_pasted_with_live_flags_the_sources(store):
    a = store.save(live_like(NO_BINARY))
    b = store.save(pasted("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.25 GiB\n"))
    at = _session_page(a)
    labels = list(at.selectbox(key="compare_with").options)  # as shown (formatted)
    # the picker tells sessions apart: source and top finding are in the label
    assert any("pasted text" in lab and "hip-out-of-memory" in lab for lab in labels), labels
    at.selectbox(key="compare_with").set_value(b).run()
    assert not at.exception
    assert any("different sources" in w.value for w in at.warning)
    md = "\n".join(m.value for m in at.markdown)
    assert "Not seen there (maybe not checked)" in md and "Gone" not in md
    frames = [df.value for df in at.dataframe]
    checks = next(f for f in frames if "check" in [c.lower() for c in f.columns])
    assert "PyTorch build, devices and smoke test" in list(checks.iloc[:, 0])  # a title, not the raw id
    assert "not checked there" in checks.to_string()
    facts = next(f for f in frames if "change" in list(f.columns))
    assert "removed" not in set(facts["change"]) and "not checked there" in set(facts["change"])


def test_compare_same_source_still_says_gone(store):
    a = store.save(pasted(NO_BINARY))
    b = store.save(pasted("all good\n"))
    at = _session_page(a)
    at.selectbox(key="compare_with").set_value(b).run()
    assert not any("different sources" in w.value for w in at.warning)
    assert "Gone" in "\n".join(m.value for m in at.markdown)


def test_save_button_goes_once_saved():
    at = AppTest.from_file("../ui/diagnose.py", default_timeout=60).run()
    at.text_area(key="paste").input(NO_BINARY)
    at.button(key="diagnose_text").click().run()
    assert any(b.key == "save" for b in at.button)
    at.button(key="save").click().run()
    assert not at.exception
    assert at.session_state["saved_id"]
    assert not any(b.key == "save" for b in at.button)
    assert any("Saved" in m.value for m in at.markdown)
