"""Evaluate the knowledge base against real logs from public reports.

Every case in tests/eval/cases/*.yaml holds a log pasted by a user in a public thread and the kb id that
the thread established as the real cause (``expected: none`` for healthy output or unrelated errors).
The log is fed to ``diagnostics.service.diagnose_text`` exactly as a user would paste it.

Figures:
- top-1 / top-3 accuracy over the cases with an expected id (the expected id is the first / among the
  first three diagnoses, in the service's ranking);
- for the negative cases: whether any diagnosis of severity error or critical appears (a false alarm).

Usage:
    python bench/eval_kb.py                 # print the table, write docs/EVALUATION.md
    python bench/eval_kb.py --no-write      # print only
    python bench/eval_kb.py --run REGEX     # only cases whose file name matches
    python bench/eval_kb.py --json          # machine-readable summary on stdout
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "tests" / "eval" / "tuning"
REPORT = ROOT / "docs" / "EVALUATION.md"
ALARM_SEVERITIES = {"error", "critical"}
REQUIRED_KEYS = {"source", "expected", "note", "log"}
ID_RE = re.compile(r"^[a-z0-9-]+$")


@dataclass
class Case:
    path: Path
    source: str
    expected: str  # a kb id, or "none"
    note: str
    log: str

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def negative(self) -> bool:
        return self.expected == "none"


@dataclass
class Outcome:
    case: Case
    ranked: list[dict[str, Any]] = field(default_factory=list)  # every diagnosis, best first
    error: str | None = None  # the service raised

    @property
    def causes(self) -> list[str]:
        """Ids of all diagnoses as the service ranked them, best first.

        Benign entries are not filtered out here: the service must rank real failures above benign
        noise, and a benign entry ranked first is a miss that the evaluation should show."""
        return [d.get("id", "?") for d in self.ranked]

    @property
    def top1(self) -> bool:
        return not self.case.negative and self.causes[:1] == [self.case.expected]

    @property
    def top3(self) -> bool:
        return not self.case.negative and self.case.expected in self.causes[:3]

    @property
    def alarms(self) -> list[str]:
        """Diagnoses at error/critical severity that are not benign (used for negatives)."""
        return [d.get("id", "?") for d in self.ranked
                if str(d.get("severity", "")).lower() in ALARM_SEVERITIES and not d.get("benign")]

    @property
    def passed(self) -> bool:
        if self.error:
            return False
        return not self.alarms if self.case.negative else self.top1


def load_cases(directory: Path = CASES_DIR, run: str | None = None) -> list[Case]:
    """Load and validate every case file; a malformed case is an error, never skipped."""
    cases: list[Case] = []
    problems: list[str] = []
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
                          note=str(data["note"]).strip(), log=str(data["log"])))
    if problems:
        raise ValueError("bad evaluation cases:\n  " + "\n  ".join(problems))
    return cases


def evaluate(cases: list[Case]) -> list[Outcome]:
    from diagnostics.service import diagnose_text  # imported late: the bench must load without it

    outcomes: list[Outcome] = []
    for case in cases:
        try:
            result = diagnose_text(logs=[(f"{case.name}.log", case.log)])
            outcomes.append(Outcome(case, list(result.get("diagnoses", []))))
        except Exception as exc:  # a crash of the service on one case is a miss, not a crash of the bench
            outcomes.append(Outcome(case, error=f"{type(exc).__name__}: {exc}"))
    return outcomes


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    pos = [o for o in outcomes if not o.case.negative]
    neg = [o for o in outcomes if o.case.negative]
    return {
        "cases": len(outcomes),
        "positives": len(pos),
        "negatives": len(neg),
        "expected_ids": len({o.case.expected for o in pos}),
        "top1": (sum(o.top1 for o in pos) / len(pos)) if pos else 0.0,
        "top3": (sum(o.top3 for o in pos) / len(pos)) if pos else 0.0,
        "negatives_clean": sum(not o.alarms and not o.error for o in neg),
        "errors": sum(1 for o in outcomes if o.error),
        "misses": [
            {"case": o.case.path.name, "expected": o.case.expected,
             "got": o.causes[:3], "alarms": o.alarms if o.case.negative else [], "error": o.error}
            for o in outcomes if not o.passed
        ],
    }


def _got(o: Outcome) -> str:
    if o.error:
        return f"ERROR {o.error}"
    ids = [f"{d.get('id')}{' (benign)' if d.get('benign') else ''}" for d in o.ranked[:3]]
    return ", ".join(ids) if ids else "(nothing)"


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


def markdown_report(outcomes: list[Outcome], summary: dict[str, Any]) -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# Knowledge-base evaluation",
        "",
        f"Generated by `python bench/eval_kb.py` on {now}. The cases are real logs from public threads",
        "(see `tests/eval/README.md`); each is labelled with the cause the thread established.",
        "",
        "| figure | value | bar |",
        "|---|---|---|",
        f"| cases | {summary['cases']} ({summary['positives']} with a cause over {summary['expected_ids']} ids, "
        f"{summary['negatives']} negatives) | |",
        f"| top-1 accuracy | {summary['top1']:.3f} | >= 0.80 |",
        f"| top-3 accuracy | {summary['top3']:.3f} | >= 0.95 |",
        f"| negatives without an error/critical diagnosis | {summary['negatives_clean']}/{summary['negatives']} | all |",
        f"| cases where the service raised | {summary['errors']} | 0 |",
        "",
        "Top-1/top-3 use the service's own ranking, benign entries included: the service must rank a",
        "real failure above benign noise (e.g. a missing MIOpen kernel database), so benign first is a miss.",
        "A negative passes when no non-benign diagnosis of severity error or critical appears.",
        "",
        "## Per case",
        "",
        "| case | expected | result | got (top 3, benign marked) |",
        "|---|---|---|---|",
    ]
    for o in outcomes:
        if o.case.negative:
            verdict = "ok" if o.passed else "FALSE ALARM" if o.alarms else "ERROR"
        else:
            verdict = "top-1" if o.top1 else "top-3" if o.top3 else "ERROR" if o.error else "MISS"
        got = _got(o).replace("|", "\\|")
        out.append(f"| [{o.case.path.name}]({o.case.source}) | {o.case.expected} | {verdict} | {got} |")
    out += ["", "## Misses", "", "```", miss_table(outcomes).rstrip(), "```", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", help="only cases whose file name matches this regex")
    ap.add_argument("--no-write", action="store_true", help="do not write docs/EVALUATION.md")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    cases = load_cases(run=args.run)
    outcomes = evaluate(cases)
    summary = summarize(outcomes)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"cases: {summary['cases']}  positives: {summary['positives']} ({summary['expected_ids']} ids)  "
              f"negatives: {summary['negatives']}")
        print(f"top-1: {summary['top1']:.3f}   top-3: {summary['top3']:.3f}   "
              f"negatives clean: {summary['negatives_clean']}/{summary['negatives']}   "
              f"service errors: {summary['errors']}")
        print()
        print(miss_table(outcomes), end="")
    if not args.no_write and not args.run:
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(markdown_report(outcomes, summary), encoding="utf-8")
        if not args.json:
            print(f"\nwrote {REPORT.relative_to(ROOT)}")
    ok = summary["top1"] >= 0.80 and summary["top3"] >= 0.95 and \
        summary["negatives_clean"] == summary["negatives"] and not summary["errors"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
