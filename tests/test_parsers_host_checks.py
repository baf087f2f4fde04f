"""The system-check reader (diagnostics/parsers/host_checks.py): lspci, lsmod, dkms status, /proc/cmdline,
os-release / lsb_release, the package lists and ``ls /opt``.

Every fixture under tests/fixtures/dumps/host_checks/ is text someone pasted into a public report (cut where the
stored excerpt is cut), with a sidecar naming the source and the facts the reader must (``expect``) and must not
(``absent``) establish.  The reader runs on every paste (EMBEDDED_ALWAYS), so the registry adds the same facts
whatever parser reads the rest, and the KB reasons from them the way it does from the live probes."""
from __future__ import annotations

from pathlib import Path

import pytest

from diagnostics import service
from diagnostics.parsers import host_checks
from tests import dump_fixtures

SIDECARS = dump_fixtures.sidecars("host_checks")


def _confirmed(text: str) -> list[str]:
    rep = service.diagnose_text(logs=[("paste.txt", text)])
    return [d["id"] for d in rep["diagnoses"] if d.get("basis") != "possible"]


def test_enough_real_fixtures():
    assert len(SIDECARS) >= 12


@pytest.mark.parametrize("sidecar", SIDECARS, ids=[p.stem for p in SIDECARS])
def test_fixture(sidecar: Path):
    dump_fixtures.check(host_checks, sidecar)


def test_lspci_whole_listing_counts_zero_a_filtered_one_does_not():
    whole = ("$ lspci\n00:00.0 Host bridge: Intel Corporation Device 3e0f\n00:02.0 VGA compatible controller: Intel "
             "Corporation UHD Graphics 630\n00:14.0 USB controller: Intel Corporation Device a36d\n"
             "00:17.0 SATA controller: Intel Corporation Device a352\n01:00.0 Ethernet controller: Realtek Device 8168\n$ ")
    f = host_checks.parse(whole).facts
    assert f["pci.gpu_count"] == 0 and f["pci.amd_gpu_count"] == 0 and f["pci.nvidia_gpu_count"] == 0
    vga = "$ lspci | grep -i vga\n00:02.0 VGA compatible controller: Intel Corporation UHD Graphics 630\n$ "
    assert host_checks.parse(vga).facts == {}     # a laptop's dGPU may be a '3D controller' the grep hides
    cut = whole.rsplit("\n", 2)[0]                # the paste ends inside the listing
    assert "pci.gpu_count" not in host_checks.parse(cut).facts
    amd = ("user@box:~$ lspci -nn | grep -Ei 'vga|display'\n0b:00.0 VGA compatible controller [0300]: Advanced Micro "
           "Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX] [1002:744c] (rev c8)\n"
           "73:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Raphael [1002:164e] (rev c1)\n")
    f = host_checks.parse(amd).facts
    assert f == {"pci.amd_gpu_count": 2, "pci.amd_gpu_ids": ["0x744c", "0x164e"]}, f


def test_lspci_verbose_details_keep_the_listing_going():
    text = ("$ sudo lspci -vvv\n00:00.0 Host bridge: Intel Corporation Device 3e30 (rev 0d)\n"
            "\tSubsystem: ASUSTeK Computer Inc. Device 8694\n\tCapabilities: [e0] Vendor Specific Information: Len=10 <?>\n"
            "\n00:01.0 PCI bridge: Intel Corporation 6th Gen Core Processor PCIe Controller (x16) (rev 0d)\n"
            "\t\tLnkCap:\tPort #2, Speed 8GT/s, Width x16, ASPM L0s L1\n\t\t\tClockPM- Surprise- LLActRep- BwNot+\n"
            "00:14.0 USB controller: Intel Corporation Device a36d\n00:17.0 SATA controller: Intel Corporation Device a352\n"
            "01:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Navi 21 (rev c1)\n"
            "\tKernel driver in use: amdgpu\n$ \n")
    f = host_checks.parse(text).facts
    assert f["pci.gpu_count"] == 1 and f["pci.amd_gpu_count"] == 1 and f["driver.amdgpu_loaded"] is True
    cut = text.split("00:14.0")[0]        # cut inside the verbose listing, before the GPU
    assert "pci.gpu_count" not in host_checks.parse(cut).facts


def test_wsl_virtual_gpu_is_not_a_machine_without_gpu():
    text = ("$ lspci\n1c42:00:00.0 SCSI storage controller: Red Hat, Inc. Virtio console (rev 01)\n"
            "2e5d:00:00.0 3D controller: Microsoft Corporation Basic Render Driver\n"
            "8c8a:00:00.0 SCSI storage controller: Red Hat, Inc. Virtio filesystem (rev 01)\n$ ")
    f = host_checks.parse(text).facts
    assert "pci.gpu_count" not in f and "pci.amd_gpu_count" not in f


_LSHW = """$ sudo lshw -c display
  *-display
       description: VGA compatible controller
       product: {product}
       vendor: {vendor}
       physical id: 0
       bus info: pci@0000:02:00.0
       configuration: driver={driver} latency=0
$ rocminfo
"""


def test_lshw_display_list():
    vm = _LSHW.format(product="SVGA II Adapter", vendor="VMware", driver="vmwgfx")
    f = host_checks.parse(vm).facts
    assert f["pci.gpu_count"] == 0 and f["system.virtualization"] == "vmware"
    # a server's BMC adapter alone says nothing: its accelerators (MI300, class 12) are no display devices
    bmc = _LSHW.format(product="ASPEED Graphics Family", vendor="ASPEED Technology, Inc.", driver="ast")
    assert host_checks.parse(bmc).facts == {}
    amd = _LSHW.format(product="Navi 31 [Radeon RX 7900 XT/7900 XTX]", vendor="Advanced Micro Devices, Inc. [AMD/ATI]",
                       driver="amdgpu")
    assert host_checks.parse(amd).facts == {"pci.amd_gpu_count": 1}
    cut = vm.rsplit("$ rocminfo", 1)[0]     # the paste ends inside the listing
    assert "pci.gpu_count" not in host_checks.parse(cut).facts


def test_lsmod_answers():
    empty = "alice@box:~$ lsmod | grep amdgpu\nalice@box:~$ sudo modprobe amdgpu\n"
    assert host_checks.parse(empty).facts == {"driver.amdgpu_loaded": False}
    normalised = "lsmod | grep amdgpu\nsudo dkms status\n"     # the paste normaliser took the prompts off
    assert host_checks.parse(normalised).facts == {"driver.amdgpu_loaded": False}
    at_end = "$ lsmod | grep amdgpu\n"                          # nothing after it: cut, or nothing printed?
    assert host_checks.parse(at_end).facts == {}
    other = "$ lsmod | grep kfd\n$ ls /dev/kfd\n"               # a pattern that would not show amdgpu
    assert host_checks.parse(other).facts == {}
    used_by = "$ lsmod | grep amd\ngpu_sched              49152  1 amdgpu\ndrm  634880  15 gpu_sched,amdgpu\n$ \n"
    assert host_checks.parse(used_by).facts == {"driver.amdgpu_loaded": True}
    prose = "I ran lsmod | grep amdgpu and it printed nothing\nthen I rebooted\n"
    assert host_checks.parse(prose).facts == {}


def test_dkms_status_for_the_running_kernel():
    other_kernel = ("$ dkms status\namdgpu/6.3.6-1697589.22.04, 6.2.0-36-generic, x86_64: installed\n"
                    "$ uname -r\n6.5.0-14-generic\n")
    f = host_checks.parse(other_kernel).facts
    assert f["driver.amdgpu_dkms_status"] == "added" and f["os.kernel"] == "6.5.0-14-generic"
    same = other_kernel.replace("6.5.0-14-generic", "6.2.0-36-generic")
    assert host_checks.parse(same).facts["driver.amdgpu_dkms_status"] == "installed"
    unknown_kernel = "amdgpu/6.3.6-1697589.22.04, 6.2.0-36-generic, x86_64: installed\n"
    assert "driver.amdgpu_dkms_status" not in host_checks.parse(unknown_kernel).facts
    assert host_checks.parse("amdgpu/6.8.5-2041575.24.04: added\n").facts["driver.amdgpu_dkms_status"] == "added"
    nv = "nvidia/535.129.03, 6.5.0-14-generic, x86_64: installed\nLinux box 6.5.0-15-generic #15~22.04.1-Ubuntu SMP\n"
    assert host_checks.parse(nv).facts["driver.nvidia_module_available"] is False


def test_kernel_command_line():
    f = host_checks.parse("$ cat /proc/cmdline\nBOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=1 ro quiet "
                          "splash nomodeset\n").facts
    assert f["driver.amdgpu_blacklisted"] is True and f["os.kernel"] == "6.8.0-45-generic"
    f = host_checks.parse("BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic ro modprobe.blacklist=nouveau\n").facts
    assert "driver.amdgpu_blacklisted" not in f
    grub = 'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash nomodeset"\n'   # a setting, maybe never applied
    assert host_checks.parse(grub).facts == {}


def test_distribution_blocks_and_conflicts():
    lone = 'NAME="ComfyUI"\nID=42\n'
    assert host_checks.parse(lone).facts == {}
    two = ('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n'
           'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n')    # host and container
    f = host_checks.parse(two).facts
    assert f.get("os.id") == "ubuntu" and "os.version_id" not in f and "os.name" not in f


def test_package_lists_zh_locale_and_states():
    zh = ("$ apt list --installed | grep rocm-core\n正在列表... 完成\n"
          "rocm-core/jammy,now 6.2.4.60204-139~22.04 amd64 [已安装，自动]\n")
    assert host_checks.parse(zh).facts == {"rocm.installed": True, "rocm.version": "6.2.4"}
    policy = "$ apt policy rocm-core\nrocm-core:\n  已安装：6.1.3.60103-122~22.04\n  候选： 6.1.3.60103-122~22.04\n"
    assert host_checks.parse(policy).facts["rocm.version"] == "6.1.3"
    none = "rocm-core:\n  Installed: (none)\n  Candidate: 6.1.3.60103-122~22.04\n"
    assert host_checks.parse(none).facts == {}
    removed = "rc  rocm-core  6.0.2.60002-115~22.04  amd64  Radeon Open Compute (ROCm) Runtime software stack\n"
    assert host_checks.parse(removed).facts == {}
    multi = ("ii  rocm-core6.1.3  6.1.3.60103-122~22.04  amd64  ROCm Runtime software stack\n"
             "ii  rocm-core6.2.4  6.2.4.60204-139~22.04  amd64  ROCm Runtime software stack\n")
    f = host_checks.parse(multi).facts
    assert f == {"rocm.installed": True}
    opt = "$ ls -l /opt\ndrwxr-xr-x 9 root root 4096 Oct  1 10:00 rocm-6.2.4\nlrwxrwxrwx 1 root root 22 Oct  1 10:00 rocm -> /etc/alternatives/rocm\n$ "
    assert host_checks.parse(opt).facts == {"rocm.installed": True, "rocm.paths": ["/opt/rocm-6.2.4"],
                                            "rocm.version": "6.2.4"}


def test_hostile_input_never_raises():
    for text in ("\x00" * 5000, "00:00.0 " * 10000, "lsmod | grep amdgpu\n" * 3000, "BOOT_IMAGE=" + "9" * 5000,
                 "é" * 100000, "amdgpu/" + "1" * 5000 + ": added\n", "ii  rocm-core " + "1." * 3000 + " amd64 x\n"):
        assert isinstance(host_checks.parse(text).facts, dict)


_AMD_VGA = ("$ lspci -nn | grep -i vga\n03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. "
            "[AMD/ATI] Navi 21 [Radeon RX 6800/6800 XT / 6900 XT] [1002:73bf] (rev c1)\n")
FROM_FACTS = [
    ("no-gpu-present",
     "$ lspci\n00:00.0 Host bridge: Intel Corporation 440FX - 82441FX PMC [Natoma] (rev 02)\n"
     "00:01.0 ISA bridge: Intel Corporation 82371SB PIIX3 ISA [Natoma/Triton II]\n"
     "00:01.1 IDE interface: Intel Corporation 82371SB PIIX3 IDE [Natoma/Triton II]\n"
     "00:02.0 VGA compatible controller: Red Hat, Inc. QXL paravirtual graphic card (rev 04)\n"
     "00:03.0 Ethernet controller: Red Hat, Inc. Virtio network device\n"
     "$ python3 -c \"import torch; print(torch.cuda.is_available())\"\nFalse\n"),
    ("amdgpu-dkms-build-failure",
     _AMD_VGA + "$ lsmod | grep amdgpu\n$ dkms status\namdgpu/6.3.6-1697589.22.04, 6.2.0-36-generic, x86_64: installed\n"
     "$ uname -r\n6.5.0-14-generic\n"),
    ("amdgpu-driver-not-loaded",
     _AMD_VGA + "$ cat /proc/cmdline\nBOOT_IMAGE=/boot/vmlinuz-6.5.0-14-generic root=UUID=1 ro quiet splash nomodeset\n"),
]


@pytest.mark.parametrize("want,text", FROM_FACTS, ids=[w for w, _ in FROM_FACTS])
def test_the_kb_names_the_cause_from_facts_alone(want: str, text: str):
    """No error line in the pastes: the cause comes from what the checks show."""
    got = _confirmed(text)
    assert got and got[0] == want, got
