// Pippenger's parameters, chosen on the host: the window size c (auto_window), the
// slice length of the bucket accumulation (slice_len), the batches of a points upload
// (upload_batches), and the constants the per-thread steps share (digit encoding, entries
// a thread sums, chunk length). The measurements behind each are in docs/PERF.md.
#pragma once
#include <algorithm>
#include <cstdint>

#include "../exec/exec.cuh"
#include "../ff/mont.cuh"

namespace cuzk {
namespace msm {

// Entries summed by one thread in the bucket reduction: points at the first level, where
// long runs amortise a thread's start; partial sums at later levels, where the runs are
// short and a long serial chain per thread would leave the GPU idle.
constexpr uint32_t SEG = 32;
constexpr uint32_t SEG_PARTIALS = 4;
// Entries summed by one thread in SumSlicesFn: long slices mean fewer partial sums, short
// ones enough threads to fill the GPU, and a shorter last wave (a slice of 128 mixed
// additions takes a thread ~3.6 ms when the GPU is full). The longest power of two in
// [SLICE_MIN, SLICE_MAX] that still gives each thread slot of the GPU 8 slices: MSM h at
// 2^27 (1.7 G entries) takes 128, a partition's tail MSMs 16–64 (docs/PERF.md, session 13).
// CUZK_MSM_SLICE=N fixes it (0: the per-bucket segments of SumPointsFn), for measuring.
constexpr uint32_t SLICE_MIN = 16, SLICE_MAX = 128;
inline long slice_fixed() {  // −1: automatic
    static const long fixed = env_long("CUZK_MSM_SLICE", 0, 4096, -1);
    return fixed;
}
inline uint32_t slice_len(size_t entries, size_t slots) {
    if (slice_fixed() > 0) return (uint32_t)slice_fixed();
    uint32_t len = SLICE_MIN;
    while (len < SLICE_MAX && entries / (2 * len) >= 8 * slots) len *= 2;
    return len;
}
// CUZK_MSM_PASS=N sorts at most N windows at once in every MSM (Pippenger::
// windows_per_pass), for measuring what the passes cost where memory would not need them.
inline unsigned pass_fixed() {  // 0: as memory allows
    static const long fixed = env_long("CUZK_MSM_PASS", 1, 256, 0);
    return (unsigned)fixed;
}
constexpr uint32_t CHUNK = 16;  // buckets per thread in the running-sum window reduction
constexpr uint32_t NEG_FLAG = 0x80000000u;
constexpr unsigned MAX_C = 24;
constexpr unsigned MAX_WINDOWS = 256;  // c = 1
// Points from the host are uploaded in 4 batches (from MIN_BATCHED points on);
// the bucket accumulation of a batch starts when it has arrived (Pippenger::accumulate).
// The upload then hides behind the sort and the accumulation of earlier batches (G1
// 2^25 from pinned host memory: 313 → 258 ms on the H200, with the copies issued by a
// worker thread; docs/PERF.md). Summing each batch's part of a run apart instead cut the
// runs into more, shorter segments (G1 2^25 → 373 ms).
// CUZK_UPLOAD_BATCHES=N overrides the count (1: one copy), for measuring.
constexpr size_t MIN_BATCHED = 4096;
inline unsigned upload_batches(size_t n) {
    static const unsigned k = (unsigned)env_long("CUZK_UPLOAD_BATCHES", 1, 64, 4);
    return n >= MIN_BATCHED ? k : 1;
}

CUZK_HD unsigned windows_for(unsigned c) { return 255 / c + 1; }

// Window size minimising (windows) × (work per window): n mixed additions into the
// buckets plus, per bucket, the running sum's two full additions, the gathering and the
// partial-sum levels, weighted 12 mixed additions each: fitted to the H200 (G1, random
// scalars, 2^22..2^24: c = 16 beat the c = 20 a weight of 3 chose by 1.4×; docs/PERF.md).
// At most c = max(16, ⌈log2 n⌉ − 7), i.e. from 2^24 points on at least 2^8 points a
// bucket: at 2^25 the model picks c = 19, which the sweep (G1, G2, session 10) puts
// 1.5–2 % behind c = 16..18; at 2^26 the cap (19) is within 1 % of the model's 20, and at
// 2^27 (H's 2^27 − 1 points included: hence ⌈ ⌉) it leaves the best, c = 20.
inline unsigned auto_window(size_t n) {
    unsigned log_n = 0;  // ⌈log2 n⌉
    while (log_n < 63 && (size_t(1) << log_n) < n) ++log_n;
    const unsigned cap = std::max(16u, log_n > 7 ? log_n - 7 : 0u);
    unsigned best = 1;
    double best_cost = 1e300;
    for (unsigned c = 1; c <= std::min(20u, cap); ++c) {
        const double cost = windows_for(c) * ((double)n + 12.0 * (double)(1u << (c - 1)));
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
        }
    }
    return best;
}

}  // namespace msm
}  // namespace cuzk
