"""Real-browser tests: the app served by `python -m diagnostics serve`, driven by Debian's chromium through
Playwright (no browser download).  Skipped, with the reason, where chromium or playwright is missing."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
# how long one browser step may wait (a hang guard, not a speed check: a 2-core CI machine running the Streamlit
# server, chromium and pytest at once can take tens of seconds for a rerun; speed is measured in bench/bench_ui.py)
STEP_TIMEOUT_MS = 90_000
CHROMIUM = os.environ.get("GPU_DOCTOR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, limit: float = 60) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the server did not become healthy in time")


class Server:
    def __init__(self, tmp: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db = f"sqlite:///{tmp / 'sessions.db'}"
        env = dict(os.environ)
        # no reload-on-save for a served tool (and no inotify bookkeeping while other tests write files)
        env.update({"DATABASE_URL": self.db, "PYTHONUNBUFFERED": "1", "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"})
        self.log = open(tmp / "server.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "diagnostics", "serve", "--port", str(self.port)],
                                     cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.startup_s = wait_healthy(self.url, self.proc)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()

    def store(self):
        from diagnostics.store import Store

        return Store(self.db)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("e2e"))
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, request):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(STEP_TIMEOUT_MS)
    pg.dialogs = []  # any alert()/confirm() a hostile text managed to run ends up here
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    yield pg
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        pg.screenshot(path=str(SHOTS / f"last-{request.node.name}.png"), full_page=True)
    except Exception:
        pass
    ctx.close()


def shot(page, name: str, max_height: int = 4000) -> Path:
    """A full-page screenshot kept as a test artifact (artifacts/screenshots, not committed)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    p = SHOTS / f"{name}.png"
    # Streamlit scrolls inside its main section, so a "full page" shot would be one screen: grow the viewport
    size = page.viewport_size or {"width": 1440, "height": 900}
    h = page.evaluate("() => Math.max(...[...document.querySelectorAll('section, [data-testid=stMain], "
                      "[data-testid=stAppViewContainer], [data-testid=stMainBlockContainer]')]"
                      ".map(e => e.scrollHeight), document.body.scrollHeight)")
    page.set_viewport_size({"width": size["width"], "height": int(min(max(h + 120, size["height"]), max_height))})
    page.evaluate("() => document.fonts.ready.then(() => true)")
    page.wait_for_timeout(2500)  # code blocks and charts paint a moment after a resize
    page.screenshot(path=str(p))
    page.set_viewport_size(size)
    return p


def wait_app(page, settle_ms: int = 600) -> None:
    """Wait until Streamlit has run the page script, its output is on screen and the page stopped changing."""
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=60_000)  # every page has a title
    page.wait_for_function("() => { const w = document.querySelector('[data-testid=\"stStatusWidget\"]');"
                           " return !w || !/Running|Stop/.test(w.innerText); }", timeout=60_000)
    # lazily loaded elements (data grids, charts) show a skeleton first
    page.wait_for_function("() => !document.querySelector('[data-testid=stSkeleton], [data-testid=stSkeletonElement]')",
                           timeout=30_000)
    last, stable = None, 0
    for _ in range(150):
        size = page.evaluate("() => { const m = document.querySelector('[data-testid=stMain]');"
                             " return m ? m.innerText.length : 0; }")
        stable = stable + 1 if size == last else 0
        if stable * 100 >= settle_ms:
            return
        last = size
        page.wait_for_timeout(100)


# ---------------------------------------------------------------------------------------------- shared steps
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
DOCS = ROOT / "docs" / "screenshots"


def context(browser, view: str):
    if view == "phone":
        ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, accept_downloads=True)
    else:
        ctx = browser.new_context(viewport=DESKTOP, accept_downloads=True)
    ctx.set_default_timeout(STEP_TIMEOUT_MS)
    return ctx


def alerts(page) -> list[tuple[str, str]]:
    """(kind, text) of every alert box on the page: kind is error, warning, info or success."""
    return page.evaluate("""() => [...document.querySelectorAll('[data-testid^=stAlertContent]')]
        .map(c => [c.dataset.testid.replace('stAlertContent', '').toLowerCase(), c.innerText])""")


def overflow(page) -> int:
    """How many pixels the widest element sticks out past the right edge of the screen (0: none)."""
    return page.evaluate("""() => {
        const w = document.documentElement.clientWidth; let worst = 0;
        for (const e of document.querySelectorAll('[data-testid=stMain] *')) {
            const r = e.getBoundingClientRect();
            if (r.width === 0 || r.height === 0) continue;
            // a code box or data grid scrolls inside itself: its own box is what counts
            if (e.closest('pre, [data-testid=stDataFrame], [data-testid=stCode] , canvas')) continue;
            worst = Math.max(worst, r.right - w);
        }
        return Math.max(0, Math.round(worst), document.documentElement.scrollWidth - w);
    }""")


def keep(p: Path, name: str) -> None:
    """Refresh a screenshot of docs/ from this run."""
    DOCS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(p, DOCS / f"{name}.png")


def paste_and_diagnose(page, lang: str, text: str, until: str = "ui.render.causes") -> None:
    """On the Diagnose page: open the Paste tab, paste *text*, press "Diagnose" and wait until the heading of
    catalogue key *until* (the confirmed causes by default; "ui.render.possible_header" for guesses) is shown."""
    from diagnostics.i18n import t

    page.get_by_role("tab", name=t("ui.diagnose.tab_paste", lang).split(": ", 1)[1]).click()
    page.get_by_role("textbox", name=t("ui.diagnose.paste_label", lang), exact=True).fill(text)
    page.get_by_role("button", name=t("ui.diagnose.diagnose_pasted", lang)).click()
    page.get_by_text(t(until, lang)).wait_for(timeout=60_000)
    wait_app(page)
