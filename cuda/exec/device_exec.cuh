// The device executor: the executor interface (exec.cuh) as CUDA kernels on the
// calling thread's default stream (per-thread, see build.rs), CUB for sort, scan and max, and the transfers of util/transfer.cuh.
// The kernels here run a per-thread functor (for_each_kernel, for_each_heavy) or a
// block-cooperative one (for_each_block) over an index range.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include <cub/cub.cuh>

#include "../util/env.cuh"
#include "../util/error.cuh"
#include "../util/memory.cuh"
#include "../util/trace.cuh"
#include "../util/transfer.cuh"

namespace cuzk {

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
    // The sources are a read-only file mapping: large uploads page-lock them chunk by
    // chunk (RegisteredCopy), neither staged nor locked whole; `refused` counts the
    // chunks the driver would not lock (staged instead).
    bool from_mapping = false;
    size_t refused = 0;
    // The stream launch() and sync() use: 0, the calling thread's own, unless the caller
    // sets one (the SRS decode runs on a high-priority stream beside the prover's MSMs).
    cudaStream_t stream = 0;
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
        for_each_kernel<<<blocks, threads, 0, stream>>>(n, fn);
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

    // Waits for the work this thread queued and reports an asynchronous kernel failure.
    // Stream 0 is the calling thread's own (build.rs: per-thread default streams), so
    // another thread's work (the SRS upload beside the prover) is not waited for.
    int sync(const char* after) {
        cudaError_t e = cudaStreamSynchronize(stream);
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
        // A mapping goes chunk by chunk even where another copy holds its first chunk
        // locked (host_locked would then send the whole copy over that one lock).
        if (from_mapping && pin && bytes >= PIN_MIN_BYTES)
            return registered_upload(dst, src, bytes, !overlapped);
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
        return on_own_stream(after_default, [&](cudaStream_t stream) -> int {
            StagedCopy sc(stream, err, errlen);
            CUZK_RC(sc.init());
            return sc.copy(dst, src, bytes);
        });
    }
    // staged_upload() for a read-only file mapping, page-locked chunk by chunk (see
    // RegisteredCopy).
    int registered_upload(void* dst, const void* src, size_t bytes, bool after_default) {
        return on_own_stream(after_default, [&](cudaStream_t stream) -> int {
            RegisteredCopy rcp(stream, err, errlen);
            CUZK_RC(rcp.copy(dst, src, bytes));
            refused += rcp.refused;
            return 0;
        });
    }
    // copy(stream) on a new stream of its own, returning once that stream has drained;
    // after_default: the stream first waits for the work queued on the default stream.
    // copy's own objects (staging pair, locked chunks) are gone before the stream is.
    template <class Copy>
    int on_own_stream(bool after_default, Copy copy) {
        cudaStream_t stream;
        CUZK_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        int rc = [&]() -> int {
            if (after_default) {
                cudaEvent_t e;
                CUZK_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
                cudaError_t r = cudaEventRecord(e, 0);
                if (r == cudaSuccess) r = cudaStreamWaitEvent(stream, e, 0);
                cudaEventDestroy(e);
                CUZK_CHECK(r);
            }
            CUZK_RC(copy(stream));
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

    // Stable sort of (key, value) pairs by the low `bits` bits of the key, between two
    // buffers each (CUB's double-buffer mode, which needs no copy of the pairs of its own:
    // 8 bytes an entry less than sorting from one array into another, 14 GB for MSM h at
    // 2^27): on return keys[0, n) and vals[0, n) hold the sorted pairs (the buffers are
    // swapped when they ended in the others), keys_alt and vals_alt are scratch.
    int sort_pairs(Buf<uint32_t>& keys, Buf<uint32_t>& keys_alt, Buf<uint32_t>& vals,
                   Buf<uint32_t>& vals_alt, uint32_t n, int bits) {
        if (n == 0) return 0;
        cub::DoubleBuffer<uint32_t> k(keys.ptr, keys_alt.ptr), v(vals.ptr, vals_alt.ptr);
        size_t tmp_bytes = 0;
        CUZK_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, k, v, n, 0, bits));
        Buf<char> tmp;
        CUZK_RC(alloc(tmp, tmp_bytes, "radix sort scratch"));
        CUZK_CHECK(cub::DeviceRadixSort::SortPairs(tmp.ptr, tmp_bytes, k, v, n, 0, bits));
        if (k.Current() != keys.ptr) keys.swap(keys_alt);
        if (v.Current() != vals.ptr) vals.swap(vals_alt);
        return 0;
    }

    // Bytes an allocation can have now: the device's free memory and what the pool holds
    // for reuse (util/memory.cuh keeps freed memory), 0 when the device cannot say.
    size_t available() {
        size_t free_b = 0, total_b = 0;
        if (device_available(&free_b, &total_b) != cudaSuccess) {
            cudaGetLastError();
            return 0;
        }
        return free_b;
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

}  // namespace cuzk
