"""One verdict rule (diagnostics/verdicts.py): the service, the CLI exit status and the store agree; a stored
verdict is never trusted; a failed check with no confirmed cause is 'unexplained'; re-diagnosis recomputes
everything for every report shape."""
import json

import pytest

from diagnostics import sessions
from diagnostics import service, verdicts
from diagnostics.cli import _problems
from diagnostics.matcher import order, root_causes
from diagnostics.store import Store, summary

PROBLEM = {"id": "a", "severity": "error", "benign": False, "basis": "confirmed", "evidence": []}
GUESS = {"id": "g", "severity": "error", "benign": False, "basis": "possible", "evidence": []}
OLD_GUESS = {"id": "o", "severity": "error", "benign": False, "from_description": True}  # stored before "basis"
BENIGN = {"id": "b", "severity": "info", "benign": True}

CASES = [
    ({"diagnoses": [PROBLEM], "probes": []}, "problems"),
    ({"diagnoses": [BENIGN], "probes": [{"id": "torch", "status": "crashed", "error": "crashed with SIGSEGV"}]},
     "unexplained"),
    ({"diagnoses": [BENIGN], "probes": [{"id": "torch", "status": "ok"}]}, "healthy"),
    ({"diagnoses": [], "probes": [{"id": "torch", "status": "timeout", "error": "no answer within 120s"}]}, "unexplained"),
    ({"diagnoses": [], "probes": [{"id": "torch", "status": "fail", "summary": "torch sees no GPU"}]}, "unexplained"),
    ({"diagnoses": [], "probes": [{"id": "hip", "status": "fail", "error": "could not start: no such file"}]},
     "incomplete"),
    ({"diagnoses": [GUESS, OLD_GUESS], "probes": [{"id": "torch", "status": "ok"}]}, "healthy"),
    ({"diagnoses": [], "probes": [{"id": "nvidia", "status": "skipped"}]}, "healthy"),
    ({"diagnoses": [], "generation": {"status": "crashed", "error": "crashed with SIGKILL"}}, "unexplained"),
    ({"diagnoses": [], "generation": {"status": "skipped", "error": "torch cannot be imported"}}, "healthy"),
    ({"diagnoses": [], "parsed": [{"name": "smi.txt", "kind": "nvidia_smi", "errors": ["NVIDIA-SMI has failed"]}]},
     "unexplained"),
    ({"diagnoses": [], "logs": [{"name": "p", "text": "x\nRuntimeError: CUDA error: an illegal memory access\n"}]},
     "unexplained"),
    ({"diagnoses": [], "logs": [{"name": "p", "text": "Agent 2\n  Name: gfx1100\nall fine\n"}]}, "healthy"),
    ({}, "healthy"),
]


@pytest.mark.parametrize("rep,want", CASES)
def test_service_cli_and_store_agree(rep, want):
    assert verdicts.compute(rep) == want
    assert service.verdict(rep) == want
    assert summary.verdict(rep) == want
    assert verdicts.exit_status(rep) == (1 if want in ("problems", "unexplained") else 0)
    assert _problems(rep.get("diagnoses", [])) == (want == "problems")


def test_a_stored_verdict_is_recomputed_not_trusted():
    assert summary.verdict({"verdict": "problems", "diagnoses": []}) == "healthy"
    assert summary.verdict({"verdict": "healthy", "diagnoses": [PROBLEM]}) == "problems"


def test_a_failed_check_that_a_confirmed_cause_rests_on_is_explained():
    probe = {"id": "torch", "status": "fail", "summary": "torch is a CPU-only build", "facts": {"torch.build": "cpu"}}
    cites_fact = dict(PROBLEM, evidence=[{"source": "probe:torch", "kind": "fact", "fact": "torch.build"}])
    rep = {"diagnoses": [cites_fact], "probes": [probe]}
    assert verdicts.compute(rep) == "problems" and verdicts.unexplained(rep) == []
    # a cause that rests on other facts leaves the failed check listed (but the verdict is problems)
    other = dict(PROBLEM, evidence=[{"source": "probe:env", "kind": "fact", "fact": "env.set_names"}])
    rep = {"diagnoses": [other], "probes": [probe, {"id": "env", "status": "ok", "facts": {"env.set_names": []}}]}
    assert verdicts.compute(rep) == "problems" and [c["id"] for c in verdicts.unexplained(rep)] == ["torch"]
    # through a derived fact: the mask problems are derived from torch.build among others
    derived = dict(PROBLEM, evidence=[{"source": "derived", "kind": "fact", "fact": "visible_devices.problems"}])
    rep = {"diagnoses": [derived], "probes": [probe]}
    assert verdicts.unexplained(rep) == []
    # a guess explains nothing
    rep = {"diagnoses": [dict(GUESS, evidence=cites_fact["evidence"])], "probes": [probe]}
    assert verdicts.compute(rep) == "unexplained"


@pytest.mark.parametrize("text,line", [
    ("Traceback (most recent call last):\n  File \"x\", line 1\nKeyError: 'a'\n", "KeyError: 'a'"),
    ("run\nSegmentation fault (core dumped)\n", "Segmentation fault (core dumped)"),
    ("terminate called after throwing an instance of 'std::runtime_error'\n",
     "terminate called after throwing an instance of 'std::runtime_error'"),
    ("UserWarning: something\nall good\n", None),
    ("ERROR:root:Driver not initialized\n", None),
])
def test_log_failure(text, line):
    assert verdicts.log_failure(text) == line


def test_a_consequence_never_ranks_above_its_cause():
    cause = {"id": "cause", "severity": "warning", "benign": False, "confidence": 0.3, "consequence_of": []}
    mid = {"id": "mid", "severity": "critical", "benign": False, "confidence": 0.99, "consequence_of": ["cause"]}
    leaf = {"id": "leaf", "severity": "critical", "benign": False, "confidence": 0.98, "consequence_of": ["mid"]}
    other = {"id": "other", "severity": "error", "benign": False, "confidence": 0.5, "consequence_of": []}
    ranked = order([leaf, mid, other, cause])
    ids = [d["id"] for d in ranked]
    assert ids.index("cause") < ids.index("mid") < ids.index("leaf")
    assert [d["rank"] for d in ranked] == [1, 2, 3, 4]
    assert root_causes(ranked) == ["other", "cause"]


# ------------------------------------------------------------------------- save -> re-diagnose, every shape

def _live() -> dict:
    rep = service.new_report("live")
    rep["probes"] = [{"id": "torch", "title": "PyTorch", "status": "fail", "summary": "torch is not installed",
                      "facts": {"torch.installed": False}, "logs": [], "provides": ["torch.installed"]},
                     {"id": "env", "title": "env", "status": "ok", "facts": {
                         "visible_devices.masks": ["HIP_VISIBLE_DEVICES=3"], "env.HIP_VISIBLE_DEVICES": "3"},
                      "logs": [], "provides": ["env.*", "visible_devices.masks"]}]
    rep["facts"] = {"torch.installed": False, "visible_devices.masks": ["HIP_VISIBLE_DEVICES=3"],
                    "env.HIP_VISIBLE_DEVICES": "3", "pci.amd_gpu_count": 2, "pci.nvidia_gpu_count": 0}
    return service.diagnose(rep)


def _pasted() -> dict:
    return service.diagnose_text(logs=[("pasted", "ModuleNotFoundError: No module named 'torch'\n")])


def _generation() -> dict:
    rep = service.new_report("live")
    rep["probes"] = [{"id": "torch", "title": "PyTorch", "status": "ok", "facts": {"torch.build": "rocm"}, "logs": []}]
    rep["facts"] = {"torch.build": "rocm"}
    rep["generation"] = {"status": "fail", "error": "out of memory", "facts": {},
                         "log": "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.25 GiB.\n"}
    return service.diagnose(rep)


@pytest.mark.parametrize("make,first", [(_live, "torch-not-installed"), (_pasted, "torch-not-installed"),
                                        (_generation, "hip-out-of-memory")], ids=["live", "pasted", "generation"])
def test_save_then_rediagnose_keeps_every_finding(tmp_path, make, first):
    rep = make()
    assert rep["diagnoses"][0]["id"] == first and rep["verdict"] == "problems"
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    sid = store.save(json.loads(json.dumps(rep)))
    saved = store.get(sid)
    # a stale verdict and lost diagnoses in the stored copy are recomputed, not kept
    saved["verdict"] = "healthy"
    saved["diagnoses"] = []
    again = service.rediagnose(saved)
    assert [d["id"] for d in again["diagnoses"]] == [d["id"] for d in rep["diagnoses"]]
    assert again["verdict"] == "problems" and again["root_causes"] == rep["root_causes"]
    # and through the store's own re-diagnosis
    res = sessions.rediagnose_session(store, sid)
    assert first not in [d["id"] for d in res["disappeared"]]
    stored = store.get(sid)
    assert stored["diagnoses"][0]["id"] == first and summary.verdict(stored) == "problems"


def test_report_texts_is_every_text_once():
    rep = {"logs": [{"name": "a", "text": "one"}], "dumps": [{"name": "a", "text": "one"}, {"name": "d", "text": "two"}],
           "probes": [{"id": "rocm", "logs": [{"name": "rocminfo", "text": "three"}]}],
           "generation": {"log": "four"}}
    assert service.report_texts(rep) == [("a", "one"), ("d", "two"), ("probe:rocm:rocminfo", "three"),
                                         ("generation", "four")]


def test_a_saved_session_is_listed_under_its_recomputed_verdict(tmp_path):
    """A report that says 'incomplete' for a crash without a cause is stored and listed as 'unexplained', and stays
    so through re-diagnosis."""
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    old = service.new_report("live")
    old["probes"] = [{"id": "torch", "title": "PyTorch", "status": "crashed", "error": "crashed with SIGSEGV",
                      "facts": {}, "logs": []}]
    old["facts"] = {"torch.build": "rocm"}
    old["verdict"] = "incomplete"
    sid = store.save(old)
    sessions.rediagnose_session(store, sid)
    rows, _ = store.list_sessions(verdict="unexplained")
    assert [r["id"] for r in rows] == [sid]
