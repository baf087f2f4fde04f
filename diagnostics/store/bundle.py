"""Session bundles (the shareable file) and the Markdown / HTML reports of a session.

A bundle is one JSON document::

    {"format": "gpu-doctor-session", "version": 1, "exported_at": "...", "session": {...the report...},
     "sha256": "<hex sha256 of the canonical JSON of everything except this key>"}

A bundle written with ``write_bundle(..., reports=True)`` (``sessions export --with-reports``, only ever to a
file) also holds ``"report_markdown"`` and ``"report_html"``, the session rendered; every bundle made before that
option holds them too.  They are derived
from the session, covered by the checksum when present, and never read: import renders them again from the
session when they are needed, so a bundle without them carries the same session (a third of the bytes) and every
version of this importer, old ones included, takes both forms.

Import trusts nothing in it: size, UTF-8, JSON, format, version, checksum and the shape of the session
are checked before anything touches the database; active HTML in any text is neutralised; the rendered
reports in the file are ignored (they are rendered again from the session when needed).
"""
from __future__ import annotations

import html
import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import markdown as _markdown
import nh3

from .summary import sha256_of, utcnow, verdict
from ..verdicts import compute as compute_verdict

FORMAT = "gpu-doctor-session"
VERSION = 1
MAX_BUNDLE_BYTES = 20 * 1024 * 1024


class BundleError(ValueError):
    """A bundle was refused; the message says why, in words a user can act on."""


# ----------------------------------------------------------------------------------------------- validation
MAX_DEPTH = 24  # objects/lists nested deeper than this are refused (a real session nests about 6 deep)
MAX_INT_DIGITS = 40  # integers longer than this are refused (json would take 5000 digits and choke later)
MAX_ITEMS = 500_000  # values in one bundle
MAX_FUTURE = timedelta(days=2)  # created_at may run ahead of this clock by at most this much (time zones, skew)
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# the shape of the lists a session holds: key -> accepted types, per list (None stands for JSON null)
_NUM = (int, float)
_STR_OR_NONE = (str, type(None))
_ITEM_SCHEMA: dict[str, dict[str, tuple[type, ...]]] = {
    "probes": {"id": (str,), "title": _STR_OR_NONE, "status": _STR_OR_NONE, "error": _STR_OR_NONE,
               "summary": _STR_OR_NONE, "duration_s": _NUM + (type(None),), "facts": (dict, type(None)),
               "evidence": (list, type(None)), "logs": (list, type(None)), "notes": (list, type(None)),
               "stage": _STR_OR_NONE, "provides": (list, type(None)), "output_tail": _STR_OR_NONE,
               "signal": _STR_OR_NONE, "returncode": (int, type(None))},
    "diagnoses": {"id": (str,), "title": _STR_OR_NONE, "severity": _STR_OR_NONE, "confidence": _NUM + (type(None),),
                  "evidence": (list, type(None)), "fix": _STR_OR_NONE, "cause": _STR_OR_NONE,
                  "symptoms": _STR_OR_NONE, "basis": _STR_OR_NONE, "benign": (bool, type(None)),
                  "links": (list, type(None))},
    "logs": {"name": _STR_OR_NONE, "text": (str,)},
    "not_ruled_out": {"id": (str,), "title": _STR_OR_NONE, "reason": _STR_OR_NONE, "unknown": (list, type(None))},
    "redactions": {"placeholder": (str,), "kind": (str,), "where": (list,)},
}
_TOP_SCHEMA: dict[str, tuple[type, ...]] = {
    "session_id": (str,), "created_at": (str,), "host": (str,), "source": (str,), "tool_version": (str,),
    "kb_version": (str,), "facts": (dict,), "generation": (dict,), "verdict": (str,), "notes": (list,),
    "python": (str,), "possible": (list,),
}


def _tname(types: tuple[type, ...]) -> str:
    return "/".join("null" if t is type(None) else {"str": "string", "dict": "object", "list": "list",
                                                     "int": "integer", "float": "number",
                                                     "bool": "boolean"}.get(t.__name__, t.__name__) for t in types)


def _is(v: Any, types: tuple[type, ...]) -> bool:
    if isinstance(v, bool) and bool not in types:
        return False
    return isinstance(v, types)


def check_limits(obj: Any, where: str = "bundle") -> None:
    """Raise ValueError when *obj* nests too deeply, holds too many values, a NUL character or a non-finite
    number.  Iterative: depth cannot overflow the stack here."""
    stack: list[tuple[Any, int, str]] = [(obj, 1, where)]
    n = 0
    while stack:
        o, d, p = stack.pop()
        n += 1
        if n > MAX_ITEMS:
            raise ValueError(f"more than {MAX_ITEMS:,} values")
        if isinstance(o, str):
            if "\x00" in o:
                raise ValueError(f"{p} holds a NUL character")
        elif isinstance(o, float):
            if o != o or o in (float("inf"), float("-inf")):
                raise ValueError(f"{p} is not a finite number")
        elif isinstance(o, (dict, list)):
            if d > MAX_DEPTH:
                raise ValueError(f"{p} nests more than {MAX_DEPTH} levels deep")
            if isinstance(o, dict):
                for k, v in o.items():
                    if "\x00" in k:
                        raise ValueError(f"{p} has a key holding a NUL character")
                    stack.append((v, d + 1, f"{p}.{k[:40]}"))
            else:
                stack.extend((v, d + 1, f"{p}[{i}]") for i, v in enumerate(o))


def _items(report: dict[str, Any], key: str, where: str):
    """``(index, item)`` of the list *key* of a report, after checking it is a list of objects."""
    items = report.get(key)
    if items is None:
        return
    if not isinstance(items, list):
        raise ValueError(f"{where}.{key} must be list, got {type(items).__name__}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"{where}.{key}[{i}] must be an object")
        yield i, item


def _validate_basic(report: dict[str, Any], where: str) -> None:
    """The checks every saved report passes: top-level types and the required key of each list item."""
    for key, types in _TOP_SCHEMA.items():
        if key in ("notes", "verdict", "python", "possible"):
            continue
        v = report.get(key)
        if v is not None and not _is(v, types):
            raise ValueError(f"{where}.{key} must be {_tname(types)}, got {type(v).__name__}")
    for k in report.get("facts") or {}:
        if not isinstance(k, str) or len(k) > 255:
            raise ValueError(f"{where}.facts has a bad fact name {str(k)[:60]!r}")
    for key, required in (("probes", ("id",)), ("diagnoses", ("id",)), ("logs", ("text",)),
                          ("not_ruled_out", ("id",))):
        for i, item in _items(report, key, where):
            for r in required:
                if not isinstance(item.get(r), str):
                    raise ValueError(f"{where}.{key}[{i}].{r} must be a string")
            if key == "probes" and item.get("facts") is not None and not isinstance(item.get("facts"), dict):
                raise ValueError(f"{where}.probes[{i}].facts must be an object")
            if item.get("evidence") is not None and not isinstance(item.get("evidence"), list):
                raise ValueError(f"{where}.{key}[{i}].evidence must be a list")


def validate_report(report: Any, *, where: str = "session", strict: bool = False) -> None:
    """Raise ValueError when *report* does not have the shape of a session report.

    ``strict`` (import): also the limits (depth, NUL, non-finite numbers), a canonical lower-case UUID as id,
    ``created_at`` not in the future, and the type of every field of every list item the pages read.  A
    report being saved is not held to these (save gives a non-UUID id a new one; NULs are the store's to
    strip)."""
    if not isinstance(report, dict):
        raise ValueError(f"{where} must be a JSON object, got {type(report).__name__}")
    if not strict:
        _validate_basic(report, where)
        return
    check_limits(report, where)
    for key, types in _TOP_SCHEMA.items():
        v = report.get(key)
        if v is not None and not _is(v, types):
            raise ValueError(f"{where}.{key} must be {_tname(types)}, got {type(v).__name__}")
    sid = report.get("session_id")
    if isinstance(sid, str) and sid and _UUID_RE.fullmatch(sid) is None:
        if _UUID_RE.fullmatch(sid.lower()):
            raise ValueError(f"{where}.session_id {sid[:40]!r} is not in canonical (lower-case) form")
        raise ValueError(f"{where}.session_id {sid[:40]!r} is not a UUID")
    created = report.get("created_at")
    if isinstance(created, str) and created:
        try:
            when = datetime.fromisoformat(created.replace("Z", "+00:00")[:40])
        except ValueError:
            raise ValueError(f"{where}.created_at {created[:40]!r} is not an ISO 8601 time") from None
        if when.tzinfo is not None:
            when = when.astimezone(timezone.utc).replace(tzinfo=None)
        if when > utcnow() + MAX_FUTURE:
            raise ValueError(f"{where}.created_at {created[:40]!r} lies in the future")
        if when.year < 2000:
            raise ValueError(f"{where}.created_at {created[:40]!r} is before the year 2000")
    for k, v in (report.get("facts") or {}).items():
        if len(k) > 255:
            raise ValueError(f"{where}.facts has a bad fact name {str(k)[:60]!r}")
    for key, schema in _ITEM_SCHEMA.items():
        for i, item in _items(report, key, where):
            for f, types in schema.items():
                if f in item or types[-1] is not type(None):
                    v = item.get(f)
                    if not _is(v, types):
                        raise ValueError(f"{where}.{key}[{i}].{f} must be {_tname(types)}, got {type(v).__name__}")
            for lk in ("evidence",):
                for j, ev in enumerate(item.get(lk) or []):
                    if not isinstance(ev, dict) or not _is(ev.get("excerpt", ""), (str,)) \
                            or not _is(ev.get("source", ""), (str,)):
                        raise ValueError(f"{where}.{key}[{i}].{lk}[{j}] must be an object of strings")
            for lk in ("logs",):
                if key == "probes":
                    for j, lg in enumerate(item.get(lk) or []):
                        if not isinstance(lg, dict) or not _is(lg.get("text", ""), (str,)):
                            raise ValueError(f"{where}.{key}[{i}].{lk}[{j}] must be an object with a text")
    for i, note in enumerate(report.get("notes") or []):
        if not isinstance(note, str):
            raise ValueError(f"{where}.notes[{i}] must be a string")


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


def _longest_run(text: str, ch: str) -> int:
    """The length of the longest run of *ch* in *text*: substring searches (in C) for runs of doubling, then
    halving lengths, so O(len(text) * log(run)) and no list of every run."""
    if ch not in text:
        return 0
    lo, hi = 1, 2  # a run of lo is in the text; find one of hi that is not
    while ch * hi in text:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ch * mid in text:
            lo = mid
        else:
            hi = mid
    return lo


def _fence(text: str) -> str:
    longest = max(_longest_run(text, "`"), _longest_run(text, "~"))
    return "`" * max(3, longest + 1)


def _code_block(text: str) -> list[str]:
    """*text* as a fenced block whose fence no line of it can close."""
    f = _fence(text)
    return [f + "text", text, f]


_ENTITY = re.compile(r"&(?=#[0-9]{1,8};?|#[xX][0-9a-fA-F]{1,8};?|[A-Za-z][A-Za-z0-9]{1,31};)")


def _safe_markdown(text: str) -> str:
    """Markdown prose (a fix) written as Markdown, but inert: no character reference can spell a scheme
    (``&#106;avascript:`` -> ``&amp;#106;avascript:``), and active HTML and script schemes are neutralised."""
    return neutralise_text(_ENTITY.sub("&amp;", text))[0]


def _inline(v: Any) -> str:
    return _cell(v)


def render_markdown(report: dict[str, Any]) -> str:
    """A readable Markdown report of a session (all user text escaped)."""
    return "\n".join(_markdown_lines(report))


def iter_markdown(report: dict[str, Any]) -> Any:
    """:func:`render_markdown`, piece by piece: a log is yielded as it is (not copied into a joined text)."""
    for i, line in enumerate(_markdown_lines(report)):
        if i:
            yield "\n"
        yield line


def _markdown_lines(report: dict[str, Any], big_block: Any = None) -> list[str]:
    """The lines of :func:`render_markdown` (a log is one item).  *big_block(text, fence)*, when given, is
    called for each log longer than :data:`HTML_PIECE` and returns what stands in its code block instead."""
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
                out += [f"Evidence from {_inline(ev.get('source', ''))}:", "",
                        *_code_block(str(ev.get("excerpt", ""))), ""]
        fix = d.get("fix")
        if isinstance(fix, str) and fix.strip():
            out += ["**Fix**", "", _safe_markdown(fix.strip()), ""]
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
            out += ["", *_code_block(gen["text"])]
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
            # (`markdown` deletes STX/ETX before it looks for fences, which can join runs of backticks into a
            # closing fence: such a rare text is rendered whole, as before, so the page stays the same)
            if big_block is not None and len(text) > HTML_PIECE and "\x02" not in text and "\x03" not in text:
                fence = _fence(text)
                block = [fence + "text", big_block(text, fence), fence]
            else:
                block = _code_block(text)
            out += [f"## Log: {_inline(lg.get('name', ''))}", "", *block, ""]
    return out


ALLOWED_TAGS = {"h1", "h2", "h3", "h4", "p", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
                "code", "pre", "strong", "em", "a", "blockquote", "hr", "br"}


def sanitize_html(fragment: str) -> str:
    """nh3 with a short allow-list: no script/style/iframe, no event handlers, only http(s)/mailto links."""
    return nh3.clean(fragment, tags=ALLOWED_TAGS, attributes={"a": {"href", "title"}, "td": {"align"},
                                                                "th": {"align"}},
                     url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer nofollow")


def render_html(report: dict[str, Any]) -> str:
    """A standalone HTML page of the session: Markdown rendered by `markdown`, then sanitised by nh3."""
    return "".join(iter_html(report))


HTML_PIECE = 1 << 20  # a log longer than this is rendered into HTML a piece of lines at a time


def _html_of(md: str) -> str:
    return sanitize_html(_markdown.markdown(md, extensions=["tables", "fenced_code"]))


_CODE_OPEN, _CODE_CLOSE = "<pre><code>", "</code></pre>"


def _code_html(text: str, fence: str) -> Any:
    """The inside of ``<pre><code>...</code></pre>`` that `markdown` + nh3 make of *text* in a fenced block,
    rendered ~HTML_PIECE characters of whole lines at a time.  What they do to a fenced block's text is local to
    its lines (escaping, tabs expanded, CR as a line break, a line of spaces emptied, NUL dropped), so the pieces
    give what the whole block gives: the inside of each piece's own block, the last one ending the text."""
    start, n = 0, len(text)
    while start < n:
        end = min(n, start + HTML_PIECE)
        if end < n:
            nl = text.find("\n", end)  # whole lines only (after the line break, so CR LF stays together)
            end = n if nl == -1 else nl + 1
        # a piece before the last ends with its line break, which its own block's closing fence line supplies
        piece = text[start:end - 1] if end < n else text[start:end]
        out = _html_of(f"{fence}text\n{piece}\n{fence}")
        del piece
        a, b = out.find(_CODE_OPEN), out.rfind(_CODE_CLOSE)
        if a != 0 or b == -1 or out[b:].strip() != _CODE_CLOSE:
            raise ValueError("unexpected HTML for a code block")
        yield out[a + len(_CODE_OPEN):b]
        start = end


def iter_html(report: dict[str, Any]) -> Any:
    """:func:`render_html` piece by piece.  The page is rendered with each long log standing as a placeholder
    in its code block, then the placeholder gives way to the log's own HTML, rendered in pieces of lines (the
    same text as rendering the whole document at once; tests compare them)."""
    import secrets as _secrets

    token = "GPUDOCTORLOG" + _secrets.token_hex(16)
    big: list[tuple[str, str, str]] = []

    def stand_in(text: str, fence: str) -> str:
        big.append((f"{token}{len(big)}x", text, fence))
        return big[-1][0]

    body = _html_of("\n".join(_markdown_lines(report, stand_in)))
    title = html.escape(f"GPU doctor session {report.get('session_id', '')}")
    yield ("<!doctype html>\n<html><head><meta charset=\"utf-8\">\n"
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
           f"<title>{title}</title>\n<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}"
           "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
           "pre{background:#f4f4f4;padding:6px;overflow:auto}</style></head>\n<body>\n")
    pos = 0
    for mark, _, _ in big:
        if body.count(mark) != 1 or (_CODE_OPEN + mark + "\n" + _CODE_CLOSE) not in body:
            raise ValueError("the placeholder of a log was not found once in the rendered page")
    for mark, text, fence in big:
        at = body.find(_CODE_OPEN + mark + "\n" + _CODE_CLOSE, pos) + len(_CODE_OPEN)
        yield body[pos:at]
        yield from _code_html(text, fence)
        pos = at + len(mark) + 1
    yield body[pos:] + "\n</body></html>\n"


# ----------------------------------------------------------------------------------------------- bundles
def build_bundle(session: dict[str, Any]) -> bytes:
    """The bundle file of *session* (see :func:`write_bundle`): written to a temporary file and read back in one
    piece of its exact size (a BytesIO grows by copies, up to twice the bundle while it grows).  The form with the
    renderings (about three times the logs) is only written to a file: ``write_bundle(session, fp, reports=True)``."""
    import tempfile

    with tempfile.TemporaryFile() as fp:
        size = write_bundle(session, fp)
        fp.seek(0)
        return fp.read(size)


def write_bundle(session: dict[str, Any], fp: Any, *, reports: bool = False) -> int:
    """Write the bundle of *session* to the binary file *fp*; return the number of bytes written.

    The same bytes as ``json.dumps(bundle, ensure_ascii=False, indent=1) + "\\n"`` with the checksum of
    :func:`summary.sha256_of`, but streamed, so the JSON is never held whole.  The bundle is the session and its
    checksum; *reports* adds the Markdown and HTML renderings (``report_markdown``, ``report_html``), which import
    ignores and renders again, each about the size of the session's logs: the HTML is then rendered once (to a
    temporary file, hashed on the way), the Markdown twice (it only refers to the session's strings), so neither
    is held whole either."""
    import contextlib
    import hashlib
    import tempfile

    from .summary import Pieces, iter_json

    exported_at = utcnow().isoformat(timespec="seconds") + "Z"
    bundle: dict[str, Any] = {"format": FORMAT, "version": VERSION, "exported_at": exported_at, "session": session}
    with contextlib.ExitStack() as stack:
        if reports:
            spool = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", newline=""))
            rendered = [False]

            def html_pieces() -> Any:  # the first pass renders and keeps it, the second reads it back
                if not rendered[0]:
                    for piece in iter_html(session):
                        spool.write(piece)
                        yield piece
                    rendered[0] = True
                else:
                    spool.seek(0)
                    while True:
                        piece = spool.read(HTML_PIECE)
                        if not piece:
                            break
                        yield piece

            bundle["report_markdown"] = Pieces(lambda: iter_markdown(session))
            bundle["report_html"] = Pieces(html_pieces)
        h = hashlib.sha256()
        for chunk in iter_json(bundle, sort_keys=True):
            h.update(chunk.encode("utf-8"))
        bundle["sha256"] = h.hexdigest()
        n = 0
        for chunk in iter_json(bundle, indent=1):
            data = chunk.encode("utf-8")
            fp.write(data)
            n += len(data)
        fp.write(b"\n")
        return n + 1


def _streamed_sha256(obj: Any) -> str:
    """summary.sha256_of(obj), without building the whole canonical JSON text and its bytes at once."""
    return sha256_of(obj)


class _Refused(ValueError):
    pass


def _parse_int(s: str) -> int:
    if len(s.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"the bundle holds an integer of {len(s.lstrip('-')):,} digits (at most {MAX_INT_DIGITS})")
    return int(s)


def _no_constant(s: str) -> Any:
    raise _Refused(f"the bundle holds {s}, which is not a JSON number")


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
        bundle = json.loads(text, parse_int=_parse_int, parse_constant=_no_constant)
        del text  # the parsed bundle holds it all; keep one copy, not two
    except _Refused as e:
        raise BundleError(f"refused: {e}") from None
    except json.JSONDecodeError as e:
        ends_early = e.msg.startswith("Unterminated") or e.pos >= len(text.rstrip()) - 1
        hint = "it ends too early: truncated, e.g. by an interrupted download" if ends_early else \
            "it is truncated or damaged"
        raise BundleError(f"refused: the bundle is not valid JSON ({hint}): {e.msg} at line {e.lineno} "
                          f"column {e.colno}") from None
    except RecursionError:
        raise BundleError(f"refused: the bundle nests more than {MAX_DEPTH} levels deep") from None
    except ValueError as e:  # what the json module itself refuses beyond the above
        raise BundleError(f"refused: the bundle is not valid JSON: {str(e).splitlines()[0][:200]}") from None
    try:
        check_limits(bundle)
    except ValueError as e:
        raise BundleError(f"refused: {e}") from None
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
        actual = _streamed_sha256(rest)
    except ValueError as e:
        raise BundleError(f"refused: the bundle holds values JSON cannot carry ({e})") from None
    if actual != claimed.lower():
        raise BundleError("refused: checksum mismatch; the bundle was altered or damaged after export "
                          f"(expected {claimed[:12]}..., got {actual[:12]}...)")
    session = bundle.get("session")
    try:
        validate_report(session, strict=True)
    except ValueError as e:
        raise BundleError(f"refused: the session in the bundle is malformed: {e}") from None
    session, changed = neutralise(session)
    warnings: list[str] = []
    # a verdict in the file is never trusted: it is recomputed from the findings (diagnostics.verdicts)
    stored = session.get("verdict")
    if stored is not None and stored != compute_verdict(session):
        session["verdict"] = compute_verdict(session)
        warnings.append(f"the bundle said the verdict was {str(stored)[:16]!r}; its findings say "
                        f"{session['verdict']!r}, which is kept")
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        warnings.append(f"neutralised HTML/script markup in {len(changed)} field(s): {shown}")
    return session, warnings
