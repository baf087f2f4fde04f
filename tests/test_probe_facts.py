"""Every fact a probe can emit is declared once (the FACTS tuple of its module), and when a probe crashes every
KB entry that reads one of its facts is listed as "not ruled out" -- proven here for every probe."""
import glob
import re
from pathlib import Path

import pytest

from diagnostics import facts as factcat
from diagnostics import parsers, service
from diagnostics.derive import DERIVED
from diagnostics.matcher import UNKNOWN, evaluate
from diagnostics.probes import PROBES
from diagnostics.probes.base import MemoryEmitter, declared

PROBE_DIR = Path(__file__).resolve().parent.parent / "diagnostics" / "probes"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# the parser kinds each probe hands tool output to, and what it leaves out of them
FORWARDS = {"rocm": ("rocminfo", "rocm_smi", "amd_smi", "hipconfig"), "nvidia": ("nvidia_smi",), "system": ("dmesg",)}
NOT_FORWARDED = {"system": {"os.kernel", "os.kernel_cmdline"},
                 "rocm": {"gpu.count", "gpu.names", "gpu.gfx_targets", "gpu.integrated_count", "gpu.discrete_count",
                          "gpu.first_is_integrated", "gpu.vram_free_bytes"}}
IDS = [p.id for p in PROBES]


def _source(spec) -> str:
    return (PROBE_DIR / (spec.script or f"{spec.module}.py")).read_text(encoding="utf-8")


@pytest.mark.parametrize("spec", PROBES, ids=IDS)
def test_the_declaration_names_catalogue_facts(spec):
    assert spec.provides, f"{spec.id} declares no FACTS"
    for name in spec.provides:
        assert factcat.is_known(name.rstrip("*") + ("X" if name.endswith("*") else "")), f"{spec.id}: {name}"


@pytest.mark.parametrize("spec", PROBES, ids=IDS)
def test_every_fact_named_in_the_source_is_declared(spec):
    src = _source(spec)
    names = set(re.findall(r"""\bfact\(\s*["']([a-z_]+\.[A-Za-z0-9_.]+)["']""", src))
    names |= set(re.findall(r""":\s*["']((?:pkg|torch)\.[a-z_]+)["']""", src))  # the torch child's tables
    assert names, f"no fact found in {spec.id}'s source: the scan is broken"
    missing = sorted(n for n in names if not declared(n, spec.provides))
    assert not missing, f"{spec.id} emits undeclared facts: {missing}"


@pytest.mark.parametrize("pid", ["nvidia", "rocm"])
def test_the_gpu_process_facts_are_declared(pid):
    """The probes that ask for the compute processes emit what gpuprocs and process_facts compute."""
    from diagnostics.parsers.base import GpuProcess, process_facts
    from diagnostics.probes.gpuprocs import load_facts

    spec = next(p for p in PROBES if p.id == pid)
    emitted = set(process_facts([GpuProcess(1, "python3", 1 << 30, "0")]))
    emitted |= set(load_facts([{"index": 0, "busy": 50.0, "used": 1, "total": 2}]))
    emitted.add("gpu.other_process_mem_fraction")
    src = (PROBE_DIR / f"{pid}.py").read_text(encoding="utf-8")
    emitted |= set(re.findall(r"""facts\[["']([a-z_]+\.[a-z_]+)["']\]\s*=""", src))
    missing = sorted(n for n in emitted if not declared(n, spec.provides))
    assert not missing, f"{pid} emits undeclared facts: {missing}"


@pytest.mark.parametrize("pid", sorted(FORWARDS))
def test_every_fact_a_forwarded_parser_finds_is_declared(pid):
    spec = next(p for p in PROBES if p.id == pid)
    seen = set()
    for kind in FORWARDS[pid]:
        files = glob.glob(str(FIXTURES / "dumps" / kind / "*.txt"))
        assert files, kind
        for f in files:
            seen |= set(parsers.parse(Path(f).read_text(encoding="utf-8", errors="replace"), kind).facts)
    seen -= NOT_FORWARDED.get(pid, set())
    missing = sorted(n for n in seen if not declared(n, spec.provides))
    assert not missing, f"{pid} forwards facts it does not declare: {missing}"


@pytest.mark.parametrize("tree", sorted(p.name for p in (FIXTURES / "sysfs").iterdir()))
def test_probes_on_recorded_trees_emit_only_declared_facts(tree):
    from diagnostics.probes import devices, gpus, system

    root = str(FIXTURES / "sysfs" / tree)
    for mod in (devices, gpus, system):
        out = MemoryEmitter()
        out.declared = frozenset(mod.FACTS)
        mod.collect(root, out)
        assert not [n for n in out.notes if "FACTS declaration" in n], (mod.__name__, out.notes)


def test_gpus_probe_reports_rocm_uuids(tmp_path):
    from diagnostics.probes import gpus

    out = MemoryEmitter()
    gpus.collect(str(FIXTURES / "sysfs" / "rx7900xtx"), out)
    uuids = out.data.get("gpu.uuids")
    assert uuids and all(re.fullmatch(r"GPU-[0-9a-f]{16}", u) for u in uuids)
    assert len(uuids) == out.data["gpu.count"]


def test_system_probe_names_the_hypervisor(tmp_path):
    from diagnostics.probes import system

    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor avx\n")
    out = MemoryEmitter()
    system.collect(str(tmp_path), out)
    assert out.data["system.virtualization"] == "vm"
    (tmp_path / "sys/class/dmi/id").mkdir(parents=True)
    (tmp_path / "sys/class/dmi/id/sys_vendor").write_text("QEMU\n")
    out = MemoryEmitter()
    system.collect(str(tmp_path), out)
    assert out.data["system.virtualization"] == "qemu"
    (tmp_path / "sys/class/dmi/id/sys_vendor").write_text("Dell Inc.\n")
    (tmp_path / "proc/cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu vme sse2 avx\n")
    out = MemoryEmitter()
    system.collect(str(tmp_path), out)
    assert out.data["system.virtualization"] == "none"


def test_devices_probe_counts_gpus_on_the_pci_bus(tmp_path):
    from diagnostics.probes import devices

    for slot, cls, ven in (("0000:00:02.0", "0x030000", "0x8086"), ("0000:65:00.0", "0x030200", "0x10de"),
                           ("0000:03:00.0", "0x038000", "0x1002")):
        d = tmp_path / "sys/bus/pci/devices" / slot
        d.mkdir(parents=True)
        (d / "class").write_text(cls + "\n")
        (d / "vendor").write_text(ven + "\n")
        (d / "device").write_text("0x1234\n")
    out = MemoryEmitter()
    devices.collect(str(tmp_path), out)
    assert out.data["pci.gpu_count"] == 2 and out.data["pci.gpu_slots"] == ["0000:03:00.0", "0000:65:00.0"]


def _reads(entry) -> set[str]:
    return {c.fact for c in entry.when.walk() if c.kind == "fact"}


@pytest.mark.parametrize("spec", PROBES, ids=IDS)
def test_a_crashed_probe_leaves_every_entry_that_reads_its_facts_not_ruled_out(spec):
    """The probe crashed before reporting anything; every other probe is absent too (a worst case: nothing else
    decides the entries).  Every entry that reads a fact the probe owes, directly or through a derived fact, and
    that the remaining input does not decide, must be listed as not ruled out."""
    kb, _ = service.get_kb()
    report = service.new_report("live")
    report["probes"] = [{"id": spec.id, "title": spec.title, "status": "crashed", "error": "crashed with SIGSEGV",
                         "facts": {}, "logs": [], "provides": list(spec.provides)}]
    report["facts"] = {}
    service.diagnose(report)
    owed = set(spec.provides)
    owed |= {d for d, inputs in DERIVED.items() if any(declared(i, tuple(owed)) for i in inputs)}
    listed = {d["id"] for d in report["not_ruled_out"]}
    fired = {d["id"] for d in report["diagnoses"]}
    expected = set()
    for e in kb.entries:
        if not any(declared(f, tuple(owed)) for f in _reads(e)):
            continue
        out = evaluate(e.when, report["facts"], {}, {})
        # undecided because of a fact this probe owed (not only because of, say, a generation fact)
        if out.value == UNKNOWN and any(declared(f, tuple(owed)) for f in out.unknown):
            expected.add(e.id)
    assert expected, f"no entry reads {spec.id}'s facts: the test proves nothing"
    assert expected - fired <= listed, f"{spec.id}: not listed: {sorted(expected - fired - listed)}"
    assert report["verdict"] == "unexplained"


def test_a_crash_of_the_env_probe_covers_every_env_variable():
    """'env.*' is declared as a prefix: an entry reading env.HIP_VISIBLE_DEVICES is not ruled out when env crashed."""
    report = service.new_report("live")
    spec = next(p for p in PROBES if p.id == "env")
    report["probes"] = [{"id": "env", "status": "crashed", "facts": {}, "logs": [], "provides": list(spec.provides)}]
    report["facts"] = {}
    service.diagnose(report)
    assert "visible-devices-env-masking" in {d["id"] for d in report["not_ruled_out"]}
