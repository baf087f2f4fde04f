"""The scenario suite: whole reports kept as data (tests/scenarios/<slug>.yaml), each with the first cause, the
verdict and the exit status it must get.  Run by tests/test_scenarios.py and by ``python -m diagnostics kb test``.

A scenario (shared decision 1)::

    name: str
    note: str                        # where the case comes from (a real thread, a machine) and what it shows
    facts: {fact: value}             # optional
    logs: [{name, text | file}]      # optional; pasted logs
    dumps: [{name, text | file}]     # optional; parsed like `match --dump` (kind auto-detected)
    probes: [{id, status, summary?, error?, logs?, signal?, output_tail?}]   # optional: a live-shaped run
    expect:
      first: <kb id> | null          # the first confirmed cause (null: none)
      verdict: healthy|problems|unexplained|incomplete
      exit: 0|1|2
      present: [ids]                 # optional: must be among the diagnoses
      absent: [ids]                  # optional: must not fire

``file`` is a path relative to the repository root (a recorded dump under tests/fixtures, say), read instead of
``text``.  Unknown keys are errors (a typo must not make a scenario pass); every known key may be left out.

With ``probes`` the scenario is a live run: the facts are given to the probes that declare them (FACTS), a probe
that crashed or timed out keeps none, and the report goes through the same diagnosis as ``run``.  Without, it is
pasted input, diagnosed as ``match`` does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SCENARIO_DIR = ROOT / "tests" / "scenarios"
TOP_KEYS = {"name", "note", "facts", "logs", "dumps", "probes", "expect"}
EXPECT_KEYS = {"first", "verdict", "exit", "present", "absent"}
TEXT_KEYS = {"name", "text", "file"}
PROBE_KEYS = {"id", "status", "summary", "error", "logs", "signal", "output_tail", "title", "duration_s"}
STATUSES = {"ok", "warn", "fail", "timeout", "crashed", "skipped"}
VERDICTS = {"healthy", "problems", "unexplained", "incomplete"}


@dataclass
class Scenario:
    slug: str
    path: Path
    name: str
    note: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)
    dumps: list[tuple[str, str]] = field(default_factory=list)
    probes: list[dict[str, Any]] | None = None
    expect: dict[str, Any] = field(default_factory=dict)


class ScenarioError(ValueError):
    pass


def _texts(items: Any, where: str) -> list[tuple[str, str]]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise ScenarioError(f"{where}: must be a list of {{name, text}}")
    out = []
    for i, it in enumerate(items):
        if not isinstance(it, dict) or set(it) - TEXT_KEYS or "name" not in it or ("text" in it) == ("file" in it):
            raise ScenarioError(f"{where}[{i}]: needs name and exactly one of text, file (keys: {sorted(TEXT_KEYS)})")
        text = it.get("text")
        if "file" in it:
            p = (ROOT / str(it["file"])).resolve()
            if ROOT not in p.parents:
                raise ScenarioError(f"{where}[{i}]: file must be inside the repository")
            text = p.read_text(encoding="utf-8", errors="replace")
        out.append((str(it["name"]), str(text)))
    return out


def parse(data: Any, path: Path) -> Scenario:
    where = path.name
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: a scenario is a mapping")
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(TOP_KEYS)}")
    if not isinstance(data.get("name"), str) or not isinstance(data.get("expect"), dict):
        raise ScenarioError(f"{where}: name and expect are required")
    exp = data["expect"]
    if set(exp) - EXPECT_KEYS:
        raise ScenarioError(f"{where}: unknown expect key(s) {sorted(set(exp) - EXPECT_KEYS)}")
    if exp.get("verdict") is not None and exp["verdict"] not in VERDICTS:
        raise ScenarioError(f"{where}: expect.verdict must be one of {sorted(VERDICTS)}")
    if exp.get("exit") is not None and exp["exit"] not in (0, 1, 2):
        raise ScenarioError(f"{where}: expect.exit must be 0, 1 or 2")
    facts = data.get("facts") or {}
    if not isinstance(facts, dict):
        raise ScenarioError(f"{where}: facts must be a mapping")
    from .facts import check_value

    bad = [err for k, v in facts.items() if (err := check_value(k, v))]
    if bad:
        raise ScenarioError(f"{where}: " + "; ".join(bad))
    probes = data.get("probes")
    if probes is not None:
        if not isinstance(probes, list):
            raise ScenarioError(f"{where}: probes must be a list")
        for i, p in enumerate(probes):
            if not isinstance(p, dict) or set(p) - PROBE_KEYS or "id" not in p or p.get("status") not in STATUSES:
                raise ScenarioError(f"{where}: probes[{i}] needs id and a status in {sorted(STATUSES)} "
                                    f"(keys: {sorted(PROBE_KEYS)})")
    return Scenario(slug=path.stem, path=path, name=data["name"], note=str(data.get("note") or ""), facts=facts,
                    logs=_texts(data.get("logs"), f"{where}: logs"), dumps=_texts(data.get("dumps"), f"{where}: dumps"),
                    probes=probes, expect=exp)


def load(directory: Path | None = None, only: str | None = None) -> list[Scenario]:
    d = Path(directory or SCENARIO_DIR)
    rx = re.compile(only) if only else None
    out = []
    for p in sorted(d.glob("*.yaml")):
        if rx and not rx.search(p.stem):
            continue
        out.append(parse(yaml.safe_load(p.read_text(encoding="utf-8")), p))
    return out


def _live_probes(sc: Scenario) -> list[dict[str, Any]]:
    """Probe results as the runner makes them: each fact goes to the first listed probe that declares it."""
    from .probes import PROBES
    from .probes.base import declared

    specs = {p.id: p for p in PROBES}
    probes = []
    for raw in sc.probes or []:
        spec = specs.get(raw["id"])
        logs = raw.get("logs") or []
        if isinstance(logs, str):
            logs = [{"name": "output", "text": logs}]
        probes.append({"id": raw["id"], "title": raw.get("title") or (spec.title if spec else raw["id"]),
                       "status": raw["status"], "summary": raw.get("summary"), "error": raw.get("error"),
                       "duration_s": raw.get("duration_s", 0.0), "facts": {}, "evidence": [], "logs": list(logs),
                       "notes": [], "provides": list(spec.provides) if spec else [], "signal": raw.get("signal"),
                       "output_tail": raw.get("output_tail") or ""})
    for k, v in sc.facts.items():
        for p in probes:
            if p["status"] not in ("crashed", "timeout") and declared(k, tuple(p["provides"])):
                p["facts"][k] = v
                break
    return probes


def run(sc: Scenario, kb_dir: str | None = None) -> dict[str, Any]:
    """The report the scenario's input gets."""
    from . import service

    if sc.probes is None:
        return service.diagnose_text(logs=sc.logs, dumps=sc.dumps, facts=sc.facts, kb_dir=kb_dir)
    report = service.new_report("live")
    report["probes"] = _live_probes(sc)
    dump_facts, parsed = service.parse_dumps(sc.dumps)
    facts = dict(dump_facts)
    facts.update(service.merge_probe_facts(report["probes"]))
    for k, v in sc.facts.items():  # facts no listed probe declares (derived ones, a crashed probe's are dropped)
        owner = [p for p in report["probes"] if k in p["facts"]]
        crashed = [p for p in report["probes"] if p["status"] in ("crashed", "timeout") and k in p["provides"]]
        if not owner and not crashed:
            facts.setdefault(k, v)
    report["facts"] = facts
    report["parsed"] = parsed
    report["logs"] = [{"name": n, "text": t} for n, t in sc.logs]
    report["dumps"] = [{"name": n, "text": t} for n, t in sc.dumps]
    return service.diagnose(report, kb_dir)


def check(sc: Scenario, report: dict[str, Any]) -> list[str]:
    """What differs from the expectation (empty: the scenario passes)."""
    from .verdicts import counts, exit_status

    exp = sc.expect
    ids = [d["id"] for d in report.get("diagnoses") or []]
    first = next((d["id"] for d in report.get("diagnoses") or [] if counts(d)), None)
    errors = []
    if "first" in exp and exp["first"] != first:
        errors.append(f"first cause: expected {exp['first']}, got {first} (all: {', '.join(ids) or 'none'})")
    if exp.get("verdict") and exp["verdict"] != report.get("verdict"):
        errors.append(f"verdict: expected {exp['verdict']}, got {report.get('verdict')}")
    if exp.get("exit") is not None and exp["exit"] != exit_status(report):
        errors.append(f"exit: expected {exp['exit']}, got {exit_status(report)}")
    for i in exp.get("present") or []:
        if i not in ids:
            errors.append(f"{i} should be among the diagnoses (got: {', '.join(ids) or 'none'})")
    for i in exp.get("absent") or []:
        if i in ids:
            errors.append(f"{i} must not fire")
    return errors


def run_all(directory: Path | None = None, only: str | None = None, kb_dir: str | None = None) -> list[dict[str, Any]]:
    """One row per scenario: slug, path, name, ok, errors (a scenario that cannot be read is a failed row)."""
    rows = []
    d = Path(directory or SCENARIO_DIR)
    if not d.is_dir():
        return rows
    rx = re.compile(only) if only else None
    for p in sorted(d.glob("*.yaml")):
        if rx and not rx.search(p.stem):
            continue
        try:
            sc = parse(yaml.safe_load(p.read_text(encoding="utf-8")), p)
            errs = check(sc, run(sc, kb_dir))
            rows.append({"slug": sc.slug, "path": str(p), "name": sc.name, "ok": not errs, "errors": errs})
        except (ScenarioError, yaml.YAMLError, OSError) as exc:
            rows.append({"slug": p.stem, "path": str(p), "name": p.stem, "ok": False, "errors": [str(exc)]})
    return rows
