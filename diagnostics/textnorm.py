"""The one normaliser for text that people paste and tools print (issue 17: one home for ANSI stripping).

Everything here is a leaf (standard library only): the matcher, the dump parsers and the probes (in their child
processes) all use it.  Every step is one linear pass; nothing holds more than one extra copy of the text, and
the wrapped-line appendix is bounded by the size of the text.

* :func:`strip_ansi` - terminal colour and control sequences (CSI ``ESC [ ... m``, OSC ``ESC ] ... BEL``, two-byte
  escapes), and the ``[31m`` remnants a forum leaves when it ate the ESC byte.
* :func:`clean_log` - what the matcher scans: the above, NULs and stray control characters out, carriage-return
  progress redraws as lines, full-width punctuation (``：，（）``; a colon or comma before a word with its space),
  typographic quotes and the em dash smart punctuation makes of ``--`` as ASCII, and the line prefixes that logging
  layers put in front of a tool's own words (journald/syslog ``Mar 03 12:00:01 host kernel: ``, the kernel's
  ``[  123.456789] ``, docker/k8s ``2024-05-01T12:00:00.123456789Z [stdout F] ``,
  Python-logging / Windows ``2024-05-01 12:00:00,123 `` timestamps, ``>>> ``/``$ `` prompts, ``> `` quotes)
  removed, so a signature anchored at the start of the tool's line still matches.
* :func:`html_text` (part of :func:`clean_log`) - a paste taken from a page's HTML: entities (``&quot;``, ``&apos;``)
  decoded, inline formatting tags (``<b>``, ``<code>``) dropped, ``<br>`` as a line break.
* :func:`c_locale_words` (part of :func:`clean_log`) - system messages printed in a Chinese or Japanese locale
  (``段错误 (核心已转储)``, ``权限不够``, ``已杀死``, Windows' ``找不到指定的模块``, the loader's ``无法打开共享对象文件``,
  apt's ``没有 Release 文件``) back to the C-locale words (``Segmentation fault (core dumped)``, ``Permission denied``,
  ``Killed``, ``cannot open shared object file``, ...) the KB's signatures use.
* :func:`escaped_readings` - an appendix of the lines that hold a log as a quoted string (docker's json-file
  ``{"log":"...\\n"}``, a JSON answer, a Python repr of captured stderr: line breaks written ``\\n``) decoded into
  their lines, and of the lines a Markdown source escaped (``HSA\\_OVERRIDE\\_GFX\\_VERSION``) unescaped; scanned
  like the wrapped runs, after the text itself.
* :func:`joined_wraps` - an appendix of hard-wrapped runs of lines joined back into one line (a long error cut at a
  fixed terminal width, or word-wrapped by a forum or mail client), scanned after the text itself so a signature
  that spans the wrap still matches.
"""
from __future__ import annotations

import html
import re
from collections import Counter

# CSI (ESC [ params intermediates final), OSC (ESC ] ... BEL or ESC \), charset designations (ESC ( B), and the
# other two-byte escapes
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]{0,4096}(?:\x07|\x1b\\)|[()*+][0-9A-Za-z]|[@-Z\\-_])")
# what is left when a web page dropped the ESC byte: "[31mERROR[0m", "[1;33m"
_ANSI_REMNANT = re.compile(r"\[(?:\d{1,3};){0,4}\d{1,3}m")
# C0 controls other than tab/newline/CR/ESC, and DEL
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")

# full-width ASCII (U+FF01..U+FF5E) -> ASCII, ideographic space, no-break spaces, zero-width characters,
# typographic quotes; Chinese logs and forum posts write "错误：", "（gfx1030）", “quotes”
_FOLD = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)}
_FOLD.update({0x3000: " ", 0x00A0: " ", 0x202F: " ", 0x2007: " ", 0x200B: None, 0x200C: None, 0x200D: None,
              0xFEFF: None, 0x2018: "'", 0x2019: "'", 0x201C: '"', 0x201D: '"', 0x3001: ",", 0x3002: ". ",
              0x2014: "--"})   # an em dash is what smart punctuation (chat, word processors) makes of "--"
_FOLD_TABLE = str.maketrans({k: (chr(v) if isinstance(v, int) else v) for k, v in _FOLD.items()})
_NEEDS_FOLD = re.compile("[\uff01-\uff5e\u3000\u00a0\u202f\u2007\u200b-\u200d\ufeff\u2018\u2019\u201c\u201d\u3001\u3002\u2014]")

# Line prefixes added by the layers between a tool and the paste.  Each alternative is anchored and bounded (no
# nested unbounded repetition), and at most four are removed from one line, so the pass stays linear.
_MON = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec|\d{1,2}月)"   # journald in a zh_CN locale: "2月 02"
# the program of a syslog line: "ollama[1234]" or the kernel; a bare word is not taken ("PyTorch version: ...")
_PROG = r"(?:[\w./@-]{1,64}\[\d{1,10}\]|kernel)"
_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)"
# docker compose's "svc-1  | " (tried only where it can be), and a service with its own container_name
# ("comfyui-rocm  | ", YanWenKun/ComfyUI-Docker#122): a name with a dash or underscore and at least two spaces of
# padding, so that a table row ("GPU  | Temp", "| 0 | MI300X |") keeps its first cell
_COMPOSE = r"(?:[\w.-]{1,64}[-_]\d{1,3} {1,32}|[A-Za-z][\w.]{0,30}[-_][\w.-]{1,32} {2,32})\| "
_PREFIX_ALTS = (
    # ISO timestamps: rsyslog high-precision "2024-05-01T12:00:00.123456+00:00 host kernel: " and docker logs -t /
    # kubectl --timestamps / CRI files "2024-05-01T12:00:00.123456789Z stdout F " (one timestamp, then either tail)
    # (and ComfyUI's own log, "2025-10-16T15:00:55.223733 - ", unless a logger name and level follow)
    rf"{_ISO} (?:[\w.-]{{1,64}} {_PROG}: |(?:std(?:out|err) [FP] |- (?![\w.<>-]{{1,64}} - ))?)",
    # journald / syslog: "Mar 03 12:00:01 host kernel: ", "Mar  3 12:00:01 host ollama[1234]: "
    rf"{_MON} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{{1,9}})? [\w.-]{{1,64}} {_PROG}: ",
    # bracketed timestamps (ComfyUI, Windows tools, Python logging): "[2024-05-01 12:00:00.123] ", "[12:00:01] "
    rf"\[(?:{_ISO}|\d\d:\d\d:\d\d(?:[.,]\d{{1,6}})?)\] ?",
    # US/Windows style: "05/01/2024 12:00:00 PM ", "5/1/2024, 12:00:00 "
    r"\[?\d{1,2}/\d{1,2}/\d{4},? \d{1,2}:\d\d:\d\d(?: ?[AP]M)?\]? ",
    # the kernel's own clock: "[  123.456789] " (also after a journald prefix)
    r"\[ {0,12}\d{1,10}\.\d{1,9}\] ?",
    # a logging framework's level after its timestamp: "2024-05-01 12:00:00,123 - app - ERROR - " (the logging
    # cookbook's format), "... INFO ", "[...] [ERROR] "; never "ERROR: " (pip and many tools print that themselves)
    rf"(?<=[\d\]] )(?:- [\w.<>-]{{1,64}} - )?{_LEVEL}(?: - | {{1,4}})",
    rf"\[{_LEVEL}\] ",
    # vLLM: "INFO 12-02 01:02:03 [api_server.py:1021] ", after Ray's / vLLM's process tag "(APIServer pid=123) "
    rf"{_LEVEL} \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{{1,6}})? \[[\w./-]{{1,128}}:\d{{1,6}}\] ",
    r"\([\w.-]{1,64} pid=\d{1,10}(?:, ip=[\d.:a-f]{3,45})?\) ",
    # glog (TensorFlow, XLA, Ray's C++ core): "I1202 01:02:03.123456 12345 file.cc:123] "
    r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} {1,8}\d{1,10} [\w./-]{1,128}:\d{1,6}\] ",
    # SwarmUI: "10:31:55.123 [Debug] [ComfyUI-0/STDERR] " (its clock and level, then the backend's stream)
    r"\d\d:\d\d:\d\d\.\d{3} \[(?:Verbose|Debug|Info|Init|Warning|Error)\] ",
    # SwarmUI's file log puts a date before its clock ("2025-02-16 03:41:50.234 [Warning] [ComfyUI-0/STDERR] "):
    # its level in brackets is taken only before the backend's stream tag
    r"\[(?:Verbose|Debug|Info|Init|Warning|Error)\] (?=\[[\w.-]{1,32}/STD(?:OUT|ERR)\] )",
    r"\[[\w.-]{1,32}/STD(?:OUT|ERR)\] ",
    # SD.Next (rich console): "09:54:19-207675 CRITICAL " (its clock with microseconds after a dash, then the level)
    rf"\d\d:\d\d:\d\d-\d{{6}} {_LEVEL} {{1,8}}",
    # docker compose ("comfyui-1  | ", "ollama_1    | ") and kubectl logs --prefix ("[pod/web-7c9f/app] ")
    _COMPOSE,
    r"\[pod/[\w.-]{1,253}/[\w.-]{1,63}\] ",
    # Buildkite's web log copied: "  | [2025-03-10T15:07:20Z] ERROR ..." (the bar only before a bracketed ISO
    # timestamp, which the next round takes; a table row "| 0 | MI300X |" keeps its bar)
    rf" {{0,4}}\| (?=\[{_ISO}\] )",
    # interactive prompts: ">>> ", "... ", "$ ", "user@host:~/dir$ ", "(venv) $ ", "PS C:\\x> "; "> " quotes
    # (the run of the prompt's characters is taken whole: "$" is not one of them, so giving characters back could
    # never find "$ " and would only cost time on a long word)
    r"(?:\([\w.-]{1,64}\) ?)?(?=([\w.@:~/-]{0,128}))\2\$ ",
    r"(?:>>>|\.\.\.) ",
    r"PS [^>\n]{1,200}> ",
    r">{1,3} ",
)
# No two alternatives can match at the same place (they differ in their first characters or in the character
# after a run both allow; ">>> " is the same either way), so their order is free and the common timestamp comes
# first.  No alternative can match a line break, so the prefixes of one line never reach into the next.  Each
# alternative is anchored and bounded (no nested unbounded repetition), and at most four are removed from one
# line, so the pass stays linear.  _ITER_GUARD is a cheap necessary condition for another prefix (its first
# character, or "$ " after a run of a prompt's characters, taken without backtracking), so the search for a
# second prefix after "2024-05-01 12:00:00 " gives up at once on an ordinary "INFO ..." line.
_ITER_GUARD = r"(?=[\d\[>.(PJFMASONDTIWEC-]|(?=([\w.@:~/-]{0,128}))\1\$ |" + _COMPOSE + r"| {0,4}\| \[\d)"
_PREFIX_BODY = "(?:" + _ITER_GUARD + "(?:" + "|".join(_PREFIX_ALTS) + ")){1,4}"
# a line is only tried when it can start a prefix: its first character, or "$ " among its first 131 characters.
# A line that starts with none of those characters can only start with a prompt, which holds that "$ " itself,
# so the look for "$ " is only made where a digit other than 0-9 starts the line (Python's \d takes any script's);
# likewise "| " for docker compose's "svc-1  | " (a service name may start with such a digit).
_LINE_CAN_START = r"(?=[0-9\[>.(PJFMASONDTIWEC]|(?!\d)|[^\n]{0,129}\$ |[^\n]{0,98}\| )"
_PREFIX_LINE = re.compile(_LINE_CAN_START + _PREFIX_BODY)
# the prefixes of every line but the first: a literal line break first lets the search skip to the next line in C
_PREFIX_AFTER_NL = re.compile("\n" + _LINE_CAN_START + _PREFIX_BODY)

WRAP_MIN = 50           # a line shorter than this is never taken for a wrapped one (unless pushed, below)
WRAP_PUSHED_MIN = 20    # ... or this long, when the next line's first word would not have fitted after it
WRAP_MAX_RUN = 6        # at most this many physical lines are joined into one
WRAP_MAX_LINE = 400     # longer lines were not wrapped by anyone
WORD_SLACK = 15         # a word wrap ends its lines within this many characters of its width
SMALL_PASTE_LINES = 400  # up to this many lines, every long line is a wrap candidate (bounded work anyway)


def strip_ansi(text: str) -> str:
    """Terminal escape sequences out (colour, cursor movement, OSC titles and hyperlinks)."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if ("[0m" in text or "[0;" in text) and _ANSI_REMNANT.search(text):   # remnants come with a reset
        text = _ANSI_REMNANT.sub("", text)
    return text


# a full-width colon or comma carries its own spacing: "错误：CUDA out of memory" is read "错误: CUDA out of memory"
_FW_SPACED = re.compile("([\uff1a\uff0c])(?=[^\s\uff1a\uff0c])")


def fold_punctuation(text: str) -> str:
    """Full-width ASCII forms, ideographic space/comma/full stop and typographic quotes to plain ASCII (a full-width
    colon or comma directly before a word as the ASCII sign and a space)."""
    if text.isascii() or not _NEEDS_FOLD.search(text):
        return text
    if "\uff1a" in text or "\uff0c" in text:
        text = _FW_SPACED.sub(r"\1 ", text)
    return text.translate(_FOLD_TABLE)


# What the C library, the shell and Windows print in a Chinese (or Japanese) locale, back to the C-locale words the
# KB's signatures are written in: "段错误 (核心已转储)" is glibc's strsignal(SIGSEGV) plus bash's "(core dumped)" under
# zh_CN, "权限不够" strerror(EACCES), "已杀死" the shell's report of SIGKILL, "找不到指定的模块" Windows' error 126.
# Literal phrases only (one alternation, linear); the phrases that are also ordinary words ("已放弃", "已杀死") only
# where the shell puts them: before "(core dumped)" or at the end of a line.
_LOCALIZED = {
    " (核心已转储)": " (core dumped)", "(核心已转储)": " (core dumped)", " (コアダンプ)": " (core dumped)",
    "(コアダンプ)": " (core dumped)", "中止 (コアダンプ)": "Aborted (core dumped)",
    "段错误": "Segmentation fault", "セグメンテーション違反です": "Segmentation fault",
    "总线错误": "Bus error", "非法指令": "Illegal instruction",
    "权限不够": "Permission denied", "没有那个文件或目录": "No such file or directory",
    "设备上没有空间": "No space left on device", "无法分配内存": "Cannot allocate memory",
    "未找到命令": "command not found", "不允许的操作": "Operation not permitted",
    "找不到指定的模块": "The specified module could not be found",
    "动态链接库(DLL)初始化例程失败": "A dynamic link library (DLL) initialization routine failed",
    # Windows error 1455 in zh-CN / zh-TW; the full-width comma Windows prints reaches here as ", " (fold_punctuation)
    "页面文件太小,无法完成操作": "The paging file is too small for this operation to complete",
    "页面文件太小, 无法完成操作": "The paging file is too small for this operation to complete",
    "分頁檔太小, 無法完成操作": "The paging file is too small for this operation to complete",
    "分頁檔太小,無法完成操作": "The paging file is too small for this operation to complete",
    # cmd.exe in zh-CN / zh-TW: "'rocminfo' 不是内部或外部命令，也不是可运行的程序\n或批处理文件。"
    "不是内部或外部命令": "is not recognized as an internal or external command",
    "不是內部或外部命令": "is not recognized as an internal or external command",
    # ...and ja-JP ("'node' は、内部コマンドまたは外部コマンド、\n操作可能なプログラム..."; its "、" folded to ",")
    "は,内部コマンドまたは外部コマンド": "is not recognized as an internal or external command",
    "拒绝访问": "Access is denied",                     # Windows error 5, zh-CN ("[WinError 5] 拒绝访问。")
    # the dynamic loader's dlerror() under zh_CN / zh_TW / ja_JP / de_DE: "libcudart.so.11.0: 无法打开共享对象文件: 没有
    # 那个文件或目录" is "libcudart.so.11.0: cannot open shared object file: No such file or directory"
    "无法打开共享对象文件": "cannot open shared object file", "無法開啟共享物件檔案": "cannot open shared object file",
    "共有オブジェクトファイルを開けません": "cannot open shared object file",
    "Kann die Shared-Object-Datei nicht öffnen": "cannot open shared object file",
    # ...and in es_ES, fr_FR (glibc's own translations, as pasted: "libXtst.so.6: no se puede abrir el fichero del
    # objeto compartido: No existe el fichero o el directorio", "libxcb-dri3.so: Ne peut ouvrir le fichier d'objet
    # partagé: Aucun fichier ou dossier de ce type"), with ENOENT/EACCES in es, fr, pt_BR and ko_KR
    "no se puede abrir el fichero del objeto compartido": "cannot open shared object file",
    "Ne peut ouvrir le fichier d'objet partagé": "cannot open shared object file",
    "No existe el fichero o el directorio": "No such file or directory",
    "No existe el archivo o el directorio": "No such file or directory",
    "Aucun fichier ou dossier de ce type": "No such file or directory",
    "Aucun fichier ou dossier de ce nom": "No such file or directory",
    "Arquivo ou diretório inexistente": "No such file or directory",
    "그런 파일이나 디렉터리가 없습니다": "No such file or directory",
    "Permiso denegado": "Permission denied", "Permission non accordée": "Permission denied",
    "Permissão negada": "Permission denied",
    # zh_TW glibc strerror and Windows zh-TW error 126
    "沒有此一檔案或目錄": "No such file or directory", "沒有此檔案或目錄": "No such file or directory",
    "拒絕不符權限的操作": "Permission denied", "找不到指定的模組": "The specified module could not be found",
    # apt under zh_CN: E: 仓库 “https://repo.radeon.com/rocm/apt/6.0 ubuntu Release” 没有 Release 文件。
    "没有 Release 文件": "does not have a Release file",
    # the same glibc/bash messages in the other locales people paste from most (ja_JP, de_DE, ru_RU)
    "許可がありません": "Permission denied", "そのようなファイルやディレクトリはありません": "No such file or directory",
    "Speicherzugriffsfehler": "Segmentation fault", " (Speicherabzug geschrieben)": " (core dumped)",
    "Keine Berechtigung": "Permission denied", "Datei oder Verzeichnis nicht gefunden": "No such file or directory",
    "Ошибка сегментирования": "Segmentation fault", " (стек памяти сброшен на диск)": " (core dumped)",
    "Отказано в доступе": "Permission denied", "Нет такого файла или каталога": "No such file or directory",
}
_LOCALIZED_AT_END = {"已放弃": "Aborted", "已中止": "Aborted", "已杀死": "Killed", "Abgebrochen": "Aborted",
                     "Getötet": "Killed", "Аварийный останов": "Aborted", "Убито": "Killed"}
_LOCALIZED_RE = re.compile(
    "|".join(re.escape(k) for k in sorted(_LOCALIZED, key=len, reverse=True))
    + "|(?:" + "|".join(re.escape(k) for k in sorted(_LOCALIZED_AT_END, key=len, reverse=True))
    + r")(?= ?\((?:核心已转储|コアダンプ|core dumped|Speicherabzug geschrieben|стек памяти сброшен на диск)\)|[ \t]*$)", re.M)

# A paste copied from a web page's HTML (a mail archive, a forum's source view) keeps entities and inline tags:
# "&quot;hipErrorNoBinaryForGpu...&quot;", "<b>dpkg:</b> error processing package".  Entities are decoded and the
# inline formatting tags dropped (<br> becomes a line break); "<module>" and "<string>" in tracebacks are left alone.
_ENTITY = re.compile(r"&(?:#\d{1,7}|#x[0-9a-fA-F]{1,6}|quot|apos|amp|lt|gt|nbsp);")
_HTML_TAG = re.compile(r"</?(?:b|i|u|em|strong|code|tt|kbd|pre|span|div|p|font|samp)(?:\s[^<>\n]{0,200})?>|<br\s{0,3}/?>", re.I)


def html_text(text: str) -> str:
    """Entities decoded and inline formatting tags removed, only when the text shows them (linear)."""
    if "&" in text and _ENTITY.search(text):
        text = html.unescape(text)
    if "<" in text and _HTML_TAG.search(text):
        text = _HTML_TAG.sub(lambda m: "\n" if m.group(0)[1:3].lower() == "br" else "", text)
    return text


_ASCII_HINTS = ("Speicher", "Keine Berechtigung", "Datei oder Verzeichnis", "Abgebrochen",     # the all-ASCII keys
                "objeto compartido", "No existe el", "Aucun fichier ou", "Permiso denegado")


def c_locale_words(text: str) -> str:
    """Localised system messages (glibc, bash, apt, Windows in zh_CN, zh_TW, ja_JP, de_DE, ru_RU and the loader's
    and strerror's words in es, fr, pt_BR, ko_KR) as the C locale prints them."""
    if text.isascii() and not any(k in text for k in _ASCII_HINTS):
        return text
    return _LOCALIZED_RE.sub(lambda m: _LOCALIZED.get(m.group(0)) or _LOCALIZED_AT_END[m.group(0)], text)


def strip_prefixes(text: str) -> str:
    """Remove logging-layer prefixes at the start of every line (see the module docstring).  One regex
    substitution over the text: the search runs from line break to line break in C, and only lines that can
    start a prefix are tried (one anchored match each); no list of lines is built, and a text without a prefix is
    returned as it is (the same object)."""
    m = _PREFIX_LINE.match(text)
    first = m.end() if m else 0
    out = _PREFIX_AFTER_NL.sub("\n", text)
    return out[first:] if first else out


# A line that quotes a log as a string: every backslash in it starts a JSON / Python string escape, and one of them
# is a line break.  A Windows path ("torch\\nn\\modules", "C:\\Users\\me") has backslashes before other letters
# and is left alone; so is a line of a Markdown source whose backslashes all escape punctuation, unless one of them
# escapes "_" or "*" (what editors escape in identifiers: "HSA\\_OVERRIDE\\_GFX\\_VERSION", "\\*\\*kwargs").
_STRING_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|[nrt\"\\/bf'])")
_STRING_CHARS = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "/": "/", "b": "", "f": "", "'": "'"}
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")   # CommonMark: a backslash before any ASCII punctuation


def _unquote(m: re.Match[str]) -> str:
    e = m.group(0)[1:]
    return chr(int(e[1:], 16)) if e[0] == "u" else _STRING_CHARS[e]


def _decode(quoted: str) -> str:
    """The string escapes of *quoted* (every backslash starts one) decoded; without \\u escapes by str.replace."""
    if "\\u" in quoted:
        return _STRING_ESCAPE.sub(_unquote, quoted)
    out = quoted.replace("\\\\", "\x00")      # an escaped backslash first, so "\\\\n" stays a backslash and an n
    for esc, ch in _STRING_CHARS.items():
        if esc != "\\":
            out = out.replace("\\" + esc, ch)
    return out.replace("\x00", "\\")


# docker's json-file log driver: one record a line, the line the container wrote (with its "\\n") in "log"
_DOCKER_RECORD = re.compile(r'^\{"log": ?"(.*)\\n", ?"stream": ?"std(?:out|err)"(?:, ?"time": ?"[^"\\]{0,64}")?\}$')


def _line_reading(line: str) -> str | None:
    """The text *line* stands for, when it is a quoted string or Markdown-escaped (None: it is what it says)."""
    if "\\" not in line:
        return None
    reading = None
    # a string with a line break in it, or a logfmt value with quotes in it (ollama, dockerd, containerd:
    # msg="... could not select device driver \"\" with capabilities: [[gpu]]")
    if ("\\n" in line or '\\"' in line) and "\\" not in _STRING_ESCAPE.sub("", line):
        record = _DOCKER_RECORD.match(line) if line.startswith('{"log":') else None
        reading = _clean(_decode(record.group(1) if record else line))
    elif ("\\_" in line or "\\*" in line) and "\\" not in _MD_ESCAPE.sub("", line):
        reading = _MD_ESCAPE.sub(r"\1", line)
    return reading if reading is not None and reading != line else None


def unescaped(text: str) -> str:
    """*text* with every line that :func:`escaped_readings` reads otherwise replaced by that reading: what the dump
    parsers read (a rocminfo inside docker's json-file log is a rocminfo).  Text without a backslash is returned
    as it is (the same object)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    done = 0
    for _n, start, end in _lines_with_backslash(text):
        reading = _line_reading(text[start:end])
        if reading is not None:
            out += [text[done:start], reading]
            done = end
    return "".join(out) + text[done:] if out else text


def escaped_readings(text: str, max_chars: int | None = None) -> tuple[str, list[int]]:
    """Other readings of the lines that hold escapes: ``(appendix, line_numbers)``, one line number (1-based, of
    the line read) per appendix line.  A line that quotes a log as a string (every backslash an escape, one of
    them ``\\n``) is decoded and normalised like any text, each of its lines in the appendix; a line whose
    backslashes all escape punctuation, ``\\_`` or ``\\*`` among them, appears unescaped.  Lines without a
    backslash cost nothing; the appendix is never longer than twice *text* (or *max_chars*)."""
    if "\\" not in text:
        return "", []
    limit = 2 * len(text) if max_chars is None else max_chars
    out: list[str] = []
    starts: list[int] = []
    total = 0
    for i, start, end in _lines_with_backslash(text):
        reading = _line_reading(text[start:end])
        if not reading:
            continue
        parts = reading.split("\n")
        total += len(reading) + 1
        if total > limit:
            break
        out.extend(parts)
        starts.extend([i] * len(parts))
    return "\n".join(out), starts


def _lines_with_backslash(text: str):
    """(1-based line number, start, end) of each line of *text* that holds a backslash, found by jumping from one
    backslash to the next: no list of every line (a 64 MB docker log has half a million of them)."""
    pos, lineno, counted = 0, 1, 0
    while True:
        b = text.find("\\", pos)
        if b < 0:
            return
        start = text.rfind("\n", 0, b) + 1
        end = text.find("\n", b)
        end = len(text) if end < 0 else end
        lineno += text.count("\n", counted, start)
        counted = start
        yield lineno, start, end
        pos = end + 1


PIECE = 1 << 20   # large texts are normalised in pieces of about 1 MiB cut at line ends (bounded temporaries)


def pieces(text: str):
    """~1 MiB pieces of *text* cut at line ends (a line longer than that is cut where it must be)."""
    start, n = 0, len(text)
    while start < n:
        end = min(n, start + PIECE)
        if end < n:
            nl = text.rfind("\n", start, end)
            if nl > start:
                end = nl + 1
        yield text[start:end]
        start = end


def clean_log(text: str) -> str:
    """Normalise pasted text for the log scan (one linear pass per step, piece by piece for a large text)."""
    if len(text) > PIECE:
        return "".join(_clean(p) for p in pieces(text))
    return _clean(text)


def clean_log_wraps(text: str) -> tuple[str, list[int] | None]:
    """``clean_log(text)``, and the lengths :func:`joined_wraps` should judge its lines by (None: their own).

    A wrapper (a forum, a mail client, a terminal) cut the lines as they were pasted, prefix and all; once a
    timestamp or a journald/docker tag is stripped, the first line of a wrapped run looks shorter than the wrap
    width and would not be joined to its continuation ("[    3.57] amdgpu 0000:04:00.0: Direct firmware load for" /
    "amdgpu/psp_13_0_8_toc.bin failed with error -2").  Such a line (a prefix stripped, the next line without one)
    keeps its pasted length.  A text of more than one piece keeps the plain lengths."""
    if len(text) > PIECE:
        return clean_log(text), None
    pre = _clean_before_prefixes(text)
    post = _clean_after_prefixes(strip_prefixes(pre))
    if "\n" not in post or len(post) == len(pre):
        return post, None
    a, b = pre.split("\n"), post.split("\n")
    if len(a) != len(b):
        return post, None
    lengths: list[int] | None = None
    for i in range(len(b) - 1):
        if len(a[i]) > len(b[i]) and a[i + 1] == b[i + 1] and b[i + 1].strip():
            if lengths is None:
                lengths = [len(x) for x in b]
            lengths[i] = len(a[i])
    return post, lengths


def _clean(text: str) -> str:
    return _clean_after_prefixes(strip_prefixes(_clean_before_prefixes(text)))


def _clean_before_prefixes(text: str) -> str:
    text = strip_ansi(text)
    if "\r" in text:
        # a progress bar redraws its line with CR: each redraw becomes a line of its own (nothing is lost)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _CONTROLS.search(text):
        text = _CONTROLS.sub("", text)
    text = html_text(text)
    text = fold_punctuation(text)
    return c_locale_words(text)


def _clean_after_prefixes(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (from JSON escapes): RE2 only takes valid UTF-8
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


# the start of a new log record: a wrap never continues into one (a word-wrapped paragraph of prose is not joined
# to the ollama or journal line after it, so that line's own run starts at its beginning)
_RECORD_START = re.compile(r"(?:time=\d{4}-|level=[A-Z]{3,8} |\d{4}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d|\[\s*\d+\.\d+\] |"
                           r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)(?: \d\d-\d\d |:| \[)|"
                           r"Traceback \(most recent call last\))")


def _wrap_shape(lengths: list[int], lines: list[str]) -> tuple[int, int]:
    """``(fixed_width, word_width)`` of a hard-wrapped text, 0 where there is none.

    *fixed_width*: a terminal or ``fold`` cut every long line at the same column: the most common length of
    50..400 characters, seen at least three times and on at least a tenth of the long lines, and not one line
    repeated (nine in ten of those lines differ).
    *word_width*: a mail client or forum wrapped at word boundaries: the longest line is at most
    :data:`WRAP_MAX_LINE` and at least half of the long lines end within :data:`WORD_SLACK` characters of it.
    An ordinary log (lines of every length, some very long, or a few long lines repeated) has neither, and a long
    one gets no appendix."""
    all_counts = Counter(lengths)
    counts = {n: c for n, c in all_counts.items() if WRAP_MIN <= n <= WRAP_MAX_LINE}
    long_lines = sum(counts.values())
    longest = max(all_counts) if all_counts else 0
    if not counts:
        return 0, 0
    width, c = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    fixed = width if c >= 3 and c * 10 >= long_lines else 0
    if fixed:
        # the pieces of a wrapped text differ; a log line repeated (same length, same words) is no wrap
        distinct = len({x.rstrip() for x, n in zip(lines, lengths) if n == fixed})
        if distinct * 10 < c * 9:
            fixed = 0
    word = 0
    if WRAP_MIN <= longest <= WRAP_MAX_LINE:
        near = {k: v for k, v in counts.items() if k >= longest - WORD_SLACK}
        # wrapped prose ends its lines at many different columns near the width; a log that repeats a few
        # long lines has a few lengths only
        if sum(near.values()) * 2 >= long_lines and len(near) >= WORD_SLACK // 2:
            word = longest
    return fixed, word


def joined_wraps(text: str, max_chars: int | None = None,
                 lengths: list[int] | None = None) -> tuple[str, list[int]]:
    """See :func:`_joined_wraps`; a large text is read piece by piece (a wrap is never longer than a piece).
    *lengths*: the length to judge each line by, where it differs from its own (:func:`clean_log_wraps`)."""
    if len(text) <= PIECE:
        return _joined_wraps(text, max_chars, lengths)
    out, starts, base, total = [], [], 0, 0
    limit = 2 * len(text) if max_chars is None else max_chars
    for piece in pieces(text):
        app, st = _joined_wraps(piece, limit - total)
        if app:
            out.append(app)
            starts.extend(base + x for x in st)
            total += len(app) + 1
        base += piece.count("\n")
        if total >= limit:
            break
    return "\n".join(out), starts


def _joined_wraps(text: str, max_chars: int | None = None,
                  lengths_as_pasted: list[int] | None = None) -> tuple[str, list[int]]:
    """Runs of lines that look hard-wrapped, each joined into one line: ``(appendix, first_line_numbers)``.

    In a short paste (up to :data:`SMALL_PASTE_LINES` lines) every line of :data:`WRAP_MIN` characters or more
    may continue on the next (non-empty) one.  A longer text gets an appendix only when it has the shape of a hard
    wrap (:func:`_wrap_shape`), and then only its lines that reach the wrap width continue.  At the fixed width (a terminal cut the word)
    the pieces are joined as they are; at a word wrap's width with one space, and where a word or token was cut
    (visible characters on both sides of the break) also without it.  Runs hold at most :data:`WRAP_MAX_RUN` lines; each line is in
    the appendix at most twice, so it is never larger than twice *text* (or *max_chars*).  The text itself is
    still scanned as it is: the appendix only adds what a wrap had hidden."""
    if "\n" not in text:
        return "", []
    lines = text.split("\n")
    lengths = list(map(len, lines))
    if lengths_as_pasted is not None and len(lengths_as_pasted) == len(lines):
        lengths = lengths_as_pasted
    fixed, word = _wrap_shape(lengths, lines)
    short = len(lines) <= SMALL_PASTE_LINES
    if short:
        # a short paste (the usual forum post): every long line may continue on the next one, and so may a
        # shorter one whose next line starts with a word too long to have fitted after it (a word wrap moved it)
        # (the width is that of the lines with a space in them: a word wrap leaves a word longer than its width, a
        # URL or a path, on a line of its own, longer than the width)
        width = max((x for x, ln in zip(lengths, lines) if x <= WRAP_MAX_LINE and " " in ln.strip()), default=0) \
            or max((x for x in lengths if x <= WRAP_MAX_LINE), default=0)
        pushed = {k for k in range(len(lines) - 1) if WRAP_PUSHED_MIN <= lengths[k] < WRAP_MIN
                  and lengths[k] + 1 + len(lines[k + 1].split(" ", 1)[0]) > width >= WRAP_MIN}

        def wrapped(k: int) -> bool:
            return WRAP_MIN <= lengths[k] <= WRAP_MAX_LINE or k in pushed
    elif fixed or word:
        def wrapped(k: int) -> bool:
            n = lengths[k]
            return n == fixed or (bool(word) and word - WORD_SLACK <= n <= word)
    else:
        return "", []

    out: list[str] = []
    starts: list[int] = []
    total = 0
    limit = 2 * len(text) if max_chars is None else min(max_chars, 2 * len(text))
    i, n = 0, len(lines)
    while i < n - 1:
        if not wrapped(i) or not lines[i + 1].strip() or _RECORD_START.match(lines[i + 1]):
            i += 1
            continue
        j = i
        head = lines[i] if lengths[i] == fixed else lines[i].rstrip()   # a cut at the width keeps its spaces
        spaced = [head]
        tight = [head]
        ambiguous = False
        while j < n - 1 and len(spaced) < WRAP_MAX_RUN and wrapped(j) and lines[j + 1].strip() \
                and not _RECORD_START.match(lines[j + 1]):
            if lengths[j] == fixed:          # a fixed-width cut: the pieces belong together as they are
                nxt = lines[j + 1] if lengths[j + 1] == fixed else lines[j + 1].rstrip()
                glue = spaced[-1][-1:] + nxt[:1]
                if short and len(glue) == 2 and not glue.isspace() and " " not in glue:
                    # in a short paste three lines of one length may be a word wrap's by chance: both readings
                    spaced.append(("" if spaced[-1].endswith(("-", "/", "_")) else " ") + nxt)
                    ambiguous = True
                else:
                    spaced.append(nxt)
                tight.append(nxt)
            else:                            # a word wrap ate a space, or a terminal cut a word: both readings
                nxt = lines[j + 1].strip()
                spaced[-1] = spaced[-1].rstrip()
                tight[-1] = tight[-1].rstrip()
                glue = spaced[-1][-1:] + nxt[:1]
                # letters on both sides (a cut word), or any two visible characters (a terminal cut a token at its
                # width: "... for option 'gpu-name" / "'" - the quote belongs to the word before it)
                word_cut = len(glue) == 2 and not any(ch.isspace() for ch in glue)
                spaced.append(("" if spaced[-1].endswith(("-", "/", "_")) else " ") + nxt)
                tight.append(nxt)
                ambiguous = ambiguous or word_cut
            j += 1
        variants = ["".join(spaced)] + (["".join(tight)] if ambiguous else [])
        size = sum(len(v) + 1 for v in variants)
        if total + size > limit:
            break
        for v in variants:
            out.append(v)
            starts.append(i + 1)
        total += size
        i = j + 1
    return "\n".join(out), starts
