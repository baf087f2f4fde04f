"""ROCm userspace: where it is installed, which version, and what rocminfo / rocm-smi / amd-smi say.

The tools' output goes through the same parsers as a pasted dump.  Exit codes are not trusted alone
(rocm-smi exits 0 with no driver loaded): the text decides.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import sys

from . import base, rocm_layout as layout
from .base import Emitter, probe_main, read_file, rpath, run_tool

# every fact this probe may emit: its own, and what the rocminfo, rocm-smi/amd-smi and hipconfig parsers find
FACTS = ("rocm.installed", "rocm.version", "rocm.path", "rocm.paths", "rocm.source", "rocm.wheel_version",
         "rocm.wheel_path", "rocminfo.ok", "rocminfo.error", "rocm_smi.error",
         "ollama.version", "hsa.runtime_version", "hip.platform", "hip.clang_version", "hip.runtime_version",
         "driver.amdgpu_loaded", "driver.amdgpu_version", "kfd.present", "kfd.permission_denied", "kfd.open_error",
         "container.kind", "container.present", "gpu.count", "gpu.names", "gpu.gfx_targets", "gpu.isa_names",
         "gpu.uuids", "gpu.xnack_enabled", "gpu.integrated_count", "gpu.discrete_count", "gpu.first_is_integrated",
         "gpu.vram_total_bytes", "gpu.vram_used_bytes", "gpu.vram_free_bytes", "env.set_names", "os.kernel", "os.name", "os.id", "os.version_id",
         # the compute processes and the GPU's load (diagnostics/probes/gpuprocs.py, parsers.base.process_facts)
         "gpu.processes", "gpu.other_process_count", "gpu.other_process_mem_bytes",
         "gpu.other_process_mem_fraction", "gpu.busy_percent", "gpu.mem_used_fraction")

# the packages whose version is the ROCm release, most telling first: legacy rocm-core, the ROCm Core SDK's
# amdrocm-core / amdrocm-base (10.0 on: version-suffixed, amdrocm-core10.0), then the runtime packages
# (hip-runtime-amd's version is the HIP version, 6.2.41133: taken only when nothing else is installed)
DPKG_ROCM_PACKAGES = ("rocm-core", "amdrocm-core", "amdrocm-base", "amdrocm", "amdrocm-runtime", "rocm-hip-runtime",
                      "rocminfo", "hip-runtime-amd", "libamdhip64-5", "libamdhip64-6")
_VERSIONED = re.compile(r"^(amdrocm(?:-[a-z]+)?)(\d+\.\d+)(?:-gfx[0-9a-z]+)?$")


def _package_key(name: str) -> str | None:
    """The DPKG_ROCM_PACKAGES entry a package name stands for ('amdrocm-core10.0' -> 'amdrocm-core'), else None."""
    if name in DPKG_ROCM_PACKAGES:
        return name
    m = _VERSIONED.match(name)
    return m.group(1) if m and m.group(1) in DPKG_ROCM_PACKAGES else None


def _dpkg_versions(root: str) -> dict[str, str]:
    text = read_file(root, "/var/lib/dpkg/status", limit=64 << 20) or ""
    found: dict[str, str] = {}
    for block in text.split("\n\n"):
        m = re.search(r"^Package: (\S+)", block, re.M)
        if not m or _package_key(m.group(1)) is None:
            continue
        if not re.search(r"^Status: .*\binstalled", block, re.M) or re.search(r"^Status: .*not-installed", block, re.M):
            continue
        v = re.search(r"^Version: (\S+)", block, re.M)
        if v:
            found[m.group(1)] = v.group(1)
    return found


def _rpm_versions() -> dict[str, str]:
    """The same packages from the RPM database (live system only: the database is not a text file)."""
    if not shutil.which("rpm"):
        return {}
    rc, so, _se, prob = run_tool(["rpm", "-qa", "--qf", "%{NAME}\t%{VERSION}-%{RELEASE}\n"], timeout=15)
    if prob or rc != 0:
        return {}
    found = {}
    for line in so.splitlines():
        name, _, ver = line.partition("\t")
        if ver and _package_key(name.strip()):
            found[name.strip()] = ver.strip()
    return found


def _pick_package(pkgs: dict[str, str]) -> tuple[str, str]:
    """The package whose version best names the ROCm release; the newest among equals (two ROCm Core SDKs
    side by side: amdrocm-core7.13 and amdrocm-core10.0)."""
    rank = {k: i for i, k in enumerate(DPKG_ROCM_PACKAGES)}
    return min(pkgs.items(), key=lambda kv: (rank[_package_key(kv[0]) or ""],
                                             tuple(-x for x in layout.version_key(_clean_version(kv[1]))), kv[0]))


def _clean_version(v: str) -> str:
    """'5.2.3-2' -> '5.2.3'; '6.2.4.60204-139~22.04' -> '6.2.4'."""
    m = re.match(r"(\d+\.\d+(?:\.\d+)?)", v.split(":")[-1])
    return m.group(1) if m else v


def _find(tool: str, root: str, prefixes: list[str]) -> str | None:
    """The tool under a ROCm prefix (symlinks followed inside *root*: ROCm 10's /opt/rocm/bin and /usr/bin/<tool>
    are update-alternatives links), else on PATH (live) or in /usr/bin, /usr/local/bin (a recorded tree)."""
    for p in prefixes:
        cand = os.path.join(p, "bin", tool)
        if layout.exists(root, cand, "exe"):
            return rpath(root, layout.resolve(root, cand) or cand) if root not in ("", "/") else cand
    if root in ("", "/"):
        return shutil.which(tool)
    for d in ("/usr/bin", "/usr/local/bin"):
        if layout.exists(root, f"{d}/{tool}", "exe"):
            return rpath(root, layout.resolve(root, f"{d}/{tool}") or f"{d}/{tool}")
    return None


def _parse(kind: str, text: str) -> tuple[dict, list[str], list[str]]:
    try:
        from .. import parsers

        res = parsers.parse(text, kind)
        return res.facts, res.notes, res.errors
    except (ImportError, ValueError):
        return {}, [], []


def _system_prefixes(root: str) -> list[str]:
    """ROCM_PATH / ROCM_HOME / HIP_PATH (live), /opt/rocm, the ROCm Core SDK trees /opt/rocm/core-X.Y (the one
    /opt/rocm/core selects first) and the legacy /opt/rocm-X.Y.Z trees."""
    env = []
    if root in ("", "/"):
        env = [os.environ.get(n) for n in ("ROCM_PATH", "ROCM_HOME", "HIP_PATH")]
    out: list[str] = []
    for p in [e.rstrip("/") for e in env if e] + ["/opt/rocm"] + layout.legacy_trees(root) + layout.core_trees(root):
        if p and p not in out and layout.exists(root, p, "dir"):
            out.append(p)
    return out


def _read_version(root: str, prefix: str) -> str | None:
    for name in (".info/version", ".info/version-dev"):
        v = layout.read(root, os.path.join(prefix, name))
        if v and v.strip():
            return v.strip()
    return None


def collect(root: str, out: Emitter, python: str | None = None) -> None:
    """*python*: the diagnosed interpreter, whose environment may hold TheRock's ROCm wheels (default: the one
    the run diagnoses, --python; on the live system this interpreter)."""
    python = python or base.TARGET_PYTHON or (sys.executable if root in ("", "/") else None)
    prefixes = _system_prefixes(root)
    # TheRock's Python wheels in the diagnosed environment (what a TheRock torch wheel loads)
    home = os.environ.get("HOME") if root in ("", "/") else None
    wheel = layout.wheel_sdk(root, python, home) if python else None
    if wheel and wheel["core"]:
        prefixes.append(wheel["core"])
    out.fact("rocm.paths", prefixes)
    version = None
    for p in prefixes:
        v = _read_version(root, p) if not (wheel and p == wheel["core"]) else None
        if v:
            version = _clean_version(v)
            out.fact("rocm.path", p)
            # ROCM_PATH may name a wheel tree ($(rocm-sdk path --root) is .../site-packages/_rocm_sdk_devel)
            out.fact("rocm.source", "pip" if "/_rocm_sdk_" in p else "system")
            out.evidence("rocm", f"{p}/.info/version: {v}")
            break
    pkgs = _dpkg_versions(root)
    if not pkgs and root in ("", "/") and not prefixes:
        pkgs = _rpm_versions()
    if pkgs:
        name, v = _pick_package(pkgs)
        out.evidence("packages", f"distribution package {name} {v}")
        if version is None:
            version = _clean_version(v)
            if not prefixes:
                out.fact("rocm.path", "/usr")
            out.fact("rocm.source", "system" if prefixes else "package")
    if wheel:
        where = wheel["core"] or f"{wheel['site']}/rocm_sdk"
        out.fact("rocm.wheel_path", where)
        if wheel["version"]:
            out.fact("rocm.wheel_version", _clean_version(wheel["version"]))
        out.evidence("rocm", f"ROCm Python packages (TheRock) in {wheel['site']}: "
                             f"{wheel['version'] or 'version unknown'}"
                             + (f" (from {wheel['version_from']})" if wheel["version_from"] else "")
                             + (f"; libraries: {', '.join(os.path.basename(x) for x in wheel['libraries'])}"
                                if wheel["libraries"] else "; no rocm-sdk-libraries package"))
        if version is None:
            version = _clean_version(wheel["version"]) if wheel["version"] else None
            out.fact("rocm.path", where)
            out.fact("rocm.source", "pip")
    if version:
        out.fact("rocm.version", version)
    installed = bool(prefixes or pkgs or wheel)
    if installed:  # said now, so it survives a vendor tool that hangs below
        out.fact("rocm.installed", True)

    problems = []
    # rocminfo
    exe = _find("rocminfo", root, prefixes)
    if exe and root in ("", "/"):
        installed = True
        out.stage("rocminfo")  # a hang is then reported as "hung during 'rocminfo'"
        rc, so, se, prob = run_tool([exe], timeout=20)
        text = (so + ("\n" + se if se else "")).strip()
        if prob:
            out.fact("rocminfo.ok", False)
            out.fact("rocminfo.error", f"rocminfo {prob}")
            problems.append(f"rocminfo {prob}")
        facts, notes, errors = _parse("rocminfo", text)
        out.facts(facts)
        if prob:  # a death by signal / a timeout is the error, not the first line the tool printed
            out.fact("rocminfo.error", f"rocminfo {prob}")
        if "rocminfo.ok" not in facts and not prob:
            out.fact("rocminfo.ok", rc == 0 and "Agent " in so)
        # the parser decides (rocminfo.ok / rocminfo.error); non-fatal warning lines in `errors` do not fail it
        failed = rc != 0 or facts.get("rocminfo.ok") is False or "rocminfo.error" in facts
        if failed and "rocminfo.error" not in facts and not prob:  # keep "rocminfo could not start: ..."
            first = (errors or [ln for ln in text.splitlines() if ln.strip()] or [f"exit status {rc}"])[0]
            out.fact("rocminfo.error", first.strip())
        if failed or prob:
            out.log("rocminfo", text)
            out.evidence("rocminfo", f"rocminfo exited {rc}: " + " | ".join(text.splitlines()[:4])[:600])
            problems.append("rocminfo failed")
        for n in notes:
            out.note(f"rocminfo: {n}")
    elif root in ("", "/"):
        out.evidence("rocminfo", "rocminfo is not installed (not on PATH nor under the ROCm prefix)")
    # rocm-smi / amd-smi
    for tool, kind in (("amd-smi", "amd_smi"), ("rocm-smi", "rocm_smi")):
        exe = _find(tool, root, prefixes)
        if not exe or root not in ("", "/"):
            continue
        installed = True
        args = [exe, "static"] if tool == "amd-smi" else [exe]
        out.stage(tool)
        rc, so, se, prob = run_tool(args, timeout=15)
        text = (so + ("\n" + se if se else "")).strip()
        facts, notes, errors = _parse(kind, text)
        for k, v in facts.items():
            if not k.startswith("gpu.") or k == "gpu.vram_total_bytes" or k == "gpu.vram_used_bytes":
                out.fact(k, v)
        # exit codes are not trusted (rocm-smi exits 0 without a driver); the parser's verdict is, warnings are not
        bad = prob or "rocm_smi.error" in facts or rc not in (0, None) or (
            not facts and re.search(r"(?i)not found in modules|not initialized|no such file", text))
        if bad:
            first = (errors or [ln for ln in text.splitlines() if ln.strip()] or [prob or f"exit status {rc}"])[0]
            err = f"{tool} {prob}" if prob else str(facts.get("rocm_smi.error") or first)  # the signal, else the parser's pick
            out.fact("rocm_smi.error", err.strip()[:300])
            out.log(tool, text)
            out.evidence(tool, f"{tool} (exit {rc}): " + " | ".join(text.splitlines()[:3])[:600])
            problems.append(f"{tool} reported an error")
        break
    if root in ("", "/") and installed:
        _others(root, prefixes, out)
    # hipconfig
    exe = _find("hipconfig", root, prefixes)
    if exe and root in ("", "/"):
        out.stage("hipconfig")
        rc, so, se, prob = run_tool([exe, "--full"], timeout=15)
        if not prob:
            facts, _, _ = _parse("hipconfig", so + se)
            for k, v in facts.items():
                if k != "rocm.version" or version is None:
                    out.fact(k, v)
    if root in ("", "/") and shutil.which("ollama"):
        rc, so, se, prob = run_tool(["ollama", "--version"], timeout=5)
        m = re.search(r"version is (\S+)|(\d+\.\d+\.\d+\S*)", so + se)
        if m:
            out.fact("ollama.version", m.group(1) or m.group(2))
    out.fact("rocm.installed", installed)
    if not installed:
        out.status("warn", "no ROCm userspace found")
    elif problems:
        out.status("fail", "; ".join(problems))
    else:
        out.status("ok", f"ROCm {version or '(version unknown)'}")


def _sysfs_load(root: str) -> list[dict]:
    """Per AMD GPU in /sys/class/drm: busy % and VRAM used/total (the amdgpu driver's own files)."""
    out = []
    for card in sorted(glob.glob(rpath(root, "/sys/class/drm/card[0-9]*"))):
        if "-" in os.path.basename(card):
            continue  # connectors (card0-DP-1)
        dev = os.path.join(card, "device")
        vendor = read_file("/", os.path.join(dev, "vendor")) or ""
        if vendor.strip() != "0x1002":
            continue

        def num(name: str) -> int | None:
            v = read_file("/", os.path.join(dev, name))
            return int(v.strip()) if v and v.strip().isdigit() else None

        out.append({"index": os.path.basename(card)[4:], "busy": num("gpu_busy_percent"),
                    "used": num("mem_info_vram_used"), "total": num("mem_info_vram_total")})
    return out


def _others(root: str, prefixes: list[str], out: Emitter) -> None:
    """Who else is on the GPUs: rocm-smi --showpids (or amd-smi process --json) and each card's busy % and
    memory from sysfs, before any test generation; the doctor's own processes are left out."""
    import time

    from ..parsers.base import process_facts
    from .gpuprocs import emit_processes, load_facts, load_line, own_pids_checker

    gpus = _sysfs_load(root)
    if not gpus and not os.path.exists(rpath(root, "/dev/kfd")):
        return  # no AMD GPU here (a ROCm userspace in an NVIDIA container): the NVIDIA probe speaks for the GPUs
    samples = []
    for _ in range(2):
        if not gpus:
            break
        time.sleep(0.4)
        samples.append(_sysfs_load(root))
    out.facts(load_facts(gpus, samples))
    for g in gpus[:16]:
        out.evidence("sysfs", load_line(g).replace("GPU ", "card", 1))
    own = own_pids_checker()
    procs = None
    exe = _find("rocm-smi", root, prefixes)
    if exe:
        out.stage("rocm-smi --showpids")
        rc, so, se, prob = run_tool([exe, "--showpids"], timeout=8)
        if not prob and "KFD process information" in so:
            from ..parsers.rocm_smi import parse_showpids

            procs = parse_showpids(so)
            text = so
    if procs is None:
        exe = _find("amd-smi", root, prefixes)
        if exe:
            out.stage("amd-smi process")
            rc, so, se, prob = run_tool([exe, "process", "--json"], timeout=8)
            if not prob and rc == 0:
                from ..parsers.amd_smi import parse_process_json

                procs = parse_process_json(so)
                text = so
    if procs is None:
        return
    facts = process_facts(procs, own)
    if len(gpus) == 1 and gpus[0].get("total"):
        facts["gpu.other_process_mem_fraction"] = round(facts["gpu.other_process_mem_bytes"] / gpus[0]["total"], 4)
    emit_processes(out, facts, bool(procs), text, "gpu processes", "gpu processes", "has the GPU open")


if __name__ == "__main__":
    probe_main(collect, FACTS)
