// Montgomery products on the FP64 pipe: radix 2^51 limbs held in doubles, each partial
// product split exactly into high and low halves by two fused multiply-adds.
//
// Why: the integer products (carry.cuh) keep the IMAD pipe busy and leave the FP64 pipe
// idle (ncu, docs/PERF.md session 14). An H200 SM retires as many FP64 FMAs per cycle as
// 32-bit IMADs, so a product computed here can run beside one computed there.
//
// How a partial product a·b (a < 2^52, b < 2^51, so a·b < 2^103) is split:
//   s = fma(a, b, 2^103)        s lies in [2^103, 2^104], where the ulp is 2^51, so
//                               s = 2^103 + k·2^51 with k = a·b / 2^51 rounded;
//   t = (2^103 + 3·2^51) − s    exact: t = (3 − k)·2^51, and |3 − k| ≤ 2^52;
//   l = fma(a, b, t)            = (a·b − k·2^51) + 3·2^51, and |a·b − k·2^51| ≤ 2^50, so
//                               l lies in [2^52, 2^53), where the ulp is 1: exact.
// The bit patterns are then integers: bits(s) − bits(2^103) = k, bits(l) − bits(3·2^51) =
// a·b − k·2^51 (signed). Columns sum them in 64-bit integers (each term < 2^53, at most
// 2K of them a column), and the Montgomery reduction (redc) divides by the integer code's
// R = 2^(64N): a product here is interchangeable with one of carry.cuh's (same inputs,
// same Montgomery form, a result in [0, 2p) congruent to theirs). Every step is exact.
#pragma once
#include <cstdint>
#include <cstring>

// Included by mont.cuh once Mont is declared; its products use these when CUZK_F51 is on.
#include "mont.cuh"

namespace cuzk {
namespace f51 {

constexpr int BITS = 51;
constexpr uint64_t MASK = (1ull << BITS) - 1;

// Limbs per value (P::F51_K): Fp 8 (408 bits); Fr 5 (255 bits, the top limb of a lazy
// value below 2^256 taking a 52nd bit).
template <class P>
constexpr int K = P::F51_K;

CUZK_HD uint64_t bits(double x) {
#ifdef __CUDA_ARCH__
    return (uint64_t)__double_as_longlong(x);
#else
    uint64_t u;
    std::memcpy(&u, &x, 8);
    return u;
#endif
}
CUZK_HD double from_bits(uint64_t u) {
#ifdef __CUDA_ARCH__
    return __longlong_as_double((long long)u);
#else
    double x;
    std::memcpy(&x, &u, 8);
    return x;
#endif
}
CUZK_HD double fma_rn(double a, double b, double c) {
#ifdef __CUDA_ARCH__
    return __fma_rn(a, b, c);
#else
    return __builtin_fma(a, b, c);
#endif
}

constexpr double SPLIT = 0x1p103;
constexpr double SPLIT_LO = 0x1p103 + 0x3p51;
constexpr uint64_t SPLIT_BITS = 0x4660000000000000ull;     // bits(2^103)
constexpr uint64_t LO_BITS = 0x4338000000000000ull;        // bits(3·2^51)
constexpr uint64_t TWO52_BITS = 0x4330000000000000ull;     // bits(2^52)

// An integer below 2^52 as a double (exact): 2^52 + x has x as its mantissa.
CUZK_HD double to_double(uint64_t x) {
    return from_bits(TWO52_BITS | x) - 0x1p52;
}

// Bits [51j, 51j + 51) of a little-endian u64 array of n limbs.
CUZK_HD constexpr uint64_t field51(const uint64_t* x, int n, int j) {
    const int bit = BITS * j, q = bit / 64, sh = bit % 64;
    uint64_t v = q < n ? x[q] >> sh : 0;
    if (sh > 64 - BITS && q + 1 < n) v |= x[q + 1] << (64 - sh);
    return v & MASK;
}

// Limb j of the modulus and −p⁻¹ mod 2^51 (P::INV is −p⁻¹ mod 2^64).
template <class P>
CUZK_HD constexpr uint64_t p51(int j) {
    uint64_t p[P::N] = {};
    for (int i = 0; i < P::N; ++i) p[i] = P::p(i);
    return field51(p, P::N, j);
}

template <class P>
struct F51 {
    double d[K<P>];
};

// A value below 2^(64N) (a Mont<P>'s limbs, reduced or lazy) in radix 2^51. The top limb
// may reach 2^52 (for lazy values of Fr: 256 bits in five limbs), which the split allows
// for one operand of each product.
template <class P>
CUZK_HD F51<P> to_f51(const Mont<P>& a) {
    F51<P> r;
CUZK_UNROLL
    for (int j = 0; j < K<P>; ++j) {
        uint64_t v = field51(a.l, P::N, j);
        // The top limb takes the bits above 51K as well.
        if (j == K<P> - 1 && BITS * K<P> < 64 * P::N) {
            const int bit = BITS * j, q = bit / 64, sh = bit % 64;
            v = a.l[q] >> sh;
            if (q + 1 < P::N) v |= a.l[q + 1] << (64 - sh);
        }
        r.d[j] = to_double(v);
    }
    return r;
}

// a·b into columns of 64-bit integers (two's complement; the true sums are signed and
// below 2^57 in magnitude): low halves at i + j, high halves at i + j + 1.
// One partial product x·y (x < 2^52, y < 2^51) into columns i (low) and i + 1 (high).
CUZK_HD void term(double x, double y, uint64_t* c, int i) {
    const double s = fma_rn(x, y, SPLIT);
    const double l = fma_rn(x, y, SPLIT_LO - s);
    c[i + 1] += bits(s) - SPLIT_BITS;
    c[i] += bits(l) - LO_BITS;
}

template <class P>
CUZK_HD void clear(uint64_t* c) {
CUZK_UNROLL
    for (int i = 0; i < 2 * K<P> + 1; ++i) c[i] = 0;
}

// Adds a·b to the columns.
template <class P>
CUZK_HD void product(const double* a, const double* b, uint64_t* c) {
    constexpr int k = K<P>;
CUZK_UNROLL
    for (int i = 0; i < k; ++i) {
CUZK_UNROLL
        for (int j = 0; j < k; ++j) term(a[i], b[j], c, i + j);
    }
}

// Adds a² to the columns, each cross product once with a doubled factor (2a_i < 2^52 for
// limbs below 2^51): K(K + 1)/2 terms instead of K².
template <class P>
CUZK_HD void square(const double* a, uint64_t* c) {
    constexpr int k = K<P>;
CUZK_UNROLL
    for (int i = 0; i < k; ++i) {
        const double twice = a[i] + a[i];
        term(a[i], a[i], c, 2 * i);
CUZK_UNROLL
        for (int j = i + 1; j < k; ++j) term(twice, a[j], c, i + j);
    }
}

// m·p added at column i (m < 2^51), split like the product's terms.
template <class P>
CUZK_HD void add_mp(uint64_t* c, int i, uint64_t m) {
    const double md = to_double(m);
CUZK_UNROLL
    for (int j = 0; j < K<P>; ++j) term(md, (double)p51<P>(j), c, i + j);
}

// Montgomery reduction of the columns by the integer code's R = 2^(64N) (so a product
// here equals one of carry.cuh's): ⌊64N/51⌋ rows of 51 bits, then one row of the
// remaining ρ bits (Fr: 5 rows and 1 bit, Fp: 7 rows and 27 bits). Each row adds m·p with
// m = −c_i·p⁻¹ mod 2^bits, which clears the row's bits, and moves the carry up. The
// result (Σ c_i 2^(51i) + M·p) / R is below a·b/R + p.
template <class P>
CUZK_HD Mont<P> redc(uint64_t* c) {
    constexpr int k = K<P>;
    constexpr int rows = 64 * P::N / BITS, rho = 64 * P::N - BITS * rows;
    constexpr uint64_t inv = (uint64_t)P::INV;
CUZK_UNROLL
    for (int i = 0; i < rows; ++i) {
        add_mp<P>(c, i, (c[i] * inv) & MASK);
        // Column i is now ≡ 0 (mod 2^51): its carry moves up exactly.
        c[i + 1] += (uint64_t)((int64_t)c[i] >> BITS);
    }
    if constexpr (rho > 0) {
        const uint64_t m = (c[rows] * inv) & ((1ull << rho) - 1);
        if constexpr (rho + BITS <= 62) {
            // m·p_j fits a column as it is (Fr: m is a bit).
CUZK_UNROLL
            for (int j = 0; j < k; ++j) c[rows + j] += m * p51<P>(j);
        } else {
            add_mp<P>(c, rows, m);
        }
    }
    // Columns rows.. as 51-bit limbs (the last one wider), then shifted down by ρ bits
    // into the integer layout: limb j lands at bit 51j − ρ.
    Mont<P> r;
CUZK_UNROLL
    for (int i = 0; i < P::N; ++i) r.l[i] = 0;
CUZK_UNROLL
    for (int j = 0; j <= k && rows + j <= 2 * k; ++j) {
        uint64_t v = c[rows + j];
        if (j < k && rows + j < 2 * k) {
            c[rows + j + 1] += (uint64_t)((int64_t)v >> BITS);
            v &= MASK;
        }
        const int off = BITS * j - rho;
        if (off < 0) {
            r.l[0] |= v >> -off;
        } else if (off < 64 * P::N) {
            const int q = off / 64, sh = off % 64;
            r.l[q] |= v << sh;
            if (sh > 0 && q + 1 < P::N) r.l[q + 1] |= v >> (64 - sh);
        }
    }
    return r;
}

// a·b·R⁻¹ (R = 2^(64N), as carry.cuh's products) in [0, 2p), for b < p and a below 2p
// (Fr's a may use its top limb's 52nd bit: a < 2^256).
template <class P>
CUZK_HD Mont<P> mul(const Mont<P>& a, const Mont<P>& b) {
    const F51<P> x = to_f51(a), y = to_f51(b);
    uint64_t c[2 * K<P> + 1];
    clear<P>(c);
    product<P>(x.d, y.d, c);
    return redc<P>(c);
}

// Values whose limbs all stay below 2^51 (p < 2^(51K − 1): Fp, not Fr), for which
// squaring may double a limb and mul_sub may take p − d.
template <class P>
CUZK_HD constexpr bool narrow() {
    return 64 * P::N < BITS * K<P>;
}

// a² · R⁻¹ in [0, 2p), a < 2p.
template <class P>
CUZK_HD Mont<P> sqr(const Mont<P>& a) {
    static_assert(narrow<P>(), "f51::sqr doubles limbs");
    const F51<P> x = to_f51(a);
    uint64_t c[2 * K<P> + 1];
    clear<P>(c);
    square<P>(x.d, c);
    return redc<P>(c);
}

// (a·b − c·d) · R⁻¹ in [0, 2p) for a, b, c, d in [0, p): a·b + c·(p − d) in one set of
// columns (≡ a·b − c·d, below 2p² < pR), one reduction.
template <class P>
CUZK_HD Mont<P> mul_sub(const Mont<P>& a, const Mont<P>& b, const Mont<P>& c,
                        const Mont<P>& d) {
    static_assert(narrow<P>(), "f51::mul_sub takes p − d");
    Mont<P> pd;
    uint64_t borrow = 0;
CUZK_UNROLL
    for (int i = 0; i < P::N; ++i) {
        const u128 t = (u128)P::p(i) - d.l[i] - borrow;
        pd.l[i] = (uint64_t)t;
        borrow = (uint64_t)(t >> 64) & 1;
    }
    const F51<P> x = to_f51(a), y = to_f51(b), z = to_f51(c), w = to_f51(pd);
    uint64_t cols[2 * K<P> + 1];
    clear<P>(cols);
    product<P>(x.d, y.d, cols);
    product<P>(z.d, w.d, cols);
    return redc<P>(cols);
}

}  // namespace f51
}  // namespace cuzk
