"""AMD GPUs straight from sysfs, with no ROCm userspace at all (the way ollama discovers them).

KFD topology: ``/sys/class/kfd/kfd/topology/nodes/*/properties`` (one "key value" per line; a GPU node has
``simd_count`` > 0; ``gfx_target_version`` is MMmmss in decimal: 90010 -> gfx90a, 110000 -> gfx1100).
VRAM: ``/sys/class/drm/renderD<minor>/device/mem_info_vram_{total,used}`` (or any ``card*/device``).
"""
from __future__ import annotations

import glob
import os
import re

from .base import Emitter, probe_main, read_file, rpath
from .devices import pci_gpus

TOPOLOGY = "/sys/class/kfd/kfd/topology/nodes"
NVIDIA_PROC = "/proc/driver/nvidia/gpus"

# every fact this probe may emit
FACTS = ("gpu.count", "gpu.gfx_targets", "gpu.native_gfx_targets", "gpu.integrated_count", "gpu.discrete_count",
         "gpu.vendors", "gpu.first_is_integrated", "gpu.vram_total_bytes", "gpu.vram_used_bytes", "gpu.vram_free_bytes",
         "gpu.gtt_total_bytes", "gpu.uuids")
# gfx targets of APUs (integrated graphics sharing system memory)
APU_TARGETS = {"gfx801", "gfx902", "gfx909", "gfx90c", "gfx940", "gfx1013", "gfx1033", "gfx1035", "gfx1036",
               "gfx1037", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"}


def gfx_from_version(v: int) -> str | None:
    """KFD's decimal encoding to a gfx name; hex digits kept (90010 -> gfx90a, 90012 -> gfx90c)."""
    if v <= 0:
        return None
    major, minor, step = v // 10000, (v // 100) % 100, v % 100
    if minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def parse_properties(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"-?\d+", parts[1]):
            out[parts[0]] = int(parts[1])
    return out


def _int_file(root: str, path: str) -> int | None:
    t = read_file(root, path)
    if t is None:
        return None
    t = t.strip()
    return int(t) if t.isdigit() else None


def _vram(root: str, minor: int | None) -> tuple[int | None, int | None, int | None]:
    cands = []
    if minor:
        cands.append(f"/sys/class/drm/renderD{minor}/device")
    cands += ["/sys/class/drm/" + os.path.basename(os.path.dirname(p)) + "/device"
              for p in sorted(glob.glob(rpath(root, "/sys/class/drm/card*/device")))]
    for d in cands:
        total = _int_file(root, f"{d}/mem_info_vram_total")
        if total is not None:
            return total, _int_file(root, f"{d}/mem_info_vram_used"), _int_file(root, f"{d}/mem_info_gtt_total")
        if minor:
            continue
    return None, None, None


def read_nodes(root: str) -> list[dict]:
    nodes = []
    paths = glob.glob(rpath(root, TOPOLOGY + "/*/properties"))
    for p in sorted(paths, key=lambda x: int(os.path.basename(os.path.dirname(x))) if os.path.basename(os.path.dirname(x)).isdigit() else 1 << 30):
        idx = os.path.basename(os.path.dirname(p))
        try:
            text = open(p, errors="replace").read(1 << 16)
        except OSError as exc:  # cgroup-masked nodes answer EPERM
            nodes.append({"node": idx, "error": exc.strerror or str(exc)})
            continue
        props = parse_properties(text)
        props["node"] = idx
        nodes.append(props)
    return nodes


def nvidia_uuids(root: str) -> list[str]:
    """UUIDs of NVIDIA GPUs from the driver's /proc files ("GPU UUID: GPU-..."), in PCI order (nvidia-smi's
    default order, and CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID)."""
    out = []
    for f in sorted(glob.glob(rpath(root, NVIDIA_PROC + "/*/information"))):
        try:
            text = open(f, errors="replace").read(1 << 14)
        except OSError:
            continue
        m = re.search(r"^GPU UUID:\s*(GPU-[0-9a-fA-F-]+)", text, re.M)
        if m:
            out.append(m.group(1))
    return out


def collect(root: str, out: Emitter) -> None:
    nv = nvidia_uuids(root)
    if nv:
        out.fact("gpu.uuids", nv)
    if not os.path.isdir(rpath(root, TOPOLOGY)):
        out.evidence("sysfs", f"{TOPOLOGY} does not exist (no KFD: driver not loaded, or not visible here)")
        out.status("skipped", "no KFD topology in sysfs")
        return
    nodes = read_nodes(root)
    gpus = []
    for n in nodes:
        if "error" in n:
            out.note(f"topology node {n['node']}: {n['error']}")
            continue
        if n.get("simd_count", 0) <= 0:
            continue
        gfx = gfx_from_version(n.get("gfx_target_version", 0))
        integrated = (gfx in APU_TARGETS) or n.get("cpu_cores_count", 0) > 0
        total, used, gtt = _vram(root, n.get("drm_render_minor"))
        uid = n.get("unique_id")
        gpus.append({"node": n["node"], "gfx": gfx, "integrated": integrated, "vram_total": total,
                     "uuid": f"GPU-{uid:016x}" if isinstance(uid, int) and uid > 0 else None,
                     "vram_used": used, "gtt_total": gtt, "device_id": n.get("device_id")})
        out.evidence("sysfs", f"KFD node {n['node']}: {gfx or 'unknown gfx'}"
                              f" (gfx_target_version {n.get('gfx_target_version')}, simd_count {n.get('simd_count')})"
                              f"{', integrated' if integrated else ''}"
                              + (f", VRAM {total / (1 << 30):.1f} GiB" if total else ""))
    unreadable = [n["node"] for n in nodes if "error" in n]
    if unreadable:
        # an unreadable node may be a GPU: the count, the order and the target list would all be guesses (a partial
        # list read as the whole would, say, call a wheel "supported" over the GPU it could not read)
        out.status("warn", f"{len(unreadable)} KFD topology node(s) could not be read; the GPU list is not known"
                   + (f" (readable: {', '.join(g['gfx'] or '?' for g in gpus)})" if gpus else ""))
        return
    # NVIDIA GPUs are not in KFD's topology, yet they are GPUs of this machine: an iGPU next to an RTX card is not
    # "the only GPU", and the vendors of the visible GPUs include NVIDIA (the PCI bus, as the devices probe reads it)
    nv_pci = sum(1 for v, _, _ in pci_gpus(root) if v == "nvidia")
    out.fact("gpu.count", len(gpus))
    out.fact("gpu.gfx_targets", [g["gfx"] for g in gpus if g["gfx"]])
    # sysfs shows the hardware's own target, whatever HSA_OVERRIDE_GFX_VERSION says
    out.fact("gpu.native_gfx_targets", [g["gfx"] for g in gpus if g["gfx"]])
    out.fact("gpu.integrated_count", sum(1 for g in gpus if g["integrated"]))
    out.fact("gpu.discrete_count", sum(1 for g in gpus if not g["integrated"]) + max(nv_pci, len(nv)))
    if gpus:
        out.fact("gpu.vendors", ["amd", "nvidia"] if (nv_pci or nv) else ["amd"])
        if nv_pci or nv:
            out.evidence("sysfs", f"{max(nv_pci, len(nv))} NVIDIA GPU(s) on the PCI bus besides the AMD GPU(s) of KFD")
        if not nv and all(g["uuid"] for g in gpus):  # ROCm's "Uuid: GPU-<unique_id in hex>" (rocminfo)
            out.fact("gpu.uuids", [g["uuid"] for g in gpus])
        out.fact("gpu.first_is_integrated", gpus[0]["integrated"] and any(not g["integrated"] for g in gpus))
        sized = [g for g in gpus if g["vram_total"]]
        if sized and (nv_pci or nv) and all(g["integrated"] for g in sized):
            sized = []   # the iGPU's carve-out is not the memory of the machine's GPU: the NVIDIA probe has that
            out.note("VRAM of the AMD iGPU left out: an NVIDIA GPU is the discrete one here")
        if sized:
            big = max(sized, key=lambda g: (not g["integrated"], g["vram_total"]))
            out.fact("gpu.vram_total_bytes", big["vram_total"])
            if big["vram_used"] is not None:
                out.fact("gpu.vram_used_bytes", big["vram_used"])
                out.fact("gpu.vram_free_bytes", max(0, big["vram_total"] - big["vram_used"]))
            if big["gtt_total"]:
                out.fact("gpu.gtt_total_bytes", big["gtt_total"])
        out.status("ok", f"{len(gpus)} GPU(s): " + ", ".join(g["gfx"] or "?" for g in gpus))
    else:
        out.status("warn", "KFD topology lists no GPU node")


if __name__ == "__main__":
    probe_main(collect, FACTS)
