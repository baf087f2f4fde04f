"""End-to-end in a real browser: run a diagnosis, save it, open it by its link; paste a log; validate a broken
KB entry; hostile text stays text.  Screenshots of each page go to artifacts/screenshots."""
from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import shot, wait_app

HOSTILE = ('<script>alert("xss-script")</script> <img src=x onerror=alert("xss-img")> '
           '[click me](javascript:alert("xss-link")) <b>bold?</b>')


def no_script_ran(page) -> None:
    assert page.dialogs == [], f"hostile text ran: {page.dialogs}"
    assert page.locator('a[href^="javascript:"]').count() == 0
    assert page.locator("img[onerror]").count() == 0


def test_run_diagnosis_save_and_open_by_link(server, page):
    page.goto(server.url + "/")
    wait_app(page)
    shot(page, "01-diagnose-start")
    page.get_by_text("Also run a test generation with a small model").click()
    page.get_by_role("button", name="Run diagnosis").click()
    page.get_by_text("checks finished").wait_for(timeout=30_000)  # live progress while the probes run
    shot(page, "01b-diagnose-progress")
    page.get_by_text("Likely causes, most likely first").wait_for(timeout=120_000)
    page.get_by_text("Checks", exact=True).wait_for()
    body = page.inner_text("body")
    # this machine has no AMD GPU and a CPU torch: the board says so, the causes name it
    assert "PyTorch build" in body and "CPU-only build" in body
    assert "failed" in body and "passed" in body
    assert "Likely causes" in body
    # the test generation ran the built-in model on this machine's CPU torch: figures and the chart
    page.get_by_text("Tokens generated over time").wait_for(timeout=60_000)
    page.locator('[data-testid="stMetricLabel"]', has_text="Tokens per second").first.wait_for()
    page.locator('[data-testid="stVegaLiteChart"]').first.wait_for()
    wait_app(page)
    shot(page, "02-diagnose-result")
    page.get_by_role("button", name=re.compile("Save this session")).click()
    link = page.locator("code", has_text="/sessions?session=").first
    link.wait_for()
    url = link.inner_text().strip()
    sid = url.rsplit("=", 1)[1]
    assert re.fullmatch(r"[0-9a-f-]{36}", sid)
    assert server.store().get(sid)["session_id"] == sid
    page.goto(url)
    wait_app(page)
    page.get_by_role("heading", name=f"Session {sid[:8]}").wait_for()
    page.get_by_text("Likely causes, most likely first").wait_for()
    shot(page, "03-session")
    # the start page with ?session= sends the visitor to the same session
    page.goto(server.url + f"/?session={sid}")
    page.get_by_role("heading", name=f"Session {sid[:8]}").wait_for()
    no_script_ran(page)


def test_paste_a_log_and_see_its_diagnosis(server, page):
    page.goto(server.url + "/")
    wait_app(page)
    page.get_by_role("tab", name=re.compile("Paste logs")).click()
    box = page.get_by_role("textbox", name="Logs or dumps", exact=True)
    # the abort from a real report (ROCm/ROCm#2536-style wording), with hostile HTML around it
    box.fill('rocBLAS warning: No paths matched /opt/rocm/lib/rocblas/library/*gfx1031*co\n'
             '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
             'Aborted (core dumped)\n' + HOSTILE + "\n")
    box.press("Control+Enter")
    page.get_by_role("button", name="Diagnose the pasted text").click()
    page.get_by_text("Likely causes, most likely first").wait_for(timeout=60_000)
    wait_app(page)
    page.get_by_text("The torch build has no GPU code for this GPU").first.wait_for()
    page.locator("mark", has_text="hipErrorNoBinaryForGpu").first.wait_for()  # the evidence, highlighted
    page.get_by_text("Pasted logs and dumps").click()
    page.get_by_text('<script>alert("xss-script")</script>').first.wait_for()
    shot(page, "04-diagnose-pasted")
    no_script_ran(page)


def test_validate_a_broken_kb_entry(server, page):
    page.goto(server.url + "/kb-editor")
    wait_app(page)
    box = page.get_by_role("textbox", name="Entry (YAML)")
    text = box.input_value()
    assert text.startswith("id: my-new-failure")
    broken = text.replace("severity: error", "severity: catastrophic")
    box.fill(broken)
    box.press("Control+Enter")
    page.get_by_text("Line 3, column 11").wait_for()
    wait_app(page)
    assert "severity must be one of critical, error, warning, info" in page.inner_text("body")
    assert page.get_by_role("button", name="Download the YAML").is_disabled()
    wait_app(page)
    shot(page, "05-kb-editor-error")
    # the template itself is flagged as the template (issue 18): a real entry names its own id, title, source
    # and error text
    box.fill(text.replace("my-new-failure", "my-fixed-failure")
             .replace("One line that names the cause, not the symptom", "The widget frobnicator is missing")
             .replace("https://example.org/the-issue-thread-you-learned-it-from", "https://github.com/ROCm/ROCm/issues/1")
             .replace("https://example.org/the-doc-that-says-so", "https://rocm.docs.amd.com/")
             .replace("exact error text from a real report", "widget frobnicator not found"))
    box.press("Control+Enter")
    page.get_by_text("Valid entry").wait_for()
    page.get_by_text("Its own cases: 2 of 2 pass.").wait_for()
    wait_app(page)
    assert page.get_by_role("button", name="Download the YAML").is_enabled()
    wait_app(page)
    shot(page, "06-kb-editor-valid")


def test_browse_the_knowledge_base(server, page):
    page.goto(server.url + "/knowledge-base")
    wait_app(page)
    page.get_by_role("textbox", name="Search symptoms, error text or ids").fill("invalid device function")
    page.get_by_role("textbox", name="Search symptoms, error text or ids").press("Enter")
    page.get_by_text(re.compile(r"\d+ of \d+ entries")).wait_for()
    wait_app(page)
    shot(page, "07-kb-list")
    page.goto(server.url + "/knowledge-base?entry=hip-invalid-device-function")
    wait_app(page)
    page.get_by_text("When it fires").wait_for()
    page.get_by_text(re.compile(r"\d+ of \d+ cases pass")).wait_for()
    shot(page, "08-kb-entry")


def test_hostile_session_renders_as_text(server, page):
    from diagnostics import service

    rep = service.new_report("pasted")
    rep["host"] = "<b>evil-host</b>"
    rep["logs"] = [{"name": "<script>alert('name')</script>", "text": HOSTILE}]
    rep["diagnoses"] = [{"id": "hostile", "title": HOSTILE, "severity": "error", "confidence": 0.9,
                         "evidence": [{"source": "<img src=x onerror=alert(1)>", "excerpt": HOSTILE, "kind": "log"}],
                         "fix": HOSTILE + "\n\n1. step [x](javascript:alert('fix'))", "cause": HOSTILE,
                         "links": ["javascript:alert('link')", "https://example.org/ok"]}]
    store = server.store()
    sid = store.save(rep)
    store.add_note(sid, "<i>mallory</i>", HOSTILE)
    page.goto(server.url + f"/sessions?session={sid}")
    wait_app(page)
    page.get_by_role("heading", name=f"Session {sid[:8]}").wait_for()
    page.get_by_role("tab", name=re.compile("Notes")).click()
    page.get_by_text("<i>mallory</i>", exact=False).wait_for()
    assert page.get_by_text('<script>alert("xss-script")</script>', exact=False).count() >= 1
    page.wait_for_timeout(500)
    no_script_ran(page)


def test_the_app_process_never_imports_torch(server, page):
    """After diagnoses (with a test generation) ran through this server: no libtorch in the app's memory map.
    The probes and the generation import torch in their own child processes, which are not checked."""
    import psutil

    from bench.bench_app import torch_mapped

    # `diagnostics serve` runs the Streamlit server in its own process (no second interpreter)
    app = [server.proc.pid] + [c.pid for c in psutil.Process(server.proc.pid).children(recursive=False)
                               if "python" in " ".join(c.cmdline()) and "streamlit" in " ".join(c.cmdline())]
    maps = {pid: torch_mapped(pid) for pid in app}
    assert not any(maps.values()), maps
    # the check can see a torch when there is one: the server has its Python runtime mapped
    assert "python" in open(f"/proc/{app[0]}/maps").read()


def test_sessions_list(server, page):
    server.store().save(pasted("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.25 GiB"))
    page.goto(server.url + "/sessions")
    wait_app(page)
    page.get_by_role("heading", name="Saved sessions").wait_for()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    wait_app(page)
    shot(page, "09-sessions")


def pasted(text: str) -> dict:
    from diagnostics import service

    res = service.diagnose_text(logs=[("log", text)])
    rep = service.new_report("pasted")
    rep.update({k: res[k] for k in ("facts", "diagnoses", "not_ruled_out", "kb_version")})
    rep["logs"] = [{"name": "log", "text": text}]
    return rep


def test_import_a_bundle_then_compare(server, page, tmp_path):
    from diagnostics.store import Store

    elsewhere = Store(f"sqlite:///{tmp_path / 'elsewhere.db'}")
    sid = elsewhere.save(pasted("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.25 GiB. GPU 0 has "
                                "a total capacity of 7.98 GiB of which 1.45 GiB is free."))
    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(elsewhere.export_bundle(sid))
    elsewhere.close()
    before = server.store().save(pasted('"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"'))
    page.goto(server.url + "/sessions")
    wait_app(page)
    page.get_by_text("Import a bundle someone sent you").click()
    page.locator('[data-testid="stFileUploader"] input[type=file]').set_input_files(str(bundle))
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("Imported.").wait_for()
    page.get_by_role("button", name="Open it").click()
    page.get_by_role("heading", name=f"Session {sid[:8]}").wait_for()
    assert server.store().info(sid)["imported"]
    page.get_by_role("tab", name="Compare").click()
    page.get_by_role("combobox", name="Earlier or later session").click()
    page.get_by_role("option", name=re.compile(before[:8])).click()
    page.get_by_text(re.compile(r"Gone$")).first.wait_for()
    page.get_by_text("The GPU ran out of memory").locator("visible=true").first.wait_for()  # gone in the later session
    page.get_by_text("The torch build has no GPU code").locator("visible=true").first.wait_for()  # new in it
    wait_app(page)
    shot(page, "10-session-compare")


def test_keyboard_only(server, page):
    """Reach the paste box, fill it and run the diagnosis with the keyboard alone."""
    page.goto(server.url + "/")
    wait_app(page)

    def tab_to(js_pred: str, limit: int = 150) -> None:
        for _ in range(limit):
            page.keyboard.press("Tab")
            if page.evaluate(f"() => {{ const e = document.activeElement; return !!e && ({js_pred}); }}"):
                return
        where = page.evaluate("() => document.activeElement && document.activeElement.outerHTML.slice(0, 200)")
        raise AssertionError(f"Tab never reached: {js_pred}; focus is on {where}")

    tab_to("e.getAttribute('role') === 'tab'")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    tab_to("e.tagName === 'TEXTAREA' && e.getAttribute('aria-label') === 'Logs or dumps'")
    page.keyboard.insert_text("RuntimeError: HIP error: invalid device function\n")
    page.keyboard.press("Control+Enter")
    wait_app(page)
    tab_to("e.tagName === 'BUTTON' && e.innerText.includes('Diagnose the pasted text')")
    page.keyboard.press("Enter")
    page.get_by_text("Likely causes, most likely first").wait_for(timeout=60_000)
    page.get_by_text("A GPU kernel is missing for this gfx target").first.wait_for()
