"""Long work off the UI thread: a job runs in a background thread, its progress events kept for the page.

The heavy parts (probes, generation) are child processes anyway; the thread only waits for them, so the
web page stays responsive and several browser sessions can diagnose at once.
"""
from __future__ import annotations

import threading
import time
import traceback
from typing import Any, Callable


class Job:
    def __init__(self, fn: Callable[..., Any], **kwargs: Any):
        self.events: list[dict[str, Any]] = []
        self.result: Any = None
        # the probes' own diagnosis, sent while the test generation still runs (service.run_local(early_verdict=))
        self.early_report: dict[str, Any] | None = None
        self.early_at: float | None = None
        self.error: str | None = None
        self.cancel = threading.Event()
        self.started = time.time()
        self.finished: float | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(fn, kwargs), daemon=True)
        self._thread.start()

    def _on_event(self, ev: dict[str, Any]) -> None:
        ev = dict(ev)
        ev["t"] = time.time() - self.started
        if ev.get("event") == "verdict":  # not a probe's event: the report of the finished checks
            with self._lock:
                self.early_report, self.early_at = ev.get("report"), ev["t"]
            return
        with self._lock:
            self.events.append(ev)

    def _run(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        try:
            self.result = fn(on_event=self._on_event, cancel=self.cancel, **kwargs)
        except Exception as exc:  # shown as a plain message, never as a traceback on screen
            self.error = f"{type(exc).__name__}: {exc}"
            self.trace = traceback.format_exc()
        finally:
            self.finished = time.time()

    @property
    def done(self) -> bool:
        return self.finished is not None

    def progress(self) -> dict[str, dict[str, Any]]:
        """Per probe: status (running or its final status), the current stage, duration."""
        state: dict[str, dict[str, Any]] = {}
        with self._lock:
            evs = list(self.events)
        for ev in evs:
            if "probe" not in ev:
                continue
            p = state.setdefault(ev["probe"], {"title": ev.get("title") or ev["probe"], "status": "running",
                                               "stage": "", "started": ev["t"], "duration_s": None})
            if ev["event"] == "start":
                p["title"] = ev.get("title") or p["title"]
            elif ev["event"] == "stage":
                p["stage"] = ev.get("stage", "")
            elif ev["event"] == "end":
                p["status"] = ev.get("status", "ok")
                p["duration_s"] = ev.get("duration_s")
        now = time.time() - self.started
        for p in state.values():
            if p["duration_s"] is None:
                p["elapsed"] = now - p["started"]
        return state


# ---------------------------------------------------------------------------------------------- weighted progress
# Typical seconds of each step on a working machine (the torch import is the floor of a run, the test generation
# its longest part).  Only the proportions matter: a step that takes longer holds its share until it ends.
EXPECTED_S = {"devices": 0.5, "system": 1.5, "gpus": 0.5, "rocm": 3.0, "env": 0.3, "hip": 1.5, "nvidia": 1.0,
              "torch": 8.0, "generation": 25.0}
# how far into the test generation each of the child's own stages is (generation/child.py's progress records)
GENERATION_STAGES = (("starting the generation child", 0.02), ("waiting for the torch check", 0.02),
                     ("importing torch", 0.05), ("resolving model", 0.12),
                     ("building built-in model", 0.14), ("loading tokenizer", 0.18), ("loading", 0.22),
                     ("warming up", 0.35), ("generating", 0.40), ("comparing with the CPU", 0.85))
GEN_TOKENS_SHARE = 0.40  # "generating (n tokens)": 0.40 + 0.40 * n / max_new_tokens


def plan(generate: bool = True) -> list[tuple[str, str, float]]:
    """Every step a local run will take, known before it starts: (id, English title, expected seconds)."""
    from .probes import PROBES

    steps = [(p.id, p.title, EXPECTED_S.get(p.id, min(p.timeout, 5.0))) for p in PROBES]
    if generate:
        steps.append(("generation", "Test generation", EXPECTED_S["generation"]))
    return steps


def generation_fraction(stage: str, max_new_tokens: int = 32) -> float:
    """How far the test generation is, from the last stage it reported ("generating (12 tokens)" -> 0.55)."""
    import re

    stage = str(stage or "")
    best = 0.0
    for prefix, frac in GENERATION_STAGES:
        if stage.startswith(prefix):
            best = frac
    m = re.match(r"generating \((\d+) tokens\)", stage)
    if m:
        best = 0.40 + GEN_TOKENS_SHARE * min(1.0, int(m.group(1)) / max(1, max_new_tokens))
    return best


def weighted_fraction(state: dict[str, dict[str, Any]], steps: list[tuple[str, str, float]],
                      max_new_tokens: int = 32) -> float:
    """The share of the expected work done: finished steps count whole, a running probe by its elapsed time
    (never past 90% of its share), the generation by its own stages."""
    total = sum(w for _, _, w in steps) or 1.0
    done = 0.0
    for sid, _, w in steps:
        p = state.get(sid)
        if p is None:
            continue
        if p["status"] != "running":
            done += w
        elif sid == "generation":
            done += w * generation_fraction(p.get("stage", ""), max_new_tokens)
        else:
            done += w * min(0.9, float(p.get("elapsed") or 0.0) / max(w, 0.1))
    return min(1.0, done / total)


class Progress:
    """Monotone progress of one job: the fraction never goes back, whatever the estimates do."""

    def __init__(self, steps: list[tuple[str, str, float]], max_new_tokens: int = 32):
        self.steps = steps
        self.max_new_tokens = max_new_tokens
        self.best = 0.0

    def update(self, state: dict[str, dict[str, Any]], done: bool = False) -> float:
        self.best = 1.0 if done else max(self.best, min(0.99, weighted_fraction(state, self.steps, self.max_new_tokens)))
        return self.best
