"""``kb lint`` checks beyond the schema: dangerous fix steps need a caveat, and advice has a date.

Dangerous steps.  The rules are data (``diagnostics/kb_dangerous.yaml``): RE2 patterns for steps that lower
security or isolation, delete user data or replace the installed torch.  A fix is split into its numbered
steps (``1. ...``; text before the first number is a step of its own); a step that matches a rule must carry
a caveat line, one that starts (after indentation and an optional ``> ``) with ``**Caution:**``.  Missing in the
English fix (or a vendor variant's fix) it is an error; missing in a translation it is a warning.  A dangerous
first step of a fix with several steps is a warning: the safer alternative goes first.  A rule may name the
``vendors`` whose machines it concerns (a PyPI vLLM is the CUDA build, dangerous only on AMD): it is then checked in
the base fix, its translations and those vendors' variant fixes, not in another vendor's variant.

Dates.  ``checked: {date, versions}`` records when the fix was last checked against sources and against which
versions.  Lint warns when the date is older than :data:`MAX_AGE_DAYS`, lies in the future, or when a version
checked against is older (major.minor) than the current one (:func:`current_versions`).
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import yaml

RULES_FILE = Path(__file__).resolve().parent / "kb_dangerous.yaml"
MAX_AGE_DAYS = 183  # six months

# The current release of each component advice is checked against.  :func:`current_versions` takes, per component,
# the newer of this table and the support matrix's newest wheels (helper "matrix", SHARED_DECISIONS 2): the matrix
# only lists wheel folders whose arch lists were established, so a release it has no row for yet (torch 2.15, ROCm
# 10.0) is still "current" here and entries checked against an older one are flagged.
# Sources (2026-12-02, docs/KB_AUDIT.md "Audit part 6"):
#   torch 2.15: `pip index versions torch` lists 2.15.0 as the newest release (RELEASE.md: released 28 Oct 2026).
#   rocm 10.0: ROCm's docs call 10.0.0 "the latest production release" (transition guide,
#     https://rocm.docs.amd.com/en/latest/about/transition-guide-TheRock.html; docs-10.0.0 pages "ROCm Core SDK
#     10.0.0"); TheRock's release/therock-10.0 branch carries version.json 10.0.0.
#   transformers 5.x: the newest major on PyPI.
# ROCm Core SDK 10.1.0: released 2026-10-05 (https://github.com/ROCm/TheRock/releases, release notes at
# https://rocm.docs.amd.com/en/docs-10.1.0/about/release-notes.html); torch 2.15 on PyPI (docs/KB_AUDIT.md, part 7)
CURRENT_VERSIONS: dict[str, str] = {"rocm": "10.1", "torch": "2.15", "transformers": "5.0"}

CAVEAT_RE = re.compile(r"^\s*(?:>\s*)?\*\*(?:Caution|注意)(?::|：)\*\*", re.M)
CAVEAT_RE_EN = re.compile(r"^\s*(?:>\s*)?\*\*Caution:\*\*", re.M)
STEP_RE = re.compile(r"^\s{0,3}\d+\.\s", re.M)


def _caveat_text(line: str) -> str:
    return " ".join(CAVEAT_RE.sub("", line, count=1).split())


def _repeated_caveats(entry: Any, key: str, steps: list[tuple[int, str]], english: bool) -> list[Finding]:
    """The same caveat in two consecutive steps says it twice where one step should carry it: an error in English,
    a warning in a translation.  Merge the steps, or keep the caveat beside the step whose action it concerns."""
    out: list[Finding] = []
    prev: set[str] = set()
    for ln, step in steps:
        here = {}
        for i, line in enumerate(step.split("\n")):
            if CAVEAT_RE.match(line):
                here.setdefault(_caveat_text(line), i)
        for text, i in here.items():
            if text and text in prev:
                first = getattr(entry, "text_lines", {}).get(key, 0)
                out.append(Finding(entry.path, (first + ln + i) if first else 1, 1, "error" if english else "warning",
                                   f"{key}: this step repeats the previous step's caveat word for word; say it once, "
                                   f"beside the step it concerns (merge the steps if both need it)"))
        prev = set(here)
    return out


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: Any
    unless: Any
    why: str
    vendors: tuple[str, ...] = ()


@dataclass
class Finding:
    path: str
    line: int
    col: int
    level: str      # error | warning
    message: str

    def __str__(self) -> str:
        tag = "" if self.level == "error" else "warning: "
        return f"{self.path}:{self.line}:{self.col}: {tag}{self.message}"


@lru_cache(maxsize=4)
def load_rules(path: str | None = None) -> tuple[Rule, ...]:
    from .kb import compile_pattern

    data = yaml.safe_load(Path(path or RULES_FILE).read_text(encoding="utf-8"))
    out = []
    for r in data["rules"]:
        out.append(Rule(r["id"], compile_pattern(r["pattern"]),
                        compile_pattern(r["unless"]) if r.get("unless") else None, r["why"],
                        tuple(r.get("vendors") or ())))
    return tuple(out)


def current_versions(kb_dir: str | None = None) -> dict[str, str]:
    """Current versions: per component the newer of :data:`CURRENT_VERSIONS` and the support matrix's newest wheels
    (helper "matrix": ``diagnostics/support.py``, ``kb/support/gpu-matrix.yaml``) -- the newest torch release and the
    newest ROCm and CUDA wheel folders it lists.  The table is a floor: a matrix that has no row yet for a newer
    release never makes an older one "current"."""
    from . import support

    out = dict(CURRENT_VERSIONS)
    try:
        from .kb import parse_version

        m = support.get_matrix(kb_dir)
        newest: dict[str, tuple[int, ...]] = {}
        for w in getattr(m, "wheels", None) or []:
            for name, v in (("torch", getattr(w, "torch", "")),
                            (getattr(w, "stack", ""), getattr(w, "stack_version", ""))):
                pv = parse_version(str(v)) if name in ("torch", "rocm", "cuda") and v else None
                if pv and pv[:2] > newest.get(name, ()):
                    newest[name] = pv[:2]
        for name, pv in newest.items():
            table = parse_version(out[name]) if name in out else None
            if not table or pv > table[:2]:
                out[name] = ".".join(str(x) for x in pv)
    except Exception:  # noqa: BLE001 - a broken matrix is reported by its own lint; keep the table here
        pass
    return out


def split_steps(text: str) -> list[tuple[int, str]]:
    """``(first line index, text)`` of each step of a fix; text before step 1 is its own step."""
    starts = [m.start() for m in STEP_RE.finditer(text)]
    if not starts or starts[0] != 0:
        starts = [0] + starts
    out = []
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else len(text)
        chunk = text[s:e]
        if chunk.strip():
            out.append((text.count("\n", 0, s), chunk))
    return out


def dangerous_matches(step: str, rules: Iterable[Rule]) -> list[tuple[Rule, int]]:
    """Rules the step matches, with the offset of the match (a caveat line is not searched)."""
    body = "\n".join("" if CAVEAT_RE.match(ln) else ln for ln in step.split("\n"))
    found = []
    for r in rules:
        m = r.pattern.search(body)
        if m and not (r.unless and r.unless.search(body)):
            found.append((r, m.start()))
    return found


def _pos(entry: Any, key: str, step_line: int, step: str, offset: int) -> tuple[int, int]:
    first = getattr(entry, "text_lines", {}).get(key, 0)
    if not first:
        return 1, 1
    line_in_step = step.count("\n", 0, offset)
    line_start = step.rfind("\n", 0, offset) + 1
    raw = Path(entry.path).read_text(encoding="utf-8").split("\n") if Path(entry.path).is_file() else []
    lineno = first + step_line + line_in_step
    indent = 0
    if 0 < lineno <= len(raw):
        indent = len(raw[lineno - 1]) - len(raw[lineno - 1].lstrip(" "))
    return lineno, indent + (offset - line_start) + 1


def caveat_findings(entry: Any, rules: Iterable[Rule] | None = None) -> list[Finding]:
    rules = tuple(rules if rules is not None else load_rules())
    texts: list[tuple[str, str, bool, str]] = [("fix", entry.fix, True, "")]
    for vendor, var in sorted((getattr(entry, "variants", None) or {}).items()):
        if isinstance(var, dict) and var.get("fix"):
            texts.append((f"variants.{vendor}.fix", var["fix"], True, vendor))
    for lang, tr in sorted((getattr(entry, "translations", None) or {}).items()):
        if isinstance(tr, dict) and isinstance(tr.get("fix"), str):
            texts.append((f"translations.{lang}.fix", tr["fix"], False, ""))
    out: list[Finding] = []
    for key, text, english, vendor in texts:
        steps = split_steps(text)
        numbered = [s for s in steps if STEP_RE.match(s[1])]
        out.extend(_repeated_caveats(entry, key, steps, english))
        here = [r for r in rules if not (vendor and r.vendors and vendor not in r.vendors)]
        for idx, (ln, step) in enumerate(steps):
            hits = dangerous_matches(step, here)
            if not hits:
                continue
            marker = CAVEAT_RE_EN if english else CAVEAT_RE
            rule, off = hits[0]
            line, col = _pos(entry, key, ln, step, off)
            ids = ", ".join(r.id for r, _ in hits)
            if not marker.search(step):
                out.append(Finding(
                    entry.path, line, col, "error" if english else "warning",
                    f"{key}: dangerous step ({ids}: {rule.why}) has no caveat; add a line starting "
                    f"'**Caution:**' (in a translation also '**注意：**') to this step saying what it costs and the safer alternative"))
            elif english and len(numbered) > 1 and numbered and numbered[0][0] == ln:
                out.append(Finding(entry.path, line, col, "warning",
                                   f"{key}: the first step is dangerous ({ids}); put the safer alternative first"))
    return out


def date_findings(entry: Any, today: datetime.date, current: dict[str, str]) -> list[Finding]:
    from .kb import parse_version

    chk = getattr(entry, "checked", None)
    if not chk:
        return []
    out: list[Finding] = []
    d = chk["date"]
    age = (today - d).days
    if age > MAX_AGE_DAYS:
        out.append(Finding(entry.path, 1, 1, "warning",
                           f"checked {d.isoformat()}, {age} days ago (over six months): re-check the fix against "
                           f"current sources and update checked:"))
    elif age < 0:
        out.append(Finding(entry.path, 1, 1, "warning", f"checked.date {d.isoformat()} lies in the future"))
    for name, v in sorted(chk["versions"].items()):
        cur = current.get(name)
        pv, pc = parse_version(v), parse_version(cur) if cur else None
        if pv and pc and pv[:2] < pc[:2]:
            out.append(Finding(entry.path, 1, 1, "warning",
                               f"checked against {name} {v}, but the current {name} is {cur}: re-check the fix"))
    return out


def lint(kb: Any, today: datetime.date | None = None, current: dict[str, str] | None = None) -> list[Finding]:
    """Caveat and date findings for every loaded entry (errors and warnings; schema errors are ``kb.errors``)."""
    today = today or datetime.date.today()
    current = current if current is not None else current_versions(getattr(kb, "directory", None) or None)
    rules = load_rules()
    try:
        from . import support

        matrix = support.get_matrix(getattr(kb, "directory", None) or None)
    except Exception:  # noqa: BLE001 - a broken matrix is reported by its own lint
        matrix = None
    out: list[Finding] = []
    for e in sorted(kb.entries, key=lambda e: e.id):
        out.extend(caveat_findings(e, rules))
        out.extend(date_findings(e, today, current))
        if matrix is not None:
            out.extend(matrix_findings(e, matrix))
    return out


# A sentence that says no wheel carries a target.  Prose must not state what the support matrix computes: when a
# wheel in the matrix runs the target, such a sentence contradicts the install command the same report shows
# (issue 15: gfx1103 prose kept saying "no official wheel carries it" after torch 2.13 listed it).  A sentence
# that limits itself in time ("older wheels", "before", "until", "some releases") is not a claim about today.
NO_WHEEL_RE = re.compile(
    r"(?i)\bno\s+(?:official\s+|current\s+|prebuilt\s+)?(?:PyTorch\s+|ROCm\s+|torch\s+)?(?:wheels?|builds?|release)\b"
    r"|\bwheels?\s+(?:do|does|did)\s+not\s+(?:yet\s+)?(?:ship|carry|include|contain|list)"
    r"|\bnot\s+in\s+any\s+(?:official\s+)?(?:PyTorch\s+)?wheel")
NO_WHEEL_ZH_RE = re.compile(r"没有(?:任何)?官方\s*wheel|wheel\s*(?:仍未|没有|不)(?:带上|包含|提供)")
TIME_LIMITED_RE = re.compile(r"(?i)\b(?:older|old|before|until|earlier|previous|some releases)\b|旧|之前|早于|以前")
GFX_RE = re.compile(r"\bgfx[0-9]{3,4}[0-9a-f]?\b")
_SENT_RE = re.compile(r"(?<=[.;!?])\s+|(?<=[。；！？])|\n\s*\n|\n\s*\d+\.\s")


def _sentences(text: str) -> list[str]:
    return [" ".join(s.split()) for s in _SENT_RE.split(text or "") if s.strip()]


def matrix_findings(entry: Any, matrix: Any) -> list[Finding]:
    """Errors for prose that says no wheel carries a target some wheel of the support matrix runs (``Wheel.runs``:
    listed in its arch list and its libraries bundled).  Placeholder text (``{gfx}``) is never judged."""
    wheels = [w for w in (getattr(matrix, "wheels", None) or []) if getattr(w, "archs", None)]
    if not wheels:
        return []
    texts: list[tuple[str, str, Any]] = []
    for f in ("symptoms", "cause", "fix"):
        texts.append((f, getattr(entry, f, "") or "", NO_WHEEL_RE))
    for vendor, var in sorted((getattr(entry, "variants", None) or {}).items()):
        for f in ("cause", "fix"):
            if isinstance(var, dict) and isinstance(var.get(f), str):
                texts.append((f"variants.{vendor}.{f}", var[f], NO_WHEEL_RE))
    for lang, tr in sorted((getattr(entry, "translations", None) or {}).items()):
        for f in ("symptoms", "cause", "fix"):
            if isinstance(tr, dict) and isinstance(tr.get(f), str):
                texts.append((f"translations.{lang}.{f}", tr[f], NO_WHEEL_ZH_RE if lang == "zh" else NO_WHEEL_RE))
    out: list[Finding] = []
    for key, text, neg in texts:
        for sent in _sentences(text):
            if not neg.search(sent) or TIME_LIMITED_RE.search(sent):
                continue
            for gfx in dict.fromkeys(GFX_RE.findall(sent)):
                carrying = [w for w in wheels if w.runs(gfx)]
                if carrying:
                    w = max(carrying, key=lambda w: tuple(int(x) for x in w.torch.split(".")[:3] if x.isdigit()))
                    out.append(Finding(entry.path, getattr(entry, "text_lines", {}).get(key.split(".")[-1], 0) or 1, 1,
                                       "error", f"{key}: says no wheel carries {gfx}, but the support matrix has "
                                       f"torch {w.torch} in {w.folder} running it; let {{torch_install}} say which "
                                       f"build carries a target, or limit the sentence in time (\"older wheels\")"))
    return out


def undated(kb: Any) -> list[str]:
    return sorted(e.id for e in kb.entries if not getattr(e, "checked", None))


def checked_sort_key(entry: Any) -> tuple:
    """Oldest first; never checked sorts before everything."""
    chk = getattr(entry, "checked", None)
    return (0, datetime.date.min, entry.id) if not chk else (1, chk["date"], entry.id)
