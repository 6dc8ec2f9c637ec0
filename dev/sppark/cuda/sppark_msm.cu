// sppark's Pippenger MSM instantiated for BLS12-381 G1 and G2, behind a small C ABI for
// the sppark-vs-cuzk bench (src/sppark.rs). Also a few CUDA runtime helpers the bench
// needs (device name, pinning host memory), each returning 0 or a CUDA error code.
//
// Layouts (checked at run time against blstrs through sppark_bench_sizes):
//  - points: affine (x, y), coordinates in Montgomery form, as blst_p1_affine /
//    blst_p2_affine;
//  - scalars: canonical (non-Montgomery) little-endian 256-bit integers (mont = false);
//  - result: Jacobian (X, Y, Z) in Montgomery form, as blst_p1 / blst_p2.

#include <cuda_runtime.h>

#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

// pippenger.cuh instantiates its kernels for these four names.
typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>

typedef jacobian_t<fp2_t> g2_point_t;
typedef xyzz_t<fp2_t> g2_bucket_t;
typedef g2_bucket_t::affine_t g2_affine_t;

extern "C" RustError::by_value sppark_bench_msm_g1(point_t* out, const affine_t* points,
                                                   size_t n, const scalar_t* scalars,
                                                   size_t point_size)
{
    return mult_pippenger<bucket_t>(out, points, n, scalars, false, point_size);
}

extern "C" RustError::by_value sppark_bench_msm_g2(g2_point_t* out,
                                                   const g2_affine_t* points, size_t n,
                                                   const scalar_t* scalars,
                                                   size_t point_size)
{
    return mult_pippenger<g2_bucket_t>(out, points, n, scalars, false, point_size);
}

// Host sizes of the types above, for the Rust side to hold against blstrs:
// [G1 affine, G1 Jacobian, G2 affine, G2 Jacobian, scalar].
extern "C" void sppark_bench_sizes(size_t out[5])
{
    out[0] = sizeof(affine_t);
    out[1] = sizeof(point_t);
    out[2] = sizeof(g2_affine_t);
    out[3] = sizeof(g2_point_t);
    out[4] = sizeof(scalar_t);
}

extern "C" int sppark_bench_device_count(int* count)
{
    *count = 0;
    cudaError_t e = cudaGetDeviceCount(count);
    if (e != cudaSuccess) {
        *count = 0;
        (void)cudaGetLastError();
    }
    return (int)e;
}

extern "C" int sppark_bench_device_name(char* name, size_t len)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    cudaDeviceProp prop;
    if (e == cudaSuccess)
        e = cudaGetDeviceProperties(&prop, dev);
    if (e != cudaSuccess)
        return (int)e;
    if (len > 0) {
        strncpy(name, prop.name, len - 1);
        name[len - 1] = '\0';
    }
    return 0;
}

extern "C" int sppark_bench_pin(void* ptr, size_t bytes)
{
    return (int)cudaHostRegister(ptr, bytes, cudaHostRegisterDefault);
}

extern "C" int sppark_bench_unpin(void* ptr)
{
    return (int)cudaHostUnregister(ptr);
}

extern "C" const char* sppark_bench_error_string(int code)
{
    return cudaGetErrorString((cudaError_t)code);
}
