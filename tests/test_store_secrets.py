"""Issue 16 on both databases: every secret format of tests/secret_formats.py, planted through each way a session
reaches the store (save, a note, import of a bundle that still carries them, a re-diagnosis that replaces the
report, a fleet refresh), is in no row of any table, SQLite or PostgreSQL, nor in any export made from them.

tests/test_secrets_e2e.py runs the same formats through the CLI and the UI's calls on SQLite and reads the file's
bytes (WAL included); here every row of every table is read back through SQL, which on PostgreSQL is what the
server holds (its files compress long values, so their bytes would prove nothing): the redaction happens in this
process before anything is sent, so no table, WAL record or log of the server can carry what no statement sent."""
from __future__ import annotations

import json

from sqlalchemy import text

from diagnostics.sessions import rediagnose_session
from diagnostics.store import Store
from diagnostics.store.bundle import build_bundle
from diagnostics.store.models import metadata
from tests.pgserver import db_url, pg_url  # noqa: F401
from tests.secret_formats import catalogue
from tests.test_store_common import full_bundle

FORMATS = catalogue()


def _leaks(blob: bytes | str) -> list[str]:
    b = blob.encode("utf-8", "replace") if isinstance(blob, str) else blob
    return [name for name, _, s in FORMATS if s.encode() in b]


def _every_row(store: Store) -> str:
    out = []
    with store.engine.connect() as conn:
        for t in metadata.sorted_tables:
            for row in conn.execute(text(f"SELECT * FROM {t.name}")):
                out.append(repr(tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in row)))
    return "\n".join(out)


def test_no_format_reaches_any_table_of_either_database(db_url: str) -> None:  # noqa: F811
    store = Store(db_url)
    # one log per format (a key block without END would swallow what follows it), secrets in facts and a key
    logs = [{"name": f"log{i}", "text": f"[{name}]\n{txt}\n"} for i, (name, txt, _) in enumerate(FORMATS)]
    facts = {"env.HF_TOKEN": FORMATS[0][2], "env.X": FORMATS[1][1], FORMATS[2][2]: "a secret as a key"}
    sid = store.save({"session_id": "", "host": "h", "logs": logs, "facts": facts,
                      "probes": [{"id": "torch", "status": "fail", "error": FORMATS[3][1],
                                  "output_tail": FORMATS[4][1], "evidence": [{"excerpt": FORMATS[5][1]}]}]})
    for _, txt, _ in FORMATS[:20]:
        store.add_note(sid, "reviewer", txt)
    raw = {"session_id": "0b6f3c1e-8a4d-4f2b-9c7e-5d1a2b3c4d5e", "host": "other", "logs": logs, "facts": facts,
           "notes": [t for _, t, _ in FORMATS[:20]]}
    imported = store.import_bundle_ex(build_bundle(raw))["id"]
    filler = "step 1 loss 0.1 ok\n" * 2000  # a report of more than 1 MiB: SQLite's blob handle, PostgreSQL's COPY
    long_sid = store.save({"host": "h", "logs": [{"name": "big", "text": "".join(filler + t + "\n" for _, t, _ in
                                                                                FORMATS[:40])}]})
    for s in (sid, imported, long_sid):
        rediagnose_session(store, s)  # replaces the report (the stored one carries no KB version yet)
        rediagnose_session(store, s)  # nothing new: the fleet rows refreshed from the stored report
        store.refresh_fleet(s)
    assert _leaks(_every_row(store)) == []
    shared = []
    for s in (sid, imported, long_sid):
        shared += [store.export_bundle(s), full_bundle(store, s), store.export_markdown(s), store.export_html(s),
                   json.dumps(store.share_preview(s), ensure_ascii=False), store.get_json(s)]
    for blob in shared:
        assert _leaks(blob) == []
    got = store.get(sid)
    assert len({r["placeholder"] for r in got.get("redactions") or []}) >= 80
    store.close()
