#!/usr/bin/env bash
# Creates .venv (seeing the system's packages, so a ROCm/CUDA torch you installed stays the one diagnosed)
# and installs the tool's requirements.  Never installs or replaces torch.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv --system-site-packages .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -r "${1:-requirements.txt}"
