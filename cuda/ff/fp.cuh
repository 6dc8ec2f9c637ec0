// BLS12-381 base field Fp: 381-bit prime, six 64-bit limbs little-endian, Montgomery
// form with R = 2^384, fully reduced. The in-memory layout of blst's blst_fp (and so of
// blstrs' Fp), so values cross between host and device without conversion.
#pragma once
#include "mont.cuh"

namespace cuzk {

struct FpParams {
    static constexpr int N = 6;
    static constexpr bool MOD_FROM_CONSTANT_BANK = false;  // carry.cuh, redc_p
    // −p⁻¹ mod 2^64
    static constexpr uint64_t INV = 0x89f3fffcfffcfffdull;
    // p = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
    CUZK_HD static constexpr uint64_t p(int i) {
        return i == 0   ? 0xb9feffffffffaaabull
               : i == 1 ? 0x1eabfffeb153ffffull
               : i == 2 ? 0x6730d2a0f6b0f624ull
               : i == 3 ? 0x64774b84f38512bfull
               : i == 4 ? 0x4b1ba7b6434bacd7ull
                        : 0x1a0111ea397fe69aull;
    }
    // R mod p = 2^384 mod p
    CUZK_HD static constexpr uint64_t one(int i) {
        return i == 0   ? 0x760900000002fffdull
               : i == 1 ? 0xebf4000bc40c0002ull
               : i == 2 ? 0x5f48985753c758baull
               : i == 3 ? 0x77ce585370525745ull
               : i == 4 ? 0x5c071a97a256ec6dull
                        : 0x15f65ec3fa80e493ull;
    }
    // R² mod p: mul(x, R²) takes an integer x into Montgomery form (SRS decoding).
    CUZK_HD static constexpr uint64_t r2(int i) {
        return i == 0   ? 0xf4df1f341c341746ull
               : i == 1 ? 0x0a76e6a609d104f1ull
               : i == 2 ? 0x8de5476c4c95b6d5ull
               : i == 3 ? 0x67eb88a9939d83c0ull
               : i == 4 ? 0x9a793e85b519952dull
                        : 0x11988fe592cae3aaull;
    }
};

typedef Mont<FpParams> Fp;
static_assert(sizeof(Fp) == 48, "Fp must match blst_fp");

// BLS12-381 scalar field Fr (R = 2^256, blst_fr's layout): the NTT computes with it, and
// the MSM uses it to read blstrs Scalars (Montgomery form) as plain integers.
struct FrParams {
    static constexpr int N = 4;
    static constexpr bool MOD_FROM_CONSTANT_BANK = true;  // carry.cuh, redc_p
    static constexpr uint64_t INV = 0xfffffffeffffffffull;
    // r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
    CUZK_HD static constexpr uint64_t p(int i) {
        return i == 0   ? 0xffffffff00000001ull
               : i == 1 ? 0x53bda402fffe5bfeull
               : i == 2 ? 0x3339d80809a1d805ull
                        : 0x73eda753299d7d48ull;
    }
    CUZK_HD static constexpr uint64_t one(int i) {
        return i == 0   ? 0x00000001fffffffeull
               : i == 1 ? 0x5884b7fa00034802ull
               : i == 2 ? 0x998c4fefecbc4ff5ull
                        : 0x1824b159acc5056full;
    }
};

typedef Mont<FrParams> FrMont;
static_assert(sizeof(FrMont) == 32, "FrMont must match blst_fr");

}  // namespace cuzk
