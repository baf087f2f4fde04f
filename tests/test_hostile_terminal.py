"""Issue 16, "0 escape sequences reach a terminal from any command": the commands tests/test_terminal.py does not
run, on a database whose sessions carry the same hostile text (OSC 52/0/8, CSI, DCS, 8-bit C1, bidi overrides) in
their host, GPU name, facts, diagnosis titles, a failed check's output (so the unexplained queue shows it) and a
reviewer note: the fleet views (`sessions stats` by every dimension, `unexplained`), `compare`, `rediagnose`, the
HTML and GitHub exports to standard output (streamed), `--with-reports`, `status`, `note`, `delete`, and `kb
matrix` with a hostile argument.  Each runs as a real child process; its stdout+stderr bytes hold no control."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_store_common import sample_report
from tests.test_terminal import HOSTILE, _assert_clean, _cli


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    from diagnostics.store import Store

    d = tmp_path_factory.mktemp("hostile_fleet")
    url = f"sqlite:///{d / 's.db'}"
    rep = sample_report()
    rep["host"] = "node" + HOSTILE
    rep["facts"]["gpu.names"] = ["Radeon " + HOSTILE]
    rep["facts"]["gpu.gfx_targets"] = ["gfx1100" + HOSTILE]
    rep["facts"]["rocm.version"] = "6.2" + HOSTILE
    rep["facts"]["torch.version"] = "2.5" + HOSTILE
    for dg in rep.get("diagnoses") or []:
        dg["title"] = "title" + HOSTILE
    odd = sample_report()  # nothing explains its failed check: it is in the unexplained queue
    odd["host"] = "queue" + HOSTILE
    odd["diagnoses"] = []
    for p in odd["probes"]:
        if p["status"] == "crashed":
            p["error"] = "RuntimeError: boom" + HOSTILE
            p["output_tail"] = "RuntimeError: boom" + HOSTILE + "\n"
    with Store(url) as s:
        a = s.save(rep)
        b = s.save(odd)
        s.add_note(a, "rev" + HOSTILE, "note" + HOSTILE)
        assert s.exists(a) and s.exists(b)
    return url, a, b


def test_fleet_and_review_commands_write_no_escape(hostile_db: tuple[str, str, str]) -> None:
    url, a, b = hostile_db
    runs = {
        "sessions stats": ["sessions", "stats", "--db", url],
        "sessions stats --json": ["sessions", "stats", "--db", url, "--json"],
        "sessions unexplained": ["sessions", "unexplained", "--db", url],
        "sessions unexplained --json": ["sessions", "unexplained", "--db", url, "--json"],
        "sessions stats --refresh": ["sessions", "stats", "--db", url, "--refresh", "--by", "host", "--ids", "5"],
        "sessions list --json": ["sessions", "list", "--db", url, "--json"],
        "sessions compare": ["sessions", "compare", "--db", url, a, b],
        "sessions export html -": ["sessions", "export", "--db", url, a, "--format", "html", "--out", "-"],
        "sessions export github -": ["sessions", "export", "--db", url, a, "--format", "github", "--out", "-"],
        "sessions export --with-reports -": ["sessions", "export", "--db", url, a, "--with-reports", "--out", "-"],
        "sessions status": ["sessions", "status", "--db", url, a, "investigating"],
        "sessions note": ["sessions", "note", "--db", url, a, "another" + HOSTILE],
        "kb matrix": ["kb", "matrix", "gfx1100" + HOSTILE],
        "sessions rediagnose": ["sessions", "rediagnose", "--db", url, b],
        "sessions stats (after rediagnose)": ["sessions", "stats", "--db", url, "--by", "gpu"],
    }
    for by in ("cause", "gpu", "gfx", "rocm", "torch", "host", "status"):
        runs[f"sessions stats --by {by}"] = ["sessions", "stats", "--db", url, "--by", by, "--ids", "3"]
    for what, args in runs.items():
        p = _cli(*args)
        # 2 is `kb matrix` refusing an unknown name, in a sentence
        assert p.returncode in (0, 1, 2) and b"Traceback" not in p.stderr, f"{what}: {p.stderr[-500:]!r}"
        _assert_clean(p, what)
    p = _cli("sessions", "delete", "--db", url, b)
    _assert_clean(p, "sessions delete")


def test_streamed_export_to_stdout_is_the_file_export(hostile_db: tuple[str, str, str], tmp_path: Path) -> None:
    """`--out -` now writes the bundle / page as it is made: the same bytes as the file export, apart from what
    the terminal sanitiser makes visible and the export time."""
    import json
    import re

    url, a, _ = hostile_db
    out = tmp_path / "b.json"
    p = _cli("sessions", "export", "--db", url, a, "--with-reports", "--out", str(out))
    assert p.returncode == 0, p.stderr
    q = _cli("sessions", "export", "--db", url, a, "--with-reports", "--out", "-")
    assert q.returncode == 0, q.stderr
    stamp = re.compile(rb'"exported_at": "[^"]*"|"sha256": "[0-9a-f]{64}"')
    from diagnostics.termsafe import clean

    want = clean(stamp.sub(b"", out.read_bytes()).decode("utf-8")).encode("utf-8")
    assert stamp.sub(b"", q.stdout) == want
    got = json.loads(out.read_bytes())
    assert {"report_markdown", "report_html", "session"} <= set(got)
    for fmt, suffix in (("md", ".md"), ("html", ".html")):
        f = tmp_path / f"r{suffix}"
        assert _cli("sessions", "export", "--db", url, a, "--format", fmt, "--out", str(f)).returncode == 0
        q = _cli("sessions", "export", "--db", url, a, "--format", fmt, "--out", "-")
        assert q.returncode == 0, q.stderr
        assert q.stdout == clean(f.read_bytes().decode("utf-8")).encode("utf-8")
