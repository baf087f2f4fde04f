"""The matcher: three-valued logic, evidence, ranking of causes above consequences and benign noise."""
import textwrap

import pytest

from diagnostics.kb import load_kb
from diagnostics.matcher import Matcher


def entry(eid, when, severity="error", extra=""):
    lines = [f"id: {eid}", f"title: Title of {eid}", f"severity: {severity}"]
    lines += [x for x in extra.split("\n") if x]
    lines += ["when:"] + ["  " + x for x in when.split("\n")]
    lines += ["symptoms: s", "cause: c", f'fix: "1. fix {eid}"', f"links: [https://example.org/{eid}]",
              "tests:", '  - {name: a, logs: "zzz-never", expect: silent}', '  - {name: b, logs: "zzz-never", expect: fire}']
    return "\n".join(lines) + "\n"


@pytest.fixture
def kb(tmp_path):
    files = {
        "no-binary": entry("no-binary", "any:\n  - log: 'hipErrorNoBinaryForGpu'\n  - {fact: torch.arch_supported, eq: false}",
                           severity="critical", extra="supersedes: [segfault]\nconfidence: 0.9"),
        "segfault": entry("segfault", "log: '(?i)segmentation fault'", severity="critical"),
        "cpu-wheel": entry("cpu-wheel", "all:\n  - {fact: torch.build, eq: cpu}\n  - {fact: kfd.present, eq: true}"),
        "not-cpu": entry("not-cpu", "not: {fact: torch.build, eq: cpu}", severity="warning"),
        "old-rocm": entry("old-rocm", "{fact: rocm.version, version_lt: '6.0'}", severity="warning"),
        "apu-unless-works": entry("apu-unless-works", "all:\n  - {fact: gpu.integrated_count, ge: 1}\n"
                                  "  - any: [{fact: torch.smoke_ok, known: false}, {fact: torch.smoke_ok, eq: false}]",
                                  severity="warning"),
        "noise": entry("noise", "log: 'MIOpen\\(HIP\\): Warning \\[SQLiteBase\\] Missing system database file'",
                       severity="info", extra="benign: true\nconfidence: 0.99"),
    }
    for k, v in files.items():
        (tmp_path / f"{k}.yaml").write_text(v)
    kb = load_kb(tmp_path)
    assert not kb.errors, kb.errors
    return kb


def ids(res):
    return [d["id"] for d in res["diagnoses"]]


def test_absent_fact_is_unknown_not_false(kb):
    m = Matcher(kb)
    # `not (torch.build == cpu)` must not fire just because torch.build is unknown
    assert "not-cpu" not in ids(m.match({}, []))
    assert "not-cpu" in ids(m.match({"torch.build": "rocm"}, []))
    # all(cpu, kfd.present) with kfd unknown: not fired; reported as not ruled out when a probe failed
    res = m.match({"torch.build": "cpu"}, [], unknown_facts={"kfd.present"})
    assert "cpu-wheel" not in ids(res)
    assert [d["id"] for d in res["not_ruled_out"]] == ["cpu-wheel"]
    assert "kfd.present" in res["not_ruled_out"][0]["reason"]


def test_known_is_two_valued_unless_shown_otherwise(kb):
    """`known: false` is true for an absent fact (never unknown), so "unless torch was shown to work" reads as such."""
    m = Matcher(kb)
    assert "apu-unless-works" in ids(m.match({"gpu.integrated_count": 1}, []))          # a pasted rocminfo
    assert "apu-unless-works" in ids(m.match({"gpu.integrated_count": 1, "torch.smoke_ok": False}, []))
    assert "apu-unless-works" not in ids(m.match({"gpu.integrated_count": 1, "torch.smoke_ok": True}, []))
    res = m.match({"torch.smoke_ok": True}, [], unknown_facts={"gpu.integrated_count"})
    assert "apu-unless-works" not in [d["id"] for d in res["not_ruled_out"]]  # false already: nothing to rule out


def test_known_takes_only_true_or_false(tmp_path):
    (tmp_path / "bad.yaml").write_text(entry("bad", "{fact: torch.smoke_ok, known: maybe}"))
    kb = load_kb(tmp_path)
    assert kb.errors and "'known' takes true or false" in str(kb.errors[0])


def test_evidence_has_log_lines_and_facts(kb):
    log = "loading\n\x1b[31mhipErrorNoBinaryForGpu: Unable to find code object\x1b[0m\r\nAborted (core dumped)\n"
    res = Matcher(kb).match({"torch.build": "cpu", "kfd.present": True}, [("app.log", log)],
                            fact_sources={"torch.build": "probe:torch"})
    d = {x["id"]: x for x in res["diagnoses"]}
    ev = d["no-binary"]["evidence"][0]
    assert ev["source"] == "app.log" and ev["line"] == 2 and ev["excerpt"].startswith("hipErrorNoBinaryForGpu")
    assert {"source": "probe:torch", "excerpt": "torch.build = cpu", "kind": "fact", "fact": "torch.build"} in d["cpu-wheel"]["evidence"]


def test_root_cause_ranks_above_its_consequence_and_benign_last(kb):
    log = ("MIOpen(HIP): Warning [SQLiteBase] Missing system database file: gfx1030_30.kdb\n"
           "Segmentation fault (core dumped)\n"
           "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n")
    res = Matcher(kb).match({}, [("log", log)])
    order = ids(res)
    assert order[0] == "no-binary"
    assert order.index("segfault") > order.index("no-binary")
    assert order[-1] == "noise"
    seg = next(d for d in res["diagnoses"] if d["id"] == "segfault")
    assert seg["consequence_of"] == ["no-binary"]
    assert res["diagnoses"][-1]["severity"] == "info" and res["diagnoses"][-1]["benign"]


def test_version_comparison_ignores_local_part(kb):
    m = Matcher(kb)
    assert "old-rocm" in ids(m.match({"rocm.version": "5.7.1"}, []))
    assert "old-rocm" not in ids(m.match({"rocm.version": "6.2.41133-abc"}, []))
    assert "old-rocm" not in ids(m.match({"rocm.version": "garbage"}, []))


def test_binary_and_huge_lines_do_not_break_matching(kb):
    junk = bytes(range(256)).decode("latin-1") * 1000
    line = "x" * 2_000_000 + " hipErrorNoBinaryForGpu " + "y" * 100
    res = Matcher(kb).match({}, [("junk", junk), ("long", line)])
    d = next(d for d in res["diagnoses"] if d["id"] == "no-binary")
    assert len(d["evidence"][0]["excerpt"]) < 1000


def test_set_scan_agrees_with_pattern_by_pattern_search():
    """The one-pass RE2 set must find exactly what searching each pattern alone finds (on real logs)."""
    from pathlib import Path

    import yaml

    from diagnostics.kb import load_kb as load

    m = Matcher(load())
    texts = [t.logs for e in m.kb.entries for t in e.tests if t.logs]
    for p in sorted(Path(__file__).parent.glob("eval/tuning/*.yaml")):
        texts.append(str(yaml.safe_load(p.read_text()).get("log", "")))
    assert len(texts) > 50
    for t in texts:
        assert m.scan._candidates(t) == m.scan.candidates_slow(t)


def test_a_specific_signature_ranks_above_a_generic_one_of_equal_confidence(tmp_path):
    """Equal confidence: the entry whose matched pattern demands more fixed text comes first, whatever the ids'
    alphabetical order; and evidence from a fact and a log together comes before a log alone."""
    files = {
        "a-generic": entry("a-generic", "log: '(?i)\\bHIP error\\b'", extra="confidence: 0.8"),
        "z-specific": entry("z-specific", "log: 'hipErrorNoBinaryForGpu: Unable to find code object'",
                            extra="confidence: 0.8"),
        "b-log-only": entry("b-log-only", "log: 'Segmentation fault \\(core dumped\\) in libamdhip64'",
                            extra="confidence: 0.85"),
        "y-fact-and-log": entry("y-fact-and-log", "all:\n  - {fact: torch.build, eq: rocm}\n  - log: 'fault'",
                                extra="confidence: 0.8"),
    }
    for k, v in files.items():
        (tmp_path / f"{k}.yaml").write_text(v)
    kb = load_kb(tmp_path)
    assert not kb.errors, kb.errors
    log = "RuntimeError: HIP error: hipErrorNoBinaryForGpu: Unable to find code object for all current devices\n"
    assert ids(Matcher(kb).match({}, [("log", log)])) == ["z-specific", "a-generic"]
    # both kinds of evidence (confidence 0.8 + 0.05) tie with a long log-only pattern at 0.85: fact+log first
    log = "Segmentation fault (core dumped) in libamdhip64.so\n"
    assert ids(Matcher(kb).match({"torch.build": "rocm"}, [("log", log)]))[:2] == ["y-fact-and-log", "b-log-only"]


# --- kb test with promtool's rigour -------------------------------------------------------------------------

def _one_entry_kb(tmp_path, when, cases):
    from diagnostics.matcher import run_entry_tests

    text = "\n".join([
        "id: strict", "title: t", "severity: error", "when:"] + ["  " + x for x in when.split("\n")] + [
        "symptoms: s", "cause: c", 'fix: "1. f"', "links: [https://example.org/x]", "tests:"] + cases) + "\n"
    (tmp_path / "strict.yaml").write_text(text)
    kb = load_kb(tmp_path)
    assert not kb.errors, kb.errors
    return {r["case"]: r for r in run_entry_tests(kb)}


def test_silent_means_false_and_unknown_must_be_said(tmp_path):
    rows = _one_entry_kb(tmp_path, "{fact: torch.build, eq: cpu}", [
        "  - {name: fires, facts: {torch.build: cpu}, expect: fire}",
        "  - {name: is false, facts: {torch.build: rocm}, expect: silent}",
        "  - {name: no facts but called silent, logs: 'anything', expect: silent}",
        "  - {name: no facts and said so, logs: 'anything', expect: unknown}",
    ])
    assert rows["fires"]["ok"] and rows["is false"]["ok"] and rows["no facts and said so"]["ok"]
    bad = rows["no facts but called silent"]
    assert not bad["ok"] and bad["got"] == "unknown" and bad["unknown"] == ["torch.build"]


def test_cases_run_through_the_derived_facts_of_a_live_run(tmp_path):
    rows = _one_entry_kb(tmp_path, "{fact: torch.arch_supported, eq: false}", [
        "  - name: derived",
        "    facts: {torch.build: rocm, gpu.gfx_targets: [gfx1031], torch.arch_list: [gfx1030, gfx1100]}",
        "    expect: fire",
        "  - name: derived true",
        "    facts: {torch.build: rocm, gpu.gfx_targets: [gfx1100], torch.arch_list: [gfx1030, gfx1100]}",
        "    expect: silent",
    ])
    assert rows["derived"]["ok"] and rows["derived true"]["ok"], rows


def test_an_error_text_is_empty_once_its_step_succeeded():
    from diagnostics.derive import derive

    assert derive({"torch.smoke_ok": True})["torch.smoke_error"] == ""
    assert derive({"torch.smoke_ok": False})["torch.import_error"] == ""     # the smoke test ran: torch imported
    assert "torch.smoke_error" not in derive({"torch.smoke_ok": False})
    assert derive({"gen.ran": True})["gen.error"] == ""
    assert "gen.error" not in derive({"gen.ran": False})
    assert "torch.import_error" not in derive({"torch.installed": True})   # installed is not imported


def test_whole_kb_expectations(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from diagnostics.matcher import run_expectations

    (tmp_path / "no-binary.yaml").write_text(
        entry("no-binary", "log: 'hipErrorNoBinaryForGpu'", severity="critical"))
    (tmp_path / "segfault.yaml").write_text(entry("segfault", "log: '(?i)segmentation fault'"))
    (tmp_path / "expectations").mkdir()
    (tmp_path / "expectations" / "a.yaml").write_text(
        "- {name: first ok, source: 'https://example.org/1', logs: 'hipErrorNoBinaryForGpu', first: no-binary}\n"
        "- {name: must not fire, source: 'https://example.org/2', logs: 'Segmentation fault', absent: [segfault]}\n"
        "- {name: nothing, source: 'https://example.org/3', logs: 'all good', first: null}\n"
        "- {name: no source, logs: 'x', first: null}\n")
    kb = load_kb(tmp_path)
    rows, problems = run_expectations(kb)
    by = {r["case"]: r for r in rows}
    assert by["first ok"]["ok"] and by["nothing"]["ok"]
    assert not by["must not fire"]["ok"] and by["must not fire"]["why"] == ["segfault fired"]
    assert len(problems) == 1 and "source" in problems[0]
    out = subprocess.run([sys.executable, "-m", "diagnostics", "kb", "--kb", str(tmp_path), "test"],
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent, timeout=300)
    assert out.returncode == 1 and "FAIL expectations/a.yaml: must not fire: segfault fired" in out.stdout, out.stdout


def test_the_shipped_expectations_hold():
    from diagnostics.matcher import run_expectations

    rows, problems = run_expectations(load_kb())
    assert not problems, problems
    assert len(rows) >= 10
    assert [r for r in rows if not r["ok"]] == []


def test_a_neighbour_package_the_torch_probe_did_not_report_is_not_installed():
    from diagnostics.derive import derive

    got = derive({"torch.installed": True, "pkg.onnxruntime_gpu": "1.16.3"})
    assert got["pkg.onnxruntime"] == "" and "pkg.onnxruntime_gpu" not in got
    assert "pkg.onnxruntime" not in derive({"pkg.onnxruntime_gpu": "1.16.3"})   # no probe run: unknown
    assert "pkg.vllm" not in derive({"torch.installed": True})                # no package scan seen
