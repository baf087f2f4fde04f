"""What every dump parser returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class ParseResult:
    kind: str                                            # e.g. "rocminfo"
    facts: dict[str, Any] = field(default_factory=dict)  # names from diagnostics.facts.CATALOGUE
    notes: list[str] = field(default_factory=list)       # plain-language remarks: truncated input, unknown format, ...
    errors: list[str] = field(default_factory=list)      # error lines the tool itself printed, verbatim

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "facts": self.facts, "notes": self.notes, "errors": self.errors}


def guarded_parse(kind: str, text: str, fill: "Callable[[str, ParseResult], None]", label: str) -> ParseResult:
    """Run a parser's *fill* into a fresh result; a parser bug keeps the facts found so far and adds a note."""
    res = ParseResult(kind=kind)
    try:
        fill(text, res)
    except Exception as exc:  # never lose the user's input to a parser bug
        res.notes.append(f"the {label} text could not be read to the end ({type(exc).__name__}); facts may be incomplete")
    return res


# --------------------------------------------------------------------------------------------------
# compute processes on the GPUs (nvidia-smi --query-compute-apps, rocm-smi --showpids, amd-smi process)


@dataclass
class GpuProcess:
    pid: int
    name: str
    mem_bytes: int | None        # None: the tool could not say (N/A, UNKNOWN, WDDM)
    gpu: str = ""                # GPU index or UUID as the tool printed it; "" when not said

    def token(self) -> str:
        """'pid:name:bytes' (bytes empty when unknown), the shape of the ``gpu.processes`` fact."""
        name = self.name.replace(":", "_")[:80]
        return f"{self.pid}:{name}:{'' if self.mem_bytes is None else self.mem_bytes}"


def process_facts(procs: list[GpuProcess], own: "Callable[[int], bool] | None" = None) -> dict[str, Any]:
    """Facts for the processes that are not the doctor's own (*own* tells; default: none are)."""
    others = [p for p in procs if not (own and own(p.pid))]
    seen: dict[int, GpuProcess] = {}
    for p in others:  # one process on two GPUs is listed twice: sum its memory, count it once
        if p.pid in seen:
            a = seen[p.pid]
            if p.mem_bytes is not None:
                a.mem_bytes = (a.mem_bytes or 0) + p.mem_bytes
        else:
            seen[p.pid] = GpuProcess(p.pid, p.name, p.mem_bytes, p.gpu)
    ps = list(seen.values())
    return {
        "gpu.processes": [p.token() for p in ps][:50],
        "gpu.other_process_count": len(ps),
        "gpu.other_process_mem_bytes": sum(p.mem_bytes or 0 for p in ps),
    }
