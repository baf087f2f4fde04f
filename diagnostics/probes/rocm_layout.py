"""Where a ROCm userspace lives, read from files only (no tool run, nothing imported from the diagnosed Python).

Three shapes are known (sources: docs/PROBES_ROCM.md):

* **legacy** (ROCm <= 7.2): ``/opt/rocm-X.Y.Z`` with ``/opt/rocm`` a symlink to it, ``.info/version`` in the
  prefix, distribution packages ``rocm-core``, ``hip-runtime-amd``, ...
* **ROCm Core SDK** (TheRock, 7.14 and 10.x, DEB/RPM ``amdrocm-*`` packages): the tree is
  ``/opt/rocm/core-X.Y`` (``/opt/rocm/core`` and ``/opt/rocm/core-X`` are update-alternatives symlinks to it;
  ``/opt/rocm/bin``, ``lib``, ``include`` ... and ``/usr/bin/rocminfo`` etc. are alternatives symlinks into it);
  ``/opt/rocm`` is a plain directory without ``.info``.
* **TheRock Python wheels** (``pip install rocm[libraries]``, or pulled in by a TheRock torch wheel): in the
  diagnosed interpreter's site-packages, ``_rocm_sdk_core/`` (``bin/``, ``lib/``, ``.info/version``,
  ``share/therock/``), ``_rocm_sdk_libraries*/`` and ``rocm_sdk/_dist_info.py`` (whose ``__version__`` is what
  ``rocm-sdk version`` prints); console-script shims in the environment's ``bin/``.

Every path here is as on the live system; *root* is the file-system root to read (tests point it at a recorded
tree).  Symlinks are followed inside *root*: an absolute link target (``/etc/alternatives/core``) means the one
under *root*, as a chroot would see it.
"""
from __future__ import annotations

import glob
import os
import re

from .base import read_file, rpath

MAX_LINKS = 40
WHEEL_CORE = "_rocm_sdk_core"


def resolve(root: str, path: str) -> str | None:
    """*path* with every symlink followed inside *root* (a path as on the live system), or None when a link
    dangles, loops or cannot be read.  A path that does not exist is returned as it is (callers test it)."""
    parts = [p for p in path.split("/") if p and p != "."]
    done = "/"
    hops = 0
    while parts:
        name = parts.pop(0)
        if name == "..":
            done = os.path.dirname(done.rstrip("/")) or "/"
            continue
        cur = os.path.join(done, name)
        full = rpath(root, cur)
        if os.path.islink(full):
            hops += 1
            if hops > MAX_LINKS:
                return None
            try:
                target = os.readlink(full)
            except OSError:
                return None
            base = "/" if target.startswith("/") else done
            parts = [p for p in target.split("/") if p and p != "."] + parts
            done = base if target.startswith("/") else done
            continue
        done = cur
    return done


def exists(root: str, path: str, kind: str = "any") -> bool:
    r = resolve(root, path)
    if r is None:
        return False
    full = rpath(root, r)
    if kind == "dir":
        return os.path.isdir(full)
    if kind == "exe":
        return os.path.isfile(full) and os.access(full, os.X_OK)
    return os.path.exists(full)


def read(root: str, path: str, limit: int = 1 << 16) -> str | None:
    r = resolve(root, path)
    return None if r is None else read_file(root, r, limit=limit)


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3]) or (0,)


def core_trees(root: str) -> list[str]:
    """The ROCm Core SDK trees under /opt/rocm, the one the alternatives select (/opt/rocm/core) first, then the
    others newest first; each named by the directory it resolves to (``/opt/rocm/core-10.0``)."""
    out: list[str] = []
    cands = ["/opt/rocm/core"] + sorted(
        ("/opt/rocm/" + os.path.basename(p) for p in glob.glob(rpath(root, "/opt/rocm/core-*"))),
        key=lambda p: version_key(p.rsplit("core-", 1)[-1]), reverse=True)
    for c in cands:
        r = resolve(root, c)
        if r and exists(root, r, "dir") and r not in out and r.rstrip("/") != "/opt/rocm":
            out.append(r)
    return out


def legacy_trees(root: str) -> list[str]:
    return ["/opt/" + os.path.basename(p) for p in sorted(glob.glob(rpath(root, "/opt/rocm-*")))
            if os.path.isdir(p)]


# --- the diagnosed interpreter's site-packages ----------------------------------------------------------------

def _python_version(root: str, python: str, prefix: str) -> str | None:
    """'3.12' from pyvenv.cfg or the name the interpreter resolves to (python3.12), else None."""
    cfg = read(root, os.path.join(prefix, "pyvenv.cfg")) or ""
    m = re.search(r"^\s*version(?:_info)?\s*=\s*(\d+\.\d+)", cfg, re.M)
    if m:
        return m.group(1)
    r = resolve(root, python) or python
    m = re.search(r"python(\d+\.\d+)$", os.path.basename(r)) or re.search(r"python(\d+\.\d+)$", python)
    return m.group(1) if m else None


def site_dirs(root: str, python: str | None, home: str | None = None) -> list[str]:
    """site-packages / dist-packages directories of *python* (a venv or conda prefix, or a system
    interpreter with /usr/local and the user's ~/.local), as paths on the live system; only those that exist."""
    if not python:
        return []
    prefix = os.path.dirname(os.path.dirname(python.rstrip("/")))
    is_env = exists(root, os.path.join(prefix, "pyvenv.cfg")) or exists(root, os.path.join(prefix, "conda-meta"), "dir")
    ver = _python_version(root, python, prefix)
    prefixes = [prefix]
    if not is_env:
        real = resolve(root, python)
        if real:
            rp = os.path.dirname(os.path.dirname(real))
            if rp not in prefixes:
                prefixes.append(rp)
        if "/usr" in prefixes and "/usr/local" not in prefixes:
            prefixes.append("/usr/local")
    pyglob = f"python{ver}" if ver else "python3*"
    pats = []
    for p in prefixes:
        for lib in ("lib", "lib64"):
            pats += [f"{p}/{lib}/{pyglob}/site-packages", f"{p}/{lib}/{pyglob}/dist-packages"]
        pats.append(f"{p}/lib/python3/dist-packages")
    if not is_env and home:
        pats.append(f"{home}/.local/lib/{pyglob}/site-packages")
    out: list[str] = []
    for pat in pats:
        for d in sorted(glob.glob(rpath(root, pat))):
            live = d if root in ("", "/") else "/" + os.path.relpath(d, root)
            if os.path.isdir(d) and live not in out:
                out.append(live)
    return out


def _dist_version(root: str, site: str, names: tuple[str, ...]) -> str | None:
    """The version of an installed distribution from its ``<name>-<version>.dist-info`` directory."""
    for name in names:
        for d in sorted(glob.glob(rpath(root, f"{site}/{name}-*.dist-info"))):
            meta = read_file("/", os.path.join(d, "METADATA"), limit=1 << 14) or ""
            m = re.search(r"^Version:\s*(\S+)", meta, re.M)
            if m:
                return m.group(1)
            m = re.match(re.escape(name) + r"-(.+)\.dist-info$", os.path.basename(d))
            if m:
                return m.group(1)
    return None


def wheel_sdk(root: str, python: str | None, home: str | None = None) -> dict | None:
    """TheRock's ROCm Python packages in *python*'s environment: {"site", "core", "version", "version_from",
    "libraries"} or None.  The version is what ``rocm-sdk version`` prints (rocm_sdk/_dist_info.py), else the
    rocm-sdk-core distribution's, else the core tree's .info/version."""
    for site in site_dirs(root, python, home):
        cores = [c for c in sorted(glob.glob(rpath(root, f"{site}/{WHEEL_CORE}*")))
                 if os.path.isdir(c) and (os.path.isdir(os.path.join(c, "bin")) or os.path.isdir(os.path.join(c, "lib"))
                                          or os.path.isdir(os.path.join(c, ".info")))]
        sdk_info = read(root, f"{site}/rocm_sdk/_dist_info.py", limit=1 << 18)
        if not cores and sdk_info is None:
            continue
        core = f"{site}/{os.path.basename(cores[0])}" if cores else None
        version, source = None, None
        if sdk_info:
            found = re.findall(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", sdk_info, re.M)
            found = [v for v in found if v != "DEFAULT"]
            if found:
                version, source = found[-1], f"{site}/rocm_sdk/_dist_info.py"
        if version is None:
            v = _dist_version(root, site, ("rocm_sdk_core", "rocm"))
            if v:
                version, source = v, f"{site}/rocm_sdk_core (package metadata)"
        if version is None and core:
            v = (read(root, f"{core}/.info/version") or "").strip()
            if v:
                version, source = v, f"{core}/.info/version"
        libs = ["/" + os.path.relpath(p, root) if root not in ("", "/") else p
                for p in sorted(glob.glob(rpath(root, f"{site}/_rocm_sdk_libraries*"))) if os.path.isdir(p)]
        return {"site": site, "core": core, "version": version, "version_from": source, "libraries": libs}
    return None
