"""The one sanitiser for text the CLI writes: no escape sequence from a log, a bundle or a tool reaches a terminal.

Pasted logs and imported bundles are attacker-controlled text.  Written raw, ``ESC ] 52 ; c ; ... BEL`` sets
the clipboard (OSC 52), ``ESC ] 0 ;`` the window title, ``ESC ] 8 ;;`` hides a link behind innocent text, CSI
sequences move the cursor to overwrite what was printed, and the 8-bit C1 controls (U+0080-U+009F, e.g. U+009B
CSI, U+009D OSC) do the same on terminals that honour them.  Every C0 control except TAB and LF, DEL, every C1
control, a lone CR, and the bidirectional overrides (U+202A-U+202E, U+2066-U+2069: "Trojan source") are
written as the visible text ``\\u001b`` (six characters): inside a JSON string that is the same escape JSON
itself uses, so JSON output stays valid and means the same; in plain text the reader sees what was there.

``install()`` wraps sys.stdout and sys.stderr once, at the start of ``diagnostics.cli.main``: every print of
every command goes through it.  Our own progress line may start with ``\\r\\x1b[K`` (erase the line), which
is kept when it is the start of a write.
"""
from __future__ import annotations

import codecs
import io
import re
import sys
from typing import Any

_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_OWN_PREFIX = "\r\x1b[K"


def _esc(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group(0)):04x}"


def clean(text: str) -> str:
    """*text* with every control character, escape and bidi override made visible and inert."""
    if not _BAD.search(text):
        return text
    text = text.replace("\r\n", "\n")
    return _BAD.sub(_esc, text)


class SafeText(io.TextIOBase):
    """A text stream that cleans everything written to it before passing it on."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._bin: SafeBinary | None = None

    def write(self, s: str) -> int:
        if s.startswith(_OWN_PREFIX):
            self._raw.write(_OWN_PREFIX + clean(s[len(_OWN_PREFIX):]))
        else:
            self._raw.write(clean(s))
        return len(s)

    def flush(self) -> None:
        self._raw.flush()

    def isatty(self) -> bool:
        return self._raw.isatty()

    def fileno(self) -> int:
        return self._raw.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._raw, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self._raw, "errors", None)

    @property
    def buffer(self) -> Any:
        if self._bin is None:
            self._bin = SafeBinary(self._raw)
        return self._bin

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class SafeBinary(io.RawIOBase):
    """sys.stdout.buffer of a SafeText: bytes are decoded (UTF-8, incrementally), cleaned and written."""

    def __init__(self, text_raw: Any) -> None:
        self._raw = text_raw
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")

    def write(self, b: Any) -> int:
        data = bytes(b)
        self._raw.write(clean(self._dec.decode(data)))
        return len(data)

    def flush(self) -> None:
        rest = self._dec.decode(b"", final=True)
        if rest:
            self._raw.write(clean(rest))
        self._raw.flush()

    def writable(self) -> bool:
        return True


def install() -> None:
    """Wrap sys.stdout and sys.stderr (idempotent)."""
    for name in ("stdout", "stderr"):
        cur = getattr(sys, name)
        if cur is not None and not isinstance(cur, SafeText):
            setattr(sys, name, SafeText(cur))
