"""The system checks that setup guides and maintainers ask for, read from a paste for the facts the probes record.

When the GPU is "not found", the answers are the outputs of a handful of commands, pasted as they came:

    03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [1002:744c] (rev c8)
    00:04.0 0302: 10de:1db1 (rev a1)                              lspci / lspci -nn / lspci -n / lspci -k:
        pci.amd_gpu_count, pci.nvidia_gpu_count, pci.gpu_count, pci.amd_gpu_ids, pci.gpu_slots (display 03xx and
        accelerator 12xx classes), 'Kernel driver in use: amdgpu' -> driver.amdgpu_loaded, a hypervisor's own
        devices (VMware SVGA, VirtualBox, Hyper-V, virtio) -> system.virtualization
    amdgpu               9723904  0                               lsmod / lsmod | grep amdgpu: driver.*_loaded
    amdgpu/6.8.5-2009582.22.04, 6.8.0-45-generic, x86_64: installed          dkms status (with uname -r beside it):
        driver.amdgpu_dkms_status for the running kernel, driver.nvidia_module_available
    BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=... ro quiet splash nomodeset     cat /proc/cmdline:
        os.kernel_cmdline, os.kernel, driver.amdgpu_blacklisted
    PRETTY_NAME="Ubuntu 22.04.4 LTS" / Distributor ID: Ubuntu / Operating System: ...   os-release, lsb_release,
        hostnamectl: os.name, os.id, os.version_id
    ii  rocm-core  6.2.4.60204-139~22.04  amd64 ...   rocm-core/jammy,now 6.2.4... [installed]   rocm-core-6.2.4...
        dpkg -l, apt list --installed, apt policy, rpm -qa, dnf list installed, pacman -Q: rocm.installed,
        rocm.version
    $ ls /opt   ->   amdgpu  rocm  rocm-6.2.4                      rocm.paths (rocm.version when one is there)
    $ uname -r  ->   6.8.0-45-generic                              os.kernel

Every reader is tied to its tool's own line shape, so the reader runs on every paste (EMBEDDED_ALWAYS).  What a
listing does *not* show counts only where the listing is whole: a GPU count of 0 (or a vendor's 0) only from an
unfiltered ``lspci`` (its command shown, or a listing from 00:00.0 with several device classes), or from ``lspci |
grep AMD`` printing nothing before the next prompt; a driver "not loaded" only from a whole ``lsmod`` or a ``lsmod |
grep`` whose pattern would have shown the module, followed by more of the paste (a paste cut inside the listing
says nothing).  A filtered ``lspci | grep VGA`` counts the GPUs it shows (a laptop's second GPU may be a 'Display
controller' it hides).  Two answers that disagree (two runs, host and container) leave the fact unknown.
"""
from __future__ import annotations

import re
from typing import Any

from ..textnorm import clean_log
from .base import Opening, ParseResult, kernel_facts
from .dmesg import _blacklist_fact, boot_kernel

MAX_LINES = 50_000
MAX_LINE = 4000

# a shell prompt, or nothing: '$ ', 'alice@box:~$ ', '[root@host ~]# ', '# ', '~ $ ', ']$ ', '+ ' (set -x), '> '
_PROMPT = (r"(?:\[[^\]]{1,80}\]\s?[$#]|[\w.-]{1,64}@[\w.-]{1,64}(?::\S{0,120})?\s?[$#%]|[~/]\S{0,120}\s?[$#]"
           r"|\(\S{1,60}\)\s?\S{0,120}[$#]|\]\s?[$#]|[$#%>+]|PS [^>]{0,120}>)")
_PROMPT_LINE = re.compile(r"^" + _PROMPT + r"(?:\s|$)")
# the next command of a session (the paste normaliser takes 'alice@box:~$ ' off as a log prefix, so a command with no
# prompt left counts too): the command above it printed nothing
_NEXT_CMD = re.compile(r"^(?:" + _PROMPT + r"\s*)?(?:sudo\s+)?(?:lspci|lsmod|dkms|uname|cat|ls|ll|lshw|modprobe|modinfo"
                       r"|dmesg|journalctl|rocminfo|rocm-smi|amd-smi|nvidia-smi|clinfo|python3?|pip3?|apt(?:-get)?|yum|dnf"
                       r"|rpm|dpkg|groups|id|echo|export|which|cd|env|printenv|hipconfig|lsb_release|hostnamectl|docker"
                       r"|podman|sudo)(?:\s|$)")
_CMD_WORD = re.compile(r"\b(?:lspci|lshw|lsmod|uname|cat|ls|ll)\b")
_CMD = re.compile(r"^(?:" + _PROMPT + r"\s*)?(?:sudo\s+(?:-\S+\s+)*)?(?P<cmd>lspci|lshw|lsmod|dkms|uname|cat|ls|ll)\b"
                  r"(?P<args>[^\n]{0,400})$")

# --- lspci ---------------------------------------------------------------------------------------------------------
_SLOT = r"(?P<slot>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
_LSPCI = re.compile(r"^" + _SLOT + r" (?P<cls>[A-Z0-9][A-Za-z0-9 /()-]{1,60}?)(?: \[(?P<clsid>[0-9a-f]{4})\])?: "
                    r"(?P<rest>\S.{0,300})$")
_LSPCI_N = re.compile(r"^" + _SLOT + r" (?P<clsid>[0-9a-f]{4}): (?P<ven>[0-9a-f]{4}):(?P<dev>[0-9a-f]{4})\b")
_GPU_CLASSES = {"VGA compatible controller": "0300", "3D controller": "0302", "Display controller": "0380",
                "Processing accelerators": "1200"}
_IDS = re.compile(r"\[(?P<ven>[0-9a-f]{4}):(?P<dev>[0-9a-f]{4})\]")
_AMD_NAME = re.compile(r"^(?:Advanced Micro Devices, Inc\. \[AMD/ATI\]|ATI Technologies|AMD/ATI)")
_NVIDIA_NAME = re.compile(r"^NVIDIA Corporation")
_WSL_GPU = re.compile(r"^Microsoft Corporation (?:Basic Render Driver|Device 008e)")
_HYPERVISOR = (("vmware", re.compile(r"^VMware\b")), ("virtualbox", re.compile(r"^InnoTek|VirtualBox")),
               ("hyper-v", re.compile(r"^Microsoft Corporation Hyper-V")),
               ("kvm", re.compile(r"^Red Hat, Inc\. Virtio|^Red Hat, Inc\. QXL|QEMU")),
               ("amazon", re.compile(r"^Amazon\.com, Inc\.")), ("google", re.compile(r"^Google, Inc\.")))
# a device's detail line under lspci -v/-vv/-k ('Subsystem: ...', 'LnkCap:\tPort #0, ...', 'Capabilities: [48] ...',
# '[PN] Part number: ...', 'ClockPM- Surprise- ...'): the listing goes on
_LSPCI_DETAIL = re.compile(r"^(?:[A-Z][\w /().+-]{0,40}?(?:\[[0-9a-f]{1,4}\])?:(?:\s|$)|\[[A-Z][A-Z0-9]\]\s"
                           r"|[A-Z][A-Za-z0-9]{1,20}[+-](?:\s|$))")
_DRIVER_IN_USE = re.compile(r"^Kernel driver in use:\s*(?P<drv>\S+)$")

# --- lsmod -----------------------------------------------------------------------------------------------------------
_LSMOD_HEADER = re.compile(r"^Module\s+Size\s+Used by$")
_LSMOD = re.compile(r"^(?P<mod>[a-z0-9_]{2,64})\s+(?P<size>\d{3,10})\s+(?P<used>-?\d{1,5})(?:\s+(?P<by>[\w,\[\]-]{1,2000}))?$")

# --- dkms status -------------------------------------------------------------------------------------------------------
_DKMS = re.compile(r"^(?P<mod>amdgpu|nvidia(?:-open)?|nvidia-current)(?:/|,\s*)(?P<ver>[^,:\s]{1,80})"
                   r"(?:,\s*(?P<kernel>[^,:\s]{1,120}),\s*(?P<arch>\w{1,20}))?:\s*(?P<state>added|built|installed|broken)"
                   r"\b(?P<rest>.{0,200})$")

# --- kernel command line, kernel release ------------------------------------------------------------------------------
_CMDLINE = re.compile(r"^(?:\[\s*\d+\.\d+\]\s*|.{0,100}?\bkernel:\s+)?(?:(?:Kernel )?[Cc]ommand line:\s*)?(?P<line>BOOT_IMAGE=\S{1,300}(?:\s.{0,3000})?)$")
_RELEASE = re.compile(r"^(?P<k>\d+\.\d+\.\d+[\w.+~-]{0,100})$")
_UNAME_A = re.compile(r"^Linux (?:[^\s#]{1,64} )??(?P<k>\d+\.\d+\.\d+[\w.+~-]{0,80}) #\d{1,6}")

# --- the distribution --------------------------------------------------------------------------------------------------
_OSREL = re.compile(r"^(?P<key>PRETTY_NAME|NAME|ID|VERSION_ID|DISTRIB_ID|DISTRIB_RELEASE|DISTRIB_DESCRIPTION)="
                    r"(?P<q>[\"']?)(?P<val>[^\"'\n]{1,120})(?P=q)$")
_LSB = re.compile(r"^(?P<key>Distributor ID|Description|Release):\s+(?P<val>\S.{0,118})$")
_HOSTNAMECTL = re.compile(r"^(?P<key>Operating System|Kernel):\s+(?P<val>\S.{0,118})$")
_LSB_IDS = {"linuxmint": "linuxmint", "pop": "pop", "ubuntu": "ubuntu", "debian": "debian", "fedora": "fedora",
            "centos": "centos", "rocky": "rocky", "almalinux": "almalinux", "neon": "neon", "zorin": "zorin",
            "elementary": "elementary", "kali": "kali", "manjarolinux": "manjaro", "arch": "arch",
            "endeavouros": "endeavouros", "redhatenterprise": "rhel", "redhatenterpriseserver": "rhel",
            "redhatenterpriseworkstation": "rhel", "oracleserver": "ol", "opensuse": "opensuse"}

# --- ROCm packages -------------------------------------------------------------------------------------------------------
# the packages whose version is the ROCm release ('6.2.4.60204-139~22.04'; a multi-version install's name carries it:
# rocm-core6.2.4), best first; a component (hip-runtime-amd, rocm-smi-lib) has its own numbering and is not read
_ROCM_PKGS = ("rocm-core", "rocm", "rocm-dev", "rocm-libs", "rocm-hip-runtime", "rocm-utils", "rocm-dkms")
_PKG_NAME = r"(?P<name>rocm(?:-core|-dev|-libs|-hip-runtime|-utils|-dkms)?)(?P<mv>\d+\.\d+\.\d+)?(?::(?:amd64|arm64))?"
_DPKG = re.compile(r"^(?P<st>[a-z][a-zA-Z])\s+" + _PKG_NAME + r"\s+(?P<ver>\d\S{0,80})\s+(?:amd64|arm64|all|i386)\b")
_APT_LIST = re.compile(r"^" + _PKG_NAME + r"/\S{1,200}\s+(?P<ver>\d\S{0,80})\s+\S{1,20}\s+\[(?P<flags>[^\]]{1,80})\]")
_RPM = re.compile(r"^" + _PKG_NAME + r"-(?P<ver>\d+\.\d+\.\d+(?:\.\d+)?)-\S{1,60}\.(?:x86_64|noarch|aarch64)$")
_DNF = re.compile(r"^" + _PKG_NAME + r"\.(?:x86_64|noarch|aarch64)\s+(?:\d+:)?(?P<ver>\d\S{0,80})\s+(?:@\S+|installed)$")
_PACMAN = re.compile(r"^(?:local/)?" + _PKG_NAME + r" (?P<ver>\d+\.\d+\.\d+\S{0,40})$")
_POLICY_NAME = re.compile(r"^" + _PKG_NAME + r":$")
_POLICY_INSTALLED = re.compile(r"^(?:Installed|Installiert|Instalado|Installé|已安装|已安裝)\s*[:：]\s*(?P<ver>\S{1,80})$")
_INSTALLED_FLAG = re.compile(r"(?i)installed|installiert|instalado|installé|已安装|已安裝|インストール済み")
_ROCM_RELEASE = re.compile(r"^(?:\d+:)?(?P<v>\d+\.\d+(?:\.\d+)?)")

# --- ls /opt ---------------------------------------------------------------------------------------------------------------
_OPT_DIR = re.compile(r"^(?:/opt/)?rocm-(?P<v>\d+\.\d+(?:\.\d+)?)/?$")
_LS_L = re.compile(r"^[-dlcbps][-rwxsStT]{9}[+.@]?\s+\d+\s+\S+\s+\S+\s+\d+\s+(?:\S+\s+){2,3}(?P<name>\S+)(?: -> (?P<to>\S+))?$")


# one pass over the whole paste before any line is read: most pastes hold none of these tools' outputs
_ANY = re.compile(r"(?m)^[^\S\n]*(?:[`$#>+]|\S{0,120}[$#][^\S\n])?[^\S\n]*(?:sudo\s+)?(?:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] "
                  r"|[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:|lspci|lsmod|ls\b|ll\b|uname|cat\s+/proc|Module\s|amdgpu|nvidia|"
                  r"(?:\[\s*\d+\.\d+\]\s*)?(?:Kernel )?[Cc]ommand line|BOOT_IMAGE|Linux |PRETTY_NAME|NAME=|ID=|VERSION_ID|DISTRIB_"
                  r"|Distributor ID|Description:|Release:|Operating System:|Kernel:|ii\s|rocm|local/rocm)|BOOT_IMAGE=")


class _Seen:
    """Values per fact; two different values for a one-machine fact leave it unknown."""

    def __init__(self) -> None:
        self.values: dict[str, set] = {}

    def put(self, name: str, value: Any) -> None:
        self.values.setdefault(name, set()).add(value if not isinstance(value, list) else tuple(value))

    def facts(self, res: ParseResult) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, vals in self.values.items():
            if len(vals) == 1:
                v = next(iter(vals))
                out[name] = list(v) if isinstance(v, tuple) else v
            else:
                res.notes.append(f"the paste shows different values for {name} ({', '.join(sorted(map(str, vals)))}); "
                                 "it is left unknown")
        return out


def _clean(line: str) -> str:
    s = line.strip()
    if s.startswith("```"):
        return "```"      # a code fence ends a listing (a paste cut inside one has none)
    return s.strip("`").strip()


def _next_text(lines: list[str], i: int) -> int | None:
    """Index of the next non-blank line after *i*, or None."""
    for j in range(i + 1, min(len(lines), i + 400)):
        if lines[j]:
            return j
    return None


def _grep_terms(args: str) -> list[str] | None:
    """The alternatives of the pattern in ``| grep [-iE] PATTERN`` (None: no grep, [] : a pattern not understood)."""
    m = re.search(r"\|\s*(?:e?grep|rg)\s+((?:-[A-Za-z]+\s+)*)(?P<pat>'[^']*'|\"[^\"]*\"|\S+)", args)
    if not m:
        return None
    if "|" in args[m.end():] or "v" in (m.group(1) or ""):
        return []   # a second filter, an inverted one: what is missing says nothing
    pat = m.group("pat").strip("'\"")
    terms = [t for t in re.split(r"\\?\|", pat) if t]
    return [t.lower() for t in terms] if all(re.fullmatch(r"[\w/.-]+", t) for t in terms) else []


def _shows(terms: list[str], name: str) -> bool:
    """Whether a ``grep`` for *terms* (case-insensitively, the way people type them) would print a line naming *name*."""
    return any(t in name.lower() for t in terms)


class _Scan:
    def __init__(self) -> None:
        self.seen = _Seen()
        self.gpus: dict[str, tuple[str, str | None]] = {}   # slot -> (vendor, device id)
        self.listing_complete = False
        self.listing_wsl = False
        self.indented: set[int] = set()  # lines the paste indents (lspci -v's details under their device)
        self.vm_display_only = False   # a whole `lshw -c display`: a hypervisor's adapter, no AMD or NVIDIA one
        self.amd_absent = False        # `lspci | grep AMD` printed nothing
        self.nvidia_absent = False
        self.modules: dict[str, list[bool]] = {"amdgpu": [], "nvidia": []}   # per lsmod answer: loaded?
        self.dkms: list[tuple[str, str, str | None]] = []                   # (module, state, kernel)
        self.kernels: set[str] = set()
        self.rocm: dict[str, set[str]] = {}                                # package -> versions installed
        self.opt_dirs: set[str] = set()
        self.opt_link: str | None = None


def _slot_key(slot: str) -> str:
    return slot.lower() if slot.count(":") == 2 else "0000:" + slot.lower()


def _gpu_line(sc: _Scan, slot: str, code: str | None, rest: str, ven: str | None, dev: str | None) -> None:
    """One lspci device: a GPU of AMD or NVIDIA (display 03xx or accelerator 12xx class), WSL's virtual GPU, or a
    hypervisor's own device."""
    if _WSL_GPU.match(rest) or (ven, dev) == ("1414", "008e"):
        sc.listing_wsl = True
        return
    for kind, rx in _HYPERVISOR:
        if rx.search(rest):
            sc.seen.put("system.virtualization", kind)
            break
    if not code or not code.startswith(("03", "12")):
        return
    if ven == "1002" or (ven is None and _AMD_NAME.match(rest)):
        sc.gpus[_slot_key(slot)] = ("amd", f"0x{dev}" if dev else None)
    elif ven == "10de" or (ven is None and _NVIDIA_NAME.match(rest)):
        sc.gpus[_slot_key(slot)] = ("nvidia", f"0x{dev}" if dev else None)


def _lspci_block(sc: _Scan, lines: list[str], i: int, args: str | None) -> int:
    """Read the listing starting at line *i* (after the command, when shown); returns the index after it."""
    slots: list[str] = []
    classes: set[str] = set()
    j = i
    last_gpu_slot = None
    while j < len(lines):
        s = lines[j]
        if not s or (s == "```" and not slots):
            j += 1
            continue
        n = _LSPCI_N.match(s)
        m = None if n else _LSPCI.match(s)
        if m:
            rest = m.group("rest")
            ids = _IDS.search(rest)
            _gpu_line(sc, m.group("slot"), m.group("clsid") or _GPU_CLASSES.get(m.group("cls")), rest,
                      ids.group("ven") if ids else None, ids.group("dev") if ids else None)
            slots.append(m.group("slot"))
            classes.add(m.group("clsid") or m.group("cls"))
            last_gpu_slot = m.group("slot")
        elif n:
            _gpu_line(sc, n.group("slot"), n.group("clsid"), "", n.group("ven"), n.group("dev"))
            slots.append(n.group("slot"))
            classes.add(n.group("clsid"))
            last_gpu_slot = n.group("slot")
        else:
            drv = _DRIVER_IN_USE.match(s)
            if drv and last_gpu_slot and _slot_key(last_gpu_slot) in sc.gpus and drv.group("drv") in sc.modules:
                sc.modules[drv.group("drv")].append(True)   # lspci -k: the GPU is bound to its driver
            elif not (j in sc.indented and (_LSPCI_DETAIL.match(s)
                                            or s.startswith(("Memory at", "I/O ports", "Expansion ROM", "Region ")))):
                break
        j += 1
    if not slots:
        return j
    piped = args is not None and "|" in args
    whole_cmd = args is not None and not piped and not re.search(r"\s-(?:d|s)\b", args)
    shaped = (args is None and slots[0].endswith("00:00.0") and len(slots) >= 5 and len(classes) >= 3)
    if (whole_cmd or shaped) and j < len(lines):     # and more of the paste follows: the listing was not cut
        sc.listing_complete = True
    return j


_LSHW_NODE = re.compile(r"^\*-display(?::\d+)?(?: UNCLAIMED)?$")
_LSHW_FIELD = re.compile(r"^(?P<key>[a-z][a-z ]{1,20}):\s*(?P<val>.{0,300})$")
_LSHW_BUS = re.compile(r"^pci@(?P<slot>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$")


def _lshw_block(sc: _Scan, lines: list[str], i: int) -> int:
    """``lshw -c display``: one ``*-display`` node a display device (VGA, 3D and display classes), each with its
    vendor and bus address.  A whole listing of nothing but a hypervisor's adapter is a virtual machine with no GPU
    passed in (only there does it stand for the bus: a server's AMD accelerators of class 12, MI300, are no display
    device, and their BMC's VGA is no hypervisor's)."""
    nodes: list[dict[str, str]] = []
    j = i
    while j < len(lines):
        s = lines[j]
        if not s or s.startswith("[sudo]") or (s == "```" and not nodes):
            j += 1
            continue
        if _LSHW_NODE.match(s):
            nodes.append({})
        elif nodes and _LSHW_FIELD.match(s):
            f = _LSHW_FIELD.match(s)
            nodes[-1].setdefault(f.group("key"), f.group("val").strip())
        else:
            break
        j += 1
    ended = j < len(lines) and (lines[j] == "```" or bool(_PROMPT_LINE.match(lines[j]) or _NEXT_CMD.match(lines[j])))
    vm = False
    for node in nodes:
        vendor, bus = node.get("vendor", ""), _LSHW_BUS.match(node.get("bus info", ""))
        slot = bus.group("slot").lower() if bus else None
        if _AMD_NAME.match(vendor) or vendor.startswith("Advanced Micro Devices"):
            sc.gpus[slot or f"lshw-{len(sc.gpus)}"] = ("amd", None)
        elif _NVIDIA_NAME.match(vendor):
            sc.gpus[slot or f"lshw-{len(sc.gpus)}"] = ("nvidia", None)
        for kind, rx in _HYPERVISOR:
            if rx.search(vendor) or rx.search(node.get("product", "")):
                sc.seen.put("system.virtualization", kind)
                vm = True
                break
    if nodes and ended and vm:
        sc.vm_display_only = True
    return j


def _lsmod_block(sc: _Scan, lines: list[str], i: int, args: str | None) -> int:
    loaded: set[str] = set()
    header = False
    j = i
    n = 0
    while j < len(lines):
        s = lines[j]
        if not s or (s == "```" and not n and not header):
            j += 1
            continue
        if _LSMOD_HEADER.match(s):
            header = True
        else:
            m = _LSMOD.match(s)
            if not m:
                break
            n += 1
            loaded.add(m.group("mod"))
            for user in (m.group("by") or "").split(","):
                loaded.add(user.strip("[]"))
        j += 1
    ended = j < len(lines)       # more of the paste follows: the listing was not cut
    terms = _grep_terms(args) if args is not None else None
    for mod in ("amdgpu", "nvidia"):
        if mod in loaded:
            sc.modules[mod].append(True)
        elif ended and ((terms is None and header and n >= 10 and (args is None or "|" not in args))
                        or (terms and n > 0 and _shows(terms, mod))):
            sc.modules[mod].append(False)
    return j


def _empty_answer(lines: list[str], i: int) -> bool:
    """The command on line *i* printed nothing: the next line of the paste is another prompt."""
    j = _next_text(lines, i)
    while j is not None and lines[j] == "```":
        j = _next_text(lines, j)
    return j is not None and bool(_PROMPT_LINE.match(lines[j]) or _NEXT_CMD.match(lines[j]))


def _command(sc: _Scan, lines: list[str], i: int, cmd: str, args: str) -> int | None:
    """A command line this reader knows; returns where to go on (None: not one of them)."""
    if cmd == "lshw" and re.search(r"-c(?:lass)?\s+(?:video|display)\b", args):
        return _lshw_block(sc, lines, i + 1)
    if cmd == "lspci":
        terms = _grep_terms(args)
        if terms and _empty_answer(lines, i):
            if any(t in ("amd", "ati", "amd/ati", "radeon", "1002", "advanced") for t in terms):
                sc.amd_absent = True
            if any(t in ("nvidia", "10de", "nvidia corporation") for t in terms):
                sc.nvidia_absent = True
            return i + 1
        return _lspci_block(sc, lines, i + 1, args)
    if cmd == "lsmod":
        if _grep_terms(args) and _empty_answer(lines, i):
            for mod in ("amdgpu", "nvidia"):
                if _shows(_grep_terms(args) or [], mod):
                    sc.modules[mod].append(False)
            return i + 1
        return _lsmod_block(sc, lines, i + 1, args)
    if cmd == "uname" and re.match(r"^\s+-r\s*$", args):
        j = _next_text(lines, i)
        if j is not None and j == i + 1 and _RELEASE.match(lines[j]):
            sc.kernels.add(lines[j])
            return j + 1
        return i + 1
    if cmd == "cat" and re.match(r"^\s+/proc/cmdline\s*$", args):
        j = _next_text(lines, i)
        if j is not None and j == i + 1 and not _PROMPT_LINE.match(lines[j]) and "=" in lines[j]:
            _cmdline(sc, lines[j])
            return j + 1
        return i + 1
    if cmd in ("ls", "ll") and re.search(r"(?:^|\s)/opt/?(?:\s|$|\|)", args):
        j = i + 1
        while j < len(lines) and lines[j] and not _PROMPT_LINE.match(lines[j]):
            s = lines[j]
            m = _LS_L.match(s)
            names = [m.group("name")] if m else s.split()
            for name in names:
                d = _OPT_DIR.match(name)
                if d:
                    sc.opt_dirs.add(d.group("v"))
            if m and m.group("name") == "rocm" and m.group("to"):
                t = _OPT_DIR.match(m.group("to").rstrip("/").rsplit("/", 1)[-1])
                if t:
                    sc.opt_link = t.group("v")
            j += 1
        return j
    return None


def _cmdline(sc: _Scan, line: str) -> None:
    sc.seen.put("os.kernel_cmdline", line.strip())
    k = boot_kernel(line)
    if k:
        sc.kernels.add(k)


def _rocm_pkg(sc: _Scan, name: str, multi: str | None, ver: str) -> None:
    v = _ROCM_RELEASE.match(multi or ver)
    if v:
        sc.rocm.setdefault(name if not multi else name + "@multi", set()).add(v.group("v"))


def _line(sc: _Scan, lines: list[str], i: int, s: str) -> int:
    m = _CMD.match(s) if _CMD_WORD.search(s) else None
    if m:
        nxt = _command(sc, lines, i, m.group("cmd"), m.group("args"))
        if nxt is not None:
            return nxt
    if s[:1].isdigit() or s[:1] in "abcdef":
        if _LSPCI.match(s) or _LSPCI_N.match(s):
            return _lspci_block(sc, lines, i, None)
    if _LSMOD_HEADER.match(s) or (("amdgpu" in s or "nvidia" in s) and _LSMOD.match(s)):
        return _lsmod_block(sc, lines, i, None)
    first = s[:1]
    if first in "an":
        d = _DKMS.match(s)
        if d:
            mod = "nvidia" if d.group("mod").startswith("nvidia") else "amdgpu"
            state = "broken" if ("broken" in d.group("state") or "error" in d.group("rest").lower()) else d.group("state")
            sc.dkms.append((mod, state, d.group("kernel")))
            return i + 1
    if "BOOT_IMAGE=" in s:
        c = _CMDLINE.match(s)
        if c:
            if s.startswith("BOOT_IMAGE="):
                _cmdline(sc, s)
            else:
                k = boot_kernel(s)
                if k:
                    sc.kernels.add(k)
            return i + 1
    if s.startswith("Linux "):
        u = _UNAME_A.match(s)
        if u:
            sc.kernels.add(u.group("k"))
            return i + 1
    if "=" in s[:24]:
        o = _OSREL.match(s)
        if o:
            sc.seen.put("_osrel." + o.group("key"), o.group("val").strip())
            return i + 1
    if ":" in s[:20]:
        lb = _LSB.match(s) or _HOSTNAMECTL.match(s)
        if lb:
            sc.seen.put("_lsb." + lb.group("key"), lb.group("val").strip())
            return i + 1
    if "rocm" in s[:20]:
        for rx in (_DPKG, _APT_LIST, _RPM, _DNF, _PACMAN):
            p = rx.match(s)
            if not p:
                continue
            if rx is _DPKG and p.group("st") != "ii":
                break
            if rx is _APT_LIST and not _INSTALLED_FLAG.search(p.group("flags")):
                break
            _rocm_pkg(sc, p.group("name"), p.group("mv"), p.group("ver"))
            return i + 1
        p = _POLICY_NAME.match(s)
        if p and i + 1 < len(lines):
            inst = _POLICY_INSTALLED.match(lines[i + 1])
            if inst and inst.group("ver")[:1].isdigit():
                _rocm_pkg(sc, p.group("name"), p.group("mv"), inst.group("ver"))
                return i + 2
    return i + 1


def _os_facts(sc: _Scan, res: ParseResult, facts: dict[str, Any]) -> None:
    osr = {k[7:]: v for k, v in facts.items() if k.startswith("_osrel.")}
    lsb = {k[5:]: v for k, v in facts.items() if k.startswith("_lsb.")}
    for k in [k for k in facts if k.startswith(("_osrel.", "_lsb."))]:
        del facts[k]
    name = osr.get("PRETTY_NAME") or osr.get("DISTRIB_DESCRIPTION") or lsb.get("Description") \
        or (lsb.get("Operating System") if "Kernel" in lsb else None)
    keys = {k[7:] for k in sc.seen.values if k.startswith("_osrel.")}   # seen, whether or not two values disagree
    os_id = osr.get("ID") if ("VERSION_ID" in keys or "PRETTY_NAME" in keys) else None
    if not os_id and "DISTRIB_ID" in osr and "DISTRIB_RELEASE" in osr:
        os_id = _LSB_IDS.get(osr["DISTRIB_ID"].lower().replace(" ", ""))
    if not os_id and "Distributor ID" in lsb and "Release" in lsb:
        os_id = _LSB_IDS.get(lsb["Distributor ID"].lower().replace(" ", ""))
    version = osr.get("VERSION_ID") if os_id and "VERSION_ID" in osr else \
        osr.get("DISTRIB_RELEASE") if "DISTRIB_ID" in osr else lsb.get("Release") if "Distributor ID" in lsb else None
    # a lone NAME=/ID= line is some other program's setting; the distribution's files come as a block
    if name and (os_id or "PRETTY_NAME" in osr or "Description" in lsb and "Distributor ID" in lsb
                 or "Operating System" in lsb and "Kernel" in lsb):
        facts["os.name"] = name
    if os_id:
        facts["os.id"] = os_id.lower()
        if version and re.fullmatch(r"[\w.]{1,20}", version):
            facts["os.version_id"] = version
    kern = lsb.get("Kernel")
    if kern and kern.startswith("Linux "):
        sc.kernels.add(kern[6:].strip())


def _driver_facts(sc: _Scan, res: ParseResult, facts: dict[str, Any]) -> None:
    for mod, answers in sc.modules.items():
        if not answers:
            continue
        if len(set(answers)) == 1:
            facts[f"driver.{mod}_loaded"] = answers[0]
        else:
            res.notes.append(f"lsmod shows {mod} loaded in one answer and not in another; it is left unknown")
    kernel = next(iter(sc.kernels)) if len(sc.kernels) == 1 else None
    for mod in ("amdgpu", "nvidia"):
        rows = [(state, k) for m, state, k in sc.dkms if m == mod]
        if not rows:
            continue
        state = None
        if kernel:
            mine = [st for st, k in rows if k == kernel]
            if mine:
                state = "broken" if "broken" in mine else next(s for s in ("installed", "built", "added") if s in mine)
            else:
                state = "added"   # registered with DKMS, never built for the kernel that runs
        else:
            if all(st == "added" and k is None for st, k in rows):
                state = "added"   # built for no kernel at all; otherwise which line is the running kernel's is unknown
        if state is None:
            continue
        if mod == "amdgpu":
            facts["driver.amdgpu_dkms_status"] = state
        elif kernel:
            facts["driver.nvidia_module_available"] = state == "installed"


def _pci_facts(sc: _Scan, res: ParseResult, facts: dict[str, Any]) -> None:
    amd = sorted(s for s, (v, _) in sc.gpus.items() if v == "amd")
    nvidia = sorted(s for s, (v, _) in sc.gpus.items() if v == "nvidia")
    whole = (sc.listing_complete or (sc.vm_display_only and not sc.gpus)) and not sc.listing_wsl
    if amd or whole or sc.amd_absent:
        facts["pci.amd_gpu_count"] = len(amd)
    if nvidia or whole or sc.nvidia_absent:
        facts["pci.nvidia_gpu_count"] = len(nvidia)
    # the machine's GPU count only from a whole listing (or greps for both vendors that printed nothing); a
    # filtered one gives each vendor it shows as a lower bound
    if whole or (sc.amd_absent and sc.nvidia_absent and not sc.gpus):
        facts["pci.gpu_count"] = len(amd) + len(nvidia)
        facts["pci.gpu_slots"] = sorted(sc.gpus)
    ids = [d for s, (v, d) in sorted(sc.gpus.items()) if v == "amd" and d]
    if ids and len(ids) == len(amd):
        facts["pci.amd_gpu_ids"] = ids
    if sc.listing_wsl:
        res.notes.append("lspci lists WSL's virtual GPU (Microsoft Basic Render Driver): the real GPU is not on this bus")


def _rocm_facts(sc: _Scan, res: ParseResult, facts: dict[str, Any]) -> None:
    if sc.rocm:
        facts["rocm.installed"] = True
        for name in _ROCM_PKGS:
            vers = sc.rocm.get(name)
            if vers:
                if len(vers) == 1:
                    facts["rocm.version"] = next(iter(vers))
                break
        else:
            multi = set().union(*[v for k, v in sc.rocm.items() if k.endswith("@multi")] or [set()])
            if len(multi) == 1:
                facts["rocm.version"] = next(iter(multi))
            elif multi:
                res.notes.append(f"several ROCm releases are installed side by side ({', '.join(sorted(multi))})")
    if sc.opt_dirs:
        facts["rocm.installed"] = True
        facts["rocm.paths"] = [f"/opt/rocm-{v}" for v in sorted(sc.opt_dirs)]
        one = sc.opt_link or (next(iter(sc.opt_dirs)) if len(sc.opt_dirs) == 1 else None)
        if one and "rocm.version" not in facts:
            facts["rocm.version"] = one


def detect(text: str) -> float:
    if not _ANY.search(text[:200_000]):
        return 0.0
    found = 0
    for line in clean_log(text[:200_000]).split("\n")[:MAX_LINES]:
        s = _clean(line)
        if len(s) > MAX_LINE:
            continue
        if _LSPCI.match(s) or _LSPCI_N.match(s) or _DKMS.match(s) or _LSMOD_HEADER.match(s) or _LSB.match(s):
            found += 1
            if found >= 3:
                break
    return 0.0 if not found else 0.4 if found < 3 else 0.5


OPENING = Opening("host_checks", "system check", empty=False)


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


parse_embedded = parse   # every form it reads is tied to its tool's own line: inside another dump it reads the same


def _parse_into(text: str, res: ParseResult) -> None:
    if not _ANY.search(text):
        res.notes.append("no system check output recognised (lspci, lsmod, dkms status, /proc/cmdline, os-release, "
                         "package lists)")
        return
    raw = clean_log(text).split("\n")[:MAX_LINES]
    lines = [_clean(ln) if len(ln) <= MAX_LINE else "" for ln in raw]
    tail = text[-400:].rstrip().rsplit("\n", 1)[-1].strip()
    if tail.startswith("```") or (tail and _PROMPT_LINE.match(tail + " ") and len(tail) < 200 and " " not in tail):
        lines.append("```")   # the paste ends on a closing fence or a bare prompt: the last listing is whole
    sc = _Scan()
    sc.indented = {k for k, ln in enumerate(raw) if ln[:1] in (" ", "\t") and ln.strip()}
    i = 0
    while i < len(lines):
        s = lines[i]
        if not s:
            i += 1
            continue
        nxt = _line(sc, lines, i, s)
        i = max(nxt, i + 1)
    facts = sc.seen.facts(res)
    _os_facts(sc, res, facts)
    if "os.kernel_cmdline" in facts:
        _blacklist_fact(facts)
    if len(sc.kernels) == 1:
        kernel_facts(next(iter(sc.kernels)), facts)
    elif len(sc.kernels) > 1:
        res.notes.append(f"the paste names several kernels ({', '.join(sorted(sc.kernels))}); the running one is unknown")
    _driver_facts(sc, res, facts)
    _pci_facts(sc, res, facts)
    _rocm_facts(sc, res, facts)
    if not facts:
        res.notes.append("no system check output recognised (lspci, lsmod, dkms status, /proc/cmdline, os-release, "
                         "package lists)")
        return
    res.facts.update(facts)
