"""Other processes on the GPU (issue 13 point 5) and vendor-aware KB text (point 6).

Process lists from real reports (tests/fixtures/procs/SOURCES.md); the nvidia probe runs against a fake
``nvidia-smi`` on PATH that answers each query the way the real tool does; vendor variants through the real
KB and matcher.
"""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from diagnostics.kb import KBError, load_kb, parse_entry, select_variant
from diagnostics.matcher import Matcher
from diagnostics.parsers import amd_smi, nvidia_smi, oom, rocm_smi
from diagnostics.parsers.base import GpuProcess, process_facts
from diagnostics.probes import gpuprocs
from diagnostics.probes.base import MemoryEmitter

FIX = Path(__file__).parent / "fixtures" / "procs"
GIB = 1 << 30


# --------------------------------------------------------------------------------------------------
# parsers


def test_rocm_smi_showpids_space_layout():
    procs = rocm_smi.parse_showpids((FIX / "rocm-smi-showpids-mi300.txt").read_text())
    assert [(p.pid, p.name, p.mem_bytes) for p in procs] == [
        (3722222, "test_ref", 0), (3814512, "test_ref", 0), (1168514, "pt_main_thread", 177386942464),
        (3714485, "test_ref", 0)]
    assert all(p.gpu == "" for p in procs)  # the GPU(s) column is a count, not an index


def test_rocm_smi_showpids_tabs_and_unknown():
    procs = rocm_smi.parse_showpids((FIX / "rocm-smi-showpids-tabs.txt").read_text())
    assert [(p.pid, p.name, p.mem_bytes) for p in procs] == [(74853, "llama-server-du", 0),
                                                            (132174, "llama-server", 15053770752)]
    procs = rocm_smi.parse_showpids((FIX / "rocm-smi-showpids-unknown.txt").read_text())
    assert [(p.pid, p.mem_bytes) for p in procs] == [(55573, None), (55571, None)]
    assert rocm_smi.parse_showpids("ERROR:root:Driver not initialized (amdgpu not found in modules)") == []


def test_amd_smi_process_json_by_pid():
    procs = amd_smi.parse_process_json((FIX / "amd-smi-process-bypid.json").read_text())
    assert [(p.pid, p.gpu, p.mem_bytes) for p in procs] == [(2168274, "0", 48000), (2168274, "1", 65588000)]
    f = process_facts(procs)
    assert f["gpu.other_process_count"] == 1 and f["gpu.other_process_mem_bytes"] == 48000 + 65588000


def test_amd_smi_process_json_per_gpu_shape():
    text = textwrap.dedent("""\
        [{"gpu": 0, "process_list": [{"process_info": {"name": "python3", "pid": 4321,
          "memory_usage": {"gtt_mem": {"value": 2, "unit": "MB"}, "cpu_mem": {"value": 0, "unit": "B"},
                           "vram_mem": {"value": 8192, "unit": "MB"}}}}]},
         {"gpu": 1, "process_list": [{"process_info": "No running processes detected"}]}]""")
    procs = amd_smi.parse_process_json(text)
    assert [(p.pid, p.name, p.gpu, p.mem_bytes) for p in procs] == [(4321, "python3", "0", 8192 << 20)]
    assert amd_smi.parse_process_json("not json") == []


def test_nvidia_compute_apps_and_load():
    text = ("12345, python3, 130048, GPU-5c1e47c5-1d2e-6a7f-0b3c-2d4e5f607182\n"
            "77, /opt/my, odd name, [N/A], GPU-5c1e47c5-1d2e-6a7f-0b3c-2d4e5f607182\n")
    procs = nvidia_smi.parse_compute_apps(text)
    assert [(p.pid, p.name, p.mem_bytes) for p in procs] == [(12345, "python3", 130048 << 20), (77, "/opt/my, odd name", None)]
    assert nvidia_smi.parse_compute_apps("") == [] and nvidia_smi.parse_compute_apps("No running processes found") == []
    # the H200 run's own output, with header and units (docs/gpu-run/2026-12-01-scenarios/held.nvidia-smi.txt)
    real = (Path(__file__).parent.parent / "docs/gpu-run/2026-12-01-scenarios/held.nvidia-smi.txt").read_text()
    procs = nvidia_smi.parse_compute_apps(real.split("pid, process_name", 1)[1])
    assert [(p.pid, p.name, p.mem_bytes, p.gpu) for p in procs] == [
        (760, "python3", 128886 << 20, "GPU-f04b0f6c-081f-2c4e-6fa7-060e60cae2a1")]
    load = nvidia_smi.parse_gpu_load("0, GPU-5c1e47c5, 100, 130500, 143771\n1, GPU-x, [N/A], 0, 143771\n")
    assert load[0]["busy"] == 100.0 and load[0]["used"] == 130500 << 20 and load[1]["busy"] is None


def test_process_facts_leave_the_doctor_out_and_count_a_pid_once():
    procs = [GpuProcess(10, "a:b", 1 * GIB, "0"), GpuProcess(10, "a:b", 2 * GIB, "1"), GpuProcess(99, "ours", 5 * GIB, "0")]
    f = process_facts(procs, own=lambda pid: pid == 99)
    assert f == {"gpu.processes": [f"10:a_b:{3 * GIB}"], "gpu.other_process_count": 1, "gpu.other_process_mem_bytes": 3 * GIB}


def test_own_pids_checker_walks_parents():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert gpuprocs.own_pids_checker(doctor_pid=os.getpid())(child.pid)
        # a process that is neither the checker, the doctor nor below the doctor is someone else's
        assert not gpuprocs.own_pids_checker(doctor_pid=child.pid, me=child.pid)(sibling.pid)
        assert not gpuprocs.own_pids_checker(doctor_pid=os.getpid())(2 ** 22 + 12345)  # not in this namespace
    finally:
        for c in (child, sibling):
            c.kill()
            c.wait()


def test_load_facts_take_the_lowest_sample_of_the_busiest_gpu():
    g = [{"index": 0, "busy": 100.0, "used": 90, "total": 100}, {"index": 1, "busy": 3.0, "used": 1, "total": 100}]
    later = [[{"index": 0, "busy": 97.0}, {"index": 1, "busy": 100.0}], [{"index": 0, "busy": 99.0}, {"index": 1, "busy": 0.0}]]
    f = gpuprocs.load_facts(g, later)
    assert f == {"gpu.busy_percent": 97.0, "gpu.mem_used_fraction": 0.9}


# --------------------------------------------------------------------------------------------------
# the nvidia probe against a fake nvidia-smi


FAKE_SMI = r'''#!/bin/sh
case "$*" in
  *--query-gpu=*) echo "0, GPU-5c1e47c5-1d2e-6a7f-0b3c-2d4e5f607182, 100, 130500, 143771" ;;
  *--query-compute-apps=*)
      echo "4242, python3, 130048, GPU-5c1e47c5-1d2e-6a7f-0b3c-2d4e5f607182"
      echo "$PPID_OWN, doctor-child, 512, GPU-5c1e47c5-1d2e-6a7f-0b3c-2d4e5f607182" ;;
  *) cat "$SMI_TABLE" ;;
esac
'''

TABLE = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA H200                    On  |   00000000:1A:00.0 Off |                    0 |
| N/A   45C    P0            690W /  700W |  130500MiB / 143771MiB |    100%      Default |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|=========================================================================================|
|    0   N/A  N/A            4242      C   python3                              130048MiB |
+-----------------------------------------------------------------------------------------+
"""


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    exe = tmp_path / "bin" / "nvidia-smi"
    exe.parent.mkdir()
    exe.write_text(FAKE_SMI)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "table.txt").write_text(TABLE)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("SMI_TABLE", str(tmp_path / "table.txt"))
    return exe


def test_nvidia_probe_records_other_processes_and_load(fake_smi, monkeypatch):
    from diagnostics.probes import nvidia

    # the fake lists the running test process too, as a process of the doctor's own (the probe's parent)
    monkeypatch.setenv("PPID_OWN", str(os.getppid()))
    out = MemoryEmitter()
    nvidia.collect("/", out)
    f = out.data
    assert f["nvidia.driver_version"] == "580.159.04"
    assert f["gpu.busy_percent"] == 100.0
    assert f["gpu.processes"] == [f"4242:python3:{130048 << 20}"]  # the doctor's own pid left out
    assert f["gpu.other_process_count"] == 1
    assert f["gpu.other_process_mem_fraction"] == round(130048 / 143771, 4)
    assert out.statuses[-1][0] == "ok" and "1 other process" in out.statuses[-1][1]
    assert any("4242 (python3) holds 127.0 GiB" in e["excerpt"] for e in out.evidences)
    assert any(e["excerpt"] == "GPU 0: 100% busy, 127.4 of 140.4 GiB in use (before the test generation)" for e in out.evidences)
    # and the KB names it from these facts alone (no generation)
    res = Matcher(load_kb()).match(f, [])
    ids = [d["id"] for d in res["diagnoses"]]
    assert ids[0] == "gpu-vram-held-by-other-process" and "gpu-shared-with-other-process" in ids
    assert res["diagnoses"][0]["variant"] == "nvidia" and "nvidia-smi" in res["diagnoses"][0]["fix"]
    assert "rocm-smi" not in res["diagnoses"][0]["fix"]


def test_nvidia_probe_survives_a_hanging_process_query(tmp_path, monkeypatch, fake_smi):
    from diagnostics.probes import nvidia

    fake_smi.write_text(FAKE_SMI.replace('*--query-compute-apps=*)', '*--query-compute-apps=*) sleep 60 ;;\n  *never*)'))
    monkeypatch.setattr(nvidia, "run_tool", _short(nvidia.run_tool))
    out = MemoryEmitter()
    nvidia.collect("/", out)
    assert out.data["gpu.busy_percent"] == 100.0 and "gpu.processes" not in out.data  # unknown, not "none"
    assert out.statuses[-1][0] == "ok" and any("could not list the compute processes (timeout" in n for n in out.notes)


def _short(run_tool):
    def run(argv, timeout=15.0, env=None):
        return run_tool(argv, timeout=min(timeout, 2.0), env=env)
    return run


# --------------------------------------------------------------------------------------------------
# out-of-memory text


KEYS_VALUES = ("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 572.00 MiB. GPU 0 has a total "
               "capacity of 39.49 GiB of which 321.31 MiB is free. Process 3721648 has 414.00 MiB memory in use. "
               "Including non-PyTorch memory, this process has 37.46 GiB memory in use. Process 1374765 has 414.00 MiB "
               "memory in use. Process 1374763 has 414.00 MiB memory in use. Process 1374764 has 414.00 MiB memory in "
               "use. Of the allocated memory 36.04 GiB is allocated by PyTorch, and 321.37 MiB is reserved by PyTorch "
               "but unallocated.")  # awslabs/keys_values#92


def test_oom_facts_from_the_error_itself():
    f = oom.parse(KEYS_VALUES)
    assert f["oom.api"] == "cuda" and f["oom.requested_bytes"] == 572 << 20 and f["oom.gpu_index"] == 0
    assert f["oom.processes"][0] == f"3721648:{414 << 20}" and len(f["oom.processes"]) == 4
    assert f["oom.other_process_bytes"] == 4 * (414 << 20) and f["oom.fits_without_others"] is True
    # the 2.1-era typo "capacty", and the old layout
    f = oom.parse("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total "
                  "capacty of 4.00 GiB of which 41.56 MiB is free. Including non-PyTorch memory, this process has 3.44 GiB "
                  "memory in use.")  # Synthintel0/MyGirlGPT#11
    assert f["oom.capacity_bytes"] == 4 * GIB and f["oom.other_process_bytes"] == 0 and f["oom.fits_without_others"] is False
    f = oom.parse("RuntimeError: CUDA out of memory. Tried to allocate 60.00 MiB (GPU 0; 11.17 GiB total capacity; "
                  "505.96 MiB already allocated; 12.50 MiB free; 530.00 MiB reserved in total by PyTorch)")  # pytorch#40863
    assert f["oom.free_bytes"] == int(12.5 * (1 << 20)) and "oom.other_process_bytes" not in f
    assert oom.parse("Out of memory: Killed process 6154 (python)") == {}


def test_cuda_oom_is_titled_cuda_with_nvidia_commands_and_quotes():
    m = Matcher(load_kb())
    for facts in ({}, {"torch.build": "cuda", "gpu.vendors": ["nvidia"]}):
        res = m.match(facts, [("train.log", KEYS_VALUES)])
        d = next(x for x in res["diagnoses"] if x["id"] == "hip-out-of-memory")
        assert d["variant"] == "nvidia" and "CUDA out of memory" in d["title"] and "HIP" not in d["title"]
        assert "nvidia-smi" in d["fix"] and "rocm-smi" not in d["fix"] and "PYTORCH_HIP_ALLOC_CONF" not in d["fix"]
        quotes = [e["excerpt"] for e in d["evidence"]]
        assert "Tried to allocate 572.00 MiB" in quotes and "Process 1374765 has 414.00 MiB memory in use" in quotes
        assert "Including non-PyTorch memory, this process has 37.46 GiB memory in use" in quotes
    # another process's memory would have covered the request: sharing is the first cause
    res = m.match({"torch.build": "cuda"}, [("train.log", KEYS_VALUES)])
    assert res["diagnoses"][0]["id"] == "gpu-shared-with-other-process"


def test_hip_oom_stays_hip_and_torch_build_decides():
    m = Matcher(load_kb())
    hip = ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.25 GiB. GPU 0 has a total capacity of 7.98 GiB "
           "of which 1.45 GiB is free.")  # ComfyUI#5161
    d = m.match({}, [("log", hip)])["diagnoses"][0]
    assert d["variant"] == "amd" and "HIP out of memory" in d["title"] and "rocm-smi" in d["fix"]
    # a ROCm torch printing the CUDA wording (ROCm builds before 2.1 did): the build in use decides
    d = m.match({"torch.build": "rocm"}, [("log", KEYS_VALUES)])
    oomd = next(x for x in d["diagnoses"] if x["id"] == "hip-out-of-memory")
    assert oomd["variant"] == "amd" and "rocm-smi" in oomd["fix"]
    # only the generation's fact: the machine's vendor decides
    d = next(x for x in m.match({"gen.oom": "gpu", "nvidia.driver_version": "580.159.04"}, [])["diagnoses"]
             if x["id"] == "hip-out-of-memory")
    assert d["variant"] == "nvidia"


def test_variants_in_chinese():
    from diagnostics.i18n import localize_diagnoses

    kb = load_kb()
    res = Matcher(kb).match({"torch.build": "cuda"}, [("log", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")])
    zh = localize_diagnoses(res["diagnoses"], kb, "zh")[0]
    assert zh["id"] == "hip-out-of-memory" and "CUDA out of memory" in zh["title"] and "显存" in zh["title"]
    assert "nvidia-smi" in zh["fix"] and "rocm-smi" not in zh["fix"]


# --------------------------------------------------------------------------------------------------
# the schema of `variants`


BASE = """\
id: x-entry
title: Base title
severity: warning
when: {log: 'boom'}
symptoms: s
cause: c
fix: f
links: [https://example.org/a]
tests:
  - {name: a, logs: boom, expect: fire}
  - {name: b, logs: calm, expect: silent}
"""


def test_variants_schema_accepts_and_selects():
    e = parse_entry(BASE + "variants:\n  nvidia: {title: NV title, log: 'NVTEXT'}\n  amd: {fix: amd fix}\n", "x-entry.yaml")
    assert e.variant_text("nvidia")["title"] == "NV title" and e.variant_text("amd")["fix"] == "amd fix"
    assert e.variant_text(None)["title"] == "Base title"
    assert select_variant(e, {}, [{"kind": "log", "excerpt": "boom NVTEXT"}]) == "nvidia"
    assert select_variant(e, {"gpu.vendors": ["amd"]}, []) == "amd"
    assert select_variant(e, {"gpu.vendors": ["amd", "nvidia"]}, []) is None


@pytest.mark.parametrize("extra, message", [
    ("variants:\n  intel: {title: t}\n", "unknown vendor 'intel'"),
    ("variants:\n  nvidia: {log: 'x'}\n", "overrides nothing"),
    ("variants:\n  nvidia: {title: t, severity: error}\n", "unknown key 'severity'"),
    ("variants:\n  nvidia: {title: t, log: '(?=x)'}\n", "RE2"),
    ("translations:\n  zh: {title: a, symptoms: b, cause: c, fix: d, variants: {amd: {title: x}}}\n", "no English variant 'amd'"),
    ("variants:\n  amd: {title: t}\ntranslations:\n  zh: {title: a, symptoms: b, cause: c, fix: d, variants: {amd: {fix: x}}}\n",
     "no English 'fix'"),
])
def test_variants_schema_refuses(extra, message):
    with pytest.raises(KBError) as exc:
        parse_entry(BASE + extra, "x-entry.yaml")
    assert message in str(exc.value)


def test_json_schema_knows_variants():
    from diagnostics.kb import json_schema

    s = json_schema()
    assert set(s["properties"]["variants"]["properties"]) == {"nvidia", "amd"}
    assert "log" in s["properties"]["variants"]["properties"]["nvidia"]["properties"]


def test_a_missing_translated_variant_is_reported():
    from diagnostics.i18n import translation_hash, translation_status

    e = parse_entry(BASE + "variants:\n  nvidia: {title: NV}\n", "x-entry.yaml")
    e.translations = {"zh": {"title": "a", "symptoms": "b", "cause": "c", "fix": "d", "source_hash": translation_hash(e)}}
    assert "variants.nvidia.title" in translation_status(e, "zh")
    e.translations["zh"]["variants"] = {"nvidia": {"title": "英伟达"}}
    assert translation_status(e, "zh") is None
    plain = parse_entry(BASE, "x-entry.yaml")
    assert translation_hash(plain) != translation_hash(e)  # the variants are part of the English text


# --------------------------------------------------------------------------------------------------
# this part's scenario files (tests/scenarios/, SHARED_DECISIONS 1), first cause through the matcher

MINE = ["amd-showpids-vram-held", "h200-cuda-oom-on-load-memory-held", "h200-cuda-oom-user-script",
        "h200-gpu-kept-busy-by-other-process", "h200-healthy-nothing-else-on-gpu", "h200-vram-held-by-other-process",
        "pasted-cuda-oom-other-processes", "pasted-hip-oom-rx6600"]


@pytest.mark.parametrize("slug", MINE)
def test_scenario_first_cause(slug):
    import yaml

    d = yaml.safe_load((Path(__file__).parent / "scenarios" / f"{slug}.yaml").read_text())
    res = Matcher(load_kb()).match(d.get("facts") or {}, [(x["name"], x["text"]) for x in d.get("logs") or []])
    ids = [x["id"] for x in res["diagnoses"] if not x["benign"]]
    e = d["expect"]
    assert (ids[0] if ids else None) == e["first"], ids
    assert set(e.get("present", [])) <= set(ids) and not set(e.get("absent", [])) & set(ids)
    if e["first"]:  # the first cause speaks the vendor in use
        want = "amd" if slug.startswith(("amd", "pasted-hip")) else "nvidia"
        assert res["diagnoses"][0].get("variant") == want


def test_rocm_probe_is_silent_without_amd_gpus(tmp_path, monkeypatch):
    from diagnostics.probes import rocm

    monkeypatch.setattr(rocm, "_sysfs_load", lambda root: [])
    out = MemoryEmitter()
    rocm._others(str(tmp_path), [], out)  # no sysfs cards, no /dev/kfd under this root
    assert out.data == {}


def test_rocm_probe_records_kfd_processes(tmp_path, monkeypatch):
    from diagnostics.probes import rocm

    exe = tmp_path / "rocm-smi"
    exe.write_text(f"#!/bin/sh\ncase \"$*\" in *--showpids*) cat '{FIX / 'rocm-smi-showpids-mi300.txt'}' ;; esac\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    # one MI300X of 192 GiB, idle, as the amdgpu sysfs files would say
    monkeypatch.setattr(rocm, "_sysfs_load", lambda root: [{"index": "0", "busy": 0, "used": 178 * GIB, "total": 192 * GIB}])
    out = MemoryEmitter()
    rocm._others("/", [], out)
    f = out.data
    assert f["gpu.other_process_count"] == 4 and f["gpu.other_process_mem_bytes"] == 177386942464
    assert f["gpu.other_process_mem_fraction"] == round(177386942464 / (192 * GIB), 4)
    assert f["gpu.busy_percent"] == 0 and "1168514:pt_main_thread:177386942464" in f["gpu.processes"]
    res = Matcher(load_kb()).match({**f, "torch.build": "rocm"}, [])
    assert res["diagnoses"][0]["id"] == "gpu-vram-held-by-other-process" and res["diagnoses"][0]["variant"] == "amd"
    assert "rocm-smi --showpids" in res["diagnoses"][0]["fix"] and "nvidia-smi" not in res["diagnoses"][0]["fix"]


def test_kbtrans_writes_translated_variants(tmp_path):
    from diagnostics.i18n import translation_status
    from diagnostics.i18n.kbtrans import write_translation

    p = tmp_path / "x-entry.yaml"
    p.write_text(BASE + "variants:\n  nvidia: {title: NV title, fix: nv fix}\n")
    write_translation(p, "zh", {"title": "标题", "symptoms": "症状", "cause": "原因", "fix": "修复",
                                "variants": {"nvidia": {"title": "英伟达标题", "fix": "英伟达修复"}}})
    e = parse_entry(p.read_text(), str(p), expected_id="x-entry")
    assert e.translations["zh"]["variants"] == {"nvidia": {"title": "英伟达标题", "fix": "英伟达修复"}}
    assert translation_status(e, "zh") is None
    assert e.variant_text("nvidia", "zh") == {"title": "英伟达标题", "symptoms": "症状", "cause": "原因", "fix": "英伟达修复"}
    assert e.variant_text("amd", "zh")["title"] == "标题"


def test_pasted_oom_facts_reach_the_report():
    from diagnostics.service import diagnose_text

    res = diagnose_text(logs=[("train.log", KEYS_VALUES)])
    assert res["facts"]["oom.requested_bytes"] == 572 << 20 and res["facts"]["oom.fits_without_others"] is True
    assert "facts_from_logs" not in res
    assert [d["id"] for d in res["diagnoses"]][:2] == ["gpu-shared-with-other-process", "hip-out-of-memory"]


def test_mask_entry_speaks_the_vendor_in_use():
    """A CUDA mask naming a GPU that does not exist (seen on the H200, docs/GPU_RUN.md) is told in CUDA's words;
    a ROCm machine keeps the ROCm text."""
    from diagnostics import service

    nv = service.diagnose_text(facts={"torch.build": "cuda", "torch.device_count": 0, "gpu.count": 1,
                                      "env.CUDA_VISIBLE_DEVICES": "7", "pci.nvidia_gpu_count": 1})
    d = nv["diagnoses"][0]
    assert d["id"] == "visible-devices-env-masking" and d["variant"] == "nvidia"
    assert d["title"].startswith("CUDA_VISIBLE_DEVICES") and "nvidia-smi -L" in d["fix"] and "rocminfo" not in d["fix"]
    amd = service.diagnose_text(facts={"torch.build": "rocm", "torch.device_count": 0, "gpu.count": 1,
                                       "env.HIP_VISIBLE_DEVICES": "3", "pci.amd_gpu_count": 1})
    d = amd["diagnoses"][0]
    assert d["id"] == "visible-devices-env-masking" and d.get("variant") is None and "ROCR_VISIBLE_DEVICES" in d["fix"]
