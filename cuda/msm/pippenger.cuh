// Pippenger multi-scalar multiplication Σ sᵢ·Pᵢ with signed digits, one template over
// the field of the curve (G1: Fp, G2: Fp2) and over the executor (exec/exec.cuh: GPU
// kernels, or the same per-thread code on the host for tests).
//
// Scalars are 255-bit (< r) integers split into `windows` windows of c bits, recoded to
// signed digits d ∈ (−2^(c−1), 2^(c−1)] with a carry into the next window, so each window
// needs B = 2^(c−1) buckets and a digit −d adds −P to bucket d. windows = ⌊255/c⌋ + 1
// leaves the top window fewer than c bits, so its digit plus carry never overflows and
// the last carry is always 0.
//
// Pipeline, all on the device:
//  1. digits:   one thread per point writes, per window, key = window·B + |d| − 1 (or the
//               "no digit" key G = windows·B when d = 0) and value = point index | sign.
//  2. sort:     CUB radix sort of the (key, value) pairs: entries of one bucket become a
//               contiguous run; zero digits sort last and are ignored.
//  3. bounds:   the run [first, first + cnt) of each bucket.
//  4. buckets:  segmented reduction. Thread t sums the t-th slice of L sorted entries
//               (mixed additions), whatever buckets it spans, and writes a partial sum
//               per bucket it meets (SumSlicesFn). The partial sums of a bucket are
//               contiguous, so a segmented sum repeats on them (XYZZ additions) until
//               every bucket has one sum. A heavy bucket (all scalars equal, say) is thus
//               spread over many threads, not one. Points coming from the host arrive in
//               batches meanwhile; a slice is summed as soon as the batch with its
//               largest point index is on the device.
//  5. windows:  Σ_j (j+1)·S_j per window by the running-sum trick, in chunks of CHUNK
//               buckets per thread: chunk t yields Σ_i (i+1)·S_{tM+i} + tM·Σ_i S_{tM+i};
//               the chunks of a window are then summed by step 4's segmented reduction.
//  6. out:      the window sums W_k, converted to Jacobian; the caller forms
//               Σ_k 2^(ck)·W_k (windows·c doublings, cheap on the host).
//
// Steps 1–5 take the windows in passes where the device's free memory cannot hold every
// window's sorted entries at once (16 bytes an entry a window: 28 GB for MSM h at 2^27):
// each pass recodes the scalars again (carries included) but keeps only its windows'
// digits, so an 80 GB GPU can run MSM h beside the resident SRS and a recording
// (windows_per_pass; on the H200 every window fits in one pass).
//
// Split (supraseal's idea for witness scalars, most of which are 0 or 1): before step 1
// the scalars are classified on the device; zeros are dropped, only the rest, the tail,
// goes through digits and sort, with the window size chosen for the tail, and the points
// of the ones are summed by batch addition (step 4's segmented reduction over one group,
// after the tail's buckets, when every point has arrived).
// The ones' sum joins window 0 (weight 2^0). Without the split a 0/1 scalar still costs
// a sort entry in every window. Points in page-locked host memory are then read by the
// device only where the scalar is not zero (Pippenger::run, gather_async).
//
// Files: plan.cuh (window size, slice length, upload batches), digits.cuh (step 1 and
// the split's classification), buckets.cuh (steps 3–4), windows.cuh (steps 5–6); this
// one runs them in order (Pippenger) and is the MSM's entry (msm_windows). The sort is
// the executor's (CUB).
#pragma once
#include <cstdint>

#include "../ec/xyzz.cuh"
#include "../exec/exec.cuh"
#include "plan.cuh"
#include "digits.cuh"
#include "buckets.cuh"
#include "windows.cuh"

namespace cuzk {
namespace msm {

// ---- orchestration ----

template <class F, class Exec>
struct Pippenger {
    template <class T>
    using Buf = typename Exec::template Buf<T>;

    Exec& ex;
    char* err;
    size_t errlen;
    // The split's flags (scalar i is one / neither zero nor one), kept while a gather of
    // the points (below) reads them.
    Buf<uint32_t> is_one, is_tail;
    // The points, when they come from the host, and their upload: it overlaps the
    // scalars' split, recoding and sort, and the first kernel that reads points waits for
    // it. Members in this order so that, on any exit, the copy is waited for before its
    // destination and the flags are freed.
    Buf<Affine<F>> uploaded;
    typename Exec::Pending points_upload;
    // Windows a pass of steps 1-5 took (0 when no scalar reached the buckets).
    unsigned pass_used = 0;

    // Segments of each group (cnt → segs, seg_off) and their total.
    int segment(const Buf<uint32_t>& cnt, uint32_t groups, uint32_t seg, Buf<uint32_t>& segs,
                Buf<uint32_t>& seg_off, uint32_t* total) {
        CUZK_RC(ex.alloc(segs, groups, "segments per group"));
        CUZK_RC(ex.alloc(seg_off, groups, "segment offsets"));
        CUZK_RC(ex.launch(groups, SegCountFn{cnt.ptr, segs.ptr, seg}, "segment count", 256));
        uint64_t sum;
        CUZK_RC(exclusive_sum_total(ex, segs.ptr, seg_off.ptr, groups, &sum));
        *total = (uint32_t)sum;
        return 0;
    }

    // Reduces each group (elements [first[g], first[g] + cnt[g]) of `elems`) to at most one
    // element, SEG_PARTIALS elements per thread per level; max_cnt bounds the largest group.
    int reduce_groups(Buf<XYZZ<F>>& elems, Buf<uint32_t>& first, Buf<uint32_t>& cnt,
                      uint32_t groups, uint32_t max_cnt) {
        while (max_cnt > 1) {
            Buf<uint32_t> segs, seg_off;
            uint32_t total;
            CUZK_RC(segment(cnt, groups, SEG_PARTIALS, segs, seg_off, &total));
            Buf<XYZZ<F>> out;
            CUZK_RC(ex.alloc(out, total, "partial sums"));
            CUZK_RC(ex.launch_heavy(total,
                              SumPartialsFn<F>{seg_off.ptr, first.ptr, cnt.ptr, groups,
                                               elems.ptr, out.ptr},
                              "sum partials"));
            elems.swap(out);
            first.swap(seg_off);
            cnt.swap(segs);
            max_cnt = (max_cnt + SEG_PARTIALS - 1) / SEG_PARTIALS;
        }
        return 0;
    }

    // Batches of the points' upload (1: one copy, or points already on the device).
    uint32_t batch_count() const {
        const size_t n = points_upload.ends.size();
        return n > 1 ? (uint32_t)n : 1;
    }
    // The first point index of each batch but the first, on the device (batch_count() − 1
    // of them): the bounds ReadySegmentsFn and SliceBatchFn compare point indices with.
    int batch_starts(Buf<uint32_t>& starts) {
        const uint32_t n = batch_count() - 1;
        const auto& ends = points_upload.ends;
        std::vector<uint32_t> host(ends.begin(), ends.begin() + n);
        CUZK_RC(ex.alloc(starts, n, "batch bounds"));
        return ex.upload(starts.ptr, host.data(), n);
    }

    // Level one of the sums: each group's run of signed point indices, vals[first[g] ..
    // first[g] + cnt[g]) (keys: the sorted bucket keys beside them, or null for a single
    // group), summed with mixed additions into `sums`; first and cnt then describe each
    // group's partial sums there, *max_cnt bounds their number. By slices
    // (accumulate_slices), or with CUZK_MSM_SLICE=0 by segments of SEG entries of one
    // group a thread: points still arriving from the host in batches are then consumed
    // batch by batch, each batch's launch summing the segments it completes
    // (ReadySegmentsFn), so the additions start before the last point has arrived and the
    // sums are those of one upload.
    int accumulate(const Affine<F>* points, const uint32_t* keys, const uint32_t* vals,
                   Buf<uint32_t>& first, Buf<uint32_t>& cnt, uint32_t groups, uint32_t* max_cnt,
                   Buf<XYZZ<F>>& sums, const char* what) {
        if (slice_fixed() != 0)
            return accumulate_slices(points, keys, vals, first, cnt, groups, max_cnt, sums, what);
        const uint32_t batches = batch_count();
        Buf<uint32_t> segs, seg_off;
        uint32_t total;
        CUZK_RC(segment(cnt, groups, SEG, segs, seg_off, &total));
        CUZK_RC(ex.alloc(sums, total, what));
        if (batches == 1) {
            CUZK_RC(ex.wait(points_upload));
            CUZK_RC(ex.launch_heavy(total,
                                    SumPointsFn<F>{seg_off.ptr, first.ptr, cnt.ptr, groups, vals,
                                                   points, sums.ptr, nullptr, nullptr},
                                    what));
        } else {
            const size_t all = (size_t)groups * batches;
            Buf<uint32_t> bounds, ready, from, count, at;
            CUZK_RC(batch_starts(bounds));
            CUZK_RC(ex.alloc(ready, all, "segments ready per batch"));
            CUZK_RC(ex.launch(groups,
                              ReadySegmentsFn{vals, first.ptr, cnt.ptr, segs.ptr, groups,
                                              bounds.ptr, batches, ready.ptr},
                              "segments per batch", 256));
            CUZK_RC(ex.alloc(from, all, "first segment per batch"));
            CUZK_RC(ex.alloc(count, all, "segments per batch"));
            CUZK_RC(ex.alloc(at, all, "segment offsets per batch"));
            std::vector<uint32_t> size(batches);
            for (uint32_t b = 0; b < batches; ++b) {
                const size_t o = (size_t)b * groups;
                CUZK_RC(ex.launch(groups,
                                  NewlyReadyFn{ready.ptr + o, b ? ready.ptr + o - groups : nullptr,
                                               from.ptr + o, count.ptr + o},
                                  "segments new per batch", 256));
                uint64_t sum;
                CUZK_RC(exclusive_sum_total(ex, count.ptr + o, at.ptr + o, groups, &sum));
                size[b] = (uint32_t)sum;
            }
            for (uint32_t b = 0; b < batches; ++b) {
                if (!size[b]) continue;
                const size_t o = (size_t)b * groups;
                CUZK_RC(ex.wait(points_upload, b));
                CUZK_RC(ex.mark("(a batch's segments start)"));
                CUZK_RC(ex.launch_heavy(size[b],
                                        SumPointsFn<F>{seg_off.ptr, first.ptr, cnt.ptr, groups,
                                                       vals, points, sums.ptr, at.ptr + o,
                                                       from.ptr + o},
                                        what));
            }
        }
        first.swap(seg_off);
        cnt.swap(segs);
        *max_cnt = (*max_cnt + SEG - 1) / SEG;
        return 0;
    }

    // accumulate() by slices of entries, one a thread (SumSlicesFn); with points still
    // arriving in batches, each batch's launch sums the slices it completes
    // (SliceBatchFn). first and cnt then describe each group's partial sums, and *max_cnt
    // bounds the largest group's count of them.
    int accumulate_slices(const Affine<F>* points, const uint32_t* keys, const uint32_t* vals,
                          Buf<uint32_t>& first, Buf<uint32_t>& cnt, uint32_t groups,
                          uint32_t* max_cnt, Buf<XYZZ<F>>& sums, const char* what) {
        Buf<uint32_t> segs, seg_off;
        uint64_t total, entries = *max_cnt;  // one group: its count
        CUZK_RC(ex.alloc(seg_off, groups, "partial sum offsets"));
        // Entries with a digit: the counts' total (seg_off serves as scratch).
        if (groups > 1) CUZK_RC(exclusive_sum_total(ex, cnt.ptr, seg_off.ptr, groups, &entries));
        const uint32_t len =
            slice_len(entries, ex.resident_threads(SumSlicesFn<F>::MIN_BLOCKS));
        CUZK_RC(ex.alloc(segs, groups, "partial sums per group"));
        CUZK_RC(ex.launch(groups, SliceCountFn{first.ptr, cnt.ptr, len, segs.ptr},
                          "slices per group", 256));
        CUZK_RC(exclusive_sum_total(ex, segs.ptr, seg_off.ptr, groups, &total));
        CUZK_RC(ex.alloc(sums, total, what));
        const uint32_t slices = (uint32_t)((entries + len - 1) / len);
        const SumSlicesFn<F> fn{keys, vals,   seg_off.ptr, first.ptr, (uint32_t)entries,
                                len,  points, sums.ptr,    nullptr};
        const uint32_t batches = batch_count();
        if (batches == 1 || slices == 0) {
            CUZK_RC(ex.wait(points_upload));
            CUZK_RC(ex.launch_heavy(slices, fn, what));
        } else {
            // Each batch's slices, in order, at ids + at[b] (count[b] of them).
            Buf<uint32_t> bounds, batch, flag, pos, ids;
            CUZK_RC(batch_starts(bounds));
            CUZK_RC(ex.alloc(batch, slices, "batch of each slice"));
            CUZK_RC(ex.launch(slices,
                              SliceBatchFn{vals, (uint32_t)entries, len, bounds.ptr, batches,
                                           batch.ptr},
                              "batch of each slice", 256));
            CUZK_RC(ex.alloc(flag, slices, "slices of a batch"));
            CUZK_RC(ex.alloc(pos, slices, "slice positions"));
            CUZK_RC(ex.alloc(ids, slices, "slices by batch"));
            std::vector<uint32_t> at(batches), count(batches);
            uint32_t done = 0;
            for (uint32_t b = 0; b < batches; ++b) {
                uint64_t k;
                CUZK_RC(ex.launch(slices, BatchFlagFn{batch.ptr, b, flag.ptr}, "slices of a batch",
                                  256));
                CUZK_RC(exclusive_sum_total(ex, flag.ptr, pos.ptr, slices, &k));
                CUZK_RC(ex.launch(slices, FlaggedIdsFn{flag.ptr, pos.ptr, ids.ptr + done},
                                  "slices by batch", 256));
                at[b] = done;
                count[b] = (uint32_t)k;
                done += (uint32_t)k;
            }
            for (uint32_t b = 0; b < batches; ++b) {
                if (!count[b]) continue;
                SumSlicesFn<F> part = fn;
                part.ids = ids.ptr + at[b];
                CUZK_RC(ex.wait(points_upload, b));
                CUZK_RC(ex.mark("(a batch's slices start)"));
                CUZK_RC(ex.launch_heavy(count[b], part, what));
            }
        }
        first.swap(seg_off);
        cnt.swap(segs);
        // A run of k entries meets at most ⌈k/L⌉ + 1 slices.
        *max_cnt = (uint32_t)(((uint64_t)*max_cnt + len - 1) / len + 1);
        return 0;
    }

    // Split: the point indices of the ones into `ones` (*n_ones of them, summed later by
    // sum_ones), the tail's scalars into `scalars` (swapped) and their point indices into
    // tail_idx.
    // The flags stay in is_one and is_tail.
    int split_scalars(Buf<FrMont>& scalars, size_t n, Buf<uint32_t>& ones, size_t* n_ones,
                      Buf<uint32_t>& tail_idx, size_t* n_tail) {
        Buf<uint32_t> one_pos, tail_pos;
        CUZK_RC(ex.alloc(is_one, n, "one flags"));
        CUZK_RC(ex.alloc(is_tail, n, "tail flags"));
        CUZK_RC(ex.alloc(one_pos, n, "one positions"));
        CUZK_RC(ex.alloc(tail_pos, n, "tail positions"));
        CUZK_RC(ex.launch(n, ClassifyFn{scalars.ptr, is_one.ptr, is_tail.ptr}, "classify scalars",
                          256));
        uint64_t ones_n, tail_n;
        CUZK_RC(exclusive_sum_total(ex, is_one.ptr, one_pos.ptr, (uint32_t)n, &ones_n));
        CUZK_RC(exclusive_sum_total(ex, is_tail.ptr, tail_pos.ptr, (uint32_t)n, &tail_n));
        *n_ones = (size_t)ones_n;
        *n_tail = (size_t)tail_n;

        Buf<FrMont> tail_scalars;
        CUZK_RC(ex.alloc(ones, *n_ones ? *n_ones : 1, "indices of ones"));
        CUZK_RC(ex.alloc(tail_idx, *n_tail ? *n_tail : 1, "tail indices"));
        CUZK_RC(ex.alloc(tail_scalars, *n_tail ? *n_tail : 1, "tail scalars"));
        CUZK_RC(ex.launch(n,
                          ScatterFn{scalars.ptr, is_one.ptr, one_pos.ptr, is_tail.ptr,
                                    tail_pos.ptr, ones.ptr, tail_idx.ptr, tail_scalars.ptr},
                          "split scalars", 256));
        scalars.swap(tail_scalars);
        return 0;
    }

    // Split: batch addition of the ones' points (n_ones ≥ 1) into ones_sum[0], as one
    // group reduced by the buckets' segmented sums. It runs after the tail's buckets, by
    // when every point batch has arrived.
    int sum_ones(const Affine<F>* points, const Buf<uint32_t>& ones, size_t n_ones,
                 Buf<XYZZ<F>>& ones_sum) {
        Buf<uint32_t> first, cnt;
        CUZK_RC(ex.alloc(first, 1, "ones group"));
        CUZK_RC(ex.alloc(cnt, 1, "ones group size"));
        CUZK_RC(ex.launch(1, OneGroupFn{(uint32_t)n_ones, first.ptr, cnt.ptr}, "ones group"));
        Buf<XYZZ<F>> partial;
        uint32_t max_cnt = (uint32_t)n_ones;
        CUZK_RC(accumulate(points, nullptr, ones.ptr, first, cnt, 1, &max_cnt, partial,
                           "batch addition of ones"));
        CUZK_RC(reduce_groups(partial, first, cnt, 1, max_cnt));
        CUZK_RC(ex.alloc(ones_sum, 1, "sum of ones"));
        return ex.launch(1, GatherFn<F>{first.ptr, cnt.ptr, partial.ptr, ones_sum.ptr},
                         "gather sum of ones");
    }

    // Σ scalars·points as window sums (Jacobian, into host memory out_h[0..*windows_out));
    // window 0 picks c from the number of scalars that reach the buckets. The points are
    // in the executor's memory already (resident, e.g. decoded SRS) or else uploaded from
    // points_h; likewise the scalars (scalars_d, copied since the MSM consumes its copy,
    // or scalars_h).
    int run(const Affine<F>* resident, const Affine<F>* points_h, const FrMont* scalars_d,
            const FrMont* scalars_h, size_t n, unsigned window, bool split, unsigned max_pass,
            Jacobian<F>* out_h, size_t out_cap,
            unsigned* c_out, unsigned* windows_out, uint64_t* split_counts, float* ms) {
        if (n >= NEG_FLAG) {
            snprintf(err, errlen, "MSM of %zu points is too large for one call (limit 2^31)",
                     n);
            return -1;
        }
        // The scalars first: the split and the digits need them at once, the points only
        // after the sort (and then batch by batch).
        CUZK_RC(ex.mark("start"));
        Buf<FrMont> scalars;
        CUZK_RC(ex.alloc(scalars, n, "scalars"));
        if (scalars_d)
            CUZK_RC(ex.copy(scalars.ptr, scalars_d, n));
        else
            CUZK_RC(ex.upload(scalars.ptr, scalars_h, n));
        CUZK_RC(ex.mark("scalars on the device"));
        // Split scalars and page-locked host points: only the points of nonzero scalars
        // need to cross the bus. Once the split has flagged them, the device reads those
        // straight from host memory (gather_async), unless nearly all are needed (a
        // gather of all of them is ~8 % slower than one copy) or the MSM is small (see
        // gather_min). Otherwise the whole array is copied, starting now.
        const Affine<F>* points = resident;
        const Affine<F>* mapped =
            !resident && split && n >= ex.gather_min() ? (const Affine<F>*)ex.mapped(points_h)
                                                       : nullptr;
        if (!points) {
            CUZK_RC(ex.alloc(uploaded, n, "points"));
            if (!mapped)
                CUZK_RC(ex.upload_async(uploaded.ptr, points_h, n, points_upload,
                                        upload_batches(n)));
            points = uploaded.ptr;
        }

        size_t m = n, n_ones = 0;
        Buf<uint32_t> ones, tail_idx;
        Buf<XYZZ<F>> ones_sum;
        typename Exec::Timer t_split, t_buckets, t_ones;
        CUZK_RC(ex.start(t_split));
        if (split) CUZK_RC(split_scalars(scalars, n, ones, &n_ones, tail_idx, &m));
        size_t copied = resident ? 0 : n;
        if (mapped && (n_ones + m) * 10 <= n * 9) {
            copied = n_ones + m;
            CUZK_RC(ex.gather_async(uploaded.ptr, mapped, is_one.ptr, is_tail.ptr, n,
                                    points_upload, upload_batches(n)));
        } else {
            if (mapped)
                CUZK_RC(ex.upload_async(uploaded.ptr, points_h, n, points_upload,
                                        upload_batches(n)));
            is_one.reset();
            is_tail.reset();
        }
        CUZK_RC(ex.stop(t_split));
        CUZK_RC(ex.mark("split"));
        CUZK_RC(ex.start(t_buckets));
        if (split_counts) {
            split_counts[0] = n_ones;
            split_counts[1] = m;
            split_counts[2] = copied;
        }

        const unsigned c = window ? window : auto_window(m ? m : n);
        const unsigned windows = windows_for(c);
        if (out_cap < windows) {
            snprintf(err, errlen, "MSM output holds %zu points, %u windows needed", out_cap,
                     windows);
            return -1;
        }
        if ((uint64_t)m * windows >= 0xffffffffull) {
            snprintf(err, errlen,
                     "MSM of %zu scalars with %u windows (c = %u) is too large for one call "
                     "(needs scalars x windows < 2^32)",
                     m, windows, c);
            return -1;
        }
        Buf<XYZZ<F>> sums_w;
        CUZK_RC(ex.alloc(sums_w, windows, "window sums"));
        if (m == 0) {
            CUZK_RC(ex.launch(windows, InfFn<F>{sums_w.ptr}, "empty windows"));
        } else {
            CUZK_RC(buckets_to_windows(points, scalars, split ? tail_idx.ptr : nullptr, m, c,
                                       max_pass, sums_w));
        }
        CUZK_RC(ex.stop(t_buckets));
        CUZK_RC(ex.start(t_ones));
        if (n_ones) {
            CUZK_RC(sum_ones(points, ones, n_ones, ones_sum));
            CUZK_RC(ex.launch(1, AddToFirstFn<F>{sums_w.ptr, ones_sum.ptr}, "add ones"));
        }
        Buf<Jacobian<F>> out;
        CUZK_RC(ex.alloc(out, windows, "window results"));
        CUZK_RC(ex.launch(windows, ToJacobianFn<F>{sums_w.ptr, out.ptr}, "to Jacobian"));
        CUZK_RC(ex.stop(t_ones));
        CUZK_RC(ex.mark("ones, window results"));
        CUZK_RC(ex.sync("MSM kernels"));
        CUZK_RC(ex.trace(sizeof(F) > 48 ? "MSM G2" : "MSM G1", points_upload));
        if (ms) {
            float ones_ms = 0;
            CUZK_RC(ex.elapsed(t_split, &ms[0]));
            CUZK_RC(ex.elapsed(t_buckets, &ms[1]));
            CUZK_RC(ex.elapsed(t_ones, &ones_ms));
            ms[0] += ones_ms;
        }
        CUZK_RC(ex.download(out_h, out.ptr, windows));
        if (split_counts) split_counts[3] = pass_used;
        *c_out = c;
        *windows_out = windows;
        return 0;
    }

    // Device bytes one window of a pass needs for m scalars with window size c: its
    // digits' keys and point indices twice (the sort's two buffers, 16 bytes an entry),
    // the accumulation's partial sums (one per slice of entries and one a bucket: at
    // 2^27 slices of 128, ~1.5 bytes an entry), and per bucket its bounds, its sum and the
    // window reduction's copy.
    size_t bytes_per_window(size_t m, unsigned c) {
        const size_t per_window = size_t(1) << (c - 1);
        const size_t slots = ex.resident_threads(SumSlicesFn<F>::MIN_BLOCKS);
        const size_t len = slice_fixed() == 0 ? SEG
                           : slots == 0       ? SLICE_MIN
                                              : slice_len(m, slots);
        return m * 16 + (m / len + per_window) * sizeof(XYZZ<F>) +
               per_window * (3 * sizeof(uint32_t) + 2 * sizeof(XYZZ<F>));
    }

    // Windows a pass of steps 1-5 takes: every window where three quarters of the memory
    // the device has now hold them (the rest for what other streams allocate meanwhile:
    // the next partition's aux assignment, 4.3 GB at 32GiB; the H200 at 2^27: 13 windows,
    // ~33 GB, of ~70 GB free), else as many as fit there, at least one (an allocation
    // that still fails says so); at most max_pass when that is not 0 (tests), or
    // CUZK_MSM_PASS (measurements). Each pass sorts m entries a window, so the sort's
    // memory shrinks with the passes while its work stays the same: what lets MSM h run
    // on a device where the SRS and a recording leave too little for all its windows at
    // once (an 80 GB H100 at 32GiB).
    unsigned windows_per_pass(size_t m, unsigned c, unsigned max_pass) {
        const unsigned windows = windows_for(c);
        unsigned pass = windows;
        const size_t avail = ex.available(), need = bytes_per_window(m, c);
        if (avail != SIZE_MAX && need > 0) {
            const size_t fit = (avail - avail / 4) / need;
            pass = (unsigned)std::max<size_t>(1, std::min<size_t>(windows, fit));
        }
        if (!max_pass) max_pass = pass_fixed();
        if (max_pass) pass = std::min(pass, max_pass);
        return pass;
    }

    // Steps 1-5 for m scalars (point index idx[i], or i without idx) into sums_w, in
    // passes of windows_per_pass windows; the scalars are freed once the last pass has
    // its digits.
    int buckets_to_windows(const Affine<F>* points, Buf<FrMont>& scalars, const uint32_t* idx,
                           size_t m, unsigned c, unsigned max_pass, Buf<XYZZ<F>>& sums_w) {
        const unsigned windows = windows_for(c), pass = windows_per_pass(m, c, max_pass);
        pass_used = pass;
        if (pass < windows) CUZK_RC(ex.mark("(windows in passes)"));
        for (unsigned lo = 0; lo < windows; lo += pass)
            CUZK_RC(pass_to_windows(points, scalars, idx, m, c, lo, std::min(windows, lo + pass),
                                    sums_w));
        return 0;
    }

    // Steps 1-5 for the windows [lo, hi) into sums_w[lo, hi).
    int pass_to_windows(const Affine<F>* points, Buf<FrMont>& scalars, const uint32_t* idx,
                        size_t m, unsigned c, unsigned lo, unsigned hi, Buf<XYZZ<F>>& sums_w) {
        const unsigned windows = hi - lo;
        const uint32_t per_window = 1u << (c - 1);
        const uint32_t groups = windows * per_window;
        const uint32_t N = (uint32_t)(m * windows);

        // 1-2. Signed digits, sorted by bucket.
        Buf<uint32_t> keys, vals;
        CUZK_RC(ex.alloc(keys, N, "bucket keys"));
        CUZK_RC(ex.alloc(vals, N, "point indices"));
        {
            Buf<uint32_t> keys_alt, vals_alt;
            CUZK_RC(ex.launch(m,
                              DigitsFn{scalars.ptr, idx, keys.ptr, vals.ptr, m, c, lo, hi,
                                       per_window},
                              "signed digits", 256));
            if (hi == windows_for(c)) scalars.reset();
            CUZK_RC(ex.alloc(keys_alt, N, "sorted bucket keys"));
            CUZK_RC(ex.alloc(vals_alt, N, "sorted point indices"));
            int bits = 1;
            while (bits < 32 && (groups >> bits) != 0) ++bits;  // keys are ≤ groups
            CUZK_RC(ex.mark("signed digits"));
            CUZK_RC(ex.sort_pairs(keys, keys_alt, vals, vals_alt, N, bits));
            CUZK_RC(ex.mark("radix sort"));
            CUZK_RC(ex.sync_stream("signed digits + radix sort"));
        }

        // 3. Bucket runs.
        Buf<uint32_t> first, cnt;
        uint32_t max_cnt;
        {
            Buf<uint32_t> end;
            CUZK_RC(ex.alloc(first, groups, "bucket starts"));
            CUZK_RC(ex.alloc(end, groups, "bucket ends"));
            CUZK_RC(ex.alloc(cnt, groups, "bucket sizes"));
            CUZK_RC(ex.zero(first.ptr, groups));
            CUZK_RC(ex.zero(end.ptr, groups));
            CUZK_RC(ex.launch(N, BoundsFn{keys.ptr, N, groups, first.ptr, end.ptr},
                              "bucket bounds", 256));
            CUZK_RC(ex.launch(groups, CountFn{first.ptr, end.ptr, cnt.ptr}, "bucket sizes",
                              256));
            CUZK_RC(ex.max_u32(cnt.ptr, groups, &max_cnt));
        }

        // 4. Bucket sums.
        Buf<XYZZ<F>> sums;
        CUZK_RC(ex.mark("bucket runs"));
        CUZK_RC(accumulate(points, keys.ptr, vals.ptr, first, cnt, groups, &max_cnt, sums,
                           "bucket accumulation"));
        CUZK_RC(ex.mark("bucket accumulation"));
        keys.reset();
        vals.reset();
        CUZK_RC(reduce_groups(sums, first, cnt, groups, max_cnt));
        CUZK_RC(ex.mark("bucket partial sums reduced"));
        Buf<XYZZ<F>> buckets;
        CUZK_RC(ex.alloc(buckets, groups, "bucket sums"));
        CUZK_RC(ex.launch(groups, GatherFn<F>{first.ptr, cnt.ptr, sums.ptr, buckets.ptr},
                          "gather buckets"));
        sums.reset();

        // 5. Window sums.
        const uint32_t chunk = per_window < CHUNK ? per_window : CHUNK;
        const uint32_t chunks = per_window / chunk;
        Buf<XYZZ<F>> parts;
        CUZK_RC(ex.alloc(parts, (size_t)windows * chunks, "window chunk sums"));
        CUZK_RC(ex.launch_heavy((size_t)windows * chunks,
                          ChunkFn<F>{buckets.ptr, parts.ptr, per_window, chunk, chunks},
                          "bucket running sums"));
        buckets.reset();
        CUZK_RC(ex.alloc(first, windows, "window starts"));
        CUZK_RC(ex.alloc(cnt, windows, "window sizes"));
        CUZK_RC(ex.launch(windows, UniformGroupsFn{chunks, first.ptr, cnt.ptr}, "window groups"));
        CUZK_RC(reduce_groups(parts, first, cnt, windows, chunks));
        return ex.launch(windows, GatherFn<F>{first.ptr, cnt.ptr, parts.ptr, sums_w.ptr + lo},
                         "gather windows");
    }
};

// Entry shared by G1 and G2 and by both executors: validates and writes the window sums
// (Jacobian, blst layout) to out[0..*windows_out); the result is Σ_k 2^(c·k)·out[k] with
// c = *c_out. n = 0 writes no windows. split ≠ 0 takes the scalars 0 and 1 out of the
// buckets (see the top of this file); split_counts, when not null, receives the number of
// ones, of scalars that went through the buckets (with split off: 0 and n) and of points
// that crossed from host memory (0 for resident points, n for a copy, the ones' and the
// tail's for a gather), then the windows a pass took (split_counts[3]; 0 when no scalar
// reached the buckets). The points are `resident` (executor memory) when that is not
// null, else the host array `points`; the scalars likewise `resident_scalars`, else the
// host array `scalars`.
// ms, when not null, receives the device time in milliseconds (CUDA events) of the split
// (classifying the scalars and batch-adding the ones) and of the rest (buckets, windows),
// the scalars' upload excluded; points uploaded from the host overlap both, and what is
// left of their upload when the first kernel needs them counts in its phase.
template <class F, class Exec>
int msm_windows(Exec& ex, const void* resident, const void* points,
                const void* resident_scalars, const void* scalars, size_t n, int window,
                int split, unsigned max_pass, void* out, size_t out_cap, uint32_t* c_out,
                uint32_t* windows_out, uint64_t* split_counts, float* ms) {
    char* err = ex.err;
    size_t errlen = ex.errlen;
    *c_out = 0;
    *windows_out = 0;
    if (split_counts) split_counts[0] = split_counts[1] = split_counts[2] = split_counts[3] = 0;
    if (ms) ms[0] = ms[1] = 0;
    if (window < 0 || window > (int)MAX_C) {
        snprintf(err, errlen, "MSM window size %d out of range (0 = automatic, 1..=%u)", window,
                 MAX_C);
        return -1;
    }
    if (n == 0) return 0;
    Pippenger<F, Exec> p{ex, err, errlen, {}, {}, {}, {}};
    unsigned c, windows;
    CUZK_RC(p.run((const Affine<F>*)resident, (const Affine<F>*)points,
                  (const FrMont*)resident_scalars, (const FrMont*)scalars, n, (unsigned)window,
                  split != 0, max_pass, (Jacobian<F>*)out, out_cap, &c, &windows,
                  split_counts, ms));
    *c_out = c;
    *windows_out = windows;
    return 0;
}

}  // namespace msm
}  // namespace cuzk
