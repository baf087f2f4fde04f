"""The scenario matrix: the doctor reasoning from facts alone, one row per machine state.

Each row is a recorded machine (tests/fixtures/sysfs/m-*: the file-reading probes -- devices, system, gpus, env,
rocm -- are run on that tree, with the row's environment variables as the environment), plus what the live-only probes
(torch, hip, nvidia) would report on it, plus facts injected where no tree has the GPU (another gfx target on the same
machine).  The report is made by the one pipeline of ``run`` (diagnostics.scenarios.run on a live-shaped report), and
the row holds

* ``first``: the first confirmed cause (None: nothing is wrong);
* ``below``: diagnoses that must be present and rank below ``first`` (consequences and secondary findings);
* ``absent``: diagnoses that must not fire at all (a CPU torch on a machine with no GPU is no fault);
* ``override``: the HSA_OVERRIDE_GFX_VERSION the report recommends (``support.override_recommended``), which the first
  cause's fix text must carry.

Rows with two faults at once (``+`` in the id) check that the root cause ranks above its consequence.  No row names
an error text: every finding here is reasoned from facts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from tests import machines

ROOT = Path(__file__).resolve().parent.parent
TREES = ROOT / "tests" / "fixtures" / "sysfs"

ROCM62_ARCHS = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"]
ROCM72_ARCHS = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101",
                "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1200", "gfx1201"]
CUDA_ARCHS = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]

# what the torch probe reports about the installed build (before anything runs on a GPU)
TORCH = {
    "rocm62": {"torch.installed": True, "torch.version": "2.5.1+rocm6.2", "torch.build": "rocm",
               "torch.hip_version": "6.2.41133", "torch.arch_list": ROCM62_ARCHS, "torch.installer": "pip"},
    "rocm72": {"torch.installed": True, "torch.version": "2.14.0+rocm7.2", "torch.build": "rocm",
               "torch.hip_version": "7.2.26015", "torch.arch_list": ROCM72_ARCHS, "torch.installer": "pip"},
    "cuda": {"torch.installed": True, "torch.version": "2.5.1+cu124", "torch.build": "cuda",
             "torch.cuda_version": "12.4", "torch.arch_list": CUDA_ARCHS, "torch.installer": "pip"},
    "cpu": {"torch.installed": True, "torch.version": "2.5.1+cpu", "torch.build": "cpu", "torch.installer": "pip"},
    "none": {"torch.installed": False},
}

# what torch (and the HIP runtime, nvidia-smi) then find at run time
SEES_NOTHING = {"torch.cuda_available": False, "torch.device_count": 0}
HIP_NO_DEVICE = {"hip.device_count": 0, "hip.error": "hipErrorNoDevice"}
NO_BINARY = {"torch.cuda_available": True, "torch.device_count": 1, "torch.smoke_ok": False,
             "torch.smoke_error": "HIP error: invalid device function", "hip.device_count": 1}
ROCM_USERSPACE = {"rocm.installed": True, "rocm.version": "6.2.4", "rocm.path": "/opt/rocm", "rocm.source": "system",
                  "rocminfo.ok": False, "rocminfo.error": "ROCk module is NOT loaded, possibly no GPU devices"}
OK = {"torch.cuda_available": True, "torch.device_count": 1, "torch.smoke_ok": True, "hip.device_count": 1}
RTX4090 = {"nvidia.driver_version": "550.120", "nvidia.cuda_version": "12.4", "gpu.names": ["NVIDIA GeForce RTX 4090"],
           "nvidia.compute_caps": ["sm_89"]}


def amd_gpu(gfx: str, name: str, integrated: bool) -> dict[str, Any]:
    """Facts injected over the RX 6700 XT tree to make it another AMD GPU (no tree records that one)."""
    return {"gpu.gfx_targets": [gfx], "gpu.native_gfx_targets": [gfx], "gpu.names": [name],
            "gpu.integrated_count": int(integrated), "gpu.discrete_count": int(not integrated)}


@dataclass
class Row:
    id: str
    tree: str | None                  # tests/fixtures/sysfs/<tree>; None: facts only
    torch: str = "rocm62"
    env: dict[str, str] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)      # live-only results and injected facts
    first: str | None = None
    below: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    override: str | None = None
    wheel: str | None = None          # the wheel folder the first cause's install command must name
    verdict: str | None = None


ROWS: list[Row] = [
    # --- no GPU at all ---------------------------------------------------------------------------------------
    Row("no-gpu/cpu-torch", "m-cloud-vm-no-gpu", "cpu", facts=SEES_NOTHING, first="no-gpu-present",
        absent=("torch-cpu-only-wheel", "cuda-torch-on-amd-gpu", "rocm-wheel-without-amd-gpu")),
    Row("no-gpu/rocm-torch", "m-cloud-vm-no-gpu", "rocm62", facts=SEES_NOTHING, first="no-gpu-present",
        absent=("torch-cpu-only-wheel", "hip-no-binary-for-gpu")),
    Row("no-gpu/cuda-torch", "m-cloud-vm-no-gpu", "cuda", facts=SEES_NOTHING, first="no-gpu-present",
        absent=("torch-cpu-only-wheel", "cuda-torch-on-amd-gpu")),
    # the image carries ROCm userspace (this project's own development container: `run --no-generate` there)
    Row("no-gpu/cpu-torch+rocm-userspace", "m-cloud-vm-no-gpu", "cpu",
        facts={**SEES_NOTHING, **ROCM_USERSPACE}, first="no-gpu-present",
        absent=("torch-cpu-only-wheel", "rocm-wheel-without-amd-gpu")),
    Row("no-gpu/no-torch", "m-cloud-vm-no-gpu", "none", first="no-gpu-present", below=("torch-not-installed",),
        absent=("torch-cpu-only-wheel",)),
    Row("no-gpu+mask-empty", "m-cloud-vm-no-gpu", "cpu", env={"HIP_VISIBLE_DEVICES": ""}, facts=SEES_NOTHING,
        first="no-gpu-present", absent=("torch-cpu-only-wheel",)),
    # --- an AMD GPU, healthy and broken ------------------------------------------------------------------------
    Row("amd/healthy", "m-7900xtx-ubuntu", "rocm62",
        facts={"torch.cuda_available": True, "torch.device_count": 1, "torch.smoke_ok": True, "hip.device_count": 1,
               "torch.device_names": ["AMD Radeon RX 7900 XTX"], "torch.gcn_arch_names": ["gfx1100"]},
        first=None, verdict="healthy"),
    Row("amd/no-torch", "m-7900xtx-ubuntu", "none", facts={"hip.device_count": 1}, first="torch-not-installed",
        absent=("no-gpu-present",)),
    Row("amd/cpu-torch", "m-7900xtx-ubuntu", "cpu", facts={**SEES_NOTHING, "hip.device_count": 1},
        first="torch-cpu-only-wheel", absent=("no-gpu-present",)),
    Row("amd/cuda-torch", "m-7900xtx-ubuntu", "cuda", facts={**SEES_NOTHING, "hip.device_count": 1},
        first="cuda-torch-on-amd-gpu", absent=("no-gpu-present", "torch-cpu-only-wheel")),
    # masks: "", -1 and an index beyond the one GPU, through each variable HIP reads
    *[Row(f"amd/mask {var}={val!r}", "m-7900xtx-ubuntu", "rocm62", env={var: val},
          facts={**SEES_NOTHING, **HIP_NO_DEVICE}, first="visible-devices-env-masking",
          absent=("no-gpu-present", "hip-no-binary-for-gpu"))
      for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
      for val in ("", "-1", "1")],
    # --- consumer targets the wheel lacks: the override is computed from the GPU's family ----------------------
    Row("gfx1031/no-override", "m-rx6700xt-ubuntu", "rocm62", facts=NO_BINARY, first="hip-no-binary-for-gpu",
        override="10.3.0", absent=("hsa-override-wrong-value",)),
    Row("gfx1031/rocm72-no-override", "m-rx6700xt-ubuntu", "rocm72", facts=NO_BINARY, first="hip-no-binary-for-gpu",
        below=("rocm-userspace-version-mismatch",), override="10.3.0"),
    *[Row(f"{gfx}/no-override", "m-rx6700xt-ubuntu", "rocm62", facts={**NO_BINARY, **amd_gpu(gfx, name, igpu)},
          first=first, override=ov, wheel=None if ov else "rocm7.2", absent=("hsa-override-wrong-value", "no-gpu-present"))
      for gfx, name, igpu, ov, first in (
          ("gfx1032", "AMD Radeon RX 6600", False, "10.3.0", "hip-no-binary-for-gpu"),
          ("gfx1034", "AMD Radeon RX 6500 XT", False, "10.3.0", "hip-no-binary-for-gpu"),
          ("gfx1035", "AMD Radeon 680M", True, "10.3.0", "apu-igpu-limited-support"),
          ("gfx1036", "AMD Radeon Graphics", True, "10.3.0", "apu-igpu-limited-support"),
          ("gfx90c", "AMD Radeon Graphics", True, "9.0.0", "apu-igpu-limited-support"),
          # gfx1103: the matrix knows no override that works (page faults under 11.0.0): a wheel that lists it
          ("gfx1103", "AMD Radeon 780M", True, None, "apu-igpu-limited-support"),
          ("gfx1150", "AMD Radeon 890M", True, "11.0.0", "apu-igpu-limited-support"),
          ("gfx1151", "AMD Radeon 8060S", True, "11.0.0", "apu-igpu-limited-support"))],
    Row("gfx1103/tree", "m-780m-laptop", "rocm62", facts=SEES_NOTHING, first="apu-igpu-limited-support",
        below=("hip-no-binary-for-gpu",), wheel="rocm7.2"),
    Row("gfx1151/tree", "m-strix-halo", "rocm62", facts=SEES_NOTHING, first="apu-igpu-limited-support",
        below=("hip-no-binary-for-gpu",), override="11.0.0"),
    Row("gfx1151/rocm72-has-it", "m-strix-halo", "rocm72",
        facts={"torch.cuda_available": True, "torch.device_count": 1, "torch.smoke_ok": True,
               "torch.gcn_arch_names": ["gfx1151"]},
        first=None, absent=("hip-no-binary-for-gpu", "hsa-override-wrong-value")),
    # --- the override set, to a right and a wrong value ---------------------------------------------------------
    Row("gfx1031/override-ok", "m-rx6700xt-ubuntu", "rocm62", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
        facts={"torch.cuda_available": True, "torch.device_count": 1, "torch.smoke_ok": True, "hip.device_count": 1,
               "torch.gcn_arch_names": ["gfx1030"]},
        first=None, verdict="healthy"),
    *[Row(f"gfx1031/override-wrong {val}", "m-rx6700xt-ubuntu", "rocm62", env={"HSA_OVERRIDE_GFX_VERSION": val},
          facts=NO_BINARY, first="hsa-override-wrong-value", override="10.3.0")
      for val in ("11.0.0", "10.3.1", "9.0.0")],
    Row("gfx1100/override-unneeded-wrong", "m-7900xtx-ubuntu", "rocm62", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
        facts=NO_BINARY, first="hsa-override-wrong-value"),
    # --- builds for the other vendor ------------------------------------------------------------------------
    Row("nvidia/rocm-torch", "m-rtx4090-ubuntu", "rocm62", facts={**SEES_NOTHING, **RTX4090},
        first="rocm-wheel-without-amd-gpu", absent=("no-gpu-present", "torch-cpu-only-wheel")),
    Row("nvidia/cpu-torch", "m-rtx4090-ubuntu", "cpu", facts={**SEES_NOTHING, **RTX4090}, first="torch-cpu-only-wheel",
        absent=("no-gpu-present",)),
    # a healthy CUDA machine whose image also carries ROCm userspace: the doctor's own HIP probe finds no device,
    # which says nothing about the CUDA wheel (the H200 of docs/GPU_RUN.md, round 8, got a ROCm-wheel finding)
    Row("nvidia/cuda-torch+rocm-userspace", "m-rtx4090-ubuntu", "cuda",
        facts={"torch.cuda_available": True, "torch.device_count": 1, "torch.smoke_ok": True, **RTX4090,
               **HIP_NO_DEVICE, "rocm.installed": True, "rocm.version": "5.7.1", "rocm.path": "/usr",
               "rocm.source": "package"},
        first=None, absent=("rocm-wheel-without-amd-gpu", "hip-runtime-sees-no-gpu")),
    Row("nvidia/mask-empty", "m-rtx4090-ubuntu", "cuda", env={"CUDA_VISIBLE_DEVICES": ""},
        facts={**SEES_NOTHING, **RTX4090}, first="visible-devices-env-masking", absent=("no-gpu-present",)),
    # --- device access --------------------------------------------------------------------------------------
    Row("container/no-kfd", "m-mi210-docker-no-kfd", "rocm62", facts={**SEES_NOTHING, **HIP_NO_DEVICE},
        first="container-missing-gpu-devices", absent=("no-gpu-present", "kfd-device-missing")),
    Row("groups/video-only", "m-rx6700xt-fedora-video-only", "rocm62", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
        facts=SEES_NOTHING, first="user-not-in-render-video-group", absent=("no-gpu-present",)),
    Row("groups/not-relogged", "m-7900xtx-render-not-relogged", "rocm62", facts={**SEES_NOTHING, **HIP_NO_DEVICE},
        first="user-not-in-render-video-group", absent=("no-gpu-present",)),
    # --- WSL ------------------------------------------------------------------------------------------------
    Row("wsl/plain-rocm-wheel", "m-wsl2-dxg", "rocm62", facts=SEES_NOTHING,
        first="wsl-rocm-unsupported-or-misconfigured", absent=("no-gpu-present", "amdgpu-driver-not-loaded")),
    Row("wsl/cpu-torch", "m-wsl2-dxg", "cpu", facts=SEES_NOTHING, first="torch-cpu-only-wheel",
        absent=("no-gpu-present",)),
    # --- two faults at once: the root cause above its consequence --------------------------------------------
    Row("container/no-kfd+mask-empty", "m-mi210-docker-no-kfd", "rocm62", env={"HIP_VISIBLE_DEVICES": ""},
        facts={**SEES_NOTHING, **HIP_NO_DEVICE}, first="container-missing-gpu-devices",
        below=("visible-devices-env-masking", "hip-runtime-sees-no-gpu"), absent=("no-gpu-present",)),
    # two independent faults, ordered by confidence: with the HIP runtime's own hipErrorNoDevice logged (as the real
    # probe logs it) the mask of -1 explains that error directly and comes first; the group fault is listed below it
    Row("groups+mask-minus-one", "m-7900xtx-render-not-relogged", "rocm62", env={"HIP_VISIBLE_DEVICES": "-1"},
        facts={**SEES_NOTHING, **HIP_NO_DEVICE}, first="visible-devices-env-masking",
        below=("user-not-in-render-video-group",), absent=("no-gpu-present",)),
    Row("gfx1031+mask-empty", "m-rx6700xt-ubuntu", "rocm62", env={"HIP_VISIBLE_DEVICES": ""},
        facts={**SEES_NOTHING, **HIP_NO_DEVICE}, first="visible-devices-env-masking",
        absent=("no-gpu-present",)),
    Row("gfx1031+cpu-torch", "m-rx6700xt-ubuntu", "cpu", facts={**SEES_NOTHING, "hip.device_count": 1},
        first="torch-cpu-only-wheel", absent=("hip-no-binary-for-gpu", "hsa-override-wrong-value")),
    Row("nvidia/rocm-torch+hip-mask", "m-rtx4090-ubuntu", "rocm62", env={"HIP_VISIBLE_DEVICES": "0"},
        facts={**SEES_NOTHING, **RTX4090}, first="rocm-wheel-without-amd-gpu", absent=("no-gpu-present",)),
    Row("amd/no-torch+mask-empty", "m-7900xtx-ubuntu", "none", env={"HIP_VISIBLE_DEVICES": ""},
        facts=HIP_NO_DEVICE, first="torch-not-installed", below=("visible-devices-env-masking",)),
    Row("amd/cuda-torch+groups", "m-7900xtx-render-not-relogged", "cuda", facts={**SEES_NOTHING, **HIP_NO_DEVICE},
        first="cuda-torch-on-amd-gpu", below=("user-not-in-render-video-group",)),
    # two independent causes: both are root causes, in the order of their confidence
    Row("gfx1031+groups", "m-rx6700xt-fedora-video-only", "rocm62", facts=SEES_NOTHING,
        first="hip-no-binary-for-gpu", below=("user-not-in-render-video-group",)),
    Row("container/no-kfd+cpu-torch", "m-mi210-docker-no-kfd", "cpu", facts=SEES_NOTHING,
        first="container-missing-gpu-devices", below=("torch-cpu-only-wheel",)),
    Row("amd+nvidia/rocm-torch", "m-7950x-igpu-rtx4090", "rocm62", facts={**SEES_NOTHING, **RTX4090},
        first="rocm-wheel-without-amd-gpu", below=("hip-no-binary-for-gpu",), absent=("apu-igpu-limited-support",)),
    Row("amd+nvidia/cuda-mask-empty", "m-7950x-igpu-rtx4090", "cuda", env={"CUDA_VISIBLE_DEVICES": ""},
        facts={**SEES_NOTHING, **RTX4090}, first="visible-devices-env-masking", absent=("cuda-torch-on-amd-gpu",)),
    Row("driver/nomodeset", "m-nomodeset-rx6800xt", "rocm62", facts={**SEES_NOTHING, **HIP_NO_DEVICE},
        first="amdgpu-driver-not-loaded", below=("kfd-device-missing", "hip-runtime-sees-no-gpu"),
        absent=("no-gpu-present",)),
    Row("container/kfd-no-dri", "m-mi210-docker-kfd-no-dri", "rocm62", facts={**SEES_NOTHING, **HIP_NO_DEVICE},
        first="container-missing-gpu-devices", absent=("no-gpu-present",)),
    Row("container/gid-mismatch", "m-docker-render-gid-mismatch", "rocm62", facts={**SEES_NOTHING, **HIP_NO_DEVICE},
        first="container-render-gid-mismatch", absent=("no-gpu-present",)),
    Row("legacy/rx580", "m-rx580-rocm62", "rocm62", facts={**SEES_NOTHING, **HIP_NO_DEVICE},
        first="gpu-not-supported-by-kfd-legacy", below=("hip-no-binary-for-gpu",), absent=("hsa-override-wrong-value",)),
    Row("gfx1033/steamdeck", "m-steamdeck", "rocm62", facts=SEES_NOTHING, first="apu-igpu-limited-support",
        below=("hip-no-binary-for-gpu",), override="10.3.0"),
    Row("gfx1103/rocm72-has-it", "m-780m-laptop", "rocm72", facts={**OK, "torch.gcn_arch_names": ["gfx1103"]},
        first=None, absent=("apu-igpu-limited-support", "hsa-override-wrong-value")),
    # the override the matrix knows not to work on gfx1103 (page faults), on a wheel without gfx1103
    Row("gfx1103/override-11-on-rocm62", "m-780m-laptop", "rocm62", env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
        facts=NO_BINARY, first="apu-igpu-limited-support", below=("hip-invalid-device-function",)),
    Row("amd/mask-valid", "m-7900xtx-ubuntu", "rocm62", env={"HIP_VISIBLE_DEVICES": "0"},
        facts={**OK, "torch.gcn_arch_names": ["gfx1100"]}, first=None, verdict="healthy"),
    Row("amd/rocr-0-then-hip-1", "m-7900xtx-ubuntu", "rocm62", env={"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "1"},
        facts={**SEES_NOTHING, **HIP_NO_DEVICE}, first="visible-devices-env-masking", below=("hip-runtime-sees-no-gpu",)),
    Row("nvidia/override-ignored", "m-rtx4090-ubuntu", "cuda", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
        facts={**OK, **RTX4090, "hip.device_count": 0}, first=None, verdict="healthy"),
    Row("gfx1031/override-malformed", "m-rx6700xt-ubuntu", "rocm62", env={"HSA_OVERRIDE_GFX_VERSION": "10.3"},
        facts=NO_BINARY, first="hsa-override-wrong-value", below=("hip-no-binary-for-gpu",), override="10.3.0"),
    Row("gfx1031/override-ok+cuda-torch", "m-rx6700xt-ubuntu", "cuda", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
        facts={**SEES_NOTHING, "hip.device_count": 1}, first="cuda-torch-on-amd-gpu",
        absent=("hsa-override-wrong-value",)),
    Row("gfx1031/override-ok+mask-empty", "m-rx6700xt-ubuntu", "rocm62",
        env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0", "HIP_VISIBLE_DEVICES": ""},
        facts={**SEES_NOTHING, **HIP_NO_DEVICE}, first="visible-devices-env-masking", absent=("hsa-override-wrong-value",)),
    Row("container/gid-mismatch+rocr-minus-one", "m-docker-render-gid-mismatch", "rocm62",
        env={"ROCR_VISIBLE_DEVICES": "-1"}, facts={**SEES_NOTHING, **HIP_NO_DEVICE},
        first="container-render-gid-mismatch", below=("visible-devices-env-masking", "hip-runtime-sees-no-gpu")),
    Row("wsl/no-torch", "m-wsl2-dxg", "none", first="torch-not-installed", absent=("no-gpu-present",)),
    Row("no-gpu/cpu-torch+override", "m-cloud-vm-no-gpu", "cpu", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
        facts=SEES_NOTHING, first="no-gpu-present", absent=("torch-cpu-only-wheel", "hsa-override-wrong-value")),
    Row("no-gpu+rocm-torch+override", "m-cloud-vm-no-gpu", "rocm62", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
        facts=SEES_NOTHING, first="no-gpu-present", absent=("torch-cpu-only-wheel", "hsa-override-wrong-value")),
]


def _statuses(facts: dict[str, Any]) -> dict[str, str]:
    """The live-only probes' statuses, as their own rules would set them from the facts they report."""
    if facts.get("torch.installed") is False or facts.get("torch.smoke_ok") is False:
        torch = "fail"
    elif facts.get("torch.smoke_ok") is True:
        torch = "ok"
    else:
        torch = "fail"
    hip = "fail" if facts.get("hip.error") else "ok" if (facts.get("hip.device_count") or 0) > 0 else "skipped"
    nvidia = "ok" if facts.get("nvidia.driver_version") else "skipped"
    return {"hip": hip, "nvidia": nvidia, "torch": torch}


@lru_cache(maxsize=None)
def _tree(tree: str, env: tuple[tuple[str, str], ...]) -> dict[str, dict[str, Any]]:
    return machines.probe_tree(TREES / tree, dict(env))


def diagnose_row(row: Row) -> dict[str, Any]:
    from diagnostics import scenarios

    facts: dict[str, Any] = {}
    probes: list[dict[str, Any]] = []
    if row.tree:
        found = _tree(row.tree, tuple(sorted(row.env.items())))
        for pid in machines.TREE_PROBES:
            for k, v in found[pid]["facts"].items():
                facts.setdefault(k, v)
            p = {"id": pid, "status": found[pid]["status"]}
            if found[pid]["logs"]:
                p["logs"] = [{"name": lg["name"], "text": lg["text"]} for lg in found[pid]["logs"]]
            probes.append(p)
    live = {**TORCH[row.torch], **row.facts}
    facts.update(live)
    probes += [{"id": pid, "status": st} for pid, st in _statuses(live).items()]
    if live.get("hip.error"):   # the HIP probe logs its runtime's answer, as diagnostics/probes/hip.py does
        hip = next(p for p in probes if p["id"] == "hip")
        hip["logs"] = [{"name": "hip runtime", "text": f"hipGetDeviceCount: {live['hip.error']}"}]
    sc = scenarios.Scenario(slug=row.id, path=Path(row.id), name=row.id, facts=facts, probes=probes)
    return scenarios.run(sc)


def _confirmed(report: dict[str, Any]) -> list[dict[str, Any]]:
    from diagnostics.verdicts import counts

    return [d for d in report["diagnoses"] if counts(d)]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_matrix_row(row: Row):
    report = diagnose_row(row)
    ranked = [d["id"] for d in report["diagnoses"]]
    confirmed = [d["id"] for d in _confirmed(report)]
    first = confirmed[0] if confirmed else None
    assert first == row.first, f"first cause {first}, expected {row.first} (all: {ranked})"
    for cid in row.below:
        assert cid in ranked, f"{cid} should be in the report (all: {ranked})"
        assert ranked.index(cid) > ranked.index(row.first), f"{cid} ranks above {row.first}: {ranked}"
    for cid in row.absent:
        assert cid not in ranked, f"{cid} must not fire (all: {ranked})"
    if row.first:
        # nothing else is a root cause beside the first one unless the row lists it as a finding of its own
        roots = report["root_causes"]
        assert roots[0] == row.first and set(roots[1:]) <= set(row.below), f"root causes {roots}"
    if row.verdict:
        assert report["verdict"] == row.verdict
    elif row.first:
        assert report["verdict"] == "problems"
    d = next((d for d in report["diagnoses"] if d["id"] == row.first), None)
    if row.override:
        assert report["facts"].get("support.override_recommended") == row.override
        assert f"HSA_OVERRIDE_GFX_VERSION={row.override}" in d["fix"], d["fix"]
    if d is not None:
        # never a family value the facts contradict, nor an unfilled placeholder
        offered = set(re.findall(r"HSA_OVERRIDE_GFX_VERSION=`?(\d+\.\d+\.\d+)", d["fix"]))
        rec = report["facts"].get("support.override_recommended")
        assert "{override}" not in d["fix"] and "{torch_install}" not in d["fix"]
        if rec is None and report["facts"].get("support.override_status") == "impossible":
            assert "none known to work" in d["fix"] or "no one value" in d["fix"] or not offered, d["fix"]
    if row.wheel:
        assert f"download.pytorch.org/whl/{row.wheel}" in d["fix"], d["fix"]


def test_matrix_covers_the_brief():
    """The kinds of machine state the matrix must hold (a row removed by mistake fails here)."""
    ids = " ".join(r.id for r in ROWS)
    for need in ("no-gpu/cpu-torch", "no-gpu/no-torch", "HIP_VISIBLE_DEVICES=''", "ROCR_VISIBLE_DEVICES='-1'",
                 "CUDA_VISIBLE_DEVICES='1'", "gfx1032", "gfx1034", "gfx1035", "gfx1036", "gfx90c", "gfx1103",
                 "gfx1150", "gfx1151", "override-wrong", "amd/cpu-torch", "amd/cuda-torch", "nvidia/rocm-torch",
                 "container/no-kfd", "groups/", "wsl/", "+"):
        assert need in ids, need
    assert sum("+" in r.id for r in ROWS) >= 5


@pytest.mark.parametrize("facts,want", [
    ({"pci.gpu_count": 0, "pci.amd_gpu_count": 0, "pci.nvidia_gpu_count": 0}, False),
    ({"pci.amd_gpu_count": 0, "pci.nvidia_gpu_count": 0, "kfd.present": False}, False),
    ({"pci.amd_gpu_count": 1, "pci.nvidia_gpu_count": 0}, True),
    ({"pci.gpu_count": 0, "torch.device_count": 1}, True),           # the bus read says none, torch counts one
    ({"pci.gpu_count": 0, "container.kind": "wsl"}, None),            # WSL hides the GPU from its bus
    ({"gpu.names": ["NVIDIA GeForce RTX 3050 Laptop GPU"]}, True),    # a name a pasted log printed
    ({"gpu.names": ["Intel(R) UHD Graphics 620"]}, None),             # not one a GPU build of torch can use
    ({"torch.gcn_arch_names": ["gfx1031"]}, True),
    ({"torch.build": "cpu"}, None),                                    # a paste that says nothing of the hardware
])
def test_gpu_present_is_derived_from_every_kind_of_evidence(facts, want):
    from diagnostics.derive import derive

    assert derive(facts).get("gpu.present") is want


def test_a_cpu_torch_is_no_finding_on_a_machine_without_gpu_but_is_one_beside_a_gpu():
    """The rule behind the no-GPU rows, on pasted facts alone (match --facts): the same CPU torch and ROCm userspace."""
    from diagnostics import service

    base = {"torch.build": "cpu", "torch.version": "2.13.0+cpu", "rocm.installed": True}
    none = service.diagnose_text(facts={**base, "pci.gpu_count": 0, "pci.amd_gpu_count": 0, "pci.nvidia_gpu_count": 0})
    assert [d["id"] for d in none["diagnoses"] if d["id"] == "torch-cpu-only-wheel"] == []
    one = service.diagnose_text(facts={**base, "pci.gpu_count": 1, "pci.amd_gpu_count": 1, "pci.nvidia_gpu_count": 0})
    assert one["root_causes"][:1] == ["torch-cpu-only-wheel"]


@pytest.mark.parametrize("tree,first,absent", [
    ("m-cloud-vm-no-gpu", "no-gpu-present", "torch-cpu-only-wheel"),
    ("m-cloud-vm-no-gpu+rocm", "no-gpu-present", "torch-cpu-only-wheel"),
    ("m-7900xtx-ubuntu", None, "no-gpu-present"),
])
def test_run_root_end_to_end(tree, first, absent, tmp_path):
    """`run --root DIR --no-generate --json` over a recorded tree, the torch probe run by this interpreter (whatever
    torch it has): a machine without a GPU names no-gpu-present alone, also where its image carries ROCm userspace
    (this project's development container: "+rocm" adds /opt/rocm-6.2.4 to a copy of the tree); the Radeon machine
    never has no GPU."""
    import json
    import shutil
    import subprocess
    import sys

    root = TREES / tree
    if tree.endswith("+rocm"):
        root = tmp_path / "tree"
        shutil.copytree(TREES / tree[:-len("+rocm")], root, symlinks=True)
        (root / "opt" / "rocm-6.2.4" / ".info").mkdir(parents=True)
        (root / "opt" / "rocm-6.2.4" / ".info" / "version").write_text("6.2.4-120\n")
        (root / "opt" / "rocm").symlink_to("rocm-6.2.4")
    out = subprocess.run([sys.executable, "-m", "diagnostics", "run", "--root", str(root), "--no-generate",
                          "--json"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    rep = json.loads(out.stdout)
    ids = [d["id"] for d in rep["diagnoses"]]
    if tree.endswith("+rocm"):
        assert rep["facts"].get("rocm.installed") is True
    assert absent not in ids, ids
    if first:
        assert rep["root_causes"] == [first], ids
    elif rep["facts"].get("torch.build") == "cpu":
        assert rep["root_causes"][:1] == ["torch-cpu-only-wheel"], ids
