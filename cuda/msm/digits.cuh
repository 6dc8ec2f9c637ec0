// Pippenger steps 1 and the split (pippenger.cuh's top comment), one thread per scalar:
// recoding each scalar into signed digits with their bucket keys (DigitsFn), and, for a
// split MSM, classifying the scalars into zero, one and the rest and compacting the
// latter two (ClassifyFn, ScatterFn). Per-thread steps, the same code on the GPU and in
// the host emulation.
#pragma once
#include <cstdint>

#include "../ff/fp.cuh"
#include "plan.cuh"

namespace cuzk {
namespace msm {

struct DigitsFn {
    const FrMont* scalars;
    const uint32_t* idx;  // point index of scalar i (the tail of a split), or null: i
    uint32_t* keys;
    uint32_t* vals;
    size_t n;
    unsigned c;
    // The windows of this pass, [lo, hi): their digits only are written, window lo + j
    // at keys[j·n + i] with keys from j·B (the carries of the windows below are still
    // computed). One pass of every window: [0, windows).
    unsigned lo, hi;
    uint32_t buckets;  // B = 2^(c−1)
    CUZK_HD void operator()(size_t i) const {
        const FrMont s = from_mont(scalars[i]);  // blstrs Scalars are Montgomery form
        const uint32_t full = 1u << c;
        const uint32_t none = (hi - lo) * buckets;
        uint32_t carry = 0;
        for (unsigned w = 0; w < hi; ++w) {
            const unsigned pos = w * c, limb = pos >> 6, off = pos & 63;
            uint64_t raw = 0;
            if (limb < 4) {
                raw = s.l[limb] >> off;
                if (off + c > 64 && limb + 1 < 4) raw |= s.l[limb + 1] << (64 - off);
            }
            uint32_t d = (uint32_t)(raw & (full - 1)) + carry;
            uint32_t sign = 0;
            if (d > buckets) {  // d − 2^c < 0: use −(2^c − d) and carry one
                d = full - d;
                carry = 1;
                sign = NEG_FLAG;
            } else {
                carry = 0;
            }
            if (w < lo) continue;
            const unsigned j = w - lo;
            keys[j * n + i] = d ? j * buckets + d - 1 : none;
            vals[j * n + i] = (idx ? idx[i] : (uint32_t)i) | sign;
        }
    }
};

// Split: 1 in is_one / is_tail for scalars equal to one / neither zero nor one.
struct ClassifyFn {
    const FrMont* scalars;
    uint32_t* is_one;
    uint32_t* is_tail;
    CUZK_HD void operator()(size_t i) const {
        const FrMont s = scalars[i];  // Montgomery form: one is R mod r
        const bool one = eq(s, FrMont::one());
        is_one[i] = one;
        is_tail[i] = !one && !is_zero(s);
    }
};

// Split: the ones' point indices and the tail's (index, scalar) pairs, compacted in order
// at the positions the exclusive sums of the flags give.
struct ScatterFn {
    const FrMont* scalars;
    const uint32_t* is_one;
    const uint32_t* one_pos;
    const uint32_t* is_tail;
    const uint32_t* tail_pos;
    uint32_t* ones;
    uint32_t* tail_idx;
    FrMont* tail_scalars;
    CUZK_HD void operator()(size_t i) const {
        if (is_one[i]) {
            ones[one_pos[i]] = (uint32_t)i;
        } else if (is_tail[i]) {
            tail_idx[tail_pos[i]] = (uint32_t)i;
            tail_scalars[tail_pos[i]] = scalars[i];
        }
    }
};

}  // namespace msm
}  // namespace cuzk
