"""The GPU monitor: parsers over recorded tool outputs and sysfs trees, the sampler over played-back sysfs files
and fake vendor tools on PATH (working, missing, hanging, crashing, printing garbage), facts and summaries.

Fixtures and their sources: tests/fixtures/monitor/*/SOURCE.md.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from diagnostics import facts as factcat
from diagnostics import monitor
from diagnostics.monitor import parse, sources
from diagnostics.monitor.core import Monitor

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "monitor"
MIB = 1024 ** 2
GIB = 1024 ** 3


# ---------------------------------------------------------------------------------------------- helpers


def fake_tool(bindir: Path, name: str, body: str) -> Path:
    """An executable *name* in *bindir* running *body* with this interpreter (stdlib only)."""
    bindir.mkdir(parents=True, exist_ok=True)
    p = bindir / name
    p.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    p.chmod(0o755)
    return p


REPLAY_NVSMI = """
import os, sys, time
args = sys.argv[1:]
assert "--format=csv,noheader,nounits" in args, args
q = [a for a in args if a.startswith("--query-gpu=")][0]
ms = int(args[args.index("-lms") + 1]) if "-lms" in args else 0
lines = [l for l in open({path!r}).read().splitlines() if l.strip()]
if "clocks_throttle_reasons.active" not in q:
    lines = [l.rsplit(",", 1)[0] for l in lines]
i = 0
while True:
    print(lines[i % len(lines)], flush=True)
    i += 1
    if not ms:
        break
    time.sleep(ms / 1000.0)
"""


def replay_nvsmi(bindir: Path, fixture: str) -> Path:
    return fake_tool(bindir, "nvidia-smi", REPLAY_NVSMI.format(path=str(FIX / "nvidia-smi" / fixture)))


def only_path(monkeypatch: pytest.MonkeyPatch, bindir: Path) -> None:
    bindir.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("PATH", str(bindir))


def work(phases: list[tuple[str, float]], result: object = "done", log: list | None = None):
    """A stand-in for run_generation: reports phases through its progress callback, sleeping in each."""

    def fn(progress=None):
        for text, secs in phases:
            if progress is not None:
                progress(text)
            if log is not None:
                log.append(text)
            time.sleep(secs)
        return result

    return fn


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def no_monitor_threads() -> bool:
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if not any(t.name.startswith("gpu-monitor") and t.is_alive() for t in threading.enumerate()):
            return True
        time.sleep(0.05)
    return False


# ---------------------------------------------------------------------------------------------- nvidia-smi parser


def test_h200_recorded_lines_parse():
    idle = [parse.parse_nvidia_line(l) for l in (FIX / "nvidia-smi" / "h200-lms-idle.csv").read_text().splitlines() if l]
    assert len(idle) >= 10
    assert all(r["gpu"] == 0 and r["vram_total_bytes"] == 143771 * MIB for r in idle)
    # an idle H200 reports only the gpu_idle bit (0x1), which is not throttling
    assert all(r["throttle"] == [] for r in idle)
    assert idle[0] == {"gpu": 0, "busy_pct": 0.0, "vram_used_bytes": 0, "vram_total_bytes": 143771 * MIB,
                       "temp_c": 40.0, "power_w": 132.97, "sclk_mhz": 405.0, "throttle": []}
    gen = [parse.parse_nvidia_line(l) for l in (FIX / "nvidia-smi" / "h200-lms-generation.csv").read_text().splitlines() if l]
    assert max(r["busy_pct"] for r in gen) == 13.0
    assert max(r["vram_used_bytes"] for r in gen) == 2691 * MIB
    assert max(r["sclk_mhz"] for r in gen) == 1980.0


def test_nvidia_not_supported_and_na_fields_are_left_out():
    r = parse.parse_nvidia_line((FIX / "nvidia-smi" / "gtx770-not-supported-megaminer235.csv").read_text())
    assert r == {"gpu": 0, "vram_used_bytes": 1130 * MIB, "vram_total_bytes": 2047 * MIB, "temp_c": 52.0}
    r = parse.parse_nvidia_line((FIX / "nvidia-smi" / "na-fields-i3pystatus776.csv").read_text())
    assert "power_w" not in r and "throttle" not in r and r["temp_c"] == 44.0 and r["busy_pct"] == 0.0


def test_nvidia_power_cap_mask():
    rows = [parse.parse_nvidia_line(l) for l in (FIX / "nvidia-smi" / "rtx3090-power-cap-ninfer72.csv").read_text().splitlines()]
    assert all(r["throttle"] == ["sw_power_cap"] for r in rows)
    r = parse.parse_nvidia_line("0, 100, 1, 2, 90, 300, 1200, 0x0000000000000060")
    assert r["throttle"] == ["sw_thermal_slowdown", "hw_thermal_slowdown"]
    # harmless bits: idle, applications clocks, sync boost, display clocks
    assert parse.parse_nvidia_line("0, 0, 1, 2, 30, 50, 300, 0x0000000000000113")["throttle"] == []


@pytest.mark.parametrize("line", [
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    'Field "clocks_throttle_reasons.active" is not a valid field to query.',
    "0, 26, 3912",
    "0, busy, 3912, 12288, 56, 83.92, 1320, 0x0",
    "0, 26, 3912, 12288, 56, 83.92, 1320, zz",
    "x, 26, 3912, 12288, 56, 83.92, 1320, 0x0",
])
def test_nvidia_garbage_raises(line):
    with pytest.raises(parse.BadOutput):
        parse.parse_nvidia_line(line)


# ---------------------------------------------------------------------------------------------- amd-smi / rocm-smi


def test_amd_smi_rocm7_gpu_data():
    [r] = parse.parse_amd_smi_metric((FIX / "amd-smi" / "rx7800xt-rocm7-gpu-data-ajean39.json").read_text())
    assert r == {"gpu": 0, "busy_pct": 2.0, "vram_used_bytes": 14569 * MIB, "vram_total_bytes": 16368 * MIB,
                 "temp_c": 36.0, "temp_hot_c": 41.0, "power_w": 20.0, "throttle": [], "sclk_mhz": 14.0}


def test_amd_smi_usage_only_and_watch_banner():
    [r] = parse.parse_amd_smi_metric((FIX / "amd-smi" / "w7700-metric-u-beszel737.json").read_text())
    assert r == {"gpu": 0, "busy_pct": 42.0}
    # the watch-mode banner before the JSON, and every value N/A: a GPU with nothing to say, not an error
    [r] = parse.parse_amd_smi_metric((FIX / "amd-smi" / "strix-halo-watch-json-rocm-systems2720.txt").read_text())
    assert r == {"gpu": 0}


def test_amd_smi_throttled_flag():
    [r] = parse.parse_amd_smi_metric((FIX / "amd-smi" / "r9700-throttled-idle-rocm-systems11781.json").read_text())
    assert r["throttle"] == ["throttle_status"] and r["temp_hot_c"] == 37.0 and r["power_w"] == 1.0


def test_rocm_smi_json_fixtures():
    [r] = parse.parse_rocm_smi_json((FIX / "rocm-smi" / "rx7900xtx-beszel414.json").read_text())
    assert r == {"gpu": 0, "temp_c": 49.0, "temp_hot_c": 49.0, "power_w": 19.0, "busy_pct": 0.0,
                 "vram_total_bytes": 25753026560, "vram_used_bytes": 794341376}
    [r] = parse.parse_rocm_smi_json((FIX / "rocm-smi" / "rx7900xt-marimo9237.json").read_text())
    assert r == {"gpu": 0, "busy_pct": 0.0, "vram_total_bytes": 21458059264, "vram_used_bytes": 27856896}
    [r] = parse.parse_rocm_smi_json((FIX / "rocm-smi" / "mi250-wandb5449-excerpt.json").read_text())
    assert r["busy_pct"] == 100.0 and r["power_w"] == 128.0 and r["power_cap_w"] == 560.0 and r["sclk_mhz"] == 1700.0


def test_rocm_smi_errors_are_bad_output():
    with pytest.raises(parse.BadOutput):
        parse.parse_rocm_smi_json((FIX / "rocm-smi" / "rocm29-unable-to-get-use-roc-smi73.txt").read_text())
    with pytest.raises(parse.BadOutput):
        parse.parse_rocm_smi_json('{"card0": {"GPU use (%)": "lots"}}')
    with pytest.raises(parse.BadOutput):
        parse.parse_amd_smi_metric('[{"gpu": 0, "usage": {"gfx_activity": {"value": "many", "unit": "%"}}}]')


# ---------------------------------------------------------------------------------------------- sysfs


def test_sysfs_rx7900xtx_tree():
    root = str(FIX / "sysfs" / "rx7900xtx-beszel414")
    cards = parse.amd_cards(root)
    assert [Path(c).parent.name for c in cards] == ["card0"]          # the connector folder is skipped
    r = parse.read_sysfs_card(cards[0], 0)
    assert r == {"gpu": 0, "busy_pct": 0.0, "vram_used_bytes": 794341376, "vram_total_bytes": 25753026560,
                 "temp_c": 49.0, "temp_hot_c": 49.0, "power_w": 19.0}
    # no critical limit and no cap: throttling cannot be judged, so it is not reported (unknown, not false)
    assert "throttle" not in r


def test_sysfs_skips_other_vendors_and_judges_limits():
    root = str(FIX / "sysfs" / "rx580-radeon-profile140")
    cards = parse.amd_cards(root)
    assert [Path(c).parent.name for c in cards] == ["card1"]          # card0 is an Intel iGPU
    r = parse.read_sysfs_card(cards[0], 0)
    assert r["busy_pct"] == 11.0 and r["temp_c"] == 57.0 and r["power_w"] == 18.0 and r["power_cap_w"] == 220.0
    assert r["throttle"] == []


def test_sysfs_clock_from_pp_dpm_sclk_and_quirks():
    r = parse.read_sysfs_card(parse.amd_cards(str(FIX / "sysfs" / "bc250-amdgpu-sysfs-rs"))[0], 0)
    assert r["sclk_mhz"] == 1500.0 and r["power_w"] == pytest.approx(54.231)
    r = parse.read_sysfs_card(parse.amd_cards(str(FIX / "sysfs" / "rx6950xt-dpm-zero"))[0], 0)
    assert "sclk_mhz" not in r and r["busy_pct"] == 3.0


def test_source_order():
    assert sources.default_order(str(FIX / "sysfs" / "rx7900xtx-beszel414"))[0] == "sysfs"
    assert sources.default_order(str(FIX / "sysfs" / "nvidia-only"))[0] == "nvidia-smi"
    assert "sysfs" not in sources.default_order(str(FIX / "sysfs" / "nvidia-only"))


def copy_tree(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIX / "sysfs" / name, dst)
    return dst


def test_monitor_plays_back_sysfs_during_a_run(tmp_path, monkeypatch):
    """A recorded idle tree, then the values a generation would write: the facts follow the phases."""
    root = copy_tree("rx7900xtx-beszel414", tmp_path)
    dev = root / "sys/class/drm/card0/device"
    hw = dev / "hwmon/hwmon2"
    only_path(monkeypatch, tmp_path / "bin")        # no vendor tool: sysfs alone

    def w(path: Path, value: int) -> None:
        path.write_text(f"{value}\n")

    def fn(progress=None):
        progress("importing torch")
        time.sleep(0.3)
        progress("loading (device=cuda, dtype=bfloat16)")
        w(dev / "mem_info_vram_used", 794341376 + 3 * GIB)
        time.sleep(0.3)
        progress("generating (0 tokens)")
        w(dev / "gpu_busy_percent", 97)
        w(hw / "temp2_input", 71000)
        w(hw / "power1_average", 301000000)
        time.sleep(0.4)
        w(dev / "gpu_busy_percent", 88)
        time.sleep(0.4)
        progress("comparing with the CPU")
        w(dev / "gpu_busy_percent", 0)
        time.sleep(0.1)
        w(dev / "mem_info_vram_used", 794341376)
        return {"status": "ok"}

    result, samples = monitor.watch(fn, interval=0.05, root=str(root))
    assert result == {"status": "ok"}
    assert samples.source == "sysfs" and samples.notes == []
    f = monitor.monitor_facts(samples)
    assert f["monitor.source"] == "sysfs"
    assert f["monitor.gpu_busy_peak_pct"] == 97.0
    assert 88.0 <= f["monitor.gpu_busy_mean_pct"] <= 97.0
    assert f["monitor.generating_samples"] >= 5
    assert f["monitor.vram_before_bytes"] == 794341376
    assert f["monitor.vram_peak_bytes"] == 794341376 + 3 * GIB
    assert f["monitor.vram_growth_bytes"] == 3 * GIB
    assert f["monitor.vram_after_bytes"] == 794341376
    assert f["monitor.vram_others_before_fraction"] == pytest.approx(794341376 / 25753026560, abs=1e-4)
    assert f["monitor.temp_max_c"] == 71.0 and f["monitor.power_max_w"] == 301.0
    assert "monitor.throttle_seen" not in f           # nothing to judge it by in this tree
    for k, v in f.items():
        assert factcat.check_value(k, v) is None, k
    phases = [s["phase"] for s in monitor.phase_spans(samples) if s["phase"] != "running"]
    assert phases == ["before", "importing torch", "loading", "generating", "comparing with the cpu", "after"]
    assert no_monitor_threads()


def test_sysfs_thermal_and_power_limits_become_throttling(tmp_path, monkeypatch):
    root = copy_tree("rx580-radeon-profile140", tmp_path)
    hw = root / "sys/class/drm/card1/device/hwmon/hwmon0"
    only_path(monkeypatch, tmp_path / "bin")

    def fn(progress=None):
        progress("generating")
        (hw / "temp1_input").write_text("86000\n")           # 3 °C below the 89 °C limit
        (hw / "power1_average").write_text("219000000\n")    # at the 220 W cap
        time.sleep(0.4)
        return 1

    _, samples = monitor.watch(fn, interval=0.05, root=str(root))
    f = monitor.monitor_facts(samples)
    assert f["monitor.throttle_seen"] is True
    assert set(f["monitor.throttle_reasons"]) == {"temp_edge_near_crit", "power_at_cap"}


# ---------------------------------------------------------------------------------------------- vendor tools


def test_nvidia_smi_replay_of_the_h200_run(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    replay_nvsmi(bindir, "h200-lms-generation.csv")
    only_path(monkeypatch, bindir)
    seen: list[str] = []
    result, samples = monitor.watch(work([("loading (device=cuda)", 0.3), ("generating (0 tokens)", 0.8)]),
                                    interval=0.05, tools=["nvidia-smi"], progress=seen.append)
    assert result == "done"
    assert seen == ["loading (device=cuda)", "generating (0 tokens)"]     # the caller's callback still runs
    assert samples.source == "nvidia-smi" and samples.notes == []
    assert len(samples) >= 15
    assert samples.raw and samples.raw[0].startswith("0, ")
    f = monitor.monitor_facts(samples)
    assert f["monitor.vram_total_bytes"] == 143771 * MIB
    assert f["monitor.throttle_seen"] is False
    assert f["monitor.generating_samples"] >= 5
    line = monitor.summary_line(samples)
    assert line.startswith("GPU watch (nvidia-smi, GPU 0, ") and "no throttling" in line
    assert no_monitor_threads()


def test_nvidia_smi_without_the_throttle_field_is_asked_again(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    msg = (FIX / "nvidia-smi" / "invalid-field-zabbix17.txt").read_text()
    fake_tool(bindir, "nvidia-smi", f"""
        import sys, time
        q = [a for a in sys.argv if a.startswith("--query-gpu=")][0]
        if "clocks_throttle_reasons" in q:
            sys.stdout.write({msg!r}); sys.exit(2)
        while True:
            print("0, 55, 3912, 12288, 56, 83.92, 1320", flush=True); time.sleep(0.05)
        """)
    only_path(monkeypatch, bindir)
    _, samples = monitor.watch(work([("generating", 0.5)]), interval=0.05, tools="nvidia-smi")
    assert samples.source == "nvidia-smi" and len(samples) >= 3
    f = monitor.monitor_facts(samples)
    assert f["monitor.gpu_busy_peak_pct"] == 55.0
    assert "monitor.throttle_seen" not in f          # the tool could not say: unknown


def test_missing_tool_leaves_the_result_intact(tmp_path, monkeypatch):
    only_path(monkeypatch, tmp_path / "empty")
    result, samples = monitor.watch(work([("generating", 0.1)], result={"tokens_per_s": 42.0}),
                                    tools=["amd-smi", "rocm-smi", "nvidia-smi"])
    assert result == {"tokens_per_s": 42.0}
    assert list(samples) == [] and samples.source is None
    assert any("nvidia-smi not found" in n for n in samples.notes)
    assert any("amd-smi" in n for n in samples.notes)
    assert monitor.monitor_facts(samples) == {}
    assert monitor.summary_line(samples).startswith("GPU watch: not watched (")
    rec = monitor.to_record(samples)
    assert rec["samples"] == [] and rec["notes"] == samples.notes
    json.dumps(rec)


def test_no_driver_nvidia_smi_says_why(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    msg = (FIX / "nvidia-smi" / "no-driver.txt").read_text()
    fake_tool(bindir, "nvidia-smi", f"import sys; sys.stdout.write({msg!r}); sys.exit(9)\n")
    only_path(monkeypatch, bindir)
    result, samples = monitor.watch(work([("generating", 0.1)]), tools=["nvidia-smi"])
    assert result == "done" and list(samples) == []
    assert any("couldn't communicate with the NVIDIA driver" in n and "status 9" in n for n in samples.notes)


def test_hanging_tool_is_killed_and_does_not_hold_the_work(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    pidfile = tmp_path / "pid"
    fake_tool(bindir, "nvidia-smi", f"""
        import os, time
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        time.sleep(3600)
        """)
    only_path(monkeypatch, bindir)
    t0 = time.monotonic()
    result, samples = monitor.watch(work([("generating", 0.1)]), tools=["nvidia-smi"], baseline_timeout=1.0)
    took = time.monotonic() - t0
    assert result == "done" and list(samples) == []
    assert took < 6, took
    # the exact wording depends on how far the fake tool got on a loaded machine; a note naming it must exist
    assert any("nvidia-smi" in n for n in samples.notes), samples.notes
    if pidfile.exists():
        assert not pid_alive(int(pidfile.read_text()))


def test_tool_that_hangs_mid_run(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    pidfile = tmp_path / "pid"
    fake_tool(bindir, "nvidia-smi", f"""
        import os, time
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        for i in range(3):
            print("0, 40, 3912, 12288, 56, 83.92, 1320, 0x0000000000000000", flush=True); time.sleep(0.05)
        time.sleep(3600)
        """)
    only_path(monkeypatch, bindir)
    monkeypatch.setattr(sources, "STALL_S", 0.4)
    result, samples = monitor.watch(work([("generating", 1.5)]), interval=0.05, tools=["nvidia-smi"])
    assert result == "done"
    assert 1 <= len(samples) <= 3
    assert any("printed nothing for 0.4 s" in n for n in samples.notes)
    assert not pid_alive(int(pidfile.read_text()))
    assert no_monitor_threads()


def test_tool_that_exits_mid_run(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    fake_tool(bindir, "nvidia-smi", """
        import sys, time
        for i in range(3):
            print("0, 40, 3912, 12288, 56, 83.92, 1320, 0x0000000000000000", flush=True); time.sleep(0.05)
        sys.stderr.write("Unable to determine the device handle for GPU0000:01:00.0: Unknown Error\\n")
        sys.exit(15)
        """)
    only_path(monkeypatch, bindir)
    result, samples = monitor.watch(work([("generating", 0.8)]), interval=0.05, tools=["nvidia-smi"])
    assert result == "done" and len(samples) == 3
    assert any("ended during the run (exited with status 15)" in n for n in samples.notes)


def test_garbage_printing_tool(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    fake_tool(bindir, "nvidia-smi", """
        import time
        while True:
            print("\\x1b[31mGPU go brrr\\x00 %%%% ,,,", flush=True); time.sleep(0.02)
        """)
    only_path(monkeypatch, bindir)
    result, samples = monitor.watch(work([("generating", 0.2)]), tools=["nvidia-smi"], baseline_timeout=0.6)
    assert result == "done" and list(samples) == []
    assert any("nvidia-smi printed nothing readable" in n and "GPU go brrr" in n for n in samples.notes)


def test_broken_amd_smi_falls_back_to_rocm_smi(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    fake_tool(bindir, "amd-smi", "print('Traceback (most recent call last):\\n  ModuleNotFoundError: amdsmi')\n")
    beszel = (FIX / "rocm-smi" / "rx7900xtx-beszel414.json").read_text()
    fake_tool(bindir, "rocm-smi", f"""
        import sys
        assert "--json" in sys.argv and "--showuse" in sys.argv
        print("WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status")
        sys.stdout.write({beszel!r})
        """)
    only_path(monkeypatch, bindir)
    result, samples = monitor.watch(work([("generating", 0.6)]), interval=0.1, tools=["amd-smi", "rocm-smi"])
    assert result == "done"
    assert samples.source == "rocm-smi" and len(samples) >= 2
    assert any(n.startswith("amd-smi: amd-smi printed something unreadable") for n in samples.notes)
    f = monitor.monitor_facts(samples)
    assert f["monitor.vram_total_bytes"] == 25753026560 and f["monitor.temp_max_c"] == 49.0


def test_amd_smi_sampling(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    body = (FIX / "amd-smi" / "rx7800xt-rocm7-gpu-data-ajean39.json").read_text()
    fake_tool(bindir, "amd-smi", f"""
        import sys
        assert sys.argv[1] == "metric" and "--json" in sys.argv
        sys.stdout.write({body!r})
        """)
    only_path(monkeypatch, bindir)
    _, samples = monitor.watch(work([("generating", 0.5)]), interval=0.1, tools=["amd-smi"])
    f = monitor.monitor_facts(samples)
    assert f["monitor.source"] == "amd-smi"
    assert f["monitor.gpu_busy_peak_pct"] == 2.0 and f["monitor.temp_max_c"] == 41.0
    assert f["monitor.vram_others_before_fraction"] == pytest.approx(14569 / 16368, abs=1e-4)
    assert f["monitor.throttle_seen"] is False


def test_per_sample_tool_that_hangs_is_killed(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    counter = tmp_path / "calls"
    beszel = (FIX / "rocm-smi" / "rx7900xtx-beszel414.json").read_text()
    fake_tool(bindir, "rocm-smi", f"""
        import os, sys, time
        p = {str(counter)!r}
        n = int(open(p).read()) if os.path.exists(p) else 0
        open(p, "w").write(str(n + 1))
        if n >= 2:
            time.sleep(3600)
        sys.stdout.write({beszel!r})
        """)
    only_path(monkeypatch, bindir)
    monkeypatch.setattr(sources, "TOOL_TIMEOUT_S", 0.5)
    t0 = time.monotonic()
    result, samples = monitor.watch(work([("generating", 1.5)]), interval=0.05, tools=["rocm-smi"])
    assert result == "done" and time.monotonic() - t0 < 5
    assert len(samples) == 2
    assert any("did not answer within 0.5 s; killed; sampling stopped" in n for n in samples.notes)


def test_amd_smi_throttled_at_idle_does_not_count():
    base = {"source": "amd-smi", "gpu": 0, "busy_pct": 50.0}
    always = [dict(base, t=0.0, phase="before", throttle=["throttle_status"]),
              dict(base, t=0.2, phase="generating", throttle=["throttle_status"])]
    f = monitor.monitor_facts(always)
    assert f["monitor.throttle_seen"] is False and f["monitor.throttle_reasons"] == []
    new = [dict(base, t=0.0, phase="before", throttle=[]),
           dict(base, t=0.2, phase="generating", throttle=["throttle_status"])]
    assert monitor.monitor_facts(new)["monitor.throttle_seen"] is True


def test_work_that_raises_still_stops_the_sampler(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    replay_nvsmi(bindir, "rtx-loop-ksysguard27.csv")
    only_path(monkeypatch, bindir)

    def boom(progress=None):
        progress("loading")
        time.sleep(0.2)
        raise RuntimeError("the work failed")

    with pytest.raises(RuntimeError, match="the work failed"):
        monitor.watch(boom, interval=0.05, tools=["nvidia-smi"])
    assert no_monitor_threads()


def test_work_without_progress_callback_and_positional_args(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    replay_nvsmi(bindir, "rtx-loop-ksysguard27.csv")
    only_path(monkeypatch, bindir)
    result, samples = monitor.watch(lambda a, b: (time.sleep(0.3), a + b)[1], 2, 3, interval=0.05,
                                    tools=["nvidia-smi"])
    assert result == 5
    assert {s["phase"] for s in samples} <= {"before", "running", "after"}
    assert "running" in {s["phase"] for s in samples}


# ---------------------------------------------------------------------------------------------- outputs


def two_gpu_samples() -> list[dict]:
    rows = []
    for i, (phase, b0, v0, b1, v1) in enumerate([("before", 0, 10, 0, 500), ("loading", 0, 10, 5, 2500),
                                                  ("generating", 3, 10, 90, 2600), ("generating", 2, 10, 95, 2600),
                                                  ("after", 0, 10, 0, 500)]):
        rows.append({"t": i * 0.2, "phase": phase, "source": "nvidia-smi", "gpu": 0, "busy_pct": float(b0),
                     "vram_used_bytes": v0 * MIB, "vram_total_bytes": 81920 * MIB, "temp_c": 30.0})
        rows.append({"t": i * 0.2, "phase": phase, "source": "nvidia-smi", "gpu": 1, "busy_pct": float(b1),
                     "vram_used_bytes": v1 * MIB, "vram_total_bytes": 81920 * MIB, "temp_c": 60.0 + i,
                     "power_w": 200.0 + i, "throttle": []})
    return rows


def test_the_gpu_that_did_the_work_is_described():
    s = two_gpu_samples()
    assert monitor.pick_gpu(s) == 1
    f = monitor.monitor_facts(s)
    assert f["monitor.gpu_index"] == 1 and f["monitor.gpu_busy_peak_pct"] == 95.0
    assert f["monitor.gpu_busy_mean_pct"] == 92.5 and f["monitor.vram_growth_bytes"] == 2100 * MIB
    assert f["monitor.temp_max_c"] == 64.0


def test_chart_rows_and_spans():
    rows = monitor.chart_data(two_gpu_samples())
    assert len(rows) == 5
    assert set(rows[0]) == {"t_s", "phase", "busy_pct", "vram_used_gib", "temp_c", "power_w", "sclk_mhz"}
    assert rows[2]["busy_pct"] == 90.0 and rows[2]["vram_used_gib"] == pytest.approx(2600 / 1024, abs=1e-3)
    assert rows[0]["sclk_mhz"] is None
    spans = monitor.phase_spans([s for s in two_gpu_samples() if s["gpu"] == 1])
    assert [p["phase"] for p in spans] == ["before", "loading", "generating", "after"]
    assert spans[2]["start_s"] == pytest.approx(0.4) and spans[2]["end_s"] == pytest.approx(0.8)
    svg = monitor.svg_chart(two_gpu_samples())
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>") and "GPU busy %" in svg


def test_summary_line_reports_throttling():
    s = [{"t": 0.0, "phase": "before", "source": "nvidia-smi", "gpu": 0, "busy_pct": 0.0, "throttle": []},
         {"t": 0.2, "phase": "generating", "source": "nvidia-smi", "gpu": 0, "busy_pct": 99.0,
          "throttle": ["sw_power_cap"]}]
    assert "throttled: sw_power_cap" in monitor.summary_line(s)


def test_monitor_package_needs_only_the_standard_library():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import diagnostics.monitor, diagnostics.generation, "
            "diagnostics.runner; bad = [m for m in ('yaml', 're2', 'streamlit', 'sqlmodel', 'psutil') if m in sys.modules]; "
            "assert not bad, bad; print('ok')")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(ROOT)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# ---------------------------------------------------------------------------------------------- a real generation


def _torch_ok() -> bool:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.mark.skipif(not _torch_ok(), reason="torch and transformers are needed for a real generation")
def test_watch_a_real_generation_on_the_cpu(tmp_path, monkeypatch):
    """The real generation child (built-in tiny model, CPU), watched through a replayed nvidia-smi: its phases
    arrive through run_generation's progress callback and stamp the samples; the result is untouched."""
    from diagnostics.generation import run_generation

    bindir = tmp_path / "bin"
    replay_nvsmi(bindir, "h200-lms-generation.csv")
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    g, samples = monitor.watch(run_generation, interval=0.1, tools=["nvidia-smi"], device="cpu", max_new_tokens=8,
                               compare_cpu=False, timeout=240, cache_dir=str(tmp_path / "cache"))
    assert g["status"] in ("ok", "warn"), g.get("error")
    assert g["new_tokens"] == 8
    phases = {s["phase"] for s in samples}
    # (the tiny model loads, and on one CPU thread generates 8 tokens, faster than one sampling interval, so
    # "loading" and "generating" may hold no sample; importing torch always spans several)
    assert {"before", "importing torch", "after"} <= phases
    order = [p["phase"] for p in monitor.phase_spans(samples)]
    assert order[0] == "before" and order[-1] == "after"
    assert all(order.index("importing torch") < order.index(p) for p in ("loading", "generating") if p in order)
    f = monitor.monitor_facts(samples)
    assert f["monitor.source"] == "nvidia-smi" and f["monitor.samples"] == len(samples)


def _release_fifo(path: Path) -> None:
    """Let a reader stuck opening the FIFO go (it then reads end-of-file)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


def test_sysfs_read_stuck_before_the_run_does_not_hold_the_work(tmp_path, monkeypatch):
    """A sysfs read that never returns (as a driver call can hang): here a FIFO nobody writes to."""
    root = copy_tree("rx7900xtx-beszel414", tmp_path)
    busy = root / "sys/class/drm/card0/device/gpu_busy_percent"
    busy.unlink()
    os.mkfifo(busy)
    only_path(monkeypatch, tmp_path / "bin")
    try:
        t0 = time.monotonic()
        result, samples = monitor.watch(work([("generating", 0.1)]), root=str(root), tools=["sysfs"],
                                        baseline_timeout=1.0)
        assert result == "done" and list(samples) == []
        assert time.monotonic() - t0 < 4
        assert any("sysfs: no first reading within 1.0 s (stuck); abandoned" in n for n in samples.notes)
    finally:
        _release_fifo(busy)


def test_sysfs_read_stuck_mid_run_is_left_behind_with_a_note(tmp_path, monkeypatch):
    root = copy_tree("rx7900xtx-beszel414", tmp_path)
    busy = root / "sys/class/drm/card0/device/gpu_busy_percent"
    only_path(monkeypatch, tmp_path / "bin")

    def fn(progress=None):
        progress("generating")
        time.sleep(0.3)
        busy.unlink()
        os.mkfifo(busy)
        time.sleep(0.3)
        return "done"

    try:
        t0 = time.monotonic()
        result, samples = monitor.watch(fn, interval=0.05, root=str(root), tools=["sysfs"])
        assert result == "done" and len(samples) >= 3
        assert time.monotonic() - t0 < 5
        assert any("did not stop within 2 s (a read is stuck in the driver); left behind" in n for n in samples.notes)
    finally:
        _release_fifo(busy)


def test_stop_waits_for_the_after_reading_not_the_whole_tail(tmp_path, monkeypatch):
    """The end of the work is read once per GPU ("after"), and then the monitor stops: a 30 s tail is an upper
    bound, not a wait (the generation's monitor used to sit through its whole tail at the end of every run)."""
    bindir = tmp_path / "bin"
    replay_nvsmi(bindir, "rtx-loop-ksysguard27.csv")
    only_path(monkeypatch, bindir)
    mon = monitor.Monitor(interval=0.05, tools=["nvidia-smi"], tail_s=30.0)
    mon.start()
    mon.set_phase("generating")
    time.sleep(0.3)
    t0 = time.monotonic()
    samples = mon.stop()
    waited = time.monotonic() - t0
    assert [s for s in samples if s["phase"] == "after"]
    assert {s.get("gpu") for s in samples if s["phase"] == "after"} == {s.get("gpu") for s in samples}
    assert waited < 30.0, waited
    assert no_monitor_threads()
