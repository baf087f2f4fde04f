"""Issue 16: >= 80 secret formats planted through every entry point reach none of the database file (SQLite
file, WAL and journal bytes), the bundles, the Markdown/HTML reports or the share preview.

Entry points: `run --save --log FILE` (the CLI, a real child process), `sessions import` of a bundle that
still holds the secrets (the CLI), and the UI's paste path (service.diagnose_text -> new_report -> Store.save,
as ui/diagnose.py does).  The formats are tests/secret_formats.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from diagnostics import service
from diagnostics.store import Store
from diagnostics.store.bundle import build_bundle
from tests.secret_formats import catalogue
from tests.test_store_common import full_bundle

ROOT = Path(__file__).resolve().parent.parent
FORMATS = catalogue()


def _cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diagnostics", *args], cwd=ROOT, capture_output=True,
                          timeout=timeout, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def _leaks(blob: bytes | str) -> list[str]:
    b = blob.encode("utf-8", "replace") if isinstance(blob, str) else blob
    return [name for name, _, s in FORMATS if s.encode() in b]


def _db_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))


def test_catalogue_is_big_enough() -> None:
    assert len(FORMATS) >= 80


def test_planted_secrets_reach_nothing_stored_or_shared(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    # 1. run --save with one log per format (a key block without END would swallow what follows it)
    logs = []
    for i, (name, text, _) in enumerate(FORMATS):
        f = tmp_path / f"log{i:03d}.txt"
        f.write_text(f"[{name}]\n{text}\n", encoding="utf-8")
        logs += ["--log", str(f)]
    p = _cli("run", "--save", "--no-generate", "--quiet", "--timeout", "30", "--db", url, *logs)
    assert p.returncode in (0, 1), p.stderr.decode()[-2000:]
    assert not _leaks(p.stdout + p.stderr)
    # 2. the UI paste and upload path (ui/diagnose.py: uploads are decoded by service.decode_text), and what the
    #    page offers before anything is saved: the Markdown and JSON downloads, the GitHub issue body, the preview
    items = [(f"paste{i}", text) for i, (_, text, _) in enumerate(FORMATS[: len(FORMATS) // 2])]
    items += [(f"upload{i}.log", service.decode_text(text.encode("utf-8"), f"upload{i}.log"))
              for i, (_, text, _) in enumerate(FORMATS[len(FORMATS) // 2:])]
    res = service.diagnose_text(logs=items)
    rep = service.new_report("pasted")
    rep.update({k: res.get(k) for k in ("facts", "diagnoses", "not_ruled_out", "parsed", "notes", "kb_version")})
    rep["logs"] = [{"name": n, "text": t} for n, t in items]
    from diagnostics.issue_body import render_github_issue
    from diagnostics.redact import preview_report, redact_report
    from diagnostics.store import render_markdown

    page = []
    for mask in (False, True):
        clean = redact_report(rep, mask_identity=mask)
        page += [render_markdown(clean), json.dumps(clean, ensure_ascii=False), render_github_issue(rep, mask_identity=mask),
                 json.dumps(preview_report(rep, mask_identity=mask)["replacements"])]
    for blob in page:
        assert not _leaks(blob)
    store = Store(url)
    pasted = store.save(rep)
    # 3. import of a bundle that still carries every secret, in logs, facts, notes and a dict key
    raw = json.loads(json.dumps(rep))
    raw["session_id"] = "7d0f8b4e-2a52-4c3e-9a51-2f4b9f8c1e11"
    raw["facts"] = {"env.HF_TOKEN": FORMATS[0][2], "env.X": FORMATS[1][1], FORMATS[2][2]: "a secret as a key"}
    raw["notes"] = [t for _, t, _ in FORMATS[:20]]
    bundle_file = tmp_path / "planted.json"
    bundle_file.write_bytes(build_bundle(raw))
    store.close()
    p = _cli("sessions", "import", "--db", url, str(bundle_file))
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    assert not _leaks(p.stdout + p.stderr)
    # everything stored, and everything shared from it
    store = Store(url)
    rows, _ = store.list_sessions(page_size=100)
    ids = [r.get("id") or r.get("session_id") for r in rows]
    assert len(ids) == 3, ids
    shared = []
    for sid in ids:
        shared += [store.export_bundle(sid), store.export_bundle(sid, mask_identity=True),
                   full_bundle(store, sid),  # the bundle with its Markdown and HTML
                   store.export_markdown(sid).encode(), store.export_html(sid).encode(),
                   json.dumps(store.share_preview(sid), ensure_ascii=False).encode(),
                   json.dumps(store.share_preview(sid, mask_identity=True), ensure_ascii=False).encode(),
                   json.dumps(store.get(sid), ensure_ascii=False).encode()]
        p = _cli("sessions", "show", "--db", url, sid)
        shared.append(p.stdout + p.stderr)
        for fmt in ("bundle", "md", "html", "github"):
            p = _cli("sessions", "export", "--db", url, sid, "--out", "-", "--format", fmt)
            assert p.returncode == 0, p.stderr.decode()[-2000:]
            shared.append(p.stdout + p.stderr)
    assert pasted in ids
    for blob in shared:
        assert not _leaks(blob)
    # the placeholders of a stored report are distinct per secret
    got = store.get(pasted)
    phs = [r["placeholder"] for r in got.get("redactions") or []]
    assert len(phs) == len(set(phs)) >= 80
    store.close()
    raw_db = _db_bytes(db)
    assert b"SECRET-" in raw_db, "the file really holds the sessions"
    assert _leaks(raw_db) == []
