"""Where the doctor's data lives: the checkout it runs from, or the share folder of an installed package.

A checkout (``python -m diagnostics`` from a clone) keeps ``kb/``, ``app.py`` and ``ui/`` beside the package.
``pip install .`` puts them under ``<prefix>/share/gpu-doctor/`` (pyproject.toml's data-files), so the
``gpu-doctor`` command works from any directory.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
SHARE = Path(sys.prefix) / "share" / "gpu-doctor"


def data_root() -> Path:
    """The folder holding ``kb/``, ``app.py``, ``ui/`` and ``.streamlit/``."""
    if (CHECKOUT / "kb").is_dir() and (CHECKOUT / "app.py").is_file():
        return CHECKOUT
    return SHARE


def default_cache_dir() -> str:
    """GPU_DOCTOR_CACHE_DIR, else platformdirs' user cache dir for "gpu-doctor", else ~/.cache/gpu-doctor."""
    env = os.environ.get("GPU_DOCTOR_CACHE_DIR")
    if env:
        return env
    try:
        from platformdirs import user_cache_dir
        return user_cache_dir("gpu-doctor")
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "gpu-doctor")


PYCACHE_ENV = "GPU_DOCTOR_PYCACHE"   # "0": leave bytecode to Python's own settings


def private_pycache() -> str | None:
    """Where the doctor's own processes keep bytecode when the environment forbids writing it (PYTHONDONTWRITEBYTECODE,
    set in many container images): without it every run compiles the doctor's ~60 modules from source again (0.1-0.3 s
    of CPU a process, docs/BENCHMARKS.md issue 19 session 12).  Then this process reads and writes bytecode under
    <cache>/pycache (``sys.pycache_prefix``; nothing is written beside any source, which is what the switch is for)
    and the folder is returned, for child processes of the doctor's own code to use as PYTHONPYCACHEPREFIX.  None
    (nothing changed): bytecode allowed, a prefix of the user's own, the package's bytecode present beside it, or
    GPU_DOCTOR_PYCACHE=0."""
    import importlib.util

    if (not sys.dont_write_bytecode or sys.pycache_prefix is not None
            or os.environ.get(PYCACHE_ENV, "1") == "0"):
        return None
    witness = str(Path(__file__).resolve().parent / "cli.py")
    try:
        if os.path.exists(importlib.util.cache_from_source(witness)):
            return None
    except (ValueError, NotImplementedError):
        return None
    prefix = os.path.join(default_cache_dir(), "pycache")
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
    return prefix
