"""Check that the held-out evaluation set is still unseen: no KB entry, test or tuning case cites its threads.

The held-out set (tests/eval/heldout/) must come from threads that nothing the KB was written or tuned
against refers to.  This script collects every URL cited in the repository's knowledge base (kb/*.yaml,
entry sources and test cases), in tests/ (every test, fixture, scenario and tuning case; the held-out
folder itself excluded) and in the documentation and code (docs/, diagnostics/, bench/, ui/,
scripts/), and reports each held-out case whose thread is among them.  It also reports held-out logs
that share distinctive lines with a KB test or tuning case (the same paste copied under another URL).

A case reported here must move to tests/eval/tuning/ (it has been seen) and a fresh, unseen case must
replace it in the held-out set; see docs/EVALUATION.md ("Protocol").

Usage:
    python bench/eval_check_heldout.py          # exit status 1 when a held-out case is cited or copied
    python bench/eval_check_heldout.py --json
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
HELDOUT = ROOT / "tests" / "eval" / "heldout"
# where citations are searched: every text file below these folders (the held-out set excluded)
SEARCH_DIRS = ("kb", "tests", "docs", "diagnostics", "bench", "ui", "scripts")
SEARCH_FILES = ("README.md",)
# this script's own examples; docs/EVALUATION.md is searched too: it must never name a held-out thread
EXCLUDED = {Path("bench/eval_check_heldout.py")}
TEXT_SUFFIXES = {".yaml", ".yml", ".md", ".txt", ".py", ".json", ".toml", ".cfg", ".rst", ".html"}
URL_RE = re.compile(r"https?://[^\s\"'<>()\[\]`|\\]+")
THREAD_RE = re.compile(r"https?://(?:www\.)?github\.com/([^/\s]+)/([^/\s#?]+)/(?:issues|pull|discussions)/(\d+)", re.I)
# repositories that were renamed or moved: both names denote the same threads
REPO_ALIASES = {
    "rocm/legacy-rocm-build": "rocm/rocm",
    "radeonopencompute/rocm": "rocm/rocm",
    "rocmsoftwareplatform/rocm": "rocm/rocm",
    "comfyanonymous/comfyui": "comfy-org/comfyui",
    "ggerganov/llama.cpp": "ggml-org/llama.cpp",
    "timdettmers/bitsandbytes": "bitsandbytes-foundation/bitsandbytes",
    "oobabooga/text-generation-webui": "oobabooga/textgen",
    "jmorganca/ollama": "ollama/ollama",
    "rocm-developer-tools/hip": "rocm/hip",
    "rocmsoftwareplatform/tensorflow-upstream": "rocm/tensorflow-upstream",
    "rocmsoftwareplatform/flash-attention": "rocm/flash-attention",
}
# a line is "distinctive" when it is long and carries a number (a path, address, pid, version or time),
# so the generic sentences every HIP or CUDA error prints do not count as copying
MIN_LINE = 50
MIN_SHARED_LINES = 3


def thread_key(url: str) -> str:
    """One key per thread: GitHub issues/PRs by (repository, number), other pages by address."""
    url = url.rstrip(".,;:")
    m = THREAD_RE.match(url)
    if m:
        repo = f"{m.group(1)}/{m.group(2)}".lower()
        repo = REPO_ALIASES.get(repo, repo)
        return f"github:{repo}#{m.group(3)}"
    url = re.sub(r"[#?].*$", "", url)
    return re.sub(r"^https?://(www\.)?", "", url).rstrip("/").lower()


def _text_files(root: Path):
    for name in SEARCH_FILES:
        p = root / name
        if p.is_file():
            yield p
    for d in SEARCH_DIRS:
        base = root / d
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            rel = p.relative_to(root)
            if not p.is_file() or p.suffix.lower() not in TEXT_SUFFIXES or rel in EXCLUDED:
                continue
            if (root / "tests" / "eval" / "heldout") in p.parents or "__pycache__" in p.parts:
                continue
            yield p


def cited_threads(root: Path = ROOT) -> dict[str, str]:
    """thread key -> first file (repo-relative) that cites it."""
    cited: dict[str, str] = {}
    for p in _text_files(root):
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for url in URL_RE.findall(text):
            cited.setdefault(thread_key(url), str(p.relative_to(root)))
    return cited


@dataclass
class HeldoutItem:
    name: str        # file stem (logs) or symptom id
    kind: str        # "log" or "symptom"
    source: str
    text: str


def heldout_items(heldout: Path = HELDOUT) -> list[HeldoutItem]:
    items: list[HeldoutItem] = []
    for p in sorted(heldout.glob("**/logs/*.yaml")):  # every batch (batch4/logs/, batch5/logs/, ...)
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        items.append(HeldoutItem(p.stem, "log", str(data.get("source", "")), str(data.get("log", ""))))
    for sym in sorted(heldout.glob("**/symptoms.yaml")):
        data = yaml.safe_load(sym.read_text(encoding="utf-8")) or {}
        for s in data.get("symptoms", []):
            items.append(HeldoutItem(str(s.get("id")), "symptom", str(s.get("source", "")), str(s.get("text", ""))))
    return items


def find_citations(root: Path = ROOT, heldout: Path = HELDOUT) -> list[dict[str, str]]:
    """Held-out cases whose thread is cited anywhere the KB or its tests could have been tuned on."""
    cited = cited_threads(root)
    hits = []
    for item in heldout_items(heldout):
        where = cited.get(thread_key(item.source))
        if where:
            hits.append({"case": item.name, "kind": item.kind, "source": item.source, "cited_in": where})
    return hits


def _distinctive_lines(text: str) -> set[str]:
    out = set()
    for line in text.splitlines():
        line = re.sub(r"\s+", " ", line).strip()
        if len(line) >= MIN_LINE and re.search(r"\d", line):
            out.add(line)
    return out


def _seen_texts(root: Path):
    """(file, text) of every log the KB was tested or tuned on: kb entries' cases, tuning cases, scenarios."""
    for p in sorted((root / "kb").glob("*.yaml")):
        yield str(p.relative_to(root)), p.read_text(encoding="utf-8", errors="replace")
    for d in ("tests/eval/tuning", "tests/eval/retired", "tests/scenarios", "tests/fixtures"):
        base = root / d
        if base.is_dir():
            for p in sorted(base.rglob("*")):
                if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES | {".log"}:
                    yield str(p.relative_to(root)), p.read_text(encoding="utf-8", errors="replace")


def find_copies(root: Path = ROOT, heldout: Path = HELDOUT) -> list[dict[str, object]]:
    """Held-out logs that share at least MIN_SHARED_LINES distinctive lines with one seen file."""
    seen = [(name, _distinctive_lines(text)) for name, text in _seen_texts(root)]
    hits = []
    for item in heldout_items(heldout):
        mine = _distinctive_lines(item.text)
        if not mine:
            continue
        for name, lines in seen:
            shared = mine & lines
            if len(shared) >= MIN_SHARED_LINES:
                hits.append({"case": item.name, "kind": item.kind, "file": name, "shared_lines": len(shared)})
    return hits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--thread", nargs="+", metavar="URL",
                    help="before reading a thread: say only whether each URL is a held-out thread (no case shown)")
    args = ap.parse_args(argv)
    if args.thread:
        held = {thread_key(i.source) for i in heldout_items()}
        taken = [u for u in args.thread if thread_key(u) in held]
        for u in args.thread:
            print(f"{'HELD OUT, do not read' if u in taken else 'free'}: {u}")
        return 1 if taken else 0
    cites, copies = find_citations(), find_copies()
    if args.json:
        print(json.dumps({"cited": cites, "copied": copies}, indent=2))
    else:
        n = len(heldout_items())
        print(f"held-out items checked: {n}")
        for h in cites:
            print(f"CITED  {h['case']} ({h['kind']}): {h['source']} is cited in {h['cited_in']}")
        for h in copies:
            print(f"COPIED {h['case']} ({h['kind']}): {h['shared_lines']} distinctive lines also in {h['file']}")
        if not cites and not copies:
            print("ok: no held-out thread is cited, no held-out log is copied in the KB, tests or tuning cases")
        else:
            print("move these cases to tests/eval/tuning/ and replace them with fresh unseen ones "
                  "(docs/EVALUATION.md, 'Protocol')")
    return 1 if cites or copies else 0


if __name__ == "__main__":
    sys.exit(main())
