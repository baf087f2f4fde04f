"""Issue 18 journeys in a real browser (Debian chromium through Playwright): a zh-CN browser gets Chinese with
the uploader's own words in Chinese; on a phone (390x844) the results of a pasted log have no horizontal
overflow, the checks board is cards, in English and in Chinese; the session page offers "Copy as a GitHub
issue".  Screenshots refresh docs/screenshots/ (the README and docs/UI.md show them)."""
from __future__ import annotations


import pytest

from diagnostics import service
from diagnostics.i18n import t
from tests.e2e.conftest import PHONE, keep, overflow, paste_and_diagnose, shot, wait_app

NO_BINARY = ('rocBLAS warning: No paths matched /opt/rocm/lib/rocblas/library/*gfx1031*co.\n'
             '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
             "Aborted (core dumped)\n")


def test_zh_cn_browser_gets_chinese_and_a_chinese_uploader(server, browser):
    ctx = browser.new_context(locale="zh-CN", viewport={"width": 1440, "height": 900})
    page = ctx.new_page()
    try:
        page.goto(server.url + "/")  # no ?lang: the browser's own language decides (st.context.locale)
        wait_app(page)
        page.get_by_role("heading", name=t("ui.diagnose.title", "zh")).wait_for()
        page.get_by_role("tab", name=t("ui.diagnose.tab_paste", "zh").split(": ", 1)[1]).click()
        zone = page.locator('[data-testid="stFileUploaderDropzone"]')
        zone.wait_for()
        words = page.evaluate("""() => {
            const b = document.querySelector('[data-testid=stFileUploaderDropzone] > span > button p');
            const l = document.querySelector('[data-testid=stFileUploaderDropzoneInstructions] span');
            return [getComputedStyle(b, '::after').content, getComputedStyle(l, '::after').content,
                    getComputedStyle(b).fontSize, getComputedStyle(l).fontSize];
        }""")
        assert words[0] == '"' + t("ui.upload.button", "zh") + '"', words
        assert "每个文件最多" in words[1], words
        assert words[2] == "0px" and words[3] == "0px", words  # the English words are not drawn
        keep(shot(page, "issue18-zh-uploader"), "diagnose-zh-upload")
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_phone_results_have_no_horizontal_overflow(server, browser, lang):
    ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    try:
        page.goto(server.url + f"/?lang={lang}")
        wait_app(page)
        paste_and_diagnose(page, lang, NO_BINARY)
        assert overflow(page) <= 1, f"{overflow(page)} px past the right edge"
        keep(shot(page, f"issue18-phone-{lang}"), f"phone-diagnose-{lang}")
    finally:
        ctx.close()


def test_phone_session_board_is_cards(server, browser):
    """A saved live-shaped session on a phone: the checks board is cards (no table header), nothing overflows."""
    rep = service.new_report("live")
    res = service.diagnose_text(logs=[("train.log", NO_BINARY)])
    rep.update({k: res[k] for k in ("facts", "diagnoses", "not_ruled_out", "kb_version")})
    rep["logs"] = [{"name": "train.log", "text": NO_BINARY}]
    rep["probes"] = [{"id": "torch", "title": "PyTorch build, devices and smoke test", "status": "crashed",
                      "duration_s": 3.2, "summary": "crashed with SIGABRT during 'smoke test'"},
                     {"id": "nvidia", "title": "NVIDIA driver (nvidia-smi)", "status": "skipped", "duration_s": 0.0,
                      "summary": "nvidia-smi is not installed"},
                     {"id": "devices", "title": "amdgpu driver, /dev/kfd and access rights", "status": "ok",
                      "duration_s": 0.1, "summary": "amdgpu loaded, /dev/kfd opens"}]
    sid = server.store().save(rep)
    ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    try:
        page.goto(server.url + f"/sessions?session={sid}&lang=zh")
        wait_app(page)
        page.get_by_text("已跳过").first.wait_for()
        head = page.evaluate("""() => [...document.querySelectorAll('[data-testid=stMarkdownContainer] thead')]
                                .map(h => getComputedStyle(h).display)""")
        assert head and set(head) == {"none"}, head
        # "已跳过" stays on one line
        h = page.evaluate("""() => { const td = [...document.querySelectorAll('td')].find(x => x.innerText.trim() === '已跳过');
                                     return td ? td.getBoundingClientRect().height : -1; }""")
        assert 0 < h < 40, h
        assert overflow(page) <= 1
        keep(shot(page, "issue18-phone-session-zh"), "phone-session-zh")
        # Copy as a GitHub issue
        page.get_by_role("tab", name=t("ui.sessions.export", "zh")).click()
        page.get_by_text(t("ui.issue.title", "zh")).click()
        page.get_by_text("### Environment").first.wait_for()
    finally:
        ctx.close()


def test_progress_is_monotone_and_stop_ends_the_run(tmp_path, browser, monkeypatch):
    """A run whose torch import hangs: the bar only moves forward, every planned check is listed from the start,
    and Stop ends the run at once with a report that says it was stopped.  Its own server, so that the hanging
    torch (tests/fakes) is on the probes' PYTHONPATH."""
    from tests.e2e.conftest import Server
    from tests.fakes import HANG, make_fake_torch

    monkeypatch.setenv("PYTHONPATH", str(make_fake_torch(tmp_path, HANG)))
    srv = Server(tmp_path)
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    page = ctx.new_page()
    try:
        page.goto(srv.url + "/?lang=en")
        wait_app(page)
        page.get_by_role("button", name="Run diagnosis").click()
        page.locator('[data-testid="stProgress"]').wait_for(timeout=30_000)
        seen, rows = [], 0
        for _ in range(12):
            v = page.evaluate("() => { const b = document.querySelector('[data-testid=stProgress] [role=progressbar]');"
                              " return b ? Number(b.getAttribute('aria-valuenow')) : null; }")
            if v is not None:
                seen.append(v)
            rows = max(rows, page.locator('[data-testid="stMain"] table tbody tr').count())
            page.wait_for_timeout(400)
        assert seen and seen == sorted(seen) and seen[-1] < 100, seen
        assert rows >= 8, rows  # every planned check, waiting ones included
        page.get_by_role("button", name="Stop").click()
        page.get_by_text("Stopped by you").wait_for(timeout=30_000)
        keep(shot(page, "issue18-stopped"), "diagnose-stopped")
    finally:
        ctx.close()
        srv.stop()
