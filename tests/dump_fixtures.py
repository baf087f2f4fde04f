"""The recorded pastes under tests/fixtures/dumps/<kind>/ that a reader run on every paste is tested with: each
``NAME.txt`` beside a ``NAME.yaml`` sidecar naming its source and the facts the reader must (``expect``) and must not
(``absent``) establish, alone and through the registry (whatever parser reads the rest of the paste)."""
from __future__ import annotations

from pathlib import Path

import yaml

from diagnostics import facts as factcat
from diagnostics.parsers import parse as registry_parse

ROOT = Path(__file__).parent / "fixtures" / "dumps"


def sidecars(kind: str) -> list[Path]:
    return sorted((ROOT / kind).glob("*.yaml"))


def load(sidecar: Path) -> tuple[str, dict]:
    return sidecar.with_suffix(".txt").read_text(encoding="utf-8"), yaml.safe_load(sidecar.read_text(encoding="utf-8"))


def check(module, sidecar: Path) -> None:
    """The sidecar's promises hold for *module*'s reader, and the registry adds the same facts to any paste."""
    text, meta = load(sidecar)
    assert meta["kind"] == module.OPENING.kind and str(meta["source"]).startswith("https://") and meta.get("note")
    res = module.parse(text)
    for name, want in (meta.get("expect") or {}).items():
        assert factcat.check_value(name, want) is None
        assert res.facts.get(name) == want, f"{name}: want {want!r}, got {res.facts.get(name)!r}"
    for name in meta.get("absent") or []:
        assert factcat.is_known(name), name
        assert name not in res.facts, f"{name} must not be established, got {res.facts[name]!r}"
    _, problems = factcat.clean_facts(res.facts)
    assert problems == []
    via = registry_parse(text)
    for name, want in (meta.get("expect") or {}).items():
        assert via.facts.get(name) == want, (via.kind, name)
