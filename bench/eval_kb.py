"""Evaluate the knowledge base against real logs and descriptions from public reports, held-out split first.

Two splits (see docs/EVALUATION.md):

- **held-out** (``tests/eval/heldout/``): logs and symptom descriptions from threads that nothing in the
  repository cites; collected and frozen before the KB changes of issue 14. The figures a user lives with.
- **tuning** (``tests/eval/tuning/``): the 120 logs the KB was written and tuned against. Optimistic.
  Its descriptions come in two parts: ``tuning-symptoms.yaml`` (tuned on) and ``tuning-symptoms-check.yaml``
  ("tuning check": collected with a round's tuning data but held back from it and scored at the end).

Every log is fed to ``diagnostics.service.diagnose_text(logs=...)`` exactly as a pasted log; every
description to ``diagnose_text(description=...)`` (the ``match --describe`` path).

Figures:
- logs: top-1 / top-3 over the cases with an expected id, counting *confirmed* diagnoses only (a ranked
  guess, ``basis: possible``, is never a confirmed answer); "top-3 incl. guesses" also counts possible causes;
  for ``expected: none`` cases, whether a confirmed non-benign diagnosis of severity error/critical appears;
- descriptions: top-1 / top-3 over everything the service returns for the text (confirmed then possible),
  per language too.

Usage:
    python bench/eval_kb.py                     # both splits, tables of misses, writes docs/EVALUATION.md
    python bench/eval_kb.py --split heldout     # only one split (no report written)
    python bench/eval_kb.py --split tuning-check  # only the tuning check descriptions (figures, no case table)
    python bench/eval_kb.py --run REGEX         # only cases whose name matches (no report written)
    python bench/eval_kb.py --json              # machine-readable summary on stdout
    python bench/eval_kb.py --record-baseline N  # freeze batch N's figures in bench/eval_baseline_batchN.json (once)
"""
from __future__ import annotations

import argparse
import collections
import datetime as _dt
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
EVAL_DIR = ROOT / "tests" / "eval"
TUNING_DIR = EVAL_DIR / "tuning"
CASES_DIR = TUNING_DIR  # the name older callers use
HELDOUT_DIR = EVAL_DIR / "heldout"
# batch 4: collected and frozen 2026-12-02 (01:07 UTC) before that round's KB/matcher changes
# (retired to tuning in session 8, 2026-12-02, when its misses were studied: now under retired/batch4)
HELDOUT4_FROZEN = "2026-12-02 01:07 UTC"
# batch 5: collected in session 6 and frozen before any of that session's KB/matcher changes was merged
# (retired to tuning in session 10, 2026-12-03, when its misses were studied: now under retired/batch5)
HELDOUT5_FROZEN = "2026-12-02 07:14 UTC"
# the held-out batches, each reported on its own (newest first) before all of them combined: number -> (folder, frozen)
# batch 6: collected in session 8 (two collectors, AMD/Windows and NVIDIA/Python sides) and frozen before any of
# that session's KB/matcher changes was merged (retired to tuning in session 12, 2026-12-04, when its misses were
# studied: now under retired/batch6)
HELDOUT6_FROZEN = "2026-12-02 15:29 UTC"
# batch 7: collected later in session 8, frozen before that session's last KB/matcher merges (logs9b, logs9c, dup17)
HELDOUT7_DIR = HELDOUT_DIR / "batch7"
HELDOUT7_FROZEN = "2026-12-02 16:28 UTC"
# batch 8: collected in session 9 (one collector, both sides), frozen before that session's KB/matcher changes
HELDOUT8_DIR = HELDOUT_DIR / "batch8"
HELDOUT8_FROZEN = "2026-12-03 11:13 UTC"
# batch 9: collected in session 10 (one collector, both sides), frozen before that session's KB/matcher changes
HELDOUT9_DIR = HELDOUT_DIR / "batch9"
HELDOUT9_FROZEN = "2026-12-03 14:40 UTC"
# batch 10: collected in session 11 (one collector, both sides), frozen before that session's KB/matcher changes
HELDOUT10_DIR = HELDOUT_DIR / "batch10"
HELDOUT10_FROZEN = "2026-12-04 01:05 UTC"
# batch 11: collected in session 12 (one collector, both sides), frozen before that session's helpers' KB/matcher changes
HELDOUT11_DIR = HELDOUT_DIR / "batch11"
HELDOUT11_FROZEN = "2026-12-04 03:55 UTC"
# batch 12: collected in session 13 (one collector, both sides), frozen before that session's helpers' KB/matcher changes
HELDOUT12_DIR = HELDOUT_DIR / "batch12"
HELDOUT12_FROZEN = "2026-12-04 19:18 UTC"
# batch 13: collected in session 14 (one collector, both sides), frozen before that session's helpers' KB/matcher changes
HELDOUT13_DIR = HELDOUT_DIR / "batch13"
HELDOUT13_FROZEN = "2026-12-04 21:24 UTC"
HELDOUT_BATCHES = {
    7: (HELDOUT7_DIR, HELDOUT7_FROZEN),
    8: (HELDOUT8_DIR, HELDOUT8_FROZEN),
    9: (HELDOUT9_DIR, HELDOUT9_FROZEN),
    10: (HELDOUT10_DIR, HELDOUT10_FROZEN),
    11: (HELDOUT11_DIR, HELDOUT11_FROZEN),
    12: (HELDOUT12_DIR, HELDOUT12_FROZEN),
    13: (HELDOUT13_DIR, HELDOUT13_FROZEN),
}
# former held-out batches 1-3 (retired in session 6) and 4 (session 8), all on 2026-12-02, and 5 (session 10,
# 2026-12-03): their misses were studied
# and fixed from then on, so they count in no held-out figure; scored with the tuning split (docs/EVALUATION.md)
RETIRED_DIR = EVAL_DIR / "retired"
RETIRED_BATCHES = {
    1: (RETIRED_DIR / "batch1", "2026-12-01"),
    2: (RETIRED_DIR / "batch2", "2026-12-01 15:27 UTC"),
    3: (RETIRED_DIR / "batch3", "2026-12-01 21:51 UTC"),
    4: (RETIRED_DIR / "batch4", HELDOUT4_FROZEN),
    5: (RETIRED_DIR / "batch5", HELDOUT5_FROZEN),
    6: (RETIRED_DIR / "batch6", HELDOUT6_FROZEN),
}
RETIRED_ON = "2026-12-02 (batch 5: 2026-12-03, batch 6: 2026-12-04)"


def _retired_span() -> str:
    return f"{min(RETIRED_BATCHES)}-{max(RETIRED_BATCHES)}"
TUNING_SYMPTOMS = EVAL_DIR / "tuning-symptoms.yaml"   # descriptions anyone may tune on (issue 14)
# the half of a tuning-side collection held back from tuning and scored at the end ("tuning check"); its figures
# are printed without the per-case table, so that running the bench while tuning shows no check case
TUNING_CHECK_SYMPTOMS = EVAL_DIR / "tuning-symptoms-check.yaml"
BASELINE = ROOT / "bench" / "eval_baseline.json"
REPORT = ROOT / "docs" / "EVALUATION.md"
ALARM_SEVERITIES = {"error", "critical"}
REQUIRED_KEYS = {"source", "expected", "note", "log"}
SYMPTOM_KEYS = {"id", "lang", "kind", "source", "expected", "note", "text"}
ID_RE = re.compile(r"^[a-z0-9-]+$")
NAME_RE = {"tuning": re.compile(r"^\d{3,4}-[a-z0-9-]+$"), "heldout": re.compile(r"^h\d{3}-[a-z0-9-]+$"),
           "retired": re.compile(r"^h\d{3}-[a-z0-9-]+$")}
# issue 14's targets for the held-out split, and the bar the tuning split has been held to since issue 4
HELDOUT_TARGET = {"top1": 0.90, "top3": 0.95}
SYMPTOM_TARGET = {"top1": 0.80, "top3": 0.95}
# tuning: top-1 on confirmed causes; top-3 counting possible causes too, since issue 14 moved reporters' prose out
# of the log patterns (cases confirmed only by the reporter's own sentence became ranked guesses)
TUNING_BAR = {"top1": 0.80, "top3": 0.95}


@dataclass
class Case:
    path: Path
    source: str
    expected: str  # a kb id, or "none"
    note: str
    log: str
    split: str = "tuning"

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def negative(self) -> bool:
        return self.expected == "none"


@dataclass
class Symptom:
    id: str
    lang: str     # "zh" or "en"
    kind: str     # "original" or "translation"
    source: str
    expected: str
    note: str
    text: str

    @property
    def name(self) -> str:
        return self.id


def _is_guess(d: dict[str, Any]) -> bool:
    return d.get("basis") == "possible"


def _ranked(result: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(confirmed diagnoses, possible causes), each in the service's order.

    Works with the service as it is (everything in ``diagnoses``) and with ranked guesses kept apart
    (``basis: possible`` in ``diagnoses`` or a separate ``possible`` list)."""
    diags = list(result.get("diagnoses", []))
    confirmed = [d for d in diags if not _is_guess(d)]
    possible = [d for d in diags if _is_guess(d)] + list(result.get("possible", []) or [])
    return confirmed, possible


@dataclass
class Outcome:
    case: Case
    ranked: list[dict[str, Any]] = field(default_factory=list)    # confirmed diagnoses, best first
    possible: list[dict[str, Any]] = field(default_factory=list)  # ranked guesses, best first
    error: str | None = None  # the service raised

    @property
    def causes(self) -> list[str]:
        """Ids of the confirmed diagnoses as the service ranked them, best first.

        Benign entries are not filtered out here: the service must rank real failures above benign
        noise, and a benign entry ranked first is a miss that the evaluation should show."""
        return [d.get("id", "?") for d in self.ranked]

    @property
    def guesses(self) -> list[str]:
        return [d.get("id", "?") for d in self.possible]

    @property
    def top1(self) -> bool:
        return not self.case.negative and self.causes[:1] == [self.case.expected]

    @property
    def top3(self) -> bool:
        return not self.case.negative and self.case.expected in self.causes[:3]

    @property
    def top3_any(self) -> bool:
        """In the first three of confirmed-then-possible: what a user reading the whole report sees."""
        both = self.causes + [g for g in self.guesses if g not in self.causes]
        return not self.case.negative and self.case.expected in both[:3]

    @property
    def alarms(self) -> list[str]:
        """Confirmed diagnoses at error/critical severity that are not benign (used for negatives)."""
        return [d.get("id", "?") for d in self.ranked
                if str(d.get("severity", "")).lower() in ALARM_SEVERITIES and not d.get("benign")]

    @property
    def passed(self) -> bool:
        if self.error:
            return False
        return not self.alarms if self.case.negative else self.top1


@dataclass
class SymptomOutcome:
    symptom: Symptom
    ranked: list[dict[str, Any]] = field(default_factory=list)  # confirmed then possible, best first
    error: str | None = None

    @property
    def causes(self) -> list[str]:
        out: list[str] = []
        for d in self.ranked:
            if d.get("id") not in out:
                out.append(d.get("id", "?"))
        return out

    @property
    def top1(self) -> bool:
        return self.causes[:1] == [self.symptom.expected]

    @property
    def top3(self) -> bool:
        return self.symptom.expected in self.causes[:3]

    @property
    def passed(self) -> bool:
        return not self.error and self.top1


# --- loading ---------------------------------------------------------------------------------------

def load_cases(directory: Path = TUNING_DIR, run: str | None = None) -> list[Case]:
    """Load and validate every case file of one split; a malformed case is an error, never skipped."""
    parts = directory.resolve().parts
    split = "heldout" if "heldout" in parts else "retired" if "retired" in parts else "tuning"
    cases: list[Case] = []
    problems: list[str] = []
    if not directory.is_dir():
        raise ValueError(f"no evaluation cases at {directory}")
    for path in sorted(directory.glob("*.yaml")):
        if run and not re.search(run, path.name):
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            problems.append(f"{path.name}: not valid YAML: {exc}")
            continue
        if not isinstance(data, dict):
            problems.append(f"{path.name}: not a mapping")
            continue
        missing = REQUIRED_KEYS - data.keys()
        extra = data.keys() - REQUIRED_KEYS
        if missing:
            problems.append(f"{path.name}: missing keys {sorted(missing)}")
            continue
        if extra:
            problems.append(f"{path.name}: unknown keys {sorted(extra)}")
        expected = str(data["expected"]).strip()
        if not ID_RE.match(expected):
            problems.append(f"{path.name}: expected {expected!r} is not an id or 'none'")
        if not str(data["source"]).startswith(("http://", "https://")):
            problems.append(f"{path.name}: source is not a URL")
        if not str(data["log"]).strip():
            problems.append(f"{path.name}: empty log")
        cases.append(Case(path=path, source=str(data["source"]), expected=expected,
                          note=str(data["note"]).strip(), log=str(data["log"]), split=split))
    if problems:
        raise ValueError("bad evaluation cases:\n  " + "\n  ".join(problems))
    return cases


def _batch_cases(batches: dict[int, tuple[Path, str]], run: str | None, batch: int | None) -> list[Case]:
    cases: list[Case] = []
    for n, (folder, _frozen) in sorted(batches.items()):
        if batch in (None, n) and (folder / "logs").is_dir():
            cases += load_cases(folder / "logs", run)
    return cases


def _batch_symptoms(batches: dict[int, tuple[Path, str]], run: str | None, batch: int | None) -> list[Symptom]:
    out: list[Symptom] = []
    for n, (folder, _frozen) in sorted(batches.items()):
        if batch in (None, n) and (folder / "symptoms.yaml").is_file():
            out += load_symptoms(folder / "symptoms.yaml", run)
    return out


def load_heldout_cases(run: str | None = None, batch: int | None = None) -> list[Case]:
    """Held-out logs: one batch (`heldout/batch<N>/logs/`), or (batch None) all of them."""
    return _batch_cases(HELDOUT_BATCHES, run, batch)


def load_heldout_symptoms(run: str | None = None, batch: int | None = None) -> list[Symptom]:
    """Held-out descriptions: one batch, or (batch None) all of them."""
    return _batch_symptoms(HELDOUT_BATCHES, run, batch)


def load_retired_cases(run: str | None = None, batch: int | None = None) -> list[Case]:
    """The retired batches' logs (`retired/batch<N>/logs/`): tuning data since RETIRED_ON."""
    return _batch_cases(RETIRED_BATCHES, run, batch)


def load_retired_symptoms(run: str | None = None, batch: int | None = None) -> list[Symptom]:
    return _batch_symptoms(RETIRED_BATCHES, run, batch)


def load_symptoms(path: Path, run: str | None = None) -> list[Symptom]:
    """Load and validate one file of symptom descriptions; malformed entries are errors."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    items = data.get("symptoms")
    if not isinstance(items, list):
        raise ValueError(f"{path.name}: expected a top-level 'symptoms' list")
    out: list[Symptom] = []
    problems: list[str] = []
    for i, s in enumerate(items):
        if not isinstance(s, dict):
            problems.append(f"entry {i}: not a mapping")
            continue
        keys = set(s)
        if keys != SYMPTOM_KEYS:
            problems.append(f"entry {i} ({s.get('id')}): keys {sorted(keys ^ SYMPTOM_KEYS)} wrong")
            continue
        sym = Symptom(**{k: str(s[k]) for k in SYMPTOM_KEYS})
        if sym.lang not in ("zh", "en"):
            problems.append(f"{sym.id}: lang must be zh or en")
        if sym.kind not in ("original", "translation"):
            problems.append(f"{sym.id}: kind must be original or translation")
        if not ID_RE.match(sym.expected) or sym.expected == "none":
            problems.append(f"{sym.id}: expected {sym.expected!r} is not a kb id")
        if not sym.source.startswith(("http://", "https://")):
            problems.append(f"{sym.id}: source is not a URL")
        if not sym.text.strip():
            problems.append(f"{sym.id}: empty text")
        if run and not re.search(run, sym.id):
            continue
        out.append(sym)
    if problems:
        raise ValueError("bad symptom descriptions:\n  " + "\n  ".join(problems))
    return out


# --- running ---------------------------------------------------------------------------------------

def evaluate(cases: list[Case]) -> list[Outcome]:
    from diagnostics.service import diagnose_text  # imported late: the bench must load without it

    outcomes: list[Outcome] = []
    for case in cases:
        try:
            result = diagnose_text(logs=[(f"{case.name}.log", case.log)])
            confirmed, possible = _ranked(result)
            outcomes.append(Outcome(case, confirmed, possible))
        except Exception as exc:  # a crash of the service on one case is a miss, not a crash of the bench
            outcomes.append(Outcome(case, error=f"{type(exc).__name__}: {exc}"))
    return outcomes


def evaluate_symptoms(symptoms: list[Symptom]) -> list[SymptomOutcome]:
    """Each description alone, as `python -m diagnostics match --describe TEXT` sends it."""
    from diagnostics.service import diagnose_text

    outcomes: list[SymptomOutcome] = []
    for s in symptoms:
        try:
            confirmed, possible = _ranked(diagnose_text(description=s.text))
            outcomes.append(SymptomOutcome(s, confirmed + possible))
        except Exception as exc:
            outcomes.append(SymptomOutcome(s, error=f"{type(exc).__name__}: {exc}"))
    return outcomes


def _rate(hits: int, n: int) -> float:
    return hits / n if n else 0.0


def kb_ids(kb_dir: Path = ROOT / "kb") -> set[str]:
    """Ids of the entries the KB holds now (a label the KB has no entry for cannot be answered yet)."""
    ids = set()
    for p in kb_dir.glob("*.yaml"):
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and data.get("id"):
            ids.add(str(data["id"]))
    return ids


def summarize(outcomes: list[Outcome], known: set[str] | None = None) -> dict[str, Any]:
    pos = [o for o in outcomes if not o.case.negative]
    neg = [o for o in outcomes if o.case.negative]
    known = kb_ids() if known is None else known
    kpos = [o for o in pos if o.case.expected in known]
    return {
        "cases": len(outcomes),
        "positives": len(pos),
        "negatives": len(neg),
        "expected_ids": len({o.case.expected for o in pos}),
        "top1": _rate(sum(o.top1 for o in pos), len(pos)),
        "top3": _rate(sum(o.top3 for o in pos), len(pos)),
        "top3_any": _rate(sum(o.top3_any for o in pos), len(pos)),
        "positives_known": len(kpos),
        "top1_known": _rate(sum(o.top1 for o in kpos), len(kpos)),
        "top3_known": _rate(sum(o.top3 for o in kpos), len(kpos)),
        "nothing": sum(1 for o in pos if not o.causes and not o.guesses and not o.error),
        "negatives_clean": sum(not o.alarms and not o.error for o in neg),
        "errors": sum(1 for o in outcomes if o.error),
        "misses": [
            {"case": o.case.path.name, "expected": o.case.expected,
             "got": o.causes[:3], "possible": o.guesses[:3],
             "alarms": o.alarms if o.case.negative else [], "error": o.error}
            for o in outcomes if not o.passed
        ],
    }


def summarize_symptoms(outcomes: list[SymptomOutcome], known: set[str] | None = None) -> dict[str, Any]:
    known = kb_ids() if known is None else known

    def part(items: list[SymptomOutcome]) -> dict[str, Any]:
        return {"n": len(items), "top1": _rate(sum(o.top1 for o in items), len(items)),
                "top3": _rate(sum(o.top3 for o in items), len(items)),
                "nothing": sum(1 for o in items if not o.causes and not o.error)}

    out = part(outcomes)
    out["by_lang"] = {lang: part([o for o in outcomes if o.symptom.lang == lang]) for lang in ("zh", "en")}
    kn = [o for o in outcomes if o.symptom.expected in known]
    out["known"] = {"n": len(kn), "top1": _rate(sum(o.top1 for o in kn), len(kn)),
                    "top3": _rate(sum(o.top3 for o in kn), len(kn))}
    out["errors"] = sum(1 for o in outcomes if o.error)
    out["misses"] = [{"id": o.symptom.id, "expected": o.symptom.expected, "got": o.causes[:3], "error": o.error}
                     for o in outcomes if not o.passed]
    return out


# --- printing --------------------------------------------------------------------------------------

def _got(o: Outcome) -> str:
    if o.error:
        return f"ERROR {o.error}"
    ids = [f"{d.get('id')}{' (benign)' if d.get('benign') else ''}" for d in o.ranked[:3]]
    text = ", ".join(ids) if ids else "(nothing)"
    if o.possible:
        text += " · possible: " + ", ".join(o.guesses[:3])
    return text


def miss_table(outcomes: list[Outcome]) -> str:
    rows = [o for o in outcomes if not o.passed]
    if not rows:
        return "no misses\n"
    width = max(len(o.case.path.name) for o in rows)
    lines = [f"{'case':<{width}}  {'expected':<36}  got (top 3)", "-" * (width + 60)]
    for o in rows:
        got = ("alarms: " + ", ".join(o.alarms)) if o.case.negative and o.alarms else _got(o)
        lines.append(f"{o.case.path.name:<{width}}  {o.case.expected:<36}  {got}")
    return "\n".join(lines) + "\n"


def symptom_miss_table(outcomes: list[SymptomOutcome]) -> str:
    rows = [o for o in outcomes if not o.passed]
    if not rows:
        return "no misses\n"
    lines = [f"{'description':<9}  {'expected':<36}  got (top 3)", "-" * 90]
    for o in rows:
        got = f"ERROR {o.error}" if o.error else (", ".join(o.causes[:3]) or "(nothing)")
        lines.append(f"{o.symptom.id:<9}  {o.symptom.expected:<36}  {got}")
    return "\n".join(lines) + "\n"


def _commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _pct(x: float) -> str:
    return f"{x:.3f}"


def _log_figures(s: dict[str, Any], bar: dict[str, float], bar_name: str, top3_bar_on_any: bool = False) -> list[str]:
    """The log figures as a table; the top-3 bar sits on the confirmed row, or with *top3_bar_on_any* on the row
    that counts possible causes too (the tuning bar: see TUNING_BAR)."""
    bar3 = f">= {bar['top3']:.2f}"
    return [
        "| figure | value | " + bar_name + " |",
        "|---|---|---|",
        f"| logs | {s['cases']} ({s['positives']} with a cause over {s['expected_ids']} ids, "
        f"{s['negatives']} healthy/unrelated) | |",
        f"| top-1 (first confirmed cause right) | {_pct(s['top1'])} | >= {bar['top1']:.2f} |",
        f"| top-3 (confirmed) | {_pct(s['top3'])} | {'' if top3_bar_on_any else bar3} |",
        f"| top-3 incl. possible causes | {_pct(s['top3_any'])} | {bar3 if top3_bar_on_any else ''} |",
        f"| top-1 / top-3 on the {s['positives_known']} logs whose id the KB has an entry for | "
        f"{_pct(s['top1_known'])} / {_pct(s['top3_known'])} | |",
        f"| logs with a cause that got no answer at all | {s['nothing']}/{s['positives']} | |",
        f"| healthy/unrelated logs without an error-level answer | {s['negatives_clean']}/{s['negatives']} | all |",
        f"| logs where the service raised | {s['errors']} | 0 |",
    ]


def _symptom_figures(s: dict[str, Any]) -> list[str]:
    zh, en = s["by_lang"]["zh"], s["by_lang"]["en"]
    return [
        "| figure | all | 中文 (zh) | English (en) | target (issue 14) |",
        "|---|---|---|---|---|",
        f"| descriptions | {s['n']} | {zh['n']} | {en['n']} | >= 40, half Chinese |",
        f"| top-1 | {_pct(s['top1'])} | {_pct(zh['top1'])} | {_pct(en['top1'])} | >= {SYMPTOM_TARGET['top1']:.2f} |",
        f"| top-3 | {_pct(s['top3'])} | {_pct(zh['top3'])} | {_pct(en['top3'])} | >= {SYMPTOM_TARGET['top3']:.2f} |",
        f"| no answer at all | {s['nothing']} | {zh['nothing']} | {en['nothing']} | |",
        f"| top-1 / top-3 on the {s['known']['n']} whose id the KB has an entry for | "
        f"{_pct(s['known']['top1'])} / {_pct(s['known']['top3'])} | | | |",
    ]


def _baseline_section() -> list[str]:
    """Each held-out batch's figures as measured once right after it was frozen (bench/eval_baseline_batch<N>.json)."""
    out = ["Each batch was measured once, right after it was frozen and before that round's KB or matcher changes",
           "were merged: the starting point that round is judged against. The files are never rewritten.", "",
           "| batch | measured | logs top-1 | top-3 | top-3 incl. possible | negatives clean | descriptions top-1 | top-3 |",
           "|---|---|---|---|---|---|---|---|"]
    rows = 0
    for n in sorted(set(HELDOUT_BATCHES) | set(RETIRED_BATCHES), reverse=True):   # retired batches keep their row
        path = ROOT / "bench" / f"eval_baseline_batch{n}.json"
        if not path.exists():
            continue
        b = json.loads(path.read_text(encoding="utf-8"))
        h, sy = b.get(f"heldout{n}_logs", {}), b.get(f"heldout{n}_symptoms", {})
        label = f"{n}" if n in HELDOUT_BATCHES else f"{n} (retired)"
        out.append(f"| {label} | {b.get('date', '?')} at `{b.get('commit', '?')}` | {_pct(h.get('top1', 0))} | "
                   f"{_pct(h.get('top3', 0))} | {_pct(h.get('top3_any', 0))} | "
                   f"{h.get('negatives_clean', 0)}/{h.get('negatives', 0)} | {_pct(sy.get('top1', 0))} | "
                   f"{_pct(sy.get('top3', 0))} |")
        rows += 1
    if not rows:
        return ["No baseline recorded yet for the held-out batches.", ""]
    out += ["", "The issue-14 starting point (batch 1, now retired) stays in `bench/eval_baseline.json`.", ""]
    return out


COLLECTION = """\
**Held-out batch 13** (`tests/eval/heldout/batch13/`, frozen 2026-12-04 21:24 UTC, session 14, on top of main at fa771a9,
before any of that session's helpers' KB or matcher changes was merged): 32 logs (25 with a cause over 22 ids, 13 of
them ids no earlier held-out log had, and 7 healthy or unrelated; about half NVIDIA, from venues earlier batches used
little: Ray and MELD on Slurm, gpu-burn, Triton at HEAD, torch.compile on WSL, tensorflow-rocm, ROCm 4.0 DKMS, ROCm
vLLM) and 18 descriptions (9 Chinese, 9 English, copied as written), collected by one collector who read no KB pattern
or test and ran nothing on the cases; three picks were replaced before freezing (a NumPy-2 banner whose stock lines the
copy check found in KB and tuning cases, two logs of ids that already had 4 held-out logs) and several were dropped (excerpts that stop before the error, causes left
open). Not covered: ANSI colour, DirectML, SwarmUI, Triton shared memory, NVML mismatch, rocm-smi and kernel-module logs.
Its figures at freeze (9468c3c: the batch committed, no KB or matcher change for it) are in
`bench/eval_baseline_batch13.json`: logs top-1 0.760, top-3 0.760 (0.920 incl. possible causes), negatives clean 7/7;
descriptions top-1 0.556, top-3 0.722.

**What session 14's changes did to unseen cases** (aggregate figures only, held-out first): batch 13 at freeze 0.760 /
0.760 logs (0.920 incl. possible causes), 0.556 / 0.722 descriptions -> logs the same, descriptions 0.611 / 0.722 at
the session's end (zh 0.444 / 0.556 unchanged, en 0.667 -> 0.778). Batches 7-12, the session's start (fa771a9) -> its
end: logs top-1 109/146 -> 110/146, top-3 110/146 -> 111/146 (129/146 incl. possible causes, unchanged); descriptions
66/94 -> 67/94, top-3 78/94 -> 78/94. All held-out (batches 7-13: 171 logs with a cause, 43 negatives, 112
descriptions): **logs top-1 0.754, top-3 0.760** (0.889 incl. possible causes), negatives 43/43 clean;
**descriptions 0.696 / 0.812**. The session's work: readers for the checks people paste (lspci, lsmod, dkms, cmdline,
os-release, package lists; Windows adapter listings and prompts; id in zh_CN), facts derived from them (device kinds
from torch's device names, a bare torch version on Windows, the CUDA version of a +cu wheel, the cards an SMI
listing names), a differential that ranks the known causes of a generic consequence first among the guesses, and
KB wordings from 54 new tuning logs, 41 source messages and 55 descriptions. Their first tries are the session's other
unseen figures: new-thread logs 28/54 top-1 (14/26, 0/3, 11/17, 3/8 by round), source wordings 27/41, descriptions
33/55 top-1. The held-out logs did not move: the misses are still a long tail of wordings, apps and causes, and the
fixes made for one round's fresh cases do not reach the next round's.

**Held-out batch 12** (`tests/eval/heldout/batch12/`, frozen 2026-12-04 19:18 UTC, session 13, on top of main at 14736a4,
before any of that session's helpers' KB or matcher changes was merged): 32 logs (25 with a cause over 22 ids, 7 healthy
or unrelated; about 45% NVIDIA, from venues earlier batches used little) and 18 descriptions (9
Chinese, 9 English, copied as written), collected by one collector who read no KB pattern or test and ran nothing on the
cases; five picks were dropped before freezing (three excerpts that stop before the error, a log whose reporter and text
match a thread the KB cites, one description of a kind the batch already had enough of) and two more at the last
citation check (their threads had just been added to tuning by another helper). Not covered: ANSI colour, ZLUDA,
DirectML, WSL, SwarmUI, Ray, Triton shared memory, NVML mismatch and kernel-module logs (every candidate was cited),
check-script output.
Its figures at freeze (0933573: the batch committed, no KB or matcher change for it) are in
`bench/eval_baseline_batch12.json`: logs top-1 0.760, top-3 0.760 (0.920 incl. possible causes), negatives clean 7/7;
descriptions top-1 0.611, top-3 0.722.

**What session 13's changes did to unseen cases** (aggregate figures only, held-out first): batch 12 at freeze 0.760 /
0.760 logs (0.920 incl. possible causes), 0.611 / 0.722 descriptions -> logs the same, descriptions 0.611 / 0.778 at
the session's end. Batches 7-11, the session's start (7dc74c3) -> its end: logs top-1 90/121 -> 90/121, top-3 91/121
-> 91/121; descriptions 54/76 -> 55/76, top-3 63/76 -> 64/76. All held-out (batches 7-12: 146 logs with a cause, 36
negatives, 94 descriptions): **logs top-1 0.747, top-3 0.753** (0.884 incl. possible causes), negatives 36/36 clean;
**descriptions 0.702 / 0.830**. No held-out log moved: the session's KB work (source-derived wordings of the HIP/ROCm
stack, of ollama/llama.cpp/Forge/NGC images, 28 tuning logs of new threads, 30 descriptions) fixed what its own fresh
tuning cases exposed, and those first tries are the session's other unseen figures: logs 16/22 (new threads), 5/8
and 1/11 (threads chosen for wordings from other code paths), descriptions 21/30 top-1, 23/30 top-3. The misses of
unseen text remain a long tail of wordings and apps, one or two per failure.

**Held-out batch 11** (`tests/eval/heldout/batch11/`, frozen 2026-12-04 03:55 UTC, session 12, on top of main at 3900e60,
where batch 6 had been retired and the lead's textnorm change had landed, before any of that session's helpers' KB or
matcher changes was merged): 32 logs (26 with a cause over 23 ids, 6 healthy or unrelated; about 40% NVIDIA; sources
2014-2026, most from 2023-2026, from venues earlier batches used little) and 18 descriptions (9 Chinese, 9 English,
copied as written), collected by one collector who read no KB pattern or test and ran nothing on the cases; two picks
were dropped before freezing (a label the thread did not settle, an excerpt that stops before the reporter's question).
Not covered: DirectML, WSL, container-toolkit logs (every candidate was cited), ollama logs with a GPU cause, ANSI colour.
Its figures at freeze (8c706e8: the batch committed, no KB or matcher change for it) are in
`bench/eval_baseline_batch11.json`: logs top-1 0.577, top-3 0.577 (0.769 incl. possible causes), negatives clean 6/6;
descriptions top-1 0.833, top-3 0.889.

**What session 12's changes did to unseen cases** (aggregate figures only, held-out first): batch 11 at freeze 0.577 /
0.577 logs (0.769 incl. possible causes), 0.833 / 0.889 descriptions -> the same at the session's end. Batches 7-10 on
the cases that stay held out (seven items whose threads helpers read moved to tuning: h306, h329, h385, h391, h418,
s211, s227), the session's start (a56eea5) -> its end: logs top-1 73/95 -> 75/95, top-3 74/95 -> 76/95; descriptions
39/58 -> 39/58, top-3 47/58 -> 47/58. All held-out (batches 7-11: 121 logs with a cause, 29 negatives, 76 descriptions):
**logs top-1 0.727 -> 0.744, top-3 0.736 -> 0.752** (0.876 incl. possible causes at the end), negatives 29/29 clean
throughout; **descriptions 0.711 / 0.829 -> the same**. The session's KB work came from message sources (format
strings of torch's allocator, NCCL, kmod, uv/pip/poetry/conda, amd-smi, ROCR, MIOpen, rocBLAS, CTranslate2, TensorRT,
flash-attn, SGLang), from 25 tuning logs of new threads (first try 16/25) and 6 more (0/6), from 31 tuning descriptions
(first try 22/31), and from the misses of batch 6, retired whole that day (7 of its 8 misses right at the end).

**Held-out batch 10** (`tests/eval/heldout/batch10/`, frozen 2026-12-04 01:05 UTC, session 11, on top of main at 2c030c8,
before any of that session's KB or matcher changes was merged; main's next commit, 5c89cfc, changed only the generation
child): 32 logs (26 with a cause over 21 ids, 6 unrelated errors; about a third NVIDIA; sources 2019-2026, most from
2024-2026) and 18 descriptions (9 Chinese, 9 English, copied as written), collected by one collector who read no KB
pattern or test and ran nothing on the cases; eight picks were dropped before freezing (four threads that other
session-11 helpers cited in new tuning cases meanwhile, NumPy's stock NumPy-2 message already in the KB and tuning,
an excerpt cut before its error line, two cross-posted pastes). Not covered: ZLUDA, DirectML, WSL, container-toolkit
logs, ANSI colour, healthy tool output as a negative. The brief asked for 22 ids; a miscount before freezing left
21, and no case was added after the baseline. Its figures at freeze (b64878a: the batch committed, no KB or matcher
change for it) are in `bench/eval_baseline_batch10.json`: logs top-1 0.731, top-3 0.731 (0.923 incl. possible
causes), negatives clean 6/6; descriptions top-1 0.778, top-3 0.889.

**What session 11's changes did to unseen cases** (measured after each merge and at the end, aggregate figures only):
batch 10 at freeze 0.731 / 0.731 logs (0.923 incl. possible causes), 0.778 / 0.889 descriptions -> the same figures
after every merge; batches 6-10 together (122 logs, 78 descriptions), the session's start (3b70578, batch 10 merged,
no KB change yet) -> its end: logs top-1 0.738 -> 0.738, top-3 0.746 -> 0.746, incl. possible causes 0.885 -> 0.893;
descriptions top-1 0.718 -> 0.692, top-3 0.846 -> 0.833 (56 -> 54 and 66 -> 65 of 78: the vocabulary round lost two
first places and the log round's new test texts one top-3, all in batches 6-9; nothing was reverted for it). The
session's KB work (59 tuning logs and 31 tuning descriptions from new threads, first try 35/59 and 19/31; a new entry
for torch's amdsmi NameError; widenings along tool wordings; traditional-Chinese folding and paste-introducing stop
words in the vocabulary) raised the figures on the new tuning cases and left the held-out ones where they were.
Exposure: tuning helpers picked six threads that the held-out check then flagged (batches 6-9); they dropped them
before committing (one, a Secure Boot log, while that helper widened the Secure Boot entry along four other
threads), but their URLs were not kept, so the held-out items could not be named
and moved; they stay held out, and the held-out top-1 and top-3 did not move with those helpers' merges.

**Held-out batch 9** (`tests/eval/heldout/batch9/`, frozen 2026-12-03 14:40 UTC, session 10, before any of that
session's helpers' KB or matcher changes was merged; the lead's own changes merged before it were a check-script
reading of pip/conda lines and a retired batch): 35 logs (29 with a cause over 25 ids, 6 healthy or unrelated; about
a third NVIDIA; sources 2021-2026, most from 2024-2025) and 18 descriptions (9 Chinese, 9 English, copied as written),
collected by one collector who read no KB pattern or test and ran nothing on the cases; six picks were replaced before
freezing (five would have given an id a fifth log over the batches, one paste sat in a tuning case under another
URL), and one description whose thread a tuning helper cited meanwhile. Not covered: ZLUDA, JAX, Ray, LM Studio, WSL,
ANSI colour. Its figures at freeze (main at 4688ca5: the batch merged, no KB or matcher change for it) are in
`bench/eval_baseline_batch9.json`: logs top-1 0.690, top-3 0.724 (0.862 incl. possible causes), negatives clean 6/6;
descriptions top-1 0.556, top-3 0.722.

**Exposed in session 10 and moved to tuning** (rule 3; `-ex-h` in their tuning names, tuning 1080-1085 and
description s224-en): a helper collecting tuning logs picked the threads of h236, h237, h238, h241 (batch 6), h320,
h330 and s224 (batch 8) on its own; the collision check flagged them, the helper dropped its copies and reverted the
one widening it had built on one of them (rocBLAS's TensileLibrary file list), but it had read those threads, so the
cases left the held-out split. Batch 5 retired whole the same day (above). The lead saw the file names of the moved
cases while moving them and one moved description's text; no KB change was made from them.

**What session 10's changes did to unseen cases** (measured once, at the end of the session, after every merge): batch
9 at freeze 0.690 / 0.724 logs, 0.556 / 0.722 descriptions -> the same figures after (nothing moved); batches 6-8 on
the cases that remain (84 logs, 42 descriptions), the session's start (ead26dc) -> its end: logs 0.636 / 0.739 /
0.909 top-1 per batch -> identical, descriptions top-3 38/42 -> 37/42 (one batch-8 description fell out of the first
three). The session's KB and matcher work (about 55 tuning logs from new threads, two retired batches' misses
studied, facts read from pip/conda lines, nvidia-smi and REPL pastes, escaped and quoted log layers) raised the
tuning and retired figures and left the held-out ones where they were.

**Held-out batch 8** (`tests/eval/heldout/batch8/`, frozen 2026-12-03 11:13 UTC, session 9, before any of that
session's helpers' KB or matcher changes was merged): 32 logs (26 with a cause over 21 ids, 6 healthy or unrelated;
about a third NVIDIA; sources 2019-2026, most from 2024-2026) and 16 descriptions (8 Chinese, 8 English, copied as
written), collected by one collector who read no KB pattern or test and ran nothing on the cases; two picks that a
tuning helper cited meanwhile were replaced before freezing. Not covered for want of unseen threads that show both the
error and its cause: ZLUDA/HIP SDK and DirectML, TheRock wheels, ANSI colour, Ray. Its figures at freeze (measured on
the collector's commit, main at cd0faca plus the batch) are in `bench/eval_baseline_batch8.json`: logs top-1 0.923,
top-3 0.923 (0.923 incl. possible causes), negatives clean 6/6; descriptions top-1 0.688, top-3 0.812. Two of its
logs (h334, h335, /dev/shm in docker) moved to tuning the same day: a helper collecting tuning descriptions had used
their threads before the batch was merged, so batch 8 now counts 30 logs.

**Exposed in session 9 and moved to tuning** (rule 3; `-ex-h` in their tuning names): helpers collecting tuning data
picked the threads of h188 (batch 5), h240, h271 (batch 6), h302 (batch 7) and of descriptions s132, s180, s207 on
their own; the collision check flagged them and the helpers dropped them, but they had read those threads (one had
widened an entry along a thread's 403 wording), so the cases left the held-out split. The figures of batches 5-7
below are on what remains. The lead also saw batch 7's file names once (a `git show --stat`) and made no KB change
of its own from them; a symptom-ranking change of the lead was measured once on the held-out set, lowered its
top-3-incl.-guesses (0.907 -> 0.880), and was reverted: that decision used the held-out figures.

**Held-out batch 6** (`tests/eval/heldout/batch6/`, frozen 2026-12-02 15:29 UTC, session 8, before any of that
session's KB or matcher changes was merged): 34 logs (28 with a cause over 25 ids, 6 healthy or unrelated) and 20
descriptions (10 Chinese, 10 English, all copied as written), collected the same way by two collectors working apart
(about 430 candidate threads looked at, every URL checked against the repository and every helper's worktree just
before freezing; picks meanwhile cited by a helper's tuning data were replaced): one the AMD/ROCm side with Windows
and WSL (DKMS builds in French and other locales, rocBLAS/Tensile under ollama, ZLUDA, kfd, Hygon DCU threads in
Chinese), the other the NVIDIA/CUDA and Python side (NVML mismatch, kernel module, container toolkit, cuDNN, shm,
NCCL, vLLM cache, Triton, transformers arguments, accelerate, wheels for Python, OOM killer, ONNX Runtime). Its
figures at freeze are in `bench/eval_baseline_batch6.json`: logs top-1 0.607, top-3 0.607 (0.929 incl. possible
causes), negatives clean 6/6; descriptions top-1 0.650, top-3 0.900. Description s185-en moved to tuning the same day
(its thread became a tuning description while the vocabulary was tuned), so batch 6 now counts 19 descriptions.

**Held-out batch 7** (`tests/eval/heldout/batch7/`, frozen 2026-12-02 16:28 UTC, session 8, after that session's
first merges (facts9, logs9, words9, hard16) and before its last ones (logs9b, logs9c, dup17)): 29 logs (24 with a
cause over 21 ids, 5 healthy or unrelated: WSL2 nvidia-smi with Chinese prose, rocm-smi on an iGPU, nvidia-ctk under
podman, two ComfyUI node errors) and 10 descriptions (5 Chinese, 5 English, copied as written), collected by one
collector from both sides the same way (about 250 candidate threads looked at; two picks replaced because the copy
check found stock lines shared with KB tests). Its figures at freeze are in `bench/eval_baseline_batch7.json`: logs
top-1 0.708, top-3 0.708 (0.833 incl. possible causes), negatives clean 5/5; descriptions top-1 0.500, top-3 0.700.

**Batch 4 retired to tuning** (`tests/eval/retired/batch4`, 2026-12-02, session 8), whole, before that session's
KB and matcher changes, so that its misses could be studied; a fresh batch replaced it in the held-out split. Its
collection is described below as it was when it was held out.

**Retired to tuning** (`tests/eval/retired/batch1-3`, 2026-12-02, session 6). Batches 1-3 were held out from
2026-12-01 (frozen then at 15:27 and 21:51 UTC, each before that round's KB and matcher changes) until their misses
were studied and fixed that session; a held-out case that leads to a KB change moves to tuning (rule 3), so all three
moved whole and are scored with the tuning split ("retired"). They were 67 + 30 + 43 logs and 38 + 20 + 32
descriptions, collected with the search tool from public threads nothing in the repository cited, each labelled with
the cause the thread itself established; their freeze-time figures are in `bench/eval_baseline_batch{2,3}.json`,
their collection in `tests/eval/retired/README.md`.

**Former held-out batch 4** (now `tests/eval/retired/batch4/`, frozen 2026-12-02 01:07 UTC, before that round's KB and
matcher changes): 40 logs (32 with a cause over 25 ids, 8 healthy or unrelated) and 24 descriptions (12 Chinese,
12 English, all copied as written), collected the same way from threads that nothing in the repository, the earlier
batches, the tuning split or the other helpers' work in progress cited (URLs checked again just before freezing;
nine picks cited there meanwhile were replaced). ROCm 1.9 to 7.2 (Windows included), NVIDIA kernel-module, ECC,
Secure Boot and launch-timeout failures, pip/PEP 668, disk, shm/NCCL, HF hub, GLIBCXX, Triton on Windows;
ComfyUI, A1111, Easy Diffusion, InvokeAI, vLLM, ollama, llama.cpp forks, Amuse, TGI, Julia; journald prefixes in
Spanish and Chinese locales, docker compose prefixes, `^M` line ends, French and Russian locales. Its figures at
freeze are in `bench/eval_baseline_batch4.json`: logs top-1 0.812, top-3 0.812 (0.938 incl. possible causes),
negatives clean 8/8; descriptions top-1 0.833, top-3 0.875 (zh 0.833/0.833, en 0.833/0.917).

**Batch 5 retired to tuning** (`tests/eval/retired/batch5`, 2026-12-03, session 10), whole, before that session's KB
and matcher changes, so that its misses could be studied (its figures had been read in three sessions, and one of
them once decided a change); a fresh batch joins the held-out split. At retirement (main at ead26dc) it scored logs
top-1 0.771, top-3 0.771 (0.914 incl. possible causes), negatives clean 10/10; descriptions top-1 0.933, top-3 0.933.
Its collection as it was when it was held out:

**Former held-out batch 5** (now `tests/eval/retired/batch5/`, frozen 2026-12-02 07:14 UTC, before that session's KB and
matcher changes were merged): 47 logs (37 with a cause over 34 ids, 10 healthy or unrelated) and 31 descriptions
(16 Chinese, 15 English, all copied as written), collected the same way (about 300 candidate threads looked at, every
URL checked against the repository and the helpers' worktrees just before freezing). AMD and NVIDIA driver and
toolchain failures, Windows and WSL, containers with docker and journald prefixes, Ray/vLLM, jax, Chinese prose
around pastes; healthy nvidia-smi and rocm-smi tables among the negatives (details in
`tests/eval/heldout/README.md`). Its figures at freeze are in `bench/eval_baseline_batch5.json`: logs top-1 0.784,
top-3 0.784 (0.946 incl. possible causes), negatives clean 10/10; descriptions top-1 0.871, top-3 0.903.
Two held-out logs that shared lines with retired batch-1 text moved to tuning under the copy rule (batch 4's h146,
batch 5's h192), so batch 4 now counts 39 logs and batch 5 46.

**Moved to tuning** (2026-12-01): ten held-out cases were exposed while that round tuned the KB (the threads of
batch-1 descriptions s002, s008, s009, s019, s023, s036, s038 and log h056 were read; batch-2 descriptions s047,
s057, s060 shared threads with new tuning descriptions). They moved to tuning and count in no held-out figure;
no fresh cases replaced them yet (`tests/eval/heldout/README.md`). Batch 1 is now 67 logs and 38 descriptions.

**Tuning** (`tests/eval/tuning/`; its counts are in the tables above). The first 120 logs are issue 4's
(`tests/eval/README.md`: committed while the KB was written, and KB commits widened patterns to pass them); the rest came from threads collected for tuning
in later rounds (fresh threads per failure and wording, app and version variants) and from held-out cases that were
moved (`-ex-h` in the name). The tuning descriptions (`tests/eval/tuning-symptoms.yaml`) and those of the
"tuning check" (`tests/eval/tuning-symptoms-check.yaml`, split off per label and language before a round tuned the
ranking and scored once at its end) likewise. Every tuning case has been seen: its figures are optimistic; the
check half is unseen only for the round that collected it.
"""

PROTOCOL = """\
1. The held-out set is frozen: its commit precedes every measurement on it (the history shows the set's
   commit, then the baseline commit). Cases are never edited to improve a figure.
2. People changing the KB or the matcher do not read `tests/eval/heldout/`.
3. A held-out case that leads to a KB change (its thread gets cited, its text becomes an entry's test case,
   a pattern is written from it) **moves to `tests/eval/tuning/`** and a fresh unseen case replaces it, in
   the same commit. `bench/eval_check_heldout.py` (run by `tests/test_eval.py`) fails and names the case
   when a held-out thread is cited anywhere in kb/, tests/, docs/ or the code, or a held-out log's
   distinctive lines appear in a KB test, fixture, scenario or tuning case.
4. Patterns describe what tools print (error lines, tool output); phrases people write ("显存不足",
   "GPU usage is 0%") go to the symptom vocabulary (`diagnostics/i18n/symptoms.yaml`), never into `when`
   patterns.
5. Figures are reported held-out first. The issue-14 targets (held-out logs top-1 >= 0.90, top-3 >= 0.95,
   no error-level answer on healthy/unrelated logs; descriptions top-1 >= 0.80, top-3 >= 0.95) are
   reported, not asserted, until they hold; `tests/test_eval.py` asserts what holds honestly.
"""


def markdown_report(results: dict[str, Any]) -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# Knowledge-base evaluation",
        "",
        f"Generated by `python bench/eval_kb.py` on {now} at commit `{_commit()}`. Two splits: **held-out**",
        "(real text nothing in the repository was tuned on: the figures a user lives with) and **tuning** (the",
        "logs the KB was written against: optimistic). Held-out first.",
        "",
    ]
    hl, hs, tl = results.get("heldout_logs"), results.get("heldout_symptoms"), results.get("tuning_logs")
    out += ["## Held-out", ""]
    shown = False
    for n, (_folder, frozen) in sorted(HELDOUT_BATCHES.items(), reverse=True):   # newest batch first
        bl, bs = results.get(f"heldout{n}_logs"), results.get(f"heldout{n}_symptoms")
        if not (bl or bs):
            continue
        shown = True
        out += [f"### Batch {n} (frozen {frozen}), on its own", ""]
        if bl:
            out += ["Pasted logs:", ""] + _log_figures(summarize(bl), HELDOUT_TARGET, "target (issue 14)") + [""]
        if bs:
            out += ["Symptoms in words:", ""] + _symptom_figures(summarize_symptoms(bs)) + [""]
    if shown:
        out += ["### All batches combined", ""]
    if hl:
        s = summarize(hl)
        out += ["### Pasted logs", ""] + _log_figures(s, HELDOUT_TARGET, "target (issue 14)") + [""]
    if hs:
        out += ["### Symptoms in words (`match --describe`)", ""] + _symptom_figures(summarize_symptoms(hs)) + [""]
    out += ["### Baseline", ""] + _baseline_section()
    out += ["### Held-out misses by expected id", "",
            "Per case tables are printed by `python bench/eval_kb.py` (for whoever owns the set); this page names",
            "no held-out case, thread or text, so that reading it cannot tune the KB on the held-out set.", ""]
    if hl or hs:
        out += ["| expected id | log misses | description misses |", "|---|---|---|"]
        lm = collections.Counter(o.case.expected for o in (hl or []) if not o.passed)
        sm = collections.Counter(o.symptom.expected for o in (hs or []) if not o.passed)
        for k in sorted(set(lm) | set(sm), key=lambda k: (-(lm[k] + sm[k]), k)):
            label = f"{k} (false alarm)" if k == "none" else k
            out.append(f"| {label} | {lm.get(k, 0)} | {sm.get(k, 0)} |")
        out.append("")
    if tl:
        out += ["## Tuning", ""] + _log_figures(summarize(tl), TUNING_BAR, "bar (issue 4)", top3_bar_on_any=True) + [
            "", "### Tuning misses", "", "```", miss_table(tl).rstrip(), "```", ""]
    rl, rs = results.get("retired_logs"), results.get("retired_symptoms")
    if rl or rs:
        out += [f"### Retired held-out batches {_retired_span()} (tuning data since {RETIRED_ON})", "",
                "Former held-out batches, scored here with the tuning split: from the day they retired their misses",
                "were studied and fixed, so they are no longer unseen (`tests/eval/retired/`).", ""]
        if rl:
            out += ["Pasted logs:", ""] + _log_figures(summarize(rl), TUNING_BAR, "bar (issue 4)", top3_bar_on_any=True) + [
                "", "```", miss_table(rl).rstrip(), "```", ""]
        if rs:
            out += ["Symptoms in words:", ""] + _symptom_figures(summarize_symptoms(rs)) + [
                "", "```", symptom_miss_table(rs).rstrip(), "```", ""]
    ts = results.get("tuning_symptoms")
    if ts:
        out += ["### Tuning descriptions (`tests/eval/tuning-symptoms.yaml`)", ""] + \
            _symptom_figures(summarize_symptoms(ts)) + ["", "```", symptom_miss_table(ts).rstrip(), "```", ""]
    tc = results.get("tuning_check_symptoms")
    if tc:
        out += ["### Tuning check descriptions (`tests/eval/tuning-symptoms-check.yaml`)", "",
                "Collected with a round's tuning descriptions and split off before that round tuned; scored at",
                "the end of the round (figures only). Seen once reported: a check only for the round that made it.",
                ""] + _symptom_figures(summarize_symptoms(tc)) + [""]
    out += ["## How each split was collected", "", COLLECTION, "## Protocol", "", PROTOCOL,
            "## What the figures mean", "",
            "- **top-1**: the expected id is the first *confirmed* diagnosis (the service's own ranking, benign",
            "  entries included: benign noise ranked above the real failure is a miss). Ranked guesses",
            "  (`basis: possible`) never count as confirmed.",
            "- **top-3**: among the first three confirmed; **incl. possible**: among the first three of confirmed",
            "  then possible causes.",
            "- **negatives clean**: no confirmed, non-benign diagnosis of severity error/critical.",
            "- **descriptions**: the first / first three of everything returned for the text alone.",
            "",
            "Logs are diagnosed from their text alone, as `python -m diagnostics match --log FILE` does (a pasted",
            "tool dump is parsed for facts too); descriptions as `match --describe TEXT`.",
            ""]
    if tl:
        out += ["## Per case: tuning logs", "", "| case | expected | result | got (top 3, benign marked) |",
                "|---|---|---|---|"] + _case_rows(tl) + [""]
    return "\n".join(out)


def _case_rows(outcomes: list[Outcome]) -> list[str]:
    rows = []
    for o in outcomes:
        if o.case.negative:
            verdict = "ok" if o.passed else "FALSE ALARM" if o.alarms else "ERROR"
        else:
            verdict = "top-1" if o.top1 else "top-3" if o.top3 else "ERROR" if o.error else "MISS"
        got = _got(o).replace("|", "\\|")
        rows.append(f"| [{o.case.path.name}]({o.case.source}) | {o.case.expected} | {verdict} | {got} |")
    return rows


def _print_logs(title: str, outcomes: list[Outcome]) -> None:
    s = summarize(outcomes)
    print(f"== {title}: {s['cases']} logs, {s['positives']} with a cause ({s['expected_ids']} ids), "
          f"{s['negatives']} negatives")
    print(f"   top-1: {s['top1']:.3f}   top-3: {s['top3']:.3f}   top-3 incl. possible: {s['top3_any']:.3f}   "
          f"no answer: {s['nothing']}   negatives clean: {s['negatives_clean']}/{s['negatives']}   "
          f"service errors: {s['errors']}")
    print(f"   on the {s['positives_known']} whose id has a KB entry: top-1 {s['top1_known']:.3f}   "
          f"top-3 {s['top3_known']:.3f}")
    print(miss_table(outcomes), end="")
    print()


def _print_symptoms(outcomes: list[SymptomOutcome], title: str = "held-out descriptions", table: bool = True) -> None:
    s = summarize_symptoms(outcomes)
    zh, en = s["by_lang"]["zh"], s["by_lang"]["en"]
    print(f"== {title}: {s['n']} (zh {zh['n']}, en {en['n']})")
    print(f"   top-1: {s['top1']:.3f} (zh {zh['top1']:.3f}, en {en['top1']:.3f})   "
          f"top-3: {s['top3']:.3f} (zh {zh['top3']:.3f}, en {en['top3']:.3f})   no answer: {s['nothing']}   "
          f"service errors: {s['errors']}")
    print(f"   on the {s['known']['n']} whose id has a KB entry: top-1 {s['known']['top1']:.3f}   "
          f"top-3 {s['known']['top3']:.3f}")
    if table:
        print(symptom_miss_table(outcomes), end="")
    else:
        print("   (no per-case table: these cases are held back from tuning)")
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["all", "heldout", "tuning", "tuning-check"], default="all")
    ap.add_argument("--run", help="only cases (file names / description ids) matching this regex")
    ap.add_argument("--no-write", action="store_true", help="do not write docs/EVALUATION.md")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--record-baseline", type=int, metavar="N", choices=sorted(HELDOUT_BATCHES),
                    help="write held-out batch N's figures to bench/eval_baseline_batchN.json (once, right after "
                         "the batch is frozen and before any KB or matcher change made for it)")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    results: dict[str, Any] = {}
    if args.split in ("all", "heldout"):
        results["heldout_logs"] = evaluate(load_heldout_cases(args.run))
        results["heldout_symptoms"] = evaluate_symptoms(load_heldout_symptoms(args.run))
        # each later batch on its own: the same outcomes, selected by folder (no second run of the service)
        for n, (folder, _frozen) in HELDOUT_BATCHES.items():
            results[f"heldout{n}_logs"] = [o for o in results["heldout_logs"] if folder in o.case.path.parents]
            ids = {s.id for s in load_heldout_symptoms(args.run, batch=n)}
            results[f"heldout{n}_symptoms"] = [o for o in results["heldout_symptoms"] if o.symptom.id in ids]
    if args.split in ("all", "tuning"):
        results["tuning_logs"] = evaluate(load_cases(TUNING_DIR, args.run))
        results["retired_logs"] = evaluate(load_retired_cases(args.run))
        results["retired_symptoms"] = evaluate_symptoms(load_retired_symptoms(args.run))
        if TUNING_SYMPTOMS.exists():
            results["tuning_symptoms"] = evaluate_symptoms(load_symptoms(TUNING_SYMPTOMS, run=args.run))
    if args.split in ("all", "tuning", "tuning-check") and TUNING_CHECK_SYMPTOMS.exists():
        results["tuning_check_symptoms"] = evaluate_symptoms(load_symptoms(TUNING_CHECK_SYMPTOMS, run=args.run))

    summary = {k: (summarize_symptoms(v) if k.endswith("_symptoms") else summarize(v)) for k, v in results.items()}
    if "tuning_check_symptoms" in summary:
        summary["tuning_check_symptoms"].pop("misses", None)   # figures only (see TUNING_CHECK_SYMPTOMS)
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        for n, (_folder, frozen) in sorted(HELDOUT_BATCHES.items(), reverse=True):   # newest batch first
            if f"heldout{n}_logs" in results:
                _print_logs(f"held-out batch {n} (frozen {frozen}) logs", results[f"heldout{n}_logs"])
                _print_symptoms(results[f"heldout{n}_symptoms"], f"held-out batch {n} (frozen {frozen}) descriptions")
        if "heldout_logs" in results:
            batches = "+".join(str(n) for n in sorted(HELDOUT_BATCHES))
            _print_logs(f"held-out logs (batches {batches})", results["heldout_logs"])
            _print_symptoms(results["heldout_symptoms"], f"held-out descriptions (batches {batches})")
        if "tuning_logs" in results:
            _print_logs("tuning logs", results["tuning_logs"])
        if results.get("retired_logs"):
            _print_logs(f"retired held-out logs (batches {_retired_span()}, tuning since {RETIRED_ON})", results["retired_logs"])
        if results.get("retired_symptoms"):
            _print_symptoms(results["retired_symptoms"], f"retired held-out descriptions (tuning since {RETIRED_ON})")
        if "tuning_symptoms" in results:
            _print_symptoms(results["tuning_symptoms"], "tuning descriptions")
        if "tuning_check_symptoms" in results:
            _print_symptoms(results["tuning_check_symptoms"], "tuning check descriptions (held back from tuning)",
                            table=False)
    full = args.split == "all" and not args.run
    if args.record_baseline:
        n = args.record_baseline
        path = ROOT / "bench" / f"eval_baseline_batch{n}.json"
        if args.split not in ("all", "heldout") or args.run:
            ap.error("--record-baseline needs the held-out split and no --run")
        if path.exists():
            ap.error(f"{path.relative_to(ROOT)} exists: a batch's baseline is recorded once")
        logs, syms = dict(summary[f"heldout{n}_logs"]), dict(summary[f"heldout{n}_symptoms"])
        # the baseline sits outside the held-out folder: it names no held-out case except the healthy or
        # unrelated logs that raised a false alarm (tests/test_eval.py keeps every other one clean)
        logs["misses"] = [m for m in logs["misses"] if m["expected"] == "none"]
        syms.pop("misses", None)
        base = {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": _commit(),
                "note": f"held-out batch {n} measured once, right after it was frozen", f"heldout{n}_logs": logs,
                f"heldout{n}_symptoms": syms}
        path.write_text(json.dumps(base, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if not args.json:
            print(f"recorded {path.relative_to(ROOT)}")
    if not args.no_write and full:
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(markdown_report(results), encoding="utf-8")
        if not args.json:
            print(f"wrote {REPORT.relative_to(ROOT)}")
    ok = True
    if "tuning_logs" in summary:
        t = summary["tuning_logs"]
        ok &= t["top1"] >= TUNING_BAR["top1"] and t["top3_any"] >= TUNING_BAR["top3"] and \
            t["negatives_clean"] == t["negatives"] and not t["errors"]
    if "heldout_logs" in summary:
        h = summary["heldout_logs"]
        ok &= h["negatives_clean"] == h["negatives"] and not h["errors"] and not summary["heldout_symptoms"]["errors"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
