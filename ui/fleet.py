"""Fleet (reviewers): what breaks, where and since when across every saved session; the sessions nothing explains,
grouped by error signature, each group one click from a draft KB entry; re-diagnose everything once an entry
lands and see how many sessions it now explains.  The numbers come from diagnostics/store/stats.py."""
from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from diagnostics.i18n import t
from diagnostics import sessions
from diagnostics.sessions import STATUSES, fleet
from diagnostics import contrib
from ui import auth, common, safe
from ui.common import T, lang

PATH = "fleet"
VERDICTS = (None, "problems", "unexplained", "incomplete", "healthy")
DIM_KEYS = {d: f"ui.fleet.dim_{d}" for d in fleet.DIMENSIONS}
TOP = 15

common.style()
st.title(T("ui.fleet.title"))
if not auth.is_reviewer():
    st.info(T("ui.fleet.reviewers_only"))
    st.stop()
st.caption(T("ui.fleet.intro"))
store = common.store()
if store is None:
    st.stop()
code = lang()
qp = st.query_params


def _verdict_word(v: str | None) -> str:
    if v is None:
        return t("ui.sessions.any_verdict", code)
    w = t(f"verdict.{v}", code)
    return v if w == f"verdict.{v}" else w


# ------------------------------------------------------------------------------------------ filters
for k in ("q", "host", "gpu"):  # a link from a count carries the filters it was counted under
    if k in qp and f"fleet_{k}" not in st.session_state:
        st.session_state[f"fleet_{k}"] = qp[k]
c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
query = c1.text_input(T("ui.sessions.search"), key="fleet_q", placeholder=T("ui.sessions.search_placeholder"))
verdict = c2.selectbox(T("ui.sessions.verdict"), VERDICTS, key="fleet_verdict", format_func=_verdict_word,
                       index=VERDICTS.index(qp["verdict"]) if qp.get("verdict") in VERDICTS[1:] else 0)
status = c3.selectbox(T("ui.sessions.review_status"), [None, *STATUSES], key="fleet_status",
                      index=([None, *STATUSES].index(qp["status"]) if qp.get("status") in STATUSES else 0),
                      format_func=lambda s: t("ui.sessions.any_status" if s is None else f"ui.sessions.review_{s}", code))
bucket = c4.radio(T("ui.fleet.bucket"), list(fleet.BUCKETS), index=1, key="fleet_bucket", horizontal=True,
                  format_func=lambda b: t(f"ui.fleet.bucket_{b}", code))
with st.expander(T("ui.sessions.more_filters"), expanded=bool(qp.get("host") or qp.get("gpu") or qp.get("since"))):
    d1, d2, d3, d4 = st.columns(4)
    host = d1.text_input(T("ui.sessions.host_exact"), key="fleet_host")
    gpu = d2.text_input(T("ui.sessions.gpu_contains"), key="fleet_gpu")
    since = d3.date_input(T("ui.sessions.since"), value=None, key="fleet_since")
    until = d4.date_input(T("ui.sessions.until"), value=None, key="fleet_until")
f = fleet.Filters(query=query or "", host=(host or "").strip() or None, gpu=(gpu or "").strip() or None,
                  verdict=verdict, status=status,
                  since=since.isoformat() if isinstance(since, dt.date) else qp.get("since"),
                  until=until.isoformat() if isinstance(until, dt.date) else qp.get("until"))


def _link(by: str, value: str, bucket_value: str | None = None) -> str:
    """The Fleet page listing the sessions behind one count (under the same filters)."""
    params = {"by": by, "value": value}
    if bucket_value:
        params.update(bucket=bucket, at=bucket_value)
    params.update({{"query": "q"}.get(k, k): str(v) for k, v in f.active().items()})
    return f"{PATH}?{urlencode(params)}"


# ------------------------------------------------------------------------------------------ the sessions behind a count
if qp.get("by") in fleet.DIMENSIONS and qp.get("value") is not None:
    by, value = qp["by"], qp["value"]
    try:
        ids = fleet.session_ids(store, by, value, bucket=qp.get("bucket"), bucket_value=qp.get("at"), filters=f,
                                limit=500)
    except Exception as exc:
        st.error(T("ui.kb.search_failed", error=exc))
        ids = []
    with st.container(border=True):
        st.subheader(T("ui.fleet.behind", dim=t(DIM_KEYS[by], code), value=value, n=len(ids)))
        col_open = T("ui.sessions.col_open")
        st.dataframe([{col_open: f"{common.PATH_SESSIONS}?session={i}", "id": i} for i in ids], hide_index=True,
                     width="stretch", column_config={col_open: st.column_config.LinkColumn(
                         col_open, display_text=T("ui.sessions.open_link"), width="small")})
        if st.button(T("ui.fleet.back"), key="fleet_back"):
            for k in ("by", "value", "bucket", "at"):
                qp.pop(k, None)
            st.rerun()

# ------------------------------------------------------------------------------------------ counts
try:
    ov = fleet.overview(store, f, limit=TOP)
    series = fleet.stats(store, "cause", bucket=bucket, filters=f, limit=5000)
    queue = fleet.unexplained(store, f, limit=20, samples=3, ids=200)
except Exception as exc:
    st.error(T("ui.kb.search_failed", error=exc))
    st.stop()

m1, m2, m3 = st.columns(3)
m1.metric(T("ui.fleet.sessions"), ov["total"])
m2.metric(T("ui.fleet.with_cause"), sum(x["count"] for x in ov["by"]["verdict"] if x["value"] == "problems"))
m3.metric(T("ui.fleet.in_queue"), queue["sessions"])

st.subheader(T("ui.fleet.causes_over_time", bucket=t(f"ui.fleet.bucket_{bucket}", code)))
if series["rows"]:
    import pandas as pd

    df = pd.DataFrame(series["rows"]).pivot_table(index="bucket", columns="value", values="count", fill_value=0)
    st.bar_chart(df, height=280)
    col_n = T("ui.fleet.col_count")
    st.dataframe([{T("ui.fleet.col_when"): r["bucket"], T("ui.fleet.dim_cause"): r["value"], col_n: r["count"],
                   T("ui.fleet.col_sessions"): _link("cause", r["value"], r["bucket"])} for r in series["rows"][-200:]],
                 hide_index=True, width="stretch", height=220,
                 column_config={T("ui.fleet.col_sessions"): st.column_config.LinkColumn(
                     T("ui.fleet.col_sessions"), display_text=T("ui.fleet.show_sessions"), width="small")})
else:
    st.caption(T("ui.fleet.no_causes"))


def _table(dim: str, rows: list[dict[str, Any]]) -> None:
    st.markdown(f"**{t(DIM_KEYS[dim], code)}**")
    if not rows:
        st.caption(T("ui.fleet.none"))
        return
    show = _verdict_word if dim == "verdict" else (str if dim != "status" else
                                                    (lambda s: t(f"ui.sessions.review_{s}", code)))
    col_v, col_n, col_s = t(DIM_KEYS[dim], code), T("ui.fleet.col_count"), T("ui.fleet.col_sessions")
    st.dataframe([{col_v: show(r["value"]), col_n: r["count"], col_s: _link(dim, r["value"])} for r in rows],
                 hide_index=True, width="stretch",
                 column_config={col_s: st.column_config.LinkColumn(col_s, display_text=T("ui.fleet.show_sessions"),
                                                                   width="small")})


grid = [("cause", "possible", "verdict"), ("gfx", "gpu", "host"), ("rocm", "torch", "status")]
for row in grid:
    cols = st.columns(len(row))
    for c, dim in zip(cols, row):
        with c:
            _table(dim, ov["by"][dim])

# ------------------------------------------------------------------------------------------ the unexplained queue
st.subheader(T("ui.fleet.queue_title", n=queue["sessions"]))
st.caption(T("ui.fleet.queue_intro"))


def _draft(group: dict[str, Any]) -> None:
    """Open the KB editor with an entry drafted from *group* (a callback: runs before the next page is drawn)."""
    try:
        fire = [store.get(s["id"]) for s in group["samples"]]
        healthy = fleet.session_ids(store, "verdict", "healthy", limit=1)
        draft = contrib.new_entry_from_group(group, fire, store.get(healthy[0]) if healthy else None)
    except Exception as exc:
        st.session_state["fleet_msg"] = T("ui.kb_editor.load_failed", error=exc)
        return
    st.session_state["editor_seed"] = draft
    st.session_state["fleet_goto_editor"] = True


if not queue["groups"]:
    st.success(T("ui.fleet.queue_empty"))
for i, g in enumerate(queue["groups"]):
    label = T("ui.fleet.group_label", n=g["count"], hosts=g["host_count"], sig=safe.md_inline(g["signature"], 140))
    with st.expander(label, expanded=i == 0):
        st.code(g["signature"], language=None, wrap_lines=True)
        a, b = st.columns([3, 2])
        a.markdown(T("ui.fleet.group_seen", first=common.fmt_time(g["first_seen"]), last=common.fmt_time(g["last_seen"]),
                     checks=", ".join(g["checks"]) or "-"))
        a.markdown(T("ui.fleet.group_hosts") + " " + ", ".join(f"`{safe.md_inline(h['host'], 80)}` ({h['count']})"
                                                               for h in g["hosts"]))
        b.markdown(T("ui.fleet.group_pattern"))
        b.code(g["pattern"], language=None, wrap_lines=True)
        for smp in g["samples"]:
            st.markdown(f"[{smp['id'][:8]}]({common.PATH_SESSIONS}?session={smp['id']}) · "
                        f"{safe.md_inline(smp['host'], 80)} · {common.fmt_time(smp['created_at'])} · `{smp['check']}`")
            st.code(smp["excerpt"][-1500:], language=None)
        st.button(T("ui.fleet.draft"), key=f"draft_{g['sig']}", on_click=_draft, args=(g,), type="primary",
                  icon=":material/edit_note:")
if st.session_state.get("fleet_goto_editor"):  # cleared by the editor: a run cut short here still gets there
    st.switch_page(common.page_file("kb_editor"))
if st.session_state.get("fleet_msg"):
    st.warning(st.session_state.pop("fleet_msg"))

# ------------------------------------------------------------------------------------------ re-diagnose
st.subheader(T("ui.fleet.rediagnose_title"))
st.caption(T("ui.fleet.rediagnose_intro"))
if st.button(T("ui.fleet.rediagnose"), key="fleet_rediagnose", icon=":material/refresh:"):
    with st.spinner(T("ui.fleet.rediagnosing")):
        st.session_state["fleet_rediag"] = sessions.rediagnose_fleet(store)
    st.rerun()
res = st.session_state.get("fleet_rediag")
if res:
    st.success(T("ui.fleet.rediagnosed", n=res["rediagnosed"], changed=res["changed"], explained=res["explained"],
                 before=res["queue_before"], after=res["queue_after"]))
    if res["explained_by"]:
        # as text, not a data grid: a handful of rows, each id readable, copyable and a link to its sessions
        st.markdown(f"**{T('ui.fleet.col_explained')}**\n\n" + "\n".join(
            f"- [{safe.md_inline(k, 120)}]({_link('cause', k)}): {v}" for k, v in res["explained_by"].items()))
    if res["errors"]:
        st.warning(T("ui.fleet.rediagnose_errors", n=len(res["errors"])))
