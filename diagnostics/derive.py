"""Facts that combine what several probes found (computed in the parent after all probes ended)."""
from __future__ import annotations

import re
from typing import Any

from .gfx import override_facts


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
    raw = facts.get("env.HSA_OVERRIDE_GFX_VERSION")
    if isinstance(raw, str) and "hsa_override.value" not in facts:
        # a pasted environment (check scripts, app banners, `env` output) says the override is in force; a
        # malformed one in a paste is judged by the KB's own log patterns (the paste may be the reporter's words)
        ov = override_facts(raw)
        if ov["hsa_override.valid"]:
            new.update(ov)
    given = facts
    facts = {**facts, **new}
    arch_list = facts.get("torch.arch_list")
    build = facts.get("torch.build")
    targets = [base_target(a) for a in facts.get("gpu.gfx_targets") or []]
    if not targets and facts.get("torch.gcn_arch_names"):
        targets = [base_target(a) for a in facts["torch.gcn_arch_names"]]
    if isinstance(arch_list, list) and arch_list and targets and build in ("rocm", "cuda"):
        if build == "rocm" and facts.get("gpu.gfx_targets"):
            # a GPU the masks hide is never loaded by the runtime: only the visible ones need code in the wheel
            # (torch's own gcn_arch_names already come after the masks)
            targets = amd_visible_targets(facts, targets)
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
    vendors = facts.get("gpu.vendors")
    if not isinstance(vendors, list):
        vendors = []
        if (facts.get("pci.amd_gpu_count") or 0) > 0:
            vendors.append("amd")
        if (facts.get("pci.nvidia_gpu_count") or 0) > 0:
            vendors.append("nvidia")
        if vendors:
            new["gpu.vendors"] = vendors
    if "torch.cuda_version" not in facts:
        cv = _cuda_from_tag(facts.get("torch.version"))
        if cv and facts.get("torch.build") in (None, "cuda"):
            new["torch.cuda_version"] = cv
    if "torch.build" not in facts and _pypi_cpu_only(facts):
        new["torch.build"] = "cpu"
    if "gpu.first_is_integrated" not in facts:
        new.update(_kinds_from_torch_names(facts))
    if "gpu.count" not in facts and no_gpu_on_bus(facts):
        new["gpu.count"] = 0   # CONTRACT: gpu.count is reported wherever known, 0 on a machine with no GPU
    if "gpu.present" not in facts:
        present = gpu_present({**facts, **new})
        if present is not None:
            new["gpu.present"] = present
    from .support import derive_support  # the GPU support matrix (kb/support/gpu-matrix.yaml)

    new.update({k: v for k, v in derive_support({**facts, **new}, visible=amd_visible_targets).items() if k not in new})
    new.update(_no_error_facts(facts))
    out = {k: v for k, v in new.items() if k not in given}
    # the masks' facts have one owner, this rule: a value stored by an older version (or another probe) is replaced
    out.update(visible_devices({**facts, **out}))
    return out


_CU_TAG = re.compile(r"^\d+\.\d+(?:\.\d+)?(?:\.?[a-z]+\d*)?\+cu(\d{2,3})$")


def _cuda_from_tag(ver: Any) -> str | None:
    """The CUDA version a torch wheel's local tag names: ``2.5.1+cu124`` -> ``12.4``, ``1.7.1+cu92`` -> ``9.2``,
    ``2.9.0+cu130`` -> ``13.0`` (download.pytorch.org's folder names: major then one minor digit)."""
    m = _CU_TAG.match(ver.strip()) if isinstance(ver, str) else None
    if not m:
        return None
    d = m.group(1)
    return f"{int(d[:-1])}.{d[-1]}"


_BARE_RELEASE = re.compile(r"^\d+\.\d+(\.\d+)?$")


def _pypi_cpu_only(facts: dict[str, Any]) -> bool:
    """A torch version with no local tag (``2.5.1``, not ``2.5.1+cu124`` / ``+rocm6.2`` / ``a0+git…``) on Windows or
    macOS: PyPI's default wheel there, which is a CPU-only build (pytorch.org's install matrix: CUDA and ROCm builds
    come from their own index with a ``+cuXXX``/``+rocmX.Y`` tag).  On Linux the same bare version is PyPI's CUDA
    build, so nothing follows there."""
    ver, osn = facts.get("torch.version"), facts.get("os.name")
    if not (isinstance(ver, str) and _BARE_RELEASE.match(ver.strip()) and isinstance(osn, str)):
        return False
    return bool(re.match(r"(?i)\s*(microsoft\s+)?windows\b|\s*mac\s?os\b|\s*darwin\b", osn))


# What torch.cuda.get_device_name() says of an AMD GPU, by kind.  An APU's graphics has no marketing name of its
# own in the runtime: ROCm reports "AMD Radeon Graphics" (or "AMD Radeon(TM) Graphics"), newer releases the
# product's graphics name ("AMD Radeon 780M Graphics", "Radeon 8060S Graphics", "AMD Radeon Vega 8 Graphics").
# Discrete cards are "Radeon RX ...", "Radeon PRO ...", "Radeon VII", Instinct and FirePro boards.  A name that
# fits neither (an NVIDIA card, a renamed device) leaves the kinds unknown.
_INTEGRATED_NAME = re.compile(
    r"(?i)^\s*(?:AMD\s+)?Radeon(?:\(TM\))?\s+(?:(?:Vega\s+\d+\s+|\d{3}M\s+|\d{4}S\s+)?Graphics"
    r"|\d{3}M|\d{4}S)\s*$")
_DISCRETE_NAME = re.compile(
    r"(?i)\b(?:Radeon(?:\(TM\))?\s+(?:RX|PRO|Pro|VII|R9|R7|HD)\b|Instinct\b|FirePro\b|\bMI\d{2,3}[A-Z]?\b)")


def _kinds_from_torch_names(facts: dict[str, Any]) -> dict[str, Any]:
    """gpu.integrated_count / discrete_count / first_is_integrated from the device names torch listed, in its
    order (after any visible-devices mask: what the program itself uses), where every name says its kind."""
    names = facts.get("torch.device_names")
    if facts.get("torch.build") not in (None, "rocm") or not isinstance(names, list) or not names:
        return {}
    if len(names) == 1:
        # one device: torch lists every GPU agent the runtime has unless a mask hides some, so without a mask in
        # the facts the one it names is the machine's only GPU
        if any(k.startswith("env.") and k.endswith("VISIBLE_DEVICES") for k in facts) or facts.get("gpu.count", 1) != 1:
            return {}
        if isinstance(names[0], str) and _INTEGRATED_NAME.search(names[0]) \
                and "gpu.integrated_count" not in facts and "gpu.discrete_count" not in facts:
            return {"gpu.integrated_count": 1, "gpu.discrete_count": 0}
        return {}
    kinds = []
    for n in names:
        if not isinstance(n, str):
            return {}
        if _INTEGRATED_NAME.search(n):
            kinds.append("integrated")
        elif _DISCRETE_NAME.search(n):
            kinds.append("discrete")
        else:
            return {}
    out: dict[str, Any] = {"gpu.first_is_integrated": kinds[0] == "integrated" and "discrete" in kinds}
    if "gpu.integrated_count" not in facts and "gpu.discrete_count" not in facts:
        out["gpu.integrated_count"] = kinds.count("integrated")
        out["gpu.discrete_count"] = kinds.count("discrete")
    return out


def amd_visible_targets(facts: dict[str, Any], targets: list[str]) -> list[str]:
    """*targets* (the AMD GPUs in enumeration order) less those ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (or
    CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL, which HIP reads in its place) hide; all of them when the masks cannot be
    judged (UUIDs without the device list, a count that is not known)."""
    masks = _masks(facts)
    if not masks:
        return targets
    count, uuids = _devices(facts, "amd")
    if count != len(targets):
        # the device count is not known (a pasted rocminfo, a check script): a mask that selects nothing whatever
        # the count ("-1", "", a leading empty entry) still hides every GPU
        if any(_select(k, masks[k], None, [], False, []) == [] for k in MASK_NAMES if k in masks):
            return []
        return targets
    positions: list[int] = list(range(count))
    left_uuids = uuids
    if "ROCR_VISIBLE_DEVICES" in masks:
        sel = _select("ROCR_VISIBLE_DEVICES", masks["ROCR_VISIBLE_DEVICES"], count, uuids, False, [])
        if sel is None or any(i < 0 or i >= count for i in sel):
            return targets
        positions = sel
        left_uuids = [uuids[i] for i in sel] if uuids and len(uuids) == count else []
    hip_level = [k for k in ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL") if k in masks]
    if hip_level and positions:
        sel = _select(hip_level[0], masks[hip_level[0]], len(positions), left_uuids, False, [])
        if sel is None or any(i < 0 or i >= len(positions) for i in sel):
            return targets
        positions = [positions[i] for i in sel]
    return [targets[i] for i in positions]


# facts derive() computes, and the facts each is computed from: when a probe that owes one of the inputs crashed
# and the derived fact could not be computed, the derived fact is unknown too (service.unknown_from_probes)
DERIVED: dict[str, tuple[str, ...]] = {
    "torch.arch_supported": ("torch.arch_list", "torch.build", "gpu.gfx_targets", "torch.gcn_arch_names",
                             "visible_devices.masks"),
    "torch.unsupported_archs": ("torch.arch_list", "torch.build", "gpu.gfx_targets", "torch.gcn_arch_names",
                                "visible_devices.masks"),
    "hsa_override.needed": ("torch.arch_list", "torch.build", "gpu.gfx_targets", "torch.gcn_arch_names",
                            "visible_devices.masks"),
    "gpu.vendors": ("pci.amd_gpu_count", "pci.nvidia_gpu_count"),
    "gpu.count": ("pci.gpu_count", "container.kind"),
    "gpu.present": ("pci.gpu_count", "pci.amd_gpu_count", "pci.nvidia_gpu_count", "container.kind", "gpu.count",
                    "torch.device_count", "hip.device_count", "gpu.gfx_targets", "torch.gcn_arch_names",
                    "nvidia.compute_caps", "gpu.vendors", "gpu.names", "torch.device_names", "kfd.present",
                    "driver.amdgpu_loaded", "driver.nvidia_loaded"),
    "visible_devices.hides_all": ("visible_devices.masks", "gpu.count", "gpu.uuids", "pci.amd_gpu_count",
                                  "pci.nvidia_gpu_count", "torch.build"),
    "visible_devices.problems": ("visible_devices.masks", "gpu.count", "gpu.uuids", "pci.amd_gpu_count",
                                 "pci.nvidia_gpu_count", "torch.build"),
    "visible_devices.visible_count": ("visible_devices.masks", "gpu.count", "gpu.uuids", "pci.amd_gpu_count",
                                      "pci.nvidia_gpu_count", "torch.build"),
}


def derivable(name: str, facts: dict[str, Any]) -> bool:
    """Whether *name* would be derived at all from *facts* were its other inputs known: the mask facts exist only
    when a mask is set (visible_devices.masks known and empty: nothing to judge, nothing unknown)."""
    if name.startswith("visible_devices."):
        return "visible_devices.masks" not in facts or bool(_masks(facts))
    return True


_GPU_NAME = re.compile(r"(?i)\b(amd|radeon|instinct|nvidia|geforce|rtx|gtx|quadro|tesla)\b")
_COUNTS = ("pci.gpu_count", "pci.amd_gpu_count", "pci.nvidia_gpu_count", "gpu.count", "torch.device_count",
           "hip.device_count")


def gpu_present(facts: dict[str, Any]) -> bool | None:
    """Whether the machine has an AMD or NVIDIA GPU, one a GPU build of torch could run on: True when anything shows
    one (the PCI bus, a runtime's device count, a GPU's gfx target or compute capability, a GPU's name as a tool or
    torch printed it), False when the bus was read and shows none and nothing else does (no_gpu_on_bus), else None
    (unknown: WSL hides the GPU from its bus, a paste may say nothing about the hardware).  A CPU build of torch is
    what a machine without a GPU should run; entries that presuppose a GPU read this fact."""
    for k in _COUNTS:
        v = facts.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return True
    if any(str(t).startswith("gfx") for t in facts.get("gpu.gfx_targets") or []):
        return True
    if any(str(t).startswith(("gfx", "amdgcn")) for t in facts.get("torch.gcn_arch_names") or []):
        return True
    if facts.get("nvidia.compute_caps"):
        return True
    vendors = facts.get("gpu.vendors")
    if isinstance(vendors, list) and ({"amd", "nvidia"} & set(vendors)):
        return True
    names = [str(n) for k in ("gpu.names", "torch.device_names") for n in facts.get(k) or []]
    if any(_GPU_NAME.search(n) for n in names):
        return True
    if no_gpu_on_bus(facts):
        return False
    return None


def no_gpu_on_bus(facts: dict[str, Any]) -> bool:
    """The PCI bus was read and holds no AMD or NVIDIA GPU, and nothing else shows one (WSL passes GPUs
    through /dev/dxg, not the PCI bus)."""
    n = facts.get("pci.gpu_count")
    if n is None and isinstance(facts.get("pci.amd_gpu_count"), int) and isinstance(facts.get("pci.nvidia_gpu_count"), int):
        n = facts["pci.amd_gpu_count"] + facts["pci.nvidia_gpu_count"]
    if n != 0 or facts.get("container.kind") == "wsl":
        return False
    for k in ("torch.device_count", "hip.device_count"):
        if isinstance(facts.get(k), int) and facts[k] > 0:
            return False
    # a GPU driver bound to something, or a KFD device node, says otherwise
    return not any(facts.get(k) is True for k in ("kfd.present", "driver.amdgpu_loaded", "driver.nvidia_loaded"))


# ------------------------------------------------------------------------------------- visible-device masks
#
# What the runtimes do with a mask (the CUDA runtime's documented behaviour, which HIP copies; PyTorch models it
# the same way in torch/cuda/__init__.py `_parse_visible_devices` / `_device_count_nvml`):
# * a comma-separated list of indices or UUIDs ("GPU-..."; NVIDIA also accepts a unique UUID prefix and "MIG-");
# * the list ends at the first entry that is not a valid device (a negative number such as -1, an index beyond the
#   devices present, a UUID of no device): only the entries before it are visible; "-1" or "" hides every GPU;
# * a device named twice makes the whole list empty;
# * ROCR_VISIBLE_DEVICES is applied first (by the ROCr runtime, on every AMD GPU); HIP_VISIBLE_DEVICES (or
#   CUDA_VISIBLE_DEVICES, which HIP reads when HIP_VISIBLE_DEVICES is unset; or GPU_DEVICE_ORDINAL) then index
#   into what is left, renumbered from 0 (ROCm "GPU isolation techniques"; torch's ROCR+HIP handling);
# * on NVIDIA only CUDA_VISIBLE_DEVICES counts.

MASK_NAMES = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")
_PCI = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def _masks(facts: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in facts.get("visible_devices.masks") or []:
        if isinstance(m, str) and "=" in m:
            k, v = m.split("=", 1)
            if k in MASK_NAMES:
                out[k] = v
    for k in MASK_NAMES:  # pasted facts may carry only env.NAME
        v = facts.get(f"env.{k}")
        if isinstance(v, str) and k not in out:
            out[k] = v
    return out


_AMD_NAME = re.compile(r"(?i)\b(Radeon|Instinct|FirePro|AMD|Navi ?\d+|Vega ?\d*|Polaris|Ellesmere|Aldebaran|Arcturus)\b")
_NVIDIA_NAME = re.compile(r"(?i)\b(NVIDIA|GeForce|Quadro|Tesla|TITAN|RTX|GTX)\b")


def _vendor_of_name(name: Any) -> str | None:
    if not isinstance(name, str):
        return None
    amd, nv = bool(_AMD_NAME.search(name)), bool(_NVIDIA_NAME.search(name))
    return "amd" if amd and not nv else "nvidia" if nv and not amd else None


def _devices(facts: dict[str, Any], vendor: str) -> tuple[int | None, list[str]]:
    """How many GPUs of *vendor* exist before any mask, and their UUIDs (in enumeration order) when known."""
    vendors = facts.get("gpu.vendors") or []
    if not vendors:  # a pasted rocminfo names gfx targets, a pasted nvidia-smi the NVIDIA driver
        if any(str(t).startswith("gfx") for t in facts.get("gpu.gfx_targets") or []):
            vendors = ["amd"]
        elif facts.get("nvidia.driver_version") or facts.get("nvidia.compute_caps"):
            vendors = ["nvidia"]
        else:   # a pasted rocm-smi / amd-smi listing: the amdgpu driver answered, and the cards' names say whose
            named = {_vendor_of_name(n) for n in facts.get("gpu.names") or []} - {None}
            if len(named) == 1:
                vendors = list(named)
            elif facts.get("driver.amdgpu_loaded") is True and not facts.get("driver.nvidia_loaded"):
                vendors = ["amd"]
    count = facts.get("gpu.count")
    uuids = [u for u in facts.get("gpu.uuids") or [] if isinstance(u, str)]
    if isinstance(count, int) and vendors == [vendor]:
        return count, uuids
    pci = facts.get(f"pci.{vendor}_gpu_count")
    if isinstance(pci, int):
        return pci, uuids if vendors == [vendor] else []
    if isinstance(count, int) and not vendors:
        build = facts.get("torch.build")
        if (vendor == "amd" and build == "rocm") or (vendor == "nvidia" and build == "cuda"):
            return count, uuids
    return None, []


def _select(name: str, value: str, count: int | None, uuids: list[str], nvidia: bool,
            problems: list[str], base: str = "") -> list[int] | None:
    """Apply one mask to devices 0..count-1; returns the positions it selects (None: cannot tell).

    Each reason for losing a device is appended to *problems* as 'NAME=value: reason'."""
    label = f"{name}={value}"
    v = value.strip()
    if v == "":
        problems.append(f"{label}: the variable is set but empty, which hides every GPU")
        return []
    items = [x.strip() for x in v.split(",")]
    chosen: list[int] = []
    unknown = False
    for pos, item in enumerate(items):
        rest = "" if pos == len(items) - 1 else f"; {', '.join(items[pos + 1:])} after it are ignored too"
        if re.fullmatch(r"-\d+", item):
            problems.append(f"{label}: {item} ends the list" + (", so no GPU is visible" if not chosen else
                                                                f" (only the GPUs before it stay visible){rest}"))
            break
        if item == "":
            problems.append(f"{label}: an empty entry ends the list" + (", so no GPU is visible" if not chosen else rest))
            break
        if item.isdigit():
            idx = int(item)
            if count is None:
                unknown = True
                chosen.append(idx)
                continue
            if idx >= count:
                have = "no GPU" if count == 0 else (f"1 GPU (index 0{base})" if count == 1 else
                                                   f"{count} GPUs (indices 0-{count - 1}{base})")
                problems.append(f"{label}: index {idx} does not exist, there {'is' if count == 1 else 'are'} {have}"
                                + ("" if chosen else ", so no GPU is visible") + rest)
                break
            if idx in chosen:
                problems.append(f"{label}: GPU {idx} is named twice, which makes the whole list empty")
                return []
            chosen.append(idx)
            continue
        up = item.upper()
        if up.startswith(("GPU-", "MIG-")):
            if up.startswith("MIG-") and not nvidia:
                problems.append(f"{label}: {item} is an NVIDIA MIG id, which AMD runtimes do not accept" + rest)
                break
            if up.startswith("MIG-") or not uuids:
                unknown = True   # MIG ids and UUIDs cannot be checked without the device list
                chosen.append(-1 - pos)
                continue
            hits = [i for i, u in enumerate(uuids) if u.upper() == up or (nvidia and u.upper().startswith(up))]
            if len(hits) != 1:
                why = "matches no GPU on this machine" if not hits else "is a prefix of more than one GPU's UUID"
                problems.append(f"{label}: {item} {why} (GPUs: {', '.join(uuids)})" + ("" if chosen else
                                                                                   ", so no GPU is visible") + rest)
                break
            if hits[0] in chosen:
                problems.append(f"{label}: GPU {item} is named twice, which makes the whole list empty")
                return []
            chosen.append(hits[0])
            continue
        if _PCI.match(item):
            problems.append(f"{label}: {item} is a PCI address; {name} takes indices or GPU UUIDs, so the list ends "
                            f"there" + (" and no GPU is visible" if not chosen else rest))
            break
        problems.append(f"{label}: {item!r} is neither an index nor a GPU UUID, so the list ends there"
                        + (" and no GPU is visible" if not chosen else rest))
        break
    if unknown:
        return None if chosen else []
    return chosen


def _rocr_upper(value: str) -> int | None:
    """How many GPUs ROCR_VISIBLE_DEVICES can leave at most when the devices are not known: the number of distinct
    plain indices it lists (None for UUIDs, an empty or negative entry: those are judged elsewhere or not at all)."""
    items = [x.strip() for x in value.split(",")]
    if not items or not all(x.isdigit() for x in items) or len(set(items)) != len(items):
        return None
    return len(items)


def visible_devices(facts: dict[str, Any]) -> dict[str, Any]:
    """The one rule for visible-device masks (live runs and pasted facts alike): problems per mask, whether the
    masks hide every GPU, and how many stay visible.  Facts the masks cannot be judged on are left out."""
    masks = _masks(facts)
    if not masks:
        return {}
    build = facts.get("torch.build")
    amd_n, amd_uuids = _devices(facts, "amd")
    nv_n, nv_uuids = _devices(facts, "nvidia")
    if build == "rocm":
        stack = "amd"
    elif build == "cuda":
        stack = "nvidia"
    elif amd_n and not nv_n:
        stack = "amd"
    elif nv_n and not amd_n:
        stack = "nvidia"
    elif any(k in masks for k in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")):
        stack = "amd"
    else:
        stack = "nvidia"
    problems: list[str] = []
    if stack == "nvidia":
        count, uuids = nv_n, nv_uuids
        if "CUDA_VISIBLE_DEVICES" in masks:
            sel = _select("CUDA_VISIBLE_DEVICES", masks["CUDA_VISIBLE_DEVICES"], count, uuids, True, problems)
            visible = None if sel is None else len(sel)
        else:
            visible = count
    else:
        count, uuids = amd_n, amd_uuids
        visible: int | None = count
        left_uuids = uuids
        base = ""
        if "ROCR_VISIBLE_DEVICES" in masks:
            sel = _select("ROCR_VISIBLE_DEVICES", masks["ROCR_VISIBLE_DEVICES"], count, uuids, False, problems)
            visible = None if sel is None else len(sel)
            left_uuids = [uuids[i] for i in sel] if sel is not None and uuids and all(0 <= i < len(uuids) for i in sel) else []
            base = f" after ROCR_VISIBLE_DEVICES={masks['ROCR_VISIBLE_DEVICES']} renumbered them from 0"
        hip_level = [k for k in ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL") if k in masks]
        if hip_level:
            used = hip_level[0]
            for other in hip_level[1:]:
                problems.append(f"{other}={masks[other]}: ignored by HIP while {used}={masks[used]} is set; "
                                "set only one of them")
            if visible == 0 and "ROCR_VISIBLE_DEVICES" in masks:
                pass  # nothing left for the HIP-level mask to select from: already said
            elif visible is None and "ROCR_VISIBLE_DEVICES" in masks and _rocr_upper(masks["ROCR_VISIBLE_DEVICES"]):
                # the devices are not known, but ROCR_VISIBLE_DEVICES names at most N of them: an index N or beyond
                # in the HIP-level mask exists on no machine (Ray giving a worker ROCR_VISIBLE_DEVICES=1 on top of
                # CUDA_VISIBLE_DEVICES=0,1 leaves one GPU, and rank 1's device 1 is an invalid ordinal)
                upper = _rocr_upper(masks["ROCR_VISIBLE_DEVICES"])
                found: list[str] = []
                sel = _select(used, masks[used], upper, [], False, found,
                              f"; ROCR_VISIBLE_DEVICES={masks['ROCR_VISIBLE_DEVICES']} leaves no more")
                if found:
                    problems.extend(found)
                    if sel == []:
                        visible = 0
            else:
                sel = _select(used, masks[used], visible, left_uuids, False, problems, base if "ROCR_VISIBLE_DEVICES" in masks else "")
                visible = None if sel is None else len(sel)
    out: dict[str, Any] = {"visible_devices.problems": problems}
    if visible is not None:
        out["visible_devices.visible_count"] = visible
        out["visible_devices.hides_all"] = visible == 0 and count != 0
    elif any("no GPU is visible" in p or "hides every GPU" in p or "whole list empty" in p for p in problems):
        out["visible_devices.hides_all"] = True
    return out


# the packages next to torch whose installed version the torch probe reports (probes/torch_child.py NEIGHBOURS)
NEIGHBOUR_PACKAGES = ("pkg.transformers", "pkg.accelerate", "pkg.bitsandbytes", "pkg.flash_attn", "pkg.vllm",
                      "pkg.triton", "pkg.torchvision", "pkg.onnxruntime", "pkg.onnxruntime_gpu")


def _no_error_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """An error-text fact is absent both when a step failed to report and when it had nothing to report.  Where
    another fact shows that the step ran and succeeded, its error text is known to be empty (""), so entries that
    look for an error there evaluate false instead of unknown (as promtool would have it)."""
    new: dict[str, Any] = {}
    if facts.get("torch.smoke_ok") is True:
        new["torch.smoke_error"] = ""
    imported = ("torch.smoke_ok" in facts or isinstance(facts.get("torch.cuda_available"), bool)
                or bool(facts.get("torch.smoke_error")))
    if imported:
        new["torch.import_error"] = ""
    if facts.get("gen.ran") is True:
        new["gen.error"] = ""
    if facts.get("torch.installed") is True and any(k in facts for k in NEIGHBOUR_PACKAGES):
        # the torch probe read the package metadata of the environment: a neighbour it did not report is not
        # installed there ("" = no version)
        for k in NEIGHBOUR_PACKAGES:
            new[k] = ""
    if facts.get("kfd.present") is False or facts.get("kfd.permission_denied") is False:
        new["kfd.open_error"] = ""      # no /dev/kfd to open, or it opened (an error would have been recorded)
    return new
