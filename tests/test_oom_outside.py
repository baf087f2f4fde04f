"""oom.outside_torch_*: GPU memory in use outside the failing process's PyTorch allocator, from the error's figures."""
from diagnostics.parsers import oom

GIB = 1 << 30
MIB = 1 << 20


def test_old_layout_reserved_in_total():
    # a 7.9 GiB GPU where this PyTorch holds 86 MiB and 25 MiB are free: the rest is held elsewhere
    f = oom.parse("RuntimeError: CUDA out of memory. Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total capacity; "
                  "69.17 MiB already allocated; 24.56 MiB free; 86.00 MiB reserved in total by PyTorch)")
    assert f["oom.reserved_bytes"] == 86 * MIB
    assert f["oom.outside_torch_fraction"] > 0.95 and f["oom.outside_torch_bytes"] > 7 * GIB


def test_details_without_the_first_words_still_read():
    # a paste that starts at "Tried to allocate" (the "CUDA out of memory." part cut off or on the line before)
    f = oom.parse("cuda out of memory가 발생합니다.\nTried to allocate 216.00 MiB (GPU 0; 7.92 GiB total capacity; "
                  "69.17 MiB already allocated; 24.56 MiB free; 86.00 MiB reserved in total by PyTorch) If reserved...")
    assert "oom.api" not in f and f["oom.outside_torch_fraction"] > 0.95
    assert oom.parse("Tried to allocate memory for the cache") == {}


def test_this_process_holds_it_all():
    f = oom.parse("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; "
                  "9.50 GiB already allocated; 3.06 MiB free; 9.66 GiB reserved in total by PyTorch)")
    assert f["oom.outside_torch_fraction"] < 0.15


def test_torch_1_0_cached_layout():
    # "cached" was what the allocator held beyond the allocated memory
    f = oom.parse("RuntimeError: CUDA out of memory. Tried to allocate 4.46 GiB (GPU 0; 7.93 GiB total capacity; "
                  "4.72 GiB already allocated; 2.41 GiB free; 11.21 MiB cached)")
    assert abs(f["oom.reserved_bytes"] - (4.72 * GIB + 11.21 * MIB)) < MIB
    assert f["oom.outside_torch_fraction"] < 0.15


def test_new_layout_needs_the_this_process_part():
    # >= 2.1 with "this process": its non-PyTorch memory counts as its own
    f = oom.parse("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity "
                  "of 23.65 GiB of which 3.06 MiB is free. Including non-PyTorch memory, this process has 23.63 GiB "
                  "memory in use. Of the allocated memory 22.99 GiB is allocated by PyTorch, and 199.06 MiB is reserved "
                  "by PyTorch but unallocated.")
    assert f["oom.reserved_bytes"] > 23 * GIB and f["oom.outside_torch_fraction"] < 0.01
    # without it (ROCm builds, another pid namespace) this process's library workspaces cannot be told apart
    f = oom.parse("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 4.50 GiB. GPU 0 has a total capacity of "
                  "15.98 GiB of which 1.40 GiB is free. Of the allocated memory 1.26 GiB is allocated by PyTorch, and "
                  "152.50 MiB is reserved by PyTorch but unallocated.")
    assert "oom.reserved_bytes" in f and "oom.outside_torch_fraction" not in f


# --- nvidia-smi's table: memory its own process list does not account for -----------------------------------

from diagnostics.parsers import nvidia_smi  # noqa: E402

_HEAD = """+-----------------------------------------------------------------------------+
| NVIDIA-SMI 410.48                 Driver Version: 410.48                    |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla P100-SXM2...  Off  | 00000000:05:00.0 Off |                    0 |
| N/A   36C    P0    41W / 300W |  12799MiB / 16280MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                       GPU Memory |
|  GPU       PID   Type   Process name                             Usage      |
|=============================================================================|
"""
_END = "+-----------------------------------------------------------------------------+\n"


def test_smi_table_empty_process_list():   # CrossE#2
    f = nvidia_smi.parse(_HEAD + _END).facts
    assert f["gpu.unlisted_mem_bytes"] == 12799 * MIB and abs(f["gpu.unlisted_mem_fraction"] - 0.7862) < 1e-3
    f = nvidia_smi.parse(_HEAD + "|  No running processes found                                                 |\n" + _END).facts
    assert f["gpu.unlisted_mem_bytes"] == 12799 * MIB


def test_smi_table_listed_processes_account_for_it():
    rows = ("|    0     21467      C   python                                     12700MiB |\n"
            "|    0   N/A  N/A      1840      G   /usr/lib/xorg/Xorg                    90MiB |\n")
    f = nvidia_smi.parse(_HEAD + rows + _END).facts
    assert f["gpu.unlisted_mem_bytes"] == 9 * MIB


def test_smi_table_unknown_when_memory_not_shown_or_list_cut():
    # Windows WDDM prints N/A per process; a paste cut inside the list says nothing about the rest
    f = nvidia_smi.parse(_HEAD + "|    0     21467    C+G   ...\\app.exe                                    N/A      |\n" + _END).facts
    assert "gpu.unlisted_mem_bytes" not in f
    f = nvidia_smi.parse(_HEAD).facts
    assert "gpu.unlisted_mem_bytes" not in f


def test_message_hard_wrapped_by_the_paste_is_read_whole():
    # Med-ChatGLM#11: the old one-line message wrapped over five lines; the joined run gives every figure
    from diagnostics.matcher import oom_facts
    text = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB (GPU 0; 39.56\n"
            "GiB total capacity; 37.88 GiB already allocated; 32.56 MiB free; 38.21 GiB \n"
            "reserved in total by PyTorch) If reserved memory is >> allocated memory try \n"
            "setting max_split_size_mb to avoid fragmentation.  See documentation for Memory \n"
            "Management and PYTORCH_CUDA_ALLOC_CONF\n")
    f = oom_facts([("log", text)], {})
    assert abs(f["oom.reserved_bytes"] - 38.21 * GIB) < MIB
    assert f["oom.outside_torch_fraction"] < 0.1   # this process held nearly all of the 40 GB card


def test_the_scan_hands_its_joined_runs_to_oom_facts(monkeypatch):
    """A match joins a log's wrapped runs once: the scan's appendix is what oom_facts reads, with the same facts
    as joining them again."""
    from diagnostics import matcher
    from diagnostics.kb import load_kb
    text = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB (GPU 0; 39.56\n"
            "GiB total capacity; 37.88 GiB already allocated; 32.56 MiB free; 38.21 GiB \n"
            "reserved in total by PyTorch) If reserved memory is >> allocated memory try \n"
            "setting max_split_size_mb to avoid fragmentation.  See documentation for Memory \n"
            "Management and PYTORCH_CUDA_ALLOC_CONF\n")
    alone = matcher.oom_facts([("log", text)], {})
    calls = []
    real = matcher.joined_wraps
    monkeypatch.setattr(matcher, "joined_wraps", lambda *a, **k: calls.append(1) or real(*a, **k))
    res = matcher.Matcher(load_kb()).match(logs=[("log", text)])
    assert len(calls) == 1
    assert {k: v for k, v in res["facts_from_logs"].items() if k.startswith("oom.")} == alone
