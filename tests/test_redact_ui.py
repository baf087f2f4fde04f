"""Issue 16: every secret format of tests/secret_formats.py pasted into the real web UI (ui/diagnose.py through
Streamlit's AppTest), diagnosed and saved: none of them is shown on the page (results, the "what is removed"
table, the share preview, the issue body) nor reaches the database file (its WAL included), and the saved
session's page (ui/sessions.py) shows none either.  tests/test_secrets_e2e.py plants the same formats through
the CLI, import and the service calls the page makes; this runs the page itself."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.secret_formats import catalogue

FORMATS = catalogue()


def _unclosed_key_block(text: str) -> bool:
    """A key block without its END line: redaction rightly removes everything after it, so it goes last."""
    return "BEGIN" in text and "END" not in text.split("BEGIN", 1)[1]


def _shown(at: AppTest, own: str = "") -> str:
    """The text of every element on the page except the visitor's own input: the paste box, and *own*, the
    paste as the unsaved result echoes it back under "Pasted logs" (ui/render.logs, in that visitor's browser
    only; a saved session's page must show none of it)."""
    out: list[str] = []

    def walk(node: object) -> None:
        proto = getattr(node, "proto", None)
        echo = own and getattr(node, "type", "") == "code" and getattr(proto, "code_text", None) == own[:20000]
        if proto is not None and getattr(node, "type", "") != "text_area" and not echo:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def _leaks(blob: bytes | str) -> list[str]:
    b = blob.encode("utf-8", "replace") if isinstance(blob, str) else blob
    return [name for name, _, s in FORMATS if s.encode() in b]


def test_every_format_pasted_into_the_page_is_neither_shown_nor_stored(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "s.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{db}")
    ordered = sorted(FORMATS, key=lambda f: _unclosed_key_block(f[1]))
    paste = "".join(f"[{name}]\n{text}\n" for name, text, _ in ordered)
    at = AppTest.from_file("../ui/diagnose.py", default_timeout=120).run()
    at.text_area(key="paste").input(paste)
    at.button(key="diagnose_text").click().run()
    assert not at.exception
    assert "report" in at.session_state
    assert any("What is removed before saving or sharing" in e.label for e in at.expander)
    at.checkbox(key="mask_identity").check().run()  # the masked share preview is shown too
    page = _shown(at, paste)
    at.checkbox(key="mask_identity").uncheck().run()
    page += _shown(at, paste)
    at.button(key="save").click().run()
    assert not at.exception
    sid = at.session_state["saved_id"]
    page += _shown(at, paste)
    assert f"[{FORMATS[0][0]}]" in page  # the page shows the pasted text (the issue body), redacted
    assert _leaks(page) == []

    view = AppTest.from_file("../ui/sessions.py", default_timeout=60)
    view.query_params["session"] = sid
    view.run()
    assert not view.exception
    shown = _shown(view)
    assert f"[{FORMATS[0][0]}]" in shown  # the saved session's logs are on its page
    assert _leaks(shown) == []

    from diagnostics.store import Store

    store = Store(f"sqlite:///{db}")
    saved = store.get(sid)
    store.close()
    assert len(saved.get("redactions") or []) >= 80  # each format was found and removed, not lost
    raw = b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))
    assert _leaks(raw) == []
