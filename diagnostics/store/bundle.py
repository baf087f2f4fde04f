"""Session bundles (the shareable file) and the Markdown / HTML reports of a session.

A bundle is one JSON document::

    {"format": "gpu-doctor-session", "version": 1, "exported_at": "...",
     "session": {...the report...}, "report_markdown": "...", "report_html": "...",
     "sha256": "<hex sha256 of the canonical JSON of everything except this key>"}

Import trusts nothing in it: size, UTF-8, JSON, format, version, checksum and the shape of the session
are checked before anything touches the database; active HTML in any text is neutralised; the rendered
reports in the file are ignored (they are rendered again from the session when needed).
"""
from __future__ import annotations

import html
import json
import re
from typing import Any

import markdown as _markdown
import nh3

from .summary import sha256_of, utcnow, verdict

FORMAT = "gpu-doctor-session"
VERSION = 1
MAX_BUNDLE_BYTES = 20 * 1024 * 1024


class BundleError(ValueError):
    """A bundle was refused; the message says why, in words a user can act on."""


# ----------------------------------------------------------------------------------------------- validation
def validate_report(report: Any, *, where: str = "session") -> None:
    """Raise ValueError when *report* does not have the shape of a session report."""
    if not isinstance(report, dict):
        raise ValueError(f"{where} must be a JSON object, got {type(report).__name__}")

    def want(key: str, types: tuple[type, ...], optional: bool = True) -> Any:
        v = report.get(key)
        if v is None and optional:
            return None
        if not isinstance(v, types) or isinstance(v, bool) and bool not in types:
            names = "/".join(t.__name__ for t in types)
            raise ValueError(f"{where}.{key} must be {names}, got {type(v).__name__}")
        return v

    want("session_id", (str,))
    want("created_at", (str,))
    want("host", (str,))
    want("source", (str,))
    want("tool_version", (str,))
    want("kb_version", (str,))
    facts = want("facts", (dict,))
    for k in facts or {}:
        if not isinstance(k, str) or len(k) > 255:
            raise ValueError(f"{where}.facts has a bad fact name {str(k)[:60]!r}")
    for key, required in (("probes", ("id",)), ("diagnoses", ("id",)), ("logs", ("text",)),
                          ("not_ruled_out", ("id",))):
        items = want(key, (list,))
        for i, item in enumerate(items or []):
            if not isinstance(item, dict):
                raise ValueError(f"{where}.{key}[{i}] must be an object")
            for r in required:
                if not isinstance(item.get(r), str):
                    raise ValueError(f"{where}.{key}[{i}].{r} must be a string")
            if key == "probes" and item.get("facts") is not None and not isinstance(item.get("facts"), dict):
                raise ValueError(f"{where}.probes[{i}].facts must be an object")
            for lk in ("evidence",):
                if item.get(lk) is not None and not isinstance(item.get(lk), list):
                    raise ValueError(f"{where}.{key}[{i}].{lk} must be a list")
    want("generation", (dict,))


# ----------------------------------------------------------------------------------------------- neutralise
_ACTIVE_HTML = re.compile(
    r"<(?=\s*/?\s*(?:script|iframe|frame|frameset|object|embed|applet|style|link|meta|base|form|svg|math|img|"
    r"video|audio|source|body|html|input|button|textarea|template)\b)"
    r"|<(?=[A-Za-z][^<>]{0,500}?[\s\"'/]on[a-z]{2,30}\s*=)"  # any tag carrying an on* event handler
    r"|\b(?:javascript|vbscript|livescript)(?=\s*:)"
    r"|\bdata(?=\s*:\s*text/html)", re.I)


def neutralise_text(text: str) -> tuple[str, int]:
    """Make active HTML in *text* inert (``<script`` -> ``&lt;script``, ``javascript:`` -> ``javascript-blocked:``,
    ``<img onerror=...`` -> ``&lt;img onerror=...``) and return (text, number of fragments changed)."""
    count = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        s = m.group(0)
        if s == "<":
            return "&lt;"
        return s + "-blocked"  # javascript-blocked: is no longer a URL scheme

    return _ACTIVE_HTML.sub(repl, text), count


def neutralise(obj: Any, path: str = "session") -> tuple[Any, list[str]]:
    """Neutralise every string (values and keys) in *obj*; return (new obj, paths that were changed)."""
    changed: list[str] = []

    def walk(o: Any, p: str) -> Any:
        if isinstance(o, dict):
            out = {}
            for k, v in o.items():
                nk, n = neutralise_text(k) if isinstance(k, str) else (k, 0)
                if n:
                    changed.append(f"{p} (key)")
                out[nk] = walk(v, f"{p}.{k}")
            return out
        if isinstance(o, list):
            return [walk(v, f"{p}[{i}]") for i, v in enumerate(o)]
        if isinstance(o, str):
            t, n = neutralise_text(o)
            if n:
                changed.append(p)
            return t
        return o

    return walk(obj, path), changed


# ----------------------------------------------------------------------------------------------- rendering
def _cell(v: Any) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    s = html.escape(s, quote=False).replace("|", "&#124;").replace("\n", " ")
    s = s.replace("`", "&#96;").replace("*", "&#42;").replace("_", "&#95;").replace("[", "&#91;")
    return s[:500]


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+|~+", text)), default=0)
    return "`" * max(3, longest + 1)


def _inline(v: Any) -> str:
    return _cell(v)


def render_markdown(report: dict[str, Any]) -> str:
    """A readable Markdown report of a session (all user text escaped)."""
    sid = report.get("session_id", "")
    out = [f"# GPU doctor session {_inline(sid)}", ""]
    meta = [("Host", report.get("host")), ("Created", report.get("created_at")), ("Source", report.get("source")),
            ("Verdict", verdict(report)), ("Tool version", report.get("tool_version")),
            ("KB version", report.get("kb_version"))]
    out += ["| | |", "|---|---|"] + [f"| {k} | {_cell(v if v is not None else '')} |" for k, v in meta] + [""]
    diags = [d for d in report.get("diagnoses") or [] if isinstance(d, dict)]
    out.append(f"## Diagnoses ({len(diags)})")
    out.append("")
    if not diags:
        out += ["No known problem matched.", ""]
    for d in diags:
        conf = d.get("confidence")
        conf_s = f", confidence {conf:.2f}" if isinstance(conf, (int, float)) and not isinstance(conf, bool) else ""
        out.append(f"### {_inline(d.get('title') or d.get('id'))}")
        out.append("")
        out.append(f"`{_inline(d.get('id'))}` severity **{_inline(d.get('severity', ''))}**{conf_s}")
        out.append("")
        for ev in d.get("evidence") or []:
            if isinstance(ev, dict):
                ex = str(ev.get("excerpt", ""))
                f = _fence(ex)
                out += [f"Evidence from {_inline(ev.get('source', ''))}:", "", f + "text", ex, f, ""]
        fix = d.get("fix")
        if isinstance(fix, str) and fix.strip():
            out += ["**Fix**", "", fix.strip(), ""]
    nro = [n for n in report.get("not_ruled_out") or [] if isinstance(n, dict)]
    if nro:
        out += ["## Not ruled out", ""]
        out += [f"- {_inline(n.get('title') or n.get('id'))}: {_inline(n.get('reason', ''))}" for n in nro]
        out.append("")
    probes = [p for p in report.get("probes") or [] if isinstance(p, dict)]
    if probes:
        out += ["## Probes", "", "| probe | status | seconds | error |", "|---|---|---|---|"]
        for p in probes:
            out.append(f"| {_cell(p.get('id'))} | {_cell(p.get('status', ''))} | {_cell(p.get('duration_s', ''))} "
                       f"| {_cell(p.get('error') or '')} |")
        out.append("")
    facts = report.get("facts") if isinstance(report.get("facts"), dict) else {}
    if facts:
        out += ["## Facts", "", "| fact | value |", "|---|---|"]
        out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in sorted(facts.items())]
        out.append("")
    gen = report.get("generation")
    if isinstance(gen, dict):
        out += ["## Test generation", "", "| | |", "|---|---|"]
        out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in gen.items() if k != "text"]
        if isinstance(gen.get("text"), str):
            f = _fence(gen["text"])
            out += ["", f + "text", gen["text"], f]
        out.append("")
    reds = [r for r in report.get("redactions") or [] if isinstance(r, dict)]
    if reds:
        out += ["## Removed before saving", "", "| placeholder | kind | where |", "|---|---|---|"]
        out += [f"| {_cell(r.get('placeholder', ''))} | {_cell(r.get('kind', ''))} | "
                f"{_cell(', '.join(map(str, r.get('where') or [])))} |" for r in reds]
        out.append("")
    for lg in report.get("logs") or []:
        if isinstance(lg, dict):
            text = str(lg.get("text", ""))
            f = _fence(text)
            out += [f"## Log: {_inline(lg.get('name', ''))}", "", f + "text", text, f, ""]
    return "\n".join(out)


ALLOWED_TAGS = {"h1", "h2", "h3", "h4", "p", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
                "code", "pre", "strong", "em", "a", "blockquote", "hr", "br"}


def sanitize_html(fragment: str) -> str:
    """nh3 with a short allow-list: no script/style/iframe, no event handlers, only http(s)/mailto links."""
    return nh3.clean(fragment, tags=ALLOWED_TAGS, attributes={"a": {"href", "title"}, "td": {"align"},
                                                                "th": {"align"}},
                     url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer nofollow")


def render_html(report: dict[str, Any]) -> str:
    """A standalone HTML page of the session: Markdown rendered by `markdown`, then sanitised by nh3."""
    body = _markdown.markdown(render_markdown(report), extensions=["tables", "fenced_code"])
    body = sanitize_html(body)
    title = html.escape(f"GPU doctor session {report.get('session_id', '')}")
    return ("<!doctype html>\n<html><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
            f"<title>{title}</title>\n<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
            "pre{background:#f4f4f4;padding:6px;overflow:auto}</style></head>\n<body>\n"
            f"{body}\n</body></html>\n")


# ----------------------------------------------------------------------------------------------- bundles
def build_bundle(session: dict[str, Any]) -> bytes:
    bundle: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": utcnow().isoformat(timespec="seconds") + "Z",
        "session": session,
        "report_markdown": render_markdown(session),
        "report_html": render_html(session),
    }
    bundle["sha256"] = sha256_of(bundle)
    return (json.dumps(bundle, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def parse_bundle(data: bytes) -> tuple[dict[str, Any], list[str]]:
    """Check a bundle and return (session, warnings). Raise BundleError with a clear reason when refused."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not isinstance(data, (bytes, bytearray)):
        raise BundleError("refused: a bundle must be bytes")
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError(f"refused: the bundle is {len(data):,} bytes, more than the "
                          f"{MAX_BUNDLE_BYTES // (1024 * 1024)} MB limit")
    if not data.strip():
        raise BundleError("refused: the file is empty")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise BundleError(f"refused: the file is not UTF-8 text (byte {e.start}); it is damaged or not a "
                          "gpu-doctor bundle") from None
    try:
        bundle = json.loads(text)
    except json.JSONDecodeError as e:
        ends_early = e.msg.startswith("Unterminated") or e.pos >= len(text.rstrip()) - 1
        hint = "it ends too early: truncated, e.g. by an interrupted download" if ends_early else \
            "it is truncated or damaged"
        raise BundleError(f"refused: the bundle is not valid JSON ({hint}): {e.msg} at line {e.lineno} "
                          f"column {e.colno}") from None
    except RecursionError:
        raise BundleError("refused: the bundle nests too deeply") from None
    if not isinstance(bundle, dict) or bundle.get("format") != FORMAT:
        raise BundleError(f"refused: not a gpu-doctor session bundle (\"format\" must be \"{FORMAT}\")")
    version = bundle.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BundleError("refused: the bundle has no valid \"version\"")
    if version > VERSION:
        raise BundleError(f"refused: the bundle is format version {version}, made by a newer gpu-doctor; this one "
                          f"reads up to version {VERSION}. Upgrade gpu-doctor to import it.")
    claimed = bundle.get("sha256")
    if not isinstance(claimed, str):
        raise BundleError("refused: the bundle has no sha256 checksum")
    rest = {k: v for k, v in bundle.items() if k != "sha256"}
    try:
        actual = sha256_of(rest)
    except ValueError as e:
        raise BundleError(f"refused: the bundle holds values JSON cannot carry ({e})") from None
    if actual != claimed.lower():
        raise BundleError("refused: checksum mismatch; the bundle was altered or damaged after export "
                          f"(expected {claimed[:12]}..., got {actual[:12]}...)")
    session = bundle.get("session")
    try:
        validate_report(session)
    except ValueError as e:
        raise BundleError(f"refused: the session in the bundle is malformed: {e}") from None
    session, changed = neutralise(session)
    warnings: list[str] = []
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        warnings.append(f"neutralised HTML/script markup in {len(changed)} field(s): {shown}")
    return session, warnings
