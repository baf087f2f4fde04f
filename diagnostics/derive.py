"""Facts that combine what several probes found (computed in the parent after all probes ended)."""
from __future__ import annotations

from typing import Any


def base_target(arch: str) -> str:
    """'gfx90a:sramecc+:xnack-' -> 'gfx90a'; 'amdgcn-amd-amdhsa--gfx1100' -> 'gfx1100'."""
    a = arch.strip()
    if "--" in a:
        a = a.split("--", 1)[1]
    return a.split(":", 1)[0]


def _cuda_supported(cap: str, arch_list: list[str]) -> bool:
    """sm_90 runs if the list has sm_90, or PTX (compute_XY) of an equal or lower capability."""
    if cap in arch_list:
        return True
    try:
        want = int(cap.split("_", 1)[1])
    except (IndexError, ValueError):
        return False
    for a in arch_list:
        if a.startswith("compute_"):
            try:
                if int(a.split("_", 1)[1]) <= want:
                    return True
            except ValueError:
                pass
    return False


def derive(facts: dict[str, Any]) -> dict[str, Any]:
    """New facts only (never overrides one a probe established)."""
    new: dict[str, Any] = {}
    arch_list = facts.get("torch.arch_list")
    build = facts.get("torch.build")
    targets = [base_target(a) for a in facts.get("gpu.gfx_targets") or []]
    if not targets and facts.get("torch.gcn_arch_names"):
        targets = [base_target(a) for a in facts["torch.gcn_arch_names"]]
    if isinstance(arch_list, list) and arch_list and targets and build in ("rocm", "cuda"):
        if build == "rocm":
            amd = [t for t in targets if t.startswith("gfx")]
            listed = {base_target(a) for a in arch_list}
            override = facts.get("hsa_override.gfx") if facts.get("hsa_override.valid") else None
            effective = [override or t for t in amd]
            missing = sorted({t for t in effective if t not in listed})
            native_missing = sorted({t for t in amd if t not in listed})
            if amd:
                new["torch.arch_supported"] = not missing
                new["torch.unsupported_archs"] = missing
                new["hsa_override.needed"] = bool(native_missing)
        else:
            caps = [t for t in targets if t.startswith("sm_")]
            if caps:
                missing = sorted({c for c in caps if not _cuda_supported(c, arch_list)})
                new["torch.arch_supported"] = not missing
                new["torch.unsupported_archs"] = missing
    count = facts.get("gpu.count")
    masks = facts.get("visible_devices.masks") or []
    if "visible_devices.hides_all" not in facts and masks and isinstance(count, int) and count > 0:
        # an index list that names only devices beyond the ones present hides everything too
        hides = False
        for m in masks:
            val = m.split("=", 1)[1] if "=" in m else ""
            idx = [x.strip() for x in val.split(",") if x.strip()]
            if idx and all(x.isdigit() and int(x) >= count for x in idx):
                hides = True
        new["visible_devices.hides_all"] = hides
    if "gpu.vendors" not in facts:
        vendors = []
        if (facts.get("pci.amd_gpu_count") or 0) > 0:
            vendors.append("amd")
        if (facts.get("pci.nvidia_gpu_count") or 0) > 0:
            vendors.append("nvidia")
        if vendors:
            new["gpu.vendors"] = vendors
    from .support import derive_support  # the GPU support matrix (kb/support/gpu-matrix.yaml)

    new.update({k: v for k, v in derive_support({**facts, **new}).items() if k not in new})
    return {k: v for k, v in new.items() if k not in facts}
