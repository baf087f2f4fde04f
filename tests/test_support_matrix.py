"""The GPU support matrix (kb/support/gpu-matrix.yaml): lint, derived facts, computed install commands and the
fix-text placeholders in every output format."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from diagnostics import service, support
from diagnostics.kb import KBError, parse_entry
from diagnostics.report import render_report

ROOT = Path(__file__).resolve().parent.parent
M = support.get_matrix(ROOT / "kb")
# the scenarios this part added (tests/scenarios/) run in tests/test_scenarios.py, the shared runner


def test_shipped_matrix_lints_clean_and_covers_the_targets():
    assert M.errors == []
    for g in ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011",
              "gfx1012", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx1100",
              "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1200", "gfx1201", "gfx803"):
        assert g in M.amd, g
        assert all(s in M.sources for s in M.amd[g]["source"])
    for c in ("sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"):
        assert c in M.nvidia, c


# every target some safe wheel (torch >= 2.6) carries: the computed command must point to a folder whose listed
# wheel carries it
SAFE = [w for w in M.wheels if tuple(int(x) for x in w.torch.split(".")[:2]) >= support.MIN_SAFE_TORCH]
CARRIED_AMD = sorted({a for w in SAFE if w.stack == "rocm" and w.archs for a in w.archs})
CARRIED_NV = sorted({a for w in SAFE if w.stack == "cuda" and w.archs for a in w.archs if a in M.nvidia}
                    | {c for c in M.nvidia if any(w.archs and support.arch_runs(c, w.archs) for w in SAFE)})


@pytest.mark.parametrize("target", CARRIED_AMD + CARRIED_NV)
def test_install_command_points_to_a_wheel_that_carries_the_target(target):
    key = "gpu.gfx_targets" if target.startswith("gfx") else "nvidia.compute_caps"
    inst = support.recommend_install({key: [target]}, M)
    assert inst is not None and inst.override is None
    assert inst.wheel.archs and support.arch_runs(target, inst.wheel.archs) and inst.wheel.runs(target)
    cmd = inst.command()
    # the pip of the interpreter that imports torch, never whichever `pip` is first on PATH (torch-not-installed)
    assert cmd.startswith("python -m pip uninstall -y torch torchvision torchaudio && python -m pip install ")
    # the check names an entry the wheel's get_arch_list() really prints, and that entry's code runs the target
    (arch, tgt), = inst.checks()
    assert tgt == target and arch in inst.wheel.archs and support.arch_runs(target, [arch])
    w = inst.wheel
    if w.device_extras:
        # AMD's multi-arch index: the GPU's device extra on torch and torchvision, versions with the folder's tag
        m = re.search(r'pip install "torch\[device-(\S+)\]==(\S+)\+(\S+)" "torchvision\[device-\1\]==(\S+)\+\3" '
                      r'"torchaudio==(\S+)\+\3" --index-url (\S+)$', cmd)
        assert m and m.group(1) == target and m.group(6) == w.index_url, cmd
        got = (m.group(3), m.group(2), m.group(4), m.group(5))
    else:
        m = re.search(r"pip install torch==(\S+) torchvision==(\S+) torchaudio==(\S+) --index-url (\S+)$", cmd)
        assert m, cmd
        url = m.group(4)
        folder = url[len(support.INDEX_BASE):] if url.startswith(support.INDEX_BASE) else w.folder
        assert url == w.index_url and (url.startswith(support.INDEX_BASE) or w.index_kind == "pypi"), cmd
        got = (folder, m.group(1), m.group(2), m.group(3))
    listed = [x for x in M.wheels if x.folder == got[0] and x.torch == got[1]]
    assert listed and listed[0].torchvision == got[2] and listed[0].torchaudio == got[3]
    assert "--extra-index-url" not in cmd


@pytest.mark.parametrize("gfx,override", [("gfx1031", "10.3.0"), ("gfx1032", "10.3.0"), ("gfx1034", "10.3.0"),
                                          ("gfx1035", "10.3.0"), ("gfx1036", "10.3.0")])
def test_overridable_targets_get_the_family_value_and_a_wheel_with_the_sibling(gfx, override):
    inst = support.recommend_install({"gpu.gfx_targets": [gfx]}, M)
    assert inst is not None and inst.override == override
    assert support.override_to_gfx(override) in inst.wheel.archs


def test_gfx1103_gets_the_first_wheel_built_for_it_not_the_override():
    # torch 2.13's rocm7.2 build script lists gfx1103 (pytorch#179653), and so does 2.14's; the 11.0.0 override is
    # what page-faults
    inst = support.recommend_install({"gpu.gfx_targets": ["gfx1103"]}, M)
    assert inst is not None and inst.override is None and "gfx1103" in inst.wheel.archs
    assert (inst.wheel.folder, inst.wheel.torch) == ("rocm7.2", "2.14.0")


def test_torchaudio_of_torch_2_12_and_newer_is_2_11():
    # torchaudio's last release is 2.11, declared for torch 2.11 and every later release (pytorch/audio#4212);
    # a trio naming torchaudio==2.12.0 or 2.13.0 cannot be installed
    late = [w for w in M.wheels if tuple(int(x) for x in w.torch.split(".")[:2]) >= (2, 11)]
    # (2.11.1 with torch 2.15.0 on PyPI, measured in audit part 7: the py3-none stable-ABI build runs under 2.15)
    # (AMD's ROCm 10.1.0 index publishes it as 2.11.0.3+rocm10.1.0, audit part 8)
    assert late and all(w.torchaudio in ("2.11.0", "2.11.1", "2.11.0.3") for w in late), [(w.folder, w.torch, w.torchaudio) for w in late]
    cmd = support.recommend_install({"gpu.gfx_targets": ["gfx1030"]}, M).command()
    assert "torchaudio==2.11.0" in cmd and "torch==2.14.0" in cmd


def test_newest_cuda_wheels_are_the_measured_cu130_lists():
    # the PyPI +cu130 wheels of 2.12-2.14 carry sm_75 ... sm_120 and no PTX (measured, audit part 4); a current
    # driver gets the newest of them, a 12.x-only driver the cu126 build, which still has Pascal
    for w in M.wheels:
        if w.folder == "cu130":
            assert w.archs == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], (w.torch, w.archs)
    inst = support.recommend_install({"nvidia.compute_caps": ["sm_89"], "nvidia.driver_version": "580.95.05",
                                      "nvidia.cuda_version": "13.0"}, M)
    assert inst is not None and (inst.wheel.folder, inst.wheel.torch) == ("cu130", "2.14.1")
    inst = support.recommend_install({"nvidia.compute_caps": ["sm_61"], "nvidia.driver_version": "580.95.05",
                                      "nvidia.cuda_version": "13.0"}, M)
    assert inst is not None and (inst.wheel.folder, inst.wheel.torch) == ("cu126", "2.14.0")
    inst = support.recommend_install({"nvidia.compute_caps": ["sm_120"], "nvidia.driver_version": "570.86.10",
                                      "nvidia.cuda_version": "12.8"}, M)
    assert inst is not None and inst.wheel.folder == "cu128"


def test_targets_whose_libraries_a_wheel_lacks_get_an_older_wheel_that_has_them():
    # gfx900/gfx906 are in get_arch_list() of the rocm7.2 wheels, but their rocBLAS has no Tensile files for them
    # (pytorch#179865): the install is the newest wheel whose libraries still serve them
    lacking = [w for w in M.wheels if "gfx906" in w.libs_missing]
    assert lacking and all("gfx906" in (w.archs or []) and not w.runs("gfx906") for w in lacking)
    for g in ("gfx900", "gfx906"):
        inst = support.recommend_install({"gpu.gfx_targets": [g]}, M)
        assert inst is not None and inst.wheel not in lacking and inst.wheel.runs(g)
        assert support.MIN_SAFE_TORCH <= tuple(int(x) for x in inst.wheel.torch.split(".")[:2])


def test_libs_missing_must_name_listed_archs():
    text = (ROOT / "kb/support/gpu-matrix.yaml").read_text(encoding="utf-8")
    bad = text.replace("libs_missing: [gfx900, gfx906], source: [uv-18730", "libs_missing: [gfx1031], source: [uv-18730", 1)
    assert bad != text
    errs = support.parse_matrix(bad, "m.yaml").errors
    assert any("libs_missing" in e.message for e in errs), errs


def test_never_recommends_rocm62_for_targets_it_lacks():
    for g in ("gfx1101", "gfx1102", "gfx1200", "gfx1201", "gfx1150", "gfx1151"):
        inst = support.recommend_install({"gpu.gfx_targets": [g]}, M)
        assert inst is not None and inst.wheel.folder != "rocm6.2" and g in inst.wheel.archs


def test_old_driver_limits_the_cuda_folder():
    inst = support.recommend_install({"nvidia.compute_caps": ["sm_86"], "nvidia.cuda_version": "12.6",
                                      "nvidia.driver_version": "560.35.03"}, M)
    assert inst is not None and inst.wheel.folder == "cu126"
    assert support.recommend_install({"nvidia.compute_caps": ["sm_86"], "nvidia.cuda_version": "11.4"}, M) is None


@pytest.mark.parametrize("facts,expect", [
    # RX 6700 XT, torch 2.5.1+rocm6.2 (arch list from the matrix), no override: missing, value 10.3.0
    ({"torch.build": "rocm", "torch.version": "2.5.1+rocm6.2", "gpu.gfx_targets": ["gfx1031"]},
     {"torch.arch_supported": False, "support.override_status": "missing", "support.override_recommended": "10.3.0",
      "support.official": False, "support.native_bf16": False, "support.torch_archs_source": "matrix"}),
    # the right override in force: live probe reads the native target from sysfs
    ({"torch.build": "rocm", "torch.version": "2.5.1+rocm6.2", "gpu.native_gfx_targets": ["gfx1031"],
      "hsa_override.value": "10.3.0"},
     {"torch.arch_supported": True, "support.override_status": "ok"}),
    # 11.0.0 on an RX 7900 XTX whose target the wheel carries: unnecessary
    ({"torch.build": "rocm", "torch.arch_list": ["gfx1030", "gfx1100"], "gpu.native_gfx_targets": ["gfx1100"],
      "hsa_override.value": "11.0.0"}, {"support.override_status": "unnecessary", "support.official": True}),
    # 11.0.0 on RDNA2: wrong
    ({"torch.build": "rocm", "torch.arch_list": ["gfx1030", "gfx1100"], "gpu.native_gfx_targets": ["gfx1031"],
      "hsa_override.value": "11.0.0"}, {"support.override_status": "wrong"}),
    # RX 7800 XT with a torch 2.7.1+rocm6.3 wheel that carries gfx1101: no override needed
    ({"torch.build": "rocm", "torch.version": "2.7.1+rocm6.3", "gpu.gfx_targets": ["gfx1101"], "rocm.version": "6.4.2"},
     {"torch.arch_supported": True, "support.override_status": "not-needed", "support.official": True,
      "support.native_bf16": True}),
    # the GPU known only by its marketing name (collect_env)
    ({"torch.build": "rocm", "torch.version": "2.5.1+rocm6.2", "gpu.names": ["AMD Radeon RX 6600 XT"]},
     {"support.targets": ["gfx1032"], "support.override_recommended": "10.3.0"}),
    # NVIDIA: sm_89 runs sm_86 code of a cu126 wheel; a cu128 2.11 wheel lacks sm_70
    ({"torch.build": "cuda", "torch.version": "2.11.0+cu126", "nvidia.compute_caps": ["sm_89"]},
     {"torch.arch_supported": True, "support.native_bf16": True}),
    ({"torch.build": "cuda", "torch.version": "2.11.0+cu128", "nvidia.compute_caps": ["sm_70"]},
     {"torch.arch_supported": False, "torch.unsupported_archs": ["sm_70"], "support.native_bf16": False}),
])
def test_derived_facts(facts, expect):
    got = support.derive_support(facts, M)
    for k, v in expect.items():
        assert got.get(k) == v, (k, got)


def test_unknown_stays_unknown():
    # a nightly whose arch list the matrix does not hold: no prediction about code for the GPU
    got = support.derive_support({"torch.build": "rocm", "torch.version": "2.7.0.dev20250123+rocm6.3",
                                  "gpu.gfx_targets": ["gfx1010"]}, M)
    assert "torch.arch_supported" not in got and "support.override_status" not in got
    # a wheel listed without a measured arch list is never recommended
    assert all(w.archs for w in M.wheels if support.recommend_install({"gpu.gfx_targets": ["gfx1100"]}, M).wheel is w)


# ---------------------------------------------------------------------------------------------- lint

def test_matrix_errors_carry_file_line_column(tmp_path):
    text = (ROOT / "kb" / "support" / "gpu-matrix.yaml").read_text(encoding="utf-8")
    bad = re.sub(r"(- \{gfx: gfx1031,[^\n]*override: )'10\.3\.0'", r"\1'10.3'", text, count=1)
    assert bad != text
    bad = bad.replace("native_bf16: true, override: null, source: [rocm-compat]}", "native_bf16: yes-please, override: null, source: [nowhere]}", 1)
    m = support.parse_matrix(bad, "kb/support/gpu-matrix.yaml")
    msgs = [str(e) for e in m.errors]
    assert any(re.match(r"kb/support/gpu-matrix\.yaml:\d+:\d+: override must be", x) for x in msgs), msgs
    assert any("native_bf16 must be true or false" in x for x in msgs)
    assert any("unknown source 'nowhere'" in x for x in msgs)
    line_of = {e.message.split(" ")[0]: e.line for e in m.errors}
    assert bad.split("\n")[line_of["override"] - 1].lstrip().startswith("- {gfx: gfx1031")
    m2 = support.parse_matrix(text.replace("folder: rocm6.3\n", "folder: rocm6.9\n"), "x.yaml")
    assert any("folder 'rocm6.9' does not match rocm 6.3" in e.message for e in m2.errors)
    m3 = support.parse_matrix(text + "\nextra: 1\n", "x.yaml")
    assert any(e.message.startswith("unknown key 'extra'") and e.col == 1 for e in m3.errors)


def test_kb_lint_runs_the_matrix(tmp_path, capsys):
    import shutil

    from diagnostics.cli import main

    kb = tmp_path / "kb"
    (kb / "support").mkdir(parents=True)
    shutil.copy(ROOT / "kb" / "hip-no-binary-for-gpu.yaml", kb)
    (kb / "support" / "gpu-matrix.yaml").write_text("checked: 2026-13-01\nsources: {}\namd: []\nnvidia: []\n"
                                                     "wheels: []\ncuda_min_driver: []\nbogus: 1\n", encoding="utf-8")
    assert main(["kb", "--kb", str(kb), "lint"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"gpu-matrix\.yaml:7:1: unknown key 'bogus'", out), out


def test_lint_refuses_unknown_placeholder_with_position():
    src = (ROOT / "kb" / "hip-no-binary-for-gpu.yaml").read_text(encoding="utf-8")
    bad = src.replace("{torch_install}.", "{torch_instal}.", 1)
    with pytest.raises(KBError) as exc:
        parse_entry(bad, "kb/hip-no-binary-for-gpu.yaml", "hip-no-binary-for-gpu")
    e = exc.value
    assert "unknown placeholder {torch_instal}" in e.message
    line = bad.split("\n")[e.line - 1]
    assert line[e.col - 1:].startswith("{torch_instal}")
    # shell and awk braces are not placeholders
    ok = src.replace("then try again.", "then try again (`${HOME}`, `awk '{print $2}'`).", 1)
    parse_entry(ok, "kb/hip-no-binary-for-gpu.yaml", "hip-no-binary-for-gpu")


# ---------------------------------------------------------------------------------------------- placeholders

def _scenario(name):
    return yaml.safe_load((ROOT / "tests" / "scenarios" / name).read_text(encoding="utf-8"))


def test_placeholders_filled_in_every_output(tmp_path):
    sc = _scenario("rx6700xt-gfx1031-rocm62-no-override.yaml")
    res = service.diagnose_text(dumps=[(d["name"], d["text"]) for d in sc["dumps"]])
    d = next(x for x in res["diagnoses"] if x["id"] == "hip-no-binary-for-gpu")
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in d["fix"] and "{" not in d["fix"].replace("${", "")
    assert "{torch_install}" in d["fix_template"]
    assert "--index-url https://download.pytorch.org/whl/rocm" in d["fix"] and "rocm6.2`" not in d["fix"]
    # JSON
    js = json.dumps(res, ensure_ascii=False)
    assert "{torch_install}" not in json.dumps([{k: v for k, v in x.items() if not k.endswith("_template")}
                                                for x in res["diagnoses"]])
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in js
    # text report, English and Chinese
    report = dict(service.new_report("pasted"), **{k: res[k] for k in ("facts", "diagnoses", "not_ruled_out")})
    for lang in ("en", "zh"):
        from diagnostics.i18n import localize_diagnoses

        shown = dict(report, diagnoses=localize_diagnoses(report["diagnoses"], service.get_kb()[0], lang))
        txt = render_report(shown, lang=lang)
        assert "10.3.0" in txt and "{torch_install}" not in txt and "{override}" not in txt, lang
    # a saved session and its export keep the filled text; re-diagnosis fills again
    again = service.rediagnose(dict(report, probes=[], logs=[]))
    d2 = next(x for x in again["diagnoses"] if x["id"] == "hip-no-binary-for-gpu")
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in d2["fix"]


def test_unknown_values_become_readable_words():
    vals = support.placeholder_values({}, M)
    assert all(v is None for v in vals.values())
    text = "1. Install: {torch_install}. 2. Set `HSA_OVERRIDE_GFX_VERSION={override}` for {gfx} ({rocm_version}, {cuda_version}) from {torch_index_url}."
    for lang in ("en", "zh"):
        out = support.fill(text, vals, lang)
        assert not support.placeholders_in(out), out
        assert "download.pytorch.org/whl/" in out


# ---------------------------------------------------------------------------------------------- the tool's own dtype

def test_generation_picks_bf16_only_on_native_bf16_targets():
    from diagnostics.generation import child_argv, native_bf16_targets

    t = set(native_bf16_targets())
    assert {"gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1151", "gfx1201", "sm_80", "sm_86",
            "sm_89", "sm_90", "sm_120"} <= t
    assert not t & {"gfx900", "gfx906", "gfx1010", "gfx1030", "gfx1031", "sm_61", "sm_70", "sm_75"}
    argv = child_argv("python", None, "auto", 4, False, "/tmp/x")
    assert argv[argv.index("--bf16-targets") + 1].split(",") == sorted(t)
    assert "--bf16-targets" not in child_argv("python", None, "auto", 4, False, "/tmp/x", dtype="float16")


def test_generation_child_target_lookup_falls_back_without_a_gpu():
    torch = pytest.importorskip("torch")
    from diagnostics.generation import child

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible; this checks the no-GPU fallback")
    assert child.gpu_target(torch) is None  # -> float16, never a bf16 guess
    assert child.bf16_targets(" gfx1100, sm_90 ,") == {"gfx1100", "sm_90"}


@pytest.mark.parametrize("name,target", [
    ("AMD Radeon RX 6700 XT", "gfx1031"), ("Radeon 8060S Graphics", "gfx1151"), ("AMD Radeon RX 7900 XTX", "gfx1100"),
    ("AMD Radeon RX 7600 XT", "gfx1102"), ("NVIDIA A100-SXM4-80GB", "sm_80"), ("NVIDIA A10", "sm_86"),
    ("NVIDIA H100 80GB HBM3", "sm_90"), ("Tesla T4", "sm_75"), ("AMD Radeon Graphics", None),
    ("AMD Ryzen 7 9800X3D 8-Core Processor", None)])
def test_marketing_names_map_to_targets(name, target):
    # names as rocminfo, collect_env and nvidia-smi print them (fixtures under tests/fixtures/dumps)
    assert M.target_from_name(name) == target


def test_kb_matrix_command(capsys):
    from diagnostics.cli import main

    assert main(["kb", "matrix", "gfx1031", "AMD Radeon RX 7800 XT", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["target"] for r in rows] == ["gfx1031", "gfx1101"]
    assert rows[0]["override"] == "10.3.0" and rows[0]["install_needs_override"] == "10.3.0"
    assert "rocm6.2/torch-2.5.1" not in rows[1]["wheels"] and "rocm7.2/torch-2.11.0" in rows[1]["wheels"]
    assert main(["kb", "matrix", "Voodoo 5"]) == 2


def test_computed_install_never_goes_below_the_safe_torch():
    """An old NVIDIA driver or an old GPU may only allow wheels before torch 2.6 (whose torch.load runs code from a
    crafted file even with weights_only=True): no install is computed then, rather than a vulnerable one."""
    from diagnostics.support import MIN_SAFE_TORCH, get_matrix, recommend_install

    m = get_matrix()
    seen_none = 0
    for cap in sorted(m.nvidia):
        for drv, cuda in (("450.80.02", "11.0"), ("470.82.01", "11.4"), ("525.60.13", "12.0"), ("580.95.05", "13.0")):
            ins = recommend_install({"nvidia.compute_caps": [cap], "torch.build": "cuda",
                                     "nvidia.driver_version": drv, "nvidia.cuda_version": cuda}, m)
            if ins is None:
                seen_none += 1
                continue
            assert tuple(int(x) for x in ins.wheel.torch.split(".")[:2]) >= MIN_SAFE_TORCH, (cap, drv, ins.command())
    for gfx in sorted(m.amd):
        ins = recommend_install({"gpu.gfx_targets": [gfx], "torch.build": "rocm"}, m)
        if ins is not None:
            assert tuple(int(x) for x in ins.wheel.torch.split(".")[:2]) >= MIN_SAFE_TORCH, (gfx, ins.command())
    assert seen_none > 0  # an 11.0 driver allows no safe wheel: nothing is computed


def test_no_family_value_is_offered_where_no_override_can_work():
    """gfx1102 next to gfx1103 with a build that carries gfx1100: 11.0.0 would run the first, nothing runs the second
    (support.override_status "impossible"), so {override} says that instead of a family's generic value."""
    facts = {"torch.build": "rocm", "torch.arch_list": ["gfx1030", "gfx1100"], "gpu.gfx_targets": ["gfx1102", "gfx1103"]}
    facts.update(support.derive_support(facts))
    assert facts["support.override_status"] == "impossible"
    vals = support.report_values(facts)
    en = support.fill("`export HSA_OVERRIDE_GFX_VERSION={override}`", vals)
    zh = support.fill("`export HSA_OVERRIDE_GFX_VERSION={override}`", vals, "zh")
    assert "gfx1102 + gfx1103" in en and "HIP_VISIBLE_DEVICES" in en and "RDNA" not in en
    assert "gfx1102 + gfx1103" in zh and "RDNA" not in zh
    one = {"torch.build": "rocm", "torch.arch_list": ["gfx1030", "gfx1100"], "gpu.gfx_targets": ["gfx1031"]}
    assert support.fill("{override}", support.report_values(one)) == "10.3.0"


@pytest.mark.parametrize("facts, want", [
    # no torch facts at all (a pasted rocminfo): the GPU's own row gives the sibling, or says none is known
    ({"gpu.gfx_targets": ["gfx1031"]}, "10.3.0"),
    ({"gpu.gfx_targets": ["gfx1103"]}, "none known to work for gfx1103"),
    # a ROCm torch whose wheel folder the matrix has not measured (its GPU list is unknown)
    ({"torch.build": "rocm", "torch.version": "2.6.0+rocm6.2.4", "torch.wheel_folder": "rocm6.2.4",
      "gpu.names": ["AMD Radeon 780M Graphics"]}, "none known to work for gfx1103"),
])
def test_the_override_comes_from_the_gpus_row_when_the_torch_gpu_list_is_unknown(facts, want):
    facts = dict(facts)
    facts.update(support.derive_support(facts))
    en = support.fill("{override}", support.report_values(facts))
    assert want in en and "RDNA2: 10.3.0" not in en, en


# ---------------------------------------------------------------------------------------------- newer installed torch

@pytest.mark.parametrize("facts", [
    {"torch.version": "2.15.0+cu130", "torch.build": "cuda", "nvidia.compute_caps": ["sm_89"],
     "nvidia.driver_version": "580.95.05", "nvidia.cuda_version": "13.0"},
    {"torch.version": "2.15.0+rocm7.2", "torch.build": "rocm", "gpu.gfx_targets": ["gfx1100"]},
])
def test_a_torch_newer_than_every_established_wheel_is_told_the_install_is_older(facts):
    """Issue 15: torch 2.15.0 is on PyPI but the matrix has no established 2.15 arch list (audit part 6), so the
    computed command is a 2.14 trio. It must say that it is older than the installed torch and when to keep it,
    in English and Chinese, instead of reading as the current release."""
    inst = support.recommend_install(facts, M)
    assert inst is not None and inst.newer_installed == "2.15.0"
    assert tuple(int(x) for x in inst.wheel.torch.split(".")) < (2, 15, 0)
    vals = support.report_values(facts, M)
    en = support.fill("{torch_install}", vals)
    zh = support.fill("{torch_install}", vals, "zh")
    (arch, _), = inst.checks()
    assert "older than your torch 2.15.0" in en and f"lists `{arch}`" in en and "keep your torch" in en
    assert "比你已安装的 torch 2.15.0 旧" in zh and f"已列出 `{arch}`" in zh


@pytest.mark.parametrize("facts,arch", [
    # GTX 9xx / GTX 10xx / RTX 40xx: the wheels computed for them (cu126 2.14.0, PyPI's cu132 2.15.0) list sm_50,
    # sm_60 and sm_86, never the GPU's own capability; a same-major lower-minor cubin runs there (CUDA programming
    # guide, binary compatibility), so the check names what get_arch_list() prints (audit15g finding 1)
    ({"nvidia.compute_caps": ["sm_52"]}, "sm_50"),
    ({"nvidia.compute_caps": ["sm_61"], "nvidia.driver_version": "580.95.05", "nvidia.cuda_version": "13.0"}, "sm_60"),
    ({"nvidia.compute_caps": ["sm_89"]}, "sm_86"),
    ({"nvidia.compute_caps": ["sm_89"], "nvidia.cuda_version": "12.6"}, "sm_86"),
    # a listed capability and a ROCm target are named as they are, with nothing added
    ({"nvidia.compute_caps": ["sm_86"]}, "sm_86"),
    ({"gpu.gfx_targets": ["gfx1030"]}, "gfx1030"),
    # an override in force: the sibling whose code the runtime loads
    ({"gpu.gfx_targets": ["gfx1031"]}, "gfx1030"),
])
def test_the_arch_check_names_what_the_computed_wheel_lists(facts, arch):
    inst = support.recommend_install(facts, M)
    assert inst is not None and arch in inst.wheel.archs
    vals = support.report_values(facts, M)
    en = support.fill("{torch_install}", vals)
    zh = support.fill("{torch_install}", vals, "zh")
    target = (facts.get("nvidia.compute_caps") or facts.get("gpu.gfx_targets"))[0]
    if arch.startswith("sm_") and arch != target:
        assert en.endswith(f"must then list `{arch}` (its code runs on your {target})"), en
        assert zh.endswith(f"必须列出 `{arch}`（该代码可在你的 {target} 上运行）"), zh
    else:
        assert en.endswith(f"must then list `{arch}`") and zh.endswith(f"必须列出 `{arch}`"), (en, zh)
    assert f"`{target}`" not in en.rsplit("must then list", 1)[1] or arch == target


def test_the_check_of_several_nvidia_gpus_names_each_and_pip_is_the_interpreters():
    facts = {"nvidia.compute_caps": ["sm_61", "sm_89"], "nvidia.cuda_version": "12.8"}
    en = support.fill("{torch_install}", support.report_values(facts, M))
    assert en.endswith("must then list `sm_60` (its code runs on your sm_61) and `sm_86` (its code runs on your sm_89)")
    assert support.carried_arch("sm_80", ["sm_70", "compute_70"]) == "compute_70"
    assert support.carried_arch("sm_75", ["sm_70", "compute_70"]) == "sm_70"
    assert support.carried_arch("sm_89", ["sm_80", "sm_86", "compute_90"]) == "sm_86"
    assert support.carried_arch("sm_61", ["sm_75", "sm_80"]) is None
    assert support.carried_arch("gfx1031", ["gfx1030"]) is None
    # the generic wording (GPU unknown) uses the interpreter's pip too
    for lang in ("en", "zh"):
        g = support.fill("{torch_install}", {p: None for p in support.PLACEHOLDERS}, lang)
        assert "`python -m pip uninstall -y torch torchvision torchaudio`" in g and " `pip " not in g, g


def test_same_or_older_installed_torch_gets_no_downgrade_note():
    for ver in ("2.14.1+cu130", "2.13.0+cu130", "2.11.0"):
        facts = {"torch.version": ver, "nvidia.compute_caps": ["sm_89"]}
        inst = support.recommend_install(facts, M)
        assert inst is not None and inst.newer_installed is None, ver
        assert "older than your torch" not in support.fill("{torch_install}", support.report_values(facts, M))
    # no torch at all (torch-not-installed): nothing to compare with
    assert support.recommend_install({"gpu.gfx_targets": ["gfx1201"]}, M).newer_installed is None


def test_lint_current_versions_are_not_lowered_by_the_matrix():
    """The matrix tops out at torch 2.14 and the rocm7.2 folder, the table names torch 2.15 and ROCm 10.0 (audit
    part 6): lint must treat the newer as current, so an entry checked against torch 2.14 or ROCm 7.2 is flagged."""
    from diagnostics import kb_lint

    cur = kb_lint.current_versions(str(ROOT / "kb"))
    newest_torch = max(tuple(int(x) for x in w.torch.split(".")[:2]) for w in M.wheels)
    assert tuple(int(x) for x in cur["torch"].split(".")) >= max(newest_torch, (2, 15))
    assert tuple(int(x) for x in cur["rocm"].split(".")) >= (10, 0)
    # the newest CUDA folder with established wheels (PyPI's torch 2.15.0+cu132, audit part 7); no CUDA entry in the table
    assert cur["cuda"] == "13.2"


def test_a_pasted_override_is_read_like_the_env_probes():
    """HSA_OVERRIDE_GFX_VERSION from a paste (ollama's "server config" line as ollama#9302-style logs print it)
    gives the same hsa_override.* facts the env probe gives on the machine: the support matrix and the override
    entries reason from those, not from the raw variable."""
    from diagnostics.derive import derive
    from diagnostics.service import diagnose_text

    assert derive({"env.HSA_OVERRIDE_GFX_VERSION": "10.3.0"}) == {
        "hsa_override.value": "10.3.0", "hsa_override.valid": True, "hsa_override.gfx": "gfx1030"}
    # a malformed value in a paste is left to the KB's log patterns (it may be the reporter's own words)
    assert "hsa_override.valid" not in derive({"env.HSA_OVERRIDE_GFX_VERSION": "gfx1102"})
    # what a probe established is never replaced
    assert "hsa_override.valid" not in derive({"env.HSA_OVERRIDE_GFX_VERSION": "10.3.0", "hsa_override.value": "10.3.0",
                                               "hsa_override.valid": True})
    line = ('time=2025-03-01T10:00:00.000Z level=INFO source=routes.go:1 msg="server config" '
            'env="map[HSA_OVERRIDE_GFX_VERSION:10.3.0 OLLAMA_DEBUG:false]"\n')
    facts = diagnose_text(logs=[("ollama.log", line)])["facts"]
    assert facts["hsa_override.gfx"] == "gfx1030" and facts["hsa_override.valid"] is True


# ---------------------------------------------------------------------------------------------- index kinds (part 7)

def test_pypi_row_of_torch_2_15_is_the_measured_cu132_build():
    """Audit part 7: PyPI's torch 2.15.0 is the +cu132 build (sm_75 ... sm_120, no PTX), its companions torchvision
    0.29.2 and torchaudio 2.11.1 from PyPI; the command names PyPI's index, never download.pytorch.org/whl/cu132 (whose
    2.15 contents were not read)."""
    rows = [w for w in M.wheels if w.torch == "2.15.0"]
    assert [(w.folder, w.index_kind, w.torchvision, w.torchaudio) for w in rows] == [("cu132", "pypi", "0.29.2", "2.11.1")]
    assert rows[0].archs == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    assert M.wheel_for("2.15.0+cu132") is rows[0]
    inst = support.recommend_install({"nvidia.compute_caps": ["sm_120"]}, M)
    assert inst.command().endswith("torch==2.15.0 torchvision==0.29.2 torchaudio==2.11.1 --index-url https://pypi.org/simple")
    # a driver that reports CUDA 13.0 keeps the cu130 build
    inst = support.recommend_install({"nvidia.compute_caps": ["sm_120"], "nvidia.cuda_version": "13.0"}, M)
    assert (inst.wheel.folder, inst.wheel.torch) == ("cu130", "2.14.1")


def test_amd_index_rows_name_the_device_extra_and_never_fill_the_plain_index():
    """AMD's multi-arch index (TheRock): the GPU code comes from `torch[device-gfxNNNN]`; a plain `pip install torch
    --index-url <that index>` installs none, so {torch_index_url} keeps its generic wording for such an install."""
    facts = {"gpu.gfx_targets": ["gfx1152"]}
    inst = support.recommend_install(facts, M)
    assert inst.wheel.device_extras and inst.override is None  # native, not the 11.0.0 override of rocm7.2 2.14
    assert '"torch[device-gfx1152]==2.12.0+rocm7.14.0"' in inst.command()
    assert '"torchvision[device-gfx1152]==0.27.0+rocm7.14.0"' in inst.command()
    vals = support.report_values(facts, M)
    assert vals["torch_index_url"] is None
    assert "repo.amd.com" in support.fill("{torch_install}", vals) and "repo.amd.com" in support.fill("{torch_install}", vals, "zh")
    assert "repo.amd.com" not in support.fill("{torch_index_url}", vals)


def test_device_extras_with_an_override_fetch_the_siblings_code():
    text = """checked: '2026-12-02'
sources: {s: https://example.org/x}
amd:
  - {gfx: gfx1100, family: RDNA3, names: [A], official: true, official_since: '6.0', native_bf16: true, override: null, source: [s]}
  - {gfx: gfx1101, family: RDNA3, names: [B], official: false, native_bf16: true, override: '11.0.0', source: [s]}
nvidia: []
wheels:
  - folder: rocm7.14.0
    stack: rocm
    version: '7.14.0'
    index: https://repo.amd.com/rocm/whl-multi-arch/
    device_extras: true
    torch:
      - {torch: 2.12.0, torchvision: 0.27.0, torchaudio: 2.11.0, archs: [gfx1100], source: [s]}
cuda_min_driver: []
"""
    m = support.parse_matrix(text, "m.yaml")
    assert m.errors == []
    inst = support.recommend_install({"gpu.gfx_targets": ["gfx1101"]}, m)
    assert inst.override == "11.0.0" and '"torch[device-gfx1100]==2.12.0+rocm7.14.0"' in inst.command()
    for bad, msg in (("index: https://repo.amd.com/rocm/whl-multi-arch/", "index: ftp://x"),
                     ("index: https://repo.amd.com/rocm/whl-multi-arch/", "index: https://download.pytorch.org/whl/rocm7.14.0"),
                     ("device_extras: true", "device_extras: maybe")):
        errs = support.parse_matrix(text.replace(bad, msg), "m.yaml").errors
        assert errs and any("index" in e.message or "device_extras" in e.message for e in errs), (msg, errs)
    no_index = text.replace("    index: https://repo.amd.com/rocm/whl-multi-arch/\n", "")
    assert any("device_extras" in e.message for e in support.parse_matrix(no_index, "m.yaml").errors)


def test_a_python_older_than_the_wheels_gets_an_older_release():
    """torch 2.15.0 has no cp310 wheel (audit part 7): a machine on Python 3.10 (A1111's) must not be computed it."""
    inst = support.recommend_install({"nvidia.compute_caps": ["sm_89"], "python.version": "3.10.12"}, M)
    assert inst is not None and inst.wheel.torch != "2.15.0"
    inst = support.recommend_install({"nvidia.compute_caps": ["sm_89"], "python.version": "3.12.3"}, M)
    assert inst is not None and inst.wheel.torch == "2.15.0"
    bad = (ROOT / "kb/support/gpu-matrix.yaml").read_text(encoding="utf-8").replace("python: '3.11'", "python: 3.11", 1)
    assert any("python" in e.message for e in support.parse_matrix(bad, "m.yaml").errors)


def test_an_installed_amd_multi_arch_torch_is_not_judged_by_the_rows_target_list():
    """A TheRock torch (2.12.0+rocm7.14.0) carries the code of the device extras that were installed; the row lists
    only the extras its source shows, so a gfx1030 machine with that torch must not be told its build lacks gfx1030."""
    facts = {"torch.version": "2.12.0+rocm7.14.0", "torch.build": "rocm", "gpu.gfx_targets": ["gfx1030"]}
    d = support.derive_support(facts, M)
    assert "torch.arch_supported" not in d and "torch.unsupported_archs" not in d
    assert support.torch_archs(facts, M) == (None, "")


def test_rocm_10_1_trio_from_amds_stable_index():
    """ROCm 10.1.0's PyTorch (audit part 8): torch 2.14.0 / torchvision 0.29.0a0 / torchaudio 2.11.0.3, local tag
    +rocm10.1.0, on AMD's stable whl-next index with device extras. A target it lists gets it (same torch as the rocm7.2
    row, newer ROCm); a target it does not list keeps its previous row; the pre-release and four-part versions parse."""
    w = next(w for w in M.wheels if w.folder == "rocm10.1.0")
    assert (w.torch, w.torchvision, w.torchaudio) == ("2.14.0", "0.29.0a0", "2.11.0.3")
    assert w.index_kind == "amd" and w.device_extras
    cmd = support.recommend_install({"gpu.gfx_targets": ["gfx1201"]}, M).command()
    assert ('"torch[device-gfx1201]==2.14.0+rocm10.1.0" "torchvision[device-gfx1201]==0.29.0a0+rocm10.1.0" '
            '"torchaudio==2.11.0.3+rocm10.1.0" --index-url https://stable.repo.amd.com/rocm/whl-next/') in cmd
    assert support.recommend_install({"gpu.gfx_targets": ["gfx1152"]}, M).wheel.folder == "rocm7.14.0"
    assert support.recommend_install({"gpu.gfx_targets": ["gfx942"]}, M).wheel.folder == "rocm7.2"
    # an installed 10.1 build is judged by its device extras, not by the row's list
    facts = {"torch.version": "2.14.0+rocm10.1.0", "torch.build": "rocm", "gpu.gfx_targets": ["gfx1030"]}
    assert support.torch_archs(facts, M) == (None, "")
    text = (ROOT / "kb/support/gpu-matrix.yaml").read_text(encoding="utf-8")
    bad = text.replace("torchvision: 0.29.0a0, torchaudio: 2.11.0.3", "torchvision: 0.29.0x, torchaudio: 2.11.0.3", 1)
    assert bad != text and any("torchvision" in e.message for e in support.parse_matrix(bad, "m.yaml").errors)


def test_placeholders_inside_a_command_stay_a_command():
    """{gfx} in a code span: several targets joined the way PYTORCH_ROCM_ARCH takes them (quoted after '='), an
    unknown one a short marker rather than generic wording with code spans of its own; prose keeps the wording."""
    several = {"gfx": "gfx1030, gfx1100"}
    assert support.fill("`PYTORCH_ROCM_ARCH={gfx} make`", several) == '`PYTORCH_ROCM_ARCH="gfx1030;gfx1100" make`'
    assert support.fill("targets {gfx}", several) == "targets gfx1030, gfx1100"
    assert support.fill("`GPU_TARGETS={gfx} cmake ..`", {}) == "`GPU_TARGETS=<gfx> cmake ..`"
    assert support.fill("```\nexport A={gfx}\n```", {}) == "```\nexport A=<gfx>\n```"
    assert "rocminfo" in support.fill("find {gfx} first", {})
    for lang in ("en", "zh"):
        out = support.fill("`x={torch_install}` and `y={gfx}`", {}, lang)
        assert out.count("`") % 2 == 0, out
