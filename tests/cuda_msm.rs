//! GPU multi-scalar multiplication (G1, G2) and the base-field arithmetic beneath it,
//! against blstrs/blst, bit for bit. The `*_emulated` tests run the device's per-thread
//! code on the host, so a CUDA build checks the algorithm even without a GPU; the others
//! need a GPU and skip, visibly, without one. Everything is ignored in builds without CUDA.

mod common;

use common::gpu_or_skip;

use blst::{blst_fp, blst_fp2};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use cuzk_dev::bench;
use cuzk_prove::prove::cuda::{self, Msm};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group, UncompressedEncoding};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::fmt::Debug;

// ---------------------------------------------------------------- field arithmetic

/// A random Fp element (uniform below p), or an edge value.
fn fp_values(n: usize, rng: &mut impl RngCore) -> Vec<blst_fp> {
    let one = blst_fp {
        l: [
            0x760900000002fffd,
            0xebf4000bc40c0002,
            0x5f48985753c758ba,
            0x77ce585370525745,
            0x5c071a97a256ec6d,
            0x15f65ec3fa80e493,
        ],
    };
    let mut minus_one = blst_fp::default();
    // SAFETY: blst reads and writes one element each.
    unsafe { blst::blst_fp_cneg(&mut minus_one, &one, true) };
    let p_minus_1 = blst_fp {
        l: [
            0xb9feffffffffaaaa,
            0x1eabfffeb153ffff,
            0x6730d2a0f6b0f624,
            0x64774b84f38512bf,
            0x4b1ba7b6434bacd7,
            0x1a0111ea397fe69a,
        ],
    };
    let edge = [
        blst_fp::default(),
        one,
        minus_one,
        p_minus_1,
        blst_fp {
            l: [1, 0, 0, 0, 0, 0],
        },
    ];
    (0..n)
        .map(|i| {
            if i < edge.len() * edge.len() && rng.next_u32().is_multiple_of(2) {
                return edge[i % edge.len()];
            }
            // Uniform below p (rejection from 381 bits), so values near p, where the
            // lazily reduced products' bounds are tightest, come up too.
            loop {
                let mut l = [0u64; 6];
                l.iter_mut().for_each(|x| *x = rng.next_u64());
                l[5] &= (1 << 61) - 1;
                if l.iter().rev().lt(p_minus_1.l.iter().rev()) || l == p_minus_1.l {
                    return blst_fp { l };
                }
            }
        })
        .collect()
}

/// The results of a field-ops call with their names, in blst's order in the checks.
fn named<T>(got: &cuda::field::FieldOps<T>) -> [(&'static str, &Vec<T>); 6] {
    [
        ("mul", &got.mul),
        ("sqr", &got.sqr),
        ("add", &got.add),
        ("sub", &got.sub),
        ("neg", &got.neg),
        ("mul_sub", &got.mul_sub),
    ]
}

fn check_fp(emulate: bool) {
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    for n in [0usize, 1, 7, 1000, (1 << 16) + 3] {
        let a = fp_values(n, &mut rng);
        let b = fp_values(n, &mut rng);
        let got = cuda::field::fp_ops(&a, &b, emulate).unwrap();
        for i in 0..n {
            let mut want = [blst_fp::default(); 6];
            // SAFETY: blst reads a[i], b[i] and writes one element each.
            unsafe {
                blst::blst_fp_mul(&mut want[0], &a[i], &b[i]);
                blst::blst_fp_sqr(&mut want[1], &a[i]);
                blst::blst_fp_add(&mut want[2], &a[i], &b[i]);
                blst::blst_fp_sub(&mut want[3], &a[i], &b[i]);
                blst::blst_fp_cneg(&mut want[4], &a[i], true);
                blst::blst_fp_sub(&mut want[5], &want[0], &want[1]);
            }
            for (k, (name, op)) in named(&got).into_iter().enumerate() {
                assert_eq!(
                    op[i].l, want[k].l,
                    "fp {name} n={n} i={i} emulate={emulate}"
                );
            }
        }
    }
}

fn check_fp2(emulate: bool) {
    let mut rng = ChaCha20Rng::seed_from_u64(22);
    for n in [0usize, 1, 7, 1000, (1 << 16) + 3] {
        let mk = |v: Vec<blst_fp>, w: Vec<blst_fp>| -> Vec<blst_fp2> {
            v.into_iter()
                .zip(w)
                .map(|(c0, c1)| blst_fp2 { fp: [c0, c1] })
                .collect()
        };
        let a = mk(fp_values(n, &mut rng), fp_values(n, &mut rng));
        let b = mk(fp_values(n, &mut rng), fp_values(n, &mut rng));
        let got = cuda::field::fp2_ops(&a, &b, emulate).unwrap();
        for i in 0..n {
            let mut want = [blst_fp2::default(); 6];
            // SAFETY: as in check_fp.
            unsafe {
                blst::blst_fp2_mul(&mut want[0], &a[i], &b[i]);
                blst::blst_fp2_sqr(&mut want[1], &a[i]);
                blst::blst_fp2_add(&mut want[2], &a[i], &b[i]);
                blst::blst_fp2_sub(&mut want[3], &a[i], &b[i]);
                blst::blst_fp2_cneg(&mut want[4], &a[i], true);
                blst::blst_fp2_sub(&mut want[5], &want[0], &want[1]);
            }
            for (k, (name, op)) in named(&got).into_iter().enumerate() {
                let (g, w) = (&op[i].fp, &want[k].fp);
                assert!(
                    g[0].l == w[0].l && g[1].l == w[1].l,
                    "fp2 {name} n={n} i={i} emulate={emulate}"
                );
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn fp_fp2_match_blst_emulated() {
    check_fp(true);
    check_fp2(true);
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn fp_fp2_match_blst() {
    if !gpu_or_skip() {
        return;
    }
    check_fp(false);
    check_fp2(false);
}

// ---------------------------------------------------------------- MSM

/// One of the two groups, with its MSM entry points.
trait TestGroup: Curve<AffineRepr = Self::Aff> + Group<Scalar = Fr> + Debug + Send + Sync {
    type Aff: PrimeCurveAffine<Curve = Self>
        + UncompressedEncoding
        + cuda::GpuAffine<Projective = Self>;
    const NAME: &'static str;
    fn gpu(p: &[Self::Aff], s: &[Fr], cfg: Msm) -> anyhow::Result<Self>;
    fn emulated(p: &[Self::Aff], s: &[Fr], cfg: Msm) -> anyhow::Result<Self>;
    fn reference(p: &[Self::Aff], s: &[Fr]) -> Self;
}

impl TestGroup for G1Projective {
    type Aff = G1Affine;
    const NAME: &'static str = "G1";
    fn gpu(p: &[G1Affine], s: &[Fr], cfg: Msm) -> anyhow::Result<Self> {
        cuda::msm_g1(p, s, cfg)
    }
    fn emulated(p: &[G1Affine], s: &[Fr], cfg: Msm) -> anyhow::Result<Self> {
        cuda::msm_g1_emulated(p, s, cfg)
    }
    fn reference(p: &[G1Affine], s: &[Fr]) -> Self {
        if p.len() <= 300 {
            return p.iter().zip(s).map(|(p, s)| p * s).sum();
        }
        let proj: Vec<G1Projective> = p.iter().map(|a| a.into()).collect();
        G1Projective::multi_exp(&proj, s)
    }
}

impl TestGroup for G2Projective {
    type Aff = G2Affine;
    const NAME: &'static str = "G2";
    fn gpu(p: &[G2Affine], s: &[Fr], cfg: Msm) -> anyhow::Result<Self> {
        cuda::msm_g2(p, s, cfg)
    }
    fn emulated(p: &[G2Affine], s: &[Fr], cfg: Msm) -> anyhow::Result<Self> {
        cuda::msm_g2_emulated(p, s, cfg)
    }
    fn reference(p: &[G2Affine], s: &[Fr]) -> Self {
        if p.len() <= 300 {
            return p.iter().zip(s).map(|(p, s)| p * s).sum();
        }
        let proj: Vec<G2Projective> = p.iter().map(|a| a.into()).collect();
        G2Projective::multi_exp(&proj, s)
    }
}

fn points<G: TestGroup>(n: usize, seed: u64) -> Vec<G::Aff> {
    bench::points::<G>(n, seed)
}

fn scalars(n: usize, seed: u64) -> Vec<Fr> {
    bench::random_scalars(n, seed)
}

fn assert_same<G: TestGroup>(got: G, want: G, what: &str) {
    assert_eq!(got, want, "{} {what}", G::NAME);
    assert_eq!(
        got.to_affine().to_uncompressed().as_ref(),
        want.to_affine().to_uncompressed().as_ref(),
        "{} {what}: affine bytes",
        G::NAME
    );
}

/// Every window, with the split MSM off and on.
fn check<G: TestGroup>(p: &[G::Aff], s: &[Fr], windows: &[usize], emulate: bool, what: &str) {
    let want = G::reference(p, s);
    for &window in windows {
        for split in [false, true] {
            let cfg = Msm {
                window,
                split,
                windows_per_pass: 0,
            };
            let got = if emulate {
                G::emulated(p, s, cfg)
            } else {
                G::gpu(p, s, cfg)
            };
            let got =
                got.unwrap_or_else(|e| panic!("{} {what} n={} {cfg:?}: {e:#}", G::NAME, p.len()));
            assert_same(
                got,
                want,
                &format!("{what} n={} {cfg:?} emulate={emulate}", p.len()),
            );
        }
    }
}

/// The split's cases: 0/1-heavy vectors, only zeros and ones, ones without zeros, no ones.
fn split_cases<G: TestGroup>(ns: &[usize], windows: &[usize], emulate: bool) {
    for &n in ns {
        let p = points::<G>(n, 300 + n as u64);
        for (zeros, ones) in [(60, 35), (50, 50), (0, 100), (0, 90), (90, 0), (100, 0)] {
            let s = bench::witness_scalars(n, zeros, ones, 400 + n as u64 + zeros as u64);
            check::<G>(&p, &s, windows, emulate, &format!("{zeros}% 0, {ones}% 1"));
        }
    }
}

/// Split MSMs over points the device can read in host memory (page-locked; emulated: any)
/// copy only the points of nonzero scalars, unless more than 90 % are needed or the MSM is
/// small (`gather_min_points`); without the split, or then, all of them. Results equal
/// blstrs either way.
fn gather_cases<G: TestGroup>(ns: &[usize], emulate: bool) {
    for &n in ns {
        let p = points::<G>(n, 500 + n as u64);
        let locked = (!emulate).then(|| cuda::PageLocked::new(&p).expect("page-lock the points"));
        for (zeros, ones) in [(60, 35), (90, 5), (30, 0), (5, 90), (100, 0)] {
            let s = bench::witness_scalars(n, zeros, ones, 600 + n as u64 + zeros as u64);
            let want = G::reference(&p, &s);
            let nonzero = s.iter().filter(|x| !bool::from(x.is_zero())).count() as u64;
            for split in [false, true] {
                let cfg = Msm {
                    window: 0,
                    split,
                    windows_per_pass: 0,
                };
                let what = format!("gather n={n} {zeros}% 0, {ones}% 1, {cfg:?}");
                let (got, report) = match &locked {
                    Some(l) => cuda::msm_points(cuda::Points::Host(l.get()), &s, cfg),
                    None => cuda::msm_points_emulated(&p, &s, cfg),
                }
                .unwrap_or_else(|e| panic!("{} {what}: {e:#}", G::NAME));
                assert_same(got, want, &what);
                let gathered =
                    split && nonzero * 10 <= n as u64 * 9 && n >= cuda::gather_min_points(emulate);
                let expect = if gathered { nonzero } else { n as u64 };
                assert_eq!(report.copied, expect, "{} {what}: points copied", G::NAME);
            }
        }
    }
}

/// Random points and scalars at the given sizes.
fn sizes<G: TestGroup>(ns: &[usize], windows: &[usize], emulate: bool) {
    for &n in ns {
        let p = points::<G>(n, 100 + n as u64);
        let s = scalars(n, 200 + n as u64);
        check::<G>(&p, &s, windows, emulate, "random");
    }
}

/// The awkward inputs: zero, one and r−1 scalars, carries through every window, repeated
/// points, P with −P, points at infinity, mostly empty buckets, one huge bucket.
fn edge_cases<G: TestGroup>(windows: &[usize], emulate: bool) {
    let minus_one = -Fr::ONE;
    let carry_chain = Fr::from(2u64).pow_vartime([254]) - Fr::ONE; // 2^254 − 1: all ones
    let half = Fr::from(2u64).invert().unwrap(); // (r + 1) / 2
    let base = points::<G>(100, 7);
    let rnd = scalars(4097, 8);
    let inf = G::Aff::identity();
    let c = |p: &[G::Aff], s: &[Fr], what: &str| check::<G>(p, s, windows, emulate, what);

    // n = 1
    for (s, name) in [
        (Fr::ZERO, "0"),
        (Fr::ONE, "1"),
        (minus_one, "r-1"),
        (rnd[0], "rnd"),
    ] {
        c(&base[..1], &[s], &format!("single point, scalar {name}"));
        c(&[inf], &[s], &format!("infinity, scalar {name}"));
    }
    c(&base[..100], &[Fr::ZERO; 100], "all-zero scalars");
    c(&base[..100], &[Fr::ONE; 100], "all-one scalars");
    c(&base[..100], &[minus_one; 100], "all r-1 scalars");
    c(&base[..7], &[carry_chain; 7], "2^254-1 scalars");
    c(&base[..7], &[half; 7], "(r+1)/2 scalars");
    let mixed: Vec<Fr> = (0..100)
        .map(|i| [Fr::ZERO, Fr::ONE, minus_one, carry_chain, half, rnd[i]][i % 6])
        .collect();
    c(&base, &mixed, "mixed special scalars");

    // Repeated points: same point, random scalars; same point and scalar (doublings).
    c(&[base[3]; 100], &rnd[..100], "one point repeated");
    c(
        &[base[3]; 100],
        &[rnd[5]; 100],
        "one point and scalar repeated",
    );
    c(&[base[3]; 2], &[Fr::ONE; 2], "P + P");
    // P and −P.
    let neg3 = (-base[3].to_curve()).to_affine();
    c(&[base[3], neg3], &[Fr::ONE; 2], "P + (-P)");
    c(&[base[3], neg3], &[rnd[1]; 2], "sP + s(-P)");
    c(&[base[3], neg3], &[rnd[1], rnd[2]], "sP + t(-P)");
    c(&[base[3], base[3]], &[rnd[1], -rnd[1]], "sP - sP");
    let pm: Vec<G::Aff> = (0..100)
        .map(|i| {
            if i % 2 == 0 {
                base[i / 2]
            } else {
                (-base[i / 2].to_curve()).to_affine()
            }
        })
        .collect();
    c(&pm, &[rnd[9]; 100], "pairs P, -P with equal scalars");
    // Points at infinity among others.
    let with_inf: Vec<G::Aff> = (0..100)
        .map(|i| if i % 3 == 0 { inf } else { base[i] })
        .collect();
    c(&with_inf, &rnd[..100], "every third point at infinity");
    c(&[inf; 7], &rnd[..7], "all points at infinity");
    // One bucket holding every entry (several reduction levels), and mostly empty buckets.
    let many = points::<G>(4097, 9);
    c(&many, &[Fr::ONE; 4097], "4097 points, scalar 1");
    c(&many, &[Fr::from(3u64); 4097], "4097 points, scalar 3");
    c(&many[..3], &rnd[..3], "3 points");
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_matches_blstrs_emulated() {
    // The device code, run on the host: small sizes, every stage exercised.
    sizes::<G1Projective>(&[0, 1, 2, 3, 7, 100, 1000], &[0, 1, 4, 9, 16], true);
    sizes::<G1Projective>(&[4097, 65537], &[0], true);
    sizes::<G2Projective>(&[0, 1, 2, 3, 7, 100], &[0, 1, 5, 12], true);
    sizes::<G2Projective>(&[4097], &[0], true);
    edge_cases::<G1Projective>(&[0, 3, 11], true);
    edge_cases::<G2Projective>(&[0, 7], true);
    split_cases::<G1Projective>(&[1, 100, 5000], &[0, 6], true);
    split_cases::<G2Projective>(&[1, 1000], &[0], true);
    gather_cases::<G1Projective>(&[1, 33, 5000], true);
    gather_cases::<G2Projective>(&[1000], true);
}

/// Windows sorted in passes of k (`Msm::windows_per_pass`, as a device short of memory
/// runs them): every k, the last pass short or not, with the split off and on, points from
/// the host in batches and not, give blstrs' sums.
fn passes<G: TestGroup>(ns: &[usize], windows: &[usize], ks: &[u32], emulate: bool) {
    for &n in ns {
        let p = points::<G>(n, 700 + n as u64);
        let s = scalars(n, 800 + n as u64);
        let want = G::reference(&p, &s);
        for &window in windows {
            for &k in ks {
                for split in [false, true] {
                    let cfg = Msm {
                        window,
                        split,
                        windows_per_pass: k,
                    };
                    let got = if emulate {
                        G::emulated(&p, &s, cfg)
                    } else {
                        G::gpu(&p, &s, cfg)
                    };
                    let what = format!("passes n={n} {cfg:?} emulate={emulate}");
                    let got = got.unwrap_or_else(|e| panic!("{} {what}: {e:#}", G::NAME));
                    assert_same(got, want, &what);
                }
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_in_window_passes_matches_blstrs_emulated() {
    // c = 4: 64 windows (passes of 3: 21 and a last of 1); c = 9: 29; 4097 points arrive
    // in batches that the first pass waits for and the later ones find there.
    passes::<G1Projective>(&[1, 100], &[4, 9], &[1, 3, 5], true);
    passes::<G1Projective>(&[4097], &[9], &[4], true);
    passes::<G2Projective>(&[100], &[5], &[7], true);
}

/// With less device memory (the emulation's stand-in, set for this thread) the MSM takes
/// its windows in passes by itself: all of them with no limit, fewer as the memory shrinks
/// (never more with less), one with next to none, and blstrs' sum every time.
#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_passes_follow_the_free_memory_emulated() {
    let n = 4097;
    let (p, s) = (points::<G1Projective>(n, 31), scalars(n, 32));
    let want = G1Projective::reference(&p, &s);
    let cfg = Msm {
        window: 9, // 29 windows of 256 buckets
        split: false,
        windows_per_pass: 0,
    };
    let mut last = u32::MAX;
    for bytes in [usize::MAX, 4 << 20, 1 << 20, 400 << 10, 1] {
        cuda::emulate_free_memory(bytes);
        let got = cuda::msm_points_emulated(&p, &s, cfg);
        cuda::emulate_free_memory(usize::MAX);
        let (got, report) = got.unwrap_or_else(|e| panic!("{bytes} bytes free: {e:#}"));
        assert_same(got, want, &format!("{bytes} bytes free"));
        let k = report.windows_per_pass;
        match bytes {
            usize::MAX => assert_eq!(k, 29, "no limit: one pass"),
            1 => assert_eq!(k, 1, "next to no memory: a window a pass"),
            _ => assert!(
                k >= 1 && k <= last,
                "{bytes} bytes free: {k} windows a pass"
            ),
        }
        if bytes == 4 << 20 {
            // ~265 KB a window (sorted entries, partial sums, buckets): some, not all.
            assert!(k > 1 && k < 29, "4 MiB free: {k} windows a pass");
        }
        last = k;
    }
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_in_window_passes_matches_blstrs() {
    if !gpu_or_skip() {
        return;
    }
    passes::<G1Projective>(&[1, 100, 65537], &[0, 4, 13], &[1, 2, 5], false);
    passes::<G1Projective>(&[1 << 20], &[0], &[1, 4], false);
    passes::<G2Projective>(&[1000, 65537], &[0, 5], &[1, 3], false);
}

/// A measuring knob with a value that is not an integer in its range is ignored with a
/// warning, not read as strtol's 0 (for CUZK_MSM_SLICE, the per-bucket segments): the
/// automatic slices run, and the MSM still matches blstrs.
#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_bad_knob_is_ignored_with_a_warning_emulated() {
    let name = "msm_bad_knob_is_ignored_with_a_warning_emulated";
    if let Some(err) = common::rerun_with_env_stderr(name, "CUZK_MSM_SLICE", "abc") {
        let warnings: Vec<_> = err
            .lines()
            .filter(|l| l.contains("CUZK_MSM_SLICE"))
            .collect();
        assert_eq!(
            warnings,
            ["cuzk-prove: warning: CUZK_MSM_SLICE=abc ignored (not an integer in [0, 4096])"],
            "{err}"
        );
        return;
    }
    sizes::<G1Projective>(&[100, 4097], &[0], true);
}

/// The first level's other form, per-bucket segments (`CUZK_MSM_SLICE=0`, kept to measure
/// the slices against), emulated: the variable is read once per process, so this test runs
/// its checks in a child process of this test binary with it set.
#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_segments_match_blstrs_emulated() {
    if common::rerun_with_env("msm_segments_match_blstrs_emulated", "CUZK_MSM_SLICE", "0") {
        return;
    }
    // Below 4096 points in one upload, from 4096 on in batches.
    sizes::<G1Projective>(&[1, 7, 100, 4097], &[0, 4], true);
    sizes::<G2Projective>(&[100], &[0, 5], true);
    edge_cases::<G1Projective>(&[0, 3], true);
    split_cases::<G1Projective>(&[100, 5000], &[0], true);
    gather_cases::<G1Projective>(&[5000], true);
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_g1_matches_blstrs() {
    if !gpu_or_skip() {
        return;
    }
    sizes::<G1Projective>(
        &[0, 1, 2, 3, 7, 100, 1000, 4097, 65537],
        &[0, 1, 4, 8, 13, 16],
        false,
    );
    sizes::<G1Projective>(&[1 << 20], &[0, 17], false);
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_g2_matches_blstrs() {
    if !gpu_or_skip() {
        return;
    }
    sizes::<G2Projective>(
        &[0, 1, 2, 3, 7, 100, 1000, 4097, 65537],
        &[0, 1, 5, 10, 16],
        false,
    );
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_edge_cases_match_blstrs() {
    if !gpu_or_skip() {
        return;
    }
    edge_cases::<G1Projective>(&[0, 1, 3, 8, 16], false);
    edge_cases::<G2Projective>(&[0, 2, 9, 16], false);
    split_cases::<G1Projective>(&[1, 100, 5000, 1 << 20], &[0, 12], false);
    split_cases::<G2Projective>(&[1, 1000, 65537], &[0, 9], false);
    gather_cases::<G1Projective>(&[1, 33, 5000, (1 << 21) + 5], false);
    gather_cases::<G2Projective>(&[1000, 65537], false);
}

/// Small, for compute-sanitizer: every kernel of G1 and G2 once.
#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn msm_small() {
    if !gpu_or_skip() {
        return;
    }
    sizes::<G1Projective>(&[100], &[0, 5], false);
    sizes::<G2Projective>(&[37], &[4], false);
    gather_cases::<G1Projective>(&[5000], false);
    gather_cases::<G2Projective>(&[300], false);
    let p = points::<G1Projective>(64, 3);
    check::<G1Projective>(&p, &[Fr::ONE; 64], &[3], false, "heavy bucket");
    let auto = Msm::default();
    let err = cuda::msm_g1(&p, &[Fr::ONE; 63], auto).unwrap_err();
    assert!(
        err.to_string().contains("64 points but 63 scalars"),
        "{err}"
    );
    let err = cuda::msm_g1(
        &p,
        &[Fr::ONE; 64],
        Msm {
            window: 25,
            split: true,
            windows_per_pass: 0,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

// ---------------------------------------------------------------- SRS points on the device

fn raw<P: UncompressedEncoding>(points: &[P]) -> Vec<u8> {
    points
        .iter()
        .flat_map(|p| p.to_uncompressed().as_ref().to_vec())
        .collect()
}

fn decode_set<G: TestGroup>(raw: &[u8], emulate: bool) -> anyhow::Result<cuda::DevicePoints<G::Aff>>
where
    G::Aff: cuda::GpuAffine,
{
    if emulate {
        cuda::DevicePoints::decode_emulated(raw)
    } else {
        cuda::DevicePoints::decode(raw, false)
    }
}

/// Decoding raw uncompressed points on the device gives blstrs' points; every malformed
/// encoding, and a point at infinity (as the host reader and bellperson refuse it in a
/// parameter file), is refused with its index; MSMs over the set equal MSMs over host
/// points.
fn device_points<G: TestGroup>(emulate: bool)
where
    G::Aff: cuda::GpuAffine<Projective = G>,
{
    let size = <G::Aff as cuda::GpuAffine>::RAW_SIZE;
    let pts = points::<G>(3000, 77);
    let bytes = raw(&pts);
    let set = decode_set::<G>(&bytes, emulate).unwrap();
    assert_eq!(set.len(), pts.len());
    assert!(
        set.read(0..pts.len()).unwrap() == pts,
        "{}: decoded points differ",
        G::NAME
    );
    assert_eq!(set.read(10..13).unwrap(), pts[10..13].to_vec());

    // MSMs over the set, at offsets, split on and off, equal blstrs.
    let s = bench::witness_scalars(2000, 40, 40, 5);
    for (offset, n) in [(0, 2000), (1000, 2000), (7, 1), (3000, 0)] {
        let n = n.min(3000 - offset);
        let want = G::reference(&pts[offset..offset + n], &s[..n]);
        for split in [false, true] {
            let cfg = Msm {
                window: 0,
                split,
                windows_per_pass: 0,
            };
            let got = cuda::msm_resident(&set, offset, &s[..n], cfg).unwrap();
            assert_same(got, want, &format!("resident MSM at {offset}+{n} {cfg:?}"));
        }
    }
    let err = cuda::msm_resident(&set, 2500, &s[..600], Msm::default()).unwrap_err();
    assert!(err.to_string().contains("of a set of 3000"), "{err}");

    // Malformed encodings: (what, byte offset in point 9, xor mask).
    let bad_cases: [(&str, usize, u8); 4] = [
        ("not on the curve", size - 1, 1),
        ("compression flag", 0, 0x80),
        ("sort flag", 0, 0x20),
        ("infinity flag on a point", 0, 0x40),
    ];
    for (what, at, mask) in bad_cases {
        let mut b = bytes.clone();
        b[9 * size + at] ^= mask;
        let err = decode_set::<G>(&b, emulate).err().unwrap_or_else(|| {
            panic!("{} {what}: accepted", G::NAME);
        });
        assert!(err.to_string().contains("point 9 of 3000"), "{what}: {err}");
    }
    // A coordinate ≥ p (all ones below the flags); the point at infinity, clean (its
    // encoding as blstrs writes it) and with a non-zero byte.
    let mut b = bytes.clone();
    b[9 * size..9 * size + 48].fill(0xff);
    b[9 * size] = 0x1f;
    assert!(decode_set::<G>(&b, emulate).is_err(), "x ≥ p accepted");
    let inf = raw(&[G::Aff::identity()]);
    for (what, dirty) in [("infinity", false), ("dirty infinity", true)] {
        let mut b = bytes.clone();
        b[5 * size..6 * size].copy_from_slice(&inf);
        if dirty {
            b[5 * size + size - 1] = 1;
        }
        let err = decode_set::<G>(&b, emulate)
            .err()
            .unwrap_or_else(|| panic!("{} {what} accepted", G::NAME));
        assert!(err.to_string().contains("point 5 of 3000"), "{what}: {err}");
    }
    // Not a whole number of points.
    let err = decode_set::<G>(&bytes[..size + 1], emulate).err().unwrap();
    assert!(err.to_string().contains("not a whole number"), "{err}");
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn srs_points_decode_on_device_emulated() {
    device_points::<G1Projective>(true);
    device_points::<G2Projective>(true);
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn srs_points_decode_on_device() {
    if !gpu_or_skip() {
        return;
    }
    device_points::<G1Projective>(false);
    device_points::<G2Projective>(false);
}

/// The real parameter file's sections decode on the device exactly as blstrs decodes them
/// (the first points of each section; all of them on a GPU).
fn real_sections(emulate: bool) {
    let srs = cuzk_prove::input::srs::Srs::open(&common::params_file()).unwrap();
    for s in [&srs.h, &srs.l, &srs.a, &srs.b_g1] {
        let n = if emulate { s.count.min(2000) } else { s.count };
        let bytes = &srs.section_bytes(s)[..n * 96];
        let set = decode_set::<G1Projective>(bytes, emulate).unwrap();
        let want: Vec<G1Affine> = srs.points(s, 0..n).unwrap();
        assert!(set.read(0..n).unwrap() == want, "section {}", s.name);
    }
    let s = &srs.b_g2;
    let n = if emulate { s.count.min(500) } else { s.count };
    let set = decode_set::<G2Projective>(&srs.section_bytes(s)[..n * 192], emulate).unwrap();
    let want: Vec<G2Affine> = srs.points(s, 0..n).unwrap();
    assert!(set.read(0..n).unwrap() == want, "section b_g2");
    if !emulate {
        // Page-locked for the copy (--pin): the same points.
        let pinned =
            cuda::DevicePoints::<G2Affine>::decode(&srs.section_bytes(s)[..n * 192], true).unwrap();
        assert!(pinned.read(0..n).unwrap() == want, "section b_g2, pinned");
    }
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn real_srs_sections_decode_on_device_emulated() {
    real_sections(true);
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn real_srs_sections_decode_on_device() {
    if !gpu_or_skip() {
        return;
    }
    real_sections(false);
}

// ---------------------------------------------------------------- scalars on the device

/// Scalars uploaded once and narrowed on the device by a density (the backend's A and B
/// path) equal the host's selection, and an MSM reading them (over a decoded point set at
/// an offset, as the prover's) equals blstrs.
/// G1 points decoded on the device (emulate: in the host emulation) from raw bytes.
fn g1_on_device(pts: &[G1Affine], emulate: bool) -> cuda::DevicePoints<G1Affine> {
    let raw: Vec<u8> = pts
        .iter()
        .flat_map(|p| p.to_uncompressed().as_ref().to_vec())
        .collect();
    if emulate {
        cuda::DevicePoints::<G1Affine>::decode_emulated(&raw).unwrap()
    } else {
        cuda::DevicePoints::<G1Affine>::decode(&raw, false).unwrap()
    }
}

fn check_device_scalars(emulate: bool) {
    use cuzk_prove::synth::Density;
    let sizes: &[(usize, usize)] = if emulate {
        &[(1, 1), (130, 3), (2051, 4)] // the host emulation is slow
    } else {
        &[(1, 1), (130, 3), (4099, 4), (70_001, 7)]
    };
    for &(n, every) in sizes {
        let s = bench::witness_scalars(n, 40, 40, n as u64);
        let mut words = vec![0u64; n.div_ceil(64)];
        for i in (0..n).filter(|i| i % every != 1) {
            words[i / 64] |= 1 << (i % 64);
        }
        let d = Density::from_words(words, n).unwrap();
        let want = d.select(&s);
        let up = cuda::DeviceScalars::upload(&s, emulate).unwrap();
        assert_eq!(up.read().unwrap(), s, "upload n = {n}");
        let sel = up.select(&d).unwrap();
        assert_eq!(sel.read().unwrap(), want, "select n = {n}");

        let pts = points::<G1Projective>(want.len() + 5, 9);
        let set = g1_on_device(&pts, emulate);
        for split in [false, true] {
            let cfg = Msm {
                window: 0,
                split,
                windows_per_pass: 0,
            };
            let all = cuda::Scalars::Device(&sel, 0, sel.len());
            let (got, _) = cuda::msm_with(cuda::Points::Device(&set, 5), all, cfg).unwrap();
            let want_p = G1Projective::reference(&pts[5..], &want);
            assert_eq!(got, want_p, "MSM of device scalars, n = {n}, split {split}");
        }
    }
    // Packed (`--pack-aux`): unpacked on the device into the same scalars, all zeros or
    // ones included; a set of mostly other values goes whole.
    for (zeros, ones) in [(40, 40), (100, 0), (0, 100), (0, 0)] {
        let s = bench::witness_scalars(70_001, zeros, ones, 5);
        let up = cuda::DeviceScalars::upload_aux(&s, true, emulate).unwrap();
        assert_eq!(
            up.read().unwrap(),
            s,
            "packed upload, {zeros} % zeros, {ones} % ones"
        );
    }
    // A bad density is refused with a message, not a crash.
    let up = cuda::DeviceScalars::upload(&scalars(10, 1), emulate).unwrap();
    let d = Density::from_words(vec![0b111], 3).unwrap();
    assert!(up.select(&d).is_err());
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn device_scalars_select_and_msm_emulated() {
    check_device_scalars(true);
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn device_scalars_select_and_msm() {
    if !gpu_or_skip() {
        return;
    }
    check_device_scalars(false);
}

/// An upload beside other device work (the prover's `--overlap-aux`): the scalars arrive
/// intact, the MSM run meanwhile is right, and an error of the work is the result's.
fn check_upload_during(emulate: bool, pack: bool) {
    // On the GPU large enough for the staged copy (pinned buffers, worker thread); packed
    // (`--pack-aux`) large enough to be packed.
    let n = match (emulate, pack) {
        (true, false) => 3000,
        (true, true) => 70_001,
        (false, _) => (1 << 22) + 3,
    };
    let s = bench::witness_scalars(n, 30, 30, 21);
    let m = if emulate { 700 } else { 70_001 };
    let pts = points::<G1Projective>(m, 22);
    let set = g1_on_device(&pts, emulate);
    let k = scalars(m, 23);
    let resident = cuda::DeviceScalars::upload(&k, emulate).unwrap();
    let (up, got) = cuda::DeviceScalars::upload_during(&s, pack, emulate, || {
        let all = cuda::Scalars::Device(&resident, 0, m);
        let cfg = Msm {
            window: 0,
            split: false,
            windows_per_pass: 0,
        };
        Ok(cuda::msm_with(cuda::Points::Device(&set, 0), all, cfg)?.0)
    })
    .unwrap();
    assert_eq!(up.len(), n);
    assert!(
        up.read().unwrap() == s,
        "scalars uploaded beside an MSM differ"
    );
    assert_eq!(
        got,
        G1Projective::reference(&pts, &k),
        "MSM beside an upload"
    );

    let e = cuda::DeviceScalars::upload_during(&s, pack, emulate, || -> anyhow::Result<()> {
        anyhow::bail!("the work failed")
    })
    .map(|_| ())
    .unwrap_err();
    assert!(e.to_string().contains("the work failed"), "{e}");
    // Nothing left behind: the next upload is whole.
    let again = cuda::DeviceScalars::upload(&s[..100], emulate).unwrap();
    assert_eq!(again.read().unwrap(), s[..100].to_vec());
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn upload_during_emulated() {
    check_upload_during(true, false);
    check_upload_during(true, true);
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn upload_during() {
    if !gpu_or_skip() {
        return;
    }
    check_upload_during(false, false);
    check_upload_during(false, true);
}

/// Pageable uploads from several threads at once each hold a staging pair of their own
/// (util/transfer.cuh, Staging): four threads decode four different sets of 2^20 G1
/// points (100 MB each: staged, two chunks) at the same time, with the pool's default
/// size and with one pair shared in turn (`CUZK_STAGING_PAIRS=1`, read at the pool's first
/// use, so only the first configuration a process meets is exercised; both are a
/// correctness check of the buffers' hand-over). Every set reads back exactly.
#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn srs_points_decode_concurrently_through_the_staging_pool() {
    if !gpu_or_skip() {
        return;
    }
    // Distinct sets without 4 M point generations: 4096 points, each set a different
    // permutation-with-repeats of them.
    let base = points::<G1Projective>(4096, 91);
    let sets: Vec<Vec<G1Affine>> = (0..4u64)
        .map(|t| {
            (0..1usize << 20)
                .map(|i| base[(i.wrapping_mul(2 * t as usize + 1) + (t as usize) * 7) % 4096])
                .collect()
        })
        .collect();
    let raws: Vec<Vec<u8>> = sets.iter().map(|s| raw(s)).collect();
    std::thread::scope(|sc| {
        let handles: Vec<_> = raws
            .iter()
            .map(|r| sc.spawn(move || decode_set::<G1Projective>(r, false)))
            .collect();
        for (t, h) in handles.into_iter().enumerate() {
            let set = h.join().unwrap().unwrap();
            assert_eq!(set.len(), 1 << 20);
            assert!(
                set.read(0..1 << 20).unwrap() == sets[t],
                "set {t} differs after a concurrent upload"
            );
        }
    });
}

/// A section of a file's mapping (not page-aligned, longer than three 256 MiB chunks)
/// copied page-locked chunk by chunk (`--pin-mapped`) reads back exactly, every chunk
/// locked; with a range inside it locked already, the chunk that overlaps it is staged
/// instead and the copy is still exact; so are two threads copying the same mapping at
/// once.
#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn srs_points_from_a_mapping_decode_page_locked_chunk_by_chunk() {
    if !gpu_or_skip() {
        return;
    }
    use std::io::Write;
    let base = points::<G1Projective>(4096, 93);
    let n = (820usize << 20) / 96; // 820 MiB of raw points
    let set: Vec<G1Affine> = (0..n).map(|i| base[(i * 7 + i / 4096) % 4096]).collect();
    let mut file = tempfile::tempfile().unwrap();
    let head = 1000; // the section starts mid-page, as in a .params file
    file.write_all(&vec![0u8; head]).unwrap();
    file.write_all(&raw(&set)).unwrap();
    // SAFETY: the temporary file is this test's own and is not changed while mapped.
    let map = unsafe { memmap2::MmapOptions::new().map(&file) }.unwrap();
    let bytes = &map[head..head + n * 96];
    let (one, locked) = cuda::DevicePoints::<G1Affine>::decode_page_locked(bytes).unwrap();
    assert!(locked, "every chunk page-locked");
    assert!(one.read(0..n).unwrap() == set, "page-locked chunk by chunk");
    drop(one);
    {
        // As another GPU's copy holds it: read-only (a file's pages cannot be pinned
        // for writing on recent kernels: the first try of this test, session 29).
        let held = cuda::PageLocked::read_only(&bytes[300 << 20..301 << 20]).unwrap();
        let (got, locked) = cuda::DevicePoints::<G1Affine>::decode_page_locked(bytes).unwrap();
        assert!(!locked, "the chunk over a locked range is staged");
        assert!(got.read(0..n).unwrap() == set, "with one chunk staged");
        drop(held);
    }
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..2)
            .map(|_| sc.spawn(|| cuda::DevicePoints::<G1Affine>::decode(bytes, true)))
            .collect();
        for (t, h) in hs.into_iter().enumerate() {
            let got = h.join().unwrap().unwrap();
            assert!(
                got.read(0..n).unwrap() == set,
                "thread {t}, the same mapping at once"
            );
        }
    });
}
