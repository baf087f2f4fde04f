"""Loading and checking the knowledge base: strict schema, precise errors, no code in entries.

Every entry is a YAML file ``kb/<id>.yaml``.  Loading never executes anything: YAML is composed into nodes
(so each error carries file:line:column), aliases are refused (no YAML bombs), and every pattern is compiled
with RE2, whose matching time is linear in the input.  One broken entry is reported and skipped; the rest of
the knowledge base still loads.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import re2
import yaml

from . import facts as factcat
from .paths import data_root

KB_DIR = data_root() / "kb"
MAX_ENTRY_BYTES = 256 * 1024
MAX_DEPTH = 40
MAX_PATTERN_LEN = 2000
MAX_REPEAT = 100
SEVERITIES = ("critical", "error", "warning", "info")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,80}$")

TOP_REQUIRED = ("id", "title", "severity", "when", "symptoms", "cause", "fix", "links", "tests")
TOP_OPTIONAL = ("benign", "tags", "confidence", "supersedes", "translations", "variants")
FACT_OPS = ("eq", "ne", "in", "not_in", "contains", "contains_any", "matches", "lt", "le", "gt", "ge",
            "version_lt", "version_le", "version_gt", "version_ge", "known")
TEST_KEYS = ("name", "expect", "facts", "logs")
TEST_EXPECTS = ("fire", "silent", "unknown")   # promtool-strict: 'silent' is FALSE, not merely "did not fire"
TRANSLATION_KEYS = ("title", "symptoms", "cause", "fix", "source_hash", "variants")
# fix-text placeholders, filled from the GPU support matrix and the facts when a report is built (diagnostics/support.py)
PLACEHOLDERS = ("torch_install", "torch_index_url", "gfx", "override", "rocm_version", "cuda_version")
PLACEHOLDER_RE = re.compile(r"(?<![$\\{])\{([a-z][a-z0-9_]*)\}(?!\})")
# when the fix was last checked against sources, and against which versions (see kb/README.md, "Dates")
TOP_OPTIONAL = TOP_OPTIONAL + ("checked",)
CHECKED_KEYS = ("date", "versions")
# vendor-aware text (SHARED_DECISIONS 4): `variants.<vendor>` overrides title/symptoms/cause/fix for that vendor
VARIANT_VENDORS = ("nvidia", "amd")
VARIANT_FIELDS = ("title", "symptoms", "cause", "fix")
VARIANT_KEYS = (*VARIANT_FIELDS, "log")


class KBError(Exception):
    """One problem in one entry, with its position."""

    def __init__(self, path: str, line: int, col: int, message: str):
        super().__init__(f"{path}:{line}:{col}: {message}")
        self.path, self.line, self.col, self.message = path, line, col, message

    def __reduce__(self):   # pickled with the parsed KB (the cache): rebuilt from its four fields
        return (KBError, (self.path, self.line, self.col, self.message))


# --------------------------------------------------------------------------------------------------
# conditions


@dataclass
class Cond:
    kind: str                       # all | any | not | log | fact
    children: list["Cond"] = field(default_factory=list)
    pattern: str = ""               # log pattern (kind == log) or value pattern (op == matches)
    fact: str = ""
    op: str = ""
    value: Any = None
    line: int = 0
    compiled: Any = None            # re2 pattern for op == matches

    def walk(self) -> Iterator["Cond"]:
        yield self
        for c in self.children:
            yield from c.walk()

    def facts_used(self) -> set[str]:
        return {c.fact for c in self.walk() if c.kind == "fact"}

    def log_patterns(self) -> list[str]:
        return [c.pattern for c in self.walk() if c.kind == "log"]


@dataclass
class TestCase:
    name: str
    expect: str
    facts: dict[str, Any]
    logs: str
    line: int = 0


@dataclass
class Entry:
    id: str
    title: str
    severity: str
    when: Cond
    symptoms: str
    cause: str
    fix: str
    links: list[str]
    tests: list[TestCase]
    benign: bool = False
    tags: list[str] = field(default_factory=list)
    confidence: float = 0.8
    supersedes: list[str] = field(default_factory=list)
    translations: dict[str, dict[str, Any]] = field(default_factory=dict)
    variants: dict[str, dict[str, str]] = field(default_factory=dict)
    path: str = ""
    # {"date": datetime.date, "versions": {"rocm": "7.2", ...}} or None when never dated
    checked: dict[str, Any] | None = None
    # where prose fields start in the file: "fix", "translations.zh.fix" -> (line of the first text line,
    # 1 when the text is not a literal block so lines cannot be mapped one to one); used by `kb lint`
    text_lines: dict[str, int] = field(default_factory=dict)

    def variant_text(self, vendor: str | None, lang: str | None = None) -> dict[str, str]:
        """title/symptoms/cause/fix for *vendor* (the base text where the entry has no such variant), in
        English or, with *lang*, from ``translations.<lang>`` (its ``variants.<vendor>`` first)."""
        out = {f: getattr(self, f) for f in VARIANT_FIELDS}
        var = self.variants.get(vendor or "", {})
        for f in VARIANT_FIELDS:
            if var.get(f):
                out[f] = var[f]
        if lang and lang != "en":
            tr = self.translations.get(lang) or {}
            tv = (tr.get("variants") or {}).get(vendor or "", {}) if var else {}
            for f in VARIANT_FIELDS:
                if f in var and tv.get(f):
                    out[f] = tv[f]
                elif f not in var and tr.get(f):
                    out[f] = tr[f]
        return out

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "severity": self.severity, "benign": self.benign,
                "tags": self.tags, "confidence": self.confidence, "path": self.path}


@dataclass
class KnowledgeBase:
    entries: list[Entry]
    errors: list[KBError]
    directory: str = ""

    def by_id(self) -> dict[str, Entry]:
        return {e.id: e for e in self.entries}

    @property
    def version(self) -> str:
        """A short content hash: sessions record which KB diagnosed them."""
        import hashlib

        h = hashlib.sha256()
        for e in sorted(self.entries, key=lambda e: e.id):
            h.update(e.id.encode())
            try:
                h.update(Path(e.path).read_bytes())
            except OSError:
                pass
        return h.hexdigest()[:12]


# --------------------------------------------------------------------------------------------------
# YAML composition with positions and without aliases


class _Ctx:
    def __init__(self, path: str):
        self.path = path
        self.seen: set[int] = set()

    def err(self, node: yaml.Node | None, msg: str) -> KBError:
        if node is None:
            return KBError(self.path, 1, 1, msg)
        return KBError(self.path, node.start_mark.line + 1, node.start_mark.column + 1, msg)


# libyaml's composer when present (5x faster; it also caps nesting at 1000 levels itself), else pure Python
class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


MAX_FLOW_DEPTH = 100
MAX_INDENT = 300


def _nesting_problem(text: str) -> tuple[int, str] | None:
    """A linear pre-scan for nesting no real entry has.  Composers recurse per level (libyaml in C: a deep
    enough document overflows the C stack and kills the process, which no except clause can catch), so depth
    is bounded before any YAML parser sees the text."""
    depth = 0
    for lineno, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip(" -")
        if len(line) - len(stripped) > MAX_INDENT:
            return lineno, f"nesting deeper than any entry needs (indentation over {MAX_INDENT} columns)"
        # brackets are counted even inside quotes and comments: real entries stay far below the bound (their
        # regex classes are balanced), and no quoting trick can hide a deep flow collection from the scan
        for ch in line:
            if ch in "[{":
                depth += 1
                if depth > MAX_FLOW_DEPTH:
                    return lineno, f"nesting deeper than {MAX_FLOW_DEPTH} levels of brackets"
            elif ch in "]}":
                depth = max(0, depth - 1)
    return None


def _compose(text: str, path: str) -> yaml.Node | None:
    ctx = _Ctx(path)
    deep = _nesting_problem(text)
    if deep:
        raise KBError(path, deep[0], 1, deep[1])
    try:
        loader = _Loader(text)
        try:
            # refuse anchors/aliases at the event level, before anything is constructed
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        col = mark.column + 1 if mark else 1
        raise KBError(path, line, col, f"YAML syntax: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise KBError(path, 1, 1, f"YAML syntax: {exc}") from None
    except RecursionError:
        raise KBError(path, 1, 1, "YAML nesting too deep") from None
    if node is not None:
        _check_no_alias(ctx, node, 0)
    return node


def _check_no_alias(ctx: _Ctx, node: yaml.Node, depth: int) -> None:
    stack = [(node, depth)]
    while stack:
        n, d = stack.pop()
        if d > MAX_DEPTH:
            raise ctx.err(n, f"nesting deeper than {MAX_DEPTH} levels")
        if id(n) in ctx.seen:
            raise ctx.err(n, "YAML aliases/anchors are not allowed in KB entries")
        ctx.seen.add(id(n))
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                stack.append((k, d + 1))
                stack.append((v, d + 1))
        elif isinstance(n, yaml.SequenceNode):
            for v in n.value:
                stack.append((v, d + 1))


def _scalar(ctx: _Ctx, node: yaml.Node) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise ctx.err(node, "expected a single value here, not a list or mapping")
    try:  # a bare constructor: a whole SafeLoader per scalar was a third of the KB load time
        return yaml.constructor.SafeConstructor().construct_object(node)
    except yaml.YAMLError as exc:
        raise ctx.err(node, f"bad value: {exc}") from None


def _value(ctx: _Ctx, node: yaml.Node) -> Any:
    """Plain Python for a value node (lists and mappings of scalars allowed)."""
    if isinstance(node, yaml.ScalarNode):
        return _scalar(ctx, node)
    if isinstance(node, yaml.SequenceNode):
        return [_value(ctx, n) for n in node.value]
    if isinstance(node, yaml.MappingNode):
        out = {}
        for k, v in node.value:
            key = _scalar(ctx, k)
            if not isinstance(key, str):
                raise ctx.err(k, "mapping keys must be strings")
            if key in out:
                raise ctx.err(k, f"duplicate key {key!r}")
            out[key] = _value(ctx, v)
        return out
    raise ctx.err(node, "unsupported YAML node")


def _mapping(ctx: _Ctx, node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        raise ctx.err(node, f"{what} must be a mapping")
    out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for k, v in node.value:
        key = _scalar(ctx, k)
        if not isinstance(key, str):
            raise ctx.err(k, f"keys of {what} must be strings")
        if key in out:
            raise ctx.err(k, f"duplicate key {key!r} in {what}")
        out[key] = (k, v)
    return out


def _str(ctx: _Ctx, node: yaml.Node, what: str, *, nonempty: bool = True) -> str:
    v = _scalar(ctx, node)
    if not isinstance(v, str):
        raise ctx.err(node, f"{what} must be a string, got {type(v).__name__}")
    if nonempty and not v.strip():
        raise ctx.err(node, f"{what} must not be empty")
    return v


def _str_list(ctx: _Ctx, node: yaml.Node, what: str) -> list[str]:
    if not isinstance(node, yaml.SequenceNode):
        raise ctx.err(node, f"{what} must be a list of strings")
    return [_str(ctx, n, f"an item of {what}") for n in node.value]


# --------------------------------------------------------------------------------------------------
# patterns



def compile_pattern(pattern: str) -> Any:
    """Compile with RE2; raises ValueError with RE2's reason for patterns RE2 cannot run in linear time."""
    if len(pattern) > MAX_PATTERN_LEN:
        raise ValueError(f"pattern longer than {MAX_PATTERN_LEN} characters")
    if not pattern:
        raise ValueError("empty pattern")
    for m in re.finditer(r"\{(\d+)(?:,(\d*))?\}", pattern):
        if max(int(m.group(1)), int(m.group(2) or 0)) > MAX_REPEAT:
            # RE2 stays linear, but a large counted repetition multiplies the automaton and slows every scan
            raise ValueError(f"counted repetition {m.group(0)} is above {MAX_REPEAT}; use + or * instead")
    try:
        return re2.compile(pattern)
    except Exception as exc:  # re2.error (the binding's own class), with RE2's reason as bytes
        raise PatternError.from_re2(pattern, exc) from None


class PatternError(ValueError):
    """A pattern RE2 cannot compile: RE2's reason in plain words and *offset*, where in the pattern it went wrong
    (0-based), so the error can point at the column of the pattern's own text."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset

    @classmethod
    def from_re2(cls, pattern: str, exc: Exception) -> "PatternError":
        raw = exc.args[0] if exc.args else exc
        reason = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
        reason = reason.strip() or "invalid pattern"
        # RE2 says "<what>: <the part of the pattern it refers to>"
        what, _, frag = reason.partition(": ")
        offset = max(0, pattern.find(frag)) if frag else 0
        hint = ""
        if "perl operator" in what and re.match(r"\(\?<?[=!]", frag):
            hint = " (RE2 has no lookahead or lookbehind)"
        elif "escape sequence" in what and re.match(r"\\[1-9]", frag):
            hint = " (RE2 has no backreferences)"
        msg = f"invalid pattern: {what}" + (f' at "{frag}"' if frag else "") + hint
        return cls(msg, offset)


def _pattern_err(ctx: "_Ctx", node: yaml.Node, exc: ValueError) -> "KBError":
    """The error of a bad pattern at the column where it goes wrong (single-line scalars; a block scalar points
    at its first line)."""
    err = ctx.err(node, str(exc))
    off = getattr(exc, "offset", 0)
    style = getattr(node, "style", None)
    if isinstance(node, yaml.ScalarNode) and style in (None, "'", '"') and (off or style):
        value = str(node.value)[:off]
        extra = 1 if style else 0  # the opening quote
        extra += value.count("'") if style == "'" else value.count("\\") if style == '"' else 0
        err = KBError(err.path, err.line, err.col + extra + off, err.message)
    return err


# --------------------------------------------------------------------------------------------------
# conditions from nodes


def _cond(ctx: _Ctx, node: yaml.Node, depth: int = 0) -> Cond:
    if depth > MAX_DEPTH:
        raise ctx.err(node, "condition nested too deeply")
    m = _mapping(ctx, node, "a condition")
    line = node.start_mark.line + 1
    keys = set(m)
    structural = keys & {"all", "any", "not", "log"}
    if "fact" in keys:
        if structural:
            raise ctx.err(node, "a fact condition cannot also hold " + ", ".join(sorted(structural)))
        fact_name = _str(ctx, m["fact"][1], "fact")
        if not factcat.is_known(fact_name):
            raise ctx.err(m["fact"][1], f"unknown fact {fact_name!r} (see diagnostics/facts.py)")
        ops = [k for k in keys if k != "fact"]
        unknown = [k for k in ops if k not in FACT_OPS]
        if unknown:
            raise ctx.err(m[unknown[0]][0], f"unknown operator {unknown[0]!r}; use one of: {', '.join(FACT_OPS)}")
        if len(ops) != 1:
            raise ctx.err(node, f"a fact condition needs exactly one operator ({', '.join(FACT_OPS)})")
        op = ops[0]
        vnode = m[op][1]
        value = _value(ctx, vnode)
        ftype = factcat.fact_type(fact_name) or "str"
        c = Cond("fact", fact=fact_name, op=op, value=value, line=line)
        _check_op(ctx, vnode, c, ftype)
        return c
    if len(keys) != 1:
        raise ctx.err(node, "a condition holds exactly one of: all, any, not, log, fact" +
                      (f" (found: {', '.join(sorted(keys))})" if keys else ""))
    key = next(iter(keys))
    knode, vnode = m[key]
    if key in ("all", "any"):
        if not isinstance(vnode, yaml.SequenceNode) or not vnode.value:
            raise ctx.err(vnode, f"'{key}' takes a non-empty list of conditions")
        return Cond(key, children=[_cond(ctx, n, depth + 1) for n in vnode.value], line=line)
    if key == "not":
        return Cond("not", children=[_cond(ctx, vnode, depth + 1)], line=line)
    if key == "log":
        pat = _str(ctx, vnode, "log pattern")
        try:
            compile_pattern(pat)
        except ValueError as exc:
            raise _pattern_err(ctx, vnode, exc) from None
        return Cond("log", pattern=pat, line=line)
    raise ctx.err(knode, f"unknown condition {key!r}; use all, any, not, log or fact")


def _check_op(ctx: _Ctx, vnode: yaml.Node, c: Cond, ftype: str) -> None:
    op, v = c.op, c.value
    is_list_fact = ftype.startswith("list")
    scalar_types = {"str": str, "int": int, "float": (int, float), "bool": bool,
                    "list[str]": str, "list[int]": int}
    item_t = scalar_types[ftype]

    def ok_item(x: Any) -> bool:
        if item_t is int and isinstance(x, bool):
            return False
        if ftype == "float" and isinstance(x, bool):
            return False
        return isinstance(x, item_t)

    if op == "known":  # whether the fact was established at all (two-valued: never unknown)
        if not isinstance(v, bool):
            raise ctx.err(vnode, f"'known' takes true or false, got {v!r}")
        return
    if op in ("eq", "ne"):
        if is_list_fact:
            if not (isinstance(v, list) and all(ok_item(x) for x in v)):
                raise ctx.err(vnode, f"{c.fact} is a {ftype}: '{op}' needs a list of its items")
        elif not ok_item(v):
            raise ctx.err(vnode, f"{c.fact} is a {ftype}: '{op}' needs a {ftype} value, got {v!r}")
    elif op in ("in", "not_in"):
        if is_list_fact:
            raise ctx.err(vnode, f"'{op}' works on single values; {c.fact} is a list (use contains/contains_any)")
        if not (isinstance(v, list) and v and all(ok_item(x) for x in v)):
            raise ctx.err(vnode, f"'{op}' needs a non-empty list of {ftype} values")
    elif op == "contains":
        if not is_list_fact:
            raise ctx.err(vnode, f"'contains' works on list facts; {c.fact} is a {ftype}")
        if not ok_item(v):
            raise ctx.err(vnode, f"'contains' needs one item of {c.fact}")
    elif op == "contains_any":
        if not is_list_fact:
            raise ctx.err(vnode, f"'contains_any' works on list facts; {c.fact} is a {ftype}")
        if not (isinstance(v, list) and v and all(ok_item(x) for x in v)):
            raise ctx.err(vnode, "'contains_any' needs a non-empty list of items")
    elif op == "matches":
        if ftype not in ("str", "list[str]"):
            raise ctx.err(vnode, f"'matches' works on strings; {c.fact} is a {ftype}")
        if not isinstance(v, str):
            raise ctx.err(vnode, "'matches' needs a pattern string")
        try:
            c.compiled = compile_pattern(v)
        except ValueError as exc:
            raise _pattern_err(ctx, vnode, exc) from None
        c.pattern = v
    elif op in ("lt", "le", "gt", "ge"):
        if ftype not in ("int", "float"):
            raise ctx.err(vnode, f"'{op}' works on numbers; {c.fact} is a {ftype}")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ctx.err(vnode, f"'{op}' needs a number")
    elif op.startswith("version_"):
        if ftype != "str":
            raise ctx.err(vnode, f"'{op}' works on version strings; {c.fact} is a {ftype}")
        if not isinstance(v, (str, int, float)) or isinstance(v, bool) or parse_version(str(v)) is None:
            raise ctx.err(vnode, f"'{op}' needs a version like '6.2' or '2.5.1'")
        c.value = str(v)


_VER_RE = re.compile(r"\d+")


def parse_version(text: str) -> tuple[int, ...] | None:
    """'2.5.1+rocm6.2' -> (2, 5, 1); '6.2.41133-abc' -> (6, 2, 41133); None when no number leads."""
    text = str(text).strip().lstrip("vV")
    text = text.split("+", 1)[0]
    m = re.match(r"^(\d+(?:\.\d+)*)", text)
    if not m:
        return None
    return tuple(int(x) for x in m.group(1).split("."))


# --------------------------------------------------------------------------------------------------
# entries


def _tests(ctx: _Ctx, node: yaml.Node) -> list[TestCase]:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise ctx.err(node, "tests must be a non-empty list of cases")
    out: list[TestCase] = []
    for tnode in node.value:
        m = _mapping(ctx, tnode, "a test case")
        for k, (kn, _) in m.items():
            if k not in TEST_KEYS:
                raise ctx.err(kn, f"unknown key {k!r} in a test case; allowed: {', '.join(TEST_KEYS)}")
        if "name" not in m or "expect" not in m:
            raise ctx.err(tnode, "a test case needs 'name' and 'expect'")
        name = _str(ctx, m["name"][1], "name")
        expect = _str(ctx, m["expect"][1], "expect")
        if expect not in TEST_EXPECTS:
            raise ctx.err(m["expect"][1], "expect must be 'fire' (the entry evaluates true), 'silent' (false) or "
                                          "'unknown' (a fact it needs is missing, and that is the point of the case)")
        if "facts" not in m and "logs" not in m:
            raise ctx.err(tnode, "a test case needs 'facts', 'logs' or both")
        facts: dict[str, Any] = {}
        if "facts" in m:
            fm = _mapping(ctx, m["facts"][1], "facts")
            for fname, (kn, vn) in fm.items():
                val = _value(ctx, vn)
                err = factcat.check_value(fname, val)
                if err:
                    raise ctx.err(kn, err)
                facts[fname] = val
        logs = _str(ctx, m["logs"][1], "logs", nonempty=False) if "logs" in m else ""
        out.append(TestCase(name, expect, facts, logs, tnode.start_mark.line + 1))
    if not any(t.expect == "fire" for t in out) or not any(t.expect in ("silent", "unknown") for t in out):
        # 'unknown' stands in for 'silent' only where no real case can make the entry false (a branch reads a
        # fact that is absent when nothing is set, such as an unset environment variable)
        raise ctx.err(node, "tests need at least one 'fire' case and one 'silent' case")
    return out


def _checked(ctx: _Ctx, node: yaml.Node) -> dict[str, Any]:
    """``checked: {date: 2026-12-01, versions: {rocm: "7.2", torch: "2.15"}}``."""
    import datetime

    m = _mapping(ctx, node, "checked")
    for k, (kn, _) in m.items():
        if k not in CHECKED_KEYS:
            raise ctx.err(kn, f"unknown key {k!r} in checked; allowed: {', '.join(CHECKED_KEYS)}")
    for k in CHECKED_KEYS:
        if k not in m:
            raise ctx.err(node, f"checked needs {k!r}")
    dnode = m["date"][1]
    if not isinstance(dnode, yaml.ScalarNode):
        raise ctx.err(dnode, "checked.date must be a date written YYYY-MM-DD")
    try:  # the raw text: YAML's own timestamp constructor raises a bare ValueError on 2026-13-01
        d = datetime.date.fromisoformat(str(dnode.value).strip())
    except ValueError:
        d = None
    if not isinstance(d, datetime.date) or not re.match(r"^\d{4}-\d{2}-\d{2}$", str(dnode.value).strip()):
        raise ctx.err(dnode, "checked.date must be a date written YYYY-MM-DD")
    versions: dict[str, str] = {}
    vm = _mapping(ctx, m["versions"][1], "checked.versions")
    if not vm:
        raise ctx.err(m["versions"][1], "checked.versions must name at least one version checked against")
    for name, (kn, vn) in vm.items():
        if not re.match(r"^[a-z][a-z0-9_.-]*$", name):
            raise ctx.err(kn, f"version name {name!r} should be lowercase, e.g. rocm, torch, transformers")
        v = _scalar(ctx, vn)
        if not isinstance(v, str):
            # 7.10 unquoted is the float 7.1: versions must be quoted strings
            raise ctx.err(vn, f"checked.versions.{name} must be a quoted string such as \"7.2\"")
        if parse_version(v) is None:
            raise ctx.err(vn, f"checked.versions.{name} {v!r} is not a dotted version")
        versions[name] = v
    return {"date": d, "versions": versions}


def _text_line(node: yaml.Node) -> int:
    """The file line where a literal block's text starts (``fix: |`` -> the next line), else 0 (unknown)."""
    if isinstance(node, yaml.ScalarNode) and node.style == "|":
        return node.start_mark.line + 2
    return 0


def _variants(ctx: _Ctx, node: yaml.Node) -> dict[str, dict[str, str]]:
    """``variants: {nvidia: {title?, symptoms?, cause?, fix?, log?}, amd: {...}}``; ``log`` is an RE2 pattern
    that, found in a log line the entry fired on, selects that vendor before any fact does."""
    out: dict[str, dict[str, str]] = {}
    for vendor, (kn, vn) in _mapping(ctx, node, "variants").items():
        if vendor not in VARIANT_VENDORS:
            raise ctx.err(kn, f"unknown vendor {vendor!r} in variants; allowed: {', '.join(VARIANT_VENDORS)}")
        var: dict[str, str] = {}
        for fk, _, fvn in _variant_keys(ctx, vn, f"variants.{vendor}", VARIANT_KEYS):
            var[fk] = _str(ctx, fvn, f"variants.{vendor}.{fk}")
            if fk == "log":
                try:
                    compile_pattern(var[fk])
                except ValueError as exc:
                    raise ctx.err(fvn, str(exc)) from None
        if not any(f in var for f in VARIANT_FIELDS):
            raise ctx.err(vn, f"variants.{vendor} overrides nothing: give at least one of {', '.join(VARIANT_FIELDS)}")
        out[vendor] = var
    return out


def _variant_keys(ctx: _Ctx, node: yaml.Node, where: str, allowed: tuple[str, ...],
                  place: str = "") -> Iterator[tuple[str, yaml.Node, yaml.Node]]:
    """The keys of one vendor's variant (English or translated) with their nodes, each checked as it comes;
    *place* names the mapping in the error (default: *where*)."""
    for fk, (fkn, fvn) in _mapping(ctx, node, where).items():
        if fk not in allowed:
            raise ctx.err(fkn, f"unknown key {fk!r} in {place or where}; allowed: {', '.join(allowed)}")
        yield fk, fkn, fvn


def _translated_variants(ctx: _Ctx, node: yaml.Node, variants: dict[str, dict[str, str]],
                         lang: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for vendor, (kn, vn) in _mapping(ctx, node, f"translations.{lang}.variants").items():
        if vendor not in variants:
            raise ctx.err(kn, f"translations.{lang}.variants.{vendor}: the entry has no English variant {vendor!r}")
        var: dict[str, str] = {}
        where = f"translations.{lang}.variants.{vendor}"
        for fk, fkn, fvn in _variant_keys(ctx, vn, where, VARIANT_FIELDS, "a translated variant"):
            if fk not in variants[vendor]:
                raise ctx.err(fkn, f"variants.{vendor} has no English {fk!r} to translate")
            var[fk] = _str(ctx, fvn, fk)
        out[vendor] = var
    return out


# what names a vendor in the text an entry fired on, when its variant gives no `log` of its own
DEFAULT_VENDOR_SIGNATURES = {
    "nvidia": r"\bCUDA\b|\bcuda[A-Z]\w+|CUDA_ERROR|\bNVIDIA\b|\bNVML\b|nvidia-smi|\bcuBLAS|\bcuDNN|\bNCCL\b",
    "amd": r"\bHIP\b|\bhip[A-Z]\w+|HIP_ERROR|\bROCm\b|\brocm|\bamdgpu\b|\bHSA_|\brocBLAS|\bMIOpen|\bRCCL\b",
}
_SIG_CACHE: dict[str, Any] = {}


def _sig(pattern: str) -> Any:
    c = _SIG_CACHE.get(pattern)
    if c is None:
        c = _SIG_CACHE[pattern] = re2.compile(pattern)
    return c


def vendor_from_facts(facts: dict[str, Any]) -> str | None:
    """nvidia / amd from what the facts say of the stack in use (torch's build first), else None."""
    build = facts.get("torch.build")
    if build == "cuda":
        return "nvidia"
    if build == "rocm":
        return "amd"
    vendors = facts.get("gpu.vendors")
    if isinstance(vendors, list):
        vs = {v for v in vendors if v in VARIANT_VENDORS}
        if len(vs) == 1:
            return vs.pop()
    if facts.get("hip.platform") in ("amd", "nvidia"):
        return facts["hip.platform"]
    api = {"cuda": "nvidia", "hip": "amd"}.get(str(facts.get("oom.api")))
    if api:  # the out-of-memory error's own words
        return api
    nvidia = bool(facts.get("nvidia.driver_version") or facts.get("pci.nvidia_gpu_count"))
    amd = bool(facts.get("gpu.gfx_targets") or facts.get("pci.amd_gpu_count") or facts.get("driver.amdgpu_loaded"))
    if nvidia != amd:
        return "nvidia" if nvidia else "amd"
    ms = facts.get("monitor.source")
    if ms == "nvidia-smi":
        return "nvidia"
    if ms in ("amd-smi", "rocm-smi", "sysfs"):
        return "amd"
    return None


def select_variant(entry: Entry, facts: dict[str, Any], evidence: list[dict[str, Any]]) -> str | None:
    """The vendor whose variant of *entry* applies: torch's build when known, else what the lines it fired on
    say (the error's own words: "CUDA out of memory" vs "HIP out of memory"), else the other facts (GPU
    vendors, driver, PCI); None when the entry has no variants or nothing tells."""
    if not entry.variants:
        return None
    # the torch build in use decides first: ROCm builds before 2.1 printed "CUDA out of memory" too
    build = {"cuda": "nvidia", "rocm": "amd"}.get(str(facts.get("torch.build")))
    if build:
        return build if build in entry.variants else None
    texts = [str(e.get("excerpt") or "") for e in evidence if e.get("kind") == "log"]
    # the GPU stack's own error texts among the facts, whether or not the entry fired on them
    texts += [str(facts[k]) for k in ("gen.error", "torch.smoke_error", "torch.import_error")
              if isinstance(facts.get(k), str)]
    if texts:
        found = []
        for vendor in VARIANT_VENDORS:
            pat = entry.variants.get(vendor, {}).get("log") or DEFAULT_VENDOR_SIGNATURES[vendor]
            if any(_sig(pat).search(t) for t in texts):
                found.append(vendor)
        if len(found) == 1:
            return found[0] if found[0] in entry.variants else None
    v = vendor_from_facts(facts)
    return v if v in entry.variants else None


def parse_entry(text: str, path: str, expected_id: str | None = None) -> Entry:
    """Parse one entry; raises KBError at the first problem."""
    ctx = _Ctx(path)
    if len(text.encode("utf-8", "replace")) > MAX_ENTRY_BYTES:
        raise KBError(path, 1, 1, f"entry larger than {MAX_ENTRY_BYTES // 1024} KiB")
    if "\x00" in text:
        raise KBError(path, 1, 1, "entry contains NUL bytes (binary file?)")
    root = _compose(text, path)
    if root is None:
        raise KBError(path, 1, 1, "empty entry")
    m = _mapping(ctx, root, "an entry")
    for k, (kn, _) in m.items():
        if k not in TOP_REQUIRED and k not in TOP_OPTIONAL:
            raise ctx.err(kn, f"unknown key {k!r}; allowed: {', '.join(TOP_REQUIRED + TOP_OPTIONAL)}")
    for k in TOP_REQUIRED:
        if k not in m:
            raise ctx.err(root, f"missing required key {k!r}")
    eid = _str(ctx, m["id"][1], "id")
    if not ID_RE.match(eid):
        raise ctx.err(m["id"][1], "id must be lowercase letters, digits and dashes")
    if expected_id is not None and eid != expected_id:
        raise ctx.err(m["id"][1], f"id {eid!r} differs from the file name {expected_id!r}")
    sev = _str(ctx, m["severity"][1], "severity")
    if sev not in SEVERITIES:
        raise ctx.err(m["severity"][1], f"severity must be one of {', '.join(SEVERITIES)}")
    benign = False
    if "benign" in m:
        benign = _scalar(ctx, m["benign"][1])
        if not isinstance(benign, bool):
            raise ctx.err(m["benign"][1], "benign must be true or false")
        if benign and sev != "info":
            raise ctx.err(m["severity"][1], "a benign entry must have severity 'info'")
    conf = 0.8
    if "confidence" in m:
        conf = _scalar(ctx, m["confidence"][1])
        if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 < conf <= 1:
            raise ctx.err(m["confidence"][1], "confidence must be a number in (0, 1]")
        conf = float(conf)
    links = _str_list(ctx, m["links"][1], "links")
    if not links:
        raise ctx.err(m["links"][1], "links must name at least one source")
    for i, ln in enumerate(links):
        if not re.match(r"^https?://\S+$", ln):
            raise ctx.err(m["links"][1].value[i], f"link {ln!r} is not an http(s) URL")
    text_lines = {"fix": _text_line(m["fix"][1])}
    checked = _checked(ctx, m["checked"][1]) if "checked" in m else None
    variants = _variants(ctx, m["variants"][1]) if "variants" in m else {}
    translations: dict[str, dict[str, Any]] = {}
    if "translations" in m:
        tm = _mapping(ctx, m["translations"][1], "translations")
        for lang, (kn, vn) in tm.items():
            if not re.match(r"^[a-z]{2}(-[A-Za-z]{2,4})?$", lang):
                raise ctx.err(kn, f"language code {lang!r} should look like 'zh' or 'zh-CN'")
            fields = _mapping(ctx, vn, f"translations.{lang}")
            tr: dict[str, Any] = {}
            for fk, (fkn, fvn) in fields.items():
                if fk not in TRANSLATION_KEYS:
                    raise ctx.err(fkn, f"unknown key {fk!r} in a translation; allowed: {', '.join(TRANSLATION_KEYS)}")
                if fk == "variants":
                    tr[fk] = _translated_variants(ctx, fvn, variants, lang)
                else:
                    tr[fk] = _str(ctx, fvn, fk)
            if "fix" in fields:
                text_lines[f"translations.{lang}.fix"] = _text_line(fields["fix"][1])
            translations[lang] = tr
    for fk in ("title", "symptoms", "cause", "fix"):
        _check_placeholders(ctx, m[fk][1], text)
    if "variants" in m:  # vendor variants' text obeys the same placeholder rule
        for _v, (_kn, vn) in _mapping(ctx, m["variants"][1], "variants").items():
            for fk, (_fkn, fvn) in _mapping(ctx, vn, "a variant").items():
                if fk != "log":
                    _check_placeholders(ctx, fvn, text)
    if "translations" in m:
        for _lang, (_kn, vn) in _mapping(ctx, m["translations"][1], "translations").items():
            for fk, (_fkn, fvn) in _mapping(ctx, vn, "a translation").items():
                if fk == "variants":
                    for _v, (_vk, vvn) in _mapping(ctx, fvn, "translated variants").items():
                        for _f, (_fk2, fvn2) in _mapping(ctx, vvn, "a translated variant").items():
                            _check_placeholders(ctx, fvn2, text)
                elif fk != "source_hash":
                    _check_placeholders(ctx, fvn, text)
    return Entry(
        id=eid,
        title=_str(ctx, m["title"][1], "title"),
        severity=sev,
        when=_cond(ctx, m["when"][1]),
        symptoms=_str(ctx, m["symptoms"][1], "symptoms"),
        cause=_str(ctx, m["cause"][1], "cause"),
        fix=_str(ctx, m["fix"][1], "fix"),
        links=links,
        tests=_tests(ctx, m["tests"][1]),
        benign=benign,
        tags=_str_list(ctx, m["tags"][1], "tags") if "tags" in m else [],
        confidence=conf,
        supersedes=_str_list(ctx, m["supersedes"][1], "supersedes") if "supersedes" in m else [],
        translations=translations,
        variants=variants,
        path=path,
        checked=checked,
        text_lines=text_lines,
    )


def _check_placeholders(ctx: _Ctx, node: yaml.Node, source: str) -> None:
    """Refuse a {name} in prose that is not a known placeholder, pointing at its own line and column."""
    text = _scalar(ctx, node)
    if not isinstance(text, str):
        return
    for mo in PLACEHOLDER_RE.finditer(text):
        if mo.group(1) in PLACEHOLDERS:
            continue
        before = text[:mo.start()]
        in_line = len(before) - (before.rfind("\n") + 1)
        if node.style in ("|", ">"):
            line = node.start_mark.line + 2 + before.count("\n")  # block text starts below its indicator
            raw = source.split("\n")[line - 1] if line - 1 < len(source.split("\n")) else ""
            own = text[before.rfind("\n") + 1:]  # this line of the block text, with its own leading spaces
            block_indent = (len(raw) - len(raw.lstrip(" "))) - (len(own) - len(own.lstrip(" ")))
            col = block_indent + in_line + 1
        else:
            line = node.start_mark.line + 1 + before.count("\n")
            col = node.start_mark.column + 1 + in_line + (1 if node.style in ("'", '"') else 0)
        raise KBError(ctx.path, line, col, f"unknown placeholder {{{mo.group(1)}}}; use one of: "
                      + ", ".join("{" + p + "}" for p in PLACEHOLDERS))


KB_CACHE_ENV = "GPU_DOCTOR_KB_CACHE"   # "0": parse every entry each time (the cache is an optimisation only)
KB_CACHE_KEEP = 8
_CODE_STAMP: list[bytes] = []


def _code_stamp() -> bytes:
    """What a parsed entry depends on besides its own text: this module, the fact catalogue, Python, re2."""
    if not _CODE_STAMP:
        import hashlib

        h = hashlib.sha256(sys.version.encode() + str(getattr(re2, "__version__", "")).encode())
        for mod in (__file__, factcat.__file__):
            try:
                h.update(Path(mod).read_bytes())
            except OSError:
                h.update(os.urandom(16))   # unreadable source: never reuse a cache
        _CODE_STAMP.append(h.digest())
    return _CODE_STAMP[0]


def _cache_file(d: Path, raws: list[tuple[Path, bytes]]) -> Path | None:
    """Where the parsed KB of exactly these entry texts is kept (None: no cache).  The key is every file's name
    and bytes, the code stamp and the working directory (entries name their files relative to it)."""
    if os.environ.get(KB_CACHE_ENV, "1") == "0":
        return None
    import hashlib

    from .paths import default_cache_dir

    h = hashlib.sha256(_code_stamp())
    h.update(os.getcwd().encode("utf-8", "surrogateescape") + b"\0" + str(d).encode("utf-8", "surrogateescape"))
    for p, raw in raws:
        h.update(b"\0" + p.name.encode("utf-8", "surrogateescape") + b"\0%d\0" % len(raw) + raw)
    return Path(default_cache_dir()) / "kb" / (h.hexdigest()[:40] + ".pickle")


def _cached(path: Path | None) -> KnowledgeBase | None:
    """The KB pickled at *path*, when that file is the current user's own and nobody else may write it (a cache
    another account could write would run its code here); anything odd means: parse again."""
    if path is None:
        return None
    import pickle

    try:
        st = path.stat()
        if not path.is_file() or st.st_mode & 0o022 or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return None
        kb = pickle.loads(path.read_bytes())
        return kb if isinstance(kb, KnowledgeBase) else None
    except Exception:  # noqa: BLE001 - a truncated or foreign cache file is a miss, never a failure
        return None


def _store(path: Path | None, kb: KnowledgeBase) -> None:
    if path is None:
        return
    import pickle
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kb-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(pickle.dumps(kb, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, path)   # atomic: a reader sees the old file or the whole new one
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        kept = sorted(path.parent.glob("*.pickle"), key=lambda f: f.stat().st_mtime, reverse=True)
        for old in kept[KB_CACHE_KEEP:]:   # the newest few (KB states still in use) stay
            if old != path:
                with contextlib.suppress(OSError):
                    old.unlink()
    except Exception:  # noqa: BLE001 - a read-only or full disk only costs the next run its parse
        pass


def load_kb(directory: str | os.PathLike | None = None) -> KnowledgeBase:
    """Load every ``*.yaml`` entry; broken entries become errors, the rest load.

    Parsing and checking 180 entries costs about 0.5 s of CPU; the result is kept under the cache folder, keyed
    on the exact bytes of every entry (and this code), and read back in about 0.05 s when nothing changed
    (GPU_DOCTOR_KB_CACHE=0 turns that off)."""
    d = Path(directory) if directory else Path(os.environ.get("GPU_DOCTOR_KB", KB_DIR))
    if not d.is_dir():
        return KnowledgeBase([], [KBError(str(d), 1, 1, "knowledge base directory not found")], str(d))
    files = sorted(d.glob("*.yaml")) + sorted(d.glob("*.yml"))
    raws: list[tuple[Path, bytes]] = []
    for p in files:
        try:
            if not p.is_file() or p.stat().st_size > MAX_ENTRY_BYTES:
                raws = []
                break   # the slow path names the problem
            raws.append((p, p.read_bytes()))
        except OSError:
            raws = []
            break
    cache = _cache_file(d, raws) if raws else None
    kb = _cached(cache)
    if kb is not None:
        return kb
    kb = _parse_kb(d, files, dict(raws))
    _store(cache, kb)
    return kb


def _parse_kb(d: Path, files: list[Path], raws: dict[Path, bytes]) -> KnowledgeBase:
    entries: list[Entry] = []
    errors: list[KBError] = []
    seen: dict[str, str] = {}
    for p in files:
        rel = _rel(p)
        try:
            if not p.is_file():  # a FIFO would block the read forever; a folder is not an entry
                raise KBError(rel, 1, 1, "not a regular file")
            if p.stat().st_size > MAX_ENTRY_BYTES:
                raise KBError(rel, 1, 1, f"entry larger than {MAX_ENTRY_BYTES // 1024} KiB")
            raw = raws[p] if p in raws else p.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise KBError(rel, 1, 1, f"not valid UTF-8 (byte {exc.start})") from None
            entry = parse_entry(text, rel, expected_id=p.stem)
            if entry.id in seen:
                raise KBError(rel, 1, 1, f"duplicate id {entry.id!r} (also in {seen[entry.id]})")
            seen[entry.id] = rel
            entries.append(entry)
        except KBError as exc:
            errors.append(exc)
        except OSError as exc:
            errors.append(KBError(rel, 1, 1, f"cannot read: {exc.strerror or exc}"))
    ids = {e.id for e in entries}
    for e in entries:
        for s in e.supersedes:
            if s not in ids and s not in {x.path for x in errors}:
                # a reference to an entry that does not exist is a mistake, but not fatal for the entry
                errors.append(KBError(e.path, 1, 1, f"supersedes unknown id {s!r}"))
    return KnowledgeBase(entries, errors, str(d))


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop
        return str(p)


# --------------------------------------------------------------------------------------------------
# JSON Schema for editors


def json_schema() -> dict[str, Any]:
    fact_names = sorted(factcat.CATALOGUE)
    fact_cond = {
        "type": "object",
        "required": ["fact"],
        "properties": {"fact": {"anyOf": [{"enum": fact_names}, {"type": "string", "pattern": r"^env\.[A-Za-z_][A-Za-z0-9_]*$"}]},
                       **{op: {} for op in FACT_OPS}},
        "additionalProperties": False,
        "minProperties": 2, "maxProperties": 2,
    }
    cond_ref = {"$ref": "#/$defs/condition"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://gpu-doctor.invalid/kb-entry.schema.json",
        "title": "GPU doctor knowledge-base entry",
        "type": "object",
        "required": list(TOP_REQUIRED),
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": ID_RE.pattern},
            "title": {"type": "string", "minLength": 1},
            "severity": {"enum": list(SEVERITIES)},
            "benign": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "confidence": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "supersedes": {"type": "array", "items": {"type": "string", "pattern": ID_RE.pattern}},
            "when": cond_ref,
            "symptoms": {"type": "string", "minLength": 1},
            "cause": {"type": "string", "minLength": 1},
            "fix": {"type": "string", "minLength": 1},
            "links": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": r"^https?://\S+$"}},
            "checked": {"type": "object", "required": list(CHECKED_KEYS), "additionalProperties": False,
                        "properties": {"date": {"pattern": r"^\d{4}-\d{2}-\d{2}$", "description": "YYYY-MM-DD"},
                                       "versions": {"type": "object", "minProperties": 1,
                                                    "additionalProperties": {"type": "string"}}}},
            "variants": {"type": "object", "additionalProperties": False, "properties": {
                v: {"type": "object", "additionalProperties": False, "minProperties": 1,
                    "properties": {k: {"type": "string", "minLength": 1} for k in VARIANT_KEYS}}
                for v in VARIANT_VENDORS}},
            "translations": {"type": "object", "additionalProperties": {
                "type": "object", "additionalProperties": False,
                "properties": {**{k: {"type": "string"} for k in TRANSLATION_KEYS if k != "variants"},
                               "variants": {"type": "object", "additionalProperties": False, "properties": {
                                   v: {"type": "object", "additionalProperties": False,
                                       "properties": {k: {"type": "string"} for k in VARIANT_FIELDS}}
                                   for v in VARIANT_VENDORS}}}}},
            "tests": {"type": "array", "minItems": 2, "items": {
                "type": "object", "required": ["name", "expect"], "additionalProperties": False,
                "properties": {"name": {"type": "string"}, "expect": {"enum": list(TEST_EXPECTS)},
                               "facts": {"type": "object"}, "logs": {"type": "string"}}}},
        },
        "$defs": {
            "condition": {"oneOf": [
                {"type": "object", "required": ["all"], "additionalProperties": False,
                 "properties": {"all": {"type": "array", "minItems": 1, "items": cond_ref}}},
                {"type": "object", "required": ["any"], "additionalProperties": False,
                 "properties": {"any": {"type": "array", "minItems": 1, "items": cond_ref}}},
                {"type": "object", "required": ["not"], "additionalProperties": False,
                 "properties": {"not": cond_ref}},
                {"type": "object", "required": ["log"], "additionalProperties": False,
                 "properties": {"log": {"type": "string", "minLength": 1, "maxLength": MAX_PATTERN_LEN}}},
                fact_cond,
            ]},
        },
    }
