"""diagnostics.contrib: the editor's validation is `kb lint`'s, a session becomes a passing test case, and the entry
finds the saved sessions it matches."""
from __future__ import annotations

import pytest

from diagnostics import service
from diagnostics.kb import KBError, load_kb, parse_entry
from diagnostics import contrib as kbtools

NO_BINARY = '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\nAborted (core dumped)\n'
OOM = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.25 GiB. GPU 0 has a total capacity of 7.98 GiB"


def pasted(text: str) -> dict:
    res = service.diagnose_text(logs=[("log", text)])
    rep = service.new_report("pasted")
    rep.update({k: res[k] for k in ("facts", "diagnoses", "not_ruled_out", "kb_version")})
    rep["logs"] = [{"name": "log", "text": text}]
    return rep


@pytest.fixture
def kb():
    return service.get_kb()[0]


@pytest.fixture
def store(tmp_path):
    from diagnostics.store import Store

    s = Store(f"sqlite:///{tmp_path / 's.db'}")
    yield s
    s.close()


def test_search_by_words_tags_and_severity(kb):
    ids = [e.id for e in kbtools.search(kb.entries, "hipErrorNoBinaryForGpu")]
    assert "hip-no-binary-for-gpu" in ids
    assert all(e.severity == "info" for e in kbtools.search(kb.entries, severities=["info"]))
    tagged = kbtools.search(kb.entries, tags=["memory"])
    assert tagged and all("memory" in e.tags for e in tagged)
    assert kbtools.search(kb.entries, "zzzzqqq xyzzyplugh") == []
    assert not any(e.benign for e in kbtools.search(kb.entries, include_benign=False))


def test_every_entry_file_validates_like_kb_lint(kb):
    """The editor accepts every entry kb lint accepts, and its cases agree with `kb test`."""
    for e in kb.entries:
        v = kbtools.validate(kbtools.entry_source(e), existing_ids=[e.id])
        assert v.error is None, v.error
        assert [c["ok"] for c in v.cases] == [True] * len(e.tests), e.id
        assert v.warnings  # editing an existing id is pointed out


@pytest.mark.parametrize("change,needle", [
    (("severity: error", "severity: catastrophic"), "severity must be one of"),
    (("tags: [install]", "tags: [install]\ncolour: red"), "unknown key 'colour'"),
    (("  - https://example.org/the-issue-thread-you-learned-it-from", "  - javascript:alert(1)"), "not an http(s) URL"),
    (("    - log: 'exact error text from a real report'", "    - log: '(unclosed'"), "pattern"),
    (("{fact: torch.build, eq: rocm}", "{fact: torch.bild, eq: rocm}"), "torch.bild"),
    (("id: my-new-failure", "id: My_Bad_Id"), "id must be lowercase"),
    (("  - name: silent on a healthy machine\n    facts: {torch.build: rocm, torch.cuda_available: true}\n    expect: silent\n", ""),
     "one 'fire' case and one 'silent' case"),
])
def test_broken_entries_give_the_lint_error_with_its_position(tmp_path, change, needle):
    text = kbtools.template().replace(*change)
    assert text != kbtools.template()
    v = kbtools.validate(text)
    assert v.error is not None and needle in v.error.message
    eid = kbtools.guess_id(text)
    # the same error `kb lint` reports for the file kb/<id>.yaml
    (tmp_path / f"{eid}.yaml").write_text(text)
    lint = load_kb(tmp_path).errors
    assert len(lint) == 1 and (lint[0].line, lint[0].col, lint[0].message) == (v.error.line, v.error.col, v.error.message)
    ctx = kbtools.error_context(text, v.error)
    assert f"{v.error.line:>4} | " in ctx and "^" in ctx


def test_not_yaml_at_all():
    v = kbtools.validate("id: [unclosed\n  : :")
    assert isinstance(v.error, KBError) and v.error.line >= 1


def test_a_session_becomes_a_passing_case_of_an_existing_entry(kb):
    rep = pasted(NO_BINARY)
    e = kb.by_id()["hip-no-binary-for-gpu"]
    text = kbtools.add_case(kbtools.entry_source(e), kbtools.session_case(rep))
    v = kbtools.validate(text, existing_ids=[e.id])
    assert v.error is None
    assert len(v.cases) == len(e.tests) + 1 and all(c["ok"] for c in v.cases)
    assert v.cases[-1]["case"].startswith("saved session ")
    # the rest of the file is untouched
    assert text.startswith(kbtools.entry_source(e).rstrip("\n").split("\ntests:")[0])


def test_a_session_as_a_silent_case_that_fires_is_reported_failing(kb):
    e = kb.by_id()["hip-no-binary-for-gpu"]
    text = kbtools.add_case(kbtools.entry_source(e), kbtools.session_case(pasted(NO_BINARY), expect="silent"))
    v = kbtools.validate(text)
    assert v.error is None and not v.ok and v.cases[-1] == {**v.cases[-1], "ok": False, "got": "fire"}


def test_new_entry_from_a_session_is_valid_and_keeps_its_facts(tmp_path, monkeypatch):
    from tests.fakes import CPU_ONLY, make_fake_torch

    monkeypatch.setenv("PYTHONPATH", str(make_fake_torch(tmp_path, CPU_ONLY)))  # the same torch on any machine
    rep = service.run_local(generate=False)
    assert rep["facts"]["torch.build"] == "cpu"
    text = kbtools.new_entry_from_session(rep)
    v = kbtools.validate(text)
    assert v.error is None, v.error
    case = v.entry.tests[0]
    assert case.facts["torch.build"] == rep["facts"]["torch.build"]
    assert v.entry.tests[-1].expect == "silent"


def test_sessions_matching(kb, store):
    a = store.save(pasted(NO_BINARY))
    store.save(pasted(OOM))
    hits, seen = kbtools.sessions_matching(kb.by_id()["hip-no-binary-for-gpu"], store)
    assert seen == 2 and [h["id"] for h in hits] == [a] and hits[0]["already"]
    # a new entry that nobody has yet: it matches the OOM session, which was not diagnosed so before
    text = kbtools.template().replace("exact error text from a real report", "Tried to allocate 2\\.25 GiB")
    v = kbtools.validate(text.replace("      Tried to allocate 2\\.25 GiB", "      Tried to allocate 2.25 GiB"))
    assert v.error is None and v.ok
    hits, _ = kbtools.sessions_matching(v.entry, store)
    assert len(hits) == 1 and not hits[0]["already"]
    hits, seen = kbtools.sessions_matching(v.entry, store, limit=1)
    assert seen == 1


def test_describe_conditions(kb):
    lines = kbtools.describe(kb.by_id()["hip-out-of-memory"].when)
    assert lines[0] == "any of:" and any("HIP out of memory" in ln for ln in lines)
