// Two executors with one interface, so an algorithm written once against it runs either
// as CUDA kernels (DeviceExec) or on the host, one "thread" after another (HostExec).
// The host one exists for tests on machines without a GPU: it runs exactly the
// per-thread code the kernels run (functors whose operator() is __host__ __device__),
// with std::stable_sort and a plain loop standing in for CUB's sort, scan and max.
//
// Every method returns 0, or non-zero after writing "call: error (sizes)" into the
// caller's error buffer (err, errlen), in the manner of util/error.cuh.
//
// The executors are device_exec.cuh and host_exec.cuh; this file adds what is written
// once over either (exclusive_sum_total, mark_first) and with_exec, which picks one for
// an extern "C" entry. What they are built from (memory, transfers, knobs, timers) is in
// util/.
#pragma once
#include <cstdint>
#include <cstdio>
#include <exception>

#include "device_exec.cuh"
#include "host_exec.cuh"

namespace cuzk {

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
