"""The KB loader: strict schema, precise positions, hostile entries refused without losing the rest."""
import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from diagnostics.kb import KBError, json_schema, load_kb, parse_entry

GOOD = textwrap.dedent("""\
    id: demo-entry
    title: A demo
    severity: error
    when:
      any:
        - log: 'hipErrorNoBinaryForGpu'
        - {fact: torch.build, eq: cpu}
    symptoms: s
    cause: c
    fix: |
      1. do it
    links: [https://example.org/a]
    tests:
      - name: fires
        logs: "hipErrorNoBinaryForGpu"
        expect: fire
      - name: silent
        facts: {torch.build: rocm}
        expect: silent
    """)


def err_of(text: str, name="demo-entry") -> KBError:
    with pytest.raises(KBError) as ei:
        parse_entry(text, f"kb/{name}.yaml", expected_id=name)
    return ei.value


def test_good_entry_parses():
    e = parse_entry(GOOD, "kb/demo-entry.yaml", "demo-entry")
    assert e.id == "demo-entry" and len(e.tests) == 2


def test_unknown_key_reported_with_line_and_column():
    e = err_of(GOOD.replace("cause: c", "cause: c\ncuase: typo"))
    assert e.line == 10 and e.col == 1 and "unknown key 'cuase'" in e.message
    assert str(e).startswith("kb/demo-entry.yaml:10:1:")


def test_unknown_fact_and_operator_and_type():
    assert "unknown fact 'torch.buidl'" in err_of(GOOD.replace("fact: torch.build", "fact: torch.buidl")).message
    assert "unknown operator" in err_of(GOOD.replace("eq: cpu}", "equals: cpu}")).message
    assert "needs a str value" in err_of(GOOD.replace("eq: cpu}", "eq: 3}")).message
    e = err_of(GOOD.replace("{torch.build: rocm}", "{torch.build: 5}"))
    assert "must be str" in e.message and e.line == 18


def test_backtracking_pattern_rejected():
    e = err_of(GOOD.replace("'hipErrorNoBinaryForGpu'", r"'(a+)+\1'"))
    assert "RE2" in e.message and e.line == 6
    e = err_of(GOOD.replace("'hipErrorNoBinaryForGpu'", r"'(?=lookahead)x'"))
    assert "RE2" in e.message


def test_yaml_bomb_aliases_refused_quickly():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9))
    t0 = time.monotonic()
    e = err_of(bomb)
    assert "alias" in e.message
    assert time.monotonic() - t0 < 2


def test_deep_nesting_and_syntax_errors():
    deep = "id: x\nwhen: " + "[" * 5000 + "]" * 5000 + "\n"
    e = err_of(deep)
    assert "deep" in e.message or "nesting" in e.message
    e = err_of("id: demo-entry\ntitle: [unclosed\n")
    assert e.message.startswith("YAML syntax") and e.line >= 2


def test_id_must_match_file_name_and_fire_and_silent_required():
    assert "differs from the file name" in err_of(GOOD, name="other-name").message
    e = err_of(GOOD.replace("expect: silent", "expect: fire"))
    assert "at least one 'fire' case and one 'silent' case" in e.message


def test_benign_must_be_info():
    e = err_of(GOOD.replace("severity: error", "severity: error\nbenign: true"))
    assert "benign" in e.message


def test_broken_entry_does_not_stop_the_rest(tmp_path):
    (tmp_path / "demo-entry.yaml").write_text(GOOD)
    (tmp_path / "broken.yaml").write_text("id: broken\ntitle: [\n")
    (tmp_path / "binary.yaml").write_bytes(b"\x00\x01\x02\xff")
    dup = GOOD.replace("id: demo-entry", "id: demo-entry")
    (tmp_path / "huge.yaml").write_text("x: " + "a" * 400_000)
    kb = load_kb(tmp_path)
    assert [e.id for e in kb.entries] == ["demo-entry"]
    msgs = "\n".join(str(e) for e in kb.errors)
    assert "broken.yaml:" in msgs and "binary.yaml:" in msgs and "huge.yaml:" in msgs
    assert dup


def test_json_schema_is_valid_and_accepts_real_entries():
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    for p in sorted(Path("kb").glob("*.yaml"))[:80]:
        data = yaml.safe_load(p.read_text())
        errs = list(v.iter_errors(data))
        assert not errs, f"{p}: {errs[0].message}"
    bad = yaml.safe_load(GOOD.replace("cause: c", "cuase: c"))
    assert list(v.iter_errors(bad))


def test_cli_lint_reports_positions(tmp_path):
    (tmp_path / "demo-entry.yaml").write_text(GOOD.replace("severity: error", "severity: fatal"))
    p = subprocess.run([sys.executable, "-m", "diagnostics", "kb", "--kb", str(tmp_path), "lint"],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert re.search(r"demo-entry\.yaml:3:11: severity must be one of", p.stdout)


def test_cli_schema_is_json():
    p = subprocess.run([sys.executable, "-m", "diagnostics", "kb", "schema"], capture_output=True, text=True)
    assert json.loads(p.stdout)["title"].startswith("GPU doctor")


def test_cli_does_not_import_heavy_modules_for_kb_commands():
    code = ("import sys; from diagnostics.cli import build_parser; build_parser(); "
            "print(','.join(m for m in ('sqlalchemy', 'sqlmodel', 'torch', 'transformers', 'streamlit') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "", p.stdout + p.stderr


def test_store_statuses_match_the_cli_choices():
    from diagnostics.store.models import STATUSES

    assert STATUSES == ("new", "investigating", "resolved")


def test_large_counted_repetition_rejected():
    e = err_of(GOOD.replace("'hipErrorNoBinaryForGpu'", r"'[^x]{500}hip'"))
    assert "counted repetition" in e.message and e.line == 6


def test_deep_documents_never_reach_the_yaml_composer(tmp_path):
    """libyaml's composer recurses in C: a deep enough document kills the process (seen with the system PyYAML).
    The pre-scan refuses it first; run in a child so a regression shows as a crash, not a hang of the suite."""
    (tmp_path / "flow.yaml").write_text("id: flow\nwhen: " + "{a: " * 20_000 + "1" + "}" * 20_000 + "\n")
    (tmp_path / "block.yaml").write_text("id: block\n" + "".join(" " * i + f"k{i}:\n" for i in range(600)) + "x\n")
    (tmp_path / "seq.yaml").write_text("id: seq\nwhen:\n" + "- " * 5_000 + "x\n")
    p = subprocess.run([sys.executable, "-m", "diagnostics", "kb", "--kb", str(tmp_path), "lint"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr[-2000:]
    for name in ("flow.yaml", "block.yaml", "seq.yaml"):
        assert f"{name}:" in p.stdout and "nesting" in p.stdout.split(name)[1].splitlines()[0]


# ---------------------------------------------------------------------------------------------------
# kb lint: dangerous steps need a caveat; advice has a date (diagnostics/kb_lint.py)

import datetime  # noqa: E402

from diagnostics import kb_lint  # noqa: E402


def _entry_file(tmp_path, fix: str, extra: str = "") -> Path:
    text = GOOD.replace("fix: |\n  1. do it\n", "fix: |\n" + textwrap.indent(fix, "  ")) + extra
    d = tmp_path / "kb"
    d.mkdir(exist_ok=True)
    p = d / "demo-entry.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def _lint_dir(d: Path, today=datetime.date(2026, 12, 1), current=None):
    kb = load_kb(d)
    assert not kb.errors, kb.errors
    return kb_lint.lint(kb, today=today, current=current or {"rocm": "7.2", "torch": "2.15"})


@pytest.mark.parametrize("step", [
    "Add `iommu=off` to the kernel command line.",
    "Run with `docker run --security-opt seccomp=unconfined rocm/pytorch`.",
    "Start the container with `--privileged`.",
    "`sudo chmod 666 /dev/kfd`.",
    "Clear it: `rm -rf ~/.config/miopen`.",
    "Disable Secure Boot in the firmware setup.",
    "`pip install --force-reinstall flash-attn`",
    "`pip uninstall -y torch`",
    "`pip install torch torchvision --index-url https://download.pytorch.org/whl/rocm7.1`",
    "Install the wheel: {torch_install}",
    "If `findmnt /dev` shows `noexec`: `sudo mount -o remount,exec /dev`.",
    "Upgrade it: `pip install -U vllm`.",
])
def test_dangerous_step_without_caveat_fails_lint_with_position(tmp_path, step):
    p = _entry_file(tmp_path, f"1. A safe first step.\n2. {step}\n")
    errs = [f for f in _lint_dir(p.parent) if f.level == "error"]
    assert len(errs) == 1, errs
    f = errs[0]
    lines = p.read_text().split("\n")
    # file:line:column points into the step text
    assert lines[f.line - 1].lstrip().startswith("2.")
    assert f.col > 1 and "no caveat" in f.message and str(f).startswith(f"{f.path}:{f.line}:{f.col}: ")
    # and the CLI fails on it
    r = subprocess.run([sys.executable, "-m", "diagnostics", "kb", "--kb", str(p.parent), "lint"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and f":{f.line}:{f.col}:" in r.stdout


def test_dangerous_step_with_caveat_passes(tmp_path):
    p = _entry_file(tmp_path, "1. Try `iommu=pt` first.\n"
                              "2. Only if that fails add `iommu=off`.\n"
                              "   **Caution:** this turns off DMA isolation for every device; keep `iommu=pt` if it helps.\n")
    assert [f for f in _lint_dir(p.parent) if f.level == "error"] == []
    r = subprocess.run([sys.executable, "-m", "diagnostics", "kb", "--kb", str(p.parent), "lint"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_caveat_in_another_step_does_not_count_and_first_step_warns(tmp_path):
    p = _entry_file(tmp_path, "1. `rm -rf ~/.cache/miopen`\n   **Caution:** deletes the cache.\n"
                              "2. `rm -rf ~/.config/miopen`\n")
    fs = _lint_dir(p.parent)
    assert [f.level for f in fs if "no caveat" in f.message] == ["error"]
    assert any(f.level == "warning" and "first step" in f.message for f in fs)


def test_safe_lookalikes_are_not_dangerous(tmp_path):
    p = _entry_file(tmp_path, "1. Use `iommu=pt`; remove `amd_iommu=off` if you added it earlier.\n"
                    "2. `pip install --force-reinstall --no-deps flash-attn`\n"
                    "3. `rm -f /tmp/x.lock` and `pip install transformers`\n")
    errs = [f for f in _lint_dir(p.parent) if f.level == "error"]
    # step 1 names iommu=off: it is a dangerous pattern even when the text says to remove it, unless cautioned
    assert [f.line for f in errs] == [p.read_text().split("\n").index("  1. Use `iommu=pt`; remove `amd_iommu=off` if you added it earlier.") + 1]


def test_translation_without_caveat_is_a_warning_only(tmp_path):
    fix = "1. Safe.\n2. `--privileged`\n   **Caution:** gives the container every device.\n"
    extra = ("translations:\n  zh:\n    title: t\n    symptoms: s\n    cause: c\n    fix: |\n"
             "      1. 安全。\n      2. `--privileged`\n    source_hash: abcdef012345\n")
    p = _entry_file(tmp_path, fix, extra)
    fs = _lint_dir(p.parent)
    assert [(f.level, "translations.zh.fix" in f.message) for f in fs] == [("warning", True)]
    p.write_text(p.read_text().replace("      2. `--privileged`\n", "      2. `--privileged`\n      **注意：** 容器获得所有设备。\n"))
    assert _lint_dir(p.parent) == []


def test_the_same_caveat_in_consecutive_steps_fails_lint(tmp_path):
    cav = "   **Caution:** this replaces the torch of this environment; a new virtual environment is safer.\n"
    p = _entry_file(tmp_path, "1. Make a venv.\n2. `pip uninstall -y torch`\n" + cav + "3. Install: {torch_install}\n" + cav)
    errs = [f for f in _lint_dir(p.parent) if f.level == "error"]
    assert len(errs) == 1 and "repeats the previous step's caveat" in errs[0].message, errs
    lines = p.read_text().split("\n")
    assert lines[errs[0].line - 1].strip().startswith("**Caution:**") and lines[errs[0].line - 2].lstrip().startswith("3.")
    # one step carrying the caveat once is clean; different caveats in consecutive steps are fine too
    p = _entry_file(tmp_path, "1. Make a venv.\n2. Install: {torch_install}\n" + cav)
    assert [f for f in _lint_dir(p.parent) if f.level == "error"] == []
    p = _entry_file(tmp_path, "1. Make a venv.\n2. `pip uninstall -y torch`\n   **Caution:** removes torch.\n"
                              "3. Install: {torch_install}\n" + cav)
    assert [f for f in _lint_dir(p.parent) if f.level == "error"] == []


def test_prose_saying_no_wheel_carries_a_target_the_matrix_runs_fails_lint(tmp_path):
    # issue 15: the gfx1103 prose said "no official wheel carries it" after the matrix listed torch 2.13+rocm7.2
    import shutil

    p = _entry_file(tmp_path, "1. Try fp32.\n2. No official wheel carries gfx1103 yet, so keep the override.\n")
    (p.parent / "support").mkdir()
    shutil.copy(Path(__file__).resolve().parent.parent / "kb" / "support" / "gpu-matrix.yaml",
                p.parent / "support" / "gpu-matrix.yaml")
    errs = [f for f in _lint_dir(p.parent) if f.level == "error"]
    assert len(errs) == 1 and "gfx1103" in errs[0].message and "rocm7.2" in errs[0].message, errs
    r = subprocess.run([sys.executable, "-m", "diagnostics", "kb", "--kb", str(p.parent), "lint"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "says no wheel carries gfx1103" in r.stdout
    # limited in time, about a target no wheel runs natively (gfx1031), or left to the placeholder: clean
    for fix in ("1. Older wheels do not carry gfx1103; install a newer one: {torch_install}\n"
                "   **Caution:** replaces torch; a new virtual environment is safer.\n",
                "1. No official wheel carries gfx1031; use the 10.3.0 override.\n",
                "1. If the command needs an override, no official wheel carries {gfx} yet.\n"):
        _entry_file(tmp_path, fix)
        assert [f for f in _lint_dir(p.parent) if f.level == "error"] == [], fix
    # a translation saying the same is an error too
    extra = ("translations:\n  zh:\n    title: t\n    symptoms: s\n    cause: c\n    fix: |\n"
             "      1. 目前还没有官方 wheel 包含 gfx1103。\n    source_hash: abcdef012345\n")
    _entry_file(tmp_path, "1. Try fp32.\n", extra)
    errs = [f for f in _lint_dir(p.parent) if f.level == "error"]
    assert len(errs) == 1 and "translations.zh.fix" in errs[0].message, errs


def test_checked_dates_and_versions(tmp_path):
    p = _entry_file(tmp_path, "1. do it\n", 'checked: {date: 2026-03-01, versions: {rocm: "7.1", torch: "2.15"}}\n')
    kb = load_kb(p.parent)
    assert kb.entries[0].checked == {"date": datetime.date(2026, 3, 1), "versions": {"rocm": "7.1", "torch": "2.15"}}
    msgs = [f.message for f in kb_lint.lint(kb, today=datetime.date(2026, 12, 1), current={"rocm": "7.2", "torch": "2.15"})]
    assert any("over six months" in m for m in msgs)
    assert any("current rocm is 7.2" in m for m in msgs) and not any("torch" in m for m in msgs)
    # fresh and current: no warning
    assert kb_lint.lint(kb, today=datetime.date(2026, 4, 1), current={"rocm": "7.1.1", "torch": "2.15"}) == []


@pytest.mark.parametrize("bad,msg", [
    ('checked: {date: 2026-13-01, versions: {rocm: "7.2"}}', "YYYY-MM-DD"),
    ("checked: {date: 2026-12-01, versions: {rocm: 7.10}}", "quoted string"),
    ("checked: {date: 2026-12-01, versions: {}}", "at least one"),
    ('checked: {date: 2026-12-01}', "needs 'versions'"),
    ('checked: {date: 2026-12-01, versions: {rocm: "7.2"}, by: me}', "unknown key 'by'"),
])
def test_checked_schema_errors(bad, msg):
    assert msg in err_of(GOOD + bad + "\n").message


def test_kb_list_oldest_first(tmp_path):
    d = tmp_path / "kb"
    d.mkdir()
    for eid, chk in (("a-new", "2026-11-01"), ("b-old", "2025-01-02"), ("c-never", None)):
        text = GOOD.replace("id: demo-entry", f"id: {eid}")
        if chk:
            text += f'checked: {{date: {chk}, versions: {{torch: "2.15"}}}}\n'
        (d / f"{eid}.yaml").write_text(text)
    r = subprocess.run([sys.executable, "-m", "diagnostics", "kb", "--kb", str(d), "list", "--oldest", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["entries"]
    assert [x["id"] for x in rows] == ["c-never", "b-old", "a-new"]
    assert rows[1]["checked"] == {"date": "2025-01-02", "versions": {"torch": "2.15"}}
    r = subprocess.run([sys.executable, "-m", "diagnostics", "kb", "--kb", str(d), "list", "--sort", "checked"],
                       capture_output=True, text=True, timeout=120)
    assert [ln.split()[:2] for ln in r.stdout.splitlines()] == [["c-never", "never"], ["b-old", "2025-01-02"],
                                                                 ["a-new", "2026-11-01"]]


def test_vllm_rule_spares_the_rocm_index_noexec_and_the_nvidia_variant(tmp_path):
    p = _entry_file(tmp_path, "1. `sudo mount -o remount,noexec /dev`\n"
                              "2. `uv pip install -U vllm --extra-index-url https://wheels.vllm.ai/rocm/`\n"
                              "3. `pip install vllm-flash-attn`\n",
                    "variants:\n  nvidia:\n    fix: |\n      1. Safe.\n      2. `pip install -U vllm`\n")
    assert [f for f in _lint_dir(p.parent) if f.level == "error"] == []
    # the same plain install in the AMD variant is an error
    p.write_text(p.read_text().replace("variants:\n  nvidia:", "variants:\n  amd:"))
    errs = [f for f in _lint_dir(p.parent) if f.level == "error"]
    assert len(errs) == 1 and "vllm-pypi-on-rocm" in errs[0].message and "variants.amd.fix" in errs[0].message


def test_shipped_rules_compile_and_each_matches_its_own_example():
    rules = {r.id: r for r in kb_lint.load_rules()}
    assert {"iommu-off", "secure-boot-off", "seccomp-unconfined", "privileged-container", "world-writable-device",
            "recursive-delete", "force-reinstall", "replace-torch", "devtmpfs-exec", "vllm-pypi-on-rocm"} <= set(rules)


def test_shipped_kb_has_no_dangerous_step_without_caveat():
    kb = load_kb()
    errs = [str(f) for f in kb_lint.lint(kb, today=datetime.date(2026, 12, 1)) if f.level == "error"]
    assert errs == []
    # and the checked: dates that entries carry are real dates, not in the future of the audit that set them
    for e in kb.entries:
        if e.checked:
            assert e.checked["date"] >= datetime.date(2025, 1, 1) and e.checked["versions"]


def test_current_versions_come_from_the_support_matrix_when_present(monkeypatch):
    """The matrix module (helper "matrix") may not be on this branch: stand in its two public names, shaped
    like diagnostics/support.py's Wheel rows, to pin how the newest torch / ROCm / CUDA folders are read."""
    import types

    from diagnostics import kb_lint as kl

    def wheel(stack, ver, torch):
        return types.SimpleNamespace(stack=stack, stack_version=ver, torch=torch)

    fake = types.ModuleType("diagnostics.support")
    fake.get_matrix = lambda kb_dir=None: types.SimpleNamespace(wheels=[
        wheel("rocm", "6.2.4", "2.5.1"), wheel("rocm", "7.1", "2.16.0"), wheel("cuda", "13.0", "2.16.0"),
        wheel("rocm", "6.4", "2.9.1")])
    monkeypatch.setitem(sys.modules, "diagnostics.support", fake)
    import diagnostics
    monkeypatch.setattr(diagnostics, "support", fake, raising=False)
    cur = kl.current_versions()
    # the matrix's newest torch (2.16) is newer than the table's: it wins; its newest ROCm folder (7.1) is older than
    # the table's current ROCm release: the table is a floor, so an older matrix never makes 7.1 "current"
    assert cur["torch"] == "2.16" and cur["cuda"] == "13.0"
    assert cur["rocm"] == kl.CURRENT_VERSIONS["rocm"]
    assert cur["transformers"] == kl.CURRENT_VERSIONS["transformers"]   # not in the matrix: the table
    fake.get_matrix = lambda kb_dir=None: (_ for _ in ()).throw(RuntimeError("broken matrix"))
    assert kl.current_versions() == kl.CURRENT_VERSIONS


def test_variant_keys_checked_in_english_and_in_translations():
    """One check of a variant's keys serves both places; each names its own place and allowed keys."""
    e = err_of(GOOD.replace("links:", "variants:\n  nvidia: {fix: n, fixx: y}\nlinks:"))
    assert (e.line, e.col) == (13, 20)
    assert "unknown key 'fixx' in variants.nvidia; allowed: title, symptoms, cause, fix, log" in e.message
    tr = GOOD.replace("links:", "variants:\n  nvidia: {fix: n}\nlinks:") + textwrap.dedent("""\
        translations:
          zh-CN:
            title: 演示
            symptoms: s
            cause: c
            fix: f
            variants:
              nvidia: {fix: 修, log: x}
        """)
    assert "unknown key 'log' in a translated variant; allowed: title, symptoms, cause, fix" in err_of(tr).message
    assert "variants.nvidia has no English 'title' to translate" in err_of(tr.replace("log: x", "title: t")).message
