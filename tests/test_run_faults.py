"""`python -m diagnostics run` survives the diseases it diagnoses: a torch that segfaults, hangs or aborts."""
import json
import os
import subprocess
import sys
import time

import pytest

from tests.fakes import ABORT_ON_DEVICE, FLOOD, HANG, SEGFAULT, make_fake_torch

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
    assert "hip-no-binary-for-gpu" in ids[:3]
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
