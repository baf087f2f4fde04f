"""Issue 16: no escape sequence reaches a terminal from any command (diagnostics/termsafe.py).

Hostile text (OSC 52 clipboard, OSC 0 title, OSC 8 hyperlink, CSI cursor moves, DCS, 8-bit C1 controls, a
bare ESC, BEL, bidi overrides) goes in through a log, a dump, a bundle's session and a KB entry; every command
that shows it is run as a real child process and its stdout+stderr bytes are searched for any control.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from diagnostics.termsafe import clean
from tests.test_store_common import sample_report

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ("\x1b]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: set the clipboard
           "\x1b]0;owned title\x07"  # OSC 0: window title
           "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"  # OSC 8 hyperlink
           "\x1b[2J\x1b[1;1H\x1b[31m"  # clear screen, cursor home, red
           "\x1bP+q544e\x1b\\"  # DCS
           "\u009b6n\u009d0;c1-title\u009c"  # 8-bit CSI / OSC / ST
           "\x1b bare\x07bell\rcr \u202eevil\u202c")
LOG = f"hipErrorNoBinaryForGpu: Unable to find code object for all current devices! {HOSTILE}\n"
# every C0 control but TAB/LF, DEL, C1, bidi overrides; as bytes in UTF-8
_FORBIDDEN = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diagnostics", *args], cwd=ROOT, capture_output=True, input=stdin,
                          timeout=240, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def _assert_clean(p: subprocess.CompletedProcess, what: str) -> None:
    for name, data in (("stdout", p.stdout), ("stderr", p.stderr)):
        m = _FORBIDDEN.search(data)
        assert m is None, f"{what}: {name} carries {m.group(0)!r} near {data[max(0, m.start() - 40):m.end() + 20]!r}"


def test_clean_makes_every_control_visible() -> None:
    out = clean(HOSTILE)
    assert _FORBIDDEN.search(out.encode()) is None
    assert "\\u001b]52;c;" in out and "\\u009b" in out and "\\u202e" in out
    assert clean("plain\ttext\nnext\r\n") == "plain\ttext\nnext\n"
    # inside JSON the visible form is the same escape: the document keeps its meaning
    doc = json.dumps({"x": HOSTILE}, ensure_ascii=False)
    assert json.loads(clean(doc)) == {"x": HOSTILE.replace("\r\n", "\n")}


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hostile")
    log = d / "log.txt"
    log.write_text(LOG, encoding="utf-8")
    dump = d / "rocminfo.txt"
    dump.write_text(f"ROCk module is loaded\nAgent 1\n  Name:                    gfx1100{HOSTILE}\n"
                    f"  Marketing Name:          Radeon {HOSTILE}\n", encoding="utf-8")
    kb = d / "kb"
    kb.mkdir()
    src = (ROOT / "kb" / "hip-no-binary-for-gpu.yaml").read_text(encoding="utf-8")
    (kb / "hip-no-binary-for-gpu.yaml").write_text(src, encoding="utf-8")
    (kb / "bad.yaml").write_text(f"id: bad\ntitle: \"{json.dumps(HOSTILE)[1:-1]}\"\n", encoding="utf-8")
    # a stored session whose host, facts, log and diagnosis text are hostile, imported through a bundle
    from diagnostics.store.bundle import build_bundle

    rep = sample_report()
    rep["host"] = "node" + HOSTILE
    rep["facts"]["os.name"] = HOSTILE
    rep["logs"] = [{"name": "log" + HOSTILE, "text": LOG}]
    for dg in rep.get("diagnoses") or []:
        dg["title"] = "title" + HOSTILE
    bundle = d / "b.json"
    bundle.write_bytes(build_bundle(rep))
    db = d / "s.db"
    p = _cli("sessions", "import", "--db", f"sqlite:///{db}", str(bundle))
    assert p.returncode == 0, p.stderr
    _assert_clean(p, "sessions import")
    return {"log": log, "dump": dump, "kb": kb, "db": db, "bundle": bundle}


def test_every_command_writes_no_escape(hostile_files: dict[str, Path]) -> None:
    f = hostile_files
    url = f"sqlite:///{f['db']}"
    from diagnostics.store import Store

    s = Store(url)
    rows, _ = s.list_sessions()
    sid = rows[0].get("id") or rows[0].get("session_id")
    s.close()
    runs = {
        "match --log": ["match", "--log", str(f["log"])],
        "match --log --json": ["match", "--log", str(f["log"]), "--json"],
        "match --dump": ["match", "--dump", str(f["dump"])],
        "match --describe": ["match", "--describe", "GPU " + HOSTILE],
        "parse": ["parse", str(f["dump"])],
        "parse --json": ["parse", str(f["dump"]), "--json"],
        "kb lint": ["kb", "--kb", str(f["kb"]), "lint"],
        "kb list": ["kb", "--kb", str(f["kb"]), "list"],
        "kb test": ["kb", "--kb", str(f["kb"]), "test"],
        "sessions list": ["sessions", "list", "--db", url],
        "sessions show": ["sessions", "show", "--db", url, sid],
        "sessions show --json": ["sessions", "show", "--db", url, sid, "--json"],
        "sessions export -": ["sessions", "export", "--db", url, sid, "--out", "-"],
        "sessions export md": ["sessions", "export", "--db", url, sid, "--format", "md", "--out", "-"],
        "sessions notes": ["sessions", "notes", "--db", url, sid],
        "sessions show (bad id)": ["sessions", "show", "--db", url, "x" + HOSTILE],
        "bad argument": ["match", "--lang", HOSTILE],
        "missing file": ["match", "--log", "/nonexistent/" + HOSTILE],
    }
    for what, args in runs.items():
        p = _cli(*args)
        _assert_clean(p, what)
    p = _cli("match", "--log", "-", stdin=LOG.encode())
    _assert_clean(p, "match --log - (stdin)")


def test_run_writes_no_escape(hostile_files: dict[str, Path]) -> None:
    p = _cli("run", "--no-generate", "--timeout", "30", "--progress", "--log", str(hostile_files["log"]))
    assert p.returncode in (0, 1), p.stderr[-2000:]
    _assert_clean(p, "run")
    assert shutil.which(sys.executable)
