// Pippenger steps 3 and 4 (pippenger.cuh's top comment): each bucket's run in the sorted
// entries (BoundsFn, CountFn), the first level of sums over the points (SumSlicesFn, or
// SumPointsFn's per-bucket segments), with the bookkeeping that lets points arriving in
// batches be summed batch by batch, and the segmented reduction of partial sums
// (SumPartialsFn, GatherFn) that the windows and the split's ones reuse. Per-thread steps,
// the same code on the GPU and in the host emulation.
#pragma once
#include <cstdint>

#include "../ec/xyzz.cuh"
#include "plan.cuh"

namespace cuzk {
namespace msm {

struct OneGroupFn {
    uint32_t size;
    uint32_t* first;
    uint32_t* cnt;
    CUZK_HD void operator()(size_t) const {
        first[0] = 0;
        cnt[0] = size;
    }
};

// Marks where each bucket's run starts and ends in the sorted keys.
struct BoundsFn {
    const uint32_t* keys;
    size_t n;
    uint32_t groups;
    uint32_t* first;
    uint32_t* end;
    CUZK_HD void operator()(size_t i) const {
        const uint32_t k = keys[i];
        if (k >= groups) return;  // zero digit
        if (i == 0 || keys[i - 1] != k) first[k] = (uint32_t)i;
        if (i + 1 == n || keys[i + 1] != k) end[k] = (uint32_t)(i + 1);
    }
};

struct CountFn {
    const uint32_t* first;
    const uint32_t* end;
    uint32_t* cnt;
    CUZK_HD void operator()(size_t g) const { cnt[g] = end[g] - first[g]; }
};

struct SegCountFn {
    const uint32_t* cnt;
    uint32_t* segs;
    uint32_t seg;
    CUZK_HD void operator()(size_t g) const { segs[g] = (cnt[g] + seg - 1) / seg; }
};

// Group owning segment s: the largest g with seg_off[g] ≤ s. It is never an empty group:
// s < seg_off[g + 1] (or the total, for the last), so group g has a segment.
CUZK_HD uint32_t group_of(const uint32_t* seg_off, uint32_t groups, uint32_t s) {
    uint32_t lo = 0, hi = groups;  // seg_off[lo] ≤ s; the answer is in [lo, hi)
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (seg_off[mid] <= s)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// Segment s of a group's run: entries [lo, hi).
struct Segment {
    uint32_t lo, hi;
};
CUZK_HD Segment segment_in(const uint32_t* seg_off, const uint32_t* first, const uint32_t* cnt,
                           uint32_t seg, uint32_t g, uint32_t s) {
    const uint32_t lo = first[g] + (s - seg_off[g]) * seg;
    const uint32_t end = first[g] + cnt[g];
    return {lo, lo + seg < end ? lo + seg : end};
}
CUZK_HD Segment segment_of(const uint32_t* seg_off, const uint32_t* first, const uint32_t* cnt,
                           uint32_t groups, uint32_t seg, uint32_t s) {
    return segment_in(seg_off, first, cnt, seg, group_of(seg_off, groups, s), s);
}

// Points uploaded in batches (point indices below ends[b] have arrived once batch b
// has): a group's run of sorted values is in point order (the sort is stable and the
// digits were written in point order), so its segments are too, and a segment can be
// summed once the batch holding its last entry has arrived. The segments of group g
// ready after batch b are its first ready[b·groups + g], by binary search over the
// segments' last entries; the segmentation, and so the partial sums, are those of one
// upload.
struct ReadySegmentsFn {
    const uint32_t* vals;
    const uint32_t* first;
    const uint32_t* cnt;
    const uint32_t* segs;
    uint32_t groups;
    const uint32_t* ends;  // batches − 1 of them (the last batch readies every segment)
    uint32_t batches;
    uint32_t* ready;
    CUZK_HD void operator()(size_t g) const {
        uint32_t lo = 0;  // segments [0, lo) are known ready
        for (uint32_t b = 0; b + 1 < batches; ++b) {
            uint32_t up = segs[g];
            while (lo < up) {  // first segment whose last entry is in a later batch
                const uint32_t mid = lo + (up - lo) / 2;
                const uint32_t end = (mid + 1) * SEG < cnt[g] ? (mid + 1) * SEG : cnt[g];
                if ((vals[first[g] + end - 1] & ~NEG_FLAG) < ends[b])
                    lo = mid + 1;
                else
                    up = mid;
            }
            ready[(size_t)b * groups + g] = lo;
        }
        ready[(size_t)(batches - 1) * groups + g] = segs[g];
    }
};

// The segments that batch b readies: count[g] of group g's, from its segment from[g] on.
struct NewlyReadyFn {
    const uint32_t* ready;  // of batch b
    const uint32_t* before;  // of batch b − 1, or null for b = 0
    uint32_t* from;
    uint32_t* count;
    CUZK_HD void operator()(size_t g) const {
        const uint32_t f = before ? before[g] : 0;
        from[g] = f;
        count[g] = ready[g] - f;
    }
};

// First level with CUZK_MSM_SLICE=0 (the way before slices, kept to measure against):
// sums a segment of one bucket's signed points (sorted values) with mixed additions.
template <class F>
struct SumPointsFn {
    // G1: 128 registers (4 blocks of 128 threads per SM) spill a little and win (5 blocks,
    // 102 registers, spill 4× as much: 2^22..2^25 2–5 % slower, session 12); G2's state is
    // twice as large.
    static constexpr int MIN_BLOCKS = sizeof(F) > 48 ? 2 : 4;
    const uint32_t* seg_off;
    const uint32_t* first;
    const uint32_t* cnt;
    uint32_t groups;
    const uint32_t* vals;
    const Affine<F>* points;
    XYZZ<F>* out;
    // Thread t sums segment t, or, one batch of points at a time (Pippenger::accumulate),
    // the t-th segment this batch readies: group g's from[g] + (t − at[g]) (at: the
    // exclusive sum of the counts of NewlyReadyFn).
    const uint32_t* at;
    const uint32_t* from;
    CUZK_HD void operator()(size_t t) const {
        uint32_t g, s = (uint32_t)t;
        if (at) {
            g = group_of(at, groups, s);
            s = seg_off[g] + from[g] + (s - at[g]);
        } else {
            g = group_of(seg_off, groups, s);
        }
        const Segment seg = segment_in(seg_off, first, cnt, SEG, g, s);
        uint32_t v = vals[seg.lo];
        XYZZ<F> acc = to_xyzz(points[v & ~NEG_FLAG], (v & NEG_FLAG) != 0);
        // The next point is loaded before the current addition, so its (random-access)
        // load overlaps the arithmetic instead of stalling the loop.
        uint32_t e = seg.lo + 1;
        Affine<F> next;
        if (e < seg.hi) {
            v = vals[e];
            next = points[v & ~NEG_FLAG];
        }
        for (; e < seg.hi; ++e) {
            Affine<F> a = next;
            const bool negate = (v & NEG_FLAG) != 0;
            if (e + 1 < seg.hi) {
                v = vals[e + 1];
                next = points[v & ~NEG_FLAG];
            }
            if (negate) a.y = neg(a.y);  // (0, 0), infinity, stays itself
            acc = padd_affine(acc, a);
        }
        out[s] = acc;
    }
};

// First level: thread t sums the sorted entries [tL, min(tL + L, total)), a fixed slice
// of the whole sorted array rather than a segment of one bucket, and writes one partial
// sum for each bucket the slice meets. Every lane of a warp then runs the same L steps;
// with per-bucket segments, the lanes holding a bucket's short last segment idle until the
// warp's longest segment is done (why longer segments measured slower, session 12). A bucket's partial sums stay contiguous and in entry order:
// slice t's first one is number t − ⌊first[g]/L⌋ of its first bucket g (SliceCountFn), and
// each later bucket the slice meets starts in it, at the next index.
template <class F>
struct SumSlicesFn {
    static constexpr int MIN_BLOCKS = SumPointsFn<F>::MIN_BLOCKS;
    const uint32_t* keys;  // sorted bucket keys, or null: one group (key 0)
    const uint32_t* vals;  // the sorted values: point index | sign
    const uint32_t* seg_off;
    const uint32_t* first;
    uint32_t total;  // entries with a digit (zero digits sort after them)
    uint32_t len;    // L
    const Affine<F>* points;
    XYZZ<F>* out;
    const uint32_t* ids;  // thread i sums slice ids[i] (points in batches), or null: slice i
    CUZK_HD void operator()(size_t i) const {
        const size_t t = ids ? ids[i] : i;
        const uint32_t lo = (uint32_t)t * len;
        const uint32_t hi = total - lo > len ? lo + len : total;
        uint32_t key = keys ? keys[lo] : 0;
        uint32_t o = seg_off[key] + (uint32_t)t - first[key] / len;
        uint32_t v = vals[lo];
        XYZZ<F> acc = to_xyzz(points[v & ~NEG_FLAG], (v & NEG_FLAG) != 0);
        // As in SumPointsFn, the next entry's point is loaded before the current addition.
        uint32_t e = lo + 1, k = 0;
        Affine<F> next;
        if (e < hi) {
            v = vals[e];
            k = keys ? keys[e] : 0;
            next = points[v & ~NEG_FLAG];
        }
        for (; e < hi; ++e) {
            Affine<F> a = next;
            const bool negate = (v & NEG_FLAG) != 0;
            const uint32_t ka = k;
            if (e + 1 < hi) {
                v = vals[e + 1];
                k = keys ? keys[e + 1] : 0;
                next = points[v & ~NEG_FLAG];
            }
            if (ka != key) {  // the next bucket starts here
                out[o++] = acc;
                key = ka;
                acc = xyzz_inf<F>();  // padd_affine(∞, a) = a
            }
            if (negate) a.y = neg(a.y);  // (0, 0), infinity, stays itself
            acc = padd_affine(acc, a);
        }
        out[o] = acc;
    }
};

// Points uploaded in batches (point indices below ends[b] have arrived once batch b
// has): slice t can be summed after the first batch that holds its largest point index.
// Within a bucket the sorted values are in point order, so a slice inside one bucket
// covers a narrow range of points; one spanning a boundary waits for a late batch.
struct SliceBatchFn {
    const uint32_t* vals;
    uint32_t total, len;
    const uint32_t* ends;  // batches − 1 of them
    uint32_t batches;
    uint32_t* batch;
    CUZK_HD void operator()(size_t t) const {
        const uint32_t lo = (uint32_t)t * len;
        const uint32_t hi = total - lo > len ? lo + len : total;
        uint32_t top = 0;
        for (uint32_t e = lo; e < hi; ++e) {
            const uint32_t p = vals[e] & ~NEG_FLAG;
            top = p > top ? p : top;
        }
        uint32_t b = 0;
        while (b + 1 < batches && top >= ends[b]) ++b;
        batch[t] = b;
    }
};

// 1 in flag[t] where batch[t] = b.
struct BatchFlagFn {
    const uint32_t* batch;
    uint32_t b;
    uint32_t* flag;
    CUZK_HD void operator()(size_t t) const { flag[t] = batch[t] == b; }
};

// The flagged slices' numbers, in order, at the positions the flags' exclusive sum gives.
struct FlaggedIdsFn {
    const uint32_t* flag;
    const uint32_t* pos;
    uint32_t* ids;
    CUZK_HD void operator()(size_t t) const {
        if (flag[t]) ids[pos[t]] = (uint32_t)t;
    }
};

// Partial sums of each bucket under SumSlicesFn: the number of slices its run meets.
struct SliceCountFn {
    const uint32_t* first;
    const uint32_t* cnt;
    uint32_t len;
    uint32_t* segs;
    CUZK_HD void operator()(size_t g) const {
        segs[g] = cnt[g] ? (first[g] + cnt[g] - 1) / len - first[g] / len + 1 : 0;
    }
};

// Later levels: sums a segment of partial sums.
template <class F>
struct SumPartialsFn {
    // XYZZ + XYZZ needs more live values than the mixed addition. At 4 blocks (G1, 128
    // registers) and 3 (G2, 168) it spills more than at 3 and 2 (static spill code: G1 0.9
    // against 0.1 KB, G2 1.0 against 0.1 KB) and still gains from the extra warps: every
    // split MSM of a 32GiB-shape partition −1 to −2 %, G1 witness-like MSMs 2^25 −4 to
    // −13 % (docs/PERF.md, session 12).
    static constexpr int MIN_BLOCKS = sizeof(F) > 48 ? 3 : 4;
    const uint32_t* seg_off;
    const uint32_t* first;
    const uint32_t* cnt;
    uint32_t groups;
    const XYZZ<F>* in;
    XYZZ<F>* out;
    CUZK_HD void operator()(size_t s) const {
        const Segment seg = segment_of(seg_off, first, cnt, groups, SEG_PARTIALS, (uint32_t)s);
        XYZZ<F> acc = in[seg.lo];
        for (uint32_t e = seg.lo + 1; e < seg.hi; ++e) acc = padd(acc, in[e]);
        out[s] = acc;
    }
};

// Once every group has at most one element: a dense array, infinity for empty groups.
template <class F>
struct GatherFn {
    const uint32_t* first;
    const uint32_t* cnt;
    const XYZZ<F>* in;
    XYZZ<F>* out;
    CUZK_HD void operator()(size_t g) const {
        out[g] = cnt[g] ? in[first[g]] : xyzz_inf<F>();
    }
};

}  // namespace msm
}  // namespace cuzk
