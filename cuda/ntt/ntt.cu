// Radix-2 NTT over Fr: the transforms of the Groth16 quotient H (groth16/quotient.cu,
// through ntt.cuh), and cuzk_ntt, one plain transform for tests and benchmarks.
//
// Orders: forward transforms are decimation in time (bit-reversed in, natural out), inverse
// ones decimation in frequency (natural in, bit-reversed out), so the pipeline needs no
// permutation pass: the last DIF pass writes each element to its natural position in the
// output (H for the MSM, or ntt()'s result). Scaling a bit-reversed coefficient vector by
// powers multiplies position j by s^rev(j).
//
// Powers (twiddles ω^e, coset factors g^e) come from two small tables each,
// x^e = hi[e >> L] · lo[e & (2^L − 1)], built on the host: no device memory proportional
// to the domain for them. Where a pass's twists span at most 2^25 exponents (2^27 on a
// device with the memory for it: twist_table_log), a table of all of them (Transform,
// kept per device, m and ω) makes each twist one product instead of two.
//
// Stages are fused: one pass loads 2^E elements per block into shared memory, runs up to
// E consecutive stages there and writes them back, so a 2^27 transform takes 3 passes over
// memory instead of 27 (one per stage, the first version: docs/PERF.md). A pass over
// stages with half-sizes 2^s .. 2^(s+K−1) touches index sets that differ only in bits
// [s, s+K): each is an independent 2^K-point sub-transform. A block takes 2^q of them
// whose bits [0, q) run consecutively, so its loads and stores are runs of 2^q elements.
// Inside a pass each thread runs up to 3 stages at a time on 8 elements in registers
// (FusedStages), exchanging through shared memory between such groups.
//
// Written once against the executor interface (exec/exec.cuh): the same code runs as CUDA
// kernels or, for tests on machines without a GPU, on the host (with small blocks there,
// so the tests cross several passes).
#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <new>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "ntt.cuh"

namespace {

using Fr = cuzk::FrMont;

using cuzk::ntt::Pass;
using cuzk::ntt::PowTable;
using cuzk::ntt::Roots;
using cuzk::ntt::Scale;
using cuzk::ntt::Tables;
using cuzk::ntt::Transform;

// Products by powers, twiddles and constants take the element as their lazy operand
// (mont.cuh, mul_lazy): elements stay in [0, 2r) through a transform and are reduced once,
// when its last pass stores them (FusedStages::reduce_out).
//
// v · x^e (two products). Out of line on the device: the fused kernel has up to 2^3
// such sites per register group and group shape, which inlined made it ~21,000 SASS
// instructions (≈ 340 KB, beyond the instruction cache) and 202 registers; one call costs
// a few moves against two products of ~210 instructions each.
#ifdef __CUDA_ARCH__
__device__ __noinline__ Fr times_pow_call(Fr v, const Fr* lo, const Fr* hi, unsigned L, uint64_t e) {
    return cuzk::mul_lazy(cuzk::mul(hi[e >> L], lo[e & ((1ull << L) - 1)]), v);
}
#endif
CUZK_HD Fr times_pow(const Fr& v, const PowTable& t, uint64_t e) {
#ifdef __CUDA_ARCH__
    return times_pow_call(v, t.lo, t.hi, t.L, e);
#else
    return cuzk::mul_lazy(t.at(e), v);
#endif
}
// v · p[0], out of line for the same reason.
#ifdef __CUDA_ARCH__
__device__ __noinline__ Fr times_entry_call(Fr v, const Fr* p) { return cuzk::mul_lazy(*p, v); }
#endif
CUZK_HD Fr times_entry(const Fr& v, const Fr* p) {
#ifdef __CUDA_ARCH__
    return times_entry_call(v, p);
#else
    return cuzk::mul_lazy(*p, v);
#endif
}
#ifdef __CUDA_ARCH__
__device__ __noinline__ Fr times_call(Fr v, Fr c) { return cuzk::mul_lazy(c, v); }
#endif
CUZK_HD Fr times(const Fr& v, const Fr& c) {
#ifdef __CUDA_ARCH__
    return times_call(v, c);
#else
    return cuzk::mul_lazy(c, v);
#endif
}

CUZK_HD uint64_t rev(uint64_t i, unsigned log_m) {
#ifdef __CUDA_ARCH__
    return log_m == 0 ? 0 : (__brevll(i) >> (64 - log_m));
#else
    uint64_t r = 0;
    for (unsigned b = 0; b < log_m; ++b) r |= ((i >> b) & 1) << (log_m - 1 - b);
    return r;
#endif
}
// Elements a thread keeps in registers, log2: it runs REG_LOG consecutive stages on them
// between shared-memory exchanges (a radix-8 step of the same radix-2 network, same
// twiddles), so a pass of K stages needs ⌈K/3⌉ − 1 barriers instead of K + 1, and each
// element crosses shared memory ⌈K/3⌉ − 1 times instead of K + 1 (the first group reads
// global memory, the last writes it). 8 elements are 64 registers: 256 threads a block,
// two blocks an SM within 128 registers a thread. (4 elements a thread, 3 blocks an SM
// within 80 registers, measured 0.5–4 % slower: docs/PERF.md, sessions 8 and 19.)
// CUZK_NTT_REG_LOG (1–3) and CUZK_NTT_MIN_BLOCKS (compile time) set both, for measuring.
#ifndef CUZK_NTT_REG_LOG
#define CUZK_NTT_REG_LOG 3
#endif
constexpr unsigned REG_LOG = CUZK_NTT_REG_LOG;
// Threads per block of the fused kernels (their launch bound, below).
constexpr unsigned FUSED_THREADS = 256;
// Elements per block of a fused pass on the GPU, log2: 2^11 · 32 B = 64 KiB of shared memory.
constexpr unsigned GPU_BLOCK_LOG = 11;

// Shared memory holds a block's elements as two planes of 16-byte halves, so that 8
// threads reading consecutive elements (one 128-bit access phase) cover the 32 banks
// once. Local index l lives at slot l ^ swz(l): bits 3..5 of l are folded into bits 0..2
// (by the columns 7, 5, 6), which keeps every group's access pattern conflict-free,
// including those whose threads step over l in strides of 2^(p+RG) (p < 3, the first
// pass's lane-less groups): the 3 bits that vary across 8 threads always map onto
// slot bits 0..2 bijectively (checked for p < 3, RG ≤ 3, by hand).
CUZK_HD uint32_t slot(uint32_t l) {
    const uint32_t h = l >> 3;
    return l ^ ((0u - (h & 1)) & 7) ^ ((0u - ((h >> 1) & 1)) & 5) ^ ((0u - ((h >> 2) & 1)) & 6);
}

// 16-byte halves: one 128-bit access on the device (the buffers are 32-byte aligned:
// cudaMalloc, the 16-aligned dynamic shared memory); plain words on the host.
CUZK_HD void load2(const uint64_t* p, uint64_t& a, uint64_t& b) {
#ifdef __CUDA_ARCH__
    const ulonglong2 v = *reinterpret_cast<const ulonglong2*>(p);
    a = v.x;
    b = v.y;
#else
    a = p[0];
    b = p[1];
#endif
}
CUZK_HD void store2(uint64_t* p, uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
    *reinterpret_cast<ulonglong2*>(p) = make_ulonglong2(a, b);
#else
    p[0] = a;
    p[1] = b;
#endif
}
CUZK_HD Fr load_fr(const Fr* p) {
    Fr v;
    load2(p->l, v.l[0], v.l[1]);
    load2(p->l + 2, v.l[2], v.l[3]);
    return v;
}
CUZK_HD void store_fr(Fr* p, const Fr& v) {
    store2(p->l, v.l[0], v.l[1]);
    store2(p->l + 2, v.l[2], v.l[3]);
}

// Stages [s, s + K) of a transform of m = 2^log_m elements (DIT: half-sizes increasing,
// DIF: decreasing), on the 2^(K+q) elements of one block (see the top of the file).
// Local index l = (t << q) | low: t the position in the sub-transform, low the lane;
// block bits fill the index's bits [q, s) and [s + K, log_m).
//
// Stage s + kk's twiddle for a butterfly at sub-transform offset j and lane λ (the index
// mod 2^s) is ω_(2^(kk+1))^j · ζ^(2^(K−kk−1)) with ζ = ω_(2^(s+K))^λ. A network with such
// twiddles equals the plain 2^K-point one on inputs twisted by ζ^u (u the natural index
// of the input, rev_K(t) for DIT's bit-reversed inputs), or for DIF on outputs twisted
// likewise: so each element takes one twist product per pass instead of a twiddle
// product per butterfly, and the butterflies read plain roots (Roots).
// With a scale, each element leaves multiplied by scale^rev(index) or by a constant (the
// scaling that follows an inverse transform, saved a pass over memory).
//
// The K stages run in groups of ≤ REG_LOG (t bits [b, b + RG)): each thread takes 2^RG
// elements differing in those bits into registers and runs the group's stages there.
// The group at b = 0 has min(K, 3) stages and touches global memory (DIT: first, loads
// and twists; DIF: last, twists, scales and stores); the remainder group sits at the top
// bits. In the b = 0 group every thread's offsets j start at 0, so the butterflies whose
// j is 0 (twiddle 1: 7 of 12) skip their product, uniformly across the warp.
template <bool DIT>
struct FusedStages {
    Fr* x;
    uint64_t m;
    unsigned log_m, s, K, q;
    Roots roots;
    PowTable w;  // ω_m, for the twists
    // Not null: tw[e] = ω_(2^(s+K))^e for every e < 2^(s+K), so a twist is one product
    // (Transform, twist tables); null: from w's two tables, two products.
    const Fr* tw;
    Scale scale;
    // Not null: the pass writes element g to out[rev(g)] (natural order) instead of x[g],
    // if rev(g) < out_len (the last DIF pass; saves a bit-reversal pass over memory).
    Fr* out;
    uint64_t out_len;
    // With out, not null: the pass stores o − sub[g] instead of o (sub in [0, r), indexed
    // like x: the quotient's C coefficients, in bit-reversed order).
    const Fr* sub;
    // The transform's last pass: its stores reduce the lazy elements to [0, r).
    bool reduce_out;
    CUZK_HD uint64_t index(size_t block, uint64_t l) const {
        const uint64_t low = l & ((1ull << q) - 1), t = l >> q;
        const uint64_t b_mid = block & ((1ull << (s - q)) - 1), b_top = block >> (s - q);
        return (b_top << (s + K)) | (t << s) | (b_mid << q) | low;
    }
    // The twist ζ^rev_K(t) for the lane λ of local index l is ω_(2^(s+K))^(λ·rev_K(t)):
    // its exponent e in those units (< 2^(s+K)), or in ω_m's, e·m/2^(s+K).
    CUZK_HD uint64_t twist_e(size_t block, uint64_t l) const {
        const uint64_t lane = ((block & ((1ull << (s - q)) - 1)) << q) | (l & ((1ull << q) - 1));
        return lane * rev(l >> q, K);
    }
    CUZK_HD Fr twist(const Fr& v, size_t block, uint64_t l) const {
        return tw ? times_entry(v, tw + twist_e(block, l))
                  : times_pow(v, w, twist_e(block, l) << (log_m - s - K));
    }

    // One work item u of the group at t bits [b, b + RG): its elements are the local
    // indices with u's bits spread around bits [q + b, q + b + RG), so that consecutive
    // items take consecutive lanes (coalesced global accesses, conflict-free shared ones).
    template <unsigned RG>
    CUZK_HD void group(size_t block, uint64_t u, unsigned b, bool from_global, bool to_global,
                       uint64_t* sh, uint32_t E) const {
        constexpr unsigned N = 1u << RG;
        const bool twisted = s > 0;  // the first pass's lane is always 0
        const unsigned p = q + b;
        const uint64_t below = u & ((1ull << p) - 1);
        const uint64_t base = ((u >> p) << (p + RG)) | below;
        const uint64_t j0 = below >> q;  // t bits [0, b), the same for all N elements
        Fr v[N];
CUZK_UNROLL
        for (unsigned k = 0; k < N; ++k) {
            const uint64_t l = base | ((uint64_t)k << p);
            if (from_global) {
                v[k] = load_fr(x + index(block, l));
            } else {
                const uint32_t sl = slot((uint32_t)l);
                load2(sh + 2 * sl, v[k].l[0], v[k].l[1]);
                load2(sh + 2 * (E + sl), v[k].l[2], v[k].l[3]);
            }
        }
        if (DIT && twisted && from_global) {
CUZK_UNROLL
            for (unsigned k = 0; k < N; ++k)
                v[k] = twist(v[k], block, base | ((uint64_t)k << p));
        }
CUZK_UNROLL
        for (unsigned i = 0; i < RG; ++i) {
            const unsigned st = DIT ? i : RG - 1 - i;  // stage b + st, half 2^st within v
            const unsigned kk = b + st, shift = roots.R - kk - 1;
            const unsigned h = 1u << st;
CUZK_UNROLL
            for (unsigned k = 0; k < N; ++k) {
                if (k & h) continue;
                const unsigned jm = k & (h - 1);  // j = j0 + jm·2^b
                // j = 0 (twiddle 1) exactly when b = 0 and jm = 0: a uniform branch.
                const bool one = jm == 0 && b == 0;
                const Fr a = v[k], c = v[k | h];
                if (DIT) {
                    const Fr t = one ? c : cuzk::mul_lazy(load_fr(roots.r + ((j0 | ((uint64_t)jm << b)) << shift)), c);
                    v[k] = cuzk::add_lazy(a, t);
                    v[k | h] = cuzk::sub_lazy(a, t);
                } else {
                    const Fr d = cuzk::sub_lazy(a, c);
                    v[k] = cuzk::add_lazy(a, c);
                    v[k | h] = one ? d : cuzk::mul_lazy(load_fr(roots.r + ((j0 | ((uint64_t)jm << b)) << shift)), d);
                }
            }
        }
CUZK_UNROLL
        for (unsigned k = 0; k < N; ++k) {
            const uint64_t l = base | ((uint64_t)k << p);
            if (to_global) {
                const uint64_t g = index(block, l);
                Fr o = v[k];
                if (!DIT && twisted) o = twist(o, block, l);
                if (!DIT && scale.kind == Scale::TABLE)
                    o = times_pow(o, scale.table, rev(g, log_m));
                if (!DIT && scale.kind == Scale::CONSTANT) o = times(o, scale.c);
                if (reduce_out) o = cuzk::reduce_lazy(o);
                if (!out) {
                    store_fr(x + g, o);
                } else {
                    const uint64_t r = rev(g, log_m);
                    if (r < out_len) store_fr(out + r, sub ? cuzk::sub(o, load_fr(sub + g)) : o);
                }
            } else {
                const uint32_t sl = slot((uint32_t)l);
                store2(sh + 2 * sl, v[k].l[0], v[k].l[1]);
                store2(sh + 2 * (E + sl), v[k].l[2], v[k].l[3]);
            }
        }
    }

    template <class Ctx>
    CUZK_HD void operator()(size_t block, Ctx& ctx) const {
        uint64_t* sh = (uint64_t*)ctx.shared;  // two planes of E 16-byte halves
        const uint32_t E = 1u << (K + q);
        const unsigned groups = (K + REG_LOG - 1) / REG_LOG;
        const unsigned top = K - REG_LOG * (groups - 1);  // the remainder group's size
        for (unsigned gi = 0; gi < groups; ++gi) {
            // DIT: b = 0 first, then upwards; DIF: the top group first, b = 0 last.
            const unsigned pos = DIT ? gi : groups - 1 - gi;  // group index from bit 0
            const unsigned b = REG_LOG * pos;
            const unsigned rg = pos == groups - 1 ? top : REG_LOG;
            const bool first = gi == 0, last = gi == groups - 1;
            // Each item writes back only the slots it read, so one barrier per exchange.
            if (!first) ctx.sync();
            for (uint64_t u = ctx.tid; u < (E >> rg); u += ctx.threads) {
                // The 3-stage group only where it can run: compiled in, its registers
                // bound the whole kernel.
                if constexpr (REG_LOG == 3) {
                    if (rg == 3) {
                        group<3>(block, u, b, first, last, sh, E);
                        continue;
                    }
                }
                if (rg == 2)
                    group<2>(block, u, b, first, last, sh, E);
                else
                    group<1>(block, u, b, first, last, sh, E);
            }
        }
    }
};
static_assert(REG_LOG >= 1 && REG_LOG <= 3, "FusedStages dispatches groups of 1..3 stages");

}  // namespace

// The fused kernels with a register budget: at most 256 threads (2^11 elements per block,
// 2^3 per thread) and two blocks per SM, i.e. ≤ 128 registers a thread. Left to itself
// ptxas takes ~200, which keeps one block (8 warps) per SM and idles it at every barrier.
// Same body as exec/device_exec.cuh's for_each_block, which has no bounds.
#ifndef CUZK_NTT_MIN_BLOCKS
#define CUZK_NTT_MIN_BLOCKS 2
#endif
namespace cuzk {
#define CUZK_FUSED_KERNEL(DIT)                                                       \
    template <>                                                                      \
    __global__ void __launch_bounds__(FUSED_THREADS, CUZK_NTT_MIN_BLOCKS)            \
        for_each_block<FusedStages<DIT>>(FusedStages<DIT> fn) {                      \
        extern __shared__ __align__(16) unsigned char cuzk_block_shared[];           \
        DeviceBlock ctx{threadIdx.x, blockDim.x, cuzk_block_shared};                 \
        fn((size_t)blockIdx.x, ctx);                                                 \
    }
CUZK_FUSED_KERNEL(true)
CUZK_FUSED_KERNEL(false)
#undef CUZK_FUSED_KERNEL
}  // namespace cuzk

namespace {

// r[i] = w^(i·step)
struct RootsFn {
    Fr* r;
    PowTable w;
    uint64_t step;
    CUZK_HD void operator()(size_t i) const { r[i] = w.at(i * step); }
};

// Elements per block of a fused pass, log2: GPU_BLOCK_LOG on the GPU; 2^6 in the host
// emulation, so that the tests' small transforms cross passes and still meet every
// register-group shape (1..3 stages, exchanges, all slot() bits).
template <class Exec>
constexpr unsigned block_log() {
    return std::is_same<Exec, cuzk::HostExec>::value ? 6 : GPU_BLOCK_LOG;
}

// The passes of a transform of 2^log_m: (s, K, q) in order of increasing s. The first
// pass covers the lowest bits with contiguous blocks; the rest split the remaining
// stages evenly into as few passes as a block allows (up to E stages each). A block then
// reads and writes runs of 2^q = 2^(E−K) consecutive elements, down to single ones (32 B,
// one memory sector): at 2^21 and 2^22 that saves a pass against runs of ≥ 4 elements,
// and measured no slower elsewhere (docs/PERF.md, session 8).
template <class Exec>
int plan(unsigned log_m, Pass* passes) {
    const unsigned e = block_log<Exec>();
    int count = 0;
    unsigned s = log_m < e ? log_m : e;
    passes[count++] = {0, s, 0};
    if (s < log_m) {
        const unsigned rest = log_m - s, per = e;
        const unsigned n = (rest + per - 1) / per;
        for (unsigned i = 0; i < n; ++i) {
            const unsigned K = (log_m - s + (n - i) - 1) / (n - i);
            const unsigned q = std::min(e - K, s);
            passes[count++] = {s, K, q};
            s += K;
        }
    }
    return count;
}

// Twist tables: a twisted pass (s > 0) with s + K ≤ twist_log takes its twists from a
// table of all 2^(s+K) powers of ω_(2^(s+K)) (one product each instead of two). On the
// GPU up to 2^25 entries (1 GiB, no more than the transform's own data), and up to 2^27
// (4 GiB) where that is at most 1/32 of the device's memory (the H200: 141 GB), so that
// the last pass of 2^26 and 2^27 takes one product too; CUZK_NTT_TWIST_LOG=N sets the
// limit, for measuring. 2^10 in the emulation, so that its tests meet both kinds of pass.
// (Limit 2^22 against 2^25: docs/PERF.md, session 8; 2^25 against 2^27: session 14.)
template <class Exec>
unsigned twist_table_log() {
    if constexpr (std::is_same<Exec, cuzk::HostExec>::value) {
        return 10;
    } else {
        const long fixed = cuzk::env_long("CUZK_NTT_TWIST_LOG", 0, 32, -1);
        if (fixed >= 0) return (unsigned)fixed;
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return 25;
        unsigned log = 25;
        while (log < 27 && (sizeof(Fr) << (log + 1)) <= total_b / 32) ++log;
        return log;
    }
}
inline bool tabled(const Pass& p, unsigned twist_log) {
    return p.s > 0 && p.s + p.K <= twist_log;
}

// Builds t's tables into buf (2^(R−1) roots, then each tabled pass's twists).
template <class Exec>
int build_tables(Exec& ex, Transform<Exec>* t, typename Exec::template Buf<Fr>& buf) {
    const unsigned R = t->roots.R, twist_log = twist_table_log<Exec>();
    size_t entries = 1ull << (R - 1);
    for (int i = 0; i < t->count; ++i) {
        const Pass& p = t->passes[i];
        if (tabled(p, twist_log)) entries += 1ull << (p.s + p.K);
    }
    CUZK_RC(ex.alloc(buf, entries, "NTT roots and twist tables"));
    CUZK_RC(ex.launch(1ull << (R - 1), RootsFn{buf.ptr, t->w, t->m >> R}, "NTT roots", 256));
    t->tab.roots = buf.ptr;
    Fr* next = buf.ptr + (1ull << (R - 1));
    for (int i = 0; i < t->count; ++i) {
        const Pass& p = t->passes[i];
        t->tab.tw[i] = nullptr;
        if (!tabled(p, twist_log)) continue;
        const uint64_t n = 1ull << (p.s + p.K);
        CUZK_RC(ex.launch(n, RootsFn{next, t->w, t->m >> (p.s + p.K)}, "NTT twist table", 256));
        t->tab.tw[i] = next;
        next += n;
    }
    return 0;
}

// The GPU's kept tables, by (device, log_m, ω: the first entries of its host tables).
struct TableCache {
    std::mutex lock;
    std::map<std::array<uint64_t, 19>, Tables> kept;
    static TableCache& get() {
        static TableCache c;
        return c;
    }
};

template <bool DIT, class Exec>
int run_pass(Exec& ex, Fr* x, uint64_t m, const Pass& p, Roots roots, PowTable w,
             const Fr* tw, const Scale& scale, bool last, Fr* out = nullptr,
             uint64_t out_len = 0, const Fr* sub = nullptr) {
    const unsigned e_log = p.K + p.q;
    // One thread per register group of 2^min(K, REG_LOG) elements (256 at 2^11), at most
    // the kernels' bound: passes of one or two stages loop over their groups.
    const unsigned threads = std::min(FUSED_THREADS, 1u << (e_log - std::min(p.K, REG_LOG)));
    return ex.launch_blocks(m >> e_log, threads, (sizeof(Fr) << e_log),
                            FusedStages<DIT>{x, m, (unsigned)__builtin_ctzll(m), p.s, p.K, p.q,
                                             roots, w, tw, scale, out, out_len, sub, last},
                            DIT ? "NTT DIT stages" : "NTT DIF stages");
}

}  // namespace

namespace cuzk {
namespace ntt {

template <class Exec>
int make_transform(Exec& ex, uint64_t m, PowTable w, const Fr* w_lo_host, size_t lo_len,
                   const Fr* w_hi_host, size_t hi_len, Transform<Exec>* t) {
    const unsigned log_m = (unsigned)__builtin_ctzll(m);
    t->m = m;
    t->w = w;
    t->count = plan<Exec>(log_m, t->passes);
    t->roots = Roots{nullptr, std::min(block_log<Exec>(), log_m)};
    if constexpr (std::is_same<Exec, cuzk::HostExec>::value) {
        CUZK_RC(build_tables(ex, t, t->buf));
    } else {
        char* err = ex.err;
        const size_t errlen = ex.errlen;
        std::array<uint64_t, 19> key{};
        int dev = 0;
        CUZK_CHECK(cudaGetDevice(&dev));
        key[0] = (uint64_t)dev;
        key[1] = log_m;
        key[2] = w.L;
        // ω is lo[1] (or hi[1] when lo has one entry); both pairs make the key.
        for (int k = 0; k < 2; ++k) {
            const Fr& a = w_lo_host[std::min<size_t>(k, lo_len - 1)];
            const Fr& b = w_hi_host[std::min<size_t>(k, hi_len - 1)];
            for (int j = 0; j < 4; ++j) {
                key[3 + 8 * k + j] = a.l[j];
                key[7 + 8 * k + j] = b.l[j];
            }
        }
        TableCache& c = TableCache::get();
        std::lock_guard<std::mutex> hold(c.lock);
        auto it = c.kept.find(key);
        if (it != c.kept.end()) {
            t->tab = it->second;
        } else {
            CUZK_RC(build_tables(ex, t, t->buf));
            t->buf.ptr = nullptr;  // kept for the process: no longer t's to free
            t->buf.len = 0;
            c.kept[key] = t->tab;
        }
    }
    t->roots.r = t->tab.roots;
    return 0;
}

template <class Exec>
int inverse_dif(Exec& ex, Fr* x, const Transform<Exec>& t, const Scale& scale,
                Fr* out, uint64_t out_len, const Fr* sub) {
    for (int i = t.count - 1; i >= 0; --i)
        CUZK_RC(run_pass<false>(ex, x, t.m, t.passes[i], t.roots, t.w, t.tab.tw[i],
                                i == 0 ? scale : Scale{}, i == 0, i == 0 ? out : nullptr,
                                out_len, i == 0 ? sub : nullptr));
    return 0;
}

template <class Exec>
int forward_dit(Exec& ex, Fr* x, const Transform<Exec>& t) {
    for (int i = 0; i < t.count; ++i)
        CUZK_RC(run_pass<true>(ex, x, t.m, t.passes[i], t.roots, t.w, t.tab.tw[i], Scale{},
                               i == t.count - 1));
    return 0;
}

// Both executors' instances, for the quotient (groth16/quotient.cu).
template int make_transform(DeviceExec&, uint64_t, PowTable, const Fr*, size_t, const Fr*,
                            size_t, Transform<DeviceExec>*);
template int make_transform(HostExec&, uint64_t, PowTable, const Fr*, size_t, const Fr*,
                            size_t, Transform<HostExec>*);
template int inverse_dif(DeviceExec&, Fr*, const Transform<DeviceExec>&, const Scale&, Fr*,
                         uint64_t, const Fr*);
template int inverse_dif(HostExec&, Fr*, const Transform<HostExec>&, const Scale&, Fr*,
                         uint64_t, const Fr*);
template int forward_dit(DeviceExec&, Fr*, const Transform<DeviceExec>&);
template int forward_dit(HostExec&, Fr*, const Transform<HostExec>&);

}  // namespace ntt
}  // namespace cuzk

namespace {

using cuzk::ntt::inverse_dif;
using cuzk::ntt::make_transform;
using cuzk::ntt::upload_tables;

template <class Exec>
int ntt(Exec& ex, Fr* x, unsigned log_m, int inverse, const CuzkPowTables& tables, float* ms) {
    const uint64_t m = 1ull << log_m;
    typename Exec::template Buf<Fr> dx, dy, dtab;
    CUZK_RC(ex.alloc(dx, m, "NTT x"));
    CUZK_RC(ex.alloc(dy, m, "NTT out"));
    PowTable pt[2];  // ω, ω⁻¹
    CUZK_RC(upload_tables(ex, dtab, tables, 2, pt));
    // The third table's powers are all m⁻¹ (base 1): its first entries' product.
    Scale scale;
    if (inverse) {
        scale.kind = Scale::CONSTANT;
        scale.c = cuzk::mul(tables.hi[2][0], tables.lo[2][0]);
    }
    // Either direction runs the DIF passes (natural order in), by ω or ω⁻¹.
    Transform<Exec> t;
    const int k = inverse ? 1 : 0;
    CUZK_RC(make_transform(ex, m, pt[k], tables.lo[k], tables.lo_len, tables.hi[k],
                           tables.hi_len, &t));
    CUZK_RC(ex.upload(dx.ptr, x, m));
    typename Exec::Timer timer;
    CUZK_RC(ex.start(timer));
    CUZK_RC(inverse_dif(ex, dx.ptr, t, scale, dy.ptr, m));
    CUZK_RC(ex.stop(timer));
    CUZK_RC(ex.sync("NTT kernels"));
    if (ms) CUZK_RC(ex.elapsed(timer, ms));
    return ex.download(x, dy.ptr, m);
}

}  // namespace

// In-place NTT of x (2^log_m elements, natural order in and out): forward, or inverse
// including m⁻¹. tables: ω, ω⁻¹, and (1, m⁻¹) as the third (every power m⁻¹: read once, as
// a constant). For tests and benchmarks.
extern "C" int cuzk_ntt(Fr* x, unsigned log_m, int inverse, CuzkPowTables tables, int emulate,
                        float* ms, char* err, size_t errlen) {
    if (log_m == 0 || log_m > 32) {
        if (log_m == 0) return 0;
        snprintf(err, errlen, "cuzk_ntt: domain 2^%u is too large", log_m);
        return -1;
    }
    return cuzk::with_exec(emulate != 0, err, errlen, "NTT", [&](auto& ex) {
        return ntt(ex, x, log_m, inverse, tables, ms);
    });
}
