"""The GPU watch's facts through the real matcher: the recorded H200 run is healthy, and played-back failure
cases (an idle GPU, another process holding the VRAM, a thermal slowdown) raise the entries written for them."""
from __future__ import annotations

import json
from pathlib import Path


from diagnostics import monitor
from diagnostics.service import diagnose_text

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "monitor"
MONITOR_IDS = {"gpu-idle-during-generation", "gpu-vram-did-not-grow-on-load", "gpu-throttled-during-generation",
               "gpu-vram-held-by-other-process"}



def fired(facts: dict) -> set[str]:
    return {d["id"] for d in diagnose_text(facts=facts)["diagnoses"]}


def test_recorded_h200_run_is_healthy():
    rec = json.loads((ROOT / "docs" / "monitor" / "monitor_samples.json").read_text())
    facts = monitor.monitor_facts(rec["samples"])
    assert facts == rec["facts"]            # the stored facts are what the code derives from the samples
    gen = json.loads((ROOT / "docs" / "monitor" / "bench_monitor.json").read_text())["watched_run"]["generation_facts"]
    assert not (fired({**gen, **facts}) & MONITOR_IDS)


def test_h200_samples_replayed_with_busy_zeroed_fire_the_idle_entry():
    rec = json.loads((ROOT / "docs" / "monitor" / "monitor_samples.json").read_text())
    samples = [dict(s, busy_pct=0.0) for s in rec["samples"]]
    facts = monitor.monitor_facts(samples)
    gen = json.loads((ROOT / "docs" / "monitor" / "bench_monitor.json").read_text())["watched_run"]["generation_facts"]
    assert "gpu-idle-during-generation" in fired({**gen, **facts})


def _run(lines: list[str], phases: list[str]) -> list[dict]:
    """Samples as the monitor would stamp them: one parsed nvidia-smi line per phase step."""
    from diagnostics.monitor import parse

    out = []
    for i, (line, phase) in enumerate(zip(lines, phases)):
        r = parse.parse_nvidia_line(line)
        out.append({"t": 0.2 * i, "phase": phase, "source": "nvidia-smi", **r})
    return out


def test_vram_held_by_another_process_and_thermal_slowdown():
    lines = ["0, 0, 70000, 81559, 40, 70.0, 210, 0x0000000000000001",     # 70 GB held before we start
             "0, 0, 72000, 81559, 45, 90.0, 1410, 0x0000000000000000",
             "0, 95, 72100, 81559, 88, 300.0, 1100, 0x0000000000000040",   # HW thermal slowdown
             "0, 96, 72100, 81559, 89, 300.0, 1050, 0x0000000000000060",
             "0, 0, 70000, 81559, 80, 80.0, 1410, 0x0000000000000000"]
    samples = _run(lines, ["before", "loading", "generating", "generating", "after"])
    facts = monitor.monitor_facts(samples)
    assert facts["monitor.throttle_reasons"] == ["hw_thermal_slowdown", "sw_thermal_slowdown"]
    got = fired({"gen.ran": True, "gen.device": "cuda", **facts})
    assert {"gpu-vram-held-by-other-process", "gpu-throttled-during-generation"} <= got
    assert "gpu-idle-during-generation" not in got


def test_monitor_facts_are_catalogue_clean_for_the_matcher():
    rec = json.loads((ROOT / "docs" / "monitor" / "monitor_samples.json").read_text())
    res = diagnose_text(facts=monitor.monitor_facts(rec["samples"]))
    assert "diagnoses" in res
