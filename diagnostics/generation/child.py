"""The test generation, run as a script by the *target* interpreter (``python child.py ...``).

This file must stay self-contained: standard library at import time; torch, transformers and tokenizers are
imported inside the functions that need them, and nothing from the ``diagnostics`` package is imported,
because the interpreter given by ``--python`` may have torch but none of the doctor's own dependencies.
(The parent imports the pure helpers below, ``estimate_footprint`` and friends, for its own use and tests.)

Protocol: every message to the parent is one line on stdout, ``@@DIAG `` followed by a JSON object:
  {"progress": "loading", ...}            what it is doing now
  {"fact": "gen.device", "value": "cuda"} a fact, sent as soon as it is established
  {"evidence": {"source": ..., "excerpt": ...}}
  {"error": "...", "kind": "oom-gpu"}     what stopped it
  {"result": {...}}                        the final figures
Everything is flushed at once, so whatever was sent survives a crash, a kill or a timeout of the child.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import shutil
import struct
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass

PREFIX = "@@DIAG "
BUILTIN_VERSION = 1
MARKER = "gpu-doctor-builtin.json"
GIB = 1024 ** 3
MIB = 1024 ** 2

# ---------------------------------------------------------------------------------------------------------
# protocol

_out = sys.stdout


def emit(obj: dict) -> None:
    _out.write(PREFIX + json.dumps(obj, default=str) + "\n")
    _out.flush()


def progress(stage: str, **extra) -> None:
    emit({"progress": stage, **extra})


def fact(name: str, value) -> None:
    emit({"fact": name, "value": value})


def evidence(source: str, excerpt: str) -> None:
    emit({"evidence": {"source": source, "excerpt": excerpt[-2000:]}})


class Stop(Exception):
    """A finding that ends the run: carries the error kind for the parent."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


# ---------------------------------------------------------------------------------------------------------
# the built-in model: text, sizes, building, checking

BUILTIN_TEXT = """\
The doctor looks at the machine before it looks at the model. It asks which driver is loaded, which
device nodes exist, which groups the running process holds, and which build of the framework was installed.
A GPU that is present but unreachable is a different illness from a GPU that is absent, and both differ
from a framework built for another vendor. The test generation is the last step: load a small causal
language model, place it on the device, and ask it for a few tokens. If the tokens come back, the stack
works end to end. If they come back slowly, the model may have been left on the processor, or split between
the processor and the accelerator. If loading fails, the memory estimate made before loading tells whether
the model could ever have fitted. Every number is measured in a child process, so that a crash of the
runtime becomes a finding instead of a crash of the doctor. Kernels, drivers, firmware and libraries each
carry a version; the versions must agree. Half precision halves the memory of the weights, and the cache of
keys and values grows with every generated token. Random weights produce random text, and that is fine:
the test is about the machine, not about the prose. 0 1 2 3 4 5 6 7 8 9 10 16 32 64 128 256 512 1024.
"""

# Llama-family configs.  "tiny" is the default test model (about 0.2 M parameters, fast anywhere);
# "1b" is about 1.01 B parameters (TinyLlama-like shape, vocabulary of the built-in tokenizer) for acceptance runs on a real GPU.
BUILTIN_SIZES = {
    "tiny": dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=512),
    "1b": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=23, num_attention_heads=32,
               num_key_value_heads=4, max_position_embeddings=2048),
}
BUILTIN_VOCAB = 512


def builtin_dir(cache_dir: str, size: str) -> str:
    return os.path.join(cache_dir, "models", f"builtin-{size}-v{BUILTIN_VERSION}")


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_builtin(path: str) -> str | None:
    """None when the cached built-in model at *path* is complete and intact, else the reason it is not."""
    marker = os.path.join(path, MARKER)
    if not os.path.isdir(path):
        return "not built yet"
    try:
        with open(marker, encoding="utf-8") as f:
            info = json.load(f)
        files = info["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"marker file unreadable ({type(e).__name__})"
    total = sum(int(v["size"]) for v in files.values())
    for name, meta in files.items():
        p = os.path.join(path, name)
        try:
            size = os.path.getsize(p)
        except OSError:
            return f"{name} is missing"
        if size != int(meta["size"]):
            return f"{name} has {size} bytes, expected {meta['size']}"
        if total <= 256 * MIB and _sha256(p) != meta["sha256"]:
            return f"{name} does not match its checksum"
    return None


def build_builtin(cache_dir: str, size: str, build_device: str = "cpu") -> str:
    """Build the built-in tokenizer and random-weight LlamaForCausalLM into the cache; return its path."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    final = builtin_dir(cache_dir, size)
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".build-{size}-", dir=parent)
    try:
        # a word-level tokenizer over the built-in text: random weights then give readable random words
        tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
        tok.normalizer = normalizers.Lowercase()
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.WordLevelTrainer(vocab_size=BUILTIN_VOCAB, min_frequency=1, show_progress=False,
                                            special_tokens=["<unk>", "<|endoftext|>", "<|pad|>"])
        tok.train_from_iterator(BUILTIN_TEXT.splitlines(), trainer=trainer)
        fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|endoftext|>",
                                       pad_token="<|pad|>", bos_token="<|endoftext|>")
        fast.save_pretrained(tmp)

        cfg = LlamaConfig(vocab_size=len(fast), tie_word_embeddings=False,
                          bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                          pad_token_id=fast.pad_token_id, **BUILTIN_SIZES[size])
        dtype = torch.float32 if size == "tiny" else torch.bfloat16
        torch.manual_seed(0)
        with torch.device(build_device):
            model = LlamaForCausalLM(cfg).to(dtype)
        model.generation_config.pad_token_id = fast.pad_token_id
        model.save_pretrained(tmp)
        del model

        files = {}
        for name in sorted(os.listdir(tmp)):
            p = os.path.join(tmp, name)
            files[name] = {"size": os.path.getsize(p), "sha256": _sha256(p)}
        with open(os.path.join(tmp, MARKER), "w", encoding="utf-8") as f:
            json.dump({"size": size, "version": BUILTIN_VERSION, "files": files}, f, indent=1)
        if os.path.isdir(final):
            shutil.rmtree(final, ignore_errors=True)
        try:
            os.rename(tmp, final)
        except OSError:
            if check_builtin(final) is not None:       # nobody else finished it either
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return final


# ---------------------------------------------------------------------------------------------------------
# estimate from the config, before loading (pure Python: the parent and the tests use it too)

DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8,
               "float8_e4m3fn": 1, "float8_e5m2": 1, "int8": 1}
SAFETENSORS_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
                           "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
# families whose config.json may omit tie_word_embeddings, with their class default
TIE_DEFAULT = {"gemma": True, "gemma2": True, "gemma3_text": True, "gpt2": True, "opt": True}
BIAS_QKV = {"qwen2", "qwen2_moe"}               # these add biases to q, k and v
GPU_RUNTIME_RESERVE = 512 * MIB                 # CUDA/HIP context and allocator slack, not in torch's stats
HOST_RUNTIME_RESERVE = 512 * MIB                 # the Python process with torch and transformers imported


def _first(cfg: dict, *names, default=None):
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return default


def text_config(cfg: dict) -> dict:
    """The language-model part of a config (multimodal configs nest it under text_config)."""
    inner = cfg.get("text_config")
    if isinstance(inner, dict) and inner.get("hidden_size"):
        merged = dict(inner)
        merged.setdefault("model_type", inner.get("model_type") or cfg.get("model_type"))
        return merged
    return cfg


def params_from_config(cfg: dict) -> int:
    """Parameter count of a decoder-only transformer from its config.json (Llama/Qwen/Mistral/Gemma shape;
    GPT-2/OPT shape when there is no gated MLP).  Raises ValueError when the config lacks the sizes."""
    c = text_config(cfg)
    mt = str(c.get("model_type", ""))
    H = _first(c, "hidden_size", "n_embd", "d_model")
    L = _first(c, "num_hidden_layers", "n_layer", "num_layers")
    V = _first(c, "vocab_size")
    nH = _first(c, "num_attention_heads", "n_head")
    if not all(isinstance(x, int) and x > 0 for x in (H, L, V, nH)):
        raise ValueError("config lacks hidden_size / num_hidden_layers / vocab_size / num_attention_heads")
    nKV = _first(c, "num_key_value_heads", default=nH)
    hd = _first(c, "head_dim", default=H // nH)
    tie = c.get("tie_word_embeddings", TIE_DEFAULT.get(mt, False))
    gated = "intermediate_size" in c and mt not in ("gpt2", "opt", "gpt_neox", "phi")
    I = _first(c, "intermediate_size", "n_inner", "ffn_dim", default=4 * H)

    attn = H * nH * hd + 2 * H * nKV * hd + nH * hd * H
    if mt in BIAS_QKV or c.get("attention_bias"):
        attn += nH * hd + 2 * nKV * hd + (H if c.get("attention_bias") and mt not in BIAS_QKV else 0)
    if mt in ("qwen3", "qwen3_moe"):
        attn += 2 * hd                                    # q_norm and k_norm
    experts = _first(c, "num_local_experts", "num_experts", default=0)
    if experts:
        moe_I = _first(c, "moe_intermediate_size", default=I)
        mlp = experts * 3 * H * moe_I + experts * H        # experts plus the router
        shared = _first(c, "shared_expert_intermediate_size", default=0)
        if shared:
            mlp += 3 * H * shared + H
    elif gated:
        mlp = 3 * H * I + (3 * I if c.get("mlp_bias") else 0)
    else:
        mlp = 2 * H * I + I + H                           # fc_in/fc_out with biases
        attn += 4 * H if not (mt in BIAS_QKV or c.get("attention_bias")) else 0
    norms = 2 * H
    per_layer = attn + mlp + norms
    total = V * H + L * per_layer + H
    if not tie:
        total += V * H
    if mt in ("gpt2",):
        total += _first(c, "n_positions", "max_position_embeddings", default=1024) * H
    return int(total)


def params_from_safetensors(model_dir: str) -> tuple[int, int] | None:
    """(parameters, bytes) counted exactly from the safetensors headers, without reading any tensor."""
    names = [n for n in os.listdir(model_dir) if n.endswith(".safetensors")]
    if not names:
        return None
    count = nbytes = 0
    for n in names:
        with open(os.path.join(model_dir, n), "rb") as f:
            raw = f.read(8)
            if len(raw) != 8:
                raise ValueError(f"{n}: truncated safetensors header")
            (hlen,) = struct.unpack("<Q", raw)
            if hlen > 100 * MIB:
                raise ValueError(f"{n}: safetensors header length {hlen} is not plausible")
            header = json.loads(f.read(hlen))
        for key, t in header.items():
            if key == "__metadata__":
                continue
            k = 1
            for d in t["shape"]:
                k *= d
            count += k
            nbytes += k * SAFETENSORS_DTYPE_BYTES.get(t["dtype"], 4)
    return count, nbytes


def kv_cache_bytes(cfg: dict, seq_len: int, dtype_bytes: int, batch: int = 1) -> int:
    c = text_config(cfg)
    H = _first(c, "hidden_size", "n_embd", "d_model")
    L = _first(c, "num_hidden_layers", "n_layer", "num_layers")
    nH = _first(c, "num_attention_heads", "n_head")
    nKV = _first(c, "num_key_value_heads", default=nH)
    hd = _first(c, "head_dim", default=H // nH)
    return int(2 * L * nKV * hd * seq_len * batch * dtype_bytes)


def estimate_footprint(cfg: dict, dtype: str, seq_len: int, device: str, params: int | None = None) -> dict:
    """Memory needed to generate *seq_len* tokens (prompt + new) with the model on *device*.

    weights = parameters x dtype bytes; kv_cache = 2 x layers x kv_heads x head_dim x seq_len x dtype bytes;
    activations = logits for the prompt (vocab x seq_len x 4) plus 5 % of the weights for temporaries;
    runtime = the GPU context (512 MiB) on a GPU, the Python process with torch (1 GiB) on the host.
    """
    b = DTYPE_BYTES[dtype]
    n = params if params is not None else params_from_config(cfg)
    c = text_config(cfg)
    weights = n * b
    kv = kv_cache_bytes(cfg, seq_len, b)
    activations = int(_first(c, "vocab_size", default=0) * seq_len * 4 + 0.05 * weights)
    runtime = GPU_RUNTIME_RESERVE if device == "cuda" else HOST_RUNTIME_RESERVE
    return {"params": int(n), "dtype": dtype, "dtype_bytes": b, "seq_len": seq_len, "device": device,
            "weights_bytes": int(weights), "kv_cache_bytes": kv, "activations_bytes": activations,
            "runtime_bytes": runtime, "total_bytes": int(weights + kv + activations + runtime)}


def host_available_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def peak_rss_bytes() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r if sys.platform == "darwin" else r * 1024)


# ---------------------------------------------------------------------------------------------------------
# resolving the model


def resolve_model(spec: str | None, cache_dir: str, build_device: str) -> tuple[str, str]:
    """Return (directory, display name) of the model to run; build the built-in one when needed."""
    if not spec or spec.startswith("builtin"):
        size = (spec.split(":", 1)[1] if spec and ":" in spec else "tiny") or "tiny"
        if size not in BUILTIN_SIZES:
            raise Stop("model-not-found", f"unknown built-in size {size!r}; choose one of {sorted(BUILTIN_SIZES)}")
        path = builtin_dir(cache_dir, size)
        why = check_builtin(path)
        if why is not None:
            progress("building built-in model", size=size, reason=why)
            t0 = time.perf_counter()
            path = build_builtin(cache_dir, size, build_device)
            fact_build = round(time.perf_counter() - t0, 3)
            emit({"note": f"built the built-in {size} model in {fact_build} s ({why})"})
        return path, f"builtin:{size}"
    expanded = os.path.expanduser(spec)
    if os.path.isdir(expanded):
        return os.path.abspath(expanded), spec
    if os.path.exists(expanded):
        raise Stop("model-corrupt", f"{spec} is a file, not a model directory (config.json and weights)")
    looks_like_path = spec.startswith((".", "/", "~")) or os.sep in spec and spec.count("/") != 1
    if looks_like_path:
        raise Stop("model-not-found", f"model directory {spec} does not exist")
    # a Hugging Face model id: only ever from the local cache
    try:
        from huggingface_hub import snapshot_download
        path = snapshot_download(spec, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - any failure means: not in the cache
        raise Stop("model-not-found",
                   f"{spec} is neither a local directory nor in the Hugging Face cache "
                   f"(the doctor never downloads models): {type(e).__name__}: {e}") from None
    return path, spec


def read_config(model_dir: str) -> dict:
    p = os.path.join(model_dir, "config.json")
    if not os.path.exists(p):
        raise Stop("model-corrupt", f"{model_dir} has no config.json: not a transformers model directory")
    try:
        with open(p, encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise Stop("model-corrupt", f"config.json in {model_dir} cannot be read: {e}") from None
    if not isinstance(cfg, dict):
        raise Stop("model-corrupt", f"config.json in {model_dir} is not a JSON object")
    return cfg


# ---------------------------------------------------------------------------------------------------------
# the run: out-of-memory, timing, placement and loading helpers


def _is_oom(exc: BaseException) -> str | None:
    import torch
    if isinstance(exc, getattr(torch, "OutOfMemoryError", ())) or \
            isinstance(exc, getattr(torch.cuda, "OutOfMemoryError", ())):
        return "gpu"
    if isinstance(exc, MemoryError):
        return "host"
    msg = str(exc)
    if "out of memory" in msg.lower() and ("CUDA" in msg or "HIP" in msg or "GPU" in msg):
        return "gpu"
    if ("DefaultCPUAllocator: can't allocate memory" in msg or "DefaultCPUAllocator: not enough memory" in msg
            or "Cannot allocate memory" in msg):
        return "host"
    return None


def _oom_stop(exc: BaseException, stage: str) -> Stop | None:
    where = _is_oom(exc)
    if where is None:
        return None
    text = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    if not str(exc).strip():
        text += f"(an allocation of {'GPU' if where == 'gpu' else 'host'} memory was refused during {stage})"
    fact("gen.oom", where)
    evidence(f"generation ({stage})", text)
    return Stop(f"oom-{where}", text)


class _Clock:
    """A generation streamer that timestamps the first new token and reports progress now and then."""

    def __init__(self, report_every_s: float = 0.5, sync=None, stage: str = "generating"):
        self.stage = stage
        self.first = None
        self.count = 0
        self.calls = 0
        self.times = []                           # perf_counter() when each new token reached the host
        self.report_every_s = report_every_s
        self.last_report = 0.0
        self.sync = sync

    def put(self, value):
        self.calls += 1
        if self.calls == 1:                       # the prompt
            return
        now = time.perf_counter()
        k = int(value.numel()) if hasattr(value, "numel") else 1
        self.count += k
        if self.first is None:
            if self.sync:
                self.sync()
                now = time.perf_counter()
            self.first = now
        self.times.extend([now] * k)
        if self.report_every_s and now - self.last_report >= self.report_every_s:
            self.last_report = now
            progress(self.stage, tokens=self.count)

    def end(self):
        pass


def _sync_fn(device: str):
    import torch
    if device.startswith("cuda") or (device == "mixed" and torch.cuda.is_available()):
        return torch.cuda.synchronize
    return None


def timed_generate(model, inputs, max_new_tokens: int, device: str, report_progress: bool = True,
                   stage: str = "generating", max_time: float | None = None) -> dict:
    """Greedy generation of exactly *max_new_tokens* tokens, timed; *max_time* (seconds) cuts it short so that
    a very slow device still reports its speed before the time limit (new_tokens then says how many)."""
    import torch
    sync = _sync_fn(device)
    clock = _Clock(0.5 if report_progress else 0.0, sync, stage)
    kwargs = dict(max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens, do_sample=False,
                  streamer=clock)
    if max_time is not None:
        kwargs["max_time"] = max(1.0, max_time)
    if getattr(model.generation_config, "pad_token_id", None) is None:
        kwargs["pad_token_id"] = model.generation_config.eos_token_id
    with torch.inference_mode():
        if sync:
            sync()
        t0 = time.perf_counter()
        out = model.generate(**inputs, **kwargs)
        if sync:
            sync()
        t1 = time.perf_counter()
    new = out[0, inputs["input_ids"].shape[1]:]
    n = int(new.numel())
    gen_s = t1 - t0
    ttft = (clock.first - t0) if clock.first is not None else None
    decode_s = (t1 - clock.first) if clock.first is not None else None
    return {"new_tokens": n, "gen_s": gen_s, "tokens_per_s": n / gen_s if gen_s > 0 else None,
            "ttft_s": ttft,
            "decode_tokens_per_s": ((n - 1) / decode_s) if decode_s and n > 1 else None,
            # seconds from the start of generate() to each new token (the streamer is handed each token on the
            # host, so these are real arrival times, not a line drawn from two numbers)
            "token_times": [round(t - t0, 6) for t in clock.times[:n]],
            "ids": new}


def param_device_map(model, hf_map: dict | None = None) -> dict:
    """Parameter name -> device.  accelerate leaves offloaded weights on the 'meta' device and keeps the real
    ones in CPU RAM or on disk; those are named after their place in hf_device_map, e.g. 'cpu (offloaded)'."""
    out = {}
    for name, p in model.named_parameters():
        dev = str(p.device)
        if p.device.type == "meta" and hf_map:
            best = max((k for k in hf_map if k == "" or name == k or name.startswith(k + ".")),
                       key=len, default=None)
            if best is not None:
                dev = f"{hf_map[best]} (offloaded)"
        out[name] = dev
    return out


def summarize_devices(devmap: dict, hf_map: dict | None) -> tuple[str, list[str], bool]:
    kinds = set()
    for d in devmap.values():
        d = d.replace(" (offloaded)", "")
        kinds.add("cuda" if d.isdigit() else d.split(":")[0])
    for d in (hf_map or {}).values():
        d = str(d)
        kinds.add("disk" if d == "disk" else "cpu" if d == "cpu" else "cuda" if d.isdigit() or
                  d.startswith("cuda") else d.split(":")[0])
    accel = {"cuda", "xpu", "mps"} & kinds
    host = {"cpu", "disk", "meta"} & kinds
    if accel and host:
        dev = "mixed"
    elif accel:
        dev = sorted(accel)[0]
    else:
        dev = "cpu"
    return dev, sorted(kinds), bool(accel and host)


def gpu_target(torch) -> str | None:  # noqa: ANN001 - torch is the module imported in the child
    """The first GPU's own target: 'gfx1030' (ROCm gcnArchName) or 'sm_86' (CUDA capability)."""
    try:
        if getattr(torch.version, "hip", None):
            name = str(getattr(torch.cuda.get_device_properties(0), "gcnArchName", "") or "")
            return name.split(":", 1)[0] or None
        major, minor = torch.cuda.get_device_capability(0)
        return f"sm_{major}{minor}"
    except Exception:  # no answer: the caller falls back to float16
        return None


def bf16_targets(arg: str | None) -> set[str]:
    return {t.strip() for t in (arg or "").split(",") if t.strip()}


def builtin_classes(plan) -> bool:  # noqa: ANN001
    """The built-in model is a Llama with a tokenizers-library tokenizer that we built ourselves: its concrete
    classes are known, so it is loaded through them (a user's model directory goes through the Auto classes,
    which read its config.json to find them)."""
    return str(getattr(plan, "display", "")).startswith("builtin:")


def load_model(model_dir: str, device: str, dtype_name: str, device_map: str | None, builtin: bool = False):
    import torch
    if builtin:
        from transformers import LlamaForCausalLM as model_cls
    else:
        from transformers import AutoModelForCausalLM as model_cls
    dtype = getattr(torch, dtype_name)
    kw = {_dtype_kwarg(): dtype, "local_files_only": True}
    accelerate = _has_accelerate()
    if device_map:
        kw["device_map"] = device_map
        cap = os.environ.get("GPU_DOCTOR_MAX_GPU_MEMORY")
        if cap and device == "cuda":
            # accelerate's placement under a GPU budget: what makes it offload layers to the CPU
            kw["max_memory"] = {0: cap, "cpu": os.environ.get("GPU_DOCTOR_MAX_CPU_MEMORY", "200GiB")}
    elif device == "cuda" and accelerate:
        kw["device_map"] = {"": 0}
    model = model_cls.from_pretrained(model_dir, **kw)
    if device == "cuda" and "device_map" not in kw:
        model = model.to("cuda")
    model.eval()
    return model


def _dtype_kwarg() -> str:
    """transformers 4.56 renamed from_pretrained's torch_dtype= to dtype= (huggingface/transformers#39782)."""
    import transformers
    try:
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    except ValueError:
        return "dtype"
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


_START = time.monotonic()


def _time_left(args) -> float:
    """Seconds left of the parent's time limit, with a margin for sending the result."""
    return max(0.0, args.time_budget - (time.monotonic() - _START) - 10.0)


def _has_accelerate() -> bool:
    import importlib.util
    return importlib.util.find_spec("accelerate") is not None


# ---------------------------------------------------------------------------------------------------------
# the GPU's first-time costs, paid while transformers' model code is imported


def prewarm_gpu(torch, cfg: dict, dtype_name: str, prompt_len: int = 16, new_tokens: int = 32,  # noqa: ANN001
                device: str = "cuda") -> dict:
    """The kernels a Llama-shaped decoder's generation launches, on synthetic tensors of the model's shapes and
    dtype: embedding, RMSNorm, rotary, the q/k/v/o and MLP projections at the prompt's length and at one token,
    the KV cache's concatenation, causal and decoding attention, SiLU, the last logits, greedy choice and the
    token's copy to the host.  On a GPU, a generation's first run spends seconds loading kernels and choosing
    GEMM algorithms per shape (1.7-2.9 s of the H200's warm-up); torch releases the GIL in each op, so this runs
    in a thread while the main thread imports transformers (measured on the H200: 1.1 s beside a 1.3 s import,
    about 0.4 s off the warm-up, docs/GPU_RUN.md round 6).  Nothing here is
    measured or reported as the model's speed: the full warm-up generation still runs before the timed one.
    Only for models whose config is small enough to be built here (the built-in ones)."""
    import torch.nn.functional as F

    c = text_config(cfg)
    H = int(_first(c, "hidden_size", "n_embd", "d_model"))
    nH = int(_first(c, "num_attention_heads", "n_head"))
    nKV = int(_first(c, "num_key_value_heads", default=nH))
    hd = int(_first(c, "head_dim", default=H // nH))
    inter = int(_first(c, "intermediate_size", default=4 * H))
    V = int(_first(c, "vocab_size"))
    dt = getattr(torch, dtype_name)
    dev = torch.device(device)
    t0 = time.perf_counter()
    with torch.inference_mode():
        g = torch.Generator(device=dev).manual_seed(0)

        def w(*shape):
            return (torch.randn(*shape, device=dev, generator=g, dtype=torch.float32) * 0.02).to(dt)

        emb, wq, wk, wv, wo = w(V, H), w(nH * hd, H), w(nKV * hd, H), w(nKV * hd, H), w(H, nH * hd)
        wg, wu, wd, norm = w(inter, H), w(inter, H), w(H, inter), torch.ones(H, device=dev, dtype=dt)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=dev, dtype=torch.int64).float() / hd))

        def rms(x):
            xf = x.to(torch.float32)
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
            return norm * xf.to(dt)

        def rotate(x, cos, sin):
            x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
            return x * cos + torch.cat((-x2, x1), dim=-1) * sin

        ids = torch.randint(0, V, (1, prompt_len), device=dev, generator=g)
        k_cache = v_cache = None
        done = torch.zeros(1, dtype=torch.bool, device=dev)
        # the prompt, then a few single tokens (one decoding step launches the same kernels as the next: more
        # steps would only cost GIL hand-overs with the import beside it, up to 5 ms each)
        for step in range(min(new_tokens, PREWARM_STEPS) + 1):
            n = ids.shape[1] if step == 0 else 1
            start = 0 if step == 0 else prompt_len + step - 1
            pos = torch.arange(start, start + n, device=dev).unsqueeze(0)
            freqs = (inv_freq[None, :, None].expand(1, -1, 1) @ pos[:, None, :].float()).transpose(1, 2)
            angles = torch.cat((freqs, freqs), dim=-1)
            cos, sin = angles.cos().to(dt)[:, None], angles.sin().to(dt)[:, None]
            x = F.embedding(ids[:, -n:], emb)
            h = rms(x)
            q = F.linear(h, wq).view(1, n, nH, hd).transpose(1, 2)
            k = F.linear(h, wk).view(1, n, nKV, hd).transpose(1, 2)
            v = F.linear(h, wv).view(1, n, nKV, hd).transpose(1, 2)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            k_cache = k if k_cache is None else torch.cat((k_cache, k), dim=-2)
            v_cache = v if v_cache is None else torch.cat((v_cache, v), dim=-2)
            rep = nH // nKV
            kk = k_cache[:, :, None].expand(1, nKV, rep, k_cache.shape[-2], hd).reshape(1, nH, -1, hd)
            vv = v_cache[:, :, None].expand(1, nKV, rep, v_cache.shape[-2], hd).reshape(1, nH, -1, hd)
            a = F.scaled_dot_product_attention(q, kk, vv, is_causal=step == 0)
            x = x + F.linear(a.transpose(1, 2).reshape(1, n, nH * hd), wo)
            h = rms(x)
            x = x + F.linear(F.silu(F.linear(h, wg)) * F.linear(h, wu), wd)
            logits = F.linear(rms(x)[:, -1:, :], emb).float()
            nxt = torch.argmax(logits[:, -1, :], dim=-1)
            done = done | (nxt == 0)
            ids = torch.cat((ids, nxt[:, None]), dim=-1)
            nxt.cpu()
        if dev.type == "cuda":
            torch.cuda.synchronize()
    return {"prewarm_s": round(time.perf_counter() - t0, 4)}


def leave_out_cudnn_attention(torch) -> str:  # noqa: ANN001
    """Turn off cuDNN's scaled-dot-product attention for this generation; say what it was.  cuDNN builds an
    execution plan for each new sequence length, and a generation meets a new key length at every token: on an
    H200 (torch 2.11, cuDNN backend on by default) the warm-up generation took 4.2 s with it and 0.6 s with only
    the flash / memory-efficient / math backends, and the timed generation ran faster without it (316 tokens/s
    against 266 with it; docs/BENCHMARKS.md, issue 19 session 11).  Nothing else is changed, so the speed measured
    is still that of the user's torch and GPU; ROCm builds have no cuDNN backend, so there the switch changes
    nothing."""
    cuda = getattr(torch.backends, "cuda", None)
    if cuda is None or not hasattr(cuda, "enable_cudnn_sdp"):
        return "absent"
    try:
        was = bool(cuda.cudnn_sdp_enabled())
        cuda.enable_cudnn_sdp(False)
    except Exception as e:  # noqa: BLE001 - an odd build keeps its own settings; the generation goes on
        return f"left as it was ({type(e).__name__})"
    return "turned off" if was else "off already"


PREWARM_STEPS = 3
PREWARM_WAIT_S = 20.0


class _Prewarm:
    """prewarm_gpu in a daemon thread; join() waits for it and returns what it measured (or its error: a failure
    here only means the warm-up generation pays the first-time costs itself)."""

    def __init__(self, torch, cfg: dict, dtype_name: str, new_tokens: int):  # noqa: ANN001
        import threading

        self.out: dict = {}

        def work():
            try:
                self.out = prewarm_gpu(torch, cfg, dtype_name, PROMPT_LEN, new_tokens)
            except Exception as e:  # noqa: BLE001
                self.out = {"prewarm_error": f"{type(e).__name__}: {e}"}

        self.thread = threading.Thread(target=work, name="gpu-prewarm", daemon=True)
        self.thread.start()

    def join(self) -> dict:
        self.thread.join(PREWARM_WAIT_S)
        if self.thread.is_alive():          # stuck in the driver: the load and the warm-up go on without it
            return {"prewarm_error": f"still running after {PREWARM_WAIT_S:g} s; not waited for"}
        return self.out


# ---------------------------------------------------------------------------------------------------------
# the run, as stages: each one fills *result* as it goes and raises Stop for a finding that ends the run

PROMPT = "The doctor looks at the machine and says"
PROMPT_LEN = 16
# below this size a generation is bound by kernel launches and Python, not by the device: a healthy GPU can be
# slower than the CPU on it, so no verdict is drawn from the comparison (the parent imports this constant) and
# the CPU side runs only CPU_SHORT_TOKENS tokens: enough for an honest CPU figure, not the full length
COMPARE_MIN_PARAMS = 100_000_000
CPU_SHORT_TOKENS = 8
CPU_WARMUP_TOKENS = 4


@dataclass
class Plan:
    """What was decided before loading: the model, its config, size, estimate, device and dtype; then what the
    later stages add (the GPU pre-warm thread started beside the tokenizer load, the device generation ran on)."""

    model_dir: str
    display: str
    cfg: dict
    params: int | None
    seq_len: int
    est: dict
    device: str
    dtype: str
    prewarm: "_Prewarm | None" = None
    gen_device: str | None = None


_CPU_AT = [time.process_time()]


def _lap(result: dict, stage: str, t0: float) -> float:
    """Record the seconds a stage took in result["stage_s"] (wall) and the CPU seconds this process spent since
    the previous lap in result["stage_cpu_s"] (on a shared machine the wall time mostly measures the load);
    return now (the next stage's start)."""
    now = time.perf_counter()
    cpu = time.process_time()
    result.setdefault("stage_s", {})[stage] = round(now - t0, 4)
    result.setdefault("stage_cpu_s", {})[stage] = round(cpu - _CPU_AT[0], 4)
    _CPU_AT[0] = cpu
    return now


def import_stack(args, result: dict):
    """Import torch (what a user's script does first); return the torch module.  transformers is imported later
    (import_transformers), once the device is known, so that the GPU's first-time costs can be paid meanwhile."""
    progress("importing torch")
    t0 = time.perf_counter()
    _CPU_AT[0] = time.process_time()
    import torch
    result["torch_version"] = torch.__version__
    result["import_s"] = round(time.perf_counter() - t0, 3)
    _lap(result, "import_torch", t0)
    if args.threads:
        torch.set_num_threads(args.threads)
    result["cpu_threads"] = torch.get_num_threads()
    return torch


# what the model code imports after torch, one file each: when any of them has no bytecode beside it, the
# installed packages came without .pyc files (measured on the H200 image: torch/_dynamo, torch/distributed/tensor
# and sympy/core had none, transformers and scipy had theirs; docs/GPU_RUN.md, round 6)
BYTECODE_WITNESSES = (("torch", "_dynamo/__init__.py"), ("sympy", "core/__init__.py"),
                      ("transformers", "modeling_utils.py"))


def _lacks_bytecode() -> str | None:
    """The first witness file that has no .pyc beside it (None: all have theirs, or none can be found)."""
    import importlib.util

    for pkg, rel in BYTECODE_WITNESSES:
        try:
            spec = importlib.util.find_spec(pkg)      # finds the package without importing it
            origin = spec.origin if spec is not None else None
            if not origin:
                continue
            src = os.path.join(os.path.dirname(origin), *rel.split("/"))
            if os.path.exists(src) and not os.path.exists(importlib.util.cache_from_source(src)):
                return src
        except (ImportError, ValueError, NotImplementedError):
            continue
    return None


def cache_package_map(cache_dir: str, result: dict) -> None:
    """transformers' import asks ``importlib.metadata.packages_distributions()`` which distribution provides each
    importable name; the standard library builds that by reading the file list of every installed distribution
    without a ``top_level.txt`` (torch's tens of thousands of files among them): 2.1 of the 3.5 s that importing
    transformers took on the H200 (docs/BENCHMARKS.md, issue 19 session 11).  In this process the answer is kept
    under the doctor's cache, keyed on every sys.path directory and its modification time (installing or removing
    a distribution changes its directory's), and computed again whenever that key differs; the answer itself is
    the standard library's.  GPU_DOCTOR_PACKAGE_MAP=0 leaves the standard function alone."""
    import importlib.metadata as md

    if os.environ.get("GPU_DOCTOR_PACKAGE_MAP", "1") == "0" or getattr(md.packages_distributions, "_gpu_doctor", 0):
        return
    real = md.packages_distributions
    path = os.path.join(cache_dir, "packages_distributions.json")

    def key() -> list:
        out = []
        for p in sys.path:
            try:
                out.append([p, os.stat(p or ".").st_mtime_ns])
            except OSError:
                out.append([p, None])
        return out

    def cached():  # noqa: ANN202 - the standard library's signature
        want = key()
        try:
            with open(path, encoding="utf-8") as f:
                kept = json.load(f)
            if kept.get("key") == want and isinstance(kept.get("map"), dict):
                result["package_map"] = "cached"
                return {k: list(v) for k, v in kept["map"].items()}
        except (OSError, ValueError, AttributeError):
            pass
        answer = real()
        result["package_map"] = "computed"
        try:
            os.makedirs(cache_dir, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"key": want, "map": answer}, f)
            os.replace(tmp, path)
        except OSError:
            pass
        return answer

    cached._gpu_doctor = 1
    cached.__wrapped__ = real
    md.packages_distributions = cached


def bytecode_cache(cache_dir: str, result: dict) -> None:
    """Where the user's environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE, as in some container
    images) and the installed packages came without their .pyc files, every run would compile the model code's
    imports from source again (torch._dynamo, torch.distributed.tensor, sympy, ...: thousands of modules,
    seconds of CPU each time).  Then this process writes and reads the bytecode of what it imports from now on
    under the doctor's cache (``sys.pycache_prefix`` = <cache>/pycache): still nothing written beside the user's
    sources, which is what the switch is for.  Called after torch is imported: the torch check imports torch
    exactly as in a child of its own.  Left alone: bytecode allowed, a prefix of the user's own, the bytecode
    present, or GPU_DOCTOR_PYCACHE=0."""
    if (not sys.dont_write_bytecode or getattr(sys, "pycache_prefix", "") is not None
            or os.environ.get("GPU_DOCTOR_PYCACHE", "1") == "0"):
        return
    missing = _lacks_bytecode()
    if missing is None:
        return
    sys.pycache_prefix = os.path.join(cache_dir, "pycache")
    sys.dont_write_bytecode = False
    result["pycache_prefix"] = sys.pycache_prefix
    result["pycache_because"] = f"no bytecode for {missing}"


# transformers imports these optional libraries at module level for features the built-in model's greedy
# generation never reaches: scikit-learn for assisted generation's candidate threshold
# (transformers.generation.candidate_generator) and SciPy for the object-detection losses (transformers.loss).  On
# the H200 scikit-learn alone was 2.3 s of a 6.9 s import (docs/BENCHMARKS.md, issue 19 session 11).
UNUSED_EXTRAS = ("sklearn", "scipy")


def skip_unused_extras(transformers, result: dict) -> None:  # noqa: ANN001
    """For the built-in model only: transformers' availability checks of UNUSED_EXTRAS answer False in this process,
    so their imports are skipped.  A user's own model directory may need them and keeps transformers' answers."""
    utils = getattr(transformers, "utils", None)
    mods = [m for m in (utils, getattr(utils, "import_utils", None)) if m is not None]
    skipped = []
    for extra in (e for e in UNUSED_EXTRAS if e not in sys.modules):    # one already imported: nothing to gain
        checks = [m for m in mods if callable(getattr(m, f"is_{extra}_available", None))]
        for m in checks:
            setattr(m, f"is_{extra}_available", _unavailable)
        if checks:
            skipped.append(extra)
    result["skipped_imports"] = skipped


def _unavailable() -> bool:
    return False


def import_transformers(result: dict, builtin: bool = False) -> None:
    """Import transformers (its own import: the model code comes with the model class, load_tokenizer and
    load_model); stage "import"."""
    t0 = time.perf_counter()
    import transformers
    if builtin:
        skip_unused_extras(transformers, result)
    try:
        from transformers.utils import logging as tlog
        tlog.disable_progress_bar()
    except Exception:  # noqa: BLE001 - an old transformers without it only prints more
        pass
    result["transformers_version"] = transformers.__version__
    result["import_s"] = round(result.get("import_s", 0.0) + time.perf_counter() - t0, 3)
    _lap(result, "import", t0)


def _build_name(torch) -> str:  # noqa: ANN001
    if torch.version.hip:
        return "HIP " + torch.version.hip
    return "CUDA " + str(torch.version.cuda) if torch.version.cuda else "CPU only"


def choose_device(args, torch, result: dict) -> tuple[str, str]:  # noqa: ANN001
    """The device the generation will use (decided here, in the child, from torch's own answer) and the dtype."""
    t0 = time.perf_counter()
    cuda_ok = torch.cuda.is_available()
    if args.device == "cuda" and not cuda_ok:
        raise Stop("no-gpu", "device 'cuda' was requested but torch.cuda.is_available() is False "
                             f"(torch {torch.__version__}, built for {_build_name(torch)})")
    device = "cuda" if (args.device == "cuda" or (args.device == "auto" and cuda_ok)) else "cpu"
    result["target_device"] = device
    if args.dtype != "auto":
        dtype_name = args.dtype
    elif device == "cuda":
        # bf16 only where the GPU has native bf16 arithmetic per the support matrix (the parent passes the
        # targets); torch.cuda.is_bf16_supported() is true on every ROCm build, emulated or not
        target = gpu_target(torch)
        result["gpu_target"] = target
        dtype_name = "bfloat16" if target and target in bf16_targets(args.bf16_targets) else "float16"
    else:
        dtype_name = "float32"
    result["dtype"] = dtype_name
    _lap(result, "device", t0)
    return device, dtype_name


def size_model(args, torch, device: str, dtype_name: str, result: dict) -> Plan:  # noqa: ANN001
    """Find (or build) the model, read its config and count its parameters; estimate its footprint."""
    progress("resolving model")
    t0 = time.perf_counter()
    model_dir, display = resolve_model(args.model, args.cache_dir, "cuda" if device == "cuda" else "cpu")
    if device == "cuda":
        torch.cuda.empty_cache()                  # a model just built on the GPU must not count below
    result["model"] = display
    result["model_dir"] = model_dir
    cfg = read_config(model_dir)
    result["model_type"] = text_config(cfg).get("model_type")
    try:
        counted = params_from_safetensors(model_dir)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Stop("model-corrupt", f"the weights in {model_dir} are unreadable: {e}") from None
    try:
        by_config = params_from_config(cfg)
    except (ValueError, TypeError, ZeroDivisionError) as e:
        by_config = None
        result["config_estimate_error"] = str(e)
    if counted is None and by_config is None:
        raise Stop("model-corrupt", f"cannot size the model in {model_dir}: no safetensors weights and "
                                    f"config.json lacks the sizes ({result.get('config_estimate_error')})")
    params = counted[0] if counted else by_config
    seq_len = PROMPT_LEN + args.max_new_tokens
    est = estimate_footprint(cfg, dtype_name, seq_len, device, params=params)
    est["params_source"] = "safetensors headers" if counted else "config.json"
    est["params_from_config"] = by_config
    result["estimate"] = est
    fact("gen.params", int(params))
    fact("gen.estimate_bytes", est["total_bytes"])
    fact("gen.dtype", dtype_name)
    _lap(result, "resolve", t0)
    return Plan(model_dir=model_dir, display=display, cfg=cfg, params=params, seq_len=seq_len, est=est,
                device=device, dtype=dtype_name)


def check_fits(args, torch, plan: Plan, result: dict) -> None:  # noqa: ANN001
    """Refuse to load a model whose estimate exceeds the free memory (a finding, 'too-large')."""
    est = plan.est
    host_free = host_available_bytes()
    result["host_available_bytes"] = host_free
    gpu_free = None
    if plan.device == "cuda":
        gpu_free, gpu_total = (int(x) for x in torch.cuda.mem_get_info(0))
        result["gpu_free_bytes"], result["gpu_total_bytes"] = gpu_free, gpu_total
        result["gpu_name"] = torch.cuda.get_device_name(0)
        exceeds_vram = est["total_bytes"] > gpu_free
        fact("gen.estimate_exceeds_vram", exceeds_vram)
        host_need = HOST_RUNTIME_RESERVE + min(est["weights_bytes"], 4 * GIB)    # staging through the host
    else:
        exceeds_vram = False
        host_need = est["total_bytes"]
    exceeds_host = host_free is not None and host_need > host_free
    if host_free is not None:
        fact("gen.estimate_exceeds_host", exceeds_host)
    result["host_need_bytes"] = host_need
    # with a device_map (e.g. "auto") accelerate may offload what does not fit: report, do not refuse
    if not ((exceeds_vram and not args.device_map) or exceeds_host) or args.force_load:
        return
    what = []
    if exceeds_vram:
        what.append(f"free GPU memory {gpu_free / GIB:.2f} GiB")
    if exceeds_host:
        what.append(f"available host memory {host_free / GIB:.2f} GiB (needs {host_need / GIB:.2f} GiB)")
    msg = (f"estimated footprint {est['total_bytes'] / GIB:.2f} GiB ({plan.params / 1e9:.3f} B parameters in "
           f"{plan.dtype}, KV cache for {plan.seq_len} tokens, runtime) exceeds " + " and ".join(what) +
           "; not loading it (pass --force-load to try anyway)")
    evidence("generation estimate", msg)
    raise Stop("too-large", msg)


def load_tokenizer(plan: Plan, result: dict):
    """The model's tokenizer, first: cheap, and a missing one is a clear finding.  transformers is imported here,
    under this stage (while a GPU pre-warm may run beside it)."""
    progress("loading tokenizer")
    import_transformers(result, builtin_classes(plan))
    t0 = time.perf_counter()
    if builtin_classes(plan):   # our own tokenizer.json: no config lookup to find its class
        from transformers import PreTrainedTokenizerFast as tok_cls
    else:
        from transformers import AutoTokenizer as tok_cls
    result["tokenizer_class"] = tok_cls.__name__
    try:
        tok = tok_cls.from_pretrained(plan.model_dir, local_files_only=True)
    except Exception as e:  # noqa: BLE001
        raise Stop("tokenizer-missing", f"no usable tokenizer in {plan.model_dir}: {type(e).__name__}: {e}") from None
    if tok is None or not callable(tok):
        raise Stop("tokenizer-missing", f"no usable tokenizer in {plan.model_dir}")
    _lap(result, "tokenizer", t0)
    return tok


def load_on_device(args, torch, plan: Plan, result: dict):  # noqa: ANN001
    """Load the model onto the chosen device; report where its parameters really are (gen.device)."""
    prewarm = plan.prewarm
    if prewarm is not None:     # ended before any memory cap, the peak's reset and the load: nothing overlaps them
        t0 = time.perf_counter()
        result.update(prewarm.join())
        torch.cuda.empty_cache()                  # its few blocks are not the model's
        result["prewarm_wait_s"] = round(time.perf_counter() - t0, 4)
    frac = os.environ.get("GPU_DOCTOR_GPU_MEMORY_FRACTION")
    if plan.device == "cuda" and frac:
        # a knob to provoke a real out-of-memory: torch refuses allocations beyond this share of the GPU
        torch.cuda.set_per_process_memory_fraction(float(frac), 0)
        result["gpu_memory_fraction"] = float(frac)
        emit({"note": f"GPU memory capped at {float(frac):g} of the device (GPU_DOCTOR_GPU_MEMORY_FRACTION)"})
    progress("loading", device=plan.device, dtype=plan.dtype)
    if plan.device == "cuda":
        torch.cuda.reset_peak_memory_stats(0)
    t0 = time.perf_counter()
    try:
        model = load_model(plan.model_dir, plan.device, plan.dtype, args.device_map, builtin_classes(plan))
    except Exception as e:  # noqa: BLE001
        stop = _oom_stop(e, "load")
        if stop:
            raise stop from None
        raise Stop("load-failed", f"loading {plan.display} failed: {type(e).__name__}: {e}") from None
    result["load_s"] = round(time.perf_counter() - t0, 4)
    result["model_class"] = type(model).__name__
    _lap(result, "load", t0)
    plan.gen_device = report_placement(args, model, plan, result)
    return model


def report_placement(args, model, plan: Plan, result: dict) -> str:  # noqa: ANN001
    """gen.device (cpu, cuda or mixed) from where every parameter is; evidence for a fallback or a split."""
    hf_map = getattr(model, "hf_device_map", None)
    devmap = param_device_map(model, hf_map)
    gen_device, kinds, offloaded = summarize_devices(devmap, hf_map)
    result["param_devices"] = devmap
    result["hf_device_map"] = {k: str(v) for k, v in hf_map.items()} if hf_map else None
    result["device"] = gen_device
    fact("gen.device", gen_device)
    fact("gen.param_devices", kinds)
    fact("gen.offloaded", offloaded)
    if plan.device == "cuda" and gen_device == "cpu":
        evidence("generation", f"requested {args.device} but every parameter of the model is on the CPU")
    if offloaded:
        counts: dict[str, int] = {}
        for d in devmap.values():
            counts[d] = counts.get(d, 0) + 1
        evidence("generation", f"model split across devices: {counts}; hf_device_map={result['hf_device_map']}")
    return gen_device


def prompt_inputs(torch, tok, model) -> dict:  # noqa: ANN001
    """The prompt's first PROMPT_LEN tokens on the device of the model's first parameter."""
    first = next(model.parameters())
    input_device = first.device if first.device.type != "meta" else torch.device("cpu")
    inputs = tok(PROMPT, return_tensors="pt")
    return {k: v[:, :PROMPT_LEN].to(input_device) for k, v in inputs.items() if k in ("input_ids", "attention_mask")}


def warmup_tokens(args, plan: Plan) -> int:
    """The full length on a GPU (first-time costs per sequence length: lazy kernel loading, GEMM heuristics);
    a few tokens on the CPU, which has no such per-length costs (the warm-up there only pages the weights in)."""
    return args.max_new_tokens if plan.gen_device != "cpu" else min(args.max_new_tokens, CPU_WARMUP_TOKENS)


def generate_on_device(args, model, inputs: dict, plan: Plan, result: dict) -> dict:  # noqa: ANN001
    """A warm-up of the full length, then the timed generation."""
    t0 = time.perf_counter()
    try:
        # The warm-up runs the full length: every new sequence length meets first-time costs (lazy kernel
        # loading, GEMM heuristics per shape).  Measured on an H200: after a 2-token warm-up the timed run
        # gave 15.7 tokens/s, a second run of the same length 256 tokens/s (docs/GENERATION.md).
        progress("warming up")
        w = timed_generate(model, inputs, warmup_tokens(args, plan), plan.gen_device, stage="warming up",
                           max_time=_time_left(args) * 0.3)
        result["warmup_tokens_per_s"] = w["tokens_per_s"]
        t0 = _lap(result, "warmup", t0)
        progress("generating", tokens=0)
        g = timed_generate(model, inputs, args.max_new_tokens, plan.gen_device, max_time=_time_left(args) * 0.6)
        _lap(result, "generate", t0)
    except Exception as e:  # noqa: BLE001
        stop = _oom_stop(e, "generate")
        if stop:
            raise stop from None
        raise Stop("generate-failed", f"generation failed: {type(e).__name__}: {e}") from None
    if g["new_tokens"] < args.max_new_tokens:
        emit({"note": f"generation cut short at {g['new_tokens']} of {args.max_new_tokens} tokens to report "
                      f"before the time limit ({args.time_budget:g} s)"})
    return g


def record_generation(torch, tok, g: dict, plan: Plan, result: dict) -> None:  # noqa: ANN001
    """The figures of the timed run and the peaks; sent at once as a partial result."""
    text = tok.decode(g["ids"], skip_special_tokens=True)
    result.update({"new_tokens": g["new_tokens"], "tokens_per_s": g["tokens_per_s"], "ttft_s": g["ttft_s"],
                   "gen_s": g["gen_s"], "decode_tokens_per_s": g["decode_tokens_per_s"], "text": text,
                   "token_times": g["token_times"]})
    fact("gen.tokens_per_s", round(g["tokens_per_s"], 3))
    peak_gpu = None
    if plan.device == "cuda":
        peak_gpu = int(torch.cuda.max_memory_allocated(0))
        result["peak_gpu_reserved_bytes"] = int(torch.cuda.max_memory_reserved(0))
        fact("gen.peak_gpu_bytes", peak_gpu)
    result["peak_gpu_bytes"] = peak_gpu
    result["peak_rss_bytes"] = peak_rss_bytes()
    fact("gen.peak_rss_bytes", result["peak_rss_bytes"])
    emit({"partial": {k: v for k, v in result.items() if k != "param_devices"}})


def cpu_compare_tokens(args, params: int) -> int:
    """The full length for a model big enough to judge the GPU against the CPU; a few tokens otherwise."""
    return args.max_new_tokens if params >= COMPARE_MIN_PARAMS else min(args.max_new_tokens, CPU_SHORT_TOKENS)


def compare_with_cpu(args, inputs: dict, g: dict, plan: Plan, result: dict) -> None:
    """The same model in float32 on the CPU, same prompt (after a warm-up), when the generation used a GPU."""
    if not args.compare_cpu or plan.gen_device == "cpu":
        return
    if plan.params < COMPARE_MIN_PARAMS and not os.environ.get("GPU_DOCTOR_COMPARE_SMALL"):
        # no verdict is drawn from the ratio below this size (launch-bound: kb/gpu-generation-slower-than-cpu
        # needs gen.params >= 100M), so the comparison would only cost a second model load and two generations
        result["cpu_compare_skipped"] = (f"the model has {plan.params:,} parameters: below {COMPARE_MIN_PARAMS:,} "
                                         "a GPU/CPU speed ratio is launch-bound and judges nothing; use --model "
                                         "builtin:1b or a real model to compare speeds")
        return
    n = cpu_compare_tokens(args, plan.params)
    cpu_est = estimate_footprint(plan.cfg, "float32", PROMPT_LEN + n, "cpu", params=plan.params)
    result["cpu_estimate"] = cpu_est
    free_now = host_available_bytes()
    if free_now is not None and cpu_est["total_bytes"] > free_now:
        result["cpu_compare_skipped"] = (f"a float32 copy needs {cpu_est['total_bytes'] / GIB:.2f} GiB, "
                                         f"host has {free_now / GIB:.2f} GiB available")
        return
    if _time_left(args) < 30:
        result["cpu_compare_skipped"] = f"only {_time_left(args):.0f} s left of the time limit"
        return
    progress("comparing with the CPU")
    t0 = time.perf_counter()
    try:
        cpu_model = load_model(plan.model_dir, "cpu", "float32", None, builtin_classes(plan))
        cpu_inputs = {k: v.to("cpu") for k, v in inputs.items()}
        timed_generate(cpu_model, cpu_inputs, n, "cpu", report_progress=False, max_time=_time_left(args) * 0.4)
        cg = timed_generate(cpu_model, cpu_inputs, n, "cpu", report_progress=False, max_time=_time_left(args) * 0.7)
        del cpu_model
    except Exception as e:  # noqa: BLE001
        result["cpu_compare_error"] = f"{type(e).__name__}: {e}"
        return
    finally:
        _lap(result, "cpu_compare", t0)
    result.update({"cpu_new_tokens": cg["new_tokens"], "cpu_tokens_per_s": cg["tokens_per_s"],
                   "cpu_ttft_s": cg["ttft_s"], "cpu_token_times": cg["token_times"],
                   "gpu_vs_cpu_ratio": g["tokens_per_s"] / cg["tokens_per_s"]})
    fact("gen.cpu_tokens_per_s", round(cg["tokens_per_s"], 3))
    fact("gen.gpu_vs_cpu_ratio", round(result["gpu_vs_cpu_ratio"], 4))


def start_prewarm(args, torch, plan: Plan):  # noqa: ANN001
    """The GPU's first-time costs in a thread while transformers is imported: only for the small built-in model
    on a GPU (its shapes are known and its tensors take a few MB), unless GPU_DOCTOR_PREWARM=0."""
    if (plan.device != "cuda" or not builtin_classes(plan) or plan.params >= COMPARE_MIN_PARAMS
            or os.environ.get("GPU_DOCTOR_PREWARM", "1") == "0"):
        return None
    return _Prewarm(torch, plan.cfg, plan.dtype, args.max_new_tokens)


def run(args, result: dict) -> dict:
    """The generation; *result* is filled as it goes, so the caller can send what was established on failure."""
    result.update({"requested_device": args.device, "max_new_tokens": args.max_new_tokens,
                   "python": sys.executable, "status": "fail"})
    fact("gen.requested_device", args.device)
    torch = import_stack(args, result)
    bytecode_cache(args.cache_dir, result)
    cache_package_map(args.cache_dir, result)
    device, dtype_name = choose_device(args, torch, result)
    plan = size_model(args, torch, device, dtype_name, result)
    if device == "cpu" and not args.threads and not os.environ.get("OMP_NUM_THREADS") and \
            plan.params < COMPARE_MIN_PARAMS:
        # a launch-bound model gains nothing from intra-op threads, and on a busy machine their barriers cost
        # seconds: 32 tokens of the tiny model took 3.0-6.3 s with 2 threads, 0.14-0.28 s with 1 (2-core
        # machine under load, docs/BENCHMARKS.md)
        torch.set_num_threads(1)
        result["cpu_threads"] = 1
    check_fits(args, torch, plan, result)
    if device == "cuda":
        result["cudnn_attention"] = leave_out_cudnn_attention(torch)
    plan.prewarm = start_prewarm(args, torch, plan)
    tok = load_tokenizer(plan, result)
    model = load_on_device(args, torch, plan, result)
    inputs = prompt_inputs(torch, tok, model)
    g = generate_on_device(args, model, inputs, plan, result)
    record_generation(torch, tok, g, plan, result)
    compare_with_cpu(args, inputs, g, plan, result)
    if "cpu_tokens_per_s" in result or "cpu_compare_error" in result:
        result["peak_rss_bytes_with_cpu_compare"] = peak_rss_bytes()
    result["status"] = "ok"
    fact("gen.ran", True)
    return result


def host_torch_probe(path: str) -> str | None:
    """Run the torch probe (diagnostics/probes/torch_child.py, at *path*) in this process, before the generation:
    one torch import serves both.  Its records go to the parent first, ended by the probe's final record
    ``{"done": true}`` (everything after it is the generation's).  Returns None when the generation may go on
    in this process, else why not: torch did not import, or the device query or the smoke test failed (a GPU
    left in an error state must not colour the generation's own finding: the parent then runs the generation
    in a fresh child, as it would have without the shared import)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_doctor_torch_probe", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the torch probe from {path}")
    probe = importlib.util.module_from_spec(spec)
    write_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True   # as the probe's own child runs
    try:
        spec.loader.exec_module(probe)
    finally:
        sys.dont_write_bytecode = write_bytecode
    probe.OUT = _out
    probe.main()       # an exception here ends the child before the final record: the parent says "crashed"
    emit({"done": True})
    seen = probe.SEEN
    if "torch" not in sys.modules or seen.get("torch.import_error") or seen.get("torch.installed") is False:
        return "torch did not import in the torch check"
    if seen.get("torch.smoke_error") or seen.get("torch.smoke_ok") is False:
        return "the torch check's device query or smoke test failed"
    return None


def _send_partial(partial: dict) -> None:
    if partial:
        emit({"partial": {k: v for k, v in partial.items() if k != "status"}})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="gpu-doctor test generation (child process)")
    ap.add_argument("--model", default=None)
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"])
    ap.add_argument("--device-map", default=None, help="passed to from_pretrained (e.g. auto) to mimic offload")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--no-compare-cpu", dest="compare_cpu", action="store_false")
    ap.add_argument("--force-load", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--time-budget", type=float, default=3600.0,
                    help="the parent's time limit: long generations are cut short to report before it")
    ap.add_argument("--build-only", action="store_true", help="build the built-in model and stop")
    ap.add_argument("--bf16-targets", default="", help="comma list of GPU targets with native bf16 (dtype auto)")
    ap.add_argument("--torch-probe", default=None, metavar="PATH",
                    help="run this torch probe script first, in this process (one torch import for both)")
    args = ap.parse_args(argv)
    global _out
    if _out is sys.stdout and argv is None:
        # the protocol keeps the real stdout to itself; anything else printed to stdout goes to stderr,
        # so a library's stray print can never split a protocol line
        _out = os.fdopen(os.dup(1), "w", encoding="utf-8")
        sys.stdout.flush()
        os.dup2(2, 1)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    partial: dict = {}
    if args.torch_probe:
        why = host_torch_probe(args.torch_probe)
        if why is not None:
            emit({"fresh": why})   # the parent runs the generation in a child of its own, or skips it
            return 3
    try:
        if args.build_only:
            path, name = resolve_model(args.model, args.cache_dir, "cpu")
            emit({"result": {"status": "ok", "model": name, "model_dir": path}})
            return 0
        result = run(args, partial)
    except Stop as s:
        _send_partial(partial)
        fact("gen.error", s.message)
        emit({"error": s.message, "kind": s.kind})
        return 1
    except ImportError as e:
        msg = (f"the target interpreter {sys.executable} cannot import what the test generation needs "
               f"(torch, transformers, tokenizers): {type(e).__name__}: {e}")
        _send_partial(partial)
        fact("gen.error", msg)
        emit({"error": msg, "kind": "import-failed"})
        return 1
    except BaseException as e:  # noqa: BLE001 - report anything, then fail
        if isinstance(e, KeyboardInterrupt):
            raise
        kind = "error"
        try:
            where = _is_oom(e)
            if where:
                fact("gen.oom", where)
                kind = f"oom-{where}"
        except Exception:  # noqa: BLE001
            pass
        msg = f"{type(e).__name__}: {e}"
        traceback.print_exc(file=sys.stderr)
        _send_partial(partial)
        fact("gen.error", msg)
        emit({"error": msg, "kind": kind})
        return 1
    emit({"result": result})
    return 0


def _exit_now(code: int) -> None:
    """End the child as soon as its result is out: a normal interpreter exit tears down torch and transformers
    (1.3-1.9 s measured on the 2-core machine, docs/BENCHMARKS.md) and the parent waits for the exit."""
    for stream in (_out, sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe: nothing more can be said anyway
            pass
    os._exit(code)


if __name__ == "__main__":
    _exit_now(main())
