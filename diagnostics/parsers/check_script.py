"""The output of the little check scripts that setup guides tell people to run, read for facts like any dump.

Guides (the Chinese ROCm guide our users follow, AMD's and PyTorch's install pages, app READMEs) end with a
"verify" step, and what people paste back is its output:

    PyTorch version: 2.4.1+rocm6.0          print(f"PyTorch version: {torch.__version__}")
    Is ROCm available? False                print(f"Is ROCm available? {torch.cuda.is_available()}")
    Device name: CPU                        print(f"Device name: {... else 'CPU'}")
    GPU count: 0 / torch.version.hip: 6.0.32830-d62f6a171 / CUDA available: True / torch: 2.5.0+cu121 cuda: True

or an interactive session (``>>> torch.cuda.is_available()`` then ``False``), or ``python -c "import torch;
print(torch.cuda.is_available())"`` then ``False`` (after whatever warnings torch printed).  Every label spelling
maps to one catalogue fact; a value that does not have the fact's shape is ignored, never guessed.  What
``torch.cuda.device_count()`` says sets ``gpu.count`` only when it is above zero (a CPU build of torch counts
zero GPUs on a machine that has some).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..textnorm import clean_log
from .base import Opening, ParseResult
from .hipconfig import GPU_ENV_PREFIXES

MAX_LINES = 20_000
LOOKAHEAD = 12   # lines between ``python -c "...print(X)..."`` and its value (warnings torch printed first)

# label spellings -> fact group; matched case-insensitively on the label before ':', '=' or '?'
_LABELS: list[tuple[str, str]] = [
    ("version", r"(?:py)?torch(?:[ _]version|\.__version__|\s+__version__)?|torch\.version|version of (?:py)?torch"
                r"|(?:py)?torch ?版本(?:号)?"),
    ("hip", r"torch\.version\.hip|(?:rocm/)?hip(?:[ _]version)?|rocm/hip version|torch hip version|rocm version \(torch\)"
            r"|rocm hip version|hip ?版本"),
    ("cuda", r"torch\.version\.cuda|cuda(?:[ _]version)?(?: \(torch\))?|torch cuda version"),
    ("available", r"(?:is )?(?:cuda|rocm|hip|gpu|cuda/rocm|rocm/cuda|cuda/hip|cuda \(rocm\))(?: is)? available"
                  r"|(?:torch\.)?cuda\.is_available\(\)|is_available\(\)|cuda|gpu|rocm|hip|gpu available|gpu acceleration"
                  r"|(?:cuda|rocm|hip|gpu|cuda/rocm|rocm/cuda) ?(?:是否)?可用(?:性)?|是否(?:可用|支持) ?(?:cuda|rocm|gpu)"),
    ("count", r"(?:gpu|device|cuda device|hip device|rocm device)s?(?:[ _]count)?|number of (?:gpus|devices)"
              r"|(?:torch\.)?cuda\.device_count\(\)|device_count\(\)|gpus available"
              r"|(?:gpu|显卡|设备|可用 ?gpu) ?(?:数量|个数|数目)"),
    ("name", r"(?:gpu|device|cuda device|hip device)(?: ?\d)?(?:[ _]name)?|(?:torch\.)?cuda\.get_device_name\(\d?\)"
             r"|get_device_name\(\d?\)|gpu \d|(?:gpu|显卡|设备) ?(?:名称|名字|型号)|设备名|显卡"),
    ("arch", r"(?:torch\.)?cuda\.get_arch_list\(\)|arch(?:itecture)?[ _]list|get_arch_list\(\)"),
    ("gcn", r"gcnarchname|gcn arch(?: name)?"),
]
_LABEL_RX = re.compile(
    r"(?i)(?:^|(?<=[\s,|;]))(?:[✓✔✗✘*•-]\s*)?(" + "|".join(p for _, p in _LABELS) + r")\s*(?::|=|\?)\s*")
_GROUP_RX = [(g, re.compile(p, re.I)) for g, p in _LABELS]
_EXPR_RX = re.compile(
    r"^(?:print\()?\s*(?P<expr>torch\.cuda\.is_available\(\)|torch\.__version__|torch\.version\.hip"
    r"|torch\.version\.cuda|torch\.cuda\.device_count\(\)|torch\.cuda\.get_device_name\(\d?\)"
    r"|(?:pprint\.pp\()?torch\.cuda\.get_arch_list\(\)\)?)\s*\)?\s*$")
_PYC_RX = re.compile(r"python[\d.]*\s+-c\s+.*print\((?P<expr>torch\.cuda\.is_available\(\)|torch\.__version__"
                     r"|torch\.version\.hip|torch\.version\.cuda|torch\.cuda\.device_count\(\))\)")
_EXPR_GROUP = {"torch.cuda.is_available()": "available", "torch.__version__": "version", "torch.version.hip": "hip",
               "torch.version.cuda": "cuda", "torch.cuda.device_count()": "count"}
_TORCH_VERSION = re.compile(r"^v?(\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?(?:\.dev\d+)?(?:\+[\w.]+)?)$")
_HIP_VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?(?:[-.][0-9a-f]+)*$")
_CUDA_VERSION = re.compile(r"^\d{1,2}\.\d{1,2}(?:\.\d+)?$")
_BOOL = {"true": True, "false": False, "yes": True, "no": False}
_NOT_A_NAME = {"cpu", "cuda", "cuda:0", "mps", "none", "n/a", "no gpu", "no cuda", "not available", "hip", "rocm",
               "cpu only", "-", ""}
_GFX = re.compile(r"gfx[0-9a-f]+(?![0-9a-z])")
_SM = re.compile(r"\b(?:sm|compute)_\d+\b")
_ENV_ONLY = ("Collecting environment information", "Is debug build:", "ROCM used to build PyTorch:", "HSA Agents",
             "NVIDIA-SMI", "== hipconfig", "GPU[0]", "Versions of relevant libraries")


def _scalar(v: str) -> str:
    v = v.strip().rstrip(",;|").strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"`":
        v = v[1:-1]
    return v.strip()


def _value(group: str, raw: str) -> tuple[str, Any] | None:
    v = _scalar(raw)
    low = v.lower()
    if group == "version":
        m = _TORCH_VERSION.match(v.split()[0]) if v else None
        return ("torch.version", m.group(1)) if m else None
    if group == "hip":
        return ("torch.hip_version", v) if _HIP_VERSION.match(v) else None
    if group == "cuda":
        return ("torch.cuda_version", v) if _CUDA_VERSION.match(v) else None
    if group == "available":
        word = low.split()[0].rstrip(".!,") if low else ""
        return ("torch.cuda_available", _BOOL[word]) if word in _BOOL else None
    if group == "count":
        return ("torch.device_count", int(v)) if v.isdigit() and len(v) < 4 else None
    if group == "name":
        if low in _NOT_A_NAME or low.startswith(("cuda:", "<", "device(")) or len(v) > 120 or _BOOL.get(low) is not None:
            return None
        if v.isdigit() or "torch." in v or "{" in v:
            return None
        return ("torch.device_names", re.sub(r"\s*\(UUID:.*$", "", v))
    if group in ("arch", "gcn"):
        found = _GFX.findall(v) or _SM.findall(v)
        fact = "torch.arch_list" if group == "arch" else "torch.gcn_arch_names"
        return (fact, list(dict.fromkeys(found))) if found else None
    return None


def _pairs(line: str) -> list[tuple[str, Any]]:
    """(fact, value) for each 'label: value' in one line ('torch: 2.5.0+cu121 cuda: True' holds two).  A label
    that several groups spell ('GPU:' a count or a name, 'cuda:' a version or a flag) takes the first group
    whose value has the right shape."""
    ms = list(_LABEL_RX.finditer(line))
    out = []
    for i, m in enumerate(ms):
        end = ms[i + 1].start() if i + 1 < len(ms) else len(line)
        label, raw = m.group(1), line[m.end():end]
        for group, rx in _GROUP_RX:
            if rx.fullmatch(label):
                got = _value(group, raw)
                if got:
                    out.append((group, got))
                    break
    return out


def detect(text: str) -> float:
    head = text[:200_000]
    if any(marker in head for marker in _ENV_ONLY):
        return 0.0   # collect_env, rocminfo, nvidia-smi, hipconfig, rocm-smi: their own parsers read them
    groups: set[str] = set()
    imported = False
    for line in clean_log(head).split("\n")[:MAX_LINES]:
        s = line.strip().strip("`").strip()   # a line wrapped in inline-code backticks
        if not s or len(s) > 300:
            continue
        if ":" in s or "=" in s or "?" in s:
            for g, _ in _pairs(s):
                groups.add(g)
        if "torch." in s:
            m = _EXPR_RX.match(s) or _PYC_RX.search(s)
            if m:
                groups.add("expr:" + m.group("expr"))
            else:
                c = (_PY_C.search(s) if "-c" in s else None) or _REPL.match(s)
                if c:
                    for e in _ANY_EXPR.findall(c.group("code")):
                        groups.add("expr:" + e)
        if "import torch" in s and ((_PY_C.search(s) if "-c" in s else None) or _REPL.match(s)):
            imported = True
        elif imported and (_MISSING_TORCH.match(s) or _TORCH_IMPORT_FAIL.match(s)):
            groups.add("missing")
    real = {g for g in groups if not g.startswith("expr:") and g != "missing"}
    exprs = sum(1 for g in groups if g.startswith("expr:"))
    if "missing" in groups and not real:
        return 0.5
    if exprs and not real:
        return 0.5 if exprs >= 2 else 0.4
    if len(groups) >= 3 and {"version", "available"} & real:
        return 0.7
    if len(groups) >= 2 and {"version", "available"} & real:
        return 0.6
    return 0.0


OPENING = Opening("check_script", "check script", empty=False)


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


def parse_embedded(text: str) -> ParseResult:
    """Only the unambiguous forms (an expression and the value it printed, ``export NAME=value`` lines, a failed
    ``import torch``): what the registry adds when another tool's output is the main part of a paste (a pasted
    nvidia-smi table followed by ``print(torch.__version__)``).  'Label: value' lines are left to the main parser,
    whose own lines ('CUDA Version: 12.2' in nvidia-smi's header) would otherwise be misread."""
    return OPENING.parse(text, lambda t, r: _parse_into(t, r, labels=False))


def _put(facts: dict[str, Any], fact: str, value: Any) -> None:
    if fact == "torch.device_names":
        names = facts.setdefault(fact, [])
        if value not in names:
            names.append(value)
    elif fact in facts and facts[fact] != value and fact in _ONE_RUN:
        facts.setdefault("_conflict", set()).add(fact)
    else:
        facts.setdefault(fact, value)


# what one run of torch answers: two runs in one paste that answer differently (with and without an override, under
# two masks) leave the fact unknown rather than taking the first
_ONE_RUN = ("torch.cuda_available", "torch.device_count")
_MASKS = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")


# every expression a check prints, in the order it appears in a command line
_ANY_EXPR = re.compile(r"torch\.cuda\.is_available\(\)|torch\.__version__|torch\.version\.hip|torch\.version\.cuda"
                       r"|torch\.cuda\.device_count\(\)|torch\.cuda\.get_device_name\(\d?\)|torch\.cuda\.get_arch_list\(\)")
_PY_C = re.compile(r"(?:^|[\s;&|>$])(?:python[\d.]*|py)(?:\.exe)?\s+(?:-\w+\s+)*-c\s+(?P<code>.+)$")
# a REPL line (the prompt is often gone: the paste normaliser strips '>>> ' and '$ ')
_REPL = re.compile(r"^(?:(?:>>>|In \[\d+\]:)\s*)?(?P<code>(?:import torch|from torch|torch\.|print\(|pprint).*)$")
_PROMPT_CMD = re.compile(r"^(?:>>>|In \[\d+\]:|\$ |# |PS [^>]{0,200}> |[A-Z]:\\[^>]{0,200}> )")
# ``export HIP_VISIBLE_DEVICES=1``, ``set HSA_OVERRIDE_GFX_VERSION=10.3.0``, ``$env:HIP_VISIBLE_DEVICES="0"``,
# an ``env`` listing line, or the assignment before a command (``HIP_VISIBLE_DEVICES=1 python -c ...``)
_ENV_SET = re.compile(r"^(?:\$\s*|>\s*|PS [^>]{0,200}>\s*|[A-Z]:\\[^>]{0,200}>\s*)?(?:export\s+|set\s+|\$env:)?"
                      r"(?P<name>[A-Z][A-Z0-9_]{1,80})\s*=\s*(?P<val>\"[^\"]{0,200}\"|'[^']{0,200}'|[^\s\"'#;&|]{0,200})"
                      r"(?P<rest>.*)$")
# a variable shown rather than set: ``echo $HIP_VISIBLE_DEVICES`` (or ``${...}``, cmd's ``echo %NAME%``, PowerShell's
# ``$env:NAME`` / ``echo $env:NAME``, ``printenv NAME``), its value on the next line
_ENV_SHOW = re.compile(r"^(?:\$\s*|>\s*|PS [^>]{0,200}>\s*|[A-Z]:\\[^>]{0,200}>\s*)?"
                       r"(?:(?:echo|Write-Output)\s+(?:\$\{?(?P<a>[A-Z][A-Z0-9_]{1,80})\}?|%(?P<b>[A-Z][A-Z0-9_]{1,80})%"
                       r"|\$env:(?P<c>[A-Z][A-Z0-9_]{1,80}))|printenv\s+(?P<d>[A-Z][A-Z0-9_]{1,80})"
                       r"|\$env:(?P<e>[A-Z][A-Z0-9_]{1,80}))\s*$")
_ENV_VALUE = re.compile(r"^(?:-?\d|GPU-|MIG-)[\w.,:\-]{0,200}$")   # a value, not the next command's name
_MISSING_TORCH = re.compile(r"^(?:ModuleNotFoundError|ImportError): No module named ['\"]torch['\"]\s*$")
_TORCH_IMPORT_FAIL = re.compile(r"^(?:ImportError|OSError): .{1,500}$")
_PIP_BUILD = ("subprocess-exited-with-error", "egg_info", "pip-build-env", "Getting requirements to build",
              "setup.py", "pip install", "Preparing metadata")
_CODE_LEFT = re.compile(r"import torch|from torch\S* import \S+|pprint\.pp|pprint|print|[();,\s]")
# an exception's line ("RuntimeError: No HIP GPUs are available", "torch.cuda.OutOfMemoryError: ..."), never a value
_EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning|Exit)\b:?")
_CPU_NAME = re.compile(r"(?i)\b(?:ryzen|epyc|threadripper|xeon|athlon|core\(tm\)|intel\(r\)|snapdragon)\b")
_VALUE_OF = {"torch.cuda.is_available()": "available", "torch.__version__": "version", "torch.version.hip": "hip",
             "torch.version.cuda": "cuda", "torch.cuda.device_count()": "count"}


def _group_of(expr: str) -> str | None:
    if "get_arch_list" in expr:
        return "arch"
    if "get_device_name" in expr:
        return "name"
    return _VALUE_OF.get(expr)


def _prints(code: str) -> list[list[str]]:
    """For one command line, the groups each pure print (or REPL expression) shows, in order: ``print(a, b)`` gives
    one output line 'A B'; a print that also shows strings ('CUDA:', x) is left to the label reader."""
    out: list[list[str]] = []
    parts = code.split("print(")
    if len(parts) == 1:  # a REPL expression (or pprint of one)
        body = code.strip().rstrip(";").strip()
        if body.startswith("pprint.pp(") or body.startswith("pprint("):
            body = body[body.index("(") + 1:]
        exprs = _ANY_EXPR.findall(body)
        rest = _ANY_EXPR.sub("", body).replace(")", "").strip()
        if len(exprs) == 1 and not rest:
            g = _group_of(exprs[0])
            if g:
                out.append([g])
        return out
    for part in parts[1:]:
        exprs = _ANY_EXPR.findall(part)
        if not exprs:
            continue
        args = part
        depth, cut = 1, len(part)
        for k, ch in enumerate(part):   # the print's own closing parenthesis
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    cut = k
                    break
        args = part[:cut]
        exprs = _ANY_EXPR.findall(args)
        rest = _ANY_EXPR.sub("", args).replace(",", "").strip()
        groups = [_group_of(e) for e in exprs]
        if exprs and not rest and all(groups):
            out.append([g for g in groups if g])
        else:
            out.append([])   # a labelled print: its output line is read by the label reader
    return out


def _bare_value(group: str, token: str) -> tuple[str, Any] | None:
    """A value as print() or the REPL shows it ('2.4.1+rocm6.1', True, '6.1.40091-a8dbc0c19', 'AMD Radeon ...')."""
    v = token.strip()
    if group in ("hip", "cuda") and v == "None":
        return ("_none", group)
    if group == "name":
        v = _scalar(v)
        if not v or _CPU_NAME.search(v) or v.startswith(("hipError", "cudaError", "Traceback")) or _EXC_LINE.match(v):
            return None   # the print never ran: the line is the exception that stopped it
    return _value(group, v)


def _output_line(line: str) -> bool:
    s = line.strip()
    return bool(s) and not _PROMPT_CMD.match(s) and "Warning" not in s and not s.startswith(("File ", "return "))


def _read_outputs(lines: list[str], i: int, expected: list[list[str]], facts: dict[str, Any]) -> None:
    """Assign the lines after a command (from index *i*) to the prints it made, in order."""
    k = 0
    for j in range(i, min(len(lines), i + LOOKAHEAD + 4 * len(expected))):
        if k >= len(expected):
            return
        raw = lines[j].strip().strip("`").strip()
        if not raw:
            continue
        if _PROMPT_CMD.match(raw) or ("-c" in raw and _PY_C.search(raw)) or (
                raw.startswith(("torch.", "print(", "import ", "pprint")) and not _CODE_LEFT.sub("", _ANY_EXPR.sub("", raw))):
            return   # the next command (its prompt may be gone): what is left printed nothing we can read
        if raw.lstrip("\"'").startswith("hipError"):
            facts["_hip_error"] = True   # torch imported and its HIP runtime answered: a ROCm build
            return
        if raw.startswith(("Traceback", "Aborted", "Segmentation fault")):
            return
        if not _output_line(raw) or len(raw) > 400:
            continue
        groups = expected[k]
        if not groups:       # a labelled print: one line, read by the label reader
            k += 1
            continue
        if len(groups) == 1:
            val = raw
            if groups[0] == "arch" and val.startswith("[") and "]" not in val:
                stop = j
                while stop + 1 < len(lines) and "]" not in lines[stop] and stop - j < 64:
                    stop += 1
                val = " ".join(x.strip() for x in lines[j:stop + 1])
            got = _bare_value(groups[0], val)
            if got is None:
                continue     # a warning or a log line in between
            _put_value(facts, got)
            k += 1
            continue
        tokens = raw.split()
        if groups[-1] == "name" and len(tokens) > len(groups):
            tokens = tokens[:len(groups) - 1] + [" ".join(tokens[len(groups) - 1:])]
        if len(tokens) != len(groups):
            continue
        got = [_bare_value(g, t) for g, t in zip(groups, tokens)]
        if all(got):
            for x in got:
                _put_value(facts, x)
            k += 1


def _put_value(facts: dict[str, Any], got: tuple[str, Any]) -> None:
    if got[0] == "_none":
        facts.setdefault("_none", set()).add(got[1])
    else:
        _put(facts, *got)


@dataclass
class _EnvSeen:
    """The GPU variables a paste sets: every value each one got, and for how many commands."""
    values: dict[str, set[str]] = field(default_factory=dict)
    inline: dict[str, int] = field(default_factory=dict)     # NAME=value before a command: how many commands it was set for
    exported: set[str] = field(default_factory=set)


@dataclass
class _Scan:
    facts: dict[str, Any] = field(default_factory=dict)
    env: _EnvSeen = field(default_factory=_EnvSeen)
    n_cmds: int = 0
    torch_missing: str | None = None
    torch_import_error: str | None = None
    last_cmd: int = -10 ** 9          # index of the last line that imported torch (python -c or the REPL)


def _parse_into(text: str, res: ParseResult, labels: bool = True) -> None:
    lines = clean_log(text).split("\n")[:MAX_LINES]
    sc = _Scan()
    facts = sc.facts
    after_frame = False
    for i, line in enumerate(lines):
        s = line.strip().strip("`").strip()   # a line wrapped in inline-code backticks
        if not s or len(s) > 2000:
            after_frame = False
            continue
        if after_frame:           # the source line under 'File "...", line N' is code, not output
            after_frame = False
            if line[:1] in " \t":
                continue
        if s.startswith('File "') and ", line " in s:
            after_frame = True
            continue
        if "=" in s:
            _env_line(s, sc.env)
        elif "$" in s or "%" in s or "printenv" in s:
            _env_shown(lines, i, s, sc.env)
        if _code_line(lines, i, s, sc):
            continue
        pkg = _package_line(lines, i, s) if "torch" in s[:12] else None
        if pkg:
            _put(facts, "torch.version", pkg[0])
            if pkg[1]:
                _put(facts, "torch.build", pkg[1])
            continue
        if _MISSING_TORCH.match(s) and i - sc.last_cmd <= LOOKAHEAD:
            window = "\n".join(lines[max(0, sc.last_cmd - 2):i])
            if not any(mark in window for mark in _PIP_BUILD):
                sc.torch_missing = s
            continue
        if sc.torch_import_error is None and i - sc.last_cmd <= LOOKAHEAD and _TORCH_IMPORT_FAIL.match(s) \
                and "No module named" not in s:
            sc.torch_import_error = s
        if labels and (":" in s or "=" in s or "?" in s):
            for _, got in _pairs(s):
                if got[0] == "torch.device_names" and _CPU_NAME.search(str(got[1])):
                    continue
                _put(facts, *got)
    _env_facts(sc, res)
    for fact in sorted(facts.pop("_conflict", set())):
        res.notes.append(f"the paste holds runs that disagree on {fact}; it is left unknown")
        facts.pop(fact, None)
    nones = facts.pop("_none", set())
    if facts.pop("_hip_error", False):
        facts.setdefault("torch.build", "rocm")
    _torch_status(sc, res)
    if not facts and not nones:
        res.notes.append("no check-script values recognised (torch version, is_available, device count or name)")
        return
    _derive(facts, nones)
    env_names = sorted(k[4:] for k in facts if k.startswith("env."))
    if env_names:
        facts["env.set_names"] = env_names
    res.facts.update(facts)


def _env_line(s: str, env: _EnvSeen) -> None:
    """``export NAME=value``, ``NAME=value`` before a command (``A=1 B=2 python ...``), an ``env`` listing line."""
    m = _ENV_SET.match(s)
    if not m or not m.group("name").startswith(GPU_ENV_PREFIXES):
        return
    rest = m.group("rest").strip()
    if not (not rest or rest.startswith(("#", ";", "&&", "python", "py ", "./", "bash", "sh ", "HIP_", "HSA_",
                                         "ROCR_", "CUDA_", "AMD_", "PYTORCH_")) or _ENV_SET.match(rest)):
        return
    val = _scalar(m.group("val"))
    env.values.setdefault(m.group("name"), set()).add(val)
    names = [m.group("name")]
    # more assignments before the same command (A=1 B=2 python ...)
    for _ in range(16):       # at most 16 more (bounded work on a pathological line)
        if not rest or not _ENV_SET.match(rest):
            break
        m2 = _ENV_SET.match(rest)
        if not m2.group("name").startswith(GPU_ENV_PREFIXES):
            break
        env.values.setdefault(m2.group("name"), set()).add(_scalar(m2.group("val")))
        names.append(m2.group("name"))
        rest = m2.group("rest").strip()
    if rest.startswith(("python", "py ", "./", "bash", "sh ")):   # for this one command only
        for n in names:
            env.inline[n] = env.inline.get(n, 0) + 1
    else:
        env.exported.update(names)


def _env_shown(lines: list[str], i: int, s: str, env: _EnvSeen) -> None:
    """``echo $HIP_VISIBLE_DEVICES`` and the value printed under it (an empty line under it says nothing: an unset
    and an empty variable print the same)."""
    m = _ENV_SHOW.match(s)
    if not m:
        return
    name = next(g for g in m.groups() if g)
    value = lines[i + 1].strip() if i + 1 < len(lines) else ""
    if not name.startswith(GPU_ENV_PREFIXES) or not _ENV_VALUE.match(value) or value == f"%{name}%":
        return   # cmd echoes %NAME% itself when it is unset
    env.values.setdefault(name, set()).add(value)
    env.exported.add(name)


def _code_line(lines: list[str], i: int, s: str, sc: _Scan) -> bool:
    """A ``python -c`` command or a REPL line: the values its prints showed are read from the lines after it.
    True when *s* was one."""
    cmd = _PY_C.search(s) if "-c" in s else None
    repl = _REPL.match(s) if cmd is None else None
    if repl and not s.startswith((">>>", "In [")) and _CODE_LEFT.sub("", _ANY_EXPR.sub("", s)):
        repl = None           # 'torch.version.cuda: 12.1' is a label line, not a line of code
    code = cmd.group("code") if cmd else repl.group("code") if repl else None
    if code is None:
        return False
    if cmd is not None:
        sc.n_cmds += 1
    if "import torch" in code:
        sc.last_cmd = i
    if "torch." in code:
        expected = _prints(code)[:8]
        if any(expected):
            _read_outputs(lines, i + 1, expected, sc.facts)
    return True


def _env_facts(sc: _Scan, res: ParseResult) -> None:
    env = sc.env
    for name, values in env.values.items():
        if name in env.inline and name not in env.exported and env.inline[name] < sc.n_cmds:
            res.notes.append(f"{name} is set for some of the commands in this paste only; it is left unknown")
        elif len(values) == 1:
            sc.facts[f"env.{name}"] = next(iter(values))
        else:
            res.notes.append(f"{name} is set to different values in this paste ({', '.join(sorted(values))}); "
                             "it is left unknown")


# a package manager's line for torch: ``pip freeze`` (``torch==2.7.0+rocm6.3``), ``pip list`` (``torch   2.7.0+rocm6.3``,
# maybe a location column after it), ``conda list`` (``pytorch  2.3.1  py3.11_cuda12.1_cudnn8.9.2_0  pytorch``); the
# line holds nothing else, so a sentence that names a version is not read
_PKG_LINE = re.compile(r"^(?:py)?torch(?:==|\s+)(?P<v>\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?(?:\.dev\d+)?(?:\+[\w.]+)?)"
                       r"(?:\s+(?P<build>\S+))?(?:\s+\S+){0,2}$")
_CONDA_BUILD = re.compile(r"(?i)(?:^|_)(rocm|cuda|cpu)")


def _package_line(lines: list[str], i: int, s: str) -> tuple[str, str | None] | None:
    """(torch's version, the build a conda build string names) from a package listing's line, or from ``pip show
    torch`` (``Name: torch`` then ``Version: ...``)."""
    m = _PKG_LINE.match(s)
    if m:
        b = _CONDA_BUILD.search(m.group("build") or "") if s.startswith("pytorch") else None
        return m.group("v"), (b.group(1).lower() if b else None)
    if s in ("Name: torch", "Name: pytorch") and i + 1 < len(lines):
        nxt = lines[i + 1].strip()
        v = _TORCH_VERSION.match(nxt[8:].strip()) if nxt.startswith("Version:") else None
        if v:
            return v.group(1), None
    return None


def _torch_status(sc: _Scan, res: ParseResult) -> None:
    """A failed ``import torch``: not installed, or installed and broken (only when no torch value was read)."""
    facts = sc.facts
    torch_seen = any(k.startswith("torch.") for k in facts)
    if sc.torch_missing and not torch_seen:
        facts["torch.installed"] = False
        res.errors.append(sc.torch_missing)
    elif sc.torch_import_error and not torch_seen:
        facts["torch.installed"] = True
        facts["torch.import_error"] = sc.torch_import_error
        res.errors.append(sc.torch_import_error)


def _derive(facts: dict[str, Any], nones: set[str] = frozenset()) -> None:
    ver = facts.get("torch.version")
    if isinstance(ver, str) and "+" in ver:
        local = ver.split("+", 1)[1].lower()
        build = "rocm" if local.startswith("rocm") else "cuda" if local.startswith("cu") else \
            "cpu" if local.startswith("cpu") else None
        if build:
            facts.setdefault("torch.build", build)
    if "torch.build" not in facts:
        if "hip" in nones and "cuda" in nones:
            facts["torch.build"] = "cpu"      # torch.version.hip and torch.version.cuda both None
        elif facts.get("torch.hip_version"):
            facts["torch.build"] = "rocm"
        elif facts.get("torch.cuda_version"):
            facts["torch.build"] = "cuda"
    if any(k.startswith("torch.") for k in facts):
        facts.setdefault("torch.installed", True)
    n = facts.get("torch.device_count")
    names = facts.get("torch.device_names") or []
    if isinstance(n, int) and n > 0 and not any(f"env.{m}" in facts for m in _MASKS) and len(names) <= n:
        # (more names than devices: several runs of torch in one paste, each seeing another GPU)
        # (under a visible-devices mask torch counts what the mask lets through, not the GPUs the machine has)
        facts.setdefault("gpu.count", n)
    names = facts.get("torch.device_names")
    if names:
        facts.setdefault("gpu.names", list(names))
        vendors = []
        joined = " ".join(names).lower()
        if re.search(r"\b(amd|radeon|instinct)\b", joined):
            vendors.append("amd")
        if re.search(r"\b(nvidia|geforce|rtx|gtx|quadro|tesla)\b", joined):
            vendors.append("nvidia")
        if vendors:
            facts.setdefault("gpu.vendors", vendors)
    gcn = facts.get("torch.gcn_arch_names")
    if gcn and "gpu.gfx_targets" not in facts:
        facts["gpu.gfx_targets"] = [g for g in gcn if g.startswith("gfx")]
