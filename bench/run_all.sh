#!/usr/bin/env bash
# Re-run every benchmark in one go on this machine and bring docs/BENCHMARKS.md (and docs/EVALUATION.md) up to
# date.  Each benchmark reports a ratio against a floor or a peer measured in the same run.
#   bash bench/run_all.sh            # everything (the store at 100,000 sessions takes the longest)
#   QUICK=1 bash bench/run_all.sh    # smaller sizes and fewer rounds
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
DOC=docs/BENCHMARKS.md
status=0
step() { echo "== $*" >&2; "$@" || { echo "!! failed: $*" >&2; status=1; }; }
if [ -n "${QUICK:-}" ]; then
  step $PY bench/bench_probes.py --rounds 3 --write $DOC
  step $PY bench/bench_run.py --rounds 3 --write $DOC
  step $PY bench/bench_matcher.py --write $DOC
  step $PY bench/bench_store.py --sizes 1000 10000 --out $DOC
  step $PY bench/bench_app.py --repeat 2 --update-doc $DOC
  step $PY bench/bench_ui.py --rounds 2 --write $DOC
  step $PY bench/bench_generation.py --device cpu --repeat 3 --update-doc $DOC
else
  step $PY bench/bench_probes.py --rounds 9 --write $DOC
  step $PY bench/bench_run.py --rounds 5 --write $DOC
  step $PY bench/bench_matcher.py --write $DOC
  step $PY bench/bench_store.py --out $DOC
  step $PY bench/bench_app.py --repeat 5 --update-doc $DOC
  step $PY bench/bench_ui.py --rounds 3 --write $DOC
  step $PY bench/bench_generation.py --device cpu --repeat 5 --update-doc $DOC
fi
step $PY bench/eval_kb.py
exit $status
