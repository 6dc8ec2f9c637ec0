// Radix-2 NTT over Fr and the Groth16 quotient H = (A·B − C)/Z, computed exactly as the
// CPU backend does (prove/cpu/fft.rs): iNTT, coset NTT, pointwise (a·b − c)·Z⁻¹, coset
// iNTT, keep the m − 1 low coefficients.
//
// Orders: forward transforms are decimation in time (bit-reversed in, natural out), inverse
// ones decimation in frequency (natural in, bit-reversed out), so the pipeline needs no
// permutation pass except the last, into natural order for the H MSM. Scaling a
// bit-reversed coefficient vector by powers multiplies position j by s^rev(j).
//
// Powers (twiddles ω^e, coset factors g^e) come from two small tables each,
// x^e = hi[e >> L] · lo[e & (2^L − 1)], built on the host: no device memory proportional
// to the domain for them.
//
// Written once against the executor interface (exec.cuh): the same per-thread code runs
// as CUDA kernels or, for tests on machines without a GPU, on the host. One launch per
// butterfly stage in global memory: simple and correct first; fusing stages in shared
// memory is the next step (docs/PERF.md).
#include <chrono>
#include <cstdint>

#include "../exec.cuh"
#include "../field/fp.cuh"

namespace {

using Fr = cuzk::FrMont;

struct PowTable {
    const Fr* lo;
    const Fr* hi;
    unsigned L;
    CUZK_HD Fr at(uint64_t e) const { return cuzk::mul(hi[e >> L], lo[e & ((1ull << L) - 1)]); }
};

CUZK_HD uint64_t rev(uint64_t i, unsigned log_m) {
#ifdef __CUDA_ARCH__
    return log_m == 0 ? 0 : (__brevll(i) >> (64 - log_m));
#else
    uint64_t r = 0;
    for (unsigned b = 0; b < log_m; ++b) r |= ((i >> b) & 1) << (log_m - 1 - b);
    return r;
#endif
}

// Butterfly t of a stage with blocks of 2·half: positions lo, lo + half; twiddle
// ω_m^(j·m/(2·half)) for j = t mod half.
struct Butterfly {
    uint64_t lo, hi, e;
    CUZK_HD Butterfly(uint64_t t, uint64_t m, uint64_t half) {
        const uint64_t j = t & (half - 1);
        lo = ((t - j) << 1) + j;
        hi = lo + half;
        e = j * (m / (2 * half));
    }
};

// Decimation in time (Cooley–Tukey): u + w·v, u − w·v.
struct DitStage {
    Fr* x;
    uint64_t m, half;
    PowTable w;
    CUZK_HD void operator()(size_t t) const {
        const Butterfly b(t, m, half);
        const Fr u = x[b.lo], v = cuzk::mul(x[b.hi], w.at(b.e));
        x[b.lo] = cuzk::add(u, v);
        x[b.hi] = cuzk::sub(u, v);
    }
};

// Decimation in frequency (Gentleman–Sande): u + v, (u − v)·w.
struct DifStage {
    Fr* x;
    uint64_t m, half;
    PowTable w;
    CUZK_HD void operator()(size_t t) const {
        const Butterfly b(t, m, half);
        const Fr u = x[b.lo], v = x[b.hi];
        x[b.lo] = cuzk::add(u, v);
        x[b.hi] = cuzk::mul(cuzk::sub(u, v), w.at(b.e));
    }
};

// x[j] *= s^rev(j)
struct ScaleBitrev {
    Fr* x;
    unsigned log_m;
    PowTable s;
    CUZK_HD void operator()(size_t j) const { x[j] = cuzk::mul(x[j], s.at(rev(j, log_m))); }
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

// out[i] = x[rev(i)]
struct GatherBitrev {
    Fr* out;
    const Fr* x;
    unsigned log_m;
    CUZK_HD void operator()(size_t i) const { out[i] = x[rev(i, log_m)]; }
};

}  // namespace

// x^e = hi[k][e >> L] · lo[k][e & (2^L − 1)] for four bases x; ntt.rs builds them.
struct CuzkPowTables {
    const Fr* lo[4];
    const Fr* hi[4];
    size_t lo_len;
    size_t hi_len;
    unsigned L;
};

namespace {

template <class Exec>
int upload_tables(Exec& ex, typename Exec::template Buf<Fr>& buf, const CuzkPowTables& t,
                  int count, PowTable* out) {
    const size_t per = t.lo_len + t.hi_len;
    CUZK_RC(ex.alloc(buf, count * per, "NTT power tables"));
    for (int k = 0; k < count; ++k) {
        Fr* lo = buf.ptr + k * per;
        Fr* hi = lo + t.lo_len;
        CUZK_RC(ex.upload(lo, t.lo[k], t.lo_len));
        CUZK_RC(ex.upload(hi, t.hi[k], t.hi_len));
        out[k] = PowTable{lo, hi, t.L};
    }
    return 0;
}

// Natural-order evaluations → bit-reversed coefficients ·m (the caller scales).
template <class Exec>
int inverse_dif(Exec& ex, Fr* x, uint64_t m, PowTable w_inv) {
    for (uint64_t half = m / 2; half >= 1; half /= 2)
        CUZK_RC(ex.launch(m / 2, DifStage{x, m, half, w_inv}, "NTT DIF stage", 256));
    return 0;
}

template <class Exec>
int forward_dit(Exec& ex, Fr* x, uint64_t m, PowTable w) {
    for (uint64_t half = 1; half < m; half *= 2)
        CUZK_RC(ex.launch(m / 2, DitStage{x, m, half, w}, "NTT DIT stage", 256));
    return 0;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
        .count();
}

template <class Exec>
int quotient(Exec& ex, const Fr* a, const Fr* b, const Fr* c, size_t n, unsigned log_m,
             const CuzkPowTables& tables, const Fr& z_inv, Fr* h, float* ms) {
    const uint64_t m = 1ull << log_m;
    typename Exec::template Buf<Fr> da, db, dc, dh, dtab;
    CUZK_RC(ex.alloc(da, m, "NTT a"));
    CUZK_RC(ex.alloc(db, m, "NTT b"));
    CUZK_RC(ex.alloc(dc, m, "NTT c"));
    CUZK_RC(ex.alloc(dh, m - 1, "NTT h"));
    PowTable pt[4];  // ω, ω⁻¹, m⁻¹·g^e, m⁻¹·g^−e
    CUZK_RC(upload_tables(ex, dtab, tables, 4, pt));
    Fr* bufs[3] = {da.ptr, db.ptr, dc.ptr};
    const Fr* src[3] = {a, b, c};
    for (int k = 0; k < 3; ++k) {
        CUZK_RC(ex.upload(bufs[k], src[k], n));
        CUZK_RC(ex.zero(bufs[k] + n, m - n));
    }
    CUZK_RC(ex.sync("NTT upload"));
    const auto t0 = std::chrono::steady_clock::now();
    for (Fr* x : bufs) {
        CUZK_RC(inverse_dif(ex, x, m, pt[1]));
        CUZK_RC(ex.launch(m, ScaleBitrev{x, log_m, pt[2]}, "NTT coset scale", 256));
        CUZK_RC(forward_dit(ex, x, m, pt[0]));
    }
    CUZK_RC(ex.launch(m, Pointwise{da.ptr, db.ptr, dc.ptr, z_inv}, "NTT (ab − c)/Z", 256));
    CUZK_RC(inverse_dif(ex, da.ptr, m, pt[1]));
    CUZK_RC(ex.launch(m, ScaleBitrev{da.ptr, log_m, pt[3]}, "NTT coset unscale", 256));
    CUZK_RC(ex.launch(m - 1, GatherBitrev{dh.ptr, da.ptr, log_m}, "NTT bit reversal", 256));
    CUZK_RC(ex.sync("NTT quotient kernels"));
    if (ms) *ms = (float)ms_since(t0);
    return ex.download(h, dh.ptr, m - 1);
}

template <class Exec>
int ntt(Exec& ex, Fr* x, unsigned log_m, int inverse, const CuzkPowTables& tables, float* ms) {
    const uint64_t m = 1ull << log_m;
    typename Exec::template Buf<Fr> dx, dy, dtab;
    CUZK_RC(ex.alloc(dx, m, "NTT x"));
    CUZK_RC(ex.alloc(dy, m, "NTT out"));
    PowTable pt[3];  // ω, ω⁻¹, m⁻¹
    CUZK_RC(upload_tables(ex, dtab, tables, 3, pt));
    CUZK_RC(ex.upload(dx.ptr, x, m));
    CUZK_RC(ex.sync("NTT upload"));
    const auto t0 = std::chrono::steady_clock::now();
    CUZK_RC(inverse_dif(ex, dx.ptr, m, pt[inverse ? 1 : 0]));
    if (inverse) CUZK_RC(ex.launch(m, ScaleBitrev{dx.ptr, log_m, pt[2]}, "NTT scale", 256));
    CUZK_RC(ex.launch(m, GatherBitrev{dy.ptr, dx.ptr, log_m}, "NTT bit reversal", 256));
    CUZK_RC(ex.sync("NTT kernels"));
    if (ms) *ms = (float)ms_since(t0);
    return ex.download(x, dy.ptr, m);
}

template <class Fn>
int with_exec(int emulate, char* err, size_t errlen, Fn fn) {
    try {
        if (emulate) {
            cuzk::HostExec ex{err, errlen};
            return fn(ex);
        }
        cuzk::DeviceExec ex{err, errlen};
        return fn(ex);
    } catch (const std::exception& e) {  // never unwind into Rust
        snprintf(err, errlen, "NTT: %s", e.what());
        return -1;
    }
}

}  // namespace

// H from the evaluations a, b, c (n ≤ m = 2^log_m each, zero-padded to m): writes m − 1
// coefficients to h (host buffers). tables: ω, ω⁻¹, m⁻¹·g^e, m⁻¹·g^−e; *z_inv = (g^m − 1)⁻¹.
// *ms gets the compute time (uploads and download excluded). emulate ≠ 0 runs on the host.
// Returns 0, or non-zero with err set.
extern "C" int cuzk_ntt_quotient(const Fr* a, const Fr* b, const Fr* c, size_t n,
                                 unsigned log_m, CuzkPowTables tables, const Fr* z_inv, Fr* h,
                                 int emulate, float* ms, char* err, size_t errlen) {
    if (log_m > 32 || n > (1ull << log_m)) {
        snprintf(err, errlen, "cuzk_ntt_quotient: %zu evaluations do not fit the domain 2^%u",
                 n, log_m);
        return -1;
    }
    if (log_m == 0) return 0;  // m = 1: H has no coefficients
    return with_exec(emulate, err, errlen, [&](auto& ex) {
        return quotient(ex, a, b, c, n, log_m, tables, *z_inv, h, ms);
    });
}

// In-place NTT of x (2^log_m elements, natural order in and out): forward, or inverse
// including m⁻¹. tables: ω, ω⁻¹, and (1, m⁻¹) as the third. For tests and benchmarks.
extern "C" int cuzk_ntt(Fr* x, unsigned log_m, int inverse, CuzkPowTables tables, int emulate,
                        float* ms, char* err, size_t errlen) {
    if (log_m == 0 || log_m > 32) {
        if (log_m == 0) return 0;
        snprintf(err, errlen, "cuzk_ntt: domain 2^%u is too large", log_m);
        return -1;
    }
    return with_exec(emulate, err, errlen,
                     [&](auto& ex) { return ntt(ex, x, log_m, inverse, tables, ms); });
}
