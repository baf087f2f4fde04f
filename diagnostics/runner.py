"""Running things that may crash or hang: every child in its own process group, with a timeout.

Both pipes are drained by reader threads (no deadlock however much a child prints), the output kept is
bounded (head and tail of each stream), lines are handed to a callback as they arrive (progress and
streamed facts survive a later crash), the whole group is killed on timeout and after the child exits (so
children it forked do not outlive it), and a death by signal is reported as "crashed" with the signal name.
Only subprocesses can really be stopped: nothing that may hang in a driver call runs in our own process.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

KEEP_HEAD = 256 * 1024
KEEP_TAIL = 768 * 1024
MAX_LINE = 64 * 1024
KILL_GRACE_S = 1.0
DIAG_PREFIX = "@@DIAG "

LineFn = Callable[[str, str], None]


class _Capture:
    """Keeps the first KEEP_HEAD and last KEEP_TAIL bytes of a stream and counts the rest."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = KEEP_HEAD - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > KEEP_TAIL:
                del self.tail[: len(self.tail) - KEEP_TAIL]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        if self.truncated:
            skipped = self.total - len(self.head) - len(self.tail)
            return (bytes(self.head).decode("utf-8", "replace")
                    + f"\n… [{skipped} bytes not kept] …\n"
                    + bytes(self.tail).decode("utf-8", "replace"))
        return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")


@dataclass
class ChildResult:
    argv: list[str]
    returncode: int | None
    signal: str | None
    timed_out: bool
    duration_s: float
    stdout: str
    stderr: str
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    start_error: str | None = None

    @property
    def status(self) -> str:
        if self.timed_out:
            return "timeout"
        if self.start_error is not None:
            return "fail"
        if self.signal:
            return "crashed"
        return "ok" if self.returncode == 0 else "fail"

    def stdout_plain(self) -> str:
        """stdout without the protocol records (what a person would have seen)."""
        return "\n".join(ln for ln in self.stdout.splitlines() if not ln.startswith(DIAG_PREFIX))

    def stderr_tail(self, lines: int = 15) -> str:
        return "\n".join(self.stderr.rstrip().splitlines()[-lines:])

    def describe(self) -> str:
        """One line a user can read: what happened to the child."""
        if self.start_error:
            return self.start_error
        if self.timed_out:
            return f"did not finish within its time limit ({self.duration_s:.0f}s); stopped"
        if self.signal:
            return f"crashed with {self.signal}"
        if self.returncode:
            return f"exited with status {self.returncode}"
        return "finished"


def _reader(fd: int, name: str, cap: _Capture, on_line: LineFn | None) -> None:
    pending = b""
    try:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            cap.add(data)
            if on_line is None:
                continue
            pending += data
            while True:
                nl = pending.find(b"\n")
                if nl < 0:
                    if len(pending) > MAX_LINE:  # an endless line: hand over what we have
                        _call(on_line, name, pending[:MAX_LINE])
                        pending = b""
                    break
                line, pending = pending[:nl], pending[nl + 1:]
                _call(on_line, name, line[:MAX_LINE])
        if pending and on_line is not None:
            _call(on_line, name, pending[:MAX_LINE])
    finally:
        try:
            os.close(fd)
        except OSError:
            pass


def _call(fn: LineFn, name: str, line: bytes) -> None:
    try:
        fn(name, line.decode("utf-8", "replace").rstrip("\r"))
    except Exception:  # a callback bug must not stop the draining of the pipe
        pass


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


# the children running now (process group -> token), so that an interrupted `run` can stop them all at once
_LIVE: dict[int, str] = {}
_LIVE_LOCK = threading.Lock()
STOPPING = threading.Event()  # set by stop_all(): no new child starts, running ones are stopped


def stop_all() -> None:
    """Kill every child started by run_child that is still running, and whatever escaped its group; no new
    child starts afterwards.  Safe to call from a signal handler (no lock is waited for long)."""
    STOPPING.set()
    with _LIVE_LOCK:
        live = dict(_LIVE)
    for pgid in live:
        _killpg(pgid, signal.SIGKILL)
    for token in live.values():
        sweep_token(token)


TOKEN_VAR = "DIAG_RUN"  # + "_<token>=1": nested runs each add their own (no GPU_/HIP_ prefix: the env probe skips it)


def sweep_token(token: str) -> list[int]:
    """SIGKILL every process whose environment carries *token*: what a child left behind outside its
    process group (a vendor tool started in its own session, a daemon that called setsid).  Linux /proc
    only; processes of other users cannot be read and are skipped.  Returns the pids killed."""
    needle = f"{TOKEN_VAR}_{token}=1".encode()
    killed = []
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return killed
    me = os.getpid()
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                data = f.read()
        except OSError:
            continue
        if needle in data.split(b"\0"):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except OSError:
                pass
    return killed


def run_child(argv: list[str], *, timeout: float, env: dict[str, str] | None = None, cwd: str | None = None,
              on_line: LineFn | None = None, stdin_data: bytes | None = None,
              cancel: threading.Event | None = None, nice: int = 0,
              deadline: Callable[[], float | None] | None = None) -> ChildResult:
    """Run *argv* in a new process group; never raises for the child's failures.

    ``nice`` > 0 lowers the child's CPU priority (cheap probes yield to the one on the critical path).
    ``deadline``, called every 0.2 s, may return an earlier ``time.monotonic()`` limit than *timeout*: a stage
    budget that moves with the stage the child announced (a hang is recognised by stage, diagnostics.probing).
    Passing it ends the child exactly like the timeout (``timed_out``).
    """
    t0 = time.monotonic()
    if STOPPING.is_set():
        return ChildResult(list(argv), None, None, False, 0.0, "", "", start_error="not started: interrupted")
    token = os.urandom(8).hex()
    env = dict(os.environ if env is None else env)
    env[f"{TOKEN_VAR}_{token}"] = "1"
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
            start_new_session=True, close_fds=True,
        )
    except OSError as exc:
        what = {2: "not found", 13: "not executable (permission denied)", 8: "not an executable file"}.get(
            exc.errno or 0, exc.strerror or str(exc))
        return ChildResult(list(argv), None, None, False, time.monotonic() - t0, "", "",
                           start_error=f"could not start {argv[0]}: {what}")
    pgid = proc.pid
    with _LIVE_LOCK:
        _LIVE[pgid] = token
    if nice > 0:
        try:
            os.setpriority(os.PRIO_PROCESS, proc.pid, nice)
        except OSError:
            pass
    caps = {"stdout": _Capture(), "stderr": _Capture()}
    threads = []
    for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        fd = os.dup(pipe.fileno())  # type: ignore[union-attr]
        pipe.close()  # type: ignore[union-attr]
        t = threading.Thread(target=_reader, args=(fd, name, caps[name], on_line), daemon=True)
        t.start()
        threads.append(t)
    if stdin_data is not None and proc.stdin is not None:
        try:
            proc.stdin.write(stdin_data)
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
    timed_out = False
    limit_at = t0 + timeout
    while True:
        now = time.monotonic()
        left = limit_at - now
        if deadline is not None:
            try:
                stage_at = deadline()
            except Exception:  # a budget bug must not stop the waiting
                stage_at = None
            if stage_at is not None:
                left = min(left, stage_at - now)
        if cancel is not None and cancel.is_set() or STOPPING.is_set():
            left = 0
        if left <= 0:
            timed_out = True
            _killpg(pgid, signal.SIGTERM)
            try:
                proc.wait(KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
            _killpg(pgid, signal.SIGKILL)
            proc.wait()
            break
        try:
            # a cancellable child is looked at every 50 ms: the GPU monitor's nvidia-smi is stopped this way at
            # the end of every run, on its critical path (200 ms between looks cost 0.1 s on average there)
            proc.wait(min(left, 0.05 if cancel is not None else 0.2))
            break
        except subprocess.TimeoutExpired:
            continue
    # whatever the child forked dies with it: nothing is left behind holding our pipes
    _killpg(pgid, signal.SIGKILL)
    sweep_token(token)  # and what escaped the group (own session, setsid daemons) by its inherited token
    with _LIVE_LOCK:
        _LIVE.pop(pgid, None)
    for t in threads:
        t.join(timeout=2.0)
    rc = proc.returncode
    sig = signal_name(-rc) if rc is not None and rc < 0 else None
    if timed_out and sig in ("SIGTERM", "SIGKILL"):
        sig = None
    return ChildResult(list(argv), rc, sig, timed_out, time.monotonic() - t0,
                       caps["stdout"].text(), caps["stderr"].text(),
                       caps["stdout"].truncated, caps["stderr"].truncated)


# ------------------------------------------------------------------------------------------------------
# the streaming protocol children use to report facts as they establish them


def emit(record: dict[str, Any]) -> None:
    """In a child: print one protocol record (flushed at once, so it survives a later crash)."""
    import sys

    sys.stdout.write(DIAG_PREFIX + json.dumps(record, default=str) + "\n")
    sys.stdout.flush()


def _no_surrogates(o: Any) -> Any:
    """JSON escapes like \\udcff decode to lone surrogates, which no UTF-8 writer (RE2, stdout, the store)
    accepts: replace them, recursively."""
    if isinstance(o, str):
        return o.encode("utf-8", "replace").decode("utf-8")
    if isinstance(o, list):
        return [_no_surrogates(x) for x in o]
    if isinstance(o, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in o.items()}
    return o


def parse_record(line: str) -> dict[str, Any] | None:
    if not line.startswith(DIAG_PREFIX):
        return None
    try:
        rec = json.loads(line[len(DIAG_PREFIX):])
    except ValueError:
        return None
    if not isinstance(rec, dict):
        return None
    if "\\ud" in line.lower():  # a surrogate escape (a non-UTF-8 path or message in the child)
        rec = _no_surrogates(rec)
    return rec


MAX_RECORD_BYTES = 8 * 1024 * 1024  # protocol records accepted from one child, in all
MAX_EVIDENCE = 200  # evidence items accepted from one child
MAX_NOTES = 200
MAX_LOGS = 32
MAX_LOG_CHARS = 200_000


@dataclass
class Collected:
    """What a child reported through the protocol before it ended (or died).

    Bounded: a child that floods the protocol (forged evidence lines by the million) is cut at MAX_EVIDENCE
    items and MAX_RECORD_BYTES in all, and the cut is said in a note; the report cannot grow with it.
    ``done`` is set by the child's final record: a child that exits 0 without it did not finish."""

    facts: dict[str, Any] = field(default_factory=dict)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    logs: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    status: str | None = None
    summary: str | None = None
    stage: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    done: bool = False
    bytes_in: int = 0
    dropped: int = 0

    def feed(self, rec: dict[str, Any], size: int = 0) -> None:
        if rec.get("done") is True:
            self.done = True
        # the small control records always count, however much came before them
        if "status" in rec:
            self.status = str(rec["status"])[:32]
        if "summary" in rec:
            self.summary = str(rec["summary"])[:2000]
        if "stage" in rec:
            self.stage = str(rec["stage"])[:200]
        self.bytes_in += size
        if self.bytes_in > MAX_RECORD_BYTES:
            if self.dropped == 0:
                self.notes.append(f"the probe sent more than {MAX_RECORD_BYTES // (1024 * 1024)} MB of records; "
                                  "the rest was dropped")
            self.dropped += 1
            return
        if "evidence" in rec and len(self.evidence) >= MAX_EVIDENCE:
            if not any(n.startswith("more than ") and "evidence" in n for n in self.notes):
                self.notes.append(f"more than {MAX_EVIDENCE} evidence items; the rest was dropped")
            self.dropped += 1
            rec = {k: v for k, v in rec.items() if k != "evidence"}
        if "fact" in rec and "value" in rec:
            self.facts[str(rec["fact"])] = rec["value"]
        if isinstance(rec.get("facts"), dict):
            self.facts.update(rec["facts"])
        if "evidence" in rec:
            ev = rec["evidence"]
            self.evidence.extend((ev if isinstance(ev, list) else [ev])[: MAX_EVIDENCE - len(self.evidence)])
        if "log" in rec and isinstance(rec["log"], dict) and len(self.logs) < MAX_LOGS:
            self.logs.append({"name": str(rec["log"].get("name", "output"))[:200],
                              "text": str(rec["log"].get("text", ""))[-MAX_LOG_CHARS:]})
        if "note" in rec and len(self.notes) < MAX_NOTES:
            self.notes.append(str(rec["note"])[:2000])
        if isinstance(rec.get("extra"), dict):
            self.extra.update(rec["extra"])
