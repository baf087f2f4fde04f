"""Tests of the collect_env, hipconfig, dmesg and nvidia_smi dump parsers against real pasted outputs.

Every fixture under tests/fixtures/dumps/{collect_env,hipconfig,dmesg,nvidia_smi}/ is a tool output that
someone pasted into a public report, with a sidecar YAML that names the source and lists the facts the
parser must produce (``expect``), must not produce (``absent``) and the tool's error lines it must pass
through verbatim (``errors_contain``, substrings).
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnostics import facts as factcat
from diagnostics.parsers import available_kinds, collect_env, detect_kind, dmesg, hipconfig, nvidia_smi
from diagnostics.parsers import parse as registry_parse
from diagnostics.parsers.base import ParseResult

ROOT = Path(__file__).parent / "fixtures" / "dumps"
REPO = Path(__file__).resolve().parent.parent
MODULES = {"collect_env": collect_env, "hipconfig": hipconfig, "dmesg": dmesg, "nvidia_smi": nvidia_smi}

SIDECARS = [p for kind in MODULES for p in sorted((ROOT / kind).glob("*.yaml"))]
IDS = [f"{p.parent.name}/{p.stem}" for p in SIDECARS]


def _load(sidecar: Path) -> tuple[str, dict]:
    meta = yaml.safe_load(sidecar.read_text(encoding="utf-8"))
    text = sidecar.with_suffix(".txt").read_text(encoding="utf-8", errors="replace")
    return text, meta


def _other_modules():
    from diagnostics.parsers import _module
    return {k: _module(k) for k in available_kinds()}


# --------------------------------------------------------------------------------------------- fixtures


def test_enough_real_fixtures():
    per_kind = {k: len(list((ROOT / k).glob("*.yaml"))) for k in MODULES}
    assert sum(per_kind.values()) >= 18, per_kind
    assert per_kind["collect_env"] >= 8, per_kind
    for kind, n in per_kind.items():
        assert n >= 1, kind


@pytest.mark.parametrize("sidecar", SIDECARS, ids=IDS)
def test_sidecar_is_well_formed(sidecar: Path):
    _, meta = _load(sidecar)
    assert meta["kind"] == sidecar.parent.name
    assert str(meta["source"]).startswith("https://"), "every fixture names the public report it came from"
    assert meta.get("note"), "every fixture says what it is"
    assert sidecar.with_suffix(".txt").exists()
    for name, value in (meta.get("expect") or {}).items():
        assert factcat.check_value(name, value) is None, factcat.check_value(name, value)
    for name in meta.get("absent") or []:
        assert factcat.is_known(name), name


@pytest.mark.parametrize("sidecar", SIDECARS, ids=IDS)
def test_fixture_facts(sidecar: Path):
    text, meta = _load(sidecar)
    kind = meta["kind"]
    res = MODULES[kind].parse(text)
    assert isinstance(res, ParseResult)
    assert res.kind == kind
    for name, want in (meta.get("expect") or {}).items():
        assert res.facts.get(name) == want, f"{name}: want {want!r}, got {res.facts.get(name)!r}"
    for name in meta.get("absent") or []:
        assert name not in res.facts, f"{name} must not be established, got {res.facts[name]!r}"
    for needle in meta.get("errors_contain") or []:
        assert any(needle in e for e in res.errors), f"missing tool error {needle!r} in {res.errors!r}"


@pytest.mark.parametrize("sidecar", SIDECARS, ids=IDS)
def test_fixture_facts_are_catalogued_and_typed(sidecar: Path):
    text, meta = _load(sidecar)
    res = MODULES[meta["kind"]].parse(text)
    _, problems = factcat.clean_facts(res.facts)
    assert problems == []
    assert all(isinstance(n, str) and n for n in res.notes)
    assert all(isinstance(e, str) and e for e in res.errors)


@pytest.mark.parametrize("sidecar", SIDECARS, ids=IDS)
def test_fixture_through_registry_auto(sidecar: Path):
    """The registry's auto-detection picks the right parser and gives the same facts."""
    text, meta = _load(sidecar)
    assert detect_kind(text) == meta["kind"]
    via_registry = registry_parse(text, "auto")
    assert via_registry.kind == meta["kind"]
    assert via_registry.facts == MODULES[meta["kind"]].parse(text).facts


@pytest.mark.parametrize("sidecar", SIDECARS, ids=IDS)
def test_fixture_not_claimed_by_other_parsers(sidecar: Path):
    text, meta = _load(sidecar)
    mods = _other_modules()
    own = float(mods[meta["kind"]].detect(text))
    assert own >= 0.3
    for kind, mod in mods.items():
        if kind != meta["kind"]:
            assert float(mod.detect(text)) < own, f"{kind} claims this {meta['kind']} dump"


def test_other_kinds_fixtures_not_claimed_by_these_parsers():
    """rocminfo / rocm-smi / amd-smi dumps (other parsers' fixtures) must not look like ours."""
    mods = _other_modules()
    for kind in ("rocminfo", "rocm_smi", "amd_smi"):
        if kind not in mods:
            continue
        for txt in sorted((ROOT / kind).glob("*.txt")):
            text = txt.read_text(encoding="utf-8", errors="replace")
            own = float(mods[kind].detect(text))
            for mine, mod in MODULES.items():
                assert float(mod.detect(text)) < max(own, 0.3), f"{mine} claims {kind}/{txt.name}"


# ------------------------------------------------------------------------------------------- robustness


@pytest.mark.parametrize("mod", list(MODULES.values()), ids=list(MODULES))
def test_empty_and_blank_inputs(mod):
    for text in ("", "   ", "\n\n\n", "\r\n"):
        res = mod.parse(text)
        assert res.facts == {}
        assert res.notes
        assert float(mod.detect(text)) == 0.0


def test_every_parser_declares_its_opening():
    """Each registry module's kind is said once, in its Opening; the opening runs inside the guard: a terminal
    capture's colours go before the empty-input check, so a paste of colour codes alone is empty input."""
    from diagnostics.parsers import KINDS, _module
    from diagnostics.parsers.base import Opening
    for kind in KINDS:
        opening = _module(kind).OPENING
        assert isinstance(opening, Opening) and opening.kind == kind
        assert _module(kind).parse("").kind == kind
        if opening.empty:
            assert _module(kind).parse("").notes == ["empty input"]
        if opening.tool:
            assert _module(kind).parse("\x1b[0m\x00 \x1b[1;31m\n").notes == ["empty input"]


@pytest.mark.parametrize("mod", list(MODULES.values()), ids=list(MODULES))
def test_binary_junk(mod):
    blob = bytes(range(256)) * 400 + b"\x00\xff\xfe" * 1000
    text = blob.decode("utf-8", errors="replace")
    res = mod.parse(text)
    assert isinstance(res, ParseResult)
    _, problems = factcat.clean_facts(res.facts)
    assert problems == []


@pytest.mark.parametrize("sidecar", SIDECARS, ids=IDS)
def test_truncated_halves_never_raise(sidecar: Path):
    text, meta = _load(sidecar)
    mod = MODULES[meta["kind"]]
    for part in (text[: len(text) // 2], text[len(text) // 2:], text[: len(text) // 3], text[1:-1]):
        res = mod.parse(part)
        _, problems = factcat.clean_facts(res.facts)
        assert problems == []


@pytest.mark.parametrize("kind", list(MODULES))
def test_ten_megabytes_parse_in_linear_time(kind):
    """A 10 MB paste (fixtures repeated) parses without an exception, in time that grows linearly with its size:
    four times the text costs well under sixteen times the time (a quadratic step would).  A ratio measured in the
    same test, best of two, so a loaded machine slows both sides alike; absolute speed is bench/bench_text.py's."""
    texts = [p.with_suffix(".txt").read_text(encoding="utf-8", errors="replace") for p in SIDECARS
             if p.parent.name == kind]
    unit = "\n".join(texts) + "\n"
    big = unit * (10_000_000 // len(unit) + 1)
    small = big[:len(big) // 4]
    small = small[:small.rfind("\n") + 1]
    assert len(big) >= 10_000_000
    mod = MODULES[kind]

    def cost(text: str) -> float:
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            mod.detect(text)
            res = mod.parse(text)
            best = min(best, time.perf_counter() - t0)
            assert isinstance(res, ParseResult)
        return best

    t_small, t_big = cost(small), cost(big)
    assert t_big < 8 * max(t_small, 0.01), f"{kind}: {t_small:.2f}s for {len(small)} chars, {t_big:.2f}s for {len(big)}"


@pytest.mark.parametrize("kind", list(MODULES))
def test_pathological_long_lines_are_fast(kind):
    """Inputs built to make a backtracking regex crawl: one huge line, and many almost-matching lines."""
    mod = MODULES[kind]
    cases = [
        "GPU 0: " + "a " * 2_000_000,
        ("|   0  " + "x " * 1900 + "\n") * 1200,
        ("File \"" + "a." * 1900 + "\n") * 1200,
        ("Traceback (most recent call last):\n" + "a." * 490 + "Error\n") * 4000,
        ("[    1.000000] " + "amdgpu " * 500 + "\n") * 2500,
        ("HIP_PATH" + " " * 3000 + "x\n") * 3000,
    ]
    for text in cases:
        t0 = time.perf_counter()
        mod.detect(text)
        mod.parse(text)
        assert time.perf_counter() - t0 < 1.5, f"{kind} slow on a crafted input"


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=3000))
def test_fuzz_never_raises(text):
    for mod in MODULES.values():
        res = mod.parse(text)
        score = float(mod.detect(text))
        assert 0.0 <= score <= 1.0
        _, problems = factcat.clean_facts(res.facts)
        assert problems == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([
    "PyTorch version: 2.5.1+rocm6.2", "ROCM used to build PyTorch: N/A", "GPU models and configuration:",
    "GPU 0: NVIDIA A100", "Is CUDA available: Maybe", "[pip3] torch==", "[conda] pytorch", "HIP version: x",
    "== hipconfig", "HIP_PLATFORM :", "ROCM_PATH :/opt/rocm-", "[    1.0] kfd kfd: added device 1002:",
    "[drm] amdgpu: M of VRAM memory ready", "| NVIDIA-SMI 1 Driver Version: CUDA Version:",
    "|   0  X  On  | 0000:01:00.0 Off |", "| 1MiB / MiB |", "FB Memory Usage", "        Total : x MiB",
    "name, memory.total [MiB]", "a, b", "Traceback (most recent call last):", "Error", "",
]), max_size=60))
def test_fuzz_structured_fragments(lines):
    text = "\n".join(lines)
    for mod in MODULES.values():
        res = mod.parse(text)
        _, problems = factcat.clean_facts(res.facts)
        assert problems == []


# ------------------------------------------------------------------------------------- specific behaviour


def test_gfx_targets_keep_hex_digits():
    for arch, gfx in (("gfx90a:sramecc+:xnack-", "gfx90a"), ("gfx90c", "gfx90c"), ("gfx1151", "gfx1151"),
                      ("gfx942:sramecc+:xnack-", "gfx942"), ("gfx1010:xnack-", "gfx1010")):
        text = ("PyTorch version: 2.5.1+rocm6.2\nROCM used to build PyTorch: 6.2.41133-dd7f95766\n"
                f"GPU models and configuration: AMD Radeon Graphics ({arch})\nIs CUDA available: True\n")
        res = collect_env.parse(text)
        assert res.facts["gpu.gfx_targets"] == [gfx]
        assert res.facts["torch.gcn_arch_names"] == [arch]


def test_collect_env_xnack_plus_sets_fact():
    res = collect_env.parse("PyTorch version: 2.3.0+rocm6.0\nGPU models and configuration: "
                            "AMD Instinct MI300A (gfx942:sramecc+:xnack+)\n")
    assert res.facts["gpu.xnack_enabled"] is True


def test_collect_env_torch_import_failure_traceback():
    text = ("Collecting environment information...\nTraceback (most recent call last):\n"
            '  File "/usr/lib/python3.12/site-packages/torch/utils/collect_env.py", line 12, in <module>\n'
            "    import torch\n"
            '  File "/usr/lib/python3.12/site-packages/torch/__init__.py", line 367, in <module>\n'
            "    from torch._C import *  # noqa: F403\n"
            "ImportError: libamdhip64.so: cannot enable executable stack as shared object requires: "
            "Invalid argument\n")
    res = collect_env.parse(text)
    assert res.facts["torch.import_error"].startswith("ImportError: libamdhip64.so: cannot enable executable stack")
    assert res.errors and res.errors[-1].startswith("ImportError")


def test_collect_env_pytorch_na_with_pip_torch():
    text = ("PyTorch version: N/A\nIs debug build: N/A\nCUDA used to build PyTorch: N/A\n"
            "ROCM used to build PyTorch: N/A\n\nVersions of relevant libraries:\n[pip3] numpy==1.26.4\n"
            "[pip3] torch==2.4.0+rocm6.1\n[pip3] transformers==4.44.0\n[pip3] nvidia-cublas-cu12==12.1.3.1\n"
            "[pip3] bitsandbytes==0.43.1\n[pip3] vllm==0.6.0+rocm614\n")
    res = collect_env.parse(text)
    assert res.facts["torch.installed"] is True
    assert "torch.version" not in res.facts and "torch.build" not in res.facts
    assert res.facts["pkg.transformers"] == "4.44.0"
    assert res.facts["pkg.bitsandbytes"] == "0.43.1"
    assert res.facts["pkg.nvidia_wheels"] == ["nvidia-cublas-cu12"]
    assert res.facts["pkg.vllm"] == "0.6.0+rocm614" and res.facts["pkg.vllm_build"] == "rocm"
    assert any("N/A" in n for n in res.notes)


def test_collect_env_two_torch_distributions():
    text = ("PyTorch version: 2.1.0\nVersions of relevant libraries:\n[pip3] torch==2.1.0\n"
            "[pip3] torch-rocm==2.0.0\n")
    assert collect_env.parse(text).facts["pkg.torch_duplicates"] == ["torch-rocm==2.0.0", "torch==2.1.0"]


def test_hipconfig_one_value_options():
    res = hipconfig.parse("6.2.41133-dd7f95766")  # hipconfig --version prints no newline
    assert res.facts == {"hip.runtime_version": "6.2.41133"}
    assert hipconfig.parse("amd\n").facts == {"hip.platform": "amd"}
    assert hipconfig.parse("nvcc").facts == {"hip.platform": "nvidia"}
    assert hipconfig.parse("/opt/rocm-6.4.1").facts == {"rocm.path": "/opt/rocm-6.4.1", "rocm.version": "6.4.1"}
    assert hipconfig.parse("/opt/rocm\n").facts == {"rocm.path": "/opt/rocm"}
    assert detect_kind("6.2.41133-dd7f95766") == "hipconfig"


def test_hipconfig_env_section_gpu_variables_only():
    text = ("HIP version  : 5.7.31921-d1770ee1b\n\n== hipconfig\nHIP_PLATFORM : amd\n\n"
            "=== Environment Variables\nPATH=/usr/bin\nHSA_OVERRIDE_GFX_VERSION=10.3.0\n"
            "HIP_VISIBLE_DEVICES=0\nHOME=/root\n")
    res = hipconfig.parse(text)
    assert res.facts["env.HSA_OVERRIDE_GFX_VERSION"] == "10.3.0"
    assert res.facts["env.HIP_VISIBLE_DEVICES"] == "0"
    assert res.facts["env.set_names"] == ["HIP_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION"]
    assert "env.PATH" not in res.facts and "env.HOME" not in res.facts


def test_dmesg_secure_boot_and_blacklist_lines():
    text = ("[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) (x86_64-linux-gnu-gcc-13) #45-Ubuntu\n"
            "[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic ro quiet modprobe.blacklist=amdgpu\n"
            "[    0.004000] secureboot: Secure boot enabled\n"
            "[    3.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n")
    f = dmesg.parse(text).facts
    assert f["os.kernel"] == "6.8.0-45-generic"
    assert f["os.secure_boot"] is True
    assert f["driver.amdgpu_blacklisted"] is True
    assert f["driver.nvidia_loaded"] is True and f["nvidia.driver_version"] == "550.54.15"
    assert dmesg.parse("[    0.0] secureboot: Secure boot disabled\n").facts["os.secure_boot"] is False


def test_dmesg_restricted_buffer_is_a_tool_error():
    res = dmesg.parse("dmesg: read kernel buffer failed: Operation not permitted\n")
    assert res.errors == ["dmesg: read kernel buffer failed: Operation not permitted"]
    assert res.facts == {}
    assert any("dmesg_restrict" in n for n in res.notes)
    assert detect_kind("dmesg: read kernel buffer failed: Operation not permitted\n") == "dmesg"


def test_dmesg_wsl_kernel():
    text = "[    0.000000] Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 11.2.0) #1 SMP\n"
    f = dmesg.parse(text).facts
    assert f["container.kind"] == "wsl" and f["container.present"] is True


def test_nvidia_smi_csv_with_header():
    text = ("name, driver_version, memory.total [MiB], memory.used [MiB], compute_cap\n"
            "NVIDIA L40S, 575.51.03, 46068 MiB, 1 MiB, 8.9\n"
            "NVIDIA L40S, 575.51.03, 46068 MiB, 3 MiB, 8.9\n")
    f = nvidia_smi.parse(text).facts
    assert f["gpu.count"] == 2
    assert f["gpu.names"] == ["NVIDIA L40S", "NVIDIA L40S"]
    assert f["nvidia.driver_version"] == "575.51.03"
    assert f["gpu.vram_total_bytes"] == 46068 * 1024 * 1024
    assert f["nvidia.compute_caps"] == ["sm_89"]
    assert detect_kind(text) == "nvidia_smi"


def test_nvidia_smi_error_first_line_only():
    text = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
            "Make sure that the latest NVIDIA driver is installed and running.\n")
    f = nvidia_smi.parse(text).facts
    assert f["nvidia.smi_error"] == "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


def test_registry_truncates_huge_input_with_note():
    text = "x" * (9 * 1024 * 1024)
    res = registry_parse(text, "dmesg")
    assert any("only the first part" in n for n in res.notes)


# -------------------------------------------------------------------------------------------------- CLI


def test_cli_parse_json_on_a_fixture(tmp_path):
    """`python -m diagnostics parse FILE --kind K --json` returns the parser's facts."""
    import json
    fixture = ROOT / "collect_env" / "rocm7.2_radeon8060s_wsl2.txt"
    for kind in ("collect_env", "auto"):
        proc = subprocess.run([sys.executable, "-m", "diagnostics", "parse", str(fixture), "--kind", kind, "--json"],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        doc = out[0] if isinstance(out, list) else out
        assert doc["kind"] == "collect_env"
        assert doc["facts"]["gpu.gfx_targets"] == ["gfx1151"]
        assert doc["facts"]["torch.build"] == "rocm"


# --------------------------------------------------------------------------------------------- collectors' layers


def _docker_json(text: str) -> str:
    """*text* as docker's json-file log driver stores a container's stdout, one JSON record a line."""
    import json as _json
    return "\n".join(_json.dumps({"log": ln + "\n", "stream": "stdout", "time": "2024-05-01T12:00:00.123456789Z"})
                     for ln in text.split("\n"))


def _cri(text: str) -> str:
    """*text* as a CRI log file (kubelet, `kubectl logs --timestamps` of containerd) holds it."""
    return "\n".join(f"2024-05-01T12:00:{i % 60:02d}.123456789Z stdout F {ln}" for i, ln in enumerate(text.split("\n")))


@pytest.mark.parametrize("fixture", ["rocminfo/rocm53-rx6800-gfx1030", "collect_env/rocm5.7_rx7900xtx_torch2.0",
                                     "nvidia_smi/table_r396_gtx1070_with_processes"])
def test_a_dump_behind_a_log_collector_gives_the_same_facts(fixture):
    """A real dump read out of docker's json-file log or a CRI log file (its stream tag after the timestamp)."""
    text = (ROOT / f"{fixture}.txt").read_text(encoding="utf-8", errors="replace")
    want = registry_parse(text).facts
    assert want
    assert registry_parse(_cri(text)).facts == want
    assert registry_parse(_docker_json(text)).facts == want


def test_windows_paths_are_not_read_as_escapes():
    """A Windows collect_env (backslashes in its paths, tuning 007's kind of traceback) parses as it did."""
    from diagnostics.parsers import normalised
    line = '  File "D:\\anaconda3\\envs\\script\\lib\\site-packages\\torch\\nn\\modules\\module.py", line 688, in cuda'
    assert normalised("a\nb\n" + line) == "a\nb\n" + line
    for sidecar in sorted((ROOT / "collect_env").glob("*win*.yaml")):
        text, meta = _load(sidecar)
        assert all(registry_parse(text).facts.get(k) == v for k, v in meta["expect"].items()), sidecar.name


def test_dmesg_with_terminal_colours():
    """`dmesg --color=always` colours the stamp and the facility: the kernel's lines are read through them."""
    text, meta = _load(ROOT / "dmesg" / "secure_boot_disabled_lines.yaml")
    coloured = "\n".join(f"\x1b[32m{ln[:15]}\x1b[0m{ln[15:]}" if ln.startswith("[") else ln for ln in text.split("\n"))
    assert registry_parse(coloured).facts.get("os.secure_boot") is False
    assert registry_parse(text).facts.get("os.secure_boot") is False
