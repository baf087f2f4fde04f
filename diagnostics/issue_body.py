"""A ready-to-paste GitHub issue body from a report (issue 18, "Copy as an issue").

The next step of many users is an upstream issue (ROCm, PyTorch, a model server).  The body carries what such a
thread asks for first: an environment table, the doctor's verdict and causes, and the relevant log lines in
collapsible ``<details>`` blocks.  The report is redacted first (secrets always; host, user and home paths when
*mask_identity*), and the body is kept under GitHub's limit of 65,536 characters by shortening the log blocks,
never the table or the causes.
"""
from __future__ import annotations

import html
import re
from typing import Any

GITHUB_LIMIT = 65_536
BUDGET = GITHUB_LIMIT - 1_536  # room for what the user adds above the body

# (label, fact names tried in order) of the environment table
ENV_ROWS = (
    ("OS", ("os.name",)), ("Kernel", ("os.kernel",)), ("Container", ("container.kind", "container.present")),
    ("GPU", ("gpu.names", "nvidia.gpu_names", "gpu.marketing_names")), ("GPU targets", ("gpu.gfx_targets", "nvidia.compute_caps")),
    ("GPU count", ("gpu.count",)), ("VRAM", ("gpu.vram_total_bytes",)), ("Host memory", ("host.mem_total_bytes",)),
    ("amdgpu driver", ("driver.amdgpu_version", "driver.amdgpu_loaded")), ("ROCm", ("rocm.version",)),
    ("NVIDIA driver", ("nvidia.driver_version",)), ("CUDA (driver)", ("nvidia.cuda_version",)),
    ("PyTorch", ("torch.version",)), ("PyTorch build", ("torch.build",)), ("HIP (torch)", ("torch.hip_version",)),
    ("CUDA (torch)", ("torch.cuda_version",)), ("torch sees GPU", ("torch.cuda_available",)),
    ("Python", ("python.version",)), ("HSA_OVERRIDE_GFX_VERSION", ("hsa_override.value",)),
)


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        v = "yes" if v else "no"
    elif isinstance(v, int) and v > 1 << 24:
        v = f"{v / (1 << 30):.1f} GiB"
    elif isinstance(v, list):
        v = ", ".join(map(str, v)) or "none"
    s = html.escape(str(v), quote=False).replace("|", "&#124;").replace("\n", " ")
    return s.replace("`", "&#96;")[:200]


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _details(summary: str, text: str) -> str:
    f = _fence(text)
    return f"<details><summary>{html.escape(summary, quote=False)}</summary>\n\n{f}text\n{text.rstrip()}\n{f}\n\n</details>\n"


def _log_lines(report: dict[str, Any], source: str, line: int | None, around: int = 3) -> str | None:
    """A few lines of the named log around *line* (1-based), or None."""
    for lg in report.get("logs") or []:
        if isinstance(lg, dict) and lg.get("name") == source and isinstance(line, int):
            lines = str(lg.get("text", "")).splitlines()
            lo, hi = max(0, line - 1 - around), min(len(lines), line + around)
            return "\n".join(lines[lo:hi])
    return None


def render_github_issue(report: dict[str, Any], *, mask_identity: bool = False, limit: int = BUDGET) -> str:
    """The issue body (Markdown with <details> blocks), redacted and at most *limit* characters."""
    from .redact import redact_report
    from .verdicts import compute, is_problem

    rep = redact_report(report, mask_identity=mask_identity)
    facts = rep.get("facts") if isinstance(rep.get("facts"), dict) else {}
    head = ["### Environment (collected by GPU doctor)", "", "| | |", "|---|---|"]
    for label, names in ENV_ROWS:
        for n in names:
            if facts.get(n) not in (None, "", []):
                head.append(f"| {label} | {_cell(facts[n])} |")
                break
    verdict = compute(rep)
    head += ["", f"**Verdict:** {verdict}" + (" (the run was stopped before it finished)" if rep.get("stopped") else ""), ""]
    diags = [d for d in rep.get("diagnoses") or [] if isinstance(d, dict)]
    problems = [d for d in diags if is_problem(d)]
    others = [d for d in diags if not is_problem(d) and not d.get("benign")]
    if problems:
        head += ["### Causes found", ""]
        for i, d in enumerate(problems, 1):
            conf = d.get("confidence")
            conf_s = f", confidence {conf:.2f}" if isinstance(conf, (int, float)) else ""
            head.append(f"{i}. **{_cell(d.get('title') or d.get('id'))}** (`{d.get('id')}`, {d.get('severity')}{conf_s})")
        head.append("")
    else:
        head += ["No known cause matched.", ""]
    if others:
        head.append("Possible, not confirmed: " + "; ".join(f"{_cell(d.get('title') or d.get('id'))} (`{d.get('id')}`)"
                                                          for d in others[:5]))
        head.append("")
    bad = [p for p in rep.get("probes") or [] if isinstance(p, dict) and p.get("status") in ("fail", "timeout", "crashed", "warn")]
    if bad:
        head += ["### Checks that did not pass", ""]
        head += [f"- {p.get('status')}: {_cell(p.get('title') or p.get('id'))}: {_cell(p.get('summary') or p.get('error') or '')}"
                 for p in bad]
        head.append("")
    gen = rep.get("generation")
    if isinstance(gen, dict) and gen.get("summary"):
        head += [f"**Test generation:** {_cell(gen.get('summary'))}", ""]

    # the evidence: per cause, the matched lines with a little context; then failing checks' own output
    blocks: list[tuple[str, str]] = []
    for d in problems + others[:3]:
        parts = []
        for e in (d.get("evidence") or [])[:6]:
            ctx = _log_lines(rep, str(e.get("source", "")), e.get("line"))
            where = str(e.get("source", "")) + (f":{e['line']}" if e.get("line") else "")
            parts.append(f"# {where}\n{ctx if ctx else e.get('excerpt', '')}")
        if parts:
            blocks.append((f"Evidence for {d.get('id')}", "\n".join(parts)))
    for p in bad:
        lines = [str(p["error"])] if p.get("error") else []
        lines += [f"{e.get('source', '')}: {e.get('excerpt', '')}" for e in (p.get("evidence") or [])[:8]]
        if p.get("output_tail"):
            lines.append(str(p["output_tail"]))
        if lines:
            blocks.append((f"Output of the check '{p.get('id')}'", "\n".join(lines)))
    for lg in rep.get("logs") or []:
        if isinstance(lg, dict) and str(lg.get("text", "")).strip():
            blocks.append((f"Log: {lg.get('name', '')}", str(lg["text"])))
    tail = ["", "<sub>Generated by GPU doctor (`python -m diagnostics sessions export ID --format github`); "
                "secrets were removed before export.</sub>", ""]
    body = "\n".join(head)
    room = limit - len(body) - len("\n".join(tail)) - 200
    out_blocks = []
    per = max(800, room // max(1, len(blocks))) if blocks else 0
    for summary, text in blocks:
        if room <= 600:
            out_blocks.append(f"<sub>{len(blocks) - len(out_blocks)} more block(s) left out to stay under GitHub's limit.</sub>\n")
            break
        cut = text
        cap = min(per, room - 300)
        if len(cut) > cap:  # keep the end of a log: the error is usually there
            cut = "[… " + f"{len(text) - cap:,} characters cut …]\n" + text[-cap:]
        blk = _details(summary, cut)
        out_blocks.append(blk)
        room -= len(blk)
    if out_blocks:
        body += "\n### Logs\n\n" + "\n".join(out_blocks)
    body += "\n".join(tail)
    return body[:limit]
