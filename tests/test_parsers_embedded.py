"""Dumps in the many forms people paste them: the Hugging Face env reports (hf_env), collect_env as JSON, check-script
output with Chinese labels, exports and several runs, and pastes that hold more than one tool's output.

Real pastes: tests/fixtures/dumps/hf_env/ (read by the hf_env parser) and tests/fixtures/dumps/mixed/ (read by the
registry's auto mode; the sidecar's ``kind`` is the main parser).  Sidecars name the public report and list the facts
that must and must not come out (unknown is not false: a fact the paste does not show stays absent).
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from diagnostics import facts as factcat
from diagnostics.parsers import _module, available_kinds, check_script, detect_kind, hf_env, holds_facts
from diagnostics.parsers import parse as registry_parse

ROOT = Path(__file__).parent / "fixtures" / "dumps"
HF = sorted((ROOT / "hf_env").glob("*.yaml"))
MIXED = sorted((ROOT / "mixed").glob("*.yaml"))


def _load(sidecar: Path) -> tuple[str, dict]:
    return (sidecar.with_suffix(".txt").read_text(encoding="utf-8"),
            yaml.safe_load(sidecar.read_text(encoding="utf-8")))


def _check(res, meta):
    for name, want in (meta.get("expect") or {}).items():
        assert factcat.check_value(name, want) is None, (name, want)
        assert res.facts.get(name) == want, f"{name}: want {want!r}, got {res.facts.get(name)!r}"
    for name in meta.get("absent") or []:
        assert factcat.is_known(name), name
        assert name not in res.facts, (name, res.facts.get(name))
    assert factcat.clean_facts(res.facts)[1] == []


@pytest.mark.parametrize("sidecar", HF, ids=[p.stem for p in HF])
def test_hf_env_real_pastes(sidecar: Path):
    text, meta = _load(sidecar)
    assert str(meta["source"]).startswith("https://") and meta.get("note") and meta["kind"] == "hf_env"
    _check(hf_env.parse(text), meta)
    assert detect_kind(text) == "hf_env"
    for kind in available_kinds():
        if kind != "hf_env":
            assert float(_module(kind).detect(text)) < hf_env.detect(text), kind


@pytest.mark.parametrize("sidecar", MIXED, ids=[p.stem for p in MIXED])
def test_mixed_pastes_through_the_registry(sidecar: Path):
    text, meta = _load(sidecar)
    assert str(meta["source"]).startswith("https://") and meta.get("note")
    res = registry_parse(text, "auto")
    assert res.kind == meta["kind"]
    _check(res, meta)
    # the main parser's own facts are kept as they are; the others only add
    own = _module(meta["kind"]).parse(text).facts
    assert all(res.facts[k] == v for k, v in own.items() if k != "env.set_names")


HF_NEW = """Copy-and-paste the text below in your GitHub issue and FILL OUT the two last points.

- `transformers` version: 4.51.3
- Platform: Linux-6.8.0-57-generic-x86_64-with-glibc2.39
- Python version: 3.12.3
- Huggingface_hub version: 0.30.2
- Safetensors version: 0.5.3
- Accelerate version: 1.6.0
- Accelerate config: \tnot found
- DeepSpeed version: not installed
- PyTorch version (GPU?): 2.6.0+rocm6.2.4 (True)
- Tensorflow version (GPU?): not installed (NA)
- Flax version (CPU?/GPU?/TPU?): not installed (NA)
- Jax version: not installed
- JaxLib version: not installed
- Using distributed or parallel set-up in script?: <fill in>
- Using GPU in script?: <fill in>
- GPU type: AMD Radeon RX 7900 XTX
"""


def test_hf_env_label_forms():
    """The labels of the three tools' current versions (their env commands' own print order)."""
    f = hf_env.parse(HF_NEW).facts
    assert f["torch.version"] == "2.6.0+rocm6.2.4" and f["torch.build"] == "rocm" and f["torch.cuda_available"] is True
    assert f["gpu.names"] == ["AMD Radeon RX 7900 XTX"] and f["gpu.vendors"] == ["amd"]
    assert f["os.kernel"] == "6.8.0-57-generic" and f["pkg.transformers"] == "4.51.3" and f["pkg.accelerate"] == "1.6.0"
    missing = hf_env.parse("- `Accelerate` version: 0.21.0\n- PyTorch version (GPU?): not installed (NA)\n").facts
    assert missing == {"torch.installed": False, "pkg.accelerate": "0.21.0"}
    acc = hf_env.parse("- `transformers` version: 4.53.0\n- PyTorch version (accelerator?): 2.7.1+cu126 (CUDA)\n").facts
    assert acc["torch.cuda_available"] is True and acc["torch.build"] == "cuda"
    na = hf_env.parse("- `transformers` version: 4.53.0\n- PyTorch version (accelerator?): 2.7.1+cpu (NA)\n").facts
    assert "torch.cuda_available" not in na and na["torch.build"] == "cpu"     # 'NA' names no accelerator: unknown
    distro = hf_env.parse("- 🤗 Diffusers version: 0.28.0.dev0\n- Platform: Ubuntu 24.04 LTS - "
                          "Linux-6.8.0-31-generic-x86_64-with-glibc2.39\n- PyTorch version (GPU?): 2.3.0+cu121 (True)\n").facts
    assert distro["os.name"] == "Ubuntu 24.04 LTS" and distro["os.kernel"] == "6.8.0-31-generic"


# --------------------------------------------------------------------------------- check-script label forms


@pytest.mark.parametrize("text,want", [
    # Chinese labels (the guide's readers translate its prints), full-width colons and question marks
    ("PyTorch 版本: 2.4.1+rocm6.0\nCUDA 是否可用: False\nGPU 数量: 0",
     {"torch.version": "2.4.1+rocm6.0", "torch.cuda_available": False, "torch.device_count": 0, "torch.build": "rocm"}),
    ("PyTorch版本：2.5.1+cu121\nCUDA是否可用：True\n显卡名称：NVIDIA GeForce RTX 4090",
     {"torch.build": "cuda", "torch.cuda_available": True, "gpu.names": ["NVIDIA GeForce RTX 4090"]}),
    ("torch版本: 2.3.1+cpu\nGPU是否可用: False", {"torch.build": "cpu", "torch.cuda_available": False}),
    ("ROCm 是否可用？ True\n设备名: AMD Radeon RX 7900 XTX", {"torch.cuda_available": True, "gpu.vendors": ["amd"]}),
    # one print of several expressions, several prints in one python -c, a Windows prompt
    ('C:\\Users\\me> python -c "import torch; print(torch.__version__, torch.cuda.is_available())"\n2.5.1+cpu False',
     {"torch.version": "2.5.1+cpu", "torch.cuda_available": False, "torch.build": "cpu"}),
    ('python3 -c "import torch; print(torch.__version__); print(torch.version.hip)"\n2.4.0+rocm6.1\n6.1.40091-a8dbc0c19',
     {"torch.version": "2.4.0+rocm6.1", "torch.hip_version": "6.1.40091-a8dbc0c19"}),
    ('python -c "import torch; print(torch.version.hip, torch.version.cuda)"\nNone None', {"torch.build": "cpu"}),
    ('PS C:\\sd> $env:HIP_VISIBLE_DEVICES="1"\nPS C:\\sd> python -c "import torch; print(torch.cuda.is_available())"\nFalse',
     {"env.HIP_VISIBLE_DEVICES": "1", "torch.cuda_available": False}),
    ("set HSA_OVERRIDE_GFX_VERSION=11.0.0\n>>> torch.cuda.get_arch_list()\n['gfx1100', 'gfx1101']",
     {"env.HSA_OVERRIDE_GFX_VERSION": "11.0.0", "torch.arch_list": ["gfx1100", "gfx1101"]}),
])
def test_check_script_forms(text, want):
    f = check_script.parse(text).facts
    for k, v in want.items():
        assert f.get(k) == v, (k, f)
    assert factcat.clean_facts(f)[1] == []
    assert detect_kind(text) == "check_script"


def test_a_missing_torch_after_a_check_command_is_a_fact():
    out = check_script.parse('$ python -c "import torch; print(torch.cuda.is_available())"\nTraceback (most recent call '
                             'last):\n  File "<string>", line 1, in <module>\nModuleNotFoundError: No module named \'torch\'\n')
    assert out.facts == {"torch.installed": False}
    assert out.errors == ["ModuleNotFoundError: No module named 'torch'"]
    broken = check_script.parse(">>> import torch\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in "
                                "<module>\nImportError: libamdhip64.so.6: cannot open shared object file: No such file")
    assert broken.facts["torch.installed"] is True and broken.facts["torch.import_error"].startswith("ImportError")


def test_a_missing_torch_in_a_pip_build_is_not_torch_missing():
    """pip builds a package (flash-attn) in an isolated env where torch is absent even when it is installed."""
    text = ('  × Getting requirements to build wheel did not run successfully.\n  python -c "import torch"\n'
            '      Traceback (most recent call last):\n        File "<string>", line 1, in <module>\n'
            "      ModuleNotFoundError: No module named 'torch'\n")
    assert "torch.installed" not in check_script.parse(text).facts


def test_device_count_under_a_mask_is_not_the_machines_count():
    f = check_script.parse('HIP_VISIBLE_DEVICES=1 python -c "import torch; print(torch.cuda.device_count())"\n1').facts
    assert f["torch.device_count"] == 1 and f["env.HIP_VISIBLE_DEVICES"] == "1" and "gpu.count" not in f


def test_runs_that_disagree_leave_the_fact_unknown():
    text = ('python -c "import torch; print(torch.cuda.is_available())"\nFalse\n'
            'HSA_OVERRIDE_GFX_VERSION=10.3.0 python -c "import torch; print(torch.cuda.is_available())"\nTrue\n')
    res = check_script.parse(text)
    assert "torch.cuda_available" not in res.facts and "env.HSA_OVERRIDE_GFX_VERSION" not in res.facts
    assert any("disagree" in n for n in res.notes)


# ------------------------------------------------------------------------------------ several tools, one paste


def test_collect_env_and_rocminfo_in_one_paste():
    """The ROCm issue template asks for both: each parser contributes what the other does not know."""
    ce = (ROOT / "collect_env" / "rocm6.4_wsl2_no_cuda_runpy_warning_template.txt").read_text(encoding="utf-8")
    ri = (ROOT / "rocminfo" / "rocm53-rx6800-gfx1030.txt").read_text(encoding="utf-8")
    res = registry_parse(ce + "\n\n" + ri, "auto")
    own_ri = _module("rocminfo").parse(ri).facts
    assert res.facts["torch.build"] == "rocm" and res.facts["torch.cuda_available"] is False
    assert res.facts["gpu.gfx_targets"] == own_ri["gpu.gfx_targets"] == ["gfx1030"]
    assert any(n.startswith("also read as") for n in res.notes)


def test_a_long_log_with_a_check_inside_gives_facts(tmp_path):
    from diagnostics.service import diagnose_text

    log = ("2025-03-01 10:00:01 INFO starting webui\n" * 200 + "export HIP_VISIBLE_DEVICES=2\n"
           + 'python -c "import torch; print(torch.__version__)"\n2.5.1+rocm6.2\n' + "INFO done\n" * 200)
    assert holds_facts(log)
    rep = diagnose_text(logs=[("webui.log", log)])
    assert rep["facts"]["env.HIP_VISIBLE_DEVICES"] == "2" and rep["facts"]["torch.build"] == "rocm"


def test_unrecognised_text_gives_no_facts():
    for text in ("hello\nworld\n", "Loading model...\nDevice: cuda\n", "GPU: busy\nCUDA: 12\n"):
        assert not holds_facts(text)
        assert registry_parse(text, "auto").facts == {}


def test_embedded_reading_is_linear():
    block = ('export HIP_VISIBLE_DEVICES=0\npython -c "import torch; print(torch.__version__, torch.cuda.is_available())"'
             '\n2.5.1+rocm6.2 True\n')
    big = block * 60_000 + ("x" * 3000 + "\n") * 100
    t0 = time.perf_counter()
    registry_parse(big, "auto")
    hf_env.parse(big)
    assert time.perf_counter() - t0 < 20


# --------------------------------------------------------------------------- dumps behind a log collector's prefixes

LAYERS = {
    "python logging": "2024-05-01 12:00:01,123 INFO ",
    "python logging, dashes": "2024-05-01 12:00:01,123 - INFO - ",
    "python logging, cookbook": "2024-05-01 12:00:01,123 - app - ERROR - ",
    "loguru": "2024-05-01 12:00:01.123 | INFO     | __main__:<module>:5 - ",
    "docker compose": "webui-1  | ",
    "docker compose -t": "webui-1  | 2024-05-01T12:00:01.123456789Z ",
    "[stdout]": "[stdout] ",
    "bracketed time and level": "[12:00:01] [INFO] ",
}
LAYER_KINDS = ("collect_env", "rocminfo", "nvidia_smi", "rocm_smi", "amd_smi", "hipconfig", "check_script", "hf_env")
LAYER_FIXTURES = [p for k in LAYER_KINDS for p in sorted((ROOT / k).glob("*.txt"))]


@pytest.mark.parametrize("txt", LAYER_FIXTURES, ids=[f"{p.parent.name}/{p.stem}" for p in LAYER_FIXTURES])
def test_a_dump_behind_log_prefixes_gives_the_same_facts(txt: Path):
    """Every line of the dump behind the same collector prefix (a dump inside a service's log), or its colons
    full-width (a Chinese input method): the registry finds the same kind and the same facts, none different."""
    text = txt.read_text(encoding="utf-8", errors="replace")
    want = registry_parse(text, "auto")
    for name, prefix in LAYERS.items():
        got = registry_parse("\n".join(prefix + ln for ln in text.split("\n")), "auto")
        assert got.kind == want.kind, name
        assert got.facts == want.facts, name
    fw = registry_parse(text.replace(": ", "： "), "auto")
    assert fw.kind == want.kind and fw.facts == want.facts


def test_a_tools_own_warning_line_is_not_a_log_prefix():
    text = "$ rocm-smi\n\nWARNING: No AMD GPUs specified\nConcise Info\nGPU  Temp  AvgPwr\n"
    from diagnostics.parsers.base import strip_log_layers
    assert strip_log_layers(text) == text
