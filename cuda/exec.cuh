// Two executors with one interface, so an algorithm written once against it runs either
// as CUDA kernels (DeviceExec) or on the host, one "thread" after another (HostExec).
// The host one exists for tests on machines without a GPU: it runs exactly the
// per-thread code the kernels run (functors whose operator() is __host__ __device__),
// with std::stable_sort and a plain loop standing in for CUB's sort, scan and max.
//
// Every method returns 0, or non-zero after writing "call: error (sizes)" into the
// caller's error buffer (err, errlen), in the manner of error.cuh.
#pragma once
#include <algorithm>
#include <exception>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <numeric>
#include <vector>

#include <cub/cub.cuh>

#include "error.cuh"

// Propagate a non-zero status from an executor call.
#define CUZK_RC(expr)              \
    do {                           \
        int rc_ = (expr);          \
        if (rc_ != 0) return rc_;  \
    } while (0)

namespace cuzk {

// Owning buffer for device memory: movable, not copyable, freed on scope exit or reset().
template <class T>
struct DevBuf {
    T* ptr = nullptr;
    size_t len = 0;
    DevBuf() = default;
    DevBuf(const DevBuf&) = delete;
    DevBuf& operator=(const DevBuf&) = delete;
    ~DevBuf() { reset(); }
    void reset() {
        if (ptr) cudaFree(ptr);
        ptr = nullptr;
        len = 0;
    }
    void swap(DevBuf& o) {
        std::swap(ptr, o.ptr);
        std::swap(len, o.len);
    }
};

template <class T>
struct HostBuf {
    T* ptr = nullptr;
    size_t len = 0;
    std::vector<T> v;
    void reset() {
        std::vector<T>().swap(v);
        ptr = nullptr;
        len = 0;
    }
    void swap(HostBuf& o) {
        std::swap(ptr, o.ptr);
        std::swap(len, o.len);
        v.swap(o.v);
    }
};

template <class Fn>
__global__ void for_each_kernel(size_t n, Fn fn) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) fn(i);
}

// The same with a register budget: at most HEAVY_THREADS per block and at least MIN_BLOCKS
// resident per SM, so ptxas keeps each thread within 65536 / (HEAVY_THREADS·MIN_BLOCKS)
// registers. For the curve-arithmetic kernels, whose long carry chains need several warps
// per scheduler to hide their latency; each functor names its MIN_BLOCKS (more warps
// against more spilling, chosen by measurement: docs/PERF.md).
constexpr unsigned HEAVY_THREADS = 128;
template <class Fn, int MIN_BLOCKS>
__global__ void __launch_bounds__(HEAVY_THREADS, MIN_BLOCKS) for_each_heavy(size_t n, Fn fn) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) fn(i);
}

// Block-cooperative work (e.g. NTT stages fused in shared memory): fn(block, ctx) runs
// on every thread of the block; ctx gives the thread's rank, the block's thread count, a
// barrier and the block's shared scratch. HostExec runs each block as one "thread"
// (rank 0 of 1), so the same code, loops included, serves both.
struct DeviceBlock {
    unsigned tid, threads;
    void* shared;
    __host__ __device__ void sync() const {
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
    }
};
template <class Fn>
__global__ void for_each_block(Fn fn) {
    extern __shared__ __align__(16) unsigned char cuzk_block_shared[];
    DeviceBlock ctx{threadIdx.x, blockDim.x, cuzk_block_shared};
    fn((size_t)blockIdx.x, ctx);
}

// Large host↔device copies page-lock their host buffer first (cudaHostRegister), so the
// DMA engine reads or writes it directly: pageable copies go through the driver's staging
// buffer at a fraction of the bus speed (≈ 5 GB/s on the H200 host for the quotient's
// inputs, docs/PERF.md). Process-wide, set from `--pin`; smaller copies are not worth it.
inline bool& pin_transfers() {
    static bool on = true;
    return on;
}
constexpr size_t PIN_MIN_BYTES = size_t(32) << 20;

// Registration of [p, p + bytes) for one copy, undone on scope exit; when the driver
// refuses (or the copy is small), the copy simply runs from pageable memory.
struct HostPin {
    void* p = nullptr;
    HostPin(const void* ptr, size_t bytes, bool read_only) {
        if (!pin_transfers() || bytes < PIN_MIN_BYTES) return;
        const unsigned flags =
            cudaHostRegisterPortable | (read_only ? cudaHostRegisterReadOnly : 0u);
        if (cudaHostRegister(const_cast<void*>(ptr), bytes, flags) == cudaSuccess)
            p = const_cast<void*>(ptr);
        else
            cudaGetLastError();  // not fatal
    }
    HostPin(const HostPin&) = delete;
    HostPin& operator=(const HostPin&) = delete;
    ~HostPin() {
        if (p) cudaHostUnregister(p);
    }
};

struct DeviceExec {
    template <class T>
    using Buf = DevBuf<T>;
    char* err;
    size_t errlen;
    // Page-lock large copies (pin_transfers()); off where the caller registered already.
    bool pin = true;

    template <class T>
    int alloc(Buf<T>& b, size_t n, const char* what) {
        b.reset();
        if (n == 0) return 0;
        cudaError_t e = cudaMalloc(&b.ptr, n * sizeof(T));
        if (e != cudaSuccess) {
            b.ptr = nullptr;
            size_t free_b = 0, total_b = 0;
            cudaGetLastError();  // clear the sticky-free allocation error
            cudaMemGetInfo(&free_b, &total_b);
            snprintf(err, errlen,
                     "cudaMalloc(%s: %zu elements x %zu bytes = %zu bytes) failed: %s "
                     "(device has %zu of %zu bytes free)",
                     what, n, sizeof(T), n * sizeof(T), cudaGetErrorString(e), free_b, total_b);
            return (int)e;
        }
        b.len = n;
        return 0;
    }

    // Blocks of `threads` for n threads, or an error when one grid cannot hold them.
    int grid(size_t n, unsigned threads, const char* what, unsigned* blocks) {
        const size_t b = (n + threads - 1) / threads;
        if (b > 0x7fffffffull) {
            snprintf(err, errlen, "kernel %s: %zu threads is too many for one grid", what, n);
            return -1;
        }
        *blocks = (unsigned)b;
        return 0;
    }

    // The launch just made, checked.
    int launched(const char* what, size_t n, unsigned threads) {
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) {
            snprintf(err, errlen, "kernel %s (%zu threads, %u per block) failed to launch: %s",
                     what, n, threads, cudaGetErrorString(e));
            return (int)e;
        }
        return 0;
    }

    // Runs fn(i) for i in [0, n), `threads` per block.
    template <class Fn>
    int launch(size_t n, const Fn& fn, const char* what, unsigned threads = 128) {
        unsigned blocks;
        if (n == 0) return 0;
        CUZK_RC(grid(n, threads, what, &blocks));
        for_each_kernel<<<blocks, threads>>>(n, fn);
        return launched(what, n, threads);
    }

    // launch() for the curve-arithmetic kernels (see for_each_heavy): Fn::MIN_BLOCKS.
    template <class Fn>
    int launch_heavy(size_t n, const Fn& fn, const char* what) {
        unsigned blocks;
        if (n == 0) return 0;
        CUZK_RC(grid(n, HEAVY_THREADS, what, &blocks));
        for_each_heavy<Fn, Fn::MIN_BLOCKS><<<blocks, HEAVY_THREADS>>>(n, fn);
        return launched(what, n, HEAVY_THREADS);
    }

    // Runs fn(block, ctx) on `blocks` blocks of `threads` threads with `shared` bytes of
    // shared memory each (over 48 KiB needs the kernel's opt-in, made here).
    template <class Fn>
    int launch_blocks(size_t blocks, unsigned threads, size_t shared, const Fn& fn,
                      const char* what) {
        if (blocks == 0) return 0;
        if (blocks > 0x7fffffffull) {
            snprintf(err, errlen, "kernel %s: %zu blocks is too many for one grid", what, blocks);
            return -1;
        }
        if (shared > 48 * 1024) {
            cudaError_t e = cudaFuncSetAttribute(for_each_block<Fn>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 (int)shared);
            if (e != cudaSuccess) {
                snprintf(err, errlen, "kernel %s: %zu bytes of shared memory per block: %s",
                         what, shared, cudaGetErrorString(e));
                return (int)e;
            }
        }
        for_each_block<<<(unsigned)blocks, threads, shared>>>(fn);
        return launched(what, blocks * threads, threads);
    }

    // Waits for the queued work and reports an asynchronous kernel failure.
    int sync(const char* after) {
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            snprintf(err, errlen, "%s failed: %s", after, cudaGetErrorString(e));
            return (int)e;
        }
        return 0;
    }

    template <class T>
    int upload(T* dst, const T* src, size_t n) {
        if (!n) return 0;
        HostPin locked(src, pin ? n * sizeof(T) : 0, true);
        CUZK_CHECK(cudaMemcpy(dst, src, n * sizeof(T), cudaMemcpyHostToDevice));
        return 0;
    }
    template <class T>
    int download(T* dst, const T* src, size_t n) {
        if (!n) return 0;
        HostPin locked(dst, pin ? n * sizeof(T) : 0, false);
        CUZK_CHECK(cudaMemcpy(dst, src, n * sizeof(T), cudaMemcpyDeviceToHost));
        return 0;
    }
    template <class T>
    int zero(T* p, size_t n) {
        if (n) CUZK_CHECK(cudaMemset(p, 0, n * sizeof(T)));
        return 0;
    }
    // Device to device.
    template <class T>
    int copy(T* dst, const T* src, size_t n) {
        if (n) CUZK_CHECK(cudaMemcpy(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice));
        return 0;
    }

    // Stable sort of (key, value) pairs by the low `bits` bits of the key.
    int sort_pairs(const uint32_t* kin, uint32_t* kout, const uint32_t* vin, uint32_t* vout,
                   uint32_t n, int bits) {
        if (n == 0) return 0;
        size_t tmp_bytes = 0;
        CUZK_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, kin, kout, vin, vout, n,
                                                   0, bits));
        Buf<char> tmp;
        CUZK_RC(alloc(tmp, tmp_bytes, "radix sort scratch"));
        CUZK_CHECK(cub::DeviceRadixSort::SortPairs(tmp.ptr, tmp_bytes, kin, kout, vin, vout, n,
                                                   0, bits));
        return 0;
    }

    int exclusive_sum(const uint32_t* in, uint32_t* out, uint32_t n) {
        if (n == 0) return 0;
        size_t tmp_bytes = 0;
        CUZK_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, tmp_bytes, in, out, n));
        Buf<char> tmp;
        CUZK_RC(alloc(tmp, tmp_bytes, "scan scratch"));
        CUZK_CHECK(cub::DeviceScan::ExclusiveSum(tmp.ptr, tmp_bytes, in, out, n));
        return 0;
    }

    // Largest of in[0..n), read back to the host (0 for n = 0).
    int max_u32(const uint32_t* in, uint32_t n, uint32_t* result) {
        *result = 0;
        if (n == 0) return 0;
        Buf<uint32_t> out;
        CUZK_RC(alloc(out, 1, "max result"));
        size_t tmp_bytes = 0;
        CUZK_CHECK(cub::DeviceReduce::Max(nullptr, tmp_bytes, in, out.ptr, n));
        Buf<char> tmp;
        CUZK_RC(alloc(tmp, tmp_bytes, "max scratch"));
        CUZK_CHECK(cub::DeviceReduce::Max(tmp.ptr, tmp_bytes, in, out.ptr, n));
        return download(result, out.ptr, 1);
    }
};

struct HostBlock {
    unsigned tid = 0, threads = 1;
    void* shared;
    __host__ __device__ void sync() const {}
};

struct HostExec {
    template <class T>
    using Buf = HostBuf<T>;
    char* err;
    size_t errlen;

    template <class T>
    int alloc(Buf<T>& b, size_t n, const char* what) {
        b.reset();
        try {
            b.v.resize(n);
        } catch (const std::bad_alloc&) {
            snprintf(err, errlen, "host allocation (%s: %zu bytes) failed", what, n * sizeof(T));
            return -1;
        }
        b.ptr = n ? b.v.data() : nullptr;
        b.len = n;
        return 0;
    }
    template <class Fn>
    int launch(size_t n, const Fn& fn, const char*, unsigned = 0) {
        for (size_t i = 0; i < n; ++i) fn(i);
        return 0;
    }
    template <class Fn>
    int launch_heavy(size_t n, const Fn& fn, const char* what) {
        return launch(n, fn, what);
    }
    template <class Fn>
    int launch_blocks(size_t blocks, unsigned, size_t shared, const Fn& fn, const char* what) {
        std::vector<uint64_t> scratch;
        try {
            scratch.resize((shared + 7) / 8);
        } catch (const std::bad_alloc&) {
            snprintf(err, errlen, "host allocation (%s: %zu bytes) failed", what, shared);
            return -1;
        }
        HostBlock ctx;
        ctx.shared = scratch.data();
        for (size_t b = 0; b < blocks; ++b) fn(b, ctx);
        return 0;
    }
    int sync(const char*) { return 0; }
    template <class T>
    int upload(T* dst, const T* src, size_t n) {
        if (n) memcpy(dst, src, n * sizeof(T));
        return 0;
    }
    template <class T>
    int download(T* dst, const T* src, size_t n) {
        return upload(dst, src, n);
    }
    template <class T>
    int zero(T* p, size_t n) {
        if (n) memset(p, 0, n * sizeof(T));
        return 0;
    }
    template <class T>
    int copy(T* dst, const T* src, size_t n) {
        return upload(dst, src, n);
    }
    int sort_pairs(const uint32_t* kin, uint32_t* kout, const uint32_t* vin, uint32_t* vout,
                   uint32_t n, int bits) {
        const uint32_t mask = bits >= 32 ? ~0u : ((1u << bits) - 1);
        std::vector<uint32_t> idx(n);
        std::iota(idx.begin(), idx.end(), 0u);
        std::stable_sort(idx.begin(), idx.end(),
                         [&](uint32_t a, uint32_t b) { return (kin[a] & mask) < (kin[b] & mask); });
        for (uint32_t i = 0; i < n; ++i) {
            kout[i] = kin[idx[i]];
            vout[i] = vin[idx[i]];
        }
        return 0;
    }
    int exclusive_sum(const uint32_t* in, uint32_t* out, uint32_t n) {
        uint32_t acc = 0;
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t x = in[i];
            out[i] = acc;
            acc += x;
        }
        return 0;
    }
    int max_u32(const uint32_t* in, uint32_t n, uint32_t* result) {
        *result = 0;
        for (uint32_t i = 0; i < n; ++i) *result = std::max(*result, in[i]);
        return 0;
    }
};

// Runs fn(executor) on the GPU, or on the host when `emulate`, as an extern "C" entry
// does: a C++ exception (e.g. std::bad_alloc) becomes an error message prefixed `what`,
// never an unwind into Rust.
template <class Fn>
int with_exec(bool emulate, char* err, size_t errlen, const char* what, Fn fn) {
    try {
        if (emulate) {
            HostExec ex{err, errlen};
            return fn(ex);
        }
        DeviceExec ex{err, errlen};
        return fn(ex);
    } catch (const std::exception& e) {
        snprintf(err, errlen, "%s: %s", what, e.what());
        return -1;
    }
}

}  // namespace cuzk
