// Short Weierstrass curve y² = x³ + b (a = 0) over a field F, one template for G1
// (F = Fp) and G2 (F = Fp2). The group law never uses b, so it needs no curve constant.
//
// Representations:
//   Affine<F>   {x, y}: blst's blst_p1_affine / blst_p2_affine layout (Montgomery).
//               blst writes the point at infinity as x = y = 0; (0, 0) is not on the
//               curve (b ≠ 0), so the encoding is unambiguous.
//   XYZZ<F>     {X, Y, ZZ, ZZZ} with x = X/ZZ, y = Y/ZZZ (ZZ³ = ZZZ²), the bucket
//               accumulator: mixed addition costs 8M + 2S. Infinity: ZZ = ZZZ = 0.
//               Y3's two products and their difference take one reduction (mul_sub).
//   Jacobian<F> {X, Y, Z} with x = X/Z², y = Y/Z³: blst_p1 / blst_p2 layout, what
//               blstrs' G1Projective / G2Projective hold. Infinity: all zero (blst's).
// Formulas: the "xyzz" coordinate system of the Explicit-Formulas Database
// (madd-2008-s, add-2008-s, dbl-2008-s-1, mdbl-2008-s-1), with the exceptional cases
// (equal points, opposite points, infinity) handled explicitly.
#pragma once
#include "../ff/fp2.cuh"

namespace cuzk {

template <class F>
struct Affine {
    F x, y;
};

template <class F>
struct XYZZ {
    F x, y, zz, zzz;
};

template <class F>
struct Jacobian {
    F x, y, z;
};

static_assert(sizeof(Affine<Fp>) == 96 && sizeof(Jacobian<Fp>) == 144, "blst_p1 layout");
static_assert(sizeof(Affine<Fp2>) == 192 && sizeof(Jacobian<Fp2>) == 288, "blst_p2 layout");

template <class F>
CUZK_HD bool is_inf(const Affine<F>& p) {
    return is_zero(p.x) && is_zero(p.y);
}

template <class F>
CUZK_HD bool is_inf(const XYZZ<F>& p) {
    return is_zero(p.zz);
}

template <class F>
CUZK_HD XYZZ<F> xyzz_inf() {
    return {F::zero(), F::zero(), F::zero(), F::zero()};
}

// The affine point, negated when `negate` (the sign of a signed digit).
template <class F>
CUZK_HD XYZZ<F> to_xyzz(const Affine<F>& a, bool negate) {
    if (is_inf(a)) return xyzz_inf<F>();
    return {a.x, negate ? neg(a.y) : a.y, F::one(), F::one()};
}

template <class F>
CUZK_HD XYZZ<F> pneg(const XYZZ<F>& p) {
    return {p.x, neg(p.y), p.zz, p.zzz};
}

// 2p, dbl-2008-s-1 (a = 0): U = 2Y, V = U², W = U·V, S = X·V, M = 3X²,
// X3 = M² − 2S, Y3 = M(S − X3) − W·Y, ZZ3 = V·ZZ, ZZZ3 = W·ZZZ.
// Points of G1/G2 other than infinity never have y = 0 (that would be 2-torsion), so
// no further special case.
template <class F>
CUZK_HD_CALL XYZZ<F> pdbl(const XYZZ<F>& p) {
    if (is_inf(p)) return p;
    const F u = dbl(p.y);
    const F v = sqr(u);
    const F w = mul(u, v);
    const F s = mul(p.x, v);
    const F x2 = sqr(p.x);
    const F m = add(dbl(x2), x2);
    XYZZ<F> r;
    r.x = sub(sub(sqr(m), s), s);
    r.y = mul_sub(m, sub(s, r.x), w, p.y);
    r.zz = mul(v, p.zz);
    r.zzz = mul(w, p.zzz);
    return r;
}

// 2a for an affine a (mdbl-2008-s-1: dbl with ZZ = ZZZ = 1).
template <class F>
CUZK_HD_CALL XYZZ<F> pdbl_affine(const Affine<F>& a) {
    if (is_inf(a)) return xyzz_inf<F>();
    const F u = dbl(a.y);
    const F v = sqr(u);
    const F w = mul(u, v);
    const F s = mul(a.x, v);
    const F x2 = sqr(a.x);
    const F m = add(dbl(x2), x2);
    XYZZ<F> r;
    r.x = sub(sub(sqr(m), s), s);
    r.y = mul_sub(m, sub(s, r.x), w, a.y);
    r.zz = v;
    r.zzz = w;
    return r;
}

// p + a, a affine (madd-2008-s): U2 = x2·ZZ1, S2 = y2·ZZZ1, P = U2 − X1, R = S2 − Y1,
// PP = P², PPP = P·PP, Q = X1·PP, X3 = R² − PPP − 2Q, Y3 = R(Q − X3) − Y1·PPP,
// ZZ3 = ZZ1·PP, ZZZ3 = ZZZ1·PPP. P = 0 means equal x: the same point (R = 0, double)
// or its negation (R ≠ 0, infinity).
template <class F>
CUZK_HD_CALL XYZZ<F> padd_affine(const XYZZ<F>& p, const Affine<F>& a) {
    if (is_inf(a)) return p;
    if (is_inf(p)) return to_xyzz(a, false);
    const F u2 = mul(a.x, p.zz);
    const F s2 = mul(a.y, p.zzz);
    const F pp_ = sub(u2, p.x);
    const F r_ = sub(s2, p.y);
    if (is_zero(pp_)) {
        if (is_zero(r_)) return pdbl_affine(a);
        return xyzz_inf<F>();
    }
    const F pp = sqr(pp_);
    const F ppp = mul(pp_, pp);
    const F q = mul(p.x, pp);
    XYZZ<F> r;
    r.x = sub(sub(sqr(r_), ppp), dbl(q));
    r.y = mul_sub(r_, sub(q, r.x), p.y, ppp);
    r.zz = mul(p.zz, pp);
    r.zzz = mul(p.zzz, ppp);
    return r;
}

// p + q (add-2008-s): U1 = X1·ZZ2, U2 = X2·ZZ1, S1 = Y1·ZZZ2, S2 = Y2·ZZZ1, P = U2 − U1,
// R = S2 − S1, PP = P², PPP = P·PP, Q = U1·PP, X3 = R² − PPP − 2Q, Y3 = R(Q − X3) − S1·PPP,
// ZZ3 = ZZ1·ZZ2·PP, ZZZ3 = ZZZ1·ZZZ2·PPP.
template <class F>
CUZK_HD_CALL XYZZ<F> padd(const XYZZ<F>& p, const XYZZ<F>& q) {
    if (is_inf(q)) return p;
    if (is_inf(p)) return q;
    const F u1 = mul(p.x, q.zz);
    const F u2 = mul(q.x, p.zz);
    const F s1 = mul(p.y, q.zzz);
    const F s2 = mul(q.y, p.zzz);
    const F pp_ = sub(u2, u1);
    const F r_ = sub(s2, s1);
    if (is_zero(pp_)) {
        if (is_zero(r_)) return pdbl(p);
        return xyzz_inf<F>();
    }
    const F pp = sqr(pp_);
    const F ppp = mul(pp_, pp);
    const F q_ = mul(u1, pp);
    XYZZ<F> r;
    r.x = sub(sub(sqr(r_), ppp), dbl(q_));
    r.y = mul_sub(r_, sub(q_, r.x), s1, ppp);
    r.zz = mul(mul(p.zz, q.zz), pp);
    r.zzz = mul(mul(p.zzz, q.zzz), ppp);
    return r;
}

// k·p for a small k, double-and-add from the top bit.
template <class F>
CUZK_HD XYZZ<F> pmul_small(const XYZZ<F>& p, uint32_t k) {
    XYZZ<F> acc = xyzz_inf<F>();
    int top = 31;
    while (top >= 0 && !((k >> top) & 1)) --top;
    for (int bit = top; bit >= 0; --bit) {
        acc = pdbl(acc);
        if ((k >> bit) & 1) acc = padd(acc, p);
    }
    return acc;
}

// Jacobian with Z = ZZ·ZZZ (no inversion): X' = X·ZZ·ZZZ², Y' = Y·ZZ³·ZZZ², so that
// X'/Z'² = X/ZZ and Y'/Z'³ = Y/ZZZ. Infinity becomes blst's all-zero point.
template <class F>
CUZK_HD Jacobian<F> to_jacobian(const XYZZ<F>& p) {
    if (is_inf(p)) return {F::zero(), F::zero(), F::zero()};
    const F z = mul(p.zz, p.zzz);
    const F zzz2 = sqr(p.zzz);
    const F zz3 = mul(sqr(p.zz), p.zz);
    return {mul(mul(p.x, p.zz), zzz2), mul(mul(p.y, zz3), zzz2), z};
}

}  // namespace cuzk
