"""`sessions export ID --format github`: a ready-to-paste GitHub issue body (issue 18)."""
from __future__ import annotations

import re

from diagnostics import cli, service
from diagnostics.issue_body import GITHUB_LIMIT, render_github_issue

# from ROCm/ROCm#2536 (an RX 6700 XT with a wheel that lacks gfx1031)
NO_BINARY = ("rocBLAS warning: No paths matched /opt/rocm/lib/rocblas/library/*gfx1031*co.\n"
             '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
             "Aborted (core dumped)\n")
SECRET = "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789\n"


def _report(log: str) -> dict:
    res = service.diagnose_text(logs=[("train.log", log)])
    rep = service.new_report("pasted")
    rep.update({k: res[k] for k in ("facts", "diagnoses", "not_ruled_out", "kb_version")})
    rep["facts"].update({"os.name": "Ubuntu 22.04.4 LTS", "rocm.version": "6.0.2", "torch.version": "2.3.0+rocm6.0",
                         "gpu.gfx_targets": ["gfx1031"]})
    rep["logs"] = [{"name": "train.log", "text": log}]
    rep["probes"] = [{"id": "torch", "title": "PyTorch build, devices and smoke test", "status": "crashed",
                      "summary": "crashed with SIGABRT during 'smoke test'", "error": "crashed with SIGABRT during 'smoke test'",
                      "evidence": [{"source": "probe:torch", "excerpt": "Aborted (core dumped)"}]}]
    return rep


def test_body_has_environment_verdict_causes_and_collapsed_logs():
    body = render_github_issue(_report(SECRET + NO_BINARY))
    assert "| ROCm | 6.0.2 |" in body and "| PyTorch | 2.3.0+rocm6.0 |" in body and "| GPU targets | gfx1031 |" in body
    assert "**Verdict:** problems" in body
    assert "`hip-no-binary-for-gpu`" in body
    assert body.count("<details>") == body.count("</details>") >= 2
    assert "hipErrorNoBinaryForGpu" in body
    # the matched line is shown with its neighbours
    assert "Aborted (core dumped)" in body
    assert "crashed with SIGABRT" in body
    # secrets never leave
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in body


def test_body_stays_under_githubs_limit_and_keeps_the_end_of_a_long_log():
    noise = "".join(f"step {i}: loss 0.{i % 97:02d}\n" for i in range(40_000))
    body = render_github_issue(_report(noise + NO_BINARY))
    assert len(body) < GITHUB_LIMIT
    assert "characters cut" in body
    assert "hipErrorNoBinaryForGpu" in body  # the end of the log, where the error is, survives
    assert body.count("<details>") == body.count("</details>")
    # fences are balanced: every code block opened is closed
    assert len(re.findall(r"^`{3,}text$", body, re.M)) == len(re.findall(r"^`{3,}$", body, re.M))


def test_backticks_in_a_log_do_not_break_the_block():
    body = render_github_issue(_report("```\nnot a fence end\n" + NO_BINARY))
    assert "````text" in body


def test_cli_export_github(tmp_path, capsys):
    from diagnostics.store import Store

    db = f"sqlite:///{tmp_path / 's.db'}"
    sid = Store(db).save(_report(SECRET + NO_BINARY))
    out = tmp_path / "issue.md"
    assert cli.main(["sessions", "export", sid, "--format", "github", "--out", str(out), "--db", db]) == 0
    body = out.read_text(encoding="utf-8")
    assert body.startswith("### Environment") and "`hip-no-binary-for-gpu`" in body
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in body
    capsys.readouterr()
    assert cli.main(["sessions", "export", sid, "--format", "github", "--out", "-", "--db", db,
                     "--mask-identity"]) == 0
    assert "### Environment" in capsys.readouterr().out


def test_copy_as_issue_in_the_ui(tmp_path, monkeypatch):
    """The session page offers the body in a copyable code box and as a download (AppTest)."""
    from streamlit.testing.v1 import AppTest

    from diagnostics.store import Store

    db = f"sqlite:///{tmp_path / 's.db'}"
    monkeypatch.setenv("DATABASE_URL", db)
    sid = Store(db).save(_report(SECRET + NO_BINARY))
    at = AppTest.from_file("../ui/sessions.py", default_timeout=30)
    at.query_params["session"] = sid
    at.run()
    assert not at.exception
    assert any("Copy as a GitHub issue" in e.label for e in at.expander)
    body = next(c.value for c in at.code if c.value.startswith("### Environment"))
    assert "`hip-no-binary-for-gpu`" in body and "hf_abcdefghijklmnopqrstuvwxyz" not in body
    assert any(b.label == "Download the issue body" for b in at.get("download_button"))
