"""Watch the GPU while it works: busy %, VRAM, temperature, power and clocks, sampled during the test generation.

Public API (standard library only, so it runs wherever the generation runs):

  watch(fn, *args, interval=0.2, root="/", tools=None, **kwargs) -> (fn_result, samples)
      run fn while a sampler watches; fn's ``progress`` callback (if it has one) sets the phase of the samples
  Monitor(interval, root, tools)            start() / set_phase(text) / stop() -> samples, or a with-block
  monitor_facts(samples) -> dict            the ``monitor.*`` facts for the matcher
  summary_line(samples) -> str              one line for the CLI
  chart_data(samples) -> list[dict]         rows for st.line_chart(rows, x="t_s", y=["busy_pct", ...])
  phase_spans(samples) -> list[dict]        [{"phase", "start_s", "end_s"}] for shading the chart
  to_record(samples) -> dict                what to store with a session (samples, facts, notes, summary)
  svg_chart(samples) -> str                 a self-contained SVG of the same chart

Sources, tried in this order unless ``tools`` names others: amdgpu sysfs (``gpu_busy_percent``,
``mem_info_vram_used``, hwmon), ``amd-smi metric --json``, ``rocm-smi --json``, ``nvidia-smi --query-gpu ...
-lms`` (nvidia-smi first on a machine with an NVIDIA GPU).  A sample is a dict: ``t`` (s since the monitor
started), ``phase``, ``source``, ``gpu`` and the readings (``busy_pct``, ``vram_used_bytes``,
``vram_total_bytes``, ``temp_c``, ``temp_hot_c``, ``power_w``, ``power_cap_w``, ``sclk_mhz``, ``throttle``).
"""
from __future__ import annotations

from .core import DEFAULT_INTERVAL, Monitor, SampleList, normalize_phase, watch
from .summary import chart_data, monitor_facts, phase_spans, pick_gpu, summary_line, svg_chart, to_record

__all__ = ["DEFAULT_INTERVAL", "Monitor", "SampleList", "chart_data", "monitor_facts", "normalize_phase",
           "phase_spans", "pick_gpu", "summary_line", "svg_chart", "to_record", "watch"]
