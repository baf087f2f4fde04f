"""Progress that counts every step from the start, weighted by expected time, and a Stop that reaches the test
generation and marks the report "stopped" (issue 18)."""
from __future__ import annotations

import sys
import threading
import time

from diagnostics import jobs, service
from diagnostics.probes import PROBES


def test_the_plan_lists_every_step_before_anything_runs():
    steps = jobs.plan(generate=True)
    assert [s[0] for s in steps] == [p.id for p in PROBES] + ["generation"]
    assert [s[0] for s in jobs.plan(generate=False)] == [p.id for p in PROBES]
    # the generation is the longest step, so it carries the largest share
    assert max(steps, key=lambda s: s[2])[0] == "generation"


def _state(**kw):
    return {k: dict(v, title=k) for k, v in kw.items()}


def test_weighted_fraction_is_not_a_count_of_checks():
    steps = jobs.plan(generate=True)
    probes_done = _state(**{p.id: {"status": "ok", "stage": "", "elapsed": 0} for p in PROBES})
    f = jobs.weighted_fraction(probes_done, steps)
    # every check finished but the generation not started: well below the 8/9 = 89 % a count would show
    assert 0.3 < f < 0.6, f
    probes_done["generation"] = {"status": "running", "stage": "generating (16 tokens)", "title": "g"}
    g = jobs.weighted_fraction(probes_done, steps)
    assert f < g < 1.0
    probes_done["generation"]["status"] = "ok"
    assert jobs.weighted_fraction(probes_done, steps) == 1.0


def test_generation_stages_move_forward():
    stages = ["starting the generation child", "importing torch", "resolving model", "loading tokenizer",
              "loading (device=cuda, dtype=float16)", "warming up", "generating (0 tokens)", "generating (8 tokens)",
              "generating (32 tokens)", "comparing with the CPU"]
    fr = [jobs.generation_fraction(s) for s in stages]
    assert fr == sorted(fr) and fr[0] > 0 and fr[-1] < 1, fr
    assert abs(jobs.generation_fraction("generating (16 tokens)", 32) - 0.6) < 1e-9


def test_progress_is_monotone():
    steps = jobs.plan(generate=False)
    prog = jobs.Progress(steps)
    a = prog.update(_state(torch={"status": "running", "stage": "", "elapsed": 7.0}))
    # a later estimate that would be lower (the elapsed-time share of a running probe is capped) never shows
    b = prog.update(_state(torch={"status": "running", "stage": "", "elapsed": 0.0}))
    assert b == a > 0
    assert prog.update({}, done=True) == 1.0


def test_stop_reaches_the_generation_child():
    """The child is ended at once and the result says it was stopped, not that it hung or failed."""
    from diagnostics.generation import run_generation

    cancel = threading.Event()
    seen: list[str] = []

    def progress(msg: str) -> None:
        seen.append(msg)
        cancel.set()  # press Stop as soon as the child is being started

    t0 = time.monotonic()
    gen = run_generation(python=sys.executable, timeout=300, progress=progress, cancel=cancel, compare_cpu=False)
    took = time.monotonic() - t0
    assert took < 15, took
    assert gen["stopped"] is True and gen["status"] == "skipped" and gen["summary"] == "stopped by the user"
    assert "gen.error" not in gen["facts"] and gen["facts"]["gen.ran"] is False


def test_stopped_report_marks_cut_checks_skipped():
    rep = {"probes": [{"id": "torch", "status": "timeout", "summary": "hung during 'import torch'",
                       "error": "no answer within 3s during 'import torch'; the probe was stopped",
                       "evidence": [{"source": "probe:torch", "excerpt": "x"}, {"source": "sysfs", "excerpt": "y"}]},
                      {"id": "env", "status": "ok", "summary": "0 GPU-related variable(s) set"}]}
    service._mark_stopped(rep)
    assert rep["stopped"] is True
    assert rep["probes"][0]["status"] == "skipped" and rep["probes"][0]["summary"] == "stopped by the user"
    assert rep["probes"][0]["evidence"] == [{"source": "sysfs", "excerpt": "y"}]
    assert rep["probes"][1]["status"] == "ok"
    from diagnostics.report import render_report

    assert "Stopped by the user" in render_report(rep)
    assert "已由用户停止" in render_report(rep, "zh")


def test_job_keeps_the_early_verdict_apart_from_the_probes_events():
    gate = threading.Event()

    def fn(on_event, cancel):
        on_event({"event": "start", "probe": "torch", "title": "PyTorch build"})
        on_event({"event": "end", "probe": "torch", "status": "fail", "duration_s": 1.0})
        on_event({"event": "verdict", "report": {"verdict": "problems", "probes": []}})
        gate.wait(5)
        return {"verdict": "problems"}

    job = jobs.Job(fn)
    for _ in range(100):
        if job.early_report is not None:
            break
        time.sleep(0.02)
    assert job.early_report == {"verdict": "problems", "probes": []} and job.early_at is not None
    assert not job.done
    assert set(job.progress()) == {"torch"}        # the verdict event is no probe's row
    gate.set()
    for _ in range(100):
        if job.done:
            break
        time.sleep(0.02)
    assert job.result == {"verdict": "problems"}
