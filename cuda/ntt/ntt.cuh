// The NTT as the quotient H (groth16/quotient.cu) and cuzk_ntt (ntt.cu) use it: the power
// tables, a transform's plan and tables (Transform), and its passes over memory, by the
// inverse (DIF) or forward (DIT) network. The kernels and the host code that runs them
// (make_transform, inverse_dif, forward_dit) are compiled once, in ntt.cu, for both
// executors; the quotient, in a file of its own, calls them there (build.rs compiles each
// file as whole-program device code: no kernel calls device code of another file).
#pragma once
#include <cstddef>
#include <cstdint>

#include "../exec/exec.cuh"
#include "../ff/fp.cuh"

// x^e = hi[k][e >> L] · lo[k][e & (2^L − 1)] for four bases x; ntt.rs builds them.
struct CuzkPowTables {
    const cuzk::FrMont* lo[4];
    const cuzk::FrMont* hi[4];
    size_t lo_len;
    size_t hi_len;
    unsigned L;
};

namespace cuzk {
namespace ntt {

using Fr = FrMont;

struct PowTable {
    const Fr* lo;
    const Fr* hi;
    unsigned L;
    CUZK_HD Fr at(uint64_t e) const { return cuzk::mul(hi[e >> L], lo[e & ((1ull << L) - 1)]); }
};

// What the last DIF pass multiplies its outputs by: nothing, scale^rev(index) from a
// power table (the coset scaling that follows an inverse transform, m⁻¹ included), or one
// constant (m⁻¹ of a plain inverse transform: one product instead of two).
struct Scale {
    enum Kind { NONE, TABLE, CONSTANT } kind = NONE;
    PowTable table{};
    Fr c{};
};
inline Scale table_scale(const PowTable& t) {
    Scale s;
    s.kind = Scale::TABLE;
    s.table = t;
    return s;
}

// r[i] = ω_(2^R)^i for i < 2^(R−1): the twiddles of every stage of a pass, read without a
// product (R ≥ the pass's K).
struct Roots {
    const Fr* r;
    unsigned R;
};

// One pass over memory: stages [s, s + K), a block taking 2^q of the 2^K-point
// sub-transforms (plan() and FusedStages in ntt.cu).
struct Pass {
    unsigned s, K, q;
};

// A transform of m = 2^log_m by ω = w: its passes, their roots of unity (2^(R−1) of them,
// R the largest pass: every pass's K ≤ R ≤ log_m) and twist tables. The tables depend on
// (m, ω) only: on the GPU they are made once per device, m and ω and kept for the process
// (like sppark's precomputed twiddles: the prover's partitions and a benchmark's runs
// share them); the emulation makes them per call.
struct Tables {
    const Fr* roots;
    const Fr* tw[64];  // per pass: its twist table, or null
};
template <class Exec>
struct Transform {
    uint64_t m;
    Pass passes[64];
    int count;
    Roots roots;
    PowTable w;
    Tables tab;
    typename Exec::template Buf<Fr> buf;  // the tables, when not kept
};

// The first `count` of the host's power tables, uploaded into buf; out[k] reads table k.
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

// w: ω's power tables on the device; w_lo_host, w_hi_host: the same on the host, whose
// first entries (ω among them) key the kept tables.
template <class Exec>
int make_transform(Exec& ex, uint64_t m, PowTable w, const Fr* w_lo_host, size_t lo_len,
                   const Fr* w_hi_host, size_t hi_len, Transform<Exec>* t);

// Natural-order evaluations → bit-reversed coefficients ·m, then each multiplied by
// scale^rev(j) or a constant (m⁻¹ and the coset factors live in that table). With
// out, the coefficients go there in natural order instead, the first out_len of them.
// With sub too, out gets each coefficient less the one sub holds (bit-reversed, reduced).
// t: the transform by ω⁻¹.
template <class Exec>
int inverse_dif(Exec& ex, Fr* x, const Transform<Exec>& t, const Scale& scale,
                Fr* out = nullptr, uint64_t out_len = 0, const Fr* sub = nullptr);

// Bit-reversed coefficients → natural-order evaluations (the DIT passes), by t's ω.
template <class Exec>
int forward_dit(Exec& ex, Fr* x, const Transform<Exec>& t);

}  // namespace ntt
}  // namespace cuzk
