#!/usr/bin/env bash
# The issue-13 acceptance scenarios on a real NVIDIA GPU, in one go:
#   masks by a non-existent index, a non-existent UUID and the right UUID; VRAM held by another process;
#   the GPU kept busy by another process; a real out-of-memory (a user script asking for more than the card
#   has, and the doctor's own 1B-model generation loading into the memory another process left free).
# Every scenario's report (JSON, and text for some) goes to $OUT/gpu-scenarios/, packed as
# $OUT/gpu-scenarios.tgz (the device tool returns at most 8 files); $OUT/summary.txt has one line each:
# scenario, exit status, verdict, first cause and the other causes.
#
#   OUT=/tmp/out bash scripts/gpu_scenarios.sh            # from the repository root (or a copy of it)
#
# PY (default python3) is the interpreter with the CUDA torch. Background load is started by this script
# and ended by it (by pid). Needs about 3 minutes on an H200.
set -u
PY=${PY:-python3}
OUT=${OUT:-/tmp/gpu-scenarios-out}
D="$OUT/gpu-scenarios"
mkdir -p "$D"
export PYTHONUNBUFFERED=1 GPU_DOCTOR_CACHE_DIR=${GPU_DOCTOR_CACHE_DIR:-/tmp/gdcache}
BG=""

stop_bg() {
    if [ -n "$BG" ]; then kill "$BG" 2>/dev/null; wait "$BG" 2>/dev/null; BG=""; fi
    sleep 2  # the driver frees the memory of a dead process asynchronously
}
trap stop_bg EXIT

# start_bg NAME CODE: a background python that signals readiness by creating $D/NAME.ready
start_bg() {
    rm -f "$D/$1.ready"
    "$PY" -c "$2" "$D/$1.ready" > "$D/$1.bg.txt" 2>&1 &
    BG=$!
    for _ in $(seq 1 120); do [ -e "$D/$1.ready" ] && break; sleep 0.5; done
    nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total --format=csv > "$D/$1.nvidia-smi.txt" 2>&1
    nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory,gpu_uuid --format=csv >> "$D/$1.nvidia-smi.txt" 2>&1
}

# doctor NAME ARGS...: one `python -m diagnostics ARGS --json`, exit status kept
doctor() {
    local name=$1; shift
    local t0=$(date +%s)
    "$PY" -m diagnostics "$@" --json > "$D/$name.json" 2> "$D/$name.err"
    echo $? > "$D/$name.rc"
    echo "$name: exit $(cat "$D/$name.rc") in $(( $(date +%s) - t0 )) s"
}

nvidia-smi -L > "$D/nvidia-smi-L.txt" 2>&1
UUID=$(sed -n 's/.*(UUID: \(GPU-[0-9a-f-]*\)).*/\1/p' "$D/nvidia-smi-L.txt" | head -1)
echo "GPU UUID: $UUID"

# --- visible-device masks ------------------------------------------------------------------------
doctor baseline run --no-generate
CUDA_VISIBLE_DEVICES=7 doctor mask-index run --no-generate
CUDA_VISIBLE_DEVICES=GPU-00000000-1111-2222-3333-444444444444 doctor mask-uuid-wrong run --no-generate
CUDA_VISIBLE_DEVICES=$UUID doctor mask-uuid-right run --no-generate

# --- VRAM held by another process (90 % of what is free), probe run only ---------------------------
HOLD='import sys, time, torch
free, total = torch.cuda.mem_get_info()
x = torch.empty(int(free * FRACTION), dtype=torch.uint8, device="cuda")
print("holding", x.numel(), "of", total, flush=True)
open(sys.argv[1], "w").close()
time.sleep(900)'
start_bg held "${HOLD/FRACTION/0.90}"
doctor held run --no-generate
"$PY" -m diagnostics run --no-generate > "$D/held.txt" 2>&1
stop_bg

# --- the GPU kept 100 % busy by another process (a bf16 matmul loop), the whole run with generation --
BUSY='import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(20):
    c = a @ b
torch.cuda.synchronize()
open(sys.argv[1], "w").close()
t = time.time()
while time.time() - t < 900:
    for _ in range(50):
        c = a @ b
    torch.cuda.synchronize()'
start_bg busy "$BUSY"
doctor busy run
"$PY" -m diagnostics run > "$D/busy.txt" 2>&1
stop_bg

# --- a real out-of-memory: a user script asks for more than the card has ---------------------------
"$PY" -c 'import torch
free, total = torch.cuda.mem_get_info()
torch.empty(total + (8 << 30), dtype=torch.uint8, device="cuda")' > "$D/oom-user.log" 2>&1
doctor oom-user run --no-generate --log "$D/oom-user.log"
"$PY" -m diagnostics match --log "$D/oom-user.log" > "$D/oom-user-match.txt" 2>&1
"$PY" -m diagnostics match --log "$D/oom-user.log" --lang zh > "$D/oom-user-match-zh.txt" 2>&1

# --- a real out-of-memory on load: the doctor's 1B model into the ~1 GiB another process left free ------
start_bg oomheld "${HOLD/FRACTION/0.992}"
doctor oom-load generate --model builtin:1b --device cuda --force-load --no-compare-cpu
doctor oom-load-run run --no-generate --log "$D/oom-load.json"
stop_bg

# --- summary --------------------------------------------------------------------------------------
"$PY" - "$D" > "$OUT/summary.txt" <<'EOF'
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
# the first cause each scenario should name (issue 13); None: nothing wrong
HELD, SHARED = "gpu-vram-held-by-other-process", "gpu-shared-with-other-process"
EXPECT = {"baseline": {None}, "mask-index": {"visible-devices-env-masking"},
          "mask-uuid-wrong": {"visible-devices-env-masking"}, "mask-uuid-right": {None}, "held": {HELD},
          "busy": {SHARED}, "oom-user": {"hip-out-of-memory"}, "oom-load": {HELD, SHARED}, "oom-load-run": {HELD, SHARED}}
for f in sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime):
    rc = (d / (f.stem + ".rc")).read_text().strip() if (d / (f.stem + ".rc")).exists() else "?"
    try:
        r = json.loads(f.read_text())
    except ValueError as exc:
        print(f"{f.stem}: exit {rc}, no JSON ({exc})")
        continue
    diags = r.get("diagnoses") or []
    first = diags[0] if diags else {}
    facts = r.get("facts") or {}
    keys = ("gpu.busy_percent", "gpu.mem_used_fraction", "gpu.other_process_count", "gpu.other_process_mem_bytes",
            "gpu.processes", "torch.device_count", "oom.requested_bytes", "oom.other_process_bytes", "gen.oom")
    want = EXPECT.get(f.stem)
    right = want is not None and first.get("id") in want and (not first or first.get("variant") == "nvidia")
    print(("PASS " if right else "FAIL ") + f"{f.stem}: exit {rc}, verdict {r.get('verdict')}, first {first.get('id')} "
          f"[{first.get('variant', '-')}] \"{first.get('title')}\"; then {[x.get('id') for x in diags[1:5]]}; "
          + ", ".join(f"{k}={facts[k]}" for k in keys if k in facts))
EOF
cat "$OUT/summary.txt"
tar czf "$OUT/gpu-scenarios.tgz" -C "$OUT" gpu-scenarios && rm -rf "$D"
