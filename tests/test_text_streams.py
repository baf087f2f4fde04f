"""The streamed forms of the store's text paths (issue 16) give exactly what the whole-text forms gave.

JSON chunk by chunk (summary.iter_json) against json.dumps; the checksum; the HTML report rendered with long logs
in pieces of lines against the whole document through `markdown` + nh3; the bundle written as a stream against
the former ``json.dumps(bundle, indent=1)``; the fleet's error line and excerpt without a list of lines.
"""
from __future__ import annotations

import hashlib
import html
import io
import json
import random

import markdown as _markdown
import pytest

import diagnostics.store.bundle as B
import diagnostics.store.summary as S
from diagnostics.store import stats
from tests.pgserver import db_url, pg_url  # noqa: F401

ATOMS = ["a", " ", "\t", "\r", "\r\n", "\n", "\n", "   \n", "<", ">", "&", "&amp;", "\"", "'", "`", "``", "~~~", "\x02",
         "\x03", "\u00a0", "é", "中", "😀", "*", "_", "[x](javascript:1)", "<script>", "#", "|", "- ", "1. ", "    ",
         "&#106;", "\x1b[31m", "\u2028", "```", "\\", "<b>x</b>", "    code\n"]


def _old_html(report: dict) -> str:
    body = B.sanitize_html(_markdown.markdown(B.render_markdown(report), extensions=["tables", "fenced_code"]))
    title = html.escape(f"GPU doctor session {report.get('session_id', '')}")
    return ("<!doctype html>\n<html><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
            f"<title>{title}</title>\n<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
            "pre{background:#f4f4f4;padding:6px;overflow:auto}</style></head>\n<body>\n"
            f"{body}\n</body></html>\n")


def _old_bundle(session: dict, exported_at: str, reports: bool = True) -> bytes:
    bundle = {"format": B.FORMAT, "version": B.VERSION, "exported_at": exported_at, "session": session}
    if reports:
        bundle.update(report_markdown=B.render_markdown(session), report_html=_old_html(session))
    bundle["sha256"] = hashlib.sha256(S.canonical_bytes(bundle)).hexdigest()
    return (json.dumps(bundle, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _value(rnd: random.Random, depth: int = 0):
    r = rnd.random()
    if depth > 4 or r < 0.3:
        return rnd.choice([None, True, False, 0, -5, 10**30, 1.5, -0.0, 1e300, 3.14159, "",
                           "a\"b\\c\n\t\x00\x1f\u2028é中😀" * rnd.randint(0, 5), "x" * rnd.randint(0, 30)])
    if r < 0.6:
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    return {rnd.choice(["a", "b", "é", "z\n", "", f"k{rnd.randint(0, 9)}"]): _value(rnd, depth + 1)
            for _ in range(rnd.randint(0, 4))}


def test_iter_json_is_json_dumps(monkeypatch) -> None:
    monkeypatch.setattr(S, "JSON_PIECE", 7)
    rnd = random.Random(1)
    forms = [({"sort_keys": True}, {"separators": (",", ":"), "sort_keys": True}),
             ({}, {"separators": (",", ":")}), ({"indent": 1}, {"indent": 1})]
    for _ in range(2000):
        v = _value(rnd)
        for mine, ref in forms:
            assert "".join(S.iter_json(v, **mine)) == json.dumps(v, ensure_ascii=False, allow_nan=False, **ref)
    for v in ({1: "a", True: 2, None: 3, 2.5: 4}, {10: "a", 9: 2}):
        assert "".join(S.iter_json(v, sort_keys=v.get(9) is not None)) == json.dumps(
            v, ensure_ascii=False, separators=(",", ":"), sort_keys=v.get(9) is not None)
    with pytest.raises(ValueError):
        "".join(S.iter_json({"x": float("nan")}))
    big = {"logs": [{"text": "x\"\n" * 50}]}
    assert S.sha256_of(big) == hashlib.sha256(S.canonical_bytes(big)).hexdigest()


@pytest.mark.parametrize("piece", [1, 7, 50, 300])
def test_html_in_pieces_is_the_whole_render(piece: int, monkeypatch) -> None:
    monkeypatch.setattr(B, "HTML_PIECE", piece)
    rnd = random.Random(piece)
    plain = [a for a in ATOMS if a not in ("\x02", "\x03")]  # STX/ETX: such a log is rendered whole
    for i in range(160):
        atoms = ATOMS if i % 4 == 0 else plain
        logs = [{"name": rnd.choice(["x", "a<b>", "l|g"]),
                 "text": "".join(rnd.choice(atoms) for _ in range(rnd.randint(0, 400)))} for _ in range(rnd.randint(1, 3))]
        rep = {"session_id": "s", "host": "h", "logs": logs,
               "diagnoses": [{"id": "d", "title": "T", "evidence": [{"source": "log", "excerpt": "e`x"}], "fix": "do *x*"}]}
        assert B.render_html(rep) == _old_html(rep), logs
        assert "".join(B.iter_markdown(rep)) == B.render_markdown(rep)


def test_streamed_bundle_is_the_former_bundle(monkeypatch) -> None:
    monkeypatch.setattr(B, "HTML_PIECE", 40)
    monkeypatch.setattr(S, "JSON_PIECE", 13)
    rnd = random.Random(5)
    for _ in range(40):
        rep = {"session_id": "s", "host": "h", "facts": {"a": 1, "b": [1.5, None, True], "c": {}},
               "logs": [{"name": "x", "text": "".join(rnd.choice(ATOMS) for _ in range(300))}]}
        fp = io.BytesIO()
        B.write_bundle(rep, fp, reports=True)  # --with-reports: the bundle every version before it wrote
        data = fp.getvalue()
        assert data == _old_bundle(rep, json.loads(data)["exported_at"])
        lean = B.build_bundle(rep)  # the default: that bundle without its two renderings, its own checksum
        assert lean == _old_bundle(rep, json.loads(lean)["exported_at"], reports=False)
        for form in (True, False):
            fp = io.BytesIO()
            n = B.write_bundle(rep, fp, reports=form)
            assert n == len(fp.getvalue()) and json.loads(fp.getvalue())["session"] == json.loads(data)["session"]
            assert ("report_html" in json.loads(fp.getvalue())) is form


def test_fence_is_longer_than_every_run() -> None:
    import re

    rnd = random.Random(2)
    for _ in range(3000):
        s = "".join(rnd.choice(["`", "~", "a", "```", "~~~~~~", "\n"]) for _ in range(rnd.randint(0, 30)))
        longest = max((len(m) for m in re.findall(r"`+|~+", s)), default=0)
        assert B._fence(s) == "`" * max(3, longest + 1)


def test_error_line_and_excerpt_without_a_list_of_lines(monkeypatch) -> None:
    def former(*texts):
        lines = [ln.strip() for t in texts for ln in str(t or "").splitlines() if ln.strip()]
        raised = [ln for ln in lines if stats._RAISED.match(ln)]
        errish = [ln for ln in lines if stats._ERRORISH.search(ln)]
        specific = [ln for ln in errish if not stats._GENERIC.search(ln)]
        return (raised or specific or errish or [""])[-1][:400]

    monkeypatch.setattr(stats, "_LINES_PIECE", 5)
    rnd = random.Random(4)
    atoms = ["a", "\n", "\r\n", "\r", "\x0b", "\x1c", "\u2028", "  ", "RuntimeError: x", "Error: y", "Aborted",
             "Segmentation fault", "error z", "hipErrorNoBinaryForGpu: q", "ok"]
    for _ in range(4000):
        texts = ["".join(rnd.choice(atoms) for _ in range(rnd.randint(0, 12))) for _ in range(rnd.randint(0, 3))]
        assert stats.error_line(*texts) == former(*texts), texts
        n = rnd.randint(1, 40)
        assert stats._joined_tail(texts, n) == "\n".join(texts)[-n:], (texts, n)


def test_store_writes_the_reports_it_returns(tmp_path, monkeypatch) -> None:
    from diagnostics.store import Store

    monkeypatch.setattr(B, "HTML_PIECE", 64)
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    log = "".join(f"line {i} <b>&amp; `x`\tPASSWORD=hunter2secret{i}\n" for i in range(300))
    sid = store.save({"host": "h", "logs": [{"name": "big", "text": log}, {"name": "small", "text": "ok"}]})
    for fmt, ref in (("md", store.export_markdown(sid)), ("html", store.export_html(sid))):
        fp = io.BytesIO()
        assert store.write_report(sid, fp, fmt) == len(fp.getvalue())
        assert fp.getvalue() == ref.encode("utf-8") and "hunter2secret" not in ref
    for form in (False, True):
        fp = io.BytesIO()
        store.write_bundle(sid, fp, reports=form)
        a, b = json.loads(fp.getvalue()), json.loads(store.export_bundle(sid))
        assert {k: v for k, v in a.items() if k not in ("exported_at", "sha256", "report_markdown", "report_html")} \
            == {k: v for k, v in b.items() if k not in ("exported_at", "sha256")}
        assert ("report_markdown" in a) is form and "report_markdown" not in b
    store.close()


def test_json_size_and_bytes_are_those_of_dumps(monkeypatch) -> None:
    monkeypatch.setattr(S, "JSON_PIECE", 7)
    rnd = random.Random(2)
    for _ in range(300):
        v = {"x": _value(rnd), "log": "a\"b中😀\x1b\n" * rnd.randint(0, 40)}
        want = S.dumps(v).encode("utf-8")
        assert S.json_size(v) == len(want)
        assert b"".join(S.json_bytes(v, size=rnd.randint(1, 50))) == want


@pytest.mark.parametrize("blob_min", [1, 1 << 30])
def test_long_report_written_through_a_blob_reads_back_the_same(tmp_path, monkeypatch, blob_min: int) -> None:
    """A report at least BLOB_MIN bytes long is stored through SQLite's blob handle: the same JSON text comes back
    (get_json, get, export, import, rediagnosis, fleet refresh) as for a report stored as a bound text."""
    import diagnostics.store as store_mod
    from sqlalchemy import text

    monkeypatch.setattr(store_mod, "BLOB_MIN", blob_min)
    store = store_mod.Store(f"sqlite:///{tmp_path / 's.db'}")
    log = "".join(f"line {i} 中 \x1b[31m \"q\" HF_TOKEN=hf_{'ab' * 20}{i:04d} ok\n" for i in range(400))
    rep = {"host": "h", "logs": [{"name": "big", "text": log}], "facts": {"gpu.names": ["X"], "n": 1.5},
           "diagnoses": [{"id": "d", "severity": "error", "evidence": [{"excerpt": "e", "source": "big"}]}]}
    sid = store.save(rep)
    with store.engine.connect() as conn:
        kind = conn.execute(text("SELECT typeof(report_json) FROM session_reports")).scalar_one()
    assert kind == ("blob" if blob_min == 1 else "text")
    got = store.get_json(sid)
    assert isinstance(got, str) and got == S.dumps(store.get(sid)) and "hf_abab" not in got
    assert store.get(sid)["logs"][0]["text"].count("\n") == 400
    store.replace_report(sid, store.get(sid), note="again")
    assert store.get_json(sid) == got
    stats.refresh(store)
    store.refresh_fleet(sid)
    data = store.export_bundle(sid)
    other = store_mod.Store(f"sqlite:///{tmp_path / 'o.db'}")
    first = other.import_bundle_ex(data)
    assert not first["existing"] and other.get_json(first["id"]) == got
    assert other.import_bundle_ex(data)["existing"]  # the same session again: recognised, stored once
    store.close()
    other.close()


def test_long_report_streamed_to_either_database_reads_back_the_same(db_url: str, monkeypatch) -> None:  # noqa: F811
    """SQLite (blob handle) and PostgreSQL (COPY) with every report streamed: backslashes, tabs, CR, line breaks and
    non-ASCII come back as saved, on save, rediagnosis and import."""
    import diagnostics.store as store_mod

    monkeypatch.setattr(store_mod, "BLOB_MIN", 1)
    monkeypatch.setattr(store_mod, "PG_PIECES", 7)  # PostgreSQL reads it back in 7 slices (_get_json_pg)
    store = store_mod.Store(db_url)
    log = "".join(f"l{i} 中 \\ a\\b \\n \x1b[31m \"q\"\tt\r\n PASSWORD=hunter2secret{i}\n" for i in range(300))
    sid = store.save({"host": "h", "logs": [{"name": "big", "text": log}], "facts": {"n": 1.5}})
    got = store.get_json(sid)
    assert got == S.dumps(store.get(sid)) and "hunter2secret" not in got
    assert store.get(sid)["logs"][0]["text"].count("\\ a\\b \\n") == 300
    store.replace_report(sid, store.get(sid), note="again")
    assert store.get_json(sid) == got
    data = store.export_bundle(sid)
    store.delete(sid)
    assert store.import_bundle_ex(data)["id"] == sid and store.get_json(sid) == got
    store.close()
