"""AppTest of the Fleet page (ui/fleet.py): counts from a realistic fleet, a count's link lists the sessions behind
it, the unexplained groups, "draft a KB entry" fills the editor, re-diagnosing reports what it explains, both
languages, and the page is closed to non-reviewers."""
from __future__ import annotations

import re
import shutil
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from diagnostics.kb import KB_DIR
from diagnostics.store import Store
from diagnostics.store import stats as fleet
from tests import fleet as gen


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> tuple[list[dict], str]:
    kb = tmp_path_factory.mktemp("kb") / "kb"
    shutil.copytree(KB_DIR, kb)
    (kb / "hip-invalid-device-function.yaml").unlink()  # so some real failures are unexplained
    return gen.base_reports(str(kb)), str(kb)


@pytest.fixture
def db(tmp_path, monkeypatch, bases):
    reports, kb = bases
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("GPU_DOCTOR_KB", kb)
    s = Store(url)
    for r in gen.fleet(reports, 400, seed=2):
        s.save(r)
    yield s
    s.close()


def _frames(at) -> list:
    return [d.value for d in at.dataframe]


def test_fleet_page_counts_links_and_queue(db) -> None:
    at = AppTest.from_file("../ui/fleet.py", default_timeout=60).run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Sessions"] == "400"
    queue = fleet.unexplained(db, limit=20)
    assert metrics["Unexplained or guessed only"] == str(queue["sessions"])
    # the cause table: same numbers as the store, each with a link to the sessions behind it
    causes = fleet.stats(db, "cause", limit=15)["rows"]
    table = next(f for f in _frames(at) if "Confirmed cause" in f.columns and "sessions" in f.columns
                 and "from" not in f.columns)
    assert list(table["sessions"]) == [r["count"] for r in causes]
    link = table["open"].iloc[0]
    q = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    assert urlsplit(link).path == "fleet" and q == {"by": "cause", "value": causes[0]["value"]}
    # following it lists exactly those sessions
    at2 = AppTest.from_file("../ui/fleet.py", default_timeout=60)
    at2.query_params.update(q)
    at2.run()
    assert not at2.exception
    assert any(f"{causes[0]['count']} session(s) behind" in s.value for s in at2.subheader)
    ids = next(f for f in _frames(at2) if "id" in f.columns)["id"].tolist()
    assert set(ids) == set(fleet.session_ids(db, "cause", causes[0]["value"]))
    # a filter narrows every number
    at.selectbox(key="fleet_verdict").set_value("healthy").run()
    assert {m.label: m.value for m in at.metric}["With a confirmed cause"] == "0"
    assert any("Nothing unexplained" in s.value for s in at.success)


def test_draft_from_group_and_rediagnose(db, bases, tmp_path) -> None:
    _, kb = bases
    at = AppTest.from_file("../ui/fleet.py", default_timeout=120).run()
    groups = fleet.unexplained(db, limit=20, samples=3)["groups"]
    # the removed entry's failures, where no other entry explains them any more; else the largest group of an error
    # no entry explains (which one depends on the KB of the day, not on this test)
    errors = [x for x in groups if re.search(r"(?i)error|failed", x["signature"]) and x["count"] >= 2]
    g = next((x for x in groups if "invalid device function" in x["signature"]), None) or errors[0]
    assert any(c.value == g["signature"] for c in at.code)
    assert any(e.label.startswith(f"{g['count']} session(s) on {g['host_count']} host(s)") for e in at.expander)
    at.button(key=f"draft_{g['sig']}").click().run()
    draft = at.session_state["editor_seed"]
    assert f"id: new-failure-{g['sig'][:8]}" in draft and "expect: silent" in draft
    assert draft.count("expect: fire") == len(g["samples"])
    from diagnostics import contrib as kbtools

    v = kbtools.validate(draft)
    assert v.error is None and all(c["ok"] for c in v.cases)
    # the entry lands; re-diagnosing reports how many sessions it explains, on the page
    (tmp_path / "landed.yaml").write_text(draft, encoding="utf-8")
    shutil.copy(tmp_path / "landed.yaml", f"{kb}/{v.entry.id}.yaml")
    try:
        at = AppTest.from_file("../ui/fleet.py", default_timeout=300).run()
        at.button(key="fleet_rediagnose").click().run()
        res = at.session_state["fleet_rediag"]
        assert res["explained"] >= g["count"] and res["explained_by"][v.entry.id] >= g["count"]
        assert any(f"{res['explained']} session(s) now explained" in s.value for s in at.success)
        # each cause that explained sessions is named in text (readable and copyable), linked to its sessions
        line = next(m.value for m in at.markdown if "sessions it now explains" in m.value)
        assert f"[{v.entry.id}](" in line and f"by=cause&value={v.entry.id}" in line
        assert f": {res['explained_by'][v.entry.id]}" in line
    finally:
        (__import__("pathlib").Path(kb) / f"{v.entry.id}.yaml").unlink()


def test_fleet_page_in_chinese_and_closed_to_users(db, monkeypatch) -> None:
    at = AppTest.from_file("../ui/fleet.py", default_timeout=60)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception
    assert at.title[0].value == "机群总览" and any(m.label == "会话数" for m in at.metric)
    monkeypatch.setenv("GPU_DOCTOR_SECRET", "team-secret-1234567")
    at = AppTest.from_file("../ui/fleet.py", default_timeout=60)
    at.session_state["role"] = "user"
    at.run()
    assert any("for reviewers" in i.value for i in at.info) and not at.metric and not at.dataframe
