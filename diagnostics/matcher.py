"""Ranks likely causes from facts and log text, with evidence.

Three-valued logic: a condition over an absent fact is UNKNOWN, never false.  An entry fires when its
condition is TRUE; an entry left UNKNOWN because of a fact that a failed probe should have provided is
reported as "not ruled out".

Log text is scanned once for all patterns of the knowledge base with an RE2 set (one linear DFA pass), then
only the patterns that matched are searched again to cut out the evidence lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import re2

from .kb import SEVERITY_RANK, Cond, Entry, KnowledgeBase, parse_version, select_variant
from .textnorm import clean_log, clean_log_wraps, escaped_readings, joined_wraps
from .textnorm import pieces as _chunks  # ~1 MiB pieces cut at line ends

__all__ = ["Matcher", "LogScan", "clean_log", "rank", "evaluate", "evaluate_entry", "run_entry_tests"]

TRUE, FALSE, UNKNOWN = 1, 0, -1
MAX_EVIDENCE_PER_PATTERN = 3
MAX_EXCERPT = 400


@dataclass
class Hit:
    source: str
    line: int
    excerpt: str


@dataclass
class Outcome:
    value: int
    evidence: list[dict[str, Any]] = field(default_factory=list)
    unknown: set[str] = field(default_factory=set)


def _excerpt(text: str, start: int, end: int) -> tuple[int, str]:
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", end)
    if le == -1:
        le = len(text)
    line = text[ls:le]
    if len(line) > MAX_EXCERPT:
        # keep the match visible in a very long line
        rel = start - ls
        a = max(0, rel - MAX_EXCERPT // 4)
        line = ("…" if a else "") + line[a:a + MAX_EXCERPT] + "…"
    return text.count("\n", 0, start) + 1, line.strip()


class _Compiled:
    """The patterns one by one, each compiled the first time it is needed: only the patterns the set pass found
    are searched again, so a run compiles a handful of the ~900 (0.12 s of CPU at start-up saved)."""

    def __init__(self, patterns: list[str]):
        self._patterns = patterns
        self._done: list[Any] = [None] * len(patterns)

    def __len__(self) -> int:
        return len(self._patterns)

    def __getitem__(self, i: int) -> Any:
        c = self._done[i]
        if c is None:
            c = self._done[i] = re2.compile("(?m)" + self._patterns[i])
        return c

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))


class LogScan:
    """Which patterns occur in which logs, with evidence lines."""

    def __init__(self, patterns: Iterable[str]):
        self.patterns = list(dict.fromkeys(patterns))
        self.index = {p: i for i, p in enumerate(self.patterns)}
        self.compiled = _Compiled(self.patterns)
        self._set = None
        if self.patterns:
            opts = re2.Options()
            opts.max_mem = 256 << 20
            s = re2.Set.SearchSet(opts)
            for p in self.patterns:
                s.Add("(?m)" + p)
            s.Compile()
            self._set = s

    def scan(self, logs: list[tuple[str, str]], wrap_lengths: list[list[int] | None] | None = None,
             appendices: list[str | None] | None = None) -> dict[str, list[Hit]]:
        """One set pass per chunk tells which patterns occur where; only those chunks are searched again.

        Then the hard-wrapped runs of each log, joined back into single lines (textnorm.joined_wraps), are
        scanned for the patterns the log itself did not show: a signature cut by a terminal or a forum's wrap
        still matches, with the line number of the run's first line.  Last, the lines that quote a log as a
        string or carry Markdown escapes, read as the text they stand for (textnorm.escaped_readings).  *wrap_lengths* (one per log, from
        textnorm.clean_log_wraps) are the lengths its lines had as pasted, before a timestamp was stripped.
        *appendices*, when given, is filled with each log's appendix (None for a log not read: no patterns, or
        an empty log), for oom_facts to read the same joined runs without building them again."""
        hits: dict[str, list[Hit]] = {}
        if appendices is not None:
            appendices[:] = [None] * len(logs)
        if not self.patterns:
            return hits
        for k, (name, text) in enumerate(logs):
            if not text:
                continue
            self._scan_one(name, text, hits)
            appendix, starts = joined_wraps(text, lengths=wrap_lengths[k] if wrap_lengths and k < len(wrap_lengths)
                                            else None)
            if appendices is not None:
                appendices[k] = appendix
            if appendix:
                self._scan_one(name, appendix, hits, line_map=starts,
                               skip={p for p, hs in hits.items() if any(h.source == name for h in hs)})
            # lines that quote a log as a string ("...\\nRuntimeError: ...") decoded, Markdown escapes undone
            readings, at = escaped_readings(text)
            if readings:
                self._scan_one(name, readings, hits, line_map=at,
                               skip={p for p, hs in hits.items() if any(h.source == name for h in hs)})
        return {p: h for p, h in hits.items() if h}

    def _scan_one(self, name: str, text: str, hits: dict[str, list[Hit]], line_map: list[int] | None = None,
                  skip: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        line_base = 0
        for chunk in _chunks(text):
            for i in self._candidates(chunk):
                p = self.patterns[i]
                if p in skip:
                    continue
                have = hits.setdefault(p, [])
                if sum(1 for h in have if h.source == name) >= MAX_EVIDENCE_PER_PATTERN:
                    continue
                for m in self.compiled[i].finditer(chunk):
                    line, ex = _excerpt(chunk, m.start(), m.end())
                    line += line_base
                    if line_map is not None:
                        line = line_map[min(line, len(line_map)) - 1]
                    have.append(Hit(name, line, ex))
                    if sum(1 for h in have if h.source == name) >= MAX_EVIDENCE_PER_PATTERN:
                        break
            line_base += chunk.count("\n")

    def _candidates(self, text: str) -> list[int]:
        # google-re2 answers None for "no pattern matched"
        return sorted(self._set.Match(text) or [])  # type: ignore[union-attr]

    def candidates_slow(self, text: str) -> list[int]:
        """The same answer, one pattern at a time (the cross-check used by the tests)."""
        return [i for i, c in enumerate(self.compiled) if c.search(text)]


def _fact_evidence(name: str, value: Any, sources: dict[str, str]) -> dict[str, Any]:
    shown = value if not isinstance(value, list) else ", ".join(map(str, value)) or "(none)"
    return {"source": sources.get(name, "facts"), "excerpt": f"{name} = {shown}", "kind": "fact", "fact": name}


def _compare(c: Cond, v: Any) -> bool:
    op, want = c.op, c.value
    if op == "eq":
        return v == want
    if op == "ne":
        return v != want
    if op == "in":
        return v in want
    if op == "not_in":
        return v not in want
    if op == "contains":
        return isinstance(v, list) and want in v
    if op == "contains_any":
        return isinstance(v, list) and any(x in v for x in want)
    if op == "matches":
        if isinstance(v, list):
            return any(isinstance(x, str) and c.compiled.search(x) for x in v)
        return isinstance(v, str) and bool(c.compiled.search(v))
    if op in ("lt", "le", "gt", "ge"):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError
        return {"lt": v < want, "le": v <= want, "gt": v > want, "ge": v >= want}[op]
    if op.startswith("version_"):
        a, b = parse_version(str(v)), parse_version(str(want))
        if a is None or b is None:
            raise TypeError
        n = max(len(a), len(b))
        a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
        return {"version_lt": a < b, "version_le": a <= b, "version_gt": a > b, "version_ge": a >= b}[op]
    raise TypeError(op)


def evaluate(c: Cond, facts: dict[str, Any], hits: dict[str, list[Hit]], sources: dict[str, str]) -> Outcome:
    if c.kind == "fact":
        if c.op == "known":  # established or not: the one fact condition that is never UNKNOWN
            have = c.fact in facts and facts[c.fact] is not None
            if have != c.value:
                return Outcome(FALSE)
            return Outcome(TRUE, [_fact_evidence(c.fact, facts[c.fact], sources)] if have else [])
        if c.fact not in facts or facts[c.fact] is None:
            return Outcome(UNKNOWN, unknown={c.fact})
        try:
            ok = _compare(c, facts[c.fact])
        except TypeError:
            return Outcome(UNKNOWN, unknown={c.fact})
        return Outcome(TRUE, [_fact_evidence(c.fact, facts[c.fact], sources)]) if ok else Outcome(FALSE)
    if c.kind == "log":
        hs = hits.get(c.pattern)
        if not hs:
            return Outcome(FALSE)
        return Outcome(TRUE, [{"source": h.source, "excerpt": h.excerpt, "line": h.line, "kind": "log"} for h in hs])
    if c.kind == "not":
        inner = evaluate(c.children[0], facts, hits, sources)
        if inner.value == UNKNOWN:
            return Outcome(UNKNOWN, unknown=inner.unknown)
        return Outcome(FALSE if inner.value == TRUE else TRUE)
    outs = [evaluate(ch, facts, hits, sources) for ch in c.children]
    unknown = set().union(*(o.unknown for o in outs)) if outs else set()
    if c.kind == "all":
        if any(o.value == FALSE for o in outs):
            return Outcome(FALSE)
        if any(o.value == UNKNOWN for o in outs):
            return Outcome(UNKNOWN, unknown=unknown)
        return Outcome(TRUE, [e for o in outs for e in o.evidence])
    # any
    trues = [o for o in outs if o.value == TRUE]
    if trues:
        return Outcome(TRUE, [e for o in trues for e in o.evidence])
    if any(o.value == UNKNOWN for o in outs):
        return Outcome(UNKNOWN, unknown=unknown)
    return Outcome(FALSE)


def _dedupe(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen, out = set(), []
    for e in evidence:
        key = (e.get("source"), e.get("excerpt"))
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


class Matcher:
    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self.scan = LogScan(p for e in kb.entries for p in e.when.log_patterns())

    def match(self, facts: dict[str, Any] | None = None, logs: list[tuple[str, str]] | None = None,
              unknown_facts: Iterable[str] = (), fact_sources: dict[str, str] | None = None) -> dict[str, Any]:
        facts = dict(facts or {})
        cleaned = [(n, *clean_log_wraps(t)) for n, t in (logs or [])]
        logs = [(n, c) for n, c, _ in cleaned]
        wraps = [w for _, _, w in cleaned]
        appendices: list[str | None] = []
        hits = self.scan.scan(logs, wraps, appendices)
        from_logs = {k: v for k, v in oom_facts(logs, facts, wraps, appendices).items() if k not in facts}
        facts.update(from_logs)  # what an out-of-memory error says of itself, for conditions and evidence
        res = rank(self.kb.entries, facts, hits, set(unknown_facts), fact_sources or {})
        _add_oom_quotes(res["diagnoses"], logs, facts, fact_sources or {})
        res["facts_from_logs"] = from_logs  # callers add them to the report's facts
        return res


def _is_unknown(name: str, unknown_facts: set[str]) -> bool:
    """*name* is among the facts a failed probe owed (an entry ending in '*' is a prefix, e.g. 'env.*')."""
    return name in unknown_facts or any(u.endswith("*") and name.startswith(u[:-1]) for u in unknown_facts)


def rank_key(d: dict[str, Any]) -> tuple:
    """The order of diagnoses before causes are put above their consequences: real problems before benign
    messages, confirmed before possible, then confidence, severity, id."""
    return (bool(d.get("benign")), d.get("basis") == "possible", -float(d.get("confidence") or 0),
            specificity_key(d), SEVERITY_RANK.get(d.get("severity"), 9), str(d.get("id")))


def order(diagnoses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """*diagnoses* best first, a consequence never above any of its causes (``consequence_of``), ``rank`` renumbered.

    Among the diagnoses whose causes are all placed already, the best by :func:`rank_key` comes next (a cycle
    of supersedes, which ``kb lint`` should refuse, falls back to plain order)."""
    todo = sorted(diagnoses, key=rank_key)
    ids = {d.get("id") for d in todo}
    placed: set[Any] = set()
    out: list[dict[str, Any]] = []
    while todo:
        pick = next((d for d in todo if all(c in placed or c not in ids for c in d.get("consequence_of") or [])), todo[0])
        todo.remove(pick)
        placed.add(pick.get("id"))
        out.append(pick)
    for i, d in enumerate(out, 1):
        d["rank"] = i
    return out


def root_causes(diagnoses: list[dict[str, Any]]) -> list[str]:
    """Ids of the confirmed problems that are not a consequence of another one that fired, best first."""
    from .verdicts import counts

    return [d["id"] for d in diagnoses if counts(d) and not d.get("consequence_of")]


def rank(entries: list[Entry], facts: dict[str, Any], hits: dict[str, list[Hit]], unknown_facts: set[str],
         sources: dict[str, str]) -> dict[str, Any]:
    fired: dict[str, dict[str, Any]] = {}
    not_ruled_out: list[dict[str, Any]] = []
    for e in entries:
        out = evaluate(e.when, facts, hits, sources)
        if out.value == TRUE:
            ev = _dedupe(out.evidence)
            kinds = {x.get("kind") for x in ev}
            conf = e.confidence + (0.05 if {"log", "fact"} <= kinds else 0.0)
            fired[e.id] = diagnosis_dict(e, min(conf, 0.99), ev, facts)
        elif out.value == UNKNOWN:
            missing = sorted(f for f in out.unknown if _is_unknown(f, unknown_facts))
            if missing:
                not_ruled_out.append({"id": e.id, "title": e.title, "severity": e.severity,
                                      "reason": "could not be checked: " + ", ".join(missing) + " unknown (a probe failed)"})
    by_id = {e.id: e for e in entries}
    for eid, d in fired.items():
        for s in by_id[eid].supersedes:
            if s in fired and s != eid and eid not in fired[s]["consequence_of"]:
                fired[s]["consequence_of"].append(eid)
    for d in fired.values():
        if d["consequence_of"] and not d["benign"]:
            d["confidence"] = round(d["confidence"] * 0.5, 3)
    for eid, d in fired.items():
        d["specificity"] = specificity(by_id[eid], d["evidence"], hits)
    ranked = order(list(fired.values()))
    return {"diagnoses": ranked, "not_ruled_out": not_ruled_out, "root_causes": root_causes(ranked)}


_REGEX_NOISE = re.compile(r"\\[dDsSwWbB]|\[[^\]]*\]|\(\?[imsx-]+\)|\{\d+(?:,\d*)?\}|[\\^$.*+?()|]")


def _literal_len(pattern: str) -> int:
    """How much fixed text a pattern demands (classes, escapes and operators count nothing): a full
    ``hipErrorNoBinaryForGpu: Unable to find code object`` outweighs a bare ``HIP error``."""
    return sum(1 for ch in _REGEX_NOISE.sub("", pattern) if ch.isalnum())


def specificity(entry: Entry, evidence: list[dict[str, Any]], hits: dict[str, list[Hit]]) -> dict[str, Any]:
    """How specific a diagnosis's evidence is: facts and a log together, and the most fixed text among the
    entry's log patterns that matched (stored on the diagnosis; :func:`specificity_key` orders by it)."""
    kinds = {x.get("kind") for x in evidence}
    longest = max((_literal_len(p) for p in entry.when.log_patterns() if hits.get(p)), default=0)
    return {"fact_and_log": {"log", "fact"} <= kinds, "pattern_text": longest}


def specificity_key(d: dict[str, Any]) -> tuple[int, int]:
    """The tie-break among diagnoses of equal confidence (smaller sorts first): evidence from facts and a log
    together before one kind alone, then the longer fixed pattern text (a full ``hipErrorNoBinaryForGpu`` line
    before a bare ``HIP error``)."""
    sp = d.get("specificity") or {}
    return (0 if sp.get("fact_and_log") else 1, -int(sp.get("pattern_text") or 0))


def diagnosis_dict(e: Entry, confidence: float, evidence: list[dict[str, Any]],
                   facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The diagnosis of a fired entry; an entry with ``variants`` speaks the vendor in use (the ``variant``
    key says which; absent when the base text is shown)."""
    vendor = select_variant(e, facts or {}, evidence)
    text = e.variant_text(vendor)
    d = {
        "id": e.id, "title": text["title"], "severity": "info" if e.benign else e.severity,
        "confidence": round(confidence, 3), "benign": e.benign, "evidence": evidence,
        "fix": text["fix"], "symptoms": text["symptoms"], "cause": text["cause"], "links": list(e.links),
        "tags": list(e.tags), "consequence_of": [], "basis": "confirmed",
    }
    if vendor:
        d["variant"] = vendor
    return d


def oom_facts(logs: list[tuple[str, str]], facts: dict[str, Any],
              wrap_lengths: list[list[int] | None] | None = None,
              appendices: list[str | None] | None = None) -> dict[str, Any]:
    """``oom.*`` facts from the last out-of-memory error in the logs (or in ``gen.error``).  *wrap_lengths*: per
    log, the lengths its lines had as pasted (textnorm.clean_log_wraps), for the joined wrap runs; *appendices*:
    per log, those runs as LogScan.scan joined them for the same logs (None or absent: joined here)."""
    from .parsers.oom import parse

    found: dict[str, Any] = {}
    for k, (_, text) in enumerate(logs):
        lengths = wrap_lengths[k] if wrap_lengths and k < len(wrap_lengths) else None
        here = parse(text)
        # a terminal or forum that hard-wrapped the one-line message splits its figures over several lines: the
        # wrapped runs joined back (the scan's own appendix, textnorm.joined_wraps, which gives both readings of a
        # cut: with and without a space) are read too, and the reading with the most figures wins
        if "Tried to allocate" in text:
            appendix = appendices[k] if appendices and k < len(appendices) else None
            if appendix is None:
                appendix = joined_wraps(text, lengths=lengths)[0]
            for line in appendix.splitlines():
                joined = parse(line)
                if len(joined) > len(here):
                    here = joined
        found = here or found
    if not found and isinstance(facts.get("gen.error"), str):
        found = parse(facts["gen.error"])
    return found


def _add_oom_quotes(diagnoses: list[dict[str, Any]], logs: list[tuple[str, str]], facts: dict[str, Any],
                    sources: dict[str, str] | None = None) -> None:
    """Memory diagnoses quote what the out-of-memory error itself says (how much was asked for, what was
    free, which processes hold memory), each piece as its own evidence line: the error is one long line,
    and its excerpt alone would cut the "Process N has X GiB memory in use" part off."""
    procs = facts.get("gpu.processes")
    if isinstance(procs, list) and procs:
        # entries about other processes show who they are, whichever condition fired
        ev = _fact_evidence("gpu.processes", procs, sources or {})
        for d in diagnoses:
            if "processes" in d.get("tags", ()):
                d["evidence"] = _dedupe(d["evidence"] + [ev])
    mem = [d for d in diagnoses if "memory" in d.get("tags", ())]
    if not mem:
        return
    from .parsers.oom import quotes

    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    sources_texts = list(logs)
    if isinstance(facts.get("gen.error"), str):
        sources_texts.append(("gen.error", facts["gen.error"]))
    for name, text in sources_texts:
        for q in quotes(text):
            if q not in seen:  # the generation's log repeats its error: each part once
                seen.add(q)
                found.append({"source": name, "excerpt": q, "kind": "log"})
    if not found:
        return
    for d in mem:
        d["evidence"] = _dedupe(d["evidence"] + found)


def evaluate_entry(entry: Entry, facts: dict[str, Any], logs: str) -> Outcome:
    """Evaluate one entry alone (used by ``kb test`` and the KB editor)."""
    scan = LogScan(entry.when.log_patterns())
    text, wraps = clean_log_wraps(logs) if logs else ("", None)
    log_list = [("log", text)] if logs else []
    appendices: list[str | None] = []
    hits = scan.scan(log_list, [wraps], appendices) if logs else {}
    facts = {**oom_facts(log_list, facts, [wraps] if logs else None, appendices), **facts}  # as Matcher.match does
    return evaluate(entry.when, facts, hits, {})


def run_case(entry: Entry, case: Any) -> dict[str, Any]:
    """One case of an entry, as strict as promtool's rule tests: the case's facts first get the derived facts of
    a live run (derive.py: torch.arch_supported, visible_devices.hides_all, ...), its logs go through the same
    normaliser and scan; ``fire`` means the entry evaluates TRUE, ``silent`` FALSE, ``unknown`` UNKNOWN (a fact
    it needs is missing, and the case says that is the point).  An entry left UNKNOWN by a ``silent`` case fails
    it.  (``kb test``, the KB pages and the editor all use this.)"""
    from .derive import derive

    facts = dict(case.facts)
    facts.update(derive(facts))
    out = evaluate_entry(entry, facts, case.logs)
    got = {TRUE: "fire", FALSE: "silent"}.get(out.value, "unknown")
    return {"id": entry.id, "case": case.name, "path": entry.path, "line": case.line, "expect": case.expect,
            "got": got, "ok": got == case.expect, "unknown": sorted(out.unknown) if out.value == UNKNOWN else []}


def run_entry_tests(kb: KnowledgeBase, only: str | None = None) -> list[dict[str, Any]]:
    """Run every entry's own cases (see :func:`run_case`); returns one row per case with expected/got."""
    rx = re.compile(only) if only else None
    return [run_case(e, t) for e in kb.entries if not (rx and not rx.search(e.id)) for t in e.tests]


EXPECTATIONS_DIR = "expectations"   # kb/expectations/*.yaml: whole-KB expectations, run by `kb test`
EXPECTATION_KEYS = ("name", "source", "logs", "facts", "first", "present", "absent")


def load_expectations(kb_dir: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The whole-KB expectations under ``<kb>/expectations/*.yaml``: ``(cases, problems)``.

    Each file is a list of cases ``{name, source, logs?, facts?, first?, present?, absent?}``: this text and these
    facts -> this first confirmed cause (``first: null``: nothing confirmed), these ids among the diagnoses, these
    ids never."""
    import yaml
    from pathlib import Path

    from . import facts as factcat

    cases, problems = [], []
    for p in sorted((Path(kb_dir) / EXPECTATIONS_DIR).glob("*.yaml")):
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            problems.append(f"{p}: {exc}")
            continue
        if not isinstance(data, list):
            problems.append(f"{p}: a list of cases is required")
            continue
        for i, c in enumerate(data):
            where = f"{p.name}[{i}]"
            if not isinstance(c, dict) or not c.get("name") or not str(c.get("source", "")).startswith("http"):
                problems.append(f"{where}: every case needs a name and a source URL")
                continue
            extra = set(c) - set(EXPECTATION_KEYS)
            if extra or not ({"first", "present", "absent"} & set(c)) or not ({"logs", "facts"} & set(c)):
                problems.append(f"{where} {c['name']}: needs logs and/or facts, and first/present/absent"
                                + (f"; unknown keys {sorted(extra)}" if extra else ""))
                continue
            bad = [factcat.check_value(k, v) for k, v in (c.get("facts") or {}).items()]
            bad = [b for b in bad if b]
            if bad:
                problems.append(f"{where} {c['name']}: {bad[0]}")
                continue
            cases.append({**c, "file": p.name})
    return cases, problems


def run_expectations(kb: KnowledgeBase, matcher: "Matcher | None" = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Run the whole-KB expectations against every entry at once (facts through derive.py, logs through the
    normaliser and the one scan, as in a live run); one row per case."""
    from .derive import derive

    cases, problems = load_expectations(kb.directory)
    known = {e.id for e in kb.entries}
    m = matcher or Matcher(kb)
    rows = []
    for c in cases:
        facts = dict(c.get("facts") or {})
        facts.update(derive(facts))
        res = m.match(facts, [("log", c.get("logs") or "")] if c.get("logs") else [])
        got = [d["id"] for d in res["diagnoses"] if not d.get("benign")]
        why = []
        for eid in [c.get("first")] + list(c.get("present") or []) + list(c.get("absent") or []):
            if eid is not None and eid not in known:
                why.append(f"unknown id {eid}")
        if "first" in c and (got[0] if got else None) != c["first"]:
            why.append(f"first {got[0] if got else None}, expected {c['first']}")
        why += [f"{eid} did not fire" for eid in c.get("present") or [] if eid not in got]
        why += [f"{eid} fired" for eid in c.get("absent") or [] if eid in got]
        rows.append({"file": c["file"], "case": c["name"], "ok": not why, "why": why, "got": got[:5]})
    return rows, problems
