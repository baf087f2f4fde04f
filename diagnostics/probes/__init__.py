"""The probe registry.  Each probe runs in its own child process (see diagnostics.probing).

``module`` probes run as ``python -m diagnostics.probes.<module> --root ROOT`` with the tool's own
interpreter; ``script`` probes run a self-contained file with the *diagnosed* interpreter (--python).
``provides`` lists the facts a probe is responsible for: when it crashes or times out, the ones it had not
yet reported are unknown, and KB entries that need them are "not ruled out" rather than silently clean.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProbeSpec:
    id: str
    title: str
    module: str = ""            # diagnostics.probes.<module>
    script: str = ""            # file under diagnostics/probes/ run by the target interpreter
    timeout: float = 20.0
    provides: tuple[str, ...] = field(default_factory=tuple)
    gpu_runtime: bool = False   # touches the GPU runtime (may crash or hang in a driver call)


PROBES: list[ProbeSpec] = [
    ProbeSpec("devices", "amdgpu driver, /dev/kfd and access rights", module="devices", timeout=10,
              provides=("driver.amdgpu_loaded", "kfd.present", "kfd.permission_denied", "user.groups",
                        "user.in_render_group", "user.in_video_group", "dri.render_nodes")),
    ProbeSpec("system", "Operating system, memory, containers, kernel log", module="system", timeout=15,
              provides=("os.name", "os.kernel", "host.mem_total_bytes", "container.present")),
    ProbeSpec("gpus", "AMD GPUs in sysfs (KFD topology, VRAM)", module="gpus", timeout=10,
              provides=("gpu.count", "gpu.gfx_targets")),
    ProbeSpec("rocm", "ROCm userspace (rocminfo, rocm-smi)", module="rocm", timeout=45,
              provides=("rocm.installed", "rocm.version", "rocm.path", "rocminfo.ok")),
    ProbeSpec("env", "GPU-related environment variables", module="env", timeout=10,
              provides=("env.set_names",)),
    ProbeSpec("hip", "HIP runtime (libamdhip64, without torch)", module="hip", timeout=30, gpu_runtime=True,
              provides=("hip.runtime_version", "hip.device_count")),
    ProbeSpec("nvidia", "NVIDIA driver (nvidia-smi)", module="nvidia", timeout=40,
              provides=("nvidia.driver_version", "nvidia.cuda_version")),
    ProbeSpec("torch", "PyTorch build, devices and smoke test", script="torch_child.py", timeout=120,
              gpu_runtime=True,
              provides=("torch.installed", "torch.version", "torch.build", "torch.cuda_available",
                        "torch.device_count", "torch.arch_list", "torch.smoke_ok")),
]


def by_id() -> dict[str, ProbeSpec]:
    return {p.id: p for p in PROBES}
