//! `cuzk-prove bench-gpu`: kernel benchmarks on the GPU, each size warmed up once and then
//! timed `--runs` times, median reported. G1 MSM over random scalars and over witness-like
//! ones (mostly 0 and 1, as PoRep's are) with the split on and off, G2 MSM, the NTT, and
//! the quotient H. MSM times are wall clock around one call: "host points" rows include
//! copying the points and scalars from (pageable) host memory to the device, as a
//! one-off MSM library call would; "resident" rows use points decoded on the device
//! beforehand, as the prover's SRS is, and include only the scalars' copy. NTT times are
//! the kernels' (CUDA events).
//!
//! The inputs generators are shared with the tests (tests/cuda_msm.rs).

use std::time::Instant;

use anyhow::{ensure, Result};
use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group, UncompressedEncoding};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

use crate::prove::cuda::{self, Msm};

const CHUNK: usize = 1 << 14;

/// n distinct points start + i·step (one addition each, in parallel chunks), normalised:
/// far cheaper than n random points, and as good for timing and for checking.
pub fn points<G: Curve + Group + Send + Sync>(n: usize, seed: u64) -> Vec<G::AffineRepr>
where
    G::AffineRepr: Copy + Default + Send + Sync,
{
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let start = G::random(&mut rng);
    let step = G::random(&mut rng);
    let mut out = vec![G::AffineRepr::default(); n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(k, a)| {
        let mut p = start + step * G::Scalar::from((k * CHUNK) as u64);
        let proj: Vec<G> = (0..a.len())
            .map(|_| {
                let x = p;
                p += step;
                x
            })
            .collect();
        G::batch_normalize(&proj, a);
    });
    out
}

/// Uniformly random scalars, in parallel chunks (deterministic for a seed).
pub fn random_scalars(n: usize, seed: u64) -> Vec<Fr> {
    let mut out = vec![Fr::ZERO; n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(k, c)| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 20));
        c.iter_mut().for_each(|s| *s = Fr::random(&mut rng));
    });
    out
}

/// Witness-like scalars: `zeros` percent 0, `ones` percent 1, the rest random.
pub fn witness_scalars(n: usize, zeros: u32, ones: u32, seed: u64) -> Vec<Fr> {
    let mut out = vec![Fr::ZERO; n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(k, c)| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 20));
        for s in c {
            *s = match rng.next_u32() % 100 {
                x if x < zeros => Fr::ZERO,
                x if x < zeros + ones => Fr::ONE,
                _ => Fr::random(&mut rng),
            };
        }
    });
    out
}

pub struct Options {
    pub min_log: u32,
    /// Largest G1 MSM and NTT: 2^max_log.
    pub max_log: u32,
    pub g2_max_log: u32,
    pub runs: usize,
    pub gpu: usize,
    /// Witness-like scalars: percent zeros and ones.
    pub zeros: u32,
    pub ones: u32,
    /// Pippenger window bits for every MSM, 0 for automatic.
    pub window: usize,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub kernel: String,
    pub log_n: u32,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub runs: usize,
}

/// Median, min and max of `runs` timings after one warm-up call.
fn time(runs: usize, mut f: impl FnMut() -> Result<f64>) -> Result<(f64, f64, f64)> {
    f()?;
    let mut ms = (0..runs).map(|_| f()).collect::<Result<Vec<f64>>>()?;
    ms.sort_by(f64::total_cmp);
    Ok((ms[ms.len() / 2], ms[0], ms[ms.len() - 1]))
}

fn wall(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// The points decoded into device memory, as the prover holds its SRS.
fn resident<A>(points: &[A]) -> Result<cuda::DevicePoints<A>>
where
    A: cuda::GpuAffine + UncompressedEncoding + PrimeCurveAffine + Sync,
{
    let raw: Vec<u8> = points
        .par_iter()
        .flat_map_iter(|p| p.to_uncompressed().as_ref().to_vec())
        .collect();
    cuda::DevicePoints::decode(&raw, false)
}

/// Runs every benchmark, printing each row as it completes.
pub fn run(o: &Options) -> Result<Vec<Row>> {
    ensure!(cuda::built(), "bench-gpu: {}", cuda::NO_CUDA_BUILD);
    ensure!(cuda::device_count()? > 0, "bench-gpu: no CUDA device found");
    ensure!(o.runs >= 1, "--runs must be at least 1");
    cuda::set_device(o.gpu).map_err(|e| anyhow::anyhow!("--gpu {}: {e:#}", o.gpu))?;
    ensure!(
        o.min_log <= o.max_log && o.max_log <= 28 && o.g2_max_log <= o.max_log,
        "sizes: need --min-log ≤ --max-log ≤ 28 and --g2-max-log ≤ --max-log"
    );
    ensure!(
        o.zeros + o.ones <= 100,
        "--zeros + --ones must be at most 100"
    );
    let mut rows = Vec::new();
    let mut push = |kernel: String, log_n: u32, (median_ms, min_ms, max_ms): (f64, f64, f64)| {
        eprintln!(
            "{kernel:<34} 2^{log_n:<3} median {median_ms:>9.2} ms  (min {min_ms:.2}, max {max_ms:.2}, {} runs)",
            o.runs
        );
        rows.push(Row {
            kernel,
            log_n,
            median_ms,
            min_ms,
            max_ms,
            runs: o.runs,
        });
    };
    let logs = |max: u32| o.min_log..=max;

    let t = Instant::now();
    let n = 1usize << o.max_log;
    let p1 = points::<G1Projective>(n, 1);
    let full = random_scalars(n, 2);
    let wit = witness_scalars(n, o.zeros, o.ones, 3);
    eprintln!(
        "inputs: 2^{} G1 points and scalars in {:.1} s",
        o.max_log,
        t.elapsed().as_secs_f64()
    );
    let (plain, split) = (
        Msm {
            window: o.window,
            split: false,
        },
        Msm {
            window: o.window,
            split: true,
        },
    );
    let d1 = resident(&p1)?;
    for log in logs(o.max_log) {
        let n = 1usize << log;
        let (p, f, w) = (&p1[..n], &full[..n], &wit[..n]);
        let r = time(o.runs, || wall(|| cuda::msm_g1(p, f, plain).map(drop)))?;
        push("msm_g1 random, host points".into(), log, r);
        let on_device = |s: &[Fr], cfg: Msm| {
            wall(|| cuda::msm_points(cuda::Points::Device(&d1, 0), s, cfg).map(drop))
        };
        let r = time(o.runs, || on_device(f, plain))?;
        push("msm_g1 random, resident".into(), log, r);
        let r = time(o.runs, || on_device(w, plain))?;
        push(
            format!("msm_g1 witness {}/{} split off, res.", o.zeros, o.ones),
            log,
            r,
        );
        let r = time(o.runs, || on_device(w, split))?;
        push(
            format!("msm_g1 witness {}/{} split on, res.", o.zeros, o.ones),
            log,
            r,
        );
    }
    drop((p1, wit, d1));

    let p2 = points::<G2Projective>(1usize << o.g2_max_log, 4);
    let d2 = resident(&p2)?;
    for log in logs(o.g2_max_log) {
        let n = 1usize << log;
        let f = &full[..n];
        let r = time(o.runs, || {
            wall(|| cuda::msm_points(cuda::Points::Device(&d2, 0), f, plain).map(drop))
        })?;
        push("msm_g2 random, resident".into(), log, r);
    }
    drop((p2, d2));

    for log in logs(o.max_log) {
        let mut x = full[..1usize << log].to_vec();
        let r = time(o.runs, || Ok(cuda::ntt::ntt(&mut x, false)? as f64))?;
        push("ntt (kernels)".into(), log, r);
    }
    for log in logs(o.max_log) {
        let n = (1usize << log) - 5; // a constraint count just under the domain
        let (a, b, c) = (&full[..n], &full[1..n + 1], &full[2..n + 2]);
        let r = time(o.runs, || Ok(cuda::ntt::quotient(a, b, c)?.1 as f64))?;
        push("quotient H (kernels)".into(), log, r);
    }
    Ok(rows)
}
