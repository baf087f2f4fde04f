"""From samples to facts, a one-line summary, chart rows and an SVG chart.  Standard library only."""
from __future__ import annotations

import html
from typing import Any, Iterable

GIB = 1024 ** 3
OUTSIDE = ("before", "after")
# fewer samples than this while generating are too few to judge GPU use from (the KB entries ask for it too)
MIN_GENERATING_SAMPLES = 3


def _gpus(samples: Iterable[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for s in samples:
        if isinstance(s, dict) and isinstance(s.get("gpu"), int):
            out.setdefault(s["gpu"], []).append(s)
    return out


def _vals(rows: Iterable[dict[str, Any]], key: str) -> list[float]:
    return [r[key] for r in rows if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]


def pick_gpu(samples: Iterable[dict[str, Any]]) -> int | None:
    """The GPU the work ran on: the one whose VRAM grew most, then the busiest while generating, then the first."""
    by = _gpus(samples)
    if not by:
        return None

    def score(item: tuple[int, list[dict[str, Any]]]) -> tuple[float, float, int]:
        g, rows = item
        vram = _vals(rows, "vram_used_bytes")
        growth = (max(vram) - vram[0]) if vram else 0
        busy = _vals([r for r in rows if r.get("phase") not in OUTSIDE], "busy_pct")
        return (growth, sum(busy) / len(busy) if busy else 0.0, -g)

    return max(by.items(), key=score)[0]


def monitor_facts(samples: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The ``monitor.*`` facts (see diagnostics/facts.py); a figure the samples do not hold is left out."""
    samples = list(samples)
    g = pick_gpu(samples)
    if g is None:
        return {}
    rows = [s for s in samples if s.get("gpu") == g]
    before = [r for r in rows if r.get("phase") == "before"]
    during = [r for r in rows if r.get("phase") not in OUTSIDE]
    after = [r for r in rows if r.get("phase") == "after"]
    gen = [r for r in rows if r.get("phase") == "generating"]
    f: dict[str, Any] = {"monitor.source": str(rows[-1].get("source") or "?"), "monitor.samples": len(rows),
                         "monitor.gpu_index": g, "monitor.generating_samples": len(gen)}
    busy = _vals(gen, "busy_pct")
    if busy:
        f["monitor.gpu_busy_peak_pct"] = float(max(busy))
        f["monitor.gpu_busy_mean_pct"] = round(sum(busy) / len(busy), 1)
    vram_all = _vals(rows, "vram_used_bytes")
    vb = _vals(before, "vram_used_bytes") or vram_all[:1]
    if vram_all:
        f["monitor.vram_peak_bytes"] = int(max(vram_all))
    if vb:
        f["monitor.vram_before_bytes"] = int(vb[-1])
        f["monitor.vram_growth_bytes"] = int(max(vram_all) - vb[-1])
    va = _vals(after, "vram_used_bytes")
    if va:
        f["monitor.vram_after_bytes"] = int(va[-1])
    total = _vals(rows, "vram_total_bytes")
    if total:
        f["monitor.vram_total_bytes"] = int(max(total))
        if vb and max(total) > 0:
            f["monitor.vram_others_before_fraction"] = round(vb[-1] / max(total), 4)
    watched = during + after or rows
    temps = _vals(watched, "temp_c") + _vals(watched, "temp_hot_c")
    if temps:
        f["monitor.temp_max_c"] = float(max(temps))
    power = _vals(watched, "power_w")
    if power:
        f["monitor.power_max_w"] = round(float(max(power)), 1)
    judged = [r for r in during if isinstance(r.get("throttle"), list)]
    if judged:
        idle_reasons = {x for r in before if isinstance(r.get("throttle"), list) for x in r["throttle"]}
        reasons: list[str] = []
        for r in judged:
            for x in r["throttle"]:
                # amd-smi's single THROTTLED flag is set at idle on some boards (ROCm/rocm-systems#11781):
                # only a flag that was clear before the run counts
                if x == "throttle_status" and x in idle_reasons:
                    continue
                if x not in reasons:
                    reasons.append(x)
        f["monitor.throttle_seen"] = bool(reasons)
        f["monitor.throttle_reasons"] = reasons
    return f


def _gib(b: Any) -> str:
    return f"{b / GIB:.1f}" if isinstance(b, (int, float)) else "?"


def summary_line(samples: Iterable[dict[str, Any]]) -> str:
    """One line for the CLI, e.g. ``GPU watch (nvidia-smi, GPU 0, 41 samples): busy 97% peak / 81% mean while
    generating; VRAM 0.5 -> 3.1 GiB peak -> 0.5 GiB after (of 140.0 GiB); max 41 °C, 312 W; no throttling``."""
    samples = list(samples)
    notes = list(getattr(samples, "notes", []) or [])
    if not samples:
        why = notes[-1] if notes else "no samples"
        return f"GPU watch: not watched ({why})"
    f = monitor_facts(samples)
    head = f"GPU watch ({f.get('monitor.source')}, GPU {f.get('monitor.gpu_index')}, {f.get('monitor.samples')} samples)"
    parts = []
    if "monitor.gpu_busy_peak_pct" in f:
        parts.append(f"busy {f['monitor.gpu_busy_peak_pct']:.0f}% peak / {f['monitor.gpu_busy_mean_pct']:.0f}% mean "
                     f"while generating ({f['monitor.generating_samples']} samples)")
    elif f.get("monitor.generating_samples", 0) == 0:
        parts.append("no sample while generating")
    if "monitor.vram_peak_bytes" in f:
        v = f"VRAM {_gib(f.get('monitor.vram_before_bytes'))} -> {_gib(f['monitor.vram_peak_bytes'])} GiB peak"
        if "monitor.vram_after_bytes" in f:
            v += f" -> {_gib(f['monitor.vram_after_bytes'])} GiB after"
        if "monitor.vram_total_bytes" in f:
            v += f" (of {_gib(f['monitor.vram_total_bytes'])} GiB)"
        parts.append(v)
    tp = []
    if "monitor.temp_max_c" in f:
        tp.append(f"{f['monitor.temp_max_c']:.0f} °C")
    if "monitor.power_max_w" in f:
        tp.append(f"{f['monitor.power_max_w']:.0f} W")
    if tp:
        parts.append("max " + ", ".join(tp))
    if "monitor.throttle_seen" in f:
        parts.append("throttled: " + ", ".join(f["monitor.throttle_reasons"]) if f["monitor.throttle_seen"]
                     else "no throttling")
    line = head + ": " + "; ".join(parts)
    if notes:
        line += f"  [{len(notes)} note{'s' if len(notes) > 1 else ''}: {notes[0]}]"
    return line


def chart_data(samples: Iterable[dict[str, Any]], gpu: int | None = None) -> list[dict[str, Any]]:
    """Rows for ``st.line_chart(rows, x="t_s", y=[...])``, one per sample of one GPU (the watched one by default).

    Keys: ``t_s`` (seconds from the start), ``phase`` (str), ``busy_pct``, ``vram_used_gib``, ``temp_c``,
    ``power_w``, ``sclk_mhz``; a value the source did not give is None (a gap in the line).
    """
    samples = list(samples)
    if gpu is None:
        gpu = pick_gpu(samples)
    rows = []
    for s in samples:
        if s.get("gpu") != gpu:
            continue
        v = s.get("vram_used_bytes")
        rows.append({"t_s": s.get("t"), "phase": s.get("phase"), "busy_pct": s.get("busy_pct"),
                     "vram_used_gib": round(v / GIB, 3) if isinstance(v, (int, float)) else None,
                     "temp_c": s.get("temp_c"), "power_w": s.get("power_w"), "sclk_mhz": s.get("sclk_mhz")})
    return rows


def phase_spans(samples: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[{"phase": "loading", "start_s": 1.2, "end_s": 3.4}, ...]`` in order, from the samples' stamps."""
    spans: list[dict[str, Any]] = []
    for s in samples:
        t, p = s.get("t"), s.get("phase")
        if not isinstance(t, (int, float)):
            continue
        if spans and spans[-1]["phase"] == p:
            spans[-1]["end_s"] = t
        else:
            if spans:
                spans[-1]["end_s"] = max(spans[-1]["end_s"], t)
            spans.append({"phase": p, "start_s": t, "end_s": t})
    return spans


def to_record(samples: Any) -> dict[str, Any]:
    """What to store with a session: source, notes, facts, summary and the samples themselves."""
    samples_l = list(samples)
    return {"source": getattr(samples, "source", None) or (samples_l[-1].get("source") if samples_l else None),
            "interval_s": getattr(samples, "interval", None), "tried": list(getattr(samples, "tried", []) or []),
            "notes": list(getattr(samples, "notes", []) or []), "facts": monitor_facts(samples_l),
            "summary": summary_line(samples), "phases": phase_spans(samples_l), "samples": samples_l}


# ---------------------------------------------------------------------------------------------- SVG chart

_PHASE_COLOURS = {"before": "#eeeeee", "after": "#eeeeee", "loading": "#fde2b8", "warming up": "#fff3b0",
                  "generating": "#c9f0c9", "comparing with the cpu": "#dde6ff"}


def svg_chart(samples: Iterable[dict[str, Any]], width: int = 760, title: str = "GPU during the test generation") -> str:
    """A self-contained SVG: busy %, VRAM and power over time, phases shaded behind (no plotting library)."""
    samples = list(samples)
    rows = chart_data(samples)
    spans = phase_spans([s for s in samples if s.get("gpu") == pick_gpu(samples)])
    panels = [("busy_pct", "GPU busy %", "#1f77b4"), ("vram_used_gib", "VRAM used (GiB)", "#9467bd"),
              ("power_w", "power (W)", "#d62728"), ("temp_c", "temperature (°C)", "#ff7f0e")]
    panels = [p for p in panels if any(isinstance(r.get(p[0]), (int, float)) for r in rows)]
    ph, top, left, right = 110, 30, 60, 20
    height = top + len(panels) * (ph + 25) + 40
    tmax = max([r["t_s"] for r in rows if isinstance(r.get("t_s"), (int, float))] or [1.0]) or 1.0
    pw = width - left - right

    def x(t: float) -> float:
        return left + pw * t / tmax

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="11">', f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13" font-weight="bold">{html.escape(title)}</text>']
    for i, (key, label, colour) in enumerate(panels):
        y0 = top + i * (ph + 25)
        vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        vmax = max(vals + [100.0 if key == "busy_pct" else 0.0]) or 1.0
        vmax *= 1.05
        for sp in spans:
            c = _PHASE_COLOURS.get(str(sp["phase"]), "#f6f6f6")
            out.append(f'<rect x="{x(sp["start_s"]):.1f}" y="{y0}" width="{max(0.5, x(sp["end_s"]) - x(sp["start_s"])):.1f}" '
                       f'height="{ph}" fill="{c}"/>')
        out.append(f'<rect x="{left}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        out.append(f'<text x="{left + 4}" y="{y0 + 12}">{html.escape(label)} (max {max(vals):.1f})</text>')
        out.append(f'<text x="{left - 4}" y="{y0 + 10}" text-anchor="end">{vmax:.0f}</text>')
        out.append(f'<text x="{left - 4}" y="{y0 + ph}" text-anchor="end">0</text>')
        pts = " ".join(f"{x(r['t_s']):.1f},{y0 + ph - ph * r[key] / vmax:.1f}" for r in rows
                       if isinstance(r.get(key), (int, float)) and isinstance(r.get("t_s"), (int, float)))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{pts}"/>')
    yb = top + len(panels) * (ph + 25)
    out.append(f'<text x="{left}" y="{yb}">0 s</text><text x="{left + pw}" y="{yb}" text-anchor="end">{tmax:.1f} s</text>')
    lx = left
    seen = []
    for sp in spans:
        if sp["phase"] in seen:
            continue
        seen.append(sp["phase"])
        c = _PHASE_COLOURS.get(str(sp["phase"]), "#f6f6f6")
        out.append(f'<rect x="{lx}" y="{yb + 10}" width="10" height="10" fill="{c}" stroke="#999"/>'
                   f'<text x="{lx + 14}" y="{yb + 19}">{html.escape(str(sp["phase"]))}</text>')
        lx += 24 + 6 * len(str(sp["phase"]))
    out.append("</svg>")
    return "\n".join(out)
