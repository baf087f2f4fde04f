"""Each user's journey end to end, at both viewports (1440x900 and a 390x844 phone), in English and in Chinese
(issue 18), in a real browser (Debian chromium through Playwright):

- a teammate pastes a failing log, reads the cause in their language, saves the session and opens its link;
- a support engineer opens a saved session, adds a note (the Notes tab stays open, the note is there) and takes
  the ready-to-paste GitHub issue from the Export tab;
- a contributor searches the knowledge base by meaning, opens an entry and sees its cases pass, and finds the
  untouched editor template flagged as a template, not downloadable.

On the phone nothing sticks out past the right edge at any step."""
from __future__ import annotations

import re

import pytest

from diagnostics import service
from diagnostics.i18n import t
from tests.e2e.conftest import alerts, context, overflow, paste_and_diagnose, wait_app
from tests.e2e.test_e2e_issue18 import NO_BINARY

VIEWS = ["desktop", "phone"]
LANGS = ["en", "zh"]
MEMORY_WORDS = {"en": "vram full", "zh": "显存满了"}


def _title(entry_id: str, lang: str) -> str:
    kb, _ = service.get_kb()
    e = kb.by_id()[entry_id]
    return (e.translations.get(lang) or {}).get("title") or e.title


def _fits(page, view: str, step: str) -> None:
    if view == "phone":
        px = overflow(page)
        assert px <= 1, f"{step}: {px} px past the right edge of the phone"


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("lang", LANGS)
def test_teammate_pastes_a_log_saves_and_opens_the_link(server, browser, lang, view):
    ctx = context(browser, view)
    page = ctx.new_page()
    try:
        page.goto(server.url + f"/?lang={lang}")
        wait_app(page)
        paste_and_diagnose(page, lang, NO_BINARY)
        title = _title("hip-no-binary-for-gpu", lang)
        page.get_by_text(title).first.wait_for()
        assert any(k == "error" for k, _ in alerts(page)), "a confirmed cause is a problem: the banner is red"
        _fits(page, view, "result")
        page.get_by_role("button", name=t("ui.diagnose.save", lang)).click()
        link = page.locator("code", has_text="/sessions?session=").first
        link.wait_for(timeout=30_000)
        url = link.inner_text().strip()
        sid = url.rsplit("=", 1)[1]
        assert re.fullmatch(r"[0-9a-f-]{36}", sid) and server.store().get(sid)["session_id"] == sid
        assert page.get_by_role("button", name=t("ui.diagnose.save", lang)).count() == 0  # no second "Save"
        page.goto(url + f"&lang={lang}")
        wait_app(page)
        page.get_by_role("heading", name=t("ui.sessions.session", lang, sid=sid[:8])).wait_for()
        page.get_by_text(title).first.wait_for()
        _fits(page, view, "session page")
    finally:
        ctx.close()


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("lang", LANGS)
def test_support_reviews_a_session_adds_a_note_and_copies_the_issue(server, browser, lang, view):
    res = service.diagnose_text(logs=[("train.log", NO_BINARY)])
    rep = service.new_report("pasted")
    rep.update({k: res[k] for k in ("facts", "diagnoses", "not_ruled_out", "kb_version")})
    rep["logs"] = [{"name": "train.log", "text": NO_BINARY}]
    sid = server.store().save(rep)
    note = f"asked the user for rocminfo ({lang}/{view})"
    ctx = context(browser, view)
    page = ctx.new_page()
    try:
        page.goto(server.url + f"/sessions?session={sid}&lang={lang}")
        wait_app(page)
        page.get_by_role("heading", name=t("ui.sessions.session", lang, sid=sid[:8])).wait_for()
        page.get_by_role("tab", name=t("ui.sessions.notes_tab", lang, count=0)).click()
        page.get_by_role("textbox", name=t("ui.sessions.your_name", lang)).fill("support")
        page.get_by_role("textbox", name=t("ui.sessions.note", lang), exact=True).fill(note)
        page.get_by_role("button", name=t("ui.sessions.add_note", lang)).click()
        page.get_by_text(t("ui.sessions.note_added", lang)).wait_for(timeout=30_000)
        wait_app(page)
        notes_tab = page.get_by_role("tab", name=t("ui.sessions.notes_tab", lang, count=1))
        assert notes_tab.get_attribute("aria-selected") == "true", "adding a note must not jump to another tab"
        page.get_by_text(note).first.wait_for()
        assert [n["text"] for n in server.store().notes(sid)] == [note]
        _fits(page, view, "notes")
        page.get_by_role("tab", name=t("ui.sessions.export", lang)).click()
        page.get_by_text(t("ui.issue.title", lang)).click()
        page.get_by_text("### Environment").first.wait_for()
        _fits(page, view, "export")
    finally:
        ctx.close()


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("lang", LANGS)
def test_contributor_searches_opens_an_entry_and_meets_the_template(server, browser, lang, view):
    ctx = context(browser, view)
    page = ctx.new_page()
    try:
        page.goto(server.url + f"/knowledge-base?lang={lang}")
        wait_app(page)
        box = page.get_by_role("textbox", name=t("ui.kb.search_label", lang))
        box.fill(MEMORY_WORDS[lang])
        box.press("Enter")
        page.get_by_text(t("ui.kb.ranked", lang)[:20]).wait_for(timeout=30_000)
        wait_app(page)
        assert _title("hip-out-of-memory", lang) in page.inner_text("body")
        _fits(page, view, "kb search")
        page.goto(server.url + f"/knowledge-base?entry=hip-out-of-memory&lang={lang}")
        wait_app(page)
        page.get_by_text(re.compile(re.escape(t("ui.kb.cases_pass", lang, passed="§", total="§"))
                                    .replace("§", r"\d+"))).wait_for()
        passed = re.search(t("ui.kb.cases_pass", lang, passed="(\\d+)", total="(\\d+)").replace(".", "\\."),
                           page.inner_text("body"))
        assert passed and passed.group(1) == passed.group(2), "every case of a shipped entry passes"
        _fits(page, view, "kb entry")
        page.goto(server.url + f"/kb-editor?lang={lang}")
        wait_app(page)
        head = t("ui.kb_editor.still_template", lang, parts="§").split("§")[0]
        page.get_by_text(head[:12]).first.wait_for()
        assert page.get_by_role("button", name=t("ui.kb.download_yaml", lang)).is_disabled()
        _fits(page, view, "kb editor")
    finally:
        ctx.close()
