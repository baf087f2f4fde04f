"""Fault injection over the real runner, probes and CLI (issue 8).

Every scenario must end as a clear finding within its time budget and leave nothing behind: no process
(checked by a marker in the environment of everything the test starts, so even a daemon that called setsid
and was re-parented to init is found) and no temporary file (TMPDIR of the tool is a fresh folder that must
be empty afterwards).  The torch fakes of tests/fakes are shared with tests/test_run_faults.py, which
checks the diagnosis; here the same fakes are checked for leftovers and budgets, and new faults are added:
vendor tools that hang, lie, print garbage, are missing or cannot be executed; permission denied on sysfs
and on /dev/kfd (root with its DAC capabilities dropped, in a private mount namespace); a full, a
read-only, a locked and a missing database.

Tests run as root here; where root would not be denied, capabilities are dropped with ``setpriv`` and
mounts are made inside ``unshare -m`` (private to the test; nothing outside changes).  Scenarios that need
these tools skip when they are not available.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from diagnostics.probes import by_id
from diagnostics.probing import probe_argv, run_probe, finish, _child_env
from diagnostics.runner import Collected, parse_record, run_child
from tests.fakes import ABORT_ON_DEVICE, FLOOD, HANG, HANG_ON_DEVICE, SEGFAULT, make_fake_torch

ROOT = Path(__file__).resolve().parent.parent
MARK = "DIAG_FAULT_TEST"
NO_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


# ------------------------------------------------------------------------------------------ leftovers


def _marked(token: str) -> list[int]:
    needle = f"{MARK}={token}".encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(d))
        except OSError:
            continue
    return found


class Sandbox:
    """Environment for one scenario: a marker every descendant inherits, a private TMPDIR."""

    def __init__(self, base: Path):
        self.token = uuid.uuid4().hex
        self.tmp = base / "tooltmp"
        self.tmp.mkdir()
        self.env = dict(os.environ)
        self.env.pop("DATABASE_URL", None)
        self.env[MARK] = self.token
        self.env["TMPDIR"] = str(self.tmp)
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"
        self.children_before = {p.pid for p in psutil.Process().children(recursive=True)}

    def cli(self, args: list[str], *, prefix: list[str] | None = None, timeout: float = 120,
            extra: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
        env = dict(self.env)
        env.update(extra or {})
        t0 = time.monotonic()
        p = subprocess.run([*(prefix or []), sys.executable, "-m", "diagnostics", *args], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=timeout)
        return p, time.monotonic() - t0

    def leftovers(self) -> list[str]:
        deadline = time.monotonic() + 3.0
        while True:
            pids = _marked(self.token)
            # what processes that existed before the test (a browser of the e2e tests, say) start meanwhile is
            # theirs, not this test's
            before = set(self.children_before)
            for pid in self.children_before:
                try:
                    before |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
                except psutil.Error:
                    pass
            kids = [p for p in psutil.Process().children(recursive=True)
                    if p.pid not in before and p.is_running()
                    and p.status() != psutil.STATUS_ZOMBIE]
            if not pids and not kids or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        out = []
        for pid in set(pids) | {k.pid for k in kids}:
            try:
                out.append(f"{pid}: {' '.join(psutil.Process(pid).cmdline())[:200]}")
            except psutil.Error:
                pass
            try:  # leave the machine clean even when the assertion fails
                os.kill(pid, 9)
            except OSError:
                pass
        return out

    def temp_files(self) -> list[str]:
        return [str(p) for p in self.tmp.rglob("*")]


@pytest.fixture
def box(tmp_path):
    sb = Sandbox(tmp_path)
    yield sb
    left = sb.leftovers()
    temps = sb.temp_files()
    assert not left, f"processes left behind: {left}"
    assert not temps, f"temporary files left behind: {temps}"


def report_of(p: subprocess.CompletedProcess) -> dict:
    assert p.stdout.strip(), f"no report on stdout; exit {p.returncode}; stderr: {p.stderr[-2000:]}"
    rep = json.loads(p.stdout)
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    return rep


def probe(rep: dict, pid: str) -> dict:
    return next(p for p in rep["probes"] if p["id"] == pid)


# ------------------------------------------------------------------------------- the torch that fails


FORKER = """
import os, sys, time, types
# one child stays in the process group, one grandchild escapes it (setsid, as a daemon does)
if os.fork() == 0:
    time.sleep(600)
    os._exit(0)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open(os.devnull, os.O_RDWR)
        for i in range(3):
            os.dup2(fd, i)
        time.sleep(600)
    os._exit(0)
__version__ = '2.4.0+cpu'
version = types.SimpleNamespace(hip=None, cuda=None)
cuda = types.SimpleNamespace(is_available=lambda: False, get_arch_list=lambda: [], device_count=lambda: 0)
"""

# the child speaks the probe protocol, badly: malformed records, facts of the wrong type, a huge fact
SPOOF = """
import sys, types
P = '@@DIAG '
sys.stdout.write(P + '{not json\\n')
sys.stdout.write(P + '[1, 2, 3]\\n')
sys.stdout.write(P + '{"fact": "gpu.count", "value": "many"}\\n')
sys.stdout.write(P + '{"fact": "torch.cuda_available", "value": {"nested": [1, 2]}}\\n')
sys.stdout.write(P + '{"status": "exploded"}\\n')
sys.stdout.write(P + '{"note": "' + 'x' * 300000 + '"}\\n')
sys.stdout.flush()
__version__ = '2.4.0+cpu'
version = types.SimpleNamespace(hip=None, cuda=None)
cuda = types.SimpleNamespace(is_available=lambda: False, get_arch_list=lambda: [], device_count=lambda: 0)
"""


# the import error names a file whose bytes are not UTF-8 (Python shows them as surrogate escapes): the JSON
# protocol carries "\\udcff", which crashed the whole run in the matcher (RE2 takes only valid UTF-8)
NON_UTF8_IMPORT_ERROR = """
raise ImportError("libamdhip64.so.6: cannot open shared object file: No such file or directory: /opt/r\\udcffcm")
"""


def test_import_error_with_non_utf8_bytes_is_reported(box, tmp_path):
    fake = make_fake_torch(tmp_path / "fake", NON_UTF8_IMPORT_ERROR)
    p, _ = box.cli(["run", "--json", "--no-generate", "--timeout", "20"], extra={"PYTHONPATH": str(fake)})
    rep = report_of(p)
    assert "cannot open shared object file" in rep["facts"]["torch.import_error"]
    assert "rocm-shared-library-not-found" in [d["id"] for d in rep["diagnoses"]]


@pytest.mark.parametrize("name,body,timeout,budget,status", [
    ("segfault on import", SEGFAULT, 20, 40, "crashed"),
    ("hang on import", HANG, 4, 25, "timeout"),
    ("abort on first device call", ABORT_ON_DEVICE, 20, 40, "crashed"),
    ("hang on first device call", HANG_ON_DEVICE, 4, 25, "timeout"),
    ("megabytes on stderr", FLOOD, 60, 60, "fail"),
    ("children that outlive it", FORKER, 20, 40, None),
])
def test_torch_faults_leave_nothing_behind(box, tmp_path, name, body, timeout, budget, status):
    fake = make_fake_torch(tmp_path / "fake", body)
    p, dt = box.cli(["run", "--json", "--no-generate", "--timeout", str(timeout)], extra={"PYTHONPATH": str(fake)})
    rep = report_of(p)
    t = probe(rep, "torch")
    if status:
        assert t["status"] == status, (name, t["status"], t["error"])
    else:
        assert t["status"] in ("ok", "warn", "fail"), t
    assert p.returncode in (0, 1), p.stderr[-2000:]
    assert dt < budget, f"{name}: {dt:.1f}s"
    if status == "timeout":
        # the stage it hung in is named, and what it could not establish is "not ruled out", never clean
        assert "during '" in t["error"]
        assert rep["not_ruled_out"] or rep["diagnoses"]


def test_hang_on_first_device_call_keeps_what_came_before(box, tmp_path):
    fake = make_fake_torch(tmp_path / "fake", HANG_ON_DEVICE)
    p, dt = box.cli(["run", "--json", "--no-generate", "--timeout", "4"], extra={"PYTHONPATH": str(fake)})
    rep = report_of(p)
    t = probe(rep, "torch")
    assert t["status"] == "timeout" and "device" in t["error"], t["error"]
    # facts streamed before the hang survive it
    assert rep["facts"]["torch.build"] == "rocm"
    assert rep["facts"]["torch.version"] == "2.3.0+rocm5.7"
    assert "torch.cuda_available" not in rep["facts"]


def test_the_runners_own_marker_is_not_reported_as_a_gpu_variable(box):
    p, _ = box.cli(["run", "--json", "--no-generate", "--timeout", "30"])
    rep = report_of(p)
    assert not [k for k in rep["facts"] if "DIAG_" in k or "DOCTOR" in k], rep["facts"].get("env.set_names")


def test_protocol_spoofing_child_cannot_plant_bad_facts(box, tmp_path):
    fake = make_fake_torch(tmp_path / "fake", SPOOF)
    p, _ = box.cli(["run", "--json", "--no-generate", "--timeout", "30"], extra={"PYTHONPATH": str(fake)})
    rep = report_of(p)
    t = probe(rep, "torch")
    assert t["status"] in ("ok", "warn", "fail")
    assert not isinstance(rep["facts"].get("gpu.count"), str)
    assert rep["facts"].get("torch.cuda_available") in (False, None)
    assert any("malformed" in n for n in t["notes"]), t["notes"][:5]
    assert len(p.stdout) < 5_000_000


# ------------------------------------------------------------------------------- lying vendor tools

TOOLS = ("rocminfo", "amd-smi", "rocm-smi", "hipconfig", "nvidia-smi")

HANG_SH = "#!/bin/sh\nsleep 600\n"
# real error texts (tests/fixtures/dumps/*: Debian rocminfo/rocm-smi without amdgpu, nvidia-smi without driver)
LIES = {
    "rocminfo": "#!/bin/sh\necho 'ROCk module is NOT loaded, possibly no GPU devices'\nexit 0\n",
    "rocm-smi": "#!/bin/sh\necho 'cat: /sys/module/amdgpu/initstate: No such file or directory'\n"
                "echo 'ERROR:root:Driver not initialized (amdgpu not found in modules)'\nexit 0\n",
    "hipconfig": "#!/bin/sh\necho 'hipconfig: error: HIP_PATH not set and no /opt/rocm' >&2\nexit 0\n",
    "nvidia-smi": "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                  "Make sure that the latest NVIDIA driver is installed and running.\"\nexit 0\n",
}
GARBAGE_SH = "#!/bin/sh\nhead -c 3000000 /dev/urandom\nhead -c 2000000 /dev/zero | tr '\\\\0' 'A'\nexit 0\n"


def tool_dir(base: Path, scripts: dict[str, str | bytes], mode: int = 0o755) -> tuple[Path, Path]:
    """A fake ROCm prefix (ROCM_PATH) with the tools in bin/ and a version file; bin/ also goes first on PATH."""
    prefix = base / "rocm"
    (prefix / "bin").mkdir(parents=True)
    (prefix / ".info").mkdir()
    (prefix / ".info" / "version").write_text("6.1.2-119\n")
    for name, body in scripts.items():
        f = prefix / "bin" / name
        f.write_bytes(body if isinstance(body, bytes) else body.encode())
        f.chmod(mode)
    return prefix, prefix / "bin"


def run_vendor_probes(box: Sandbox, prefix: Path, bindir: Path, timeout: float,
                      path: str | None = None) -> dict[str, dict]:
    env = {MARK: box.token, "TMPDIR": str(box.tmp), "ROCM_PATH": str(prefix),
           "PATH": path if path is not None else f"{bindir}:{os.environ.get('PATH', '')}"}
    out = {}
    threads = []
    for pid in ("rocm", "nvidia"):
        def one(pid=pid):
            out[pid] = run_probe(by_id()[pid], timeout=timeout, env=env)
        threads.append(threading.Thread(target=one))
        threads[-1].start()
    for t in threads:
        t.join()
    return out


def test_vendor_tools_that_hang(box, tmp_path):
    prefix, bindir = tool_dir(tmp_path, {t: HANG_SH for t in TOOLS})
    t0 = time.monotonic()
    res = run_vendor_probes(box, prefix, bindir, timeout=5)
    dt = time.monotonic() - t0
    assert dt < 12, dt
    r, n = res["rocm"], res["nvidia"]
    assert r["status"] == "timeout" and "stopped" in r["error"]
    assert "during 'rocminfo'" in r["error"], r["error"]  # which tool hung is named
    assert n["status"] == "timeout" and "during 'nvidia-smi'" in n["error"], n["error"]
    # what was learned before the hang survives: the version file was read before rocminfo hung
    assert r["facts"]["rocm.version"] == "6.1.2" and r["facts"]["rocm.path"] == str(prefix)


def test_vendor_tools_that_hang_through_the_cli(box, tmp_path):
    prefix, bindir = tool_dir(tmp_path, {t: HANG_SH for t in TOOLS})
    p, dt = box.cli(["run", "--json", "--no-generate", "--timeout", "5"],
                    extra={"ROCM_PATH": str(prefix), "PATH": f"{bindir}:{os.environ['PATH']}"})
    rep = report_of(p)
    assert dt < 30, dt
    assert probe(rep, "rocm")["status"] == "timeout"
    assert probe(rep, "nvidia")["status"] == "timeout"
    # a hung check is a finding: named as unexplained unless a confirmed cause rests on it, never "healthy"
    assert rep["verdict"] in ("problems", "unexplained") and p.returncode == 1
    hung = {c["id"] for c in rep["unexplained"]}
    assert rep["verdict"] == "problems" or {"rocm", "nvidia"} <= hung
    # the facts the hung probes owed are unknown: every entry that needs them and is not decided otherwise is
    # listed as not ruled out, with the fact named
    reasons = " ".join(d["reason"] for d in rep["not_ruled_out"])
    owed = {f for pid in ("rocm", "nvidia") for f in probe(rep, pid)["provides"] if f not in rep["facts"]}
    assert any(f in reasons for f in owed), rep["not_ruled_out"]


def test_vendor_tools_that_exit_0_with_errors(box, tmp_path):
    scripts = dict(LIES)
    prefix, bindir = tool_dir(tmp_path, scripts)
    res = run_vendor_probes(box, prefix, bindir, timeout=20)
    r, n = res["rocm"], res["nvidia"]
    # exit status 0 is not trusted: the text decides
    assert r["status"] == "fail", r
    assert r["facts"]["rocminfo.ok"] is False
    assert "ROCk module is NOT loaded" in r["facts"]["rocminfo.error"]
    assert "Driver not initialized" in r["facts"]["rocm_smi.error"]
    assert n["status"] == "fail" and "couldn't communicate" in n["facts"]["nvidia.smi_error"]


# amd-smi of ROCm 6.2.4 on an MI50 whose driver did not initialise (tests/fixtures/dumps/amd_smi/
# rocm624-unable-to-detect-gpus.txt, from https://github.com/ROCm/ROCm/issues/6176); amd-smi is tried before
# rocm-smi, so this is the one the probe runs
AMD_SMI_LIE = ("#!/bin/sh\n"
               "echo \"/opt/rocm-6.2.4/libexec/amdsmi_cli/BDF.py:126: SyntaxWarning: invalid escape sequence '\\\\.'\" >&2\n"
               "echo 'ERROR: Unable to detect any GPU devices, check amdgpu version and module status'\nexit 0\n")


def test_amd_smi_that_exits_0_with_an_error(box, tmp_path):
    prefix, bindir = tool_dir(tmp_path, {"amd-smi": AMD_SMI_LIE, "rocm-smi": LIES["rocm-smi"]})
    r = run_vendor_probes(box, prefix, bindir, timeout=20)["rocm"]
    assert r["status"] == "fail", r
    assert r["facts"]["rocm_smi.error"].startswith("ERROR: Unable to detect any GPU devices"), r["facts"]
    assert "gpu.names" not in r["facts"]
    assert any(e["source"] == "amd-smi" for e in r["evidence"])


def test_vendor_tools_that_exit_0_with_errors_are_diagnosed(box, tmp_path):
    prefix, bindir = tool_dir(tmp_path, dict(LIES))
    p, _ = box.cli(["run", "--json", "--no-generate", "--timeout", "20"],
                   extra={"ROCM_PATH": str(prefix), "PATH": f"{bindir}:{os.environ['PATH']}"})
    rep = report_of(p)
    assert p.returncode == 1
    assert "amdgpu-driver-not-loaded" in [d["id"] for d in rep["diagnoses"]]


def test_vendor_tools_that_print_garbage_and_binary(box, tmp_path):
    prefix, bindir = tool_dir(tmp_path, {t: GARBAGE_SH for t in TOOLS})
    t0 = time.monotonic()
    res = run_vendor_probes(box, prefix, bindir, timeout=30)
    assert time.monotonic() - t0 < 25
    for pid in ("rocm", "nvidia"):
        r = res[pid]
        assert r["returncode"] == 0 and "Traceback" not in r["output_tail"], (pid, r["output_tail"][-2000:])
        assert r["status"] in ("ok", "warn", "fail")
    # nothing was made up from noise
    assert res["rocm"]["facts"].get("rocminfo.ok") is False
    assert "gpu.gfx_targets" not in res["rocm"]["facts"] and "gpu.count" not in res["rocm"]["facts"]
    # what is kept of the noise is bounded
    assert len(json.dumps(res)) < 2_000_000


def test_vendor_tools_missing(box, tmp_path):
    empty = tmp_path / "emptybin"
    empty.mkdir()
    res = run_vendor_probes(box, tmp_path / "no-rocm", empty, timeout=20, path=str(empty))
    r, n = res["rocm"], res["nvidia"]
    assert n["status"] == "skipped" and "not installed" in n["summary"]
    assert r["returncode"] == 0 and r["status"] in ("ok", "warn", "fail")
    # (this machine has Debian's rocm packages in dpkg, so "installed" may be true; the tool is still missing)
    assert any("rocminfo is not installed" in e["excerpt"] for e in r["evidence"]), r["evidence"]
    assert "rocminfo.ok" not in r["facts"]


def test_vendor_tools_without_execute_permission(box, tmp_path):
    prefix, bindir = tool_dir(tmp_path, dict(LIES), mode=0o644)
    res = run_vendor_probes(box, prefix, bindir, timeout=20)
    r = res["rocm"]
    assert r["returncode"] == 0 and r["status"] in ("ok", "warn", "fail")
    # a tool that cannot be executed is never treated as having answered
    assert r["facts"].get("rocminfo.ok") is not True
    assert res["nvidia"]["status"] in ("skipped", "fail")


def test_vendor_tools_that_are_not_programs(box, tmp_path):
    junk = bytes(range(256)) * 64  # executable bit set, but not a program: exec fails with ENOEXEC
    prefix, bindir = tool_dir(tmp_path, {t: junk for t in TOOLS})
    res = run_vendor_probes(box, prefix, bindir, timeout=20)
    r, n = res["rocm"], res["nvidia"]
    assert r["returncode"] == 0 and n["returncode"] == 0, (r["output_tail"], n["output_tail"])
    assert r["status"] == "fail" and r["facts"]["rocminfo.ok"] is False
    assert "could not start" in r["facts"]["rocminfo.error"] or "format" in r["facts"]["rocminfo.error"]
    assert n["status"] == "fail"


# ----------------------------------------------------------------------------- permission denied


def _can(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_root_tools = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("unshare"),
    reason="needs root, setpriv and unshare")


def sysfs_tree(base: Path) -> Path:
    """A host with one gfx1100 card whose KFD node, VRAM files and kernel-module folder deny reading."""
    root = base / "root"
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    (nodes / "0").mkdir(parents=True)
    (nodes / "0" / "properties").write_text("cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n")
    (nodes / "1").mkdir()
    (nodes / "1" / "properties").write_text("cpu_cores_count 0\nsimd_count 192\ngfx_target_version 110000\n"
                                            "drm_render_minor 128\n")
    (nodes / "1" / "properties").chmod(0)
    dev = root / "sys/class/drm/card0/device"
    dev.mkdir(parents=True)
    (dev / "mem_info_vram_total").write_text("25753026560\n")
    (dev / "mem_info_vram_total").chmod(0)
    (root / "sys/module/amdgpu").mkdir(parents=True)
    (root / "sys/module/amdgpu/version").write_text("6.7.0\n")
    (root / "sys/module/amdgpu/version").chmod(0)
    (root / "dev").mkdir()
    (root / "dev/kfd").write_text("")
    (root / "etc").mkdir()
    (root / "etc/os-release").write_text('PRETTY_NAME="Ubuntu 24.04 LTS"\nID=ubuntu\n')
    (root / "etc/os-release").chmod(0)
    # a topology folder that points at itself (ELOOP when followed) and a FIFO where a file should be
    (nodes / "2").symlink_to(nodes / "2")
    (nodes / "3").mkdir()
    os.mkfifo(nodes / "3" / "properties")
    return root


@needs_root_tools
def test_permission_denied_on_sysfs(box, tmp_path):
    root = sysfs_tree(tmp_path)
    spec = by_id()["gpus"]
    res = run_child([*NO_DAC, *probe_argv(spec, sys.executable, str(root))], timeout=6,
                    env={**_child_env(spec, {MARK: box.token, "TMPDIR": str(box.tmp)})})
    col = Collected()
    for line in res.stdout.splitlines():
        rec = parse_record(line)
        if rec:
            col.feed(rec)
    out = finish(spec, res, col)
    assert res.returncode is not None
    # the FIFO blocks open() forever (as a wedged sysfs file does): the probe is stopped in time, and what it
    # had not established stays unknown
    assert out["status"] == "timeout" and res.duration_s < 10
    assert "gpu.count" not in out["facts"]


@needs_root_tools
def test_permission_denied_on_sysfs_without_the_fifo(box, tmp_path):
    root = sysfs_tree(tmp_path)
    os.unlink(root / "sys/class/kfd/kfd/topology/nodes/3/properties")
    spec = by_id()["gpus"]
    res = run_child([*NO_DAC, *probe_argv(spec, sys.executable, str(root))], timeout=10,
                    env=_child_env(spec, {MARK: box.token, "TMPDIR": str(box.tmp)}))
    col = Collected()
    for line in res.stdout.splitlines():
        rec = parse_record(line)
        if rec:
            col.feed(rec)
    out = finish(spec, res, col)
    assert res.returncode == 0, res.stderr[-2000:]
    assert any("Permission denied" in n for n in out["notes"]), out["notes"]
    # an unreadable GPU node is not a machine without GPUs: the count stays unknown, the probe warns
    assert "gpu.count" not in out["facts"] and "gpu.gfx_targets" not in out["facts"]
    assert out["status"] == "warn" and "could not be read" in out["summary"]


@needs_root_tools
def test_permission_denied_through_the_cli(box, tmp_path):
    root = sysfs_tree(tmp_path)
    os.unlink(root / "sys/class/kfd/kfd/topology/nodes/3/properties")
    p, dt = box.cli(["run", "--json", "--no-generate", "--timeout", "20", "--root", str(root)], prefix=NO_DAC)
    rep = report_of(p)
    assert p.returncode in (0, 1)
    assert dt < 40
    for pr in rep["probes"]:
        assert pr["status"] != "crashed" and "Traceback" not in (pr.get("output_tail") or ""), pr
    assert rep["facts"]["driver.amdgpu_loaded"] is True  # the folder is there even if its files are not readable
    assert "os.name" not in rep["facts"]  # unreadable os-release: unknown, not guessed


DEV_SCRIPT = r"""
set -e
mount --bind "$1/dev" /dev
mount --bind "$1/group" /etc/group
shift
exec "$@"
"""


def fake_dev(base: Path) -> Path:
    """A /dev with the nodes a Python process needs, plus /dev/kfd and a render node owned by
    nobody:render with mode 0660 (what a user outside the render group meets), and an /etc/group that has a
    ``render`` group whatever the machine's own database holds (a fresh machine may have none).  Returns the
    folder that DEV_SCRIPT mounts: ``dev`` over /dev and ``group`` over /etc/group."""
    import grp

    d = base / "dev"
    d.mkdir()
    for name, minor in (("null", 3), ("zero", 5), ("full", 7), ("random", 8), ("urandom", 9)):
        os.mknod(d / name, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        (d / name).chmod(0o666)
    (d / "fd").symlink_to("/proc/self/fd")
    (d / "shm").mkdir(mode=0o1777)
    (d / "dri").mkdir()
    group_db = Path("/etc/group").read_text()
    try:
        render = grp.getgrnam("render").gr_gid
    except KeyError:
        used = {g.gr_gid for g in grp.getgrall()}
        render = next(g for g in range(990, 100, -1) if g not in used)
        group_db = group_db.rstrip("\n") + f"\nrender:x:{render}:\n"
    (base / "group").write_text(group_db)
    for node in (d / "kfd", d / "dri" / "renderD128"):
        os.mknod(node, 0o660 | stat.S_IFCHR, os.makedev(1, 3))
        os.chown(node, 65534, render)
        node.chmod(0o660)
    return base


@needs_root_tools
def test_permission_denied_on_dev_kfd_live(box, tmp_path):
    if not _can(["unshare", "-m", "true"]):
        pytest.skip("no private mount namespaces here")
    dev = fake_dev(tmp_path)
    spec = by_id()["devices"]
    argv = ["unshare", "-m", "sh", "-c", DEV_SCRIPT, "sh", str(dev), *NO_DAC,
            *probe_argv(spec, sys.executable, "/")]
    res = run_child(argv, timeout=10, env=_child_env(spec, {MARK: box.token, "TMPDIR": str(box.tmp)}))
    col = Collected()
    for line in res.stdout.splitlines():
        rec = parse_record(line)
        if rec:
            col.feed(rec)
    out = finish(spec, res, col)
    assert res.returncode == 0, res.stderr[-2000:]
    f = out["facts"]
    assert f["kfd.present"] is True and f["kfd.permission_denied"] is True and f["kfd.open_error"] == "EACCES"
    assert f["dri.permission_denied"] is True
    assert f["kfd.group"] == "render"
    assert out["status"] == "fail" and "cannot be opened" in out["summary"]
    assert any("EACCES" in e["excerpt"] for e in out["evidence"])


@needs_root_tools
def test_permission_denied_on_dev_kfd_is_diagnosed(box, tmp_path):
    if not _can(["unshare", "-m", "true"]):
        pytest.skip("no private mount namespaces here")
    dev = fake_dev(tmp_path)
    p, dt = box.cli(["run", "--json", "--no-generate", "--timeout", "20"],
                    prefix=["unshare", "-m", "sh", "-c", DEV_SCRIPT, "sh", str(dev), *NO_DAC])
    rep = report_of(p)
    assert rep["facts"]["kfd.permission_denied"] is True
    ids = [d["id"] for d in rep["diagnoses"]]
    assert p.returncode == 1
    # root inside a container denied by the node's group: either cause of the same fix (groups/gids)
    assert ids[0] in ("user-not-in-render-video-group", "container-render-gid-mismatch"), ids


# ---------------------------------------------------------------------------------- the data directory


def _save_cli(box: Sandbox, db_dir: str, prefix: list[str] | None = None, extra: dict | None = None):
    return box.cli(["run", "--json", "--no-generate", "--save", "--timeout", "20",
                    "--db", f"sqlite:///{db_dir}/sessions.db"], prefix=prefix, extra=extra)


MOUNT_SCRIPT = r"""
set -e
mount -t tmpfs -o "$2" none "$1"
shift 2
"$@" || rc=$?
ls -la "$DB_DIR" >&2 || true
exit ${rc:-0}
"""


@needs_root_tools
def test_full_data_directory(box, tmp_path):
    """A 64 KiB tmpfs (private mount namespace): the save fails, the diagnosis is still printed, exit 2."""
    if not _can(["unshare", "-m", "true"]):
        pytest.skip("no private mount namespaces here")
    mnt = tmp_path / "full"
    mnt.mkdir()
    p, dt = box.cli(["run", "--json", "--no-generate", "--save", "--timeout", "20",
                     "--db", f"sqlite:///{mnt}/sessions.db"],
                    prefix=["unshare", "-m", "sh", "-c", MOUNT_SCRIPT, "sh", str(mnt), "size=64k"],
                    extra={"DB_DIR": str(mnt)})
    rep = report_of(p)
    assert p.returncode == 2
    assert "error" in rep["saved"], rep["saved"]
    assert rep["diagnoses"] is not None and rep["probes"]
    assert dt < 60
    assert not any(mnt.iterdir())  # the mount was private to the namespace


@needs_root_tools
def test_read_only_data_directory(box, tmp_path):
    if not _can(["unshare", "-m", "true"]):
        pytest.skip("no private mount namespaces here")
    mnt = tmp_path / "ro"
    mnt.mkdir()
    p, dt = box.cli(["run", "--json", "--no-generate", "--save", "--timeout", "20",
                     "--db", f"sqlite:///{mnt}/sessions.db"],
                    prefix=["unshare", "-m", "sh", "-c", MOUNT_SCRIPT, "sh", str(mnt), "ro,size=1m"],
                    extra={"DB_DIR": str(mnt)})
    rep = report_of(p)
    assert p.returncode == 2 and "error" in rep["saved"], rep.get("saved")
    assert rep["probes"]


def test_file_size_limit_while_saving(box, tmp_path):
    """RLIMIT_FSIZE (works without root): the database cannot grow; the report survives; the earlier
    sessions in the same file are intact afterwards."""
    import resource

    from diagnostics.store import Store

    db = tmp_path / "db"
    db.mkdir()
    url = f"sqlite:///{db}/sessions.db"
    from diagnostics.service import new_report

    earlier = new_report("live")
    earlier["facts"] = {"torch.build": "rocm", "gpu.gfx_targets": ["gfx1100"]}
    with Store(url) as st:
        first = st.save(earlier)
        saved_json = st.get_json(first)
    size = sum(f.stat().st_size for f in db.iterdir())

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    env = dict(box.env)
    # a report with 2 MB of log text cannot fit under the limit
    big = tmp_path / "big.log"
    big.write_text(("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n" * 30000))
    p = subprocess.run([sys.executable, "-m", "diagnostics", "run", "--json", "--no-generate", "--save",
                        "--timeout", "20", "--db", url, "--log", str(big)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120, preexec_fn=limit)
    rep = report_of(p)
    assert p.returncode == 2 and "error" in rep["saved"], rep.get("saved")
    assert "hip-no-binary-for-gpu" in [d["id"] for d in rep["diagnoses"]]
    with Store(url) as st:
        assert st.get_json(first) == saved_json  # the earlier session, byte for byte
        assert st.count() == 1


def test_locked_database_waits_then_saves(box, tmp_path):
    """Another writer holds the SQLite file for 3 s: the save waits (busy timeout) and succeeds; no
    'database is locked' reaches the user."""
    from diagnostics.store import Store

    url = f"sqlite:///{tmp_path}/sessions.db"
    Store(url).close()
    con = sqlite3.connect(tmp_path / "sessions.db", isolation_level=None, check_same_thread=False)
    con.execute("BEGIN EXCLUSIVE")
    released = threading.Event()

    def release():
        time.sleep(3)
        con.execute("COMMIT")
        con.close()
        released.set()

    threading.Thread(target=release).start()
    p, dt = box.cli(["run", "--json", "--no-generate", "--save", "--timeout", "20", "--db", url])
    released.wait(10)
    rep = report_of(p)
    assert "id" in rep["saved"], rep["saved"]
    assert "locked" not in p.stderr
    with Store(url) as st:
        assert st.exists(rep["saved"]["id"])


def test_database_that_is_gone(box, tmp_path):
    """A PostgreSQL server that does not answer: a clear error, the report is still printed, exit 2."""
    p, dt = box.cli(["run", "--json", "--no-generate", "--save", "--timeout", "20",
                     "--db", "postgresql://nobody:pw@127.0.0.1:9/none"])
    rep = report_of(p)
    assert p.returncode == 2 and "error" in rep["saved"]
    assert ":pw@" not in json.dumps(rep["saved"]), rep["saved"]  # the password never reaches the report
    assert dt < 60


# ------------------------------------------------------------------------- issue 16: faults told truthfully

EXIT0_IN_IS_AVAILABLE = """
import os, types
__version__ = '2.3.0+rocm5.7'
version = types.SimpleNamespace(hip='5.7.31921-d1770ee1b', cuda=None)
def _quit():
    os._exit(0)  # a broken runtime that ends the process from inside the call, with status 0
cuda = types.SimpleNamespace(is_available=_quit, get_arch_list=lambda: ['gfx1100'], device_count=_quit)
"""


def test_torch_that_exits_0_inside_is_available_is_not_passed(box, tmp_path):
    fake = make_fake_torch(tmp_path / "fake", EXIT0_IN_IS_AVAILABLE)
    p, _ = box.cli(["run", "--json", "--no-generate", "--timeout", "20"], extra={"PYTHONPATH": str(fake)})
    rep = report_of(p)
    t = probe(rep, "torch")
    assert t["status"] == "crashed", t
    assert "before its final record" in t["error"] and "device query" in t["error"], t["error"]
    assert t["returncode"] == 0
    assert rep["verdict"] != "healthy"


SEGV_TOOL = "#!/bin/sh\necho 'ROCk module is loaded'\necho 'HSA System Attributes'\nkill -SEGV $$\n"
# answers, then leaves a grandchild in its own session that keeps the pipes open for 10 minutes
ANSWER_AND_DAEMON = ("#!/bin/sh\necho 'the answer: 42'\nsetsid sh -c 'sleep 600' &\nexit 0\n")
ENDLESS = "#!/bin/sh\nexec yes 'endless output line from a broken tool'\n"


def _run_tool_in_child(box: Sandbox, tool: Path, timeout: float) -> tuple[dict, float]:
    """run_tool as a probe child calls it (in a child, with the runner's marker), its result as JSON."""
    code = ("import json, sys, resource\nfrom diagnostics.probes.base import run_tool\n"
            f"rc, so, se, prob = run_tool([{str(tool)!r}], timeout={timeout})\n"
            # VmHWM belongs to this process's own memory map; ru_maxrss would carry over the (large) high-water
            # mark of the pytest process that forked it, since Linux keeps it across execve
            "peak = [int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
            "print(json.dumps({'rc': rc, 'out': so[:200], 'out_len': len(so), 'prob': prob, 'peak': peak}))\n")
    t0 = time.monotonic()
    res = run_child([sys.executable, "-c", code], timeout=timeout + 30, cwd=str(ROOT),
                    env={**os.environ, MARK: box.token, "TMPDIR": str(box.tmp), "PYTHONPATH": str(ROOT)})
    dt = time.monotonic() - t0
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1]), dt


def test_vendor_tool_killed_by_a_signal_is_reported_by_its_signal(box, tmp_path):
    prefix, bindir = tool_dir(tmp_path, {"rocminfo": SEGV_TOOL, "rocm-smi": SEGV_TOOL, "nvidia-smi": SEGV_TOOL})
    got, _ = _run_tool_in_child(box, bindir / "rocminfo", 10)
    assert got["prob"] == "killed by SIGSEGV" and got["rc"] == -11 and "ROCk module" in got["out"]
    res = run_vendor_probes(box, prefix, bindir, timeout=20)
    assert res["rocm"]["facts"]["rocminfo.error"] == "rocminfo killed by SIGSEGV", res["rocm"]["facts"]
    assert res["rocm"]["facts"]["rocm_smi.error"] == "rocm-smi killed by SIGSEGV"
    assert res["nvidia"]["facts"]["nvidia.smi_error"] == "nvidia-smi killed by SIGSEGV"
    assert res["nvidia"]["status"] == "fail" and res["rocm"]["status"] != "ok"


def test_tool_that_answers_and_leaves_a_daemon_holding_the_pipe(box, tmp_path):
    _, bindir = tool_dir(tmp_path, {"rocminfo": ANSWER_AND_DAEMON})
    got, dt = _run_tool_in_child(box, bindir / "rocminfo", 20)
    assert got["prob"] is None and got["rc"] == 0
    assert got["out"].strip() == "the answer: 42"
    assert dt < 15, f"waited {dt:.1f}s for the grandchild (the tool's own limit is 20 s)"
    # the setsid grandchild carries the marker: the box fixture fails the test if it is still alive


def test_tool_with_endless_output_is_stopped_with_bounded_memory(box, tmp_path):
    from diagnostics.probes.base import TOOL_KEEP_BYTES, TOOL_MAX_BYTES

    _, bindir = tool_dir(tmp_path, {"rocminfo": ENDLESS})
    got, _ = _run_tool_in_child(box, bindir / "rocminfo", 60)
    assert (got["prob"] or "").startswith("stopped after printing more than"), got
    assert got["out_len"] <= TOOL_KEEP_BYTES
    assert got["peak"] < 200 * 1024 * 1024 + 3 * TOOL_MAX_BYTES, got["peak"]


EVIDENCE_FLOOD = """
import json, sys, types
line = '@@DIAG ' + json.dumps({'evidence': {'source': 'x', 'excerpt': 'forged ' * 50}}) + '\\n'
for i in range(400000):
    sys.stdout.write(line)
sys.stdout.flush()
__version__ = '2.4.0+cpu'
version = types.SimpleNamespace(hip=None, cuda=None)
cuda = types.SimpleNamespace(is_available=lambda: False, get_arch_list=lambda: [], device_count=lambda: 0)
"""


def test_forged_evidence_flood_gives_a_bounded_report(box, tmp_path):
    from diagnostics.runner import MAX_EVIDENCE

    fake = make_fake_torch(tmp_path / "fake", EVIDENCE_FLOOD)
    p, _ = box.cli(["run", "--json", "--no-generate", "--timeout", "60"], extra={"PYTHONPATH": str(fake)},
                   timeout=240)
    rep = report_of(p)
    t = probe(rep, "torch")
    assert len(t["evidence"]) <= MAX_EVIDENCE + 2
    assert any("dropped" in n for n in t["notes"]), t["notes"]
    assert len(p.stdout) < 20_000_000, len(p.stdout)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_run_stops_at_once_on_a_signal_during_a_hung_torch(box, tmp_path, sig):
    import signal as _signal

    fake = make_fake_torch(tmp_path / "fake", HANG_ON_DEVICE)
    env = {**box.env, "PYTHONPATH": str(fake)}
    proc = subprocess.Popen([sys.executable, "-m", "diagnostics", "run", "--json", "--no-generate", "--timeout",
                             "120", "--progress"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    # wait until the torch probe is in its device query (the progress line names the stage)
    deadline = time.monotonic() + 90
    seen = ""
    fd = proc.stderr.fileno()
    os.set_blocking(fd, False)
    while time.monotonic() < deadline and "device query" not in seen:
        try:
            seen += os.read(fd, 65536).decode("utf-8", "replace")
        except BlockingIOError:
            time.sleep(0.1)
    assert "device query" in seen, seen[-2000:]
    t0 = time.monotonic()
    proc.send_signal(getattr(_signal, sig))
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"run did not stop within 30 s of {sig}")
    dt = time.monotonic() - t0
    proc.stderr.close()
    assert proc.returncode == 2, proc.returncode
    # the measured figure (docs/RELIABILITY.md) is well under 2 s; a loaded CI box gets some slack here
    assert dt < 5, f"{sig}: {dt:.1f}s"
    # leftovers (the hung torch child, its marker) are checked by the box fixture
