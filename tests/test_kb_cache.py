"""The parsed KB kept under the cache folder (issue 19: 0.5 s of CPU per process otherwise): the same entries as a
fresh parse, a changed entry parsed again, and a cache file that is not the user's own, or not a KB, never used."""
from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import pytest

from diagnostics import kb as kbmod
from diagnostics.kb import load_kb

KB = Path(__file__).resolve().parent.parent / "kb"


@pytest.fixture
def small_kb(tmp_path, monkeypatch):
    d = tmp_path / "kb"
    d.mkdir()
    for name in ("hip-no-binary-for-gpu.yaml", "hip-out-of-memory.yaml", "no-gpu-present.yaml"):
        shutil.copy(KB / name, d / name)
    monkeypatch.setenv("GPU_DOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(kbmod.KB_CACHE_ENV, raising=False)
    return d


def _pickles(tmp_path):
    return sorted((tmp_path / "cache" / "kb").glob("*.pickle"))


def _shape(kb):
    return [(e.id, e.title, e.when.log_patterns(), [t.name for t in e.tests]) for e in kb.entries], \
        [str(x) for x in kb.errors]


def test_a_second_load_reads_the_cache_and_gives_the_same_kb(small_kb, tmp_path, monkeypatch):
    first = load_kb(small_kb)
    files = _pickles(tmp_path)
    assert len(files) == 1 and files[0].stat().st_mode & 0o077 == 0
    calls = []
    monkeypatch.setattr(kbmod, "_parse_kb", lambda *a: calls.append(a))   # a parse now would return None
    again = load_kb(small_kb)
    assert calls == [] and _shape(again) == _shape(first) and len(again.entries) == 3


def test_a_changed_entry_is_parsed_again(small_kb, tmp_path):
    load_kb(small_kb)
    p = small_kb / "no-gpu-present.yaml"
    p.write_text(p.read_text(encoding="utf-8").replace("\ntitle: ", "\ntitle: CHANGED ", 1), encoding="utf-8")
    kb = load_kb(small_kb)
    assert kb.by_id()["no-gpu-present"].title.startswith("CHANGED ")
    (small_kb / "broken.yaml").write_text("id: broken\ntitle: [unclosed\n", encoding="utf-8")
    kb = load_kb(small_kb)
    assert any("broken" in str(e) for e in kb.errors) and len(kb.entries) == 3
    assert len(_pickles(tmp_path)) == 3


@pytest.mark.parametrize("spoil", ["garbage", "not-a-kb", "others-may-write"])
def test_a_cache_file_that_is_not_trustworthy_is_parsed_over(small_kb, tmp_path, spoil):
    first = load_kb(small_kb)
    (cache,) = _pickles(tmp_path)
    if spoil == "garbage":
        cache.write_bytes(b"\x80\x05 not a pickle")
    elif spoil == "not-a-kb":
        cache.write_bytes(pickle.dumps({"entries": []}))
    else:
        cache.chmod(0o666)
        if cache.stat().st_mode & 0o022 == 0:
            pytest.skip("the file system ignores modes")
    kb = load_kb(small_kb)
    assert _shape(kb) == _shape(first)


def test_the_cache_can_be_turned_off_and_a_broken_cache_folder_costs_nothing(small_kb, tmp_path, monkeypatch):
    monkeypatch.setenv(kbmod.KB_CACHE_ENV, "0")
    assert len(load_kb(small_kb).entries) == 3 and _pickles(tmp_path) == []
    monkeypatch.delenv(kbmod.KB_CACHE_ENV)
    (tmp_path / "cache").write_text("a file where the folder should be")
    assert len(load_kb(small_kb).entries) == 3


def test_only_the_newest_few_cache_files_are_kept(small_kb, tmp_path):
    p = small_kb / "no-gpu-present.yaml"
    text = p.read_text(encoding="utf-8")
    for i in range(kbmod.KB_CACHE_KEEP + 3):
        p.write_text(text.replace("\ntitle: ", f"\ntitle: v{i} ", 1), encoding="utf-8")
        load_kb(small_kb)
        for n, f in enumerate(_pickles(tmp_path)):   # distinct mtimes without sleeping
            os.utime(f, (1_000_000 + n, 1_000_000 + n))
    assert len(_pickles(tmp_path)) <= kbmod.KB_CACHE_KEEP
