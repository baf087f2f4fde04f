"""Issue 16: `sessions import` refuses each hostile bundle with a clear one-line error and exit status 2, and the
database is unchanged (its bytes, WAL included, compared before and after).  The bundles are valid ones (right
format and checksum) carrying one hostile thing each; a generated family covers depth and integer size."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnostics.store import Store
from diagnostics.store.bundle import MAX_DEPTH, BundleError, build_bundle, parse_bundle, render_markdown
from diagnostics.store.summary import sha256_of
from tests.test_store_common import sample_report

ROOT = Path(__file__).resolve().parent.parent


def _bundle_bytes(session: dict) -> bytes:
    """A bundle with a valid checksum around *session*, written without json.dumps' own checks."""
    b = {"format": "gpu-doctor-session", "version": 1, "exported_at": "2026-11-30T00:00:00Z", "session": session}
    b["sha256"] = sha256_of(b)
    return json.dumps(b).encode()


def _deep(n: int) -> object:
    o: object = "x"
    for _ in range(n):
        o = [o]
    return o


def _with(**changes: object) -> dict:
    rep = sample_report()
    rep.update(changes)
    return rep


def _hostile() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    out["nesting 500 deep"] = _bundle_bytes(_with(notes=[_deep(500)]))
    out["nesting 800 deep"] = _bundle_bytes(_with(generation={"x": _deep(800)}))
    rep = sample_report()
    rep["facts"]["gpu.count"] = 10 ** 4999  # a 5000-digit integer
    b = {"format": "gpu-doctor-session", "version": 1, "exported_at": "2026-11-30T00:00:00Z", "session": rep,
         "sha256": "0" * 64}
    import sys as _s
    _s.set_int_max_str_digits(0)
    out["5000-digit integer"] = json.dumps(b).encode()
    _s.set_int_max_str_digits(4300)
    rep = sample_report()
    out["id differing only in case"] = _bundle_bytes(_with(session_id=rep["session_id"].upper()))
    out["created_at in year 9999"] = _bundle_bytes(_with(created_at="9999-12-31T23:59:59Z"))
    rep = sample_report()
    rep["logs"][0]["text"] = "hip\x00ErrorNoBinaryForGpu"
    out["NUL byte in a log"] = _bundle_bytes(rep)
    rep = sample_report()
    rep["facts"]["os.na\x00me"] = "x"
    out["NUL byte in a key"] = _bundle_bytes(rep)
    out["probes is a string"] = _bundle_bytes(_with(probes="all fine"))
    out["diagnosis title is a list"] = _bundle_bytes(_with(diagnoses=[{"id": "x", "title": ["a"], "severity": "error"}]))
    out["evidence is a number"] = _bundle_bytes(_with(diagnoses=[{"id": "x", "evidence": [5]}]))
    out["probe duration is text"] = _bundle_bytes(_with(probes=[{"id": "torch", "duration_s": "long"}]))
    out["host is an object"] = _bundle_bytes(_with(host={"a": 1}))
    out["log text is null"] = _bundle_bytes(_with(logs=[{"name": "x", "text": None}]))
    out["NaN"] = json.dumps({"format": "gpu-doctor-session", "version": 1, "session": {"x": float("nan")},
                             "sha256": "0" * 64}).encode()
    return out


HOSTILE = _hostile()


def _db_state(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("imp") / "s.db"
    s = Store(f"sqlite:///{d}")
    s.save(sample_report())
    s.close()
    return d


def _import(db: Path, src: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diagnostics", "sessions", "import", "--db", f"sqlite:///{db}", src],
                          cwd=ROOT, capture_output=True, input=stdin, timeout=120,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_bundle_is_refused_cleanly(db: Path, tmp_path: Path, name: str) -> None:
    f = tmp_path / "b.json"
    f.write_bytes(HOSTILE[name])
    before = _db_state(db)
    p = _import(db, str(f))
    err = p.stderr.decode()
    assert p.returncode == 2, (name, p.returncode, err[-1500:])
    assert "Traceback" not in err and err.startswith("error: refused") and err.count("\n") == 1, err[-1500:]
    assert _db_state(db) == before, "the database changed"


def test_stdin_and_huge_input_are_refused_after_a_bounded_read(db: Path) -> None:
    from diagnostics.store.bundle import MAX_BUNDLE_BYTES

    before = _db_state(db)
    p = _import(db, "/dev/stdin", stdin=b" " * (MAX_BUNDLE_BYTES + 4 * 1024 * 1024))
    assert p.returncode == 2 and b"stopped reading" in p.stderr, p.stderr[-500:]
    assert _db_state(db) == before


def test_stored_verdict_is_recomputed_not_trusted() -> None:
    rep = sample_report()
    assert any(d.get("severity") in ("critical", "error") for d in rep["diagnoses"])
    rep["verdict"] = "healthy"
    session, warnings = parse_bundle(_bundle_bytes(rep))
    assert session["verdict"] == "problems" and any("verdict" in w for w in warnings)


def test_markdown_export_neutralises_character_reference_links() -> None:
    rep = sample_report()
    rep["diagnoses"][0]["fix"] = ("1. [update](&#106;avascript:alert(1)) or [x](&#x6A;avascript:alert(2)) "
                                  "or [y](javascript:alert(3)) <img src=x onerror=alert(4)>")
    md = render_markdown(rep)
    assert "&#106;avascript" not in md and "&#x6A;avascript" not in md
    assert "(javascript:" not in md and "<img" not in md
    import markdown as _md

    html = _md.markdown(md)
    assert "javascript:" not in html.replace("javascript-blocked:", "")


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(min_value=MAX_DEPTH + 1, max_value=3000), digits=st.integers(min_value=41, max_value=4000))
def test_property_depth_and_integer_size_always_refused(depth: int, digits: int) -> None:
    with pytest.raises(BundleError):
        parse_bundle(_bundle_bytes(_with(notes=[_deep(depth)])) if depth < 900 else
                     b'{"format": "gpu-doctor-session", "version": 1, "session": ' + b"[" * depth + b"]" * depth + b"}")
    raw = ('{"format": "gpu-doctor-session", "version": 1, "sha256": "0", "session": {"facts": {"gpu.count": '
           + "9" * digits + "}}}").encode()
    with pytest.raises(BundleError):
        parse_bundle(raw)


def test_a_real_bundle_still_imports(db: Path, tmp_path: Path) -> None:
    f = tmp_path / "ok.json"
    rep = sample_report()
    f.write_bytes(build_bundle(rep))
    p = _import(db, str(f))
    assert p.returncode == 0, p.stderr.decode()[-1500:]
