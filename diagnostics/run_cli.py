"""The ``run`` command: every local probe, the test generation, the diagnosis."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .cli import EXIT_TOOL, ToolError, _print_json, _read_inputs

CONTRACT_KEYS = ("session_id", "created_at", "facts", "probes", "diagnoses", "generation")


def _progress_printer(enabled: bool):
    def on_event(ev: dict[str, Any]) -> None:
        if not enabled:
            return
        if ev["event"] == "start":
            print(f"  … {ev.get('title') or ev['probe']}", file=sys.stderr, flush=True)
        elif ev["event"] == "stage":
            print(f"    {ev['probe']}: {ev['stage']}", file=sys.stderr, flush=True)
        elif ev["event"] == "end":
            print(f"  {ev['status']:>7}  {ev['probe']} ({ev.get('duration_s', 0):.1f}s)", file=sys.stderr, flush=True)
    return on_event


def _stop_on_signals() -> None:
    """SIGINT / SIGTERM during `run`: kill every probe child (and what escaped its group) and exit at once.

    Waiting for the probe threads would wait for a hung torch's time limit; the children live in their own
    sessions, so a plain exit would leave them running.  The handler kills them all (runner.stop_all) and
    ends the process with exit status 2 (the tool did not finish)."""
    import signal

    from .runner import stop_all

    def handler(signum: int, frame: Any) -> None:
        stop_all()
        try:
            sys.stderr.write(f"interrupted ({signal.Signals(signum).name}); every probe was stopped\n")
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(EXIT_TOOL)

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread (an embedding caller): leave its handlers alone
            pass


def cmd_run(args: argparse.Namespace) -> int:
    from . import service

    _stop_on_signals()
    if args.python and not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)):
        raise ToolError(f"--python {args.python}: not an executable file")
    logs, notes = _read_inputs(args.log)
    report = service.run_local(python=args.python, timeout=args.timeout, logs=logs, generate=not args.no_generate,
                               root=args.root, on_event=_progress_printer(not args.quiet and sys.stderr.isatty()
                                                                           or args.progress))
    report["notes"] = notes
    if args.save:
        try:
            from .store import Store

            store = Store(args.db)
            sid = store.save(report)
            report["saved"] = {"id": sid, "db": store.display_url() if hasattr(store, "display_url") else "database"}
        except Exception as exc:  # a storage failure must not lose the diagnosis itself
            report["saved"] = {"error": f"{type(exc).__name__}: {exc}"}
    from .cli import _lang

    lang = _lang(args)
    if args.json:
        _print_json(report)
    else:
        from .report import render_report

        shown = report
        if lang != "en":
            from .i18n import localize_diagnoses

            shown = dict(report, diagnoses=localize_diagnoses(report["diagnoses"], service.get_kb()[0], lang))
        print(render_report(shown, lang))
        if report.get("saved"):
            s = report["saved"]
            print(f"Saved as session {s['id']}" if "id" in s else f"Could not save the session: {s['error']}")
    if report.get("saved", {}).get("error"):
        return EXIT_TOOL
    if not report["probes"]:
        return EXIT_TOOL
    from .verdicts import exit_status

    return exit_status(report)


def register_cli(sub: Any) -> None:
    sp = sub.add_parser("run", help="run every local probe and the test generation, then diagnose")
    sp.add_argument("--json", action="store_true", help="print the report as JSON")
    sp.add_argument("--no-generate", action="store_true", help="skip the test generation")
    sp.add_argument("--python", metavar="PATH", help="interpreter whose torch is diagnosed (default: this one)")
    sp.add_argument("--save", action="store_true", help="store the session")
    sp.add_argument("--db", metavar="URL", help="database URL (default: DATABASE_URL, else a local SQLite file)")
    sp.add_argument("--timeout", type=float, metavar="S", help="time limit of each GPU probe in seconds")
    sp.add_argument("--log", action="append", metavar="FILE", help="also match this log (repeatable)")
    sp.add_argument("--root", default="/", help=argparse.SUPPRESS)
    sp.add_argument("--lang", choices=["en", "zh"], help="language of the report (default: from the locale)")
    sp.add_argument("--quiet", action="store_true", help="no progress on stderr")
    sp.add_argument("--progress", action="store_true", help="progress on stderr even when not a terminal")
    sp.set_defaults(func=cmd_run)
