"""How sturdy the signatures are: the tuning logs the doctor gets right, wrapped the ways real pastes wrap them.

A log reaches the doctor through layers its entries were not written from: journald or docker prefixes, ANSI
colour, a terminal or forum that hard-wraps long lines, CRLF line ends, a Markdown quote, a logging framework's
timestamp, a wrapper's stream tag (SwarmUI ``[ComfyUI-0/STDERR]``, k8s ``[pod/x/c]``, docker compose ``svc-1  | ``,
vLLM/Ray ``(RayWorkerWrapper pid=1) INFO 12-02 ...``, glog ``I1202 ...]``), full-width punctuation,
HTML entities. None of these changes the failure, so none may change the first cause. This bench takes every
tuning log (``tests/eval/tuning``, never the held-out sets) whose first cause is right as pasted, applies each
layer on its own, and reports for each layer the share of those logs whose first cause stays right (and, for
the healthy logs, whether a layer makes an error-level finding appear).

    python bench/eval_perturb.py            # a table per layer
    python bench/eval_perturb.py --json     # the figures as JSON
    python bench/eval_perturb.py --show journald   # which cases a layer breaks (tuning cases only)

Figures go to docs/BENCHMARKS.md ("Sturdiness of signatures"). tests/test_perturb.py holds the floor.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from eval_kb import TUNING_DIR, Case, evaluate, load_cases  # noqa: E402


def _lines(fn: Callable[[int, str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(fn(i, ln) for i, ln in enumerate(text.split("\n")))


def _hard_wrap(width: int) -> Callable[[str], str]:
    """A terminal or a pasting tool that cuts every line at *width* columns, mid-word."""
    def wrap(text: str) -> str:
        out = []
        for ln in text.split("\n"):
            out.extend([ln[i:i + width] for i in range(0, len(ln), width)] or [""])
        return "\n".join(out)
    return wrap


def _word_wrap(width: int) -> Callable[[str], str]:
    """A forum or mail client that word-wraps long lines."""
    def wrap(text: str) -> str:
        return "\n".join("\n".join(textwrap.wrap(ln, width, break_long_words=False, break_on_hyphens=False)) or ""
                         for ln in text.split("\n"))
    return wrap


_FULLWIDTH = str.maketrans({":": "：", ",": "，", "(": "（", ")": "）", ";": "；", "!": "！", "?": "？"})
_ANSI_WORD = re.compile(r"(?i)\b(error|warning|failed|fatal|exception)\b")

LAYERS: dict[str, Callable[[str], str]] = {
    "journald": _lines(lambda i, ln: f"Dec 02 01:02:{i % 60:02d} gpu-box python3[4711]: {ln}"),
    "docker-timestamps": _lines(lambda i, ln: f"2026-12-02T01:02:{i % 60:02d}.123456789Z {ln}"),
    "k8s-stream": _lines(lambda i, ln: f"[pod/trainer-7c9f/worker] {ln}"),
    "swarmui-tag": _lines(lambda i, ln: f"01:02:{i % 60:02d}.123 [Debug] [ComfyUI-0/STDERR] {ln}"),
    "python-logging": _lines(lambda i, ln: f"2026-12-02 01:02:{i % 60:02d},123 - app - ERROR - {ln}"),
    "vllm-ray": _lines(lambda i, ln: f"(RayWorkerWrapper pid=4711) INFO 12-02 01:02:{i % 60:02d} [worker.py:{100 + i}] {ln}"),
    "docker-compose": _lines(lambda i, ln: f"comfyui-1  | {ln}"),
    "glog": _lines(lambda i, ln: f"I1202 01:02:{i % 60:02d}.123456  4711 runner.cc:{100 + i}] {ln}"),
    "ansi-colour": lambda text: _ANSI_WORD.sub(lambda m: f"\x1b[1;31m{m.group(0)}\x1b[0m", text),
    "ansi-lines": _lines(lambda i, ln: f"\x1b[33m{ln}\x1b[0m" if ln else ln),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "markdown-quote": _lines(lambda i, ln: f"> {ln}"),
    "code-fence": lambda text: f"Here is my log:\n\n```\n{text}\n```\n\nAny idea?",
    "indent": _lines(lambda i, ln: f"    {ln}"),
    "hard-wrap-80": _hard_wrap(80),
    "word-wrap-72": _word_wrap(72),
    "fullwidth-punct": lambda text: text.translate(_FULLWIDTH),
    "html-entities": lambda text: text.replace('"', "&quot;").replace("'", "&#39;").replace("<", "&lt;")
                                      .replace(">", "&gt;"),
}


def run(layers: list[str] | None = None) -> dict[str, dict]:
    cases = load_cases(TUNING_DIR)
    base = {o.case.name: o for o in evaluate(cases)}
    right = [c for c in cases if not c.negative and base[c.name].top1]
    healthy = [c for c in cases if c.negative and base[c.name].passed]
    out: dict[str, dict] = {"_base": {"right": len(right), "healthy_clean": len(healthy), "cases": len(cases)}}
    for name in layers or list(LAYERS):
        fn = LAYERS[name]
        moved = [Case(**{**c.__dict__, "log": fn(c.log)}) for c in right + healthy]
        res = evaluate(moved)
        kept = [o for o in res if not o.case.negative and o.top1]
        broken = [o for o in res if not o.case.negative and not o.top1]
        alarms = [o for o in res if o.case.negative and not o.passed]
        out[name] = {"kept": len(kept), "of": len(right), "share": round(len(kept) / max(1, len(right)), 3),
                     "healthy_alarms": len(alarms),
                     "broken": [{"case": o.case.name, "expected": o.case.expected, "got": o.causes[:2]} for o in broken],
                     "alarmed": [{"case": o.case.name, "got": o.alarms[:2]} for o in alarms]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", help="list the cases this layer breaks")
    ap.add_argument("--layer", action="append", choices=list(LAYERS), help="only these layers")
    args = ap.parse_args(argv)
    res = run(args.layer or ([args.show] if args.show else None))
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    b = res.pop("_base")
    print(f"tuning logs: {b['cases']}; first cause right as pasted: {b['right']}; healthy logs clean: "
          f"{b['healthy_clean']}")
    print(f"{'layer':20} {'first cause kept':>18} {'healthy alarms':>15}")
    for name, r in res.items():
        print(f"{name:20} {r['kept']:>7}/{r['of']:<4} {r['share']:>6.1%} {r['healthy_alarms']:>15}")
    if args.show:
        for x in res[args.show]["broken"]:
            print(f"  broken: {x['case']}: expected {x['expected']}, got {x['got']}")
        for x in res[args.show]["alarmed"]:
            print(f"  alarm on a healthy log: {x['case']}: {x['got']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
