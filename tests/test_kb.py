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
