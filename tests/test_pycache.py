"""Where PYTHONDONTWRITEBYTECODE forbids bytecode (many container images set it), the doctor keeps its own under its
cache instead of compiling ~60 modules from source in every run (issue 19); the diagnosed interpreter still writes
nothing into its environment."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from diagnostics import probing
from diagnostics.probes import PROBES

ROOT = Path(__file__).resolve().parent.parent


def _copy(tmp_path):
    dst = tmp_path / "src"
    shutil.copytree(ROOT / "diagnostics", dst / "diagnostics", ignore=shutil.ignore_patterns("__pycache__"))
    return dst


CODE = ("import sys; from diagnostics.paths import private_pycache; p = private_pycache(); import diagnostics.cli; "
        "print(p)")


def test_no_bytecode_allowed_means_the_doctors_cache_keeps_it(tmp_path):
    src = _copy(tmp_path)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "GPU_DOCTOR_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(src)}
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.pop("GPU_DOCTOR_PYCACHE", None)
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=120, cwd=src)
    assert out.returncode == 0, out.stderr
    prefix = Path(out.stdout.strip())
    assert prefix == tmp_path / "cache" / "pycache"
    assert list(prefix.rglob("cli.*.pyc")), "the CLI's bytecode is kept under the cache"
    assert not list(src.rglob("*.pyc")), "nothing is written beside the sources"
    env["GPU_DOCTOR_PYCACHE"] = "0"
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=120, cwd=src)
    assert out.stdout.strip() == "None"


def test_bytecode_allowed_changes_nothing(tmp_path):
    src = _copy(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env.update(GPU_DOCTOR_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(src))
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=120, cwd=src)
    assert out.returncode == 0 and out.stdout.strip() == "None", out.stderr
    assert not (tmp_path / "cache" / "pycache").exists()


def test_probe_children_inherit_the_prefix_but_the_diagnosed_interpreter_writes_nothing(monkeypatch):
    module_spec = next(s for s in PROBES if s.module)
    script_spec = next(s for s in PROBES if s.script)
    monkeypatch.setattr(sys, "pycache_prefix", "/tmp/x-prefix")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    env = probing._child_env(module_spec, None)
    assert env["PYTHONPYCACHEPREFIX"] == "/tmp/x-prefix" and "PYTHONDONTWRITEBYTECODE" not in env
    env = probing._child_env(script_spec, None)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and "PYTHONPYCACHEPREFIX" not in env
