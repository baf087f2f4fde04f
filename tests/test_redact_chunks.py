"""Secrets straddling every piece boundary (issue 16): long texts are redacted a chunk at a time and stored,
hashed and exported a piece at a time; no secret may survive because a cut fell inside it.

Every format of the catalogue (tests/secret_formats.py) is planted so that the redactor's nominal cut
(``pos + CHUNK``) lands on every line of it, and on the characters around it; the chunked redaction must equal
the whole-text redaction and hold none of the secrets.  Then one session holding all of them, with tiny
pieces for the redactor, the JSON encoder and the HTML renderer (its JSON written through SQLite's blob handle),
is saved and exported: the database files, the bundle (bytes and streamed), the Markdown and the HTML hold no
secret, and are what the whole-text forms give.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import diagnostics.redact as R
from diagnostics.redact import redact_text
from tests.secret_formats import catalogue, catalogue_round2
from tests.test_store_common import full_bundle

FORMATS = [f for f in catalogue() + catalogue_round2() if "no-end" not in f[0]]
CHUNK = 3000


def _filler(n: int) -> str:
    """*n* characters of short plain lines (the cut looks for a short plain line before it)."""
    q, r = divmod(n, 3)
    return "ok\n" * q + ("\n" if r == 1 else "x\n" if r == 2 else "")


def _offsets(text: str) -> list[int]:
    """Where in *text* the nominal cut should land: every line start and end, one character either side of
    them, and a few places inside the lines."""
    out = {0, len(text)}
    pos = 0
    for line in text.split("\n"):
        for d in (-1, 0, 1, len(line) // 2, len(line) - 1, len(line), len(line) + 1):
            out.add(min(len(text), max(0, pos + d)))
        pos += len(line) + 1
    return sorted(out)


@pytest.mark.parametrize("i", range(len(FORMATS)), ids=[f[0] for f in FORMATS])
def test_a_cut_anywhere_in_a_secret_changes_nothing(i: int, monkeypatch) -> None:
    name, text, secret = FORMATS[i]
    for off in _offsets(text):
        big = _filler(CHUNK - off) + text + "\n" + _filler(CHUNK + 50)
        assert len(big) > CHUNK
        monkeypatch.setattr(R, "CHUNK", CHUNK)
        out = redact_text(big)
        assert secret not in out, (name, off)
        monkeypatch.setattr(R, "CHUNK", 1 << 30)
        assert redact_text(big) == out, (name, off)


def test_a_session_of_straddling_secrets_is_stored_and_exported_clean(tmp_path: Path, monkeypatch) -> None:
    import diagnostics.store.bundle as B
    import diagnostics.store as store_mod
    import diagnostics.store.summary as S
    from diagnostics.store import Store

    parts = []
    for name, text, _ in FORMATS:
        for off in _offsets(text)[::3]:
            parts.append(_filler(CHUNK - off) + f"[{name}]\n" + text + "\n")
    log = "".join(parts)
    secrets = [s for _, _, s in FORMATS]
    report = {"session_id": "", "host": "h", "created_at": "2026-12-01T00:00:00Z",
              "logs": [{"name": "big", "text": log}, {"name": "one", "text": FORMATS[0][1]}]}

    def exports(store: Store, sid: str) -> tuple[bytes, bytes, str, str, str]:
        fp = io.BytesIO()
        store.write_bundle(sid, fp)
        return full_bundle(store, sid), fp.getvalue(), store.export_markdown(sid), store.export_html(sid), \
            store.get_json(sid)

    monkeypatch.setattr(R, "CHUNK", CHUNK)
    monkeypatch.setattr(B, "HTML_PIECE", 997)
    monkeypatch.setattr(S, "JSON_PIECE", 61)
    monkeypatch.setattr(store_mod, "BLOB_MIN", 1)  # the report JSON written through SQLite's blob handle
    db = tmp_path / "s.db"
    store = Store(f"sqlite:///{db}")
    sid = store.save(report)
    small = exports(store, sid)
    store.close()
    stored = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("s.db*")))
    for s in secrets:
        assert s.encode() not in stored, s
        for blob in small:
            assert (s.encode() if isinstance(blob, bytes) else s) not in blob, s

    # the same session through whole-text redaction and rendering gives the same stored text and exports
    monkeypatch.setattr(R, "CHUNK", 1 << 30)
    monkeypatch.setattr(B, "HTML_PIECE", 1 << 30)
    monkeypatch.setattr(S, "JSON_PIECE", 1 << 30)
    monkeypatch.setattr(store_mod, "BLOB_MIN", 1 << 30)  # ... and as one bound text
    store = Store(f"sqlite:///{tmp_path / 'w.db'}")
    report["session_id"] = sid
    assert store.save(report) == sid
    whole = exports(store, sid)
    store.close()
    assert small[4] == whole[4]
    assert small[2:4] == whole[2:4]
    # bundles differ in their export time only
    a, b = json.loads(small[0]), json.loads(whole[0])
    assert json.loads(small[1])["sha256"] and a["session"] == b["session"]
    assert a["report_markdown"] == b["report_markdown"] and a["report_html"] == b["report_html"]
