"""The test generation: real children, real torch/transformers on the CPU, real failures.

Every generation here runs child.py in a separate interpreter through the runner, exactly as the doctor
does; nothing is mocked.  Failures are provoked for real: a truncated weights file, a deleted tokenizer, a
config too large for any machine, a child stopped (hang) or killed by a signal from inside itself (through
a sitecustomize.py put on the child's PYTHONPATH), and a host allocation refused by an address-space limit.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from diagnostics import facts as factcat
from diagnostics.generation import CONTRACT_KEYS, assemble, render_text, run_generation
from diagnostics.generation import child as gchild
from diagnostics.runner import ChildResult

pytest.importorskip("torch")
pytest.importorskip("transformers")

PY = sys.executable
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the config.json shapes of two real models; the exact counts are what transformers builds for them
# (asserted against models on the meta device below), matching their published sizes of 1.1 B and 0.49 B
TINYLLAMA_CONFIG = {  # TinyLlama-1.1B shape: 1,100,048,384 parameters
    "model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
    "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000, "tie_word_embeddings": False,
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
}
QWEN2_05B_CONFIG = {  # Qwen2-0.5B shape: 494,032,768 parameters (tied embeddings, q/k/v biases)
    "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
    "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True,
    "max_position_embeddings": 32768,
}
HUGE_CONFIG = {  # no real model: sized so that no test machine can hold it (about 3.4 T parameters)
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32768,
    "intermediate_size": 131072, "num_hidden_layers": 256, "num_attention_heads": 256,
    "num_key_value_heads": 32, "vocab_size": 128256, "tie_word_embeddings": False,
}


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("gen-cache")
    res = subprocess.run([PY, gchild.__file__, "--cache-dir", str(d), "--build-only"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return str(d)


@pytest.fixture(scope="session")
def builtin_model(cache_dir):
    path = gchild.builtin_dir(cache_dir, "tiny")
    assert gchild.check_builtin(path) is None
    return path


def _copy_model(src: str, dst) -> str:
    out = os.path.join(str(dst), "model")
    shutil.copytree(src, out)
    return out


def _sitecustomize(tmp_path, body: str) -> dict[str, str]:
    d = tmp_path / "site"
    d.mkdir()
    (d / "sitecustomize.py").write_text(textwrap.dedent(body))
    return {"PYTHONPATH": str(d)}


# ------------------------------------------------------------------------------------------ real generation


def test_cpu_generation_with_builtin_model(cache_dir):
    stages: list[str] = []
    g = run_generation(PY, device="cpu", max_new_tokens=12, timeout=240, progress=stages.append,
                       cache_dir=cache_dir)
    assert g["status"] == "ok", (g["error"], g["log"])
    for k in CONTRACT_KEYS:
        assert k in g
    assert g["device"] == "cpu" and g["model"] == "builtin:tiny"
    assert g["new_tokens"] == 12
    assert g["tokens_per_s"] > 0 and g["load_s"] > 0 and 0 < g["ttft_s"] < g["gen_s"]
    # tokens/s is what was measured: new tokens over the timed generate call
    assert g["tokens_per_s"] == pytest.approx(g["new_tokens"] / g["gen_s"])
    assert g["peak_rss_bytes"] > 50 * 1024 ** 2 and g["peak_gpu_bytes"] is None
    assert isinstance(g["text"], str) and g["text"].strip()
    assert g["dtype"] == "float32"
    assert set(g["param_devices"].values()) == {"cpu"}
    assert "lm_head.weight" in g["param_devices"]
    # the built-in model skips transformers' scikit-learn/SciPy imports (nothing imported them before it)
    assert g["skipped_imports"] == ["sklearn", "scipy"]
    f = g["facts"]
    assert f["gen.device"] == "cpu" and f["gen.ran"] is True and f["gen.offloaded"] is False
    assert f["gen.requested_device"] == "cpu" and f["gen.param_devices"] == ["cpu"]
    assert f["gen.estimate_exceeds_host"] is False
    assert "gen.oom" not in f and "gen.error" not in f
    assert factcat.clean_facts(f)[1] == []
    est = g["estimate"]
    assert est["params"] == est["params_from_config"] == gchild.params_from_safetensors(g["model_dir"])[0]
    assert est["total_bytes"] == f["gen.estimate_bytes"] and f["gen.params"] == est["params"]
    # progress arrived while it ran, in order
    joined = " | ".join(stages)
    assert joined.index("loading") < joined.index("warming up") < joined.index("generating")
    # greedy decoding on fixed random weights: the same text twice
    g2 = run_generation(PY, device="cpu", max_new_tokens=12, timeout=240, cache_dir=cache_dir,
                        compare_cpu=False)
    assert g2["text"] == g["text"]
    # transformers' package map (importlib.metadata.packages_distributions), where this transformers asks for it
    # at import (5.17 does, 5.25 only when a name is not a distribution's), is read back from the cache
    assert g2.get("package_map") == ("cached" if g.get("package_map") else None)
    assert "cpu" in render_text(g) and "tokens/s" in render_text(g)


def test_auto_without_gpu_uses_cpu_and_cuda_request_is_a_finding(cache_dir):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    g = run_generation(PY, device="cuda", max_new_tokens=4, timeout=240, cache_dir=cache_dir)
    assert g["status"] == "fail" and g["error_kind"] == "no-gpu"
    assert "is_available() is False" in g["error"]
    assert g["facts"]["gen.error_kind"] == "no-gpu" and g["facts"]["gen.ran"] is False


def test_cli_generate_json_and_text(cache_dir):
    env = dict(os.environ, GPU_DOCTOR_CACHE_DIR=cache_dir)
    res = subprocess.run([PY, "-m", "diagnostics", "generate", "--json", "--max-new-tokens", "6",
                          "--device", "cpu", "--python", PY], capture_output=True, text=True, cwd=ROOT,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    for k in CONTRACT_KEYS:
        assert k in out
    assert out["device"] == "cpu" and out["new_tokens"] == 6 and out["tokens_per_s"] > 0
    assert "generate: loading" in res.stderr          # progress goes to stderr
    res = subprocess.run([PY, "-m", "diagnostics", "generate", "--max-new-tokens", "4", "--device", "cpu"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Test generation: ok" in res.stdout and "tokens/s" in res.stdout


# ------------------------------------------------------------------------------------------ the estimate


@pytest.mark.parametrize("cfg,expected", [(TINYLLAMA_CONFIG, 1_100_048_384), (QWEN2_05B_CONFIG, 494_032_768)])
def test_params_from_config_match_published_counts(cfg, expected):
    assert gchild.params_from_config(cfg) == expected


@pytest.mark.parametrize("cfg", [TINYLLAMA_CONFIG, QWEN2_05B_CONFIG,
                                 dict(QWEN2_05B_CONFIG, model_type="qwen3", head_dim=64,
                                      tie_word_embeddings=False),
                                 dict(TINYLLAMA_CONFIG, model_type="mistral", num_hidden_layers=3)])
def test_params_from_config_match_transformers_on_meta_device(cfg):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    c = AutoConfig.for_model(**cfg)
    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(c)
    n = sum(p.numel() for p in m.parameters())       # tied weights are counted once by parameters()
    assert gchild.params_from_config(cfg) == n


def test_estimate_arithmetic():
    e = gchild.estimate_footprint(TINYLLAMA_CONFIG, "bfloat16", 48, "cuda")
    assert e["weights_bytes"] == 1_100_048_384 * 2
    # K and V: 2 x 22 layers x 4 kv heads x 64 head dim x 48 tokens x 2 bytes
    assert e["kv_cache_bytes"] == 2 * 22 * 4 * 64 * 48 * 2 == 1_081_344
    assert e["activations_bytes"] == int(32000 * 48 * 4 + 0.05 * e["weights_bytes"])
    assert e["runtime_bytes"] == gchild.GPU_RUNTIME_RESERVE
    assert e["total_bytes"] == e["weights_bytes"] + e["kv_cache_bytes"] + e["activations_bytes"] + e["runtime_bytes"]
    f32 = gchild.estimate_footprint(TINYLLAMA_CONFIG, "float32", 48, "cpu")
    assert f32["weights_bytes"] == 2 * e["weights_bytes"] and f32["kv_cache_bytes"] == 2 * e["kv_cache_bytes"]
    assert f32["runtime_bytes"] == gchild.HOST_RUNTIME_RESERVE
    # a multimodal config nests the language model under text_config
    nested = {"model_type": "llava", "text_config": dict(TINYLLAMA_CONFIG)}
    assert gchild.params_from_config(nested) == 1_100_048_384
    with pytest.raises(ValueError):
        gchild.params_from_config({"model_type": "llama"})


def test_safetensors_header_count_matches_the_built_model(builtin_model):
    import torch
    from transformers import AutoModelForCausalLM
    n, nbytes = gchild.params_from_safetensors(builtin_model)
    m = AutoModelForCausalLM.from_pretrained(builtin_model, dtype=torch.float32)
    assert n == sum(p.numel() for p in m.parameters())
    assert nbytes == 4 * n
    with open(os.path.join(builtin_model, "config.json")) as f:
        assert gchild.params_from_config(json.load(f)) == n


# ------------------------------------------------------------------------------------------ failures


def test_model_too_large_is_a_finding_without_loading(tmp_path, cache_dir):
    d = tmp_path / "huge"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(HUGE_CONFIG))
    t0 = time.monotonic()
    g = run_generation(PY, model=str(d), device="cpu", max_new_tokens=8, timeout=120, cache_dir=cache_dir)
    assert time.monotonic() - t0 < 60
    assert g["status"] == "fail" and g["error_kind"] == "too-large"
    f = g["facts"]
    assert f["gen.estimate_exceeds_host"] is True and f["gen.ran"] is False
    assert f["gen.estimate_bytes"] > 6 * 10 ** 12
    assert g["estimate"]["params_source"] == "config.json"
    assert "exceeds available host memory" in g["error"]
    assert any("exceeds" in e["excerpt"] for e in g["evidence"])
    assert g["load_s"] is None and g["new_tokens"] is None       # nothing was loaded or generated


def test_corrupt_weights_header(tmp_path, builtin_model, cache_dir):
    m = _copy_model(builtin_model, tmp_path)
    with open(os.path.join(m, "model.safetensors"), "r+b") as f:
        f.truncate(5)
    g = run_generation(PY, model=m, device="cpu", max_new_tokens=4, timeout=120, cache_dir=cache_dir)
    assert g["status"] == "fail" and g["error_kind"] == "model-corrupt"
    assert "unreadable" in g["error"] and g["facts"]["gen.error_kind"] == "model-corrupt"


def test_corrupt_weights_data(tmp_path, builtin_model, cache_dir):
    m = _copy_model(builtin_model, tmp_path)
    p = os.path.join(m, "model.safetensors")
    with open(p, "r+b") as f:
        f.truncate(os.path.getsize(p) // 2)           # header intact, tensors cut off
    g = run_generation(PY, model=m, device="cpu", max_new_tokens=4, timeout=120, cache_dir=cache_dir)
    assert g["status"] == "fail" and g["error_kind"] == "load-failed", g["error"]
    assert g["facts"]["gen.ran"] is False


def test_corrupt_config(tmp_path, builtin_model, cache_dir):
    m = _copy_model(builtin_model, tmp_path)
    with open(os.path.join(m, "config.json"), "w") as f:
        f.write('{"model_type": "llama", "hidden_size": ')
    g = run_generation(PY, model=m, device="cpu", max_new_tokens=4, timeout=120, cache_dir=cache_dir)
    assert g["error_kind"] == "model-corrupt" and "config.json" in g["error"]


def test_not_a_model_directory(tmp_path, cache_dir):
    g = run_generation(PY, model=str(tmp_path), device="cpu", max_new_tokens=4, timeout=120, cache_dir=cache_dir)
    assert g["error_kind"] == "model-corrupt" and "no config.json" in g["error"]
    g = run_generation(PY, model=str(tmp_path / "nowhere"), device="cpu", max_new_tokens=4, timeout=120,
                       cache_dir=cache_dir)
    assert g["error_kind"] == "model-not-found"


def test_model_id_not_in_cache_is_never_downloaded(tmp_path, cache_dir):
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_CACHE": str(tmp_path / "hf" / "hub")}
    g = run_generation(PY, model="someorg/some-model-that-is-not-cached", device="cpu", max_new_tokens=4,
                       timeout=120, cache_dir=cache_dir, env=env)
    assert g["error_kind"] == "model-not-found"
    assert "never downloads" in g["error"]
    assert not os.path.exists(tmp_path / "hf" / "hub" / "models--someorg--some-model-that-is-not-cached" / "snapshots")


def test_missing_tokenizer(tmp_path, builtin_model, cache_dir):
    m = _copy_model(builtin_model, tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        p = os.path.join(m, name)
        if os.path.exists(p):
            os.remove(p)
    g = run_generation(PY, model=m, device="cpu", max_new_tokens=4, timeout=120, cache_dir=cache_dir)
    assert g["status"] == "fail" and g["error_kind"] == "tokenizer-missing", g["error"]
    assert g["facts"]["gen.error"].startswith("no usable tokenizer")


def test_corrupt_builtin_cache_is_rebuilt(tmp_path, builtin_model):
    cache = tmp_path / "cache"
    dst = gchild.builtin_dir(str(cache), "tiny")
    shutil.copytree(builtin_model, dst)
    with open(os.path.join(dst, "model.safetensors"), "r+b") as f:
        f.seek(-16, 2)
        f.write(b"\xff" * 16)                          # same size, wrong bytes
    assert "checksum" in gchild.check_builtin(dst)
    g = run_generation(PY, device="cpu", max_new_tokens=4, timeout=240, cache_dir=str(cache), compare_cpu=False)
    assert g["status"] == "ok", g["error"]
    assert any("built the built-in tiny model" in n and "checksum" in n for n in g["notes"])
    assert gchild.check_builtin(dst) is None


def test_child_killed_by_sigkill_reads_as_host_oom(tmp_path, cache_dir):
    # the child kills itself with SIGKILL once transformers is imported, like the OOM killer would
    env = _sitecustomize(tmp_path, """
        import os, signal, sys, threading, time
        def _watch():
            while "transformers.models.auto" not in sys.modules:
                time.sleep(0.01)
            time.sleep(0.2)
            os.kill(os.getpid(), signal.SIGKILL)
        threading.Thread(target=_watch, daemon=True).start()
    """)
    g = run_generation(PY, device="cpu", max_new_tokens=4, timeout=120, cache_dir=cache_dir, env=env)
    assert g["status"] == "crashed" and g["child"]["signal"] == "SIGKILL"
    assert g["facts"]["gen.oom"] == "host" and g["error_kind"] == "oom-host"
    assert "out-of-memory killer" in g["error"]
    # what it sent before dying survived
    assert g["facts"]["gen.requested_device"] == "cpu" and g["last_stage"] is not None
    assert g["facts"]["gen.ran"] is False


def test_child_segfault_is_a_crash_not_an_oom(tmp_path, cache_dir):
    env = _sitecustomize(tmp_path, """
        import os, signal, sys, threading, time
        def _watch():
            while "torch" not in sys.modules:
                time.sleep(0.01)
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGSEGV)
        threading.Thread(target=_watch, daemon=True).start()
    """)
    g = run_generation(PY, device="cpu", max_new_tokens=4, timeout=120, cache_dir=cache_dir, env=env)
    assert g["status"] == "crashed" and g["child"]["signal"] == "SIGSEGV"
    assert "gen.oom" not in g["facts"] and g["error_kind"] == "crashed"
    assert "SIGSEGV" in g["facts"]["gen.error"]


def test_hanging_child_times_out_with_partial_output(tmp_path, cache_dir):
    # the child stops itself (SIGSTOP) after importing torch: a hang that no signal handler can answer
    env = _sitecustomize(tmp_path, """
        import os, signal, sys, threading, time
        def _watch():
            while "transformers" not in sys.modules:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGSTOP)
        threading.Thread(target=_watch, daemon=True).start()
    """)
    t0 = time.monotonic()
    g = run_generation(PY, device="cpu", max_new_tokens=4, timeout=15, cache_dir=cache_dir, env=env)
    assert time.monotonic() - t0 < 40
    assert g["status"] == "timeout" and g["error_kind"] == "timeout"
    assert g["facts"]["gen.requested_device"] == "cpu"       # sent before the hang
    assert "did not finish within 15 s" in g["error"]


def test_host_allocation_refused_is_host_oom(tmp_path, builtin_model, cache_dir):
    # a real refused allocation: the address-space limit is lowered just before the weights are loaded
    env = _sitecustomize(tmp_path, """
        import builtins, resource, sys
        _orig_import = builtins.__import__
        def _imp(name, *a, **k):
            mod = _orig_import(name, *a, **k)
            if name == "transformers" and a and a[2] and "AutoModelForCausalLM" in a[2]:
                with open("/proc/self/status") as f:
                    vm = [int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:")][0]
                resource.setrlimit(resource.RLIMIT_AS, (vm + 8 * 1024 * 1024, resource.RLIM_INFINITY))
            return mod
        builtins.__import__ = _imp
    """)
    # the built-in model's files as a user's model directory: loaded through the Auto class, which imports the
    # model code inside from_pretrained, under the limit (builtin:tiny goes through its concrete classes)
    g = run_generation(PY, device="cpu", max_new_tokens=4, timeout=120, cache_dir=cache_dir, env=env,
                       compare_cpu=False, model=builtin_model)
    assert g["status"] in ("fail", "crashed"), g
    assert g["facts"].get("gen.oom") == "host", (g["error"], g["log"][-2000:])


# ------------------------------------------------------------------------------------------ assembling reports


def _res(rc=0, sig=None, timed_out=False, stderr=""):
    return ChildResult(["python", "child.py"], rc, sig, timed_out, 1.0, "", stderr)


def test_assemble_gpu_oom_on_load():
    msg = ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacity of "
           "15.98 GiB of which 1.02 GiB is free.")
    recs = [{"fact": "gen.requested_device", "value": "auto"}, {"progress": "loading"},
            {"fact": "gen.oom", "value": "gpu"}, {"evidence": {"source": "generation (load)", "excerpt": msg}},
            {"fact": "gen.error", "value": msg}, {"error": msg, "kind": "oom-gpu"}]
    g = assemble(recs, _res(rc=1))
    assert g["status"] == "fail" and g["facts"]["gen.oom"] == "gpu" and g["facts"]["gen.error_kind"] == "oom-gpu"
    assert g["evidence"][0]["excerpt"] == msg and g["last_stage"] == "loading"


def test_assemble_slow_gpu_and_offload_are_warnings():
    result = {"status": "ok", "device": "mixed", "tokens_per_s": 3.0, "cpu_tokens_per_s": 6.0,
              "gpu_vs_cpu_ratio": 0.5, "target_device": "cuda", "new_tokens": 8}
    recs = [{"fact": "gen.device", "value": "mixed"}, {"fact": "gen.offloaded", "value": True},
            {"fact": "gen.params", "value": 1_034_000_000},
            {"fact": "gen.gpu_vs_cpu_ratio", "value": 0.5}, {"result": result}]
    g = assemble(recs, _res())
    assert g["status"] == "warn" and len(g["warnings"]) == 2
    assert g["facts"]["gen.ran"] is True and g["facts"]["gen.gpu_vs_cpu_ratio"] == 0.5
    fast = dict(result, device="cuda", gpu_vs_cpu_ratio=12.0)
    g = assemble([{"fact": "gen.device", "value": "cuda"}, {"result": fast}], _res())
    assert g["status"] == "ok" and g["warnings"] == []


def test_assemble_does_not_judge_speed_on_a_tiny_model():
    # a healthy GPU is launch-bound on a 0.1 M-parameter model and may well be slower than the CPU
    result = {"status": "ok", "device": "cuda", "tokens_per_s": 300.0, "cpu_tokens_per_s": 900.0,
              "gpu_vs_cpu_ratio": 1 / 3, "target_device": "cuda", "new_tokens": 8}
    recs = [{"fact": "gen.device", "value": "cuda"}, {"fact": "gen.params", "value": 111_296},
            {"fact": "gen.gpu_vs_cpu_ratio", "value": 0.333}, {"result": result}]
    g = assemble(recs, _res())
    assert g["status"] == "ok" and g["warnings"] == []
    assert any("too small to judge" in n for n in g["notes"])
    assert g["facts"]["gen.gpu_vs_cpu_ratio"] == 0.333          # the measurement itself is kept


def test_assemble_exit_without_result_keeps_the_stderr_tail():
    g = assemble([], _res(rc=1, stderr="Traceback (most recent call last):\nImportError: libamdhip64.so.6: "
                                     "cannot open shared object file: No such file or directory\n"))
    assert g["status"] == "fail" and "libamdhip64.so.6" in g["error"]
    assert "libamdhip64.so.6" in g["log"] and g["evidence"]


def test_offloaded_parameters_are_named_after_the_device_map():
    import torch
    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    with torch.device("meta"):
        net[1] = torch.nn.Linear(2, 2)                    # what accelerate leaves for an offloaded module
    hf_map = {"0": 0, "1": "cpu"}
    devmap = gchild.param_device_map(net, hf_map)
    assert devmap == {"0.weight": "cpu", "0.bias": "cpu", "1.weight": "cpu (offloaded)", "1.bias": "cpu (offloaded)"}
    dev, kinds, offloaded = gchild.summarize_devices({"a": "cuda:0", "b": "cpu (offloaded)"}, {"x": 0, "y": "cpu"})
    assert (dev, kinds, offloaded) == ("mixed", ["cpu", "cuda"], True)
    assert gchild.summarize_devices({"a": "cuda:0"}, {"": 0}) == ("cuda", ["cuda"], False)
    assert gchild.summarize_devices({"a": "cpu"}, None) == ("cpu", ["cpu"], False)


def test_assemble_puts_protocol_errors_into_the_log_for_the_matcher():
    msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.89 GiB."
    g = assemble([{"evidence": {"source": "generation (load)", "excerpt": msg}}, {"error": msg, "kind": "oom-gpu"}],
                 _res(rc=1, stderr="some warning\n"))
    assert g["log"] == "some warning\n" + msg             # once, after stderr
    assert g["summary"].startswith("oom-gpu: torch.OutOfMemoryError")
    ok = assemble([{"result": {"status": "ok", "device": "cpu", "new_tokens": 8, "tokens_per_s": 100.0}}], _res())
    assert ok["summary"] == "8 tokens on cpu at 100.0 tokens/s" and ok["log"] == ""


def test_interpreter_without_torch_is_a_clear_finding(tmp_path, cache_dir):
    import venv
    venv.create(tmp_path / "bare", with_pip=False)          # a real interpreter with no torch in it
    py = str(tmp_path / "bare" / "bin" / "python")
    g = run_generation(py, device="cpu", max_new_tokens=4, timeout=60, cache_dir=cache_dir)
    assert g["status"] == "fail" and g["error_kind"] == "import-failed"
    assert "cannot import" in g["error"] and "torch" in g["error"]


def test_missing_interpreter_is_a_start_failure(cache_dir):
    g = run_generation("/nonexistent/python3", device="cpu", timeout=30, cache_dir=cache_dir)
    assert g["status"] == "fail" and g["error_kind"] == "start-failed" and "not found" in g["error"]


def test_slow_generation_is_cut_short_to_report_before_the_time_limit(tmp_path, cache_dir):
    # every forward pass of the model is slowed to 0.25 s (a crawling device); the limit is 40 s
    env = _sitecustomize(tmp_path, """
        import sys, threading, time
        def _watch():
            name = "transformers.models.llama.modeling_llama"
            while name not in sys.modules or not hasattr(sys.modules[name], "LlamaForCausalLM"):
                time.sleep(0.005)
            cls = sys.modules[name].LlamaForCausalLM
            fwd = cls.forward
            def slow(self, *a, **k):
                time.sleep(0.25)
                return fwd(self, *a, **k)
            cls.forward = slow
        threading.Thread(target=_watch, daemon=True).start()
    """)
    t0 = time.monotonic()
    g = run_generation(PY, device="cpu", max_new_tokens=400, timeout=40, cache_dir=cache_dir, env=env,
                       compare_cpu=False)
    assert time.monotonic() - t0 < 40
    assert g["status"] == "ok", (g["error"], g["log"][-2000:])
    assert 1 <= g["new_tokens"] < 400
    assert g["tokens_per_s"] < 5                            # the slowness is measured, not hidden
    assert any("cut short" in n for n in g["notes"])
