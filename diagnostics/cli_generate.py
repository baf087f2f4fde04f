"""``generate``: the test generation alone (shared/CONTRACT.md), as a command of the CLI.

A front end over ``diagnostics.generation.run_generation``; the findings are matched through the service."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .cli import _h
from .generation import render_text, run_generation
from .report import render_diagnoses
from .service import diagnose_text


def register_cli(subparsers: Any) -> None:
    sp = subparsers.add_parser("generate", help=_h("generate.the_test_generation_alone"),
                               description="Load a causal LM in a child process of the target interpreter, "
                                           "generate, and report device, speed and memory.")
    sp.add_argument("--model", default=None, metavar="PATH",
                    help="local model directory or a model id already in the HF cache (never downloaded); "
                         "default: the built-in tiny model; 'builtin:1b' builds a ~1B random model")
    sp.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    sp.add_argument("--max-new-tokens", type=int, default=32, metavar="N")
    sp.add_argument("--python", default=sys.executable, metavar="PATH",
                    help="interpreter whose torch is diagnosed (default: this one)")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--timeout", type=float, default=600, metavar="S")
    sp.add_argument("--dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"])
    sp.add_argument("--device-map", default=None, metavar="MAP",
                    help="passed to from_pretrained, e.g. 'auto' (needs accelerate)")
    sp.add_argument("--no-compare-cpu", dest="compare_cpu", action="store_false",
                    help="skip the run of the same model on the CPU")
    sp.add_argument("--force-load", action="store_true", help="load even when the estimate says it will not fit")
    sp.add_argument("--no-diagnose", dest="diagnose", action="store_false",
                    help="do not match the findings against the knowledge base")
    sp.set_defaults(func=cmd_generate)


def _diagnose(g: dict[str, Any]) -> dict[str, Any] | None:
    logs = [("generation", g.get("log") or "")] + [(e["source"], e["excerpt"]) for e in g.get("evidence") or []]
    try:
        return diagnose_text(logs=logs, dumps=[], facts=g.get("facts") or {})
    except Exception as exc:  # noqa: BLE001 - the figures matter more than the matching
        return {"diagnoses": [], "error": f"{type(exc).__name__}: {exc}"}


def cmd_generate(args: argparse.Namespace) -> int:
    if args.max_new_tokens < 1:
        print("error: --max-new-tokens must be at least 1", file=sys.stderr)
        return 2
    interactive = sys.stderr.isatty()

    def show(msg: str) -> None:
        sys.stderr.write(("\r\033[K" if interactive else "") + f"generate: {msg}" + ("" if interactive else "\n"))
        sys.stderr.flush()

    g = run_generation(python=args.python, model=args.model, device=args.device,
                       max_new_tokens=args.max_new_tokens, timeout=args.timeout, compare_cpu=args.compare_cpu,
                       progress=show, dtype=args.dtype, device_map=args.device_map, force_load=args.force_load)
    if interactive:
        sys.stderr.write("\r\033[K")
    diag = _diagnose(g) if args.diagnose else None
    if diag is not None:
        g["diagnoses"] = diag.get("diagnoses", [])
    if args.json:
        sys.stdout.write(json.dumps(g, indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        print(render_text(g))
        if diag and diag.get("diagnoses"):
            print("\nDiagnosis:")
            print(render_diagnoses(diag["diagnoses"], diag.get("not_ruled_out")))
    if g["status"] == "ok":
        return 0
    if g.get("error_kind") == "start-failed":
        return 2
    return 1
