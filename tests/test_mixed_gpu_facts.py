"""A desktop Ryzen's iGPU beside a discrete card, shown by the agent name lines of rocminfo alone: the iGPU is a
bystander (igpu-dgpu-mixed-enumeration), never "the only GPU is an integrated one"."""
from __future__ import annotations

from diagnostics.service import diagnose_text

GREP = "$ rocminfo | grep gfx\n  Name:                    gfx1036\n  Name:                    gfx1100\n"


def test_an_igpu_listed_beside_a_discrete_target_is_not_the_only_gpu():
    res = diagnose_text(logs=[("paste", GREP + "$ python3 -c 'import torch;print(torch.cuda.device_count())'\n2\n")])
    assert res["facts"]["gpu.gfx_targets"] == ["gfx1036", "gfx1100"]
    assert "apu-igpu-limited-support" not in [d["id"] for d in res["diagnoses"]]


def test_the_integrated_target_alone_still_is():
    res = diagnose_text(logs=[("paste", "$ rocminfo | grep gfx\n  Name:                    gfx1035\n")])
    assert "apu-igpu-limited-support" in [d["id"] for d in res["diagnoses"]]
