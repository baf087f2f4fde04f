"""The GPU pre-warm of the test generation (issue 19, round 6): what it runs, when it runs, and that it never
touches what is measured.  The kernels are run on the CPU here (the same code, device="cpu")."""
from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "diagnostics" / "generation"))
import child  # noqa: E402

torch = pytest.importorskip("torch")

TINY = {"model_type": "llama", "vocab_size": 515, "tie_word_embeddings": False,
        **child.BUILTIN_SIZES["tiny"]}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_prewarm_runs_a_llama_shaped_generation(dtype):
    out = child.prewarm_gpu(torch, TINY, dtype, prompt_len=16, new_tokens=4, device="cpu")
    assert set(out) == {"prewarm_s"} and out["prewarm_s"] >= 0


def test_prewarm_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    child.prewarm_gpu(torch, TINY, "float32", new_tokens=2, device="cpu")
    assert torch.equal(torch.rand(3), want)


def _plan(device="cuda", display="builtin:tiny", params=200_000):
    return child.Plan(model_dir="", display=display, cfg=TINY, params=params, seq_len=48, est={}, device=device,
                      dtype="bfloat16")


def test_prewarm_only_for_the_small_builtin_model_on_a_gpu(monkeypatch):
    started = []
    monkeypatch.setattr(child, "_Prewarm", lambda *a: started.append(a) or "thread")
    args = types.SimpleNamespace(max_new_tokens=32)
    assert child.start_prewarm(args, torch, _plan(device="cpu")) is None
    assert child.start_prewarm(args, torch, _plan(display="/models/mine")) is None
    assert child.start_prewarm(args, torch, _plan(display="builtin:1b", params=1_010_000_000)) is None
    monkeypatch.setenv("GPU_DOCTOR_PREWARM", "0")
    assert child.start_prewarm(args, torch, _plan()) is None
    monkeypatch.delenv("GPU_DOCTOR_PREWARM")
    assert child.start_prewarm(args, torch, _plan()) == "thread" and len(started) == 1


def test_a_failing_prewarm_is_a_note_not_a_failure(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("CUDA error: no kernel image is available")

    monkeypatch.setattr(child, "prewarm_gpu", boom)
    p = child._Prewarm(torch, TINY, "bfloat16", 32)
    assert p.join() == {"prewarm_error": "RuntimeError: CUDA error: no kernel image is available"}


def test_transformers_is_imported_under_the_tokenizer_stage(tmp_path, monkeypatch):
    """The child's stage order: torch, device, model resolved, then transformers (stage "import") with the
    tokenizer's progress record, so a pre-warm can run beside the import."""
    pytest.importorskip("transformers")
    import io

    cache = tmp_path / "cache"
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM", "HF_HUB_DISABLE_PROGRESS_BARS"):
        monkeypatch.setenv(k, os.environ.get(k, "1" if k != "TOKENIZERS_PARALLELISM" else "false"))  # main() sets them
    monkeypatch.setattr(child, "bytecode_cache", lambda *a: None)    # never a prefix for the test process itself
    monkeypatch.setattr(child, "_out", io.StringIO())
    assert child.main(["--cache-dir", str(cache), "--build-only"]) == 0
    out = io.StringIO()
    monkeypatch.setattr(child, "_out", out)
    assert child.main(["--cache-dir", str(cache), "--device", "cpu", "--max-new-tokens", "2"]) == 0
    recs = [json.loads(ln[len(child.PREFIX):]) for ln in out.getvalue().splitlines()
            if ln.startswith(child.PREFIX)]
    stages = [r["progress"] for r in recs if "progress" in r]
    assert stages[:3] == ["importing torch", "resolving model", "loading tokenizer"]
    result = next(r["result"] for r in recs if "result" in r)
    assert list(result["stage_s"])[:5] == ["import_torch", "device", "resolve", "import", "tokenizer"]
    assert result["transformers_version"] and "prewarm_s" not in result     # the CPU: no pre-warm


# ------------------------------------------------------------------------------------ the bytecode cache

def _bytecode_case(tmp_path, monkeypatch, *, flag=True, prefix=None, pyc=False, opt_out=False):
    pkg = tmp_path / "site" / "transformers"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "modeling_utils.py").write_text("")
    if pyc:
        import importlib.util

        cached = Path(importlib.util.cache_from_source(str(pkg / "modeling_utils.py")))
        cached.parent.mkdir()
        cached.write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(child, "BYTECODE_WITNESSES", (("transformers", "modeling_utils.py"),))
    monkeypatch.delitem(sys.modules, "transformers", raising=False)
    import importlib
    importlib.invalidate_caches()
    monkeypatch.setattr(sys, "pycache_prefix", prefix)
    monkeypatch.setattr(sys, "dont_write_bytecode", flag)
    if opt_out:
        monkeypatch.setenv("GPU_DOCTOR_PYCACHE", "0")
    else:
        monkeypatch.delenv("GPU_DOCTOR_PYCACHE", raising=False)
    result: dict = {}
    child.bytecode_cache(str(tmp_path / "cache"), result)
    return result, sys.pycache_prefix, sys.dont_write_bytecode


def test_bytecode_cache_where_writing_is_forbidden_and_transformers_has_none(tmp_path, monkeypatch):
    result, prefix, dont = _bytecode_case(tmp_path, monkeypatch)
    assert prefix == str(tmp_path / "cache" / "pycache") and dont is False
    assert result == {"pycache_prefix": prefix,
                      "pycache_because": f"no bytecode for {tmp_path / 'site' / 'transformers' / 'modeling_utils.py'}"}


@pytest.mark.parametrize("case", [dict(flag=False), dict(prefix="/mine"), dict(pyc=True), dict(opt_out=True)])
def test_bytecode_left_as_the_user_has_it(tmp_path, monkeypatch, case):
    result, prefix, dont = _bytecode_case(tmp_path, monkeypatch, **case)
    assert result == {} and prefix == case.get("prefix") and dont is case.get("flag", True)


def test_cudnn_attention_is_left_out_and_the_answer_says_what_it_was():
    """cuDNN's SDPA builds a plan per sequence length (the H200's warm-up: 4.2 s with it, 0.6 s without): the
    generation turns that one backend off and records whether it was on; the other backends stay as they were."""
    cuda = torch.backends.cuda
    before = {n: getattr(cuda, f"{n}_sdp_enabled")() for n in ("cudnn", "flash", "mem_efficient", "math")}
    try:
        cuda.enable_cudnn_sdp(True)
        assert child.leave_out_cudnn_attention(torch) == "turned off"
        assert not cuda.cudnn_sdp_enabled()
        assert child.leave_out_cudnn_attention(torch) == "off already"
        assert [getattr(cuda, f"{n}_sdp_enabled")() for n in ("flash", "mem_efficient", "math")] == \
            [before[n] for n in ("flash", "mem_efficient", "math")]
        no_switch = types.SimpleNamespace(backends=types.SimpleNamespace(cuda=types.SimpleNamespace()))
        assert child.leave_out_cudnn_attention(no_switch) == "absent"

        def broken(_on):
            raise RuntimeError("odd build")
        odd = types.SimpleNamespace(backends=types.SimpleNamespace(cuda=types.SimpleNamespace(
            enable_cudnn_sdp=broken, cudnn_sdp_enabled=lambda: True)))
        assert child.leave_out_cudnn_attention(odd) == "left as it was (RuntimeError)"
    finally:
        cuda.enable_cudnn_sdp(before["cudnn"])


def test_unused_extras_are_skipped_for_the_builtin_model_only():
    """scikit-learn and SciPy (2.3 s of the H200's transformers import) are imported by transformers only for
    features the built-in model's greedy generation never reaches; their availability checks answer False there,
    while a user's model (builtin=False) keeps transformers' own answers."""
    def real():
        return True
    utils = types.SimpleNamespace(is_sklearn_available=real, is_scipy_available=real, is_torch_available=real)
    utils.import_utils = types.SimpleNamespace(is_sklearn_available=real, is_scipy_available=real)
    fake = types.SimpleNamespace(utils=utils)
    result: dict = {}
    saved = {k: sys.modules.pop(k) for k in ("sklearn", "scipy") if k in sys.modules}
    try:
        child.skip_unused_extras(fake, result)
        assert result["skipped_imports"] == ["sklearn", "scipy"]
        assert not utils.is_sklearn_available() and not utils.import_utils.is_scipy_available()
        assert utils.is_torch_available is real
        sys.modules["scipy"] = types.ModuleType("scipy")   # already imported: nothing to gain, left alone
        utils2 = types.SimpleNamespace(is_sklearn_available=real, is_scipy_available=real)
        child.skip_unused_extras(types.SimpleNamespace(utils=utils2), result)
        assert result["skipped_imports"] == ["sklearn"] and utils2.is_scipy_available is real
    finally:
        sys.modules.pop("scipy", None)
        sys.modules.update(saved)


def test_package_map_is_the_standard_librarys_answer_kept_until_sys_path_changes(tmp_path, monkeypatch):
    """importlib.metadata.packages_distributions() (2.1 s of transformers' import on the H200) is computed once,
    kept under the cache, read back while every sys.path directory is unchanged, and computed again after one
    changes (a distribution installed or removed)."""
    import importlib.metadata as md
    site = tmp_path / "site"
    (site / "demo_pkg-1.0.dist-info").mkdir(parents=True)
    (site / "demo_pkg-1.0.dist-info" / "METADATA").write_text("Name: demo-pkg\nVersion: 1.0\n")
    (site / "demo_pkg-1.0.dist-info" / "top_level.txt").write_text("demo_mod\n")
    monkeypatch.setattr(sys, "path", [str(site)])
    calls = []

    def real():
        calls.append(1)
        return {"demo_mod": ["demo-pkg"]}
    monkeypatch.setattr(md, "packages_distributions", real)
    cache = tmp_path / "cache"
    result: dict = {}
    child.cache_package_map(str(cache), result)
    assert md.packages_distributions is not real
    assert md.packages_distributions() == {"demo_mod": ["demo-pkg"]} and result["package_map"] == "computed"
    assert md.packages_distributions() == {"demo_mod": ["demo-pkg"]} and result["package_map"] == "cached"
    assert len(calls) == 1
    child.cache_package_map(str(cache), result)     # a second call does not wrap the wrapper
    (site / "other-2.0.dist-info").mkdir()            # an install: the directory's mtime moves on
    os.utime(site, ns=(1, 10 ** 18))
    md.packages_distributions()
    assert result["package_map"] == "computed" and len(calls) == 2


def test_the_real_package_map_round_trips_through_the_cache(tmp_path, monkeypatch):
    import importlib.metadata as md
    standard = getattr(md.packages_distributions, "__wrapped__", md.packages_distributions)   # unwrapped, even
    monkeypatch.setattr(md, "packages_distributions", standard)                              # after a run here
    want = standard()
    result: dict = {}
    child.cache_package_map(str(tmp_path), result)
    assert md.packages_distributions() == want and result["package_map"] == "computed"
    assert md.packages_distributions() == want and result["package_map"] == "cached"
