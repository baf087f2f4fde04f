"""Where GPU samples come from: amdgpu sysfs (read in a thread), or a vendor tool in a child process.

Every source runs outside the work being watched.  sysfs is read directly (cheap: a few small files); the
vendor tools run as children in their own process group through ``diagnostics.runner.run_child``, each call
with a timeout, so a tool that hangs is killed and one that crashes or prints garbage only ends the
sampling, never the watched work.  nvidia-smi runs once, in its looping mode (``-lms``), and is read line
by line: far cheaper than one process per sample.  Standard library only.
"""
from __future__ import annotations

import os
import shutil
import threading
import time
from typing import Any, Callable

from ..runner import run_child
from . import parse

EmitFn = Callable[[list[dict[str, Any]]], None]
NoteFn = Callable[[str], None]

TOOL_TIMEOUT_S = 5.0        # one call of amd-smi / rocm-smi
STARTUP_TIMEOUT_S = 4.0     # nvidia-smi's first valid line
STALL_S = 5.0               # nvidia-smi silent this long (beyond its interval) counts as hung
MAX_BAD = 3                 # consecutive unreadable outputs before a source gives up
RAW_KEEP = 5000
MEASURES = ("busy_pct", "vram_used_bytes", "temp_c", "power_w", "sclk_mhz")


class SourceError(RuntimeError):
    """The source cannot deliver samples (missing, hung, garbage); the message says which."""


def _tool_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("LC_ALL", "C")
    return env


class Source:
    name = "?"

    def first(self, timeout: float) -> list[dict[str, Any]]:
        """Start and return the first readings, or raise SourceError."""
        raise NotImplementedError

    def loop(self, emit: EmitFn, note: NoteFn, stop: threading.Event, interval: float) -> None:
        """Deliver readings until *stop* is set (or the source fails: then note why and return)."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class PollingSource(Source):
    """A source read by calling ``read()`` once per interval."""

    def read(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def first(self, timeout: float) -> list[dict[str, Any]]:
        return self.read()

    def loop(self, emit: EmitFn, note: NoteFn, stop: threading.Event, interval: float) -> None:
        bad = 0
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                readings = self.read()
                bad = 0
                if readings:
                    emit(readings)
            except SourceError as e:
                note(f"{self.name}: {e}; sampling stopped")
                return
            except parse.BadOutput as e:
                bad += 1
                if bad >= MAX_BAD:
                    note(f"{self.name}: unreadable output {bad} times in a row ({e}); sampling stopped")
                    return
            stop.wait(max(0.0, interval - (time.monotonic() - t0)))


class SysfsSource(PollingSource):
    """amdgpu's sysfs files under ``<root>/sys/class/drm/card*/device``."""

    name = "sysfs"

    def __init__(self, root: str = "/") -> None:
        self.root = root
        self.cards = parse.amd_cards(root)

    def read(self) -> list[dict[str, Any]]:
        if not self.cards:
            raise SourceError("no amdgpu card exposes gpu_busy_percent or mem_info_vram_used")
        out = []
        for i, dev in enumerate(self.cards):
            r = parse.read_sysfs_card(dev, i)
            if any(k in r for k in MEASURES):
                out.append(r)
        if not out:
            raise SourceError("the amdgpu sysfs files could not be read")
        return out


class ToolSource(PollingSource):
    """A vendor tool run once per sample (amd-smi, rocm-smi): each call a child with a timeout."""

    argv: list[str] = []

    def __init__(self, exe: str | None = None, timeout: float | None = None) -> None:
        self.exe = exe or shutil.which(self.argv[0])
        self.timeout = TOOL_TIMEOUT_S if timeout is None else timeout

    def parse(self, text: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def read(self, timeout: float | None = None) -> list[dict[str, Any]]:
        if not self.exe:
            raise SourceError(f"{self.argv[0]} not found on PATH")
        limit = self.timeout if timeout is None else min(timeout, self.timeout)
        res = run_child([self.exe] + self.argv[1:], timeout=limit, env=_tool_env())
        if res.start_error:
            raise SourceError(res.start_error)
        if res.timed_out:
            raise SourceError(f"{self.argv[0]} did not answer within {limit:g} s; killed")
        if res.signal:
            raise SourceError(f"{self.argv[0]} crashed with {res.signal}")
        try:
            return self.parse(res.stdout)
        except parse.BadOutput as e:
            if res.returncode:
                tail = (res.stderr.strip() or res.stdout.strip()).splitlines()[-1:] or [""]
                raise SourceError(f"{self.argv[0]} exited with status {res.returncode}: {tail[0][:200]}") from None
            raise parse.BadOutput(str(e)) from None

    def first(self, timeout: float) -> list[dict[str, Any]]:
        try:
            return self.read(timeout)
        except parse.BadOutput as e:
            raise SourceError(f"{self.argv[0]} printed something unreadable: {e}") from None


class AmdSmiSource(ToolSource):
    name = "amd-smi"
    argv = ["amd-smi", "metric", "--usage", "--power", "--clock", "--temperature", "--mem-usage", "--json"]

    def parse(self, text: str) -> list[dict[str, Any]]:
        return parse.parse_amd_smi_metric(text)


class RocmSmiSource(ToolSource):
    name = "rocm-smi"
    argv = ["rocm-smi", "--showuse", "--showmeminfo", "vram", "--showtemp", "--showpower", "--showclocks",
            "--json"]

    def parse(self, text: str) -> list[dict[str, Any]]:
        return parse.parse_rocm_smi_json(text)


class NvidiaSmiSource(Source):
    """``nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N``, one long-running child."""

    name = "nvidia-smi"

    def __init__(self, exe: str | None = None, interval: float = 0.2,
                 startup_timeout: float | None = None, stall_s: float | None = None) -> None:
        self.exe = exe or shutil.which("nvidia-smi")
        self.interval = interval
        self.startup_timeout = STARTUP_TIMEOUT_S if startup_timeout is None else startup_timeout
        self.stall_s = STALL_S if stall_s is None else stall_s
        self.fields = list(parse.NVIDIA_FIELDS)
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending: list[dict[str, Any]] = []
        self._bad = 0
        self._last_bad = ""
        self._last_line_t = 0.0
        self._got_any = threading.Event()
        self._result: Any = None
        self.stderr_tail = ""
        self.raw: list[str] = []        # the first RAW_KEEP stdout lines, verbatim (for the record)

    def argv(self) -> list[str]:
        ms = max(50, int(round(self.interval * 1000)))
        return [self.exe or "nvidia-smi", "--query-gpu=" + ",".join(self.fields),
                "--format=csv,noheader,nounits", "-lms", str(ms)]

    def _on_line(self, stream: str, line: str) -> None:
        if stream != "stdout":
            self.stderr_tail = (self.stderr_tail + line + "\n")[-2000:]
            return
        if not line.strip():
            return
        if len(self.raw) < RAW_KEEP:
            self.raw.append(line)
        self._last_line_t = time.monotonic()
        try:
            r = parse.parse_nvidia_line(line, self.fields)
        except parse.BadOutput as e:
            with self._lock:
                self._bad += 1
                self._last_bad = str(e) if not line.strip() else line.strip()[:160]
            return
        r["_t"] = self._last_line_t
        with self._lock:
            self._bad = 0
            self._pending.append(r)
        self._got_any.set()

    def _run(self) -> None:
        self._result = run_child(self.argv(), timeout=7 * 24 * 3600, env=_tool_env(), on_line=self._on_line,
                                 cancel=self._cancel)

    def _start(self) -> None:
        self._cancel.clear()
        self._got_any.clear()
        self._result = None
        self._thread = threading.Thread(target=self._run, name="gpu-monitor-nvidia-smi", daemon=True)
        self._thread.start()

    def _drain(self) -> list[dict[str, Any]]:
        with self._lock:
            out, self._pending = self._pending, []
        return out

    def first(self, timeout: float) -> list[dict[str, Any]]:
        if not self.exe:
            raise SourceError("nvidia-smi not found on PATH")
        for attempt in (0, 1):
            self._start()
            deadline = time.monotonic() + min(timeout, self.startup_timeout)
            while time.monotonic() < deadline:
                if self._got_any.wait(0.05):
                    return self._drain()
                if self._result is not None:        # exited before printing one valid line
                    break
            exited = self._result is not None           # it ended by itself (else: we stop it now)
            self.close()
            res = self._result if exited else None
            text = ((res.stderr if res else "") + (res.stdout if res else "")).strip()
            if attempt == 0 and "not a valid field" in text and "clocks_throttle_reasons.active" in self.fields:
                # an nvidia-smi without the throttle field: ask again without it
                self.fields.remove("clocks_throttle_reasons.active")
                continue
            if res is None:
                why = (f"printed nothing readable within {min(timeout, self.startup_timeout):g} s"
                       + (f" (last line: {self._last_bad!r})" if self._last_bad else "") + "; killed")
            elif res.start_error:
                why = res.start_error
            elif res.signal:
                why = f"crashed with {res.signal}"
            else:
                last = text.splitlines()[-1][:200] if text else ""
                why = (f"exited with status {res.returncode} without a readable line"
                       + (f": {last}" if last else ""))
            raise SourceError(f"nvidia-smi {why}")
        raise SourceError("nvidia-smi could not be started")

    def loop(self, emit: EmitFn, note: NoteFn, stop: threading.Event, interval: float) -> None:
        last_ok = time.monotonic()
        while not stop.is_set():
            stop.wait(min(0.05, interval / 2))
            got = self._drain()
            if got:
                last_ok = time.monotonic()
                emit(got)
                continue
            if self._result is not None:
                res = self._result
                note(f"nvidia-smi ended during the run ({res.describe()}); sampling stopped")
                return
            with self._lock:
                bad, last_bad = self._bad, self._last_bad
            if bad >= MAX_BAD:
                note(f"nvidia-smi: unreadable output {bad} times in a row (last: {last_bad!r}); sampling stopped")
                self.close()
                return
            if time.monotonic() - last_ok > self.stall_s + self.interval:
                note(f"nvidia-smi printed nothing for {self.stall_s:g} s; killed, sampling stopped")
                self.close()
                return
        got = self._drain()
        if got:
            emit(got)

    def close(self) -> None:
        self._cancel.set()
        t = self._thread
        if t is not None:
            t.join(timeout=3.0)


SOURCES = {"sysfs": SysfsSource, "amd-smi": AmdSmiSource, "rocm-smi": RocmSmiSource, "nvidia-smi": NvidiaSmiSource}


def _has_nvidia(root: str) -> bool:
    base = os.path.join(root, "sys", "class", "drm")
    try:
        names = os.listdir(base)
    except OSError:
        return False
    for n in names:
        if n.startswith("card") and "-" not in n:
            v = parse._read(os.path.join(base, n, "device", "vendor"))
            if v and v.lower() == "0x10de":
                return True
    return False


def default_order(root: str = "/") -> list[str]:
    """sysfs first where amdgpu exposes it; then the vendor tools, NVIDIA's first on a machine with an NVIDIA GPU."""
    order = []
    if parse.amd_cards(root):
        order.append("sysfs")
    tools = ["amd-smi", "rocm-smi", "nvidia-smi"]
    if _has_nvidia(root) or not parse.amd_cards(root) and shutil.which("nvidia-smi") and not (
            shutil.which("amd-smi") or shutil.which("rocm-smi")):
        tools = ["nvidia-smi", "amd-smi", "rocm-smi"]
    return order + tools


def make(name: str, root: str = "/", interval: float = 0.2) -> Source:
    if name == "sysfs":
        return SysfsSource(root)
    if name == "nvidia-smi":
        return NvidiaSmiSource(interval=interval)
    if name in SOURCES:
        return SOURCES[name]()
    raise ValueError(f"unknown GPU sampling source {name!r} (known: {', '.join(SOURCES)})")
