"""The one service layer the CLI and the web pages share.

Nothing here imports torch: GPU work happens in child processes started by the probes and the generation.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
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

# what a failing paste says somewhere (the last-resort guesses are only made when the log shows something failed)
_ERRORISH = re.compile(r"(?i)\b(?:error|exception|traceback|failed|failure|fatal|cannot|can't|could not|unable to|"
                       r"not found|no such file|denied|segmentation fault|core dumped|aborted|killed|timed? ?out|"
                       r"not supported|unsupported|invalid)\b")


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


SEARCH_LIMIT = 25


def search_kb(query: str, kb: Any = None, limit: int = SEARCH_LIMIT) -> list[dict[str, Any]]:
    """KB entries a query describes, best first, by the retrieval that turns a description of symptoms into
    possible causes (diagnostics.symptoms: the symptom vocabulary, then BM25 over each entry's text): "vram
    full" finds the out-of-memory entries.  *kb*: a KnowledgeBase or a list of entries (default: the shipped
    one).  ``[{"id", "score", "phrase", ...}]``; benign entries are not ranked (match_symptoms leaves them out)."""
    from .symptoms import match_symptoms

    if kb is None:
        kb = get_kb()[0]
    return match_symptoms(query or "", kb=kb, limit=limit)


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
    """Diagnose from text alone: error logs, dumps (parsed for facts) and/or facts; returns a pasted report.

    Logs that turn out to be a known tool's output (a pasted rocminfo, say) are parsed for facts too.
    Given facts win over facts parsed from dumps.
    """
    from . import parsers

    logs = list(logs)
    dumps = list(dumps)
    to_parse = list(dumps)
    if detect_dumps_in_logs:
        for name, text in logs:
            if parsers.holds_facts(text[:200_000]):
                to_parse.append((name, text))
    dump_facts, parsed = parse_dumps(to_parse)
    all_facts = dict(dump_facts)
    given, problems = factcat.clean_facts(dict(facts or {}))
    all_facts.update(given)
    report = new_report("pasted")
    report["facts"] = all_facts
    report["logs"] = [{"name": n, "text": t} for n, t in logs]
    report["dumps"] = [{"name": n, "text": t} for n, t in dumps]
    report["parsed"] = parsed
    report["notes"] = [f"ignored fact: {p}" for p in problems]
    if description and description.strip():
        report["description"] = description
    sources = {k: "dump" for k in dump_facts}
    sources.update({k: "facts" for k in given})
    return diagnose(report, kb_dir, fact_sources=sources)


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
    """A copy of *report* diagnosed again with today's knowledge base and rules: derived facts, diagnoses, root
    causes, unexplained checks and the verdict are recomputed (the facts and texts it was given are kept)."""
    out = dict(report)
    out.pop("verdict", None)
    facts, _ = factcat.clean_facts(dict(out.get("facts") or {}))
    out["facts"] = facts
    diagnose(out, kb_dir)
    out["rediagnosed_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return out


def report_texts(report: dict[str, Any]) -> list[tuple[str, str]]:
    """Every text a report is matched against, as (source name, text): pasted logs and dumps, what the probes
    captured (tool errors, the output of a crashed child), and the test generation's log.  The one place this
    list is assembled (live runs, pasted input, re-diagnosis and the KB editor's "from a session" all use it)."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for key in ("logs", "dumps"):
        for lg in report.get(key) or []:
            if isinstance(lg, dict):
                item = (str(lg.get("name") or "log"), str(lg.get("text") or ""))
                if item not in seen:
                    seen.add(item)
                    out.append(item)
    out += probe_logs(report.get("probes") or [])
    gen = report.get("generation")
    if isinstance(gen, dict) and gen.get("log"):
        out.append(("generation", str(gen["log"])))
    return out


def unknown_from_probes(probes: list[dict[str, Any]], facts: dict[str, Any] | None = None) -> set[str]:
    """Facts that probes which crashed or timed out were supposed to establish and that nothing else did, and the
    derived facts (diagnostics.derive.DERIVED) that could not be computed because of them."""
    from .derive import DERIVED

    known = set(facts or {})
    unknown: set[str] = set()
    for p in probes:
        if p.get("status") in ("crashed", "timeout"):
            have = set((p.get("facts") or {}).keys())
            unknown.update(set(p.get("provides") or []) - have - known)
    if unknown:
        from .derive import derivable

        for name, inputs in DERIVED.items():
            if name not in known and any(i in unknown for i in inputs) and derivable(name, facts or {}):
                unknown.add(name)
    return unknown


def probe_logs(probes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The raw text probes captured (tool errors, stderr of a crashed child) is matched like a pasted log."""
    out = []
    for p in probes:
        for lg in p.get("logs") or []:
            out.append((f"probe:{p.get('id')}:{lg.get('name', 'output')}", lg.get("text", "")))
    return out


def fact_sources(probes: list[dict[str, Any]], facts: dict[str, Any] | None = None) -> dict[str, str]:
    """Where each fact came from: the first probe that reported it, else 'derived' for a derived one."""
    from .derive import DERIVED

    src: dict[str, str] = {}
    for p in probes:
        for k in (p.get("facts") or {}):
            src.setdefault(k, f"probe:{p.get('id')}")
    for k in (facts or {}):
        if k not in src and k in DERIVED:
            src[k] = "derived"
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
    """The verdict of *report*, always recomputed (diagnostics.verdicts, the one rule)."""
    from .verdicts import compute

    return compute(report)


def run_local(*, python: str | None = None, root: str = "/", timeout: float | None = None,
              logs: Iterable[tuple[str, str]] = (), generate: bool = True, model: str | None = None,
              device: str = "auto", max_new_tokens: int = 32, env: dict[str, str] | None = None,
              on_event: ProgressFn | None = None, cancel: threading.Event | None = None,
              kb_dir: str | None = None, early_verdict: bool = False) -> dict[str, Any]:
    """Run every local probe and, at the same time, the test generation; match against the KB; return the report.

    The generation starts with the probes, in its own child (crash, hang and OOM survival as before); when the
    probes end, a torch they found unusable stops it (the report then says why it was skipped).  With
    *early_verdict*, an ``{"event": "verdict", "report": ...}`` carrying the probes' own diagnosis is sent as
    soon as the probes end while the generation still runs (the web page shows it at once)."""
    import sys

    from .probing import run_all

    python = python or sys.executable
    report = new_report("live")
    report["python"] = python
    report["logs"] = [{"name": n, "text": t} for n, t in logs]
    gen = None
    hosted = None
    if generate and not (cancel and cancel.is_set()):
        # the torch probe runs inside the generation's child, first: torch is imported once for both; its
        # stage budgets, crash and hang survival are those of its own child (diagnostics.probing.HostedProbe)
        from .probes import by_id
        from .probing import HostedProbe, probe_limit

        spec = by_id()["torch"]
        hosted = HostedProbe(spec, python=python, root=root, timeout=probe_limit(spec, timeout), env=env,
                             on_event=on_event, cancel=cancel)
        gen = _GenerationRun(python=python, model=model, device=device, max_new_tokens=max_new_tokens,
                             timeout=timeout, on_event=on_event, root=root, cancel=cancel, torch_probe=hosted)
        hosted.spawned.wait(2.0)  # the critical path first: its child is started before the KB competes for the GIL
    # load and compile the KB while the probes run (it costs ~0.8 s of CPU; the torch import is the long pole)
    warm = threading.Thread(target=_warm_kb, args=(kb_dir,), daemon=True)
    warm.start()
    probes = run_all(python=python, root=root, timeout=timeout, env=env, on_event=on_event, cancel=cancel,
                     hosted={"torch": hosted} if hosted is not None else None)
    warm.join()
    report["probes"] = probes
    facts = merge_probe_facts(probes)
    if gen is not None:
        gen.judge(probes, facts)
        if early_verdict and on_event and gen.running():
            on_event({"event": "verdict", "report": _diagnose_report(dict(report, facts=dict(facts)), kb_dir)})
        report["generation"] = gen.result()
        gen_facts, _ = factcat.clean_facts((report["generation"] or {}).get("facts") or {})
        for k, v in gen_facts.items():
            facts.setdefault(k, v)
    report["facts"] = facts
    if cancel is not None and cancel.is_set():
        _mark_stopped(report)
    return _diagnose_report(report, kb_dir)


def _mark_stopped(report: dict[str, Any]) -> None:
    """The user pressed Stop: say so, and do not call the checks that were cut short hangs."""
    report["stopped"] = True
    for p in report.get("probes") or []:
        if p.get("status") == "timeout":
            p.update(status="skipped", summary="stopped by the user", error=None,
                     evidence=[e for e in p.get("evidence") or [] if not str(e.get("source", "")).startswith("probe:")])


def _watched_generation(run_generation: Callable[..., dict[str, Any]], root: str, **kwargs: Any) -> dict[str, Any]:
    """The generation under the GPU monitor (busy %, VRAM, temperature, power); the monitor never breaks it.

    The monitor's first reading (a vendor tool: 0.1-0.5 s) is taken in a thread of its own, so the child
    (which hosts the torch probe, the critical path of the run) starts at once; the phases the generation
    reports meanwhile are handed to the monitor once it has started."""
    from .monitor import Monitor, monitor_facts, to_record

    mon = Monitor(root=root)
    lock = threading.Lock()
    state: dict[str, Any] = {"started": False, "phase": "running"}

    def start() -> None:
        try:
            mon.start()
        finally:
            with lock:
                state["started"] = True
                mon.set_phase(state["phase"])

    user_cb = kwargs.get("progress")

    def on_progress(text: Any) -> None:
        with lock:
            state["phase"] = text
            if state["started"]:
                mon.set_phase(text)
        if user_cb is not None:
            user_cb(text)

    kwargs["progress"] = on_progress
    starter = threading.Thread(target=start, name="gpu-monitor-start", daemon=True)
    starter.start()
    try:
        gen = run_generation(**kwargs)
    finally:
        starter.join()
        samples = mon.stop()
    if isinstance(gen, dict):
        try:
            gen["monitor"] = to_record(samples)
            gen.setdefault("facts", {}).update(monitor_facts(samples))
        except Exception as exc:  # a monitor bug costs the chart, never the generation
            gen["monitor"] = {"notes": [f"monitor failed: {type(exc).__name__}: {exc}"]}
    return gen


def _warm_kb(kb_dir: str | None) -> None:
    """While the probes run: load and compile the KB, and do once what the first diagnosis of a process pays
    for (the symptom retrieval's imports, numpy among them, the support matrix, the derived facts): 0.35-0.4 s
    measured, which otherwise came after the last probe, on the critical path.  (The symptom index itself,
    4 s of CPU on its first use, is not built here: only a check that nothing explains needs it.)"""
    try:
        get_kb(kb_dir)
        diagnose(new_report("live"), kb_dir)
    except Exception:  # reported by the real call in _diagnose_report
        pass


class _Either:
    """Set when either event is set (the user's Stop, or the service's own decision to stop the generation)."""

    def __init__(self, *events: threading.Event | None) -> None:
        self.events = [e for e in events if e is not None]

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


GEN_NICE = 10  # the generation yields the CPU to the torch probe, the critical path of the probe verdict


class _GenerationRun:
    """The test generation in a thread of its own (its child started at once), running beside the probes."""

    def __init__(self, *, python: str, model: str | None, device: str, max_new_tokens: int,
                 timeout: float | None, on_event: ProgressFn | None, root: str,
                 cancel: threading.Event | None, torch_probe: Any = None) -> None:
        self.on_event = on_event
        self.user_cancel = cancel
        self.stop = threading.Event()
        self.why: str | None = None
        self.stage = "starting the generation child"
        self.gen: dict[str, Any] | None = None
        self.torch_probe = torch_probe
        # hosting the torch probe, the child is the critical path at first: no lower priority then
        self.kwargs = dict(python=python, model=model, device=device, max_new_tokens=max_new_tokens,
                           timeout=max(timeout or 0, 600), progress=self._progress,
                           cancel=_Either(cancel, self.stop), nice=0 if torch_probe is not None else GEN_NICE)
        if torch_probe is not None:
            self.kwargs["torch_probe"] = torch_probe
        self.root = root
        if on_event:
            on_event({"event": "start", "probe": "generation", "title": "Test generation"})
        self.thread = threading.Thread(target=self._run, name="test-generation", daemon=True)
        self.thread.start()

    def _progress(self, msg: str) -> None:
        self.stage = msg
        if self.on_event:
            self.on_event({"event": "stage", "probe": "generation", "stage": msg})

    def _run(self) -> None:
        from .generation import run_generation

        try:
            try:
                self.gen = _watched_generation(run_generation, self.root, **self.kwargs)
            except Exception as exc:  # the report must survive a generation bug
                self.gen = {"status": "crashed", "error": f"internal error: {type(exc).__name__}: {exc}",
                            "facts": {}}
        finally:
            if self.torch_probe is not None:
                self.torch_probe.release()   # never started: the probe then runs in a child of its own

    def running(self) -> bool:
        return self.thread.is_alive()

    def judge(self, probes: list[dict[str, Any]], facts: dict[str, Any]) -> None:
        """Stop the generation when the probes found what makes it pointless: no importable torch, or a torch
        that hung where the generation has not got past yet (it would wait for its own long limit)."""
        if facts.get("torch.installed") is False or facts.get("torch.import_error"):
            self.why = "torch cannot be imported in the diagnosed interpreter"
        else:
            tp = next((p for p in probes if p.get("id") == "torch"), None)
            if (tp and tp.get("status") == "timeout" and self.running()
                    and self.stage.startswith(("starting", "waiting for the torch check", "importing torch"))):
                self.why = (f"the torch probe hung during '{tp.get('stage') or 'import torch'}'; the test generation, "
                            f"still at '{self.stage}', was stopped")
        if self.why:
            self.stop.set()

    def result(self) -> dict[str, Any]:
        self.thread.join()
        gen = self.gen or {"status": "crashed", "error": "internal error: no result", "facts": {}}
        if self.why and not (self.user_cancel is not None and self.user_cancel.is_set()):
            gen = {"status": "skipped", "error": self.why, "summary": self.why, "facts": {},
                   "duration_s": gen.get("duration_s", 0.0), "monitor": gen.get("monitor")}
        if self.on_event:
            self.on_event({"event": "end", "probe": "generation", "status": gen.get("status", "ok"),
                           "duration_s": gen.get("duration_s", 0.0), "summary": gen.get("summary")})
        return gen


def _diagnose_report(report: dict[str, Any], kb_dir: str | None = None) -> dict[str, Any]:
    return diagnose(report, kb_dir)


NEAREST = 3
NEW_ENTRY_HOW = ("save the session (`run --save`, or Save on the Diagnose page), then in the web UI open \"Write a KB "
                 "entry\" and start from \"a saved session, as a new entry\"; or copy kb/_template.yaml.txt to "
                 "kb/<id>.yaml (kb/README.md)")


def diagnose(report: dict[str, Any], kb_dir: str | None = None,
             fact_sources: dict[str, str] | None = None) -> dict[str, Any]:
    """The one diagnosis of a report (live, pasted, saved): derive facts, match every text and fact against the KB,
    put causes above their consequences, name the root causes, list failed checks no cause explains (with the
    nearest KB entries), and compute the verdict.  Fills *report* in place and returns it."""
    from .derive import derive
    from .differential import root_guesses
    from .matcher import order, root_causes
    from .symptoms import bounded_query, merge_symptoms, without_label_tables

    kb, matcher = get_kb(kb_dir)
    probes = report.get("probes") or []
    facts = dict(report.get("facts") or {})
    derived = derive(facts)
    facts.update(derived)
    report["facts"] = facts
    sources = _fact_sources_all(probes, facts, fact_sources)
    sources.update({k: "derived" for k in derived if k not in sources or sources[k] == "facts"})
    res = matcher.match(facts, report_texts(report), unknown_facts=unknown_from_probes(probes, facts),
                        fact_sources=sources)
    facts.update(res.get("facts_from_logs") or {})  # oom.* from the error texts
    # what the user wrote in their own words (English or Chinese) around the pasted output, and a description
    pasted = "\n".join(str(lg.get("text") or "") for lg in report.get("logs") or [] if isinstance(lg, dict))
    if pasted.strip():
        merge_symptoms(res, without_label_tables(bounded_query(pasted)), kb)   # cut first: the tables of a 64 MB paste are never built
    if str(report.get("description") or "").strip():
        merge_symptoms(res, str(report["description"]), kb, prose_only=False)
    if pasted.strip() and not res["diagnoses"] and not res.get("possible") and _ERRORISH.search(pasted):
        # no signature fired and no words around it, but something failed: the log itself, ranked against the KB,
        # gives the guesses (a healthy log gets none: ranking its table headers would only name random failures)
        merge_symptoms(res, pasted, kb, source="log", prose_only=False, limit=3)
    for d in res["diagnoses"]:
        if d.get("from_description"):
            d["basis"] = "possible"
        d.setdefault("basis", "confirmed")
    res["diagnoses"] = order(res["diagnoses"])
    words = "\n".join(x for x in (pasted, str(report.get("description") or "")) if x.strip())
    if words:
        # a generic consequence that fired alone ("HIP sees no GPU"): which of its known causes the text points at
        # (a dump's 'Label: value' tables are left out, as for the other guesses: field values are no evidence)
        root_guesses(res, without_label_tables(bounded_query(words)), kb, facts)
    report["diagnoses"] = res["diagnoses"]
    report["not_ruled_out"] = res["not_ruled_out"]
    report["possible"] = res.get("possible") or []   # ranked guesses ("basis": "possible"), apart from the causes
    report["root_causes"] = root_causes(res["diagnoses"])
    report["kb_version"] = kb.version
    report["kb_errors"] = [str(e) for e in kb.errors]
    report["unexplained"] = _unexplained(report, kb)
    report["verdict"] = verdict(report)
    # fix-text placeholders ({torch_install}, {gfx}, ...) filled from the support matrix and the facts
    return _fill(report, kb_dir)


def _fact_sources_all(probes: list[dict[str, Any]], facts: dict[str, Any],
                      given: dict[str, str] | None) -> dict[str, str]:
    src = fact_sources(probes, facts)
    for k, v in (given or {}).items():
        src.setdefault(k, v)
    return src


def _unexplained(report: dict[str, Any], kb: KnowledgeBase) -> list[dict[str, Any]]:
    """The failed checks no confirmed cause explains, each with the nearest KB entries (by the symptom
    retrieval of diagnostics.symptoms) and how to start a KB entry from it."""
    from .symptoms import match_symptoms
    from .verdicts import unexplained

    titles = {e.id: e.title for e in kb.entries}
    out = []
    for c in unexplained(report):
        text = "\n".join(str(c.get(k) or "") for k in ("summary", "error", "output"))
        near = []
        try:
            hits = match_symptoms(text)
        except Exception:  # retrieval is a hint; a failure there must not cost the report
            hits = []
        for h in hits:
            if h["id"] in titles and all(n["id"] != h["id"] for n in near):
                near.append({"id": h["id"], "title": titles[h["id"]], "score": h.get("score")})
            if len(near) >= NEAREST:
                break
        c = dict(c)
        c["nearest"] = near
        c["new_entry"] = NEW_ENTRY_HOW
        out.append(c)
    return out
