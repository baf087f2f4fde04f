"""Parser for kernel logs: ``dmesg`` (plain, ``-T``, ``-x``, ``--time-format iso``), ``journalctl -k``,
syslog/kern.log lines, and the same with the prefixes other tools add (``talosctl dmesg``).

Facts are taken only where a line proves them:
* ``Linux version 6.8.0-45-generic ...``            -> os.kernel (and WSL kernels -> container.kind)
* ``Command line: ...`` / ``Kernel command line: ...`` -> os.kernel_cmdline, driver.amdgpu_blacklisted
* ``secureboot: Secure boot enabled|disabled``     -> os.secure_boot
* ``[drm] amdgpu kernel modesetting enabled`` / ``[drm] Initialized amdgpu`` -> driver.amdgpu_loaded
* ``[drm] amdgpu version: 6.2.4``                   -> driver.amdgpu_version (DKMS builds print it)
* ``kfd kfd: ... skipped device 1002:67df, PCI rejects atomics`` -> gpu.pcie_atomics = false
* ``kfd kfd: ... added device 1002:73bf`` / ``initializing kernel modesetting (... 0x1002:0x744C ...``
                                                    -> pci.amd_gpu_ids
* ``[drm] amdgpu: 24560M of VRAM memory ready`` (and GTT) -> gpu.vram_total_bytes, gpu.gtt_total_bytes
* ``NVRM: loading NVIDIA UNIX ... Kernel Module  550.54.15`` -> driver.nvidia_loaded, nvidia.driver_version
Everything else (firmware load failures, ring timeouts, GPU resets, OOM kills, lockdown refusals,
page faults) stays log text for the matcher; the worst of those lines are copied verbatim to ``errors``.
Only the standard library; lines are filtered by substring before any (anchored, linear) regex runs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .base import Opening, ParseResult, kernel_facts

# timestamp / prefix forms: "[    7.026427] ", "[Thu Sep 10 14:36:15 2026] ", "kern  :info  : [ 1.0] ",
# "Apr 12 00:54:42 host kernel: ", "2024-04-29T14:55:41,678628+02:00 ", "<6>[drm] ..."
_TS_BRACKET = re.compile(r"^\s*\[\s*\d+\.\d+\]")
_TS_HUMAN = re.compile(r"^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]")
_TS_JOURNAL = re.compile(r"^[A-Za-z]{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? (?:\S+ )?kernel: ")
_TS_ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]\d+")
_TS_DATETIME = re.compile(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")  # console logs: "[2024-01-06 14:03:01] [ 5.9] ..."
_TS_LEVEL = re.compile(r"^(?:kern|user|daemon|syslog)\s*:\s*[a-z]+\s*: ")

_LINUX_VERSION = re.compile(r"Linux version (\S+) \(")
_CMDLINE = re.compile(r"(?:Kernel command line|Command line): (.*)$")
_AMDGPU_VERSION = re.compile(r"\[drm\] amdgpu version: (\S+)")
_VRAM = re.compile(r"amdgpu: (\d+)M of VRAM memory ready")
_GTT = re.compile(r"amdgpu: (\d+)M of GTT memory ready")
_KFD_ADDED = re.compile(r"added device (1002):([0-9a-fA-F]{4})")
_KMS = re.compile(r"initializing kernel modesetting \(([A-Z0-9_ ]+) 0x1002:0x([0-9A-Fa-f]{4})")
_PCI_ADDR = re.compile(r"amdgpu (\d{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d):")
_NVRM = re.compile(r"NVRM: loading NVIDIA UNIX .*Kernel Module\s+(\d+\.\d+(?:\.\d+)?)")
_CPU0 = re.compile(r"smpboot: CPU0: (.+?) \(family: ")

# lines the matcher will want to see first; copied verbatim into errors
_ERROR_MARKERS = (
    "PCI rejects atomics",
    "Direct firmware load for amdgpu",
    "Failed to load firmware",
    "Fatal error during GPU init",
    "amdgpu_device_ip_init failed",
    "*ERROR*",
    "ring gfx",  # ring gfx_0.0.0 timeout
    " timeout, signaled seq",
    "GPU reset begin",
    "GPU reset(",
    "GPU reset failed",
    "GPU recovery",
    "MES failed to respond",
    "MES might be in unrecoverable state",
    "page fault (src_id",
    "VM_L2_PROTECTION_FAULT",
    "Out of memory: Killed process",
    "invoked oom-killer",
    "unsigned module loading is restricted",
    "Loading of unsigned module is",
    "module verification failed",
    "Key was rejected by service",
    "NVRM: API mismatch",
    "NVRM: No NVIDIA",
    "NVRM: GPU at PCI",
    "Xid",
    "IO_PAGE_FAULT",
    "amdgpu: probe of",
    "unknown parameter",
    "HSA Error",
)

_ERROR_RX = re.compile("|".join(re.escape(m) for m in _ERROR_MARKERS))

# message shapes only the kernel prints (used by detect(); a tool's "amdgpu not found" must not count)
_KERNEL_MARKERS = ("kfd kfd", "[drm]", "[drm:", "NVRM:", "amdgpu 0000:", "amdgpu: ", "Linux version ",
                   "Out of memory: Killed process", ": kern:", "Lockdown: ", "oom-kill:", "kernel: ")

# failures of the tools that read the log (util-linux dmesg, journalctl)
_TOOL_ERRORS = ("dmesg: ", "journalctl: ", "No journal files were found", "-- No entries --")

MAX_ERRORS = 200
MAX_LINE = 4000


def detect(text: str) -> float:
    head = text[:300_000]
    if head.lstrip().startswith("dmesg: read kernel buffer failed"):
        return 0.6
    lines = [ln for ln in head.split("\n")[:3000] if ln.strip()]
    if not lines:
        return 0.0
    stamped = 0
    kernelish = 0
    for ln in lines:
        if (_TS_BRACKET.match(ln) or _TS_HUMAN.match(ln) or _TS_JOURNAL.match(ln) or _TS_LEVEL.match(ln)
                or _TS_DATETIME.match(ln)
                or (_TS_ISO.match(ln) and "kernel" not in ln[:40])):
            stamped += 1
        if any(k in ln for k in _KERNEL_MARKERS):
            kernelish += 1
    ratio = stamped / len(lines)
    if ratio >= 0.5 and kernelish:
        return 0.9
    if ratio >= 0.5:
        return 0.6
    if ratio >= 0.2 and kernelish:
        return 0.6
    if kernelish >= 1 and kernelish / len(lines) >= 0.3:
        return 0.45
    return 0.0


OPENING = Opening("dmesg", "dmesg")


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


@dataclass
class _Log:
    """What the line scan collects besides the facts it can set at once."""
    errors: list[str] = field(default_factory=list)
    seen_err: set[str] = field(default_factory=set)
    checked: set[str] = field(default_factory=set)  # lines already tested for error markers (pastes repeat lines a lot)
    ids: list[str] = field(default_factory=list)
    id_by_addr: dict[str, str] = field(default_factory=dict)
    vram: list[tuple[int, int | None]] = field(default_factory=list)  # (vram MiB, gtt MiB)
    amdgpu_loaded: bool = False
    amdgpu_failed_init: bool = False
    atomics_rejected: bool = False

    def add_error(self, line: str) -> None:
        if line not in self.seen_err:
            self.seen_err.add(line)
            self.errors.append(line)


def _parse_into(text: str, res: ParseResult) -> None:
    facts = res.facts
    log = _Log()
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if len(raw) > MAX_LINE or not raw.strip():
            continue
        if raw.startswith(_TOOL_ERRORS):
            # the reading tool's own failure, e.g. "dmesg: read kernel buffer failed: Operation not permitted"
            log.add_error(raw.strip())
            if "Operation not permitted" in raw:
                res.notes.append("the kernel log is restricted to root here (kernel.dmesg_restrict=1): "
                                 "run 'sudo dmesg' or 'journalctl -k' as a member of the adm/systemd-journal group")
            continue
        # every pattern below searches inside the line, so prefixes need not be removed
        _boot_line(raw, facts)
        _amdgpu_line(raw, log, facts)
        _other_driver_line(raw, facts)
        if len(log.errors) < MAX_ERRORS and raw not in log.checked:
            if len(log.checked) < 500_000:
                log.checked.add(raw)
            if _ERROR_RX.search(raw):
                log.add_error(raw.strip())
    _amdgpu_facts(log, res)
    _blacklist_fact(facts)
    _notes(log, res)
    res.errors.extend(log.errors)


def _boot_line(msg: str, facts: dict) -> None:
    """The kernel release, its command line and Secure Boot."""
    if "Linux version " in msg and "os.kernel" not in facts:
        m = _LINUX_VERSION.search(msg)
        if m:
            kernel_facts(m.group(1), facts)
    if "ommand line: " in msg and "os.kernel_cmdline" not in facts:
        m = _CMDLINE.search(msg)
        if m:
            facts["os.kernel_cmdline"] = m.group(1).strip()
    if "ecure boot" in msg or "secureboot:" in msg:
        low = msg.lower()
        if "secure boot enabled" in low:
            facts["os.secure_boot"] = True
        elif "secure boot disabled" in low:
            facts["os.secure_boot"] = False
    if "Kernel is locked down from EFI Secure Boot" in msg or "Lockdown: " in msg and "Secure Boot" in msg:
        facts["os.secure_boot"] = True


def _amdgpu_line(msg: str, log: _Log, facts: dict) -> None:
    """amdgpu and kfd: loaded, version, atomics, failed init, the GPUs' PCI ids, VRAM and GTT."""
    if "amdgpu" in msg or "kfd" in msg:
        if "amdgpu kernel modesetting enabled" in msg or "[drm] Initialized amdgpu" in msg:
            log.amdgpu_loaded = True
        if "amdgpu version:" in msg and "driver.amdgpu_version" not in facts:
            m = _AMDGPU_VERSION.search(msg)
            if m:
                facts["driver.amdgpu_version"] = m.group(1)
        if "PCI rejects atomics" in msg:
            log.atomics_rejected = True
        if "Fatal error during GPU init" in msg:
            log.amdgpu_failed_init = True
        if "added device" in msg:
            m = _KFD_ADDED.search(msg)
            if m:
                pid = "0x" + m.group(2).lower()
                if pid not in log.ids:
                    log.ids.append(pid)
    if "initializing kernel modesetting" in msg:  # old kernels print it as "[drm] ..." only
        m = _KMS.search(msg)
        if m:
            pid = "0x" + m.group(2).lower()
            a = _PCI_ADDR.search(msg)
            log.id_by_addr.setdefault(a.group(1) if a else f"#{len(log.id_by_addr)}", pid)
            if pid not in log.ids:
                log.ids.append(pid)
    if "amdgpu" in msg and "memory ready" in msg:
        vram = log.vram
        if "of VRAM memory ready" in msg:
            m = _VRAM.search(msg)
            if m:
                vram.append((int(m.group(1)), None))
        elif "of GTT memory ready" in msg and vram and vram[-1][1] is None:
            m = _GTT.search(msg)
            if m:
                vram[-1] = (vram[-1][0], int(m.group(1)))


def _other_driver_line(msg: str, facts: dict) -> None:
    """The NVIDIA module and the CPU's name."""
    if "NVRM: loading NVIDIA" in msg:
        m = _NVRM.search(msg)
        facts["driver.nvidia_loaded"] = True
        if m and "nvidia.driver_version" not in facts:
            facts["nvidia.driver_version"] = m.group(1)
    if "smpboot: CPU0: " in msg and "host.cpu_model" not in facts:
        m = _CPU0.search(msg)
        if m:
            facts["host.cpu_model"] = m.group(1).strip()


def _amdgpu_facts(log: _Log, res: ParseResult) -> None:
    facts = res.facts
    if log.amdgpu_loaded:
        facts["driver.amdgpu_loaded"] = True
    if log.atomics_rejected:
        facts["gpu.pcie_atomics"] = False
    if log.ids:
        facts["pci.amd_gpu_ids"] = log.ids
    if log.vram:
        best = max(log.vram, key=lambda t: t[0])
        facts["gpu.vram_total_bytes"] = best[0] * 1024 * 1024
        if best[1] is not None:
            facts["gpu.gtt_total_bytes"] = best[1] * 1024 * 1024
        if len(log.vram) > 1:
            res.notes.append(f"{len(log.vram)} amdgpu devices report VRAM; the largest is kept")


_BOOT_KERNEL = re.compile(r"BOOT_IMAGE=(?:\([^)]{0,40}\))?\S{0,120}?vmlinuz-(\d+\.\d+[\w.+~-]{0,100})(?:\s|$)")


def boot_kernel(cmd: str) -> str | None:
    """The kernel release the boot loader started ('BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic ...')."""
    m = _BOOT_KERNEL.search(cmd)
    return m.group(1) if m else None


def _blacklist_fact(facts: dict) -> None:
    """driver.amdgpu_blacklisted from the kernel command line (and os.kernel from the image it booted)."""
    cmd = facts.get("os.kernel_cmdline")
    if not isinstance(cmd, str):
        return
    if "os.kernel" not in facts and boot_kernel(cmd):
        facts["os.kernel"] = boot_kernel(cmd)
    blk = False
    for t in cmd.split():
        if t == "nomodeset" or t in ("amdgpu.modeset=0", "amdgpu.modeset=false"):
            blk = True
        elif (t.startswith("modprobe.blacklist=") or t.startswith("module_blacklist=")) and "amdgpu" in t.split("=", 1)[1].split(","):
            blk = True
    if blk:
        facts["driver.amdgpu_blacklisted"] = True


def _notes(log: _Log, res: ParseResult) -> None:
    if log.amdgpu_failed_init:
        res.notes.append("amdgpu found the GPU but its initialisation failed ('Fatal error during GPU init')")
    if log.atomics_rejected:
        res.notes.append("kfd skipped a GPU because the PCIe path rejects atomics: ROCm cannot use that GPU")
    if not res.facts and not log.errors:
        res.notes.append("no kernel messages about the GPU stack were recognised")
    if len(log.errors) >= MAX_ERRORS:
        res.notes.append(f"more than {MAX_ERRORS} error lines; only the first {MAX_ERRORS} are kept")
