"""One verdict rule: the service, the CLI exit status and the store's summary column agree."""
from diagnostics import service
from diagnostics.cli import _problems
from diagnostics.store import summary

CASES = [
    ({"diagnoses": [{"id": "a", "severity": "error", "benign": False}], "probes": []}, "problems"),
    ({"diagnoses": [{"id": "b", "severity": "info", "benign": True}], "probes": [{"status": "crashed"}]}, "incomplete"),
    ({"diagnoses": [{"id": "c", "severity": "warning", "benign": True}], "probes": [{"status": "ok"}]}, "healthy"),
    ({"diagnoses": [], "probes": [{"status": "timeout"}]}, "incomplete"),
    ({}, "healthy"),
]


def test_service_cli_and_store_agree():
    for rep, want in CASES:
        assert service.verdict(rep) == want
        assert summary.verdict(rep) == want
        assert _problems(rep.get("diagnoses", [])) == (want == "problems")
    assert summary.verdict({"verdict": "problems", "diagnoses": []}) == "problems"  # a stored verdict is kept
