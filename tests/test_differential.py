"""The known causes of a generic consequence that fired alone are guessed first (diagnostics/differential.py).

The pastes are real tuning cases (tests/eval/tuning, each with its thread in ``source``): a vLLM container that sees
no HIP GPU because its render group id differed from the host's (ROCm/vllm thread of case 1093), kohya_ss under WSL2
(case 1269).  In both only the consequence, hip-runtime-sees-no-gpu, is confirmed.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from diagnostics.differential import GENERIC_MIN_ROOTS, _facts_only, root_guesses, roots_of, ruled_out
from diagnostics.kb import Cond
from diagnostics.report import render_diagnoses
from diagnostics.service import diagnose_text, get_kb
from diagnostics.verdicts import counts

ROOT = Path(__file__).resolve().parents[1]
TUNING = ROOT / "tests" / "eval" / "tuning"


def _case(prefix: str) -> str:
    path = next(TUNING.glob(prefix + "-*.yaml"))
    return yaml.safe_load(path.read_text(encoding="utf-8"))["log"]


def test_generic_consequences_have_many_known_causes():
    kb, _ = get_kb(None)
    roots = roots_of(kb)
    assert len(roots["hip-runtime-sees-no-gpu"]) >= GENERIC_MIN_ROOTS
    assert "container-render-gid-mismatch" in roots["hip-runtime-sees-no-gpu"]
    assert all(eid not in rs for eid, rs in roots.items())   # nothing is its own cause


def test_container_group_paste_guesses_the_container_cause_first():
    res = diagnose_text(logs=[("vllm.log", _case("1093"))])
    confirmed = [d["id"] for d in res["diagnoses"] if counts(d)]
    assert confirmed == ["hip-runtime-sees-no-gpu"]
    lifted = [d for d in res["possible"] if d.get("root_of")]
    assert "container-render-gid-mismatch" in [d["id"] for d in lifted]
    assert all(d["root_of"] == "hip-runtime-sees-no-gpu" for d in lifted)
    assert all(d["basis"] == "possible" and d not in res["diagnoses"] for d in lifted)
    # a guess never changes what was found
    assert res["verdict"] == diagnose_text(logs=[("vllm.log", "RuntimeError: No HIP GPUs are available")])["verdict"]
    assert 1 <= len(lifted) <= 3 and res["possible"][:len(lifted)] == lifted


def test_wsl_paste_names_wsl_among_the_causes():
    res = diagnose_text(logs=[("kohya.log", _case("1269"))])
    assert [d["id"] for d in res["diagnoses"] if counts(d)] == ["hip-runtime-sees-no-gpu"]
    assert res["possible"][0]["id"] == "wsl-rocm-unsupported-or-misconfigured"
    assert res["possible"][0]["root_of"] == "hip-runtime-sees-no-gpu"


def test_a_confirmed_root_cause_leaves_nothing_to_guess():
    # the render-group root cause is confirmed from the container's own groups (ROCm docker guide's check)
    text = ("RuntimeError: No HIP GPUs are available\n"
            "$ ls -l /dev/kfd /dev/dri/renderD128\n"
            "crw-rw---- 1 root render 235,   0 Jan  1 00:00 /dev/kfd\n"
            "crw-rw---- 1 root render 226, 128 Jan  1 00:00 /dev/dri/renderD128\n"
            "$ groups\nuser video\n")
    res = diagnose_text(logs=[("x.log", text)])
    ids = [d["id"] for d in res["diagnoses"] if counts(d)]
    assert "user-not-in-render-video-group" in ids
    assert not any(d.get("root_of") for d in res["possible"])


def test_no_text_no_guess_and_no_generic_no_guess():
    kb, _ = get_kb(None)
    res = {"diagnoses": [{"id": "hip-runtime-sees-no-gpu", "severity": "error", "basis": "confirmed"}], "possible": []}
    assert root_guesses(res, "   ", kb)["possible"] == []
    # a specific finding (not superseded by enough entries) gets no differential
    res = {"diagnoses": [{"id": "hip-out-of-memory", "severity": "error", "basis": "confirmed"}], "possible": []}
    assert root_guesses(res, "HIP out of memory. Tried to allocate 2.00 GiB inside docker", kb)["possible"] == []


def test_facts_alone_rule_a_cause_out_but_a_log_condition_stays_open():
    in_container = Cond(kind="fact", fact="container.kind", op="in", value=["docker", "podman"])
    log = Cond(kind="log", pattern="docker run")
    both = Cond(kind="all", children=[in_container, log])
    either = Cond(kind="any", children=[in_container, log])
    bare = {"container.kind": "none"}
    assert _facts_only(both, bare) is False
    assert _facts_only(either, bare) is None          # the log could still show it
    assert _facts_only(both, {}) is None               # unknown fact: open
    assert _facts_only(Cond(kind="not", children=[in_container]), bare) is True

    class E:
        when = both

    assert ruled_out(E, bare) and not ruled_out(E, {"container.kind": "docker"})


def test_guesses_ruled_out_by_facts_are_not_listed(monkeypatch):
    import diagnostics.differential as differential

    kb, _ = get_kb(None)
    text = _case("1093")

    def fresh():
        return {"diagnoses": [{"id": "hip-runtime-sees-no-gpu", "severity": "error", "basis": "confirmed"}],
                "possible": []}

    facts = {"container.kind": "none"}
    open_ = [d["id"] for d in root_guesses(fresh(), text, kb, facts)["possible"]]
    assert "container-render-gid-mismatch" in open_
    seen = []

    def rule_out(entry, f):
        seen.append(f)
        return entry.id == "container-render-gid-mismatch"

    monkeypatch.setattr(differential, "ruled_out", rule_out)
    after = [d["id"] for d in root_guesses(fresh(), text, kb, facts)["possible"]]
    assert "container-render-gid-mismatch" not in after and after
    assert seen and all(f is facts for f in seen)       # the report's facts are what decide


def test_report_says_whose_cause_a_guess_is_in_both_languages():
    res = diagnose_text(logs=[("vllm.log", _case("1093"))])
    en = render_diagnoses(res["diagnoses"], res["not_ruled_out"], "en", res["possible"])
    zh = render_diagnoses(res["diagnoses"], res["not_ruled_out"], "zh", res["possible"])
    assert "a known cause of hip-runtime-sees-no-gpu" in en
    assert "hip-runtime-sees-no-gpu 的已知原因" in zh


def test_cli_json_carries_root_of(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(_case("1093"), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "diagnostics", "match", "--log", str(log), "--json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    import json

    data = json.loads(out.stdout)
    assert data["possible"][0]["root_of"] == "hip-runtime-sees-no-gpu"
