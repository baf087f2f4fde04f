"""The shipped knowledge base: lints clean, every entry's own cases pass, every required id is present."""
import re
from pathlib import Path

from diagnostics.kb import load_kb
from diagnostics.matcher import run_entry_tests

HERE = Path(__file__).parent


def required_ids() -> list[str]:
    shared = HERE.parent.parent / "shared" / "kb-required-ids.md"
    text = (shared if shared.exists() else HERE / "data" / "kb-required-ids.md").read_text()
    return [i for i in re.findall(r"^\| ([a-z0-9-]+) \|", text, re.M) if i != "id"]


KB = load_kb()


def test_kb_lints_clean():
    assert not KB.errors, "\n".join(str(e) for e in KB.errors)


def test_every_required_id_present_with_fire_and_silent_cases():
    by_id = KB.by_id()
    ids = required_ids()
    assert len(ids) >= 61
    missing = [i for i in ids if i not in by_id]
    assert not missing, f"missing entries: {missing}"
    for i in ids:
        expects = {t.expect for t in by_id[i].tests}
        assert "fire" in expects and expects & {"silent", "unknown"} and expects <= {"fire", "silent", "unknown"}, i


def test_every_case_passes():
    rows = run_entry_tests(KB)
    failed = [f"{r['path']}:{r['line']} {r['id']} / {r['case']}: expected {r['expect']}, got {r['got']}"
              for r in rows if not r["ok"]]
    assert rows and not failed, "\n".join(failed)


def test_benign_entries_are_info():
    for e in KB.entries:
        if e.benign:
            assert e.severity == "info", e.id
