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
#include <cerrno>
#include <chrono>
#include <exception>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>
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

// Device memory comes from the device's stream-ordered pool (cudaMallocAsync on the
// legacy default stream), which keeps freed memory for the next allocation: an MSM makes
// some thirty allocations of up to gigabytes, and cudaMalloc/cudaFree map and unmap them
// each time, cudaFree also waiting for the whole device (which would serialise the
// overlapped point upload below). The pool is told to keep everything (release threshold
// unlimited) and is trimmed only when an allocation fails.
inline cudaError_t pool_alloc(void** p, size_t bytes) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    static bool configured[64] = {};
    cudaMemPool_t pool;
    e = cudaDeviceGetDefaultMemPool(&pool, dev);
    if (e != cudaSuccess) return e;
    if (dev < 64 && !configured[dev]) {
        uint64_t keep = ~0ull;
        e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        if (e != cudaSuccess) return e;
        configured[dev] = true;
    }
    e = cudaMallocAsync(p, bytes, 0);
    if (e == cudaErrorMemoryAllocation) {
        // Memory the pool holds for reuse goes back to the device, then one more try.
        cudaGetLastError();
        cudaDeviceSynchronize();
        cudaMemPoolTrimTo(pool, 0);
        e = cudaMallocAsync(p, bytes, 0);
    }
    return e;
}

// Owning buffer for device memory: movable, not copyable, freed on scope exit or reset()
// (in stream order: work already queued that reads it still sees it).
template <class T>
struct DevBuf {
    T* ptr = nullptr;
    size_t len = 0;
    DevBuf() = default;
    DevBuf(const DevBuf&) = delete;
    DevBuf& operator=(const DevBuf&) = delete;
    ~DevBuf() { reset(); }
    void reset() {
        if (ptr) cudaFreeAsync(ptr, 0);
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

// dst[i] = src[i] for the i in [lo, hi) with f1[i] | f2[i], elements of W 16-byte words;
// src is page-locked host memory read over the bus (zero copy). A warp takes 32
// consecutive elements and reads their words lane-interleaved, so each load instruction
// covers 512 contiguous bytes; the words of unflagged elements are never requested.
// (H200, 2^27 G1 points with 49 % flagged: 136 ms, against 233 ms for one cudaMemcpy of
// them all; 251 ms with all flagged. Thread-per-element loads: 155 ms.)
template <unsigned W>
__global__ void gather_flagged_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                      const uint32_t* __restrict__ f1,
                                      const uint32_t* __restrict__ f2, size_t lo, size_t hi) {
    const unsigned lane = threadIdx.x & 31;
    const size_t stride = (size_t)gridDim.x * blockDim.x;  // elements per round, all warps
    for (size_t e0 = lo + (blockIdx.x * (size_t)blockDim.x + threadIdx.x - lane); e0 < hi;
         e0 += stride) {
        const size_t e = e0 + lane;
        const uint32_t want = __ballot_sync(~0u, e < hi && (f1[e] | f2[e]));
        if (!want) continue;
        uint4 v[W];
#pragma unroll
        for (unsigned k = 0; k < W; ++k) {
            const unsigned u = lane + 32 * k;
            if ((want >> (u / W)) & 1) v[k] = src[e0 * W + u];
        }
#pragma unroll
        for (unsigned k = 0; k < W; ++k) {
            const unsigned u = lane + 32 * k;
            if ((want >> (u / W)) & 1) dst[e0 * W + u] = v[k];
        }
    }
}

// Large host↔device copies page-lock their host buffer first (cudaHostRegister, `--pin
// on`), so the DMA engine reads or writes it directly, or (`--pin off`) uploads go
// through our own pinned staging buffers (Staging, below): pageable copies go through the
// driver's staging buffer at a fraction of the bus speed (≈ 5 GB/s on the H200 host for
// the quotient's inputs, docs/PERF.md). Process-wide; smaller copies are not worth it.
inline bool& pin_transfers() {
    static bool on = false;
    return on;
}
constexpr size_t PIN_MIN_BYTES = size_t(32) << 20;

// Whether host memory is page-locked already (cudaHostAlloc'd or registered by the
// caller): then copies go straight from it, neither staged nor registered again. *a gets
// its attributes (the device's address of it among them).
inline bool host_locked(const void* p, cudaPointerAttributes* a) {
    if (cudaPointerGetAttributes(a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a->type == cudaMemoryTypeHost;
}
inline bool host_locked(const void* p) {
    cudaPointerAttributes a;
    return host_locked(p, &a);
}

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

// A host-to-device copy running on its own stream while the default stream computes
// (the MSM's points, uploaded while the scalars are split, recoded and sorted), in
// batches: ends[b] elements are on the device once batch b's event has fired, so work
// on the first points can start while the rest is still in flight. A worker thread
// issues the copies (and fills the staging buffers, for pageable memory): issued from
// the caller's thread, cudaMemcpyAsync of gigabytes held it until the copy was done
// (docs/PERF.md, session 7), and no kernel could be queued meanwhile. wait() waits
// until a batch's event is recorded, then makes the default stream wait for it; the
// destructor joins the worker and waits for the copies, then unpins.
struct DevicePending {
    cudaStream_t stream = nullptr;
    std::vector<cudaEvent_t> done;
    std::vector<size_t> ends;
    HostPin* pin = nullptr;
    std::thread worker;
    std::mutex m;
    std::condition_variable cv;
    size_t recorded = 0;  // batches whose event the worker has recorded
    bool failed = false;
    char msg[256] = {};
    // What a failure's message starts with ("point upload: …"), or null: the caller's
    // own words wrap the worker's message.
    const char* what = "point upload";
    DevicePending() = default;
    DevicePending(const DevicePending&) = delete;
    DevicePending& operator=(const DevicePending&) = delete;
    ~DevicePending() {
        if (worker.joinable()) worker.join();
        for (cudaEvent_t e : done) {
            cudaEventSynchronize(e);
            cudaEventDestroy(e);
        }
        if (stream) cudaStreamDestroy(stream);
        delete pin;
    }
};

// A measuring knob (CUZK_*): the integer in [lo, hi] that the environment variable
// holds, or fallback when it is unset or empty. Any other value is ignored with a warning
// on stderr rather than read as strtol's 0 (CUZK_MSM_SLICE=abc would otherwise select
// the per-bucket segments).
inline long env_long(const char* name, long lo, long hi, long fallback) {
    const char* v = getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (errno == 0 && *end == '\0' && x >= lo && x <= hi) return x;
    fprintf(stderr, "cuzk-prove: warning: %s=%s ignored (not an integer in [%ld, %ld])\n", name,
            v, lo, hi);
    return fallback;
}

// CUZK_TRACE=1 (any value but 0): DeviceExec::mark records a timing event on the
// default stream, and trace() prints every mark's device time since the first to stderr
// (with the arrival of a pending upload's batches), e.g. to see what an upload overlaps.
// Off, marks cost nothing; on, they add no synchronisation but trace()'s own.
inline bool trace_on() {
    static const bool on = [] {
        const char* v = getenv("CUZK_TRACE");
        return v && *v && strcmp(v, "0") != 0;
    }();
    return on;
}

struct DeviceMarks {
    std::vector<std::pair<const char*, cudaEvent_t>> at;
    DeviceMarks() = default;
    DeviceMarks(const DeviceMarks&) = delete;
    DeviceMarks& operator=(const DeviceMarks&) = delete;
    ~DeviceMarks() {
        for (auto& m : at) cudaEventDestroy(m.second);
    }
};

// Host → device copies of pageable memory without --pin: through two page-locked
// staging buffers, host threads filling one chunk while the DMA engine drains the other
// (registering gigabytes with cudaHostRegister costs about as much as the copy; a
// pageable cudaMemcpy stages through the driver's one small buffer, at ≈ 5 GB/s on the
// H200 host). Process-wide buffers, allocated on first use, one copy at a time.
struct Staging {
    static constexpr size_t CHUNK = size_t(64) << 20;
    void* buf[2] = {nullptr, nullptr};
    std::mutex lock;
    static Staging& get() {
        static Staging s;
        return s;
    }
};

// memcpy by up to `threads` host threads (large copies are bound by one core's bandwidth).
inline void parallel_copy(void* dst, const void* src, size_t bytes, unsigned threads) {
    const size_t min_part = size_t(4) << 20;
    unsigned t = (unsigned)std::min<size_t>(threads, bytes / min_part);
    if (t <= 1) {
        memcpy(dst, src, bytes);
        return;
    }
    const size_t part = (bytes / t + 4095) & ~size_t(4095);
    std::vector<std::thread> pool;
    for (unsigned k = 1; k < t && k * part < bytes; ++k) {
        const size_t off = k * part, len = std::min(part, bytes - off);
        pool.emplace_back([=] { memcpy((char*)dst + off, (const char*)src + off, len); });
    }
    memcpy(dst, src, std::min(part, bytes));
    for (auto& th : pool) th.join();
}

// Copies through the staging buffers on `stream` (host threads fill one buffer while
// the DMA drains the other); successive copy() calls keep alternating. The caller holds
// Staging::lock until the stream has drained (the buffers are shared).
struct StagedCopy {
    cudaStream_t stream;
    char* err;
    size_t errlen;
    cudaEvent_t drained[2] = {nullptr, nullptr};
    size_t k = 0;
    const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency() / 2));
    StagedCopy(cudaStream_t s, char* e, size_t l) : stream(s), err(e), errlen(l) {}
    StagedCopy(const StagedCopy&) = delete;
    StagedCopy& operator=(const StagedCopy&) = delete;
    ~StagedCopy() {
        for (cudaEvent_t e : drained)
            if (e) cudaEventDestroy(e);
    }
    int init() {
        Staging& st = Staging::get();
        for (void*& b : st.buf)
            if (!b) CUZK_CHECK(cudaHostAlloc(&b, Staging::CHUNK, cudaHostAllocPortable));
        for (cudaEvent_t& e : drained)
            CUZK_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        return 0;
    }
    int copy(void* dst, const void* src, size_t bytes) {
        Staging& st = Staging::get();
        for (size_t off = 0; off < bytes; off += Staging::CHUNK, ++k) {
            const size_t len = std::min(Staging::CHUNK, bytes - off);
            const int b = (int)(k & 1);
            if (k >= 2) CUZK_CHECK(cudaEventSynchronize(drained[b]));
            parallel_copy(st.buf[b], (const char*)src + off, len, threads);
            CUZK_CHECK(cudaMemcpyAsync((char*)dst + off, st.buf[b], len, cudaMemcpyHostToDevice,
                                       stream));
            CUZK_CHECK(cudaEventRecord(drained[b], stream));
        }
        return 0;
    }
};

// Device time between two points of the default stream, from CUDA events (no host
// synchronisation in between); the host emulation's Timer reads the clock instead.
struct DeviceTimer {
    cudaEvent_t start = nullptr, stop = nullptr;
    DeviceTimer() = default;
    DeviceTimer(const DeviceTimer&) = delete;
    DeviceTimer& operator=(const DeviceTimer&) = delete;
    ~DeviceTimer() {
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
    }
};

struct DeviceExec {
    template <class T>
    using Buf = DevBuf<T>;
    using Pending = DevicePending;
    using Timer = DeviceTimer;
    char* err;
    size_t errlen;
    DeviceExec(char* e, size_t l) : err(e), errlen(l) {}
    // Large copies page-locked or staged; off where the caller registered already.
    bool pin = true;
    // Large uploads staged rather than page-locked (--pin off).
    bool stage = !pin_transfers();
    DeviceMarks marks;

    int mark(const char* what) {
        if (!trace_on()) return 0;
        cudaEvent_t e;
        CUZK_CHECK(cudaEventCreate(&e));
        marks.at.push_back({what, e});
        CUZK_CHECK(cudaEventRecord(e, 0));
        return 0;
    }
    // Prints the marks since the first (and when each batch of `p` arrived), then forgets
    // them.
    int trace(const char* title, Pending& p) {
        if (marks.at.empty()) return 0;
        {
            // A batch no kernel waited for may not be recorded yet.
            std::unique_lock<std::mutex> lk(p.m);
            p.cv.wait(
                lk, [&] { return p.recorded == p.done.size() || p.failed || !p.worker.joinable(); });
        }
        CUZK_CHECK(cudaEventSynchronize(marks.at.back().second));
        for (size_t b = 0; b < p.recorded; ++b) CUZK_CHECK(cudaEventSynchronize(p.done[b]));
        const cudaEvent_t t0 = marks.at.front().second;
        for (auto& m : marks.at) {
            float ms = 0;
            CUZK_CHECK(cudaEventElapsedTime(&ms, t0, m.second));
            fprintf(stderr, "cuzk trace %s: %9.2f ms  %s\n", title, ms, m.first);
        }
        for (size_t b = 0; b < p.recorded; ++b) {
            float ms = 0;
            CUZK_CHECK(cudaEventElapsedTime(&ms, t0, p.done[b]));
            fprintf(stderr, "cuzk trace %s: %9.2f ms  (upload batch %zu of %zu arrived)\n",
                    title, ms, b + 1, p.done.size());
        }
        for (auto& m : marks.at) cudaEventDestroy(m.second);
        marks.at.clear();
        return 0;
    }

    template <class T>
    int alloc(Buf<T>& b, size_t n, const char* what) {
        b.reset();
        if (n == 0) return 0;
        cudaError_t e = pool_alloc((void**)&b.ptr, n * sizeof(T));
        if (e != cudaSuccess) {
            b.ptr = nullptr;
            size_t free_b = 0, total_b = 0;
            cudaGetLastError();  // clear the sticky-free allocation error
            cudaMemGetInfo(&free_b, &total_b);
            snprintf(err, errlen,
                     "cudaMallocAsync(%s: %zu elements x %zu bytes = %zu bytes) failed: %s "
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

    // Threads of launch_heavy's kernels at min_blocks blocks an SM that the GPU holds at
    // once (0 when the device cannot be queried; the launch then reports the error).
    size_t resident_threads(int min_blocks) {
        int dev = 0, sms = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return 0;
        return (size_t)sms * (size_t)min_blocks * HEAVY_THREADS;
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
    int start(Timer& t) {
        if (!t.start) CUZK_CHECK(cudaEventCreate(&t.start));
        if (!t.stop) CUZK_CHECK(cudaEventCreate(&t.stop));
        CUZK_CHECK(cudaEventRecord(t.start, 0));
        return 0;
    }
    int stop(Timer& t) {
        CUZK_CHECK(cudaEventRecord(t.stop, 0));
        return 0;
    }
    // Milliseconds from start to stop, once the stream has passed stop.
    int elapsed(Timer& t, float* ms) {
        CUZK_CHECK(cudaEventSynchronize(t.stop));
        CUZK_CHECK(cudaEventElapsedTime(ms, t.start, t.stop));
        return 0;
    }
    // sync() for the default stream only: a pending copy (upload_async) keeps running.
    int sync_stream(const char* after) {
        cudaError_t e = cudaStreamSynchronize(0);
        if (e != cudaSuccess) {
            snprintf(err, errlen, "%s failed: %s", after, cudaGetErrorString(e));
            return (int)e;
        }
        return 0;
    }

    // Host → device, returning when the data is on the device. Large copies are
    // page-locked (--pin) or staged (see Staging); `pin` off also skips staging, for
    // callers whose memory is page-locked already.
    template <class T>
    int upload(T* dst, const T* src, size_t n) {
        return upload_bytes(dst, src, n * sizeof(T), false);
    }
    // upload() that lets kernels already queued on the default stream run meanwhile (the
    // copy goes on a stream of its own). dst must be allocated and usable already, e.g.
    // after sync_stream() (the copy does not wait for the default stream).
    template <class T>
    int upload_overlapped(T* dst, const T* src, size_t n) {
        return upload_bytes(dst, src, n * sizeof(T), true);
    }
    int upload_bytes(void* dst, const void* src, size_t bytes, bool overlapped) {
        if (!bytes) return 0;
        const bool big = pin && bytes >= PIN_MIN_BYTES && !host_locked(src);
        if (big && stage) return staged_upload(dst, src, bytes, !overlapped);
        HostPin locked(src, big ? bytes : 0, true);
        if (!overlapped) {
            CUZK_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
            return 0;
        }
        cudaStream_t stream;
        CUZK_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
        CUZK_CHECK(e);
        return 0;
    }
    // Through the staging buffers (see Staging); after_default: the copies wait for the
    // work queued on the default stream so far (dst's allocation, in stream order).
    int staged_upload(void* dst, const void* src, size_t bytes, bool after_default = true) {
        std::lock_guard<std::mutex> hold(Staging::get().lock);
        cudaStream_t stream;
        CUZK_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        int rc = [&]() -> int {
            StagedCopy sc(stream, err, errlen);
            CUZK_RC(sc.init());
            if (after_default) {
                CUZK_CHECK(cudaEventRecord(sc.drained[0], 0));
                CUZK_CHECK(cudaStreamWaitEvent(stream, sc.drained[0], 0));
            }
            CUZK_RC(sc.copy(dst, src, bytes));
            CUZK_CHECK(cudaStreamSynchronize(stream));
            return 0;
        }();
        cudaStreamDestroy(stream);
        return rc;
    }
    // p's batches of n elements (batch b ends at p.ends[b] and fires p.done[b]); p's
    // stream, made by the caller, first waits for the work queued on the default stream
    // so far (the destination's allocation, a gather's flags).
    int pending_batches(Pending& p, size_t n, unsigned batches) {
        batches = (unsigned)std::max<size_t>(1, std::min<size_t>(batches, n));
        p.done.reserve(batches);
        p.ends.reserve(batches);
        for (unsigned b = 0; b < batches; ++b) {
            cudaEvent_t e;
            // Timed only when traced (DeviceExec::trace reports the arrivals).
            CUZK_CHECK(cudaEventCreateWithFlags(&e, trace_on() ? 0u : cudaEventDisableTiming));
            p.done.push_back(e);
            p.ends.push_back(n * (b + 1) / batches);
        }
        CUZK_CHECK(cudaEventRecord(p.done[0], 0));
        CUZK_CHECK(cudaStreamWaitEvent(p.stream, p.done[0], 0));
        return 0;
    }
    // upload() on a stream of its own (see DevicePending), as `batches` consecutive
    // copies issued by a worker thread; a no-op for n = 0. Page-locked host memory (the
    // caller's, or registered here under --pin) is copied directly, pageable memory
    // through the staging buffers.
    template <class T>
    int upload_async(T* dst, const T* src, size_t n, Pending& p, unsigned batches = 1) {
        if (!n) return 0;
        const size_t bytes = n * sizeof(T);
        const bool locked = host_locked(src);
        const bool staged = !locked && pin && stage && bytes >= PIN_MIN_BYTES;
        if (!staged) p.pin = new HostPin(src, pin && !locked ? bytes : 0, true);
        int dev = 0;
        CUZK_CHECK(cudaGetDevice(&dev));
        CUZK_CHECK(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking));
        CUZK_RC(pending_batches(p, n, batches));
        p.worker = std::thread([&p, dst, src, dev, staged] {
            char* err = p.msg;
            const size_t errlen = sizeof p.msg;
            auto run = [&]() -> int {
                CUZK_CHECK(cudaSetDevice(dev));
                std::unique_lock<std::mutex> hold(Staging::get().lock, std::defer_lock);
                if (staged) hold.lock();
                StagedCopy sc(p.stream, err, errlen);
                if (staged) CUZK_RC(sc.init());
                size_t lo = 0;
                for (size_t b = 0; b < p.ends.size(); ++b) {
                    const size_t hi = p.ends[b];
                    if (staged)
                        CUZK_RC(sc.copy(dst + lo, src + lo, (hi - lo) * sizeof(T)));
                    else
                        CUZK_CHECK(cudaMemcpyAsync(dst + lo, src + lo, (hi - lo) * sizeof(T),
                                                   cudaMemcpyHostToDevice, p.stream));
                    CUZK_CHECK(cudaEventRecord(p.done[b], p.stream));
                    {
                        std::lock_guard<std::mutex> g(p.m);
                        p.recorded = b + 1;
                    }
                    p.cv.notify_all();
                    lo = hi;
                }
                // The staging buffers are free once the stream has drained them.
                if (staged) CUZK_CHECK(cudaStreamSynchronize(p.stream));
                return 0;
            };
            if (run() != 0) {
                {
                    std::lock_guard<std::mutex> g(p.m);
                    p.failed = true;
                }
                p.cv.notify_all();
            }
        });
        return 0;
    }
    // Fewest points for which a split MSM gathers the points of nonzero scalars from
    // page-locked host memory instead of copying all (Pippenger::run). Below 2^21 the
    // copy, which starts before the split and hides behind it and the sort, was as fast
    // or faster (H200, witness scalars with 51 % zeros, gather / copy: G1 2^20 7.3 /
    // 6.6 ms, 2^21 9.2 / 9.2, 2^22 13.5 / 14.7, 2^23 22.6 / 25.8; G2 2^20 15.6 / 14.2,
    // 2^22 27.4 / 29.9). CUZK_GATHER=0 never gathers, =1 always (measuring, tests).
    static size_t gather_min() {
        static const size_t n = [] {
            switch (env_long("CUZK_GATHER", 0, 1, -1)) {
                case 0: return SIZE_MAX;
                case 1: return size_t(0);
                default: return size_t(1) << 21;
            }
        }();
        return n;
    }
    // The device's address of host memory the caller page-locked (registered, or
    // cudaHostAlloc'd: mapped on every 64-bit system), 16-byte aligned; null otherwise.
    const void* mapped(const void* p) {
        cudaPointerAttributes a;
        if (!host_locked(p, &a) || !a.devicePointer) return nullptr;
        return ((uintptr_t)a.devicePointer & 15) ? nullptr : a.devicePointer;
    }
    // dst[i] = src[i] for the i < n with f1[i] | f2[i] (device arrays, read until the
    // copy is waited for), the rest of dst left as it is; src = mapped(host). Kernels on a
    // stream of their own read the host memory directly (gather_flagged_kernel), so only
    // the flagged elements cross the bus. Batches and wait() as for upload_async; the
    // stream has the highest priority, so its blocks get the SMs first as they free up
    // beside the default stream's kernels.
    template <class T>
    int gather_async(T* dst, const T* src, const uint32_t* f1, const uint32_t* f2, size_t n,
                     Pending& p, unsigned batches = 1) {
        static_assert(sizeof(T) % 16 == 0, "gathered elements are whole 16-byte words");
        constexpr unsigned W = sizeof(T) / 16;
        if (!n) return 0;
        int dev = 0, sms = 0, lo_prio = 0, hi_prio = 0;
        CUZK_CHECK(cudaGetDevice(&dev));
        CUZK_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CUZK_CHECK(cudaDeviceGetStreamPriorityRange(&lo_prio, &hi_prio));
        CUZK_CHECK(cudaStreamCreateWithPriority(&p.stream, cudaStreamNonBlocking, hi_prio));
        CUZK_RC(pending_batches(p, n, batches));
        // One block of 256 an SM (more measured no faster: the bus is the limit).
        const unsigned threads = 256;
        size_t lo = 0;
        for (size_t b = 0; b < p.ends.size(); ++b) {
            const size_t hi = p.ends[b];
            const size_t blocks = std::min<size_t>((size_t)sms, (hi - lo + threads - 1) / threads);
            gather_flagged_kernel<W><<<(unsigned)blocks, threads, 0, p.stream>>>(
                (const uint4*)src, (uint4*)dst, f1, f2, lo, hi);
            CUZK_RC(launched("gather points from host memory", hi - lo, threads));
            CUZK_CHECK(cudaEventRecord(p.done[b], p.stream));
            lo = hi;
        }
        std::lock_guard<std::mutex> g(p.m);
        p.recorded = p.ends.size();
        return 0;
    }
    // Later work on the default stream waits for batches 0..=batch of the pending copy
    // (all of it by default; idempotent).
    int wait(Pending& p, size_t batch = SIZE_MAX) {
        if (p.done.empty()) return 0;
        batch = std::min(batch, p.done.size() - 1);
        {
            std::unique_lock<std::mutex> lk(p.m);
            p.cv.wait(lk, [&] { return p.recorded > batch || p.failed; });
            if (p.recorded <= batch) {
                if (p.what)
                    snprintf(err, errlen, "%s: %s", p.what, p.msg);
                else
                    snprintf(err, errlen, "%s", p.msg);
                return -1;
            }
        }
        CUZK_CHECK(cudaStreamWaitEvent(0, p.done[batch], 0));
        return 0;
    }
    template <class T>
    int download(T* dst, const T* src, size_t n) {
        if (!n) return 0;
        HostPin locked(dst, pin && !stage ? n * sizeof(T) : 0, false);
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

// The host's batched copy: each batch is copied only when waited for, so code that reads
// a batch before waiting for it reads zeros (points at infinity) in the tests, as it
// could read stale memory on the GPU.
struct HostPending {
    std::vector<size_t> ends;
    char* dst = nullptr;
    const char* src = nullptr;
    size_t elem = 0, copied = 0;
    // A gather: only the elements flagged in either array are copied.
    const uint32_t* f1 = nullptr;
    const uint32_t* f2 = nullptr;
};

struct HostTimer {
    std::chrono::steady_clock::time_point start, stop;
};

struct HostExec {
    template <class T>
    using Buf = HostBuf<T>;
    using Pending = HostPending;
    using Timer = HostTimer;
    int start(Timer& t) {
        t.start = std::chrono::steady_clock::now();
        return 0;
    }
    int stop(Timer& t) {
        t.stop = std::chrono::steady_clock::now();
        return 0;
    }
    int elapsed(Timer& t, float* ms) {
        *ms = (float)std::chrono::duration<double, std::milli>(t.stop - t.start).count();
        return 0;
    }
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
    // As for a small GPU, so that the tests' MSMs take slices of several lengths.
    static size_t resident_threads(int) { return 64; }
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
    int sync_stream(const char*) { return 0; }
    template <class T>
    int upload(T* dst, const T* src, size_t n) {
        if (n) memcpy(dst, src, n * sizeof(T));
        return 0;
    }
    template <class T>
    int upload_async(T* dst, const T* src, size_t n, Pending& p, unsigned batches = 1) {
        if (!n) return 0;
        batches = (unsigned)std::max<size_t>(1, std::min<size_t>(batches, n));
        for (unsigned b = 0; b < batches; ++b) p.ends.push_back(n * (b + 1) / batches);
        p.dst = (char*)dst;
        p.src = (const char*)src;
        p.elem = sizeof(T);
        memset(dst, 0, n * sizeof(T));
        return 0;
    }
    // Host memory is the emulated device's own: always "mapped", and gathered at any size
    // (so that the tests' small MSMs take that path).
    const void* mapped(const void* p) { return p; }
    static size_t gather_min() { return 0; }
    // upload_async of the flagged elements only; the others are filled with garbage
    // (0xA5 bytes), so that code reading a point it should not have reads a wrong one.
    template <class T>
    int gather_async(T* dst, const T* src, const uint32_t* f1, const uint32_t* f2, size_t n,
                     Pending& p, unsigned batches = 1) {
        CUZK_RC(upload_async(dst, src, n, p, batches));
        if (n) memset((void*)dst, 0xA5, n * sizeof(T));
        p.f1 = f1;
        p.f2 = f2;
        return 0;
    }
    template <class T>
    int upload_overlapped(T* dst, const T* src, size_t n) {
        return upload(dst, src, n);
    }
    int mark(const char*) { return 0; }
    int trace(const char*, Pending&) { return 0; }
    int wait(Pending& p, size_t batch = SIZE_MAX) {
        if (p.ends.empty()) return 0;
        const size_t end = p.ends[std::min(batch, p.ends.size() - 1)];
        if (end > p.copied) {
            if (!p.f1)
                memcpy(p.dst + p.copied * p.elem, p.src + p.copied * p.elem,
                       (end - p.copied) * p.elem);
            else
                for (size_t i = p.copied; i < end; ++i)
                    if (p.f1[i] | p.f2[i])
                        memcpy(p.dst + i * p.elem, p.src + i * p.elem, p.elem);
            p.copied = end;
        }
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

// out = the exclusive prefix sum of in[0, n) (n ≥ 1), and *total = the sum of all n: the
// last offset plus the last count (the size of what a scatter by these offsets writes).
template <class Exec>
int exclusive_sum_total(Exec& ex, const uint32_t* in, uint32_t* out, uint32_t n,
                        uint64_t* total) {
    CUZK_RC(ex.exclusive_sum(in, out, n));
    uint32_t last[2];
    CUZK_RC(ex.download(&last[0], out + n - 1, 1));
    CUZK_RC(ex.download(&last[1], in + n - 1, 1));
    *total = (uint64_t)last[0] + last[1];
    return 0;
}

// *first = min(*first, i), atomically on the device: the first index a check kernel
// rejects (the emulation runs one thread at a time).
__host__ __device__ inline void mark_first(unsigned long long* first, unsigned long long i) {
#ifdef __CUDA_ARCH__
    atomicMin(first, i);
#else
    if (i < *first) *first = i;
#endif
}

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
