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
