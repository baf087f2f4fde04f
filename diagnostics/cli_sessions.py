"""``python -m diagnostics sessions ...``: the stored sessions from the command line.

    sessions list [--json] [--db URL] [-q WORDS] [--host H] [--gpu G] [--verdict V] [--status S]
                  [--since DATE] [--until DATE] [--page N] [--page-size N]
    sessions show ID [--json] [--mask-identity]
    sessions export ID --out FILE [--mask-identity] [--format bundle|md|html|github] [--with-reports]
    sessions import FILE [--json]
    sessions rediagnose ID | --all
    sessions status ID new|investigating|resolved
    sessions note ID TEXT [--author NAME]
    sessions notes ID
    sessions compare ID_A ID_B [--json]
    sessions delete ID
    sessions stats [--by DIM] [--bucket day|week] [--ids N] [--limit N] [--refresh] [--json] [FILTERS]
    sessions unexplained [--limit N] [--samples N] [--json] [FILTERS]

FILTERS are the ones of ``sessions list``: -q WORDS, --host, --gpu, --verdict, --status, --since, --until.

Every subcommand takes ``--db URL`` (else DATABASE_URL, else the SQLite file in the user data directory).
Exit status: 0 done, 2 the command could not be done (unknown id, refused bundle, database error).
``register_cli(subparsers)`` adds the group to the main parser; ``main(argv)`` runs it on its own.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .cli import _h

EXIT_OK, EXIT_TOOL = 0, 2
_LANG = "en"  # the language of this command's messages (--lang, else the locale); set by _guard


def _t(key: str, **kw: Any) -> str:
    from .i18n import t

    return t("sessions_out." + key, _LANG, **kw)


def _word(kind: str, value: Any) -> str:
    """A verdict / review state / probe status in the chosen language (English: the value itself)."""
    from .i18n import catalogue

    if _LANG == "en" or value is None:
        return str(value)
    key = {"verdict": f"verdict.{value}", "review": f"ui.sessions.review_{value}", "status": f"status.{value}"}[kind]
    return catalogue(_LANG).get(key, str(value))


def _title(d: dict[str, Any]) -> str:
    """The KB title of a diagnosis in the chosen language."""
    if _LANG != "en" and d.get("id"):
        from .i18n import localize_diagnoses
        from .service import get_kb

        return str(localize_diagnoses([d], get_kb()[0], _LANG)[0].get("title") or "")
    return str(d.get("title") or "")


def _store(args: argparse.Namespace) -> Any:
    from .store import Store

    return Store(args.db)


def _out_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def _err(msg: str) -> int:
    from .i18n import t
    from .i18n.probe_text import localize_text

    print(t("report.error", _LANG, message=localize_text(msg, _LANG)), file=sys.stderr)
    return EXIT_TOOL


def _guard(fn: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        global _LANG
        from .i18n import pick_language

        _LANG = pick_language(setting=getattr(args, "lang", None) or getattr(args, "top_lang", None))
        from sqlalchemy.exc import SQLAlchemyError

        from .store import BundleError, SessionNotFound, StoreError

        try:
            return int(fn(args) or 0)
        except SessionNotFound as e:
            return _err(_t("no_session", id=e.args[0]) if _LANG != "en" else str(e))
        except (BundleError, StoreError) as e:
            return _err(str(e))
        except SQLAlchemyError as e:
            return _err(f"database error: {type(e).__name__}: {str(e).splitlines()[0]}")
        except OSError as e:
            return _err(f"{getattr(e, 'filename', '') or ''} {e.strerror or e}".strip())

    run.__name__ = fn.__name__
    return run


def cmd_list(args: argparse.Namespace) -> int:
    store = _store(args)
    rows, total = store.list_sessions(query=args.query or "", host=args.host, gpu=args.gpu, verdict=args.verdict,
                                      status=args.status, since=args.since, until=args.until, page=args.page,
                                      page_size=args.page_size)
    if args.json:
        _out_json({"total": total, "page": args.page, "page_size": args.page_size, "sessions": rows})
        return EXIT_OK
    if not rows:
        print(_t("none") if total == 0 else _t("none_on_page", page=args.page, total=total))
        return EXIT_OK
    def pad(text: str, width: int) -> str:  # CJK characters take two columns in a terminal
        import unicodedata

        w = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
        return text + " " * max(0, width - w)

    print(f"{'ID':36}  {pad(_t('col_created'), 19)}  {pad(_t('col_host'), 20)}  {pad(_t('col_status'), 13)}  "
          f"{pad(_t('col_verdict'), 10)}  {_t('col_top')}")
    for r in rows:
        print(f"{r['id']:36}  {(r['created_at'] or '')[:19]:19}  {r['host'][:20]:20}  {pad(_word('review', r['status']), 13)}  "
              f"{pad(_word('verdict', r['verdict']), 10)}  {r['top_diagnosis_id'] or '-'}")
    last = (total + args.page_size - 1) // args.page_size
    print(_t("page_of", page=args.page, last=max(last, 1), total=total))
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from .redact import redact_report
    from .store import render_markdown

    store = _store(args)
    report = store.get(args.id)
    if args.mask_identity:
        report = redact_report(report, mask_identity=True)
    if args.json:
        _out_json({"session": report, "review": store.info(args.id), "notes": store.notes(args.id)})
        return EXIT_OK
    info = store.info(args.id)
    if _LANG == "en":
        print(render_markdown(report))
    else:  # the plain-text report, every sentence in the chosen language
        from .i18n import localize_diagnoses
        from .report import render_report
        from .service import get_kb

        kb = get_kb()[0]
        shown = dict(report, diagnoses=localize_diagnoses(report.get("diagnoses") or [], kb, _LANG),
                     not_ruled_out=localize_diagnoses(report.get("not_ruled_out") or [], kb, _LANG))
        print(render_report(shown, _LANG))
    print(_t("status_line", status=_word("review", info["status"])))
    for n in store.notes(args.id):
        print(f"- {n['created_at'][:19]} {n['author']}: {n['text']}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    store = _store(args)
    fmt = args.format
    out = Path(args.out)
    if fmt == "auto":
        fmt = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}.get(out.suffix.lower(), "bundle")
    if fmt == "github":  # a ready-to-paste GitHub issue body (redacted, under GitHub's 65,536 characters)
        from .issue_body import render_github_issue

        data = render_github_issue(store.get(args.id), mask_identity=args.mask_identity).encode("utf-8")
    else:  # written as it is made, to the file or standard output: never held whole (a bundle --with-reports
        # holds the log three times)
        def write(fp: Any) -> int:
            if fmt in ("md", "html"):
                return store.write_report(args.id, fp, fmt, mask_identity=args.mask_identity)
            return store.write_bundle(args.id, fp, mask_identity=args.mask_identity, reports=args.with_reports)

        if str(out) == "-":
            sys.stdout.flush()
            write(sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return EXIT_OK
        tmp = out.with_name(out.name + ".part")
        try:
            with open(tmp, "wb") as fp:
                size = write(fp)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        tmp.replace(out)
        print(_t("exported", id=args.id, fmt=fmt, size=f"{size:,}", out=out), file=sys.stderr)
        return EXIT_OK
    if str(out) == "-":
        sys.stdout.buffer.write(data)
    else:
        tmp = out.with_name(out.name + ".part")
        tmp.write_bytes(data)
        tmp.replace(out)
        print(_t("exported", id=args.id, fmt=fmt, size=f"{len(data):,}", out=out), file=sys.stderr)
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from .store.bundle import MAX_BUNDLE_BYTES, BundleError

    p = Path(args.file)
    limit_mb = MAX_BUNDLE_BYTES // (1024 * 1024)
    if p.is_file() and p.stat().st_size > MAX_BUNDLE_BYTES:
        raise BundleError(f"refused: {p} is {p.stat().st_size:,} bytes, more than the {limit_mb} MB limit")
    # a pipe, /dev/stdin or a device has no size to trust: read at most one byte past the limit, then refuse
    with open(p, "rb") as f:
        data = f.read(MAX_BUNDLE_BYTES + 1)
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError(f"refused: {p} holds more than the {limit_mb} MB limit (stopped reading there)")
    store = _store(args)
    res = store.import_bundle_ex(data)
    if args.json:
        _out_json(res)
        return EXIT_OK
    for w in res["warnings"]:
        print(_t("warning", warning=w), file=sys.stderr)
    print(_t("already_present" if res["existing"] else "imported", id=res["id"]))
    return EXIT_OK


def cmd_rediagnose(args: argparse.Namespace) -> int:
    from . import sessions  # the store behind it (SQLAlchemy) only for the commands that use it

    store = _store(args)
    if args.all:
        res = sessions.rediagnose_fleet(store)
        if args.json:
            _out_json(res)
        else:
            print(_t("rediagnosed", n=res["rediagnosed"], changed=res["changed"], failed=len(res["errors"])))
            print(_t("queue_change", before=res["queue_before"], after=res["queue_after"], explained=res["explained"])
                  + (" (" + ", ".join(f"{k}: {v}" for k, v in res["explained_by"].items()) + ")"
                     if res["explained_by"] else ""))
            for sid, err in res["errors"].items():
                print(f"  {sid}: {err}", file=sys.stderr)
        return EXIT_TOOL if res["errors"] else EXIT_OK
    if not args.id:
        return _err(_t("give_id"))
    res = sessions.rediagnose_session(store, args.id)
    if args.json:
        _out_json(res)
        return EXIT_OK
    print(_t("changed" if res["changed"] else "no_change", id=args.id))
    for d in res["appeared"]:
        print(f"  + {d['id']}: {_title(d)}")
    for d in res["disappeared"]:
        print(f"  - {d['id']}: {_title(d)}")
    return EXIT_OK


def _filters(args: argparse.Namespace) -> Any:
    from .store.stats import Filters

    return Filters(query=args.query or "", host=args.host, gpu=args.gpu, verdict=args.verdict, status=args.status,
                   since=args.since, until=args.until)


DIMS = ("cause", "possible", "gpu", "gfx", "rocm", "torch", "verdict", "host", "status")


def _dim_value(dim: str, value: Any) -> str:
    """A counted value in the chosen language: verdicts and review states are words, the rest (ids, GPU names,
    versions, host names) stays as it is stored."""
    if dim == "verdict":
        return _word("verdict", value)
    if dim == "status":
        return _word("review", value)
    return str(value)


def _check_name(pid: str) -> str:
    """A check by its id in English (what `run --json` calls it), by its title in other languages."""
    from .i18n import catalogue

    return pid if _LANG == "en" else catalogue(_LANG).get(f"probe.{pid}", pid)


def cmd_stats(args: argparse.Namespace) -> int:
    from .store import stats as fleet

    store = _store(args)
    if args.refresh:
        n = fleet.refresh(store)
        if not args.json:
            print(_t("fleet_refreshed", n=n))
    f = _filters(args)
    if args.by or args.bucket:
        res = fleet.stats(store, args.by or "cause", bucket=args.bucket, filters=f, limit=args.limit, ids=args.ids)
        if args.json:
            _out_json(res)
            return EXIT_OK
        by = _t(f"by_{res['by']}")
        print(_t("stats_by_bucket" if res["bucket"] else "stats_by", total=res["total"], by=by,
                 bucket=_t(f"bucket_{res['bucket']}") if res["bucket"] else ""))
        if not res["rows"]:
            print("  " + _t("none_rows"))
        for r in res["rows"]:
            head = f"  {r['bucket']}  " if res["bucket"] else "  "
            print(f"{head}{r['count']:>7}  {_dim_value(res['by'], r['value'])}")
            if r.get("ids"):
                print("           " + " ".join(r["ids"]))
        return EXIT_OK
    res = fleet.overview(store, f, limit=args.limit)
    if args.json:
        _out_json(res)
        return EXIT_OK
    print(_t("stats_total", total=res["total"]) + (f" ({', '.join(f'{k}={v}' for k, v in res['filters'].items())})"
                                                  if res["filters"] else ""))
    for dim, rows in res["by"].items():
        print("\n" + _t("dim_title", title=_t(f"dim_{dim}") if dim in DIMS else dim))
        if not rows:
            print("  " + _t("none_rows"))
        for r in rows:
            print(f"  {r['count']:>7}  {_dim_value(dim, r['value'])}")
    return EXIT_OK


def cmd_unexplained(args: argparse.Namespace) -> int:
    from .i18n.probe_text import localize_text
    from .store import stats as fleet

    store = _store(args)
    res = fleet.unexplained(store, _filters(args), limit=args.limit, samples=args.samples)
    if args.json:
        _out_json(res)
        return EXIT_OK
    if not res["groups"]:
        print(_t("queue_empty"))
        return EXIT_OK
    print(_t("queue_head", n=res["sessions"], groups=len(res["groups"])))
    sep = _t("list_sep")
    for i, g in enumerate(res["groups"], 1):
        reasons = sep.join(_t(f"reason_{k}" if k in ("unexplained", "possible") else "reason_other", n=v, reason=k)
                           for k, v in g["reasons"].items())
        print("\n" + _t("group_line", i=i, sig=g["sig"], count=g["count"], reasons=reasons, hosts=g["host_count"],
                        first=g["first_seen"][:19], last=g["last_seen"][:19],
                        checks=sep.join(_check_name(c) for c in g["checks"])))
        print("   " + _t("group_signature", signature=g["signature"]))
        print("   " + _t("group_pattern", pattern=g["pattern"]))
        print("   " + _t("group_hosts", hosts=sep.join(f"{h['host']} ({h['count']})" for h in g["hosts"])))
        for smp in g["samples"]:
            # a check's own sentence in the chosen language; a tool's line as it printed it (localize_text keeps it)
            print(f"   - {smp['id']}  {smp['created_at'][:19]}  {smp['host']}  {_check_name(smp['check'])}: "
                  f"{localize_text(smp['line'][:160], _LANG)}")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    _store(args).set_status(args.id, args.state)
    print(_t("session_state", id=args.id, state=_word("review", args.state)))
    return EXIT_OK


def cmd_note(args: argparse.Namespace) -> int:
    nid = _store(args).add_note(args.id, args.author, args.text)
    print(_t("note_added", nid=nid, id=args.id))
    return EXIT_OK


def cmd_notes(args: argparse.Namespace) -> int:
    notes = _store(args).notes(args.id)
    if args.json:
        _out_json(notes)
        return EXIT_OK
    for n in notes:
        print(f"{n['created_at'][:19]}  {n['author']}: {n['text']}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from . import sessions

    res = sessions.compare_sessions(_store(args), args.id_a, args.id_b)
    if args.json:
        _out_json(res)
        return EXIT_OK
    print(_t("compare_head", a=args.id_a, b=args.id_b, before=_word("verdict", res["verdict"]["before"]),
             after=_word("verdict", res["verdict"]["after"])))
    for key in ("appeared", "disappeared", "unchanged"):
        for d in res[key]:
            print(f"  {_t('cmp_' + key)} {d['id']}: {_title(d)}")
    for f in res["changed_facts"]:
        print("  " + _t("cmp_fact", change=_t("fact_" + str(f["change"])), name=f["name"],
                        before=json.dumps(f["before"], ensure_ascii=False), after=json.dumps(f["after"], ensure_ascii=False)))
    for p in res["changed_probes"]:
        print("  " + _t("cmp_probe", id=p["id"], before=_word("status", p["before"]), after=_word("status", p["after"])))
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    from .store import SessionNotFound

    if not _store(args).delete(args.id):
        raise SessionNotFound(args.id)
    print(_t("deleted", id=args.id))
    return EXIT_OK


def register_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``sessions`` and its subcommands to *subparsers* (from ArgumentParser.add_subparsers())."""
    # the store (SQLAlchemy) is imported only when a sessions command runs: every other command starts fast
    STATUSES = ("new", "investigating", "resolved")  # diagnostics.store.models.STATUSES

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lang", choices=["en", "zh"], help=_h("run_cli.language_of_the_report_default_from_the"))
    common.add_argument("--db", metavar="URL", default=None,
                        help=_h("sessions.database_url_or_sqlite_file_default_data"))
    sp = subparsers.add_parser("sessions", help=_h("sessions.stored_sessions_list_show_export_import"),
                               description=_h("sessions.stored_diagnosis_sessions"))
    sub = sp.add_subparsers(dest="sessions_command", metavar="SESSIONS_COMMAND")
    sub.required = True

    p = sub.add_parser("list", parents=[common], help=_h("sessions.list_sessions_newest_first"))
    p.add_argument("--json", action="store_true", help=_h("run_cli.print_the_report_as_json"))
    p.add_argument("-q", "--query", default="", help=_h("sessions.words_that_must_all_occur_host_gpu_gfx_f"))
    p.add_argument("--host", help=_h("sessions.host"))
    p.add_argument("--gpu", help=_h("sessions.part_of_a_gpu_name"))
    p.add_argument("--verdict", choices=["healthy", "problems", "unexplained", "incomplete"], help=_h("sessions.verdict"))
    p.add_argument("--status", choices=STATUSES, help=_h("sessions.status"))
    p.add_argument("--since", help=_h("sessions.iso_date_or_time_utc"))
    p.add_argument("--until", help=_h("sessions.iso_date_or_time_utc_a_date_includes_tha"))
    p.add_argument("--page", type=int, default=1, help=_h("sessions.page"))
    p.add_argument("--page-size", type=int, default=50, help=_h("sessions.page_size"))
    p.set_defaults(func=_guard(cmd_list))

    p = sub.add_parser("show", parents=[common], help=_h("sessions.show_one_session"))
    p.add_argument("id")
    p.add_argument("--json", action="store_true", help=_h("run_cli.print_the_report_as_json"))
    p.add_argument("--mask-identity", action="store_true", help=_h("sessions.mask_host_name_user_names_and_home_paths"))
    p.set_defaults(func=_guard(cmd_show))

    p = sub.add_parser("export", parents=[common], help=_h("sessions.write_a_shareable_bundle_or_a_md_html_re"))
    p.add_argument("id")
    p.add_argument("--out", required=True, help=_h("sessions.file_to_write_for_stdout"))
    p.add_argument("--format", choices=["auto", "bundle", "md", "html", "github"], default="auto",
                   help=_h("sessions.auto_by_the_file_suffix_md_html_else_the"))
    p.add_argument("--mask-identity", action="store_true", help=_h("sessions.mask_host_name_user_names_and_home_paths"))
    p.add_argument("--with-reports", action="store_true", help=_h("sessions.with_reports"))
    p.set_defaults(func=_guard(cmd_export))

    p = sub.add_parser("import", parents=[common], help=_h("sessions.import_a_bundle_exported_by_gpu_doctor"))
    p.add_argument("file", metavar="FILE", help=_h("sessions.import_file"))
    p.add_argument("--json", action="store_true", help=_h("run_cli.print_the_report_as_json"))
    p.set_defaults(func=_guard(cmd_import))

    p = sub.add_parser("rediagnose", parents=[common], help=_h("sessions.diagnose_stored_sessions_again_with_toda"))
    p.add_argument("id", nargs="?")
    p.add_argument("--all", action="store_true", help=_h("sessions.every_stored_session"))
    p.add_argument("--json", action="store_true", help=_h("run_cli.print_the_report_as_json"))
    p.set_defaults(func=_guard(cmd_rediagnose))

    p = sub.add_parser("status", parents=[common], help=_h("sessions.set_the_review_status"))
    p.add_argument("id")
    p.add_argument("state", choices=STATUSES)
    p.set_defaults(func=_guard(cmd_status))

    p = sub.add_parser("note", parents=[common], help=_h("sessions.add_a_reviewer_note"))
    p.add_argument("id")
    p.add_argument("text", metavar="TEXT", help=_h("sessions.note_text"))
    p.add_argument("--author", default="cli", metavar="NAME", help=_h("sessions.note_author"))
    p.set_defaults(func=_guard(cmd_note))

    p = sub.add_parser("notes", parents=[common], help=_h("sessions.list_the_notes_of_a_session"))
    p.add_argument("id")
    p.add_argument("--json", action="store_true", help=_h("run_cli.print_the_report_as_json"))
    p.set_defaults(func=_guard(cmd_notes))

    p = sub.add_parser("compare", parents=[common], help=_h("sessions.what_changed_between_two_sessions"))
    p.add_argument("id_a")
    p.add_argument("id_b")
    p.add_argument("--json", action="store_true", help=_h("run_cli.print_the_report_as_json"))
    p.set_defaults(func=_guard(cmd_compare))

    p = sub.add_parser("delete", parents=[common], help=_h("sessions.delete_a_session"))
    p.add_argument("id")
    p.set_defaults(func=_guard(cmd_delete))

    filters = argparse.ArgumentParser(add_help=False)
    filters.add_argument("-q", "--query", default="", help=_h("sessions.fleet_query"))
    filters.add_argument("--host", help=_h("sessions.host"))
    filters.add_argument("--gpu", help=_h("sessions.part_of_a_gpu_name"))
    filters.add_argument("--verdict", choices=["healthy", "problems", "unexplained", "incomplete"],
                         help=_h("sessions.fleet_verdict"))
    filters.add_argument("--status", choices=STATUSES, help=_h("sessions.status"))
    filters.add_argument("--since", help=_h("sessions.iso_date_or_time_utc"))
    filters.add_argument("--until", help=_h("sessions.iso_date_or_time_utc_a_date_includes_tha"))

    p = sub.add_parser("stats", parents=[common, filters], help=_h("sessions.fleet_stats"))
    p.add_argument("--by", choices=["cause", "possible", "gpu", "gfx", "rocm", "torch", "verdict", "host", "status"],
                   help=_h("sessions.fleet_by"))
    p.add_argument("--bucket", choices=["day", "week"], help=_h("sessions.fleet_bucket"))
    p.add_argument("--ids", type=int, default=0, metavar="N", help=_h("sessions.fleet_ids"))
    p.add_argument("--limit", type=int, default=15, help=_h("sessions.fleet_limit"))
    p.add_argument("--refresh", action="store_true", help=_h("sessions.fleet_refresh"))
    p.add_argument("--json", action="store_true", help=_h("sessions.fleet_json"))
    p.set_defaults(func=_guard(cmd_stats))

    p = sub.add_parser("unexplained", parents=[common, filters],
                       help=_h("sessions.fleet_unexplained"))
    p.add_argument("--limit", type=int, default=20, help=_h("sessions.fleet_groups"))
    p.add_argument("--samples", type=int, default=3, help=_h("sessions.fleet_samples"))
    p.add_argument("--json", action="store_true", help=_h("sessions.fleet_json"))
    p.set_defaults(func=_guard(cmd_unexplained))
    return sp


def main(argv: list[str] | None = None) -> int:
    from .termsafe import install

    install()
    parser = argparse.ArgumentParser(prog="python -m diagnostics.cli_sessions")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    register_cli(sub)
    args = parser.parse_args(["sessions", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
