"""Symptom descriptions typed by users, in Chinese or English, matched to KB entries.

Pasted logs are matched by the KB's own patterns (diagnostics/matcher.py).  People also *describe* what they
see ("显存不足", "生成非常慢", "torch.cuda.is_available() 返回 False", "GPU is not detected").  This module maps
such descriptions to KB ids through a declarative lexicon, ``diagnostics/i18n/symptoms.yaml``.

Matching is linear in the text: the text is normalised (NFKC folds full-width characters to half-width, case
folding, whitespace collapsed, spaces next to CJK characters dropped) and every phrase of the lexicon, escaped
as a literal and also spelled in traditional characters, is found in one RE2 set pass per chunk.  No phrase
can make matching slow, however the lexicon grows.

    match_symptoms("显存不足，一加载模型就报错")
    -> [{"id": "hip-out-of-memory", "score": 0.8, "phrase": "显存不足"}, ...]

``merge_symptoms(result, text, kb)`` adds those hints to a matcher result (see its docstring).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import re2
import yaml

LEXICON_PATH = Path(__file__).resolve().parent / "i18n" / "symptoms.yaml"
CHUNK = 256 * 1024           # characters per RE2 set pass (bounded DFA memory)
OVERLAP = 512                # phrases are short; a phrase split by a chunk boundary is still found
MAX_PHRASE = 200
SYMPTOM_CONFIDENCE_CAP = 0.6  # a description alone never outranks a log line or a measured fact much

# CJK ideographs, CJK punctuation and full-width forms (after NFKC most full-width forms are ASCII already)
_CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_WS = re.compile(r"\s+")
_WORD = re.compile(r"[0-9a-z_]")

# traditional <-> simplified for the characters the lexicon uses most (users in TW/HK write these)
_T2S_MAP_SRC = {k: v for k, v in {
    "顯": "显", "記": "记", "憶": "忆", "體": "体", "驅": "驱", "動": "动", "載": "载", "權": "权", "訪": "访",
    "問": "问", "檢": "检", "測": "测", "識": "识", "別": "别", "無": "无", "沒": "没", "會": "会", "運": "运",
    "與": "与", "組": "组", "裝": "装", "錯": "错", "誤": "误", "為": "为", "開": "开", "啟": "启", "時": "时",
    "間": "间", "這": "这", "個": "个", "種": "种", "應": "应", "對": "对", "還": "还", "樣": "样", "報": "报",
    "麼": "么", "滿": "满", "夠": "够", "換": "换", "轉": "转", "儲": "储", "內": "内", "異": "异", "設": "设",
    "備": "备", "數": "数", "據": "据", "執": "执", "訊": "讯", "號": "号", "極": "极", "卻": "却", "壞": "坏",
    "歸": "归", "殺": "杀", "編": "编", "譯": "译", "讀": "读", "寫": "写", "離": "离", "線": "线", "層": "层",
    "過": "过", "較": "较", "級": "级", "發": "发", "現": "现", "將": "将", "從": "从", "來": "来", "產": "产",
    "進": "进", "斷": "断", "狀": "状", "態": "态", "統": "统", "輸": "输", "認": "认", "證": "证", "簽": "签",
    "錄": "录", "佔": "占",
}.items() if len(k) == 1}


# simplified -> traditional, to add a traditional spelling of every lexicon phrase (cheaper than converting text)
_S2T = str.maketrans({v: k for k, v in _T2S_MAP_SRC.items() if v != k})
_ANY_CJK = re.compile(rf"[{_CJK}]")
# a space with a CJK character on either side; starts with a literal space so the scan skips to spaces fast
_SPACE_NEAR_CJK = re.compile(rf" (?:(?=[{_CJK}])|(?<=[{_CJK}] ))")


_WS = re.compile(r"\s+")
_FOLD_CHUNK = 1 << 16


def _cut(text: str, start: int) -> int:
    """Where the chunk from *start* ends: after a newline near start + _FOLD_CHUNK, else between two ASCII
    characters (NFKC never composes across either), else at the size itself."""
    want = start + _FOLD_CHUNK
    if want >= len(text):
        return len(text)
    nl = text.find("\n", want, want + 65536)
    if nl >= 0:
        return nl + 1
    for p in range(want, min(len(text), want + 4096)):
        if text[p] < "\x80" and text[p - 1] < "\x80":
            return p
    return want


def _fold(text: str) -> str:
    """NFKC + casefold + whitespace runs -> one space, no space next to CJK, stripped; in chunks of about a MiB, so that the
    temporary arrays of NFKC and the folded copies stay bounded (the whole text at once took ~135x its size
    through str.split()'s list of words)."""
    parts: list[str] = []
    pos = 0
    while pos < len(text):
        end = _cut(text, pos)
        t = _WS.sub(" ", unicodedata.normalize("NFKC", text[pos:end]).casefold())
        if parts and parts[-1].endswith(" ") and t.startswith(" "):
            t = t[1:]
        if _ANY_CJK.search(t):
            t = _SPACE_NEAR_CJK.sub("", t)
        if parts and t:  # the CJK rule across the seam: no space next to a CJK character on either side
            prev = parts[-1]
            if prev.endswith(" ") and (_ANY_CJK.match(t, 0) or len(prev) > 1 and _ANY_CJK.match(prev, len(prev) - 2)):
                parts[-1] = prev[:-1]
            elif t.startswith(" ") and _ANY_CJK.match(prev, len(prev) - 1):
                t = t[1:]
        if t:
            parts.append(t)
        pos = end
    out = "".join(parts)
    del parts
    return out.strip(" ")


def normalize(text: str) -> str:
    """Fold a description for matching: NFKC (full-width -> half-width), case folding, whitespace runs -> one
    space, no space next to a CJK character.  (Traditional characters are handled by the lexicon, which also
    carries a traditional spelling of each phrase.)

    Every step is a single linear pass; the CJK step only runs when CJK characters occur."""
    return _fold(text)


@dataclass(frozen=True)
class Phrase:
    group: str
    text: str                    # as written in the lexicon (shown to the user)
    parts: tuple[int, ...]       # indices of the literal patterns that must all occur


@dataclass
class Lexicon:
    phrases: list[Phrase]
    patterns: list[str]          # RE2 patterns (escaped literals with ASCII word boundaries)
    weights: dict[str, dict[str, float]]   # group -> {kb id: weight}
    topics: frozenset[str] = frozenset()   # groups that only strengthen what a symptom group suggests
    weak: frozenset[str] = frozenset()     # generic trouble words: a symptom only together with a topic
    _set: Any = None

    def compile(self) -> "Lexicon":
        opts = re2.Options()
        opts.max_mem = 64 << 20
        s = re2.Set.SearchSet(opts)
        for p in self.patterns:
            if s.Add(p) < 0:
                raise ValueError(f"symptom phrase does not compile: {p!r}")
        s.Compile()
        self._set = s
        return self

    def present(self, norm_text: str) -> set[int]:
        """Indices of the literal patterns found in the normalised text (one RE2 set pass per chunk)."""
        found: set[int] = set()
        if not norm_text or not self.patterns:
            return found
        step = CHUNK
        for start in range(0, len(norm_text), step):
            chunk = norm_text[max(0, start - OVERLAP): start + step]
            found.update(self._set.Match(chunk) or [])
        return found


def _literal(norm: str) -> str:
    body = "".join("\\" + c if not (c.isalnum() or c == "_" or ord(c) > 127) else c for c in norm)
    if _WORD.match(norm[0]):
        body = r"\b" + body
    if _WORD.match(norm[-1]):
        body += r"\b"
    return body


def build_lexicon(data: dict[str, Any]) -> Lexicon:
    """Check and compile a lexicon mapping (the content of symptoms.yaml)."""
    if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
        raise ValueError("symptom lexicon: a mapping with a 'groups' list is required")
    patterns: list[str] = []
    index: dict[str, int] = {}
    phrases: list[Phrase] = []
    weights: dict[str, dict[str, float]] = {}
    topics: set[str] = set()
    weak: set[str] = set()
    for g in data["groups"]:
        name = str(g.get("name") or "")
        if not name or name in weights:
            raise ValueError(f"symptom lexicon: group name missing or repeated: {name!r}")
        ids = g.get("ids") or {}
        if not ids or not all(isinstance(w, (int, float)) and 0 < w <= 1 for w in ids.values()):
            raise ValueError(f"symptom lexicon: group {name}: ids must map kb ids to weights in (0, 1]")
        weights[name] = {str(k): float(v) for k, v in ids.items()}
        if g.get("topic") is True:
            topics.add(name)
        elif g.get("topic") not in (None, False):
            raise ValueError(f"symptom lexicon: group {name}: topic must be true or false")
        if g.get("weak") is True:
            weak.add(name)
        elif g.get("weak") not in (None, False):
            raise ValueError(f"symptom lexicon: group {name}: weak must be true or false")
        if name in topics and name in weak:
            raise ValueError(f"symptom lexicon: group {name}: a group is either a topic or weak, not both")
        unknown = set(g) - {"name", "zh", "en", "ids", "topic", "weak"}
        if unknown:
            raise ValueError(f"symptom lexicon: group {name}: unknown keys {sorted(unknown)}")
        for lang in ("zh", "en"):
            for ph in g.get(lang) or []:
                parts = ph if isinstance(ph, list) else [ph]
                idx = []
                for part in parts:
                    n = normalize(str(part))
                    if not n or len(n) > MAX_PHRASE:
                        raise ValueError(f"symptom lexicon: group {name}: empty or overlong phrase {part!r}")
                    pat = _literal(n)
                    if pat not in index:
                        index[pat] = len(patterns)
                        patterns.append(pat)
                    idx.append(index[pat])
                text = " … ".join(str(p) for p in parts)
                phrases.append(Phrase(name, text, tuple(idx)))
                # the same phrase in traditional characters ("顯存不足" for "显存不足")
                trad = [normalize(str(p)).translate(_S2T) for p in parts]
                if trad != [normalize(str(p)) for p in parts]:
                    tidx = []
                    for n in trad:
                        pat = _literal(n)
                        if pat not in index:
                            index[pat] = len(patterns)
                            patterns.append(pat)
                        tidx.append(index[pat])
                    phrases.append(Phrase(name, text, tuple(tidx)))
    return Lexicon(phrases, patterns, weights, frozenset(topics), frozenset(weak)).compile()


@lru_cache(maxsize=4)
def load_lexicon(path: str | None = None) -> Lexicon:
    p = Path(path) if path else LEXICON_PATH
    return build_lexicon(yaml.safe_load(p.read_text(encoding="utf-8")))


def match_symptoms(text: str, lexicon: Lexicon | None = None) -> list[dict[str, Any]]:
    """KB entries that a description points at: ``[{"id", "score", "phrase"}]``, best first.

    ``score`` is ``1 - prod(1 - weight)`` over the distinct lexicon groups that matched for that id (0..1); an id
    is only listed when at least one *symptom* group (not a topic such as a tool name) points at it.
    A *weak* group (generic trouble words: "报错", "fails") counts only together with a topic for the same id
    ("bitsandbytes 报错").  ``phrase`` is the matched symptom phrase of the strongest group, as the lexicon spells
    it (for a topic plus a trouble word, both)."""
    lex = lexicon or load_lexicon()
    norm = normalize(text or "")
    found = lex.present(norm)
    if not found:
        return []
    best_phrase: dict[str, Phrase] = {}
    for ph in lex.phrases:
        if all(i in found for i in ph.parts):
            cur = best_phrase.get(ph.group)
            if cur is None or len(ph.text) > len(cur.text):
                best_phrase[ph.group] = ph
    scores: dict[str, float] = {}
    strongest: dict[str, tuple[float, int, str]] = {}   # best symptom phrase per id
    topic_ph: dict[str, tuple[float, str]] = {}
    weak_ph: dict[str, tuple[float, str]] = {}
    for group, ph in best_phrase.items():
        for eid, w in lex.weights[group].items():
            scores[eid] = 1.0 - (1.0 - scores.get(eid, 0.0)) * (1.0 - w)
            if group in lex.topics:
                topic_ph[eid] = max(topic_ph.get(eid, (0.0, "")), (w, ph.text))
            elif group in lex.weak:
                weak_ph[eid] = max(weak_ph.get(eid, (0.0, "")), (w, ph.text))
            else:
                key = (w, len(ph.text), ph.text)
                if eid not in strongest or key > strongest[eid]:
                    strongest[eid] = key
    out = []
    for eid, sc in scores.items():
        if eid in strongest:
            phrase = strongest[eid][2]
        elif eid in topic_ph and eid in weak_ph:
            phrase = f"{topic_ph[eid][1]} … {weak_ph[eid][1]}"
        else:
            continue   # a tool name alone, or a trouble word alone, suggests nothing
        out.append({"id": eid, "score": round(sc, 4), "phrase": phrase})
    out.sort(key=lambda d: (-d["score"], d["id"]))
    return out


# What pasted tool output looks like, line by line: the KB's own log patterns read those lines; the lexicon is
# for what a person typed.  All patterns are anchored or bounded (no nested quantifiers).
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_TOOL_LINE = re.compile(
    r"^(?:\s{2,}\S"                                    # indented output (rocminfo, tracebacks, tables)
    r"|\s*\[\s*[\d.:T-]+\]"                             # dmesg / console timestamps
    r"|\s*\d{4}-\d\d-\d\d[ T]\d"                        # ISO timestamps
    r"|\s*(?:time|level|msg|source)=\S"                  # logfmt (ollama)
    r"|\s*[\w.]*(?:Error|Exception|Warning)\b:?"         # RuntimeError: ..., UserWarning: ...
    r"|\s*(?:Traceback|File \"|During handling|\$ |# |>>> |\.\.\. )"
    r"|\s*[A-Z][A-Z0-9_]{2,}[:\]]"                        # ERROR:, WARN], HSA_STATUS_...:
    r"|\s*(?:(?=[\w-]*[_.\d])[\w.-]+|[\w.-]+\([\w ]+\)):\s"  # MIOpen(HIP): ..., ggml_cuda_init: ... (linear)
    r"|\s*[\w .()/-]{1,40}:\s{2,}\S"                     # aligned 'Key:   value' tables
    r"|.*\b0x[0-9a-fA-F]{4,}"                            # addresses
    r")")


def prose_lines(text: str) -> str:
    """The lines of *text* a person most likely typed: every line with Chinese (or other CJK) characters, and
    English lines that do not have the shape of tool output (timestamps, indentation, ``Error:`` prefixes,
    ``key: value`` tables, addresses).  Used so that a pasted log's own lines are left to the KB patterns."""
    keep = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        if _CJK_CHAR.search(line) or not _TOOL_LINE.match(line[:400]):
            keep.append(line)
    return "\n".join(keep)


def merge_symptoms(result: dict[str, Any], text: str, kb: Any, *, source: str = "description",
                   min_score: float = 0.3, limit: int = 5, prose_only: bool = True) -> dict[str, Any]:
    """Fold description hints into a matcher result (``{"diagnoses": [...]}``) in place, and return it.

    With *prose_only* (the default) only :func:`prose_lines` of *text* are read, so a pasted log is left to the
    KB's patterns and only what the user wrote around it counts as a description.

    * an entry that already fired keeps its confidence and gains the phrase as evidence, and that phrase then
      suggests no other entry (it is explained);
    * an entry that did not fire is added when its score reaches *min_score* (at most *limit* of them), with
      ``confidence = score * SYMPTOM_CONFIDENCE_CAP`` and ``"from_description": True``, so a description alone
      ranks below what logs or facts prove; benign entries are never added from a description;
    * the list is re-ranked by the matcher's own order and ``rank`` renumbered.
    """
    from .matcher import diagnosis_dict
    from .kb import SEVERITY_RANK

    hints = match_symptoms(prose_lines(text) if prose_only else text)
    if not hints:
        return result
    by_id = {e.id: e for e in getattr(kb, "entries", kb)}
    diags = result.setdefault("diagnoses", [])
    fired = {d["id"]: d for d in diags}
    # a phrase that an entry proven by logs or facts already accounts for suggests nothing further
    explained = {h["phrase"] for h in hints if h["id"] in fired}
    added = 0
    for h in hints:
        ev = {"source": source, "kind": "symptom", "excerpt": h["phrase"], "score": h["score"]}
        if h["id"] in fired:
            fired[h["id"]].setdefault("evidence", []).append(ev)
            continue
        e = by_id.get(h["id"])
        if e is None or e.benign or h["score"] < min_score or added >= limit or h["phrase"] in explained:
            continue
        d = diagnosis_dict(e, h["score"] * SYMPTOM_CONFIDENCE_CAP, [ev])
        d["from_description"] = True
        diags.append(d)
        fired[e.id] = d
        added += 1
    diags.sort(key=lambda d: (d.get("benign", False), -d["confidence"], SEVERITY_RANK.get(d["severity"], 9), d["id"]))
    for i, d in enumerate(diags, 1):
        d["rank"] = i
    return result


def description_text(texts: Iterable[tuple[str, str]]) -> str:
    """Join named texts (as ``diagnose_text`` receives logs) into one description to match."""
    return "\n".join(t for _, t in texts)
