// Why: MSM h is 0.77 s of each 32GiB partition's 1.33 s on the GPU, and its XYZZ bucket
// additions already keep the multiplier busy (docs/PERF.md), so only fewer products per
// addition can shorten it. Batch-affine accumulation (Montgomery's trick: K independent
// affine additions share one inversion) costs 5M + 1S an addition plus the inversion's
// share, against XYZZ's mixed addition (8M + 2S), but its accumulators live in local
// memory and its inversion is either ~570 products (Fermat) or a branchy binary GCD. This
// measures, before anything is built into the MSM, what an addition costs each way on the
// device, with the product's own field and curve code (cuda/ff, cuda/ec):
//
//   xyzz      one chain of mixed additions a thread (the product's bucket sums, with the
//             next point loaded before the current addition, as buckets.cuh does)
//   affine/K  K chains a thread, one shared inversion a round (binary GCD or Fermat)
//
// and checks that both give the same sums (x·ZZ = X, y·ZZZ = Y for every chain). Random
// field elements stand in for points: the chord formulas of both ways are the same
// rational functions, so they agree off the curve too (no doubling occurs by chance).
// Standalone (no Rust on the GPU host); build it on the build machine before
// `dev/gpu-session.sh pack`, which packs it, and run it with `dev/gpu-session.sh affine`:
//
//   mkdir -p target/bench-affine
//   $NVCC -O3 -std=c++17 -arch=sm_90 -I cuda -o target/bench-affine/bench_affine \
//        dev/bench-affine/bench_affine.cu
//   bench_affine [LOG_CHAINS (23)] [CHAIN_LEN (16)] [RUNS (3)]
//   bench_affine check      the per-thread code on the CPU against itself (no GPU)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ec/xyzz.cuh"
#include "ff/fp.cuh"

using namespace cuzk;

#define CHECK(x)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (x);                                                           \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                  \
                    cudaGetErrorString(e_));                                            \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)
#define LAUNCHED() CHECK(cudaGetLastError())

namespace {

// ---- Inversion ----

// Bit i of p − 2 (Fermat's exponent); p's low limb ends in ...aaab, so no borrow.
#define HD __host__ __device__ __forceinline__

HD bool exp_bit(int i) {
    const uint64_t limb = i / 64 == 0 ? FpParams::p(0) - 2 : FpParams::p(i / 64);
    return (limb >> (i % 64)) & 1;
}

// a^(p−2) = a⁻¹ (Montgomery form in, Montgomery form out): 380 squarings, ~190 products.
__host__ __device__ Fp inv_fermat(const Fp& a) {
    Fp r = a;  // bit 380, the top one
    for (int i = 379; i >= 0; --i) {
        r = sqr(r);
        if (exp_bit(i)) r = mul(r, a);
    }
    return r;
}

struct Big {
    uint64_t l[6];
};
HD Big modulus() {
    Big p;
    for (int i = 0; i < 6; ++i) p.l[i] = FpParams::p(i);
    return p;
}
HD bool is_one(const Big& a) {
    uint64_t acc = a.l[0] ^ 1;
    for (int i = 1; i < 6; ++i) acc |= a.l[i];
    return acc == 0;
}
HD void shr1(Big& a) {
    for (int i = 0; i < 5; ++i) a.l[i] = (a.l[i] >> 1) | (a.l[i + 1] << 63);
    a.l[5] >>= 1;
}
HD bool geq(const Big& a, const Big& b) {
    for (int i = 5; i >= 0; --i)
        if (a.l[i] != b.l[i]) return a.l[i] > b.l[i];
    return true;
}
HD void sub_in(Big& a, const Big& b) {
    uint64_t borrow = 0;
    for (int i = 0; i < 6; ++i) {
        const u128 x = (u128)a.l[i] - b.l[i] - borrow;
        a.l[i] = (uint64_t)x;
        borrow = (uint64_t)(x >> 64) & 1;
    }
}
HD void add_in(Big& a, const Big& b) {
    uint64_t carry = 0;
    for (int i = 0; i < 6; ++i) {
        const u128 x = (u128)a.l[i] + b.l[i] + carry;
        a.l[i] = (uint64_t)x;
        carry = (uint64_t)(x >> 64);
    }
}
// x/2 mod p for x < p (x + p < 2^382 fits the six limbs).
HD void half_mod(Big& x, const Big& p) {
    if (x.l[0] & 1) add_in(x, p);
    shr1(x);
}
// x − y mod p for x, y < p.
HD void sub_mod(Big& x, const Big& y, const Big& p) {
    if (!geq(x, y)) add_in(x, p);
    sub_in(x, y);
}

// The integer inverse u⁻¹ mod p of a nonzero u < p, binary extended Euclid (variable
// time; its inputs are point coordinates, public). Then Montgomery: the input a·R gives
// (a·R)⁻¹, and two products by R² make a⁻¹·R.
__host__ __device__ Fp inv_binary(const Fp& a) {
    const Big p = modulus();
    Big u, v = p, x1 = {{1, 0, 0, 0, 0, 0}}, x2 = {{0, 0, 0, 0, 0, 0}};
    for (int i = 0; i < 6; ++i) u.l[i] = a.l[i];
    uint64_t any = 0;
    for (int i = 0; i < 6; ++i) any |= u.l[i];
    if (!any) return a;  // 0 has no inverse (the loop below would never end); as Fermat's, 0

    while (!is_one(u) && !is_one(v)) {
        while (!(u.l[0] & 1)) {
            shr1(u);
            half_mod(x1, p);
        }
        while (!(v.l[0] & 1)) {
            shr1(v);
            half_mod(x2, p);
        }
        if (geq(u, v)) {
            sub_in(u, v);
            sub_mod(x1, x2, p);
        } else {
            sub_in(v, u);
            sub_mod(x2, x1, p);
        }
    }
    const Big& r = is_one(u) ? x1 : x2;
    Fp out, r2;
    for (int i = 0; i < 6; ++i) out.l[i] = r.l[i], r2.l[i] = FpParams::r2(i);
    return mul(mul(out, r2), r2);
}

template <bool FERMAT>
HD Fp inv(const Fp& a) {
    if constexpr (FERMAT)
        return inv_fermat(a);
    else
        return inv_binary(a);
}

// ---- Inputs ----

HD uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
// A field element below 2^380 < p (any such value is a valid Montgomery form).
HD Fp random_fp(uint64_t seed) {
    Fp r;
    for (int i = 0; i < 6; ++i) r.l[i] = mix(seed * 6 + i + 1);
    r.l[5] &= 0x0fffffffffffffffull;
    return r;
}
__global__ void fill_points(Affine<Fp>* pts, size_t n) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) pts[i] = {random_fp(2 * i), random_fp(2 * i + 1)};
}
HD uint32_t index_at(size_t i, uint32_t npts) { return (uint32_t)(mix(i ^ 0x5eedull) % npts); }
// Entry i of the chains' point indices (chain s: entries s·L …); a chain's second point is
// never its first (P + P has no chord: the affine way's denominator would be 0, which no
// inversion can take; by chance that happens about once in 2^22 chains, and the first
// two H200 runs hung on it in the binary GCD).
HD uint32_t index_for(size_t i, uint32_t npts, uint32_t L) {
    uint32_t v = index_at(i, npts);
    if (i % L == 1 && v == index_at(i - 1, npts)) v = (v + 1) % npts;
    return v;
}
__global__ void fill_indices(uint32_t* idx, size_t n, uint32_t npts, uint32_t L) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) idx[i] = index_for(i, npts, L);
}

// ---- The two ways ----

// Chain s: the points idx[s·L], …, idx[s·L + L − 1], summed in XYZZ from the first.
HD XYZZ<Fp> xyzz_chain(const Affine<Fp>* pts, const uint32_t* idx, uint32_t L, size_t s) {
    const uint32_t* ix = idx + s * L;
    XYZZ<Fp> acc = to_xyzz(pts[ix[0]], false);
    Affine<Fp> next = pts[ix[1]];
    for (uint32_t r = 1; r < L; ++r) {
        const Affine<Fp> a = next;
        if (r + 1 < L) next = pts[ix[r + 1]];
        acc = padd_affine(acc, a);
    }
    return acc;
}

__global__ void __launch_bounds__(128, 4)
    xyzz_chains(const Affine<Fp>* pts, const uint32_t* idx, uint32_t L, size_t chains,
                XYZZ<Fp>* out) {
    const size_t s = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (s < chains) out[s] = xyzz_chain(pts, idx, L, s);
}

// Thread t sums chains tK … tK + K − 1 in affine coordinates, one round of K additions at
// a time: the K denominators' running products, one inversion, then back to front each
// addition's λ from its own inverse (5M + 1S an addition, plus the inversion / K).
template <int K, bool FERMAT>
HD void affine_chain(const Affine<Fp>* pts, const uint32_t* idx, uint32_t L, size_t t,
                     Affine<Fp>* out) {
    const uint32_t* ix = idx + t * K * L;
    Affine<Fp> acc[K], p[K];
    Fp before[K];  // the product of the denominators of additions 0 … k − 1
    for (int k = 0; k < K; ++k) acc[k] = pts[ix[k * L]];
    for (uint32_t r = 1; r < L; ++r) {
        Fp run = Fp::one();
        for (int k = 0; k < K; ++k) {
            p[k] = pts[ix[k * L + r]];
            before[k] = run;
            run = mul(run, sub(p[k].x, acc[k].x));
        }
        Fp rest = inv<FERMAT>(run);  // (d_0 ⋯ d_k)⁻¹ going down
        for (int k = K - 1; k >= 0; --k) {
            const Fp d = sub(p[k].x, acc[k].x);
            const Fp dinv = mul(rest, before[k]);
            rest = mul(rest, d);
            const Fp lambda = mul(sub(p[k].y, acc[k].y), dinv);
            const Fp x3 = sub(sub(sqr(lambda), acc[k].x), p[k].x);
            const Fp y3 = sub(mul(lambda, sub(acc[k].x, x3)), acc[k].y);
            acc[k] = {x3, y3};
        }
    }
    for (int k = 0; k < K; ++k) out[t * K + k] = acc[k];
}

template <int K, bool FERMAT>
__global__ void __launch_bounds__(128)
    affine_chains(const Affine<Fp>* pts, const uint32_t* idx, uint32_t L, size_t threads,
                  Affine<Fp>* out) {
    const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (t < threads) affine_chain<K, FERMAT>(pts, idx, L, t, out);
}

HD bool same_sum(const Affine<Fp>& a, const XYZZ<Fp>& x) {
    return eq(mul(a.x, x.zz), x.x) && eq(mul(a.y, x.zzz), x.y);
}

__global__ void count_mismatches(const Affine<Fp>* a, const XYZZ<Fp>* x, size_t n,
                                 unsigned long long* bad) {
    const size_t s = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (s >= n) return;
    if (!same_sum(a[s], x[s])) atomicAdd(bad, 1ull);
}

// ---- Yardsticks: a product, and each inversion ----

__global__ void __launch_bounds__(128, 4) products(Fp* v, uint32_t reps) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    Fp a = v[i], b = random_fp(i + 7);
    for (uint32_t r = 0; r < reps; ++r) a = mul(a, b);
    v[i] = a;
}

template <bool FERMAT>
__global__ void __launch_bounds__(128) inversions(const Fp* v, Fp* out, size_t n,
                                                  unsigned long long* bad) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Fp r = inv<FERMAT>(v[i]);
    if (!eq(mul(r, v[i]), Fp::one())) atomicAdd(bad, 1ull);
    out[i] = r;
}

struct Timer {
    cudaEvent_t a, b;
    Timer() {
        CHECK(cudaEventCreate(&a));
        CHECK(cudaEventCreate(&b));
    }
    void start() { CHECK(cudaEventRecord(a)); }
    float stop_ms() {
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        return ms;
    }
};

unsigned blocks(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Setup {
    const Affine<Fp>* pts;
    const uint32_t* idx;
    uint32_t L;
    size_t chains;
    int runs;
    const XYZZ<Fp>* reference;
    Affine<Fp>* out;
    unsigned long long* bad;
};

template <int K, bool FERMAT>
void affine_way(const Setup& s, double xyzz_ns) {
    const size_t threads = s.chains / K;
    Timer tm;
    std::vector<float> ms;
    for (int r = 0; r < s.runs; ++r) {
        tm.start();
        affine_chains<K, FERMAT><<<blocks(threads, 128), 128>>>(s.pts, s.idx, s.L, threads, s.out);
        LAUNCHED();
        ms.push_back(tm.stop_ms());
    }
    CHECK(cudaMemset(s.bad, 0, sizeof(unsigned long long)));
    count_mismatches<<<blocks(s.chains, 256), 256>>>(s.out, s.reference, s.chains, s.bad);
    LAUNCHED();
    unsigned long long bad;
    CHECK(cudaMemcpy(&bad, s.bad, sizeof bad, cudaMemcpyDeviceToHost));
    const double ns = median(ms) * 1e6 / ((double)s.chains * (s.L - 1));
    printf("affine K=%-3d %-7s %8.3f ms median  %.4f ns an addition  %.2fx xyzz  mismatches %llu\n",
           K, FERMAT ? "fermat" : "binary", median(ms), ns, xyzz_ns / ns, bad);
}

}  // namespace

// The per-thread code above on the CPU (no GPU needed): both inversions against
// a · a⁻¹ = 1, and affine chains of both kinds against XYZZ ones. `bench_affine check`.
int host_check() {
    const uint32_t npts = 1024, L = 9, chains = 64;
    std::vector<Affine<Fp>> pts(npts);
    for (uint32_t i = 0; i < npts; ++i) pts[i] = {random_fp(2 * i), random_fp(2 * i + 1)};
    std::vector<uint32_t> idx(chains * L);
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = index_for(i, npts, L);
    int bad = 0;
    bad += !eq(inv_binary(Fp::zero()), Fp::zero());  // returns (no endless loop)
    for (uint32_t i = 0; i < 64; ++i) {
        const Fp a = pts[i].x;
        bad += !eq(mul(inv_binary(a), a), Fp::one());
        bad += !eq(mul(inv_fermat(a), a), Fp::one());
    }
    std::vector<Affine<Fp>> out(chains);
    for (int fermat = 0; fermat < 2; ++fermat) {
        for (size_t t = 0; t < chains / 8; ++t) {
            if (fermat)
                affine_chain<8, true>(pts.data(), idx.data(), L, t, out.data());
            else
                affine_chain<8, false>(pts.data(), idx.data(), L, t, out.data());
        }
        for (size_t s = 0; s < chains; ++s)
            bad += !same_sum(out[s], xyzz_chain(pts.data(), idx.data(), L, s));
    }
    // And a wrong sum is noticed: one chain's result moved to another.
    const bool caught = !same_sum(out[1], xyzz_chain(pts.data(), idx.data(), L, 0));
    printf("host check: %d wrong of %d; a wrong sum %s\n", bad, 129 + 2 * chains,
           caught ? "caught" : "NOT caught");
    return bad == 0 && caught ? 0 : 1;
}

int main(int argc, char** argv) {
    // Line by line: a run cut short by a timeout still shows how far it got (session 30's
    // two runs on the H200 were cut at 100–120 s and left nothing).
    setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc > 1 && std::string(argv[1]) == "check") return host_check();
    const int log_chains = argc > 1 ? atoi(argv[1]) : 23;
    const uint32_t L = argc > 2 ? (uint32_t)atoi(argv[2]) : 16;
    const int runs = argc > 3 ? atoi(argv[3]) : 3;
    if (log_chains < 10 || log_chains > 26 || L < 2 || L > 1024 || runs < 1) {
        fprintf(stderr, "usage: bench_affine [LOG_CHAINS 10..26] [CHAIN_LEN 2..1024] [RUNS]\n");
        return 2;
    }
    const size_t chains = (size_t)1 << log_chains;
    const uint32_t npts = 1u << 22;  // 400 MB of points: random reads miss the L2, as in MSM h
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs; %zu chains of %u points (%zu additions a way), %u distinct points\n",
           prop.name, prop.multiProcessorCount, chains, L, chains * (L - 1), npts);

    Affine<Fp>* pts;
    uint32_t* idx;
    XYZZ<Fp>* ref;
    Affine<Fp>* out;
    unsigned long long* bad;
    CHECK(cudaMalloc(&pts, npts * sizeof(Affine<Fp>)));
    CHECK(cudaMalloc(&idx, chains * L * sizeof(uint32_t)));
    CHECK(cudaMalloc(&ref, chains * sizeof(XYZZ<Fp>)));
    CHECK(cudaMalloc(&out, chains * sizeof(Affine<Fp>)));
    CHECK(cudaMalloc(&bad, sizeof(unsigned long long)));
    fill_points<<<blocks(npts, 256), 256>>>(pts, npts);
    LAUNCHED();
    fill_indices<<<blocks(chains * L, 256), 256>>>(idx, chains * L, npts, L);
    LAUNCHED();
    CHECK(cudaDeviceSynchronize());

    Timer tm;
    // A product's cost, for the mul-equivalents below.
    {
        const size_t n = (size_t)prop.multiProcessorCount * 4 * 128 * 8;
        Fp* v;
        CHECK(cudaMalloc(&v, n * sizeof(Fp)));
        fill_points<<<blocks(n / 2, 256), 256>>>((Affine<Fp>*)v, n / 2);
        LAUNCHED();
        const uint32_t reps = 256;
        std::vector<float> ms;
        for (int r = 0; r < runs; ++r) {
            tm.start();
            products<<<blocks(n, 128), 128>>>(v, reps);
            LAUNCHED();
            ms.push_back(tm.stop_ms());
        }
        const double ns = median(ms) * 1e6 / ((double)n * reps);
        printf("product          %.4f ns (whole device, per product)\n", ns);
        // Each inversion on its own (n of them), checked: a · a⁻¹ = 1.
        Fp* w;
        CHECK(cudaMalloc(&w, n * sizeof(Fp)));
        fill_points<<<blocks(n / 2, 256), 256>>>((Affine<Fp>*)v, n / 2);
        LAUNCHED();
        for (int fermat = 0; fermat < 2; ++fermat) {
            std::vector<float> mi;
            for (int r = 0; r < runs; ++r) {
                CHECK(cudaMemset(bad, 0, sizeof(unsigned long long)));
                tm.start();
                if (fermat)
                    inversions<true><<<blocks(n, 128), 128>>>(v, w, n, bad);
                else
                    inversions<false><<<blocks(n, 128), 128>>>(v, w, n, bad);
                LAUNCHED();
                mi.push_back(tm.stop_ms());
            }
            unsigned long long b;
            CHECK(cudaMemcpy(&b, bad, sizeof b, cudaMemcpyDeviceToHost));
            const double ins = median(mi) * 1e6 / n;
            printf("inversion %-7s %.3f ns (%.0f products)  wrong %llu\n",
                   fermat ? "fermat" : "binary", ins, ins / ns, b);
        }
        CHECK(cudaFree(v));
        CHECK(cudaFree(w));
    }

    std::vector<float> ms;
    for (int r = 0; r < runs; ++r) {
        tm.start();
        xyzz_chains<<<blocks(chains, 128), 128>>>(pts, idx, L, chains, ref);
        LAUNCHED();
        ms.push_back(tm.stop_ms());
    }
    const double xyzz_ns = median(ms) * 1e6 / ((double)chains * (L - 1));
    printf("xyzz             %8.3f ms median  %.4f ns an addition\n", median(ms), xyzz_ns);

    const Setup s{pts, idx, L, chains, runs, ref, out, bad};
    affine_way<8, false>(s, xyzz_ns);
    affine_way<16, false>(s, xyzz_ns);
    affine_way<32, false>(s, xyzz_ns);
    affine_way<64, false>(s, xyzz_ns);
    affine_way<128, false>(s, xyzz_ns);
    affine_way<32, true>(s, xyzz_ns);
    affine_way<128, true>(s, xyzz_ns);
    CHECK(cudaDeviceSynchronize());
    return 0;
}
