"""The web UI in each language in a real browser (issue 10): ?lang=zh and ?lang=en on the Diagnose page, the
browser's own Accept-Language, the sidebar choice, and a pasted log diagnosed in Chinese.  A screenshot of the
Chinese page goes to artifacts/screenshots."""
from __future__ import annotations

from diagnostics.i18n import t
from diagnostics.service import get_kb
from tests.e2e.conftest import paste_and_diagnose, shot, wait_app

NO_BINARY = '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\nAborted (core dumped)\n'


def nav_labels(page) -> list[str]:
    """The page names in the sidebar (each link's last line: the first is the Material icon's name)."""
    return [s.strip().splitlines()[-1].strip() for s in page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()]


def test_diagnose_page_in_chinese(server, page):
    page.goto(server.url + "/?lang=zh")
    wait_app(page)
    page.get_by_role("heading", name=t("ui.diagnose.title", "zh")).wait_for()
    body = page.inner_text("body")
    assert "Diagnose a GPU machine-learning setup" not in body
    for key in ("ui.diagnose.run", "ui.diagnose.python_label", "ui.app.language"):
        assert t(key, "zh") in body, key
    for key in ("ui.diagnose.run", "ui.diagnose.python_label", "ui.diagnose.intro"):
        assert t(key, "en") not in body, key
    nav = nav_labels(page)
    assert t("ui.app.nav_diagnose", "zh") in nav and t("ui.app.nav_kb", "zh") in nav, nav
    # a pasted log, diagnosed: the cause and the fix in Chinese, the tool's error text verbatim
    paste_and_diagnose(page, "zh", NO_BINARY)
    kb, _ = get_kb()
    zh_title = kb.by_id()["hip-no-binary-for-gpu"].translations["zh"]["title"]
    body = page.inner_text("body")
    assert zh_title in body
    assert t("ui.render.how_to_fix", "zh").strip("*") in body
    assert "hipErrorNoBinaryForGpu" in body
    assert "Likely causes, most likely first" not in body
    p = shot(page, "i18n-zh-diagnose")
    assert p.stat().st_size > 10_000


def test_diagnose_page_in_english(server, page):
    page.goto(server.url + "/?lang=en")
    wait_app(page)
    page.get_by_role("heading", name="Diagnose a GPU machine-learning setup").wait_for()
    body = page.inner_text("body")
    assert t("ui.diagnose.title", "zh") not in body
    assert "Run diagnosis" in body and "Python interpreter to diagnose" in body
    nav = nav_labels(page)
    assert "Diagnose" in nav and "Knowledge base" in nav, nav


def test_browser_language_and_the_sidebar_choice(server, browser):
    """A Chinese browser (Accept-Language: zh-CN) gets Chinese without ?lang; the sidebar switches to English,
    and the choice holds on the next page."""
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, locale="zh-CN")
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(30_000)
        pg.goto(server.url + "/")
        wait_app(pg)
        pg.get_by_role("heading", name=t("ui.diagnose.title", "zh")).wait_for()
        pg.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
        pg.get_by_role("option", name="English").click()
        pg.get_by_role("heading", name="Diagnose a GPU machine-learning setup").wait_for()
        wait_app(pg)
        pg.locator('[data-testid="stSidebarNav"] a', has_text="Knowledge base").click()
        pg.get_by_role("heading", name="Knowledge base").wait_for()
    finally:
        ctx.close()
