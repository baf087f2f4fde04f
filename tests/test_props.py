"""Property-based tests (hypothesis) over the parsers, the matcher, the KB loader and the runner's pieces:
any input, no exception, plain-data output, bounded time (issue 8).

tests/test_parsers_a.py fuzzes the parsers with printable text and a fixed list of fragments; here each
parser gets lines cut from *its own real fixtures*, mutated (cut, doubled, re-indented, glued to noise,
surrogates and control characters kept), so the deep paths of each parser are exercised, not only its
"unrecognised" exit.  Deadlines are per example and generous for a 2-core CI machine; the example counts
keep the whole file under a minute.
"""
from __future__ import annotations

import importlib
import json
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnostics import facts as factcat
from diagnostics import parsers
from diagnostics.kb import KBError, load_kb, parse_entry
from diagnostics.matcher import Matcher, clean_log
from diagnostics.runner import KEEP_HEAD, KEEP_TAIL, Collected, _Capture, parse_record
from diagnostics.service import decode_text

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "dumps"
# PROPS_SCALE=20 for a long local hunt; CI runs the default
SCALE = max(1, int(os.environ.get("PROPS_SCALE", "1")))
SETTINGS = dict(deadline=timedelta(seconds=3), suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.data_too_large])


def _fixture_lines(kind: str) -> list[str]:
    lines: list[str] = []
    for f in sorted((FIXTURES / kind).glob("*")):
        if f.suffix in (".yaml", ".yml"):
            continue
        lines.extend(f.read_text(encoding="utf-8", errors="replace").splitlines())
    return sorted(set(lines)) or [""]


LINES = {k: _fixture_lines(k) for k in parsers.KINDS}
ALL_LINES = sorted({ln for v in LINES.values() for ln in v})

noise = st.text(alphabet=st.characters(), max_size=40)  # surrogates and control characters included


@st.composite
def mutated_line(draw, pool: list[str]) -> str:
    line = draw(st.sampled_from(pool))
    op = draw(st.sampled_from(["keep", "cut", "indent", "noise", "double", "strip", "number"]))
    if op == "cut" and line:
        i = draw(st.integers(0, len(line)))
        line = line[:i] if draw(st.booleans()) else line[i:]
    elif op == "indent":
        line = draw(st.sampled_from([" ", "\t", "    ", "| ", "> ", "```"])) + line
    elif op == "noise":
        line = line + draw(noise) if draw(st.booleans()) else draw(noise) + line
    elif op == "double":
        line = line + line
    elif op == "strip":
        line = line.strip()
    elif op == "number":
        line = "".join(draw(st.sampled_from("0123456789abcdefx.-")) if c.isdigit() else c for c in line)
    return line


def dump_text(pool: list[str], max_lines: int = 80):
    return st.lists(st.one_of(mutated_line(pool), noise), max_size=max_lines).map(
        lambda ls: "\n".join(ls)) | st.builds(lambda a, b: a + b, st.sampled_from(["", "\r\n", "\x1b[31m"]),
                                               st.lists(mutated_line(pool), max_size=40).map("\r\n".join))


def _check_result(res, kind: str) -> None:
    d = res.to_dict()
    json.dumps(d, allow_nan=False)  # plain data only
    assert all(isinstance(k, str) for k in d["facts"])
    _, problems = factcat.clean_facts(res.facts)
    assert problems == [], problems
    assert all(isinstance(x, str) for x in d["notes"] + d["errors"])


# ------------------------------------------------------------------------------------------ parsers


@pytest.mark.parametrize("kind", parsers.KINDS)
def test_each_parser_on_mutated_real_lines(kind):
    mod = importlib.import_module(f"diagnostics.parsers.{kind}")

    @settings(max_examples=60 * SCALE, **SETTINGS)
    @given(dump_text(LINES[kind]))
    def prop(text):
        score = float(mod.detect(text))
        assert 0.0 <= score <= 1.0
        _check_result(mod.parse(text), kind)

    prop()


@settings(max_examples=80 * SCALE, **SETTINGS)
@given(dump_text(ALL_LINES, 120))
def test_registry_auto_detection_on_mixed_dumps(text):
    """Lines of several tools mixed in one paste: detection picks one kind (or none), parsing never raises."""
    kind = parsers.detect_kind(text)
    assert kind is None or kind in parsers.KINDS
    res = parsers.parse(text, "auto")
    assert res.kind in (*parsers.KINDS, "unknown")
    _check_result(res, res.kind)


@settings(max_examples=40 * SCALE, **SETTINGS)
@given(st.binary(max_size=20_000))
def test_bytes_decoded_like_an_upload(data):
    notes: list[str] = []
    text = decode_text(data, "upload", notes)
    for kind in parsers.KINDS:
        _check_result(parsers.parse(text, kind), kind)


# ------------------------------------------------------------------------------------------ matcher


@pytest.fixture(scope="module")
def matcher():
    return Matcher(load_kb())


def _fact_values(name: str):
    t = factcat.fact_type(name) or "str"
    right = {
        "str": st.text(max_size=20) | st.sampled_from(["rocm", "cpu", "cuda", "gfx1100", "6.2.4", "2.5.1+rocm6.2"]),
        "int": st.integers(-2, 1 << 40),
        "float": st.floats(allow_nan=False, allow_infinity=False),
        "bool": st.booleans(),
        "list[str]": st.lists(st.sampled_from(["gfx1100", "gfx90a", "gfx1036", "render", "video", ""]) |
                              st.text(max_size=8), max_size=4),
        "list[int]": st.lists(st.integers(0, 1 << 20), max_size=4),
    }[t]
    wrong = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2),
                      st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
    return st.one_of(right, right, wrong)


CATALOGUED = sorted(n for n in factcat.CATALOGUE if "<" not in n)


@st.composite
def fact_dicts(draw):
    names = draw(st.lists(st.sampled_from(CATALOGUED), max_size=25, unique=True))
    return {n: draw(_fact_values(n)) for n in names}


KB_LOG_LINES = sorted({ln for e in load_kb().entries for t in e.tests for ln in (t.logs or "").splitlines()
                       if ln.strip()})


@settings(max_examples=80 * SCALE, **SETTINGS)
@given(fact_dicts(), st.lists(dump_text(KB_LOG_LINES + ALL_LINES[:400], 40), max_size=3))
def test_matcher_any_facts_any_logs(matcher, facts, logs):
    good, _ = factcat.clean_facts(facts)
    texts = [(f"log{i}", t) for i, t in enumerate(logs)]
    res = matcher.match(good, texts)
    again = matcher.match(good, texts)
    assert [d["id"] for d in res["diagnoses"]] == [d["id"] for d in again["diagnoses"]]  # deterministic
    known = {e.id for e in matcher.kb.entries}
    for d in res["diagnoses"]:
        assert d["id"] in known
        assert 0.0 <= d["confidence"] <= 1.0
        assert d["evidence"], d["id"]  # nothing fires without showing why
        for ev in d["evidence"]:
            assert len(ev["excerpt"]) <= 2000
    json.dumps(res, default=str)


@settings(max_examples=60 * SCALE, **SETTINGS)
@given(fact_dicts())
def test_absent_facts_never_make_an_entry_fire(matcher, facts):
    """Unknown is not false: taking facts away can only turn a firing entry into a non-firing one if the
    entry depends on them through `not`; it can never make a silent fact-only entry fire."""
    good, _ = factcat.clean_facts(facts)
    fired_all = {d["id"] for d in matcher.match(good, [])["diagnoses"]}
    fired_none = {d["id"] for d in matcher.match({}, [])["diagnoses"]}
    assert fired_none == set(), fired_none
    assert fired_all <= {e.id for e in matcher.kb.entries}


@settings(max_examples=40 * SCALE, **SETTINGS)
@given(st.lists(st.sampled_from(KB_LOG_LINES) | noise, min_size=1, max_size=30), st.integers(0, 3))
def test_set_scan_agrees_with_pattern_by_pattern_search(matcher, lines, pad):
    text = clean_log(("\n" * pad) + "\n".join(lines))
    assert matcher.scan._candidates(text) == matcher.scan.candidates_slow(text)


# ------------------------------------------------------------------------------------------ KB loader

GOOD_ENTRY = (ROOT / "kb" / "hip-no-binary-for-gpu.yaml").read_text()
ENTRY_LINES = GOOD_ENTRY.splitlines()


@st.composite
def mutated_entry(draw) -> str:
    lines = list(ENTRY_LINES)
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "indent", "dedent", "noise", "swap", "alias", "tag"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "indent":
            lines[i] = "  " + lines[i]
        elif op == "dedent":
            lines[i] = lines[i].lstrip()
        elif op == "noise":
            lines[i] = lines[i] + draw(noise)
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "alias":
            lines[i] = lines[i].replace(": ", ": &a ", 1) + "\nextra: *a"
        elif op == "tag":
            lines[i] = lines[i].replace(": ", ": !!python/object:os.system ", 1)
    return "\n".join(lines) + "\n"


@settings(max_examples=120 * SCALE, **SETTINGS)
@given(mutated_entry() | st.text(max_size=2000))
def test_kb_loader_any_entry_text(text):
    t0 = time.perf_counter()
    try:
        entry = parse_entry(text, "kb/hip-no-binary-for-gpu.yaml", expected_id="hip-no-binary-for-gpu")
    except KBError as exc:
        assert exc.line >= 1 and exc.col >= 1 and exc.message
    else:
        assert entry.id == "hip-no-binary-for-gpu"
        from diagnostics.kb import KnowledgeBase  # an entry that loads also compiles into a matcher

        Matcher(KnowledgeBase([entry], [], "")).match({}, [("x", "hipErrorNoBinaryForGpu")])
    assert time.perf_counter() - t0 < 3


# ------------------------------------------------------------------------------------------ runner pieces


@settings(max_examples=150 * SCALE, deadline=timedelta(seconds=2))
@given(st.lists(st.binary(max_size=300_000) | st.integers(0, 600_000).map(lambda n: b"x" * n), max_size=8))
def test_capture_keeps_head_and_tail_bounded(chunks):
    cap = _Capture()
    for c in chunks:
        cap.add(c)
    data = b"".join(chunks)
    assert cap.total == len(data)
    assert len(cap.head) <= KEEP_HEAD and len(cap.tail) <= KEEP_TAIL
    if not cap.truncated:
        assert bytes(cap.head) + bytes(cap.tail) == data
    else:
        assert bytes(cap.head) == data[:KEEP_HEAD] and bytes(cap.tail) == data[-KEEP_TAIL:]
        assert "bytes not kept" in cap.text()


@settings(max_examples=200 * SCALE, deadline=timedelta(seconds=1))
@given(st.text(max_size=300) | st.builds(lambda s: "@@DIAG " + s, st.text(max_size=300)) |
       st.builds(lambda o: "@@DIAG " + json.dumps(o), st.recursive(
           st.none() | st.booleans() | st.integers() | st.text(max_size=10),
           lambda c: st.lists(c, max_size=3) | st.dictionaries(
               st.sampled_from(["fact", "value", "facts", "evidence", "log", "note", "status", "summary",
                                "stage", "extra", "x"]), c, max_size=4), max_leaves=12)))
def test_protocol_records_never_break_the_collector(line):
    rec = parse_record(line)
    col = Collected()
    if rec is not None:
        assert isinstance(rec, dict)
        try:
            col.feed(rec)
        except (TypeError, AttributeError, ValueError) as exc:  # pragma: no cover - reported below
            raise AssertionError(f"feed() raised {exc!r} on {rec!r}")
    good, problems = factcat.clean_facts(col.facts)
    assert len(good) + len(problems) <= len(col.facts)
    assert all(factcat.check_value(k, v) is None for k, v in good.items())
    json.dumps(good)
