// The Groth16 quotient H = (A·B − C)/Z, with the CPU backend's result (prove/cpu/fft.rs:
// iNTT, coset NTT, pointwise (a·b − c)·Z⁻¹, coset iNTT, keep the m − 1 low coefficients)
// in six transforms instead of its seven (quotient()). The transforms are the NTT's
// (ntt/ntt.cuh, compiled in ntt/ntt.cu); here is how they make H (which transforms, which
// coset scalings, the pointwise product between them) and the two entries: a, b, c from
// host memory, or evaluated on the device from a pre-compiled constraint system
// (pce/eval.cuh). H goes to host memory or stays on the device in a scalar set
// (msm/scalars.cuh) for MSM h.
//
// Written once against the executor interface (exec/exec.cuh): the same code runs as CUDA
// kernels or, for tests on machines without a GPU, on the host.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <new>

#include "../msm/scalars.cuh"
#include "../ntt/ntt.cuh"
#include "../pce/eval.cuh"

namespace {

using Fr = cuzk::FrMont;
using cuzk::ntt::forward_dit;
using cuzk::ntt::inverse_dif;
using cuzk::ntt::make_transform;
using cuzk::ntt::PowTable;
using cuzk::ntt::Scale;
using cuzk::ntt::table_scale;
using cuzk::ntt::Transform;
using cuzk::ntt::upload_tables;

// a = a·b·z (the six-transform quotient: C enters as coefficients, quotient())
struct PointwiseProduct {
    Fr* a;
    const Fr* b;
    Fr z;
    CUZK_HD void operator()(size_t i) const { a[i] = cuzk::mul(cuzk::mul(a[i], b[i]), z); }
};

// a = (a·b − c)·z
struct Pointwise {
    Fr* a;
    const Fr* b;
    const Fr* c;
    Fr z;
    CUZK_HD void operator()(size_t i) const {
        a[i] = cuzk::mul(cuzk::sub(cuzk::mul(a[i], b[i]), c[i]), z);
    }
};

// How H is computed. Seven transforms, the textbook way (and the CPU backend's): A, B
// and C each by an inverse and a coset transform, then h = coset-iNTT((a·b − c)·z) with
// z = Z⁻¹, a constant on the coset. Six: every step is linear and z is a constant, so
// h = z·coset-iNTT(a·b) − z·C where C, the coefficients of C, takes one inverse
// transform: C's coset transform is saved. Exactly equal, coefficient by coefficient, for
// any a, b, c. CUZK_H_TRANSFORMS=7 selects the seven, for measuring.
inline bool h_seven_transforms() {
    static const bool seven = cuzk::env_long("CUZK_H_TRANSFORMS", 6, 7, 6) == 7;
    return seven;
}

// Where the evaluations a, b, c come from: host memory (n each), or a recorded constraint
// system evaluated on the device at a witness (--pce-eval gpu): the inputs from the host,
// the aux assignment from a scalar set already there.
struct Evaluations {
    const Fr* host[3] = {nullptr, nullptr, nullptr};
    size_t n = 0;
    const cuzk::PceSet* pce = nullptr;
    const Fr* inputs = nullptr;
    size_t n_inputs = 0;
    const cuzk::ScalarSet* aux = nullptr;
    float* ms_eval = nullptr;  // the evaluation's and check's device time
};

// H into host memory h, or (h_set not null) into a new scalar set *h_set, for an MSM that
// reads it where it is.
template <class Exec>
int quotient(Exec& ex, const Evaluations& ev, unsigned log_m, const CuzkPowTables& tables,
             const Fr& z_inv, Fr* h, cuzk::ScalarSet* h_set, float* ms) {
    const uint64_t m = 1ull << log_m;
    const size_t n = ev.pce ? ev.pce->rows : ev.n;
    if (n > m) {
        snprintf(ex.err, ex.errlen, "%zu evaluations do not fit the domain 2^%u", n, log_m);
        return -1;
    }
    typename Exec::template Buf<Fr> da, db, dc, dtab, own_h;
    auto& dh = h_set ? cuzk::storage(*h_set, ex) : own_h;
    CUZK_RC(ex.alloc(da, m, "NTT a"));
    CUZK_RC(ex.alloc(db, m, "NTT b"));
    CUZK_RC(ex.alloc(dc, m, "NTT c"));
    CUZK_RC(ex.alloc(dh, m - 1, "NTT h"));
    PowTable pt[4];  // ω, ω⁻¹, m⁻¹·g^e, m⁻¹·g^−e
    CUZK_RC(upload_tables(ex, dtab, tables, 4, pt));
    Transform<Exec> fwd, inv;
    CUZK_RC(make_transform(ex, m, pt[0], tables.lo[0], tables.lo_len, tables.hi[0],
                           tables.hi_len, &fwd));
    CUZK_RC(make_transform(ex, m, pt[1], tables.lo[1], tables.lo_len, tables.hi[1],
                           tables.hi_len, &inv));
    Fr* bufs[3] = {da.ptr, db.ptr, dc.ptr};
    if (ev.pce) {
        typename Exec::Timer t_eval;
        CUZK_RC(ex.start(t_eval));
        CUZK_RC(cuzk::pce_eval(ex, *ev.pce, ev.inputs, ev.n_inputs, ev.aux->ptr(), ev.aux->n,
                               bufs));
        CUZK_RC(ex.stop(t_eval));
        CUZK_RC(ex.sync("PCE evaluation"));
        if (ev.ms_eval) CUZK_RC(ex.elapsed(t_eval, ev.ms_eval));
    }
    // Each input's upload overlaps the transforms of the one before it (kernels queue on
    // the default stream, the copy runs beside them); the timers cover the kernels only.
    CUZK_RC(ex.sync_stream("NTT buffers"));
    const bool seven = h_seven_transforms();
    // Six transforms: C's coefficients times z·m⁻¹ (the third table's entry 0 is m⁻¹·g⁰),
    // bit-reversed, in place.
    Scale c_scale;
    c_scale.kind = Scale::CONSTANT;
    c_scale.c = cuzk::mul(cuzk::mul(tables.hi[2][0], tables.lo[2][0]), z_inv);
    typename Exec::Timer timer[4];
    for (int k = 0; k < 3; ++k) {
        if (!ev.pce) CUZK_RC(ex.upload_overlapped(bufs[k], ev.host[k], n));
        CUZK_RC(ex.start(timer[k]));
        CUZK_RC(ex.zero(bufs[k] + n, m - n));
        if (k < 2 || seven) {
            CUZK_RC(inverse_dif(ex, bufs[k], inv, table_scale(pt[2])));  // then coset scale
            CUZK_RC(forward_dit(ex, bufs[k], fwd));
        } else {
            CUZK_RC(inverse_dif(ex, bufs[k], inv, c_scale));
        }
        CUZK_RC(ex.stop(timer[k]));
    }
    CUZK_RC(ex.start(timer[3]));
    // Then coset unscale, into h in natural order (m − 1 coefficients).
    if (seven) {
        CUZK_RC(ex.launch(m, Pointwise{da.ptr, db.ptr, dc.ptr, z_inv}, "NTT (ab − c)/Z", 256));
        CUZK_RC(inverse_dif(ex, da.ptr, inv, table_scale(pt[3]), dh.ptr, m - 1));
    } else {
        CUZK_RC(ex.launch(m, PointwiseProduct{da.ptr, db.ptr, z_inv}, "NTT ab/Z", 256));
        CUZK_RC(inverse_dif(ex, da.ptr, inv, table_scale(pt[3]), dh.ptr, m - 1, dc.ptr));
    }
    CUZK_RC(ex.stop(timer[3]));
    CUZK_RC(ex.sync("NTT quotient kernels"));
    if (ms) {
        *ms = 0;
        for (auto& t : timer) {
            float part;
            CUZK_RC(ex.elapsed(t, &part));
            *ms += part;
        }
    }
    if (h_set) {
        h_set->n = m - 1;
        return 0;
    }
    return ex.download(h, dh.ptr, m - 1);
}
}  // namespace

// H from the evaluations a, b, c (n ≤ m = 2^log_m each, zero-padded to m): writes m − 1
// coefficients to h (host buffers), or, when h_set is not null, leaves them in a new
// scalar set *h_set (cuzk_scalars_free) for an MSM to read on the device. tables: ω,
// ω⁻¹, m⁻¹·g^e, m⁻¹·g^−e; *z_inv = (g^m − 1)⁻¹. *ms gets the kernels' device time (CUDA
// events; uploads and download excluded). emulate ≠ 0 runs on the host.
// Returns 0, or non-zero with err set.
extern "C" int cuzk_ntt_quotient(const Fr* a, const Fr* b, const Fr* c, size_t n,
                                 unsigned log_m, CuzkPowTables tables, const Fr* z_inv, Fr* h,
                                 void** h_set, int emulate, float* ms, char* err,
                                 size_t errlen) {
    if (log_m > 32 || n > (1ull << log_m)) {
        snprintf(err, errlen, "cuzk_ntt_quotient: %zu evaluations do not fit the domain 2^%u",
                 n, log_m);
        return -1;
    }
    cuzk::ScalarSet* set = nullptr;
    if (h_set) {
        *h_set = nullptr;
        set = new (std::nothrow) cuzk::ScalarSet{};
        if (!set) {
            snprintf(err, errlen, "cuzk_ntt_quotient: out of host memory");
            return -1;
        }
        set->emulate = emulate != 0;
    }
    Evaluations ev;
    ev.host[0] = a;
    ev.host[1] = b;
    ev.host[2] = c;
    ev.n = n;
    int rc = 0;
    if (log_m > 0)  // m = 1: H has no coefficients
        rc = cuzk::with_exec(emulate != 0, err, errlen, "NTT", [&](auto& ex) {
            return quotient(ex, ev, log_m, tables, *z_inv, h, set, ms);
        });
    if (set && rc != 0) delete set;
    if (set && rc == 0) *h_set = set;
    return rc;
}

// cuzk_ntt_quotient with the evaluations computed on the device (--pce-eval gpu) from the
// recording `pce` (cuzk_pce_new) at the witness: n_inputs inputs in host memory, the aux
// assignment in the scalar set `aux` (made with the same emulate). H stays on the device
// in a new scalar set *h_set. *ms_eval gets the evaluation's device time, *ms the
// transforms'. A witness that does not satisfy the recording fails, naming the row.
extern "C" int cuzk_ntt_quotient_pce(const void* pce, const Fr* inputs, size_t n_inputs,
                                     const void* aux, unsigned log_m, CuzkPowTables tables,
                                     const Fr* z_inv, void** h_set, int emulate, float* ms_eval,
                                     float* ms, char* err, size_t errlen) {
    *h_set = nullptr;
    const auto* p = (const cuzk::PceSet*)pce;
    const auto* w = (const cuzk::ScalarSet*)aux;
    if (log_m == 0 || log_m > 32 || p->emulate != (emulate != 0) || w->emulate != p->emulate) {
        snprintf(err, errlen, "cuzk_ntt_quotient_pce: domain 2^%u, or the recording, witness "
                 "and call disagree on emulation", log_m);
        return -1;
    }
    auto* set = new (std::nothrow) cuzk::ScalarSet{};
    if (!set) {
        snprintf(err, errlen, "cuzk_ntt_quotient_pce: out of host memory");
        return -1;
    }
    set->emulate = emulate != 0;
    Evaluations ev;
    ev.pce = p;
    ev.inputs = inputs;
    ev.n_inputs = n_inputs;
    ev.aux = w;
    ev.ms_eval = ms_eval;
    const int rc = cuzk::with_exec(emulate != 0, err, errlen, "NTT", [&](auto& ex) {
        return quotient(ex, ev, log_m, tables, *z_inv, nullptr, set, ms);
    });
    if (rc != 0) {
        delete set;
        return rc;
    }
    *h_set = set;
    return 0;
}
