// Element-wise Fr kernels, the entry point the Rust tests use to check the device's
// scalar-field arithmetic (the generic Montgomery code of mont.cuh with Fr's parameters,
// as the NTT uses it) against blstrs.
#include <cstdio>
#include <cuda_runtime.h>

#include "../error.cuh"
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
