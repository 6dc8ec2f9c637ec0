// SRS points on the device. A section of a .params file holds uncompressed points (zcash
// encoding: big-endian coordinates, flag bits on top, G2 as c1 then c0), and a raw G1
// point is exactly as large as an Affine<Fp> (96 bytes), a G2 point as an Affine<Fp2>
// (192). So the raw bytes are copied straight into the point buffer and decoded there, in
// place, one thread per point, into the Montgomery affine form the MSM reads: the host
// neither parses nor converts a single point.
//
// Each point is checked as the host reader (Srs::points) and bellperson's parameter
// reader do, without the subgroup check (as bellperson for mapped parameters): no
// compression, sort or infinity flag (a parameter point at infinity is refused, as
// bellperson refuses it), coordinates below p, on the curve y² = x³ + b. The first bad
// index is reported.
#pragma once
#include <cstdint>

#include "../ec/xyzz.cuh"
#include "../exec/exec.cuh"

namespace cuzk {
namespace srs {

// A decoded section, owned by the caller (Rust) through an opaque pointer.
struct PointSet {
    int g2;       // 0: G1 (Affine<Fp>), 1: G2 (Affine<Fp2>)
    int emulate;  // which executor's memory holds the points
    size_t n;
    DevBuf<uint8_t> dev;
    HostBuf<uint8_t> host;
    const void* points() const { return emulate ? (const void*)host.ptr : (const void*)dev.ptr; }
};

CUZK_HD uint64_t bswap64(uint64_t v) {
#ifdef __CUDA_ARCH__
    const uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    return ((uint64_t)__byte_perm(lo, 0, 0x0123) << 32) | __byte_perm(hi, 0, 0x0123);
#else
    return __builtin_bswap64(v);
#endif
}

// Six big-endian words (most significant first) → Fp in Montgomery form; false if ≥ p.
CUZK_HD bool fp_from_words(const uint64_t* be, Fp* out) {
    Fp x;
CUZK_UNROLL
    for (int i = 0; i < 6; ++i) x.l[5 - i] = be[i];
    int lt = -1;  // x < p: decided by the most significant differing limb
CUZK_UNROLL
    for (int i = 5; i >= 0; --i)
        if (lt < 0 && x.l[i] != FpParams::p(i)) lt = x.l[i] < FpParams::p(i);
    if (lt != 1) return false;
    Fp r2;
CUZK_UNROLL
    for (int i = 0; i < 6; ++i) r2.l[i] = FpParams::r2(i);
    *out = mul(x, r2);
    return true;
}

template <class F>
struct Codec;

template <>
struct Codec<Fp> {
    static constexpr int WORDS = 6;  // big-endian u64 words per coordinate
    CUZK_HD static bool read(const uint64_t* be, Fp* out) { return fp_from_words(be, out); }
    CUZK_HD static Fp b() { return dbl(dbl(Fp::one())); }  // 4
};

template <>
struct Codec<Fp2> {
    static constexpr int WORDS = 12;
    CUZK_HD static bool read(const uint64_t* be, Fp2* out) {  // c1 first, then c0
        return fp_from_words(be, &out->c1) && fp_from_words(be + 6, &out->c0);
    }
    CUZK_HD static Fp2 b() {  // 4(1 + u)
        const Fp four = dbl(dbl(Fp::one()));
        return {four, four};
    }
};

template <class F>
struct DecodeFn {
    Affine<F>* pts;  // raw encodings in, decoded points out
    unsigned long long* first_bad;
    CUZK_HD void operator()(size_t i) const {
        constexpr int W = 2 * Codec<F>::WORDS;
        static_assert(W * 8 == sizeof(Affine<F>), "raw and decoded points differ in size");
        uint64_t w[W];
        const uint64_t* raw = reinterpret_cast<const uint64_t*>(pts + i);
CUZK_UNROLL
        for (int k = 0; k < W; ++k) w[k] = bswap64(raw[k]);
        const uint64_t flags = w[0] >> 61;  // compression, infinity, sort
        w[0] &= 0x1fffffffffffffffull;
        bool ok = flags == 0;  // uncompressed, not at infinity, no sort flag
        Affine<F> a{F::zero(), F::zero()};
        ok = ok && Codec<F>::read(w, &a.x) && Codec<F>::read(w + Codec<F>::WORDS, &a.y);
        ok = ok && eq(sqr(a.y), add(mul(sqr(a.x), a.x), Codec<F>::b()));
        if (!ok) {
            mark_first(first_bad, i);
            a = {F::zero(), F::zero()};
        }
        pts[i] = a;
    }
};

// Copies n raw points into buf and decodes them; *bad = index of the first invalid point,
// or ~0 when all are valid.
template <class F, class Exec>
int upload_decode(Exec& ex, typename Exec::template Buf<uint8_t>& buf, const void* raw,
                  size_t n, uint64_t* bad) {
    const size_t bytes = n * sizeof(Affine<F>);
    CUZK_RC(ex.alloc(buf, bytes, "SRS points"));
    CUZK_RC(ex.upload(buf.ptr, (const uint8_t*)raw, bytes));
    typename Exec::template Buf<unsigned long long> first;
    CUZK_RC(ex.alloc(first, 1, "first bad point"));
    const unsigned long long none = ~0ull;
    CUZK_RC(ex.upload(first.ptr, &none, 1));
    CUZK_RC(ex.launch(n, DecodeFn<F>{(Affine<F>*)buf.ptr, first.ptr}, "decode SRS points"));
    CUZK_RC(ex.sync("decode SRS points"));
    unsigned long long got;
    CUZK_RC(ex.download(&got, first.ptr, 1));
    *bad = got;
    return 0;
}

}  // namespace srs
}  // namespace cuzk
