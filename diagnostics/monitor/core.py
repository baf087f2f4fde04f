"""The sampler: a background thread that records GPU readings, stamped with time and phase, while work runs."""
from __future__ import annotations

import inspect
import threading
import time
from typing import Any, Callable, Iterable

from . import sources as src_mod

DEFAULT_INTERVAL = 0.2
BASELINE_TIMEOUT_S = 4.0      # longest wait for the first ("before") reading; a tool slower than this is dropped
STOP_JOIN_S = 2.0


class SampleList(list):
    """The samples (plain dicts, JSON-ready), plus what the monitor has to say about how it went."""

    def __init__(self, items: Iterable[dict[str, Any]] = ()) -> None:
        super().__init__(items)
        self.source: str | None = None
        self.notes: list[str] = []
        self.interval: float = DEFAULT_INTERVAL
        self.tried: list[str] = []
        self.raw: list[str] = []       # the source's own lines where it keeps them (nvidia-smi)


def normalize_phase(text: Any) -> str:
    """``"generating (12 tokens)"`` -> ``"generating"``; ``"loading (device=cuda, ...)"`` -> ``"loading"``."""
    s = str(text or "").strip()
    if " (" in s:
        s = s.split(" (", 1)[0]
    s = s.strip().lower()
    if s.startswith("starting"):
        return "starting"
    return s or "running"


class Monitor:
    """Start it before the work, feed it phases while the work runs, stop it after; read ``samples``.

    Nothing here raises into the caller: a source that is missing, hangs or prints garbage becomes a note,
    and the next source in ``tools`` is tried (only before sampling began; later failures end the sampling).
    """

    def __init__(self, interval: float = DEFAULT_INTERVAL, root: str = "/", tools: list[str] | str | None = None,
                 baseline_timeout: float = BASELINE_TIMEOUT_S, tail_s: float | None = None) -> None:
        self.interval = max(0.05, float(interval))
        self.root = root
        if isinstance(tools, str):
            tools = [t.strip() for t in tools.split(",") if t.strip()]
        self.tools = list(tools) if tools else None
        self.baseline_timeout = baseline_timeout
        self.tail_s = max(2.5 * self.interval, 0.5) if tail_s is None else tail_s
        self.samples = SampleList()
        self.samples.interval = self.interval
        self.phase = "before"
        self._t0 = time.monotonic()
        self._phases: list[tuple[float, str]] = [(self._t0, "before")]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._source: src_mod.Source | None = None
        self._lock = threading.Lock()
        self._started = False

    # -- recording
    def _note(self, text: str) -> None:
        with self._lock:
            self.samples.notes.append(text)

    def _emit(self, readings: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        name = self._source.name if self._source else "?"
        with self._lock:
            for r in readings:
                r = dict(r)
                t = r.pop("_t", now)
                s = {"t": round(max(0.0, t - self._t0), 3), "phase": self._phase_at(t), "source": name}
                s.update(r)
                self.samples.append(s)

    def set_phase(self, text: Any) -> None:
        self.phase = normalize_phase(text)
        self._phases.append((time.monotonic(), self.phase))

    def _phase_at(self, t: float) -> str:
        """The phase in force at monotonic time *t* (a reading is stamped when it was read, not when handed over)."""
        for since, phase in reversed(self._phases):
            if since <= t:
                return phase
        return self._phases[0][1] if self._phases else self.phase

    # -- life cycle
    def start(self) -> "Monitor":
        if self._started:
            return self
        self._started = True
        self._t0 = time.monotonic()
        self._phases = [(self._t0, "before")]
        try:
            order = self.tools or src_mod.default_order(self.root)
        except Exception as e:  # noqa: BLE001 - the monitor must never break the watched work
            self._note(f"could not choose a GPU sampling source: {type(e).__name__}: {e}")
            return self
        deadline = time.monotonic() + self.baseline_timeout
        for name in order:
            left = deadline - time.monotonic()
            if left <= 0:
                self._note(f"no first reading within {self.baseline_timeout:g} s; did not try "
                           + ", ".join(order[order.index(name):]))
                break
            self.samples.tried.append(name)
            try:
                source = src_mod.make(name, root=self.root, interval=self.interval)
                self._source = source
                first = self._first(source, left)
            except src_mod.SourceError as e:
                self._note(f"{name}: {e}")
                self._source = None
                continue
            except Exception as e:  # noqa: BLE001
                self._note(f"{name}: failed: {type(e).__name__}: {e}")
                self._source = None
                continue
            self.samples.source = source.name
            self._emit(first)
            self._thread = threading.Thread(target=self._run, name="gpu-monitor", daemon=True)
            self._thread.start()
            return self
        if not self.samples.source:
            self._note("no GPU sampling source worked (tried " + ", ".join(order or ["none"]) + "); the run was not watched")
        return self

    @staticmethod
    def _first(source: "src_mod.Source", timeout: float) -> list[dict[str, Any]]:
        """The source's first readings, asked in a helper thread: a read stuck in the driver (sysfs) or a tool
        that ignores its own timeout cannot hold the caller longer than *timeout*."""
        box: dict[str, Any] = {}

        def ask() -> None:
            try:
                box["value"] = source.first(timeout)
            except BaseException as e:  # noqa: BLE001 - handed over to the caller below
                box["error"] = e

        t = threading.Thread(target=ask, name="gpu-monitor-first", daemon=True)
        t.start()
        t.join(timeout + 0.5)
        if t.is_alive():
            try:
                source.close()
            except Exception:  # noqa: BLE001
                pass
            raise src_mod.SourceError(f"no first reading within {timeout:.1f} s (stuck); abandoned")
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _run(self) -> None:
        assert self._source is not None
        try:
            self._source.loop(self._emit, self._note, self._stop, self.interval)
        except Exception as e:  # noqa: BLE001
            self._note(f"{self._source.name}: sampler failed: {type(e).__name__}: {e}")

    def stop(self) -> SampleList:
        """Mark the work as ended, keep sampling briefly for the "after" readings, then stop everything."""
        if self._stop.is_set():
            return self.samples
        self.set_phase("after")
        if self._thread is not None and self._thread.is_alive() and self.tail_s > 0:
            # up to tail_s for the "after" readings, but no longer than the first of them takes to arrive: the
            # GPU's state once the work ended is one reading, and each waited tenth of a second is on the run's
            # critical path (the generation's monitor waited its full 0.5 s at the end of every run)
            deadline = time.monotonic() + self.tail_s
            while not self._stop.wait(min(0.05, self.tail_s)) and time.monotonic() < deadline:
                if self._after_seen():
                    break
        self._stop.set()
        if self._source is not None:
            self.samples.raw = list(getattr(self._source, "raw", []) or [])
            try:
                self._source.close()
            except Exception as e:  # noqa: BLE001
                self._note(f"{self._source.name}: closing failed: {type(e).__name__}: {e}")
        if self._thread is not None:
            self._thread.join(STOP_JOIN_S)
            if self._thread.is_alive():
                self._note(f"{self.samples.source}: the sampler did not stop within {STOP_JOIN_S:g} s "
                           "(a read is stuck in the driver); left behind")
        return self.samples

    def _after_seen(self) -> bool:
        """An "after" reading has arrived for every GPU read so far."""
        with self._lock:
            after = {s.get("gpu") for s in self.samples if s.get("phase") == "after"}
            return bool(after) and after >= {s.get("gpu") for s in self.samples}

    def __enter__(self) -> "Monitor":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return name in sig.parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())


def watch(fn: Callable[..., Any], *args: Any, interval: float = DEFAULT_INTERVAL, root: str = "/",
          tools: list[str] | str | None = None, phase_kwarg: str | None = "progress",
          baseline_timeout: float = BASELINE_TIMEOUT_S, **kwargs: Any) -> tuple[Any, SampleList]:
    """Run ``fn(*args, **kwargs)`` while a sampler watches the GPU; return ``(fn's result, samples)``.

    When *fn* takes a ``progress`` callback (as ``run_generation`` does), the monitor wraps it: each progress
    text becomes the phase of the samples that follow (the caller's own callback still gets every text).
    An exception from *fn* propagates after the sampler has stopped.  The sampler never raises.
    """
    mon = Monitor(interval=interval, root=root, tools=tools, baseline_timeout=baseline_timeout)
    mon.start()
    if phase_kwarg and _accepts(fn, phase_kwarg):
        user_cb = kwargs.get(phase_kwarg)

        def on_progress(text: Any) -> None:
            mon.set_phase(text)
            if user_cb is not None:
                user_cb(text)

        kwargs[phase_kwarg] = on_progress
    mon.set_phase("running")
    try:
        result = fn(*args, **kwargs)
    finally:
        mon.stop()
    return result, mon.samples
