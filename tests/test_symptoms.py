"""Symptom descriptions typed in Chinese or English rank the right KB entry first (issue 10 acceptance), by BM25
retrieval over the KB (issue 14): guesses are "possible", apart from confirmed findings, and never change the exit.

The Chinese phrasings imitate how people write on Chinese forums (CSDN, zhihu, gitcode blog posts; see the
sources listed at the top of diagnostics/i18n/symptoms.yaml): colloquial, mixed with English tool output,
full-width punctuation, sometimes traditional characters.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from diagnostics import symptoms
from diagnostics.kb import load_kb
from diagnostics.symptoms import build_lexicon, match_symptoms, merge_symptoms, normalize

SEVEN = {
    # install: a CPU wheel of torch
    "torch-cpu-only-wheel": [
        "pip install torch 之后 torch.cuda.is_available() 返回 False，torch.__version__ 显示 2.5.1+cpu",
        "装成了CPU版的torch，显卡用不了",
        "请问为什么我的pytorch是cpu版本的？torch.cuda.is_available()一直是False",
        "torch.cuda.is_available() 返回 False",
        "ｔｏｒｃｈ．ｃｕｄａ．ｉｓ＿ａｖａｉｌａｂｌｅ（） 返回 Ｆａｌｓｅ",
        "明明有显卡，PyTorch 却只能用 CPU 训练",            # mynw.cn/news/553078.html
    ],
    # permissions on /dev/kfd
    "user-not-in-render-video-group": [
        "没有权限访问 /dev/kfd",
        "rocminfo 提示 /dev/kfd Permission denied，用 sudo 就可以",
        "普通用户跑不了，用root运行正常，是不是要加入render组？",
        "/dev/kfd 权限不够，torch.cuda.is_available() 返回 False",
        "非root用户无法使用显卡，sudo 下一切正常",
    ],
    # the amdgpu kernel driver is not loaded
    "amdgpu-driver-not-loaded": [
        "rocminfo 报错 ROCk module is NOT loaded, possibly no GPU devices",
        "amdgpu 驱动没加载，lsmod 里没有 amdgpu",
        "装完ROCm以后驱动没有加载，检测不到显卡",
        "amdgpu模块未加载怎么办",
    ],
    # the torch build has no code for this gfx
    "hip-no-binary-for-gpu": [
        "运行就报 hipErrorNoBinaryForGpu: Unable to find code object for all current devices! 然后核心已转储",
        "RX 6600 跑 stable diffusion 报错找不到 code object，是不是 rocm 不支持这张卡",
        "torch 里没有这个gfx的二进制，gfx1031 不支持",
        "显卡是gfx1032，pytorch提示没有适合这个GPU的二进制",
    ],
    # out of GPU memory
    "hip-out-of-memory": [
        "显存不足",
        "跑 7B 模型爆显存了，报 torch.OutOfMemoryError: HIP out of memory",
        "显存爆了，batch size 调小也没用",
        "顯存不足，怎麼辦",
    ],
    # the GPU is there but the work runs on the CPU
    "ollama-amd-gpu-unsupported-cpu-fallback": [
        "ollama 不跑GPU，只用CPU，显卡是 RX 6700 XT",
        "ollama 回退到 CPU 模式运行了，GPU 占用为 0",
        "用 ollama 跑 qwen，显卡没用上，全在 CPU 上跑",
        "ollama 明明识别了 AMD 显卡，但是只用了CPU",
    ],
    # generation crawls because layers sit on the CPU/disk
    "model-offloaded-to-cpu-slow": [
        "生成非常慢",
        "transformers 加载模型用了 device_map=\"auto\"，结果出字很慢，一秒一个字",
        "推理速度很慢，好像一部分层 offload 到 CPU 了",
        "生成速度慢得离谱，tokens/s 很低",
        "generation is very slow",
    ],
}


@pytest.mark.parametrize("expected,text", [(k, t) for k, ts in SEVEN.items() for t in ts])
def test_description_ranks_right_entry_first(expected, text):
    got = match_symptoms(text)
    assert got, f"nothing matched {text!r}"
    assert got[0]["id"] == expected, f"{text!r}: got {[(g['id'], g['score']) for g in got[:3]]}"
    assert got[0]["phrase"]


# Harder phrasings: the right entry among the first three (the bar issue 14 sets for top three)
TOP3 = [
    ("torch-cpu-only-wheel", "可 PyTorch 就是无法调用 GPU，看得见算力却用不上"),   # mynw.cn/news/558109.html
    ("hip-out-of-memory", "训练到一半提示GPU内存不足 (OOM)"),
    ("amdgpu-driver-not-loaded", "GPU is not detected"),
    # (round 7: the entry for the comparison itself, guessed again; its causes start with the model offloaded)
    ("gpu-generation-slower-than-cpu", "用GPU反而更慢，GPU比CPU还慢"),
]


@pytest.mark.parametrize("expected,text", TOP3)
def test_description_ranks_right_entry_in_top_three(expected, text):
    assert expected in [d["id"] for d in match_symptoms(text)[:3]], match_symptoms(text)[:3]


def test_brief_examples():
    assert match_symptoms("显存不足")[0]["id"] == "hip-out-of-memory"
    assert match_symptoms("生成非常慢")[0]["id"] == "model-offloaded-to-cpu-slow"
    assert match_symptoms("torch.cuda.is_available() 返回 False")[0]["id"] == "torch-cpu-only-wheel"
    assert match_symptoms("没有权限访问 /dev/kfd")[0]["id"] == "user-not-in-render-video-group"
    assert match_symptoms("generation is very slow")[0]["id"] == "model-offloaded-to-cpu-slow"


def test_spelling_and_synonyms_fold_to_one_token():
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    assert "util" in words("GPU utilisation is 0") and "util" in words("gpu utilization 0%") \
        and "util" in words("GPU占用率一直是0")
    assert {"vram", "oom"} <= words("显存不足") and {"vram", "oom"} <= words("CUDA out of memory")
    assert "vram" in words("video memory") and "vram" in words("VRAM") and "vram" in words("顯存")
    assert "oom" in words("OOM") and "oom" in words("ran out of memory")
    assert "oom" not in words("a zoom room")                      # variants match whole words only
    assert words("devices detected") == {"devic", "detect"}       # English stems


def test_round6_normalisations():
    """Sizes say nothing about the cause (a card's 4G is not 'above 4G decoding'); an APU's own name is the
    integrated GPU; the shared GPU memory of an APU is not /dev/shm; a held-back 'VRAM is free' is not 'in use'."""
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    assert words("4g 16gb 24GiB") == set() and "tinyvram" in words("only 512MB")
    assert "above4g" in words("enable Above 4G Decoding") and "above4g" not in words("我的4G显存")
    assert "igpu" in words("Radeon 780M") and "igpu" in words("Strix Halo") and "igpu" in words("Ryzen 5 5600G")
    assert "sharedvram" in words("16G of shared GPU memory") and "shm" not in words("16G of shared GPU memory")
    assert "shm" in words("/dev/shm is too small")
    assert "vramfree" in words("显存基本没占用，但是运行依旧爆显存") and "util" not in words("显存基本没占用")
    assert "polaris" in words("RX 570 on Fedora") and "gpusflag" in words("docker run --gpus all -it")
    assert "oom" in words("jcuda.CudaException: CUDA_ERROR_OUT_OF_MEMORY") and "oom" in words("why out memory?")


@pytest.mark.parametrize("text,expected", [
    # what people write when the memory belongs to someone else (an entry with a log signature and probe facts:
    # describable, unlike the doctor's own measurements)
    ("nvidia-smi shows memory used but no process, and my job runs out of memory", "gpu-vram-held-by-other-process"),
    ("进程kill了之后显存还是被占着，nvidia-smi看不到进程", "gpu-vram-held-by-other-process"),
    ("Radeon 780M only has 512MB of VRAM and torch runs out of memory", "apu-vram-carveout-too-small"),
    ("这个模型需要多少显存才能跑？16G跑不动", "model-too-large-for-vram"),
    # (round 11)
    # a leftover process keeps the VRAM after its program ended
    ("程序崩溃之后显存一直被占用，只能重启", "gpu-vram-held-by-other-process"),
    ("the zombie process still holds gpu memory after I stopped training", "gpu-vram-held-by-other-process"),
    # the program vanishes while loading, with nothing printed: the host ran out of RAM
    ("the app closes immediately without any error when it loads the checkpoint", "host-ram-oom-killed"),
    ("加载模型的时候内存被吃满了，然后程序自己退出了", "host-ram-oom-killed"),
    # ollama ps's CPU/GPU split: the model is partly on the CPU
    ("ollama ps says 40%/60% CPU/GPU and the answers come slowly", "model-offloaded-to-cpu-slow"),
    # black parts of a picture, and a GTX 16xx card's black pictures: half precision
    ("I get black blocks in the faces of my pictures", "fp16-nan-or-black-output"),
    ("我的1660 super生成出来全是黑的", "fp16-nan-or-black-output"),
    # (round 12)
    # the CPU build of torch named by what it lacks
    ("after the update the installer put a non-CUDA version of torch back", "torch-cpu-only-wheel"),
    # a gated model: the access request and its approval
    ("I requested access to the model last week, is it approved yet? the download says 401", "hf-gated-model-access-denied"),
    # the VRAM full while the GPU idles: the model spilled out of VRAM
    ("訓練時顯存幾乎全滿，但是GPU占用很低，一個epoch要十幾分鐘", "model-offloaded-to-cpu-slow"),
    ("the vram is full but gpu utilization is low and each step takes forever", "model-offloaded-to-cpu-slow"),
    # an AMD card on Windows, where the ROCm builds are for Linux
    ("how do I run this with my AMD card on Windows? the install guide is only for Linux", "no-rocm-wheel-for-platform"),
    # flash-attn 1.x's own compute-capability check
    ("flash-attn says Expected is_sm8x || is_sm75 to be true on our V100 server", "flash-attn-gpu-too-old"),
])
def test_discriminating_words_rank_first(text, expected):
    assert match_symptoms(text)[0]["id"] == expected, match_symptoms(text)[:3]


MEASURED_ONLY = ("gen.", "monitor.")


def test_entries_only_the_doctor_can_measure_are_never_guessed():
    """An entry whose condition is only the doctor's own measurements (test generation, GPU watch: gen.* and
    monitor.* facts, no log line) is listed in not_from_description, and no description brings it up."""
    lex = symptoms.load_lexicon()
    for e in load_kb().entries:
        facts_used = e.when.facts_used()
        if not e.when.log_patterns() and facts_used and all(f.startswith(MEASURED_ONLY) for f in facts_used):
            assert (e.id in lex.excluded) != (e.id in lex.describable), e.id
    for text in ("模型在GPU上，但是GPU占用一直是0", "跑着跑着显卡降频了，温度太高", "还没开始跑，显存被别的进程占用了一大半",
                 "加载模型后显存占用没变，核显上", "GPU utilization stays at 0% while generating"):
        got = {d["id"] for d in match_symptoms(text)}
        assert got and not got & lex.excluded, (text, got)


@pytest.mark.parametrize("typed,written", [
    ("ollama doesn\u2019t use the GPU", "ollama doesn't use the GPU"),          # a phone's or an editor's apostrophe
    ("ollama doesnt use the GPU", "ollama doesn't use the GPU"),               # no apostrophe at all
    ("torch says cuda is not avaliable on my nvdia card", "torch says cuda is not available on my nvidia card"),
    ("pytroch cant find the gpu", "pytorch can't find the gpu"),
])
def test_misspelt_words_and_typographic_quotes_read_as_written(typed, written):
    tok = symptoms.retriever_for().tokenizer
    assert [t for t, _ in tok(typed)] == [t for t, _ in tok(written)]
    assert [d["id"] for d in match_symptoms(typed)][:3] == [d["id"] for d in match_symptoms(written)][:3] != []


def test_inflections_of_a_one_word_variant_read_as_its_token():
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: [t for t, _ in tok(text)]
    # "segfault" is a variant of crash: so are "segfaults"; "update" of update: so are "updates", "updating"
    assert words("segfaults") == words("segfault") == ["crash"]
    assert words("after the updates") == words("after updating") == words("after the update")
    # but not where the stem reaches past the variant: "containers" is container, "contains" is not
    assert "container" not in words("the log contains this")
    assert match_symptoms("Getting segfaults when I run anything on the gpu")[0]["id"] == "segfault-on-first-gpu-op"
    # the negations people write for "not detected"
    assert "notdetected" in words("the GPU isn't recognized by rocminfo") and "notdetected" in words("it doesn't show up")


def test_spellings_are_whole_words_and_checked():
    lex = symptoms.load_lexicon()
    assert lex.respell("the nvdia card, nvdiax and xnvdia") == "the nvidia card, nvdiax and xnvdia"
    with pytest.raises(ValueError):
        build_lexicon({"groups": [], "spellings": {"Nvdia": "nvidia"}})
    with pytest.raises(ValueError):
        build_lexicon({"groups": [], "spellings": ["nvdia"]})


def test_another_program_on_the_gpu_is_one_guess_not_two():
    """What a reporter says about another program on the GPU is what gpu-vram-held-by-other-process says;
    gpu-shared-with-other-process (the doctor's busy reading, the figures of an OOM error) is not guessed from words,
    so the two no longer split such a description and take two of the first three places."""
    for text in ("another process is using the gpu", "有其他进程在用gpu，一跑就out of memory",
                 "GPU out of memory error - memory already allocated before code starts to run"):
        got = [d["id"] for d in match_symptoms(text)]
        assert "gpu-vram-held-by-other-process" in got[:2] and "gpu-shared-with-other-process" not in got, (text, got)


ON_CPU = {"model-offloaded-to-cpu-slow", "ollama-amd-gpu-unsupported-cpu-fallback", "torch-cpu-only-wheel"}


@pytest.mark.parametrize("text,expected", [
    ("跑着跑着显卡降频了，温度太高", {"gpu-throttled-during-generation"}),   # it has a log signature: describable
    ("the GPU is throttling, overheating", {"gpu-throttled-during-generation"}),
    ("模型在GPU上，但是GPU占用一直是0", ON_CPU),          # an idle GPU while generating: the work runs on the CPU
    ("GPU utilization stays at 0% while generating", ON_CPU),
])
def test_gpu_watch_symptoms_point_at_describable_causes(text, expected):
    assert expected & {d["id"] for d in match_symptoms(text)[:3]}, match_symptoms(text)[:3]


def test_unrelated_text_matches_nothing():
    for text in ("", "今天天气不错", "the room is big and the bloom is nice", "hello world",
                 "模型加载成功，速度正常"):
        assert match_symptoms(text) == [], text


def test_english_words_match_whole_words_only():
    assert match_symptoms("I ran out of memory")[0]["id"] == "hip-out-of-memory"
    assert match_symptoms("OOM again")[0]["id"] == "hip-out-of-memory"
    assert not any(d["id"] == "hip-out-of-memory" for d in match_symptoms("a zoom and a broom room"))


def test_normalisation():
    assert normalize("ＧＰＵ　不　可用") == "gpu不可用"
    assert normalize("torch.cuda.is_available()  返回\tFalse") == "torch.cuda.is_available()返回false"
    assert match_symptoms("顯存不足")[0]["phrase"] == "显存不足"     # traditional spelling of a lexicon phrase
    assert match_symptoms("沒有權限訪問 /dev/kfd")[0]["id"] == "user-not-in-render-video-group"
    assert normalize("Out  Of\nMemory") == "out of memory"


def test_a_generic_word_alone_suggests_nothing():
    for text in ("模型加载成功，速度正常", "GPU", "显卡", "我的模型", "pytorch rocm"):
        assert match_symptoms(text) == [], text


def test_scores_are_bounded_and_sorted():
    got = match_symptoms("显存不足 爆显存 OOM 模型太大 生成非常慢 没有权限访问 /dev/kfd ollama 不跑GPU")
    scores = [d["score"] for d in got]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s <= 1 for s in scores)


def test_every_lexicon_id_is_a_kb_entry():
    ids = {e.id for e in load_kb().entries}
    lex = symptoms.load_lexicon()
    for group, weights in lex.weights.items():
        for eid in weights:
            assert eid in ids, f"group {group}: unknown kb id {eid}"


def test_bad_lexicon_is_refused():
    with pytest.raises(ValueError):
        build_lexicon({"groups": [{"name": "x", "zh": ["a"], "ids": {"hip-out-of-memory": 2}}]})
    with pytest.raises(ValueError):
        build_lexicon({"groups": [{"name": "x", "zh": ["  "], "ids": {"hip-out-of-memory": 0.5}}]})
    with pytest.raises(ValueError):
        build_lexicon({"nope": []})


def test_synonym_variants_are_literal():
    lex = build_lexicon({"groups": [{"name": "x", "en": ["y"], "ids": {"hip-out-of-memory": 0.5}}],
                         "synonyms": [{"token": "odd", "variants": ["a.b(c)*"]}]})
    tok = symptoms.Tokenizer(lex)
    assert ("odd", "a.b(c)*") in tok("see a.b(c)* here")
    assert not any(t == "odd" for t, _ in tok("see axb(c) here"))
    assert not any(t == "odd" for t, _ in tok("see a.bcccc here"))
    with pytest.raises(ValueError):
        build_lexicon({"groups": [{"name": "x", "en": ["y"], "ids": {"hip-out-of-memory": 0.5}}],
                       "synonyms": [{"token": "Bad Token", "variants": ["z"]}]})


def test_long_text_is_linear_and_finds_late_phrases():
    filler = "x" * 1000 + "\n"
    text = filler * 4000 + "最后：显存不足"       # ~4 MB, the phrase straddles nothing in particular
    t0 = time.perf_counter()
    got = match_symptoms(text)
    dt = time.perf_counter() - t0
    assert got[0]["id"] == "hip-out-of-memory"
    assert dt < 5.0, dt


def test_a_long_text_is_read_from_its_end():
    text = "今天天气不错\n" * (symptoms.MAX_QUERY_CHARS // 6) + "显存不足"
    assert len(text) > symptoms.MAX_QUERY_CHARS
    assert match_symptoms(text)[0]["id"] == "hip-out-of-memory"


def test_merge_into_a_real_diagnosis():
    from diagnostics.service import diagnose_text

    text = "ollama 不跑GPU，只用CPU"
    res = diagnose_text(logs=[("description", text)])
    assert res["diagnoses"] == []                     # nothing confirmed: a guess is not a diagnosis
    top = res["possible"][0]
    assert top["id"] == "ollama-amd-gpu-unsupported-cpu-fallback"
    assert top["basis"] == "possible" and top["from_description"] is True
    assert top["confidence"] <= symptoms.SYMPTOM_CONFIDENCE_CAP
    assert top["evidence"][0]["kind"] == "symptom" and top["evidence"][0]["excerpt"]
    assert [d["rank"] for d in res["possible"]] == list(range(1, len(res["possible"]) + 1))


def test_merge_keeps_log_proven_entries_apart_and_first():
    from diagnostics.service import diagnose_text

    log = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
    text = log + "另外生成非常慢"
    res = diagnose_text(logs=[("log", text)])
    assert [d["id"] for d in res["diagnoses"]] == ["hip-no-binary-for-gpu"]
    assert res["diagnoses"][0]["basis"] == "confirmed"
    assert "model-offloaded-to-cpu-slow" in [d["id"] for d in res["possible"]]
    assert not {d["id"] for d in res["possible"]} & {d["id"] for d in res["diagnoses"]}


def test_a_log_no_signature_explains_gets_guesses_from_its_words():
    from diagnostics.service import diagnose_text

    # wording no KB pattern has (a paraphrase of a VRAM exhaustion report), pasted without any prose around it
    log = "2024-05-01 12:00:03,117 ERROR worker 3: allocation of 2.0 GiB on device failed: video memory exhausted\n"
    res = diagnose_text(logs=[("app.log", log)])
    assert res["diagnoses"] == []
    assert res["possible"] and res["possible"][0]["id"] == "hip-out-of-memory", res["possible"][:3]
    assert res["possible"][0]["evidence"][0]["source"] == "log"


def test_describe_only_match_exits_zero_and_shows_guesses_apart(tmp_path):
    import json
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    run = lambda *a: subprocess.run([sys.executable, "-m", "diagnostics", "match", *a], capture_output=True,
                                    text=True, cwd=repo, timeout=300)
    out = run("--describe", "显存不足", "--json")
    assert out.returncode == 0, out.stderr            # guesses alone are not a problem
    res = json.loads(out.stdout)
    assert res["diagnoses"] == []
    assert res["possible"][0]["id"] == "hip-out-of-memory" and res["possible"][0]["basis"] == "possible"
    text = run("--describe", "显存不足").stdout
    assert "Possible causes (" in text and "hip-out-of-memory" in text
    assert text.index("No confirmed cause; possible causes below.") < text.index("Possible causes (")


def test_a_tool_name_alone_suggests_nothing():
    for text in ("bitsandbytes", "ollama", "我在用 MIOpen 和 vLLM", "Radeon 780M", "HSA_OVERRIDE_GFX_VERSION=10.3.0"):
        assert match_symptoms(text) == [], text
    for text in ("报错了", "it fails", "error"):
        assert match_symptoms(text) == [], text


def test_topic_plus_trouble_word():
    got = match_symptoms("bitsandbytes 报错")
    assert {"bitsandbytes-no-rocm-backend", "bitsandbytes-rocm-version-mismatch"} <= {d["id"] for d in got[:2]}
    assert "bitsandbytes" in got[0]["phrase"] and "报错" in got[0]["phrase"]
    assert match_symptoms("flash-attn 装不上")[0]["id"] == "flash-attn2-not-installed"
    assert match_symptoms("ollama 不跑GPU")[0]["id"] == "ollama-amd-gpu-unsupported-cpu-fallback"


def test_prose_lines_leave_tool_output_to_the_kb():
    text = "\n".join([
        "[    3.353884] amdgpu 0000:19:00.0: Direct firmware load for amdgpu/vega20_ta.bin failed with error -2",
        "RuntimeError: HIP out of memory. Tried to allocate 2.00 GiB",
        "MIOpen(HIP): Warning [SQLiteBase] Missing system database file: gfx1030_40.kdb",
        "  Marketing Name:          AMD Ryzen AI 9 HX 370 w/ Radeon 890M",
        "XNACK enabled:           NO",
        'time=2024-05-01T10:00:00 level=WARN source=amd_linux.go:378 msg="amdgpu is not supported"',
        "ggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected",
        "Memory access fault by GPU node-1 (Agent handle: 0x55f8b54eec30) on address 0x7f2a53193000.",
        "rocminfo says permission denied on /dev/kfd, works with sudo",
        "显存不足，报 RuntimeError: HIP out of memory",
        "torch.cuda.is_available() returns False",
        "Note: generation is very slow",
    ])
    kept = symptoms.prose_lines(text).splitlines()
    assert kept == ["rocminfo says permission denied on /dev/kfd, works with sudo",
                    "显存不足，报 RuntimeError: HIP out of memory",
                    "torch.cuda.is_available() returns False",
                    "Note: generation is very slow"]


def _eval_cases():
    import glob
    import yaml
    for p in sorted(glob.glob(str(Path(__file__).parent / "eval" / "tuning" / "*.yaml"))):
        yield p, yaml.safe_load(open(p, encoding="utf-8"))


def test_merging_into_pasted_logs_keeps_the_eval_bar():
    """On the 120 real pasted logs of the eval set, the words around a log (and the log itself when nothing fired)
    never change what the matcher alone confirmed: same diagnoses in the same order, so the same verdict; every
    guess is "possible" and none repeats a confirmed id.  (The matcher alone is the reference: diagnose_text
    itself merges, so comparing it with a second merge would compare merging once with merging twice.)"""
    from diagnostics.service import diagnose_text, get_kb

    _, matcher = get_kb()
    n = 0
    for path, case in _eval_cases():
        alone = matcher.match({}, [("log", case["log"])])
        full = diagnose_text(logs=[("log", case["log"])], detect_dumps_in_logs=False)
        assert [d["id"] for d in full["diagnoses"]] == [d["id"] for d in alone["diagnoses"]], path
        assert all(d["basis"] == "possible" for d in full["possible"]), path
        assert not {d["id"] for d in full["possible"]} & {d["id"] for d in full["diagnoses"]}, path
        n += 1
    assert n >= 100


def test_a_phrase_explained_by_a_proven_entry_suggests_nothing_else():
    from diagnostics.service import diagnose_text

    text = "rocminfo 提示 Unable to open /dev/kfd read-write: Permission denied，用 sudo 就可以\n生成非常慢"
    res = diagnose_text(logs=[("描述", text)])
    assert [d["id"] for d in res["diagnoses"]][0] == "user-not-in-render-video-group"
    assert any(ev.get("kind") == "symptom" for ev in res["diagnoses"][0]["evidence"])
    guesses = [d["id"] for d in res["possible"]]
    assert "model-offloaded-to-cpu-slow" in guesses            # a second, unexplained symptom still counts
    assert "container-render-gid-mismatch" not in guesses      # same words, already explained


# Reporters' words that used to be KB log patterns (issue 14): they now rank guesses, they confirm nothing.
MOVED = [
    ("user-not-in-render-video-group", "hsa api call failure at: /src/rocminfo/rocminfo.cc:1142\n"
     "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n"
     "But if I run it as **root**, it works."),                                # legacy-rocm-build#1080
    ("wsl-rocm-unsupported-or-misconfigured", "Running /opt/rocm-5.2.3/bin/rocminfo I get:\n"
     "ROCk module is NOT loaded, possibly no GPU devices\nNoting I am using Ubuntu 20.4 on WSL2."),  # #1794
    ("container-missing-gpu-devices", "RuntimeError: No HIP GPUs are available\n"
     "The host can see the GPUs, but processes inside Docker cannot. Any idea?"),  # vllm-project/vllm#7207
    ("pip-dependency-replaced-rocm-torch", "turns out the problem was the automated installer uninstalls the right "
     "torch version (1.13.1+rocm5.2) and then installs the wrong torch version (2.0, non ROCm)"),  # easydiffusion#1607
    ("secure-boot-blocks-amdgpu-dkms", "Secure Boot blocking the loading of the amdgpu module"),  # legacy-rocm-build#4328
]


@pytest.mark.parametrize("eid,text", MOVED, ids=[m[0] for m in MOVED])
def test_reporters_words_are_guesses_not_findings(eid, text):
    from diagnostics.service import diagnose_text

    res = diagnose_text(logs=[("paste", text)])
    assert eid not in [d["id"] for d in res["diagnoses"]]
    if eid in EXPLAINED_BY_A_SYMPTOM:
        # the log itself confirms a symptom entry whose checks, in order, start with this cause; its words are then
        # explained and no guess is added (session 9: an experiment that un-explained them lowered the held-out guesses)
        symptom = EXPLAINED_BY_A_SYMPTOM[eid]
        assert [d["id"] for d in res["diagnoses"]][:1] == [symptom]
        assert eid in str(res["diagnoses"][0].get("cause", "")) or "render" in str(res["diagnoses"][0].get("cause", ""))
        return
    assert eid in [d["id"] for d in res["possible"][:3]], [d["id"] for d in res["possible"]]


# rocminfo's OUT_OF_RESOURCES as a non-root user is confirmed as hip-runtime-sees-no-gpu since session 9 (its older
# rocminfo wordings), whose cause lists the missing render group first
EXPLAINED_BY_A_SYMPTOM = {"user-not-in-render-video-group": "hip-runtime-sees-no-gpu"}


def test_a_shell_variable_being_set_is_a_command_not_a_description():
    text = "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789\nset HIP_VISIBLE_DEVICES=0\n显存不足"
    assert symptoms.prose_lines(text) == "显存不足"


def test_tokenizer_drops_noise_and_reads_identifiers():
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    # numbers are versions and sizes, not symptoms
    assert not {"24", "04", "2"} & words("ubuntu 24.04.2 LTS pytorch 2.6.0")
    # a pair with a function character spans two words: "都是", "个字" never reach BM25
    assert not {"都是", "个字", "法使"} & words("导入视频都是一样，推理几十个字，有没办法使用GPU")
    # a short snake_case identifier counts as its parts too
    ident = words("There is no TensileLibrary_lazy_gfx1031.dat")
    assert "gfx1031" in ident and "tensilelibrari" in ident       # (Snowball's stem of "tensilelibrary")
    # colloquial and inflected forms fold to one token
    assert "kernelupdate" in words("after a kernel upgrade") and "kernelupdate" in words("升级内核以后")
    assert "cpuonly" in words("ollama is not using my GPU") and "blackimage" in words("出图全是黑的")
    assert "也没" not in words("重启也没用")      # "didn't help either" is filler


def test_an_error_code_is_read_a_bare_number_is_not():
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    # the number after an error word names the failure, however it is introduced
    for text in ("(os error 1455)", "OSError: [WinError 1455] 页面文件太小", "error: 1455", "报错 1455"):
        assert "code1455" in words(text), text
    assert "code126" in words("[WinError 126] The specified module could not be found")
    assert {"code137"} <= words("exited with exit code 137") and "code401" in words("401 Client Error: Unauthorized")
    assert "code28" in words("OSError: [Errno 28] No space left on device")
    assert "code35" in words("onnxruntime CUDA failure 35: CUDA driver version is insufficient")
    # versions, sizes and counts stay out
    assert not {t for t in words("torch 2.1 on a 4090 with 24 GB, batch 8, 30 minutes") if t.startswith("code")}
    # so two Windows errors that share a word no longer look alike: 1455 is the page file, 126 a DLL that does not load
    assert match_symptoms("(os error 1455) I was facing this error, anyone can help")[0]["id"] == "windows-pagefile-too-small"
    assert match_symptoms("WinError 126 when I start it")[0]["id"] == "windows-torch-dll-load-failed"


@pytest.mark.parametrize("expected,text", [
    # issue 14's list of how people say it, in their words (no log pasted)
    ("hip-out-of-memory", "爆显存"),
    ("fp16-nan-or-black-output", "stable diffusion 出图全是黑的"),
    ("host-ram-oom-killed", "加载模型一半被杀掉"),
    ("hf-hub-unreachable", "模型下载不下来"),
    ("rccl-multigpu-hang", "多卡训练卡住不动"),
    ("pip-externally-managed-environment", "pip install 报错 externally-managed-environment"),
    ("nvidia-module-not-built-for-kernel", "after a kernel upgrade nvidia-smi cannot talk to the driver"),
    # round 9: "CPU mode" is the CPU fallback, said the way the tool's window shows it
    ("torch-cpu-only-wheel", "it always shows 'CPU' in the window, I reinstalled torch but it is still in CPU mode"),
    ("cuda-no-kernel-image", "换了新显卡4090之后报no kernel image"),     # the error cut short, as people quote it
    ("torch-not-installed", "torch模块找不到，已经特意安装到1.10版本还是不行"),      # the words of 找不到torch模块 the other way round
    ("user-not-in-render-video-group", "it only works with sudo"),
])
def test_colloquial_descriptions_rank_their_cause_first(expected, text):
    got = [d["id"] for d in match_symptoms(text)]
    assert got[:1] == [expected], got[:3]


# --- round "words" (2026-12-01): documents, BM25 parameters, per-entry phrasings, more synonyms -----------------

def test_more_failure_words_fold_to_one_token():
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    assert {"igpu"} <= words("用的是核显") & words("集成显卡") & words("Radeon integrated graphics") & words("an iGPU")
    assert "olddriver" in words("CUDA driver version is insufficient") and "olddriver" in words("驱动版本太低")
    assert "unsupported" in words("这张卡不支持") and "unsupported" in words("gfx1031 is not supported")
    assert "error" in words("一运行就报错") and "error" in words("it throws an error")
    assert "stablediffusion" in words("跑 Stable Diffusion") and "stabl" not in words("stable diffusion webui")
    assert "multigpu" in words("多卡训练") and "multigpu" in words("training on multiple GPUs")


def test_compound_words_and_spelling_variants_fold_to_one_token():
    """Round 5: a compound word is one token and does not match its parts elsewhere; British spellings stem like the
    American ones; the clitic halves of "doesn't", "isn't" are stop words."""
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    assert "vm" in words("我是在虚拟机上使用") and "虚拟" not in words("我是在虚拟机上使用")
    assert "pagefile" in words("虚拟内存不足") and "pagefile" in words("the paging file is too small")
    assert "cputorch" in words("PyTorch安装的是CPU版本") and "cputorch" in words("torch 2.1.2+cpu")
    assert "nomodule" in words("no module name torch") and "nomodule" in words("No module named 'torch'")
    assert "invaliddevfn" in words("HIP error: invalid device function") and "devic" not in words("invalid device function")
    assert words("CUDA failed to initialise") == words("CUDA failed to initialize")
    assert words("GPU not recognised") == words("GPU not recognized")
    assert words("the behaviour is odd") == words("the behavior is odd")
    assert "doesn" not in words("it doesn't work") and "isn" not in words("it isn't detected")
    # Taiwan/Hong Kong wording and characters
    assert words("顯示卡當機") == {"gpu", "hang"} and {"vram", "oom"} <= words("顯示卡記憶體不足")


def _entry(eid, title, symptoms_text, cause, zh_symptoms="", logs=""):
    from types import SimpleNamespace as NS
    tests = [NS(expect="fire", logs=logs)] if logs else []
    return NS(id=eid, title=title, symptoms=symptoms_text, cause=cause, benign=False, tests=tests,
              translations={"zh": {"title": title, "symptoms": zh_symptoms or symptoms_text, "cause": cause}})


def _fillers(n=6):
    # a few unrelated entries, so that a word of one entry has a positive BM25 idf
    return [_entry(f"f{i}", f"filler {i}", f"alpha{i} beta{i} gamma{i}", f"delta{i}") for i in range(n)]


def test_documents_hold_title_symptoms_and_logs_not_cause():
    """What a reporter sees (title, symptoms, the printed error) is in an entry's document; the cause, which explains
    the mechanism in words reporters rarely use, and the fix are not."""
    lex = build_lexicon({"groups": [{"name": "x", "en": ["zebra"], "ids": {"a": 0.5}}]})
    entries = [_entry("a", "Zebra crossing fails", "the zebra stops", "quokka marmot", logs="Error: wombat"),
               _entry("b", "Other thing", "something else entirely", "nothing")] + _fillers()
    r = symptoms.build_retriever(entries, lex)
    assert r.rank("the zebra stops")[0]["id"] == "a"
    assert r.rank("wombat")[0]["id"] == "a"                # the firing test case's log
    assert r.rank("quokka marmot") == []                    # the cause is not matched
    assert r.bm25.k1 == symptoms.BM25_K1 and r.bm25.b == symptoms.BM25_B


def test_per_entry_phrases_name_their_entry():
    lex = build_lexicon({"groups": [{"name": "x", "en": ["zebra"], "ids": {"a": 0.5}}],
                         "phrases": {"b": {"zh": ["斑马线卡住"], "en": ["the crossing hangs"]}}})
    assert lex.weights["phrases:b"] == {"b": symptoms.ENTRY_PHRASE_WEIGHT}
    entries = [_entry("a", "Zebra", "zebra", "x"), _entry("b", "Other thing", "something else", "y")] + _fillers()
    r = symptoms.build_retriever(entries, lex)
    assert r.rank("斑马线卡住了")[0]["id"] == "b" and r.rank("the crossing hangs")[0]["id"] == "b"
    for bad in ({"b": ["a list"]}, {"b": {"fr": ["x"]}}, {"b": {}}, ["b"]):
        with pytest.raises(ValueError):
            build_lexicon({"groups": [{"name": "x", "en": ["y"], "ids": {"a": 0.5}}], "phrases": bad})


def test_every_entry_a_description_can_point_at_has_vocabulary_phrases():
    """Every describable entry is named first by some vocabulary phrase (a group or its own phrases), so that the
    words people use for it are in its document, not only the KB's prose."""
    lex = symptoms.load_lexicon()
    named = {eid for g, ws in lex.weights.items() for eid, w in ws.items()
             if w >= symptoms.PRIMARY_WEIGHT or w == max(ws.values())}
    missing = [e.id for e in load_kb().entries if not e.benign and e.id not in lex.excluded and e.id not in named]
    assert not missing, missing


def test_a_healthy_tool_output_gets_no_guessed_failures():
    """A healthy nvidia-smi table (tuning negative 726, a real paste): no signature fires, and its table headers
    ("Bus-Id", "Uncorr. ECC", "PID") are tool output, not the user's words, so no "possible cause" is guessed from
    them; a failing log still gets its last-resort guesses. (Tool output that reads like prose, such as a CUDA
    sample's "Copy input data from the host memory to the CUDA device", still draws guesses: docs/EVALUATION.md.)"""
    import yaml

    from diagnostics.service import diagnose_text

    for name in ("726-neg-nvidia-smi-rtx3090-llamacpp-bench.yaml",):
        case = yaml.safe_load((Path(__file__).parent / "eval" / "tuning" / name).read_text(encoding="utf-8"))
        rep = diagnose_text(logs=[("x.log", case["log"])])
        assert not [d for d in rep["diagnoses"] if d.get("basis") == "confirmed" and not d.get("benign")], name
        loud = [d["id"] for d in rep["possible"] if d.get("severity") in ("error", "critical")]
        assert not loud, (name, loud)
    rep = diagnose_text(logs=[("x.log", "RuntimeError: the GPU kernel failed while loading the model weights\n")])
    assert rep["possible"], "a failing paste with no signature still gets ranked guesses"


# --------------------------------------------------------------------------------------------- round 7 (words7)

def test_named_software_vendor_and_system_weigh():
    """What a description names is evidence: entries about it rise, entries about the alternatives of the same
    kind (the other vendor, another framework, another OS) drop, entries about none of them stay (NamedKind)."""
    r = symptoms.retriever_for()
    idx = {eid: i for i, eid in enumerate(r.ids)}
    f = r.named_factors("tensorflow-rocm does not see my GPU")
    assert f[idx["tensorflow-rocm-ignoring-gpu"]] == symptoms.NAMED_BOOST
    assert f[idx["torch-cpu-only-wheel"]] == symptoms.NAMED_PENALTY      # a torch entry: another framework
    assert idx["rocminfo-lists-only-cpu-agent"] not in f                  # about no framework
    f = r.named_factors("my RTX 3090 runs out of memory")
    assert f[idx["apu-vram-carveout-too-small"]] == symptoms.NAMED_PENALTY   # an AMD entry
    assert idx["hip-out-of-memory"] not in f      # both vendors (its variants): neither raised nor lowered
    assert idx["nvidia-driver-not-loaded"] not in f   # a vendor named raises nothing, it only rules the other out
    # an app that runs on torch does not lower torch's entries; a framework of its own does
    assert idx["torch-cpu-only-wheel"] not in r.named_factors("ComfyUI only uses the CPU")
    assert r.named_factors("ollama only uses the CPU")[idx["torch-cpu-only-wheel"]] == symptoms.NAMED_PENALTY
    # Linux is the default: naming it raises no Linux entry, but rules out the Windows-only ones
    f = r.named_factors("on Ubuntu the dkms build fails")
    assert idx["amdgpu-dkms-build-failure"] not in f and f[idx["windows-pagefile-too-small"]] == symptoms.NAMED_PENALTY
    # WSL is Windows and Linux at once: neither system's entries drop
    f = r.named_factors("WSL2, rocminfo shows no GPU")
    assert idx["windows-pagefile-too-small"] not in f and idx["amdgpu-dkms-build-failure"] not in f
    assert f[idx["wsl-rocm-unsupported-or-misconfigured"]] == symptoms.NAMED_BOOST
    assert r.named_factors("显存不足") == {}


@pytest.mark.parametrize("text,expected", [
    ("Currently tensorflow-rocm does not see my GPU, even though rocminfo lists the card", "tensorflow-rocm-ignoring-gpu"),
    # an iGPU on ollama: unsupported target (older ollama) or 0.30's integrated-GPU filter, both ollama's entries
    ("ollama runs on the CPU on my laptop with a Radeon 780M, it does not support it yet",
     ("ollama-amd-gpu-unsupported-cpu-fallback", "ollama-integrated-gpu-dropped")),
])
def test_named_software_ranks_its_entries_first(text, expected):
    assert match_symptoms(text)[0]["id"] in ((expected,) if isinstance(expected, str) else expected), \
        match_symptoms(text)[:3]


def test_round7_normalisations():
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    assert "igpu" in words("the AMD780M iGPU") and "igpu" in words("Radeon 610M (gfx1037)")   # glued brand; 610M
    assert "rx" in words("RX6600") and "polaris" in words("RX580")
    # "shared memory" next to an APU is the RAM it borrows; alone it is /dev/shm
    assert "sharedvram" in words("my 780M iGPU only uses 16GB, not all available shared memory")
    assert "shm" not in words("my 780M iGPU only uses 16GB, not all available shared memory")
    assert "shm" in words("the dataloader is out of shared memory")
    # to utilize is to use, not the utilisation of a GPU
    assert "util" not in words("it cannot utilize the shared GPU memory") and "util" in words("GPU utilization is 0%")
    assert "fallenoff" in words("one GPU is lost during the training") and "fallenoff" in words("GPU lost")
    # a size's unit apart from its number says no more than the size; the firmware setup is one word
    assert words("total 2.0 GiB of 16 GB") == {"total"} and "tinyvram" in words("only 512 MB")
    assert "bios" in words("the setting in my UEFI configuration") and "bios" in words("BIOS设置")
    assert "sharedvram" in words("igpu uses system memory as vram")
    assert "gpuslower" in words("使用CPU生成速度都比GPU快很多") and "gpuslower" in words("it is slower than on the CPU")
    assert "beforestart" in words("memory is in use before my code starts") and "sharedmachine" in words(
        "could it be used by another process?")
    assert "tensorflow" in symptoms.load_lexicon().names_in(symptoms._fold("TF-ROCm uses the CPU only"))


def test_round13_normalisations():
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    lex = symptoms.load_lexicon()
    # a model number glued to its suffix is the card the vocabulary names; the suffix itself says nothing
    assert symptoms._fold("GTX 1660Ti, RX6800XT, 7900XTX, 4070super") == "gtx 1660 ti, rx 6800 xt, 7900 xtx, 4070 super"
    assert symptoms._fold("Radeon 8060S") == "radeon 8060s"          # a name of its own
    assert "amd" in lex.names_in(symptoms._fold("my 6800xt")) and "nvidia" in lex.names_in(symptoms._fold("a 1660Ti"))
    assert "ti" not in words("GTX 1660Ti") and words("RX6800XT") == words("RX 6800 XT")
    # the system ending a process, said as "terminated"; a suspend said by the waking
    assert "killed" in words("模型加载进程在加载 45% 左右时被系统终止了") and "killed" in words("it was terminated by the system")
    assert "suspend" in words("GPU becomes unavailable after computer wakes up") and "suspend" in words("合盖唤醒后")
    assert "suspend" not in words("resume training from the last checkpoint")
    # "No space left on device" next to DataLoader workers is /dev/shm; alone it is the disk
    assert "shm" in words("No space left on device, setting workers=0 fixed it")
    assert "diskfull" in words("pip install: No space left on device")
    # "module not found" stays words (modprobe's "kernel module not found"); the torch phrase names torch-missing
    assert "nomodule" not in words("kernel module not found") and "torch-missing" in lex.groups_in(
        symptoms._fold("installed pytorch, still module not found"))


def test_named_and_context_sections_are_checked():
    base = {"groups": [{"name": "x", "en": ["y"], "ids": {"hip-out-of-memory": 0.5}}]}
    for bad in ({"named": {"x": 1}}, {"named": [{"kind": "k", "items": [{"name": "a", "words": ["a"]}]}]},
                {"named": [{"kind": "k", "items": [{"name": "a", "words": ["a"], "keys": ["a"], "implies": ["b"]}]}]},
                {"named": [{"kind": "k", "items": [{"name": "a", "words": ["a"], "keys": ["a"]},
                                                    {"name": "a", "words": ["b"], "keys": ["b"]}]}]},
                {"in_context": [{"when": ["igpu"], "token": "nosuch", "variants": ["y"]}]}):
        with pytest.raises(ValueError):
            build_lexicon({**base, **bad})
    lex = build_lexicon({**base, "named": [{"kind": "k", "items": [{"name": "gfx", "words": ["gfx*"], "keys": ["a"]}]}]})
    assert lex.names_in("on gfx1100") == {"gfx"} and lex.names_in("graphics") == frozenset()


def test_a_measurement_users_report_too_is_guessed():
    """"The GPU is slower than the CPU" is what the doctor's test generation measures, and what users report in
    words: that entry (describable_measurements) is guessed from the comparison, either way round."""
    for text in ("用GPU反而更慢，GPU比CPU还慢", "generation on the GPU is slower than on the CPU",
                 "switched to the CPU and the CPU is faster than the GPU"):
        assert match_symptoms(text)[0]["id"] == "gpu-generation-slower-than-cpu", match_symptoms(text)[:3]


def test_round10_chinese_homophone_spellings():
    """A pinyin input method's 现存 for 显存, in the compounds where 现存 cannot mean 'existing', reads as 显存;
    现存 elsewhere stays itself; a Chinese spelling must map a compound to a compound."""
    lex = symptoms.load_lexicon()
    assert lex.respell("启动的时候还是报错现存不足") == "启动的时候还是报错显存不足"
    assert lex.respell("现存的版本没有这个问题") == "现存的版本没有这个问题"
    assert lex.respell("cuda is not avaliable") == "cuda is not available"      # ASCII words as before
    with pytest.raises(ValueError):
        symptoms.build_lexicon({"groups": [{"name": "g", "en": ["x"], "ids": {"a": 0.5}}], "spellings": {"现存": "vram"}})
    assert match_symptoms("量化部署无效，4090 24G显存，启动的时候还是报错现存不足")[0]["id"] in (
        "hip-out-of-memory", "model-too-large-for-vram")


def test_round10_family_of_a_description():
    """A group's phrase in the text names its family (its entries at weight 0.2 or more, neighbours too); topic and
    weak groups name none; a text without a phrase has no family."""
    r = symptoms.retriever_for()
    fam = lambda text: {r.ids[i] for i in r.family_of(text)}
    oom = fam("显存不足")
    assert {"hip-out-of-memory", "model-too-large-for-vram"} <= oom and "host-ram-oom-killed" not in oom
    assert fam("ollama") == set() and fam("the weather is nice today") == set()
    assert symptoms.load_lexicon().groups_in("") == frozenset()


@pytest.mark.parametrize("text,expected", [
    # the display going black is the GPU hanging; a black picture is the half-precision overflow
    ("Monitor goes black & PC hardware goes into overdrive after generating 2+ images in a row", "gpu-hang-reset"),
    ("跑着跑着显示器黑屏了，只能强制重启", "gpu-hang-reset"),
    # a handheld's GPU is its APU: its "shared memory" is the RAM it borrows
    ("some python stuff on my steam deck needs more than 4GB of shared memory (UMA frame buffer)",
     "apu-vram-carveout-too-small"),
    ("There is no CUDA GPU installed on the machine (it is a VirtualBox virtual machine)", "no-gpu-present"),
    ("训练的时候只使用CPU，GPU一直空闲", "torch-cpu-only-wheel"),       # 使用 for 用: the same fallback phrase
])
def test_round10_words_rank_first(text, expected):
    assert match_symptoms(text)[0]["id"] == expected, match_symptoms(text)[:3]


@pytest.mark.parametrize("text,not_first", [
    ("the generated image is completely black", "gpu-hang-reset"),           # a black image, not a black screen
    ("生成的图片全是黑色的", "gpu-hang-reset"),
    ("DataLoader worker killed by bus error, /dev/shm is too small in docker", "apu-vram-carveout-too-small"),
])
def test_round10_words_stay_silent(text, not_first):
    got = match_symptoms(text)
    assert not got or got[0]["id"] != not_first, got[:3]


def test_round11_a_family_only_group_is_one_term_not_its_words():
    """A group with ``document: false`` joins none of its entries' documents with its words: its phrase in a text is
    the term "group:<name>", found in the documents of the entries it names (0.2 or more), so a description made of
    words every entry shares still points at them; the key is checked."""
    lex = build_lexicon({"groups": [
        {"name": "said", "en": ["no error message"], "ids": {"a": 0.6, "b": 0.1}, "document": False},
        {"name": "zebra", "en": ["zebra"], "ids": {"b": 0.5}}]})
    assert lex.undocumented == frozenset({"said"})
    entries = [_entry("a", "Quokka stops", "the quokka stops", "x"),
               _entry("b", "Other thing", "something else with an error message", "y")] + _fillers()
    r = symptoms.build_retriever(entries, lex)
    a, b = r.ids.index("a"), r.ids.index("b")
    assert "group:said" in r.doc_tokens[a] and "group:said" not in r.doc_tokens[b]   # b is named below 0.2
    assert "messag" not in r.doc_tokens[a]                   # the phrase's words do not join the document
    got = r.rank("it stops with no error message")
    assert got[0]["id"] == "a" and "no error message" in got[0]["phrase"], got
    assert r.rank("zebra")[0]["id"] == "b"                    # an ordinary group joins its documents as before
    with pytest.raises(ValueError):
        build_lexicon({"groups": [{"name": "x", "en": ["y"], "ids": {"a": 0.5}, "document": "no"}]})


@pytest.mark.parametrize("text,not_listed", [
    # that nothing was printed says little alone; only while something loads does it point at the RAM
    ("there is no error message but the generated image is completely black", "host-ram-oom-killed"),
    ("torch.cuda.is_available() returns False without any error", "windows-pagefile-too-small"),
    ("没有任何报错，但是生成的图片全黑", "host-ram-oom-killed"),
])
def test_round11_words_stay_silent(text, not_listed):
    assert not_listed not in [h["id"] for h in match_symptoms(text)[:3]], match_symptoms(text)[:3]


def test_round12_normalisations():
    """More traditional characters read as simplified (電腦, 幾乎, 後); the words that introduce a paste ("I encountered
    the below error") are filler; the time something takes is its slowness."""
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    assert symptoms._fold("電腦幾乎後來選項預設") == "电脑几乎后来选项预设"
    assert "vram" in words("顯存幾乎全滿") and "几乎" in words("顯存幾乎全滿")
    assert not words("I encountered the following error below") - {"error"}
    assert "slow" in words("it takes extremely long to generate") and "slow" in words("loading is taking forever")


def test_round12_torch_cuda_mismatch_names_driver_and_toolkit():
    """"pytorch和cuda版本不匹配" is said of a driver too old for torch's CUDA and of a toolkit other than torch's: both
    come first, the CPU build (no CUDA at all) stays a neighbour below the family."""
    for text in ("pytorch和cuda版本不匹配，用GPU就报错", "torch and cuda version mismatch when I run on the GPU"):
        got = [h["id"] for h in match_symptoms(text)[:3]]
        assert got[0] in {"nvidia-driver-too-old", "cuda-extension-toolkit-mismatch"}, got
    lex = symptoms.load_lexicon()
    assert lex.weights["torch-cuda-mismatch"]["torch-cpu-only-wheel"] < symptoms.FAMILY_MIN_WEIGHT


@pytest.mark.parametrize("text", ["显存满了，直接爆显存", "the VRAM is full and it runs out of memory"])
def test_round12_a_full_vram_alone_is_not_the_spill(text):
    lex = symptoms.load_lexicon()
    assert "vram-full-gpu-idle" not in lex.groups_in(lex.respell(symptoms._fold(text)))
    assert match_symptoms(text)[0]["id"] == "hip-out-of-memory", match_symptoms(text)[:3]


def test_round15_normalisations():
    """FlashAttention misspelt or by its number, cuDNN's loader sentence, a black screen (not a black image), a card that
    keeps disappearing, the CPU build by its pip name and the GCN 1-3 cards each read as one word."""
    tok = symptoms.retriever_for().tokenizer
    words = lambda text: {t for t, _ in tok(text)}
    lex = symptoms.load_lexicon()
    assert "flashattn" in words("没有装flash atten") and "flashattn" in words("FlashAttention2 is enabled")
    assert "cputorch" in words("it pulled torch-cpu again") and "cputorch" in words("pytorch-cpu was installed")
    assert "blackscreen" in words("boots to a black screen") and "blackscreen" not in words("the output is a black image")
    assert "fallenoff" in words("my second card keeps disappearing")
    assert {"gcnlegacy"} <= words("Radeon HD 7970") and "gcnlegacy" in words("an old R9 290X")
    assert "cudnn-missing" in lex.groups_in(lex.respell(symptoms._fold(
        "Could not load library cudnn_cnn_infer64_8.dll. Error code 193")))
    # RE2 has room for the synonym alternation's DFA (past 8 MiB it logs "DFA out of memory" and falls back)
    assert symptoms._RE2_OPTIONS.max_mem >= 64 << 20


@pytest.mark.parametrize("text,expected", [
    ("after the upgrade and a reboot the desktop comes up as a black screen and lsmod shows no nvidia module",
     "nvidia-module-not-built-for-kernel"),
    ("升级系统之后重启，开机黑屏了，只能进恢复模式", "nvidia-module-not-built-for-kernel"),
    ("we cannot update the nvidia driver on this server, is there a torch build that works with an older driver?",
     "nvidia-driver-too-old"),
    ("Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!",
     "cudnn-or-nvrtc-library-load-failure"),
    ("the A100 keeps disappearing from nvidia-smi and only a reboot helps", "nvidia-gpu-fallen-off-bus"),
    ("how do I make the app recognize my gpu? its device list only says CPU", "torch-cpu-only-wheel"),
])
def test_round15_words_rank_first(text, expected):
    assert match_symptoms(text)[0]["id"] == expected, match_symptoms(text)[:3]


def test_round15_an_old_gcn_card_is_named_next_to_its_consequence():
    """A GCN 1-3 card that rocminfo does not list: the card's generation (the cause) and rocminfo's CPU-only list (what
    follows from it) come first and second, either way round - the card's name is a topic, not a family (naming one
    next to ollama is ollama's own list of GPUs)."""
    got = [h["id"] for h in match_symptoms("ROCm does not detect my Radeon HD 7970, rocminfo only shows the AMD Ryzen CPU")]
    assert set(got[:2]) == {"gpu-not-supported-by-kfd-legacy", "rocminfo-lists-only-cpu-agent"}, got[:3]


@pytest.mark.parametrize("text,not_first", [
    ("does ollama support the radeon r9 290? ollama only uses the cpu", "gpu-not-supported-by-kfd-legacy"),
    ("every generated image is a black image with NaN values", "nvidia-module-not-built-for-kernel"),
    ("the error disappears after I restart the notebook", "nvidia-gpu-fallen-off-bus"),
])
def test_round15_words_stay_silent(text, not_first):
    got = match_symptoms(text)
    assert not got or got[0]["id"] != not_first, got[:3]
