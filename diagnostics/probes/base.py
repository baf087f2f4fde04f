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
        emit({"evidence": {"source": source, "excerpt": excerpt[:2000]}})

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


def run_tool(argv: list[str], timeout: float = 15.0, env: dict[str, str] | None = None) -> tuple[int | None, str, str, str | None]:
    """Run a vendor tool from inside a probe child: (returncode, stdout, stderr, problem).

    problem is None when it ran; else 'missing', 'not executable' or 'timeout'.  Output is kept even on
    timeout.  Exit codes of vendor tools are not trusted alone: callers parse the text too.
    """
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             env=env, start_new_session=True)
    except FileNotFoundError:
        return None, "", "", "missing"
    except PermissionError:
        return None, "", "", "not executable"
    except OSError as exc:
        return None, "", "", f"could not start: {exc.strerror or exc}"
    try:
        out, err = p.communicate(timeout=timeout)
        problem = None
    except subprocess.TimeoutExpired:
        import signal

        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = p.communicate()
        problem = "timeout"
    return p.returncode, strip_ansi(out.decode("utf-8", "replace")), strip_ansi(err.decode("utf-8", "replace")), problem




def probe_main(collect: Callable[[str, Emitter], None], facts: tuple[str, ...] | None = None) -> None:
    """Run *collect* as a probe child; *facts* is the module's FACTS declaration (every fact it may emit)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="/")
    args = ap.parse_args()
    out = Emitter()
    if facts is not None:
        out.declared = frozenset(facts)
    collect(args.root, out)
    sys.stdout.flush()
