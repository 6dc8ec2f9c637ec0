// Host ↔ device transfers of large buffers: page-locking (host_locked, HostPin), the
// pinned staging buffers for pageable memory (Staging, StagedCopy), the pending batched
// upload a worker thread issues on a stream of its own (DevicePending), and the zero-copy
// gather of flagged elements from page-locked host memory (gather_flagged_kernel).
// DeviceExec's upload, upload_async, gather_async and download are built from these.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

#include <cuda_runtime.h>

#include "env.cuh"
#include "error.cuh"

namespace cuzk {

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

// Host → device copies of pageable memory without --pin: through two page-locked
// staging buffers, host threads filling one chunk while the DMA engine drains the other
// (registering gigabytes with cudaHostRegister costs about as much as the copy; a
// pageable cudaMemcpy stages through the driver's one small buffer, at ≈ 5 GB/s on the
// H200 host). A process-wide pool of such pairs, allocated on first use and kept: each
// copy in flight holds a pair of its own, so concurrent copies share the bus instead of
// queueing for one pair (with section h ahead, the first partition's recording and aux
// uploads ran behind an SRS section's 0.8 s copy; with --gpus, the GPUs' SRS uploads ran
// one after another). At most MAX_PAIRS (CUZK_STAGING_PAIRS, 1–16; 1 is the old single
// pair, the A/B knob) pairs of 2 × 64 MiB; a copy beyond that waits for a pair.
struct Staging {
    static constexpr size_t CHUNK = size_t(64) << 20;
    struct Pair {
        void* buf[2] = {nullptr, nullptr};
    };
    std::mutex m;
    std::condition_variable freed;
    std::vector<Pair*> idle;
    unsigned made = 0;
    const unsigned max_pairs = (unsigned)env_long("CUZK_STAGING_PAIRS", 1, 16, 4);
    static Staging& get() {
        static Staging s;
        return s;
    }
    // A pair for one copy: an idle one, a new one while fewer than max_pairs exist, else
    // the next one released. Null (and err set) when the host allocation fails.
    Pair* acquire(char* err, size_t errlen) {
        std::unique_lock<std::mutex> g(m);
        freed.wait(g, [&] { return !idle.empty() || made < max_pairs; });
        if (!idle.empty()) {
            Pair* p = idle.back();
            idle.pop_back();
            return p;
        }
        ++made;
        g.unlock();
        auto* p = new Pair;
        for (void*& b : p->buf) {
            cudaError_t e = cudaHostAlloc(&b, CHUNK, cudaHostAllocPortable);
            if (e != cudaSuccess) {
                cudaGetLastError();
                snprintf(err, errlen, "staging buffer (%zu MiB page-locked): %s", CHUNK >> 20,
                         cudaGetErrorString(e));
                for (void* q : p->buf)
                    if (q) cudaFreeHost(q);
                delete p;
                std::lock_guard<std::mutex> r(m);
                --made;
                freed.notify_one();
                return nullptr;
            }
        }
        return p;
    }
    void release(Pair* p) {
        {
            std::lock_guard<std::mutex> g(m);
            idle.push_back(p);
        }
        freed.notify_one();
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

// Copies through a staging pair of its own on `stream` (host threads fill one buffer
// while the DMA drains the other); successive copy() calls keep alternating. The pair
// goes back to the pool once both buffers are drained (the destructor waits for that,
// also after a failed copy).
struct StagedCopy {
    cudaStream_t stream;
    char* err;
    size_t errlen;
    cudaEvent_t drained[2] = {nullptr, nullptr};
    Staging::Pair* pair = nullptr;
    size_t k = 0;
    const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency() / 2));
    StagedCopy(cudaStream_t s, char* e, size_t l) : stream(s), err(e), errlen(l) {}
    StagedCopy(const StagedCopy&) = delete;
    StagedCopy& operator=(const StagedCopy&) = delete;
    ~StagedCopy() {
        for (cudaEvent_t e : drained)
            if (e) {
                cudaEventSynchronize(e);  // the DMA no longer reads the pair
                cudaEventDestroy(e);
            }
        if (pair) Staging::get().release(pair);
    }
    int init() {
        for (cudaEvent_t& e : drained)
            CUZK_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        pair = Staging::get().acquire(err, errlen);
        return pair ? 0 : -1;
    }
    int copy(void* dst, const void* src, size_t bytes) {
        for (size_t off = 0; off < bytes; off += Staging::CHUNK, ++k) {
            const size_t len = std::min(Staging::CHUNK, bytes - off);
            const int b = (int)(k & 1);
            if (k >= 2) CUZK_CHECK(cudaEventSynchronize(drained[b]));
            parallel_copy(pair->buf[b], (const char*)src + off, len, threads);
            CUZK_CHECK(cudaMemcpyAsync((char*)dst + off, pair->buf[b], len,
                                       cudaMemcpyHostToDevice, stream));
            CUZK_CHECK(cudaEventRecord(drained[b], stream));
        }
        return 0;
    }
};

// Host → device copy of a read-only file mapping (the parameters' sections, a saved
// recording) by page-locking it a chunk at a time (cudaHostRegister, read-only): the DMA
// engine reads the page-cache pages themselves, with no host copy and no core held for
// one. Up to DEPTH chunks are locked at once: the next is registered while the earlier
// ones are copied, and each is unregistered once its copy has drained. Chunks lie on
// multiples of the chunk size (CUZK_PIN_CHUNK_MIB) in the address space and are locked as
// whole pages, so two never share a page. A chunk the driver refuses (a page locked already, as by another GPU's
// copy of the same mapping) goes through a staging pair instead; `refused` counts them.
// Any other refusal (read-only registration not supported) stops the locking: the rest
// is staged.
// A first experiment on the H100 host (16 GiB of a page-cached file, PCIe gen 5; chunks
// registered and copied one after another, not this pipeline): ~20 GB/s whether or not 14
// of the 16 cores were busy, ~0.6 s of one core for the registrations; staging 23–27 GB/s
// on 8 idle cores but 10 GB/s beside 14 busy ones (docs/PERF.md, `--pin-mapped`;
// dev/bench-upload measures this code).
struct RegisteredCopy {
    static constexpr unsigned DEPTH = 3;
    const size_t chunk = size_t(env_long("CUZK_PIN_CHUNK_MIB", 2, 1 << 16, 256)) << 20;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);  // a power of two ≤ 2 MiB
    cudaStream_t stream;
    char* err;
    size_t errlen;
    size_t refused = 0;
    bool locking = true;  // false after a refusal other than "already registered"
    struct Slot {
        void* p = nullptr;
        cudaEvent_t drained = nullptr;
    } slots[DEPTH];
    StagedCopy* staged = nullptr;  // made on the first refused chunk
    RegisteredCopy(cudaStream_t s, char* e, size_t l) : stream(s), err(e), errlen(l) {}
    RegisteredCopy(const RegisteredCopy&) = delete;
    RegisteredCopy& operator=(const RegisteredCopy&) = delete;
    ~RegisteredCopy() {
        // After an early return a slot's last event may predate its copy: no page is
        // unlocked before the stream has drained.
        cudaStreamSynchronize(stream);
        for (Slot& s : slots) {
            retire(s);  // also after a failed copy: the DMA no longer reads the pages
            if (s.drained) cudaEventDestroy(s.drained);
        }
        delete staged;
    }
    // Waits for the slot's copy to drain, then unlocks its pages.
    cudaError_t retire(Slot& s) {
        if (!s.p) return cudaSuccess;
        cudaError_t e = cudaEventSynchronize(s.drained);
        cudaError_t u = cudaHostUnregister(s.p);
        s.p = nullptr;
        return e != cudaSuccess ? e : u;
    }
    int copy(void* dst, const void* src, size_t bytes) {
        for (Slot& s : slots)
            if (!s.drained)
                CUZK_CHECK(cudaEventCreateWithFlags(&s.drained, cudaEventDisableTiming));
        const uintptr_t begin = (uintptr_t)src, end = begin + bytes;
        size_t k = 0;
        for (uintptr_t lo = begin; lo < end; ++k) {
            const uintptr_t hi = std::min(end, (lo / chunk + 1) * chunk);
            const size_t off = lo - begin, len = hi - lo;
            Slot& s = slots[k % DEPTH];
            CUZK_CHECK(retire(s));
            // Whole pages: a mapping covers the pages its first and last bytes lie in.
            const uintptr_t page_lo = lo & ~(page - 1), page_hi = (hi + page - 1) & ~(page - 1);
            const cudaError_t r =
                locking ? cudaHostRegister((void*)page_lo, page_hi - page_lo,
                                           cudaHostRegisterReadOnly | cudaHostRegisterPortable)
                        : cudaErrorNotSupported;
            if (r == cudaSuccess) {
                s.p = (void*)page_lo;
                CUZK_CHECK(cudaMemcpyAsync((char*)dst + off, (const void*)lo, len,
                                           cudaMemcpyHostToDevice, stream));
                CUZK_CHECK(cudaEventRecord(s.drained, stream));
            } else {
                if (locking) {
                    cudaGetLastError();  // not fatal: this chunk is staged
                    locking = r == cudaErrorHostMemoryAlreadyRegistered;
                }
                ++refused;
                if (!staged) {
                    staged = new StagedCopy(stream, err, errlen);
                    CUZK_RC(staged->init());
                }
                CUZK_RC(staged->copy((char*)dst + off, (const void*)lo, len));
            }
            lo = hi;
        }
        for (Slot& s : slots) CUZK_CHECK(retire(s));
        return 0;
    }
};

}  // namespace cuzk
