"""The unexplained queue's draft pattern is written the way the matcher reads logs (issue 17: one idea, one place):
a line with full-width punctuation or a localised C message still matches the sessions it came from."""
from __future__ import annotations

import re

from diagnostics.store.stats import signature_pattern
from diagnostics.textnorm import clean_log


def test_a_chinese_error_line_pattern_matches_the_line_as_the_matcher_reads_it():
    line = "RuntimeError: Input type (torch.cuda.FloatTensor) should be the same这个是为什么？改了好多地方了，都是"
    pat = signature_pattern(line)
    assert re.search(pat, clean_log(line)), pat
    seg = "bash: line 1: 4242 段错误 (核心已转储) python train.py"
    assert re.search(signature_pattern(seg), clean_log(seg))
