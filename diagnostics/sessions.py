"""Stored sessions as the front ends see them (the service layer beside ``diagnostics.service``).

The store (``diagnostics.store``) keeps sessions; it does not diagnose or compare them. Re-diagnosing a stored
session needs both, so it is composed here: ``rediagnose_session(store, sid)`` runs the service's ``rediagnose`` on
the stored report, compares the findings and has the store replace the session in place. ``compare_reports`` is
the one comparison of two reports (the CLI's ``sessions compare``, the UI's compare view, re-diagnosis notes). The
web UI and the CLI reach the store, its fleet view, the redactor's share preview and the issue body only through
this module (tests/test_layers.py holds it).
"""
from __future__ import annotations

import copy
from typing import Any, Callable

from . import service
from .issue_body import render_github_issue
from .monitor import chart_data
from .redact import preview_report, redact_report
from .store import STATUSES, BundleError, SessionNotFound, Store, StoreError, default_url, render_markdown
from .store import stats as fleet
from .store.summary import dumps, verdict

__all__ = ["STATUSES", "BundleError", "chart_data", "SessionNotFound", "Store", "StoreError", "compare_reports",
           "compare_sessions", "default_url", "fleet", "open_store", "preview_report", "redact_report",
           "render_github_issue", "render_markdown", "rediagnose_all", "rediagnose_fleet", "rediagnose_session"]

Diagnose = Callable[[dict[str, Any]], dict[str, Any]]


def open_store(url: str | None = None) -> Store:
    """The session store at *url* (``--db``), else ``DATABASE_URL``, else the SQLite file in the user data dir."""
    return Store(url or default_url())


def compare_reports(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Findings that appeared / disappeared / stayed from report *a* to report *b*, facts that changed,
    and probes whose status changed."""
    da = {str(d.get("id")): d for d in a.get("diagnoses") or [] if isinstance(d, dict)}
    db = {str(d.get("id")): d for d in b.get("diagnoses") or [] if isinstance(d, dict)}

    def brief(d: dict[str, Any]) -> dict[str, Any]:
        return {"id": d.get("id"), "title": d.get("title"), "severity": d.get("severity")}

    fa = a.get("facts") if isinstance(a.get("facts"), dict) else {}
    fb = b.get("facts") if isinstance(b.get("facts"), dict) else {}
    changed_facts = []
    for name in sorted(set(fa) | set(fb)):
        if name not in fb:
            changed_facts.append({"name": name, "change": "removed", "before": fa[name], "after": None})
        elif name not in fa:
            changed_facts.append({"name": name, "change": "added", "before": None, "after": fb[name]})
        elif dumps(fa[name]) != dumps(fb[name]):
            changed_facts.append({"name": name, "change": "changed", "before": fa[name], "after": fb[name]})
    pa = {str(p.get("id")): p.get("status") for p in a.get("probes") or [] if isinstance(p, dict)}
    pb = {str(p.get("id")): p.get("status") for p in b.get("probes") or [] if isinstance(p, dict)}
    probes = [{"id": k, "before": pa.get(k), "after": pb.get(k)} for k in sorted(set(pa) | set(pb))
              if pa.get(k) != pb.get(k)]
    return {
        "a": a.get("session_id"), "b": b.get("session_id"),
        "appeared": [brief(db[k]) for k in db if k not in da],
        "disappeared": [brief(da[k]) for k in da if k not in db],
        "unchanged": [brief(db[k]) for k in db if k in da],
        "changed_facts": changed_facts,
        "changed_probes": probes,
        "verdict": {"before": verdict(a), "after": verdict(b)},
    }


def compare_sessions(store: Store, id_a: str, id_b: str) -> dict[str, Any]:
    """What changed from stored session *id_a* (before) to *id_b* (after)."""
    return compare_reports(store.get(id_a), store.get(id_b))


def _findings(r: dict[str, Any]) -> str:
    # the verdict's inputs too: a session saved before "unexplained" existed gets its new verdict stored; not the
    # KB version (a new KB that finds the same is not a change to the session's diagnosis)
    return dumps([r.get("diagnoses"), r.get("not_ruled_out"), r.get("root_causes"), r.get("unexplained"),
                  r.get("verdict")])


def rediagnose_session(store: Store, sid: str, diagnose: Diagnose | None = None) -> dict[str, Any]:
    """Diagnose a stored session again (with *diagnose*, by default the service's ``rediagnose``: today's KB and
    rules) and update it in place, with a note saying what appeared and disappeared. Returns {"id", "changed",
    "restamped", "appeared", "disappeared", "unchanged"}: "changed" when the findings or the verdict differ,
    "restamped" when only the KB version does (the row then records the KB it was checked against, no note)."""
    old = store.get(sid)
    # a copy to diagnose (the stored report came from JSON: a deep copy keeps it as it is, without a second
    # serialised text of it in memory; issue 16, 64 MB reports)
    new = (diagnose or service.rediagnose)(copy.deepcopy(old))
    if not isinstance(new, dict):
        raise StoreError("the re-diagnosis returned no report")
    new = store.prepare(new)  # compared as it will be stored: redacted evidence equals redacted evidence
    new["session_id"] = sid
    diff = compare_reports(old, new)
    changed = _findings(old) != _findings(new)
    restamped = not changed and old.get("kb_version") != new.get("kb_version")
    del old  # the stored report is not needed any more (issue 16: a 64 MB session is not held twice below)
    if changed or restamped:
        note = None
        if diff["appeared"] or diff["disappeared"]:
            note = "Re-diagnosed with KB {}: appeared {}; disappeared {}.".format(
                new.get("kb_version") or "(unknown version)",
                ", ".join(str(d["id"]) for d in diff["appeared"]) or "none",
                ", ".join(str(d["id"]) for d in diff["disappeared"]) or "none")
        store.replace_report(sid, new, note=note)
    else:
        del new  # refresh_fleet reads the stored report again: neither copy is held beside it
        store.refresh_fleet(sid)  # today's verdict rule for the fleet rows
    return {"id": sid, "changed": changed, "restamped": restamped, "appeared": diff["appeared"],
            "disappeared": diff["disappeared"], "unchanged": diff["unchanged"]}


def rediagnose_all(store: Store, diagnose: Diagnose | None = None, batch: int = 200) -> dict[str, Any]:
    """Every stored session again, in id order a batch at a time: counts ("changed": findings or verdict differ;
    "restamped": only the KB version did) and per-session errors."""
    done = changed = restamped = 0
    errors: dict[str, str] = {}
    last = ""
    while ids := store.ids_after(last, batch):
        for sid in ids:
            try:
                r = rediagnose_session(store, sid, diagnose)
                done += 1
                changed += bool(r["changed"])
                restamped += bool(r["restamped"])
            except SessionNotFound:
                continue  # deleted meanwhile
            except Exception as e:  # one bad session must not stop the rest
                errors[sid] = f"{type(e).__name__}: {e}"
        last = ids[-1]
    return {"rediagnosed": done, "changed": changed, "restamped": restamped, "errors": errors}


def rediagnose_fleet(store: Store, diagnose: Diagnose | None = None) -> dict[str, Any]:
    """``rediagnose_all`` plus what it did to the unexplained queue (the fleet page's button): "explained"
    (sessions that left the queue), "explained_by" ({cause id: sessions that left it with that confirmed
    cause}), "queue_before", "queue_after"."""
    before = fleet.queue_ids(store)
    res = rediagnose_all(store, diagnose)
    after = fleet.queue_ids(store)
    left = sorted(before - after)
    res.update({"explained": len(left), "explained_by": fleet.explained_by(store, left),
                "queue_before": len(before), "queue_after": len(after)})
    return res
