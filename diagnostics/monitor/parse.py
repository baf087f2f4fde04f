"""Parsers for what the GPU sampling sources print or expose: one reading per GPU, plain dicts.

A reading has ``gpu`` (int) and any of: ``busy_pct``, ``vram_used_bytes``, ``vram_total_bytes``, ``temp_c``
(edge / GPU temperature), ``temp_hot_c`` (junction / hotspot), ``power_w``, ``power_cap_w``, ``sclk_mhz``,
``throttle`` (list of reason names).  A value the source does not have (``N/A``, ``[Not Supported]``) is left
out, never guessed.  Standard library only: this runs beside the generation child, and on machines that have
torch but none of the doctor's other dependencies.

Real formats these were written against (see tests/fixtures/monitor/*/SOURCE.md for the captures):

* nvidia-smi ``--query-gpu=...,clocks_throttle_reasons.active --format=csv,noheader,nounits``: one line per
  GPU and tick, ``0, 56, 26, 4301, 143771, 55, 83.92, 1320, 0x0000000000000000``; ``[N/A]`` and
  ``[Not Supported]`` for fields a board lacks (nvidia_gpu_exporter, ksysguard-gpu#27, netdata#10362).
* ``amd-smi metric --json``: a list of ``{"gpu": 0, "usage": {"gfx_activity": {"value": 42, "unit": "%"}},
  "power": {"socket_power": {...}, "throttle_status": "UNTHROTTLED"}, "mem_usage": {"used_vram": {...}}}``,
  or the same wrapped in ``{"gpu_data": [...]}`` (ROCm 7) (henrygd/beszel#737, nathaninline/ajean#39,
  ROCm/rocm-systems#2720).
* ``rocm-smi --showuse --showmeminfo vram --showtemp --showpower --showclocks --json``:
  ``{"card0": {"GPU use (%)": "0", "VRAM Total Used Memory (B)": "794341376", "Temperature (Sensor edge) (C)":
  "49.0", "Average Graphics Package Power (W)": "19.0", "sclk clock speed:": "(1090Mhz)"}}``, sometimes after
  warning lines (henrygd/beszel#414, marimo-team/marimo#9237, wandb/wandb#5449).
* amdgpu sysfs: ``gpu_busy_percent`` (0..100), ``mem_info_vram_used`` / ``_total`` (bytes), hwmon
  ``temp1_input`` (millidegrees, ``temp1_label`` = edge, ``temp2`` = junction), ``power1_average`` or
  ``power1_input`` (microwatts), ``power1_cap``, ``freq1_input`` (Hz), ``pp_dpm_sclk`` (``1: 1500Mhz *``)
  (kernel amdgpu docs; ilya-zlobintsev/amdgpu-sysfs-rs test data).
"""
from __future__ import annotations

import os
import re
from typing import Any

from ..smi_values import MIB, BadOutput, json_from, mem_bytes, number, value_unit

# NVML clocks event (formerly "throttle") reason bits, from nvml.h; the ones that cost speed are kept
NV_REASONS = {
    0x0000000000000004: "sw_power_cap",
    0x0000000000000008: "hw_slowdown",
    0x0000000000000020: "sw_thermal_slowdown",
    0x0000000000000040: "hw_thermal_slowdown",
    0x0000000000000080: "hw_power_brake_slowdown",
}
# harmless bits: gpu_idle 0x1, applications_clocks_setting 0x2, sync_boost 0x10, display_clock_setting 0x100

NVIDIA_FIELDS = ["index", "utilization.gpu", "memory.used", "memory.total", "temperature.gpu", "power.draw",
                 "clocks.sm", "clocks_throttle_reasons.active"]

_MHZ_RE = re.compile(r"(\d+(?:\.\d+)?)\s*mhz", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------- nvidia-smi


# --query-gpu field -> sample field, scale (MiB -> bytes: kept as an int)
_NVIDIA_SAMPLE_FIELDS = [("utilization.gpu", "busy_pct", 1), ("memory.used", "vram_used_bytes", MIB),
                         ("memory.total", "vram_total_bytes", MIB), ("temperature.gpu", "temp_c", 1),
                         ("power.draw", "power_w", 1), ("clocks.sm", "sclk_mhz", 1)]


def parse_nvidia_line(line: str, fields: list[str] | None = None) -> dict[str, Any]:
    """One line of ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits``."""
    fields = fields or NVIDIA_FIELDS
    parts = [p.strip() for p in line.strip().split(",")]
    if len(parts) != len(fields):
        raise BadOutput(f"expected {len(fields)} comma-separated fields, got {len(parts)}: {line[:80]!r}")
    got = dict(zip(fields, parts))
    idx = number(got.get("index"))
    if idx is None:
        raise BadOutput(f"no GPU index in {line[:80]!r}")
    r: dict[str, Any] = {"gpu": int(idx)}
    for query, field, scale in _NVIDIA_SAMPLE_FIELDS:
        v = number(got.get(query))
        if v is not None:
            r[field] = int(v * scale) if scale != 1 else v
    for key in ("clocks_throttle_reasons.active", "clocks_event_reasons.active"):
        raw = got.get(key)
        if raw is None:
            continue
        raw = raw.strip()
        if raw.startswith("["):
            continue
        try:
            mask = int(raw, 16) if raw.lower().startswith("0x") else int(raw)
        except ValueError:
            raise BadOutput(f"throttle mask is not a number: {raw[:40]!r}") from None
        r["throttle"] = [name for bit, name in NV_REASONS.items() if mask & bit]
    return r


# ---------------------------------------------------------------------------------------------- amd-smi


def _mem_bytes(obj: Any) -> int | None:
    return mem_bytes(obj, "mib")  # amd-smi gives sizes without a unit in MiB


def parse_amd_smi_metric(text: str) -> list[dict[str, Any]]:
    """``amd-smi metric --json`` (whole output, warnings before the JSON allowed)."""
    data = json_from(text)
    if isinstance(data, dict):
        data = data.get("gpu_data", data.get("gpus", [data]))
    if not isinstance(data, list):
        raise BadOutput("amd-smi JSON is not a list of GPUs")
    out = []
    for i, g in enumerate(data):
        if not isinstance(g, dict):
            continue
        r: dict[str, Any] = {"gpu": int(g["gpu"]) if isinstance(g.get("gpu"), int) else i}
        usage = g.get("usage")
        if isinstance(usage, dict):
            v, _ = value_unit(usage.get("gfx_activity"))
            if v is not None:
                r["busy_pct"] = v
        mem = g.get("mem_usage")
        if isinstance(mem, dict):
            b = _mem_bytes(mem.get("used_vram"))
            if b is not None:
                r["vram_used_bytes"] = b
            b = _mem_bytes(mem.get("total_vram"))
            if b is not None:
                r["vram_total_bytes"] = b
        temp = g.get("temperature")
        if isinstance(temp, dict):
            v, _ = value_unit(temp.get("edge"))
            if v is not None:
                r["temp_c"] = v
            v, _ = value_unit(temp.get("hotspot"))
            if v is not None:
                r["temp_hot_c"] = v
                r.setdefault("temp_c", v)
        power = g.get("power")
        if isinstance(power, dict):
            for key in ("socket_power", "average_socket_power", "current_socket_power"):
                v, _ = value_unit(power.get(key))
                if v is not None:
                    r["power_w"] = v
                    break
            ts = power.get("throttle_status")
            if isinstance(ts, str) and ts.strip().upper() == "THROTTLED":
                r["throttle"] = ["throttle_status"]
            elif isinstance(ts, str) and ts.strip().upper() == "UNTHROTTLED":
                r["throttle"] = []
        clock = g.get("clock")
        if isinstance(clock, dict):
            gfx = clock.get("gfx_0") or clock.get("gfx")
            if isinstance(gfx, dict):
                v, _ = value_unit(gfx.get("clk"))
                if v is not None:
                    r["sclk_mhz"] = v
        out.append(r)
    if not out:
        raise BadOutput("amd-smi JSON lists no GPU")
    return out


# ---------------------------------------------------------------------------------------------- rocm-smi


# rocm-smi JSON keys (lower-cased) -> sample field, how the value is kept; the first that matches wins
def _int_or_none(val: Any) -> int | None:
    v = number(val)
    return None if v is None else int(v)


def _mhz(val: Any) -> float | None:
    m = _MHZ_RE.search(str(val))
    return float(m.group(1)) if m else None


_ROCM_SMI_FIELDS: list[tuple[str, Any, Any]] = [
    ("busy_pct", lambda k: k == "gpu use (%)", number),
    ("vram_used_bytes", lambda k: k == "vram total used memory (b)", _int_or_none),
    ("vram_total_bytes", lambda k: k == "vram total memory (b)", _int_or_none),
    ("temp_c", lambda k: k.startswith("temperature (sensor edge)"), number),
    ("temp_hot_c", lambda k: k.startswith("temperature (sensor junction)"), number),
    ("power_w", lambda k: "graphics package power (w)" in k and "max" not in k, number),
    ("power_cap_w", lambda k: k.startswith("max graphics package power"), number),
    ("sclk_mhz", lambda k: k.startswith("sclk clock speed"), _mhz),
]


def parse_rocm_smi_json(text: str) -> list[dict[str, Any]]:
    """``rocm-smi --showuse --showmeminfo vram --showtemp --showpower --showclocks --json``."""
    data = json_from(text)
    if not isinstance(data, dict):
        raise BadOutput("rocm-smi JSON is not an object")
    out = []
    for key, card in data.items():
        m = re.match(r"^card(\d+)$", str(key))
        if not m or not isinstance(card, dict):
            continue          # "system" and other blocks
        r: dict[str, Any] = {"gpu": int(m.group(1))}
        for k, val in card.items():
            kl = k.lower()
            try:
                field, conv = next(((name, conv) for name, is_it, conv in _ROCM_SMI_FIELDS if is_it(kl)), (None, None))
                if field is None:
                    continue
                v = conv(val)
                if v is not None:
                    r[field] = v
            except BadOutput:
                raise BadOutput(f"rocm-smi field {k!r} has a value that is not a number: {str(val)[:40]!r}") from None
        if "temp_c" not in r and "temp_hot_c" in r:
            r["temp_c"] = r["temp_hot_c"]
        out.append(r)
    if not out:
        raise BadOutput("rocm-smi JSON lists no card")
    return out


# ---------------------------------------------------------------------------------------------- sysfs

THERMAL_MARGIN_C = 5.0      # within this of a sensor's critical limit counts as thermal throttling
POWER_CAP_SHARE = 0.97      # average power at or above this share of the cap counts as power-capped


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("ascii", "replace").strip()
    except OSError:
        return None


def _read_int(path: str) -> int | None:
    s = _read(path)
    if s is None:
        return None
    try:
        return int(s.split()[0])
    except (ValueError, IndexError):
        return None


def amd_cards(root: str = "/") -> list[str]:
    """``/sys/class/drm/cardN/device`` folders of AMD GPUs that expose busy % or VRAM use (sorted by N)."""
    base = os.path.join(root, "sys", "class", "drm")
    try:
        names = os.listdir(base)
    except OSError:
        return []
    found = []
    for name in names:
        m = re.match(r"^card(\d+)$", name)
        if not m:
            continue
        dev = os.path.join(base, name, "device")
        vendor = _read(os.path.join(dev, "vendor"))
        if vendor is not None and vendor.lower() != "0x1002":
            continue
        if os.path.exists(os.path.join(dev, "gpu_busy_percent")) or os.path.exists(
                os.path.join(dev, "mem_info_vram_used")):
            found.append((int(m.group(1)), dev))
    return [d for _, d in sorted(found)]


def hwmon_dir(dev: str) -> str | None:
    base = os.path.join(dev, "hwmon")
    try:
        names = sorted(n for n in os.listdir(base) if n.startswith("hwmon"))
    except OSError:
        return None
    return os.path.join(base, names[0]) if names else None


def current_dpm_mhz(text: str | None) -> float | None:
    """The starred level of ``pp_dpm_sclk`` (``1: 1500Mhz *``); None when none or several are starred."""
    if not text:
        return None
    starred = [ln for ln in text.splitlines() if ln.rstrip().endswith("*")]
    if len(starred) != 1:
        return None
    m = _MHZ_RE.search(starred[0])
    if not m or float(m.group(1)) <= 0:
        return None
    return float(m.group(1))


def read_sysfs_card(dev: str, gpu: int) -> dict[str, Any]:
    """One reading of an amdgpu card's sysfs folder (``.../device``)."""
    r: dict[str, Any] = {"gpu": gpu}
    v = _read_int(os.path.join(dev, "gpu_busy_percent"))
    if v is not None and 0 <= v <= 100:
        r["busy_pct"] = float(v)
    v = _read_int(os.path.join(dev, "mem_info_vram_used"))
    if v is not None and v >= 0:
        r["vram_used_bytes"] = v
    v = _read_int(os.path.join(dev, "mem_info_vram_total"))
    if v is not None and v > 0:
        r["vram_total_bytes"] = v
    hw = hwmon_dir(dev)
    reasons: list[str] = []
    judged = False          # a critical limit or a power cap was readable: throttling can be judged
    if hw:
        temps: dict[str, float] = {}
        for n in (1, 2, 3):
            t = _read_int(os.path.join(hw, f"temp{n}_input"))
            if t is None:
                continue
            label = (_read(os.path.join(hw, f"temp{n}_label")) or {1: "edge", 2: "junction", 3: "mem"}[n]).lower()
            temps[label] = t / 1000.0
            crit = _read_int(os.path.join(hw, f"temp{n}_crit"))
            if crit and 0 < crit < 200_000:       # some boards report a placeholder far above any real limit
                judged = True
                if t / 1000.0 >= crit / 1000.0 - THERMAL_MARGIN_C:
                    reasons.append(f"temp_{label}_near_crit")
        if "edge" in temps:
            r["temp_c"] = temps["edge"]
        if "junction" in temps:
            r["temp_hot_c"] = temps["junction"]
        if "temp_c" not in r and temps:
            r["temp_c"] = max(temps.values())
        p = _read_int(os.path.join(hw, "power1_average"))
        if p is None or p == 0:
            p = _read_int(os.path.join(hw, "power1_input")) or p
        if p is not None:
            r["power_w"] = p / 1e6
        cap = _read_int(os.path.join(hw, "power1_cap"))
        if cap:
            judged = True
            r["power_cap_w"] = cap / 1e6
            if p is not None and p >= POWER_CAP_SHARE * cap:
                reasons.append("power_at_cap")
        f = _read_int(os.path.join(hw, "freq1_input"))
        if f:
            r["sclk_mhz"] = f / 1e6
    if "sclk_mhz" not in r:
        mhz = current_dpm_mhz(_read(os.path.join(dev, "pp_dpm_sclk")))
        if mhz is not None:
            r["sclk_mhz"] = mhz
    if judged:
        r["throttle"] = reasons
    return r
