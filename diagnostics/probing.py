"""Runs the probes: each in its own child process group, independent ones concurrently."""
from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from . import facts as factcat
from .probes import PROBES, ProbeSpec
from .runner import ChildResult, Collected, parse_record, run_child

PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)
PROBES_DIR = Path(__file__).resolve().parent / "probes"

Event = dict[str, Any]
EventFn = Callable[[Event], None]


def _child_env(spec: ProbeSpec, extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    if extra:
        env.update(extra)
    if spec.module:
        env["PYTHONPATH"] = PROJECT_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    if not spec.module:
        env["PYTHONDONTWRITEBYTECODE"] = "1"   # the diagnosed interpreter writes nothing into its environment
    elif sys.pycache_prefix and "PYTHONPYCACHEPREFIX" not in env:
        # the doctor's own probe modules: their bytecode where this process keeps its own (beside the sources, or
        # under the doctor's cache where bytecode may not be written there: paths.private_pycache), compiled once
        env["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def probe_argv(spec: ProbeSpec, python: str, root: str) -> list[str]:
    if spec.script:
        return [python, str(PROBES_DIR / spec.script)]
    return [sys.executable, "-m", f"diagnostics.probes.{spec.module}", "--root", root, "--python", python]


def probe_limit(spec: ProbeSpec, timeout: float | None) -> float:
    """A probe's whole time limit under the run's ``--timeout`` (GPU probes take it as given, the cheap ones
    never get more than their own)."""
    return spec.timeout if timeout is None else (timeout if spec.gpu_runtime else min(spec.timeout, timeout))


SCALE_ENV = "GPU_DOCTOR_STAGE_SCALE"  # multiplies every stage budget (a slow machine, a cold network disk)


def stage_scale(spec: ProbeSpec, timeout: float | None = None) -> float:
    """How much wider than their defaults the stage budgets of *spec* are: a ``--timeout`` above the probe's
    default widens them in proportion (``--timeout 600`` for the torch probe: five times), and
    GPU_DOCTOR_STAGE_SCALE multiplies that.  Never narrower than the defaults (a smaller --timeout caps the
    whole probe instead)."""
    scale = max(1.0, (timeout or 0.0) / spec.timeout) if spec.timeout else 1.0
    try:
        scale *= max(1.0, float(os.environ.get(SCALE_ENV) or 1.0))
    except ValueError:
        pass
    return scale


class StageClock:
    """The budget of the stage a child is in: each ``{"stage": ...}`` record restarts the clock with that
    stage's budget (ProbeSpec.stages), so a hang is recognised by stage, in seconds, not at the probe's whole
    time limit.  ``deadline`` is what run_child polls."""

    def __init__(self, budgets: tuple[tuple[str, float], ...] | dict[str, float], scale: float = 1.0) -> None:
        self.budgets = dict(budgets)
        self.scale = scale
        self.stage = ""
        self.since = time.monotonic()
        self.active = True

    def enter(self, stage: str) -> None:
        self.stage, self.since = str(stage), time.monotonic()

    def budget(self) -> float | None:
        b = self.budgets.get(self.stage)
        return None if b is None else b * self.scale

    def deadline(self) -> float | None:
        b = self.budget()
        return None if b is None or not self.active else self.since + b

    def overran(self) -> bool:
        d = self.deadline()
        return d is not None and time.monotonic() >= d - 0.05


def run_probe(spec: ProbeSpec, *, python: str = sys.executable, root: str = "/", timeout: float | None = None,
              env: dict[str, str] | None = None, on_event: EventFn | None = None,
              cancel: threading.Event | None = None, scale: float | None = None) -> dict[str, Any]:
    col = Collected()
    lock = threading.Lock()
    limit = timeout if timeout is not None else spec.timeout
    clock = StageClock(spec.stages, stage_scale(spec, limit) if scale is None else scale)

    def on_line(stream: str, line: str) -> None:
        if stream != "stdout":
            return
        rec = parse_record(line)
        if rec is None:
            return
        with lock:
            col.feed(rec, len(line))
        if "stage" in rec:
            clock.enter(rec["stage"])
            if on_event:
                on_event({"event": "stage", "probe": spec.id, "stage": rec["stage"]})

    if on_event:
        on_event({"event": "start", "probe": spec.id, "title": spec.title})
    # the torch probe is the critical path (importing torch is the floor); the others yield the CPU to it
    res = run_child(probe_argv(spec, python, root), timeout=limit, env=_child_env(spec, env), on_line=on_line,
                    cancel=cancel, nice=0 if spec.gpu_runtime and spec.script else 10,
                    deadline=clock.deadline if spec.stages else None)
    out = finish(spec, res, col, clock)
    if on_event:
        on_event({"event": "end", "probe": spec.id, "status": out["status"], "duration_s": out["duration_s"],
                  "summary": out.get("summary")})
    return out


def finish(spec: ProbeSpec, res: ChildResult, col: Collected, clock: StageClock | None = None) -> dict[str, Any]:
    """Turn a child's end into a probe result: the child's own verdict, or what killed it."""
    good, problems = factcat.clean_facts(col.facts)
    evidence = list(col.evidence)
    logs = list(col.logs)
    error = None
    status = col.status or "ok"
    if status not in ("ok", "warn", "fail", "skipped"):
        status = "warn"
    summary = col.summary
    where = f" during '{col.stage}'" if col.stage else ""
    tail = res.stderr_tail(15)
    if res.status == "timeout":
        status = "timeout"
        if clock is not None and clock.budget() is not None and clock.overran():
            waited = time.monotonic() - clock.since
            error = (f"no answer within {waited:.0f}s{where} (that stage's budget is {clock.budget():g} s; widen "
                     f"it with --timeout or {SCALE_ENV}); the probe was stopped {res.duration_s:.0f}s after it started")
        else:
            error = f"no answer within {res.duration_s:.0f}s{where}; the probe was stopped"
        summary = f"hung{where}"
    elif res.status == "crashed":
        status = "crashed"
        error = f"crashed with {res.signal}{where}"
        summary = error
    elif res.start_error:
        status = "fail"
        error = res.start_error
        summary = error
    elif res.returncode not in (0, None) and col.status is None:
        status = "fail"
        error = f"exited with status {res.returncode}{where}"
        summary = error
    elif not col.done:
        # it ended (even with status 0) before its final record: what it did not report is unknown, not fine
        status = "crashed"
        error = (f"ended (exit status {res.returncode}){where} before its final record; "
                 "its results are incomplete")
        summary = error
    if status in ("timeout", "crashed") or (error and tail):
        if tail:
            evidence.append({"source": f"probe:{spec.id}", "excerpt": f"{error}; last output: {tail[-1500:]}"})
        else:
            evidence.append({"source": f"probe:{spec.id}", "excerpt": error or ""})
        # what the dying child printed is matched like a pasted log ("hipErrorNoBinaryForGpu ... Aborted")
        text = "\n".join(x for x in (res.stdout_plain(), res.stderr) if x.strip())
        if text.strip():
            logs.append({"name": "output", "text": text[-200_000:]})
    if problems:
        col.notes.extend(f"dropped a malformed fact: {p}" for p in problems)
    return {
        "id": spec.id, "title": spec.title, "status": status, "duration_s": round(res.duration_s, 3),
        "error": error, "summary": summary, "facts": good, "evidence": evidence, "logs": logs,
        "notes": col.notes, "stage": col.stage, "provides": list(spec.provides),
        "output_tail": tail[-4000:], "signal": res.signal, "returncode": res.returncode,
    }


def run_all(specs: list[ProbeSpec] | None = None, *, python: str = sys.executable, root: str = "/",
            timeout: float | None = None, env: dict[str, str] | None = None, on_event: EventFn | None = None,
            cancel: threading.Event | None = None,
            hosted: dict[str, "HostedProbe"] | None = None) -> list[dict[str, Any]]:
    """Run independent probes concurrently; results in registry order.  *hosted*: probes (by id) that run
    inside another child (HostedProbe); their results are waited for, not started here."""
    specs = list(specs or PROBES)
    results: dict[str, dict[str, Any]] = {}
    t0 = time.monotonic()

    def one(spec: ProbeSpec) -> None:
        lim = probe_limit(spec, timeout)
        try:
            if hosted and spec.id in hosted:
                results[spec.id] = hosted[spec.id].wait()
                return
            results[spec.id] = run_probe(spec, python=python, root=root, timeout=lim, env=env,
                                         on_event=on_event, cancel=cancel)
        except Exception as exc:  # the orchestrator must survive any probe
            results[spec.id] = {"id": spec.id, "title": spec.title, "status": "crashed", "duration_s": 0.0,
                                "error": f"internal error: {type(exc).__name__}: {exc}", "facts": {},
                                "evidence": [], "logs": [], "notes": [], "provides": list(spec.provides)}

    # start the slowest (the torch probe) first
    ordered = sorted(specs, key=lambda s: 0 if s.script else 1)
    with ThreadPoolExecutor(max_workers=max(1, len(specs))) as ex:
        list(ex.map(one, ordered))
    _ = time.monotonic() - t0
    return [results[s.id] for s in specs]


class HostedProbe:
    """A script probe (the torch probe) run inside another child that needs the same import: the test generation's
    (``generation/child.py --torch-probe``), so torch is imported once for both.

    The child runs the probe first, exactly as its own script would, and marks the probe's end with the probe's
    final record (``{"done": true}``); every record up to it is the probe's, everything after it the
    generation's.  The probe's result is ready the moment that record arrives (the child goes on generating);
    when the child dies, hangs past a stage budget or is stopped before it, the result is made from how the
    child ended, as for a probe with a child of its own: crash and hang survival are unchanged.  If nobody
    starts the child (``release`` without ``begin``), ``wait`` runs the probe in its own child after all."""

    def __init__(self, spec: ProbeSpec, *, python: str, root: str = "/", timeout: float | None = None,
                 env: dict[str, str] | None = None, on_event: EventFn | None = None,
                 cancel: threading.Event | None = None) -> None:
        self.spec = spec
        self.python, self.root, self.env, self.on_event, self.cancel = python, root, env, on_event, cancel
        self.limit = timeout if timeout is not None else spec.timeout
        self.clock = StageClock(spec.stages, stage_scale(spec, self.limit))
        self.col = Collected()
        self.t0: float | None = None
        self.result: dict[str, Any] | None = None
        self.ready = threading.Event()
        self.abandoned = threading.Event()
        self.spawned = threading.Event()   # begin() was called (or the host gave up): the child is starting
        self._lock = threading.Lock()
        self._err = bytearray()

    @property
    def script(self) -> str:
        return str(PROBES_DIR / self.spec.script)

    def child_env(self) -> dict[str, str]:
        return _child_env(self.spec, self.env)

    def begin(self) -> None:
        """The hosting child is about to start."""
        self.t0 = time.monotonic()
        self.clock.enter("")
        if self.on_event:
            self.on_event({"event": "start", "probe": self.spec.id, "title": self.spec.title})
        self.spawned.set()

    def deadline(self) -> float | None:
        """While the probe part runs: its whole limit or its stage's budget, whichever comes first."""
        if self.ready.is_set() or self.t0 is None:
            return None
        d = self.clock.deadline()
        return self.t0 + self.limit if d is None else min(d, self.t0 + self.limit)

    def feed(self, stream: str, line: str) -> bool:
        """Hand over one line of the hosting child; True while it belonged to the probe."""
        if self.ready.is_set():
            return False
        if stream != "stdout":
            if len(self._err) < 256 * 1024:
                self._err += (line + "\n").encode("utf-8", "replace")
            return True
        rec = parse_record(line)
        if rec is None:
            return True
        with self._lock:
            self.col.feed(rec, len(line))
        if "stage" in rec:
            self.clock.enter(rec["stage"])
            if self.on_event:
                self.on_event({"event": "stage", "probe": self.spec.id, "stage": rec["stage"]})
        if self.col.done:
            res = ChildResult([self.python, self.script], 0, None, False, time.monotonic() - (self.t0 or 0.0),
                              "", self._err.decode("utf-8", "replace"))
            self._end(finish(self.spec, res, self.col, self.clock))
        return True

    def child_ended(self, res: ChildResult) -> None:
        """The hosting child is gone: if the probe had not finished, its end is how the child ended."""
        if not self.ready.is_set():
            self._end(finish(self.spec, res, self.col, self.clock))

    def release(self) -> None:
        """The host is done with this probe (or never started it)."""
        self.spawned.set()
        if self.t0 is None:
            self.abandoned.set()
        elif not self.ready.is_set():
            self.child_ended(ChildResult([self.python, self.script], None, None, False,
                                         time.monotonic() - self.t0, "", "", start_error="internal error: the "
                                         "child hosting the probe ended without a result"))

    def _end(self, out: dict[str, Any]) -> None:
        out["hosted"] = "with the test generation (one torch import)"
        self.result = out
        if self.on_event:
            self.on_event({"event": "end", "probe": self.spec.id, "status": out["status"],
                           "duration_s": out["duration_s"], "summary": out.get("summary")})
        self.ready.set()

    def wait(self) -> dict[str, Any]:
        while not self.ready.wait(0.1):
            if self.abandoned.is_set():
                return run_probe(self.spec, python=self.python, root=self.root, timeout=self.limit, env=self.env,
                                 on_event=self.on_event, cancel=self.cancel)
        assert self.result is not None
        return self.result
