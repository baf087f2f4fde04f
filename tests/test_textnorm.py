"""The one log normaliser (diagnostics/textnorm.py): real signatures behind the prefixes, colours, wraps and
punctuation that the layers between a tool and a paste add, still found by the real knowledge base.

The signature lines are verbatim from public reports (source beside each); the variants are what journald,
`docker logs -t`, kubectl, a terminal, a forum's wrap or a Chinese IME make of them.
"""
from __future__ import annotations

import pytest

from diagnostics.kb import load_kb
from diagnostics.matcher import Matcher, clean_log
from diagnostics.textnorm import (c_locale_words, clean_log_wraps, escaped_readings, fold_punctuation, joined_wraps,
                                  strip_ansi, strip_prefixes)


@pytest.fixture(scope="module")
def matcher():
    return Matcher(load_kb())


def first(matcher, text):
    res = matcher.match({}, [("log", text)])
    return [d["id"] for d in res["diagnoses"]]


# https://github.com/pytorch/pytorch/issues/85909 (Steam Deck, ROCm 5.1.1 wheel)
NO_BINARY = '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"'
# https://github.com/ollama/ollama/issues/8772 (journald in a zh_CN locale, verbatim)
OLLAMA = ('2月 02 19:28:37 lichao ollama[20609]: time=2025-02-02T19:28:37.628+08:00 level=INFO '
          'source=amd_linux.go:404 msg="no compatible amdgpu devices detected"')
# collect_env lines as torch.utils.collect_env prints them (anchored patterns in the KB)
COLLECT_ENV = ["PyTorch version: 2.5.1+cpu", "Is debug build: False", "CUDA used to build PyTorch: None",
               "ROCM used to build PyTorch: N/A", "", "OS: Ubuntu 22.04.4 LTS (x86_64)", "Is CUDA available: False"]


@pytest.mark.parametrize("prefix", [
    "Mar 03 12:00:01 gpu-box python3[4711]: ",                 # journalctl -u of a service running python
    "Mar  3 12:00:01 gpu-box kernel: ",                        # classic syslog
    "2024-05-01T12:00:00.123456789Z ",                         # docker logs -t
    "2024-05-01T12:00:00.123456789Z stderr F ",                # a CRI container log file (k8s node)
    "2024-05-01T12:00:00.123456+00:00 gpu-box python3[4711]: ",  # rsyslog high precision
    "[2024-05-01 12:00:00.123] ",                               # ComfyUI's log prefix
    "05/01/2024 12:00:00 PM ",                                  # a Windows tool's timestamp
    "2024-05-01 12:00:00,123 - app - ERROR - ",                 # the logging cookbook's format
    "2024-05-01 12:00:00 INFO ",                                # a level after the timestamp
    "[2024-05-01 12:00:00,123] [ERROR] ",                       # bracketed timestamp and level
    "(APIServer pid=4711) INFO 12-02 01:02:03 [api_server.py:1021] ",  # vLLM behind its process tag
    "(RayWorkerWrapper pid=4711, ip=10.0.0.5) ",                # a Ray worker's lines in the driver's log
    "I1202 01:02:03.123456  4711 runner.cc:123] ",              # glog (TensorFlow, XLA, Ray's core)
    "comfyui-1  | ",                                            # docker compose up
    "ollama_1    | ",                                           # docker-compose v1
    "comfyui-rocm  | ",                                         # compose service with its own container_name
    "[pod/trainer-7c9f/worker] ",                               # kubectl logs --prefix
    "  | [2025-03-10T15:07:20Z] ",                             # Buildkite's web log (vllm#14574)
    "10:31:55.123 [Debug] [ComfyUI-0/STDERR] ",                 # SwarmUI's backend stream
    "2025-02-16 03:41:50.234 [Warning] [ComfyUI-0/STDERR] ",   # SwarmUI's file log (date, clock, level, stream)
    "2025-10-16T15:00:55.223733 - ",                          # ComfyUI's own log with timestamps
    "09:54:19-207675 CRITICAL ",                              # SD.Next's console (sdnext#4801)
    "\x1b[31m",                                                 # colour
])
def test_anchored_signatures_match_behind_prefixes(matcher, prefix):
    text = "\n".join(prefix + line for line in COLLECT_ENV)
    assert "torch-cpu-only-wheel" in first(matcher, text)
    assert first(matcher, prefix + NO_BINARY)[0] == "hip-no-binary-for-gpu"


def test_level_prefixes_never_eat_a_tools_own_words():
    # pip, apt and many tools print "ERROR: ..." / "WARNING: ..." themselves; basicConfig's "ERROR:root:" is the
    # message's own too; a level word is taken only after a timestamp or in brackets
    keep = ("ERROR: Could not find a version that satisfies the requirement torch\nWARNING: Skipping torch\n"
            "ERROR:root:boom\nFATAL ERROR in native method\nINFO: Started server\nGPU  | Temp\n| 0 | MI300X |")
    assert clean_log(keep) == keep
    assert clean_log("2024-05-01 12:00:00 INFO: Started server") == "INFO: Started server"


def test_journald_in_a_chinese_locale_and_kernel_clock(matcher):
    assert clean_log(OLLAMA).startswith("time=2025-02-02T19:28:37.628+08:00 level=INFO")
    assert "ollama-amd-gpu-unsupported-cpu-fallback" in first(matcher, OLLAMA)
    line = "Mar 03 12:00:01 box kernel: [    3.353884] amdgpu 0000:19:00.0: amdgpu: Fatal error during GPU init"
    assert clean_log(line) == "amdgpu 0000:19:00.0: amdgpu: Fatal error during GPU init"


def test_prompts_and_quotes():
    text = ">>> import torch\n>>> torch.cuda.is_available()\nFalse\n$ rocminfo\nuser@host:~/sd$ ./webui.sh\n> RuntimeError: x"
    assert clean_log(text).split("\n") == ["import torch", "torch.cuda.is_available()", "False", "rocminfo",
                                           "./webui.sh", "RuntimeError: x"]
    # what tools print at a line start is left alone: pip/uv lists, ls -l, indentation, shell job notices
    keep = " - torch==2.5.1+rocm6.2\n + torch==2.5.1+cu124\ncrw-rw---- 1 root render 234, 0 /dev/kfd\n  File \"x\"\n[1]+  Killed  python x.py"
    assert clean_log(keep) == keep


def test_ansi_in_every_form():
    assert strip_ansi("\x1b[1;31mERROR\x1b[0m: \x1b]0;title\x07ok\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "ERROR: oklink"
    assert strip_ansi("[31mRuntimeError[0m: HIP error") == "RuntimeError: HIP error"  # a forum ate the ESC byte
    assert strip_ansi("\x1b(B\x1b[?25lx") == "x"
    assert strip_ansi("plain [text] stays") == "plain [text] stays"


def test_full_width_punctuation_in_chinese_logs(matcher):
    assert fold_punctuation("错误：（gfx1031）“x”，ｙ") == '错误: (gfx1031)"x", y'   # the colon and comma carry their space
    # a Chinese-locale paste of a real signature (full-width colon and parentheses typed by an IME)
    text = "运行报错：hipErrorNoBinaryForGpu：Unable to find code object for all current devices！"
    assert first(matcher, text)[0] == "hip-no-binary-for-gpu"
    text = "RuntimeError：HIP out of memory． Tried to allocate 2.00 GiB（GPU 0；15.98 GiB total capacity）"
    assert "hip-out-of-memory" in first(matcher, text)


def test_system_messages_in_a_chinese_or_japanese_locale_read_as_the_c_locale(matcher):
    # glibc/bash under zh_CN and ja_JP, Windows zh-CN: the same failure, the locale's words
    assert c_locale_words("段错误 (核心已转储)") == "Segmentation fault (core dumped)"
    assert clean_log("段错误（核心已转储）") == "Segmentation fault (core dumped)"      # full-width, no space
    assert c_locale_words("中止 (コアダンプ)") == "Aborted (core dumped)"    # ROCm/tensorflow-upstream#1187 (ja_JP)
    assert c_locale_words("bash: rocminfo: 未找到命令") == "bash: rocminfo: command not found"
    # words that are also ordinary Chinese change only where the shell prints them
    assert c_locale_words("我已放弃了这个方案，任务中止") == "我已放弃了这个方案，任务中止"
    assert c_locale_words("已放弃 (核心已转储)") == "Aborted (core dumped)"
    assert c_locale_words("plain ascii stays") == "plain ascii stays"
    # de_DE and ru_RU, ASCII-only German included
    assert c_locale_words("Speicherzugriffsfehler (Speicherabzug geschrieben)") == "Segmentation fault (core dumped)"
    assert c_locale_words("Unable to open /dev/kfd read-write: Keine Berechtigung").endswith("Permission denied")
    assert c_locale_words("Das wurde Abgebrochen, weil") == "Das wurde Abgebrochen, weil"
    assert c_locale_words("Ошибка сегментирования (стек памяти сброшен на диск)") == "Segmentation fault (core dumped)"
    # the KB's English signatures then find them
    assert first(matcher, NO_BINARY + "\n已放弃 (核心已转储)")[0] == "hip-no-binary-for-gpu"
    assert first(matcher, "Unable to open /dev/kfd read-write: 权限不够")[0] == "user-not-in-render-video-group"
    # the dynamic loader and apt in zh_CN, zh_TW, ja_JP, de_DE (dlerror's words as glibc prints them there)
    assert clean_log("ImportError: libcudart.so.11.0: 无法打开共享对象文件: 没有那个文件或目录") == \
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory"
    assert clean_log("libfreetype.so.6：無法開啟共享物件檔案：沒有此檔案或目錄") == \
        "libfreetype.so.6: cannot open shared object file: No such file or directory"
    assert clean_log("libopenblas64_.so: 共有オブジェクトファイルを開けません: そのようなファイルやディレクトリはありません") == \
        "libopenblas64_.so: cannot open shared object file: No such file or directory"
    assert clean_log("libpng12.so.0: Kann die Shared-Object-Datei nicht öffnen: Datei oder Verzeichnis nicht gefunden") == \
        "libpng12.so.0: cannot open shared object file: No such file or directory"
    assert clean_log("hdf5.h: 沒有此一檔案或目錄") == "hdf5.h: No such file or directory"
    assert clean_log("libXtst.so.6: no se puede abrir el fichero del objeto compartido: No existe el fichero o el "
                     "directorio") == "libXtst.so.6: cannot open shared object file: No such file or directory"
    assert clean_log("libxcb-dri3.so: Ne peut ouvrir le fichier d'objet partagé: Aucun fichier ou dossier de ce type") \
        == "libxcb-dri3.so: cannot open shared object file: No such file or directory"
    assert clean_log("bash: cmd: Arquivo ou diretório inexistente") == "bash: cmd: No such file or directory"
    assert clean_log("cat: softlink: 그런 파일이나 디렉터리가 없습니다") == "cat: softlink: No such file or directory"
    assert first(matcher, "OSError: libcudnn_ops_infer.so.8: no se puede abrir el fichero del objeto compartido: "
                          "No existe el fichero o el directorio")[0] == "cudnn-or-nvrtc-library-load-failure"
    assert clean_log("Unable to open /dev/kfd read-write: 拒絕不符權限的操作").endswith("Permission denied")
    assert clean_log("OSError: [WinError 126] 找不到指定的模組。").startswith(
        "OSError: [WinError 126] The specified module could not be found.")
    assert clean_log("PermissionError: [WinError 5] 拒绝访问。").startswith("PermissionError: [WinError 5] Access is denied.")
    assert "does not have a Release file." in clean_log(
        "E: 仓库 “https://repo.radeon.com/rocm/apt/6.0 ubuntu Release” 没有 Release 文件。")
    assert first(matcher, "ImportError: libcudart.so.11.0: 无法打开共享对象文件: 没有那个文件或目录")[0] == \
        "cudnn-or-nvrtc-library-load-failure"
    assert first(matcher, "错误:3 https://repo.radeon.com/rocm/apt/6.0 ubuntu Release\n  404  Not Found\n"
                          "E: 仓库 “https://repo.radeon.com/rocm/apt/6.0 ubuntu Release” 没有 Release 文件。")[0] == \
        "apt-repository-key-failure"
    # Windows messages whose full-width comma fold_punctuation spaces: the locale key still matches
    assert clean_log("OSError: [WinError 1455] 页面文件太小，无法完成操作。").startswith(
        "OSError: [WinError 1455] The paging file is too small for this operation to complete.")
    assert clean_log("分頁檔太小，無法完成操作。").startswith("The paging file is too small for this operation to complete.")
    assert clean_log("'rocminfo' 不是内部或外部命令，也不是可运行的程序").startswith(
        "'rocminfo' is not recognized as an internal or external command")
    assert clean_log("'yarn' 不是內部或外部命令、可執行的程式或批次檔。").startswith(
        "'yarn' is not recognized as an internal or external command")
    assert first(matcher, "'rocminfo' 不是内部或外部命令，也不是可运行的程序\n或批处理文件。")[0] == "rocm-tools-not-found"
    assert clean_log("'node' は、内部コマンドまたは外部コマンド、").startswith(
        "'node' is not recognized as an internal or external command")
    # https://github.com/open-mmlab/mmdetection/issues/5263 (the host ran out of RAM; more swap fixed it)
    assert first(matcher, "[>>>>>>>>>> ] 1022/5000, 1.5 task/s, elapsed: 673s, ETA: 2621s已杀死")[0] == \
        "host-ram-oom-killed"


def test_a_paste_from_a_pages_html_keeps_its_signature(matcher):
    # ROCm/legacy-rocm-build#4164 was pasted with &apos; and <b>dpkg:</b> left in
    text = ("ERROR: Cannot create report: [Errno 17] File exists: &apos;/var/crash/amdgpu-dkms.0.crash&apos;\n"
            "Error! Bad return status for module build on kernel: 6.8.0-49-generic (x86_64)\n"
            "<b>dpkg:</b> error processing package amdgpu-dkms (--configure):")
    assert clean_log(text).splitlines()[2] == "dpkg: error processing package amdgpu-dkms (--configure):"
    assert "amdgpu-dkms-build-failure" in first(matcher, text)
    assert clean_log('docker: could not select device driver &quot;&quot; with capabilities: [[gpu]].') == \
        'docker: could not select device driver "" with capabilities: [[gpu]].'
    # a traceback's <module> and <string> are not HTML
    assert clean_log('File "<string>", line 1, in <module>') == 'File "<string>", line 1, in <module>'


def test_carriage_return_progress_bars_keep_the_error(matcher):
    text = "Loading:  10%|#         |\r Loading:  50%|#####     |\rRuntimeError: HIP out of memory. Tried to allocate\r\n"
    assert "hip-out-of-memory" in first(matcher, text)
    assert "\r" not in clean_log(text)


def test_fixed_width_wrap_is_joined(matcher):
    # a terminal 80 columns wide cut the signature in the middle of a word; three lines show the width
    long = ("torch._C._cuda_init() in the first step of the training loop on the GPU: Unable to find code object "
            "for all current devices! Aborted (core dumped)")
    lines = [long[i:i + 80] for i in range(0, len(long), 80)]
    assert len(lines) == 2 and len(lines[0]) == 80
    pad = ["x" * 80, "y" * 80, "z" * 80]
    text = "\n".join(pad + lines)
    assert "Unable to find code object for all current devices" not in text.replace("\n", "\x00")
    assert first(matcher, text)[0] == "hip-no-binary-for-gpu"


def test_word_wrap_by_a_forum_is_joined(matcher):
    # the detectron2 traceback of https://github.com/facebookresearch/detectron2/issues/62 (Windows, CPU torch),
    # word-wrapped at 60 columns by a mail/forum client: the space at the break is gone
    text = ('  File "C:\\Users\\x\\Anaconda3\\lib\\site-packages\\torch\\cuda\\__init__.py", line 221,\n'
            "in _lazy_init\n"
            '    raise AssertionError("Torch not compiled with CUDA\n'
            'enabled")\n')
    assert "Torch not compiled with CUDA enabled" not in text
    assert "torch-not-compiled-with-cuda" in first(matcher, text)


def test_a_word_wrap_width_is_not_set_by_an_unbreakable_url(matcher):
    # koboldcpp#495 (Windows, RX 6650 XT), word-wrapped at 72 columns: the wrap leaves the Markdown image's long URL on
    # a line of its own, longer than the width, and moves the 74-character path off the short first line of the error
    text = ('After press "Launch" to run the programme, the error message\n\n'
            ' "rocBLAS error: Cannot read\n'
            'C:\\Users\\richa\\AppData\\Local\\Temp\\_MEI60562\\/library/TensileLibrary.dat:\n'
            'No such file or dire ctory "\n\n'
            'at the bottom and the programme crash and close.\n\n'
            '![screenshot 2023-10-24\n'
            '234009](https://github.com/LostRuins/koboldcpp/assets/141255885/4b2d49e4-86bd-4487-8cfa-a3b9a827b8d3)\n\n'
            'In KoboldCpp - Version 1.46.1.yr0-ROCm, the programme can still be\n'
            'launched except the problem of reply with garbage characters in certain\n')
    appendix, _ = joined_wraps(text)
    assert "rocBLAS error: Cannot read C:" in appendix
    assert first(matcher, text)[0] == "rocblas-tensile-library-missing"


def test_a_word_cut_without_a_known_width_reads_both_ways(matcher):
    text = ("Traceback: torch._C._cuda_init() RuntimeError: hipErrorNoBinaryForGpu: Unable to find code obje\n"
            "ct for all current devices!\n")
    appendix, starts = joined_wraps(text)
    assert "code object for all" in appendix and starts == [1, 1]
    res = Matcher(load_kb()).match({}, [("log", "\n".join(["ok"] * 5) + "\n" + text.replace("hipErrorNoBinaryForGpu: ", ""))])
    ev = [e for d in res["diagnoses"] if d["id"] == "hip-no-binary-for-gpu" for e in d["evidence"]]
    assert ev and ev[0]["line"] == 6          # the line where the wrapped run starts


def test_wrap_appendix_is_bounded_and_short_lines_are_never_joined():
    text = "\n".join(["short line"] * 1000)
    assert joined_wraps(text) == ("", [])
    text = "\n".join(["a" * 79 + " b"] * 5000)
    appendix, _ = joined_wraps(text)
    assert len(appendix) <= 2 * len(text)
    assert max(len(x) for x in appendix.split("\n")) <= 6 * 82


# --- strip_prefixes as one substitution (issue 16): the same result as the line-by-line form it replaced ---------
def _strip_prefixes_by_line(text: str) -> str:
    """The former implementation: split, one anchored match of the former pattern (alternatives in their former
    order, no guards) on each line that can start a prefix, join."""
    import re

    from diagnostics.textnorm import _ISO, _LEVEL, _MON, _PROG

    old = re.compile(
        rf"(?:{_MON} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{{1,9}})? [\w.-]{{1,64}} {_PROG}: |{_ISO} [\w.-]{{1,64}} {_PROG}: "
        rf"|{_ISO} (?:std(?:out|err) [FP] |- (?![\w.<>-]{{1,64}} - ))?|\[(?:{_ISO}|\d\d:\d\d:\d\d(?:[.,]\d{{1,6}})?)\] ?"
        r"|\[?\d{1,2}/\d{1,2}/\d{4},? \d{1,2}:\d\d:\d\d(?: ?[AP]M)?\]? |\[ {0,12}\d{1,10}\.\d{1,9}\] ?"
        # the logging frameworks' and wrappers' prefixes (levels, vLLM/Ray, glog, SwarmUI, compose, kubectl)
        rf"|(?<=[\d\]] )(?:- [\w.<>-]{{1,64}} - )?{_LEVEL}(?: - | {{1,4}})|\[{_LEVEL}\] "
        rf"|{_LEVEL} \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{{1,6}})? \[[\w./-]{{1,128}}:\d{{1,6}}\] "
        r"|\([\w.-]{1,64} pid=\d{1,10}(?:, ip=[\d.:a-f]{3,45})?\) "
        r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} {1,8}\d{1,10} [\w./-]{1,128}:\d{1,6}\] "
        r"|\d\d:\d\d:\d\d\.\d{3} \[(?:Verbose|Debug|Info|Init|Warning|Error)\] |\[[\w.-]{1,32}/STD(?:OUT|ERR)\] "
        r"|\[(?:Verbose|Debug|Info|Init|Warning|Error)\] (?=\[[\w.-]{1,32}/STD(?:OUT|ERR)\] )"
        rf"|\d\d:\d\d:\d\d-\d{{6}} {_LEVEL} {{1,8}}"
        r"|(?:[\w.-]{1,64}[-_]\d{1,3} {1,32}|[A-Za-z][\w.]{0,30}[-_][\w.-]{1,32} {2,32})\| |\[pod/[\w.-]{1,253}/[\w.-]{1,63}\] "
        r"|(?:\([\w.-]{1,64}\) ?)?[\w.@:~/-]{0,128}\$ |(?:>>>|\.\.\.) |PS [^>\n]{1,200}> |>{1,3} ){1,4}")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line and (line[0] in "0123456789[>.(PJFMASONDTIWEC" or "$ " in line[:131] or "| " in line[:100]):
            m = old.match(line)
            if m and m.end():
                lines[i] = line[m.end():]
    return "\n".join(lines)


_FRAGMENTS = [
    "2024-05-01 12:00:00 ", "2024-05-01T12:00:00.123456789Z ", "2024-05-01T12:00:00.123456+00:00 host kernel: ",
    "2024-05-01T12:00:00Z stdout F ", "2024-05-01T12:00:00Z stderr P ", "Mar 03 12:00:01 host kernel: ",
    "Mar  3 12:00:01 host ollama[1234]: ", "2月 02 12:00:01 h kernel: ", "[2024-05-01 12:00:00.123] ", "[12:00:01] ",
    "[12:00:01]", "05/01/2024 12:00:00 PM ", "[5/1/2024, 12:00:00] ", "[  123.456789] ", "[123.4]", ">>> ", "... ",
    "$ ", "user@host:~/dir$ ", "(venv) $ ", "(venv)$ ", "PS C:\\x> ", "> ", ">> ", ">>>> ", "x" * 127 + "$ ",
    "x" * 128 + "$ ", "x" * 129 + "$ ", "y " * 64 + "$ ", "a$b$ ", "٣٤-", "２０２４", "١٢:٠٠:٠٠ ", "٢٠٢٤-٠٥-٠١ ١٢:٠٠:٠٠ ",
    "٢٠٢٤-٠٥-٠١ ١٢:٠٠:٠٠ $ ", "INFO ", "kernel: ", " ", "", "\t", "Traceback", "2024-05-01 12:00:00", "[", "(", "$",
    "月", "ü$ ", "Jan", "Dec 31 23:59:59.999 h-1.x foo[1]: ", "PS >", "1/2/2024 1:00:00 ", "2024-05-01 12:00:00,123 ",
    "2024-05-01 12:00:00+0530 ", "2024-05-01 12:00:00.1234567890 ", "2024-05-01 12:00:00+05:30 h kernel: ", "\r",
    "\x1b", "1" * 130 + "$ ", "a.b@c:~/d-e$ ", "١月 02 12:00:01 h kernel: ",
    "INFO  ", "- app - ERROR - ", "ERROR: ", "[ERROR] ", "(APIServer pid=7) ", "(W pid=1, ip=10.0.0.1) ",
    "INFO 12-02 01:02:03 [a.py:1] ", "I1202 01:02:03.123456  1 f.cc:1] ", "01:02:03.123 [Debug] ", "[ComfyUI-0/STDERR] ",
    "comfyui-1  | ", "ollama_1 | ", "GPU  | ", "[pod/a-1/b] ", "WARNING ",
    "comfyui-rocm  | ", "GPU-0 | ", "a_b  | ", "[Warning] ", "2024-05-01 12:00:00 - ", "09:54:19-207675 ERROR ", "01:02:03-123456 ",
]


@pytest.mark.parametrize("seed", range(4))
def test_strip_prefixes_is_the_line_by_line_result(seed):
    import random

    rnd = random.Random(seed)
    for _ in range(2500):
        lines = ["".join(rnd.choice(_FRAGMENTS) for _ in range(rnd.randint(0, 5))) + rnd.choice(["", "msg", " t $ x"])
                 for _ in range(rnd.randint(1, 6))]
        text = rnd.choice(["", "\n"]) + "\n".join(lines) + rnd.choice(["", "\n"])
        assert strip_prefixes(text) == _strip_prefixes_by_line(text), repr(text)


def test_strip_prefixes_returns_an_unprefixed_text_itself():
    text = '  File "/x.py", line 1, in <module>\nValueError: x\n' * 100
    assert strip_prefixes(text) is text


# --- wraps judged as pasted (session 6) ------------------------------------------------------------------------

def test_a_wrap_is_judged_by_the_line_as_pasted_with_its_timestamp():
    raw = ("[    3.576634] amdgpu 0000:04:00.0: Direct firmware load for\n"
           "amdgpu/psp_13_0_8_toc.bin failed with error -2\n"
           "[    3.614955] amdgpu 0000:04:00.0: amdgpu: Fatal error during GPU init\n")
    text, lengths = clean_log_wraps(raw)
    assert text.startswith("amdgpu 0000:04:00.0: Direct firmware load for\n")   # the prefix is gone ...
    app, _ = joined_wraps(text, lengths=lengths)
    # ... but its line was as long as the wrap width, so it continues on the next
    assert "Direct firmware load for amdgpu/psp_13_0_8_toc.bin failed with error -2" in app


def test_a_wrap_never_continues_into_a_new_log_record():
    text = ("Hello I tried to run ollama on windows with the patch rocm provided in\n"
            "this repo but when I try to start ollama I have this warning :\n"
            "time=2024-06-17T14:49:12.220+02:00 level=WARN source=amd_windows.go:95\n"
            'msg="amdgpu is not supported" gpu=0 gpu_type=gfx90c:xnack-\n')
    app, _ = joined_wraps(text)
    assert any(line.startswith("time=2024-06-17") and 'msg="amdgpu is not supported"' in line
               for line in app.split("\n"))


def test_a_short_line_continues_when_the_next_word_could_not_have_fitted():
    text = ("time=2024-06-17T14:49:12.220+02:00 level=WARN source=amd_windows.go:95\n"
            'msg="amdgpu is not supported" gpu=0 gpu_type=gfx90c:xnack-\n'
            'library="C:\\\\Program Files\\\\AMD\\\\ROCm\\\\5.7\\\\bin"\n'
            'supported_types="[gfx1030 gfx1100 gfx1101 gfx1102 gfx906 gfx90c]"\n')
    app, _ = joined_wraps(text)
    assert any('amdgpu is not supported' in line and 'supported_types=' in line for line in app.split("\n"))


# the same line as docker's json-file log driver stores it (`docker logs` of a container whose daemon log is read
# raw: /var/lib/docker/containers/<id>/<id>-json.log), and as a Python repr of captured stderr
DOCKER_JSON = ('{"log":"\\u001b[31m' + NO_BINARY.strip('"') + '\\u001b[0m\\n","stream":"stderr",'
               '"time":"2024-05-01T12:00:00.123456789Z"}')
# the error lines of etched-ai/open-oasis#27 (tuning case) as a subprocess's captured stderr, printed as a repr
REPR = ("b'Traceback (most recent call last):\\n  File \"<string>\", line 1, in <module>\\nRuntimeError: HIP error: "
        "invalid device function\\nHIP kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\\n'")


def test_a_log_quoted_as_a_string_is_read_as_its_lines(matcher):
    assert "hip-no-binary-for-gpu" in first(matcher, DOCKER_JSON)
    readings, at = escaped_readings(DOCKER_JSON)
    assert readings.splitlines()[0].endswith("Unable to find code object for all current devices!") and at[0] == 1
    assert "\x1b" not in readings and "[31m" not in readings
    text = "$ python3 check.py\n" + REPR
    readings, at = escaped_readings(text)
    assert "RuntimeError: HIP error: invalid device function" in readings.splitlines() and set(at) == {2}
    assert "hip-invalid-device-function" in first(matcher, text)


def test_markdown_escapes_are_read_unescaped(matcher):
    # hsa-override-wrong-value's own firing line, as a Markdown source that escapes underscores holds it
    text = "echo HSA\\_OVERRIDE\\_GFX\\_VERSION=gfx1032 >> .env"
    assert escaped_readings(text)[0] == "echo HSA_OVERRIDE_GFX_VERSION=gfx1032 >> .env"
    assert "hsa-override-wrong-value" in first(matcher, text)


def test_windows_paths_and_plain_lines_have_no_other_reading(matcher):
    """Backslashes before letters are a path (tuning 007's traceback, retired h173's onnxruntime frame), not escapes:
    no reading, nothing new found."""
    for line in ['  File "D:\\anaconda3\\envs\\script\\lib\\site-packages\\torch\\nn\\modules\\module.py", line 688, in cuda',
                 'hon310\\lib\\site-packages\\onnxruntime\\capi\\_pybind_state.py", line 33, in <module>',
                 "RuntimeError: HIP error: invalid device function", "C:\\new\\tools\\bin\\x.exe"]:
        assert escaped_readings(line) == ("", [])
    long = "\\n".join(["x" * 40] * 2000)
    readings, at = escaped_readings(long)
    assert len(readings) <= 2 * len(long) and len(at) == readings.count("\n") + 1
