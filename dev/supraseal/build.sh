#!/usr/bin/env bash
# Reproducible build of supraseal-c2-bench on a machine without a GPU or NVIDIA driver:
#   1. a link-time libcuda.so.1 stub (stub-libcuda.sh) for the crates that link -lcuda,
#   2. cargo build --release with nvcc from the CUDA 13.0 pip wheels, sm_90 SASS added to
#      every nvcc call (NVCC_APPEND_FLAGS) and the CUDA runtime linked statically,
#   3. a check of the binary's shared-library needs and a tar.gz to copy to the GPU host.
#
# env: CUDA_HOME   toolkit root holding bin/nvcc, include/, lib/ (default: the pip wheels)
#      CUDA_ARCHS  SASS targets added to every nvcc call, comma separated (default: 90)
#      JOBS        cargo -j (default: 2)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

C=${CUDA_HOME:-/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13}
[[ -x $C/bin/nvcc ]] || { echo "build.sh: no nvcc at $C/bin/nvcc (set CUDA_HOME)" >&2; exit 1; }
[[ -x $C/nvvm/bin/cicc ]] || { echo "build.sh: no $C/nvvm/bin/cicc (pip install nvidia-nvvm==13.0.*)" >&2; exit 1; }
[[ -e $C/lib64 ]] || ln -s lib "$C/lib64"

export NVCC=$C/bin/nvcc
export PATH=$C/bin:$PATH
export CUDA_HOME=$C

gencode=""
IFS=',' read -ra archs <<<"${CUDA_ARCHS:-90}"
for a in "${archs[@]}"; do
    [[ $a =~ ^[0-9]+$ ]] || { echo "build.sh: bad CUDA_ARCHS entry '$a'" >&2; exit 1; }
    gencode+=" -gencode=arch=compute_${a},code=sm_${a}"
done
# supraseal-c2 and sppark pick their own -gencode list (sm_80 SASS + compute_80 PTX, sm_75,
# compute_100 PTX, sm_120; no sm_90): nvcc appends these to every call, so the H200 runs
# native sm_90 code instead of JIT-compiling the compute_80 PTX.
export NVCC_APPEND_FLAGS="${gencode# }"
# ec-gpu-gen (bellperson's and neptune's own CUDA kernels, unused by the supraseal C2
# prover but built because cuda-supraseal turns on the crates' `cuda` features): one arch
# instead of the default sm_86/80/75 keeps the build shorter and the binary smaller.
export EC_GPU_CUDA_NVCC_ARGS="--optimize=6 --threads=0 --fatbin --gpu-architecture=sm_${archs[0]}"

./stub-libcuda.sh "$here/stub"
export SUPRASEAL_BENCH_LIBCUDA_STUB=$here/stub
# Build scripts link -lcuda too (bellperson's links ec-gpu-gen -> rust-gpu-tools ->
# cuda-driver-sys), so the stub goes on the linker's search path for every link, not only
# the final one that build.rs sets up. Plain -L: nothing records this path in a binary.
export LIBRARY_PATH=$here/stub${LIBRARY_PATH:+:$LIBRARY_PATH}

start=$(date +%s)
nice -n 10 cargo build --release --locked -j "${JOBS:-2}"
echo "build.sh: cargo build took $(( $(date +%s) - start )) s"

bin=target/release/supraseal-c2-bench
strip "$bin"
echo "build.sh: NEEDED by $bin:"
readelf -d "$bin" | awk '/NEEDED/ { print "  " $NF }'
if readelf -d "$bin" | grep -qE 'RPATH|RUNPATH'; then
    echo "build.sh: $bin has an rpath/runpath; it must not" >&2
    exit 1
fi
tar -C target/release -czf supraseal-c2-bench.tar.gz supraseal-c2-bench
echo "build.sh: $(stat -c %s "$bin") bytes stripped, $(stat -c %s supraseal-c2-bench.tar.gz) bytes as supraseal-c2-bench.tar.gz"
