"""Self-contained torch probe, run by the *diagnosed* interpreter (``--python``) as a plain script.

It imports only the standard library until it imports torch, so any interpreter can run it whatever it has
installed.  Every fact is printed the moment it is known ("@@DIAG " + JSON per line, flushed), and each
stage is announced before it starts: when importing torch segfaults or the first device call aborts or
hangs, the parent still knows everything up to that point and which stage killed it.
"""
import json
import os
import sys

PREFIX = "@@DIAG "
NEIGHBOURS = {
    "transformers": "pkg.transformers",
    "accelerate": "pkg.accelerate",
    "bitsandbytes": "pkg.bitsandbytes",
    "flash-attn": "pkg.flash_attn",
    "flash_attn": "pkg.flash_attn",
    "vllm": "pkg.vllm",
    "triton": "pkg.triton",
    "pytorch-triton-rocm": "pkg.triton",
    "torchvision": "pkg.torchvision",
    "onnxruntime": "pkg.onnxruntime",
    "onnxruntime-gpu": "pkg.onnxruntime_gpu",
    "onnxruntime_gpu": "pkg.onnxruntime_gpu",
}
TORCH_DISTS = ("torch", "torch-rocm", "torch-cuda", "torch-cpu", "pytorch")

# every fact this probe may emit, with the values of NEIGHBOURS above (the parent reads both literals for
# ProbeSpec.provides; keep them plain literals)
FACTS = ("python.version", "python.executable", "pkg.vllm_build", "pkg.nvidia_wheels",
         "pkg.torch_duplicates", "pkg.bitsandbytes_rocm_lib_missing", "torch.installed", "torch.version",
         "torch.build", "torch.installer", "torch.import_error", "torch.location", "torch.hip_version",
         "torch.cuda_version", "torch.cuda_available", "torch.arch_list", "torch.device_count", "torch.device_names",
         "torch.gcn_arch_names", "torch.smoke_ok", "torch.smoke_error")


OUT = None  # where records go (None: sys.stdout); the generation child that hosts this probe sets its own


def emit(rec):
    out = OUT or sys.stdout
    out.write(PREFIX + json.dumps(rec, default=str) + "\n")
    out.flush()


SEEN = {}  # every fact emitted, for a host that goes on in the same process (the generation child)


def fact(name, value):
    if value is not None:
        SEEN[name] = value
        if name not in FACTS and name not in NEIGHBOURS.values():
            emit({"note": "fact %s is not in this probe's FACTS declaration" % name})
        emit({"fact": name, "value": value})


def build_from_version(v):
    local = v.split("+", 1)[1] if "+" in v else ""
    if local.startswith("rocm"):
        return "rocm"
    if local.startswith("cu"):
        return "cuda"
    if local.startswith("cpu"):
        return "cpu"
    return None


def norm_name(name):
    """A distribution name as PEP 503 compares them: lower case, runs of -_. as one '-'."""
    out, sep = [], False
    for ch in str(name).lower():
        if ch in "-_.":
            sep = True
            continue
        if sep and out:
            out.append("-")
        sep = False
        out.append(ch)
    return "".join(out)


def installed(metadata):
    """(normalized name, version, folder) of every installed distribution on sys.path, duplicates included.

    Read from the names of the ``*.dist-info`` folders (``name-version.dist-info``, as every wheel installer
    writes them) without opening their METADATA files: about 0.01 s instead of 0.12-0.2 s for 150 packages
    on the critical path of the probe run (docs/BENCHMARKS.md).  Anything else (``.egg-info``, a folder name
    that does not parse) is read through importlib.metadata as before."""
    for entry in list(sys.path):
        base = entry or "."
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for n in names:
            if not (n.endswith(".dist-info") or n.endswith(".egg-info")):
                continue
            stem = n.rsplit(".", 1)[0]
            name, sep, version = stem.partition("-")
            if (n.endswith(".dist-info") and sep and version and "-" not in version and name
                    and os.path.isfile(os.path.join(base, n, "METADATA"))):
                yield norm_name(name), version, os.path.abspath(base)
                continue
            try:
                dist = metadata.PathDistribution.at(os.path.join(base, n))
                dname = dist.metadata.get("Name")
                if dname:
                    yield norm_name(dname), dist.version, str(dist.locate_file(""))
            except Exception:  # noqa: BLE001 - one unreadable entry does not hide the others
                continue


def metadata_stage():
    emit({"stage": "package metadata"})
    fact("python.version", "%d.%d.%d" % sys.version_info[:3])
    fact("python.executable", sys.executable)
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        return None
    torch_versions = []
    for d in TORCH_DISTS:
        try:
            torch_versions.append((d, metadata.version(d)))
        except Exception:
            pass
    nvidia = set()
    seen_torch = []
    neighbours = dict((norm_name(k), v) for k, v in NEIGHBOURS.items())
    try:
        for name, version, where in installed(metadata):
            if name.startswith("nvidia-") and ("cu" in name or "nccl" in name or "cuda" in name):
                nvidia.add(name)
            if name == "torch":
                seen_torch.append(where)
            key = neighbours.get(name)
            if key:
                fact(key, version)
                if name == "vllm":
                    b = build_from_version(version)
                    if b:
                        fact("pkg.vllm_build", b)
    except Exception as exc:
        emit({"note": "could not list installed packages: %s" % exc})
    fact("pkg.nvidia_wheels", sorted(nvidia))
    if len(seen_torch) > 1 or len(torch_versions) > 1:
        fact("pkg.torch_duplicates", ["%s==%s" % tv for tv in torch_versions] or seen_torch)
    if not torch_versions:
        return None
    name, version = torch_versions[0]
    fact("torch.version", version)
    b = build_from_version(version)
    if b:
        fact("torch.build", b)
    try:
        inst = metadata.distribution(name).read_text("INSTALLER")
        if inst:
            fact("torch.installer", inst.strip())
    except Exception:
        pass
    return version


def check_bitsandbytes(hip):
    """bitsandbytes loads libbitsandbytes_rocm<MAJOR><MINOR>.so for torch's HIP version; is it shipped?"""
    try:
        from importlib import util

        spec = util.find_spec("bitsandbytes")
    except Exception:
        return
    if spec is None or not spec.submodule_search_locations:
        return
    parts = str(hip).split(".")
    if len(parts) < 2:
        return
    want = "libbitsandbytes_rocm%s%s" % (parts[0], parts[1])
    try:
        files = os.listdir(list(spec.submodule_search_locations)[0])
    except OSError:
        return
    rocm_libs = sorted(f for f in files if f.startswith("libbitsandbytes_rocm"))
    fact("pkg.bitsandbytes_rocm_lib_missing", not any(f.startswith(want) for f in files))
    if rocm_libs and not any(f.startswith(want) for f in files):
        emit({"evidence": {"source": "bitsandbytes", "excerpt": "torch needs %s.so; bitsandbytes ships %s" % (want, ", ".join(rocm_libs))}})


def main():
    version = metadata_stage()
    emit({"stage": "import torch"})
    try:
        import torch  # noqa: F401  (the dangerous part: may segfault, hang or abort)
    except BaseException as exc:  # noqa: BLE001 - any failure here is the finding
        if version is None and isinstance(exc, ModuleNotFoundError):
            fact("torch.installed", False)
            emit({"status": "fail", "summary": "torch is not installed in %s" % sys.executable})
            return
        fact("torch.installed", True)
        fact("torch.import_error", "%s: %s" % (type(exc).__name__, exc))
        emit({"log": {"name": "import torch", "text": "%s: %s" % (type(exc).__name__, exc)}})
        emit({"status": "fail", "summary": "importing torch failed: %s" % type(exc).__name__})
        return
    fact("torch.installed", True)
    fact("torch.version", torch.__version__)
    fact("torch.location", os.path.dirname(getattr(torch, "__file__", "") or ""))
    hip = getattr(torch.version, "hip", None)
    cuda = getattr(torch.version, "cuda", None)
    fact("torch.hip_version", hip)
    fact("torch.cuda_version", cuda)
    build = "rocm" if hip else ("cuda" if cuda else "cpu")
    fact("torch.build", build)
    if hip:
        check_bitsandbytes(hip)

    emit({"stage": "device query"})
    try:
        avail = bool(torch.cuda.is_available())
    except BaseException as exc:  # noqa: BLE001
        fact("torch.cuda_available", False)
        fact("torch.smoke_error", "%s: %s" % (type(exc).__name__, exc))
        emit({"status": "fail", "summary": "torch.cuda.is_available() raised %s" % type(exc).__name__})
        return
    fact("torch.cuda_available", avail)
    try:
        fact("torch.arch_list", list(torch.cuda.get_arch_list()))
    except BaseException:  # noqa: BLE001
        pass
    if not avail:
        fact("torch.device_count", 0)
        if build == "cpu":
            emit({"status": "fail", "summary": "torch %s is a CPU-only build" % torch.__version__})
        else:
            emit({"status": "fail", "summary": "torch %s (%s build) sees no GPU" % (torch.__version__, build)})
        return
    n = torch.cuda.device_count()
    fact("torch.device_count", n)
    names, archs = [], []
    for i in range(n):
        try:
            p = torch.cuda.get_device_properties(i)
            names.append(p.name)
            arch = getattr(p, "gcnArchName", None)
            if arch:
                archs.append(arch)
            elif hasattr(p, "major"):
                archs.append("sm_%d%d" % (p.major, p.minor))
        except BaseException as exc:  # noqa: BLE001
            emit({"note": "device %d properties: %s" % (i, exc)})
    fact("torch.device_names", names)
    fact("torch.gcn_arch_names", archs)

    emit({"stage": "smoke test"})
    try:
        torch.manual_seed(0)
        a = torch.randn(256, 256)
        b = torch.randn(256, 256)
        want = a @ b
        got = (a.to("cuda") @ b.to("cuda")).to("cpu")
        torch.cuda.synchronize()
        ok = bool(torch.allclose(got, want, rtol=1e-2, atol=1e-2))
        fact("torch.smoke_ok", ok)
        if not ok:
            err = float((got - want).abs().max())
            fact("torch.smoke_error", "matmul on the GPU differs from the CPU result (max abs error %.3g)" % err)
            emit({"status": "fail", "summary": "the GPU computed a wrong matmul result"})
            return
    except BaseException as exc:  # noqa: BLE001
        msg = "%s: %s" % (type(exc).__name__, exc)
        fact("torch.smoke_ok", False)
        fact("torch.smoke_error", msg)
        emit({"log": {"name": "smoke test", "text": msg}})
        emit({"status": "fail", "summary": "the smoke test failed: %s" % msg.splitlines()[0][:200]})
        return
    emit({"status": "ok", "summary": "torch %s, %d GPU(s): %s; smoke test passed" % (torch.__version__, n, ", ".join(names))})


if __name__ == "__main__":
    main()
    # the final record: a torch that ends the process inside a call (os._exit(0) in is_available()) never
    # gets here, and the parent reports the probe as crashed instead of trusting the missing rest
    emit({"done": True})
    # then end at once: the interpreter's normal exit tears torch down (garbage-collecting its Python objects,
    # 0.9-1.2 s measured on the 2-core machine, docs/BENCHMARKS.md) while the parent waits for the exit
    try:
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a closed pipe: nothing more can be said anyway
        pass
    os._exit(0)
