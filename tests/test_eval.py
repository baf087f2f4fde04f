"""The KB evaluation sets: real logs and descriptions from public reports, in two splits.

- tuning (tests/eval/tuning/): the 120 logs the KB was written against. The bar of issue 4 holds there:
  top-1 >= 0.80, top-3 >= 0.95, no error/critical diagnosis on a negative.
- retired (tests/eval/retired/): former held-out batches 1-4, tuning data since 2026-12-02; integrity and
  "never raises" are asserted, their figures reported with the tuning split.
- held-out (tests/eval/heldout/, batches 5-7): logs and descriptions nothing in the repository was tuned on. Asserted
  here is only what holds honestly: the set's integrity (size, languages, labels), that no KB entry, test or
  tuning case cites or copies it, that the service never raises on it, and that the healthy/unrelated logs
  raise no *new* error-level answer compared with the frozen baseline. Issue 14's accuracy targets are
  reported by bench/eval_kb.py in docs/EVALUATION.md, not asserted, until they hold.
"""
from __future__ import annotations

import collections
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while the file executes
    spec.loader.exec_module(mod)
    return mod


eval_kb = _load("eval_kb", ROOT / "bench" / "eval_kb.py")
check = _load("eval_check_heldout", ROOT / "bench" / "eval_check_heldout.py")

CASES = eval_kb.load_cases(eval_kb.TUNING_DIR)          # tuning split
HELDOUT = eval_kb.load_heldout_cases()                  # held-out logs
SYMPTOMS = eval_kb.load_heldout_symptoms()              # held-out descriptions (every held-out batch)
RETIRED = eval_kb.load_retired_cases()                  # former held-out logs, tuning data now
RETIRED_SYMPTOMS = eval_kb.load_retired_symptoms()
REQUIRED_IDS_FILE = ROOT / "tests" / "eval" / "kb-required-ids.md"
NEW_IDS_FILE = ROOT / "tests" / "eval" / "heldout" / "new-ids.txt"
CJK = re.compile(r"[\u4e00-\u9fff]")


def _required_ids() -> set[str]:
    # repo-relative on purpose: a fresh clone must check the labels, never skip
    text = REQUIRED_IDS_FILE.read_text(encoding="utf-8")
    ids = set(re.findall(r"^\|\s*([a-z][a-z0-9-]*)\s*\|", text, flags=re.M)) - {"id"}
    assert len(ids) >= 60, f"{REQUIRED_IDS_FILE} lists only {len(ids)} ids"
    return ids


def _new_ids() -> set[str]:
    return {line.strip() for line in NEW_IDS_FILE.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")}


# --- the tuning split: shape ------------------------------------------------------------------------

PER_ID_TUNING = 8


def test_set_is_big_and_spread():
    positives = [c for c in CASES if not c.negative]
    negatives = [c for c in CASES if c.negative]
    assert len(positives) >= 45, f"only {len(positives)} labelled real logs"
    assert len(negatives) >= 8, f"only {len(negatives)} negative cases"
    per_id = collections.Counter(c.expected for c in positives)
    # at most PER_ID_TUNING per id (3 in the first collection; later rounds added other versions' and apps' wordings
    # of the failures printed in many ways, up to 8 of ~450), plus held-out cases moved in when they were exposed
    # (the rule of docs/EVALUATION.md)
    moved = collections.Counter(c.expected for c in positives if "-ex-h" in c.path.name)
    crowded = {k: v for k, v in per_id.items() if v > PER_ID_TUNING + moved[k]}
    assert not crowded, f"more than {PER_ID_TUNING} cases for one id: {crowded}"
    assert len(per_id) >= 20, f"cases cover only {len(per_id)} ids"


def test_every_expected_id_is_a_required_kb_id():
    known = _required_ids() | eval_kb.kb_ids()
    unknown = sorted({c.expected for c in CASES if not c.negative} - known)
    assert not unknown, f"tuning cases expect ids that are neither required nor in kb/: {unknown}"


@pytest.mark.parametrize("split", ["tuning", "heldout", "retired"])
def test_cases_are_distinct_real_logs(split):
    cases = {"tuning": CASES, "heldout": HELDOUT, "retired": RETIRED}[split]
    seen: dict[str, str] = {}
    for c in cases:
        body = re.sub(r"\s+", " ", c.log).strip()
        assert len(body) >= 40, f"{c.path.name}: log too short to be a real paste"
        assert body not in seen, f"{c.path.name} duplicates {seen.get(body)}"
        seen[body] = c.path.name
        assert eval_kb.NAME_RE[split].match(c.path.stem), c.path.name
        assert c.note and "\n" not in c.note, f"{c.path.name}: note must be one line"


# --- the held-out split: integrity ------------------------------------------------------------------

def test_heldout_logs_size_spread_and_labels():
    positives = [c for c in HELDOUT if not c.negative]
    negatives = [c for c in HELDOUT if c.negative]
    # counts, not the lists, in the assertions: pytest prints an asserted expression's parts, and a list of held-out
    # cases would put their text in front of whoever runs the tests (people tuning the KB must not see it)
    n_logs, n_negatives = len(HELDOUT), len(negatives)
    assert n_logs >= 60, f"only {n_logs} held-out logs"
    assert n_negatives >= 10, f"only {n_negatives} healthy/unrelated held-out logs"
    per_id = collections.Counter(c.expected for c in positives)
    assert len(per_id) >= 20, f"held-out logs cover only {len(per_id)} ids"
    crowded = {k: v for k, v in per_id.items() if v > 4}
    assert not crowded, f"more than 4 held-out logs for one id: {crowded}"
    valid = _required_ids() | eval_kb.kb_ids() | _new_ids()
    unknown = sorted(set(per_id) - valid)
    assert not unknown, f"held-out labels that are no required id, kb entry or listed new id: {unknown}"


def test_heldout_descriptions_are_half_chinese_and_labelled():
    langs = collections.Counter(s.lang for s in SYMPTOMS)
    n_descriptions = len(SYMPTOMS)   # a count in the assertion, not the list (see above)
    assert n_descriptions >= 40, f"only {n_descriptions} held-out descriptions"
    assert langs["zh"] >= 20 and langs["en"] >= 20 and abs(langs["zh"] - langs["en"]) <= 3, langs
    ids = [s.id for s in SYMPTOMS]
    assert len(ids) == len(set(ids)), "duplicate description ids"
    for s in SYMPTOMS:
        assert re.match(r"^s\d{3}-(zh|en)$", s.id) and s.id.endswith(s.lang), s.id
        assert bool(CJK.search(s.text)) == (s.lang == "zh"), f"{s.id}: text language does not match lang"
        assert s.kind == "original" or s.lang == "zh", f"{s.id}: only Chinese entries may be translations"
        assert s.note and "\n" not in s.note, f"{s.id}: note must be one line"
    translations = sum(s.kind == "translation" for s in SYMPTOMS)
    assert translations <= len(SYMPTOMS) // 8, f"{translations} translations: most must be users' own words"
    valid = _required_ids() | eval_kb.kb_ids() | _new_ids()
    unknown = sorted({s.expected for s in SYMPTOMS} - valid)
    assert not unknown, f"description labels that are no required id, kb entry or listed new id: {unknown}"


def test_retired_batches_are_whole_and_out_of_the_heldout_split():
    """Batches 1-4 retired whole (logs and descriptions) on 2026-12-02, batch 5 on 2026-12-03; none of their items is
    held out."""
    assert len(RETIRED) >= 179 + 45 and len(RETIRED_SYMPTOMS) >= 109 + 30, (len(RETIRED), len(RETIRED_SYMPTOMS))
    assert all(c.split == "retired" for c in RETIRED)
    assert not {c.path.name for c in RETIRED} & {c.path.name for c in HELDOUT}
    assert not {s.id for s in RETIRED_SYMPTOMS} & {s.id for s in SYMPTOMS}
    assert set(eval_kb.HELDOUT_BATCHES).isdisjoint(eval_kb.RETIRED_BATCHES)


# per batch: minimum logs, negatives, descriptions, first log number, first description number, most logs per id.
# (Batch 4, retired in session 8, had (39, 8, 24, 142, 98, 3); batch 5, retired in session 10, (40, 10, 30, 182, 122, 4);
# batch 6, retired in session 12, (28, 6, 18, 230, 160, 2).)
BATCH_SHAPE = {7: (27, 5, 9, 290, 200, 2), 8: (27, 6, 14, 320, 210, 2),
               9: (34, 6, 17, 352, 226, 2), 10: (30, 6, 18, 387, 244, 2),
               11: (32, 6, 18, 419, 262, 2),
               12: (32, 7, 18, 451, 280, 2),
               13: (32, 7, 18, 483, 298, 2)}   # s185 (session 8), h188, h240, h271, h302, s132, s180, s207, h334, h335 (session 9), h236, h237, h238, h241, h320, h330, s224 (session 10), h306, h329, h385, h391, h418, s211, s227 (session 12) moved to tuning


@pytest.mark.parametrize("batch", sorted(BATCH_SHAPE))
def test_heldout_batch_size_spread_and_languages(batch):
    """Each held-out batch on its own: the size its round asked for, half Chinese, spread over ids, numbered after
    the batches before it so that names never collide."""
    min_logs, min_neg, min_syms, first_log, first_sym, per_id_max = BATCH_SHAPE[batch]
    logs = eval_kb.load_heldout_cases(batch=batch)
    syms = eval_kb.load_heldout_symptoms(batch=batch)
    assert all(eval_kb.HELDOUT_BATCHES[batch][0] in c.path.parents for c in logs)
    negatives = [c for c in logs if c.negative]
    n_logs, n_neg = len(logs), len(negatives)   # counts in the assertion, never the held-out cases themselves
    assert n_logs >= min_logs and n_neg >= min_neg, (n_logs, n_neg)
    per_id = collections.Counter(c.expected for c in logs if not c.negative)
    # (collected over at least 20 ids each; exposed cases moved to tuning since can take a batch below that)
    assert len(per_id) >= 18, f"batch {batch} covers only {len(per_id)} ids"
    crowded = {k: v for k, v in per_id.items() if v > per_id_max}
    assert not crowded, f"more than {per_id_max} batch-{batch} logs for one id: {crowded}"
    langs = collections.Counter(s.lang for s in syms)
    n_syms = len(syms)
    assert n_syms >= min_syms and langs["zh"] >= n_syms / 2 - 1 and langs["en"] >= n_syms / 2 - 1, langs
    assert min(int(c.path.stem[1:4]) for c in logs) >= first_log
    assert min(int(s.id[1:4]) for s in syms) >= first_sym


@pytest.mark.parametrize("batch", sorted(BATCH_SHAPE))
def test_heldout_later_batch_threads_are_new(batch):
    """Every item of a held-out batch comes from its own thread, one no other batch (retired ones included) uses."""
    folder = eval_kb.HELDOUT_BATCHES[batch][0]
    b_logs, b_syms = eval_kb.load_heldout_cases(batch=batch), eval_kb.load_heldout_symptoms(batch=batch)
    mine = [check.thread_key(c.source) for c in b_logs] + [check.thread_key(s.source) for s in b_syms]
    twice = [k for k, n in collections.Counter(mine).items() if n > 1]
    assert not twice, f"batch-{batch} items from the same thread: {twice}"
    if not b_logs and not b_syms:
        pytest.fail(f"held-out batch {batch} is empty ({folder})")
    others = {check.thread_key(c.source) for c in HELDOUT + RETIRED if folder not in c.path.parents}
    b_ids = {s.id for s in b_syms}
    others |= {check.thread_key(s.source) for s in SYMPTOMS + RETIRED_SYMPTOMS if s.id not in b_ids}
    reused = sorted(k for k in mine if k in others)
    assert not reused, f"batch-{batch} items from threads other batches use: {reused}"


def test_heldout_threads_are_used_once():
    keys = collections.Counter(check.thread_key(s.source) for s in SYMPTOMS)
    twice = [k for k, n in keys.items() if n > 1]
    assert not twice, f"descriptions from the same thread: {twice}"
    tuning = {check.thread_key(c.source) for c in CASES + RETIRED}
    tuning |= {check.thread_key(s.source) for s in RETIRED_SYMPTOMS}
    mixed = sorted(c.path.name for c in HELDOUT if check.thread_key(c.source) in tuning)
    mixed += sorted(s.id for s in SYMPTOMS if check.thread_key(s.source) in tuning)
    assert not mixed, f"held-out items from threads the tuning split uses: {mixed}"


def test_no_kb_entry_test_or_tuning_case_cites_a_heldout_thread():
    hits = check.find_citations()
    assert not hits, ("held-out threads now cited in the repository; move these cases to tests/eval/tuning/ "
                      "and replace them with fresh unseen ones (docs/EVALUATION.md, Protocol):\n  " +
                      "\n  ".join(f"{h['case']}: {h['source']} cited in {h['cited_in']}" for h in hits))


def test_no_heldout_log_is_copied_into_kb_tests_or_tuning_cases():
    hits = check.find_copies()
    assert not hits, ("held-out text copied into seen files; move these cases to tuning and replace them:\n  " +
                      "\n  ".join(f"{h['case']}: {h['shared_lines']} lines in {h['file']}" for h in hits))


def test_the_citation_check_recognises_a_cited_thread(tmp_path):
    """The checker must see a citation however the URL is written (renamed repo, fragment, trailing dot)."""
    (tmp_path / "kb").mkdir()
    (tmp_path / "tests" / "eval" / "heldout" / "logs").mkdir(parents=True)
    case = HELDOUT[0]
    (tmp_path / "tests" / "eval" / "heldout" / "logs" / case.path.name).write_text(
        case.path.read_text(encoding="utf-8"), encoding="utf-8")
    url = case.source.replace("https://github.com/", "https://www.github.com/") + "#issuecomment-1."
    (tmp_path / "kb" / "x.yaml").write_text(f"sources:\n  - {url}\n", encoding="utf-8")
    hits = check.find_citations(tmp_path, tmp_path / "tests" / "eval" / "heldout")
    assert [h["case"] for h in hits] == [case.path.stem]
    assert check.thread_key("https://github.com/ROCm/ROCm/issues/12") == \
        check.thread_key("https://github.com/ROCm/legacy-rocm-build/issues/12")


# --- measured on the service ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def outcomes():
    pytest.importorskip("diagnostics.service", reason="diagnostics.service.diagnose_text not written yet")
    return eval_kb.evaluate(CASES)


@pytest.fixture(scope="module")
def heldout_outcomes():
    pytest.importorskip("diagnostics.service")
    return eval_kb.evaluate(HELDOUT)


@pytest.fixture(scope="module")
def symptom_outcomes():
    pytest.importorskip("diagnostics.service")
    return eval_kb.evaluate_symptoms(SYMPTOMS)


@pytest.fixture(scope="module")
def retired_outcomes():
    pytest.importorskip("diagnostics.service")
    return eval_kb.evaluate(RETIRED)


def test_service_never_raises(outcomes, heldout_outcomes, retired_outcomes, symptom_outcomes):
    errors = [(o.case.path.name, o.error) for o in outcomes + heldout_outcomes + retired_outcomes if o.error]
    errors += [(o.symptom.id, o.error) for o in symptom_outcomes if o.error]
    assert not errors, errors


def test_top1_and_top3_accuracy(outcomes):
    summary = eval_kb.summarize(outcomes)
    table = eval_kb.miss_table([o for o in outcomes if not o.case.negative])
    assert summary["top1"] >= eval_kb.TUNING_BAR["top1"], f"tuning top-1 {summary['top1']:.3f} < 0.80\n{table}"
    # top-3 counts the possible causes too: issue 14 moved reporters' prose ("works as root", a bare "WSL") out of
    # the log patterns into the symptom vocabulary, so four tuning cases that were confirmed only by the reporter's
    # own sentence are now ranked guesses (docs/EVALUATION.md shows both figures)
    assert summary["top3_any"] >= eval_kb.TUNING_BAR["top3"], \
        f"tuning top-3 incl. possible {summary['top3_any']:.3f} < 0.95\n{table}"


def test_negatives_raise_no_error_level_diagnosis(outcomes):
    alarms = {o.case.path.name: o.alarms for o in outcomes if o.case.negative and o.alarms}
    assert not alarms, f"error/critical diagnoses on healthy or unrelated logs: {alarms}"


def test_heldout_negatives_raise_no_new_error_level_diagnosis(heldout_outcomes):
    """Every healthy/unrelated held-out log that was clean at the baseline stays clean.

    (A negative that raised an alarm at its batch's baseline is listed there, bench/eval_baseline_batch<N>.json;
    the goal of issue 14 is none.)"""
    alarmed_then: set[str] = set()
    for n in eval_kb.HELDOUT_BATCHES:   # each batch was measured once right after it was frozen
        path = ROOT / "bench" / f"eval_baseline_batch{n}.json"
        assert path.exists(), f"held-out batch {n} has no baseline ({path.name}): measure it once when frozen"
        b = json.loads(path.read_text(encoding="utf-8"))
        alarmed_then |= {m["case"] for m in b[f"heldout{n}_logs"]["misses"] if m["expected"] == "none"}
    now = {o.case.path.name: o.alarms for o in heldout_outcomes if o.case.negative and o.alarms}
    new = {k: v for k, v in now.items() if k not in alarmed_then}
    assert not new, f"error-level diagnoses on held-out healthy/unrelated logs that were clean: {new}"


# --- the tuning descriptions (tests/eval/tuning-symptoms.yaml) ------------------------------------------

def test_tuning_descriptions_are_real_half_chinese_and_apart_from_the_heldout_set():
    items = eval_kb.load_symptoms(eval_kb.TUNING_SYMPTOMS)
    assert len(items) >= 30, f"only {len(items)} tuning descriptions"
    zh = [s for s in items if s.lang == "zh"]
    assert 0.4 <= len(zh) / len(items) <= 0.6, f"{len(zh)} of {len(items)} in Chinese"
    assert all(CJK.search(s.text) for s in zh), [s.id for s in zh if not CJK.search(s.text)]
    assert len({s.id for s in items}) == len(items), "repeated description ids"
    unknown = sorted({s.expected for s in items} - (_required_ids() | eval_kb.kb_ids()))
    assert not unknown, f"labels that are neither required nor in kb/: {unknown}"
    assert all(s.note and "\n" not in s.note for s in items), "a note must be one line"


def test_tuning_descriptions_hold_the_description_bar():
    outcomes = eval_kb.evaluate_symptoms(eval_kb.load_symptoms(eval_kb.TUNING_SYMPTOMS))
    s = eval_kb.summarize_symptoms(outcomes)
    table = eval_kb.symptom_miss_table(outcomes)
    # the bar issue 14 sets for unseen descriptions (top-1 0.80), held where we tune; top-3 a little under its 0.95
    # (0.94: the set includes ten descriptions moved in from the held-out set on 2026-12-01, never tuned on)
    assert s["top1"] >= eval_kb.SYMPTOM_TARGET["top1"], f"tuning descriptions top-1 {s['top1']:.3f}\n{table}"
    assert s["top3"] >= 0.94, f"tuning descriptions top-3 {s['top3']:.3f}\n{table}"


def test_a_thread_can_be_checked_before_it_is_read(capsys):
    """`eval_check_heldout.py --thread URL` answers held out or free, and shows no case."""
    item = check.heldout_items()[0]
    assert check.main(["--thread", item.source, "https://github.com/example/none/issues/1"]) == 1
    out = capsys.readouterr().out
    assert out.count("HELD OUT") == 1 and "free: https://github.com/example/none/issues/1" in out
    assert item.text[:40] not in out if item.text.strip() else True
    assert check.main(["--thread", "https://github.com/example/none/issues/2"]) == 0
