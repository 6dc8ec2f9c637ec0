// sppark's NTT over the BLS12-381 scalar field behind a small C ABI for the sppark-vs-cuzk
// bench (src/sppark.rs): natural order in and out (sppark's order NN: a bit-reversal
// permutation, then its Cooley-Tukey kernels), forward or inverse (the inverse includes
// the 1/n factor, applied by sppark's last CT stage), standard (not coset) domain.
//
// Layout: fr_t on the host is 4 little-endian 64-bit limbs in Montgomery form, that of
// blst_fr and so of blstrs::Scalar (size checked through sppark_bench_ntt_fr_size).

#include <cuda_runtime.h>

#include <ff/bls12-381.hpp>
#include <ntt/ntt.cuh>

namespace {

// One CUDA event with timing, destroyed with the scope.
struct timing_event {
    cudaEvent_t ev = nullptr;
    timing_event() { CUDA_OK(cudaEventCreate(&ev)); }
    ~timing_event()
    {
        if (ev != nullptr)
            (void)cudaEventDestroy(ev);
    }
    timing_event(const timing_event&) = delete;
    timing_event& operator=(const timing_event&) = delete;
};

// n field elements of device memory (cudaMalloc), freed with the scope. cuzk-prove keeps
// the memory it frees in the device's default pool; when the allocation does not fit,
// that pool is trimmed and the allocation tried once more (as cuzk-prove itself does).
struct device_buffer {
    fr_t* ptr = nullptr;
    explicit device_buffer(size_t n)
    {
        const size_t bytes = n * sizeof(fr_t);
        cudaError_t e = cudaMalloc(&ptr, bytes);
        if (e == cudaErrorMemoryAllocation) {
            ptr = nullptr;
            (void)cudaGetLastError();
            int dev = 0;
            cudaMemPool_t pool;
            if (cudaGetDevice(&dev) == cudaSuccess &&
                cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess &&
                cudaDeviceSynchronize() == cudaSuccess)
                (void)cudaMemPoolTrimTo(pool, 0);
            (void)cudaGetLastError();
            e = cudaMalloc(&ptr, bytes);
        }
        if (e != cudaSuccess) {
            ptr = nullptr;
            (void)cudaGetLastError();
        }
        CUDA_OK(e);
    }
    ~device_buffer()
    {
        if (ptr != nullptr)
            (void)cudaFree(ptr);  // synchronizes with the device first
    }
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;
};

}  // namespace

// In-place NTT of host_inout (2^lg elements, natural order in and out) on sppark's GPU 0:
//  - copies the input to a device buffer and runs the transform once (warm-up; the first
//    call also has sppark build its twiddle tables), and copies that result back into
//    host_inout, for the caller to check;
//  - then runs it `runs` more times in place on the device buffer (on whatever the
//    previous run left there; the kernels' time does not depend on the values), each
//    timed by CUDA events recorded on the stream just before the first and after the last
//    kernel, and writes each run's milliseconds to ms_each[0 .. runs).
// Transfers are outside every timed interval. Returns code 0, or non-zero with CUDA's
// message (sppark's CUDA_OK: "<call>@<file>:<line> failed: <reason>"); the device buffer
// and events are freed on every path.
extern "C" RustError::by_value sppark_bench_ntt(fr_t* host_inout, uint32_t lg, int inverse,
                                                int runs, float* ms_each)
{
    if (lg == 0 || lg > MAX_LG_DOMAIN_SIZE)
        return RustError{cudaErrorInvalidValue,
                         "sppark_bench_ntt: lg must be 1 to MAX_LG_DOMAIN_SIZE"};
    if (host_inout == nullptr || runs < 0 || (runs > 0 && ms_each == nullptr))
        return RustError{cudaErrorInvalidValue, "sppark_bench_ntt: bad arguments"};

    const auto direction = inverse ? NTT::Direction::inverse : NTT::Direction::forward;
    const size_t n = (size_t)1 << lg;

    // sppark's launches check cudaGetLastError(); a stale error from earlier work would be
    // reported as theirs.
    (void)cudaGetLastError();

    try {
        const gpu_t& gpu = select_gpu(0);
        stream_t& stream = gpu;  // the GPU's own stream (as NTT::Base uses)

        device_buffer d_inout{n};
        timing_event start, stop;

        CUDA_OK(cudaMemcpyAsync(d_inout.ptr, host_inout, n * sizeof(fr_t),
                                cudaMemcpyHostToDevice, stream));
        NTT::Base_dev_ptr(stream, d_inout.ptr, lg, NTT::InputOutputOrder::NN, direction,
                          NTT::Type::standard);
        CUDA_OK(cudaMemcpyAsync(host_inout, d_inout.ptr, n * sizeof(fr_t),
                                cudaMemcpyDeviceToHost, stream));
        stream.sync();

        for (int r = 0; r < runs; r++) {
            CUDA_OK(cudaEventRecord(start.ev, stream));
            NTT::Base_dev_ptr(stream, d_inout.ptr, lg, NTT::InputOutputOrder::NN,
                              direction, NTT::Type::standard);
            CUDA_OK(cudaEventRecord(stop.ev, stream));
            CUDA_OK(cudaEventSynchronize(stop.ev));
            CUDA_OK(cudaEventElapsedTime(&ms_each[r], start.ev, stop.ev));
        }
        stream.sync();
    } catch (const cuda_error& e) {
        // Leaving the try block freed the buffer (cudaFree waits for the device) and the
        // events; the stream belongs to sppark's gpu_t and stays.
        (void)cudaGetLastError();
#ifdef TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE
        return RustError{e.code(), e.what()};
#else
        return RustError{e.code()};
#endif
    } catch (const std::exception& e) {
        return RustError{-1, e.what()};
    }
    return RustError{cudaSuccess};
}

// sppark's constants for a 2^lg domain as its tables hold them (Montgomery form), for the
// Rust side to hold against its own: out[0] the forward root of unity, out[1] the inverse
// one, out[2] 1/2^lg. Host memory only; no CUDA call. Returns 0, or -1 for lg beyond
// MAX_LG_DOMAIN_SIZE.
extern "C" int sppark_bench_ntt_constants(uint32_t lg, fr_t out[3])
{
    if (lg > MAX_LG_DOMAIN_SIZE)
        return -1;
    out[0] = forward_roots_of_unity[lg];
    out[1] = inverse_roots_of_unity[lg];
    out[2] = domain_size_inverse[lg];
    return 0;
}

// sizeof(fr_t) on the host, to hold against blstrs::Scalar.
extern "C" size_t sppark_bench_ntt_fr_size(void) { return sizeof(fr_t); }

// sppark's largest NTT: 2^MAX_LG_DOMAIN_SIZE.
extern "C" uint32_t sppark_bench_ntt_max_lg(void) { return MAX_LG_DOMAIN_SIZE; }
