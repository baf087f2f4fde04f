"""Fake torch packages that fail the way real broken stacks do (put their folder first on PYTHONPATH)."""
from __future__ import annotations

import textwrap
from pathlib import Path

SEGFAULT = """
import os, signal, sys
sys.stderr.write('Fatal Python error: Segmentation fault\\n'); sys.stderr.flush()
os.kill(os.getpid(), signal.SIGSEGV)
"""

HANG = """
import time
time.sleep(3600)
"""

# The real message of a ROCm torch without code for the GPU, then the abort (ROCm/ROCm#2536 and many others).
ABORT_ON_DEVICE = """
import os, sys, types
__version__ = '2.3.0+rocm5.7'
version = types.SimpleNamespace(hip='5.7.31921-d1770ee1b', cuda=None)
def _boom():
    sys.stderr.write('rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory\\n')
    sys.stderr.write('"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\\n')
    sys.stderr.flush()
    os.abort()
cuda = types.SimpleNamespace(is_available=_boom, get_arch_list=lambda: ['gfx900', 'gfx906', 'gfx908', 'gfx90a', 'gfx1030', 'gfx1100'])
"""

# A CPU-only build as pip's default index serves it on a machine without a GPU: imports, answers, sees no device.
CPU_ONLY = """
import types
__version__ = '2.5.1+cpu'
version = types.SimpleNamespace(hip=None, cuda=None)
cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0, get_arch_list=lambda: [])
"""

# A ROCm torch whose first device call never returns (a GPU stuck in the driver, a hung HSA init).
HANG_ON_DEVICE = """
import time, types
__version__ = '2.3.0+rocm5.7'
version = types.SimpleNamespace(hip='5.7.31921-d1770ee1b', cuda=None)
def _hang():
    time.sleep(3600)
cuda = types.SimpleNamespace(is_available=_hang, get_arch_list=lambda: ['gfx1100'], device_count=_hang)
"""

FLOOD = """
import sys
for i in range(200000):
    sys.stderr.write('warning: noisy import line %d ' % i + 'x' * 40 + '\\n')
__version__ = '2.4.0+cpu'
import types
version = types.SimpleNamespace(hip=None, cuda=None)
cuda = types.SimpleNamespace(is_available=lambda: False, get_arch_list=lambda: [])
"""


def make_fake_torch(base: Path, body: str) -> Path:
    pkg = base / "torch"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(body))
    return base
