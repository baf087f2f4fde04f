"""Facts a pasted log carries besides its error line: the figures of an out-of-memory error, the GPUs its device lines
name.  Each case has a near miss, so a reader that reads too much fails as surely as one that reads too little."""
from diagnostics import service
from diagnostics.parsers import check_script, oom

MIB, GIB = 1 << 20, 1 << 30


def test_oom_capacity_is_read_when_the_free_figure_wrapped_around():
    f = oom.parse("HIP out of memory. Tried to allocate 72.00 MiB. GPU 0 has a total capacty of 512.00 MiB of which "
                  "17179869183.96 GiB is free. Of the allocated memory 292.04 MiB is allocated by PyTorch, and 137.96 MiB "
                  "is reserved by PyTorch but unallocated.")
    assert f["oom.capacity_bytes"] == 512 * MIB and f["oom.api"] == "hip" and f["oom.gpu_index"] == 0
    assert "oom.free_bytes" not in f and "oom.outside_torch_bytes" not in f   # no figure is made of a wrapped one


def test_oom_free_figure_larger_than_the_capacity_is_dropped():
    f = oom.parse("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 4.00 GiB of which "
                  "9.00 GiB is free. Of the allocated memory 1.00 GiB is allocated by PyTorch, and 0 bytes is reserved "
                  "by PyTorch but unallocated.")
    assert f["oom.capacity_bytes"] == 4 * GIB and "oom.free_bytes" not in f


def test_oom_sound_figures_are_kept():
    f = oom.parse("HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.98 GiB of which "
                  "1.20 GiB is free. Of the allocated memory 21.50 GiB is allocated by PyTorch, and 300.00 MiB is "
                  "reserved by PyTorch but unallocated.")
    assert f["oom.free_bytes"] == int(1.2 * GIB) and f["oom.capacity_bytes"] == int(23.98 * GIB)


def _first(text: str) -> str | None:
    from diagnostics.verdicts import counts

    r = service.diagnose_text(logs=[("log", text)])
    return next((d["id"] for d in r["diagnoses"] if counts(d)), None)


def test_a_small_capacity_in_any_wording_is_the_carve_out_and_a_large_one_is_not():
    for cap in ("512.00 MiB", "1.50 GiB", "2.00 GiB"):
        assert _first(f"torch.OutOfMemoryError: HIP out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total "
                      f"capacity of {cap} of which 10.00 MiB is free. Of the allocated memory 400.00 MiB is allocated "
                      f"by PyTorch, and 2.00 MiB is reserved by PyTorch but unallocated.") == "apu-vram-carveout-too-small", cap
    assert _first("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
                  "15.98 GiB of which 100.00 MiB is free. Of the allocated memory 15.20 GiB is allocated by PyTorch, and "
                  "50.00 MiB is reserved by PyTorch but unallocated.") == "hip-out-of-memory"
    # CUDA's own small cards are not an AMD carve-out
    assert _first("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity "
                  "of 1.95 GiB of which 10.00 MiB is free. Of the allocated memory 1.50 GiB is allocated by PyTorch, and "
                  "2.00 MiB is reserved by PyTorch but unallocated.") != "apu-vram-carveout-too-small"


def test_a_hip_error_where_every_named_gpu_is_nvidia_is_the_wrong_wheel():
    abort = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"
    for names in ("GPU 0: NVIDIA GeForce RTX 3050 Laptop GPU (UUID: GPU-4a1b2c3d-1111-2222-3333-444455556666)",
                  "Device: cuda:0 NVIDIA GeForce RTX 4070 : native",
                  "Device: NVIDIA RTX A4000 (cuda:0) - cudaMallocAsync"):
        assert _first(f"{names}\n{abort}") == "rocm-wheel-without-amd-gpu", names
    # the same abort beside a Radeon is the code-object problem of that Radeon
    assert _first(f"Device: cuda:0 AMD Radeon RX 6600 : native\n{abort}") != "rocm-wheel-without-amd-gpu"
    assert _first(abort) == "hip-no-binary-for-gpu"


def test_an_exception_printed_instead_of_a_device_name_is_no_name():
    text = ('$ python -c "import torch; print(torch.__version__); print(torch.cuda.get_device_name(0))"\n'
            "2.1.2+rocm5.6\nRuntimeError: No HIP GPUs are available\n")
    f = check_script.parse(text).facts
    assert f.get("torch.version") == "2.1.2+rocm5.6" and "gpu.names" not in f and "torch.device_names" not in f
    ok = check_script.parse(text.replace("RuntimeError: No HIP GPUs are available", "AMD Radeon RX 7900 XTX")).facts
    assert ok["torch.device_names"] == ["AMD Radeon RX 7900 XTX"]


def _report(text: str) -> dict:
    return service.diagnose_text(logs=[("log", text)])


def test_a_card_named_in_a_check_script_is_judged_against_official_rocm_wheels_never_measured():
    """2.3.0+rocm6.0 has no measured arch list; gfx1031 (the RX 6700 XT's, read from its name) is in no measured
    official ROCm wheel, gfx1030 in all: the missing code is predicted and the override computed."""
    text = ("PyTorch version: 2.3.0+rocm6.0\nCUDA available: True\nDevice name: {name}\n"
            "RuntimeError: HIP error: invalid device function\n")
    r = _report(text.format(name="AMD Radeon RX 6700 XT"))
    assert r["facts"]["support.torch_archs_source"] == "matrix-all" and r["facts"]["torch.arch_supported"] is False
    assert r["root_causes"][0] == "hip-no-binary-for-gpu"
    first = next(d for d in r["diagnoses"] if d["id"] == "hip-no-binary-for-gpu")
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in first["fix"]
    # a card whose target every official wheel carries predicts nothing missing
    r = _report(text.format(name="AMD Radeon RX 7900 XTX"))
    assert "torch.arch_supported" not in r["facts"] and "hip-no-binary-for-gpu" not in r["root_causes"]
    # a wheel the matrix does not list (an old folder) predicts nothing either
    r = _report(text.format(name="AMD Radeon RX 6700 XT").replace("rocm6.0", "rocm5.4.2"))
    assert "torch.arch_supported" not in r["facts"]
    # nor a nightly of a listed folder (another build: new targets land there first)
    r = _report(text.format(name="AMD Radeon RX 6700 XT").replace("2.3.0+", "2.4.0.dev20240601+"))
    assert "torch.arch_supported" not in r["facts"]


def test_a_rocm_torch_that_sees_no_gpu_in_a_check_script_is_a_finding_not_healthy():
    r = _report("PyTorch version: 2.3.0+rocm6.0\nROCm available: False\nDevice name: CPU\n")
    assert r["verdict"] == "problems" and r["root_causes"][:1] == ["hip-runtime-sees-no-gpu"]
    r = _report("PyTorch version: 2.3.0+rocm6.0\nROCm available: True\nDevice name: AMD Radeon RX 7900 XTX\n")
    assert r["verdict"] == "healthy", [d["id"] for d in r["diagnoses"]]


def test_lspci_lines_name_the_vendors_of_the_display_devices_only():
    from diagnostics.parsers import app_log

    f = app_log.parse_embedded(
        "00:02.0 VGA compatible controller: Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics] (rev 0c)\n"
        "01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA107M [GeForce RTX 3050 Mobile] [10de:25a2] (rev a1)\n"
        "01:00.1 Audio device [0403]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 21/23 HDMI/DP Audio Controller [1002:ab28]\n"
        "0000:c1:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)\n").facts
    assert f["gpu.vendors"] == ["intel", "nvidia"]        # the AMD audio function is no GPU
    f = app_log.parse_embedded("0d:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Device 687f "
                               "(rev c1)\n").facts
    assert f["gpu.vendors"] == ["amd"]
    # a sentence about a controller is not lspci's line
    assert "gpu.vendors" not in app_log.parse_embedded("my VGA compatible controller: NVIDIA Corporation card\n").facts


def test_an_lspci_paste_beside_a_torch_check_reasons_about_the_build():
    assert _first("01:00.0 VGA compatible controller: NVIDIA Corporation GA107M [GeForce RTX 3050 Mobile] (rev a1)\n"
                  "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n") == "rocm-wheel-without-amd-gpu"
    assert _first("03:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Navi 22 [Radeon RX 6700/6700 "
                  "XT/6750 XT / 6800M/6850M XT] (rev c1)\nPyTorch version: 2.5.1+cpu\nCUDA available: False\n") == "torch-cpu-only-wheel"
    assert _first("03:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Navi 22 (rev c1)\n"
                  "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n") == "hip-no-binary-for-gpu"
