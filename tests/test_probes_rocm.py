"""The rocm probe on the ROCm layouts it must recognise: legacy /opt/rocm-X.Y.Z, the ROCm Core SDK of ROCm 10
(/opt/rocm/core-X.Y behind update-alternatives links, amdrocm-* packages) and TheRock's Python wheels in the
diagnosed interpreter's site-packages.  Recorded trees: tests/fixtures/sysfs/m-7900xtx-rocm10-ubuntu and
m-7900xtx-therock-venv (sources in their SOURCE.md); the smaller cases are built in tmp_path the same way."""
import os
from pathlib import Path

from diagnostics import parsers
from diagnostics.probes import base, hip, rocm, rocm_layout
from diagnostics.probes.base import MemoryEmitter
from diagnostics.probing import probe_argv
from diagnostics.probes import by_id

SYSFS = Path(__file__).resolve().parent / "fixtures" / "sysfs"
ROCM10 = SYSFS / "m-7900xtx-rocm10-ubuntu"
VENV_TREE = SYSFS / "m-7900xtx-therock-venv"
VENV_PY = "/home/alex/rocm-venv/bin/python"
SP = "/home/alex/rocm-venv/lib/python3.12/site-packages"


def run(root, python=None):
    out = MemoryEmitter()
    out.declared = frozenset(rocm.FACTS)
    rocm.collect(str(root), out, python=python)
    assert not [n for n in out.notes if "FACTS declaration" in n], out.notes
    return out


def put(root: Path, path: str, text: str = "", mode: int = 0o644) -> None:
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    p.chmod(mode)


def link(root: Path, path: str, target: str) -> None:
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, p)


# --- ROCm 10 from the DEB packages -----------------------------------------------------------------------------

def test_rocm10_system_install_is_found_with_its_release():
    assert not (ROCM10 / "opt/rocm/.info").exists()      # what the legacy reader looked for
    f = run(ROCM10).data
    assert f["rocm.installed"] is True and f["rocm.version"] == "10.0.0"
    assert f["rocm.path"] == "/opt/rocm/core-10.0" and f["rocm.source"] == "system"
    assert f["rocm.paths"] == ["/opt/rocm", "/opt/rocm/core-10.0"]   # core and core-10 are links to core-10.0
    assert "rocm.wheel_version" not in f


def test_rocm10_tools_are_found_through_the_alternatives_links():
    # /opt/rocm/bin -> /etc/alternatives/rocm-bin -> /opt/rocm/core-10.0/bin: absolute targets, followed in the tree
    exe = rocm._find("rocminfo", str(ROCM10), ["/opt/rocm"])
    assert exe == str(ROCM10 / "opt/rocm/core-10.0/bin/rocminfo")
    # and /usr/bin/amd-smi -> /etc/alternatives/amd-smi -> /opt/rocm/core-10.0/bin/amd-smi with no prefix at all
    assert rocm._find("amd-smi", str(ROCM10), []) == str(ROCM10 / "opt/rocm/core-10.0/bin/amd-smi")
    assert rocm_layout.resolve(str(ROCM10), "/opt/rocm/core/.info/version") == "/opt/rocm/core-10.0/.info/version"


def test_the_alternatives_choice_wins_over_name_order(tmp_path):
    # ROCm 7.13 and 10.0 side by side (a real upgrade left both: the runbook of tests/fixtures/sysfs/
    # m-7900xtx-rocm10-ubuntu/SOURCE.md); "core-10.0" sorts before "core-7.13" by name, the newest is not the
    # point: /opt/rocm/core says which one is in use
    for ver in ("7.13", "10.0"):
        put(tmp_path, f"/opt/rocm/core-{ver}/.info/version", f"{ver}.0\n")
    link(tmp_path, "/etc/alternatives/core", "/opt/rocm/core-7.13")
    link(tmp_path, "/opt/rocm/core", "/etc/alternatives/core")
    f = run(tmp_path).data
    assert f["rocm.version"] == "7.13.0" and f["rocm.path"] == "/opt/rocm/core-7.13"
    assert f["rocm.paths"] == ["/opt/rocm", "/opt/rocm/core-7.13", "/opt/rocm/core-10.0"]
    os.unlink(tmp_path / "etc/alternatives/core")
    os.symlink("/opt/rocm/core-10.0", tmp_path / "etc/alternatives/core")
    assert run(tmp_path).data["rocm.version"] == "10.0.0"


def test_without_the_core_link_the_newest_tree_is_taken(tmp_path):
    for ver in ("7.13", "10.0"):
        put(tmp_path, f"/opt/rocm/core-{ver}/.info/version", f"{ver}.0\n")
    assert run(tmp_path).data["rocm.path"] == "/opt/rocm/core-10.0"


def test_legacy_layout_is_unchanged():
    f = run(SYSFS / "m-7900xtx-ubuntu").data
    assert (f["rocm.version"], f["rocm.path"], f["rocm.paths"]) == ("6.2.4", "/opt/rocm", ["/opt/rocm", "/opt/rocm-6.2.4"])


def test_amdrocm_packages_alone_give_the_release(tmp_path):
    status = ("Package: amdrocm-runtime10.0\nStatus: install ok installed\nVersion: 10.0.0~pre4\n\n"
              "Package: amdrocm-core10.0\nStatus: install ok installed\nVersion: 10.0.0~pre4\n\n"
              "Package: amdrocm-core7.13\nStatus: deinstall ok config-files\nVersion: 7.13.0~pre2\n\n")
    put(tmp_path, "/var/lib/dpkg/status", status)
    out = run(tmp_path)
    f = out.data
    assert f["rocm.version"] == "10.0.0" and f["rocm.source"] == "package" and f["rocm.path"] == "/usr"
    assert any("amdrocm-core10.0 10.0.0~pre4" in e["excerpt"] for e in out.evidences)


def test_the_rocm_core_package_names_the_release_not_hips_version(tmp_path):
    # legacy: hip-runtime-amd's version is the HIP version (6.2.41133), rocm-core's the release
    put(tmp_path, "/var/lib/dpkg/status",
        "Package: hip-runtime-amd\nStatus: install ok installed\nVersion: 6.2.41133.60204-139~22.04\n\n"
        "Package: rocm-core\nStatus: install ok installed\nVersion: 6.2.4.60204-139~22.04\n\n")
    assert run(tmp_path).data["rocm.version"] == "6.2.4"


def test_unrelated_amdrocm_names_are_not_taken(tmp_path):
    put(tmp_path, "/var/lib/dpkg/status", "Package: amdrocm-core-sdk10.0-gfx1100\nStatus: install ok installed\n"
                                         "Version: 10.0.0-4\n\nPackage: rocmfoo\nStatus: install ok installed\nVersion: 1.0\n\n")
    f = run(tmp_path).data
    assert f["rocm.installed"] is False and "rocm.version" not in f


# --- TheRock's Python wheels --------------------------------------------------------------------------------------

def test_therock_wheels_in_the_diagnosed_venv():
    out = run(VENV_TREE, python=VENV_PY)
    f = out.data
    assert f["rocm.installed"] is True and f["rocm.version"] == "10.0.0" and f["rocm.source"] == "pip"
    assert f["rocm.path"] == f["rocm.wheel_path"] == f"{SP}/_rocm_sdk_core" and f["rocm.wheel_version"] == "10.0.0"
    assert f["rocm.paths"] == [f"{SP}/_rocm_sdk_core"]
    assert any("rocm_sdk/_dist_info.py" in e["excerpt"] and "_rocm_sdk_libraries" in e["excerpt"] for e in out.evidences)
    # its tools: the executables in _rocm_sdk_core/bin (running them triggers nothing; the venv's shims would
    # start Python first and may expand the devel tarball)
    assert rocm._find("rocminfo", str(VENV_TREE), f["rocm.paths"]) == str(VENV_TREE) + f"{SP}/_rocm_sdk_core/bin/rocminfo"


def test_no_interpreter_no_wheels_and_no_rocm():
    f = run(VENV_TREE).data            # the tree's own probes get no interpreter: nothing to look into
    assert f["rocm.installed"] is False and f["rocm.paths"] == []
    f = run(VENV_TREE, python="/usr/bin/python3").data   # the system interpreter has no ROCm wheels
    assert f["rocm.installed"] is False and "rocm.wheel_path" not in f


def test_a_venv_with_an_ordinary_torch_has_no_wheel_facts(tmp_path):
    put(tmp_path, "/venv/pyvenv.cfg", "home = /usr/bin\nversion = 3.11.9\n")
    put(tmp_path, "/venv/bin/python", "", 0o755)
    put(tmp_path, "/venv/lib/python3.11/site-packages/torch/__init__.py")
    put(tmp_path, "/venv/lib/python3.11/site-packages/torch/lib/libamdhip64.so")   # torch's bundled libs: not an SDK
    f = run(tmp_path, python="/venv/bin/python").data
    assert f["rocm.installed"] is False and not any(k.startswith("rocm.wheel") for k in f)


def test_system_rocm_and_wheels_both_reported(tmp_path):
    put(tmp_path, "/opt/rocm/core-10.0/.info/version", "10.0.0\n")
    link(tmp_path, "/opt/rocm/core", "core-10.0")
    put(tmp_path, "/venv/pyvenv.cfg", "version = 3.12.3\n")
    put(tmp_path, "/venv/bin/python", "", 0o755)
    site = "/venv/lib/python3.12/site-packages"
    put(tmp_path, f"{site}/_rocm_sdk_core/.info/version", "10.1.0\n")
    put(tmp_path, f"{site}/rocm_sdk_core-10.1.0a20260909.dist-info/METADATA", "Name: rocm-sdk-core\nVersion: 10.1.0a20260909\n")
    f = run(tmp_path, python="/venv/bin/python").data
    assert (f["rocm.version"], f["rocm.source"], f["rocm.path"]) == ("10.0.0", "system", "/opt/rocm/core-10.0")
    assert f["rocm.wheel_version"] == "10.1.0" and f["rocm.wheel_path"] == f"{site}/_rocm_sdk_core"
    assert f["rocm.paths"] == ["/opt/rocm", "/opt/rocm/core-10.0", f"{site}/_rocm_sdk_core"]


def test_wheels_installed_into_the_system_python(tmp_path):
    # pip install --break-system-packages on Debian/Ubuntu: /usr/local/lib/python3.X/dist-packages
    put(tmp_path, "/usr/bin/python3.12", "", 0o755)
    link(tmp_path, "/usr/bin/python3", "python3.12")
    put(tmp_path, "/usr/local/lib/python3.12/dist-packages/_rocm_sdk_core/.info/version", "10.0.0\n")
    f = run(tmp_path, python="/usr/bin/python3").data
    assert f["rocm.source"] == "pip" and f["rocm.version"] == "10.0.0"
    assert f["rocm.path"] == "/usr/local/lib/python3.12/dist-packages/_rocm_sdk_core"


def test_dist_info_version_placeholder_is_skipped(tmp_path):
    put(tmp_path, "/v/pyvenv.cfg", "version = 3.12.1\n")
    put(tmp_path, "/v/lib/python3.12/site-packages/rocm_sdk/_dist_info.py", '__version__ = "DEFAULT"\n')
    put(tmp_path, "/v/lib/python3.12/site-packages/rocm-7.14.0.dist-info/METADATA", "Version: 7.14.0\n")
    f = run(tmp_path, python="/v/bin/python").data
    assert f["rocm.wheel_version"] == "7.14.0" and f["rocm.wheel_path"].endswith("site-packages/rocm_sdk")


# --- plumbing ------------------------------------------------------------------------------------------------------

def test_resolve_stays_inside_the_root_and_stops_on_loops(tmp_path):
    link(tmp_path, "/a", "/b")
    link(tmp_path, "/b", "/a")
    assert rocm_layout.resolve(str(tmp_path), "/a/x") is None
    link(tmp_path, "/opt/rocm/core", "../../etc/alternatives/core")
    link(tmp_path, "/etc/alternatives/core", "/opt/rocm/core-10.0")
    assert rocm_layout.resolve(str(tmp_path), "/opt/rocm/core/bin") == "/opt/rocm/core-10.0/bin"


def test_module_probes_are_told_the_diagnosed_interpreter(monkeypatch):
    argv = probe_argv(by_id()["rocm"], "/home/alex/rocm-venv/bin/python", "/")
    assert argv[-2:] == ["--python", "/home/alex/rocm-venv/bin/python"]


def test_hip_probe_looks_in_the_wheels_and_the_core_trees(tmp_path, monkeypatch):
    site = tmp_path / "venv/lib/python3.12/site-packages"
    put(tmp_path, "/venv/pyvenv.cfg", "version = 3.12.3\n")
    put(site, "/_rocm_sdk_core/lib/libamdhip64.so.7")
    monkeypatch.setattr(base, "TARGET_PYTHON", str(tmp_path / "venv/bin/python"))
    monkeypatch.setattr(rocm_layout, "core_trees", lambda root: ["/opt/rocm/core-10.0"])
    monkeypatch.delenv("ROCM_PATH", raising=False)
    pre = hip._prefixes()
    assert pre[1] == str(site / "_rocm_sdk_core") and "/opt/rocm/core-10.0" in pre


def test_hipconfig_rocm_path_of_rocm10_names_the_release():
    facts = parsers.parse("/opt/rocm/core-10.0\n", "hipconfig").facts      # `hipconfig --rocmpath`
    assert facts["rocm.path"] == "/opt/rocm/core-10.0" and facts["rocm.version"] == "10.0"
    assert "rocm.version" not in parsers.parse("/opt/rocm\n", "hipconfig").facts


def test_the_probe_child_reads_the_wheels_of_the_interpreter_it_is_given():
    from diagnostics.probing import run_probe

    r = run_probe(by_id()["rocm"], python=VENV_PY, root=str(VENV_TREE))
    assert r["facts"]["rocm.source"] == "pip" and r["facts"]["rocm.version"] == "10.0.0", r
    assert r["status"] == "ok"


def test_rpm_database_on_the_live_system(monkeypatch):
    # RHEL/SLES installs of the ROCm Core SDK: `rpm -qa` (the database is not a text file to read)
    monkeypatch.setattr(rocm.shutil, "which", lambda name: "/usr/bin/rpm" if name == "rpm" else None)
    seen = []

    def fake(argv, timeout=15):
        seen.append(argv)
        return 0, "amdrocm-core10.0\t10.0.0-4.el9\nkernel\t5.14.0\namdrocm-runtime10.0\t10.0.0-4.el9\n", "", None

    monkeypatch.setattr(rocm, "run_tool", fake)
    assert rocm._rpm_versions() == {"amdrocm-core10.0": "10.0.0-4.el9", "amdrocm-runtime10.0": "10.0.0-4.el9"}
    assert seen[0][:2] == ["rpm", "-qa"]
    assert rocm._pick_package(rocm._rpm_versions())[0] == "amdrocm-core10.0"
