"""The generation child measures when each token arrives (issue 18: the UI plots these, never a line made
from two numbers).  A real child on the CPU with the built-in random-weight model (imports torch: ~10 s)."""
from __future__ import annotations

import sys

import pytest


def test_child_reports_per_token_arrival_times():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from diagnostics.generation import run_generation

    gen = run_generation(python=sys.executable, device="cpu", max_new_tokens=8, compare_cpu=False, timeout=300)
    assert gen["status"] in ("ok", "warn"), (gen.get("error"), gen.get("log"))
    times = gen["token_times"]
    assert len(times) == gen["new_tokens"] == 8
    assert times == sorted(times) and times[0] > 0
    assert abs(times[0] - gen["ttft_s"]) < 0.05  # the first arrival is the time to first token
    assert times[-1] <= gen["gen_s"] + 1e-6
