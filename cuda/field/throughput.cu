// Field products per second on the GPU: the integer pipe (carry.cuh) against the FP64 pipe
// (f51.cuh), with 1, 2 or 4 independent product chains per thread (bench-gpu --rows field).
//
// Each thread runs `chains` chains x ← x·y (Fr: the NTT's lazy product, Fp: the fully
// reduced one). A chain's products depend on each other, so one chain per thread measures
// a product's latency as the kernels see it when nothing else is in flight; more chains
// measure throughput. "mixed" runs the even chains on the integer pipe and the odd ones
// on the FP64 pipe, side by side. Every run's final values are compared with the integer
// chains' (same starts, same y): a mismatch fails the call.
#include <algorithm>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "../error.cuh"
#include "fp.cuh"

namespace {

using cuzk::Mont;

enum Kind { INT = 0, F51 = 1, MIXED = 2 };

template <class P, bool FP64>
__device__ __forceinline__ Mont<P> product(const Mont<P>& x, const Mont<P>& y) {
    if constexpr (FP64) {
        const Mont<P> r = cuzk::f51::mul(x, y);  // x may be lazy
        if constexpr (P::N == 4) return r;        // Fr: lazy, as the NTT keeps it
        return cuzk::reduce_lazy(r);
    } else {
        if constexpr (P::N == 4) return cuzk::mul_lazy(y, x);
        return cuzk::mul_inline(x, y);  // inline: an out-of-line call would serialise the chains
    }
}

template <class P, int KIND, int CHAINS>
__global__ void __launch_bounds__(256) chains_kernel(const Mont<P>* xs, const Mont<P>* ys,
                                                     Mont<P>* out, int iters) {
    const size_t n = gridDim.x * (size_t)blockDim.x;
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const Mont<P> y = ys[i];
    Mont<P> x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = xs[(i + c) % n];  // distinct starts
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) {
            const bool fp64 = KIND == F51 || (KIND == MIXED && (c & 1));
            x[c] = fp64 ? product<P, true>(x[c], y) : product<P, false>(x[c], y);
        }
    }
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) out[c * n + i] = cuzk::reduce_lazy(x[c]);
}

template <class P, int KIND>
int launch(int chains, unsigned blocks, const Mont<P>* xs, const Mont<P>* ys, Mont<P>* out,
           int iters) {
    if (chains == 1) chains_kernel<P, KIND, 1><<<blocks, 256>>>(xs, ys, out, iters);
    if (chains == 2) chains_kernel<P, KIND, 2><<<blocks, 256>>>(xs, ys, out, iters);
    if (chains == 4) chains_kernel<P, KIND, 4><<<blocks, 256>>>(xs, ys, out, iters);
    return 0;
}

template <class P>
int throughput(int kind, int chains, int iters, int runs, double* ms, char* err,
               size_t errlen) {
    if (chains != 1 && chains != 2 && chains != 4) {
        snprintf(err, errlen, "field throughput: chains must be 1, 2 or 4 (got %d)", chains);
        return 1;
    }
    if (kind == MIXED && chains == 1) {
        snprintf(err, errlen, "field throughput: mixed needs 2 or 4 chains");
        return 1;
    }
    int dev = 0, sms = 0;
    CUZK_CHECK(cudaGetDevice(&dev));
    CUZK_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const unsigned blocks = (unsigned)sms * 8;
    const size_t n = (size_t)blocks * 256;
    // Values below p: random limbs, the top one reduced modulo p's top limb (splitmix64).
    uint64_t s = 0x9e3779b97f4a7c15ull;
    auto next = [&s]() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    };
    std::vector<Mont<P>> host(2 * n);
    for (auto& v : host) {
        for (int j = 0; j < P::N; ++j) v.l[j] = next();
        v.l[P::N - 1] %= P::p(P::N - 1);
    }
    cuzk::DeviceBuffer<Mont<P>> din, dout, dref;
    CUZK_TRY(din.alloc(2 * n, "inputs"));
    CUZK_TRY(dout.alloc(chains * n, "results"));
    CUZK_TRY(dref.alloc(chains * n, "reference results"));
    CUZK_CHECK(cudaMemcpy(din.ptr, host.data(), 2 * n * sizeof(Mont<P>), cudaMemcpyHostToDevice));
    const Mont<P>*xs = din.ptr, *ys = din.ptr + n;
    auto run = [&](int k, Mont<P>* out, int it) {
        if (k == INT) launch<P, INT>(chains, blocks, xs, ys, out, it);
        if (k == F51) launch<P, F51>(chains, blocks, xs, ys, out, it);
        if (k == MIXED) launch<P, MIXED>(chains, blocks, xs, ys, out, it);
        return cudaGetLastError();
    };
    cudaEvent_t e0, e1;
    CUZK_CHECK(cudaEventCreate(&e0));
    CUZK_CHECK(cudaEventCreate(&e1));
    std::vector<float> times;
    CUZK_CHECK(run(kind, dout.ptr, 4));  // warm-up
    CUZK_CHECK(cudaDeviceSynchronize());
    for (int r = 0; r < runs; ++r) {
        CUZK_CHECK(cudaEventRecord(e0));
        CUZK_CHECK(run(kind, dout.ptr, iters));
        CUZK_CHECK(cudaEventRecord(e1));
        CUZK_CHECK(cudaEventSynchronize(e1));
        float t = 0;
        CUZK_CHECK(cudaEventElapsedTime(&t, e0, e1));
        times.push_back(t);
    }
    for (int r = 0; r < runs; ++r) ms[r] = times[r];
    CUZK_CHECK(cudaEventDestroy(e0));
    CUZK_CHECK(cudaEventDestroy(e1));
    // The timed run's results against the integer pipe's.
    CUZK_CHECK(run(INT, dref.ptr, iters));
    CUZK_CHECK(cudaDeviceSynchronize());
    std::vector<Mont<P>> got(chains * n), want(chains * n);
    CUZK_CHECK(cudaMemcpy(got.data(), dout.ptr, chains * n * sizeof(Mont<P>), cudaMemcpyDeviceToHost));
    CUZK_CHECK(cudaMemcpy(want.data(), dref.ptr, chains * n * sizeof(Mont<P>), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < chains * n; ++i) bad += !cuzk::eq(got[i], want[i]);
    if (bad) {
        snprintf(err, errlen, "field throughput: %zu of %zu results differ from the integer pipe's",
                 bad, chains * n);
        return 1;
    }
    return 0;
}

}  // namespace

// field: 0 Fr, 1 Fp; kind: 0 integer pipe, 1 FP64 pipe, 2 both (even / odd chains).
// ms gets `runs` timings of one launch of (SMs · 8 · 256) threads × chains × iters products;
// *products is that count. Returns 0, or non-zero with `err` filled.
extern "C" int cuzk_field_throughput(int field, int kind, int chains, int iters, int runs,
                                     double* ms, uint64_t* products, char* err, size_t errlen) {
    int dev = 0, sms = 0;
    CUZK_CHECK(cudaGetDevice(&dev));
    CUZK_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    *products = (uint64_t)sms * 8 * 256 * chains * (uint64_t)iters;
    if (field == 0) return throughput<cuzk::FrParams>(kind, chains, iters, runs, ms, err, errlen);
    if (field == 1) return throughput<cuzk::FpParams>(kind, chains, iters, runs, ms, err, errlen);
    snprintf(err, errlen, "field throughput: field must be 0 (Fr) or 1 (Fp), got %d", field);
    return 1;
}
