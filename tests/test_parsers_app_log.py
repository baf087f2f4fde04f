"""The app_log parser: the startup banners and device lines of ComfyUI/Forge, A1111, ollama, llama.cpp, TensorFlow, vLLM
and pip, read for facts from any pasted log.

Real pastes under tests/fixtures/dumps/app_log/ (sidecar YAML: the public report, the facts the parser must give and
must not give).  The silent lines below are real lines from the threads named beside them that look like a fact line
and must not set one.  The golden file (tests/data/parsers_auto_golden.json, made by the registry before app_log
existed) holds what the registry's auto parse gave for every other fixture: those facts must not change.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from diagnostics import facts as factcat
from diagnostics import service
from diagnostics.parsers import KINDS, app_log, available_kinds, holds_facts, host_checks
from diagnostics.parsers import parse as registry_parse

ROOT = Path(__file__).parent / "fixtures" / "dumps"
SIDECARS = sorted((ROOT / "app_log").glob("*.yaml"))
GOLDEN = Path(__file__).parent / "data" / "parsers_auto_golden.json"


def _load(sidecar: Path) -> tuple[str, dict]:
    return sidecar.with_suffix(".txt").read_text(encoding="utf-8"), yaml.safe_load(sidecar.read_text(encoding="utf-8"))


def test_registered():
    assert "app_log" in KINDS and "app_log" in available_kinds()
    assert len(SIDECARS) >= 15


@pytest.mark.parametrize("sidecar", SIDECARS, ids=[p.stem for p in SIDECARS])
def test_real_pastes(sidecar: Path):
    text, meta = _load(sidecar)
    assert str(meta["source"]).startswith("https://") and meta.get("note") and meta["kind"] == "app_log"
    res = app_log.parse(text)
    for name, want in (meta.get("expect") or {}).items():
        assert factcat.check_value(name, want) is None, name
        assert res.facts.get(name) == want, f"{name}: want {want!r}, got {res.facts.get(name)!r}"
    for name in meta.get("absent") or []:
        assert name not in res.facts, (name, res.facts.get(name))
    assert factcat.clean_facts(res.facts)[1] == []
    # a pasted log flows through the registry (and the service) the same way
    assert holds_facts(text)
    auto = registry_parse(text, "auto").facts
    for name, want in (meta.get("expect") or {}).items():
        assert auto.get(name) == want, (name, auto.get(name))


def _layers(text: str, prefix: str) -> str:
    return "\n".join(prefix + ln if ln.strip() else ln for ln in text.split("\n"))


@pytest.mark.parametrize("prefix", [
    "webui-1  | ",                                            # docker compose
    "2025-05-08T18:51:05.085123456Z ",                        # docker logs --timestamps
    "May 08 18:51:05 host comfyui[1234]: ",                   # journald
    "\x1b[32m2025-05-08 18:51:05,085 INFO\x1b[0m ",           # a coloured logger
])
def test_embedded_with_prefixes(prefix: str):
    text, meta = _load(ROOT / "app_log" / "comfy_cu128_rtx4090_windows.yaml")
    wrapped = "some other output\n" + _layers(text, prefix) + "\nTraceback (most recent call last):\n"
    got = registry_parse(wrapped, "auto").facts
    for name in ("torch.version", "torch.build", "gpu.names", "gpu.vram_total_bytes", "host.mem_total_bytes"):
        assert got.get(name) == meta["expect"][name], (prefix, name, got.get(name))


# real lines that look like a fact line and must not set one
SILENT = [
    # https://github.com/Comfy-Org/ComfyUI/issues/8010 and .../issues/5169: the VRAM state is a mode, not a size
    ("Set vram state to: NORMAL_VRAM", ()),
    # https://github.com/OpenImagingLab/FlashVSR/issues/24: torch's cache, not the GPU's memory
    ("- **Torch VRAM Total:** 0", ("gpu.vram_total_bytes",)),
    # https://github.com/pytorch/pytorch/issues/43493: a download is not an install, numpy's line is not torch's
    ("  Downloading torch-1.6.0-cp38-cp38-manylinux1_x86_64.whl (748.8 MB)", ("torch.version",)),
    ("Requirement already satisfied: numpy in /private/home/pbelevich/miniconda3/envs/torchcsprng_pip_py38/lib/"
     "python3.8/site-packages (from torch) (1.19.1)", ("torch.version",)),
    ("Successfully installed pillow-7.2.0 torchvision-0.7.0", ("torch.version",)),
    # https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/9970: what pip looks at, not what is installed
    ("Collecting torch==2.0.1+rocm5.4.2", ("torch.version", "torch.build")),
    # https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/10703: the version A1111 was tested with
    ("This program is tested with 3.10.6 Python, but you have 3.11.3.", ("python.version",)),
    # https://github.com/lllyasviel/stable-diffusion-webui-forge/issues/488: Forge's own version
    ("Version: f0.0.16v1.8.0rc-latest-268-gb59deaa3", ("torch.version",)),
    # https://github.com/vllm-project/vllm/issues/16724: no platform says nothing about the GPU
    ("INFO 04-16 21:06:25 [__init__.py:243] No platform detected, vLLM is running on UnspecifiedPlatform",
     ("gpu.vendors", "pkg.vllm_build")),
    # https://github.com/ollama/ollama/issues/11557: the iGPU ollama skips is no VRAM figure
    ('time=2025-07-28T13:04:33.314+03:00 level=INFO source=amd_linux.go:296 msg="unsupported Radeon iGPU detected '
     'skipping" id=1 total="512.0 MiB"', ("gpu.vram_total_bytes", "gpu.count")),
    # https://github.com/ollama/ollama/issues/12071: ollama's filter, not a count of GPUs
    ('time=... level=INFO msg="no compatible GPUs were discovered"', ("gpu.count", "hip.device_count")),
    # https://github.com/likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU/issues/50: an APU's free memory
    ("llama_model_load_from_file_impl: using device ROCm0 (AMD Radeon 780M Graphics) - 59175 MiB free",
     ("gpu.vram_total_bytes",)),
    # a sentence naming torch's version is not kohya_ss's own 'Torch X.Y.Z' line
    ("Torch 2.1.2 and torchvision 0.16.2 were installed by the setup", ("torch.version",)),
    # https://github.com/ggml-org/llama.cpp/issues/20142: Vulkan's device line is not the HIP backend's
    ("ggml_vulkan: 0 = AMD Radeon Graphics (RADV GFX1151) (radv) | uma: 1 | fp16: 1 | bf16: 0 | warp size: 64",
     ("gpu.gfx_targets", "gpu.count")),
]


@pytest.mark.parametrize("line,absent", SILENT, ids=[s[0][:40] for s in SILENT])
def test_look_alike_lines_set_nothing(line: str, absent: tuple[str, ...]):
    res = app_log.parse(line)
    for name in absent:
        assert name not in res.facts, (name, res.facts)
    assert not res.facts, res.facts


def test_comfy_device_cpu_says_nothing_about_a_gpu():
    # ComfyUI started with --cpu (https://github.com/LucipherDev/ComfyUI-TangoFlux/issues/18 shows its report's 'Name: cpu')
    f = app_log.parse("Total VRAM 65275 MB, total RAM 65275 MB\npytorch version: 2.6.0+cpu\n"
                      "Set vram state to: DISABLED\nDevice: cpu\n").facts
    assert f["torch.build"] == "cpu" and "gpu.names" not in f and "torch.cuda_available" not in f


def test_two_runs_that_disagree_leave_the_fact_unknown():
    text = "pytorch version: 2.3.0+rocm6.0\nDevice: cuda:0 AMD Radeon RX 7900 XTX : native\n" \
           "pytorch version: 2.5.1+rocm6.2\nDevice: cuda:0 AMD Radeon RX 7900 XTX : native\n"
    res = app_log.parse(text)
    assert "torch.version" not in res.facts and any("disagree on torch.version" in n for n in res.notes)


def test_pip_install_yields_to_a_run_of_torch():
    text = "Successfully installed torch-2.4.1+cu121 torchvision-0.19.1+cu121\npytorch version: 2.4.1+rocm6.1\n"
    assert app_log.parse(text).facts["torch.version"] == "2.4.1+rocm6.1"


def test_golden_other_parsers_unchanged():
    """Every fact the registry gave for the other tools' fixtures before app_log existed is still given, with the same
    value and kind; anything added comes from an app line or a system check's output in the same paste."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert len(golden) >= 100
    for rel, want in golden.items():
        text = (ROOT / rel).read_text(encoding="utf-8", errors="replace")
        got = registry_parse(text, "auto")
        assert got.kind == want["kind"], rel
        for name, value in want["facts"].items():
            assert got.facts.get(name) == value, (rel, name, got.facts.get(name), value)
        added = {k for k in got.facts if k not in want["facts"]}
        assert added <= set(app_log.parse(text).facts) | set(host_checks.parse(text).facts), (rel, added)


def test_service_diagnoses_a_pasted_banner_from_its_facts():
    """A ComfyUI banner pasted as a log: its facts reach the report, and the support matrix reasons from them (an
    RX 6700 XT is gfx1031, which the torch 2.5.1+rocm6.2 wheel does not carry)."""
    log = ("Total VRAM 12272 MB, total RAM 32012 MB\npytorch version: 2.5.1+rocm6.2\nSet vram state to: NORMAL_VRAM\n"
           "Device: cuda:0 AMD Radeon RX 6700 XT : native\n")
    rep = service.diagnose_text(logs=[("comfyui.log", log)])
    f = rep["facts"]
    assert f["torch.build"] == "rocm" and f["gpu.names"] == ["AMD Radeon RX 6700 XT"]
    assert f["support.targets"] == ["gfx1031"] and f["torch.arch_supported"] is False
    assert f["support.override_status"] == "missing" and f["support.override_recommended"] == "10.3.0"
    assert "hip-no-binary-for-gpu" in [d["id"] for d in rep["diagnoses"] if d.get("basis") == "confirmed"]


def test_support_matrix_reasons_from_a_real_banner():
    """The banner of https://github.com/Comfy-Org/ComfyUI/issues/5387 (an RX 6950 XT with the torch 2.4.1+rocm6.1 wheel;
    the thread's segfault was a Python 3.12.7 problem): the marketing name gives gfx1030, which ROCm's matrix lists; the
    rocm6.1 wheel's arch list was never measured, so whether it carries gfx1030 stays unknown (nothing is predicted),
    and no fact-based entry fires."""
    log = ("liarus@LIARUS-KP:~$ comfyui\nTotal VRAM 16368 MB, total RAM 64219 MB\npytorch version: 2.4.1+rocm6.1\n"
           "Set vram state to: NORMAL_VRAM\nDevice: cuda:0 AMD Radeon RX 6950 XT : native\n"
           "Using sub quadratic optimization for cross attention, if you have memory or speed issues try using: "
           "--use-split-cross-attention\n[Prompt Server] web root: /home/liarus/Git/ComfyUI/web\n")
    rep = service.diagnose_text(logs=[("comfyui.log", log)])
    f = rep["facts"]
    assert f["torch.wheel_folder"] == "rocm6.1" and f["support.targets"] == ["gfx1030"]
    assert f["support.official"] is True and f["gpu.vram_total_bytes"] == 16368 * 1024 * 1024
    assert "torch.arch_supported" not in f and "support.override_status" not in f
    confirmed = [d["id"] for d in rep["diagnoses"] if d.get("basis") == "confirmed" and d["severity"] in ("error", "critical")]
    assert confirmed == [], confirmed


def test_cuda_wheel_without_the_gpus_arch_is_predicted():
    """A ComfyUI-format banner (constructed: the RTX 5070 Ti device line of the FlashVSR report with the cu118 wheel of
    torch 2.0.0, whose arch list the matrix measured) predicts 'no kernel image' before anything runs."""
    log = "pytorch version: 2.0.0+cu118\nDevice: cuda:0 NVIDIA GeForce RTX 5070 Ti : cudaMallocAsync\n"
    rep = service.diagnose_text(logs=[("log", log)])
    f = rep["facts"]
    assert f["support.targets"] == ["sm_120"], f.get("support.targets")
    assert f["torch.arch_supported"] is False and f["torch.unsupported_archs"] == ["sm_120"]
    assert "cuda-no-kernel-image" in [d["id"] for d in rep["diagnoses"] if d.get("basis") == "confirmed"]


def test_bug_template_gpu_line_names_the_gpu():
    # https://github.com/pytorch/pytorch/issues/51213: the template's field, filled in by the reporter
    f = app_log.parse(" - PyTorch Version (e.g., 1.0): 1.6.0\n - GPU models and configuration: AMD Raven\n").facts
    assert f["gpu.names"] == ["AMD Raven"] and f["gpu.vendors"] == ["amd"]
    assert "gpu.names" not in app_log.parse("- GPU models and configuration: Could not collect\n").facts
    assert app_log.parse("GPU models and configuration: GPU 0: NVIDIA GeForce RTX 3090\n").facts["gpu.vendors"] == ["nvidia"]


def test_cuda_not_available_sentence_needs_torch_in_the_paste():
    # https://github.com/ROCm/legacy-rocm-build/issues/4358: a test script's two lines
    f = app_log.parse("PyTorch version: 2.4.1+cu121\nCUDA is not available. PyTorch will use the CPU.\n").facts
    assert f["torch.cuda_available"] is False and f["torch.build"] == "cuda"
    # the sentence alone may be any tool's: nothing said about torch
    assert "torch.cuda_available" not in app_log.parse("CUDA is not available. Falling back to CPU.\n").facts


def test_ollama_version_from_the_pre_structured_log():
    # https://github.com/ollama/ollama/issues/1594: ollama 0.1.16 logged without key=value fields
    f = app_log.parse("2023/12/18 21:59:15 routes.go:871: Listening on 127.0.0.1:11434 (version 0.1.16)\n").facts
    assert f["ollama.version"] == "0.1.16"


def test_bug_template_gpu_line_with_rocm_torchs_gfx_suffix():
    f = app_log.parse("GPU models and configuration: AMD Instinct MI100 (gfx908:sramecc+:xnack-)\n").facts
    assert f["gpu.names"] == ["AMD Instinct MI100"] and f["gpu.gfx_targets"] == ["gfx908"]
    assert not app_log.parse("GPU models and configuration: No CUDA\n").facts


def test_rocminfo_name_lines_alone_give_the_gpus_targets_in_order():
    """``rocminfo | grep gfx`` pasted without the rest of rocminfo: the agents' name lines still say which GPUs
    the machine has (an iGPU listed before the discrete card here)."""
    from diagnostics.parsers import parse

    text = ("$ rocminfo | grep gfx\n  Name:                    gfx1036\n  Name:                    gfx1100\n"
            "$ python3 sd.py\nAborted (core dumped)\n")
    assert parse(text).facts.get("gpu.gfx_targets") == ["gfx1036", "gfx1100"]
    # a name line that is not a target, or a target inside a sentence, is not one
    assert "gpu.gfx_targets" not in parse("Name: gfx-card-7\nmy Name: gfx1100 is wrong\n").facts


def test_mesa_and_the_rocm_runtime_agree_on_a_board():
    """rocminfo's agent (target first, board after) against Mesa's name for the same chip: equal targets are no
    override (Strix Halo, ROCm 7.1 fixture + the Vulkan line of ROCm/ROCm#5696); a CPU agent's name pairs with
    nothing, and Mesa's generic 'AMD Radeon Graphics' names no board rocminfo lists."""
    rocminfo = (ROOT / "rocminfo" / "rocm71-strix-halo-gfx1151-npu.txt").read_text()
    same = rocminfo + "\n\t\tGPU id = 1 (Radeon 8060S Graphics (RADV GFX1151))\n"
    assert app_log.parse(same).facts["gpu.gfx_reported_mismatch"] is False
    generic = rocminfo + "\nggml_vulkan: 0 = AMD Radeon Graphics (RADV GFX1151) (radv) | uma: 1 | fp16: 1\n"
    assert "gpu.gfx_reported_mismatch" not in app_log.parse(generic).facts
    forced = rocminfo.replace("Name:                    gfx1151", "Name:                    gfx1201")
    assert app_log.parse(forced + "\n(Radeon 8060S Graphics (RADV GFX1151))\n").facts["gpu.gfx_reported_mismatch"] is True
    # Mesa's codenames (RADV NAVI23) are not read as targets
    assert "gpu.gfx_reported_mismatch" not in app_log.parse(
        "ggml_vulkan: 0 = AMD Radeon RX 6600M (RADV NAVI23) (radv) | uma: 0\nBoard name: AMD Radeon RX 6600M\n"
        "Name: gfx1030\n").facts
