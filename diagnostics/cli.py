"""Command line: ``python -m diagnostics <command>``.  See shared/CONTRACT.md for the stable surface."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .parsers import KINDS as _PARSER_KINDS


def parsers_kinds() -> list[str]:
    """The dump kinds `parse --kind` accepts (the parser registry's list)."""
    return list(_PARSER_KINDS)

EXIT_OK, EXIT_PROBLEMS, EXIT_TOOL = 0, 1, 2


class ToolError(Exception):
    """The tool itself could not do its job (exit 2), with a message for the user."""


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def _problems(diagnoses: list[dict[str, Any]]) -> bool:
    """A confirmed problem among *diagnoses* (diagnostics.verdicts.counts)."""
    from .verdicts import counts

    return any(counts(d) for d in diagnoses)


HELP_LANG = "en"  # the language of --help and argparse's own messages, chosen in main() before parsing


def _h(key: str) -> str:
    """A help text of the command line in :data:`HELP_LANG` (catalogue key ``help.<key>``)."""
    from .i18n import t

    return t("help." + key, HELP_LANG)


def _argv_language(argv: list[str]) -> str:
    """The language for --help and errors: ``--lang X`` anywhere on the command line, else the environment."""
    from .i18n import pick_language

    setting = None
    for i, a in enumerate(argv):
        if a == "--lang" and i + 1 < len(argv):
            setting = argv[i + 1]
        elif a.startswith("--lang="):
            setting = a.split("=", 1)[1]
    return pick_language(setting=setting)


def _argparse_gettext(lang: str):
    """argparse's own words ("usage:", "options", "show this help message and exit") from the catalogue."""
    from .i18n import catalogue

    en = catalogue("en")
    table = {en[k]: k for k in en if k.startswith("argparse.")}

    def gettext(msg: str) -> str:
        key = table.get(msg)
        return catalogue(lang).get(key, msg) if key else msg
    return gettext


def _lang(args: argparse.Namespace) -> str:
    from .i18n import pick_language

    return pick_language(setting=getattr(args, "lang", None) or getattr(args, "top_lang", None))


def _read_inputs(paths: list[str] | None) -> tuple[list[tuple[str, str]], list[str]]:
    from .service import read_text_file

    out, notes = [], []
    for p in paths or []:
        try:
            text, n = read_text_file(p)
        except OSError as exc:
            raise ToolError(f"cannot read {p}: {exc.strerror or exc}") from None
        out.append((os.path.basename(p), text))
        notes.extend(n)
    return out, notes


# ---------------------------------------------------------------------------------------------- kb


def cmd_kb_lint(args: argparse.Namespace) -> int:
    from .kb import load_kb

    from .support import lint as lint_matrix

    kb = load_kb(args.kb)
    kb.errors.extend(lint_matrix(args.kb))  # the GPU support matrix (kb/support/gpu-matrix.yaml)
    for e in kb.errors:
        print(str(e))
    n = len(kb.entries)
    if kb.errors:
        print(f"{len(kb.errors)} problem(s); {n} entr{'y' if n == 1 else 'ies'} loaded", file=sys.stderr)
        return 1
    from .i18n import translation_warnings
    from .kb_lint import lint, undated

    findings = lint(kb)  # dangerous steps without a caveat (errors), stale dates (warnings)
    errors = [f for f in findings if f.level == "error"]
    for f in errors:
        print(str(f))
    if errors:
        print(f"{len(errors)} problem(s); {n} entr{'y' if n == 1 else 'ies'} loaded", file=sys.stderr)
        return 1
    for f in findings:
        print(str(f))
    for w in translation_warnings(kb):  # missing or stale translations: warnings, not failures
        print(w)
    nd = len(undated(kb))
    if nd:
        print(f"warning: {nd} entr{'y has' if nd == 1 else 'ies have'} no checked: date (kb list --oldest)")
    print(f"ok: {n} entries, no problems")
    return 0


def cmd_kb_test(args: argparse.Namespace) -> int:
    import re

    from .kb import load_kb
    from .matcher import run_entry_tests

    kb = load_kb(args.kb)
    for e in kb.errors:
        print(f"LOAD ERROR {e}")
    try:
        rows = run_entry_tests(kb, args.run)
    except re.error as exc:
        raise ToolError(f"--run: bad regular expression: {exc}") from None
    failed = [r for r in rows if not r["ok"]]
    for r in failed:
        extra = f" (unknown facts: {', '.join(r['unknown'])})" if r["unknown"] else ""
        print(f"FAIL {r['path']}:{r['line']}: {r['id']} / {r['case']}: expected {r['expect']}, got {r['got']}{extra}")
    exp_failed = _kb_expectations(kb, args)
    if args.verbose:
        for r in rows:
            if r["ok"]:
                print(f"ok   {r['id']} / {r['case']}")
    entries = len({r["id"] for r in rows})
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed ({entries} entries)")
    # the scenario suite (tests/scenarios): whole reports through the whole diagnosis, with the KB under test
    from . import scenarios

    srows = scenarios.run_all(only=args.run, kb_dir=args.kb) if not kb.errors else []
    sfailed = [r for r in srows if not r["ok"]]
    for r in sfailed:
        print(f"FAIL {r['path']}: scenario {r['slug']}: " + "; ".join(r["errors"]))
    if args.verbose:
        for r in srows:
            if r["ok"]:
                print(f"ok   scenario {r['slug']}")
    if srows:
        print(f"{len(srows) - len(sfailed)} passed, {len(sfailed)} failed ({len(srows)} scenarios)")
    return 1 if failed or sfailed or exp_failed or kb.errors else 0


def _kb_expectations(kb: Any, args: argparse.Namespace) -> int:
    """Whole-KB expectations (kb/expectations/*.yaml); returns how many failed (a bad file counts as one)."""
    import re

    from .matcher import run_expectations

    rows, problems = run_expectations(kb)
    if args.run:
        rows = [r for r in rows if re.search(args.run, r["case"])]
    for p in problems:
        print(f"EXPECTATIONS ERROR {p}")
    bad = [r for r in rows if not r["ok"]]
    for r in bad:
        print(f"FAIL expectations/{r['file']}: {r['case']}: {'; '.join(r['why'])} (got {', '.join(r['got']) or 'nothing'})")
    if rows or problems:
        print(f"expectations: {len(rows) - len(bad)} passed, {len(bad)} failed")
    return len(bad) + len(problems)


def cmd_kb_list(args: argparse.Namespace) -> int:
    from .kb import load_kb

    from .kb_lint import checked_sort_key

    kb = load_kb(args.kb)
    if getattr(args, "sort", "id") == "checked":
        ordered = sorted(kb.entries, key=checked_sort_key)  # never checked first, then the oldest date
    else:
        ordered = sorted(kb.entries, key=lambda e: e.id)
    rows = []
    for e in ordered:
        r = e.summary()
        chk = e.checked
        r["checked"] = ({"date": chk["date"].isoformat(), "versions": dict(chk["versions"])} if chk else None)
        rows.append(r)
    if args.json:
        _print_json({"entries": rows, "errors": [str(e) for e in kb.errors]})
    else:
        dated = args.sort == "checked"
        for r in rows:
            when = ""
            if dated:
                c = r["checked"]
                when = f"{(c['date'] if c else 'never'):<11} "
            print(f"{r['id']:<44} {when}{r['severity']:<9} {r['title']}")
        for e in kb.errors:
            print(f"error: {e}", file=sys.stderr)
    return 0


def cmd_kb_matrix(args: argparse.Namespace) -> int:
    """What the support matrix says about GPU targets: support, bf16, override, wheels, the install command."""
    from .support import arch_runs, get_matrix, recommend_install

    m = get_matrix(args.kb)
    if m.errors:
        for e in m.errors:
            print(str(e))
        return 1
    targets = args.targets or sorted(m.amd) + sorted(m.nvidia)
    rows = []
    for t in targets:
        tid = t if m.row(t) else m.target_from_name(t)
        if not tid:
            raise ToolError(f"{t!r} is not a target or marketing name in {m.path}")
        row = m.row(tid) or {}
        key = "gpu.gfx_targets" if tid.startswith("gfx") else "nvidia.compute_caps"
        inst = recommend_install({key: [tid]}, m)
        rows.append({"target": tid, "family": row.get("family"), "names": row.get("names"),
                     "official": row.get("official"), "official_since": row.get("official_since"),
                     "native_bf16": row.get("native_bf16"), "override": row.get("override"),
                     "wheels": [f"{w.folder}/torch-{w.torch}" for w in m.wheels if w.runs(tid)],
                     "wheels_without_libs": [f"{w.folder}/torch-{w.torch}" for w in m.wheels
                                             if w.archs and arch_runs(tid, w.archs) and not w.runs(tid)],
                     "install": inst.command() if inst else None,
                     "install_needs_override": inst.override if inst else None,
                     "sources": [m.sources.get(x, x) for x in row.get("source") or []]})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        off = ("official since ROCm " + r["official_since"]) if r["official"] else ("not in ROCm's matrix" if r["target"].startswith("gfx") else "")
        print(f"{r['target']} ({r['family']}): {', '.join(r['names'] or [])}")
        print(f"   {off + '; ' if off else ''}native bf16: {'yes' if r['native_bf16'] else 'no'}"
              + (f"; HSA_OVERRIDE_GFX_VERSION={r['override']} where a wheel lacks it" if r.get("override") else ""))
        print(f"   wheels with code for it: {', '.join(r['wheels']) or 'none listed'}")
        if r["wheels_without_libs"]:
            print(f"   listed by get_arch_list() but without its libraries (rocBLAS): {', '.join(r['wheels_without_libs'])}")
        if r["install"]:
            print(f"   install: {r['install']}" + (f"  (then HSA_OVERRIDE_GFX_VERSION={r['install_needs_override']})"
                                                    if r["install_needs_override"] else ""))
    return 0


def cmd_kb_schema(args: argparse.Namespace) -> int:
    from .kb import json_schema

    _print_json(json_schema())
    return 0


# ----------------------------------------------------------------------------------------- parse/match


def cmd_parse(args: argparse.Namespace) -> int:
    from .service import parse_dumps

    dumps, notes = _read_inputs([args.file])
    try:
        _, results = parse_dumps(dumps, args.kind)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    res = results[0]
    res["notes"] = notes + res["notes"]
    if args.json:
        _print_json({"kind": res["kind"], "facts": res["facts"], "notes": res["notes"], "errors": res["errors"]})
    else:
        from .report import render_facts

        print(f"kind: {res['kind']}")
        print(render_facts(res["facts"]))
        for n in res["notes"]:
            print(f"note: {n}")
        for e in res["errors"]:
            print(f"tool error: {e}")
    return 0


def cmd_match(args: argparse.Namespace) -> int:
    from .service import diagnose_text

    logs, notes1 = _read_inputs(args.log)
    dumps, notes2 = _read_inputs(args.dump)
    facts = {}
    if args.facts:
        try:
            with open(args.facts, encoding="utf-8") as f:
                facts = json.load(f)
        except (OSError, ValueError) as exc:
            raise ToolError(f"cannot read facts from {args.facts}: {exc}") from None
        if isinstance(facts, dict) and isinstance(facts.get("facts"), dict):
            facts = facts["facts"]  # accept a whole `run --json` or `parse --json` output
        if not isinstance(facts, dict):
            raise ToolError("--facts must hold a JSON object of fact names to values")
    if not logs and not dumps and not facts and not args.describe:
        if sys.stdin is not None and not sys.stdin.isatty():
            data = sys.stdin.buffer.read(64 * 1024 * 1024)
            from .service import decode_text

            logs = [("stdin", decode_text(data, "stdin", notes1))]
        else:
            raise ToolError("nothing to match: give --log FILE, --dump FILE or --facts FILE (or pipe a log on stdin)")
    res = diagnose_text(logs=logs, dumps=dumps, facts=facts, description=args.describe)
    res["notes"] = notes1 + notes2 + res["notes"]
    from .verdicts import exit_status

    status = exit_status(res)
    lang = _lang(args)
    if lang != "en":
        from .i18n import localize_diagnoses
        from .service import get_kb

        res["diagnoses"] = localize_diagnoses(res["diagnoses"], get_kb()[0], lang)
        res["possible"] = localize_diagnoses(res.get("possible") or [], get_kb()[0], lang)
    if args.json:
        # the input is the user's own: not echoed back
        _print_json({k: v for k, v in res.items() if k not in ("logs", "dumps", "description")})
    else:
        from .report import render_match

        print(render_match(res, lang))
    return status


# ---------------------------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    # the console script says its own name (`gpu-doctor`); `python -m diagnostics` keeps saying that
    invoked = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    p = argparse.ArgumentParser(prog="gpu-doctor" if invoked == "gpu-doctor" else "python -m diagnostics",
                                description=_h("cli.diagnose_broken_rocm_cuda_pytorch_setups"))
    p.add_argument("--lang", dest="top_lang", choices=["en", "zh"], help=_h("cli.language_of_the_report_default_from_the"))
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    _register_optional(sub, "diagnostics.run_cli", "run")

    sp = sub.add_parser("parse", help=_h("cli.extract_facts_from_a_pasted_dump"))
    sp.add_argument("file", metavar="FILE", help=_h("cli.parse_file"))
    sp.add_argument("--kind", default="auto",
                    choices=["auto", *parsers_kinds()])
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_parse)

    sp = sub.add_parser("match", help=_h("cli.diagnose_from_logs_dumps_and_or_facts"))
    sp.add_argument("--log", action="append", metavar="FILE", help=_h("cli.match_log"))
    sp.add_argument("--dump", action="append", metavar="FILE", help=_h("cli.match_dump"))
    sp.add_argument("--facts", metavar="FILE", help=_h("cli.match_facts"))
    sp.add_argument("--describe", metavar="TEXT", help=_h("cli.the_symptom_in_your_own_words_english_or"))
    sp.add_argument("--lang", choices=["en", "zh"], help=_h("cli.language_of_the_report_default_from_the"))
    sp.add_argument("--json", action="store_true", help=_h("run_cli.print_the_report_as_json"))
    sp.set_defaults(func=cmd_match)

    _register_optional(sub, "diagnostics.cli_generate", "generate")
    _register_optional(sub, "diagnostics.cli_sessions", "sessions")

    kbp = sub.add_parser("kb", help=_h("cli.knowledge_base_tools_for_contributors"))
    kbp.add_argument("--kb", default=None, help=_h("cli.knowledge_base_directory_default_the_bun"))
    ksub = kbp.add_subparsers(dest="kb_command", metavar="KB_COMMAND")
    ksub.required = True
    sp = ksub.add_parser("lint", help=_h("cli.check_every_entry_against_the_schema"))
    sp.set_defaults(func=cmd_kb_lint)
    sp = ksub.add_parser("test", help=_h("cli.run_every_entry_s_own_test_cases"))
    sp.add_argument("--run", metavar="REGEX", help=_h("cli.only_entries_whose_id_matches"))
    sp.add_argument("-v", "--verbose", action="store_true")
    sp.set_defaults(func=cmd_kb_test)
    sp = ksub.add_parser("list", help=_h("cli.list_the_entries"))
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--sort", choices=("id", "checked"), default="id",
                    help=_h("cli.order_by_id_default_or_by_the_date_the_f"))
    sp.add_argument("--oldest", dest="sort", action="store_const", const="checked",
                    help=_h("cli.same_as_sort_checked_never_checked_entri"))
    sp.set_defaults(func=cmd_kb_list)
    sp = ksub.add_parser("schema", help=_h("cli.print_the_json_schema_of_an_entry"))
    sp.set_defaults(func=cmd_kb_schema)
    sp = ksub.add_parser("matrix", help=_h("cli.the_gpu_support_matrix_for_targets_gfx10"))
    sp.add_argument("targets", nargs="*", metavar="TARGET")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_kb_matrix)

    sp = sub.add_parser("serve", help=_h("cli.start_the_web_ui"))
    sp.add_argument("--port", type=int, default=8501)
    sp.add_argument("--address", default="127.0.0.1", help=_h("cli.address_to_bind_default_127_0_0_1_this_m"))
    sp.set_defaults(func=cmd_serve)
    return p


def _register_optional(sub: Any, module: str, name: str) -> None:
    """Commands whose module lives in its own file; a missing dependency leaves the others working."""
    import importlib

    try:
        mod = importlib.import_module(module)
        mod.register_cli(sub)
        return
    except ImportError as exc:
        err = exc

    def unavailable(args: argparse.Namespace, _e: Exception = err) -> int:
        raise ToolError(f"'{name}' is unavailable here: {_e} (install the requirements: bash scripts/setup.sh)")

    sp = sub.choices.get(name) if hasattr(sub, "choices") else None
    if sp is None:
        sp = sub.add_parser(name, help=f"(unavailable: {err})")
        sp.add_argument("rest", nargs=argparse.REMAINDER)
    sp.set_defaults(func=unavailable)
    for action in getattr(sp, "_subparsers", None)._group_actions if getattr(sp, "_subparsers", None) else []:
        for child in getattr(action, "choices", {}).values():
            child.set_defaults(func=unavailable)


def _localize_error(msg: str, lang: str) -> str:
    from .i18n.probe_text import localize_text

    return localize_text(msg, lang)


def cmd_serve(args: argparse.Namespace) -> int:
    """Start Streamlit in this process (no second interpreter to start)."""
    from .paths import data_root

    root = str(data_root())  # the checkout, or <prefix>/share/gpu-doctor of an installed package
    app = os.path.join(root, "app.py")
    os.chdir(root)  # .streamlit/config.toml is read from the working directory
    from .access import load_config, serve_problem

    problem = serve_problem(args.address, load_config(oidc_configured=os.path.exists(
        os.path.join(root, ".streamlit", "secrets.toml"))))
    if problem:
        raise ToolError(problem)
    print(f"GPU doctor: open http://{args.address}:{args.port}", file=sys.stderr)
    from streamlit.web import cli as stcli

    sys.argv = ["streamlit", "run", app, "--server.address", args.address, "--server.port", str(args.port),
                "--browser.gatherUsageStats", "false", "--server.headless", "true",
                "--server.fileWatcherType", "none"]
    try:
        stcli.main()
    except SystemExit as exc:
        return int(exc.code or 0)
    except KeyboardInterrupt:
        return 0
    return 0


def main(argv: list[str] | None = None) -> int:
    global HELP_LANG
    from .i18n import t
    from .termsafe import install

    install()  # the one place the CLI's text is written: no escape sequence reaches a terminal
    HELP_LANG = lang = _argv_language(sys.argv[1:] if argv is None else argv)
    saved_gettext = argparse._
    if lang != "en":
        argparse._ = _argparse_gettext(lang)  # this process is the CLI: argparse's words in the chosen language
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    finally:
        argparse._ = saved_gettext
    try:
        return int(args.func(args) or 0)
    except ToolError as exc:
        print(t("report.error", lang, message=_localize_error(str(exc), lang)), file=sys.stderr)
        return EXIT_TOOL
    except KeyboardInterrupt:
        print(t("report.interrupted", lang), file=sys.stderr)
        return EXIT_TOOL
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # `python -m diagnostics.cli ...` is the same command as `python -m diagnostics ...`
    sys.exit(main())
