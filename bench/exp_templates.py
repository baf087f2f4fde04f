"""Experiment (session 8): would error-line templates learned from the KB's firing test cases confirm more causes?

Not part of the doctor: nothing here is imported by diagnostics/.  The figures are in docs/BENCHMARKS.md
("Error-line templates: experiment").

A template is a log line normalised: logging prefixes stripped the way diagnostics/textnorm.clean_log does, then
hex, paths, quoted names, device names, versions and numbers as placeholders, case and whitespace folded.  A
*distinctive* template has at least MIN_WORDS word tokens, occurs in the firing cases (``expect: fire``) of exactly
one entry, in no entry's silent/unknown case, and is not generic (traceback frames and source lines, pip
progress, a bare exception name).  Optionally (--no-neg-filter turns it off) it also occurs in none of the tuning /
retired negative logs.

For every tuning and retired log (never tests/eval/heldout/), the service's answer as it is now is compared with
the answer the templates would give: an entry whose ``when:`` did not fire is confirmed (below every ``when:``
match of a real problem, above benign messages) when a line of the log has one of its distinctive templates, and
that template was learned from a KB test that shares no 3 consecutive lines with the log (leave-one-out guard).

Every variant is scored in one run: minimum word tokens (--min-words, several allowed), every line or only
error-like lines ("errorish"), with and without the filter against the tuning side's negative logs, and two
places for a template confirmation in the ranking ("below": under every when: match of a real problem; "conf":
by half the entry's confidence among them).  Figures per variant: misses fixed, right answers displaced (top-1),
top-3 gains and losses, wrong confirmations added, negatives with a new error/critical alarm; "alone_*": what the
templates would confirm by themselves, whether or not when: fired (how often they find the right entry at all).

Usage:
    PYTHONPATH=. python bench/exp_templates.py [--min-words 5 ...] [--show N] [--near] [--json]
    # a retired batch scored with the KB and matcher of the commit it was frozen at (an unseen-log check):
    git archive 0ed5528 | tar -x -C /tmp/kb-0ed5528 && cp bench/exp_templates.py /tmp/kb-0ed5528/bench/ &&
      (cd /tmp/kb-0ed5528 && PYTHONPATH=. python bench/exp_templates.py --cases $REPO/tests/eval/retired/batch4/logs)
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from diagnostics.kb import load_kb  # noqa: E402
from diagnostics.textnorm import clean_log  # noqa: E402

import eval_kb  # noqa: E402

# --- normalisation -----------------------------------------------------------------------------------------------
_SUBS = [
    (re.compile(r"https?://\S+"), " <url> "),
    (re.compile(r"\"[^\"\n]{0,300}\"|'[^'\n]{0,300}'|`[^`\n]{0,300}`"), " <q> "),
    (re.compile(r"(?:[a-z]:)?(?:[\\/][\w.+@~-]+){2,}[\\/]?", re.I), " <path> "),
    (re.compile(r"\b(?:amd|nvidia|intel)\b(?: (?:radeon|geforce|rtx|gtx|instinct|tesla|quadro|arc|rx|pro|"
                r"graphics|a\d+|h\d+|mi\d+\w*|\d{3,4}\w*|xt|xtx|ti|super|vii|laptop|gpu))+", re.I), " <dev> "),
    (re.compile(r"\bgfx[0-9a-f]{3,5}\b", re.I), " <gfx> "),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), " <hex> "),
    (re.compile(r"\b[0-9a-f]{8,}\b", re.I), " <hex> "),
    (re.compile(r"\bv?\d+(?:\.\d+){1,4}(?:[-+.~]?[\w]+)*\b"), " <ver> "),
    (re.compile(r"\d+"), " <n> "),
]
_TOKEN = re.compile(r"<[a-z]+>|[a-z][a-z_]+")
_SPACE = re.compile(r"\s+")


def template(line: str) -> str:
    s = line.strip().lower()
    for rx, rep in _SUBS:
        s = rx.sub(rep, s)
    s = re.sub(r"([^\w<>\s])", r" \1 ", s)       # punctuation as its own token
    return _SPACE.sub(" ", s).strip()


def words(t: str) -> int:
    return sum(1 for w in _TOKEN.findall(t) if not w.startswith("<"))


_FRAME = re.compile(r'^\s*(?:File "|at [\w.$<>]+\(|#\d+ 0x|\d+: 0x|frame #\d+)')
_GENERIC = re.compile(r"(?i)^(?:traceback \(most recent call last\)|during handling of the above exception|"
                      r"the above exception was the direct cause|\w+(?:error|exception|warning):?\s*$)")
_PIP = re.compile(r"(?i)(?:━|█|\d+(?:\.\d+)?\s*[kmg]?b/s|downloading |collecting |requirement already satisfied|"
                  r"installing collected packages|successfully installed|using cached|\|\s*\d+%)")
_ERRORISH = re.compile(r"(?i)(?:error|fail|unable|cannot|can't|could not|couldn't|not (?:found|supported|"
                       r"available|compiled|enabled|loaded|allowed)|invalid|abort|fault|denied|missing|unsupported|"
                       r"exception|warning|killed|out of memory|no such|no kernel|not a |mismatch|timeout|timed out|"
                       r"refused|incompatible|undefined|unknown|illegal|deprecated|no module)")


def lines_of(text: str) -> list[str]:
    """The cleaned lines of *text* that could carry a template (frames and the source line under them out)."""
    out, after_frame = [], False
    for raw in clean_log(text).split("\n"):
        if _FRAME.match(raw):
            after_frame = True
            continue
        if after_frame and raw.startswith((" ", "\t")):
            after_frame = False
            continue
        after_frame = False
        if not raw.strip() or _GENERIC.match(raw.strip()) or _PIP.search(raw):
            continue
        out.append(raw)
    return out


def plain_lines(text: str) -> list[str]:
    return [x.strip() for x in clean_log(text).split("\n") if x.strip()]


def overlaps(a: list[str], b_set: set[tuple[str, str, str]]) -> bool:
    return any(tuple(a[i:i + 3]) in b_set for i in range(len(a) - 2))


def triples(lines: list[str]) -> set[tuple[str, str, str]]:
    return {tuple(lines[i:i + 3]) for i in range(len(lines) - 2)}  # type: ignore[misc]


# --- building ----------------------------------------------------------------------------------------------------
def build(kb, min_words: int, errorish: bool, negatives: list[str]) -> tuple[dict, collections.Counter]:
    """template -> {"entry": id, "sources": [(test name, triples, original line)]}; and the counts of what was cut."""
    fire: dict[str, dict[str, list]] = collections.defaultdict(lambda: collections.defaultdict(list))
    quiet: set[str] = set()
    cut: collections.Counter = collections.Counter()
    for e in kb.entries:
        for t in e.tests:
            if not t.logs:
                continue
            tl = lines_of(t.logs)
            if t.expect == "fire":
                tri = triples(plain_lines(t.logs))
                for ln in tl:
                    tp = template(ln)
                    fire[tp][e.id].append((t.name, tri, ln.strip()))
            else:
                quiet.update(template(x) for x in plain_lines(t.logs))
    neg_templates = set()
    for text in negatives:
        neg_templates.update(template(x) for x in plain_lines(text))
    out = {}
    for tp, by_entry in fire.items():
        if words(tp) < min_words:
            cut["short"] += 1
        elif len(by_entry) > 1:
            cut["several entries"] += 1
        elif tp in quiet:
            cut["in a silent case"] += 1
        elif errorish and not _ERRORISH.search(tp):
            cut["not error-like"] += 1
        elif tp in neg_templates:
            cut["in a negative eval log"] += 1
        else:
            (eid, srcs), = by_entry.items()
            out[tp] = {"entry": eid, "sources": srcs}
    return out, cut


# --- simulating --------------------------------------------------------------------------------------------------
def simulate(outcomes, templates, kb, policy: str):
    by_id = {e.id: e for e in kb.entries}
    rows = []
    for o in outcomes:
        case = o.case
        fired = [d.get("id") for d in o.ranked]
        case_tri = triples(plain_lines(case.log))
        found: dict[str, tuple[str, str, str]] = {}
        for ln in plain_lines(case.log):
            tp = template(ln)
            info = templates.get(tp)
            if not info or info["entry"] in found:
                continue
            src = next((s for s in info["sources"] if not (s[1] & case_tri)), None)
            if src is None:
                continue     # learned only from a KB test copied from this case
            found[info["entry"]] = (ln, src[0], src[2])
        alone = dict(found)    # what the templates confirm by themselves, whether or not when: fired
        found = {k: v for k, v in found.items() if k not in fired}
        real = [d for d in o.ranked if not d.get("benign")]
        benign = [d for d in o.ranked if d.get("benign")]
        added = [{"id": k, "severity": "info" if by_id[k].benign else by_id[k].severity,
                  "benign": by_id[k].benign, "confidence": by_id[k].confidence * 0.5} for k in found]
        added.sort(key=lambda d: -d["confidence"])
        if policy == "below":
            new = real + [d for d in added if not d["benign"]] + benign + [d for d in added if d["benign"]]
        else:   # "conf": by confidence among the when-matches (half the entry's own)
            new = sorted(real + [d for d in added if not d["benign"]], key=lambda d: -float(d.get("confidence") or 0))
            new += benign + [d for d in added if d["benign"]]
        new_ids = [d["id"] for d in new]
        alarms = [d["id"] for d in new if str(d.get("severity")).lower() in ("error", "critical") and not d.get("benign")]
        rows.append({"case": case.path.name, "split": getattr(case, "split", ""), "expected": case.expected, "old": fired[:3],
                     "new": new_ids[:3], "added": found, "old_alarms": o.alarms, "new_alarms": alarms,
                     "guesses": o.guesses[:5], "alone": alone})
    return rows


def figures(rows):
    pos = [r for r in rows if r["expected"] != "none"]
    neg = [r for r in rows if r["expected"] == "none"]
    misses = [r for r in pos if r["old"][:1] != [r["expected"]]]
    fixed = [r for r in misses if r["new"][:1] == [r["expected"]]]
    displaced = [r for r in pos if r["old"][:1] == [r["expected"]] and r["new"][:1] != [r["expected"]]]
    wrong_new_top = [r for r in misses if r["new"][:1] != r["old"][:1] and r["new"][:1] != [r["expected"]]]
    t3_gain = [r for r in pos if r["expected"] not in r["old"][:3] and r["expected"] in r["new"][:3]]
    t3_loss = [r for r in pos if r["expected"] in r["old"][:3] and r["expected"] not in r["new"][:3]]
    new_alarm = [r for r in neg if set(r["new_alarms"]) - set(r["old_alarms"])]
    touched = [r for r in rows if r["added"]]
    added_right = sum(1 for r in pos for k in r["added"] if k == r["expected"])
    added_wrong = sum(1 for r in pos for k in r["added"] if k != r["expected"])
    alone_right = [r for r in pos if r["expected"] in r["alone"]]
    alone_wrong = sum(1 for r in pos for k in r["alone"] if k != r["expected"])
    return {"alone_cases_right": len(alone_right), "alone_wrong_confirmations": alone_wrong,
            "alone_cases_any": sum(1 for r in pos if r["alone"]),
            "positives": len(pos), "negatives": len(neg), "old_top1": len(pos) - len(misses),
            "new_top1": len(pos) - len(misses) + len(fixed) - len(displaced),
            "misses": len(misses), "misses_with_nothing_fired": sum(1 for r in misses if not r["old"]),
            "fixed": len(fixed), "displaced": len(displaced), "miss_to_other_wrong": len(wrong_new_top),
            "top3_gain": len(t3_gain), "top3_loss": len(t3_loss),
            "cases_with_template_confirmation": len(touched),
            "template_confirmations_right": added_right, "template_confirmations_wrong": added_wrong,
            "negatives_new_alarms": len(new_alarm),
            "_fixed": [r["case"] for r in fixed],
            "_misses": [(r["case"], r["expected"], r["old"], r["guesses"][:3]) for r in misses],
            "_alone_right": [(r["case"], r["alone"][r["expected"]][0][:100], r["alone"][r["expected"]][1][:60]) for r in alone_right], "_displaced": [r["case"] for r in displaced],
            "_alarm": [(r["case"], sorted(set(r["new_alarms"]) - set(r["old_alarms"]))) for r in new_alarm],
            "_wrong": [(r["case"], r["expected"], [(k, v[0][:90], v[1][:50]) for k, v in r["added"].items() if k != r["expected"]])
                       for r in pos if any(k != r["expected"] for k in r["added"])]}


def near(outcomes, kb) -> None:
    """For each top-1 miss: the log line whose template is nearest (token Jaccard) to a template of the expected
    entry's firing tests, whatever its length or distinctiveness: how far exact templates are from helping."""
    by_id = {e.id: e for e in kb.entries}
    sims = []
    for o in outcomes:
        c = o.case
        if c.negative or o.causes[:1] == [c.expected] or c.expected not in by_id:
            continue
        kt = {template(x) for t in by_id[c.expected].tests if t.expect == "fire" and t.logs for x in lines_of(t.logs)}
        best = (0.0, "", "")
        for ln in lines_of(c.log):
            a = set(template(ln).split())
            for t in kt:
                b = set(t.split())
                j = len(a & b) / len(a | b) if a | b else 0.0
                if j > best[0]:
                    best = (j, ln.strip()[:110], t[:110])
        sims.append(best[0])
        print(f"  near {c.path.name} [{c.expected}] J={best[0]:.2f}\n     log: {best[1]}\n     kb:  {best[2]}")
    if sims:
        print(f"  near: {len(sims)} misses, Jaccard >= 0.8: {sum(s >= 0.8 for s in sims)}, >= 0.6: "
              f"{sum(s >= 0.6 for s in sims)}, >= 0.4: {sum(s >= 0.4 for s in sims)}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-words", type=int, nargs="*", default=[5])
    ap.add_argument("--show", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--near", action="store_true", help="for each miss: the nearest line to the right entry's tests")
    ap.add_argument("--cases", nargs="*", default=[], help="case folders to score instead of tuning + retired")
    args = ap.parse_args()
    kb = load_kb(ROOT / "kb")
    tuning = eval_kb.load_cases(eval_kb.TUNING_DIR)
    retired_dir = ROOT / "tests" / "eval" / "retired"
    if retired_dir.is_dir():
        for d in sorted(retired_dir.glob("batch*/logs")):
            tuning += eval_kb.load_cases(d)
    # the negative filter only ever sees the tuning side of the tree the KB comes from
    negatives = [c.log for c in tuning if c.negative]
    if args.cases:
        # a historic check: a batch of logs, scored with the KB and matcher of the commit it was frozen at
        cases = [c for d in args.cases for c in eval_kb.load_cases(Path(d))]
    else:
        cases = tuning
    assert not any("heldout" in c.path.resolve().parts for c in cases), "never the held-out split"
    outcomes = eval_kb.evaluate(cases)
    report = {}
    for mw in args.min_words:
        for errorish in (False, True):
            for negf in (False, True):
                templates, cut = build(kb, mw, errorish, negatives if negf else [])
                for policy in ("below", "conf"):
                    key = f"min_words={mw} errorish={errorish} neg_filter={negf} policy={policy}"
                    f = figures(simulate(outcomes, templates, kb, policy))
                    f["templates"] = len(templates)
                    f["entries_with_templates"] = len({v["entry"] for v in templates.values()})
                    f["cut"] = dict(cut)
                    report[key] = f
                    if not args.json:
                        print(key)
                        print("  " + ", ".join(f"{k}={v}" for k, v in f.items() if not k.startswith("_")))
                        if args.show:
                            for k in ("_fixed", "_displaced", "_alarm", "_wrong", "_misses", "_alone_right"):
                                print(f"  {k[1:]}: {f[k][:args.show]}")
    if args.near:
        near(outcomes, kb)
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
