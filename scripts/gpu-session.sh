#!/usr/bin/env bash
# Runs the GPU checks and benchmarks on a GPU host from binaries built elsewhere (the
# device host has no Rust). Build and pack on the build machine:
#
#   CUZK_CUDA_ARCHS=90 NVCC=… cargo test --release --features cuda --no-run
#   scripts/gpu-session.sh pack            # → .gpu/bins.tgz (test binaries, cuzk-prove,
#                                          #   sppark-vs-cuzk if built; stripped)
#
# then on the GPU host, from the repository root, one phase per call (each fits 10 min):
#
#   scripts/gpu-session.sh check   # GPU tests (field, MSM, NTT, SRS decode, e2e proofs)
#   scripts/gpu-session.sh bench   # bench-gpu and sppark-vs-cuzk up to 2^24
#   scripts/gpu-session.sh e2e     # whole proofs, 2KiB and 8MiB, each switch on and off
#   scripts/gpu-session.sh partition  # bench-gpu --partition (32GiB shape, synthetic)
#   scripts/gpu-session.sh supraseal  # supraseal-c2 single shot on the same C1s (carry
#                                     # bench/supraseal/supraseal-c2-bench.tar.gz)
#
# Logs are written to a scratch folder and come back as one archive, $OUT/logs.tgz (the
# device tool returns only a few files per call), with the summary also on stdout. The
# test parameters are generated on the host with the carried cuzk-prove (gen-params,
# seed 0, as the tests do).
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-$PWD/gpu-out}
OUT=$(mktemp -d)
B=${BINS:-/tmp/cuzk-bins}
if [ "${1:-}" != pack ]; then
    mkdir -p "$FINAL"
    trap 'cat "$OUT/summary.txt" 2>/dev/null; tar czf "$FINAL/logs.tgz" -C "$OUT" .' EXIT
fi

pack() {
    local tmp; tmp=$(mktemp -d)
    for t in cuda_e2e cuda_msm cuda_ntt cuda_pce cuda_field bad_input; do
        local f; f=$(ls -t target/release/deps/$t-* 2>/dev/null | grep -v '\.d$' | head -1)
        [ -n "$f" ] && strip -o "$tmp/$t" "$f"
    done
    strip -o "$tmp/cuzk-prove" target/release/cuzk-prove
    [ -x bench/sppark/target/release/sppark-vs-cuzk ] && cp bench/sppark/target/release/sppark-vs-cuzk "$tmp/"
    mkdir -p .gpu && tar czf .gpu/bins.tgz -C "$tmp" . && ls -la .gpu/bins.tgz
    rm -rf "$tmp"
}

setup() {
    mkdir -p "$B" && tar xzf .gpu/bins.tgz -C "$B"
    # Test binaries look for fixtures, and for the cuzk-prove they spawn, under the build
    # machine's CARGO_MANIFEST_DIR (/work/main).
    mkdir -p /work && { [ -e /work/main ] || ln -s "$PWD" /work/main; }
    mkdir -p target/release && cp "$B/cuzk-prove" target/release/cuzk-prove
    export CUZK_TEST_PARAMS=$PWD/target/test-params
    mkdir -p "$CUZK_TEST_PARAMS"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
    for s in 2KiB 8MiB; do
        "$B/cuzk-prove" gen-params --sector-size $s --seed 0 -o "$CUZK_TEST_PARAMS" >> "$OUT/gen-params.log" 2>&1
    done
}

run() { # name, command…
    local name=$1; shift
    "$@" > "$OUT/$name.log" 2>&1
    echo "$name: rc=$?" | tee -a "$OUT/summary.txt"
}

case "${1:-}" in
pack) pack ;;
check)
    setup
    for t in cuda_field cuda_msm cuda_ntt cuda_pce bad_input cuda_e2e; do
        [ -x "$B/$t" ] && run "$t" "$B/$t" --nocapture
    done
    if command -v compute-sanitizer >/dev/null; then
        run memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$B/cuda_msm" msm_small
        # The same with the zero-copy gather at every size (small MSMs copy by default).
        CUZK_GATHER=1 run memcheck-gather compute-sanitizer --tool memcheck --error-exitcode 1 \
            "$B/cuda_msm" msm_small
        run memcheck-scalars compute-sanitizer --tool memcheck --error-exitcode 1 \
            "$B/cuda_msm" device_scalars_select_and_msm
        run racecheck-ntt compute-sanitizer --tool racecheck --error-exitcode 1 \
            "$B/cuda_ntt" ntt_fused_passes_small
        run memcheck-ntt compute-sanitizer --tool memcheck --error-exitcode 1 \
            "$B/cuda_ntt" ntt_fused_passes_small
        run memcheck-pce compute-sanitizer --tool memcheck --error-exitcode 1 \
            "$B/cuda_pce" pce_eval_quotient_matches_full_synthesis
    fi
    ;;
bench)
    setup
    run bench-gpu "$B/cuzk-prove" bench-gpu --max-log 24 --g2-max-log 22 --runs 5 --json "$OUT/bench-gpu.json"
    run bench-gpu-26 "$B/cuzk-prove" bench-gpu --min-log 26 --max-log 26 --g2-max-log 22 --runs 3
    [ -x "$B/sppark-vs-cuzk" ] &&
        run sppark "$B/sppark-vs-cuzk" --max-log 24 --runs 5 --pin --json "$OUT/sppark.json"
    ;;
partition) # one synthetic 32GiB-shape partition (~2 min, most of it generating inputs)
    setup
    run partition "$B/cuzk-prove" bench-gpu --partition --runs 3 --json "$OUT/partition.json"
    ;;
e2e)
    setup
    for sz in 2kib 8mib; do
        for v in "" "--split-msm off" "--srs-decode cpu" "--b-g2 cpu" "--pin off" "--device cpu"; do
            for i in 1 2 3; do
                echo "== $sz [$v] run $i" >> "$OUT/e2e.log"
                # shellcheck disable=SC2086
                "$B/cuzk-prove" --c1 testdata/$sz/c1.json --param-cache "$CUZK_TEST_PARAMS" \
                    -o /tmp/p.bin --timings $v >> "$OUT/e2e.log" 2>&1 ||
                    echo "FAIL $sz [$v]" | tee -a "$OUT/summary.txt"
            done
        done
    done
    ;;
supraseal) # supraseal-c2 on the same C1s: bench/supraseal/build.sh makes the archive
    setup
    tar xzf bench/supraseal/supraseal-c2-bench.tar.gz -C "$B"
    for sz in 2kib 8mib; do
        for i in 1 2 3; do  # single shot, as cuzk-prove runs
            CUDA_VISIBLE_DEVICES=0 "$B/supraseal-c2-bench" --c1 testdata/$sz/c1.json \
                --meta testdata/$sz/meta.json --param-cache "$CUZK_TEST_PARAMS" --runs 1 \
                >> "$OUT/supraseal.log" 2>&1 || echo "FAIL supraseal $sz" | tee -a "$OUT/summary.txt"
        done
    done
    ;;
*) echo "usage: $0 pack|check|bench|partition|e2e|supraseal" >&2; exit 2 ;;
esac
