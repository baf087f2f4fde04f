"""Integrated or discrete from the names torch gives its devices (derive._kinds_from_torch_names).

The names are the ones ROCm's runtime reports through torch.cuda.get_device_name(): "AMD Radeon Graphics" for an
APU's graphics (ROCm/TheRock#3392, ROCm/legacy-rocm-build#3401), the product's graphics name on newer releases
("AMD Radeon 780M Graphics"), and marketing names for discrete cards.
"""
from __future__ import annotations

import pytest

from diagnostics.derive import derive


@pytest.mark.parametrize("names,first,integrated,discrete", [
    (["AMD Radeon Graphics", "AMD Radeon RX 7900 XTX"], True, 1, 1),
    (["AMD Radeon(TM) Graphics", "Radeon RX 6800 XT"], True, 1, 1),
    (["AMD Radeon RX 7900 XTX", "AMD Radeon Graphics"], False, 1, 1),
    (["AMD Radeon 780M Graphics", "AMD Radeon PRO W7900"], True, 1, 1),
    (["AMD Instinct MI300X", "AMD Instinct MI300X"], False, 0, 2),
    (["AMD Radeon Vega 8 Graphics", "Radeon RX Vega"], True, 1, 1),
])
def test_kinds_from_names(names, first, integrated, discrete):
    out = derive({"torch.build": "rocm", "torch.device_names": names, "torch.device_count": len(names)})
    assert out["gpu.first_is_integrated"] is first
    assert (out["gpu.integrated_count"], out["gpu.discrete_count"]) == (integrated, discrete)


@pytest.mark.parametrize("facts", [
    {"torch.build": "rocm", "torch.device_names": ["AMD Radeon Graphics"]},                  # one device: no mix
    {"torch.build": "rocm", "torch.device_names": ["AMD Radeon Graphics", "Some Renamed GPU"]},  # a name of no kind
    {"torch.build": "cuda", "torch.device_names": ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"]},
    {"torch.build": "rocm", "torch.device_names": "AMD Radeon Graphics"},                     # malformed
])
def test_no_kinds_where_the_names_do_not_say(facts):
    assert "gpu.first_is_integrated" not in derive(facts)


def test_rocminfo_kinds_win_over_names():
    facts = {"torch.build": "rocm", "torch.device_names": ["AMD Radeon Graphics", "AMD Radeon RX 7900 XTX"],
             "gpu.first_is_integrated": False, "gpu.integrated_count": 1, "gpu.discrete_count": 1}
    out = derive(facts)
    assert "gpu.first_is_integrated" not in out and "gpu.integrated_count" not in out


@pytest.mark.parametrize("facts,want", [
    ({"torch.version": "2.5.1", "os.name": "Windows"}, "cpu"),
    ({"torch.version": "2.4.0", "os.name": "Microsoft Windows 11 Pro"}, "cpu"),
    ({"torch.version": "2.2.2", "os.name": "macOS 14.5 (arm64)"}, "cpu"),
    ({"torch.version": "2.5.1", "os.name": "Ubuntu 22.04.4 LTS"}, None),      # PyPI's Linux wheel is a CUDA build
    ({"torch.version": "2.5.1+cu124", "os.name": "Windows"}, None),           # the tag decides (the parsers read it)
    ({"torch.version": "2.8.0a0+gitd1a2b3c", "os.name": "Windows"}, None),    # AMD's Windows ROCm wheels
    ({"torch.version": "2.5.1"}, None),                                       # no OS: unknown
    ({"torch.version": "2.5.1", "os.name": "Windows", "torch.build": "cuda"}, None),
])
def test_a_bare_torch_version_on_windows_or_macos_is_pypis_cpu_build(facts, want):
    assert derive(facts).get("torch.build") == want


@pytest.mark.parametrize("ver,want", [
    ("2.5.1+cu124", "12.4"), ("1.7.1+cu92", "9.2"), ("2.9.0+cu130", "13.0"), ("2.0.1+cu118", "11.8"),
    ("2.6.0.dev20241112+cu126", "12.6"), ("2.5.1+rocm6.2", None), ("2.5.1", None), ("2.5.1+cpu", None),
])
def test_cuda_version_from_the_wheel_tag(ver, want):
    assert derive({"torch.version": ver}).get("torch.cuda_version") == want


def test_torch_own_cuda_version_wins_over_the_tag():
    assert "torch.cuda_version" not in derive({"torch.version": "2.5.1+cu124", "torch.cuda_version": "12.4.1"})


def test_an_old_driver_beside_a_cu124_wheel_is_named_from_the_paste_alone():
    from diagnostics.service import diagnose_text

    paste = ("| NVIDIA-SMI 470.256.02   Driver Version: 470.256.02   CUDA Version: 11.4     |\n"
             "$ pip show torch\nName: torch\nVersion: 2.5.1+cu124\n"
             "$ python -c \"import torch; print(torch.cuda.is_available())\"\nFalse\n")
    res = diagnose_text(logs=[("paste.txt", paste)])
    assert res["diagnoses"][0]["id"] == "nvidia-driver-too-old"


@pytest.mark.parametrize("facts,problem", [
    # rocm-smi: one AMD card by name, the mask selects index 1 -> nothing
    ({"gpu.count": 1, "gpu.names": ["Navi 31 [Radeon RX 7900 XT/7900 XTX]"], "env.HIP_VISIBLE_DEVICES": "1"}, True),
    ({"gpu.count": 2, "gpu.names": ["AMD Instinct MI210", "AMD Instinct MI210"], "env.HIP_VISIBLE_DEVICES": "1"}, False),
    # an answering amdgpu driver and no names
    ({"gpu.count": 1, "driver.amdgpu_loaded": True, "env.HIP_VISIBLE_DEVICES": "1"}, True),
    # names of both vendors: whose GPUs the count means is unknown, so the mask is not judged
    ({"gpu.count": 2, "gpu.names": ["NVIDIA GeForce RTX 3090", "AMD Radeon RX 6800"], "env.HIP_VISIBLE_DEVICES": "1"}, False),
])
def test_a_mask_is_judged_against_the_cards_an_smi_listing_names(facts, problem):
    out = derive(facts)
    assert bool(out.get("visible_devices.problems")) is problem


def test_one_device_named_as_an_apus_graphics_is_the_only_gpu_unless_a_mask_is_shown():
    out = derive({"torch.build": "rocm", "torch.device_names": ["AMD Radeon Graphics"]})
    assert (out["gpu.integrated_count"], out["gpu.discrete_count"]) == (1, 0)
    assert "gpu.integrated_count" not in derive({"torch.device_names": ["AMD Radeon Graphics"],
                                                 "env.HIP_VISIBLE_DEVICES": "1"})
    assert "gpu.integrated_count" not in derive({"torch.device_names": ["AMD Radeon RX 7900 XTX"]})
