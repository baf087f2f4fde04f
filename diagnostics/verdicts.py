"""The one rule for a report's verdict: the service (live runs, pasted input, re-diagnosis), the CLI's exit status,
the store's summary column and the UI all call :func:`compute`; a stored verdict is never trusted.

Verdicts (shared/CONTRACT.md):

* ``problems``    a confirmed cause (a diagnosis with basis "confirmed", not benign, severity critical, error
                  or warning) -- exit 1;
* ``unexplained`` no confirmed cause, yet a check failed, crashed or timed out (a probe, the test generation, a
                  pasted tool output that reports an error, a pasted log that ends in an error) -- exit 1;
* ``incomplete``  nothing wrong found, but a check could not run at all (it could not be started, an internal
                  error, the run was cancelled) -- exit 0: nothing wrong was found, and the report says so;
* ``healthy``     every check that ran passed or was legitimately skipped -- exit 0.

Guesses (basis "possible": ranked from words, never from facts or a signature) never make a problem.

Dependency-free on purpose: the store uses it without importing the KB machinery.
"""
from __future__ import annotations

import re
from typing import Any

PROBLEM_SEVERITIES = ("critical", "error", "warning")
VERDICTS = ("healthy", "problems", "unexplained", "incomplete")
FAILED = ("fail", "crashed", "timeout")
EXIT = {"healthy": 0, "incomplete": 0, "problems": 1, "unexplained": 1}

# the last lines of a pasted log that show the program it comes from failed (a Python exception, a crash, an
# abort); anchored, linear patterns
_LOG_FAILURE = re.compile(
    r"^(?:Traceback \(most recent call last\):"
    r"|[\w.]*(?:Error|Exception|Interrupt|Exit)(?::\s.*|\s*)$"
    r"|.*\b(?:Segmentation fault|Aborted|Illegal instruction|Bus error|Floating point exception)(?: \(core dumped\))?\s*$"
    r"|terminate called after throwing an instance of .*"
    r"|.*\bcore dumped\b.*"
    r"|(?:FATAL|Fatal error|fatal error)\b.*"
    r"|Killed\s*$)",
    re.M)
_INTERNAL = ("internal error:", "could not start", "cancelled", "canceled")


def is_problem(d: Any) -> bool:
    """A diagnosis that describes something wrong: not benign, of severity critical, error or warning."""
    return isinstance(d, dict) and not d.get("benign") and d.get("severity") in PROBLEM_SEVERITIES


def is_confirmed(d: Any) -> bool:
    """Established by facts or a signature in the input (reports stored before "basis" existed count as
    confirmed unless they came from a description)."""
    return isinstance(d, dict) and d.get("basis", "confirmed") == "confirmed" and not d.get("from_description")


def counts(d: Any) -> bool:
    """A diagnosis that makes the verdict "problems": a confirmed problem."""
    return is_problem(d) and is_confirmed(d)


def log_failure(text: str) -> str | None:
    """The line of a pasted log that shows its program failed (the last such line), or None."""
    last = None
    tail = text[-200_000:] if len(text) > 200_000 else text
    for m in _LOG_FAILURE.finditer(tail):
        line = m.group(0).strip()
        if line and not line.startswith("Traceback"):
            last = line
        elif last is None:
            last = line
    return last[:400] if last else None


def _tail(text: Any, n: int = 15) -> str:
    lines = [ln for ln in str(text or "").splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


def checks(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every check of *report* as ``{"id", "kind", "title", "status", "summary", "error", "signal", "output"}``:
    the probes, the test generation, each pasted tool output (failed when its tool reported an error) and each
    pasted log (failed when it ends in an error)."""
    out: list[dict[str, Any]] = []
    for p in report.get("probes") or []:
        if not isinstance(p, dict):
            continue
        output = p.get("output_tail") or "\n".join(str(lg.get("text") or "") for lg in p.get("logs") or []
                                                   if isinstance(lg, dict))
        out.append({"id": str(p.get("id")), "kind": "probe", "title": p.get("title") or p.get("id"),
                    "status": p.get("status"), "summary": p.get("summary"), "error": p.get("error"),
                    "signal": p.get("signal"), "output": _tail(output)})
    gen = report.get("generation")
    if isinstance(gen, dict) and gen.get("status"):
        status = gen.get("status")
        if status not in ("ok", "skipped", "warn") and status not in FAILED:
            status = "fail"
        out.append({"id": "generation", "kind": "generation", "title": "Test generation", "status": status,
                    "summary": gen.get("summary") or gen.get("error"), "error": gen.get("error"),
                    "signal": gen.get("signal"), "output": _tail(gen.get("log") or gen.get("stderr") or "")})
    for d in report.get("parsed") or []:
        if isinstance(d, dict) and d.get("errors"):
            errs = [str(e) for e in d["errors"]]
            out.append({"id": f"dump:{d.get('name')}", "kind": "dump", "title": f"{d.get('name')} ({d.get('kind')})",
                        "status": "fail", "summary": errs[0][:300], "error": errs[0][:300], "signal": None,
                        "output": "\n".join(errs[:15])})
    dump_names = {d.get("name") for d in report.get("parsed") or [] if isinstance(d, dict)}
    for lg in report.get("logs") or []:
        if not isinstance(lg, dict) or lg.get("name") in dump_names:
            continue
        line = log_failure(str(lg.get("text") or ""))
        if line:
            out.append({"id": f"log:{lg.get('name')}", "kind": "log", "title": str(lg.get("name") or "log"),
                        "status": "fail", "summary": line, "error": line, "signal": None,
                        "output": _tail(lg.get("text"))})
    return out


def could_not_run(c: dict[str, Any]) -> bool:
    """A check that never got to look (the tool's own failure, not a finding about the machine)."""
    err = str(c.get("error") or "").lower()
    return c.get("kind") in ("probe", "generation") and any(err.startswith(x) or x in err for x in _INTERNAL) \
        and c.get("status") in FAILED


def _fact_probes(report: dict[str, Any]) -> dict[str, set[str]]:
    """Which probes established each fact; a derived fact counts for the probes of the facts it was derived from."""
    from .derive import DERIVED  # plain data, no KB machinery

    by: dict[str, set[str]] = {}
    for p in report.get("probes") or []:
        if isinstance(p, dict):
            for k in p.get("facts") or {}:
                by.setdefault(k, set()).add(str(p.get("id")))
    for name, inputs in DERIVED.items():
        for i in inputs:
            by.setdefault(name, set()).update(by.get(i, set()))
    return by


def _cited(check: dict[str, Any], diagnoses: list[dict[str, Any]], fact_probes: dict[str, set[str]]) -> bool:
    """A confirmed diagnosis rests on this check: its evidence quotes the check's output, or uses a fact the
    check established (directly, or through a fact derived from it)."""
    kind, cid = check["kind"], check["id"]
    if kind == "probe":
        prefixes = (f"probe:{cid}",)
    elif kind == "generation":
        prefixes = ("generation",)
    else:
        prefixes = (cid.split(":", 1)[1],)
    for d in diagnoses:
        if not counts(d):
            continue
        for e in d.get("evidence") or []:
            src = str(e.get("source") or "")
            if any(src == p or src.startswith(p + ":") for p in prefixes):
                return True
            fact = str(e.get("fact") or "")
            if kind == "probe" and fact and cid in fact_probes.get(fact, ()):
                return True
            if kind == "generation" and fact.startswith(("gen.", "monitor.")):
                return True
    return False


def unexplained(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The checks that failed, crashed or timed out and that no confirmed diagnosis cites, worst first."""
    diags = [d for d in report.get("diagnoses") or [] if isinstance(d, dict)]
    bad = [c for c in checks(report) if c.get("status") in FAILED and not could_not_run(c)]
    if not bad:
        return []
    fp = _fact_probes(report)
    return [c for c in bad if not _cited(c, diags, fp)]


def compute(report: dict[str, Any]) -> str:
    """'problems', 'unexplained', 'incomplete' or 'healthy' (see the module docstring)."""
    if any(counts(d) for d in report.get("diagnoses") or []):
        return "problems"
    cs = checks(report)
    if any(c.get("status") in FAILED and not could_not_run(c) for c in cs):
        return "unexplained"
    if any(could_not_run(c) for c in cs) or report.get("cancelled"):
        return "incomplete"
    return "healthy"


def exit_status(report: dict[str, Any]) -> int:
    """The CLI's exit status for *report*: 1 for problems and unexplained failures, else 0."""
    return EXIT[compute(report)]
