"""`python -m diagnostics sessions ...` end to end, starting from a real `run --save` on this machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pgserver import fresh_pg_database, pg_url  # noqa: F401
from tests.test_store_common import GH_SECRET, HF_SECRET

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.pop("DATABASE_URL", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "diagnostics", *args], cwd=ROOT, env=e, capture_output=True,
                          text=True, timeout=timeout)


def test_run_save_list_export_import_show(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    db = tmp_path / "sessions.db"
    log = tmp_path / "train.log"
    log.write_text(f"export HF_TOKEN={HF_SECRET}\n"
                   f"git push https://x-access-token:{GH_SECRET}@github.com/lab/llm\n"
                   "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n")
    r = cli("run", "--json", "--no-generate", "--save", "--db", str(db), "--log", str(log),
            env={"HF_TOKEN": HF_SECRET, "HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert r.returncode in (0, 1), r.stderr[-2000:]
    report = json.loads(r.stdout)
    sid = report["saved"]["id"]
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("sessions.db*"))
    assert b"hipErrorNoBinaryForGpu" in raw
    for s in (HF_SECRET, GH_SECRET):
        assert s.encode() not in raw, "a planted token reached the database file"

    r = cli("sessions", "list", "--json", "--db", str(db))
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert listed["total"] == 1 and listed["sessions"][0]["id"] == sid

    bundle = tmp_path / "s.gpudoctor.json"
    r = cli("sessions", "export", sid, "--out", str(bundle), "--db", str(db))
    assert r.returncode == 0, r.stderr
    data = bundle.read_bytes()
    for s in (HF_SECRET, GH_SECRET):
        assert s.encode() not in data
    assert "report_html" not in json.loads(data)  # the session and its checksum; the renderings on request
    full = tmp_path / "full.json"
    assert cli("sessions", "export", sid, "--out", str(full), "--with-reports", "--db", str(db)).returncode == 0
    assert json.loads(full.read_bytes())["report_html"].startswith("<!doctype html>")
    assert all(s.encode() not in full.read_bytes() for s in (HF_SECRET, GH_SECRET))
    html = tmp_path / "s.html"
    assert cli("sessions", "export", sid, "--out", str(html), "--db", str(db)).returncode == 0
    assert html.read_text().startswith("<!doctype html>") and "<script" not in html.read_text().lower()

    pg = fresh_pg_database(pg_url)
    r = cli("sessions", "import", str(bundle), "--db", pg)
    assert r.returncode == 0 and sid in r.stdout, r.stderr
    r = cli("sessions", "import", str(full), "--db", pg)  # the same session with its renderings: the same one
    assert r.returncode == 0 and sid in r.stdout and "already" in r.stdout.lower(), r.stdout + r.stderr
    a = json.loads(cli("sessions", "show", sid, "--json", "--db", str(db)).stdout)
    b = json.loads(cli("sessions", "show", sid, "--json", "--db", pg).stdout)
    assert a["session"] == b["session"]

    tampered = tmp_path / "tampered.json"
    forged = json.loads(data)
    forged["session"]["diagnoses"] = []  # hide the findings, keep the old checksum
    tampered.write_text(json.dumps(forged))
    r = cli("sessions", "import", str(tampered), "--db", pg)
    assert r.returncode == 2 and "checksum mismatch" in r.stderr
    r = cli("sessions", "import", str(tmp_path / "missing.json"), "--db", pg)
    assert r.returncode == 2 and "error:" in r.stderr

    assert cli("sessions", "status", sid, "investigating", "--db", pg).returncode == 0
    assert cli("sessions", "note", sid, "asked for dmesg", "--author", "sam", "--db", pg).returncode == 0
    shown = json.loads(cli("sessions", "show", sid, "--json", "--db", pg).stdout)
    assert shown["review"]["status"] == "investigating" and shown["notes"][0]["author"] == "sam"
    r = cli("sessions", "list", "--status", "investigating", "--db", pg)
    assert sid in r.stdout and "1 session(s)" in r.stdout

    r = cli("sessions", "rediagnose", sid, "--db", pg)
    assert r.returncode == 0, r.stderr
    r = cli("sessions", "rediagnose", "--all", "--json", "--db", pg)
    assert r.returncode == 0 and json.loads(r.stdout)["rediagnosed"] == 1, r.stderr
    r = cli("sessions", "show", "00000000-0000-4000-8000-000000000000", "--db", pg)
    assert r.returncode == 2 and "no session" in r.stderr


def test_database_url_env_is_used(tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    r = cli("sessions", "list", "--json", env={"DATABASE_URL": f"sqlite:///{db}"})
    assert r.returncode == 0 and json.loads(r.stdout)["total"] == 0
    assert db.exists()


@pytest.mark.parametrize("argv", [["sessions"], ["sessions", "rediagnose"]])
def test_usage_errors(argv: list[str], tmp_path: Path) -> None:
    r = cli(*argv, "--db", str(tmp_path / "x.db")) if argv[-1] != "sessions" else cli(*argv)
    assert r.returncode == 2
