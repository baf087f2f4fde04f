"""`pip install .` gives a working `gpu-doctor` outside the checkout: the wheel carries the package, its
catalogues and migrations, and the knowledge base, web UI pages and Streamlit settings as share data.

The wheel is really built and really installed into a fresh virtual environment; only the third-party
dependencies are borrowed from the running interpreter's site-packages (a .pth file), so the test needs no
network.  It runs the installed command from an empty directory, where no checkout is in reach.
"""
from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# the commands run as on a user's machine: no PYTHONPATH (a PYTHONPATH naming the checkout would let pip take the
# checkout's gpu_doctor.egg-info, which building the wheel leaves there, for an installed gpu-doctor and skip the
# install, and would let the installed command import this checkout's code instead of its own)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out), str(ROOT)], capture_output=True, text=True, env=ENV, timeout=240,
                       cwd=build)
    if p.returncode != 0 and "No module named" in p.stderr and "setuptools" in p.stderr:
        pytest.skip("setuptools is not installed in this interpreter")
    assert p.returncode == 0, p.stderr[-3000:]
    wheels = list(out.glob("gpu_doctor-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_carries_code_kb_and_ui(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = [n for n in names if ".data/data/share/gpu-doctor/" in n]
    kb = {n.split("/share/gpu-doctor/kb/", 1)[1] for n in data if "/share/gpu-doctor/kb/" in n}
    shipped = {str(p.relative_to(ROOT / "kb")) for p in (ROOT / "kb").rglob("*.yaml")}
    assert shipped and shipped <= kb, sorted(shipped - kb)[:5]
    assert any(n.endswith("share/gpu-doctor/app.py") for n in data)
    assert any(n.endswith("share/gpu-doctor/ui/diagnose.py") for n in data)
    assert any(n.endswith("share/gpu-doctor/.streamlit/config.toml") for n in data)
    for inner in ("diagnostics/cli.py", "diagnostics/i18n/zh.json", "diagnostics/i18n/symptoms.yaml",
                  "diagnostics/probes/torch_child.py", "diagnostics/generation/child.py"):
        assert inner in names, inner
    assert any(n.startswith("diagnostics/store/migrations/versions/") for n in names)
    assert not any(n.startswith(("tests/", "ui/", "kb/")) for n in names), "data leaked into site-packages"


def test_installed_command_works_from_any_directory(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, env=ENV, check=True).stdout.strip()
    # the dependencies (streamlit, re2, yaml, ...) come from this interpreter's site-packages
    borrowed = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib) / "_deps.pth").write_text("\n".join(borrowed) + "\n")
    p = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q",
                        str(wheel)], capture_output=True, text=True, env=ENV, timeout=240)
    if p.returncode != 0 and "no such option: --python" in p.stderr:
        pytest.skip("pip too old for --python")
    assert p.returncode == 0, p.stderr[-3000:]
    exe = env_dir / "bin" / "gpu-doctor"
    assert exe.exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lint = subprocess.run([str(exe), "kb", "lint"], capture_output=True, text=True, env=ENV, cwd=elsewhere, timeout=120)
    assert lint.returncode == 0, lint.stdout[-2000:] + lint.stderr[-2000:]
    n = len(list((ROOT / "kb").glob("*.yaml")))
    assert f"{n} entries" in lint.stdout, lint.stdout
    log = elsewhere / "crash.txt"
    log.write_text('"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\nAborted (core dumped)\n')
    m = subprocess.run([str(exe), "match", "--log", str(log), "--json"], capture_output=True, text=True, env=ENV,
                       cwd=elsewhere, timeout=120)
    assert m.returncode == 1, m.stderr[-2000:]
    assert '"hip-no-binary-for-gpu"' in m.stdout
    # a description is ranked with the installed vocabulary (diagnostics/i18n/symptoms.yaml), in both languages
    d = subprocess.run([str(exe), "match", "--describe", "torch.cuda.is_available() returns False", "--json"],
                       capture_output=True, text=True, env=ENV, cwd=elsewhere, timeout=120)
    assert d.returncode == 0, d.stderr[-2000:]
    possible = [x["id"] for x in json.loads(d.stdout)["possible"]]
    assert possible and all((ROOT / "kb" / f"{i}.yaml").exists() for i in possible), possible
    zh = subprocess.run([str(exe), "--lang", "zh", "match", "--describe", "torch.cuda.is_available() returns False"],
                        capture_output=True, text=True, env=ENV, cwd=elsewhere, timeout=120)
    assert zh.returncode == 0 and "结论" in zh.stdout, zh.stdout[-2000:] + zh.stderr[-2000:]
    # the installed command reads the installed data, not this checkout
    where = subprocess.run([str(py), "-c", "from diagnostics.kb import KB_DIR; print(KB_DIR)"],
                           capture_output=True, text=True, env=ENV, cwd=elsewhere, check=True).stdout.strip()
    assert where.startswith(str(env_dir)), where
    # the installed migrations build a new session store
    db = subprocess.run([str(exe), "sessions", "list"], capture_output=True, text=True, cwd=elsewhere, timeout=120,
                        env={**ENV, "DATABASE_URL": f"sqlite:///{tmp_path / 'sessions.db'}"})
    assert db.returncode == 0 and (tmp_path / "sessions.db").exists(), db.stdout[-2000:] + db.stderr[-2000:]
