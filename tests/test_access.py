"""Access: loopback by default, a login for team deployments, reviewer-only actions."""
import subprocess
import sys
from pathlib import Path

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
    assert serve_problem("0.0.0.0", load_config({"GPU_DOCTOR_SECRET": "a-long-team-secret"})) is None
    p = subprocess.run([sys.executable, "-m", "diagnostics", "serve", "--address", "0.0.0.0", "--port", "8597"],
                       capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 2 and "refusing to serve on 0.0.0.0" in p.stderr


def test_app_asks_for_the_team_password(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_DOCTOR_SECRET", "s3cret-team-password")
    monkeypatch.setenv("GPU_DOCTOR_REVIEWER_SECRET", "s3cret-review-password")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'db.sqlite'}")
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    assert not at.exception
    assert at.text_input[0].label == "Team password"
    assert not any("Diagnose this machine" in t.value for t in at.title)
    at.text_input[0].input("wrong")
    at.button[0].click().run()
    assert any("not right" in e.value for e in at.error)
    at.text_input[0].input("s3cret-team-password")
    at.button[0].click().run()
    assert not at.exception
    assert at.session_state["role"] == "user"


def test_reviewer_actions_hidden_from_plain_users(monkeypatch, tmp_path):
    from diagnostics.store import Store
    from tests.test_store_common import sample_report

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("GPU_DOCTOR_SECRET", "s3cret-team-password")
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


# ------------------------------------------------------------------------------------------ issue 16


def test_a_login_that_cannot_protect_refuses_to_serve():
    from diagnostics.access import MIN_SECRET_LEN, config_problem

    oidc = load_config({"GPU_DOCTOR_AUTH": "oidc"}, oidc_configured=False)
    assert "not configured" in config_problem(oidc)
    for addr in ("127.0.0.1", "0.0.0.0"):
        assert serve_problem(addr, oidc) and serve_problem(addr, load_config({"GPU_DOCTOR_SECRET": "x"}))
    short = load_config({"GPU_DOCTOR_SECRET": "a" * (MIN_SECRET_LEN - 1)})
    assert "at least 16" in config_problem(short)
    assert config_problem(load_config({"GPU_DOCTOR_SECRET": "a" * MIN_SECRET_LEN,
                                       "GPU_DOCTOR_REVIEWER_SECRET": "b" * 3})) is not None
    assert config_problem(load_config({"GPU_DOCTOR_SECRET": "a" * MIN_SECRET_LEN})) is None
    assert config_problem(load_config({"GPU_DOCTOR_AUTH": "oidc"}, oidc_configured=True)) is None
    env = {"PATH": "/usr/bin:/bin", "GPU_DOCTOR_AUTH": "oidc", "HOME": "/nonexistent"}
    p = subprocess.run([sys.executable, "-m", "diagnostics", "serve", "--port", "8598"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 2 and "OIDC login is not configured" in p.stderr, p.stderr[-1000:]
    env = {"PATH": "/usr/bin:/bin", "GPU_DOCTOR_SECRET": "1"}
    p = subprocess.run([sys.executable, "-m", "diagnostics", "serve", "--port", "8598"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 2 and "at least 16" in p.stderr, p.stderr[-1000:]


def test_app_lets_no_one_in_with_a_short_secret_or_oidc_unconfigured(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'db.sqlite'}")
    for k, v in (("GPU_DOCTOR_SECRET", "short"), ("GPU_DOCTOR_AUTH", "oidc")):
        monkeypatch.delenv("GPU_DOCTOR_SECRET", raising=False)
        monkeypatch.delenv("GPU_DOCTOR_AUTH", raising=False)
        monkeypatch.setenv(k, v)
        at = AppTest.from_file("../app.py", default_timeout=60).run()
        assert not at.exception
        assert any("no one is let in" in e.value for e in at.error), [e.value for e in at.error]
        assert not at.text_input and not any("Diagnose this machine" in t.value for t in at.title)


def test_throttle_slows_repeated_wrong_passwords():
    from diagnostics.access import FREE_TRIES, MAX_DELAY_S, Throttle

    now = [1000.0]
    th = Throttle(clock=lambda: now[0])
    delays = [th.failed("1.2.3.4") for _ in range(FREE_TRIES + 8)]
    assert delays[:FREE_TRIES] == [0.0] * FREE_TRIES
    assert delays[FREE_TRIES:] == sorted(delays[FREE_TRIES:]) and delays[FREE_TRIES] > 0
    assert max(delays) == MAX_DELAY_S
    assert th.wait("1.2.3.4") == MAX_DELAY_S and th.wait("5.6.7.8") == 0
    now[0] += MAX_DELAY_S
    assert th.wait("1.2.3.4") == 0
    th.succeeded("1.2.3.4")
    assert th.failed("1.2.3.4") == 0.0


def test_app_slows_down_after_wrong_passwords(monkeypatch, tmp_path):
    from diagnostics import access

    monkeypatch.setattr(access, "THROTTLE", access.Throttle())
    import ui.auth

    monkeypatch.setattr(ui.auth, "THROTTLE", access.THROTTLE)
    monkeypatch.setenv("GPU_DOCTOR_SECRET", "s3cret-team-password")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'db.sqlite'}")
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    for _ in range(access.FREE_TRIES + 1):
        at.text_input[0].input("wrong")
        at.button[0].click().run()
    assert any("Too many wrong passwords" in e.value for e in at.error), [e.value for e in at.error]
    # even the right password is not checked while the delay runs
    at.text_input[0].input("s3cret-team-password")
    at.button[0].click().run()
    assert any("Too many wrong passwords" in e.value for e in at.error)
    assert "role" not in at.session_state


def test_exports_are_built_only_when_clicked(monkeypatch, tmp_path):
    """Downloads are deferred: before a logged-in visitor clicks, no export sits in Streamlit's /media/ store
    (which serves anyone who has the URL, login or not)."""
    from streamlit.runtime.media_file_manager import MediaFileManager  # noqa: F401

    from diagnostics.store import Store
    from tests.test_store_common import sample_report

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    monkeypatch.setenv("DATABASE_URL", url)
    sid = Store(url).save(sample_report())
    at = AppTest.from_file("../ui/sessions.py", default_timeout=60)
    at.session_state["role"] = "reviewer"
    at.query_params["session"] = sid
    at.run()
    assert not at.exception
    buttons = at.get("download_button")
    assert len(buttons) >= 3
    for b in buttons:
        assert b.proto.HasField("deferred_file_id") and not b.proto.url, b.proto


def test_every_download_button_is_deferred_and_never_reruns():
    """Every download button of the UI hands Streamlit a callable (built on click, for a logged-in visitor) and
    `on_click="ignore"`: a click that also reruns the page replaces the button's deferred id while the browser still
    holds the old one, so a second click soon after the first got no file (seen in the e2e export test, 4 of 6 runs
    before this rule)."""
    import ast

    found = []
    for path in sorted((Path(__file__).resolve().parent.parent / "ui").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "download_button":
                kw = {k.arg: k.value for k in node.keywords}
                where = f"{path.name}:{node.lineno}"
                found.append(where)
                assert isinstance(kw.get("data"), ast.Lambda), f"{where}: data must be a callable (deferred)"
                click = kw.get("on_click")
                assert isinstance(click, ast.Constant) and click.value == "ignore", f'{where}: on_click="ignore"'
    assert len(found) >= 9, found
