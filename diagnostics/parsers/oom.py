"""What a PyTorch out-of-memory error says about itself: how much was asked for, the GPU's capacity and
free memory, which processes hold memory, and how much this process holds.

The caching allocator's message (c10/cuda/CUDACachingAllocator.cpp), one line, in two shapes:

* PyTorch >= 2.1::

    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of
    23.65 GiB of which 3.06 MiB is free. Process 3803 has 23.63 GiB memory in use. Including non-PyTorch
    memory, this process has 23.63 GiB memory in use. Of the allocated memory 22.99 GiB is allocated by
    PyTorch, and 199.06 MiB is reserved by PyTorch but unallocated. ...

  ("HIP out of memory" on ROCm builds; one "Process N has X memory in use" per *other* process NVML lists on
  the GPU, the failing one written as "Including non-PyTorch memory, this process has ..."; where NVML's pid
  is not the process's own (another pid namespace) the failing one shows as "Process N" too and no "this
  process" part is printed, so other-process figures are only derived when that part is there);
* older releases::

    RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; 9.50 GiB
    already allocated; 3.06 MiB free; 9.66 GiB reserved in total by PyTorch)

What the failing process's allocator holds (``oom.reserved_bytes``) against the capacity and what is free gives
``oom.outside_torch_*``: memory in use on that GPU outside this process's PyTorch - other processes (listed or not),
or memory a dead one never gave back.  A line with the details but not the first words (a paste that starts at
"Tried to allocate") is read too.

Only the standard library; anchored, bounded patterns over lines that contain "out of memory".
"""
from __future__ import annotations

import re
from typing import Any

_UNITS = {"B": 1, "bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
          "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
_SIZE = r"(\d{1,9}(?:\.\d{1,6})?) ?(bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB)"
_OOM_LINE = re.compile(r"\b(CUDA|HIP) out of memory\.?")
_TRIED = re.compile(r"Tried to allocate " + _SIZE)
_CAPACITY = re.compile(r"GPU (\d{1,3}) has a total capac(?:i)?ty of " + _SIZE + r" of which " + _SIZE + r" is free")
# the capacity alone: some ROCm releases print a wrapped-around free figure ("512.00 MiB of which 17179869183.96 GiB is
# free", 2**64 bytes less a little), which the bounded size above refuses; the capacity is still the GPU's own
_CAPACITY_ONLY = re.compile(r"GPU (\d{1,3}) has a total capac(?:i)?ty of " + _SIZE + r" of which \d")
_PROCESS = re.compile(r"Process (\d{1,10}) has " + _SIZE + r" memory in use")
_THIS = re.compile(r"Including non-PyTorch memory, this process has " + _SIZE + r" memory in use")
_OLD = re.compile(r"\(GPU (\d{1,3}); " + _SIZE + r" total capacity; " + _SIZE + r" already allocated; " + _SIZE
                  + r" free")
# what this process's caching allocator holds: "9.66 GiB reserved in total by PyTorch" (old), "Of the allocated
# memory 22.99 GiB is allocated by PyTorch, and 199.06 MiB is reserved by PyTorch but unallocated" (>= 2.1)
_RESERVED_OLD = re.compile(_SIZE + r" reserved in total by PyTorch")
# torch 1.0-1.3: "... 4.72 GiB already allocated; 2.41 GiB free; 11.21 MiB cached)", the cached part being what the
# allocator holds beyond what is allocated
_CACHED_OLD = re.compile(r"; " + _SIZE + r" cached\)")
_RESERVED_NEW = re.compile(r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch, and " + _SIZE
                           + r" is reserved by PyTorch but unallocated")
MAX_LINE = 20_000


def _bytes(num: str, unit: str) -> int:
    return int(float(num) * _UNITS[unit])


def _oom_lines(text: str) -> list[str]:
    if "out of memory" not in text and "Tried to allocate" not in text:
        return []
    out = []
    for ln in text.splitlines():
        cut = ln[:MAX_LINE]
        # the message's own line, or its details on a line of their own: a paste that starts at "Tried to
        # allocate", or a terminal that wrapped after "CUDA out of memory."
        if ("out of memory" in ln and _OOM_LINE.search(cut)) or (
                "Tried to allocate" in ln and _TRIED.search(cut) and (_CAPACITY.search(cut) or _OLD.search(cut))):
            out.append(cut)
            if len(out) >= 20:
                break
    return out


def parse(text: str) -> dict[str, Any]:
    """Facts (``oom.*``) from the last out-of-memory message in *text* (the one that stopped the program)."""
    lines = _oom_lines(text)
    if not lines:
        return {}
    ln = lines[-1]
    facts: dict[str, Any] = {}
    api = _OOM_LINE.search(ln)
    if api:
        facts["oom.api"] = api.group(1).lower()
    m = _TRIED.search(ln)
    if m:
        facts["oom.requested_bytes"] = _bytes(m.group(1), m.group(2))
    m = _CAPACITY.search(ln)
    if m:
        facts["oom.gpu_index"] = int(m.group(1))
        facts["oom.capacity_bytes"] = _bytes(m.group(2), m.group(3))
        facts["oom.free_bytes"] = _bytes(m.group(4), m.group(5))
    elif m := _CAPACITY_ONLY.search(ln):
        facts["oom.gpu_index"] = int(m.group(1))
        facts["oom.capacity_bytes"] = _bytes(m.group(2), m.group(3))
    else:
        m = _OLD.search(ln)
        if m:
            facts["oom.gpu_index"] = int(m.group(1))
            facts["oom.capacity_bytes"] = _bytes(m.group(2), m.group(3))
            facts["oom.free_bytes"] = _bytes(m.group(6), m.group(7))
    m = _RESERVED_NEW.search(ln)
    if m:
        facts["oom.reserved_bytes"] = _bytes(m.group(1), m.group(2)) + _bytes(m.group(3), m.group(4))
    else:
        m = _RESERVED_OLD.search(ln)
        old, cached = _OLD.search(ln), _CACHED_OLD.search(ln)
        if m:
            facts["oom.reserved_bytes"] = _bytes(m.group(1), m.group(2))
        elif old and cached:
            facts["oom.reserved_bytes"] = _bytes(old.group(4), old.group(5)) + _bytes(cached.group(1), cached.group(2))
    if "oom.free_bytes" in facts and "oom.capacity_bytes" in facts and facts["oom.free_bytes"] > facts["oom.capacity_bytes"]:
        del facts["oom.free_bytes"]   # more free than the GPU has: a wrapped-around figure, not a measurement
    cap, free, held = facts.get("oom.capacity_bytes"), facts.get("oom.free_bytes"), facts.get("oom.reserved_bytes")
    this = _THIS.search(ln)
    if this:  # this process's own total, its CUDA/HIP context and libraries included
        held = max(held or 0, _bytes(this.group(1), this.group(2)))
    # the >= 2.1 text without its "this process" part (no NVML process list: ROCm builds, another pid namespace)
    # cannot tell this process's non-PyTorch memory (library workspaces) from anyone else's: left unknown
    if cap and free is not None and held is not None and (this or not _CAPACITY.search(ln)):
        # in use on the GPU but not by this process's allocator: other processes (listed or not - another
        # container's are not), or memory a crashed or zombie process never gave back; also this process's own
        # context (a few hundred MiB), which the thresholds of the entries that read this leave room for
        outside = max(0, cap - free - held)
        facts["oom.outside_torch_bytes"] = outside
        facts["oom.outside_torch_fraction"] = round(outside / cap, 4)
    procs = [(int(p), _bytes(n, u)) for p, n, u in _PROCESS.findall(ln)]
    if procs:
        facts["oom.processes"] = [f"{p}:{b}" for p, b in procs]
    m = _THIS.search(ln)
    if m:
        this = _bytes(m.group(1), m.group(2))
        facts["oom.this_process_bytes"] = this
        # PyTorch writes the failing process as "this process" and every other one NVML lists as
        # "Process N"; without the "this process" part (another pid namespace) the two cannot be told apart
        others = sum(b for _, b in procs)
        facts["oom.other_process_bytes"] = others
        req, free = facts.get("oom.requested_bytes"), facts.get("oom.free_bytes")
        if req is not None and free is not None:
            # had the others not held their memory, the allocation would have fit
            facts["oom.fits_without_others"] = others >= (256 << 20) and free + others >= req
    return facts


def quotes(text: str) -> list[str]:
    """The parts of the last out-of-memory message worth showing one by one, verbatim."""
    lines = _oom_lines(text)
    if not lines:
        return []
    ln = lines[-1]
    out = []
    for rx in (_TRIED, _CAPACITY, _OLD):
        m = rx.search(ln)
        if m:
            out.append(m.group(0))
    m = _THIS.search(ln)
    if m:
        out.append(m.group(0))
    out += [m.group(0) for m in _PROCESS.finditer(ln)][:8]
    return out
