"""The check_script parser: what people paste back from the "verify" step of a setup guide is read for facts.

Real pastes under tests/fixtures/dumps/check_script/ (sidecar YAML names the public report, the facts the parser
must give and must not give); the label formats below are the print statements of the guides themselves
(/work/shared guide, ROCm and app READMEs), filled with values.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from diagnostics import facts as factcat
from diagnostics.parsers import KINDS, _module, app_log, available_kinds, check_script, detect_kind
from diagnostics.parsers import parse as registry_parse

ROOT = Path(__file__).parent / "fixtures" / "dumps"
SIDECARS = sorted((ROOT / "check_script").glob("*.yaml"))
REPO = Path(__file__).resolve().parent.parent


def _load(sidecar: Path) -> tuple[str, dict]:
    return sidecar.with_suffix(".txt").read_text(encoding="utf-8"), yaml.safe_load(sidecar.read_text(encoding="utf-8"))


def test_registered():
    assert "check_script" in KINDS and "check_script" in available_kinds()
    assert len(SIDECARS) >= 4


@pytest.mark.parametrize("sidecar", SIDECARS, ids=[p.stem for p in SIDECARS])
def test_real_pastes(sidecar: Path):
    text, meta = _load(sidecar)
    assert str(meta["source"]).startswith("https://") and meta.get("note") and meta["kind"] == "check_script"
    res = check_script.parse(text)
    for name, want in (meta.get("expect") or {}).items():
        assert factcat.check_value(name, want) is None
        assert res.facts.get(name) == want, f"{name}: want {want!r}, got {res.facts.get(name)!r}"
    for name in meta.get("absent") or []:
        assert name not in res.facts, (name, res.facts.get(name))
    assert factcat.clean_facts(res.facts)[1] == []
    # auto-detection picks this parser, and no other parser claims the paste more strongly
    assert detect_kind(text) == "check_script"
    # (the registry adds what an app's banner in the same paste establishes, e.g. the REPL's 'Python 3.7.13 (...' line)
    app = {k: v for k, v in app_log.parse(text).facts.items() if k not in res.facts and k != "env.set_names"}
    assert registry_parse(text, "auto").facts == {**res.facts, **app}
    own = check_script.detect(text)
    for kind in available_kinds():
        if kind != "check_script":
            assert float(_module(kind).detect(text)) < own, kind


# the Chinese guide's verify step prints exactly these labels (print(f"PyTorch version: ..."), "Is ROCm available? ...")
GUIDE_CPU = "PyTorch version: 2.4.1+cpu\nIs ROCm available? False\nDevice name: CPU\n"
GUIDE_OK = "PyTorch version: 2.4.1+rocm6.0\nIs ROCm available? True\nDevice name: AMD Radeon RX 7900 XTX\n"


def test_the_chinese_guides_verify_step():
    f = check_script.parse(GUIDE_CPU).facts
    assert f == {"torch.version": "2.4.1+cpu", "torch.build": "cpu", "torch.cuda_available": False,
                 "torch.installed": True}
    f = check_script.parse(GUIDE_OK).facts
    assert f["torch.build"] == "rocm" and f["torch.cuda_available"] is True
    assert f["gpu.names"] == ["AMD Radeon RX 7900 XTX"] and f["gpu.vendors"] == ["amd"]
    assert detect_kind(GUIDE_CPU) == "check_script"


@pytest.mark.parametrize("text,want", [
    ("ROCm available: False\nGPU count: 0\nPyTorch version: 2.3.0+rocm6.0",
     {"torch.cuda_available": False, "torch.device_count": 0, "torch.build": "rocm"}),
    ("CUDA available: True\nGPU: NVIDIA GeForce RTX 3090\nDevice count: 2\ntorch.version.cuda: 12.1",
     {"torch.cuda_available": True, "gpu.names": ["NVIDIA GeForce RTX 3090"], "gpu.count": 2,
      "torch.cuda_version": "12.1", "gpu.vendors": ["nvidia"]}),
    ("torch: 2.5.0+cu121 cuda: True", {"torch.version": "2.5.0+cu121", "torch.build": "cuda",
                                       "torch.cuda_available": True}),
    ("PyTorch: 2.4.0+rocm6.1, ROCm available: True, GPUs: 1",
     {"torch.version": "2.4.0+rocm6.1", "torch.cuda_available": True, "gpu.count": 1}),
    ("torch.cuda.is_available(): False\ntorch.version.hip: 6.0.32830-d62f6a171",
     {"torch.cuda_available": False, "torch.hip_version": "6.0.32830-d62f6a171", "torch.build": "rocm"}),
    ("2024-05-01T12:00:00Z PyTorch version: 2.2.0+rocm5.7\n2024-05-01T12:00:00Z CUDA/ROCm available: False",
     {"torch.version": "2.2.0+rocm5.7", "torch.cuda_available": False}),
])
def test_label_variants(text, want):
    f = check_script.parse(text).facts
    for k, v in want.items():
        assert f.get(k) == v, (k, f)
    assert factcat.clean_facts(f)[1] == []


def test_a_cpu_build_counting_zero_gpus_says_nothing_about_the_machine():
    f = check_script.parse("PyTorch version: 2.4.1+cpu\nCUDA available: False\nGPU count: 0").facts
    assert f["torch.device_count"] == 0 and "gpu.count" not in f


def test_values_of_the_wrong_shape_are_ignored():
    f = check_script.parse("PyTorch version: unknown\nCUDA available: maybe\nDevice name: cuda\nGPU count: many").facts
    assert f == {}


@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n  File \"x.py\", line 3\nRuntimeError: HIP error: invalid device function",
    "Loading model...\nDone. Device: cuda\n",
    "hello world\n",
])
def test_ordinary_logs_are_not_check_scripts(text):
    assert check_script.detect(text) == 0.0


def test_other_parsers_fixtures_are_not_claimed():
    for kind in ("collect_env", "rocminfo", "rocm_smi", "amd_smi", "hipconfig", "dmesg", "nvidia_smi"):
        for txt in sorted((ROOT / kind).glob("*.txt")):
            text = txt.read_text(encoding="utf-8", errors="replace")
            assert float(_module(kind).detect(text)) > check_script.detect(text), txt.name


def test_pasted_with_a_log_it_gives_facts_to_the_diagnosis():
    from diagnostics.service import diagnose_text

    res = diagnose_text(logs=[("paste", GUIDE_CPU)])
    assert res["facts"]["torch.build"] == "cpu"
    assert any(p["kind"] == "check_script" for p in res["parsed"])
    assert [d["id"] for d in res["diagnoses"]][:1] == ["torch-cpu-only-wheel"]
    assert res["possible"] == []          # a check script's "Key: False" lines are tool output, not the user's words


def test_cli_parse_kind(tmp_path):
    import json

    f = tmp_path / "check.txt"
    f.write_text(GUIDE_OK, encoding="utf-8")
    for kind in ("check_script", "auto"):
        out = subprocess.run([sys.executable, "-m", "diagnostics", "parse", str(f), "--kind", kind, "--json"],
                             capture_output=True, text=True, cwd=REPO, timeout=120)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert got["kind"] == "check_script" and got["facts"]["torch.build"] == "rocm"


@pytest.mark.parametrize("shown, value", [
    ("$ echo $HIP_VISIBLE_DEVICES", "1"),
    ("echo ${ROCR_VISIBLE_DEVICES}", "0,1"),
    ("C:\\sd> echo %HIP_VISIBLE_DEVICES%", "1"),
    ("PS C:\\sd> $env:CUDA_VISIBLE_DEVICES", "GPU-5b1c9f0e-3a4d-11ee-be56-0242ac120002"),
    ("PS C:\\> echo $env:HSA_OVERRIDE_GFX_VERSION", "10.3.0"),
    ("$ printenv HIP_VISIBLE_DEVICES", "-1"),
])
def test_a_variable_shown_with_echo_is_read_from_the_line_under_it(shown, value):
    text = f"{shown}\n{value}\n$ python -c \"import torch; print(torch.cuda.is_available())\"\nFalse\n"
    name = next(n for n in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                            "HSA_OVERRIDE_GFX_VERSION") if n in shown)
    assert check_script.parse(text).facts.get(f"env.{name}") == value


@pytest.mark.parametrize("text", [
    "C:\\> echo %HIP_VISIBLE_DEVICES%\n%HIP_VISIBLE_DEVICES%\n",      # cmd: unset
    "$ echo $HIP_VISIBLE_DEVICES\n\n$ rocm-smi\n",                     # unset or empty: says nothing
    "$ echo $HIP_VISIBLE_DEVICES\nnvidia-smi\n",                       # the next command, not a value
    "$ echo $PATH\n/usr/bin\n",                                        # not a GPU variable
    "echo $HIP_VISIBLE_DEVICES is the variable\n1\n",                  # prose, not a command
])
def test_an_echo_without_a_value_under_it_sets_nothing(text):
    f = check_script.parse(text).facts
    assert not any(k.startswith("env.") and k != "env.set_names" for k in f), f


def test_a_mask_shown_with_echo_that_hides_the_only_gpu_is_the_diagnosis():
    from diagnostics.service import diagnose_text

    paste = ("$ echo $HIP_VISIBLE_DEVICES\n1\n$ rocm-smi --showproductname\n"
             "GPU[0]\t\t: Card Series: \t\tNavi 31 [Radeon RX 7900 XTX]\nGPU[0]\t\t: GFX Version: \t\tgfx1100\n"
             "$ python -c \"import torch; print(torch.cuda.is_available())\"\nFalse\n")
    res = diagnose_text(logs=[("paste", paste)])
    assert [d["id"] for d in res["diagnoses"]][:1] == ["visible-devices-env-masking"], res["diagnoses"]


@pytest.mark.parametrize("line, version, build", [
    ("torch==2.7.0+rocm6.3", "2.7.0+rocm6.3", "rocm"),                                  # pip freeze
    ("torch                     2.7.0+rocm6.3", "2.7.0+rocm6.3", "rocm"),               # pip list
    ("torch 2.5.1+cu121 /home/u/venv/lib/python3.11/site-packages pip", "2.5.1+cu121", "cuda"),   # pip list -v
    ("pytorch                   2.3.1           py3.11_cuda12.1_cudnn8.9.2_0    pytorch", "2.3.1", "cuda"),  # conda
    ("pytorch                   2.0.1           cpu_py310h6fd4e1c_0    conda-forge", "2.0.1", "cpu"),
    ("Name: torch\nVersion: 2.6.0+rocm6.2.4", "2.6.0+rocm6.2.4", "rocm"),               # pip show torch
])
def test_a_package_managers_line_for_torch_gives_its_version_and_build(line, version, build):
    f = check_script.parse(line + "\n").facts
    assert f.get("torch.version") == version and f.get("torch.build") == build, f


@pytest.mark.parametrize("text", [
    "I installed torch 2.7.0+rocm6.3 yesterday and it still fails\n",   # a sentence
    "torch-geometric           2.3.0\ntorchvision               0.22.0+rocm6.3\n",   # other packages
    "Collecting torch==2.5.1+rocm6.2\n",                                 # pip's download, not what is installed
    "ERROR: No matching distribution found for torch==2.7.0+rocm6.3\n",
])
def test_lines_that_only_name_torch_give_no_version(text):
    assert "torch.version" not in check_script.parse(text).facts


def test_a_pip_freeze_beside_the_gpus_target_predicts_the_missing_code_object():
    """pip's line for a ROCm torch and rocminfo's name line for an RX 6700 XT (gfx1031, in no official wheel): the
    facts alone name the cause before anything aborts."""
    from diagnostics.service import diagnose_text

    paste = "$ pip freeze | grep torch\ntorch==2.7.0+rocm6.3\n$ rocminfo | grep gfx\n  Name:                    gfx1031\n"
    res = diagnose_text(logs=[("paste", paste)])
    assert [d["id"] for d in res["diagnoses"]][:1] == ["hip-no-binary-for-gpu"], res["diagnoses"]
    assert "10.3.0" in json.dumps(res["diagnoses"][0])   # the override of its family is in the fix
