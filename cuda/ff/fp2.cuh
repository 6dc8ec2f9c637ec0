// Fp2 = Fp[u]/(u² + 1), c0 + c1·u: the layout of blst's blst_fp2 (c0 then c1). The
// function names match fp.cuh's so the curve code (ec/xyzz.cuh) is one template over
// either field.
#pragma once
#include "fp.cuh"

namespace cuzk {

struct Fp2 {
    Fp c0, c1;

    CUZK_HD static Fp2 zero() { return {Fp::zero(), Fp::zero()}; }
    CUZK_HD static Fp2 one() { return {Fp::one(), Fp::zero()}; }
};
static_assert(sizeof(Fp2) == 96, "Fp2 must match blst_fp2");

CUZK_HD bool is_zero(const Fp2& a) { return is_zero(a.c0) && is_zero(a.c1); }
CUZK_HD bool eq(const Fp2& a, const Fp2& b) { return eq(a.c0, b.c0) && eq(a.c1, b.c1); }
CUZK_HD Fp2 add(const Fp2& a, const Fp2& b) { return {add(a.c0, b.c0), add(a.c1, b.c1)}; }
CUZK_HD Fp2 dbl(const Fp2& a) { return {dbl(a.c0), dbl(a.c1)}; }
CUZK_HD Fp2 sub(const Fp2& a, const Fp2& b) { return {sub(a.c0, b.c0), sub(a.c1, b.c1)}; }
CUZK_HD Fp2 neg(const Fp2& a) { return {neg(a.c0), neg(a.c1)}; }

// Karatsuba with lazy reduction: (a0 + a1u)(b0 + b1u) = (a0b0 − a1b1) +
// ((a0 + a1)(b0 + b1) − a0b0 − a1b1)u from three wide (unreduced) Fp products, and one
// Montgomery reduction per coefficient instead of one per product: two reductions, not
// three (a reduction is as many word products as a multiplication). Bounds, p < 2^381,
// R = 2^384: a0 + a1, b0 + b1 < 2p fit the words unreduced; c1 = a0b1 + a1b0 < 2p² < pR;
// c0 = a0b0 − a1b1, plus pR when negative, lies in [0, pR); redc needs < pR.
CUZK_HD_OUTLINE Fp2 mul(const Fp2& a, const Fp2& b) {
    using P = FpParams;
    constexpr int n = 2 * P::N;
    uint32_t a0[n], a1[n], b0[n], b1[n], sa[n], sb[n];
    carry::split<P>(a.c0.l, a0);
    carry::split<P>(a.c1.l, a1);
    carry::split<P>(b.c0.l, b0);
    carry::split<P>(b.c1.l, b1);
    carry::add_words<n>(a0, a1, sa);  // < 2p: no carry out
    carry::add_words<n>(b0, b1, sb);
    uint32_t v0[2 * n], v1[2 * n], s[2 * n];
    carry::mul_wide<P>(a0, b0, v0);
    carry::mul_wide<P>(a1, b1, v1);
    carry::mul_wide<P>(sa, sb, s);
    carry::sub_words<2 * n>(s, v0, s);  // never borrows: s ≥ v0 + v1
    carry::sub_words<2 * n>(s, v1, s);
    const uint32_t neg = carry::sub_words<2 * n>(v0, v1, v0);
    // Negative: add p·R, i.e. p to the high half (the carry out cancels the borrow).
    uint32_t pm[n];
CUZK_UNROLL
    for (int i = 0; i < n; ++i) pm[i] = carry::p32<P>(i) & neg;
    carry::add_words<n>(v0 + n, pm, v0 + n);
    Fp2 r;
    carry::redc<P>(v0, r.c0.l);
    carry::redc<P>(s, r.c1.l);
    return r;
}

// a·b − c·d: as two products (the lazy form would need a wider bound than redc's).
CUZK_HD Fp2 mul_sub(const Fp2& a, const Fp2& b, const Fp2& c, const Fp2& d) {
    return sub(mul(a, b), mul(c, d));
}

// (a0 + a1u)² = (a0 + a1)(a0 − a1) + 2a0a1·u, two Fp products.
CUZK_HD_OUTLINE Fp2 sqr(const Fp2& a) {
    const Fp t = mul(a.c0, a.c1);
    return {mul(add(a.c0, a.c1), sub(a.c0, a.c1)), dbl(t)};
}

}  // namespace cuzk
