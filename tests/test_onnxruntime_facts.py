"""The onnxruntime distribution facts: read from a pasted collect_env and used by the KB.

The "Versions of relevant libraries" block below is from a real vLLM bug report's collect_env (GitHub issue
text quoted in a public issue digest): both `onnxruntime` and `onnxruntime-gpu` 1.16.3 installed side by side,
which leaves only the CPU execution provider (onnxruntime#26996, ComfyUI-WD14-Tagger#23).
"""
from __future__ import annotations

from diagnostics.facts import CATALOGUE
from diagnostics.parsers import collect_env

BOTH = """\
PyTorch version: 2.1.2+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
ROCM used to build PyTorch: N/A

Versions of relevant libraries:
[pip3] clip-anytorch==2.5.2
[pip3] mypy-extensions==1.0.0
[pip3] numpy==1.23.5
[pip3] onnx==1.14.0
[pip3] onnxruntime==1.16.3
[pip3] onnxruntime-gpu==1.16.3
[pip3] open-clip-torch==2.20.0
[pip3] torch==2.1.2
[pip3] triton==2.1.0
[conda] numpy                     1.23.5                   pypi_0    pypi
"""

GPU_ONLY = BOTH.replace("[pip3] onnxruntime==1.16.3\n", "")


def test_catalogue_has_the_onnxruntime_facts():
    assert CATALOGUE["pkg.onnxruntime"][0] == "str"
    assert CATALOGUE["pkg.onnxruntime_gpu"][0] == "str"


def test_collect_env_reads_both_distributions():
    facts = collect_env.parse(BOTH).facts
    assert facts["pkg.onnxruntime"] == "1.16.3"
    assert facts["pkg.onnxruntime_gpu"] == "1.16.3"
    # onnx itself is a different package and must not be mistaken for the runtime
    assert facts.get("pkg.onnxruntime") != "1.14.0"


def test_collect_env_gpu_only():
    facts = collect_env.parse(GPU_ONLY).facts
    assert "pkg.onnxruntime" not in facts
    assert facts["pkg.onnxruntime_gpu"] == "1.16.3"


def test_the_kb_entry_fires_on_the_parsed_dump_and_not_on_the_gpu_only_one():
    from diagnostics.kb import load_kb
    from diagnostics.matcher import TRUE, evaluate_entry

    kb = load_kb()
    entry = next(e for e in kb.entries if e.id == "onnxruntime-gpu-provider-unavailable")
    assert evaluate_entry(entry, collect_env.parse(BOTH).facts, "").value == TRUE
    assert evaluate_entry(entry, collect_env.parse(GPU_ONLY).facts, "").value != TRUE
