"""ui/media_guard.py on Streamlit's real in-memory media store: a downloadable file is served once, an unfetched
one expires, images are untouched.  (The real server and a second HTTP client: tests/e2e/test_e2e_upload.py.)"""
from __future__ import annotations

import time

import pytest
from streamlit.runtime.media_file_storage import MediaFileKind, MediaFileStorageError
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from ui.media_guard import MAX_FETCHES, install


def _store(ttl: float = 60.0) -> MemoryMediaFileStorage:
    s = MemoryMediaFileStorage("/media")
    assert install(s, ttl_s=ttl)
    assert install(s, ttl_s=ttl)  # idempotent: wrapped once
    return s


def test_download_is_served_once():
    s = _store()
    fid = s.load_and_get_id(b"secret session export", "application/json", MediaFileKind.DOWNLOADABLE, "x.json")
    url = s.get_url(fid)  # what Streamlit sends the visitor: looking it up does not use it up
    name = url.rsplit("/", 1)[1]
    for _ in range(MAX_FETCHES):  # the visitor's own browser: Streamlit's check, then the download
        assert s.get_file(name).content == b"secret session export"
    with pytest.raises(MediaFileStorageError):
        s.get_file(name)  # anyone after that, with the same URL
    assert fid not in s._files_by_id  # gone from memory, not only refused


def test_a_new_click_builds_a_new_fetchable_file():
    s = _store()
    for _ in range(2):
        fid = s.load_and_get_id(b"same bytes", "text/markdown", MediaFileKind.DOWNLOADABLE, "r.md")
        for _ in range(MAX_FETCHES):
            assert s.get_file(fid + ".md").content == b"same bytes"
        with pytest.raises(MediaFileStorageError):
            s.get_file(fid + ".md")


def test_unfetched_download_expires():
    s = _store(ttl=0.2)
    fid = s.load_and_get_id(b"never fetched", "text/plain", MediaFileKind.DOWNLOADABLE, "a.txt")
    time.sleep(0.3)
    with pytest.raises(MediaFileStorageError):
        s.get_file(fid)
    other = s.load_and_get_id(b"old", "text/plain", MediaFileKind.DOWNLOADABLE, "b.txt")
    time.sleep(0.3)
    s.load_and_get_id(b"new", "text/plain", MediaFileKind.DOWNLOADABLE, "c.txt")  # storing sweeps expired ones
    assert other not in s._files_by_id


def test_images_are_left_alone():
    s = _store(ttl=0.0)
    fid = s.load_and_get_id(b"\x89PNG...", "image/png", MediaFileKind.MEDIA)
    for _ in range(3):
        assert s.get_file(fid + ".png").content == b"\x89PNG..."


def test_every_download_button_is_deferred():
    """A static download button would put its data in /media/ at render time, where the guard's expiry would
    also break it: every button of the app passes a callable."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    seen = 0
    for path in sorted((root / "ui").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "download_button":
                seen += 1
                data = [k.value for k in node.keywords if k.arg == "data"]
                assert data and isinstance(data[0], ast.Lambda), f"{path.name}:{node.lineno} data is not deferred"
    assert seen >= 8
