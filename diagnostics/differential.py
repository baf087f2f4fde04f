"""The known causes of a generic consequence that fired alone (issue 14: root cause above consequence).

Some entries name what a user sees rather than why: "HIP sees no GPU" (``hip-runtime-sees-no-gpu``), "/dev/kfd
is missing", "the amdgpu driver is not loaded", "segfault on the first GPU operation".  The KB says which entries
cause them: a root cause lists the consequence under ``supersedes``, and when both fire the matcher puts the root
first and names the consequence under it.  When only the consequence fires, the report used to stop there, although
the KB knows 5 to 18 causes of it and the rest of the paste often points at one (a Docker Desktop banner, a WSL
kernel string, an RX 560 in rocminfo).

:func:`root_guesses` ranks, for each such consequence, only its known causes against the pasted text (the same BM25
retrieval as the other guesses, without the words the consequence itself explains), drops the causes that the facts
already rule out (an entry whose condition is false whatever the log says), and lists the best ones first among the
possible causes, each with ``root_of`` naming the consequence.  They stay guesses: ``basis: possible``, never a
finding, never a verdict; a confirmed root cause always wins (then the consequence has ``consequence_of`` and is
skipped here).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .kb import Cond

# a consequence needs at least this many known causes in the KB to be "generic" (measured on the KB of 2026-12-04:
# hip-runtime-sees-no-gpu 18, kfd-device-missing 12, amdgpu-driver-not-loaded 9, segfault-on-first-gpu-op 9,
# ollama's CPU fallback, hip-no-binary-for-gpu, hip-invalid-device-function and the hardware exception 6, the NVIDIA
# driver 5; the next ones have 4 or fewer, where the entry's own fix already names them)
GENERIC_MIN_ROOTS = 5
ROOT_GUESSES = 3          # at most this many causes per consequence
MIN_SCORE = 0.2           # relative BM25 score among the consequence's own causes


def roots_of(kb: Any) -> dict[str, list[str]]:
    """``{consequence id: [ids of the entries that list it under supersedes]}`` (KB order)."""
    out: dict[str, list[str]] = {}
    for e in getattr(kb, "entries", kb):
        for s in getattr(e, "supersedes", ()) or ():
            if s != e.id:
                out.setdefault(s, []).append(e.id)
    return out


def _facts_only(c: Cond, facts: dict[str, Any]) -> bool | None:
    """The value of *c* from the facts alone (True, False, or None for unknown): a log condition is unknown."""
    if c.kind == "log":
        return None
    if c.kind == "fact":
        from .matcher import FALSE, TRUE, evaluate

        out = evaluate(c, facts, {}, {}).value
        return True if out == TRUE else False if out == FALSE else None
    if c.kind == "not":
        inner = _facts_only(c.children[0], facts)
        return None if inner is None else not inner
    vals = [_facts_only(ch, facts) for ch in c.children]
    if c.kind == "all":
        if any(v is False for v in vals):
            return False
        return True if all(v is True for v in vals) else None
    if any(v is True for v in vals):
        return True
    return False if vals and all(v is False for v in vals) else None


def ruled_out(entry: Any, facts: dict[str, Any]) -> bool:
    """The facts alone make *entry*'s condition false, whatever a log could add."""
    return _facts_only(entry.when, facts) is False


def root_guesses(res: dict[str, Any], text: str, kb: Any, facts: dict[str, Any] | None = None,
                 *, limit: int = ROOT_GUESSES, min_roots: int = GENERIC_MIN_ROOTS) -> dict[str, Any]:
    """Add the likely causes of every generic consequence in ``res["diagnoses"]`` that no confirmed cause explains
    to ``res["possible"]`` (in place; returns *res*).  A cause already guessed from the words gains ``root_of`` and
    keeps its place among them; the consequence's causes come first among the possible ones, the other guesses keep
    their order."""
    from .matcher import diagnosis_dict
    from .symptoms import SYMPTOM_CONFIDENCE_CAP, retriever_for
    from .verdicts import counts

    if not text or not text.strip():
        return res
    facts = facts or {}
    diags = res.get("diagnoses") or []
    confirmed = {d.get("id") for d in diags if d.get("basis", "confirmed") == "confirmed"}
    generic = [d for d in diags if counts(d) and not d.get("consequence_of")]
    if not generic:
        return res
    roots = roots_of(kb)
    by_id = {e.id: e for e in getattr(kb, "entries", kb)}
    possible = res.setdefault("possible", [])
    have = {d.get("id"): d for d in possible}
    lifted: list[dict[str, Any]] = []
    ret = None
    for d in generic:
        cands = [r for r in roots.get(d["id"], []) if r in by_id]
        if len(cands) < min_roots or any(r in confirmed for r in cands):
            continue
        cands = [r for r in cands if not by_id[r].benign and not ruled_out(by_id[r], facts)]
        if not cands:
            continue
        if ret is None:
            ret = retriever_for(kb)
            if ret is None:
                return res
        # the causes the words around the paste already pointed at keep their place, then the best of the rest
        chosen: list[dict[str, Any]] = [g for g in possible if g.get("id") in cands][:limit]
        ranked = ret.rank(text, limit=len(cands), ignore=[d["id"]], only=cands)
        top = (ranked[0]["bm25"] or 1.0) if ranked else 1.0
        for h in ranked:
            if len(chosen) >= limit or h["bm25"] / top < MIN_SCORE:
                break
            if h["id"] in have:
                if have[h["id"]] not in chosen:
                    chosen.append(have[h["id"]])
                continue
            rel = h["bm25"] / top
            g = diagnosis_dict(by_id[h["id"]], round(rel * SYMPTOM_CONFIDENCE_CAP, 4),
                               [{"source": "log", "kind": "symptom", "excerpt": h["phrase"], "score": round(rel, 4)}])
            g["basis"] = "possible"
            g["from_description"] = True
            have[h["id"]] = g
            possible.append(g)
            chosen.append(g)
        for g in chosen:
            if not g.get("root_of"):
                g["root_of"] = d["id"]
                lifted.append(g)
    if lifted:
        ids = {id(g) for g in lifted}
        possible[:] = lifted + [g for g in possible if id(g) not in ids]
        for i, g in enumerate(possible, 1):
            g["rank"] = i
    return res
