"""Probes pointed at recorded sysfs trees (tests/fixtures/sysfs/*, sources in each SOURCE.md)."""
from pathlib import Path

import pytest

from diagnostics.probes import devices, env, gpus, system
from diagnostics.probes.base import MemoryEmitter

FIX = Path(__file__).parent / "fixtures" / "sysfs"


def run(mod, name):
    out = MemoryEmitter()
    mod.collect(str(FIX / name), out)
    return out


@pytest.mark.parametrize("v,gfx", [(110000, "gfx1100"), (90010, "gfx90a"), (90012, "gfx90c"), (90402, "gfx942"),
                                   (110501, "gfx1151"), (100300, "gfx1030"), (120001, "gfx1201"), (0, None)])
def test_gfx_target_version_decoding_keeps_hex_digits(v, gfx):
    assert gpus.gfx_from_version(v) == gfx


def test_rx7900xtx_tree():
    o = run(gpus, "rx7900xtx")
    assert o.data["gpu.count"] == 1
    assert o.data["gpu.gfx_targets"] == ["gfx1100"]
    assert o.data["gpu.discrete_count"] == 1 and o.data["gpu.integrated_count"] == 0
    assert o.data["gpu.vram_total_bytes"] == 25753026560
    assert o.data["gpu.vram_free_bytes"] == 25753026560 - 1073741824
    assert o.data["gpu.first_is_integrated"] is False


def test_apu_enumerated_before_discrete():
    o = run(gpus, "apu-plus-dgpu")
    assert o.data["gpu.gfx_targets"] == ["gfx1103", "gfx1100"]
    assert o.data["gpu.integrated_count"] == 1 and o.data["gpu.discrete_count"] == 1
    assert o.data["gpu.first_is_integrated"] is True
    # the VRAM that matters is the discrete card's, not the APU's carve-out
    assert o.data["gpu.vram_total_bytes"] == 25753026560


def test_instinct_gfx90a_without_drm_files():
    o = run(gpus, "mi250x-cpu-node-old-kernel")
    assert o.data["gpu.gfx_targets"] == ["gfx90a"]
    assert "gpu.vram_total_bytes" not in o.data


def test_no_topology_is_skipped_not_failed(tmp_path):
    o = MemoryEmitter()
    gpus.collect(str(tmp_path), o)
    assert o.statuses[-1][0] == "skipped" and "gpu.count" not in o.data


def test_devices_on_a_tree_without_driver(tmp_path):
    (tmp_path / "sys/module/snd_hda_intel").mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    o = MemoryEmitter()
    devices.collect(str(tmp_path), o)
    assert o.data["driver.amdgpu_loaded"] is False and o.data["kfd.present"] is False


def test_devices_on_a_tree_that_recorded_nothing_leaves_everything_unknown(tmp_path):
    """Unknown is not false: no /sys/module and no /dev recorded says nothing about the driver or /dev/kfd, and
    nothing about the user (the tree has no proc/self/status) -- not the identity of whoever runs the tests."""
    o = MemoryEmitter()
    devices.collect(str(tmp_path), o)
    for k in ("driver.amdgpu_loaded", "driver.nvidia_loaded", "kfd.present", "dri.render_nodes", "user.uid",
              "user.is_root", "user.groups", "user.in_render_group", "kfd.group", "user.missing_device_gids"):
        assert k not in o.data, k
    assert o.statuses[-1][0] == "warn"


def test_kfd_topology_with_a_gpu_shows_amdgpu_at_work():
    # the recorded tree has no /sys/module, but KFD (part of amdgpu) lists a GPU node
    o = run(devices, "mi250x-cpu-node-old-kernel")
    assert o.data["driver.amdgpu_loaded"] is True
    assert "kfd.present" not in o.data      # no /dev recorded


def test_recorded_identity_and_node_ownership():
    """A recorded tree carries the process's groups (proc/self/status, what the kernel checks) and `ls -l` of the
    device nodes (git keeps no ownership): added to render in /etc/group, not in this login session."""
    o = run(devices, "m-7900xtx-render-not-relogged")
    assert o.data["user.uid"] == 1000 and o.data["user.is_root"] is False
    assert o.data["user.in_render_group"] is False and o.data["user.in_video_group"] is False
    assert o.data["user.groups_pending_relogin"] == ["render", "video"]
    assert o.data["kfd.group"] == "render" and o.data["dri.group"] == "render"
    assert o.data["user.missing_device_gids"] == [110]
    assert "kfd.permission_denied" not in o.data   # only an open on the live system can say
    assert o.statuses[-1][0] == "fail"
    ok = run(devices, "m-7900xtx-ubuntu")
    assert ok.data["user.in_render_group"] is True and ok.data["user.missing_device_gids"] == []
    assert ok.statuses[-1] == ("ok", "amdgpu loaded, /dev/kfd present")


def test_fixture_ownership_is_never_read_from_the_checkout(tmp_path):
    # without a recorded `ls -l`, the owner of a fixture file is the checkout's user: not a fact of the machine
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/kfd").write_text("")
    (tmp_path / "sys/module/amdgpu").mkdir(parents=True)
    o = MemoryEmitter()
    devices.collect(str(tmp_path), o)
    assert o.data["kfd.present"] is True and "kfd.group" not in o.data


def test_container_without_kfd_and_apu_order():
    o = run(devices, "m-mi210-docker-no-kfd")
    assert o.data["driver.amdgpu_loaded"] is True and o.data["kfd.present"] is False
    assert o.data["user.is_root"] is True
    s = run(system, "m-mi210-docker-no-kfd")
    assert s.data["container.kind"] == "docker"
    g = run(gpus, "m-780m-before-7900xtx")
    assert g.data["gpu.gfx_targets"] == ["gfx1103", "gfx1100"] and g.data["gpu.first_is_integrated"] is True
    g = run(gpus, "m-7800x3d-raphael-7900xtx")
    assert g.data["gpu.gfx_targets"] == ["gfx1100", "gfx1036"] and g.data["gpu.first_is_integrated"] is False
    assert g.data["gpu.vram_total_bytes"] == 25753026560


@pytest.mark.parametrize("tree,gfx", [("m-rx6700xt-ubuntu", "gfx1031"), ("m-steamdeck", "gfx1033"),
                                      ("m-rx580-rocm62", "gfx803"), ("m-strix-halo", "gfx1151"),
                                      ("m-780m-laptop", "gfx1103"), ("m-mi210-docker-no-kfd", "gfx90a")])
def test_machine_targets(tree, gfx):
    assert run(gpus, tree).data["gpu.native_gfx_targets"] == [gfx]


def test_secure_boot_wsl_and_nomodeset_trees():
    assert run(system, "m-secureboot-dkms-7800xt").data["os.secure_boot"] is True
    assert run(system, "m-wsl2-dxg").data["container.kind"] == "wsl"
    d = run(devices, "m-nomodeset-rx6800xt")
    assert d.data["driver.amdgpu_loaded"] is False and d.data["driver.amdgpu_blacklisted"] is True
    assert d.data["pci.amd_gpu_ids"] == ["0x73bf"]


def test_env_override_value_in_force_and_malformed():
    o = MemoryEmitter()
    env.collect("/", o, environ={"HSA_OVERRIDE_GFX_VERSION": '"10.3.0"', "HIP_VISIBLE_DEVICES": "",
                                 "HF_TOKEN": "hf_secret", "PATH": "/usr/bin"})
    assert o.data["hsa_override.value"] == "10.3.0"
    assert o.data["hsa_override.valid"] is False
    assert o.data["hsa_override.gfx"] == "gfx1030"
    assert o.data["visible_devices.masks"] == ["HIP_VISIBLE_DEVICES="]
    # what the mask does is judged once, against the devices found (diagnostics.derive.visible_devices)
    assert "visible_devices.hides_all" not in o.data
    assert "env.HF_TOKEN" not in o.data and "env.PATH" not in o.data
    o = MemoryEmitter()
    env.collect("/", o, environ={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert o.data["hsa_override.valid"] is True and o.data["hsa_override.gfx"] == "gfx1100"


def test_system_container_and_wsl(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/version").write_text("Linux version 5.15.153.1-microsoft-standard-WSL2 (root@1) #1 SMP\n")
    (tmp_path / "proc/meminfo").write_text("MemTotal:       16303260 kB\nMemAvailable:   12000000 kB\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n')
    o = MemoryEmitter()
    system.collect(str(tmp_path), o)
    assert o.data["container.kind"] == "wsl"
    assert o.data["os.id"] == "ubuntu" and o.data["os.version_id"] == "22.04"
    assert o.data["host.mem_total_bytes"] == 16303260 * 1024


def test_dkms_status_parsing():
    text = ("amdgpu/6.8.5-2009582.22.04, 6.8.0-45-generic, x86_64: installed\n"
            "amdgpu/6.8.5-2009582.22.04, 6.11.0-9-generic, x86_64: built\n"
            "virtualbox/7.0.16, 6.8.0-45-generic, x86_64: installed\n")
    assert devices.parse_dkms(text, "6.8.0-45-generic") == "installed"
    assert devices.parse_dkms(text, "6.11.0-9-generic") == "built"
    assert devices.parse_dkms("amdgpu/6.3.6-1697589.22.04: added\n", "6.5.0-14-generic") == "added"
    assert devices.parse_dkms("virtualbox/7.0.16, 6.8.0, x86_64: installed\n", "6.8.0") is None


def test_native_targets_from_sysfs():
    o = run(gpus, "mi250x-cpu-node-old-kernel")
    assert o.data["gpu.native_gfx_targets"] == ["gfx90a"]


def _nvidia_tree(root, modules_dep):
    dev = root / "sys/bus/pci/devices/0000:01:00.0"
    dev.mkdir(parents=True)
    (dev / "class").write_text("0x030000\n")
    (dev / "vendor").write_text("0x10de\n")
    (dev / "device").write_text("0x2684\n")
    (root / "sys/module/nouveau").mkdir(parents=True)   # what is loaded: nouveau, no nvidia
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/osrelease").write_text("6.8.0-87-generic\n")
    mods = root / "lib/modules/6.8.0-87-generic"
    mods.mkdir(parents=True)
    (mods / "modules.dep").write_text(modules_dep)


def test_nvidia_module_missing_for_the_running_kernel(tmp_path):
    # after a kernel update without a DKMS build: the new kernel's modules.dep has no nvidia.ko
    _nvidia_tree(tmp_path, "kernel/drivers/gpu/drm/nouveau/nouveau.ko.zst: kernel/drivers/gpu/drm/drm_kms_helper.ko.zst\n")
    o = MemoryEmitter()
    devices.collect(str(tmp_path), o)
    assert o.data["pci.nvidia_gpu_count"] == 1
    assert o.data["driver.nvidia_loaded"] is False
    assert o.data["driver.nvidia_module_available"] is False


def test_nvidia_module_built_by_dkms(tmp_path):
    _nvidia_tree(tmp_path, "updates/dkms/nvidia.ko.zst:\nupdates/dkms/nvidia-uvm.ko.zst: updates/dkms/nvidia.ko.zst\n")
    o = MemoryEmitter()
    devices.collect(str(tmp_path), o)
    assert o.data["driver.nvidia_module_available"] is True


def test_no_nvidia_gpu_no_module_fact(tmp_path):
    o = MemoryEmitter()
    devices.collect(str(tmp_path), o)
    assert "driver.nvidia_module_available" not in o.data


def test_wsl_from_dev_dxg_and_no_container_guess_without_proc(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/dxg").write_text("")
    o = MemoryEmitter()
    system.collect(str(tmp_path), o)
    assert o.data["container.kind"] == "wsl" and o.data["container.present"] is True
    o = MemoryEmitter()
    system.collect(str(tmp_path / "nothing"), o)
    assert "container.present" not in o.data


def test_igpu_next_to_an_nvidia_card_is_not_the_only_gpu():
    o = run(gpus, "m-7950x-igpu-rtx4090")
    assert o.data["gpu.integrated_count"] == 1 and o.data["gpu.discrete_count"] == 1
    assert o.data["gpu.vendors"] == ["amd", "nvidia"]
    assert o.data["gpu.first_is_integrated"] is False     # KFD enumerates the iGPU alone
    assert "gpu.vram_total_bytes" not in o.data           # 512 MiB of carve-out is not the RTX 4090's memory


def test_an_acl_on_the_node_is_not_judged_from_the_group():
    # `ls -l` shows "+": logind's uaccess ACL lets the desktop seat's user in whatever the group says
    o = run(devices, "m-7900xtx-desktop-uaccess")
    assert o.data["user.in_render_group"] is False and o.data["kfd.group"] == "render"
    assert o.data["user.missing_device_gids"] == []
    assert o.statuses[-1][0] == "ok"


@pytest.mark.parametrize("masks,supported,missing", [
    ([], False, ["gfx1036"]),                                  # the iGPU is visible: the runtime needs its code
    (["HIP_VISIBLE_DEVICES=0"], True, []),                    # only the 7900 XTX is left
    (["HIP_VISIBLE_DEVICES=1"], False, ["gfx1036"]),          # only the iGPU is left
    (["ROCR_VISIBLE_DEVICES=1,0", "HIP_VISIBLE_DEVICES=1"], True, []),   # ROCR reorders, HIP picks its 2nd
    (["ROCR_VISIBLE_DEVICES=GPU-deadbeef00000000"], False, ["gfx1036"]),  # cannot be judged: every GPU counts
])
def test_arch_support_counts_only_the_gpus_the_masks_leave(masks, supported, missing):
    """derive: a GPU hidden by ROCR_/HIP_VISIBLE_DEVICES is never loaded, so the wheel need not carry its target
    (the iGPU of m-7800x3d-raphael-7900xtx, KFD order gfx1100, gfx1036)."""
    from diagnostics.derive import derive

    facts = {"torch.build": "rocm", "torch.arch_list": ["gfx90a", "gfx942", "gfx1030", "gfx1100"],
             "gpu.gfx_targets": ["gfx1100", "gfx1036"], "gpu.count": 2, "gpu.vendors": ["amd"],
             "visible_devices.masks": masks}
    out = derive(facts)
    assert out["torch.arch_supported"] is supported and out["torch.unsupported_archs"] == missing


def test_wsl_pci_bus_says_nothing_about_gpus():
    """Under WSL2 the virtual PCI bus shows only Microsoft's render driver: no AMD GPU there is not 'no AMD GPU'."""
    o = run(devices, "m-wsl2-dxg")
    assert "pci.amd_gpu_count" not in o.data and "pci.gpu_count" not in o.data
    assert o.data["kfd.present"] is False and o.statuses[-1][0] == "skipped"


def test_an_unreadable_topology_node_leaves_the_gpu_list_unknown(tmp_path):
    import shutil

    shutil.copytree(FIX / "rx7900xtx", tmp_path / "t")
    node = tmp_path / "t/sys/class/kfd/kfd/topology/nodes/2"
    (node / "properties").mkdir(parents=True)   # reading it fails (as an EPERM/EIO node does)
    o = MemoryEmitter()
    gpus.collect(str(tmp_path / "t"), o)
    for k in ("gpu.count", "gpu.gfx_targets", "gpu.native_gfx_targets", "gpu.discrete_count", "gpu.first_is_integrated"):
        assert k not in o.data, k
    assert o.statuses[-1][0] == "warn"
