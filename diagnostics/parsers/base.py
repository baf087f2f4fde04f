"""What every dump parser returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ParseResult:
    kind: str                                            # e.g. "rocminfo"
    facts: dict[str, Any] = field(default_factory=dict)  # names from diagnostics.facts.CATALOGUE
    notes: list[str] = field(default_factory=list)       # plain-language remarks: truncated input, unknown format, ...
    errors: list[str] = field(default_factory=list)      # error lines the tool itself printed, verbatim

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "facts": self.facts, "notes": self.notes, "errors": self.errors}
