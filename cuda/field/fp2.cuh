// Fp2 = Fp[u]/(u² + 1), c0 + c1·u: the layout of blst's blst_fp2 (c0 then c1). The
// function names match fp.cuh's so the curve code (curve/xyzz.cuh) is one template over
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

// Karatsuba: (a0 + a1u)(b0 + b1u) = (a0b0 − a1b1) + ((a0 + a1)(b0 + b1) − a0b0 − a1b1)u,
// three Fp products instead of four.
CUZK_HD_OUTLINE Fp2 mul(const Fp2& a, const Fp2& b) {
    const Fp v0 = mul(a.c0, b.c0);
    const Fp v1 = mul(a.c1, b.c1);
    const Fp s = mul(add(a.c0, a.c1), add(b.c0, b.c1));
    return {sub(v0, v1), sub(sub(s, v0), v1)};
}

// (a0 + a1u)² = (a0 + a1)(a0 − a1) + 2a0a1·u, two Fp products.
CUZK_HD_OUTLINE Fp2 sqr(const Fp2& a) {
    const Fp t = mul(a.c0, a.c1);
    return {mul(add(a.c0, a.c1), sub(a.c0, a.c1)), dbl(t)};
}

}  // namespace cuzk
