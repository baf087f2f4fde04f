"""What every dump parser returns, and the small pieces several parsers share: how a parser opens its text (the
empty-input check, the window read from a huge paste, a terminal capture's text), the JSON values of a dump, the
SMI tools' text, build flavours, kernel facts, the SMI GPU record, GPU processes and the log layers."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..textnorm import strip_ansi


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


def empty_input(text: str, res: ParseResult) -> bool:
    """True (with the note every parser gives) when there is nothing to read."""
    if not text or not text.strip():
        res.notes.append("empty input")
        return True
    return False


@dataclass(frozen=True)
class Opening:
    """How a parser opens a text before its own reading, declared once beside its ``parse``: the kind of its result
    and what its notes call the text; a terminal capture (*tool*: ANSI colours and NUL bytes removed, see
    ``tool_text``); empty input noted and nothing read (*empty*); and, where *markers* are given, only the window
    around the first of them read from a huge paste (``read_window`` with *lead* and *what*).  All of it runs inside
    ``guarded_parse``."""
    kind: str
    label: str
    tool: bool = False
    empty: bool = True
    markers: tuple[str, ...] = ()
    lead: int = 0
    what: str = ""

    def parse(self, text: str, fill: "Callable[[str, ParseResult], None]") -> ParseResult:
        return guarded_parse(self.kind, text, lambda t, res: self._open(t, res, fill), self.label)

    def _open(self, text: str, res: ParseResult, fill: "Callable[[str, ParseResult], None]") -> None:
        if self.tool:
            text = tool_text(text)
        if self.empty and empty_input(text, res):
            return
        if self.markers:
            text = read_window(text, res, self.markers, self.lead, self.what)
        fill(text, res)


WINDOW = 2_000_000


def read_window(text: str, res: ParseResult, markers: tuple[str, ...], lead: int, what: str) -> str:
    """A tool's report is a few kB; in a huge paste, read WINDOW characters from *lead* before the first of its
    *markers* (with a note naming *what* was read), line ends folded to ``\\n``."""
    starts = [i for i in (text.find(m) for m in markers) if i >= 0]
    begin = max(0, min(starts) - lead) if starts else 0
    if begin > 0 or len(text) - begin > WINDOW:
        res.notes.append(f"long input: only {WINDOW // 1_000_000} MB around {what} were read")
        text = text[begin:begin + WINDOW]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def json_values(text: str, starts: re.Pattern[str], tries: int = 3) -> Iterator[Any]:
    """The JSON values at the first *tries* places *starts* finds in *text* (each match ends on the value's first
    bracket; SMI tools print warning lines before their JSON), each decoded; a place that does not decode is
    skipped."""
    decoder = json.JSONDecoder()
    for attempt, m in enumerate(starts.finditer(text)):
        if attempt >= tries:
            break
        try:
            value = decoder.raw_decode(text, m.end() - 1)[0]
        except ValueError:
            continue
        yield value


def tool_text(text: Any) -> str:
    """A terminal capture as the SMI / rocminfo parsers read it: a string, ANSI colours and NUL bytes removed."""
    if not isinstance(text, str):
        text = str(text)
    return strip_ansi(text).replace("\x00", "")


def build_flavour(version: str) -> str | None:
    """Build flavour from a local version label: +rocm6.2 -> rocm, +cu121 -> cuda, +cpu -> cpu."""
    _, plus, local = version.partition("+")
    if not plus:
        return None
    local = local.lower()
    if local.startswith("rocm"):
        return "rocm"
    if local.startswith("cu") and len(local) > 2 and local[2].isdigit():
        return "cuda"
    if local.startswith("cpu"):
        return "cpu"
    return None


# Python's platform.platform() on Linux: 'Linux-6.8.0-45-generic-x86_64-with-glibc2.39'
_PLATFORM_KERNEL = re.compile(r"^Linux-(.+?)-(?:x86_64|aarch64|ppc64le|s390x|armv7l|riscv64|i686)(?:-|$)")


def platform_kernel(platform: str) -> str | None:
    """The kernel release in a Python platform string (collect_env's 'OS'/python_platform, transformers-cli env)."""
    m = _PLATFORM_KERNEL.match(platform)
    return m.group(1) if m else None


def kernel_facts(kernel: str, facts: dict[str, Any]) -> None:
    """os.kernel from a kernel release; a WSL kernel ('5.15.153.1-microsoft-standard-WSL2') says where it runs."""
    facts["os.kernel"] = kernel
    if "microsoft" in kernel.lower() and "wsl" in kernel.lower():
        facts["container.kind"] = "wsl"
        facts["container.present"] = True


@dataclass
class SmiGpu:
    """One GPU as rocm-smi or amd-smi lists it (memory in bytes); None where the tool did not say."""
    name: str | None = None
    fallback_name: str | None = None   # rocm-smi's "Device Name" / "Marketing Name", used when "Card series" is absent
    gfx: str | None = None
    total: int | None = None
    used: int | None = None
    free: int | None = None
    driver: str | None = None          # amd-smi's DRIVER: VERSION and OS_KERNEL_VERSION
    kernel: str | None = None


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


# --------------------------------------------------------------------------------------------------
# the layers a log collector puts in front of every line of a tool's output (what textnorm.clean_log leaves):
# docker compose "webui-1  | ", "[stdout] ", a level word after the timestamp ("INFO ", "[INFO] ", "INFO: ")

_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)"
_LAYER = re.compile(
    r"^(?:[\w.-]{1,64}[ \t]{1,12}\|[ \t]?)?"                       # docker compose, first only: "webui-1  | "
    r"(?:"
    r"\[(?:stdout|stderr|out|err)\][ \t]?"                        # "[stdout] "
    # an ISO timestamp, and the stream tag of a CRI log file / kubectl after it ("...Z stdout F ")
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?[ \t]?(?:std(?:out|err) [FP][ \t])?"
    r"|\d\d:\d\d:\d\d(?:[.,]\d{1,6})?[ \t]"
    r"|\[\d\d:\d\d:\d\d(?:[.,]\d{1,6})?\][ \t]?"
    r"){0,3}")
# the logger's level word, once, after the layers above: only taken when most lines carry one (a tool's own
# "WARNING: No AMD GPUs specified" stays)
_LEVEL_LAYER = re.compile(
    rf"(?:[-|][ \t])?(?:{_LEVEL}[ \t]{{0,8}}\|[ \t][\w.<>:-]{{1,200}}[ \t]-[ \t]"       # loguru: "INFO     | mod:fn:12 - "
    rf"|[\w.<>-]{{1,64}}[ \t]-[ \t]{_LEVEL}[ \t]-[ \t]"            # the logging cookbook: "- app - ERROR - "
    rf"|\[?{_LEVEL}\]?(?::|[ \t]{{1,8}}-)?[ \t])")                 # "INFO ", "[INFO] ", "INFO: ", "INFO - "
LAYER_SAMPLE = 4000


def strip_log_layers(text: str) -> str:
    """Remove a log collector's per-line prefix when at least half of the paste's lines carry one (a tool's own
    output never does: rocm-smi's one 'WARNING: ...' line is left alone).  Two anchored, bounded matches a line."""
    if "\n" not in text:
        return text
    lines = text.split("\n")
    sample = [ln for ln in lines[:LAYER_SAMPLE] if ln.strip()]
    if len(sample) < 3:
        return text
    ends = [_LAYER.match(ln).end() for ln in sample]
    strip_layer = sum(1 for e in ends if e) * 2 >= len(sample)
    levels = sum(1 for ln, e in zip(sample, ends) if _LEVEL_LAYER.match(ln, e if strip_layer else 0))
    strip_level = levels * 2 >= len(sample)
    if not strip_layer and not strip_level:
        return text
    out = []
    for ln in lines:
        if ln[:1] in " \t":
            out.append(ln)
            continue
        pos = _LAYER.match(ln).end() if strip_layer else 0
        if strip_level:
            m = _LEVEL_LAYER.match(ln, pos)
            if m:
                pos = m.end()
        out.append(ln[pos:])
    return "\n".join(out)
