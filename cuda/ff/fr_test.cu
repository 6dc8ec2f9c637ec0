// Element-wise Fr kernels, the entry point the Rust tests use to check the device's
// scalar-field arithmetic (the generic Montgomery code of mont.cuh with Fr's parameters,
// as the NTT uses it) against blstrs.
#include <cstdio>
#include <cuda_runtime.h>

#include "../util/error.cuh"
#include "fp.cuh"

using Fr = cuzk::FrMont;

__global__ void fr_ops_kernel(const Fr* a, const Fr* b, Fr* mul, Fr* add, Fr* sub, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr x = a[i], y = b[i];
    mul[i] = cuzk::mul(x, y);
    add[i] = cuzk::add(x, y);
    sub[i] = cuzk::sub(x, y);
}

// out holds 3n elements: a·b, a+b, a−b. Returns 0, or non-zero with `err` filled.
extern "C" int cuzk_fr_ops(const Fr* a, const Fr* b, Fr* out, size_t n, char* err, size_t errlen) {
    cuzk::DeviceBuffer<Fr> da, db, dout;
    CUZK_TRY(da.alloc(n, "a"));
    CUZK_TRY(db.alloc(n, "b"));
    CUZK_TRY(dout.alloc(3 * n, "out"));
    CUZK_CHECK(cudaMemcpy(da.ptr, a, n * sizeof(Fr), cudaMemcpyHostToDevice));
    CUZK_CHECK(cudaMemcpy(db.ptr, b, n * sizeof(Fr), cudaMemcpyHostToDevice));
    if (n > 0) {
        unsigned threads = 256;
        unsigned blocks = (unsigned)((n + threads - 1) / threads);
        fr_ops_kernel<<<blocks, threads>>>(da.ptr, db.ptr, dout.ptr, dout.ptr + n, dout.ptr + 2 * n, n);
        CUZK_CHECK(cudaGetLastError());
        CUZK_CHECK(cudaDeviceSynchronize());
    }
    CUZK_CHECK(cudaMemcpy(out, dout.ptr, 3 * n * sizeof(Fr), cudaMemcpyDeviceToHost));
    return 0;
}

// The lazy arithmetic of the NTT (mont.cuh): a reduced, b and c lazy (any value below 2r).
// out[i], out[n + i], out[2n + i], out[3n + i] = mul_lazy(a, b), add_lazy(b, c),
// sub_lazy(b, c), reduce_lazy(b), unreduced as computed, so the tests can check both the
// residues and the [0, 2r) bounds.
struct LazyOps {
    const Fr *a, *b, *c;
    Fr* out;
    size_t n;
    __host__ __device__ void operator()(size_t i) const {
        out[i] = cuzk::mul_lazy(a[i], b[i]);
        out[n + i] = cuzk::add_lazy(b[i], c[i]);
        out[2 * n + i] = cuzk::sub_lazy(b[i], c[i]);
        out[3 * n + i] = cuzk::reduce_lazy(b[i]);
    }
};

__global__ void fr_lazy_kernel(LazyOps ops) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < ops.n) ops(i);
}

// emulate ≠ 0: the same code on the host (the carry primitives' C++ definitions), as the
// NTT's emulation runs it in CI.
extern "C" int cuzk_fr_lazy_ops(const Fr* a, const Fr* b, const Fr* c, Fr* out, size_t n,
                                int emulate, char* err, size_t errlen) {
    if (emulate) {
        LazyOps ops{a, b, c, out, n};
        for (size_t i = 0; i < n; ++i) ops(i);
        return 0;
    }
    cuzk::DeviceBuffer<Fr> da, db, dc, dout;
    CUZK_TRY(da.alloc(n, "a"));
    CUZK_TRY(db.alloc(n, "b"));
    CUZK_TRY(dc.alloc(n, "c"));
    CUZK_TRY(dout.alloc(4 * n, "out"));
    CUZK_CHECK(cudaMemcpy(da.ptr, a, n * sizeof(Fr), cudaMemcpyHostToDevice));
    CUZK_CHECK(cudaMemcpy(db.ptr, b, n * sizeof(Fr), cudaMemcpyHostToDevice));
    CUZK_CHECK(cudaMemcpy(dc.ptr, c, n * sizeof(Fr), cudaMemcpyHostToDevice));
    if (n > 0) {
        unsigned threads = 256;
        unsigned blocks = (unsigned)((n + threads - 1) / threads);
        fr_lazy_kernel<<<blocks, threads>>>(LazyOps{da.ptr, db.ptr, dc.ptr, dout.ptr, n});
        CUZK_CHECK(cudaGetLastError());
        CUZK_CHECK(cudaDeviceSynchronize());
    }
    CUZK_CHECK(cudaMemcpy(out, dout.ptr, 4 * n * sizeof(Fr), cudaMemcpyDeviceToHost));
    return 0;
}
