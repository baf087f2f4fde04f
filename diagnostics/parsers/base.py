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
