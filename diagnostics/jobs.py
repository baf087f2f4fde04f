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
