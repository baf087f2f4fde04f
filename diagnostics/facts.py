"""The fact catalogue: every fact name the probes, parsers and KB may use, with one meaning each.

Facts are plain JSON values keyed by dotted names.  A fact that could not be established is *absent*
(never guessed); the matcher treats an absent fact as unknown, never as false.

Adding a fact: add one line to CATALOGUE below (name, type, meaning).  Names under ``env.`` are open:
``env.<VARIABLE>`` holds the value of any GPU-related environment variable that is set.
This module must stay import-light: probes run it in child processes.
"""
from __future__ import annotations

from typing import Any

# type names: str, int, float, bool, list[str], list[int]
CATALOGUE: dict[str, tuple[str, str]] = {
    # --- operating system and host -------------------------------------------------------------
    "os.name": ("str", "distribution name and version, e.g. 'Ubuntu 22.04.4 LTS'"),
    "os.id": ("str", "distribution id from os-release, e.g. 'ubuntu', 'debian', 'rhel'"),
    "os.version_id": ("str", "distribution version id from os-release, e.g. '22.04'"),
    "os.kernel": ("str", "kernel release, e.g. '6.8.0-45-generic'"),
    "os.kernel_cmdline": ("str", "the kernel command line (/proc/cmdline)"),
    "os.secure_boot": ("bool", "UEFI Secure Boot is enabled"),
    "os.iommu_enabled": ("bool", "an IOMMU is active (/sys/class/iommu has entries)"),
    "python.version": ("str", "Python version of the diagnosed interpreter, e.g. '3.11.7'"),
    "python.executable": ("str", "path of the diagnosed interpreter"),
    "host.mem_total_bytes": ("int", "total host RAM"),
    "host.mem_available_bytes": ("int", "host RAM available for new allocations"),
    "host.swap_total_bytes": ("int", "total swap"),
    "host.cpu_count": ("int", "logical CPUs"),
    "host.cpu_model": ("str", "CPU model name"),
    "host.shm_total_bytes": ("int", "size of the /dev/shm tmpfs (Docker's default is 64 MB)"),
    "host.arch": ("str", "machine architecture as platform.machine() reports it, e.g. 'x86_64', 'aarch64'"),
    # --- user, groups, containers --------------------------------------------------------------
    "user.uid": ("int", "uid of the running process"),
    "user.is_root": ("bool", "the running process is root (uid 0)"),
    "user.groups": ("list[str]", "groups of the running process (what the kernel checks)"),
    "user.db_groups": ("list[str]", "groups the group database (/etc/group) lists for the user"),
    "user.in_render_group": ("bool", "the running process has the 'render' group"),
    "user.in_video_group": ("bool", "the running process has the 'video' group"),
    "user.groups_pending_relogin": ("list[str]", "GPU groups in the group database but not in the running process (added, not logged in again)"),
    "user.missing_device_gids": ("list[int]", "gids owning /dev/kfd or /dev/dri/renderD* that the process lacks"),
    "container.kind": ("str", "docker, podman, lxc, kubernetes, singularity, wsl, ... (absent: not detected)"),
    "container.present": ("bool", "running inside a container or WSL"),
    "system.virtualization": ("str", "the hypervisor this OS runs under: 'none' (bare metal), or e.g. 'kvm', 'qemu', 'vmware', 'hyper-v', 'xen', 'virtualbox', 'amazon', 'google', 'vm' (a hypervisor of unknown kind)"),
    # --- kernel driver and device nodes ----------------------------------------------------------
    "driver.amdgpu_loaded": ("bool", "the amdgpu kernel driver is loaded"),
    "driver.amdgpu_version": ("str", "amdgpu module version (DKMS builds carry one)"),
    "driver.amdgpu_blacklisted": ("bool", "amdgpu is blacklisted or disabled (modprobe.blacklist, nomodeset, amdgpu.*=0)"),
    "driver.amdgpu_dkms_status": ("str", "what `dkms status` says of amdgpu for the running kernel: installed, built, added or broken (absent: no amdgpu DKMS package)"),
    "driver.amdgpu_missing_firmware": ("list[str]", "amdgpu firmware files the kernel log says failed to load, e.g. 'amdgpu/gc_11_0_0_mes.bin'"),
    "driver.nvidia_loaded": ("bool", "the nvidia kernel driver is loaded"),
    "driver.nvidia_module_available": ("bool", "an nvidia kernel module exists for the running kernel (modules.dep lists it); absent when no NVIDIA GPU is on the bus"),
    "kfd.present": ("bool", "/dev/kfd exists"),
    "kfd.permission_denied": ("bool", "opening /dev/kfd read-write failed with EACCES/EPERM"),
    "kfd.open_error": ("str", "errno name when opening /dev/kfd failed, e.g. 'EACCES', 'ENOENT'"),
    "kfd.group": ("str", "group owning /dev/kfd"),
    "dri.render_nodes": ("list[str]", "/dev/dri/renderD* nodes present"),
    "dri.permission_denied": ("bool", "opening a /dev/dri/renderD* node read-write failed with EACCES/EPERM"),
    "dri.group": ("str", "group owning the first /dev/dri/renderD* node"),
    "dxg.present": ("bool", "/dev/dxg exists: WSL2's paravirtual GPU node, through which the Windows driver shares the host's GPU (reported only under WSL)"),
    # --- PCI inventory (no vendor software needed) --------------------------------------------------
    "pci.amd_gpu_count": ("int", "AMD display/compute devices on the PCI bus (vendor 0x1002)"),
    "pci.nvidia_gpu_count": ("int", "NVIDIA display/compute devices on the PCI bus (vendor 0x10de)"),
    "pci.amd_gpu_ids": ("list[str]", "PCI device ids of AMD GPUs, e.g. '0x744c'"),
    "pci.gpu_count": ("int", "AMD and NVIDIA GPUs on the PCI bus (display 0x03 and accelerator 0x12 classes); inside a container the host's bus"),
    "pci.gpu_slots": ("list[str]", "PCI addresses of those GPUs, e.g. '0000:65:00.0'"),
    # --- ROCm userspace ------------------------------------------------------------------------------
    "rocm.installed": ("bool", "a ROCm userspace install was found"),
    "rocm.version": ("str", "installed ROCm userspace version, e.g. '6.2.4'"),
    "rocm.path": ("str", "the ROCm install prefix in use, e.g. '/opt/rocm'"),
    "rocm.paths": ("list[str]", "every ROCm install prefix found"),
    "rocm.source": ("str", "where rocm.version/rocm.path come from: 'system' (a tree under /opt/rocm or ROCM_PATH), 'package' (only the DEB/RPM database), 'pip' (TheRock's ROCm Python wheels in the diagnosed environment)"),
    "rocm.wheel_version": ("str", "version of TheRock's ROCm Python packages (rocm / rocm-sdk-core) in the diagnosed environment, what `rocm-sdk version` prints, e.g. '10.0.0'"),
    "rocm.wheel_path": ("str", "where those packages' core tree is, e.g. '.../site-packages/_rocm_sdk_core'"),
    "rocminfo.ok": ("bool", "rocminfo ran and listed agents"),
    "rocminfo.error": ("str", "rocminfo's error text, verbatim first line"),
    "rocm_smi.error": ("str", "rocm-smi/amd-smi error text, verbatim first line"),
    "hsa.runtime_version": ("str", "HSA runtime version reported by rocminfo"),
    "hip.runtime_version": ("str", "what the HIP runtime reports, e.g. '6.2.41133'"),
    "hip.device_count": ("int", "hipGetDeviceCount result (0 on error)"),
    "hip.error": ("str", "HIP runtime error name when asking for devices, e.g. 'hipErrorNoDevice'"),
    "hip.platform": ("str", "hipconfig platform: amd or nvidia"),
    "hip.clang_version": ("str", "HIP clang version from hipconfig"),
    # --- GPUs as the compute stack sees them ---------------------------------------------------------
    "gpu.count": ("int", "GPUs visible to the compute stack"),
    "gpu.present": ("bool", "derived: the machine has an AMD or NVIDIA GPU (on the PCI bus, named by a GPU tool or torch, or counted by a runtime); false only where the bus was read and shows none and nothing else shows one (derive.no_gpu_on_bus)"),
    "gpu.names": ("list[str]", "marketing names, in enumeration order"),
    "gpu.gfx_targets": ("list[str]", "gfx targets like 'gfx1100', 'gfx90a', in enumeration order"),
    "gpu.gfx_reported_mismatch": ("bool", "a pasted log shows a board the ROCm runtime reports under another gfx target than Mesa's Vulkan driver names its chip (an override in effect); false when every such board agrees"),
    "gpu.native_gfx_targets": ("list[str]", "gfx targets from KFD topology sysfs (gfx_target_version), before any HSA_OVERRIDE_GFX_VERSION"),
    "gpu.isa_names": ("list[str]", "full ISA names with features, e.g. 'amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-'"),
    "gpu.xnack_enabled": ("bool", "XNACK is enabled on at least one GPU (xnack+)"),
    "gpu.integrated_count": ("int", "integrated GPUs (APUs) among the visible GPUs"),
    "gpu.discrete_count": ("int", "discrete GPUs among the visible GPUs"),
    "gpu.first_is_integrated": ("bool", "the first enumerated GPU is an integrated one while a discrete one exists"),
    "gpu.vram_total_bytes": ("int", "dedicated VRAM of the largest visible GPU"),
    "gpu.vram_used_bytes": ("int", "VRAM in use on that GPU before the run"),
    "gpu.vram_free_bytes": ("int", "VRAM free on that GPU before the run"),
    "gpu.gtt_total_bytes": ("int", "GTT (system memory the GPU can map) of that GPU"),
    "gpu.vendors": ("list[str]", "vendors of the visible GPUs: 'amd', 'nvidia', 'intel'"),
    "gpu.uuids": ("list[str]", "GPU UUIDs in enumeration order as the runtimes spell them: 'GPU-<16 hex>' (ROCm, from KFD unique_id / rocminfo Uuid) or 'GPU-xxxxxxxx-xxxx-...' (NVIDIA)"),
    "gpu.pcie_atomics": ("bool", "the PCIe path supports atomics (false when the kernel says it does not)"),
    # other processes on the GPUs, read by the probe run (nvidia-smi --query-compute-apps, rocm-smi --showpids /
    # amd-smi process, sysfs / nvidia-smi --query-gpu) before any test generation; the doctor's own processes excluded
    "gpu.processes": ("list[str]", "compute processes of others on the GPUs, as 'pid:name:bytes' (bytes empty when the tool cannot say)"),
    "gpu.other_process_count": ("int", "compute processes of others on the GPUs (0: the tool listed none)"),
    "gpu.other_process_mem_bytes": ("int", "GPU memory those processes hold, summed over GPUs"),
    "gpu.other_process_mem_fraction": ("float", "largest share (0..1) of one GPU's memory held by other processes"),
    "gpu.unlisted_mem_bytes": ("int", "GPU memory in use that a pasted nvidia-smi table's process list does not account for (the GPU where it is largest)"),
    "gpu.unlisted_mem_fraction": ("float", "gpu.unlisted_mem_bytes as a share (0..1) of that GPU's memory"),
    "gpu.mem_used_fraction": ("float", "largest share (0..1) of one GPU's memory in use before the test generation, whoever holds it"),
    "gpu.busy_percent": ("float", "busy % of the busiest GPU before the test generation (lowest of a few samples over about a second)"),
    # --- what an out-of-memory error says about itself (PyTorch's caching allocator message) ---------------------
    "oom.api": ("str", "which runtime's words the out-of-memory error used: 'cuda' or 'hip'"),
    "oom.requested_bytes": ("int", "'Tried to allocate X': the allocation that failed"),
    "oom.capacity_bytes": ("int", "'GPU N has a total capacity of X'"),
    "oom.free_bytes": ("int", "'... of which X is free'"),
    "oom.gpu_index": ("int", "the GPU the error names"),
    "oom.processes": ("list[str]", "'Process N has X memory in use' as 'pid:bytes' (the other processes; the failing one too when the error has no 'this process' part)"),
    "oom.this_process_bytes": ("int", "'Including non-PyTorch memory, this process has X memory in use'"),
    "oom.other_process_bytes": ("int", "memory the other processes named by the error hold (only when the error also says what 'this process' has)"),
    "oom.reserved_bytes": ("int", "what this process's PyTorch allocator holds: 'X reserved in total by PyTorch', or allocated plus 'reserved by PyTorch but unallocated'"),
    "oom.outside_torch_bytes": ("int", "capacity minus free minus what this process holds: GPU memory in use outside this process's allocator"),
    "oom.outside_torch_fraction": ("float", "oom.outside_torch_bytes as a share (0..1) of the GPU's capacity"),
    "oom.fits_without_others": ("bool", "the failed allocation would have fit in what was free plus what other processes hold (at least 256 MiB)"),
    # --- NVIDIA side ---------------------------------------------------------------------------------
    "nvidia.driver_version": ("str", "NVIDIA driver version, e.g. '550.54.15'"),
    "nvidia.cuda_version": ("str", "highest CUDA version the driver supports, e.g. '12.4'"),
    "nvidia.smi_error": ("str", "nvidia-smi error text, verbatim first line"),
    "nvidia.compute_caps": ("list[str]", "compute capabilities like 'sm_90'"),
    # --- torch in the diagnosed interpreter -----------------------------------------------------------
    "torch.installed": ("bool", "torch is installed in the diagnosed interpreter"),
    "torch.version": ("str", "e.g. '2.5.1+rocm6.2'"),
    "torch.build": ("str", "'rocm', 'cuda' or 'cpu'"),
    "torch.hip_version": ("str", "HIP version torch was compiled against (torch.version.hip)"),
    "torch.cuda_version": ("str", "CUDA version torch was compiled against (torch.version.cuda)"),
    "torch.cuda_available": ("bool", "torch.cuda.is_available() (true on working ROCm builds too)"),
    "torch.device_count": ("int", "torch.cuda.device_count()"),
    "torch.device_names": ("list[str]", "torch.cuda.get_device_name(i) for each device"),
    "torch.gcn_arch_names": ("list[str]", "gcnArchName of each device (ROCm), e.g. 'gfx90a:sramecc+:xnack-'"),
    "torch.arch_list": ("list[str]", "torch.cuda.get_arch_list()"),
    "torch.arch_supported": ("bool", "every visible GPU's gfx target / compute capability is in torch's arch list"),
    "torch.unsupported_archs": ("list[str]", "visible GPU targets missing from torch's arch list"),
    "torch.import_error": ("str", "the exception or signal when importing torch failed"),
    "torch.smoke_ok": ("bool", "a small matmul on the GPU ran and matched the CPU result"),
    "torch.smoke_error": ("str", "the error of the smoke test, verbatim"),
    "torch.location": ("str", "directory torch was imported from"),
    "torch.installer": ("str", "what installed torch: pip, conda, uv, ... (INSTALLER metadata)"),
    # --- HSA override and visibility, derived from env and GPUs ------------------------------------------
    "hsa_override.value": ("str", "HSA_OVERRIDE_GFX_VERSION as in force (quotes stripped)"),
    "hsa_override.valid": ("bool", "the override has the form MAJOR.MINOR.STEP with numbers"),
    "hsa_override.gfx": ("str", "the gfx target the override maps to, e.g. '10.3.0' -> 'gfx1030'"),
    "hsa_override.needed": ("bool", "some GPU's native target is missing from torch's arch list (an override could help)"),
    "visible_devices.hides_all": ("bool", "a HIP/ROCR/CUDA_VISIBLE_DEVICES mask selects no device"),
    "visible_devices.masks": ("list[str]", "the visible-device variables that are set, as NAME=value"),
    "visible_devices.problems": ("list[str]", "what is wrong with each visible-device mask against the devices that exist ('NAME=value: reason'); [] when every mask is sound"),
    "visible_devices.visible_count": ("int", "GPUs the compute stack will see after every mask is applied (only when the devices present are known)"),
    "env.set_names": ("list[str]", "names of the GPU-related environment variables that are set"),
    # --- derived from the GPU support matrix (kb/support/gpu-matrix.yaml, diagnostics/support.py) ----------------
    "torch.wheel_folder": ("str", "the download.pytorch.org/whl folder torch's local version names, e.g. 'rocm6.2', 'cu121', 'cpu'"),
    "support.targets": ("list[str]", "the visible GPUs' own targets the support matrix reasoned about ('gfx1031', 'sm_86')"),
    "support.official": ("bool", "every visible AMD GPU's target is in ROCm's compatibility matrix (for the installed ROCm when known)"),
    "support.unofficial_targets": ("list[str]", "visible AMD targets that ROCm's compatibility matrix does not list"),
    "support.native_bf16": ("bool", "every visible GPU has native bf16 arithmetic (NVIDIA sm_80+, AMD CDNA and RDNA3+)"),
    "support.native_wheel_available": ("bool", "some official PyTorch ROCm wheel carries every visible AMD target natively"),
    "support.torch_archs_source": ("str", "where torch's arch list came from: 'torch' (reported), 'matrix' (the official wheel of that version) or 'matrix-all' (an official ROCm wheel never measured: the targets every measured official ROCm wheel carries, used only where each GPU's target is in all of them or in none)"),
    "support.override_recommended": ("str", "the HSA_OVERRIDE_GFX_VERSION that lets the installed torch run every visible AMD GPU"),
    "support.override_status": ("str", "HSA_OVERRIDE_GFX_VERSION against the installed torch: missing, wrong, ok, unnecessary, not-needed or impossible"),
    # --- neighbouring packages ----------------------------------------------------------------------------
    "pkg.transformers": ("str", "installed transformers version"),
    "pkg.accelerate": ("str", "installed accelerate version"),
    "pkg.bitsandbytes": ("str", "installed bitsandbytes version"),
    "pkg.bitsandbytes_rocm_lib_missing": ("bool", "ROCm torch, but bitsandbytes ships no libbitsandbytes_rocm<MAJOR><MINOR> library for torch's HIP version"),
    "pkg.flash_attn": ("str", "installed flash-attn version"),
    "pkg.vllm": ("str", "installed vllm version"),
    "pkg.vllm_build": ("str", "vllm build flavour from its version: 'rocm', 'cuda' or 'cpu'"),
    "ollama.version": ("str", "installed ollama version ('ollama --version'), absent when ollama is not installed"),
    "pkg.triton": ("str", "installed triton (or pytorch-triton-rocm) version"),
    "pkg.onnxruntime": ("str", "installed version of the CPU-only onnxruntime distribution"),
    "pkg.onnxruntime_gpu": ("str", "installed version of the onnxruntime-gpu distribution (CUDA execution provider)"),
    "pkg.torchvision": ("str", "installed torchvision version, e.g. '0.20.1+rocm6.2'"),
    "pkg.nvidia_wheels": ("list[str]", "installed nvidia-* CUDA runtime wheels"),
    "pkg.torch_duplicates": ("list[str]", "more than one torch distribution visible (e.g. torch and torch-rocm)"),
    # --- the test generation ------------------------------------------------------------------------------
    "gen.ran": ("bool", "the test generation ran to the end"),
    "gen.device": ("str", "device the generation actually used: 'cpu', 'cuda', or 'mixed'"),
    "gen.requested_device": ("str", "device asked for: auto, cpu or cuda"),
    "gen.param_devices": ("list[str]", "distinct devices holding the model's parameters"),
    "gen.offloaded": ("bool", "some layers sit on the CPU or disk while others are on the GPU"),
    "gen.dtype": ("str", "dtype of the loaded model"),
    "gen.tokens_per_s": ("float", "generation speed"),
    "gen.cpu_tokens_per_s": ("float", "speed of the same model on the CPU, measured in the same run"),
    "gen.gpu_vs_cpu_ratio": ("float", "GPU tokens/s divided by CPU tokens/s"),
    "gen.estimate_bytes": ("int", "estimated memory footprint of the model before loading"),
    "gen.estimate_exceeds_vram": ("bool", "the estimate exceeds free GPU memory"),
    "gen.estimate_exceeds_host": ("bool", "the estimate exceeds available host memory"),
    "gen.oom": ("str", "out-of-memory during load or generation: 'gpu' or 'host'"),
    "gen.error": ("str", "the error that stopped the generation, verbatim"),
    "gen.peak_gpu_bytes": ("int", "peak GPU memory allocated by the generation"),
    "gen.peak_rss_bytes": ("int", "peak host RSS of the generation process"),
    "gen.params": ("int", "parameters of the model used by the test generation (a tiny model cannot show GPU speed)"),
    "gen.error_kind": ("str", "what stopped the generation: oom-gpu, oom-host, too-large, model-corrupt, tokenizer-missing, model-not-found, load-failed, generate-failed, no-gpu, import-failed, timeout, crashed, error"),
    # --- the GPU watched while the test generation ran (diagnostics.monitor) -----------------------------------
    "monitor.source": ("str", "where the GPU samples came from: sysfs, amd-smi, rocm-smi or nvidia-smi"),
    "monitor.samples": ("int", "GPU samples taken for the watched GPU while the generation ran (before and after included)"),
    "monitor.gpu_index": ("int", "index (in the sampling tool's numbering) of the GPU the monitor facts describe"),
    "monitor.generating_samples": ("int", "samples taken while tokens were being generated"),
    "monitor.gpu_busy_peak_pct": ("float", "highest GPU busy % while tokens were being generated"),
    "monitor.gpu_busy_mean_pct": ("float", "mean GPU busy % while tokens were being generated"),
    "monitor.vram_before_bytes": ("int", "VRAM in use just before the generation started (held by others)"),
    "monitor.vram_peak_bytes": ("int", "highest VRAM in use while the generation ran"),
    "monitor.vram_after_bytes": ("int", "VRAM in use just after the generation ended"),
    "monitor.vram_growth_bytes": ("int", "peak VRAM minus VRAM before the run: what the generation took"),
    "monitor.vram_total_bytes": ("int", "VRAM size of the watched GPU, as the sampling source reports it"),
    "monitor.vram_others_before_fraction": ("float", "share of the VRAM already in use before the run (0..1)"),
    "monitor.temp_max_c": ("float", "highest GPU temperature seen while the generation ran (any sensor)"),
    "monitor.power_max_w": ("float", "highest GPU power draw seen while the generation ran"),
    "monitor.throttle_seen": ("bool", "the GPU reported (or showed) thermal or power throttling while the generation ran"),
    "monitor.throttle_reasons": ("list[str]", "throttle reasons seen while the generation ran, e.g. 'sw_power_cap', 'hw_thermal_slowdown'"),
}

OPEN_PREFIXES = ("env.",)

TYPES = {"str", "int", "float", "bool", "list[str]", "list[int]"}


def is_known(name: str) -> bool:
    """True when *name* is in the catalogue or under an open prefix such as ``env.``."""
    if name in CATALOGUE:
        return True
    return any(name.startswith(p) and len(name) > len(p) for p in OPEN_PREFIXES)


def fact_type(name: str) -> str | None:
    if name in CATALOGUE:
        return CATALOGUE[name][0]
    if is_known(name):
        return "str"
    return None


def check_value(name: str, value: Any) -> str | None:
    """Return an error message when *value* does not have the catalogue type of *name*."""
    t = fact_type(name)
    if t is None:
        return f"unknown fact {name!r}"
    ok = {
        "str": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "list[str]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "list[int]": lambda v: isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v),
    }[t](value)
    return None if ok else f"fact {name!r} must be {t}, got {type(value).__name__}"


def clean_facts(facts: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Keep the well-typed, known facts; return them with a list of problems for the rest."""
    good: dict[str, Any] = {}
    problems: list[str] = []
    for k, v in facts.items():
        if v is None:
            continue
        err = check_value(k, v)
        if err:
            problems.append(err)
        else:
            good[k] = v
    return good, problems
