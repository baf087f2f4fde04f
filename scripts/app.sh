#!/usr/bin/env bash
# Set up and start the web UI on http://127.0.0.1:8501 (sessions in a local SQLite file by default).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements.txt
exec .venv/bin/python -m diagnostics serve --port "${PORT:-8501}"
