#!/usr/bin/env bash
# Runs the GPU checks and benchmarks on a GPU host from binaries built elsewhere (the
# device host has no Rust). Build and pack on the build machine:
#
#   CUZK_CUDA_ARCHS=90 NVCC=… cargo test --release --features cuda --no-run
#   dev/gpu-session.sh pack            # → .gpu/bins.tgz (test binaries, cuzk-prove,
#                                          #   sppark-vs-cuzk if built; stripped)
#
# then on the GPU host, from the repository root, one phase per call (each fits 10 min):
#
#   dev/gpu-session.sh check   # GPU tests (field, MSM, NTT, SRS decode, e2e proofs;
#                                  # CHECK_TESTS="cuda_e2e …" picks some, SANITIZE=0 skips
#                                  # compute-sanitizer)
#   dev/gpu-session.sh bench   # bench-gpu and sppark-vs-cuzk up to 2^24
#   dev/gpu-session.sh e2e     # whole proofs, 2KiB and 8MiB, each switch on and off
#   dev/gpu-session.sh fuzz    # cuzk-dev fuzz, 1 M runs per reader ($FUZZ_RUNS)
#   dev/gpu-session.sh partition  # bench-gpu --partition (32GiB shape, synthetic)
#   dev/gpu-session.sh affine  # dev/bench-affine: bucket additions, XYZZ vs batch-affine
#   dev/gpu-session.sh upload  # dev/bench-upload: a page-cached mapping to the GPU,
#                                  # staged vs page-locked (--pin-mapped), idle and busy
#   dev/gpu-session.sh supraseal  # supraseal-c2 single shot on the same C1s (carry
#                                     # dev/supraseal/supraseal-c2-bench.tar.gz)
#   dev/gpu-session.sh small-plain # the plain command at 2KiB and 8MiB, first run and
#                                     # later ones, AB_FLAG / AB_ENV alternated (as the end
#                                     # of full32-plain)
#   dev/gpu-session.sh full32-gen # starts 32GiB TEST-ONLY parameters (~10 min, 47 GB;
#                                     # detached, setsid) and writes a synthetic 32GiB C1;
#                                     # later calls must follow within the machine's warm
#                                     # time (30 s) or the parameters are lost
#   dev/gpu-session.sh full32-wait  # waits for them (until $FULL32_UNTIL, epoch s)
#   dev/gpu-session.sh full32-run # waits, then whole 32GiB proofs: the PCE recording
#                                     # run, then cached runs with --overlap-synth off and
#                                     # on, alternating ($FULL32_RUNS: "1 2")
#   dev/gpu-session.sh full32-plain  # waits, then the plain command as users type it
#                                     # (--param-cache only: the recording is made by the
#                                     # first run and kept beside the parameters), runs 1–3,
#                                     # then AB_FLAG on/off alternated AB_RUNS (3) times if
#                                     # set, then --memory-budget 48GiB (BUDGET48=0 skips
#                                     # it); each proof checked with
#                                     # verify-seal; then 2KiB and 8MiB plain, first run and
#                                     # $SMALL_RUNS (3) more each, then AB_FLAG
#                                     # on/off alternated ($SMALL_AB_RUNS pairs, 5)
#                                     # AB_ENV=NAME: a developers' knob NAME=1 and =0
#                                     # (AB_ON=V / AB_OFF=V other values, e.g.
#                                     # AB_ENV=GLIBC_TUNABLES AB_ON=glibc.malloc.hugetlb=1
#                                     # AB_OFF=)
#                                     # (KEEP_PCE=1 keeps an earlier call's recording,
#                                     # SMALL=0 skips 2KiB/8MiB, SUBGROUP_SAMPLE=N times
#                                     # subgroup-check on N points a section)
#                                     # alternated the same way. TIMELINE=1 logs at info
#                                     # level (millisecond timestamps) in every run;
#                                     # PROVE_ARGS="--flag v" goes to every run.
#                                     # LEAVE_FREE_MIB=N: the GPU proves with only N MiB
#                                     # free (the rest held: CUZK_GPU_RESERVE_MIB).
#   dev/gpu-session.sh full32-binab  # waits, then this build against an earlier one
#                                     # (.gpu/old.tgz), alternated ($AB_RUNS pairs)
#   dev/gpu-session.sh full32-native # waits, then bench-witness on the 32GiB C1 (16
#                                     # cores; BENCH_WITNESS=0 skips it), the recording
#                                     # run, and cached runs with --native-label off and on,
#                                     # alternating ($FULL32_MODES: "off on")
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
    for t in cuda_e2e cuda_msm cuda_ntt cuda_pce cuda_field bad_input gpus; do
        local f; f=$(ls -t target/release/deps/$t-* 2>/dev/null | grep -v '\.d$' | head -1)
        [ -n "$f" ] && strip -o "$tmp/$t" "$f"
    done
    strip -o "$tmp/cuzk-prove" target/release/cuzk-prove
    strip -o "$tmp/cuzk-dev" target/release/cuzk-dev
    [ -x dev/sppark/target/release/sppark-vs-cuzk ] && cp dev/sppark/target/release/sppark-vs-cuzk "$tmp/"
    # dev/bench-upload (standalone nvcc build, see its header)
    [ -x target/bench-upload/bench_upload ] && strip -o "$tmp/bench_upload" target/bench-upload/bench_upload
    # dev/bench-affine (the same)
    [ -x target/bench-affine/bench_affine ] && strip -o "$tmp/bench_affine" target/bench-affine/bench_affine
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
    for s in 2KiB 8MiB; do  # once a machine
        [ -e "$CUZK_TEST_PARAMS/.made-$s" ] && continue
        "$B/cuzk-dev" gen-params --sector-size $s --seed 0 -o "$CUZK_TEST_PARAMS" >> "$OUT/gen-params.log" 2>&1 &&
            touch "$CUZK_TEST_PARAMS/.made-$s"
    done
}

# The plain command at 2KiB and 8MiB: a first run (the recording), $SMALL_RUNS (3) more,
# then AB_FLAG on/off and AB_ENV=$AB_ON/$AB_OFF alternated ($SMALL_AB_RUNS pairs, 5); each
# proof checked with verify-seal.
small_plain() {
    TV=(); [ -x /usr/bin/time ] && TV=(/usr/bin/time -v)
    setup
    for sz in 2kib 8mib; do
        rm -f "$CUZK_TEST_PARAMS/"*.pce
        for i in 0 $(seq 1 "${SMALL_RUNS:-3}"); do
            run "plain-$sz-$i" "${TV[@]}" "$B/cuzk-prove" --c1 testdata/$sz/c1.json \
                --param-cache "$CUZK_TEST_PARAMS" -o /tmp/p.bin --timings
            run "verify-$sz-$i" "$B/cuzk-dev" verify-seal --meta testdata/$sz/meta.json \
                --param-cache "$CUZK_TEST_PARAMS" --proof /tmp/p.bin
        done
        # AB_FLAG at this size too (SMALL_AB_RUNS pairs, 5 by default).
        [ -n "${AB_FLAG:-}" ] || continue
        for i in $(seq 1 "${SMALL_AB_RUNS:-5}"); do
            for o in on off; do
                run "plain-$sz-$AB_FLAG-$o-$i" "${TV[@]}" "$B/cuzk-prove" --c1 testdata/$sz/c1.json \
                    --param-cache "$CUZK_TEST_PARAMS" -o /tmp/p.bin --timings --$AB_FLAG $o
                run "verify-$sz-$AB_FLAG-$o-$i" "$B/cuzk-dev" verify-seal \
                    --meta testdata/$sz/meta.json --param-cache "$CUZK_TEST_PARAMS" --proof /tmp/p.bin
                grep -E "Elapsed" "$OUT/plain-$sz-$AB_FLAG-$o-$i.log" |
                    sed "s/^/$sz $AB_FLAG=$o $i /" >> "$OUT/summary.txt"
            done
        done
        [ -n "${AB_ENV:-}" ] || continue
        for i in $(seq 1 "${SMALL_AB_RUNS:-5}"); do
            for o in 1 0; do
                if [ $o = 1 ]; then v=${AB_ON-1}; else v=${AB_OFF-0}; fi
                run "plain-$sz-$AB_ENV-$o-$i" env "$AB_ENV=$v" "${TV[@]}" "$B/cuzk-prove" \
                    --c1 testdata/$sz/c1.json --param-cache "$CUZK_TEST_PARAMS" -o /tmp/p.bin --timings
                run "verify-$sz-$AB_ENV-$o-$i" "$B/cuzk-dev" verify-seal \
                    --meta testdata/$sz/meta.json --param-cache "$CUZK_TEST_PARAMS" --proof /tmp/p.bin
                grep -E "Elapsed" "$OUT/plain-$sz-$AB_ENV-$o-$i.log" |
                    sed "s/^/$sz $AB_ENV=$o $i /" >> "$OUT/summary.txt"
            done
        done
    done
}

run() { # name, command…
    local name=$1; shift
    "$@" > "$OUT/$name.log" 2>&1
    echo "$name: rc=$?" | tee -a "$OUT/summary.txt"
}

case "${1:-}" in
pack) pack ;;
small-plain) small_plain ;;
check)
    setup
    for t in ${CHECK_TESTS:-cuda_field cuda_msm cuda_ntt cuda_pce bad_input cuda_e2e gpus}; do
        [ -x "$B/$t" ] && run "$t" "$B/$t" --nocapture
    done
    if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
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
    run bench-gpu "$B/cuzk-dev" bench-gpu --max-log 24 --g2-max-log 22 --runs 5 --json "$OUT/bench-gpu.json"
    run bench-gpu-26 "$B/cuzk-dev" bench-gpu --min-log 26 --max-log 26 --g2-max-log 22 --runs 3
    [ -x "$B/sppark-vs-cuzk" ] &&
        run sppark "$B/sppark-vs-cuzk" --max-log 24 --runs 5 --pin --json "$OUT/sppark.json"
    ;;
fuzz) # the mutation campaigns: $FUZZ_RUNS (1 M) runs per reader on all cores (nice'd)
    setup
    P2=$(ls "$CUZK_TEST_PARAMS"/*032d3138*.params)
    for t in c1 params pce; do
        case $t in c1) IN=(--input testdata/2kib/c1.json) ;; params) IN=(--input "$P2") ;; *) IN=() ;; esac
        run "fuzz-$t" nice -n 10 "$B/cuzk-dev" fuzz --target $t "${IN[@]}" --runs "${FUZZ_RUNS:-1000000}" \
            --seed "${FUZZ_SEED:-2904}" --crashes "$OUT/fuzz-crashes"
        tail -1 "$OUT/fuzz-$t.log" | tee -a "$OUT/summary.txt"
    done
    ;;
upload) # a page-cached mapping to the GPU, staged vs page-locked (--pin-mapped), idle and
    # beside 14 busy threads; the 16 GiB file is removed afterwards (the disk holds 64 GB)
    mkdir -p "$B"; [ -x "$B/cuzk-prove" ] || tar xzf .gpu/bins.tgz -C "$B"
    for busy in 0 14; do
        run "upload-busy-$busy" "$B/bench_upload" /tmp/bench-upload.bin "${UPLOAD_GIB:-16}" $busy 2
        grep -E "GB/s|read back" "$OUT/upload-busy-$busy.log" >> "$OUT/summary.txt"
    done
    rm -f /tmp/bench-upload.bin
    ;;
affine) # dev/bench-affine: a bucket addition in XYZZ against batch-affine (K chains a thread,
    # one inversion a round, binary GCD or Fermat), checked against each other (~1 min)
    mkdir -p "$B"; [ -x "$B/cuzk-prove" ] || tar xzf .gpu/bins.tgz -C "$B"
    run affine-check "$B/bench_affine" check
    run affine "$B/bench_affine" ${AFFINE_ARGS:-23 16 3}
    cat "$OUT/affine.log" >> "$OUT/summary.txt"
    ;;
partition) # one synthetic 32GiB-shape partition (~2 min, most of it generating inputs)
    setup
    run partition "$B/cuzk-dev" bench-gpu --partition --runs 3 --json "$OUT/partition.json"
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
supraseal) # supraseal-c2 on the same C1s: dev/supraseal/build.sh makes the archive
    setup
    tar xzf dev/supraseal/supraseal-c2-bench.tar.gz -C "$B"
    for sz in 2kib 8mib; do
        for i in 1 2 3; do  # single shot, as cuzk-prove runs
            CUDA_VISIBLE_DEVICES=0 "$B/supraseal-c2-bench" --c1 testdata/$sz/c1.json \
                --meta testdata/$sz/meta.json --param-cache "$CUZK_TEST_PARAMS" --runs 1 \
                >> "$OUT/supraseal.log" 2>&1 || echo "FAIL supraseal $sz" | tee -a "$OUT/summary.txt"
        done
    done
    ;;
full32-gen|full32-wait|full32-run|full32-native|full32-plain|full32-binab)
    # The largest local disk holds the parameters (47 GB) and the PCE recording (9 GB).
    D=$(df --output=avail,target / /tmp /root "$PWD" 2>/dev/null | tail -n +2 | sort -n | tail -1 | awk '{print $2}')
    D=${D%/}/cuzk32
    mkdir -p "$D/p32" "$D/pce"
    # Hosts of one kind differ by up to 30 % (docs/PERF.md): what each one was.
    { df -h / /tmp /dev/shm "$D"; free -g; nproc; uname -r
      grep -m1 'model name' /proc/cpuinfo
      for f in enabled defrag; do
          echo "thp $f: $(cat /sys/kernel/mm/transparent_hugepage/$f 2>/dev/null)"
      done
      nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,pcie.link.gen.max,pcie.link.width.current,persistence_mode --format=csv 2>/dev/null
    } > "$OUT/machine.txt" 2>&1
    mkdir -p "$B"; [ -x "$B/cuzk-prove" ] || tar xzf .gpu/bins.tgz -C "$B"
    gen_done() { grep -q '^rc=' "$D/gen.log" 2>/dev/null; }
    if [ "$1" = full32-gen ]; then
        setsid nohup bash -c "'$B/cuzk-dev' gen-params --sector-size 32GiB --seed 1 -o '$D/p32'; echo rc=\$?" \
            > "$D/gen.log" 2>&1 < /dev/null &
        run gen-c1 "$B/cuzk-dev" gen-c1 --sector-size 32GiB --seed ${FULL32_SEED:-32} -o "$D/c1-32g.json"
        exit 0
    fi
    UNTIL=${FULL32_UNTIL:-$(( $(date +%s) + 540 ))}
    while ! gen_done && [ "$(date +%s)" -lt "$UNTIL" ]; do sleep 5; done
    cp "$D/gen.log" "$OUT/gen-params-32g.log"
    if ! gen_done; then echo "gen-params 32GiB: still running" | tee -a "$OUT/summary.txt"; exit 0; fi
    echo "gen-params 32GiB: $(tail -1 "$D/gen.log")" | tee -a "$OUT/summary.txt"
    [ "$1" = full32-run ] || [ "$1" = full32-native ] || [ "$1" = full32-plain ] ||
        [ "$1" = full32-binab ] || exit 0
    TV=(); [ -x /usr/bin/time ] && TV=(/usr/bin/time -v)
    [ "${TIMELINE:-0}" = 1 ] && export RUST_LOG=cuzk_prove=info
    # LEAVE_FREE_MIB=N: every run holds all but N MiB of the GPU's free memory
    # (CUZK_GPU_RESERVE_MIB), so that an H200 plans and proves as a smaller card (80550
    # leaves what an 80 GB H100 has free: 84.47 GB).
    if [ -n "${LEAVE_FREE_MIB:-}" ]; then
        F=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)
        if [ "$F" -gt "$LEAVE_FREE_MIB" ]; then
            export CUZK_GPU_RESERVE_MIB=$((F - LEAVE_FREE_MIB))
            echo "GPU: $F MiB free, $CUZK_GPU_RESERVE_MIB held, $LEAVE_FREE_MIB left" |
                tee -a "$OUT/summary.txt"
        fi
    fi
    if [ "$1" = full32-binab ]; then
        # This build against an earlier one (.gpu/old.tgz: cuzk-prove-old), alternated,
        # AB_RUNS pairs after one recording run each; each keeps its recording in a
        # directory of its own (their file formats may differ). Every proof verified.
        tar xzf .gpu/old.tgz -C "$B"
        V=("$B/cuzk-dev" verify-seal --meta "$D/c1-32g.meta.json" --param-cache "$D/p32" --proof)
        for i in 0 $(seq 1 "${AB_RUNS:-3}"); do
            for b in new old; do
                X="$B/cuzk-prove"; [ $b = old ] && X="$B/cuzk-prove-old"
                mkdir -p "$D/pce-$b"
                run "binab-$b-$i" "${TV[@]}" "$X" --c1 "$D/c1-32g.json" --param-cache "$D/p32" \
                    --pce-cache "$D/pce-$b" -o "$D/proof.bin" --timings
                run "verify-binab-$b-$i" "${V[@]}" "$D/proof.bin"
                grep -E "Elapsed" "$OUT/binab-$b-$i.log" | sed "s/^/binab-$b-$i /" >> "$OUT/summary.txt"
                rm -f "$D/proof.bin"
            done
        done
        exit 0
    fi
    if [ "$1" = full32-plain ]; then
        # As a user types it: no --pce-cache; the recording goes beside the parameters.
        P=(--c1 "$D/c1-32g.json" --param-cache "$D/p32" -o "$D/proof.bin" --timings)
        # PROVE_ARGS: flags for every run of this phase (e.g. "--pin-mapped on" under an
        # AB_ENV comparison).
        read -r -a XA <<< "${PROVE_ARGS:-}"
        P+=("${XA[@]}")
        V=("$B/cuzk-dev" verify-seal --meta "$D/c1-32g.meta.json" --param-cache "$D/p32" --proof)
        [ "${KEEP_PCE:-0}" = 1 ] || rm -f "$D/p32/"*.pce
        for i in ${FULL32_RUNS:-1 2 3}; do
            run "full32-plain-$i" "${TV[@]}" "$B/cuzk-prove" "${P[@]}" --json "$OUT/plain-$i.json"
            run "verify-plain-$i" "${V[@]}" "$D/proof.bin"
            grep -E "Elapsed" "$OUT/full32-plain-$i.log" | sed "s/^/plain $i /" >> "$OUT/summary.txt"
            rm -f "$D/proof.bin"
        done
        # An optimization's on/off medians: AB_FLAG (e.g. upload-ahead) alternated, AB_RUNS
        # pairs, each proof checked.
        if [ -n "${AB_FLAG:-}" ]; then
            for i in $(seq 1 "${AB_RUNS:-3}"); do
                for o in on off; do
                    run "full32-$AB_FLAG-$o-$i" "${TV[@]}" "$B/cuzk-prove" "${P[@]}" --$AB_FLAG $o \
                        --json "$OUT/ab-$o-$i.json"
                    run "verify-$AB_FLAG-$o-$i" "${V[@]}" "$D/proof.bin"
                    grep -E "Elapsed" "$OUT/full32-$AB_FLAG-$o-$i.log" | sed "s/^/$AB_FLAG=$o $i /" >> "$OUT/summary.txt"
                    rm -f "$D/proof.bin"
                done
            done
        fi
        # The same for a developers' environment knob: AB_ENV=NAME runs NAME=1 and NAME=0
        # (or NAME=$AB_ON and NAME=$AB_OFF; the logs still say 1 and 0).
        if [ -n "${AB_ENV:-}" ]; then
            for i in $(seq 1 "${AB_RUNS:-3}"); do
                for o in 1 0; do
                    if [ $o = 1 ]; then v=${AB_ON-1}; else v=${AB_OFF-0}; fi
                    run "full32-$AB_ENV-$o-$i" env "$AB_ENV=$v" "${TV[@]}" "$B/cuzk-prove" "${P[@]}" \
                        --json "$OUT/ab-env-$o-$i.json"
                    run "verify-$AB_ENV-$o-$i" "${V[@]}" "$D/proof.bin"
                    grep -E "Elapsed" "$OUT/full32-$AB_ENV-$o-$i.log" | sed "s/^/$AB_ENV=$o $i /" >> "$OUT/summary.txt"
                    rm -f "$D/proof.bin"
                done
            done
        fi
        if [ "${BUDGET48:-1}" = 1 ]; then
            run full32-budget48 "${TV[@]}" "$B/cuzk-prove" "${P[@]}" --memory-budget 48GiB --json "$OUT/budget48.json"
            run verify-budget48 "${V[@]}" "$D/proof.bin"
        fi
        ls -la "$D/p32" >> "$OUT/summary.txt"
        [ -n "${SUBGROUP_SAMPLE:-}" ] && run subgroup-32g "$B/cuzk-dev" subgroup-check \
            --params "$(ls "$D/p32/"*.params)" --sample "$SUBGROUP_SAMPLE"
        [ "${SMALL:-1}" = 1 ] || exit 0
        small_plain
        exit 0
    fi
    P=(--c1 "$D/c1-32g.json" --param-cache "$D/p32" --pce-cache "$D/pce" -o "$D/proof.bin" --timings)
    if [ "$1" = full32-native ]; then
        [ "${BENCH_WITNESS:-1}" = 1 ] &&
            run bench-witness-32g "$B/cuzk-dev" bench-witness --c1 "$D/c1-32g.json" --runs 3 \
                --json "$OUT/bench-witness-32g.json"
        [ -s "$D/pce/"*.pce ] 2>/dev/null ||
            run full32-record "${TV[@]}" "$B/cuzk-prove" "${P[@]}" --json "$OUT/record.json"
        for i in ${FULL32_RUNS:-1 2}; do
            for o in ${FULL32_MODES:-off on}; do
                run "full32-native-$o-$i" "${TV[@]}" "$B/cuzk-prove" "${P[@]}" --native-label $o \
                    --json "$OUT/native-$o-$i.json"
            done
        done
        ls -la "$D/proof.bin" >> "$OUT/summary.txt"
        exit 0
    fi
    run full32-record "${TV[@]}" "$B/cuzk-prove" "${P[@]}" --json "$OUT/record.json"
    for i in ${FULL32_RUNS:-1 2}; do
        for o in off on; do
            run "full32-$o-$i" "${TV[@]}" "$B/cuzk-prove" "${P[@]}" --overlap-synth $o \
                --json "$OUT/run-$o-$i.json"
        done
    done
    ls -la "$D/proof.bin" >> "$OUT/summary.txt"
    ;;
*) echo "usage: $0 pack|check|bench|fuzz|partition|affine|upload|e2e|supraseal|full32-gen|full32-wait|full32-run|full32-native|full32-plain|full32-binab" >&2; exit 2 ;;
esac
