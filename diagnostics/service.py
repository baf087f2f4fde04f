"""The one service layer the CLI and the web pages share.

Nothing here imports torch: GPU work happens in child processes started by the probes and the generation.
"""
from __future__ import annotations

import datetime as _dt
import os
import socket
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable

from . import __version__
from . import facts as factcat
from .kb import KnowledgeBase, load_kb
from .matcher import Matcher

MAX_TEXT_BYTES = 64 * 1024 * 1024  # what one pasted log or dump may hold before it is cut

_kb_lock = threading.Lock()
_kb_cache: dict[str, tuple[tuple, KnowledgeBase, Matcher]] = {}


def _kb_dir(directory: str | None) -> Path:
    from .kb import KB_DIR

    return Path(directory or os.environ.get("GPU_DOCTOR_KB") or KB_DIR)


def _kb_stamp(d: Path) -> tuple:
    try:
        return tuple(sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in d.glob("*.y*ml")))
    except OSError:
        return ()


def get_kb(directory: str | None = None) -> tuple[KnowledgeBase, Matcher]:
    """The knowledge base and its compiled matcher, reloaded when an entry file changes."""
    d = _kb_dir(directory)
    stamp = _kb_stamp(d)
    with _kb_lock:
        cached = _kb_cache.get(str(d))
        if cached and cached[0] == stamp:
            return cached[1], cached[2]
        kb = load_kb(d)
        m = Matcher(kb)
        _kb_cache[str(d)] = (stamp, kb, m)
        return kb, m


def read_text_file(path: str, limit: int = MAX_TEXT_BYTES) -> tuple[str, list[str]]:
    """Read a user-supplied log or dump: any bytes, any size; returns text and notes about what was done."""
    notes: list[str] = []
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        data = data[:limit]
        notes.append(f"{os.path.basename(path)}: larger than {limit // (1024 * 1024)} MiB; only the first part was read")
    return decode_text(data, os.path.basename(path), notes), notes


def decode_text(data: bytes, name: str = "input", notes: list[str] | None = None) -> str:
    text = data.decode("utf-8", errors="replace")
    if notes is not None:
        bad = text.count("\ufffd")
        if bad > 0:
            notes.append(f"{name}: {bad} byte(s) were not valid UTF-8 and were replaced")
        if data[:4096].count(b"\x00") > 16:
            notes.append(f"{name}: looks like a binary file; only its readable text was matched")
    return text


def parse_dumps(dumps: Iterable[tuple[str, str]], kind: str = "auto") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parse pasted dumps; return merged facts (first dump wins on conflicts) and per-dump results."""
    from . import parsers

    merged: dict[str, Any] = {}
    results = []
    for name, text in dumps:
        res = parsers.parse(text, kind)
        good, problems = factcat.clean_facts(res.facts)
        for k, v in good.items():
            merged.setdefault(k, v)
        d = res.to_dict()
        d["facts"] = good
        d["notes"] = list(d["notes"]) + [f"parser produced a bad fact: {p}" for p in problems]
        d["name"] = name
        results.append(d)
    return merged, results


def diagnose_text(logs: Iterable[tuple[str, str]] = (), dumps: Iterable[tuple[str, str]] = (),
                  facts: dict[str, Any] | None = None, kb_dir: str | None = None,
                  detect_dumps_in_logs: bool = True, description: str | None = None) -> dict[str, Any]:
    """Diagnose from text alone: error logs, dumps (parsed for facts) and/or facts.

    Logs that turn out to be a known tool's output (a pasted rocminfo, say) are parsed for facts too.
    Given facts win over facts parsed from dumps.
    """
    from . import parsers

    logs = list(logs)
    dumps = list(dumps)
    if detect_dumps_in_logs:
        for name, text in logs:
            if parsers.detect_kind(text[:200_000]):
                dumps.append((name, text))
    dump_facts, parsed = parse_dumps(dumps)
    all_facts = dict(dump_facts)
    given, problems = factcat.clean_facts(dict(facts or {}))
    all_facts.update(given)
    from .derive import derive  # pasted dumps get the same derived facts as a live run (support matrix included)

    derived = derive(all_facts)
    all_facts.update(derived)
    kb, matcher = get_kb(kb_dir)
    texts = logs + [(n, t) for n, t in dumps if (n, t) not in logs]
    sources = {k: "dump" for k in dump_facts}
    sources.update({k: "facts" for k in given})
    sources.update({k: "derived" for k in derived if k not in sources})
    result = matcher.match(all_facts, texts, fact_sources=sources)
    # what the user wrote in their own words (English or Chinese) around the pasted output, and a description
    from .symptoms import merge_symptoms

    merge_symptoms(result, "\n".join(t for _, t in logs), kb)
    if description and description.strip():
        merge_symptoms(result, description, kb, prose_only=False)
    result["facts"] = {**all_facts, **result.pop("facts_from_logs", {})}
    result["parsed"] = parsed
    result["notes"] = [f"ignored fact: {p}" for p in problems]
    result["kb_version"] = kb.version
    result["kb_errors"] = [str(e) for e in kb.errors]
    return _fill(result, kb_dir)


def _fill(report: dict[str, Any], kb_dir: str | None = None) -> dict[str, Any]:
    """Fix-text placeholders ({torch_install}, {gfx}, ...) filled from the support matrix and the report's facts, so
    every output (text, JSON, UI, sessions, exports) shows filled text; the raw text stays as <field>_template."""
    from .support import fill_diagnoses

    return fill_diagnoses(report, kb_dir)


def new_report(source: str) -> dict[str, Any]:
    return {
        "session_id": str(uuid.uuid4()),
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "tool_version": __version__,
        "source": source,
        "facts": {},
        "probes": [],
        "diagnoses": [],
        "not_ruled_out": [],
        "generation": None,
        "logs": [],
    }


def rediagnose(report: dict[str, Any], kb_dir: str | None = None) -> dict[str, Any]:
    """A copy of *report* with diagnoses from today's knowledge base (facts and logs are kept as they were)."""
    out = dict(report)
    kb, matcher = get_kb(kb_dir)
    unknown = unknown_from_probes(out.get("probes") or [])
    logs = [(lg.get("name", "log"), lg.get("text", "")) for lg in out.get("logs") or []]
    logs += probe_logs(out.get("probes") or [])
    facts, _ = factcat.clean_facts(dict(out.get("facts") or {}))
    from .derive import derive  # facts today's support matrix derives (sessions saved before it existed)

    facts.update(derive(facts))
    out["facts"] = facts
    res = matcher.match(facts, logs, unknown_facts=unknown, fact_sources=fact_sources(out.get("probes") or []))
    facts.update(res.get("facts_from_logs") or {})  # oom.* from the error texts
    out["diagnoses"] = res["diagnoses"]
    out["not_ruled_out"] = res["not_ruled_out"]
    out["kb_version"] = kb.version
    out["rediagnosed_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return _fill(out, kb_dir)


def unknown_from_probes(probes: list[dict[str, Any]]) -> set[str]:
    """Facts that probes which crashed or timed out were supposed to establish but did not."""
    unknown: set[str] = set()
    for p in probes:
        if p.get("status") in ("crashed", "timeout"):
            have = set((p.get("facts") or {}).keys())
            unknown.update(set(p.get("provides") or []) - have)
    return unknown


def probe_logs(probes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The raw text probes captured (tool errors, stderr of a crashed child) is matched like a pasted log."""
    out = []
    for p in probes:
        for lg in p.get("logs") or []:
            out.append((f"probe:{p.get('id')}:{lg.get('name', 'output')}", lg.get("text", "")))
    return out


def fact_sources(probes: list[dict[str, Any]]) -> dict[str, str]:
    src: dict[str, str] = {}
    for p in probes:
        for k in (p.get("facts") or {}):
            src.setdefault(k, f"probe:{p.get('id')}")
    return src


ProgressFn = Callable[[dict[str, Any]], None]


def merge_probe_facts(probes: list[dict[str, Any]]) -> dict[str, Any]:
    from .derive import derive

    facts: dict[str, Any] = {}
    for p in probes:
        for k, v in (p.get("facts") or {}).items():
            facts.setdefault(k, v)
    facts.update(derive(facts))
    return facts


def verdict(report: dict[str, Any]) -> str:
    from .verdicts import compute

    return compute(report)


def run_local(*, python: str | None = None, root: str = "/", timeout: float | None = None,
              logs: Iterable[tuple[str, str]] = (), generate: bool = True, model: str | None = None,
              device: str = "auto", max_new_tokens: int = 32, env: dict[str, str] | None = None,
              on_event: ProgressFn | None = None, cancel: threading.Event | None = None,
              kb_dir: str | None = None) -> dict[str, Any]:
    """Run every local probe (and the test generation), match against the KB, return the report."""
    import sys

    from .probing import run_all

    python = python or sys.executable
    report = new_report("live")
    report["python"] = python
    # load and compile the KB while the probes run (it costs ~0.8 s of CPU; the torch import is the long pole)
    warm = threading.Thread(target=_warm_kb, args=(kb_dir,), daemon=True)
    warm.start()
    probes = run_all(python=python, root=root, timeout=timeout, env=env, on_event=on_event, cancel=cancel)
    warm.join()
    report["probes"] = probes
    facts = merge_probe_facts(probes)
    if generate and not (cancel and cancel.is_set()):
        report["generation"] = _generation(python, model, device, max_new_tokens, timeout, facts, on_event, root)
        gen_facts, _ = factcat.clean_facts((report["generation"] or {}).get("facts") or {})
        for k, v in gen_facts.items():
            facts.setdefault(k, v)
    report["facts"] = facts
    report["logs"] = [{"name": n, "text": t} for n, t in logs]
    return _diagnose_report(report, kb_dir)


def _watched_generation(run_generation: Callable[..., dict[str, Any]], root: str, **kwargs: Any) -> dict[str, Any]:
    """The generation under the GPU monitor (busy %, VRAM, temperature, power); the monitor never breaks it."""
    try:
        from .monitor import monitor_facts, to_record, watch
    except ImportError:
        return run_generation(**kwargs)
    gen, samples = watch(run_generation, root=root, **kwargs)
    if isinstance(gen, dict):
        try:
            gen["monitor"] = to_record(samples)
            gen.setdefault("facts", {}).update(monitor_facts(samples))
        except Exception as exc:  # a monitor bug costs the chart, never the generation
            gen["monitor"] = {"notes": [f"monitor failed: {type(exc).__name__}: {exc}"]}
    return gen


def _warm_kb(kb_dir: str | None) -> None:
    try:
        get_kb(kb_dir)
    except Exception:  # reported by the real call in _diagnose_report
        pass


def _generation(python: str, model: str | None, device: str, max_new_tokens: int, timeout: float | None,
                facts: dict[str, Any], on_event: ProgressFn | None, root: str = "/") -> dict[str, Any] | None:
    if facts.get("torch.installed") is False or facts.get("torch.import_error"):
        return {"status": "skipped", "error": "torch cannot be imported in the diagnosed interpreter", "facts": {}}
    try:
        from .generation import run_generation
    except ImportError as exc:
        return {"status": "skipped", "error": f"test generation unavailable: {exc}", "facts": {}}

    def progress(msg: str) -> None:
        if on_event:
            on_event({"event": "stage", "probe": "generation", "stage": msg})

    if on_event:
        on_event({"event": "start", "probe": "generation", "title": "Test generation"})
    try:
        gen = _watched_generation(run_generation, root, python=python, model=model, device=device,
                                  max_new_tokens=max_new_tokens, timeout=max(timeout or 0, 600), progress=progress)
    except Exception as exc:  # the report must survive a generation bug
        gen = {"status": "crashed", "error": f"internal error: {type(exc).__name__}: {exc}", "facts": {}}
    if on_event:
        on_event({"event": "end", "probe": "generation", "status": gen.get("status", "ok"),
                  "duration_s": gen.get("duration_s", 0.0), "summary": gen.get("summary")})
    return gen


def _diagnose_report(report: dict[str, Any], kb_dir: str | None = None) -> dict[str, Any]:
    kb, matcher = get_kb(kb_dir)
    probes = report.get("probes") or []
    logs = [(lg["name"], lg["text"]) for lg in report.get("logs") or []]
    logs += probe_logs(probes)
    gen = report.get("generation") or {}
    if gen.get("log"):
        logs.append(("generation", str(gen["log"])))
    res = matcher.match(report["facts"], logs, unknown_facts=unknown_from_probes(probes),
                        fact_sources=fact_sources(probes))
    report["facts"].update(res.get("facts_from_logs") or {})  # oom.* from the error texts
    report["diagnoses"] = res["diagnoses"]
    report["not_ruled_out"] = res["not_ruled_out"]
    report["kb_version"] = kb.version
    report["kb_errors"] = [str(e) for e in kb.errors]
    report["verdict"] = verdict(report)
    return _fill(report, kb_dir)
