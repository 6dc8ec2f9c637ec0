// The host executor: the executor interface (exec.cuh) run on the CPU, one "thread"
// after another, for tests on machines without a GPU. It runs exactly the per-thread
// functors the kernels run, with std::stable_sort and plain loops standing in for CUB's
// sort, scan and max, host memory standing in for device memory, and copies that happen
// when waited for.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <numeric>
#include <vector>

#include "../util/error.cuh"
#include "../util/memory.cuh"
#include "../util/trace.cuh"

namespace cuzk {

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
    int sort_pairs(Buf<uint32_t>& keys, Buf<uint32_t>& keys_alt, Buf<uint32_t>& vals,
                   Buf<uint32_t>& vals_alt, uint32_t n, int bits) {
        const uint32_t mask = bits >= 32 ? ~0u : ((1u << bits) - 1);
        const uint32_t* kin = keys.ptr;
        std::vector<uint32_t> idx(n);
        std::iota(idx.begin(), idx.end(), 0u);
        std::stable_sort(idx.begin(), idx.end(),
                         [&](uint32_t a, uint32_t b) { return (kin[a] & mask) < (kin[b] & mask); });
        for (uint32_t i = 0; i < n; ++i) {
            keys_alt.ptr[i] = kin[idx[i]];
            vals_alt.ptr[i] = vals.ptr[idx[i]];
        }
        keys.swap(keys_alt);
        vals.swap(vals_alt);
        return 0;
    }
    // The device memory the emulation pretends is free: no limit, unless a test set one
    // for its thread (cuzk_msm_emulated_memory), to see an MSM take its windows in passes.
    static size_t& emulated_available() {
        static thread_local size_t bytes = SIZE_MAX;
        return bytes;
    }
    static size_t available() { return emulated_available(); }
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

}  // namespace cuzk
