"""The test generation: prove the stack can run a model, and catch CPU fallback and out-of-memory on load.

The doctor never imports torch or transformers itself.  ``run_generation`` starts ``child.py`` (a
self-contained script: stdlib + torch + transformers) with the *target* interpreter through
``diagnostics.runner.run_child``; the child reports progress, facts and results as ``@@DIAG {json}`` lines,
so whatever it established survives a crash, a kill by the OOM killer or a timeout.

Public API (used by the service and the CLI's ``generate`` command, diagnostics/cli_generate.py):
  run_generation(python, model, device, max_new_tokens, timeout, compare_cpu, progress, ..., cancel, nice) -> dict
This module imports nothing from outside the standard library at import time (platformdirs lazily).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

from .. import facts as factcat
from ..paths import default_cache_dir  # noqa: F401  (re-exported: bench/ and callers name it here)
from ..runner import ChildResult, parse_record, run_child
from . import child as _child

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
CONTRACT_KEYS = ("device", "model", "new_tokens", "tokens_per_s", "load_s", "ttft_s", "peak_rss_bytes",
                 "peak_gpu_bytes", "text")
# a GPU run slower than this fraction of the CPU run on the same model is a finding (see the KB entry
# gpu-generation-slower-than-cpu); 1.0 means "slower than the CPU at all"
SLOWER_THAN_CPU_RATIO = 1.0
# below this size (child.COMPARE_MIN_PARAMS) a generation is bound by kernel launches and Python, not by the
# device: a healthy GPU can be slower than the CPU on the tiny built-in model, so the comparison is only judged
# for larger models (and the child runs a short CPU comparison below it)
COMPARE_MIN_PARAMS = _child.COMPARE_MIN_PARAMS
LOG_TAIL_CHARS = 20_000
GIB = 1024 ** 3

ProgressFn = Callable[[str], None]


def child_argv(python: str, model: str | None, device: str, max_new_tokens: int, compare_cpu: bool,
               cache_dir: str, dtype: str = "auto", device_map: str | None = None,
               force_load: bool = False, build_only: bool = False, time_budget: float = 3600.0,
               torch_probe: str | None = None) -> list[str]:
    argv = [python, CHILD, "--device", device, "--max-new-tokens", str(int(max_new_tokens)),
            "--cache-dir", cache_dir, "--dtype", dtype, "--time-budget", f"{time_budget:g}"]
    if torch_probe:
        argv += ["--torch-probe", torch_probe]
    if model:
        argv += ["--model", model]
    if not compare_cpu:
        argv.append("--no-compare-cpu")
    if device_map:
        argv += ["--device-map", device_map]
    if force_load:
        argv.append("--force-load")
    if build_only:
        argv.append("--build-only")
    if dtype == "auto":
        argv += ["--bf16-targets", ",".join(native_bf16_targets())]
    return argv


def native_bf16_targets() -> list[str]:
    """GPU targets with native bf16 per the support matrix (kb/support/gpu-matrix.yaml): the automatic dtype
    picks bf16 only on these, never from torch.cuda.is_bf16_supported(), which every ROCm build answers True."""
    try:
        from ..support import get_matrix

        m = get_matrix()
    except Exception:  # no matrix: float16 everywhere, which every GPU runs
        return []
    return sorted(t for table in (m.amd, m.nvidia) for t, row in table.items() if row.get("native_bf16"))


def _progress_text(rec: dict[str, Any]) -> str:
    stage = str(rec.get("progress"))
    extra = {k: v for k, v in rec.items() if k != "progress"}
    if stage in ("generating", "warming up") and "tokens" in extra:
        return f"{stage} ({extra['tokens']} tokens)"
    if extra:
        return stage + " (" + ", ".join(f"{k}={v}" for k, v in extra.items()) + ")"
    return stage


def run_generation(python: str = sys.executable, model: str | None = None, device: str = "auto",
                   max_new_tokens: int = 32, timeout: float = 600, compare_cpu: bool = True,
                   progress: ProgressFn | None = None, *, dtype: str = "auto", device_map: str | None = None,
                   force_load: bool = False, cache_dir: str | None = None,
                   env: dict[str, str] | None = None, cancel: Any = None, nice: int = 0,
                   torch_probe: Any = None) -> dict[str, Any]:
    """Run the test generation in a child process of *python*; never raises for the child's failures.

    *cancel* (a ``threading.Event``, or anything with ``is_set()``): when set, the child is stopped at once
    (SIGTERM, then SIGKILL) and the result says ``"stopped": True``.  *nice* > 0 lowers the child's CPU
    priority (the service runs it beside the probes and lets the torch probe go first).

    Returns the CONTRACT ``generate`` keys plus status, error, estimate, facts, evidence, log, ...
    *env* adds variables to the child's environment (e.g. GPU_DOCTOR_GPU_MEMORY_FRACTION=0.01 caps the
    child's GPU memory through torch.cuda.set_per_process_memory_fraction, to provoke an OOM for real).

    *torch_probe* (a ``diagnostics.probing.HostedProbe``): the child runs that probe first, in its own process,
    so torch is imported once for both; the probe's records go to it (and its stage budgets bound the child
    until the probe's final record), the rest is the generation's.  When the probe did not finish, the
    generation is skipped; when it found the device broken, the generation runs again in a fresh child.
    """
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, not {device!r}")
    cache_dir = cache_dir or default_cache_dir()
    argv = child_argv(python, model, device, max_new_tokens, compare_cpu, cache_dir, dtype, device_map,
                      force_load, time_budget=max(1.0, timeout - 5.0),
                      torch_probe=torch_probe.script if torch_probe is not None else None)
    child_env = _child_env(torch_probe, env)
    records: list[dict[str, Any]] = []

    def on_line(stream: str, line: str) -> None:
        if torch_probe is not None and torch_probe.feed(stream, line):
            return
        if stream != "stdout":
            return
        rec = parse_record(line)
        if rec is None:
            return
        records.append(rec)
        if progress is not None and "progress" in rec:
            progress(_progress_text(rec))

    if progress is not None:
        progress("waiting for the torch check" if torch_probe is not None else "starting the generation child")
    if torch_probe is not None:
        torch_probe.begin()
    res = run_child(argv, timeout=timeout, env=child_env, on_line=on_line, cancel=cancel, nice=nice,
                    deadline=torch_probe.deadline if torch_probe is not None else None)
    if torch_probe is not None:
        torch_probe.child_ended(res)
        fresh = next((str(r["fresh"]) for r in records if "fresh" in r), None)
        probe = torch_probe.result or {}
        if fresh is not None and not (cancel is not None and cancel.is_set()):
            # the torch check found the device broken: the generation's own finding comes from a fresh process
            out = run_generation(python, model, device, max_new_tokens, timeout, compare_cpu, progress, dtype=dtype,
                                 device_map=device_map, force_load=force_load, cache_dir=cache_dir, env=env,
                                 cancel=cancel, nice=nice)
            out.setdefault("notes", []).append(f"ran in a fresh child: {fresh}")
            return out
        if not probe.get("id") or probe.get("status") in ("timeout", "crashed") or fresh is not None:
            return _skipped(probe, fresh, cancel, model, device, res.duration_s)
    if not records and res.stdout:            # the callback is the main path; the captured text is the backup
        records = [r for r in (parse_record(ln) for ln in res.stdout.splitlines()) if r is not None]
    out = assemble(records, res, requested_device=device, model=model, timeout=timeout)
    if cancel is not None and cancel.is_set():  # not a hang: the user pressed Stop
        out.update(status="skipped", error="stopped by the user", error_kind="stopped", stopped=True)
        out["summary"] = "stopped by the user"
        out.setdefault("facts", {}).pop("gen.error", None)
        out["facts"].pop("gen.error_kind", None)
        out["facts"]["gen.ran"] = False
    return out


def _child_env(torch_probe: Any, env: dict[str, str] | None) -> dict[str, str]:
    """The generation child's environment: offline, unbuffered UTF-8, plus *env*; when it hosts the torch probe,
    the probe's environment (what its own child would get), minus its no-bytecode switch."""
    if torch_probe is None:
        child_env = dict(os.environ)
    else:
        child_env = torch_probe.child_env()
        if "PYTHONDONTWRITEBYTECODE" not in os.environ:
            child_env.pop("PYTHONDONTWRITEBYTECODE", None)
    child_env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
                      "PYTHONIOENCODING": "utf-8"})
    child_env.update(env or {})
    return child_env


def _skipped(probe: dict[str, Any], fresh: str | None, cancel: Any, model: str | None, device: str,
             duration_s: float) -> dict[str, Any]:
    """The result of a generation that did not start: the hosted torch check did not finish, found the device
    broken (*fresh*), or the user pressed Stop."""
    why = (f"the torch check {probe.get('status') or 'did not finish'}"
           + (f" during '{probe['stage']}'" if probe.get("stage") else "")
           + " in the child the test generation shares with it; the generation did not start")
    if fresh is not None:
        why = f"the test generation did not run: {fresh}"
    if cancel is not None and cancel.is_set():
        why = "stopped by the user"
    return {**{k: None for k in CONTRACT_KEYS}, "model": model or "builtin:tiny", "status": "skipped",
            "error": why, "summary": why, "facts": {"gen.ran": False}, "evidence": [], "notes": [],
            "log": "", "duration_s": round(duration_s, 3), "requested_device": device,
            "last_stage": None, "stopped": bool(cancel is not None and cancel.is_set())}


def _collect(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The child's protocol records, sorted by kind (the last result and error win)."""
    got: dict[str, Any] = {"facts": {}, "evidence": [], "notes": [], "stages": [], "partial": {}, "result": None,
                           "error": None, "error_kind": None}
    for rec in records:
        if "fact" in rec and "value" in rec:
            got["facts"][str(rec["fact"])] = rec["value"]
        if isinstance(rec.get("evidence"), dict):
            got["evidence"].append({"source": str(rec["evidence"].get("source", "generation")),
                                    "excerpt": str(rec["evidence"].get("excerpt", ""))})
        if "note" in rec:
            got["notes"].append(str(rec["note"]))
        if "progress" in rec:
            got["stages"].append(str(rec["progress"]))
        if isinstance(rec.get("partial"), dict):
            got["partial"].update(rec["partial"])
        if isinstance(rec.get("result"), dict):
            got["result"] = rec["result"]
        if "error" in rec:
            got["error"], got["error_kind"] = str(rec["error"]), str(rec.get("kind") or "error")
    return got


def _stderr_tail(res: ChildResult, lines: int = 15) -> str:
    return "\n".join(res.stderr.rstrip().splitlines()[-lines:])


def _fate(got: dict[str, Any], res: ChildResult, last_stage: str | None,
          timeout: float | None) -> tuple[str, str | None, str | None]:
    """(status, error, error_kind) from the result record and how the child ended; adds evidence to *got*."""
    evidence, facts = got["evidence"], got["facts"]
    error, error_kind = got["error"], got["error_kind"]
    result = got["result"]
    if result is not None and result.get("status") == "ok":
        return "ok", error, error_kind
    if res.timed_out:
        error = f"the generation did not finish within {timeout:g} s (last stage: {last_stage or 'starting'}); stopped"
        evidence.append({"source": "generation", "excerpt": error})
        return "timeout", error, "timeout"
    if res.start_error:
        return "fail", res.start_error, "start-failed"
    if res.signal:
        tail = _stderr_tail(res)
        if res.signal == "SIGKILL":
            # nobody here sent it (a timeout is reported above): on Linux that is almost always the OOM killer
            facts["gen.oom"] = "host"
            error_kind = "oom-host"
            error = (f"the generation process was killed by SIGKILL during '{last_stage or 'start'}': most "
                     "likely the kernel's out-of-memory killer (check `dmesg | grep -i 'killed process'`)")
        else:
            error_kind = "crashed"
            error = f"the generation process crashed with {res.signal} during '{last_stage or 'start'}'"
        evidence.append({"source": "generation", "excerpt": error + ("\n" + tail if tail else "")})
        return "crashed", error, error_kind
    if error is None:
        tail = _stderr_tail(res)
        error = f"the generation child exited with status {res.returncode} without a result"
        if tail:
            error += ": " + tail.splitlines()[-1]
        error_kind = "error"
        evidence.append({"source": "generation", "excerpt": tail or error})
    if error_kind in ("oom-gpu", "oom-host", "too-large") and not any(e["excerpt"] == error for e in evidence):
        evidence.append({"source": "generation", "excerpt": error})
    return "fail", error, error_kind


def _warnings(out: dict[str, Any], facts: dict[str, Any], notes: list[str]) -> list[str]:
    """What a generation that ran should make the user look at (and notes on what was not judged)."""
    warnings: list[str] = []
    if facts.get("gen.offloaded"):
        warnings.append("the model is split between the GPU and the CPU/disk (offloaded): generation is slow")
    ratio = out.get("gpu_vs_cpu_ratio")
    params = facts.get("gen.params") or 0
    if isinstance(ratio, (int, float)) and ratio < SLOWER_THAN_CPU_RATIO:
        if params >= COMPARE_MIN_PARAMS:
            warnings.append(f"the GPU generated {ratio:.2f}x as fast as the CPU on the same model")
        else:
            notes.append(f"GPU/CPU speed ratio {ratio:.2f} on a {params:,}-parameter model: too small to judge "
                         f"(launch-bound); use --model builtin:1b or a real model to compare speeds")
    if out.get("target_device") == "cuda" and facts.get("gen.device") == "cpu":
        warnings.append("a GPU was requested but the model ran on the CPU")
    if facts.get("gen.estimate_exceeds_vram") or facts.get("gen.estimate_exceeds_host"):
        warnings.append("the memory estimate exceeded the free memory, yet it was loaded (--device-map or --force-load)")
    return warnings


def _matcher_log(stderr_tail: str, evidence: list[dict[str, str]], error: str | None) -> str:
    """The child's stderr tail, then the error and evidence it sent through the protocol (the matcher reads
    log text, and those never reached stderr)."""
    extra = [e["excerpt"] for e in evidence if e["excerpt"] and e["excerpt"] not in stderr_tail]
    if error and error not in stderr_tail and error not in extra:
        extra.append(error)
    return (stderr_tail.rstrip("\n") + "\n" if stderr_tail.strip() else "") + "\n".join(extra)


def assemble(records: list[dict[str, Any]], res: ChildResult, *, requested_device: str = "auto",
             model: str | None = None, timeout: float | None = None) -> dict[str, Any]:
    """Turn the child's protocol records and its fate (exit, signal, timeout) into the generation report."""
    got = _collect(records)
    facts, notes = got["facts"], got["notes"]
    out: dict[str, Any] = {k: None for k in CONTRACT_KEYS}
    out["model"] = model or "builtin:tiny"
    out.update(got["partial"])
    if got["result"]:
        out.update(got["result"])
    out["requested_device"] = requested_device
    last_stage = got["stages"][-1] if got["stages"] else None
    out["last_stage"] = last_stage
    out["duration_s"] = round(res.duration_s, 3)
    out["child"] = {"argv": res.argv, "returncode": res.returncode, "signal": res.signal,
                    "timed_out": res.timed_out, "status": res.status}
    status, error, error_kind = _fate(got, res, last_stage, timeout)
    facts.setdefault("gen.requested_device", requested_device)
    facts["gen.ran"] = status == "ok"
    if error:
        facts["gen.error"] = error
        facts["gen.error_kind"] = error_kind or "error"
    if error_kind in ("oom-gpu", "oom-host"):
        facts["gen.oom"] = error_kind.split("-", 1)[1]
    warnings = _warnings(out, facts, notes) if status == "ok" else []
    out.update(status="warn" if warnings else status, error=error, error_kind=error_kind, warnings=warnings)
    good, problems = factcat.clean_facts(facts)
    out["facts"] = good
    notes.extend(f"dropped fact: {p}" for p in problems)
    out["evidence"] = got["evidence"]
    out["notes"] = notes
    out["log"] = _matcher_log(res.stderr[-LOG_TAIL_CHARS:] if res.stderr else "", got["evidence"], error)
    out["summary"] = summary_line(out)
    return out


def summary_line(g: dict[str, Any]) -> str:
    """One line for lists and probe tables."""
    if g.get("error"):
        return f"{g.get('error_kind') or 'error'}: {str(g['error']).splitlines()[0][:200]}"
    s = f"{g.get('new_tokens')} tokens on {g.get('device')} at {_f(g.get('tokens_per_s'), '.1f')} tokens/s"
    if g.get("gpu_vs_cpu_ratio") is not None:
        s += f" ({_f(g['gpu_vs_cpu_ratio'], '.2f')}x the CPU)"
    if g.get("warnings"):
        s += "; " + "; ".join(g["warnings"])
    return s


# ---------------------------------------------------------------------------------------------- text output


def _b(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return "n/a"
    if n >= GIB:
        return f"{n / GIB:.2f} GiB"
    return f"{n / 1024 ** 2:.1f} MiB"


def _f(x: Any, fmt: str = ".2f", unit: str = "") -> str:
    return f"{x:{fmt}}{unit}" if isinstance(x, (int, float)) else "n/a"


def render_text(g: dict[str, Any]) -> str:
    glyph = {"ok": "[✓]", "warn": "[!]", "fail": "[✗]", "timeout": "[⏱]", "crashed": "[☠]"}.get(g["status"], "[?]")
    lines = [f"{glyph} Test generation: {g['status']}  (model {g.get('model')}, requested {g.get('requested_device')}"
             f", ran on {g.get('device') or 'n/a'}, dtype {g.get('dtype') or 'n/a'})"]
    if g.get("error"):
        lines.append(f"    error ({g.get('error_kind')}): {g['error']}")
    if g.get("new_tokens") is not None:
        lines.append(f"    {g['new_tokens']} new tokens at {_f(g.get('tokens_per_s'), '.1f')} tokens/s; "
                     f"load {_f(g.get('load_s'), '.2f', ' s')}, time to first token {_f(g.get('ttft_s'), '.3f', ' s')}")
    if g.get("cpu_tokens_per_s") is not None:
        lines.append(f"    same model on the CPU: {_f(g['cpu_tokens_per_s'], '.1f')} tokens/s "
                     f"(GPU/CPU = {_f(g.get('gpu_vs_cpu_ratio'), '.2f')}x)")
    elif g.get("cpu_compare_skipped"):
        lines.append(f"    CPU comparison skipped: {g['cpu_compare_skipped']}")
    est = g.get("estimate")
    if isinstance(est, dict):
        lines.append(f"    estimate before loading: {_b(est.get('total_bytes'))} = weights {_b(est.get('weights_bytes'))}"
                     f" ({est.get('params'):,} params x {est.get('dtype_bytes')} B) + KV cache "
                     f"{_b(est.get('kv_cache_bytes'))} + activations {_b(est.get('activations_bytes'))} + runtime "
                     f"{_b(est.get('runtime_bytes'))}")
        free = []
        if g.get("gpu_free_bytes") is not None:
            free.append(f"GPU free {_b(g['gpu_free_bytes'])} of {_b(g.get('gpu_total_bytes'))}")
        if g.get("host_available_bytes") is not None:
            free.append(f"host available {_b(g['host_available_bytes'])}")
        if free:
            lines.append("    " + ", ".join(free))
    if g.get("peak_rss_bytes") is not None or g.get("peak_gpu_bytes") is not None:
        lines.append(f"    measured peak: host RSS {_b(g.get('peak_rss_bytes'))}, GPU allocated {_b(g.get('peak_gpu_bytes'))}")
    pd = g.get("param_devices")
    if isinstance(pd, dict) and pd:
        counts: dict[str, int] = {}
        for d in pd.values():
            counts[d] = counts.get(d, 0) + 1
        lines.append("    parameters by device: " + ", ".join(f"{d}: {n}" for d, n in sorted(counts.items())))
    for w in g.get("warnings") or []:
        lines.append(f"    [!] {w}")
    if g.get("text"):
        t = g["text"].replace("\n", " ")
        lines.append(f"    text: {t[:200]}{'…' if len(t) > 200 else ''}")
    for n in g.get("notes") or []:
        lines.append(f"    note: {n}")
    return "\n".join(lines)
