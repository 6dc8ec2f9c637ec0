// Generic N×64-bit Montgomery arithmetic, in blst's limb layout (little-endian u64 limbs,
// values fully reduced to [0, p), Montgomery factor R = 2^(64N)). One body serves the
// base field Fp (N = 6, see fp.cuh) and the scalar field Fr (N = 4, used by the MSM to
// take scalars out of Montgomery form).
//
// Every function is __host__ __device__: the same code runs in the kernels and in the
// host emulation the tests use on machines without a GPU (exec/host_exec.cuh).
//
// A parameter set P provides:
//   static constexpr int N;                    limbs
//   static constexpr uint64_t INV;             −p⁻¹ mod 2^64
//   static constexpr bool MOD_FROM_CONSTANT_BANK; reduction reads p's words from the
//                                              constant bank (carry.cuh, redc_p)
//   CUZK_HD static constexpr uint64_t p(int);  limbs of the modulus
//   CUZK_HD static constexpr uint64_t one(int);limbs of R mod p (1 in Montgomery form)
// The limbs are functions rather than arrays because a constexpr array cannot be read
// from device code at run time; every loop below is unrolled, so p(i) folds to an
// immediate operand.
//
// Requirement: p < 2^(64N − 1), so a + b never carries out of the top limb.
#pragma once
#include <cstdint>

#ifndef CUZK_HD
#define CUZK_HD __host__ __device__ __forceinline__
// Curve additions: inlined. An out-of-line call passes its points through the stack
// (local memory), and ptxas may give the callee up to 255 registers, so the kernel could
// not be held to a register budget that keeps enough warps per SM.
#define CUZK_HD_CALL CUZK_HD
// Fp2 products stay out of line: inlined into the G2 additions they make functions so
// large that nvcc's optimiser needs tens of minutes per kernel.
#define CUZK_HD_OUTLINE inline __host__ __device__ __noinline__
#endif

// Unrolled in device code (limb indices become constants, so limbs stay in registers);
// the host compiler does not know the pragma.
#ifdef __CUDA_ARCH__
#define CUZK_UNROLL _Pragma("unroll")
#else
#define CUZK_UNROLL
#endif

#include "carry.cuh"

namespace cuzk {

typedef unsigned __int128 u128;

template <class P>
struct Mont {
    uint64_t l[P::N];

    CUZK_HD static Mont zero() {
        Mont r;
CUZK_UNROLL
        for (int i = 0; i < P::N; ++i) r.l[i] = 0;
        return r;
    }
    CUZK_HD static Mont one() {
        Mont r;
CUZK_UNROLL
        for (int i = 0; i < P::N; ++i) r.l[i] = P::one(i);
        return r;
    }
};

template <class P>
CUZK_HD bool is_zero(const Mont<P>& a) {
    uint64_t acc = 0;
CUZK_UNROLL
    for (int i = 0; i < P::N; ++i) acc |= a.l[i];
    return acc == 0;
}

template <class P>
CUZK_HD bool eq(const Mont<P>& a, const Mont<P>& b) {
    uint64_t acc = 0;
CUZK_UNROLL
    for (int i = 0; i < P::N; ++i) acc |= a.l[i] ^ b.l[i];
    return acc == 0;
}

// add, sub and mul: carry.cuh, 32-bit carry chains (PTX on the device).
template <class P>
CUZK_HD Mont<P> add(const Mont<P>& a, const Mont<P>& b) {
    Mont<P> r;
    carry::add<P>(a.l, b.l, r.l);
    return r;
}

template <class P>
CUZK_HD Mont<P> dbl(const Mont<P>& a) {
    return add(a, a);
}

template <class P>
CUZK_HD Mont<P> sub(const Mont<P>& a, const Mont<P>& b) {
    Mont<P> r;
    carry::sub<P>(a.l, b.l, r.l);
    return r;
}

template <class P>
CUZK_HD Mont<P> neg(const Mont<P>& a) {
    // p − a, except that −0 is 0 (p itself is not a reduced value).
    Mont<P> r;
    uint64_t borrow = 0;
CUZK_UNROLL
    for (int i = 0; i < P::N; ++i) {
        u128 x = (u128)P::p(i) - a.l[i] - borrow;
        r.l[i] = (uint64_t)x;
        borrow = (uint64_t)(x >> 64) & 1;
    }
    const uint64_t mask = is_zero(a) ? 0ull : ~0ull;
CUZK_UNROLL
    for (int i = 0; i < P::N; ++i) r.l[i] &= mask;
    return r;
}

// Montgomery product a·b·R⁻¹ mod p (CIOS, carry.cuh).
template <class P>
CUZK_HD Mont<P> mul_inline(const Mont<P>& a, const Mont<P>& b) {
    Mont<P> r;
    carry::mul<P>(a.l, b.l, r.l);
    return r;
}

// Fp's product is ~1,300 SASS instructions; inlined ten times into a curve addition it
// makes the MSM's inner loop ~350 KB of code, and the warps then stall mostly on
// instruction fetch (ncu, docs/PERF.md). One out-of-line copy, arguments and result by
// value (in registers), keeps the loop in the instruction cache. Fr's (NTT) stays inline.
template <class P>
__device__ __noinline__ Mont<P> mul_call(Mont<P> a, Mont<P> b) {
    return mul_inline(a, b);
}

template <class P>
CUZK_HD Mont<P> mul(const Mont<P>& a, const Mont<P>& b) {
#ifdef __CUDA_ARCH__
    if constexpr (P::N >= 6) return mul_call(a, b);
#endif
    return mul_inline(a, b);
}

// a² with the cross products once (carry.cuh, sqr_wide): ~80 % of a product's work.
template <class P>
CUZK_HD Mont<P> sqr_inline(const Mont<P>& a) {
    Mont<P> r;
    carry::sqr<P>(a.l, r.l);
    return r;
}

// a·b − c·d with one Montgomery reduction instead of two (carry.cuh, mul_sub).
template <class P>
CUZK_HD Mont<P> mul_sub_inline(const Mont<P>& a, const Mont<P>& b, const Mont<P>& c,
                               const Mont<P>& d) {
    Mont<P> r;
    carry::mul_sub<P>(a.l, b.l, c.l, d.l, r.l);
    return r;
}

// Out of line on the device for Fp, as mul (see mul_call).
template <class P>
__device__ __noinline__ Mont<P> sqr_call(Mont<P> a) {
    return sqr_inline(a);
}

template <class P>
__device__ __noinline__ Mont<P> mul_sub_call(Mont<P> a, Mont<P> b, Mont<P> c, Mont<P> d) {
    return mul_sub_inline(a, b, c, d);
}

template <class P>
CUZK_HD Mont<P> sqr(const Mont<P>& a) {
#ifdef __CUDA_ARCH__
    if constexpr (P::N >= 6) return sqr_call(a);
#endif
    return sqr_inline(a);
}

template <class P>
CUZK_HD Mont<P> mul_sub(const Mont<P>& a, const Mont<P>& b, const Mont<P>& c,
                        const Mont<P>& d) {
#ifdef __CUDA_ARCH__
    if constexpr (P::N >= 6) return mul_sub_call(a, b, c, d);
#endif
    return mul_sub_inline(a, b, c, d);
}

// ---- Lazy values: [0, 2p) instead of [0, p) ----
//
// A product whose result feeds only additions and further products need not be reduced
// below p: the Montgomery product of a reduced a and any b < R lands in [0, 2p) before its
// final conditional subtraction (carry.cuh, mul), and sums and differences stay in
// [0, 2p) with one conditional correction by 2p, as they do by p. The NTT keeps its
// elements lazy through a transform's passes and reduces them once, when its last pass
// stores them: one conditional subtraction per element instead of one per product.

// a·b·R⁻¹ in [0, 2p) for a in [0, p) and b in [0, 2p) (lazy).
template <class P>
CUZK_HD Mont<P> mul_lazy(const Mont<P>& a, const Mont<P>& b) {
    Mont<P> r;
    carry::mul<P, false>(a.l, b.l, r.l);
    return r;
}
// a + b, a − b for a, b in [0, 2p), into [0, 2p).
template <class P>
CUZK_HD Mont<P> add_lazy(const Mont<P>& a, const Mont<P>& b) {
    Mont<P> r;
    carry::add<P, 2>(a.l, b.l, r.l);
    return r;
}
template <class P>
CUZK_HD Mont<P> sub_lazy(const Mont<P>& a, const Mont<P>& b) {
    Mont<P> r;
    carry::sub<P, 2>(a.l, b.l, r.l);
    return r;
}
// A lazy value's reduced form.
template <class P>
CUZK_HD Mont<P> reduce_lazy(const Mont<P>& a) {
    Mont<P> r;
    carry::reduce<P>(a.l, r.l);
    return r;
}

// Out of Montgomery form: a·R⁻¹ mod p, the canonical little-endian integer.
template <class P>
CUZK_HD Mont<P> from_mont(const Mont<P>& a) {
    Mont<P> one_int = Mont<P>::zero();
    one_int.l[0] = 1;
    return mul(a, one_int);
}

}  // namespace cuzk
