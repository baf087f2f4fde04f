"""The one normaliser for text that people paste and tools print (issue 17: one home for ANSI stripping).

Everything here is a leaf (standard library only): the matcher, the dump parsers and the probes (in their child
processes) all use it.  Every step is one linear pass; nothing holds more than one extra copy of the text, and
the wrapped-line appendix is bounded by the size of the text.

* :func:`strip_ansi` - terminal colour and control sequences (CSI ``ESC [ ... m``, OSC ``ESC ] ... BEL``, two-byte
  escapes), and the ``[31m`` remnants a forum leaves when it ate the ESC byte.
* :func:`clean_log` - what the matcher scans: the above, NULs and stray control characters out, carriage-return
  progress redraws as lines, full-width punctuation (``：，（）``) and typographic quotes as ASCII, and the line
  prefixes that logging layers put in front of a tool's own words (journald/syslog ``Mar 03 12:00:01 host
  kernel: ``, the kernel's ``[  123.456789] ``, docker/k8s ``2024-05-01T12:00:00.123456789Z [stdout F] ``,
  Python-logging / Windows ``2024-05-01 12:00:00,123 `` timestamps, ``>>> ``/``$ `` prompts, ``> `` quotes)
  removed, so a signature anchored at the start of the tool's line still matches.
* :func:`joined_wraps` - an appendix of hard-wrapped runs of lines joined back into one line (a long error cut at a
  fixed terminal width, or word-wrapped by a forum or mail client), scanned after the text itself so a signature
  that spans the wrap still matches.
"""
from __future__ import annotations

import re

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
              0xFEFF: None, 0x2018: "'", 0x2019: "'", 0x201C: '"', 0x201D: '"', 0x3001: ",", 0x3002: ". "})
_FOLD_TABLE = str.maketrans({k: (chr(v) if isinstance(v, int) else v) for k, v in _FOLD.items()})
_NEEDS_FOLD = re.compile("[\uff01-\uff5e\u3000\u00a0\u202f\u2007\u200b-\u200d\ufeff\u2018\u2019\u201c\u201d\u3001\u3002]")

# Line prefixes added by the layers between a tool and the paste.  Each alternative is anchored and bounded (no
# nested unbounded repetition), and at most four are removed from one line, so the pass stays linear.
_MON = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec|\d{1,2}月)"   # journald in a zh_CN locale: "2月 02"
# the program of a syslog line: "ollama[1234]" or the kernel; a bare word is not taken ("PyTorch version: ...")
_PROG = r"(?:[\w./@-]{1,64}\[\d{1,10}\]|kernel)"
_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
_PREFIX = re.compile(
    r"(?m)^(?:"
    # journald / syslog: "Mar 03 12:00:01 host kernel: ", "Mar  3 12:00:01 host ollama[1234]: "
    rf"{_MON} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{{1,9}})? [\w.-]{{1,64}} {_PROG}: "
    # rsyslog high-precision: "2024-05-01T12:00:00.123456+00:00 host kernel: "
    rf"|{_ISO} [\w.-]{{1,64}} {_PROG}: "
    # docker logs -t / kubectl --timestamps / CRI files: "2024-05-01T12:00:00.123456789Z stdout F "
    rf"|{_ISO} (?:std(?:out|err) [FP] )?"
    # bracketed timestamps (ComfyUI, Windows tools, Python logging): "[2024-05-01 12:00:00.123] ", "[12:00:01] "
    rf"|\[(?:{_ISO}|\d\d:\d\d:\d\d(?:[.,]\d{{1,6}})?)\] ?"
    # US/Windows style: "05/01/2024 12:00:00 PM ", "5/1/2024, 12:00:00 "
    r"|\[?\d{1,2}/\d{1,2}/\d{4},? \d{1,2}:\d\d:\d\d(?: ?[AP]M)?\]? "
    # the kernel's own clock: "[  123.456789] " (also after a journald prefix)
    r"|\[ {0,12}\d{1,10}\.\d{1,9}\] ?"
    # interactive prompts: ">>> ", "... ", "$ ", "user@host:~/dir$ ", "(venv) $ ", "PS C:\\x> "; "> " quotes
    r"|(?:\([\w.-]{1,64}\) ?)?[\w.@:~/-]{0,128}\$ "
    r"|(?:>>>|\.\.\.) "
    r"|PS [^>\n]{1,200}> "
    r"|>{1,3} "
    r"){1,4}")
_PREFIX_HINT = re.compile(rf"(?m)^(?:[A-Z][a-z]{{2}} |\d|\[|>|\.\.\. |\(|PS |[\w.@:~/-]{{0,128}}\$ )")

WRAP_MIN = 50           # a line shorter than this is never taken for a wrapped one
WRAP_MAX_RUN = 6        # at most this many physical lines are joined into one
WRAP_MAX_LINE = 400     # longer lines were not wrapped by anyone


def strip_ansi(text: str) -> str:
    """Terminal escape sequences out (colour, cursor movement, OSC titles and hyperlinks)."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "m" in text and "[" in text and _ANSI_REMNANT.search(text):
        text = _ANSI_REMNANT.sub("", text)
    return text


def fold_punctuation(text: str) -> str:
    """Full-width ASCII forms, ideographic space/comma/full stop and typographic quotes to plain ASCII."""
    return text.translate(_FOLD_TABLE) if _NEEDS_FOLD.search(text) else text


def strip_prefixes(text: str) -> str:
    """Remove logging-layer prefixes at the start of every line (see the module docstring)."""
    if not _PREFIX_HINT.search(text):
        return text
    return _PREFIX.sub("", text)


def clean_log(text: str) -> str:
    """Normalise pasted text for the log scan (one linear pass per step)."""
    text = strip_ansi(text)
    if "\r" in text:
        # a progress bar redraws its line with CR: each redraw becomes a line of its own (nothing is lost)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _CONTROLS.search(text):
        text = _CONTROLS.sub("", text)
    text = fold_punctuation(text)
    text = strip_prefixes(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (from JSON escapes): RE2 only takes valid UTF-8
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _wrap_width(lengths: list[int]) -> int:
    """The width a text was hard-wrapped at: the most common line length of 50..400 characters seen at least
    three times and on at least a tenth of the long lines (a terminal's or ``fold``'s fixed width); 0 when none."""
    counts: dict[int, int] = {}
    long_lines = 0
    for n in lengths:
        if WRAP_MIN <= n <= WRAP_MAX_LINE:
            counts[n] = counts.get(n, 0) + 1
            long_lines += 1
    if not counts:
        return 0
    width, c = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    return width if c >= 3 and c * 10 >= long_lines else 0


def joined_wraps(text: str, max_chars: int | None = None) -> tuple[str, list[int]]:
    """Runs of lines that look hard-wrapped, each joined into one line: ``(appendix, first_line_numbers)``.

    A line continues on the next when it is at least :data:`WRAP_MIN` characters long and the next line is not
    empty.  At the detected fixed width (a terminal cut the word) the pieces are joined as they are; otherwise
    (a word wrap ate the space) with one space.  Runs hold at most :data:`WRAP_MAX_RUN` lines; the appendix holds
    each line at most twice (a word cut at an unknown width is read both with and without a space), so it
    is never larger than twice *text* (or *max_chars*).  The text itself is still scanned
    as it is: the appendix only adds what a wrap had hidden."""
    lines = text.split("\n")
    if len(lines) < 2:
        return "", []
    lengths = [len(x.rstrip()) for x in lines]
    width = _wrap_width(lengths)
    out: list[str] = []
    starts: list[int] = []
    total = 0
    limit = 2 * len(text) if max_chars is None else min(max_chars, 2 * len(text))
    i, n = 0, len(lines)
    while i < n - 1:
        if not (WRAP_MIN <= lengths[i] <= WRAP_MAX_LINE) or not lines[i + 1].strip():
            i += 1
            continue
        j = i
        spaced = [lines[i].rstrip()]
        tight = [lines[i].rstrip()]
        ambiguous = False
        while j < n - 1 and len(spaced) < WRAP_MAX_RUN and WRAP_MIN <= lengths[j] <= WRAP_MAX_LINE \
                and lines[j + 1].strip():
            if lengths[j] == width:          # a fixed-width cut: the pieces belong together as they are
                nxt = lines[j + 1].rstrip()
                spaced.append(nxt)
                tight.append(nxt)
            else:                            # a word wrap ate a space, or a terminal cut a word: both readings
                nxt = lines[j + 1].strip()
                glue = spaced[-1][-1:] + nxt[:1]
                word_cut = len(glue) == 2 and glue.replace("_", "a").isalnum()
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
