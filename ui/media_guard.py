"""Exported files are one-time, short-lived: Streamlit's `/media/<id>` route has no login of its own.

Streamlit (1.67) keeps what a download button hands out in an in-memory store and serves it to any HTTP client
that asks for `/media/<id>`: no cookie, no session, no login is checked there.  Every download button of the app
is deferred (`data=callable`, built only when a logged-in visitor clicks; tests/test_access.py), and this guard
closes the rest in the store itself:

* a downloadable file is served at most `MAX_FETCHES` times (2: Streamlit's own client GETs a deferred download's
  URL once to check it, `checkSourceUrlResponse`, then once through the download link), then it is removed from
  the store, so the same URL answers 404 to anyone after the visitor's own browser fetched it (a repeat click
  builds a new file);
* one not fetched within `TTL_S` seconds of being built is refused and removed.

Images and other media (`MediaFileKind.MEDIA`) are left alone.  Installed from app.py on every run (idempotent,
once per server process); docs/SECURITY.md explains it.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any

TTL_S = 30.0
MAX_FETCHES = 2
_ATTR = "_gpu_doctor_guard"


class _Guard:
    def __init__(self, storage: Any, ttl_s: float):
        from streamlit.runtime.media_file_storage import MediaFileKind, MediaFileStorageError

        self.storage = storage
        self.ttl_s = ttl_s
        self.kind = MediaFileKind.DOWNLOADABLE
        self.error = MediaFileStorageError
        self.born: dict[str, float] = {}  # downloadable file id -> when it was stored
        self.fetches: dict[str, int] = {}
        self.lock = threading.Lock()
        self.local = threading.local()  # set while Streamlit itself looks a file up (get_url): not a fetch
        self.load = storage.load_and_get_id
        self.get = storage.get_file
        self.url = storage.get_url

    def _expire(self, now: float) -> None:
        for fid, t in list(self.born.items()):
            if now - t > self.ttl_s:
                self.born.pop(fid, None)
                self.fetches.pop(fid, None)
                self.storage.delete_file(fid)

    def load_and_get_id(self, path_or_data, mimetype, kind, filename=None):
        fid = self.load(path_or_data, mimetype, kind, filename)
        if kind == self.kind:
            with self.lock:
                now = time.monotonic()
                self._expire(now)
                self.born[fid] = now
                self.fetches[fid] = 0
        return fid

    def get_url(self, file_id):
        self.local.peek = True
        try:
            return self.url(file_id)
        finally:
            self.local.peek = False

    def get_file(self, filename):
        f = self.get(filename)  # raises MediaFileStorageError (the route's 404) for an unknown id
        if f.kind != self.kind or getattr(self.local, "peek", False):
            return f
        fid = os.path.splitext(filename)[0]
        with self.lock:
            t = self.born.get(fid)
            n = self.fetches.get(fid, 0) + 1
            self.fetches[fid] = n
            stale = t is None or time.monotonic() - t > self.ttl_s
            if stale or n >= MAX_FETCHES:  # the visitor's last fetch: whoever asks next gets 404
                self.born.pop(fid, None)
                self.fetches.pop(fid, None)
                self.storage.delete_file(fid)
        if stale:
            raise self.error(f"media file {fid} was already served or has expired")
        return f


def install(storage: Any = None, ttl_s: float = TTL_S) -> bool:
    """Guard *storage* (default: the running server's media store); True when it is guarded."""
    if storage is None:
        try:
            from streamlit.runtime import Runtime

            if not Runtime.exists():
                return False
            storage = Runtime.instance().media_file_mgr._storage
        except Exception:  # another Streamlit layout: nothing to guard here (tests/test_media_guard.py notices)
            return False
    if getattr(storage, _ATTR, None) is not None:
        return True
    g = _Guard(storage, ttl_s)
    storage.load_and_get_id = g.load_and_get_id
    storage.get_url = g.get_url
    storage.get_file = g.get_file
    setattr(storage, _ATTR, g)
    return True
