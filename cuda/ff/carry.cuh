// Montgomery arithmetic over 32-bit words with carry chains: the bodies of add, sub and
// mul in mont.cuh, on the device and on the host alike.
//
// Why: GPUs have no 64×64→128-bit multiplier. Portable u128 code compiles every 64-bit
// product to four 32-bit multiplies plus carry fix-ups; here each 32×32 partial product is
// one PTX mad.lo/mad.hi that adds into the running sum and propagates the carry through
// the condition-code register (CC.CF).
//
// The primitives below are those PTX instructions. On the host (the emulation the tests
// run without a GPU, exec/host_exec.cuh) they are C++ with the carry flag in a thread-local
// variable, so CI checks the exact algorithm the GPU runs against blst; only the eleven
// one-line primitives differ. They follow what the GPU does, which for a flag written by a
// subtraction is not what the PTX ISA's wording suggests: sub.cc and subc compute
// a + ~b + 1 and a + ~b + CF, so after a subtraction CF is the carry of that sum, i.e.
// 1 when nothing was borrowed. subc still computes a − b − borrow, but an addc reading a
// subtraction's flag adds 1 − borrow (measured on the H200, session 15: ptxas passes the
// predicate through). Emulating exactly that makes such a mix fail in CI too.
//
// Values keep mont.cuh's layout (N little-endian u64 limbs = 2N little-endian u32 words;
// splitting a 64-bit register into its halves is free), R = 2^(64N) = 2^(32·2N).
//
// On the device the carry flag lives across consecutive asm volatile statements; NVVM
// does not schedule flag-clobbering code between them (the practice of sppark and ICICLE).
#pragma once
#include <cstdint>

// 0 turns off the reduction rows specialised to Fr's low words (low_words_special), for
// measuring.
#ifndef CUZK_SPECIAL_REDC
#define CUZK_SPECIAL_REDC 1
#endif

namespace cuzk {
namespace carry {

#ifdef __CUDA_ARCH__
#define CUZK_ASM2(op)                                                   \
    uint32_t r;                                                        \
    asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));        \
    return r;
#define CUZK_ASM3(op)                                                       \
    uint32_t r;                                                            \
    asm volatile(op " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); \
    return r;
__device__ __forceinline__ uint32_t add_cc(uint32_t a, uint32_t b) { CUZK_ASM2("add.cc.u32") }
__device__ __forceinline__ uint32_t addc_cc(uint32_t a, uint32_t b) { CUZK_ASM2("addc.cc.u32") }
__device__ __forceinline__ uint32_t addc(uint32_t a, uint32_t b) { CUZK_ASM2("addc.u32") }
__device__ __forceinline__ uint32_t sub_cc(uint32_t a, uint32_t b) { CUZK_ASM2("sub.cc.u32") }
__device__ __forceinline__ uint32_t subc_cc(uint32_t a, uint32_t b) { CUZK_ASM2("subc.cc.u32") }
__device__ __forceinline__ uint32_t subc(uint32_t a, uint32_t b) { CUZK_ASM2("subc.u32") }
__device__ __forceinline__ uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    CUZK_ASM3("mad.lo.cc.u32")
}
__device__ __forceinline__ uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    CUZK_ASM3("madc.lo.cc.u32")
}
__device__ __forceinline__ uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    CUZK_ASM3("mad.hi.cc.u32")
}
__device__ __forceinline__ uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    CUZK_ASM3("madc.hi.cc.u32")
}
#undef CUZK_ASM2
#undef CUZK_ASM3
#else
// CC.CF of the emulated thread.
inline thread_local uint32_t cf = 0;

inline uint32_t set(uint64_t wide) {
    cf = (uint32_t)(wide >> 32) & 1;
    return (uint32_t)wide;
}
inline uint32_t add_cc(uint32_t a, uint32_t b) { return set((uint64_t)a + b); }
inline uint32_t addc_cc(uint32_t a, uint32_t b) { return set((uint64_t)a + b + cf); }
inline uint32_t addc(uint32_t a, uint32_t b) { return a + b + cf; }
// a + ~b + 1 and a + ~b + CF as the GPU computes them: CF = 1 − borrow afterwards.
inline uint32_t sub_cc(uint32_t a, uint32_t b) { return set((uint64_t)a + (uint32_t)~b + 1); }
inline uint32_t subc_cc(uint32_t a, uint32_t b) { return set((uint64_t)a + (uint32_t)~b + cf); }
inline uint32_t subc(uint32_t a, uint32_t b) { return a + ~b + cf; }
inline uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    return set((uint64_t)(a * b) + c);
}
inline uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    return set((uint64_t)(a * b) + c + cf);
}
inline uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    return set((((uint64_t)a * b) >> 32) + c);
}
inline uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    return set((((uint64_t)a * b) >> 32) + c + cf);
}
#endif

// Limb i of the modulus, as a 32-bit word (folds to an immediate after unrolling).
template <class P>
CUZK_HD constexpr uint32_t p32(int i) {
    return (uint32_t)(P::p(i >> 1) >> (32 * (i & 1)));
}

// Word i of K·p for K = 1 or 2 (2p fits: p < 2^(64N − 1), mont.cuh's requirement). With
// K = 2, add and sub below keep values in [0, 2p) instead of [0, p): the lazy arithmetic
// of the NTT (mont.cuh, add_lazy).
template <class P, int K>
CUZK_HD constexpr uint32_t pk32(int i) {
    static_assert(K == 1 || K == 2, "K·p: K is 1 or 2");
    if (K == 1) return p32<P>(i);
    const int limb = i >> 1;
    const uint64_t twice = (P::p(limb) << 1) | (limb > 0 ? P::p(limb - 1) >> 63 : 0);
    return (uint32_t)(twice >> (32 * (i & 1)));
}

// The reduction's multiplier constants, −p⁻¹ mod 2^32 and the modulus words, from the
// constant bank on the device, where ptxas cannot see their values. Fr's −p⁻¹ is 2^32 − 1
// (so m = −t[i]) and its low words are 1 and 2^32 − 1; knowing that, ptxas rewrote the
// reduction rows into separate low and high halves (IMAD.X + IMAD.HI.U32.X instead of one
// IMAD.WIDE.U32.X). Fr's product: 276 SASS instructions with literals, 225 with both
// opaque (sm_90, nvcc 13.0). Fp's is 417 either way, so only −p⁻¹ is opaque for Fp
// (P::MOD_FROM_CONSTANT_BANK false): docs/PERF.md, session 8. mul() now uses Fr's low
// words itself, as additions (low_words_special), with a 0 from this bank for −t.
template <class P>
struct RedcConsts {
    uint32_t inv;
    uint32_t zero;  // 0, for negations ptxas cannot see (low_words_special)
    uint32_t p[2 * P::N];
};
template <class P>
constexpr RedcConsts<P> redc_consts_of() {
    RedcConsts<P> r{};
    r.inv = (uint32_t)P::INV;
    r.zero = 0;
    for (int i = 0; i < 2 * P::N; ++i) r.p[i] = p32<P>(i);
    return r;
}
// Declared in both compilation passes: the host pass registers device variables.
template <class P>
__constant__ RedcConsts<P> redc_consts = redc_consts_of<P>();
// −p⁻¹ mod 2^32 (P::INV is −p⁻¹ mod 2^64).
template <class P>
CUZK_HD uint32_t redc_inv() {
#ifdef __CUDA_ARCH__
    return redc_consts<P>.inv;
#else
    return (uint32_t)P::INV;
#endif
}
// 0 from the constant bank: negations that ptxas cannot see. Seeing one, it folds it
// into the products by m and splits each IMAD.WIDE in two (low_words_special).
template <class P>
CUZK_HD uint32_t opaque_zero() {
#ifdef __CUDA_ARCH__
    return redc_consts<P>.zero;
#else
    return 0;
#endif
}
// Word i of the modulus as the reduction's multiplier.
template <class P>
CUZK_HD uint32_t redc_p(int i) {
#ifdef __CUDA_ARCH__
    if (P::MOD_FROM_CONSTANT_BANK) return redc_consts<P>.p[i];
#endif
    return p32<P>(i);
}

// Moduli ≡ 1 (mod 2^32) with word 1 = 2^32 − 1, i.e. p ≡ 2^64 − 2^32 + 1 (mod 2^64), like
// Fr's r: then −p⁻¹ ≡ −1 (mod 2^32), so a reduction row's m is −t for T's word t, and
// its two low products are additions: m·1 = m (which zeroes the word, carrying iff
// t ≠ 0) and m·(2^32 − 1) = m·2^32 − m, whose low half is −m = t and whose high half is
// m − 1, or 0 when m = 0. Three of a row's 2n + 1 multiplier instructions fewer, with
// exactly the same words in the sum. Only mul() uses it: redc() serves Fp's squarings and
// Fp2 (the curve code), and no Fr code on a hot path reduces a wide product apart.
template <class P>
CUZK_HD constexpr bool low_words_special() {
    return p32<P>(0) == 1u && p32<P>(1) == 0xffffffffu;
}

template <class P>
CUZK_HD void split(const uint64_t* x, uint32_t* w) {
CUZK_UNROLL
    for (int i = 0; i < P::N; ++i) {
        w[2 * i] = (uint32_t)x[i];
        w[2 * i + 1] = (uint32_t)(x[i] >> 32);
    }
}

template <class P>
CUZK_HD void join(const uint32_t* w, uint64_t* x) {
CUZK_UNROLL
    for (int i = 0; i < P::N; ++i) x[i] = ((uint64_t)w[2 * i + 1] << 32) | w[2 * i];
}

// r = t − Kp if (carry, t) ≥ Kp else t, for (carry, t) < 2Kp; branch-free select.
template <class P, int K = 1>
CUZK_HD void reduce_once(const uint32_t* t, uint32_t carry, uint64_t* r) {
    constexpr int n = 2 * P::N;
    uint32_t d[n];
    d[0] = sub_cc(t[0], pk32<P, K>(0));
CUZK_UNROLL
    for (int i = 1; i < n; ++i) d[i] = subc_cc(t[i], pk32<P, K>(i));
    // All ones when (carry, t) − p went below zero: keep t.
    const uint32_t keep_t = subc(carry, 0);
    uint32_t o[n];
CUZK_UNROLL
    for (int i = 0; i < n; ++i) o[i] = (t[i] & keep_t) | (d[i] & ~keep_t);
    join<P>(o, r);
}

// r = a + b over `words` words; returns the carry out.
template <int words>
CUZK_HD uint32_t add_words(const uint32_t* a, const uint32_t* b, uint32_t* r) {
    r[0] = add_cc(a[0], b[0]);
CUZK_UNROLL
    for (int i = 1; i < words; ++i) r[i] = addc_cc(a[i], b[i]);
    return addc(0, 0);
}

// r = a − b over `words` words; returns all ones when it borrowed, else 0.
template <int words>
CUZK_HD uint32_t sub_words(const uint32_t* a, const uint32_t* b, uint32_t* r) {
    r[0] = sub_cc(a[0], b[0]);
CUZK_UNROLL
    for (int i = 1; i < words; ++i) r[i] = subc_cc(a[i], b[i]);
    return subc(0, 0);
}

// a + b mod p for a, b in [0, Kp), into [0, Kp) (with K = 2 the sum may carry out of the
// top word: reduce_once takes that carry).
template <class P, int K = 1>
CUZK_HD void add(const uint64_t* a64, const uint64_t* b64, uint64_t* r) {
    constexpr int n = 2 * P::N;
    uint32_t a[n], b[n], t[n];
    split<P>(a64, a);
    split<P>(b64, b);
    reduce_once<P, K>(t, add_words<n>(a, b, t), r);
}

// a − b mod p for a, b in [0, Kp), into [0, Kp).
template <class P, int K = 1>
CUZK_HD void sub(const uint64_t* a64, const uint64_t* b64, uint64_t* r) {
    constexpr int n = 2 * P::N;
    uint32_t a[n], b[n], t[n];
    split<P>(a64, a);
    split<P>(b64, b);
    // Borrowed: add Kp back.
    const uint32_t mask = sub_words<n>(a, b, t);
    t[0] = add_cc(t[0], pk32<P, K>(0) & mask);
CUZK_UNROLL
    for (int i = 1; i < n; ++i) t[i] = addc_cc(t[i], pk32<P, K>(i) & mask);
    join<P>(t, r);
}

// r = t mod p for t < 2p (a lazy value, see mont.cuh's reduce_lazy).
template <class P>
CUZK_HD void reduce(const uint64_t* t64, uint64_t* r) {
    uint32_t t[2 * P::N];
    split<P>(t64, t);
    reduce_once<P>(t, 0, r);
}

// x += m·p[j]·2^(32(i + j)) for j = j0, j0 + 2, … < 2N: one carry chain over the aligned
// pairs (i + j, i + j + 1), its carry out of the last pair left in the flag. FIRST: the
// chain starts here; otherwise it takes the carry already in the flag.
template <class P, bool FIRST>
CUZK_HD void add_mp(uint32_t m, uint32_t* x, int i, int j0) {
    constexpr int n = 2 * P::N;
    x[i + j0] = FIRST ? mad_lo_cc(m, redc_p<P>(j0), x[i + j0])
                      : madc_lo_cc(m, redc_p<P>(j0), x[i + j0]);
    x[i + j0 + 1] = madc_hi_cc(m, redc_p<P>(j0), x[i + j0 + 1]);
CUZK_UNROLL
    for (int j = j0 + 2; j < n; j += 2) {
        x[i + j] = madc_lo_cc(m, redc_p<P>(j), x[i + j]);
        x[i + j + 1] = madc_hi_cc(m, redc_p<P>(j), x[i + j + 1]);
    }
}

// Montgomery product a·b·2^(−32n) mod p, CIOS over n = 2N words, arranged so that the
// low and high halves of each 32×32 partial product land in an aligned register pair:
// the GPU then does both in one IMAD.WIDE.U32(.X) (with the halves in separate carry
// chains, every half costs an IMAD plus an IADD3.X: ~3× the instructions).
//
// Words are indexed absolutely (word w weighs 2^(32w); row i works at words ≥ i). The
// running sum is kept in two arrays, T = Σ_w (e[w] + o[w])·2^(32w): e takes products
// whose halves fall on words (even, odd), o those on (odd, even), so each array's pairs
// keep one alignment through all rows. Row i:
//   1. fold o[i] into e[i] (or e[i] into o[i] for odd i; let x be the array with pairs
//      at words (i, i+1), y the other), the carry joining chain 2;
//   2. y += a[j]·b[i] for odd j (halves on words i+j, i+j+1);
//   3. x += a[j]·b[i] for even j;
//   4. m = x[i]·(−p⁻¹) mod 2^32, which is T's word i (Fr: −x[i], low_words_special);
//   5. x += p[j]·m for even j (zeroes word i), y += p[j]·m for odd j.
// After row i, T < 2p·2^(32(i+1)), so neither array ever needs a word above i + n and
// the carries out of word i + n are zero. The result is e + o at words n..2n−1 (< 2p),
// then one conditional subtraction (REDUCE; without it the result stays in [0, 2p)).
// Only a < p is needed for those bounds: row i adds a·b[i] and m·p, so T < (a + p)·
// 2^(32(i+1)), and the result (a·b + M·p)/R < p·(b/R + 1) < 2p for any b < R = 2^(32n).
// So b may be a lazy value in [0, 2p) (mont.cuh, mul_lazy).
template <class P, bool REDUCE = true>
CUZK_HD void mul(const uint64_t* a64, const uint64_t* b64, uint64_t* r) {
    constexpr int n = 2 * P::N;
    constexpr bool SPECIAL = CUZK_SPECIAL_REDC && low_words_special<P>();
    const uint32_t inv = redc_inv<P>();
    uint32_t a[n], b[n], e[2 * n + 1], o[2 * n + 1];
    split<P>(a64, a);
    split<P>(b64, b);
CUZK_UNROLL
    for (int w = 0; w <= 2 * n; ++w) e[w] = o[w] = 0;
CUZK_UNROLL
    for (int i = 0; i < n; ++i) {
        uint32_t* x = (i & 1) ? o : e;
        uint32_t* y = (i & 1) ? e : o;
        // 1-2. Fold, then the odd products from word i + 1 (carry out of word i + n: 0).
        x[i] = add_cc(x[i], y[i]);
CUZK_UNROLL
        for (int j = 1; j < n; j += 2) {
            y[i + j] = madc_lo_cc(a[j], b[i], y[i + j]);
            y[i + j + 1] = madc_hi_cc(a[j], b[i], y[i + j + 1]);
        }
        // 3. Even products from word i, carry into word i + n.
        x[i] = mad_lo_cc(a[0], b[i], x[i]);
        x[i + 1] = madc_hi_cc(a[0], b[i], x[i + 1]);
CUZK_UNROLL
        for (int j = 2; j < n; j += 2) {
            x[i + j] = madc_lo_cc(a[j], b[i], x[i + j]);
            x[i + j + 1] = madc_hi_cc(a[j], b[i], x[i + j + 1]);
        }
        x[i + n] = addc(x[i + n], 0);
        // 4-5. Reduction.
        const uint32_t t = x[i];
        if (SPECIAL) {
            // t + m·1 zeroes word i (x[i] is dead after this row), carrying c = [t ≠ 0];
            // m·(2^32 − 1) adds t at word i + 1 and m − c at word i + 2. All go to y,
            // whose pairs sit at (i + 1, i + 2); x's chain then starts at word i + 2.
            // m = 0 − t borrows c too, but only a subtraction may read that flag
            // (see the top of this file), so the carry into y comes from t + m.
            const uint32_t m = sub_cc(opaque_zero<P>(), t);
            const uint32_t hi = subc(m, 0);  // m − c
            (void)add_cc(t, m);
            y[i + 1] = addc_cc(y[i + 1], t);
            y[i + 2] = addc_cc(y[i + 2], hi);
            add_mp<P, false>(m, y, i, 3);
            add_mp<P, true>(m, x, i, 2);
            x[i + n] = addc(x[i + n], 0);
        } else {
            const uint32_t m = t * inv;
            add_mp<P, true>(m, x, i, 0);
            x[i + n] = addc(x[i + n], 0);
            add_mp<P, true>(m, y, i, 1);
        }
    }
    // Word n − 1 is zero in both arrays (folded in row n − 1, then reduced).
    uint32_t t[n];
    t[0] = add_cc(e[n], o[n]);
CUZK_UNROLL
    for (int w = 1; w < n; ++w) t[w] = addc_cc(e[n + w], o[n + w]);
    if (REDUCE) {
        reduce_once<P>(t, addc(0, 0), r);
    } else {
        join<P>(t, r);  // < 2p < 2^(32n): the carry out is zero
    }
}

// ---- Lazy reduction (Fp2's product): wide products, one reduction per result ----
//
// Words as above, n = 2N per value, 2n per wide (unreduced) product.

// t = a·b, 2n words, no reduction. The aligned-pair arrangement of mul(): products whose
// halves fall on words (even, odd) go to e, the others to o, so that each row is two
// carry chains of IMAD.WIDE; each chain's carry goes into the word above it, which earlier
// rows' chains touched at most by a carry of their own (so it cannot overflow). The sum
// e + o = a·b < 2^(32·2n): word 2n of either array stays zero.
template <class P>
CUZK_HD void mul_wide(const uint32_t* a, const uint32_t* b, uint32_t* t) {
    constexpr int n = 2 * P::N;
    uint32_t e[2 * n + 1], o[2 * n + 1];
CUZK_UNROLL
    for (int w = 0; w <= 2 * n; ++w) e[w] = o[w] = 0;
CUZK_UNROLL
    for (int i = 0; i < n; ++i) {
        // j of the same parity as i: pairs at even words (i + j even) → e.
        uint32_t* x = e;
        uint32_t* y = o;
        const int j0 = i & 1;  // first j with i + j even
        x[i + j0] = mad_lo_cc(a[j0], b[i], x[i + j0]);
        x[i + j0 + 1] = madc_hi_cc(a[j0], b[i], x[i + j0 + 1]);
CUZK_UNROLL
        for (int j = j0 + 2; j < n; j += 2) {
            x[i + j] = madc_lo_cc(a[j], b[i], x[i + j]);
            x[i + j + 1] = madc_hi_cc(a[j], b[i], x[i + j + 1]);
        }
        const int xe = i + (j0 ? n + 1 : n);  // the word above the chain
        x[xe] = addc(x[xe], 0);
        // j of the other parity: pairs at odd words → o.
        const int j1 = 1 - j0;
        y[i + j1] = mad_lo_cc(a[j1], b[i], y[i + j1]);
        y[i + j1 + 1] = madc_hi_cc(a[j1], b[i], y[i + j1 + 1]);
CUZK_UNROLL
        for (int j = j1 + 2; j < n; j += 2) {
            y[i + j] = madc_lo_cc(a[j], b[i], y[i + j]);
            y[i + j + 1] = madc_hi_cc(a[j], b[i], y[i + j + 1]);
        }
        const int ye = i + (j1 ? n + 1 : n);
        y[ye] = addc(y[ye], 0);
    }
    add_words<2 * n>(e, o, t);
}

// Montgomery reduction: T·2^(−32n) mod p into r (fully reduced), for a wide T < p·2^(32n).
// The rows of mul() without their products: the low half of T is reduced word by word
// (m = word·(−p⁻¹), add m·p at that word) in the two aligned arrays, which start as T's
// low half and zeros; the high half is added at the end. The result
// (T + M·p)/2^(32n) < 2p, then one conditional subtraction.
template <class P>
CUZK_HD void redc(const uint32_t* T, uint64_t* r) {
    constexpr int n = 2 * P::N;
    const uint32_t inv = redc_inv<P>();
    uint32_t e[2 * n + 1], o[2 * n + 1];
CUZK_UNROLL
    for (int w = 0; w <= 2 * n; ++w) {
        e[w] = w < n ? T[w] : 0;
        o[w] = 0;
    }
CUZK_UNROLL
    for (int i = 0; i < n; ++i) {
        uint32_t* x = (i & 1) ? o : e;
        uint32_t* y = (i & 1) ? e : o;
        // Fold word i of y into x; the carry enters y's chain at word i + 1.
        x[i] = add_cc(x[i], y[i]);
        const uint32_t m = x[i] * inv;
        add_mp<P, false>(m, y, i, 1);
        y[i + n + 1] = addc(y[i + n + 1], 0);
        add_mp<P, true>(m, x, i, 0);
        x[i + n] = addc(x[i + n], 0);
    }
    // (e + o) at words n..2n is (T_low + M·p)/2^(32n) ≤ p; plus T's high half < 2p + 1,
    // which fits n words: the carries out are zero.
    uint32_t u[n], v[n];
    u[0] = add_cc(e[n], o[n]);
CUZK_UNROLL
    for (int w = 1; w < n; ++w) u[w] = addc_cc(e[n + w], o[n + w]);
    add_words<n>(u, T + n, v);
    reduce_once<P>(v, 0, r);
}

// t = a², 2n words: the n(n − 1)/2 cross products a[i]·a[j] (i < j) once, in the aligned
// arrays of mul_wide (row i's two chains start at words 2i + 1 and 2i + 2), doubled by a
// one-bit shift, plus the n squares a[i]² on the aligned pairs (2i, 2i + 1): about 60 % of
// mul_wide's word products. A chain's carry again goes to the word above it, which only
// the previous row's chain of the same array can have touched, by a carry.
template <class P>
CUZK_HD void sqr_wide(const uint32_t* a, uint32_t* t) {
    constexpr int n = 2 * P::N;
    uint32_t e[2 * n + 1], o[2 * n + 1];
CUZK_UNROLL
    for (int w = 0; w <= 2 * n; ++w) e[w] = o[w] = 0;
CUZK_UNROLL
    for (int i = 0; i < n - 1; ++i) {
        // j ≡ i (mod 2), from i + 2: pairs at even words 2i + 2, … → e.
        if (i + 2 < n) {
            e[2 * i + 2] = mad_lo_cc(a[i + 2], a[i], e[2 * i + 2]);
            e[2 * i + 3] = madc_hi_cc(a[i + 2], a[i], e[2 * i + 3]);
            int j = i + 4;
CUZK_UNROLL
            for (; j < n; j += 2) {
                e[i + j] = madc_lo_cc(a[j], a[i], e[i + j]);
                e[i + j + 1] = madc_hi_cc(a[j], a[i], e[i + j + 1]);
            }
            e[i + j] = addc(e[i + j], 0);  // j: one past the last, the word above
        }
        // j ≢ i (mod 2), from i + 1: pairs at odd words 2i + 1, … → o.
        o[2 * i + 1] = mad_lo_cc(a[i + 1], a[i], o[2 * i + 1]);
        o[2 * i + 2] = madc_hi_cc(a[i + 1], a[i], o[2 * i + 2]);
        int j = i + 3;
CUZK_UNROLL
        for (; j < n; j += 2) {
            o[i + j] = madc_lo_cc(a[j], a[i], o[i + j]);
            o[i + j + 1] = madc_hi_cc(a[j], a[i], o[i + j + 1]);
        }
        o[i + j] = addc(o[i + j], 0);
    }
    // c = e + o < 2^(32·2n − 1), doubled, plus the squares (no carry out: a² < 2^(32·2n)).
    uint32_t c[2 * n];
    add_words<2 * n>(e, o, c);
    t[0] = c[0] << 1;
CUZK_UNROLL
    for (int w = 1; w < 2 * n; ++w) t[w] = (c[w] << 1) | (c[w - 1] >> 31);
    t[0] = mad_lo_cc(a[0], a[0], t[0]);
    t[1] = madc_hi_cc(a[0], a[0], t[1]);
CUZK_UNROLL
    for (int i = 1; i < n; ++i) {
        t[2 * i] = madc_lo_cc(a[i], a[i], t[2 * i]);
        t[2 * i + 1] = madc_hi_cc(a[i], a[i], t[2 * i + 1]);
    }
}

// a² mod p (Montgomery): sqr_wide, then one reduction (a² < p² < p·2^(32n)).
template <class P>
CUZK_HD void sqr(const uint64_t* a64, uint64_t* r) {
    constexpr int n = 2 * P::N;
    uint32_t a[n], t[2 * n];
    split<P>(a64, a);
    sqr_wide<P>(a, t);
    redc<P>(t, r);
}

// a·b − c·d mod p (Montgomery) with one reduction instead of two: the difference of the
// wide products, plus p·2^(32n) when negative, lies in [0, p·2^(32n)) as redc needs.
template <class P>
CUZK_HD void mul_sub(const uint64_t* a64, const uint64_t* b64, const uint64_t* c64,
                     const uint64_t* d64, uint64_t* r) {
    constexpr int n = 2 * P::N;
    uint32_t x[n], y[n], v[2 * n], w[2 * n];
    split<P>(a64, x);
    split<P>(b64, y);
    mul_wide<P>(x, y, v);
    split<P>(c64, x);
    split<P>(d64, y);
    mul_wide<P>(x, y, w);
    const uint32_t neg = sub_words<2 * n>(v, w, v);
CUZK_UNROLL
    for (int i = 0; i < n; ++i) x[i] = p32<P>(i) & neg;
    add_words<n>(v + n, x, v + n);  // the carry out cancels the borrow
    redc<P>(v, r);
}

}  // namespace carry
}  // namespace cuzk
