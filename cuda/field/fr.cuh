// BLS12-381 scalar field Fr in Montgomery form (R = 2^256), four 64-bit limbs, little
// endian: the same representation as blst's blst_fr / blstrs' Scalar, so values cross
// between host and device without conversion.
#pragma once
#include <cstdint>

namespace cuzk {

struct Fr {
    uint64_t l[4];
};

// r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
__device__ __constant__ const uint64_t FR_P[4] = {
    0xffffffff00000001ull, 0x53bda402fffe5bfeull, 0x3339d80809a1d805ull, 0x73eda753299d7d48ull};
// −r⁻¹ mod 2^64
constexpr uint64_t FR_INV = 0xfffffffeffffffffull;

// a ≥ p ?
__device__ __forceinline__ bool fr_geq_p(const uint64_t a[4]) {
    for (int i = 3; i >= 0; --i) {
        if (a[i] != FR_P[i]) return a[i] > FR_P[i];
    }
    return true;
}

// a −= p (caller knows a ≥ p or that the borrow is absorbed by a carry limb).
__device__ __forceinline__ void fr_sub_p(uint64_t a[4]) {
    unsigned __int128 borrow = 0;
    for (int i = 0; i < 4; ++i) {
        unsigned __int128 d = (unsigned __int128)a[i] - FR_P[i] - borrow;
        a[i] = (uint64_t)d;
        borrow = (d >> 64) & 1;
    }
}

__device__ __forceinline__ Fr fr_add(const Fr& a, const Fr& b) {
    Fr r;
    unsigned __int128 c = 0;
    for (int i = 0; i < 4; ++i) {
        c += (unsigned __int128)a.l[i] + b.l[i];
        r.l[i] = (uint64_t)c;
        c >>= 64;
    }
    // p < 2^255, so a + b < 2^256: no carry out; one conditional subtraction.
    if (fr_geq_p(r.l)) fr_sub_p(r.l);
    return r;
}

__device__ __forceinline__ Fr fr_sub(const Fr& a, const Fr& b) {
    Fr r;
    unsigned __int128 borrow = 0;
    for (int i = 0; i < 4; ++i) {
        unsigned __int128 d = (unsigned __int128)a.l[i] - b.l[i] - borrow;
        r.l[i] = (uint64_t)d;
        borrow = (d >> 64) & 1;
    }
    if (borrow) {  // went below zero: add p back
        unsigned __int128 c = 0;
        for (int i = 0; i < 4; ++i) {
            c += (unsigned __int128)r.l[i] + FR_P[i];
            r.l[i] = (uint64_t)c;
            c >>= 64;
        }
    }
    return r;
}

// Montgomery multiplication a·b·R⁻¹ mod p (CIOS).
__device__ __forceinline__ Fr fr_mul(const Fr& a, const Fr& b) {
    uint64_t t[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 4; ++i) {
        unsigned __int128 c = 0;
        for (int j = 0; j < 4; ++j) {
            c += (unsigned __int128)a.l[j] * b.l[i] + t[j];
            t[j] = (uint64_t)c;
            c >>= 64;
        }
        c += t[4];
        t[4] = (uint64_t)c;
        t[5] = (uint64_t)(c >> 64);

        uint64_t m = t[0] * FR_INV;
        c = (unsigned __int128)m * FR_P[0] + t[0];
        c >>= 64;
        for (int j = 1; j < 4; ++j) {
            c += (unsigned __int128)m * FR_P[j] + t[j];
            t[j - 1] = (uint64_t)c;
            c >>= 64;
        }
        c += t[4];
        t[3] = (uint64_t)c;
        t[4] = t[5] + (uint64_t)(c >> 64);
    }
    Fr r = {{t[0], t[1], t[2], t[3]}};
    if (t[4] || fr_geq_p(r.l)) fr_sub_p(r.l);
    return r;
}

}  // namespace cuzk
