"""The session store on SQLite and on a real PostgreSQL server: save/get, search, review, compare, delete."""
from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from diagnostics import sessions
from diagnostics.redact import redact_report
from diagnostics.store import SessionNotFound, Store, StoreError
from diagnostics.store.summary import dumps
from tests.pgserver import db_url, pg_url  # noqa: F401
from tests.test_store_common import GH_SECRET, HF_SECRET, PW_SECRET, sample_report, secrets


@pytest.fixture
def store(db_url: str):  # noqa: F811
    s = Store(db_url)
    yield s
    s.close()


def _all_text(store: Store) -> str:
    """Every value in every table, as text (what a database dump would show)."""
    out = []
    with store.engine.connect() as conn:
        for t in ("sessions", "session_reports", "probe_results", "facts", "diagnoses", "generation_results",
                  "notes"):
            for row in conn.execute(text(f"SELECT * FROM {t}")):
                out.append(" ".join(str(v) for v in row))
    return "\n".join(out)


def test_save_get_round_trip(store: Store) -> None:
    rep = sample_report()
    sid = store.save(rep)
    assert sid == rep["session_id"], "a fresh UUID4 from the report is kept"
    got = store.get(sid)
    want = redact_report(rep)
    redactions = got.pop("redactions")
    assert got == want
    assert {r["kind"] for r in redactions} >= {"secret-variable", "github-token", "url-password"}
    assert all(set(r) == {"placeholder", "kind", "where"} for r in redactions)
    got["redactions"] = redactions
    prev = store.share_preview(sid, mask_identity=True)
    assert prev["redacted_at_save"] == redactions and prev["replacements"] == []
    assert prev["report"]["host"] == "<HOST>" and prev["identity"]["<HOST>"] >= 1
    assert store.get_json(sid) == dumps(got), "stored JSON is the canonical form, byte for byte"
    # child tables hold the broken-out data
    with store.engine.connect() as conn:
        n_probes = conn.execute(text("SELECT count(*) FROM probe_results WHERE session_id=:s"), {"s": sid}).scalar()
        n_facts = conn.execute(text("SELECT count(*) FROM facts WHERE session_id=:s"), {"s": sid}).scalar()
        n_diag = conn.execute(text("SELECT count(*) FROM diagnoses WHERE session_id=:s"), {"s": sid}).scalar()
        gen = conn.execute(text("SELECT tokens_per_s, peak_rss_bytes FROM generation_results WHERE session_id=:s"),
                           {"s": sid}).one()
        fact = conn.execute(text("SELECT value_json FROM facts WHERE session_id=:s AND name='gpu.names'"),
                            {"s": sid}).scalar()
    assert (n_probes, n_facts, n_diag) == (2, len(rep["facts"]), 2)
    assert gen[0] == pytest.approx(41.5) and gen[1] == 3_221_225_472
    assert json.loads(fact) == ["AMD Radeon RX 7900 XTX"]


def test_ids_are_random_uuid4(store: Store) -> None:
    rep = sample_report(session_id="1")  # not a UUID: replaced
    a = store.save(rep)
    b = store.save(rep)
    assert a != b
    for sid in (a, b):
        assert uuid.UUID(sid).version == 4
    # a report whose id is already stored gets a new one (save never overwrites)
    rep2 = sample_report()
    c = store.save(rep2)
    d = store.save(rep2)
    assert c == rep2["session_id"] and d != c and store.count() == 4


def test_planted_secrets_absent_from_database(store: Store, db_url: str) -> None:  # noqa: F811
    sid = store.save(sample_report())
    store.add_note(sid, "support", f"user pasted HF_TOKEN={HF_SECRET} in the ticket")
    dump = _all_text(store)
    for s in secrets():
        assert s not in dump
    assert "<SECRET-1>" in dump
    if db_url.startswith("sqlite"):
        store.close()
        path = Path(db_url.removeprefix("sqlite:///"))
        raw = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
        assert b"hipErrorNoBinaryForGpu" in raw, "the file really holds the session"
        for s in secrets():
            assert s.encode() not in raw


def test_list_filter_search_paginate(store: Store) -> None:
    ids = {}
    ids["a"] = store.save(sample_report(host="node-a", created_at="2026-11-01T10:00:00Z"))
    healthy = sample_report(host="node-b", created_at="2026-11-02T10:00:00Z", diagnoses=[], not_ruled_out=[])
    healthy["probes"] = [p | {"status": "ok"} for p in healthy["probes"]]
    healthy["facts"]["gpu.names"] = ["AMD Instinct MI300X"]
    healthy["facts"]["gpu.gfx_targets"] = ["gfx942"]
    ids["b"] = store.save(healthy)
    inc = sample_report(host="node-c", created_at="2026-11-03T10:00:00+02:00", diagnoses=[])
    ids["c"] = store.save(inc)

    rows, total = store.list_sessions()
    assert total == 3 and [r["id"] for r in rows] == [ids["c"], ids["b"], ids["a"]]  # newest first
    assert rows[0]["created_at"] == "2026-11-03T08:00:00Z"  # stored in UTC
    # a crashed check with no cause found is an unexplained problem (diagnostics/verdicts.py)
    assert {r["verdict"] for r in rows} == {"problems", "healthy", "unexplained"}
    assert [r["id"] for r in store.list_sessions(verdict="unexplained")[0]] == [ids["c"]]
    a_row = rows[2]
    assert a_row["top_diagnosis_id"] == "hip-no-binary-for-gpu" and a_row["top_severity"] == "critical"
    assert a_row["gpu_names"] == ["AMD Radeon RX 7900 XTX"] and a_row["torch_version"] == "2.5.1+rocm6.2"

    assert [r["id"] for r in store.list_sessions(host="node-b")[0]] == [ids["b"]]
    assert [r["id"] for r in store.list_sessions(gpu="mi300")[0]] == [ids["b"]]
    assert [r["id"] for r in store.list_sessions(verdict="problems")[0]] == [ids["a"]]
    assert [r["id"] for r in store.list_sessions(query="gfx942")[0]] == [ids["b"]]
    assert [r["id"] for r in store.list_sessions(query="no-binary node-a")[0]] == [ids["a"]]
    assert store.list_sessions(query="no-binary node-b") == ([], 0)
    assert store.list_sessions(query="100%")[1] == 0, "LIKE wildcards in the query are literal"
    assert [r["id"] for r in store.list_sessions(query=ids["b"][:8])[0]] == [ids["b"]]
    assert [r["id"] for r in store.list_sessions(since="2026-11-02")[0]] == [ids["c"], ids["b"]]
    assert [r["id"] for r in store.list_sessions(until="2026-11-02")[0]] == [ids["b"], ids["a"]]
    assert [r["id"] for r in store.list_sessions(since="2026-11-02", until="2026-11-02")[0]] == [ids["b"]]

    # both ways of searching on SQLite (index lookup for rare words, scan for common ones) agree
    for limit in (0, 10**9):
        store.fts_common_limit = limit
        assert [r["id"] for r in store.list_sessions(query="gfx942")[0]] == [ids["b"]]
        assert store.list_sessions(query="rx 7900")[1] == 2
        assert store.list_sessions(query="no-binary", host="node-a")[1] == 1
        assert store.list_sessions(gpu="7900 xtx") == store.list_sessions(gpu="7900 XTX")
        assert store.list_sessions(gpu="7900 xtx")[1] == 2

    store.set_status(ids["a"], "investigating")
    assert [r["id"] for r in store.list_sessions(status="investigating")[0]] == [ids["a"]]
    with pytest.raises(StoreError):
        store.set_status(ids["a"], "closed")
    with pytest.raises(SessionNotFound):
        store.set_status(str(uuid.uuid4()), "resolved")

    p1, total = store.list_sessions(page=1, page_size=2)
    p2, _ = store.list_sessions(page=2, page_size=2)
    assert total == 3 and len(p1) == 2 and len(p2) == 1
    assert {r["id"] for r in p1 + p2} == set(ids.values())


def test_notes_status_delete(store: Store) -> None:
    sid = store.save(sample_report())
    other = store.save(sample_report())
    n1 = store.add_note(sid, "bob", "asked the user to add render group")
    store.add_note(sid, "carol", f"token was {GH_SECRET}")
    notes = store.notes(sid)
    assert [n["author"] for n in notes] == ["bob", "carol"] and notes[0]["id"] == n1
    assert GH_SECRET not in notes[1]["text"] and "<SECRET-1>" in notes[1]["text"]
    with pytest.raises(StoreError):
        store.add_note(sid, "bob", "   ")
    with pytest.raises(SessionNotFound):
        store.add_note(str(uuid.uuid4()), "bob", "x")
    store.set_status(sid, "resolved")
    assert store.info(sid)["status"] == "resolved" and store.info(sid)["note_count"] == 2

    assert store.delete(sid) is True
    assert store.delete(sid) is False
    with pytest.raises(SessionNotFound):
        store.get(sid)
    with store.engine.connect() as conn:
        for t in ("session_reports", "probe_results", "facts", "diagnoses", "generation_results", "notes"):
            assert conn.execute(text(f"SELECT count(*) FROM {t} WHERE session_id=:s"), {"s": sid}).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM facts WHERE session_id=:s"), {"s": other}).scalar() > 0
    assert store.ids() == [other]


def test_compare(store: Store) -> None:
    before = sample_report(created_at="2026-11-01T00:00:00Z")
    after = sample_report(created_at="2026-11-02T00:00:00Z")
    after["diagnoses"] = [after["diagnoses"][1], {"id": "hip-out-of-memory", "title": "HIP out of memory",
                                                  "severity": "error", "confidence": 0.8, "evidence": [], "fix": ""}]
    after["facts"]["torch.version"] = "2.6.0+rocm6.2.4"
    del after["facts"]["env.HSA_OVERRIDE_GFX_VERSION"]
    after["facts"]["gpu.count"] = 2
    after["facts"]["hip.runtime_version"] = "6.2.41133"
    after["probes"][1]["status"] = "ok"
    a, b = store.save(before), store.save(after)
    cmp = sessions.compare_sessions(store, a, b)
    assert [d["id"] for d in cmp["appeared"]] == ["hip-out-of-memory"]
    assert [d["id"] for d in cmp["disappeared"]] == ["hip-no-binary-for-gpu"]
    assert [d["id"] for d in cmp["unchanged"]] == ["miopen-missing-kdb-warning"]
    changes = {f["name"]: (f["change"], f["before"], f["after"]) for f in cmp["changed_facts"]}
    assert changes == {"torch.version": ("changed", "2.5.1+rocm6.2", "2.6.0+rocm6.2.4"),
                       "env.HSA_OVERRIDE_GFX_VERSION": ("removed", "11.0.0", None),
                       "gpu.count": ("changed", 1, 2),
                       "hip.runtime_version": ("added", None, "6.2.41133")}
    assert cmp["changed_probes"] == [{"id": "torch", "before": "crashed", "after": "ok"}]
    with pytest.raises(SessionNotFound):
        sessions.compare_sessions(store, a, str(uuid.uuid4()))


def test_rediagnose_with_a_service_double(store: Store) -> None:
    """sessions.rediagnose_session hands the stored report to the diagnose function it is given (by default the
    service's) and the store replaces the session with what comes back."""
    seen = []

    def fake_rediagnose(report: dict) -> dict:
        seen.append(report)
        out = dict(report)
        out["diagnoses"] = [{"id": "hsa-override-wrong-value", "title": "Override not needed", "severity": "warning",
                             "confidence": 0.7, "evidence": [], "fix": "unset it"}]
        out["kb_version"] = "2027.01"
        return out

    sid = store.save(sample_report())
    res = sessions.rediagnose_session(store, sid, fake_rediagnose)
    assert seen and seen[0]["facts"]["env.HF_TOKEN"].startswith("<SECRET-"), "the service gets the stored facts"
    assert [d["id"] for d in res["appeared"]] == ["hsa-override-wrong-value"]
    assert {d["id"] for d in res["disappeared"]} == {"hip-no-binary-for-gpu", "miopen-missing-kdb-warning"}
    got = store.get(sid)
    assert [d["id"] for d in got["diagnoses"]] == ["hsa-override-wrong-value"] and got["kb_version"] == "2027.01"
    info = store.info(sid)
    assert info["top_diagnosis_id"] == "hsa-override-wrong-value" and info["top_severity"] == "warning"
    assert store.list_sessions(query="override")[1] == 1
    assert any("hsa-override-wrong-value" in n["text"] for n in store.notes(sid))
    # again: nothing changes, no new note
    assert sessions.rediagnose_session(store, sid, fake_rediagnose)["changed"] is False
    assert len(store.notes(sid)) == 1, "an unchanged re-diagnosis adds no note"
    store.save(sample_report())
    res_all = sessions.rediagnose_all(store, fake_rediagnose)
    assert res_all == {"rediagnosed": 2, "changed": 1, "restamped": 0, "errors": {}}
    # a newer KB that finds the same: not a change (no note), but the row records the KB it was checked against
    notes = len(store.notes(sid))

    def same_findings_newer_kb(report: dict) -> dict:
        return {**fake_rediagnose(report), "kb_version": "2027.02"}

    res = sessions.rediagnose_session(store, sid, same_findings_newer_kb)
    assert res["changed"] is False and res["restamped"] is True and not res["appeared"] and not res["disappeared"]
    assert store.get(sid)["kb_version"] == "2027.02" and len(store.notes(sid)) == notes
    res_all = sessions.rediagnose_all(store, same_findings_newer_kb)
    assert res_all == {"rediagnosed": 2, "changed": 0, "restamped": 1, "errors": {}}


def test_rediagnose_with_the_real_service(store: Store) -> None:
    pytest.importorskip("diagnostics.service")
    rep = sample_report()
    rep["diagnoses"] = []  # as if saved with an empty KB
    sid = store.save(rep)
    res = sessions.rediagnose_session(store, sid)
    got = store.get(sid)
    assert got["kb_version"]
    # the stored log carries the real "Memory access fault by GPU node-1" line, so today's KB must find something
    assert res["changed"] and got["diagnoses"], "today's KB should diagnose the stored logs"
    assert "gpu-memory-access-fault" in [d["id"] for d in got["diagnoses"]]
    assert "gpu-memory-access-fault" in [d["id"] for d in res["appeared"]]


def test_bad_arguments(store: Store) -> None:
    with pytest.raises(ValueError):
        store.save({"facts": []})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        store.save("not a report")  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        store.list_sessions(since="yesterday-ish")
    assert store.count() == 0


def test_default_url_uses_env_then_user_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from diagnostics.store import default_url

    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'x.db'}")
    assert default_url() == f"sqlite:///{tmp_path / 'x.db'}"
    monkeypatch.delenv("DATABASE_URL")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path))
    url = default_url()
    assert url.endswith("gpu-doctor/sessions.db") and url.startswith("sqlite:///")
    s = Store()
    try:
        assert s.save(sample_report())
        assert Path(url.removeprefix("sqlite:///")).exists()
        with s.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        s.close()
