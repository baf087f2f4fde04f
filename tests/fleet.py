"""A realistic fleet of saved sessions for the fleet-view tests and benchmark (no tests here).

Built from real material in this repository (never tests/eval/heldout):
- the error logs of tests/eval/tuning/*.yaml (real user reports, each with its source URL), each one put where a
  live run would have it: the output of a crashed "torch" probe (stderr of the child that ran the user's code);
- the machine facts parsed from the real tool dumps in tests/fixtures/dumps/{rocminfo,collect_env}/*.txt.

Each distinct (log, machine) pair is diagnosed once by the real service (service.rediagnose, today's KB, or the
KB directory given); the fleet repeats those sessions over many hosts and weeks, with the per-run details a real
fleet varies (pids, addresses, home directories) varied, so signatures have to be normalised to group.
"""
from __future__ import annotations

import copy
import random
import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
TUNING = ROOT / "tests" / "eval" / "tuning"
DUMPS = ROOT / "tests" / "fixtures" / "dumps"
T0 = datetime(2026, 9, 1)
USERS = ["alice", "bob", "chen", "dana", "li.wei", "ops"]


def cases() -> list[dict[str, Any]]:
    out = []
    for p in sorted(TUNING.glob("*.yaml")):
        d = yaml.safe_load(p.read_text(encoding="utf-8"))
        if isinstance(d, dict) and d.get("log"):
            out.append({"name": p.stem, "expected": d.get("expected"), "source": d.get("source"), "log": d["log"]})
    return out


def machines() -> list[dict[str, Any]]:
    """Facts of real machines: every rocminfo / collect_env dump fixture that yields a GPU or torch fact."""
    from diagnostics.service import parse_dumps

    out = []
    for kind in ("rocminfo", "collect_env"):
        for p in sorted((DUMPS / kind).glob("*.txt")):
            facts, _ = parse_dumps([(p.name, p.read_text(encoding="utf-8", errors="replace"))])
            keep = {k: v for k, v in facts.items() if k.split(".")[0] in ("gpu", "rocm", "torch", "os", "cuda")}
            if keep.get("gpu.names") or keep.get("torch.version"):
                out.append({"name": f"{kind}/{p.stem}", "facts": keep})
    return out


def _probe(status: str, log: str = "") -> list[dict[str, Any]]:
    probes = [{"id": "devices", "title": "GPU device nodes", "status": "ok", "duration_s": 0.02, "error": None,
               "facts": {}, "evidence": [], "output_tail": ""}]
    torch = {"id": "torch", "title": "PyTorch on the GPU", "status": status, "duration_s": 2.5,
             "error": None if status == "ok" else "exited with status 1", "facts": {}, "evidence": [],
             "output_tail": log[-4000:]}
    if log:
        torch["logs"] = [{"name": "stderr", "text": log}]
    return probes + [torch]


def base_reports(kb_dir: str | None = None, healthy: int = 12) -> list[dict[str, Any]]:
    """One diagnosed report per tuning log (on the machine picked for it) plus *healthy* clean runs."""
    from diagnostics import service

    ms = machines()
    out = []
    for i, c in enumerate(cases()):
        m = ms[i % len(ms)]
        rep = service.new_report("live")
        rep.update(facts=dict(m["facts"]), probes=_probe("crashed", c["log"]))
        rep = service.rediagnose(rep, kb_dir)
        rep["_case"] = c["name"]
        out.append(rep)
    for i in range(healthy):
        m = ms[i % len(ms)]
        rep = service.new_report("live")
        rep.update(facts=dict(m["facts"]), probes=_probe("ok"))
        rep = service.rediagnose(rep, kb_dir)
        rep["_case"] = "healthy"
        out.append(rep)
    return out


def _vary(text: str, rng: random.Random) -> str:
    user = rng.choice(USERS)
    # addresses vary from run to run; 8-digit codes (0xc0000005, an NTSTATUS that entries match) do not
    text = re.sub(r"0x[0-9a-fA-F]{9,}", lambda m: "0x" + "".join(rng.choice("0123456789abcdef")
                                                                 for _ in range(len(m.group(0)) - 2)), text)
    text = re.sub(r"/home/[^/\s]+/", f"/home/{user}/", text)
    text = re.sub(r"\b(pid|PID|process) (\d+)", lambda m: f"{m.group(1)} {rng.randrange(1000, 99999)}", text)
    return text


def fleet(bases: list[dict[str, Any]], n: int, seed: int = 7, hosts: int = 40, days: int = 90) -> list[dict[str, Any]]:
    """*n* session reports drawn from *bases*: healthy runs are common, failures follow a long tail."""
    rng = random.Random(seed)
    weights = [8.0 if b.get("_case") == "healthy" else 1.0 / (1 + (i % 17)) for i, b in enumerate(bases)]
    out = []
    for _ in range(n):
        b = rng.choices(bases, weights)[0]
        r = copy.deepcopy(b)
        r.pop("_case", None)
        r["session_id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        r["host"] = f"gpu-node-{rng.randrange(hosts):02d}.lab.example.org"
        r["created_at"] = (T0 + timedelta(seconds=rng.randrange(days * 86400))).isoformat() + "Z"
        for p in r.get("probes") or []:
            if p.get("output_tail"):
                p["output_tail"] = _vary(p["output_tail"], rng)
                for lg in p.get("logs") or []:
                    lg["text"] = p["output_tail"] if len(lg["text"]) <= 4000 else _vary(lg["text"], rng)
        out.append(r)
    return out
