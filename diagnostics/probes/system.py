"""Operating system, kernel, host memory and CPU, containers and WSL, Secure Boot, kernel log lines.

Reads files under a root path (tests point it at recorded trees); needs no root privileges.
"""
from __future__ import annotations

import glob
import os
import platform
import re

from .base import Emitter, probe_main, read_file, rpath, run_tool

# every fact this probe may emit: its own, and what the dmesg parser finds in the kernel log
FACTS = ("os.name", "os.id", "os.version_id", "os.kernel", "os.kernel_cmdline", "os.secure_boot", "os.iommu_enabled",
         "host.mem_total_bytes", "host.mem_available_bytes", "host.swap_total_bytes", "host.cpu_count",
         "host.cpu_model", "host.arch", "host.shm_total_bytes", "container.present", "container.kind",
         "system.virtualization", "driver.amdgpu_loaded", "driver.amdgpu_version", "driver.amdgpu_blacklisted",
         "driver.amdgpu_missing_firmware", "driver.nvidia_loaded", "nvidia.driver_version", "gpu.gtt_total_bytes",
         "gpu.pcie_atomics", "gpu.vram_total_bytes", "pci.amd_gpu_ids")

KLOG_RE = re.compile(r"(?i)amdgpu|kfd|\[drm|nvrm|nvidia|out of memory|oom-kill|oom_reaper|killed process|"
                     r"iommu|amd-vi|dmar|secureboot|secure boot|lockdown|module verification|"
                     r"firmware|page fault|ring \w+ timeout|gpu reset|hardware error|pcie bus error")


def os_release(root: str) -> dict[str, str]:
    text = read_file(root, "/etc/os-release") or read_file(root, "/usr/lib/os-release") or ""
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip().strip('"').strip("'")
    return out


def meminfo(root: str) -> dict[str, int]:
    out = {}
    for line in (read_file(root, "/proc/meminfo") or "").splitlines():
        m = re.match(r"^(\w+):\s+(\d+)\s*kB", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * 1024
    return out


def container_kind(root: str) -> str | None:
    ver = (read_file(root, "/proc/version") or "") + (read_file(root, "/proc/sys/kernel/osrelease") or "")
    # WSL2's kernel names itself so; /dev/dxg (the paravirtual GPU of WSL) exists nowhere else
    if re.search(r"(?i)microsoft|wsl", ver) or os.path.exists(rpath(root, "/dev/dxg")):
        return "wsl"
    if os.path.exists(rpath(root, "/.dockerenv")):
        return "docker"
    if os.path.exists(rpath(root, "/run/.containerenv")):
        return "podman"
    if os.path.isdir(rpath(root, "/.singularity.d")) or os.environ.get("SINGULARITY_CONTAINER") and root in ("", "/"):
        return "singularity"
    cg = read_file(root, "/proc/1/cgroup") or ""
    for kind, pat in (("kubernetes", "kubepods"), ("docker", "docker"), ("lxc", "lxc"), ("podman", "libpod")):
        if pat in cg:
            return kind
    env1 = read_file(root, "/proc/1/environ") or ""
    if "container=" in env1:
        m = re.search(r"container=([a-z-]+)", env1)
        return m.group(1) if m else "container"
    return None


# DMI sys_vendor / product_name of virtual machines -> the name reported (systemd-detect-virt's table, in short)
_DMI_VM = (("qemu", "qemu"), ("kvm", "kvm"), ("vmware", "vmware"), ("virtualbox", "virtualbox"), ("innotek", "virtualbox"),
           ("microsoft corporation", "hyper-v"), ("xen", "xen"), ("amazon ec2", "amazon"), ("google compute engine", "google"),
           ("google", "google"), ("openstack", "kvm"), ("bochs", "bochs"), ("parallels", "parallels"), ("bhyve", "bhyve"),
           ("cloud hypervisor", "cloud-hypervisor"), ("firecracker", "firecracker"))


def virtualization(root: str) -> str | None:
    """'none' on bare metal, the hypervisor's name in a VM ('vm' when only the CPU says there is one), None when
    nothing could be read.  Reads DMI (/sys/class/dmi/id), /sys/hypervisor/type and the cpuinfo 'hypervisor' flag."""
    dmi = " ".join((read_file(root, f"/sys/class/dmi/id/{f}") or "").strip().lower()
                   for f in ("sys_vendor", "product_name", "bios_vendor"))
    # Hyper-V's vendor is "Microsoft Corporation" on its VMs only with product "Virtual Machine"
    for needle, name in _DMI_VM:
        if needle in dmi and (name != "hyper-v" or "virtual machine" in dmi):
            return name
    hv = (read_file(root, "/sys/hypervisor/type") or "").strip().lower()
    if hv:
        return hv
    cpuinfo = read_file(root, "/proc/cpuinfo", limit=4 << 20)
    if cpuinfo is None:
        return None
    if re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo, re.M):
        return "vm"
    return "none" if re.search(r"^flags\s*:", cpuinfo, re.M) else None


def secure_boot(root: str) -> bool | None:
    files = glob.glob(rpath(root, "/sys/firmware/efi/efivars/SecureBoot-*"))
    if not files:
        return None
    try:
        data = open(files[0], "rb").read()
    except OSError:
        return None
    return bool(data) and data[-1] == 1


def collect(root: str, out: Emitter) -> None:
    live = root in ("", "/")
    rel = os_release(root)
    if rel:
        out.fact("os.name", rel.get("PRETTY_NAME") or f"{rel.get('NAME', '')} {rel.get('VERSION', '')}".strip())
        if rel.get("ID"):
            out.fact("os.id", rel["ID"])
        if rel.get("VERSION_ID"):
            out.fact("os.version_id", rel["VERSION_ID"])
    kernel = (read_file(root, "/proc/sys/kernel/osrelease") or "").strip() or (platform.release() if live else "")
    if kernel:
        out.fact("os.kernel", kernel)
    cmd = (read_file(root, "/proc/cmdline") or "").strip()
    if cmd:
        out.fact("os.kernel_cmdline", cmd)
    sb = secure_boot(root)
    if sb is not None:
        out.fact("os.secure_boot", sb)
    mi = meminfo(root)
    if "MemTotal" in mi:
        out.fact("host.mem_total_bytes", mi["MemTotal"])
    if "MemAvailable" in mi:
        out.fact("host.mem_available_bytes", mi["MemAvailable"])
    if "SwapTotal" in mi:
        out.fact("host.swap_total_bytes", mi["SwapTotal"])
    cpuinfo = read_file(root, "/proc/cpuinfo", limit=4 << 20) or ""
    n = len(re.findall(r"^processor\s*:", cpuinfo, re.M)) or (os.cpu_count() if live else 0)
    if n:
        out.fact("host.cpu_count", n)
    m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    if m:
        out.fact("host.cpu_model", m.group(1).strip())
    if live:
        out.fact("host.arch", platform.machine())
        try:  # DataLoader workers, NCCL/RCCL and vLLM pass data through this tmpfs (64 MB in a default container)
            st = os.statvfs("/dev/shm")
            out.fact("host.shm_total_bytes", st.f_blocks * st.f_frsize)
        except OSError:
            pass
    if os.path.isdir(rpath(root, "/sys/class/iommu")):
        out.fact("os.iommu_enabled", bool(os.listdir(rpath(root, "/sys/class/iommu"))))
    virt = virtualization(root)
    if virt:
        out.fact("system.virtualization", virt)
        if virt != "none":
            out.evidence("system", "running in a virtual machine" + ("" if virt == "vm" else f" ({virt})"))
    kind = container_kind(root)
    if kind is not None or live or os.path.isdir(rpath(root, "/proc")):  # a tree without /proc tells nothing
        out.fact("container.present", kind is not None)
    if kind:
        out.fact("container.kind", kind)
        out.evidence("system", f"running inside {kind}")
    # kernel log: only what concerns GPUs, memory and the IOMMU; unreadable without privileges is normal
    if live:
        rc, so, se, prob = run_tool(["dmesg", "--ctime"], timeout=10)
        text = so if rc == 0 and not prob else ""
        if not text:
            for f in ("/var/log/kern.log", "/var/log/dmesg"):
                t = read_file(root, f, limit=8 << 20)
                if t:
                    text = t
                    break
        if not text:
            out.note("the kernel log is not readable without privileges (dmesg: " + (se.strip() or prob or "no output")[:120] + ")")
    else:
        text = read_file(root, "/var/log/dmesg", limit=8 << 20) or ""
    if text:
        lines = [ln for ln in text.splitlines() if KLOG_RE.search(ln)]
        if lines:
            klog = "\n".join(lines[-3000:])
            out.log("kernel log", klog)
            try:  # the same parser that reads a pasted dmesg
                from .. import parsers

                for k, v in parsers.parse(klog, "dmesg").facts.items():
                    if k not in ("os.kernel", "os.kernel_cmdline"):
                        out.fact(k, v)
            except (ImportError, ValueError):
                pass
    summary = rel.get("PRETTY_NAME", "unknown OS") + (f", kernel {kernel}" if kernel else "")
    if kind:
        summary += f", inside {kind}"
    out.status("ok", summary)


if __name__ == "__main__":
    probe_main(collect, FACTS)
