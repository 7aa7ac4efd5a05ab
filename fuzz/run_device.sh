#!/usr/bin/env bash
# Runs the parser fuzz targets on a many-core machine from prebuilt binaries,
# each until it has done TOTAL executions or BOX seconds have passed, with
# libFuzzer's fork mode (one parent, WORKERS child processes that restart on
# a crash, so one finding does not end the run).
#
#   fuzz/run_device.sh [TARGET...]     (default: tflite tfjs onnx onnx_structured)
#
# Binaries come from .devbin/fuzz/<target> (BIN_DIR), built on the dev machine
# with fuzz/build_device.sh. Seeds are read from fuzz/corpus/<target>; new
# corpus entries go to $OUT/corpus/<target>, crashes, timeouts and OOMs to
# $OUT/artifacts/<target>/, each target's log to $OUT/<target>.log.
# Prints one summary line per target: executions, wall seconds, execs/s, findings.
#
# Environment: WORKERS (default: the number of cores), TOTAL (default
# 10000000), BOX (seconds per target, default 450: four targets then need
# four commands under an 8-minute limit; see fuzz/README.md), BIN_DIR.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/fuzz/out}
bins=${BIN_DIR:-$root/.devbin/fuzz}
workers=${WORKERS:-$(nproc)}
total=${TOTAL:-10000000}
box=${BOX:-450}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(tflite tfjs onnx onnx_structured)

mkdir -p "$out"
summary=()
for t in "${targets[@]}"; do
    bin="$bins/$t"
    [ -x "$bin" ] || { echo "no fuzz binary $bin (build with fuzz/build_device.sh)" >&2; exit 2; }
    mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
    log="$out/$t.log"
    start=$(date +%s.%N)
    # -runs counts the executions of all jobs together in fork mode; the
    # parent stops when either limit is reached. -ignore_* keep it going
    # past a finding (saved under artifacts/); -timeout flags a hang.
    "$bin" "$out/corpus/$t" "fuzz/corpus/$t" \
        -fork="$workers" -runs="$total" -max_total_time="$box" \
        -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$out/artifacts/$t/" -print_final_stats=1 \
        >"$log" 2>&1 || echo "$t: libFuzzer exited with $? (see $log)" >&2
    end=$(date +%s.%N)
    # Fork mode's status lines: "#<execs>: cov: ... exec/s: ... oom/timeout/crash: a/b/c ...".
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    execs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$last")
    findings=$(sed -nE 's|.*oom/timeout/crash: ([0-9]+/[0-9]+/[0-9]+).*|\1|p' <<<"$last")
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
    rate=$(awk -v n="${execs:-0}" -v s="$wall" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')
    artifacts=$(find "$out/artifacts/$t" -type f | wc -l)
    line="$t: ${execs:-0} execs in ${wall} s on $workers workers = $rate execs/s; oom/timeout/crash ${findings:-?}; $artifacts artifact files; corpus +$(find "$out/corpus/$t" -type f | wc -l)"
    echo "$line"
    summary+=("$line")
done
echo "== summary"
printf '%s\n' "${summary[@]}"
