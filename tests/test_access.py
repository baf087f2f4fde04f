"""Access: loopback by default, a login for team deployments, reviewer-only actions."""
import subprocess
import sys

from streamlit.testing.v1 import AppTest

from diagnostics.access import check_secret, load_config, role_for_email, serve_problem


def test_modes_from_environment():
    assert load_config({}).mode == "local"
    cfg = load_config({"GPU_DOCTOR_SECRET": "team", "GPU_DOCTOR_REVIEWER_SECRET": "boss"})
    assert cfg.mode == "secret" and cfg.login_required
    assert check_secret(cfg, "team") == "user"
    assert check_secret(cfg, "boss") == "reviewer"
    assert check_secret(cfg, "Team") is None and check_secret(cfg, "") is None
    oidc = load_config({"GPU_DOCTOR_REVIEWERS": "a@x.org, B@x.org"}, oidc_configured=True)
    assert oidc.mode == "oidc"
    assert role_for_email(oidc, "b@x.org") == "reviewer" and role_for_email(oidc, "c@x.org") == "user"


def test_binding_beyond_loopback_needs_a_login():
    assert serve_problem("127.0.0.1", load_config({})) is None
    assert "refusing" in serve_problem("0.0.0.0", load_config({}))
    assert serve_problem("0.0.0.0", load_config({"GPU_DOCTOR_SECRET": "s"})) is None
    p = subprocess.run([sys.executable, "-m", "diagnostics", "serve", "--address", "0.0.0.0", "--port", "8597"],
                       capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 2 and "refusing to serve on 0.0.0.0" in p.stderr


def test_app_asks_for_the_team_password(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_DOCTOR_SECRET", "s3cret-team")
    monkeypatch.setenv("GPU_DOCTOR_REVIEWER_SECRET", "s3cret-review")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'db.sqlite'}")
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    assert not at.exception
    assert at.text_input[0].label == "Team password"
    assert not any("Diagnose this machine" in t.value for t in at.title)
    at.text_input[0].input("wrong")
    at.button[0].click().run()
    assert any("not right" in e.value for e in at.error)
    at.text_input[0].input("s3cret-team")
    at.button[0].click().run()
    assert not at.exception
    assert at.session_state["role"] == "user"


def test_reviewer_actions_hidden_from_plain_users(monkeypatch, tmp_path):
    from diagnostics.store import Store
    from tests.test_store_common import sample_report

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("GPU_DOCTOR_SECRET", "s3cret-team")
    sid = Store(url).save(sample_report())
    at = AppTest.from_file("../ui/sessions.py", default_timeout=60)
    at.session_state["role"] = "user"
    at.query_params["session"] = sid
    at.run()
    assert not at.exception
    assert at.selectbox[0].disabled
    assert not [b for b in at.button if b.label == "Delete"]
    assert any("Only reviewers" in c.value for c in at.caption)
    at2 = AppTest.from_file("../ui/sessions.py", default_timeout=60)
    at2.session_state["role"] = "reviewer"
    at2.query_params["session"] = sid
    at2.run()
    assert not at2.selectbox[0].disabled
