"""The machine scenarios (tests/scenarios/m-*.yaml) hold what the probes really find on their recorded trees
(tests/fixtures/sysfs/m-*): every fact and status of the file-reading probes is recomputed here and compared.
After a probe change, `python -m tests.machines` rewrites them (review the diff)."""
from pathlib import Path

import pytest
import yaml

from tests import machines

FILES = sorted((machines.ROOT / "tests" / "scenarios").glob("m-*.yaml"))


def test_there_are_machines():
    trees = {machines.tree_of(yaml.safe_load(p.read_text(encoding="utf-8"))["note"]) for p in FILES}
    assert len(FILES) >= 20 and len(trees) >= 10
    for t in trees:
        assert t is not None and (t / "SOURCE.md").is_file(), t


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario_is_what_the_probes_find_on_its_tree(path: Path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    tree = machines.tree_of(data["note"])
    assert tree is not None and tree.is_dir(), f"{path.name}: the note names no recorded tree"
    facts = data.get("facts") or {}
    found = machines.probe_tree(tree, machines.environ_of(facts), facts.get("python.executable"))
    stated = {p["id"]: p for p in data.get("probes") or []}
    lost = {pid for pid, p in stated.items() if p["status"] in ("crashed", "timeout")}
    emitted: dict = {}
    for pid in machines.TREE_PROBES:
        if pid in lost:
            continue
        assert stated[pid]["status"] == found[pid]["status"], f"{pid}: {found[pid]['summary']}"
        assert (stated[pid].get("logs") or []) == [{"name": lg["name"], "text": lg["text"]} for lg in found[pid]["logs"]]
        for k, v in found[pid]["facts"].items():
            emitted.setdefault(k, v)
        assert not [n for n in found[pid]["notes"] if "FACTS declaration" in n]
    for k, v in emitted.items():
        assert facts.get(k) == v, f"{k}: the tree gives {v!r}, the scenario {facts.get(k)!r}"
    for k in facts:
        owner = machines.owned(k, found)
        if owner and owner not in lost and k not in emitted:
            assert machines.LIVE_ONLY.match(k), f"{k} is the {owner} probe's, which does not find it on the tree"
