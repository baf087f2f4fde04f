"""The fleet view of the session store: what breaks, where, since when -- and what nothing explains yet.

    from diagnostics.store.stats import Filters, stats, session_ids, unexplained
    stats(store, "cause", bucket="week", filters=Filters(since="2026-11-01"))
    session_ids(store, "gfx", "gfx1100", filters=Filters(host="gpu-node-07"))    # the sessions behind a count
    unexplained(store)                                # the queue, grouped by normalised error signature

Each saved session gets rows in two tables (revision 0004), written in the same transaction as the session and
rewritten when it is re-diagnosed:

* ``session_facets``: (dim, value) pairs -- ``cause`` (a confirmed problem diagnosis), ``possible`` (a guess:
  basis "possible", or listed under the report's "possible"), ``gpu``, ``gfx``, ``rocm``, ``torch`` and
  ``verdict``. The verdict is recomputed by :func:`diagnostics.verdicts.compute`, never read from the report,
  so sessions stored by an older tool are judged by today's rule.
* ``session_signatures``: the unexplained queue -- sessions whose verdict is "unexplained" (a check failed and no
  confirmed cause explains it), or that have no confirmed cause and only guesses (basis "possible", or
  confidence below :data:`LOW_CONFIDENCE`). One row per failing check, keyed by the normalised error line.

``host`` and ``status`` (review) are counted from the sessions table itself. The filters are the session list's
(``Store.list_sessions``): words, host, GPU name part, verdict, review status, since/until.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy import text as sql_text

from .. import verdicts as _verdicts
from ..textnorm import c_locale_words, fold_punctuation
from . import search
from .base import SessionNotFound, StoreError, _as_dt, _fts_phrase, _like_escape
from .models import STATUSES, FacetRow, SessionRow, SignatureRow
from .summary import parse_time

S = SessionRow.__table__
FA = FacetRow.__table__
SG = SignatureRow.__table__

FACET_DIMS = ("cause", "possible", "gpu", "gfx", "rocm", "torch", "verdict")
SESSION_DIMS = ("host", "status")
DIMENSIONS = FACET_DIMS + SESSION_DIMS
BUCKETS = ("day", "week")
LOW_CONFIDENCE = 0.5
FAILED = ("fail", "crashed", "timeout")
MAX_SIGNATURES = 3  # per session
EXCERPT_CHARS = 4000


# ------------------------------------------------------------------------------------------ signatures
_NORMALISERS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<UUID>"),
    (re.compile(r"\b(?:GPU|MIG)-[0-9a-fA-F-]{8,}\b"), "<UUID>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"), "<TIME>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<TIME>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<HEX>"),
    (re.compile(r"(?<![\w.<>-])(?:[A-Za-z]:\\|~?/|\.{1,2}/)[^\s'\"`,;()\[\]{}<>]*"), "<PATH>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b"), "<HEX>"),
    (re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*"), "<N>"),
]
_PLACEHOLDER_RE = {"<UUID>": r"[0-9A-Za-z-]+", "<TIME>": r"[0-9T:.,+Z -]+", "<HEX>": r"[0-9a-fA-Fx]+",
                   "<PATH>": r"\S+", "<N>": r"[0-9][0-9.,]*"}
_SPLIT = re.compile("(" + "|".join(re.escape(p) for p in _PLACEHOLDER_RE) + ")")
_ERRORISH = re.compile(r"error|fault|fail|exception|abort|unable|cannot|can't|could not|not found|denied|"
                       r"invalid|no such|refused|killed|oom|out of memory|segmentation|illegal|undefined", re.I)
_RAISED = re.compile(r"^[\w.]*(?:Error|Exception)\w*(?::|$)")  # RuntimeError: ..., hipErrorNoBinaryForGpu: ...
_GENERIC = re.compile(r"^(?:Aborted|Segmentation fault|Killed|Illegal instruction|Bus error)(?: \(core dumped\))?$"
                      r"|^Traceback \(most recent call last\):$|^killed by signal", re.I)


def normalise(line: str) -> str:
    """The error line with what differs between machines and runs stripped: uuids, timestamps, hex addresses,
    paths, numbers (pids, sizes, versions, line numbers) become <UUID> <TIME> <HEX> <PATH> <N>."""
    s = str(line or "").strip()
    for rx, rep in _NORMALISERS:
        s = rx.sub(rep, s)
    s = re.sub(r"\s+", " ", s).strip()
    return s[:300]


def signature_hash(norm: str) -> str:
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def signature_pattern(norm: str) -> str:
    """An RE2 pattern that matches the lines *norm* was made from: the literal parts escaped, each placeholder a
    class of what it replaced; leading/trailing placeholders dropped (the KB searches, it does not anchor)."""
    parts = [p for p in _SPLIT.split(norm) if p]
    while parts and (parts[0] in _PLACEHOLDER_RE or not parts[0].strip()):
        parts.pop(0)
    while parts and (parts[-1] in _PLACEHOLDER_RE or not parts[-1].strip()):
        parts.pop()
    out = []
    for p in parts:
        if p in _PLACEHOLDER_RE:
            out.append(_PLACEHOLDER_RE[p])
        else:   # written as the matcher reads logs: full-width punctuation and localised C messages folded
            out.append(re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", c_locale_words(fold_punctuation(p))))
    return "".join(out)


def error_line(*texts: Any) -> str:
    """The line that says what went wrong: the last raised error ('RuntimeError: ...', 'hipErrorNoBinaryForGpu:
    ...'), else the last error-looking line that is not a bare 'Aborted' or 'Segmentation fault' (those say how
    the program died, not why), else the last such line, else ''."""
    raised = specific = errish = ""
    for ln in _lines(texts):  # one line at a time: a 64 MB log is not turned into a list of its lines
        ln = ln.strip()
        if not ln:
            continue
        if _RAISED.match(ln):
            raised = ln
        if _ERRORISH.search(ln):
            errish = ln
            if not _GENERIC.search(ln):
                specific = ln
    pick = raised or specific or errish
    return pick[:400]


_LINES_PIECE = 1 << 20


def _lines(texts: Any) -> Any:
    """The ``splitlines()`` of each text, read ~1 MiB at a time (pieces end after a line feed, so a CR LF is never
    cut and the lines are the same)."""
    for t in texts:
        t = str(t or "")
        start, n = 0, len(t)
        while start < n:
            end = n if n - start <= _LINES_PIECE else t.find("\n", start + _LINES_PIECE) + 1 or n
            yield from t[start:end].splitlines()
            start = end


def _joined_tail(texts: list[str], n: int) -> str:
    """``"\\n".join(texts)[-n:]`` without joining the texts."""
    if n <= 0:
        return ""
    parts: list[str] = []
    need = n
    for i in range(len(texts) - 1, -1, -1):
        seg = texts[i]
        take = seg[-need:] if need < len(seg) else seg
        parts.append(take)
        need -= len(take)
        if need <= 0 or i == 0:
            break
        parts.append("\n")
        need -= 1
        if need <= 0:
            break
    return "".join(reversed(parts))


# ------------------------------------------------------------------------------------------ derivation
def _is_confirmed_problem(d: Any) -> bool:
    counts = getattr(_verdicts, "counts", None)
    if counts is not None:
        return bool(counts(d))
    return _verdicts.is_problem(d) and d.get("basis", "confirmed") == "confirmed" and not d.get("from_description")


def _guesses(report: dict[str, Any]) -> list[dict[str, Any]]:
    out = [d for d in report.get("diagnoses") or [] if isinstance(d, dict) and not _is_confirmed_problem(d)
           and not d.get("benign") and d.get("severity") in _verdicts.PROBLEM_SEVERITIES]
    out += [d for d in report.get("possible") or [] if isinstance(d, dict) and d.get("id")]
    return out


def _low_confidence(d: dict[str, Any]) -> bool:
    c = d.get("confidence")
    return isinstance(c, (int, float)) and not isinstance(c, bool) and c < LOW_CONFIDENCE


def _failed_checks(report: dict[str, Any], verdict: str) -> list[dict[str, Any]]:
    """The failing checks nothing explains: diagnostics.verdicts.unexplained where the verdict rule has it; for
    the older rule (no "unexplained" verdict), every failed/crashed/timed-out probe of a session with no
    confirmed cause."""
    fn = getattr(_verdicts, "unexplained", None)
    if fn is not None:
        return [c for c in fn(report) if isinstance(c, dict)]
    if verdict == "problems":
        return []
    out = []
    for p in report.get("probes") or []:
        if isinstance(p, dict) and p.get("status") in FAILED:
            out.append({"id": str(p.get("id")), "kind": "probe", "status": p.get("status"), "error": p.get("error"),
                        "summary": p.get("summary"), "output": p.get("output_tail") or ""})
    return out


def derive(report: dict[str, Any]) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """(facets, signatures) of one report: [(dim, value)] and the queue rows [{reason, sig, signature, check_id,
    line, excerpt}] (empty when the session is explained or healthy)."""
    facts = report.get("facts") if isinstance(report.get("facts"), dict) else {}
    verdict = _verdicts.compute(report)
    diags = [d for d in report.get("diagnoses") or [] if isinstance(d, dict)]
    causes = [str(d.get("id")) for d in diags if _is_confirmed_problem(d) and d.get("id") is not None]
    guesses = _guesses(report)
    facets: list[tuple[str, str]] = [("verdict", verdict)]
    facets += [("cause", c) for c in causes]
    facets += [("possible", str(d.get("id"))) for d in guesses if d.get("id") is not None]
    for dim, key in (("gpu", "gpu.names"), ("gfx", "gpu.gfx_targets")):
        v = facts.get(key)
        if dim == "gpu" and not (isinstance(v, list) and v):
            v = facts.get("torch.device_names")
        if isinstance(v, list):
            facets += [(dim, str(x)) for x in v if x not in (None, "")]
    for dim, key in (("rocm", "rocm.version"), ("torch", "torch.version")):
        v = facts.get(key)
        if isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v):
            facets.append((dim, str(v)))
    seen: set[tuple[str, str]] = set()
    facets = [(d, v[:255]) for d, v in facets if not ((d, v[:255]) in seen or seen.add((d, v[:255])))]

    sigs: list[dict[str, Any]] = []
    checks = _failed_checks(report, verdict)
    if verdict == "unexplained" or (verdict != "problems" and checks and not causes):
        reason = "unexplained"
    elif not causes and (guesses or any(_is_low(d) for d in diags)):
        reason = "possible"
    else:
        return facets, sigs
    for c in checks:
        out = str(c.get("output") or "")
        last = [ln.strip() for ln in out.splitlines() if ln.strip()]
        line = (error_line(out) or error_line(c.get("error"), c.get("summary")) or (last[-1] if last else "")
                or str(c.get("error") or c.get("summary") or ""))
        line = line.strip()[:400] or f"{c.get('id')} {c.get('status')}"
        sigs.append({"reason": reason, "check_id": str(c.get("id") or "")[:128], "line": line[:400],
                     "excerpt": out[-EXCERPT_CHARS:] if out else line})
    if not sigs:  # guesses only, nothing failed: the last error line of what the user pasted, else the guess
        texts = [str(lg.get("text") or "") for lg in report.get("logs") or [] if isinstance(lg, dict)]
        line = error_line(*texts)
        if line:
            sigs.append({"reason": reason, "check_id": "logs", "line": line,
                         "excerpt": _joined_tail(texts, EXCERPT_CHARS)})
        else:
            g = (guesses or [d for d in diags if _is_low(d)])[0]
            desc = str(report.get("description") or "")
            sigs.append({"reason": reason, "check_id": "guess", "line": f"guess: {g.get('id')}",
                         "excerpt": desc[-EXCERPT_CHARS:]})
    rows: dict[str, dict[str, Any]] = {}
    for s in sigs:
        norm = normalise(s["line"]) or s["line"][:300]
        s["signature"] = norm
        s["sig"] = signature_hash(norm)
        rows.setdefault(s["sig"], s)
    return facets, list(rows.values())[:MAX_SIGNATURES]


def _is_low(d: dict[str, Any]) -> bool:
    return _verdicts.is_problem(d) and _low_confidence(d)


def derive_rows(sid: str, created: Any, host: str, report: dict[str, Any],
                status: str = "new") -> tuple[list[dict], list[dict]]:
    """The table rows of derive() for session *sid*."""
    created_at = parse_time(created) if not isinstance(created, datetime) else created
    if created_at is None:
        created_at = datetime(1970, 1, 1)
    facets, sigs = derive(report)
    verdict = next(v for d, v in facets if d == "verdict")
    host = str(host or "")[:255]
    return ([{"session_id": sid, "created_at": created_at, "dim": d, "value": v, "host": host, "verdict": verdict,
              "status": str(status or "new")[:16]} for d, v in facets],
            [{"session_id": sid, "created_at": created_at, "host": str(host or "")[:255], **s} for s in sigs])


def write(conn: Any, sid: str, created: Any, host: str, report: dict[str, Any]) -> None:
    """Replace the fleet rows of session *sid* (inside the caller's transaction)."""
    conn.execute(delete(FA).where(FA.c.session_id == sid))
    conn.execute(delete(SG).where(SG.c.session_id == sid))
    status = conn.execute(select(S.c.status).where(S.c.id == sid)).scalar() or "new"
    facets, sigs = derive_rows(sid, created, host, report, status)
    verdict = next(x["value"] for x in facets if x["dim"] == "verdict")
    conn.execute(update(S).where(S.c.id == sid, S.c.verdict != verdict).values(verdict=verdict))
    if facets:
        conn.execute(insert(FA), facets)
    if sigs:
        conn.execute(insert(SG), sigs)


def refresh(store: Any, batch: int = 500) -> int:
    """Derive the fleet rows of every session again from its stored report (after an upgrade changed the
    verdict rule or the signature normaliser). Returns the number of sessions.  One write transaction per
    *batch* sessions, each report read inside it one at a time (``Store._load``: never a batch of reports at
    once, and on PostgreSQL a long report in bounded slices)."""
    done, last = 0, ""
    while True:
        with store._read() as conn:
            rows = conn.execute(select(S.c.id, S.c.created_at, S.c.host).where(S.c.id > last)
                                .order_by(S.c.id).limit(batch)).all()
        if not rows:
            return done

        def tx(conn: Any) -> None:
            for sid, created, host in rows:
                try:
                    report = store._load(conn, sid)
                except SessionNotFound:  # deleted since the batch was listed
                    continue
                write(conn, sid, created, host, report)
                del report

        store._write(tx)
        done += len(rows)
        last = rows[-1][0]


# ------------------------------------------------------------------------------------------ filters
@dataclass
class Filters:
    """The session list's filters (Store.list_sessions), shared by every fleet view."""
    query: str = ""
    host: str | None = None
    gpu: str | None = None
    verdict: str | None = None
    status: str | None = None
    since: str | date | None = None    # a day ('2026-11-01'), an ISO-8601 time, a date or a datetime
    until: str | date | None = None    # a day counts whole

    def active(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}


def _time_conds(col: Any, f: Filters) -> list[Any]:

    lo, hi = _as_dt(f.since), _as_dt(f.until, end=True)
    out = []
    if lo is not None:
        out.append(col >= lo)
    if hi is not None:
        out.append(col <= hi if isinstance(f.until, datetime) else col < hi)
    return out


def _session_conds(store: Any, conn: Any, f: Filters) -> list[Any]:
    """The non-time conditions of the session list on the sessions table (the verdict is today's rule's)."""

    if f.status and f.status not in STATUSES:
        raise StoreError(f"status must be one of {', '.join(STATUSES)}")
    conds: list[Any] = []
    counts: dict[str, int] = {}

    def contains(word: str, column: str = "search_text") -> Any:
        # counting reads every match anyway: on SQLite the trigram index serves common words too (the list's
        # newest-first scan for a common word only pays off when it stops after a page)
        if store.dialect == "sqlite" and len(word) >= 3:

            store._nparam += 1
            name = f"fts_{store._nparam}"
            sub = sql_text(f"SELECT session_id FROM sessions_fts WHERE sessions_fts MATCH :{name}").bindparams(
                **{name: f"{column} : {_fts_phrase(word)}"}).columns(session_id=S.c.id.type)
            return S.c.id.in_(sub)
        return search.contains(store, conn, word, counts, column=column)[0]

    for word in (f.query or "").lower().split():
        c = contains(word)
        if re.fullmatch(r"[0-9a-f\-]{4,36}", word):
            c = or_(c, S.c.id.like(f"{_like_escape(word)}%", escape="\\"))
        conds.append(c)
    if (f.gpu or "").strip():
        conds.append(contains(f.gpu.lower().strip(), "gpus"))
    if f.host:
        conds.append(S.c.host == f.host)
    if f.status:
        conds.append(S.c.status == f.status)
    if f.verdict:
        conds.append(S.c.verdict == f.verdict)  # kept at today's rule by write()
    return conds


def _bucket_expr(store: Any, col: Any, bucket: str) -> Any:
    if bucket not in BUCKETS:
        raise StoreError(f"bucket must be one of {', '.join(BUCKETS)}")
    if store.dialect == "sqlite":
        if bucket == "day":
            return func.date(col)
        return func.date(col, "-6 days", "weekday 1")  # the Monday on or before
    return func.to_char(func.date_trunc(bucket, col), "YYYY-MM-DD")


def _nul(f: Filters) -> bool:
    return any(isinstance(x, str) and "\x00" in x for x in asdict(f).values())


def _base(store: Any, conn: Any, dim: str, f: Filters) -> tuple[Any, Any, list[Any], Any]:
    """(value column, created_at column, conditions, session id column) for counting *dim* under *f*."""
    if dim not in DIMENSIONS:
        raise StoreError(f"dimension must be one of {', '.join(DIMENSIONS)}")
    if dim in SESSION_DIMS:
        return S.c[dim], S.c.created_at, _session_conds(store, conn, f) + _time_conds(S.c.created_at, f), S.c.id
    conds = [FA.c.dim == dim] + _time_conds(FA.c.created_at, f)
    conds += [FA.c[k] == getattr(f, k) for k in ("host", "verdict", "status") if getattr(f, k)]
    words = Filters(query=f.query, gpu=f.gpu)  # text conditions: the sessions' search index
    wconds = _session_conds(store, conn, words) if (f.query or "").strip() or (f.gpu or "").strip() else []
    if wconds:
        conds.append(FA.c.session_id.in_(select(S.c.id).where(*wconds, *_time_conds(S.c.created_at, f))))
    return FA.c.value, FA.c.created_at, conds, FA.c.session_id


def _total(store: Any, conn: Any, f: Filters) -> int:
    conds = _session_conds(store, conn, f) + _time_conds(S.c.created_at, f)
    return int(conn.execute(select(func.count()).select_from(S).where(*conds)).scalar_one())


def total(store: Any, filters: Filters | None = None) -> int:
    """How many sessions match *filters*."""
    f = filters or Filters()
    if _nul(f):
        return 0
    with store._read() as conn:
        return _total(store, conn, f)


def stats(store: Any, by: str = "cause", bucket: str | None = None, filters: Filters | None = None,
          limit: int = 200, ids: int = 0) -> dict[str, Any]:
    """Sessions counted by dimension *by* (and by day/week when *bucket*), most first (by time, then most, with
    a bucket). Each row: {"value", "count"} (+ "bucket"; + "ids": up to *ids* session ids behind the count,
    newest first). "total" is how many sessions match the filters."""
    f = filters or Filters()
    out: dict[str, Any] = {"by": by, "bucket": bucket, "filters": f.active(), "total": 0, "rows": []}
    if _nul(f):
        return out
    with store._read() as conn:
        val, created, conds, _ = _base(store, conn, by, f)
        n = func.count().label("n")
        if bucket:
            b = _bucket_expr(store, created, bucket).label("b")
            q = select(val.label("v"), b, n).where(*conds).group_by(val, b) \
                .order_by(b, n.desc(), val).limit(limit)
        else:
            q = select(val.label("v"), n).where(*conds).group_by(val).order_by(n.desc(), val) \
                .limit(limit)
        rows = conn.execute(q).all()
        out["total"] = _total(store, conn, f)
    for r in rows:
        row = {"value": r.v, "count": int(r.n)}
        if bucket:
            row["bucket"] = str(r.b)
        out["rows"].append(row)
    if ids:
        for row in out["rows"]:
            row["ids"] = session_ids(store, by, row["value"], bucket=bucket, bucket_value=row.get("bucket"),
                                     filters=f, limit=ids)
    return out


def session_ids(store: Any, by: str, value: str, bucket: str | None = None, bucket_value: str | None = None,
                filters: Filters | None = None, limit: int = 1000) -> list[str]:
    """The sessions behind one count of stats(): newest first, at most *limit*."""
    f = filters or Filters()
    if _nul(f) or (isinstance(value, str) and "\x00" in value):
        return []
    with store._read() as conn:
        val, created, conds, sid = _base(store, conn, by, f)
        conds.append(val == value)
        if bucket and bucket_value:
            conds.append(_bucket_expr(store, created, bucket) == bucket_value)
        q = select(sid).where(*conds).order_by(created.desc(), sid.desc()).limit(max(1, int(limit)))
        return [r[0] for r in conn.execute(q)]


def overview(store: Any, filters: Filters | None = None, limit: int = 15) -> dict[str, Any]:
    """Every dimension at once (what `sessions stats` prints and the Fleet page draws)."""
    f = filters or Filters()
    return {"total": total(store, f), "filters": f.active(),
            "by": {d: stats(store, d, filters=f, limit=limit)["rows"] for d in DIMENSIONS}}


# ------------------------------------------------------------------------------------------ the queue
def unexplained(store: Any, filters: Filters | None = None, limit: int = 50, samples: int = 3,
                ids: int = 200) -> dict[str, Any]:
    """The unexplained queue grouped by signature, biggest group first. Each group: sig, signature (normalised
    line), pattern (RE2), count (sessions), reasons ({"unexplained": n, "possible": n}), checks, hosts (top 10
    with counts), host_count, first_seen, last_seen, samples ([{id, host, created_at, check, line, excerpt}]),
    ids (up to *ids* session ids, newest first). "sessions" is how many sessions are in the queue."""
    f = filters or Filters()
    out: dict[str, Any] = {"filters": f.active(), "sessions": 0, "groups": []}
    if _nul(f):
        return out
    with store._read() as conn:
        conds = _time_conds(SG.c.created_at, f)
        sconds = _session_conds(store, conn, f)
        if sconds:
            conds.append(SG.c.session_id.in_(select(S.c.id).where(*sconds)))
        n = func.count(SG.c.session_id.distinct()).label("n")
        rows = conn.execute(select(SG.c.sig, n, func.min(SG.c.created_at).label("first"),
                                   func.max(SG.c.created_at).label("last"), func.min(SG.c.signature).label("s"))
                            .where(*conds).group_by(SG.c.sig).order_by(n.desc(), SG.c.sig).limit(limit)).all()
        out["sessions"] = int(conn.execute(select(func.count(SG.c.session_id.distinct())).where(*conds)).scalar_one())
        for r in rows:
            gc = conds + [SG.c.sig == r.sig]
            hn = func.count(SG.c.session_id.distinct()).label("hn")
            hosts = conn.execute(select(SG.c.host, hn).where(*gc).group_by(SG.c.host)
                                 .order_by(hn.desc(), SG.c.host)).all()
            reasons = conn.execute(select(SG.c.reason, func.count(SG.c.session_id.distinct()))
                                   .where(*gc).group_by(SG.c.reason)).all()
            checks = conn.execute(select(SG.c.check_id).where(*gc).group_by(SG.c.check_id)
                                  .order_by(func.count().desc()).limit(5)).all()
            recent = conn.execute(select(SG.c.session_id, SG.c.host, SG.c.created_at, SG.c.check_id, SG.c.line,
                                         SG.c.excerpt).where(*gc)
                                  .order_by(SG.c.created_at.desc(), SG.c.session_id.desc()).limit(max(samples, ids))).all()
            seen: list[str] = []
            for x in recent:
                if x.session_id not in seen:
                    seen.append(x.session_id)
            out["groups"].append({
                "sig": r.sig, "signature": r.s, "pattern": signature_pattern(r.s), "count": int(r.n),
                "reasons": {k: int(v) for k, v in reasons}, "checks": [c[0] for c in checks],
                "hosts": [{"host": h, "count": int(c)} for h, c in hosts[:10]], "host_count": len(hosts),
                "first_seen": r.first.isoformat() + "Z", "last_seen": r.last.isoformat() + "Z",
                "samples": [{"id": x.session_id, "host": x.host, "created_at": x.created_at.isoformat() + "Z",
                             "check": x.check_id, "line": x.line, "excerpt": x.excerpt} for x in recent[:samples]],
                "ids": seen[:ids]})
    return out


def queue_ids(store: Any) -> set[str]:
    """Every session in the unexplained queue."""
    with store._read() as conn:
        return {r[0] for r in conn.execute(select(SG.c.session_id).distinct())}


def explained_by(store: Any, left: list[str]) -> dict[str, int]:
    """{cause id: how many of the sessions *left* carry it as a confirmed cause}, most first (what explained the
    sessions that left the unexplained queue after a re-diagnosis)."""
    by: dict[str, int] = {}
    for i in range(0, len(left), 500):
        chunk = left[i:i + 500]
        with store._read() as conn:
            for v, c in conn.execute(select(FA.c.value, func.count()).where(FA.c.dim == "cause",
                                                                            FA.c.session_id.in_(chunk))
                                     .group_by(FA.c.value)):
                by[v] = by.get(v, 0) + int(c)
    return dict(sorted(by.items(), key=lambda kv: -kv[1]))


__all__ = ["Filters", "DIMENSIONS", "BUCKETS", "normalise", "signature_pattern", "error_line", "derive",
           "derive_rows", "write", "refresh", "stats", "session_ids", "overview", "total", "unexplained",
           "queue_ids", "explained_by"]
