// MSM entry points for G1 and G2: one generic Pippenger (pippenger.cuh) instantiated over
// Fp and Fp2, run on the GPU or, for tests without one, emulated on the host. The points
// come from host memory or from a decoded SRS section already on the device (srs/).
#include "../srs/points.cuh"
#include "pippenger.cuh"
#include "scalars.cuh"

namespace {

template <class F>
int msm_entry(const void* set, size_t offset, const void* points, const void* scalar_set,
              size_t scalar_offset, const void* scalars, size_t n, int window, int split,
              uint32_t max_pass, int emulate, void* out, size_t out_cap, uint32_t* c_out,
              uint32_t* windows_out, uint64_t* split_counts, float* ms, char* err,
              size_t errlen) {
    const cuzk::FrMont* resident_scalars = nullptr;
    if (scalar_set) {
        const auto* ss = (const cuzk::ScalarSet*)scalar_set;
        if (ss->emulate != (emulate != 0) || scalar_offset > ss->n ||
            n > ss->n - scalar_offset) {
            snprintf(err, errlen,
                     "MSM over scalars [%zu, %zu) of a set of %zu (%s) called on the %s",
                     scalar_offset, scalar_offset + n, ss->n,
                     ss->emulate ? "host" : "device", emulate ? "host" : "device");
            return -1;
        }
        resident_scalars = ss->ptr() + scalar_offset;
    }
    const cuzk::Affine<F>* resident = nullptr;
    if (set) {
        const auto* ps = (const cuzk::srs::PointSet*)set;
        const int g2 = sizeof(F) == sizeof(cuzk::Fp2);
        if (ps->g2 != g2 || ps->emulate != emulate || offset > ps->n || n > ps->n - offset) {
            snprintf(err, errlen,
                     "MSM over points [%zu, %zu) of a set of %zu %s points (%s) called as "
                     "%s (%s)",
                     offset, offset + n, ps->n, ps->g2 ? "G2" : "G1",
                     ps->emulate ? "host" : "device", g2 ? "G2" : "G1",
                     emulate ? "host" : "device");
            return -1;
        }
        resident = (const cuzk::Affine<F>*)ps->points() + offset;
    }
    return cuzk::with_exec(emulate != 0, err, errlen, "MSM", [&](auto& ex) {
        return cuzk::msm::msm_windows<F>(ex, resident, points, resident_scalars, scalars, n,
                                         window, split, max_pass, out, out_cap, c_out,
                                         windows_out, split_counts, ms);
    });
}

}  // namespace

// Σ scalars[i]·points[i] over G1 as per-window sums. The points are points[offset..][..n]
// of the decoded SRS set `set` (cuzk_points_new) when set is not null, else the host array
// `points`: blst_p1_affine[n] (infinity = all zero). The scalars are
// scalar_set[scalar_offset..][..n] (cuzk_scalars_new) when scalar_set is not null, else the
// host array `scalars`: blst_fr[n] (Montgomery);
// window the bits per window (0 = automatic). split ≠ 0 sums the points of scalars equal
// to one by batch addition and drops zeros before the buckets; max_pass ≠ 0 caps the
// windows sorted at once (0: as many as the device's memory holds, pippenger.cuh);
// split_counts (nullable) receives [ones, bucketed, points copied from the host, windows
// a pass], ms (nullable) the compute
// milliseconds [split, buckets].
// Writes *windows_out ≤ out_cap Jacobian blst_p1 window sums W_k to out and the window
// size to *c_out; the MSM is Σ_k 2^(c·k)·W_k. emulate ≠ 0 runs the same per-thread code on
// the host (tests without a GPU). Returns 0, or non-zero with err set.
extern "C" int cuzk_msm_g1(const void* set, size_t offset, const void* points,
                           const void* scalar_set, size_t scalar_offset, const void* scalars,
                           size_t n, int window, int split, uint32_t max_pass, int emulate,
                           void* out, size_t out_cap, uint32_t* c_out, uint32_t* windows_out,
                           uint64_t* split_counts, float* ms, char* err, size_t errlen) {
    return msm_entry<cuzk::Fp>(set, offset, points, scalar_set, scalar_offset, scalars, n,
                               window, split, max_pass, emulate, out, out_cap, c_out,
                               windows_out, split_counts, ms, err, errlen);
}

// The same over G2: points blst_p2_affine, out blst_p2 (Jacobian over Fp2).
extern "C" int cuzk_msm_g2(const void* set, size_t offset, const void* points,
                           const void* scalar_set, size_t scalar_offset, const void* scalars,
                           size_t n, int window, int split, uint32_t max_pass, int emulate,
                           void* out, size_t out_cap, uint32_t* c_out, uint32_t* windows_out,
                           uint64_t* split_counts, float* ms, char* err, size_t errlen) {
    return msm_entry<cuzk::Fp2>(set, offset, points, scalar_set, scalar_offset, scalars, n,
                                window, split, max_pass, emulate, out, out_cap, c_out,
                                windows_out, split_counts, ms, err, errlen);
}

// Tests: the device memory the emulation pretends is free for the MSMs this host thread
// runs (SIZE_MAX: no limit), so that they take their windows in passes.
extern "C" void cuzk_msm_emulated_memory(size_t bytes) {
    cuzk::HostExec::emulated_available() = bytes;
}

// Fewest points for which a split MSM over page-locked host points copies only those of
// nonzero scalars (on the GPU, or emulated: 0, always).
extern "C" size_t cuzk_msm_gather_min(int emulate) {
    return emulate ? cuzk::HostExec::gather_min() : cuzk::DeviceExec::gather_min();
}
