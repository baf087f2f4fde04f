"""The one rule for a report's verdict, shared by the service, the CLI's exit status and the store's summary.

Dependency-free on purpose: the store uses it without importing the KB machinery.
"""
from __future__ import annotations

from typing import Any

PROBLEM_SEVERITIES = ("critical", "error", "warning")


def is_problem(d: Any) -> bool:
    """A diagnosis that counts as a problem: not benign, and of severity critical, error or warning."""
    return isinstance(d, dict) and not d.get("benign") and d.get("severity") in PROBLEM_SEVERITIES


def compute(report: dict[str, Any]) -> str:
    """'problems', 'incomplete' (a probe crashed or timed out) or 'healthy'."""
    if any(is_problem(d) for d in report.get("diagnoses") or []):
        return "problems"
    if any(isinstance(p, dict) and p.get("status") in ("crashed", "timeout") for p in report.get("probes") or []):
        return "incomplete"
    return "healthy"
