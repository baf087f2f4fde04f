"""Every page of the web UI in each language (issue 10), with AppTest.

Each page runs with ``st.session_state["lang"]`` set (what the sidebar choice keeps), and must: run without an
exception, show a known heading or label in that language, and in Chinese show none of the English UI text of
the message catalogue (every English message whose text the Chinese one does not also contain is looked for in
the page's titles, labels, captions, buttons, tabs, expanders, metrics, alerts and plain Markdown).  KB prose
on the pages comes from the entries' ``translations.zh`` blocks.
"""
from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from diagnostics import service
from diagnostics.i18n import catalogue, t

NO_BINARY = '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\nAborted (core dumped)\n'
OOM = ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "15.98 GiB of which 1.02 GiB is free.\n")
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def temp_db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.delenv("GPU_DOCTOR_SECRET", raising=False)
    return url


@pytest.fixture
def store(temp_db):
    from diagnostics.store import Store

    s = Store(temp_db)
    yield s
    s.close()


def plain(s: str) -> str:
    """Screen text without the backslashes that escape Markdown characters in labels."""
    return s.replace("\\", "")


def pasted_report(text: str) -> dict:
    res = service.diagnose_text(logs=[("pasted text", text)])
    rep = service.new_report("pasted")
    rep.update({k: res[k] for k in ("facts", "diagnoses", "not_ruled_out", "kb_version")})
    rep["logs"] = [{"name": "pasted text", "text": text}]
    rep["verdict"] = service.verdict(rep)
    return rep


def page(path: str, language: str, **query: str) -> AppTest:
    at = AppTest.from_file(f"../{path}", default_timeout=60)
    at.session_state["lang"] = language
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


# ------------------------------------------------------------------------------------------------ what is on screen
def chrome(at: AppTest) -> list[str]:
    """The UI text of a page: headings, labels, placeholders, options, captions, alerts, buttons, tabs, expanders,
    metrics and Markdown that is not KB prose (KB prose is passed as sanitised HTML)."""
    out: list[str] = []
    for kind in ("title", "header", "subheader", "caption", "info", "warning", "error", "success"):
        out += [e.value for e in getattr(at, kind)]
    out += [m.value for m in at.markdown if not m.proto.allow_html]
    for kind in ("button", "text_input", "text_area", "checkbox", "selectbox", "multiselect", "radio",
                 "number_input", "date_input", "expander", "tabs", "metric"):
        for e in getattr(at, kind):
            out.append(str(getattr(e, "label", "") or ""))
            out.append(str(getattr(e, "placeholder", "") or ""))
            out.append(str(getattr(e.proto, "help", "") or ""))
            if kind in ("selectbox", "multiselect", "radio") and e.key != "tags":  # KB tags are identifiers
                out += [str(o) for o in e.options]
    for kind in ("download_button", "file_uploader"):
        out += [str(e.proto.label) for e in at.get(kind)]
    out += [str(c) for d in at.dataframe for c in d.value.columns]
    return [s for s in out if s]


_GLUE = {"of", "the", "a", "an", "to", "in", "on", "at", "by", "for", "and", "or", "all", "any", "is", "are"}


def _fragments(en: str, zh: str) -> list[str]:
    """The literal parts of an English message that mark it as English UI text: the text between placeholders,
    without Material icon names, kept when the Chinese message does not contain them too.  A part made only of
    glue words ("of the", between two placeholders) marks nothing: any English KB text (a case's name) has it."""
    parts = re.split(r"\{[^{}]*\}|:material/[a-z_0-9]+:|:[a-z]+\[|\]", en)
    out = []
    for p in parts:
        p = p.strip(" *:·—()…,.\n")
        if len(p) >= 4 and re.search(r"[A-Za-z]{3}", p) and p not in zh and not set(p.lower().split()) <= _GLUE:
            out.append(p)
    return out


ENGLISH_UI = [(k, frag) for k, v in catalogue("en").items()
              if k.split(".")[0] in ("ui", "status", "verdict", "severity_word", "generation_word", "value")
              for frag in _fragments(v, catalogue("zh").get(k, ""))]


def english_leaks(at: AppTest) -> list[tuple[str, str, str]]:
    """(key, English text, where) for English catalogue text on a page that should be Chinese.  A fragment of
    one word must be a whole screen text to count (a single word such as "Search" can occur inside tool output);
    longer fragments count anywhere."""
    leaks = []
    texts = chrome(at)
    for key, frag in ENGLISH_UI:
        multi = " " in frag
        for s in texts:
            if (multi and frag in s) or (not multi and s.strip(" *:·") == frag):
                leaks.append((key, frag, s[:120]))
                break
    return leaks


def assert_chinese(at: AppTest) -> None:
    assert not at.exception, at.exception
    leaks = english_leaks(at)
    assert not leaks, leaks[:10]
    texts = chrome(at)
    assert sum(1 for s in texts if CJK.search(s)) >= 3, texts[:20]


# ------------------------------------------------------------------------------------------------ the leak check works
def test_leak_check_sees_english_on_an_english_page():
    """The check below would catch a page left in English: run on the English page it finds leaks."""
    at = page("ui/diagnose.py", "en")
    assert not at.exception
    keys = {k for k, _, _ in english_leaks(at)}
    assert {"ui.diagnose.title", "ui.diagnose.run", "ui.diagnose.python_label"} <= keys


def test_fragments():
    assert _fragments("Session {sid}", "会话 {sid}") == ["Session"]
    assert _fragments("e.g. gfx1100 rocm6.2 hip-no-binary", "例如 gfx1100 rocm6.2 hip-no-binary") == \
        ["e.g. gfx1100 rocm6.2 hip-no-binary"]
    assert _fragments("`kb lint` reports it as:", "`kb lint` 的报告：") == ["`kb lint` reports it as"]
    assert _fragments(":material/computer: Check this machine", ":material/computer: 检查本机") == ["Check this machine"]


# ------------------------------------------------------------------------------------------------ Diagnose
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_diagnose_page(lang):
    at = page("ui/diagnose.py", lang)
    assert not at.exception
    assert at.title[0].value == t("ui.diagnose.title", lang)
    assert at.button(key="diagnose_text").label == t("ui.diagnose.diagnose_pasted", lang)
    assert at.text_input(key="python").label == t("ui.diagnose.python_label", lang)
    assert [tab.label for tab in at.tabs] == [t("ui.diagnose.tab_machine", lang), t("ui.diagnose.tab_paste", lang)]
    # the pasted-text diagnosis: the report in the same language, KB prose from the entry's translation
    at.text_area(key="paste").input(NO_BINARY)
    at.button(key="diagnose_text").click().run()
    assert not at.exception
    kb, _ = service.get_kb()
    entry = kb.by_id()["hip-no-binary-for-gpu"]
    want = entry.title if lang == "en" else entry.translations["zh"]["title"]
    assert any(want in plain(e.value) for e in at.error), [e.value for e in at.error]  # the headline names it
    assert any(want in plain(ex.label) for ex in at.expander)
    assert any(s.value == t("ui.render.causes", lang) for s in at.subheader)
    assert any(m.value == t("ui.render.how_to_fix", lang) for m in at.markdown)
    # the error text the tool saw stays verbatim in the evidence
    assert any("hipErrorNoBinaryForGpu" in m.value for m in at.markdown if m.proto.allow_html)
    if lang == "zh":
        assert_chinese(at)
        assert at.session_state["report"]["diagnoses"][0]["title"] == entry.title  # the stored report stays English
    else:
        assert "Diagnose a GPU machine-learning setup" == at.title[0].value


def test_diagnose_nothing_pasted_in_chinese():
    at = page("ui/diagnose.py", "zh")
    at.button(key="diagnose_text").click().run()
    assert at.warning[0].value == "请先粘贴文本或上传文件。"


# ------------------------------------------------------------------------------------------------ Sessions
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sessions_list(lang, store):
    store.save(pasted_report(NO_BINARY))
    at = page("ui/sessions.py", lang)
    assert not at.exception
    assert at.title[0].value == t("ui.sessions.title", lang)
    assert at.text_input(key="q").label == t("ui.sessions.search", lang)
    assert t("ui.sessions.col_host", lang) in at.dataframe[0].value.columns
    assert t("verdict.problems", lang) in list(at.dataframe[0].value[t("ui.sessions.col_verdict", lang)])
    assert t("ui.sessions.any_verdict", lang) in at.selectbox(key="verdict").options
    if lang == "zh":
        assert_chinese(at)
        assert "发现问题" in at.selectbox(key="verdict").options


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_session_page(lang, store):
    other = store.save(pasted_report(OOM))
    sid = store.save(pasted_report(NO_BINARY))
    at = page("ui/sessions.py", lang, session=sid)
    assert not at.exception
    assert at.title[0].value == t("ui.sessions.session", lang, sid=sid[:8])
    assert [tab.label for tab in at.tabs] == [t("ui.sessions.report", lang), t("ui.sessions.notes_tab", lang, count=0),
                                              t("ui.sessions.compare", lang), t("ui.sessions.export", lang)]
    assert [b.proto.label for b in at.get("download_button")] == [
        t("ui.sessions.bundle", lang), t("ui.sessions.markdown_report", lang), t("ui.sessions.html_report", lang),
        t("ui.issue.download", lang)]
    at.selectbox(key="compare_with").set_value(other).run()
    assert not at.exception
    assert any(c.value.startswith(t("ui.sessions.from_to", lang, before_id="", after_id="", before="", after="")[:2])
               for c in at.caption)
    if lang == "zh":
        assert at.selectbox(key=f"status_{sid}").options == ["新建", "调查中", "已解决"]
        assert_chinese(at)


def test_generation_figures_in_chinese(store):
    """The test-generation part of a report (metrics, curves, comparison) in Chinese."""
    rep = pasted_report(NO_BINARY)
    rep["source"] = "live"
    rep["generation"] = {"status": "ok", "device": "cuda", "model": "builtin:tiny", "dtype": "float16",
                         "new_tokens": 32, "tokens_per_s": 410.0, "decode_tokens_per_s": 450.0, "ttft_s": 0.012,
                         "load_s": 0.8, "peak_rss_bytes": 900 << 20, "cpu_tokens_per_s": 80.0, "cpu_ttft_s": 0.03,
                         "gpu_vs_cpu_ratio": 5.125, "text": "hello", "warnings": []}
    rep["probes"] = [{"id": "torch", "title": "PyTorch build", "status": "fail", "duration_s": 1.5,
                      "summary": "torch 2.5.1+rocm6.2", "error": None},
                     {"id": "kfd", "title": "/dev/kfd", "status": "ok", "duration_s": 0.1, "summary": "", "error": None}]
    sid = store.save(rep)
    at = page("ui/sessions.py", "zh", session=sid)
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["每秒 token 数"] == "410.0" and metrics["首 token 延迟"] == "0.012 秒"
    assert any("GPU 的生成速度是 CPU 的 5.12 倍" in c.value for c in at.caption)
    board = next(m.value for m in at.markdown if m.value.startswith("| | 检查项 | 结果"))
    assert "失败" in board and "通过" in board and "PyTorch 构建、设备与冒烟测试" in board  # known checks are named in zh
    assert_chinese(at)


def test_session_link_with_lang_query_param(store):
    """?lang=zh in a shared link switches the page to Chinese, whatever was chosen before."""
    sid = store.save(pasted_report(NO_BINARY))
    at = page("ui/sessions.py", "en", session=sid, lang="zh")
    assert not at.exception
    assert at.title[0].value == f"会话 {sid[:8]}"
    assert at.session_state["lang"] == "zh"


# ------------------------------------------------------------------------------------------------ Knowledge base
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_kb_list(lang):
    at = page("ui/kb.py", lang)
    assert not at.exception
    assert at.title[0].value == t("ui.app.nav_kb", lang)
    kb, _ = service.get_kb()
    body = "\n".join(m.value for m in at.markdown).replace("\\", "")  # the list, Markdown escapes removed
    e = kb.by_id()["hip-out-of-memory"]
    assert f"[{e.title if lang == 'en' else e.translations['zh']['title']}](knowledge-base?entry={e.id})" in body

    def listed():
        return re.findall(r"\?entry=([A-Za-z0-9_.-]+)\)", "\n".join(m.value for m in at.markdown))

    if lang == "zh":
        assert_chinese(at)
        at.text_input(key="kbq").input("hipErrorNoBinaryForGpu").run()   # search still finds the English error text
        assert "hip-no-binary-for-gpu" in listed()
        at.text_input(key="kbq").input("显存").run()                       # and the Chinese text of the entries
        found = listed()
        assert "hip-out-of-memory" in found and len(found) < len(kb.entries)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_kb_entry(lang):
    at = page("ui/kb.py", lang, entry="hip-out-of-memory")
    assert not at.exception
    kb, _ = service.get_kb()
    e = kb.by_id()["hip-out-of-memory"]
    title = e.title if lang == "en" else e.translations["zh"]["title"]
    assert title in plain(at.title[0].value)
    heads = [s.value for s in at.subheader]
    assert t("ui.kb.what_user_sees", lang) in heads and t("ui.kb.when_it_fires", lang) in heads
    prose = "\n".join(m.value for m in at.markdown if m.proto.allow_html)
    for field in ("symptoms", "cause", "fix"):
        text = getattr(e, field) if lang == "en" else e.translations["zh"][field]
        words = re.findall(r"[A-Za-z][A-Za-z ]{14,}" if lang == "en" else r"[\u4e00-\u9fff]{4,}", text)
        assert words and words[0].strip() in prose, (field, words[:1])
    cond = "\n".join(c.value for c in at.code)
    assert (t("ui.kb.cond_any", lang) in cond) or (t("ui.kb.cond_all", lang) in cond)
    if lang == "zh":
        assert_chinese(at)


# ------------------------------------------------------------------------------------------------ KB editor
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_kb_editor(lang):
    at = page("ui/kb_editor.py", lang)
    assert not at.exception
    assert at.title[0].value == t("ui.kb_editor.title", lang)
    assert at.text_area(key="yaml").label == t("ui.kb_editor.entry_yaml", lang)
    assert t("ui.kb_editor.check", lang) in [s.value for s in at.subheader]
    assert at.radio(key="start").options[0] == t("ui.kb_editor.start_template", lang)
    if lang == "zh":
        assert_chinese(at)
        # a broken entry: the message around the lint error is Chinese, the lint line stays as `kb lint` prints it
        at.text_area(key="yaml").input("id: x\n").run()
        assert at.error[0].value.startswith("**第 ")
        assert any("missing required key" in c.value for c in at.code)


# ------------------------------------------------------------------------------------------------ the app and the choice
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_app_navigation_and_picker(lang):
    at = page("app.py", lang)
    assert not at.exception
    assert at.title[0].value == t("ui.diagnose.title", lang)
    picker = at.sidebar.selectbox[0]
    assert picker.label == t("ui.app.language", lang)
    assert picker.options == ["English", "简体中文"]
    assert picker.value == lang


def test_sidebar_choice_switches_the_language():
    at = page("app.py", "en")
    assert at.title[0].value == "Diagnose a GPU machine-learning setup"
    at.sidebar.selectbox[0].set_value("zh").run()
    assert not at.exception
    assert at.session_state["lang"] == "zh"
    assert at.title[0].value == "诊断 GPU 机器学习环境"
    at.sidebar.selectbox[0].set_value("en").run()
    assert at.title[0].value == "Diagnose a GPU machine-learning setup"


def test_default_is_english_and_follows_accept_language(monkeypatch):
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    assert not at.exception
    assert at.session_state["lang"] == "en"
    assert at.title[0].value == "Diagnose a GPU machine-learning setup"
    import ui.common

    monkeypatch.setattr(ui.common, "_accept_language", lambda: "zh-CN,zh;q=0.9,en;q=0.8")
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    assert not at.exception
    assert at.session_state["lang"] == "zh"
    assert at.title[0].value == "诊断 GPU 机器学习环境"


def test_query_param_lang():
    at = AppTest.from_file("../app.py", default_timeout=60)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception
    assert at.title[0].value == "诊断 GPU 机器学习环境"


def test_login_gate_in_chinese(monkeypatch):
    monkeypatch.setenv("GPU_DOCTOR_SECRET", "team-password-of-16+")
    at = page("app.py", "zh")
    assert not at.exception
    assert at.text_input[0].label == "团队密码"
    assert at.title[0].value == "GPU 诊断"


def test_probe_names_follow_the_language():
    from diagnostics.i18n import t
    from diagnostics.probes import PROBES

    for p in PROBES:
        assert t(f"probe.{p.id}", "en") == p.title  # the catalogue and the registry agree
        assert t(f"probe.{p.id}", "zh") != p.title
