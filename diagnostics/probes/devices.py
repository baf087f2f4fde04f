"""Kernel driver and device nodes: amdgpu loaded, /dev/kfd and /dev/dri/renderD*, and the groups that open them.

Group membership is judged from the running process (what the kernel checks), and compared with the group
database to catch "added to the group but not logged in again".
"""
from __future__ import annotations

import errno
import glob
import grp
import os
import pwd
import re
import stat

from .base import Emitter, probe_main, read_file, rpath

GPU_GROUPS = ("render", "video")

# every fact this probe may emit (its ProbeSpec.provides is read from here)
FACTS = ("pci.amd_gpu_count", "pci.nvidia_gpu_count", "pci.amd_gpu_ids", "pci.gpu_count", "pci.gpu_slots",
         "driver.amdgpu_loaded", "driver.amdgpu_version", "driver.nvidia_loaded", "driver.amdgpu_blacklisted",
         "driver.amdgpu_dkms_status", "driver.nvidia_module_available", "user.uid", "user.is_root", "user.groups",
         "user.in_render_group", "user.in_video_group", "user.db_groups", "user.groups_pending_relogin",
         "user.missing_device_gids", "kfd.present", "kfd.group", "kfd.permission_denied", "kfd.open_error",
         "dri.render_nodes", "dri.group", "dri.permission_denied", "dxg.present")


def _group_name(gid: int, root: str) -> str:
    if root in ("", "/"):
        try:
            return grp.getgrgid(gid).gr_name
        except KeyError:
            return str(gid)
    text = read_file(root, "/etc/group") or ""
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2] == str(gid):
            return parts[0]
    return str(gid)


def _db_groups(root: str, user: str, primary_gid: int) -> list[str]:
    names = {_group_name(primary_gid, root)}
    text = read_file(root, "/etc/group") or ""
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and user in parts[3].split(","):
            names.add(parts[0])
    return sorted(names)


def _try_open(path: str) -> str | None:
    """None when it opens read-write, else the errno name."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))
    os.close(fd)
    return None


def process_identity(root: str) -> tuple[int, set[int]] | None:
    """(uid, every gid) of the running process, as the kernel checks them.  On the live system from the process
    itself; under a recorded root from its proc/self/status (``Uid:``, ``Gid:``, ``Groups:``), None when absent."""
    if root in ("", "/"):
        return os.getuid(), set(os.getgroups()) | {os.getgid()}
    text = read_file(root, "/proc/self/status")
    if not text:
        return None
    f = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        f[k.strip()] = v.split()
    try:
        uid = int(f["Uid"][1])     # real, effective, saved, fs: the effective one opens files
        gids = {int(f["Gid"][1])} | {int(g) for g in f.get("Groups", [])}
    except (KeyError, IndexError, ValueError):
        return None
    return uid, gids


def _passwd_entry(root: str, uid: int) -> tuple[str, int] | None:
    """(name, primary gid) of *uid* from the user database."""
    if root in ("", "/"):
        try:
            pw = pwd.getpwuid(uid)
            return pw.pw_name, pw.pw_gid
        except KeyError:
            return None
    for line in (read_file(root, "/etc/passwd") or "").splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and parts[2] == str(uid) and parts[3].isdigit():
            return parts[0], int(parts[3])
    return None


_LS_LINE = re.compile(r"^([cbdlps-][rwxsStT-]{9})([.+@]?)\s+\d+\s+(\S+)\s+(\S+)\s+.*?\s(/dev/\S+)\s*$")
RECORDED_LS = "/.recorded/ls-l-dev.txt"   # `ls -l /dev/kfd /dev/dri/*` as it was recorded with the tree


def recorded_ownership(root: str) -> dict[str, tuple[int, int, bool]]:
    """Device-node ownership of a recorded tree: file ownership does not survive a recording (git keeps none), so
    the tree carries the `ls -l` lines of its nodes.  path -> (gid, mode, has an ACL: `ls` marks one with "+", e.g.
    logind's uaccess grant to the seat's user); a group name the tree's /etc/group does not know is left out."""
    text = read_file(root, RECORDED_LS)
    out: dict[str, tuple[int, int, bool]] = {}
    if not text:
        return out
    names: dict[str, int] = {}
    for line in (read_file(root, "/etc/group") or "").splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2].isdigit():
            names[parts[0]] = int(parts[2])
    for line in text.splitlines():
        m = _LS_LINE.match(line.strip())
        if not m:
            continue
        perm, acl, _user, group, path = m.groups()
        gid = int(group) if group.isdigit() else names.get(group)
        if gid is None:
            continue
        mode = 0
        for i, bit in enumerate((stat.S_IRUSR, stat.S_IWUSR, stat.S_IXUSR, stat.S_IRGRP, stat.S_IWGRP, stat.S_IXGRP,
                                 stat.S_IROTH, stat.S_IWOTH, stat.S_IXOTH)):
            if perm[1 + i] not in "-ST":
                mode |= bit
        out[path] = (gid, mode, acl == "+")
    return out


PCI_VENDORS = {"0x1002": "amd", "0x10de": "nvidia"}


def pci_gpus(root: str) -> list[tuple[str, str, str]]:
    """(vendor, device id, slot) of display controllers (class 0x03) and processing accelerators (0x12)."""
    out = []
    for dev in sorted(glob.glob(rpath(root, "/sys/bus/pci/devices/*"))):
        cls = (read_file(root, os.path.join("/sys/bus/pci/devices", os.path.basename(dev), "class")) or "").strip()
        ven = (read_file(root, os.path.join("/sys/bus/pci/devices", os.path.basename(dev), "vendor")) or "").strip()
        did = (read_file(root, os.path.join("/sys/bus/pci/devices", os.path.basename(dev), "device")) or "").strip()
        if cls.startswith(("0x03", "0x12")) and ven in PCI_VENDORS:
            out.append((PCI_VENDORS[ven], did, os.path.basename(dev)))
    return out


def amdgpu_bound(root: str) -> bool:
    """The amdgpu driver is at work: a PCI device is bound to it, or KFD lists a GPU node (KFD is part of amdgpu)."""
    if glob.glob(rpath(root, "/sys/bus/pci/drivers/amdgpu/0000:*")):
        return True
    for p in glob.glob(rpath(root, "/sys/class/kfd/kfd/topology/nodes/*/properties")):
        text = read_file("/", p)  # p already lies under root
        for line in (text or "").splitlines():
            k, _, v = line.partition(" ")
            if k == "simd_count" and v.strip().isdigit() and int(v) > 0:
                return True
    return False


def under_wsl(root: str) -> bool:
    """WSL2: its kernel names itself (osrelease/version say 'microsoft'), or the paravirtual GPU node /dev/dxg."""
    text = (read_file(root, "/proc/sys/kernel/osrelease") or "") + (read_file(root, "/proc/version") or "")
    if root in ("", "/"):
        import platform

        text += platform.release()
    return bool(re.search(r"(?i)microsoft|wsl", text)) or os.path.exists(rpath(root, "/dev/dxg"))


def live_root(root: str) -> bool:
    return root in ("", "/")


def parse_dkms(text: str, kernel: str) -> str | None:
    """`dkms status` lines like 'amdgpu/6.8.5-2009582.22.04, 6.8.0-45-generic, x86_64: installed'."""
    best = None
    for line in text.splitlines():
        if not line.lower().startswith("amdgpu"):
            continue
        low = line.lower()
        state = "broken" if ("broken" in low or "error" in low) else next(
            (s for s in ("installed", "built", "added") if s in low), None)
        if state is None:
            continue
        if kernel and kernel in line:
            return state
        best = best or state
    return best


def dkms_status(out: Emitter) -> None:
    import platform
    import shutil

    from .base import run_tool

    exe = shutil.which("dkms")
    if not exe:
        return
    rc, so, se, prob = run_tool([exe, "status"], timeout=15)
    state = parse_dkms(so + se, platform.release()) if not prob else None
    if state:
        out.fact("driver.amdgpu_dkms_status", state)
        if state != "installed":
            out.evidence("dkms", "dkms status: " + " | ".join(ln for ln in (so + se).splitlines() if "amdgpu" in ln)[:500])


def nvidia_module_available(root: str, loaded: bool, nvidia_gpu: bool) -> bool | None:
    """Whether an nvidia kernel module exists for the running kernel (None: unknown or no NVIDIA GPU).

    depmod lists every installed module in /lib/modules/<release>/modules.dep, DKMS and .run installs
    included; a kernel updated without a DKMS build has none there.
    """
    if loaded:
        return True
    if not nvidia_gpu:
        return None
    release = (read_file(root, "/proc/sys/kernel/osrelease") or "").strip()
    if not release:
        return None
    dep = read_file(root, f"/lib/modules/{release}/modules.dep", limit=16 << 20)
    if dep is None:
        return None
    return any(line.split(":", 1)[0].rsplit("/", 1)[-1].startswith(("nvidia.ko", "nvidia-current.ko"))
               for line in dep.splitlines())


def collect(root: str, out: Emitter) -> None:
    # --- PCI inventory: which GPUs exist at all, whatever software is installed
    gpus: list[tuple[str, str, str]] = []
    wsl = under_wsl(root)
    if wsl:
        # WSL2 hands the GPU to Linux through /dev/dxg; its virtual PCI bus never shows the real GPU, so the bus
        # says nothing about which GPUs the machine has (unknown, not zero)
        dxg = os.path.exists(rpath(root, "/dev/dxg"))
        out.fact("dxg.present", dxg)
        out.evidence("wsl", "WSL2: the GPU reaches Linux through /dev/dxg, not the PCI bus"
                     + ("" if dxg else " (and /dev/dxg does not exist here)"))
    elif os.path.isdir(rpath(root, "/sys/bus/pci/devices")):
        gpus = pci_gpus(root)
        out.fact("pci.amd_gpu_count", sum(1 for v, _, _ in gpus if v == "amd"))
        out.fact("pci.nvidia_gpu_count", sum(1 for v, _, _ in gpus if v == "nvidia"))
        out.fact("pci.amd_gpu_ids", [d for v, d, _ in gpus if v == "amd"])
        out.fact("pci.gpu_count", len(gpus))
        out.fact("pci.gpu_slots", [s for _, _, s in gpus])
        if not gpus:
            out.evidence("sysfs", "/sys/bus/pci/devices lists no AMD (0x1002) or NVIDIA (0x10de) display or compute "
                                  "device")
    # --- kernel driver
    # /sys/module lists every loaded module (and built-in ones with parameters); where it is not there at all (a
    # recorded tree of /sys/class only, a /sys that is not mounted) whether a driver is loaded is unknown, not false.
    # A KFD topology with a GPU node or a PCI device bound to amdgpu shows the driver at work either way.
    modules_known = os.path.isdir(rpath(root, "/sys/module"))
    amdgpu = os.path.isdir(rpath(root, "/sys/module/amdgpu")) or amdgpu_bound(root)
    if modules_known or amdgpu:
        out.fact("driver.amdgpu_loaded", amdgpu)
    ver = read_file(root, "/sys/module/amdgpu/version")
    if ver and ver.strip():
        out.fact("driver.amdgpu_version", ver.strip())
    nvidia_loaded = os.path.isdir(rpath(root, "/sys/module/nvidia"))
    if modules_known or nvidia_loaded:
        out.fact("driver.nvidia_loaded", nvidia_loaded)
    avail = nvidia_module_available(root, nvidia_loaded, any(v == "nvidia" for v, _, _ in gpus))
    if avail is not None:
        out.fact("driver.nvidia_module_available", avail)
        if not avail:
            out.evidence("modules", "no nvidia kernel module is listed in modules.dep for the running kernel")
    cmdline = read_file(root, "/proc/cmdline")
    if cmdline is not None:
        cl = cmdline.strip()
        black = any(t in cl.split() for t in ("modprobe.blacklist=amdgpu", "amdgpu.modeset=0", "nomodeset"))
        mp = ""
        for f in glob.glob(rpath(root, "/etc/modprobe.d/*.conf")):
            try:
                mp += open(f, errors="replace").read(65536)
            except OSError:
                pass
        if any(line.split()[:2] == ["blacklist", "amdgpu"] for line in mp.splitlines() if line.strip()):
            black = True
        out.fact("driver.amdgpu_blacklisted", black)
    if not amdgpu and modules_known:
        out.evidence("sysfs", "/sys/module/amdgpu does not exist: the amdgpu kernel driver is not loaded")
    if live_root(root):
        dkms_status(out)

    # --- identity of the running process: the live process, or what a recorded tree's /proc/self/status says
    live = root in ("", "/")
    ident = process_identity(root)
    known = ident is not None
    uid, gids = ident if ident else (os.getuid(), set())
    if known or live:
        out.fact("user.uid", uid)
        out.fact("user.is_root", uid == 0)
    groups = sorted({_group_name(g, root) for g in gids}) if known else []
    if known:
        out.fact("user.groups", groups)
        out.fact("user.in_render_group", "render" in groups)
        out.fact("user.in_video_group", "video" in groups)
        pw = _passwd_entry(root, uid)
        if pw is not None:
            name, pgid = pw
            db = _db_groups(root, name, pgid)
            out.fact("user.db_groups", db)
            pending = [g for g in GPU_GROUPS if g in db and g not in groups]
            out.fact("user.groups_pending_relogin", pending)
            if pending:
                out.evidence("groups", f"the group database lists {', '.join(pending)} for {name}, "
                                       "but this login session does not have it yet (log out and in again)")
        else:
            out.note("the running uid has no entry in the user database (common in containers)")

    # --- device nodes (ownership: stat on the live system, a recorded `ls -l` in a recorded tree)
    kfd = rpath(root, "/dev/kfd")
    present = os.path.exists(kfd)
    dev_known = live or os.path.isdir(rpath(root, "/dev"))   # a tree that recorded no /dev says nothing of its nodes
    if dev_known:
        out.fact("kfd.present", present)
    missing_gids: list[int] = []
    recorded = {} if live else recorded_ownership(root)

    def owner(path: str) -> tuple[int, int, bool] | None:
        """(gid, mode, has an ACL) of a device node, None when not known.  Live, the open itself says whether an
        ACL lets the process in, so the ACL is not looked at."""
        if live:
            st = os.stat(rpath(root, path))
            return st.st_gid, st.st_mode, False
        return recorded.get(path)

    def lacks(own: tuple[int, int, bool]) -> bool:
        """The node's group is one the process does not have, and nothing else (mode, an ACL) lets it in."""
        gid, mode, acl = own
        return uid != 0 and gid not in gids and not acl and not (mode & stat.S_IROTH and mode & stat.S_IWOTH)

    if present:
        own = owner("/dev/kfd")
        err = _try_open(kfd) if live else None
        if own is not None:
            out.fact("kfd.group", _group_name(own[0], root))
            if known and lacks(own) and not (live and err is None):   # a node the process opened is not missing
                missing_gids.append(own[0])
        if live:
            out.fact("kfd.permission_denied", err in ("EACCES", "EPERM"))
            if err:
                out.fact("kfd.open_error", err)
                out.evidence("/dev/kfd", f"opening /dev/kfd read-write failed: {err} "
                                         f"(owner group {_group_name(own[0], root)}, mode {stat.filemode(own[1])})")
        elif own is not None and known and lacks(own):
            out.evidence("/dev/kfd", f"/dev/kfd belongs to group {_group_name(own[0], root)} "
                                     f"(mode {stat.filemode(own[1])}), which the process does not have")
    elif dev_known:
        out.evidence("/dev", "/dev/kfd does not exist")
    nodes = sorted(glob.glob(rpath(root, "/dev/dri/renderD*")))
    names = [os.path.join("/dev/dri", os.path.basename(n)) for n in nodes]
    if dev_known:
        out.fact("dri.render_nodes", names)
    if nodes:
        own = owner(names[0])
        if own is not None:
            out.fact("dri.group", _group_name(own[0], root))
        denied = False
        for n, name in zip(nodes, names):
            err = _try_open(n) if live else None
            if err in ("EACCES", "EPERM"):
                denied = True
                out.evidence("/dev/dri", f"opening {n} read-write failed: {err}")
            nown = owner(name)
            if nown is not None and known and lacks(nown) and not (live and err is None) \
                    and nown[0] not in missing_gids:
                missing_gids.append(nown[0])
        if live:
            out.fact("dri.permission_denied", denied)
    if known and (live or recorded):
        out.fact("user.missing_device_gids", sorted(missing_gids))

    no_amd_hw = not wsl and os.path.isdir(rpath(root, "/sys/bus/pci/devices")) and not any(
        v == "amd" for v, _, _ in pci_gpus(root))
    if wsl and not amdgpu and not present:
        out.status("skipped", "WSL2: no amdgpu driver and no /dev/kfd is normal here (the GPU is reached through "
                              "/dev/dxg)")
    elif not modules_known and not amdgpu or not dev_known:
        out.status("warn", "the recorded tree holds no " + ("/sys/module" if not modules_known and not amdgpu else "/dev")
                   + ": whether the driver is loaded and /dev/kfd exists is not known")
    elif not amdgpu and not present and no_amd_hw:
        # nothing AMD to drive: not a failure of this machine (the facts still say what is absent)
        out.status("skipped", "no AMD GPU on the PCI bus (no amdgpu driver, no /dev/kfd)")
    elif not amdgpu and not present:
        out.status("fail", "no amdgpu driver and no /dev/kfd")
    elif present and live and _try_open(kfd):
        out.status("fail", "/dev/kfd exists but cannot be opened")
    elif present and not live and known and owner("/dev/kfd") is not None and lacks(owner("/dev/kfd")):
        out.status("fail", "/dev/kfd belongs to a group the process does not have")
    elif not present:
        out.status("fail", "amdgpu is loaded but /dev/kfd is missing")
    elif not amdgpu:
        out.status("fail", "/dev/kfd exists but the amdgpu driver is not loaded")
    else:
        out.status("ok", "amdgpu loaded, /dev/kfd opens" if live else "amdgpu loaded, /dev/kfd present")


if __name__ == "__main__":
    probe_main(collect, FACTS)
