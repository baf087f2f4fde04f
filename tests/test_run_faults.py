"""`python -m diagnostics run` survives the diseases it diagnoses: a torch that segfaults, hangs or aborts."""
import json
import os
import subprocess
import sys
import time

import pytest

from tests.fakes import ABORT_ON_DEVICE, FLOOD, HANG, HANG_ON_DEVICE, SEGFAULT, make_fake_torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(args, env_extra=None, timeout=120):
    env = dict(os.environ)
    env.update(env_extra or {})
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "diagnostics", *args], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=timeout)
    return p, time.monotonic() - t0


def torch_probe(report):
    return next(p for p in report["probes"] if p["id"] == "torch")


def test_segfault_on_import(tmp_path):
    fake = make_fake_torch(tmp_path, SEGFAULT)
    p, dt = run_cli(["run", "--json", "--no-generate", "--timeout", "20"], {"PYTHONPATH": str(fake)})
    rep = json.loads(p.stdout)
    t = torch_probe(rep)
    assert t["status"] == "crashed"
    assert "SIGSEGV" in t["error"] and "import torch" in t["error"]
    assert any("Segmentation fault" in e["excerpt"] for e in t["evidence"])
    assert p.returncode in (0, 1)
    assert dt < 60


def test_hang_on_import_times_out_within_budget(tmp_path):
    fake = make_fake_torch(tmp_path, HANG)
    p, dt = run_cli(["run", "--json", "--no-generate", "--timeout", "4"], {"PYTHONPATH": str(fake)})
    rep = json.loads(p.stdout)
    t = torch_probe(rep)
    assert t["status"] == "timeout"
    assert "import torch" in t["error"]
    assert dt < 30
    # the torch facts it could not establish are "not ruled out", never silently clean
    assert any("unknown" in d["reason"] for d in rep["not_ruled_out"]) or rep["diagnoses"]


def test_abort_on_first_device_call_is_diagnosed(tmp_path):
    fake = make_fake_torch(tmp_path, ABORT_ON_DEVICE)
    p, dt = run_cli(["run", "--json", "--no-generate", "--timeout", "20"], {"PYTHONPATH": str(fake)})
    rep = json.loads(p.stdout)
    t = torch_probe(rep)
    assert t["status"] == "crashed" and "SIGABRT" in t["error"] and "device query" in t["error"]
    assert rep["facts"]["torch.build"] == "rocm"
    assert rep["facts"]["torch.hip_version"].startswith("5.7")
    ids = [d["id"] for d in rep["diagnoses"]]
    # the abort text names the cause of the crash; on a machine with no GPU on its bus (this one) it is listed under
    # the causes it follows from (no GPU, a ROCm wheel without an AMD GPU), on a GPU machine it leads
    assert "hip-no-binary-for-gpu" in ids
    assert "torch" not in {u.get("id") for u in rep["unexplained"]}, rep["unexplained"]  # the crash is explained
    assert p.returncode == 1


def test_megabytes_on_stderr(tmp_path):
    fake = make_fake_torch(tmp_path, FLOOD)
    p, dt = run_cli(["run", "--json", "--no-generate", "--timeout", "60"], {"PYTHONPATH": str(fake)})
    rep = json.loads(p.stdout)
    t = torch_probe(rep)
    assert t["status"] == "fail"
    assert rep["facts"]["torch.build"] == "cpu"
    assert len(p.stdout) < 5_000_000


def test_python_that_does_not_exist():
    p, _ = run_cli(["run", "--json", "--no-generate", "--python", "/nonexistent/python"])
    assert p.returncode == 2 and "not an executable" in p.stderr


# ------------------------------------------------------------------ a hang is recognised by stage (issue 19)


@pytest.mark.parametrize("generate", [False, True], ids=["probes only", "with the test generation"])
def test_hang_in_the_first_device_call_is_reported_within_30s_by_stage(tmp_path, generate):
    """No --timeout: the device query's own budget (not the probe's 120 s) stops it, and the stage is named.
    With the generation, the torch probe runs inside the generation's child: the hang ends both, the
    generation is reported as not started, and what the probe streamed before the hang is kept."""
    fake = make_fake_torch(tmp_path / "fake", HANG_ON_DEVICE)
    args = ["run", "--json"] + ([] if generate else ["--no-generate"])
    p, dt = run_cli(args, {"PYTHONPATH": str(fake), "GPU_DOCTOR_CACHE_DIR": str(tmp_path / "cache")}, timeout=90)
    rep = json.loads(p.stdout)
    t = torch_probe(rep)
    assert t["status"] == "timeout", t
    assert "during 'device query'" in t["error"] and "budget" in t["error"], t["error"]
    assert dt < 30, f"reported after {dt:.1f}s"
    assert rep["facts"]["torch.build"] == "rocm" and rep["facts"]["torch.version"] == "2.3.0+rocm5.7"
    assert "torch.cuda_available" not in rep["facts"]
    if generate:
        assert t.get("hosted"), t
        assert rep["generation"]["status"] == "skipped", rep["generation"]
        assert "device query" in rep["generation"]["error"]
    assert p.returncode == 1


def test_abort_in_the_shared_child_is_the_probes_finding(tmp_path):
    """The torch probe hosted by the generation's child: an abort in the first device call is the probe's
    crash (stage named, the HIP text matched), and the generation says it did not start."""
    fake = make_fake_torch(tmp_path / "fake", ABORT_ON_DEVICE)
    p, dt = run_cli(["run", "--json"], {"PYTHONPATH": str(fake), "GPU_DOCTOR_CACHE_DIR": str(tmp_path / "cache")})
    rep = json.loads(p.stdout)
    t = torch_probe(rep)
    assert t["status"] == "crashed" and "SIGABRT" in t["error"] and "device query" in t["error"], t
    assert "hip-no-binary-for-gpu" in [d["id"] for d in rep["diagnoses"]]  # under no-gpu-present on a GPU-less box
    assert "torch" not in {u.get("id") for u in rep["unexplained"]}, rep["unexplained"]
    assert rep["generation"]["status"] == "skipped"
    assert p.returncode == 1


def test_stage_budgets_widen_with_timeout_and_env(monkeypatch):
    from diagnostics.probes import by_id
    from diagnostics.probing import SCALE_ENV, StageClock, stage_scale

    spec = by_id()["torch"]
    budgets = dict(spec.stages)
    assert budgets["device query"] <= 25 and budgets["import torch"] >= 30   # a hung device call: seconds
    monkeypatch.delenv(SCALE_ENV, raising=False)
    assert stage_scale(spec, None) == 1.0 and stage_scale(spec, 4) == 1.0     # a small --timeout caps, never narrows
    assert stage_scale(spec, spec.timeout * 5) == 5.0                        # --timeout 600: five times wider
    monkeypatch.setenv(SCALE_ENV, "3")
    assert stage_scale(spec, None) == 3.0
    clock = StageClock(spec.stages, 2.0)
    clock.enter("device query")
    assert abs(clock.deadline() - clock.since - 2 * budgets["device query"]) < 1e-6
    clock.enter("a stage without a budget")
    assert clock.deadline() is None


def test_the_hosted_torch_probe_finds_what_its_own_child_finds(tmp_path):
    """The real torch of this interpreter: the probe inside the generation's child reports the same facts and
    status as the probe in its own child, and the generation still runs."""
    env = {}  # the user's model cache (built once, as on a user's machine)
    alone, _ = run_cli(["run", "--json", "--no-generate"], env, timeout=300)
    shared, _ = run_cli(["run", "--json"], env, timeout=600)
    a, s = torch_probe(json.loads(alone.stdout)), torch_probe(json.loads(shared.stdout))
    assert s.get("hosted") and not a.get("hosted")
    assert (a["status"], a["summary"]) == (s["status"], s["summary"])
    drop = {"python.executable"}
    assert {k: v for k, v in a["facts"].items() if k not in drop} == {k: v for k, v in s["facts"].items() if k not in drop}
    gen = json.loads(shared.stdout)["generation"]
    assert gen["status"] in ("ok", "warn"), gen.get("error")


RAISE_ON_DEVICE = """
import types
__version__ = '2.3.0+rocm5.7'
version = types.SimpleNamespace(hip='5.7.31921-d1770ee1b', cuda=None)
def _raise():
    raise RuntimeError("HIP error: invalid device function")
cuda = types.SimpleNamespace(is_available=_raise, get_arch_list=lambda: ['gfx1100'])
"""


def test_a_device_error_in_the_shared_child_sends_the_generation_to_a_fresh_one(tmp_path):
    """The probe found the device broken (is_available raised): the generation's own finding must come from a
    process of its own, not from the GPU state the probe left behind."""
    fake = make_fake_torch(tmp_path / "fake", RAISE_ON_DEVICE)
    p, _ = run_cli(["run", "--json"], {"PYTHONPATH": str(fake), "GPU_DOCTOR_CACHE_DIR": str(tmp_path / "cache")})
    rep = json.loads(p.stdout)
    t = torch_probe(rep)
    assert t["status"] == "fail" and t.get("hosted"), t
    assert "invalid device function" in rep["facts"]["torch.smoke_error"]
    gen = rep["generation"]
    assert any("fresh child" in n for n in gen.get("notes") or []), gen
    assert gen["status"] in ("fail", "crashed") and gen["error"], gen
    assert "hip-invalid-device-function" in [d["id"] for d in rep["diagnoses"]]
