"""The Windows session reader (diagnostics/parsers/windows_host.py) and what its facts change downstream.

Shapes: wmic's one-column table (a 'Name' header, one adapter per line, trailing blanks) and PowerShell's
`Get-CimInstance Win32_VideoController | Select-Object Name` / `Format-List` output as Windows prints them
(WhyNotWin11#84 and VirtualDisplayDriver_Wizard#1 give the commands people are told to run); a cmd prompt from the
paste in pytorch/pytorch#101147 ("A:\\Data\\DDSP-SVC 3.0>python\\python.exe"); dxdiag's "Card name:" line.
"""
from __future__ import annotations

import pytest

from diagnostics import parsers
from diagnostics.parsers import windows_host
from diagnostics.service import diagnose_text
from diagnostics.support import report_values

WMIC = """PS C:\\Users\\me> wmic path win32_VideoController get name
Name
AMD Radeon RX 7800 XT
Microsoft Basic Display Adapter

PS C:\\Users\\me> python -c "import torch; print(torch.__version__, torch.cuda.is_available())"
2.5.1 False
"""

CIM_TABLE = """PS C:\\> Get-CimInstance Win32_VideoController | Select-Object Name

Name
----
AMD Radeon(TM) Graphics
NVIDIA GeForce RTX 4060 Laptop GPU

"""

CIM_LIST = """PS C:\\> Get-WmiObject win32_videocontroller | fl Name, DriverVersion


Name          : AMD Radeon RX 6700 XT
DriverVersion : 31.0.24033.1003

"""


def test_wmic_table_names_the_amd_card_and_windows():
    f = windows_host.parse(WMIC).facts
    assert f == {"os.name": "Windows", "gpu.names": ["AMD Radeon RX 7800 XT"], "gpu.vendors": ["amd"]}


def test_powershell_table_and_list():
    f = windows_host.parse(CIM_TABLE).facts
    assert f["gpu.names"] == ["AMD Radeon(TM) Graphics", "NVIDIA GeForce RTX 4060 Laptop GPU"]
    assert f["gpu.vendors"] == ["amd", "nvidia"]
    f = windows_host.parse(CIM_LIST).facts
    assert f["gpu.names"] == ["AMD Radeon RX 6700 XT"] and f["os.name"] == "Windows"


def test_prompts_and_tracebacks_say_windows_without_adapters():
    assert windows_host.parse("A:\\Data\\DDSP-SVC 3.0>python\\python.exe\n").facts == {"os.name": "Windows"}
    tb = 'Traceback (most recent call last):\n  File "C:\\ComfyUI\\main.py", line 12, in <module>\nImportError: x\n'
    assert windows_host.parse(tb).facts == {"os.name": "Windows"}
    assert windows_host.parse("Card name: AMD Radeon RX 580 2048SP\n").facts["gpu.vendors"] == ["amd"]


@pytest.mark.parametrize("text", [
    "$ python -c 'import torch'\nuser@box:~$ ls /mnt/c/Users\n",          # WSL or Linux: no Windows prompt
    "Name: torch\nVersion: 2.5.1\n",                                        # pip show's 'Name:' is no adapter
    "PS C:\\> wmic path win32_VideoController get name\nName\nMicrosoft Basic Display Adapter\n",
])
def test_no_gpu_facts_where_the_text_does_not_show_one(text):
    f = windows_host.parse(text).facts
    assert "gpu.vendors" not in f
    if "PS C:" not in text:
        assert "os.name" not in f


def test_runs_inside_any_paste():
    res = parsers.parse("Some log line\n" + WMIC)
    assert res.facts.get("gpu.vendors") == ["amd"] and res.facts.get("os.name") == "Windows"


def test_a_bare_torch_on_windows_beside_a_radeon_is_a_cpu_build_and_the_fix_is_for_windows():
    res = diagnose_text(logs=[("ps.txt", WMIC)])
    assert res["facts"]["torch.build"] == "cpu"
    first = res["diagnoses"][0]
    assert first["id"] == "torch-cpu-only-wheel"
    assert "win_amd64" in first["fix"] and "download.pytorch.org/whl/rocm" not in first["fix"]


def test_linux_keeps_the_computed_command():
    vals = report_values({"gpu.gfx_targets": ["gfx1101"], "torch.build": "cpu", "os.name": "Ubuntu 24.04 LTS"})
    assert vals.get("_install_cmd") and not vals.get("_windows_amd")
    vals = report_values({"gpu.gfx_targets": ["gfx1101"], "torch.build": "cpu", "os.name": "Windows"})
    assert vals.get("_windows_amd") == "gfx1101" and not vals.get("_install_cmd")
