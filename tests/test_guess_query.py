"""What a pasted log's guesses are ranked on: the user's words, not the field values of a dump pasted with them."""
from __future__ import annotations

from diagnostics.service import diagnose_text
from diagnostics.symptoms import without_label_tables

COLLECT_ENV = """PyTorch version: 2.5.1+rocm6.2
Is debug build: False
CUDA used to build PyTorch: N/A
ROCM used to build PyTorch: 6.2.41133-dd7f95766

OS: Ubuntu 24.04.1 LTS (x86_64)
GCC version: (Ubuntu 13.2.0-23ubuntu4) 13.2.0
Python platform: Linux-6.8.0-49-generic-x86_64-with-glibc2.39
Is CUDA available: True
GPU models and configuration: AMD Radeon RX 6600 (gfx1032)
HIP runtime version: 6.2.41133
"""


def test_a_run_of_label_lines_is_a_table_and_leaves_the_query():
    text = "my sd webui is very slow and uses the cpu\n" + COLLECT_ENV
    assert without_label_tables(text).strip() == "my sd webui is very slow and uses the cpu"


def test_a_single_label_line_is_still_the_users():
    text = "Note: the fans spin up but nothing renders\nI reinstalled the driver twice"
    assert without_label_tables(text) == text


def test_a_pasted_collect_env_gives_its_cause_and_no_guesses_from_its_field_values():
    res = diagnose_text(logs=[("paste", COLLECT_ENV)])
    assert [d["id"] for d in res["diagnoses"]][:1] == ["hip-no-binary-for-gpu"]
    assert res["possible"] == [], [(p["id"], p["evidence"]) for p in res["possible"]]


def test_the_users_words_beside_a_dump_still_give_guesses():
    res = diagnose_text(logs=[("paste", "the generated images are completely black, only with --no-half it works\n"
                                         + COLLECT_ENV)])
    assert "fp16-nan-or-black-output" in [p["id"] for p in res["possible"]] + [d["id"] for d in res["diagnoses"]]


def test_a_healthy_check_gets_no_guesses_from_its_printed_values():
    # the checks guides ask for, healthy: nvidia-smi -L, rocm-smi's per-card lines and a check's bare True / 1
    nv = ('$ echo $CUDA_VISIBLE_DEVICES\n0\n$ nvidia-smi -L\nGPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-5a1c2b3d)\n'
          '$ python -c "import torch; print(torch.cuda.is_available())"\nTrue\n')
    amd = ('$ rocm-smi --showproductname\nGPU[0]\t\t: Card Series: \t\tNavi 31 [Radeon RX 7900 XT/7900 XTX]\n'
           'GPU[1]\t\t: Card Series: \t\tNavi 31 [Radeon RX 7900 XT/7900 XTX]\n'
           '$ python -c "import torch; print(torch.cuda.device_count(), torch.cuda.get_device_capability())"\n2\n(11, 0)\n')
    for text in (nv, amd):
        res = diagnose_text(logs=[("check.txt", text)])
        assert res["possible"] == [] and res["verdict"] != "problems", [p["id"] for p in res["possible"]]
    # the user's sentence beside them still counts
    res = diagnose_text(logs=[("check.txt", "generation is very slow, the gpu stays at 0% usage\n" + nv)])
    assert res["possible"]
