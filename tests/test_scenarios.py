"""The scenario suite (tests/scenarios/*.yaml): whole reports -> first cause, verdict, exit status.

Each file is one test, so a failure names the scenario.  The loader is strict about keys (a typo must not make a
scenario pass) and the suite must stay large enough to cover issue 13's points (at least 40 scenarios)."""
from pathlib import Path

import pytest
import yaml

from diagnostics import scenarios

FILES = sorted(scenarios.SCENARIO_DIR.glob("*.yaml"))


def test_the_suite_is_there():
    assert len(FILES) >= 40


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario(path: Path):
    sc = scenarios.parse(yaml.safe_load(path.read_text(encoding="utf-8")), path)
    assert sc.note.strip(), "every scenario says where it comes from"
    errors = scenarios.check(sc, scenarios.run(sc))
    assert not errors, f"{path.name}: " + "; ".join(errors)


def test_unknown_keys_are_refused(tmp_path):
    bad = {"name": "x", "note": "y", "expect": {"verdict": "healthy"}, "fatcs": {}}
    with pytest.raises(scenarios.ScenarioError, match="unknown key"):
        scenarios.parse(bad, tmp_path / "x.yaml")
    with pytest.raises(scenarios.ScenarioError, match="unknown expect key"):
        scenarios.parse({"name": "x", "expect": {"verdcit": "healthy"}}, tmp_path / "x.yaml")
    with pytest.raises(scenarios.ScenarioError, match="must be"):
        scenarios.parse({"name": "x", "expect": {}, "facts": {"gpu.count": "two"}}, tmp_path / "x.yaml")


def test_a_wrong_expectation_fails(tmp_path):
    """The runner can fail: the same input with a wrong first cause and verdict is reported as such."""
    sc = scenarios.parse({"name": "x", "facts": {"torch.installed": False},
                          "expect": {"first": "no-gpu-present", "verdict": "healthy", "exit": 0,
                                     "absent": ["torch-not-installed"]}}, tmp_path / "x.yaml")
    errs = scenarios.check(sc, scenarios.run(sc))
    assert any(e.startswith("first cause") for e in errs) and any(e.startswith("verdict") for e in errs)
    assert any(e.startswith("exit") for e in errs) and any("must not fire" in e for e in errs)


def test_kb_test_runs_the_scenarios(capsys):
    from diagnostics.cli import main

    assert main(["kb", "test", "--run", "^mask-cuda"]) == 0
    out = capsys.readouterr().out
    assert "scenarios)" in out and "0 failed" in out.splitlines()[-1]
