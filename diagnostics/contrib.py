"""Contributor tools (the service layer for the knowledge-base pages): search, validation in the editor, turning a
saved session into a test case, and finding the saved sessions an entry would match.  No Streamlit here: tested
directly in tests/test_app_kbtools.py; the pages (ui/kb.py, ui/kb_editor.py, ui/fleet.py) only render.

Validation is the library's own: ``diagnostics.kb.parse_entry`` (what ``kb lint`` runs, so the editor shows
the same ``file:line:column: message``) and ``diagnostics.matcher.evaluate_entry`` (what ``kb test`` runs).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from . import facts as factcat
from .i18n import t
from .kb import KB_DIR, SEVERITIES, Cond, Entry, KBError, parse_entry
from .kb_lint import caveat_findings
from .matcher import TRUE, evaluate_entry, run_case
from .service import report_texts, search_kb

ID_LINE = re.compile(r"^id:\s*['\"]?([A-Za-z0-9_.-]+)", re.M)
MAX_CASE_LOG_CHARS = 6000


# ------------------------------------------------------------------------------------------------- browsing
def search(entries: Iterable[Entry], query: str = "", tags: Iterable[str] = (), severities: Iterable[str] = (),
           include_benign: bool = True) -> list[Entry]:
    """Entries for *query*, best first: those the symptom retrieval ranks for it (diagnostics.service.search_kb,
    the same BM25 ranking a description of symptoms gets, so "vram full" finds the out-of-memory entries), then
    those whose id, title, symptoms, cause, tags, log patterns or translation contain every word of *query*
    literally (an id, an error code the retrieval does not rank); with at least one of *tags* and one of
    *severities* when given.  Without a query: every entry, by severity then id."""
    entries = list(entries)
    tags, severities = set(tags), set(severities)

    def keep(e: Entry) -> bool:
        return ((not tags or bool(tags & set(e.tags))) and (not severities or e.severity in severities)
                and (include_benign or not e.benign))

    pool = [e for e in entries if keep(e)]
    if not (query or "").strip():
        return sorted(pool, key=lambda e: (SEVERITIES.index(e.severity), e.id))
    by_id = {e.id: e for e in pool}
    ranked = [by_id[h["id"]] for h in search_kb(query, kb=entries) if h["id"] in by_id]
    words = [w.lower() for w in query.split()]
    literal = []
    for e in pool:
        translated = [str(tr.get(f) or "") for tr in (e.translations or {}).values() if isinstance(tr, dict)
                      for f in ("title", "symptoms", "cause")]
        hay = " ".join([e.id, e.title, e.symptoms, e.cause, " ".join(e.tags),
                        " ".join(e.when.log_patterns()), *translated]).lower()
        if all(w in hay for w in words):
            literal.append(e)
    # an id or error code typed exactly goes first; then the ranking; then the other literal matches
    exact = [e for e in literal if e.id == query.strip().lower()]
    order = exact + ranked + sorted(literal, key=lambda e: (SEVERITIES.index(e.severity), e.id))
    return [by_id[i] for i in dict.fromkeys(e.id for e in order)]


def entry_source(entry: Entry) -> str:
    """The YAML text of an entry as it is in the kb/ folder."""
    for p in (Path(entry.path), KB_DIR / f"{entry.id}.yaml"):
        try:
            return p.read_text(encoding="utf-8")
        except OSError:
            continue
    return ""


def describe(c: Cond, depth: int = 0, lang: str = "en") -> list[str]:
    """The condition tree in plain words (in *lang*), one line per node; patterns, fact names, operators and
    values stay as they are written in the entry."""
    pad = "  " * depth
    if c.kind in ("all", "any"):
        head = t("ui.kb.cond_all" if c.kind == "all" else "ui.kb.cond_any", lang)
        return [pad + head] + [ln for ch in c.children for ln in describe(ch, depth + 1, lang)]
    if c.kind == "not":
        return [pad + t("ui.kb.cond_not", lang)] + describe(c.children[0], depth + 1, lang)
    if c.kind == "log":
        return [pad + t("ui.kb.cond_log", lang, pattern=c.pattern)]
    val = c.pattern if c.op == "matches" else c.value
    return [pad + t("ui.kb.cond_fact", lang, fact=c.fact, op=c.op.replace("_", " "), value=repr(val))]


# ------------------------------------------------------------------------------------------------- validation
@dataclass
class Validation:
    entry: Entry | None = None
    error: KBError | None = None
    warnings: list[str] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)
    lint: list[Any] = field(default_factory=list)   # diagnostics.kb_lint findings (dangerous steps, dates)
    template: list[str] = field(default_factory=list)  # what is still the template's own text

    @property
    def ok(self) -> bool:
        return self.entry is not None and all(c["ok"] for c in self.cases)

    @property
    def lint_errors(self) -> list[Any]:
        return [f for f in self.lint if f.level == "error"]

    @property
    def downloadable(self) -> bool:
        """Only an entry `kb lint` accepts (schema, placeholders, dangerous-step caveats), whose cases all pass
        and that is no longer the template can be downloaded."""
        return self.ok and not self.lint_errors and not self.template


def guess_id(text: str) -> str:
    m = ID_LINE.search(text or "")
    return m.group(1) if m else "new-entry"


def validate(text: str, existing_ids: Iterable[str] = (), lang: str = "en") -> Validation:
    """Check an entry's YAML exactly as ``kb lint`` does (as the file kb/<its id>.yaml) and run its cases."""
    eid = guess_id(text)
    path = f"kb/{eid}.yaml"
    v = Validation()
    try:
        v.entry = parse_entry(text or "", path, expected_id=eid)
    except KBError as exc:
        v.error = exc
        return v
    if v.entry.id in set(existing_ids):
        v.warnings.append(t("ui.kb_editor.id_exists", lang, id=repr(v.entry.id), path=f"kb/{v.entry.id}.yaml"))
    v.cases = run_cases(v.entry)
    v.lint = caveat_findings(v.entry)
    v.template = template_leftovers(v.entry, text)
    return v


TEMPLATE_ID = "my-new-failure"


def template_leftovers(entry: Entry, text: str) -> list[str]:
    """The parts of *entry* that are still the template's placeholders (its id, its example.org links, its
    example error text), by the YAML key they are under; empty when the author has replaced them all."""
    out = []
    if entry.id == TEMPLATE_ID:
        out.append("id")
    if any("example.org/" in u for u in entry.links) or "example.org/the-doc-that-says-so" in entry.fix:
        out.append("links")
    if "exact error text from a real report" in (text or ""):
        out.append("when")
    if entry.title.startswith(("One line that names the cause", "TODO")):  # a draft's title (Fleet) too
        out.append("title")
    return out


def run_cases(entry: Entry) -> list[dict[str, Any]]:
    """The entry's cases by the rule ``kb test`` uses (diagnostics.matcher.run_case)."""
    return [run_case(entry, t) for t in entry.tests]


def error_context(text: str, err: KBError, around: int = 2) -> str:
    """The lines around an error with a caret under the column, for display as code."""
    lines = (text or "").splitlines() or [""]
    i = max(1, min(err.line, len(lines)))
    lo, hi = max(1, i - around), min(len(lines), i + around)
    out = []
    for n in range(lo, hi + 1):
        out.append(f"{n:>4} | {lines[n - 1]}")
        if n == i:
            out.append("     | " + " " * max(0, err.col - 1) + "^")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------- from sessions
class _Dumper(yaml.SafeDumper):
    pass


def _str_repr(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_repr)


def session_logs(report: dict[str, Any]) -> str:
    """The text a session's diagnosis matched (diagnostics.service.report_texts, the one list of it)."""
    return "\n".join(t for _, t in report_texts(report) if t)


def session_case(report: dict[str, Any], expect: str = "fire", max_log_chars: int = MAX_CASE_LOG_CHARS) -> dict[str, Any]:
    """A KB test case made from a saved session: its well-typed facts and the text it matched."""
    facts = {k: v for k, v in sorted((report.get("facts") or {}).items())
             if v is not None and factcat.check_value(k, v) is None}
    logs = "\n".join(ln.rstrip() for ln in session_logs(report).splitlines() if ln.strip())
    if len(logs) > max_log_chars:
        logs = logs[-max_log_chars:]
        logs = logs[logs.find("\n") + 1:]
    sid = str(report.get("session_id") or "")[:8]
    case: dict[str, Any] = {"name": f"saved session {sid} ({report.get('host') or 'unknown host'})"}
    if facts:
        case["facts"] = facts
    if logs:
        case["logs"] = logs + "\n"
    case["expect"] = expect
    return case


def case_yaml(case: dict[str, Any]) -> str:
    """One test case as YAML, indented to go under ``tests:``."""
    body = yaml.dump([case], Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)
    return "".join("  " + ln if ln.strip() else ln for ln in body.splitlines(keepends=True))


def add_case(entry_text: str, case: dict[str, Any]) -> str:
    """*entry_text* with *case* appended to its top-level ``tests:`` list (text kept as it was otherwise)."""
    lines = entry_text.rstrip("\n").split("\n")
    start = next((i for i, ln in enumerate(lines) if re.match(r"^tests:\s*$", ln)), None)
    block = case_yaml(case).rstrip("\n").split("\n")
    if start is None:
        return "\n".join(lines + ["tests:"] + block) + "\n"
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^[A-Za-z_]", lines[i])), len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[:end] + block + lines[end:]) + "\n"


def template() -> str:
    for p in (KB_DIR / "_template.yaml.txt",):
        try:
            return p.read_text(encoding="utf-8")
        except OSError:
            pass
    return "id: my-new-failure\n"


def new_entry_from_session(report: dict[str, Any]) -> str:
    """The template with its first case replaced by the session (the silent case stays for the author)."""
    text = template()
    sid = str(report.get("session_id") or "session")[:8]
    text = re.sub(r"^id: .*$", f"id: new-failure-{sid}", text, count=1, flags=re.M)
    start = text.find("\ntests:")
    if start < 0:
        return add_case(text, session_case(report))
    head, tests = text[:start + 1], text[start + 1:]
    # keep the template's silent case, put the session's case first
    silent = tests.split("  - name: silent", 1)
    rest = ("  - name: silent" + silent[1]) if len(silent) == 2 else ""
    return head + "tests:\n" + case_yaml(session_case(report)) + rest


def new_entry_from_group(group: dict[str, Any], fire: Iterable[dict[str, Any]],
                         silent: dict[str, Any] | None = None) -> str:
    """A draft entry for a group of the unexplained queue (diagnostics.store.stats.unexplained): the condition is
    the group's RE2 pattern (the normalised error line, escaped, with a class for each stripped number, address,
    path, id or time), the group's sessions are firing cases and a healthy session is the silent case."""
    text = template()
    sig = str(group.get("sig") or "group")[:8]
    pattern = str(group.get("pattern") or "") or re.escape(str(group.get("signature") or ""))
    text = re.sub(r"^id: .*$", f"id: new-failure-{sig}", text, count=1, flags=re.M)
    title = "TODO name the cause: " + re.sub(r"\s+", " ", str(group.get("signature") or ""))[:90]
    text = re.sub(r"^title: .*$", lambda _m: "title: " + _yaml_scalar(title), text, count=1, flags=re.M)
    when = "when:\n  log: " + _yaml_scalar(pattern) + "\n"
    text = re.sub(r"^when:\n(?:[ \t].*\n|\n)*", lambda _m: when, text, count=1, flags=re.M)
    start = text.find("\ntests:")
    head = text[:start + 1] if start >= 0 else text.rstrip("\n") + "\n"
    cases = [session_case(r, "fire") for r in fire]
    if silent is not None:
        cases.append(session_case(silent, "silent"))
    return head + "tests:\n" + "".join(case_yaml(c) for c in cases)


def _yaml_scalar(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


# ------------------------------------------------------------------------------------------------- sessions it matches
def sessions_matching(entry: Entry, store: Any, limit: int = 500, page_size: int = 100) -> tuple[list[dict[str, Any]], int]:
    """Saved sessions (newest first, at most *limit* looked at) on which *entry* would fire.

    Returns (rows, looked_at); each row: id, created_at, host, verdict, already (the entry was already among
    the session's diagnoses)."""
    hits: list[dict[str, Any]] = []
    seen = 0
    page = 1
    while seen < limit:
        rows, total = store.list_sessions(page=page, page_size=page_size)
        if not rows:
            break
        for r in rows:
            if seen >= limit:
                break
            seen += 1
            try:
                rep = store.get(r["id"])
            except Exception:
                continue
            facts, _ = factcat.clean_facts(dict(rep.get("facts") or {}))
            out = evaluate_entry(entry, facts, session_logs(rep))
            if out.value == TRUE:
                hits.append({"id": r["id"], "created_at": r["created_at"], "host": r["host"],
                             "verdict": r["verdict"],
                             "already": any(d.get("id") == entry.id for d in rep.get("diagnoses") or [])})
        if page * page_size >= total:
            break
        page += 1
    return hits, seen
