"""Symptoms typed in words (English or Chinese), and logs no signature explains, ranked against the KB.

Pasted logs are matched by the KB's own patterns (diagnostics/matcher.py): that is a *confirmed* finding.  People
also *describe* what they see ("显存不足", "生成非常慢", "torch.cuda.is_available() 返回 False", "GPU is not
detected"), and some logs carry no known signature.  For those this module gives *ranked guesses*: BM25
(the ``rank-bm25`` library, Okapi BM25, k1 = :data:`BM25_K1`, b = :data:`BM25_B`) over one document per KB entry -
what a reporter sees: its title and symptoms in English and Chinese, the logs of its firing test cases, and the
phrases of the symptom vocabulary (``diagnostics/i18n/symptoms.yaml``) that name it, its groups and its per-entry
``phrases:``.  Not the cause nor the fix: they explain and repair in words reporters do not use.  Nothing here
scores by hand: the vocabulary only *normalises* words before BM25 sees them -

* NFKC (full-width -> half-width), case folding, common traditional characters -> simplified;
* synonyms and spellings to one token each (utilisation/utilization/占用率 -> ``util``; VRAM/显存/video memory ->
  ``vram``; OOM/out of memory/显存不足 -> ``oom``; ...), ASCII variants as whole words; compound words and error
  phrases made of common words too (虚拟机 -> ``vm``, not the 虚拟 of 虚拟内存; "invalid device function" ->
  ``invaliddevfn``, not any "device"), so that they weigh as what they name; the other inflections of a one-word
  variant too ("segfaults" as "segfault", "updating" as "update"), by their Snowball stem;
* misspelt words and apostrophe-less contractions read as the word first (the vocabulary's ``spellings:``:
  "avaliable", "nvdia", "doesnt", and an input method's homophone "现存不足"), typographic quotes as ASCII ones;
* a brand glued to its model number split off ("AMD780M", "RX6600", "RTX4090");
* English words stemmed (Snowball, the ``snowballstemmer`` library) after British spellings are read as American ones
  (initialise, recognised), a few stop words dropped (with the clitic halves of doesn't, isn't), bare numbers dropped
  (versions and sizes say nothing about the cause) but not an error code ("WinError 1455", "exit code 137" -> code1455,
  code137), a short snake_case identifier also read as its parts
  (``TensileLibrary_lazy_gfx1031`` -> tensilelibrary, lazy, gfx1031);
* Chinese as overlapping character pairs (the bigram indexing of Lucene's CJKAnalyzer), except pairs with a function
  character of the vocabulary (的, 了, 都, ...: a pair across two words is noise): no dictionary to load,
  and technical compounds a general-purpose segmenter does not know (显存, 核显, 爆显存) are still found.

One prior on top of BM25, explicit and small: what the description *names* (the vocabulary's ``named:`` section -
the GPU vendor by its cards, a framework or app, the operating system, a container) raises the entries about it
(their kb tags, id words or vendor variants) and lowers, within a kind that is one per report (vendor, framework,
OS), the entries about the alternatives: "tensorflow-rocm does not see my GPU" is not a PyTorch problem, "my RTX
3090" not a ROCm one (:data:`NAMED_BOOST`, :data:`NAMED_PENALTY`, :class:`NamedKind`).  And a word can read
differently next to another (``in_context:``: "shared memory" of an APU is the RAM it borrows, not /dev/shm).
A second prior, the family: the entries a vocabulary group names (its neighbours too) when one of its phrases occurs in
the description are the family the description is about, and score higher (:data:`FAMILY_BOOST`) - an
out-of-memory description's first three stay among the out-of-memory entries.  A family-only group (``document: false``,
phrases made of words every description uses: "no error message", "CPU/GPU") is one term of its own in BM25 instead
(:data:`CONCEPT_TF`).

A guess needs at least one informative word: a description that only names a tool ("ollama"), only says that
something is wrong ("报错") or only uses words every GPU problem shares ("模型", "GPU") suggests nothing; a tool
name together with a trouble word ("bitsandbytes 报错") does.  Entries that only the doctor's own measurements
can establish (``not_from_description`` in the vocabulary) are never guessed.

    match_symptoms("显存不足，一加载模型就报错")
    -> [{"id": "hip-out-of-memory", "score": 1.0, "phrase": "显存不足"}, ...]   # score: relative to the best

``merge_symptoms(result, text, kb)`` puts the guesses into ``result["possible"]`` (``"basis": "possible"``), apart
from the confirmed ``result["diagnoses"]``; the exit status and the verdict follow confirmed findings only.
Every step is linear in the text; the query is bounded (:data:`MAX_QUERY_CHARS`, distinct words only).
"""
from __future__ import annotations

import os
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import re2
import snowballstemmer
import yaml
from rank_bm25 import BM25Okapi

LEXICON_PATH = Path(__file__).resolve().parent / "i18n" / "symptoms.yaml"
# RE2's default 8 MiB is too little for the DFA of the vocabulary's alternations (every synonym variant in one
# pattern, every phrase in one set): past it RE2 logs "DFA out of memory" and falls back to a slower engine
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 64 << 20
MAX_PHRASE = 200
SYMPTOM_CONFIDENCE_CAP = 0.6  # a guess's confidence is its relative score times this: always below a finding
MAX_QUERY_CHARS = 256 * 1024  # a longer text is read from its end (where a failing run prints its error)
MIN_RELATIVE = 0.3            # guesses scoring below this share of the best guess are not listed
PRIMARY_WEIGHT = 0.5          # a vocabulary phrase joins the documents of the entries it names with this weight
ENTRY_PHRASE_WEIGHT = 0.8     # the weight of a per-entry phrasing (the vocabulary's "phrases:" mapping)
# What a description names (the vocabulary's "named:" section: a vendor by its cards, a framework, an app, the OS, a
# container) multiplies the BM25 score of the entries about it by NAMED_BOOST, and in an exclusive kind the entries
# about the alternatives by NAMED_PENALTY.  Measured on the tuning descriptions (round 7): top-1 the same for any boost
# from 1.3 to 1.7 (1.3 ranks the tuning set a case higher, 1.7 the retired one), higher than without (1.0) by 2-3
# cases on each; the penalty is flat from 0.4 to 0.8.
NAMED_BOOST = 1.3
NAMED_PENALTY = 0.7
# Okapi BM25 parameters.  k1 is far above the textbook 1.2-2.0: an entry's own words recur in its document (its
# title twice, its symptoms in two languages, the vocabulary phrases that name it, the logs of its test cases),
# and how often a word recurs there is evidence the default saturation throws away after two or three
# occurrences.  Measured on the tuning descriptions (bench/eval_kb.py): top-1 rises on both the older ones and
# the 2026-12-01 dev half for any k1 from 7 to 15 (a plateau; 10 is its middle); b stays at the usual 0.75.
# (rank-bm25's BM25L and BM25Plus were tried too. In rank-bm25 0.2.2 BM25L multiplies its saturated term by the raw
# term frequency again, so it is not the published formula; BM25Plus adds its delta to every document for every query
# term, a constant that does not change the order, so it ranks as Okapi with idf log((N+1)/df): measured equal
# (round 5). Reciprocal-rank fusion of per-field BM25 rankings - title and symptoms, firing logs, vocabulary phrases,
# with and without the whole document, k = 10 or 60 - ranked lower on the tuning descriptions and much lower on the
# prose of the tuning logs (top-1 0.68 -> 0.52..0.59), so one document per entry stays.)
# The family a description is about: a vocabulary group's phrase in the text names its entries - the ones it describes
# and, at lower weights, the neighbours it records ("显存不足": hip-out-of-memory 0.8, model-too-large-for-vram 0.4) - and
# those of weight FAMILY_MIN_WEIGHT or more get their BM25 score multiplied by FAMILY_BOOST (once, however many groups
# name them; topic and weak groups name no family).  It keeps an out-of-memory description's top three inside the
# out-of-memory family instead of a stray entry that shares one word.  Measured on the tuning and retired descriptions
# (round 10): boost 1.5 / weight 0.2 ranks 3 more first-three on the tuning set and 1 more first cause and first-three on
# the retired one than no boost; 1.2-1.8 are within a case of it; the neighbours below 0.2 (host RAM next to "out of
# memory") cost cases; a boost growing with the weight (1 + 0.5..2 x w) lost 1-5 first causes.
FAMILY_BOOST = 1.5
FAMILY_MIN_WEIGHT = 0.2
# A family-only group of the vocabulary ("document: false": phrases made of words every description uses - "no error
# message", "CPU/GPU", "zombie process") joins none of its entries' documents with its words; it is one term of its own,
# "group:<name>", in the query when one of its phrases occurs and in the document of each entry it names at
# FAMILY_MIN_WEIGHT or more, round(weight x CONCEPT_TF) times (a controlled-vocabulary term, rare, so BM25 weighs it
# high).  Its words joining the documents instead made those documents longer and gave them generic words that other
# descriptions share (measured, round 11: 3 first causes and a first three lost elsewhere on the tuning and retired
# descriptions).
# Measured on the tuning and retired descriptions (round 11): 3 to 8 give the same first three (the tuning set 245/253,
# the retired 119/128 first causes and 128/141 first three), 1 and 2 lose 2; 4 is in the middle.  A concept term for
# every group (not only the family-only ones) ranked lower (2 fewer first causes, 1 fewer on the retired set), with or
# without FAMILY_BOOST.
CONCEPT_TF = 4.0
BM25_K1 = 10.0
BM25_B = 0.75

# CJK ideographs, CJK punctuation and full-width forms (after NFKC most full-width forms are ASCII already)
_CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_WS = re.compile(r"\s+")
_WORD = re.compile(r"[0-9a-z_]")

# traditional <-> simplified for the characters the lexicon uses most (users in TW/HK write these)
# round 12: more of the everyday characters of such reports (電腦, 幾乎, 後來, 選項, 預設, 閃退, 視窗, ...), as
# traditional-simplified pairs; only characters with one simplified form (not 乾/幹/著, which also stand for other words)
_T2S_MORE = ("電电腦脑幾几後后選选擇择項项預预視视閃闪頓顿慣惯獨独筆笔臺台裡里裏里於于讓让說说話话試试確确總总計计參参"
             "質质溫温風风調调顆颗謝谢擊击員员戶户夾夹徑径資资盤盘舊旧兩两萬万億亿鐘钟貼贴買买顏颜終终驗验帳帐暫暂"
             "論论語语聲声負负啓启麽么衝冲難难準准標标鍵键碼码庫库長长費费緩缓幀帧積积頻频響响帶带聯联鏡镜擴扩漸渐"
             "週周須须構构輕轻")
_T2S_MAP_SRC = {k: v for k, v in ({
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
    # round 5: more of the characters Taiwan/Hong Kong reports use (圖片, 當機, 訓練, 記憶體, 檔案, 頁面, 環境, ...)
    "圖": "图", "當": "当", "機": "机", "軟": "软", "處": "处", "畫": "画", "節": "节", "點": "点", "們": "们",
    "嗎": "吗", "題": "题", "練": "练", "訓": "训", "優": "优", "關": "关", "閉": "闭", "門": "门", "頁": "页",
    "檔": "档", "術": "术", "專": "专", "業": "业", "幫": "帮", "該": "该", "請": "请", "經": "经", "環": "环",
    "變": "变", "區": "区", "單": "单", "雙": "双", "張": "张", "塊": "块", "黃": "黄", "實": "实", "際": "际",
    "潰": "溃", "凍": "冻", "結": "结", "屬": "属",
    "續": "续", "網": "网", "絡": "络", "連": "连", "擬": "拟", "並": "并", "傳": "传",
    "損": "损", "壓": "压", "縮": "缩", "揮": "挥", "佈": "布", "係": "系",
} | dict(zip(_T2S_MORE[::2], _T2S_MORE[1::2]))).items() if len(k) == 1 and k != v}


# simplified -> traditional, to add a traditional spelling of every lexicon phrase (cheaper than converting text)
# (where two traditional forms share one simplified character, 啟/啓, the first listed is the one written)
_S2T = str.maketrans(dict(reversed([(v, k) for k, v in _T2S_MAP_SRC.items() if v != k])))
_ANY_CJK = re.compile(rf"[{_CJK}]")
# a space with a CJK character on either side; starts with a literal space so the scan skips to spaces fast
_SPACE_NEAR_CJK = re.compile(rf" (?:(?=[{_CJK}])|(?<=[{_CJK}] ))")

_FOLD_CHUNK = 1 << 16
# typographic quotes (which NFKC keeps) as ASCII: "doesn’t" - an editor's or a phone's apostrophe - is "doesn't"
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201b": "'", "\u2032": "'", "\u201c": '"', "\u201d": '"'})


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


def _fold_chunks(text: str) -> str:
    """NFKC + casefold + whitespace runs -> one space, no space next to CJK, stripped; in chunks of about a MiB, so that the
    temporary arrays of NFKC and the folded copies stay bounded (the whole text at once took ~135x its size
    through str.split()'s list of words)."""
    parts: list[str] = []
    pos = 0
    while pos < len(text):
        end = _cut(text, pos)
        t = _WS.sub(" ", unicodedata.normalize("NFKC", text[pos:end]).casefold().translate(_QUOTES))
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
    """Fold a description for matching: NFKC (full-width -> half-width), case folding, typographic quotes -> ASCII,
    whitespace runs -> one space, no space next to a CJK character.  (Traditional characters are handled by the
    lexicon, which also carries a traditional spelling of each phrase.)

    Every step is a single linear pass; the CJK step only runs when CJK characters occur."""
    return _fold_chunks(text)


@dataclass(frozen=True)
class Phrase:
    group: str
    text: str                    # as written in the lexicon (shown to the user)
    parts: tuple[int, ...]       # indices of the literal patterns that must all occur


@dataclass(frozen=True)
class NamedItem:
    name: str
    words: tuple[str, ...]       # how a description names it (normalised literals, whole ASCII words)
    keys: frozenset[str]         # the kb tags / id words / vendor variants of the entries about it
    implies: frozenset[str] = frozenset()   # items naming this one also names (ComfyUI runs on torch)
    boost: bool = True           # False: naming it only lowers the alternatives ("Linux": the default, no evidence)


@dataclass(frozen=True)
class NamedKind:
    """One kind of thing a description can name - a vendor, a framework, an operating system, a library.

    An entry whose kb tags, id words or vendor variants hold a key of a named item is *about* what the user named:
    its score is multiplied by :data:`NAMED_BOOST` (kinds with ``boost``).  In an ``exclusive`` kind (one GPU
    vendor, one framework, one system per report) an entry about items of the kind none of which is named - nor
    implied by a named one - is about something else: its score is multiplied by :data:`NAMED_PENALTY`.  Entries
    about none of the kind's items are left as they are."""
    name: str
    items: tuple[NamedItem, ...]
    exclusive: bool = False
    boost: bool = True


@dataclass
class Lexicon:
    phrases: list[Phrase]
    patterns: list[str]          # RE2 patterns (escaped literals with ASCII word boundaries)
    weights: dict[str, dict[str, float]]   # group -> {kb id: weight}
    topics: frozenset[str] = frozenset()   # groups that name a tool: alone they suggest nothing
    weak: frozenset[str] = frozenset()     # generic trouble words: a guess only together with a topic
    synonyms: tuple[tuple[str, tuple[str, ...]], ...] = ()   # (token, variants) for the tokenizer
    generic: frozenset[str] = frozenset()  # tokens that alone suggest nothing
    stopwords: frozenset[str] = frozenset()  # filler words, dropped
    excluded: frozenset[str] = frozenset()  # kb ids never guessed from words (not_from_description)
    describable: frozenset[str] = frozenset()  # measured-only entries a user reports too (describable_measurements)
    function_chars: frozenset[str] = frozenset()  # Chinese function characters: no pair is built across them
    named: tuple["NamedKind", ...] = ()    # software, vendors, systems a description names (see NamedKind)
    # (tokens, token, variants): where one of the tokens occurs, these variants read as token ("shared memory" next to
    # an APU is the system RAM it borrows, not /dev/shm)
    in_context: tuple[tuple[frozenset[str], str, frozenset[str]], ...] = ()
    spellings: dict[str, str] = field(default_factory=dict)   # misspelt word -> the word ("avaliable" -> "available")
    undocumented: frozenset[str] = frozenset()   # groups whose phrases name a family but join no entry's document
    _set: Any = None

    def compile(self) -> "Lexicon":
        s = re2.Set.SearchSet(_RE2_OPTIONS)
        for p in self.patterns:
            if s.Add(p) < 0:
                raise ValueError(f"symptom phrase does not compile: {p!r}")
        s.Compile()
        self._set = s
        names = [(k, it) for k in self.named for it in k.items]
        if names:
            ns = re2.Set.SearchSet(_RE2_OPTIONS)
            self._named_of = []
            for (k, it) in names:
                for w in it.words:
                    # a word ending in "*" is a prefix ("gfx*": gfx1100, gfx90a)
                    pat = _literal(w[:-1]).removesuffix(r"\b") if w.endswith("*") and len(w) > 1 else _literal(w)
                    if ns.Add(pat) < 0:
                        raise ValueError(f"named word does not compile: {w!r}")
                    self._named_of.append(it.name)
            ns.Compile()
            self._named_set = ns
        if self.spellings:
            # one RE2 pass of literal alternatives, ASCII words between ASCII word boundaries, Chinese compounds
            # anywhere (no word boundary between two Han characters): linear in the text
            def alt(ws: list[str]) -> str:
                return "|".join(re.escape(w) for w in sorted(ws, key=len, reverse=True))
            ascii_ws = [w for w in self.spellings if w.isascii()]
            han_ws = [w for w in self.spellings if not w.isascii()]
            pats = ([r"\b(?:" + alt(ascii_ws) + r")\b"] if ascii_ws else []) + (["(?:" + alt(han_ws) + ")"] if han_ws else [])
            self._spell = re2.compile("|".join(pats), _RE2_OPTIONS)
        return self

    def respell(self, folded: str) -> str:
        """*folded* text with the misspelt words of the ``spellings:`` section replaced, whole ASCII words only."""
        sp = getattr(self, "_spell", None)
        if sp is None or not folded:
            return folded
        return sp.sub(lambda m: self.spellings[m.group(0)], folded)

    def groups_in(self, folded: str) -> frozenset[str]:
        """The groups (Phrase.group) that have a phrase all of whose parts occur in *folded* text (see :func:`_fold`)."""
        return frozenset(self.phrases_in(folded))

    def phrases_in(self, folded: str) -> dict[str, str]:
        """{group: the first of its phrases (as written) all of whose parts occur in *folded* text}."""
        if self._set is None or not folded:
            return {}
        hit = set(self._set.Match(folded) or ())
        if not hit:
            return {}
        out: dict[str, str] = {}
        for ph in self.phrases:
            if ph.group not in out and all(i in hit for i in ph.parts):
                out[ph.group] = ph.text
        return out

    def names_in(self, folded: str) -> frozenset[str]:
        """The named items (:class:`NamedItem` names) whose words occur in *folded* text (see :func:`_fold`)."""
        ns = getattr(self, "_named_set", None)
        if ns is None or not folded:
            return frozenset()
        return frozenset(self._named_of[i] for i in ns.Match(folded) or ())


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
    undocumented: set[str] = set()
    groups = list(data["groups"])
    # per-entry phrasings: "phrases: {kb id: {zh: [...], en: [...]}}" - how people describe one entry's failure,
    # each a group of its own that names that entry alone
    per_entry = data.get("phrases") or {}
    if not isinstance(per_entry, dict):
        raise ValueError("symptom lexicon: 'phrases' must map kb ids to {zh: [...], en: [...]}")
    for eid, langs in per_entry.items():
        if not isinstance(langs, dict) or not (langs.get("zh") or langs.get("en")) or set(langs) - {"zh", "en"}:
            raise ValueError(f"symptom lexicon: phrases of {eid!r}: a mapping with zh and/or en lists")
        groups.append({"name": f"phrases:{eid}", "zh": langs.get("zh") or [], "en": langs.get("en") or [],
                       "ids": {str(eid): ENTRY_PHRASE_WEIGHT}})
    for g in groups:
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
        if g.get("document") is False:
            undocumented.add(name)
        elif g.get("document") not in (None, True):
            raise ValueError(f"symptom lexicon: group {name}: document must be true or false")
        unknown = set(g) - {"name", "zh", "en", "ids", "topic", "weak", "document"}
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
    synonyms = []
    seen_tokens: set[str] = set()
    for s in data.get("synonyms") or []:
        tok = str((s or {}).get("token") or "")
        variants = (s or {}).get("variants") or []
        if not re.fullmatch(r"[a-z][a-z0-9_]*", tok) or tok in seen_tokens or not variants:
            raise ValueError(f"symptom lexicon: synonym {tok!r}: a lowercase token and a non-empty variants list")
        seen_tokens.add(tok)
        synonyms.append((tok, tuple(normalize(str(v)) for v in variants if normalize(str(v)))))
    generic = frozenset(str(x) for x in data.get("generic") or [])
    stop = frozenset(normalize(str(x)) for x in data.get("stopwords") or [])
    excluded = frozenset(str(x) for x in data.get("not_from_description") or [])
    describable = frozenset(str(x) for x in data.get("describable_measurements") or [])
    if excluded & describable:
        raise ValueError(f"symptom lexicon: both never guessed and describable: {sorted(excluded & describable)}")
    fchars = str(data.get("function_chars") or "")
    if any(not _HAN.match(c) for c in fchars):
        raise ValueError("symptom lexicon: function_chars must be Chinese characters only")
    return Lexicon(phrases, patterns, weights, frozenset(topics), frozenset(weak), tuple(synonyms),
                   undocumented=frozenset(undocumented), generic=generic,
                   stopwords=stop, excluded=excluded, describable=describable, function_chars=frozenset(fchars),
                   named=_named_kinds(data.get("named") or []),
                   in_context=_context_rules(data.get("in_context") or [], seen_tokens),
                   spellings=_spellings(data.get("spellings") or {})).compile()


_HAN_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]{2,}")


def _spellings(data: Any) -> dict[str, str]:
    """The ``spellings:`` section: ``{misspelt word: word}``, both lowercase ASCII (a contraction may keep its
    apostrophe: ``doesnt: doesn't``), or both Chinese compounds of two or more characters (an input method's
    homophone: ``现存不足: 显存不足``)."""
    if not isinstance(data, dict):
        raise ValueError("symptom lexicon: 'spellings' must map misspelt words to words")
    out = {}
    for k, v in data.items():
        k, v = str(k), str(v)
        ascii_ok = re.fullmatch(r"[a-z][a-z0-9]*", k) and re.fullmatch(r"[a-z][a-z0-9' ]*", v)
        han_ok = _HAN_WORD.fullmatch(k) and _HAN_WORD.fullmatch(v)
        if not (ascii_ok or han_ok) or k == v:
            raise ValueError(f"symptom lexicon: spelling {k!r} -> {v!r}: lowercase ASCII words or Chinese compounds, "
                             "different")
        out[k] = v
    return out


def _context_rules(data: Any, tokens: set[str]) -> tuple[tuple[frozenset[str], str, frozenset[str]], ...]:
    """The ``in_context:`` section: ``[{when: [tokens], token: t, variants: [...]}]``; every variant must be a
    synonym variant already (it is re-read, not newly found)."""
    if not isinstance(data, list):
        raise ValueError("symptom lexicon: 'in_context' must be a list")
    out = []
    for r in data:
        if not isinstance(r, dict) or set(r) != {"when", "token", "variants"} or r["token"] not in tokens \
                or not r["when"] or not r["variants"]:
            raise ValueError(f"symptom lexicon: in_context rule {r!r}: when, a synonym token, variants")
        out.append((frozenset(str(x) for x in r["when"]), str(r["token"]),
                    frozenset(normalize(str(v)).translate(_T2S) for v in r["variants"])))
    return tuple(out)


def _named_kinds(data: Any) -> tuple[NamedKind, ...]:
    """The ``named:`` section: ``[{kind, exclusive, boost, items: [{name, words, keys, implies}]}]``."""
    if not isinstance(data, list):
        raise ValueError("symptom lexicon: 'named' must be a list of kinds")
    kinds, seen = [], set()
    for k in data:
        if not isinstance(k, dict) or set(k) - {"kind", "exclusive", "boost", "items"} or not k.get("kind") \
                or not isinstance(k.get("items"), list) or not k["items"]:
            raise ValueError(f"symptom lexicon: named kind {k!r}: kind, items and optional exclusive/boost")
        items = []
        for it in k["items"]:
            if not isinstance(it, dict) or set(it) - {"name", "words", "keys", "implies", "boost"} or not it.get("name") \
                    or not it.get("words") or not it.get("keys"):
                raise ValueError(f"symptom lexicon: named item {it!r}: name, words, keys and optional implies, boost")
            name = str(it["name"])
            if name in seen:
                raise ValueError(f"symptom lexicon: named item {name!r} repeated")
            seen.add(name)
            words = tuple(w for w in (normalize(str(x)).translate(_T2S) for x in it["words"]) if w)
            if not words or any(len(w) > MAX_PHRASE for w in words):
                raise ValueError(f"symptom lexicon: named item {name!r}: empty or overlong words")
            items.append(NamedItem(name, words, frozenset(str(x).lower() for x in it["keys"]),
                                   frozenset(str(x) for x in it.get("implies") or []), bool(it.get("boost", True))))
        kinds.append(NamedKind(str(k["kind"]), tuple(items), bool(k.get("exclusive", False)), bool(k.get("boost", True))))
    unknown = {i for kd in kinds for it in kd.items for i in it.implies} - seen
    if unknown:
        raise ValueError(f"symptom lexicon: named items imply unknown items {sorted(unknown)}")
    return tuple(kinds)


@lru_cache(maxsize=4)
def load_lexicon(path: str | None = None) -> Lexicon:
    p = Path(path) if path else LEXICON_PATH
    return build_lexicon(yaml.safe_load(p.read_text(encoding="utf-8")))


# --------------------------------------------------------------------------------------------------- tokenizer

_T2S = str.maketrans({k: v for k, v in _T2S_MAP_SRC.items()})
_STEM = snowballstemmer.stemmer("english")
_STOP = frozenset("""a an the and or of to in on at by for with from is are was were be been being it its this that
these those i me my we our you your he she they them their there here as if but so not no do does did done have has had
can could would should will just than then too very also when while after before into out up down over again any all
some such only own same other what which who whom whose why how where
aren couldn didn doesn hadn hasn haven isn mightn mustn needn shan shouldn wasn weren won wouldn don""".split())
# British spellings to the American ones before stemming (Snowball stems "initialise" to "initialis" but "initialize"
# to "initi"): the -ise/-isation family of the words GPU reports use, and a few others
_BRIT = re.compile(r"^(initiali|recogni|utili|optimi|normali|seriali|deseriali|authori|virtuali|organi|speciali|"
                   r"synchroni|minimi|maximi|customi|visuali|quanti|tokeni|categori|prioriti|standardi|locali|"
                   r"finali|paralleli|vectori|summari|characteri|parameteri|materiali)s(e|ed|es|ing|ation|ations|er|ers)$")
_BRIT_WORDS = {"behaviour": "behavior", "behaviours": "behaviors", "colour": "color", "colours": "colors",
               "licence": "license", "licences": "licenses", "analyse": "analyze", "analysed": "analyzed",
               "analysing": "analyzing", "favour": "favor", "honour": "honor", "centre": "center"}
MAX_WORD = 64      # a longer ASCII run is a hash, a path or filler, not a word (and Snowball's stemmer is quadratic in it)
_MARK = "\ue000"   # a private-use character stands for a synonym found in the text, by its index
_TOKEN = re.compile(r"\ue000\d+|[a-z0-9_]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SIZE = re.compile(r"\d+(?:\.\d+)?(?:[kmgt]i?b?|[kmgt]?bytes?)$")   # 4g, 16gb, 512mib, 2.5gb
# A number is dropped (a version, a size), except an error code: right after one of these words ("WinError 1455",
# "os error 1455", "Errno 28", "exit code 137", "signal 11", "Error: 401") or right before "client error" / "server
# error" ("401 Client Error") it names the failure - WinError 126 (a DLL that does not load) is not WinError 1455 (the
# page file) - and is read as the token "code<N>", whatever word introduced it.
_CODE_WORDS = frozenset({"error", "winerror", "errno", "err", "code", "signal", "status", "failure"})   # "CUDA failure 35"
_CODE_AFTER = frozenset({"client", "server"})
MAX_CODE_DIGITS = 5


_ONE_WORD = re.compile(r"[a-z][a-z0-9]*")


def _stem(w: str) -> str:
    """Snowball's English stem of *w*, British spellings read as American ones first."""
    return _STEM.stemWord(_BRIT_WORDS.get(w) or _BRIT.sub(r"\1z\2", w))


# a brand glued to its model number ("AMD780M", "RX6600", "RTX4090"): two words, so the model is read as itself
_BRAND_GLUED = re.compile(r"\b(amd|radeon|rx|rtx|gtx|ryzen|geforce|nvidia)(?=\d)")
# a model number glued to its suffix ("1660Ti", "6800xt", "7900XTX", "4070super"): two words, so that the number is
# the card the vocabulary names ("1660", "6800 xt") - not "8060S", which is a name of its own
_SUFFIX_GLUED = re.compile(r"\b(\d{3,4})(ti|xtx|xt|super)\b")


def _fold(text: str) -> str:
    """normalize() plus traditional -> simplified for the characters the vocabulary knows, a brand glued to its
    model number and a model number glued to its suffix split off."""
    t = normalize(text).translate(_T2S)
    if any(b in t for b in ("amd", "radeon", "rx", "rtx", "gtx", "ryzen", "geforce", "nvidia")):
        t = _BRAND_GLUED.sub(r"\1 ", t)
    return _SUFFIX_GLUED.sub(r"\1 \2", t) if any(x in t for x in ("ti", "xt", "super")) else t


class Tokenizer:
    """Text -> BM25 tokens, with the surface form each token was read from (shown as the matched words)."""

    def __init__(self, lex: Lexicon):
        self.generic = lex.generic
        self.function_chars = lex.function_chars
        self.in_context = lex.in_context
        self.respell = lex.respell
        self.token_of: dict[str, list[str]] = {}
        for tok, variants in lex.synonyms:
            for v in variants:
                toks = self.token_of.setdefault(v.translate(_T2S), [])
                if tok not in toks:
                    toks.append(tok)
        for w in lex.stopwords:
            self.token_of.setdefault(w.translate(_T2S), [])      # a stop word: read, and dropped
        # a one-word variant's other inflections ("segfaults", "generating", "updates"): a word whose stem is the stem
        # of a one-word variant reads as that variant's token.  Only where the stem is the variant itself or the
        # variant less one letter ("update" -> "updat"): "containers" -> "contain" would take "contains" along
        by_stem: dict[str, set[str]] = {}
        for tok, variants in lex.synonyms:
            for v in variants:
                if _ONE_WORD.fullmatch(v):
                    st = _stem(v)
                    if v.startswith(st) and len(v) - len(st) <= 1:
                        by_stem.setdefault(st, set()).add(tok)
        self.stem_token = {st: next(iter(toks)) for st, toks in by_stem.items() if len(toks) == 1}
        # the longest variant wins where several start at one place
        pats = [_literal(v) for v in sorted(self.token_of, key=len, reverse=True)]
        self._syn = re2.compile("|".join(pats), _RE2_OPTIONS) if pats else None

    def __call__(self, text: str) -> list[tuple[str, str]]:
        t = self.respell(_fold(text)).replace(_MARK, " ")
        syn: list[tuple[str, str]] = []
        pieces, pos = [], 0
        if self._syn is not None:
            for m in self._syn.finditer(t):
                pieces.append(t[pos:m.start()])
                pieces.append(f" {_MARK}{len(syn)} ")
                syn.append((m.group(0), m.group(0)))
                pos = m.end()
        pieces.append(t[pos:])
        out: list[tuple[str, str]] = []
        prev = ""   # the word just before (a synonym by its token), for error codes
        for m in _TOKEN.finditer("".join(pieces) if syn else t):
            w = m.group(0)
            if w.isdigit():
                if len(w) <= MAX_CODE_DIGITS and prev in _CODE_WORDS:
                    out.append((f"code{int(w)}", f"{prev} {w}"))
                prev = w
                continue
            if prev.isdigit() and len(prev) <= MAX_CODE_DIGITS and w in _CODE_AFTER:
                out.append((f"code{int(prev)}", f"{prev} {w}"))
            if w[0] == _MARK:
                surf = syn[int(w[1:])][1]
                toks = self.token_of.get(surf, ())
                out.extend((tok, surf) for tok in toks)
                prev = toks[0] if toks else ""
                continue
            prev = w
            if _HAN.match(w):
                fc = self.function_chars
                if len(w) == 1:
                    if w not in fc:
                        out.append((w, w))
                else:
                    # a pair with a function character (的, 了, 都, ...) spans two words or is grammar: noise
                    out.extend((w[i:i + 2], w[i:i + 2]) for i in range(len(w) - 1)
                               if w[i] not in fc and w[i + 1] not in fc)
            elif w not in _STOP and 1 < len(w) <= MAX_WORD and not w.isdigit() and not _SIZE.match(w):
                # numbers are versions and sizes ("4g", "16gb", "24gib": the size of a card says nothing about the
                # cause; the few sizes that do - an APU's 512M carve-out - are synonyms, read before this)
                st = _stem(w)
                out.append((self.stem_token.get(st, st), w))
                if 0 < w.strip("_").count("_") <= 3:   # (a long snake_case run is a path or a build tag, not a name)
                    # an identifier (TensileLibrary_lazy_gfx1031, hipErrorNoBinaryForGpu_x): its parts count too
                    for p in w.split("_"):
                        if len(p) > 1 and not p.isdigit() and p not in _STOP:
                            sp = _stem(p)
                            out.append((self.stem_token.get(sp, sp), p))
        if self.in_context and syn:
            have = {tk for tk, _ in out}
            for when, token, variants in self.in_context:
                if when & have:
                    out = [(token, sf) if sf in variants else (tk, sf) for tk, sf in out]
        return out


# --------------------------------------------------------------------------------------------------- retrieval


@dataclass
class Retriever:
    """BM25 over one document per KB entry that a description can point at."""

    ids: list[str]
    bm25: Any
    tokenizer: Tokenizer
    vocab: frozenset[str]
    topic_tokens: frozenset[str]
    weak_tokens: frozenset[str]
    doc_tokens: list[frozenset[str]] = field(default_factory=list)
    symptom_pairs: frozenset[str] = frozenset()   # Chinese pairs of the symptom vocabulary's own phrases
    lexicon: Lexicon | None = None
    about: dict[str, frozenset[int]] = field(default_factory=dict)   # named item -> the entries about it

    def __post_init__(self) -> None:
        self._index = {eid: i for i, eid in enumerate(self.ids)}

    def named_factors(self, text: str) -> dict[int, float]:
        """Entry index -> score factor from what *text* names (see :class:`NamedKind`); empty if it names nothing."""
        lex = self.lexicon
        named = lex.names_in(lex.respell(_fold(text))) if lex is not None else frozenset()
        if not named:
            return {}
        covered = set(named)
        todo = list(named)
        by_name = {it.name: it for k in lex.named for it in k.items}
        while todo:                       # what a named item implies counts as named too (never boosted)
            for n in by_name[todo.pop()].implies:
                if n not in covered:
                    covered.add(n)
                    todo.append(n)
        out: dict[int, float] = {}
        for kind in lex.named:
            names = [it.name for it in kind.items]
            hit = [it.name for it in kind.items if it.name in named and it.boost]
            if kind.boost and hit:    # once per kind, however many of its named items the entry is about
                for i in set().union(*(self.about.get(n, frozenset()) for n in hit)):
                    out[i] = out.get(i, 1.0) * NAMED_BOOST
            if kind.exclusive and any(n in covered for n in names):
                ok = set().union(*(self.about.get(n, frozenset()) for n in names if n in covered))
                for i in set().union(*(self.about.get(n, frozenset()) for n in names)) - ok:
                    out[i] = out.get(i, 1.0) * NAMED_PENALTY
        return out

    def family_of(self, text: str) -> frozenset[int]:
        """Entry indices of the family a description is about (see :data:`FAMILY_BOOST`): the entries that a vocabulary
        group whose phrase occurs in *text* names at FAMILY_MIN_WEIGHT or more; topic and weak groups name none."""
        lex = self.lexicon
        if lex is None:
            return frozenset()
        out = set()
        for g in lex.groups_in(lex.respell(_fold(text))):
            if g not in lex.topics and g not in lex.weak:
                out.update(self._index[e] for e, w in lex.weights[g].items() if w >= FAMILY_MIN_WEIGHT and e in self._index)
        return frozenset(out)

    def _informative(self, t: str) -> bool:
        """A word that can suggest a cause on its own: not generic, not a tool name or trouble word, not a number,
        and for Chinese a character pair of the symptom vocabulary (a pair across two words is noise)."""
        if t in self.tokenizer.generic or t in self.topic_tokens or t in self.weak_tokens or t.isdigit():
            return False
        if _HAN.match(t):
            return len(t) == 2 and t in self.symptom_pairs
        return True

    def rank(self, text: str, limit: int = 5, ignore: Iterable[str] = (),
             only: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """``[{"id", "score", "phrase", "terms"}]`` best first; *ignore*: ids whose document's words count as
        already explained (a confirmed finding) and are taken out of the query; *only*: rank these ids alone (the
        relative score is then relative to the best of them)."""
        if len(text) > MAX_QUERY_CHARS:
            text = text[-MAX_QUERY_CHARS:]
        surface: dict[str, str] = {}
        for tok, surf in self.tokenizer(text):
            if tok in self.vocab and tok not in surface:
                surface[tok] = surf
        lex = self.lexicon
        if lex is not None and lex.undocumented:
            # a family-only phrase of the text is a term of its own (see CONCEPT_TF)
            for g, ph in lex.phrases_in(lex.respell(_fold(text))).items():
                if g in lex.undocumented and _concept(g) in self.vocab:
                    surface.setdefault(_concept(g), ph.replace(" … ", " "))
        explained = set()
        for eid in ignore:
            if eid in self.ids:
                explained |= self.doc_tokens[self.ids.index(eid)]
        query = [t for t in surface if t not in explained]
        informative = [t for t in query if self._informative(t)]
        topical = any(t in self.topic_tokens for t in query) and any(t in self.weak_tokens for t in query)
        if not informative and not topical:
            return []
        scores = self.bm25.get_scores(query)
        for i, f in self.named_factors(text).items():
            scores[i] *= f
        for i in self.family_of(text):
            scores[i] *= FAMILY_BOOST
        pool = range(len(self.ids))
        if only is not None:
            keep = set(only)
            pool = [i for i in pool if self.ids[i] in keep]
        order = sorted(pool, key=lambda i: (-scores[i], self.ids[i]))
        best = float(scores[order[0]]) if order else 0.0
        if best <= 0:
            return []
        out = []
        keys = set(informative) | ({t for t in query if t in self.topic_tokens or t in self.weak_tokens} if topical else set())
        for i in order:
            sc = float(scores[i])
            if sc <= 0 or sc < MIN_RELATIVE * best or len(out) >= limit:
                break
            hit = [t for t in query if t in self.doc_tokens[i]]
            if not any(t in keys for t in hit):
                continue      # only generic words in common with this entry
            hit.sort(key=lambda t: -self.bm25.idf.get(t, 0.0))
            shown = [t for t in hit if not t.isdigit() and len(surface[t]) > 1] or hit
            words = list(dict.fromkeys(surface[t] for t in shown[:4]))
            out.append({"id": self.ids[i], "score": round(sc / best, 4), "bm25": round(sc, 3),
                        "phrase": " … ".join(words), "terms": hit[:8]})
        return out


def _entry_text(e: Any) -> list[str]:
    # what the user sees: the title (twice: it names the failure) and the symptoms, in English and Chinese, and
    # what the failure prints (the logs of the firing test cases).  Not the fix - people describe what happens, not
    # what to run (its commands and package names drew descriptions towards unrelated entries) - and not the
    # cause: it explains the mechanism in words reporters rarely use (wheels, ABIs, kernels, caches), which matched
    # other entries' descriptions (measured on the tuning descriptions, issue 14: top-1 0.72 -> 0.81 on the
    # 2026-12-01 dev half, unchanged on the older ones at k1 = 1.5).
    parts = [e.title, e.title, e.symptoms]
    zh = (getattr(e, "translations", None) or {}).get("zh") or {}
    parts += [zh.get("title", ""), zh.get("title", ""), zh.get("symptoms", "")]
    parts += [t.logs for t in getattr(e, "tests", []) if t.expect == "fire" and t.logs]
    # the vendor variants' own title and symptoms ("CUDA out of memory" next to "HIP out of memory"), same weights
    for vendor, var in (getattr(e, "variants", None) or {}).items():
        tv = ((zh.get("variants") or {}).get(vendor) or {}) if isinstance(zh, dict) else {}
        parts += [var.get("title") or "", var.get("title") or "", var.get("symptoms") or ""]
        parts += [tv.get("title") or "", tv.get("title") or "", tv.get("symptoms") or ""]
    return parts


def _concept(group: str) -> str:
    """The term that stands for a family-only group in the query and in the documents it names (no text yields it)."""
    return "group:" + group


def build_retriever(entries: Iterable[Any], lex: Lexicon) -> Retriever | None:
    tok = Tokenizer(lex)
    phrases: dict[str, list[str]] = {}
    for ph in lex.phrases:
        if ph.group in lex.undocumented:
            continue      # a description's words for the family, made of words the entries' documents should not gain
        top = max(lex.weights[ph.group].values())
        for eid, w in lex.weights[ph.group].items():
            # a phrase describes the entries it names first (its strongest, and any named strongly), not neighbours
            if w >= PRIMARY_WEIGHT or w == top:
                phrases.setdefault(eid, []).append(ph.text.replace(" … ", " "))
    # a family-only group ("document: false") joins the documents it names as one term, not as its words
    concepts: dict[str, list[str]] = {}
    for g in sorted(lex.undocumented):
        for eid, w in lex.weights[g].items():
            if w >= FAMILY_MIN_WEIGHT:
                concepts.setdefault(eid, []).extend([_concept(g)] * max(1, round(w * CONCEPT_TF)))
    ids, docs, keys = [], [], []
    for e in entries:
        if e.benign or e.id in lex.excluded:
            continue
        words = [t for t, _ in tok("\n".join(_entry_text(e) + phrases.get(e.id, [])))]
        words += concepts.get(e.id, [])
        if words:
            ids.append(e.id)
            docs.append(words)
            # what the entry is about: its tags (also as "tag:x", for a key that only a tag may give), the words
            # of its id, its vendor variants
            tags = {str(t).lower() for t in getattr(e, "tags", None) or []}
            keys.append(tags | {"tag:" + t for t in tags} | set(e.id.split("-")) | set(getattr(e, "variants", None) or {}))
    if not docs:
        return None
    topic_tokens, weak_tokens, pairs = set(), set(), set()
    for ph in lex.phrases:
        toks = {t for t, _ in tok(ph.text)}
        if ph.group in lex.topics:
            topic_tokens |= toks
        elif ph.group in lex.weak:
            weak_tokens |= toks
        else:
            pairs |= {t for t in toks if _HAN.match(t)}
    vocab = frozenset(t for d in docs for t in d)
    about = {it.name: frozenset(i for i, k in enumerate(keys) if k & it.keys) for kd in lex.named for it in kd.items}
    return Retriever(ids, BM25Okapi(docs, k1=BM25_K1, b=BM25_B), tok, vocab, frozenset(topic_tokens), frozenset(weak_tokens),
                     [frozenset(d) for d in docs], frozenset(pairs), lex, about)


_retr_lock = threading.Lock()
_retr_cache: dict[tuple, Retriever | None] = {}


def _default_kb() -> Any:
    from .kb import KB_DIR

    d = Path(os.environ.get("GPU_DOCTOR_KB") or KB_DIR)
    try:
        stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in d.glob("*.y*ml")))
    except OSError:
        stamp = ()
    return _cached_kb(str(d), stamp)


@lru_cache(maxsize=2)
def _cached_kb(directory: str, stamp: tuple) -> Any:
    from .kb import load_kb

    return load_kb(directory)


def retriever_for(kb: Any = None, lexicon: Lexicon | None = None) -> Retriever | None:
    """The retriever for *kb* (default: the shipped KB) and *lexicon* (default: the shipped vocabulary), cached."""
    kb = kb if kb is not None else _default_kb()
    lex = lexicon or load_lexicon()
    entries = list(getattr(kb, "entries", kb))
    key = (getattr(kb, "version", None) or tuple(e.id for e in entries), id(lex))
    with _retr_lock:
        if key not in _retr_cache:
            if len(_retr_cache) > 8:
                _retr_cache.clear()
            _retr_cache[key] = build_retriever(entries, lex)
        return _retr_cache[key]


def match_symptoms(text: str, lexicon: Lexicon | None = None, kb: Any = None, limit: int = 5,
                   ignore: Iterable[str] = ()) -> list[dict[str, Any]]:
    """KB entries that a description points at, best first: ``[{"id", "score", "phrase", ...}]``.

    ``score`` is the entry's BM25 score relative to the best guess (1.0 for the first); ``phrase`` the words of
    the description that matched it, most distinctive first."""
    if not text or not text.strip():
        return []
    r = retriever_for(kb, lexicon)
    return r.rank(text, limit=limit, ignore=ignore) if r else []


# What pasted tool output looks like, line by line: the KB's own log patterns read those lines; the lexicon is
# for what a person typed.  All patterns are anchored or bounded (no nested quantifiers).
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_TOOL_LINE = re.compile(
    r"^(?:\s{2,}\S"                                    # indented output (rocminfo, tracebacks, tables)
    r"|\s*[|+](?:[-=+|: ]|\s*\S.*\|\s*$)"                # nvidia-smi / amd-smi boxes and table rows
    r"|\s*(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s+)?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r"\s+\d{1,2}\s+\d\d:\d\d:\d\d"                    # syslog, journald, date(1)
    r"|\s*\d{4}/\d\d/\d\d[ -]+\d\d:\d\d"                # Go's log package, GIN
    r"|\s*(?:\(\w+ pid=\d+\)\s*)?(?:DEBUG|INFO|WARNING|WARN|ERROR)\s+\d\d-\d\d\s+\d\d:"   # vLLM
    r"|\s*\[[A-Za-z][\w .:-]{0,30}\]\s"                  # [ComfyUI] [GIN] [INFO] tags
    r"|\s*\{'\w+':"                                       # a trainer's metrics dict
    r"|\s*\*\*\s|\s*##\s|\s*-\s\*\*"                      # ComfyUI's banner and system-info markdown
    r"|\s*[=*.~-]{5,}"                                   # rules, progress dots
    r"|\s*\[\s*[\d.:T-]+\]"                             # dmesg / console timestamps
    r"|\s*\d{4}-\d\d-\d\d[ T]\d"                        # ISO timestamps
    r"|\s*(?:time|level|msg|source)=\S"                  # logfmt (ollama)
    r"|\s*[\w.]*(?:Error|Exception|Warning)\b:?"         # RuntimeError: ..., UserWarning: ...
    r"|\s*(?:Traceback|File \"|During handling|\$ |# |>>> |\.\.\. )"
    r"|\s*(?:export|set|setx|\$env:)\s*[A-Za-z_]\w*\s*=\S"     # a shell variable being set (a command, not words)
    r"|\s*[A-Z][A-Z0-9_]{2,}[:\]]"                        # ERROR:, WARN], HSA_STATUS_...:
    r"|\s*(?:(?=[\w-]*[_.\d])[\w.-]+|[\w.-]+\([\w ]+\)):\s"  # MIOpen(HIP): ..., ggml_cuda_init: ... (linear)
    r"|\s*[\w .()/-]{1,40}:\s{2,}\S"                     # aligned 'Key:   value' tables
    r"|\s*[\w .()/-]{1,40}[:?=]\s*(?:True|False|None|\d[\w.+-]*|'[^']*')\s*$"   # a check script's 'Key: False'
    r"|.*\b0x[0-9a-fA-F]{4,}"                            # addresses
    r"|\s*GPU \d+: \S.*\(UUID: "                           # nvidia-smi -L
    r"|\s*GPU\[\d+\]\s*:"                                   # rocm-smi's per-card lines
    r"|\s*(?:True|False|None|-?\d[\w.+-]*|\[[\w\s',.+-]*\]|\(\d+, ?\d+\))\s*$"   # a bare printed value (a check's answer)
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


# a 'Label: value' line ("OS: Ubuntu 24.04.1 LTS (x86_64)", "GPU models and configuration: AMD Radeon RX 6600"):
# three or more of them in a row are a tool's table (collect_env, a check script, hipconfig), not what a person wrote
_LABEL_LINE = re.compile(r"^\s{0,3}[A-Z][\w.()/+-]*(?: [\w.()/+-]+){0,5}\s?[:?]\s+\S")
LABEL_RUN = 3


def without_label_tables(text: str) -> str:
    """*text* less its runs of LABEL_RUN or more 'Label: value' lines (blank lines inside a run are part of it), so
    that the words a guess ranks are the user's, not a dump's field values."""
    lines = text.split("\n")
    keep = [True] * len(lines)
    run: list[int] = []

    def close() -> None:
        if len(run) >= LABEL_RUN:
            for k in run:
                keep[k] = False
        run.clear()

    for i, line in enumerate(lines):
        if _LABEL_LINE.match(line[:300]):
            run.append(i)
        elif line.strip():
            close()
    close()
    return "\n".join(ln for ln, k in zip(lines, keep) if k)


QUERY_HEAD = QUERY_TAIL = 256 * 1024  # what a guess reads of a long paste: its start and its end (issue 16)


def bounded_query(text: str) -> str:
    """*text*, or for a long paste (a 64 MB uploaded log) its first and last QUERY_HEAD/QUERY_TAIL characters cut
    at line ends: what a person wrote around pasted output sits at its start or end, and ranking words costs time
    in proportion to the text (the log itself is left to the KB's patterns, which read all of it)."""
    if len(text) <= QUERY_HEAD + QUERY_TAIL:
        return text
    head = text[:QUERY_HEAD]
    tail = text[-QUERY_TAIL:]
    return head[: head.rfind("\n") + 1 or None] + "\n" + tail[tail.find("\n") + 1:]


def merge_symptoms(result: dict[str, Any], text: str, kb: Any, *, source: str = "description",
                   min_score: float = MIN_RELATIVE, limit: int = 5, prose_only: bool = True) -> dict[str, Any]:
    """Add ranked guesses for *text* to a matcher result (``{"diagnoses": [...]}``) in place, and return it.

    With *prose_only* (the default) only :func:`prose_lines` of *text* are read, so a pasted log is left to the
    KB's patterns and only what the user wrote around it counts as a description.

    * the words that an entry confirmed by logs or facts already accounts for (its document's words) are taken
      out of the query: they are explained; such an entry gains the matched words as evidence;
    * every other guess goes to ``result["possible"]`` (at most *limit*, relative score at least *min_score*,
      never a benign entry), as a diagnosis dict with ``"basis": "possible"``, ``"from_description": True`` and
      ``confidence = score * SYMPTOM_CONFIDENCE_CAP``, ranked among the possible ones only;
    * ``result["diagnoses"]`` (confirmed) keeps its members and order: a guess never changes the verdict.
    """
    from .matcher import diagnosis_dict

    text = bounded_query(text)
    query = prose_lines(text) if prose_only else text
    possible = result.setdefault("possible", [])
    if not query or not query.strip():
        return result
    by_id = {e.id: e for e in getattr(kb, "entries", kb)}
    diags = result.setdefault("diagnoses", [])
    confirmed = {d["id"]: d for d in diags}
    have = {d["id"] for d in possible}
    ret = retriever_for(kb)
    if ret is None:
        return result
    # what confirmed entries explain, as evidence on them
    for h in ret.rank(query, limit=len(ret.ids)):
        if h["id"] in confirmed:
            confirmed[h["id"]].setdefault("evidence", []).append(
                {"source": source, "kind": "symptom", "excerpt": h["phrase"], "score": h["score"]})
    added = 0
    for h in ret.rank(query, limit=limit + len(confirmed), ignore=list(confirmed)):
        e = by_id.get(h["id"])
        if e is None or e.benign or h["id"] in confirmed or h["id"] in have or h["score"] < min_score:
            continue
        if added >= limit:
            break
        d = diagnosis_dict(e, h["score"] * SYMPTOM_CONFIDENCE_CAP,
                           [{"source": source, "kind": "symptom", "excerpt": h["phrase"], "score": h["score"]}])
        d["basis"] = "possible"
        d["from_description"] = True
        possible.append(d)
        have.add(e.id)
        added += 1
    possible.sort(key=lambda d: (-d["confidence"], d["id"]))
    for i, d in enumerate(possible, 1):
        d["rank"] = i
    return result


def description_text(texts: Iterable[tuple[str, str]]) -> str:
    """Join named texts (as ``diagnose_text`` receives logs) into one description to match."""
    return "\n".join(t for _, t in texts)
