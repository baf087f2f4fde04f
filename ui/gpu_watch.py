"""The GPU watch of a test generation: busy %, VRAM, power over time, coloured by the generation's phase."""
from __future__ import annotations

from typing import Any

import streamlit as st

from ui import safe
from ui.common import T


def show(gen: dict[str, Any]) -> None:
    mon = gen.get("monitor") or {}
    samples = mon.get("samples") or []
    if mon.get("summary"):
        st.caption(safe.md_inline(mon["summary"]))
    from diagnostics.sessions import chart_data  # lazily: the store behind it is not needed for the first page

    rows = chart_data(samples) if samples else []
    if len(rows) < 2:
        for n in (mon.get("notes") or [])[:3]:
            st.caption(safe.md_inline(n))
        return
    t, phase = T("ui.gpu_watch.axis_seconds"), T("ui.gpu_watch.axis_phase")
    series = [("busy_pct", T("ui.gpu_watch.busy")), ("vram_used_gib", T("ui.gpu_watch.vram")),
              ("power_w", T("ui.gpu_watch.power")), ("temp_c", T("ui.gpu_watch.temp"))]
    shown = [(k, label) for k, label in series if any(r.get(k) is not None for r in rows)]
    st.markdown(T("ui.gpu_watch.title"))
    cols = st.columns(max(1, min(len(shown), 4)))
    for col, (key, label) in zip(cols, shown):
        data = [{t: r["t_s"], label: r[key], phase: r.get("phase") or "?"} for r in rows if r.get(key) is not None]
        with col:
            st.caption(label)
            st.line_chart(data, x=t, y=label, color=phase, height=180)
