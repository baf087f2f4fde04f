#!/usr/bin/env bash
# Set up and run the whole test suite: system packages the tests use (real ROCm userspace, PostgreSQL,
# Chromium), the Python requirements, a CPU torch only when no torch is installed, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v rocminfo >/dev/null || need+=(rocminfo)
command -v rocm-smi >/dev/null || need+=(rocm-smi)
ls /usr/lib/x86_64-linux-gnu/libamdhip64.so* >/dev/null 2>&1 || need+=(libamdhip64-5)
[ -x /usr/lib/postgresql/15/bin/initdb ] || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v chromium >/dev/null || need+=(chromium)
# a CJK font, so the Chinese pages in the browser tests' screenshots are readable
ls /usr/share/fonts/truetype/wqy/wqy-microhei.ttc >/dev/null 2>&1 || need+=(fonts-wqy-microhei)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing system packages: ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
bash scripts/setup.sh requirements-dev.txt
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  echo "no torch installed: installing the CPU build torch==2.13.0 for the tests"
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
