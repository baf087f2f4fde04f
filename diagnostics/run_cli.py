"""The ``run`` command: every local probe, the test generation, the diagnosis."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .cli import EXIT_TOOL, ToolError, _h, _print_json, _read_inputs

CONTRACT_KEYS = ("session_id", "created_at", "facts", "probes", "diagnoses", "generation")


def _progress_printer(enabled: bool, lang: str = "en"):
    from .i18n import t
    from .i18n.probe_text import localize_text, probe_title

    def on_event(ev: dict[str, Any]) -> None:
        if not enabled or "probe" not in ev:
            return   # events that are not a probe's (the generation's early verdict) are not progress lines
        title = probe_title({"id": ev["probe"], "title": ev.get("title") or ev["probe"]}, lang)
        if ev["event"] == "start":
            print(f"  … {title}", file=sys.stderr, flush=True)
        elif ev["event"] == "stage":
            print(f"    {title}: {localize_text(ev['stage'], lang)}", file=sys.stderr, flush=True)
        elif ev["event"] == "end":
            status = t(f"status.{ev['status']}", lang) if lang != "en" else f"{ev['status']:>7}"
            print("  " + t("report.progress_end", lang, status=status, title=title if lang != "en" else ev["probe"],
                           seconds=f"{ev.get('duration_s', 0):.1f}"), file=sys.stderr, flush=True)
    return on_event


class _Trace:
    """GPU_DOCTOR_TRACE=FILE: every progress event and the CLI's own phases as JSON lines with wall-clock times
    (``time.time()``), so a benchmark can say where each second of a run went (bench/bench_run.py)."""

    def __init__(self, path: str | None) -> None:
        self.f = None
        if path:
            try:
                self.f = open(path, "a", encoding="utf-8")
            except OSError:
                self.f = None

    def __call__(self, ev: dict[str, Any]) -> None:
        if self.f is None:
            return
        import json
        import time

        rec = {k: v for k, v in ev.items() if k != "report"}
        rec["wall"] = time.time()
        try:
            self.f.write(json.dumps(rec, default=str) + "\n")
            self.f.flush()
        except (OSError, ValueError):
            pass

    def phase(self, name: str) -> None:
        self({"event": "phase", "phase": name})

    def wrap(self, fn: Any) -> Any:
        if self.f is None:
            return fn

        def both(ev: dict[str, Any]) -> None:
            self(ev)
            fn(ev)
        return both


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

    trace = _Trace(os.environ.get("GPU_DOCTOR_TRACE"))
    trace.phase("cli started")
    _stop_on_signals()
    if args.python and not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)):
        raise ToolError(f"--python {args.python}: not an executable file")
    from .cli import _lang

    lang = _lang(args)
    logs, notes = _read_inputs(args.log)
    report = service.run_local(python=args.python, timeout=args.timeout, logs=logs, generate=not args.no_generate,
                               root=args.root, on_event=trace.wrap(_progress_printer(
                                   not args.quiet and sys.stderr.isatty() or args.progress, lang)))
    trace.phase("diagnosed")
    report["notes"] = notes
    if args.save:
        try:
            from .store import Store

            store = Store(args.db)
            sid = store.save(report)
            report["saved"] = {"id": sid, "db": store.display_url() if hasattr(store, "display_url") else "database"}
        except Exception as exc:  # a storage failure must not lose the diagnosis itself
            report["saved"] = {"error": f"{type(exc).__name__}: {exc}"}
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
            from .i18n import t

            print(t("report.saved_as", lang, id=s["id"]) if "id" in s else t("report.save_failed", lang, error=s["error"]))
    trace.phase("printed")
    if report.get("saved", {}).get("error"):
        return _done(EXIT_TOOL)
    if not report["probes"]:
        return _done(EXIT_TOOL)
    from .verdicts import exit_status

    return _done(exit_status(report))


def _done(code: int) -> int:
    """As the command line (`python -m diagnostics run`), end at once once the report is out: the interpreter's
    normal exit garbage-collects the KB, the compiled patterns and every module (0.2-0.3 s measured on the
    2-core machine, a tenth of a probe run).  Everything was written and committed before; called in-process
    (tests, an embedding script) it only returns the code."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if getattr(spec, "name", None) != "diagnostics.__main__" or os.environ.get("GPU_DOCTOR_SLOW_EXIT"):
        return code
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed pipe: nothing more can be said anyway
            pass
    os._exit(code)


def register_cli(sub: Any) -> None:
    sp = sub.add_parser("run", help=_h("run_cli.run_every_local_probe_and_the_test_gener"))
    sp.add_argument("--json", action="store_true", help=_h("run_cli.print_the_report_as_json"))
    sp.add_argument("--no-generate", action="store_true", help=_h("run_cli.skip_the_test_generation"))
    sp.add_argument("--python", metavar="PATH", help=_h("run_cli.interpreter_whose_torch_is_diagnosed_def"))
    sp.add_argument("--save", action="store_true", help=_h("run_cli.store_the_session"))
    sp.add_argument("--db", metavar="URL", help=_h("run_cli.database_url_default_database_url_else_a"))
    sp.add_argument("--timeout", type=float, metavar="S", help=_h("run_cli.time_limit_of_each_gpu_probe_in_seconds"))
    sp.add_argument("--log", action="append", metavar="FILE", help=_h("run_cli.also_match_this_log_repeatable"))
    sp.add_argument("--root", default="/", help=argparse.SUPPRESS)
    sp.add_argument("--lang", choices=["en", "zh"], help=_h("run_cli.language_of_the_report_default_from_the"))
    sp.add_argument("--quiet", action="store_true", help=_h("run_cli.no_progress_on_stderr"))
    sp.add_argument("--progress", action="store_true", help=_h("run_cli.progress_on_stderr_even_when_not_a_termi"))
    sp.set_defaults(func=cmd_run)
