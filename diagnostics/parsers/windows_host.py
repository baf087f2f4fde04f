"""What a pasted Windows session says about the machine: that it is Windows, and which display adapters it has.

Windows users asked "which GPU do you have?" paste one of these (guides for ComfyUI, SD.Next, ZLUDA and the HIP SDK
ask for them; AMD's and NVIDIA's support pages too):

    PS C:\\> wmic path win32_VideoController get name          Name / AMD Radeon RX 7800 XT / ...
    PS C:\\> Get-CimInstance Win32_VideoController | Select Name      (also Get-WmiObject, ``| fl Name``: "Name : ...")
    dxdiag's text report                                         "Card name: AMD Radeon RX 6700 XT"

and their prompts (``PS C:\\Users\\me>``, ``C:\\Users\\me>``) or a Python traceback through ``File "C:\\..."`` say the
paste comes from Windows, which is what a bare ``torch.__version__`` needs to be read (PyPI's Windows wheel is a CPU
build: derive._pypi_cpu_only).  Facts: ``os.name`` ("Windows"), ``gpu.names`` and ``gpu.vendors`` from the adapters
of a known vendor (virtual and basic display adapters are left out).  Every form is tied to its tool's own line or
to the command's header, so the reader runs on every paste (the registry's EMBEDDED_ALWAYS).
"""
from __future__ import annotations

import re
from typing import Any

from .base import Opening, ParseResult

MAX_LINES = 20_000

_PS_PROMPT = re.compile(r"^PS [A-Za-z]:\\[^>\n]{0,200}>")
_CMD_PROMPT = re.compile(r"^[A-Za-z]:\\[^>\n]{0,200}>\s*\S")
_WIN_FRAME = re.compile(r'^[ \t]*File "[A-Za-z]:\\[^"\n]{1,300}", line \d+')
# the commands that list the display adapters (wmic; PowerShell's CIM/WMI cmdlets, piped to Select/Format-List)
_ADAPTER_CMD = re.compile(r"(?i)\b(wmic\s+path\s+win32_videocontroller\b|(Get-CimInstance|Get-WmiObject|gcim|gwmi)\s+"
                          r"(-ClassName\s+|-Class\s+)?Win32_VideoController\b)")
_NAME_FL = re.compile(r"^(?:Name|Caption|Description)\s*:\s*(?P<name>\S.{0,120}?)\s*$")
_DXDIAG = re.compile(r"^[ \t]*Card name:[ \t]*(?P<name>\S.{0,120}?)[ \t]*$")
_VENDOR = (
    ("amd", re.compile(r"(?i)\b(AMD|Radeon|ATI|FirePro|Instinct)\b")),
    ("nvidia", re.compile(r"(?i)\b(NVIDIA|GeForce|Quadro|Tesla|RTX|GTX)\b")),
    ("intel", re.compile(r"(?i)\bIntel\b|\bArc\(TM\)|\bIris\b|\bUHD Graphics\b")),
)
# adapters that are no GPU of a vendor: Windows' fallback driver, remote-desktop and virtual displays
_NOT_A_GPU = re.compile(r"(?i)Microsoft Basic (Display|Render)|Remote Display|Virtual (Display|Monitor)|Parsec|"
                        r"Hyper-V|VMware SVGA|VirtualBox|Citrix|Meta Virtual|IddSampleDriver|DisplayLink|Spacedesk")


def _vendor(name: str) -> str | None:
    if _NOT_A_GPU.search(name):
        return None
    found = [v for v, rx in _VENDOR if rx.search(name)]
    return found[0] if len(found) == 1 else None


def _adapters(lines: list[str]) -> list[str]:
    """Adapter names printed after a listing command: wmic's 'Name' column, Select's 'Name / ----' table, or
    Format-List's 'Name : ...' lines, until the next prompt or a blank line after names."""
    names: list[str] = []
    i = 0
    while i < len(lines):
        if not _ADAPTER_CMD.search(lines[i]):
            i += 1
            continue
        i += 1
        got = False
        while i < len(lines):
            s = lines[i].strip()
            if _PS_PROMPT.match(lines[i]) or _CMD_PROMPT.match(lines[i]) or lines[i].lstrip().startswith("$ "):
                break
            i += 1
            if not s:
                if got:
                    break
                continue
            if re.fullmatch(r"(?i)(Name|Caption|Description)|-{3,}", s):
                continue
            m = _NAME_FL.match(s)
            name = m.group("name") if m else s
            if m is None and ":" in s:      # another property of a Format-List block
                continue
            if len(name) <= 120:
                names.append(name)
                got = True
    return names


def _parse_into(text: str, res: ParseResult) -> None:
    lines = text.splitlines()[:MAX_LINES]
    facts: dict[str, Any] = {}
    windows = any(_PS_PROMPT.match(ln) or _CMD_PROMPT.match(ln) or _WIN_FRAME.match(ln) for ln in lines)
    names = _adapters(lines) + [m.group("name") for ln in lines if (m := _DXDIAG.match(ln))]
    gpus = [n for n in dict.fromkeys(names) if _vendor(n)]
    if names:
        windows = True      # wmic, the CIM cmdlets and dxdiag are Windows' own
    if windows:
        facts["os.name"] = "Windows"
    if gpus:
        facts["gpu.names"] = gpus
        facts["gpu.vendors"] = sorted({v for v in (_vendor(n) for n in gpus) if v})
        res.notes.append("display adapters as Windows lists them: " + "; ".join(gpus))
    res.facts.update(facts)


def detect(text: str) -> float:
    head = text[:200_000]
    if _ADAPTER_CMD.search(head) or re.search(r"(?m)^[ \t]*Card name:[ \t]*\S", head):
        return 0.6
    return 0.0


OPENING = Opening("windows_host", "Windows host check", empty=False)


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


parse_embedded = parse   # every form is tied to its tool's own line or command header
