"""The HIP runtime itself, through ctypes (no torch): device count, runtime version, error name.

Runs in its own child: hipGetDeviceCount can abort or hang on a broken stack.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys

from . import base, rocm_layout
from .base import Emitter, probe_main

FACTS = ("hip.runtime_version", "hip.device_count", "hip.error")  # every fact this probe may emit

CANDIDATES = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so.7")


def _prefixes() -> list[str]:
    """ROCM_PATH, then TheRock's wheels in the diagnosed environment (what its torch loads), /opt/rocm, the ROCm
    Core SDK trees (/opt/rocm/core-X.Y, ROCm 10) and the legacy /opt/rocm-X.Y.Z trees."""
    wheel = rocm_layout.wheel_sdk("/", base.TARGET_PYTHON or sys.executable, os.environ.get("HOME"))
    out = [os.environ.get("ROCM_PATH", ""), (wheel or {}).get("core") or "", "/opt/rocm"]
    return out + rocm_layout.core_trees("/") + sorted(glob.glob("/opt/rocm-*"))


def _load(root: str):
    errors = []
    prefixes = list(dict.fromkeys(p for p in _prefixes() if p))
    paths = [os.path.join(p, "lib", n) for p in prefixes for n in CANDIDATES] + list(CANDIDATES)
    for p in paths:
        if os.sep in p and not os.path.exists(p):
            continue
        try:
            return ctypes.CDLL(p), p, errors
        except OSError as exc:
            errors.append(f"{p}: {exc}")
    return None, None, errors


def collect(root: str, out: Emitter) -> None:
    if root not in ("", "/"):
        out.status("skipped", "the HIP runtime can only be asked on the live system")
        return
    lib, path, errors = _load(root)
    if lib is None:
        real = [e for e in errors if "cannot open shared object file" not in e or "/" in e.split(":")[0]]
        if real:
            out.log("hip runtime", "\n".join(real))
            out.evidence("hip", real[0][:500])
            out.fact("hip.error", real[0][:300])
            out.status("fail", "libamdhip64 exists but cannot be loaded")
        else:
            out.status("skipped", "libamdhip64 is not installed")
        return
    out.evidence("hip", f"loaded {path}")
    lib.hipGetErrorName.restype = ctypes.c_char_p
    ver = ctypes.c_int(0)
    out.stage("hipRuntimeGetVersion")
    rc = lib.hipRuntimeGetVersion(ctypes.byref(ver))
    if rc == 0 and ver.value:
        v = ver.value  # major*10000000 + minor*100000 + patch
        out.fact("hip.runtime_version", f"{v // 10000000}.{(v // 100000) % 100}.{v % 100000}")
    out.stage("hipGetDeviceCount")
    count = ctypes.c_int(0)
    rc = lib.hipGetDeviceCount(ctypes.byref(count))
    name = lib.hipGetErrorName(rc).decode(errors="replace") if rc else "hipSuccess"
    out.fact("hip.device_count", count.value if rc == 0 else 0)
    if rc != 0:
        out.fact("hip.error", name)
        out.evidence("hip", f"hipGetDeviceCount returned {name} ({rc})")
        out.log("hip runtime", f"hipGetDeviceCount: {name}")
        from .devices import pci_gpus

        if os.path.isdir("/sys/bus/pci/devices") and not any(v == "amd" for v, _, _ in pci_gpus("/")):
            out.status("skipped", f"no AMD GPU on this machine: nothing for the HIP runtime to use ({name})")
        else:
            out.status("fail", f"the HIP runtime finds no usable device ({name})")
    else:
        out.status("ok", f"the HIP runtime sees {count.value} device(s)")


if __name__ == "__main__":
    probe_main(collect, FACTS)
