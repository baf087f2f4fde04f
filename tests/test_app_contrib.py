"""Issue 18, contributor tools and guesses (AppTest + diagnostics.contrib): the KB list shows every entry with its whole
title; search goes through the symptom retrieval ("vram full" finds the out-of-memory entries); a bad regex is
reported plainly at its column; the untouched template is flagged; the download needs `kb lint` (caveats,
placeholders) and every case to pass; the contributor guide is linked; a description-only match gets a
"possible causes" banner, never the red "Problem found"."""
from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from diagnostics import service
from diagnostics.kb import load_kb
from diagnostics import contrib as kbtools

OOM_IDS = {"hip-out-of-memory", "model-too-large-for-vram"}


@pytest.fixture(autouse=True)
def temp_db(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'sessions.db'}")


@pytest.fixture
def kb():
    return service.get_kb()[0]


def listed(at) -> list[str]:
    return [m for md in at.markdown for m in re.findall(r"\?entry=([A-Za-z0-9_.-]+)\)", md.value)]


def editor(text: str) -> AppTest:
    at = AppTest.from_file("../ui/kb_editor.py", default_timeout=30)
    at.session_state["editor_seed"] = text
    return at.run()


def ready_entry() -> str:
    """The template made into a real entry (own id, link, error text): valid, its cases pass."""
    return (kbtools.template().replace("id: my-new-failure", "id: widget-frobnication-failed")
            .replace("One line that names the cause, not the symptom", "The widget frobnicator is missing")
            .replace("https://example.org/the-issue-thread-you-learned-it-from", "https://github.com/ROCm/ROCm/issues/1")
            .replace("https://example.org/the-doc-that-says-so", "https://rocm.docs.amd.com/")
            .replace("exact error text from a real report", "widget frobnicator not found"))


# ------------------------------------------------------------------------------------------------ search (library)
@pytest.mark.parametrize("query", ["vram full", "VRAM is full", "显存满了"])
def test_search_by_meaning_finds_the_out_of_memory_entries(kb, query):
    ids = [e.id for e in kbtools.search(kb.entries, query)]
    assert "hip-out-of-memory" in ids[:5], ids[:8]
    # nothing of it is a literal substring: the old word search found nothing for "vram full"
    assert "vram full" not in kb.by_id()["hip-out-of-memory"].symptoms.lower()


def test_search_is_the_service_ranking_then_literal_matches(kb):
    ranked = [h["id"] for h in service.search_kb("vram full", kb=kb)]
    ids = [e.id for e in kbtools.search(kb.entries, "vram full")]
    assert ids[:len(ranked)] == ranked
    assert kbtools.search(kb.entries, "hip-out-of-memory")[0].id == "hip-out-of-memory"  # an id typed exactly
    benign = next(e for e in kb.entries if e.benign)
    assert benign.id in [e.id for e in kbtools.search(kb.entries, benign.id)]  # not ranked, found literally
    assert kbtools.search(kb.entries, "zzzzqqq xyzzyplugh") == []
    assert all(e.severity == "info" for e in kbtools.search(kb.entries, "vram full", severities=["info"]))


# ------------------------------------------------------------------------------------------------ regex errors
@pytest.mark.parametrize("pattern,col_of,needle", [
    ("(unclosed", "(", "missing )"),
    ("ok a(?=b)", "(?=", "RE2 has no lookahead"),
    ("abc [z-a]", "z-a", "invalid character class range"),
])
def test_bad_regex_is_plain_with_its_column(tmp_path, pattern, col_of, needle):
    text = kbtools.template().replace("exact error text from a real report", pattern, 1)
    v = kbtools.validate(text)
    msg = v.error.message
    assert needle in msg and "b'" not in msg and 'b"' not in msg
    assert "backreferences or lookaround" not in msg  # no hint that does not fit the mistake
    line = text.splitlines()[v.error.line - 1]
    assert line[v.error.col - 1:].startswith(col_of), (line, v.error.col)
    # `kb lint` reports the very same position
    (tmp_path / "my-new-failure.yaml").write_text(text)
    (err,) = load_kb(tmp_path).errors
    assert (err.line, err.col, err.message) == (v.error.line, v.error.col, msg)


def test_bad_regex_in_the_editor():
    at = editor(kbtools.template().replace("exact error text from a real report", "(unclosed", 1))
    assert not at.exception
    shown = at.error[0].value.replace("\\", "")  # Markdown escapes, not shown by the browser
    assert "Line 8, column 13" in shown and "missing ) at \"(unclosed\"" in shown
    assert "b'" not in at.error[0].value
    assert at.get("download_button")[0].proto.disabled


# ------------------------------------------------------------------------------------------------ template, download
def test_untouched_template_is_flagged_not_valid():
    v = kbtools.validate(kbtools.template())
    assert v.error is None and set(v.template) >= {"id", "links"} and not v.downloadable
    at = AppTest.from_file("../ui/kb_editor.py", default_timeout=30).run()
    assert "still the template" in at.warning[0].value
    assert not any("kb lint` accepts" in s.value for s in at.success)
    assert at.get("download_button")[0].proto.disabled
    assert any("still the template" in c.value for c in at.caption)


def test_a_ready_entry_can_be_downloaded():
    v = kbtools.validate(ready_entry())
    assert v.error is None and not v.template and v.ok and v.downloadable, (v.template, v.cases, v.lint)
    at = editor(ready_entry())
    assert not at.exception
    assert any("kb lint` accepts" in s.value for s in at.success)
    assert not at.get("download_button")[0].proto.disabled


def test_a_failing_case_blocks_the_download():
    text = ready_entry().replace("widget frobnicator not found\n    expect: fire", "something else\n    expect: fire")
    assert text != ready_entry()
    at = editor(text)
    assert not at.exception
    assert "1 of 2 pass" in at.error[0].value
    # the status is not green above a failing case, and names it (issue 18)
    assert not at.success, [s.value for s in at.success]
    case = kbtools.validate(text).cases
    bad = next(c for c in case if not c["ok"])
    assert f"line {bad['line']}: expected fire, got {bad['got']}" in at.error[0].value and bad['case'] in at.error[0].value
    assert at.get("download_button")[0].proto.disabled
    assert any("1 of its cases fail" in c.value for c in at.caption)


def test_a_dangerous_step_without_caveat_blocks_the_download(kb):
    e = kb.by_id()["container-missing-gpu-devices"]
    text = kbtools.entry_source(e).replace("**Caution:**", "Note:")
    v = kbtools.validate(text)
    assert v.error is None and v.ok and v.lint_errors and not v.downloadable
    at = editor(text)
    assert any("dangerous step" in x.value for x in at.error)
    assert at.get("download_button")[0].proto.disabled
    # the shipped entry itself is downloadable
    assert kbtools.validate(kbtools.entry_source(e)).downloadable


def test_an_unknown_placeholder_blocks_the_download():
    text = ready_entry().replace("2. The next one.", "2. Run {torch_instal}.")
    at = editor(text)
    assert "unknown placeholder {torch_instal}" in at.error[0].value.replace("\\", "")
    assert at.get("download_button")[0].proto.disabled


# ------------------------------------------------------------------------------------------------ KB pages
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_kb_list_shows_every_entry_with_its_whole_title(kb, lang):
    at = AppTest.from_file("../ui/kb.py", default_timeout=30)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception
    assert sorted(listed(at)) == sorted(e.id for e in kb.entries) and len(listed(at)) == len(kb.entries)
    body = "\n".join(m.value for m in at.markdown)
    plain = body.replace("\\", "")  # Markdown escapes, not shown by the browser
    from diagnostics.i18n import localized_entry

    for e in kb.entries:  # every title whole (a wrapping list, never a cut cell)
        title = e.title if lang == "en" else localized_entry(e, lang)["title"]
        assert f"[{title}](knowledge-base?entry={e.id})" in plain, e.id
    assert "?guide=1" in body  # the contributor guide


def test_kb_search_on_the_page_finds_by_meaning():
    at = AppTest.from_file("../ui/kb.py", default_timeout=30).run()
    at.text_input(key="kbq").input("vram full").run()
    assert not at.exception
    assert OOM_IDS <= set(listed(at)[:6]), listed(at)[:8]
    assert any("retrieval" in c.value for c in at.caption)


def test_contributor_guide_page_and_links():
    at = AppTest.from_file("../ui/kb.py", default_timeout=30)
    at.query_params["guide"] = "1"
    at.run()
    assert not at.exception
    assert any("# The knowledge base" in m.value for m in at.markdown)
    at = AppTest.from_file("../ui/kb.py", default_timeout=30)
    at.query_params["entry"] = "hip-out-of-memory"
    at.run()
    assert any("?guide=1" in c.value for c in at.caption)
    at = AppTest.from_file("../ui/kb_editor.py", default_timeout=30).run()
    assert any("kb/README.md" in m.value and "?guide=1" in m.value for m in at.markdown)


# ------------------------------------------------------------------------------------------------ guesses never red
@pytest.mark.parametrize("lang,words", [("en", "my vram is full when I generate images"), ("zh", "显存满了，生成图片时报错")])
def test_a_description_only_match_is_possible_causes_not_problem_found(lang, words):
    at = AppTest.from_file("../ui/diagnose.py", default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    at.text_area(key="paste").input(words).run()
    at.button(key="diagnose_text").click().run()
    assert not at.exception
    rep = at.session_state["report"]
    assert rep["possible"] and not [d for d in rep["diagnoses"] if not d.get("benign")]
    from diagnostics.i18n import t

    found = t("ui.render.problem_found", lang, title="").split("**")[1]
    assert not any(found in e.value for e in at.error)  # not the red "Problem found"
    assert not any(t("ui.render.no_problem", lang) in s.value for s in at.success)  # nor an all-clear
    head = t("ui.render.possible_only", lang, count=0, titles="").split("**")[1]
    assert any(head in i.value for i in at.info)
    assert any(t("ui.render.possible_header", lang) in s.value for s in at.subheader)
    # the causes section says the same: no green "No known problem matched" above the guesses (issue 18)
    assert not at.success, [s.value for s in at.success]
    assert any(t("ui.render.no_confirmed_possible", lang) in i.value for i in at.info)


def test_a_confirmed_log_match_is_still_problem_found():
    at = AppTest.from_file("../ui/diagnose.py", default_timeout=60).run()
    at.text_area(key="paste").input('"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
                                    "Aborted (core dumped)\n").run()
    at.button(key="diagnose_text").click().run()
    assert any("Problem found" in e.value for e in at.error)
    assert not any("No confirmed cause" in i.value for i in at.info)
