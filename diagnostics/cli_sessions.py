"""``python -m diagnostics sessions ...``: the stored sessions from the command line.

    sessions list [--json] [--db URL] [-q WORDS] [--host H] [--gpu G] [--verdict V] [--status S]
                  [--since DATE] [--until DATE] [--page N] [--page-size N]
    sessions show ID [--json] [--mask-identity]
    sessions export ID --out FILE [--mask-identity] [--format bundle|md|html]
    sessions import FILE [--json]
    sessions rediagnose ID | --all
    sessions status ID new|investigating|resolved
    sessions note ID TEXT [--author NAME]
    sessions notes ID
    sessions compare ID_A ID_B [--json]
    sessions delete ID

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

EXIT_OK, EXIT_TOOL = 0, 2


def _store(args: argparse.Namespace) -> Any:
    from .store import Store

    return Store(args.db)


def _out_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def _err(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return EXIT_TOOL


def _guard(fn: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        from sqlalchemy.exc import SQLAlchemyError

        from .store import BundleError, SessionNotFound, StoreError

        try:
            return int(fn(args) or 0)
        except SessionNotFound as e:
            return _err(str(e))
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
        print("No sessions." if total == 0 else f"No sessions on page {args.page} ({total} in all).")
        return EXIT_OK
    print(f"{'ID':36}  {'CREATED (UTC)':19}  {'HOST':20}  {'STATUS':13}  {'VERDICT':10}  TOP FINDING")
    for r in rows:
        print(f"{r['id']:36}  {(r['created_at'] or '')[:19]:19}  {r['host'][:20]:20}  {r['status']:13}  "
              f"{r['verdict']:10}  {r['top_diagnosis_id'] or '-'}")
    last = (total + args.page_size - 1) // args.page_size
    print(f"page {args.page} of {max(last, 1)}, {total} session(s)")
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
    print(render_markdown(report))
    print(f"Status: {info['status']}")
    for n in store.notes(args.id):
        print(f"- {n['created_at'][:19]} {n['author']}: {n['text']}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    store = _store(args)
    fmt = args.format
    out = Path(args.out)
    if fmt == "auto":
        fmt = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}.get(out.suffix.lower(), "bundle")
    if fmt == "md":
        data = store.export_markdown(args.id, mask_identity=args.mask_identity).encode("utf-8")
    elif fmt == "html":
        data = store.export_html(args.id, mask_identity=args.mask_identity).encode("utf-8")
    else:
        data = store.export_bundle(args.id, mask_identity=args.mask_identity)
    if str(out) == "-":
        sys.stdout.buffer.write(data)
    else:
        tmp = out.with_name(out.name + ".part")
        tmp.write_bytes(data)
        tmp.replace(out)
        print(f"Exported session {args.id} ({fmt}, {len(data):,} bytes) to {out}", file=sys.stderr)
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
        print(f"warning: {w}", file=sys.stderr)
    print(("Already present: session " if res["existing"] else "Imported session ") + res["id"])
    return EXIT_OK


def cmd_rediagnose(args: argparse.Namespace) -> int:
    store = _store(args)
    if args.all:
        res = store.rediagnose_all()
        if args.json:
            _out_json(res)
        else:
            print(f"Re-diagnosed {res['rediagnosed']} session(s); {res['changed']} changed; "
                  f"{len(res['errors'])} failed")
            for sid, err in res["errors"].items():
                print(f"  {sid}: {err}", file=sys.stderr)
        return EXIT_TOOL if res["errors"] else EXIT_OK
    if not args.id:
        return _err("give a session ID or --all")
    res = store.rediagnose(args.id)
    if args.json:
        _out_json(res)
        return EXIT_OK
    print(f"Session {args.id}: " + ("changed" if res["changed"] else "no change"))
    for d in res["appeared"]:
        print(f"  + {d['id']}: {d.get('title') or ''}")
    for d in res["disappeared"]:
        print(f"  - {d['id']}: {d.get('title') or ''}")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    _store(args).set_status(args.id, args.state)
    print(f"Session {args.id}: {args.state}")
    return EXIT_OK


def cmd_note(args: argparse.Namespace) -> int:
    nid = _store(args).add_note(args.id, args.author, args.text)
    print(f"Added note {nid} to session {args.id}")
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
    res = _store(args).compare(args.id_a, args.id_b)
    if args.json:
        _out_json(res)
        return EXIT_OK
    print(f"From {args.id_a} to {args.id_b}: verdict {res['verdict']['before']} -> {res['verdict']['after']}")
    for label, key in (("appeared", "appeared"), ("disappeared", "disappeared"), ("unchanged", "unchanged")):
        for d in res[key]:
            print(f"  {label:11} {d['id']}: {d.get('title') or ''}")
    for f in res["changed_facts"]:
        print(f"  fact {f['change']:7} {f['name']}: {json.dumps(f['before'])} -> {json.dumps(f['after'])}")
    for p in res["changed_probes"]:
        print(f"  probe {p['id']}: {p['before']} -> {p['after']}")
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    from .store import SessionNotFound

    if not _store(args).delete(args.id):
        raise SessionNotFound(args.id)
    print(f"Deleted session {args.id}")
    return EXIT_OK


def register_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``sessions`` and its subcommands to *subparsers* (from ArgumentParser.add_subparsers())."""
    # the store (SQLAlchemy) is imported only when a sessions command runs: every other command starts fast
    STATUSES = ("new", "investigating", "resolved")  # diagnostics.store.models.STATUSES

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="URL", default=None,
                        help="database URL or SQLite file (default: DATABASE_URL, else the user data directory)")
    sp = subparsers.add_parser("sessions", help="stored sessions: list, show, export, import, re-diagnose",
                               description="Stored diagnosis sessions.")
    sub = sp.add_subparsers(dest="sessions_command", metavar="SESSIONS_COMMAND")
    sub.required = True

    p = sub.add_parser("list", parents=[common], help="list sessions, newest first")
    p.add_argument("--json", action="store_true")
    p.add_argument("-q", "--query", default="", help="words that must all occur (host, GPU, gfx, finding, version)")
    p.add_argument("--host")
    p.add_argument("--gpu", help="part of a GPU name")
    p.add_argument("--verdict", choices=["healthy", "problems", "unexplained", "incomplete"])
    p.add_argument("--status", choices=STATUSES)
    p.add_argument("--since", help="ISO date or time (UTC)")
    p.add_argument("--until", help="ISO date or time (UTC); a date includes that whole day")
    p.add_argument("--page", type=int, default=1)
    p.add_argument("--page-size", type=int, default=50)
    p.set_defaults(func=_guard(cmd_list))

    p = sub.add_parser("show", parents=[common], help="show one session")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.add_argument("--mask-identity", action="store_true", help="mask host name, user names and home paths")
    p.set_defaults(func=_guard(cmd_show))

    p = sub.add_parser("export", parents=[common], help="write a shareable bundle (or a .md/.html report)")
    p.add_argument("id")
    p.add_argument("--out", required=True, help="file to write ('-' for stdout)")
    p.add_argument("--format", choices=["auto", "bundle", "md", "html"], default="auto",
                   help="auto: by the file suffix (.md, .html), else the JSON bundle")
    p.add_argument("--mask-identity", action="store_true", help="mask host name, user names and home paths")
    p.set_defaults(func=_guard(cmd_export))

    p = sub.add_parser("import", parents=[common], help="import a bundle exported by gpu-doctor")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_guard(cmd_import))

    p = sub.add_parser("rediagnose", parents=[common], help="diagnose stored sessions again with today's KB")
    p.add_argument("id", nargs="?")
    p.add_argument("--all", action="store_true", help="every stored session")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_guard(cmd_rediagnose))

    p = sub.add_parser("status", parents=[common], help="set the review status")
    p.add_argument("id")
    p.add_argument("state", choices=STATUSES)
    p.set_defaults(func=_guard(cmd_status))

    p = sub.add_parser("note", parents=[common], help="add a reviewer note")
    p.add_argument("id")
    p.add_argument("text")
    p.add_argument("--author", default="cli")
    p.set_defaults(func=_guard(cmd_note))

    p = sub.add_parser("notes", parents=[common], help="list the notes of a session")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_guard(cmd_notes))

    p = sub.add_parser("compare", parents=[common], help="what changed between two sessions")
    p.add_argument("id_a")
    p.add_argument("id_b")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_guard(cmd_compare))

    p = sub.add_parser("delete", parents=[common], help="delete a session")
    p.add_argument("id")
    p.set_defaults(func=_guard(cmd_delete))
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
