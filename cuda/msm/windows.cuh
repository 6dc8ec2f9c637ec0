// Pippenger steps 5 and 6 (pippenger.cuh's top comment): the window sums from the bucket
// sums by the running-sum trick in chunks (ChunkFn, UniformGroupsFn), the split's ones
// added to window 0 (AddToFirstFn), empty windows (InfFn) and the conversion of the
// results to Jacobian (ToJacobianFn). Per-thread steps, the same code on the GPU and in
// the host emulation.
#pragma once
#include <cstdint>

#include "../ec/xyzz.cuh"

namespace cuzk {
namespace msm {

template <class F>
struct InfFn {
    XYZZ<F>* out;
    CUZK_HD void operator()(size_t i) const { out[i] = xyzz_inf<F>(); }
};

// Window 0 gains the ones' sum.
template <class F>
struct AddToFirstFn {
    XYZZ<F>* sums;
    const XYZZ<F>* extra;
    CUZK_HD void operator()(size_t) const { sums[0] = padd(sums[0], extra[0]); }
};

// Chunk t of window w: Σ_{i<M} (tM + i + 1)·S_{w,tM+i}, from the running sum over the
// chunk's buckets (top down) plus tM times the chunk's plain sum.
template <class F>
struct ChunkFn {
    // Three points live across the loop (running, acc, the bucket): 128 registers spill
    // kilobytes.
    static constexpr int MIN_BLOCKS = 2;
    const XYZZ<F>* buckets;
    XYZZ<F>* out;
    uint32_t per_window;  // B
    uint32_t chunk;       // M
    uint32_t chunks;      // K = B / M
    CUZK_HD void operator()(size_t idx) const {
        const uint32_t w = (uint32_t)(idx / chunks), t = (uint32_t)(idx % chunks);
        const XYZZ<F>* b = buckets + (size_t)w * per_window + (size_t)t * chunk;
        XYZZ<F> running = xyzz_inf<F>(), acc = xyzz_inf<F>();
        for (int i = (int)chunk - 1; i >= 0; --i) {
            running = padd(running, b[i]);
            acc = padd(acc, running);
        }
        out[idx] = padd(acc, pmul_small(running, t * chunk));
    }
};

struct UniformGroupsFn {
    uint32_t size;
    uint32_t* first;
    uint32_t* cnt;
    CUZK_HD void operator()(size_t g) const {
        first[g] = (uint32_t)g * size;
        cnt[g] = size;
    }
};

template <class F>
struct ToJacobianFn {
    const XYZZ<F>* in;
    Jacobian<F>* out;
    CUZK_HD void operator()(size_t i) const { out[i] = to_jacobian(in[i]); }
};

}  // namespace msm
}  // namespace cuzk
