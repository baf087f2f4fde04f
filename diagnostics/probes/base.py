"""What a probe module looks like, and how it runs in its child process.

A probe module defines ``collect(root: str, out: Emitter) -> None`` and ends with::

    if __name__ == "__main__":
        probe_main(collect)

``root`` is the file-system root to read (default ``/``); tests point it at recorded sysfs trees.  The
emitter prints each fact the moment it is established, so a probe that later crashes or hangs still
leaves what it learned.  In tests, ``collect`` can be called in-process with a ``MemoryEmitter``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Any, Callable

from ..runner import emit
from ..textnorm import strip_ansi


def declared(name: str, facts: tuple[str, ...] | frozenset[str]) -> bool:
    """*name* is in a probe's FACTS declaration (an entry ending in '*' declares a prefix, e.g. 'env.*')."""
    return name in facts or any(f.endswith("*") and name.startswith(f[:-1]) for f in facts)


class Emitter:
    declared: frozenset[str] | None = None   # the probe's FACTS; None: not checked

    def undeclared(self, name: str) -> bool:
        return self.declared is not None and not declared(name, self.declared)

    def fact(self, name: str, value: Any) -> None:
        if value is not None:
            if self.undeclared(name):
                self.note(f"fact {name} is not in this probe's FACTS declaration")
            emit({"fact": name, "value": value})

    def facts(self, facts: dict[str, Any]) -> None:
        for k, v in facts.items():
            self.fact(k, v)

    def evidence(self, source: str, excerpt: str) -> None:
        emit({"evidence": {"source": str(source)[:200], "excerpt": excerpt[:2000]}})

    def log(self, name: str, text: str) -> None:
        if text and text.strip():
            emit({"log": {"name": name, "text": text[-200_000:]}})

    def status(self, status: str, summary: str | None = None) -> None:
        rec: dict[str, Any] = {"status": status}
        if summary:
            rec["summary"] = summary
        emit(rec)

    def stage(self, stage: str) -> None:
        emit({"stage": stage})

    def note(self, text: str) -> None:
        emit({"note": text})


class MemoryEmitter(Emitter):
    """Collects in memory (tests, in-process use)."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.evidences: list[dict[str, str]] = []
        self.logs: list[dict[str, str]] = []
        self.statuses: list[tuple[str, str | None]] = []
        self.notes: list[str] = []
        self.stages: list[str] = []

    def fact(self, name: str, value: Any) -> None:
        if value is not None:
            if self.undeclared(name):
                self.notes.append(f"fact {name} is not in this probe's FACTS declaration")
            self.data[name] = value

    def evidence(self, source: str, excerpt: str) -> None:
        self.evidences.append({"source": source, "excerpt": excerpt})

    def log(self, name: str, text: str) -> None:
        if text and text.strip():
            self.logs.append({"name": name, "text": text})

    def status(self, status: str, summary: str | None = None) -> None:
        self.statuses.append((status, summary))

    def stage(self, stage: str) -> None:
        self.stages.append(stage)

    def note(self, text: str) -> None:
        self.notes.append(text)


def rpath(root: str, path: str) -> str:
    """*path* (absolute, as on a live system) under *root*."""
    if root in ("", "/"):
        return path
    return os.path.join(root, path.lstrip("/"))


def read_file(root: str, path: str, limit: int = 1 << 20) -> str | None:
    """Text of a small file under root, or None when missing/unreadable (sysfs files can raise EIO)."""
    try:
        with open(rpath(root, path), "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


TOOL_KEEP_BYTES = 4 * 1024 * 1024  # kept per stream of one vendor tool
TOOL_MAX_BYTES = 32 * 1024 * 1024  # a tool that prints more than this in all is stopped ("endless output")
TOOL_DRAIN_S = 0.3  # after the tool itself exits: how long what is still in its pipes may take to read


def run_tool(argv: list[str], timeout: float = 15.0, env: dict[str, str] | None = None) -> tuple[int | None, str, str, str | None]:
    """Run a vendor tool from inside a probe child: (returncode, stdout, stderr, problem).

    problem is None when it ran; else 'missing', 'not executable', 'timeout', 'killed by SIGSEGV' (a death by
    signal is named, never hidden behind the first line it printed) or 'stopped after printing more than N MB'.
    Output is kept even on timeout.  Exit codes of vendor tools are not trusted alone: callers parse the text too.

    The tool's own pipes are read until the TOOL exits, not until every copy of the pipe is closed: a tool that
    answers and leaves a (setsid) grandchild holding the pipe costs no more than its own run (plus
    TOOL_DRAIN_S), and its answer is kept.  Grandchildren are never waited for; the tool's process group is
    killed when it ends, and what escaped the group dies with the probe (runner.sweep_token).
    """
    import select
    import signal
    import time

    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             env=env, start_new_session=True)
    except FileNotFoundError:
        return None, "", "", "missing"
    except PermissionError:
        return None, "", "", "not executable"
    except OSError as exc:
        return None, "", "", f"could not start: {exc.strerror or exc}"
    bufs = {p.stdout.fileno(): bytearray(), p.stderr.fileno(): bytearray()}  # type: ignore[union-attr]
    for fd in bufs:
        os.set_blocking(fd, False)
    open_fds = set(bufs)
    total = 0
    problem = None
    deadline = time.monotonic() + timeout
    exited_at: float | None = None

    def drain(fd: int) -> bool:
        """Read what is there now; False at end of file."""
        nonlocal total
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            total += len(data)
            room = TOOL_KEEP_BYTES - len(bufs[fd])
            if room > 0:
                bufs[fd] += data[:room]
            if total > TOOL_MAX_BYTES:
                return True

    while open_fds:
        now = time.monotonic()
        if exited_at is None and p.poll() is not None:
            exited_at = now
        if exited_at is not None and now - exited_at > TOOL_DRAIN_S:
            break  # the tool is gone; whoever still holds its pipes is not waited for
        if now > deadline:
            problem = "timeout"
            break
        if total > TOOL_MAX_BYTES:
            problem = f"stopped after printing more than {TOOL_MAX_BYTES // (1024 * 1024)} MB"
            break
        wait = min(0.05 if exited_at is not None else 0.2, max(0.0, deadline - now))
        try:
            ready, _, _ = select.select(list(open_fds), [], [], wait)
        except (OSError, ValueError):
            break
        for fd in ready:
            if not drain(fd):
                open_fds.discard(fd)
    try:
        os.killpg(p.pid, signal.SIGKILL)  # the tool (if still running) and what it forked into its group
    except OSError:
        pass
    p.wait()
    for fd in list(open_fds):
        drain(fd)
    for f in (p.stdout, p.stderr):
        try:
            f.close()  # type: ignore[union-attr]
        except OSError:
            pass
    rc = p.returncode
    if problem is None and rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        problem = f"killed by {name}"
    out, err = (bytes(bufs[k]).decode("utf-8", "replace") for k in bufs)
    return rc, strip_ansi(out), strip_ansi(err), problem




TARGET_PYTHON: str | None = None  # the diagnosed interpreter (--python of the run), when it was given


def probe_main(collect: Callable[[str, Emitter], None], facts: tuple[str, ...] | None = None) -> None:
    """Run *collect* as a probe child; *facts* is the module's FACTS declaration (every fact it may emit).
    ``--python`` names the diagnosed interpreter (probes that read its environment's files use it)."""
    global TARGET_PYTHON
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="/")
    ap.add_argument("--python", default=None)
    args = ap.parse_args()
    TARGET_PYTHON = args.python
    out = Emitter()
    if facts is not None:
        out.declared = frozenset(facts)
    collect(args.root, out)
    emit({"done": True})  # the final record: without it the parent knows the probe did not finish
    sys.stdout.flush()
