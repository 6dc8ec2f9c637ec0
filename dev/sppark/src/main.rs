//! sppark-vs-cuzk: times G1 (and G2) MSMs, and Fr NTTs, of the same inputs through
//! cuzk-prove's GPU code and through sppark's, in one process on one GPU, and prints the
//! ratio sppark time / cuzk time (above 1: cuzk is faster).
//!
//! Both are timed the same way: wall clock around one call, which copies the points and
//! scalars from host memory (pageable, or page-locked with --pin) and returns the sum on
//! the host. Scalars go to each in its own form, converted before timing: blstrs's
//! Montgomery form for cuzk, canonical integers for sppark.
//!
//! Before any timing, both are held against blstrs (CPU) at the smallest size and at one
//! odd size; afterwards every timed size still checks sppark == cuzk.
//!
//! Then NTTs over Fr (forward and inverse, natural order in and out) of the same random
//! vectors through `cuzk_prove::prove::cuda::ntt::ntt` and sppark's `NTT::Base_dev_ptr`,
//! timed differently from the MSMs: kernel time only, by CUDA events, transfers excluded.
//! Both are held against a CPU NTT at the smallest size first (and inverse(forward(x)) ==
//! x), and every timed size checks sppark == cuzk.

mod sppark;

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use clap::Parser;
use cuzk_prove::bench;
use cuzk_prove::prove::cuda::{self, Msm};
use group::ff::Field;
use group::Group;
use rayon::prelude::*;
use serde::Serialize;

use crate::sppark::Canonical;

const SEED_POINTS_G1: u64 = 0x5eed_0001;
const SEED_POINTS_G2: u64 = 0x5eed_0002;
const SEED_RANDOM: u64 = 0x5eed_0003;
const SEED_WITNESS: u64 = 0x5eed_0004;
const SEED_NTT: u64 = 0x5eed_0005;
/// An odd size (not a multiple of 32) checked against blstrs besides the smallest (when
/// there are that many points).
const ODD_N: usize = 4099;

#[derive(Parser, Debug)]
#[command(
    name = "sppark-vs-cuzk",
    about = "Times cuzk-prove's GPU MSM and NTT against sppark's (crates.io) on the same inputs and GPU"
)]
struct Args {
    /// Smallest MSM: 2^min_log points (also the size checked against blstrs, unless
    /// --verify-log says otherwise).
    #[arg(long, default_value_t = 20)]
    min_log: u32,
    /// The size checked against blstrs before any timing, 2^verify_log points (at most
    /// the largest of each group); default --min-log. Smaller saves minutes on the CPU
    /// when timing only large sizes (every timed size is still checked cuzk == sppark).
    #[arg(long)]
    verify_log: Option<u32>,
    /// Largest G1 MSM: 2^max_log points.
    #[arg(long, default_value_t = 24)]
    max_log: u32,
    /// Largest G2 MSM (G2 sizes run from --min-log up to this and --max-log); below
    /// --min-log skips G2.
    #[arg(long, default_value_t = 22)]
    g2_max_log: u32,
    /// Timed runs per size and implementation, after one warm-up; the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Witness-like scalars: percent zeros.
    #[arg(long, default_value_t = 51)]
    zeros: u32,
    /// Witness-like scalars: percent ones.
    #[arg(long, default_value_t = 47)]
    ones: u32,
    /// Page-lock (cudaHostRegister) the points and scalars for both implementations.
    #[arg(long)]
    pin: bool,
    /// Smallest NTT: 2^ntt_min_log elements (also the size checked against a CPU NTT).
    #[arg(long, default_value_t = 20)]
    ntt_min_log: u32,
    /// Largest NTT: 2^ntt_max_log elements (at most 28, sppark's limit); 0 or below
    /// --ntt-min-log skips the NTT rows.
    #[arg(long, default_value_t = 24)]
    ntt_max_log: u32,
    /// cuzk's Pippenger window in bits for every MSM (as cuzk-prove's --msm-window), 0 to
    /// choose it from the size; several (comma-separated) time cuzk once per window, e.g.
    /// for a sweep, against one sppark timing.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    cuzk_window: Vec<usize>,
    /// Also write the rows as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

#[derive(Serialize, Clone, Copy)]
struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

#[derive(Serialize)]
struct Row {
    group: &'static str,
    scalars: &'static str,
    log_n: u32,
    /// cuzk-prove's options for this row (window 0: chosen from the size).
    cuzk_split: bool,
    cuzk_window: usize,
    cuzk_ms: Stats,
    sppark_ms: Stats,
    /// sppark median / cuzk median (above 1: cuzk is faster).
    ratio: f64,
}

#[derive(Serialize)]
struct NttRow {
    /// "forward" or "inverse" (including 1/n).
    direction: &'static str,
    log_n: u32,
    /// Kernel milliseconds (CUDA events; transfers excluded).
    cuzk_ms: Stats,
    sppark_ms: Stats,
    /// sppark median / cuzk median (above 1: cuzk is faster).
    ratio: f64,
}

#[derive(Serialize)]
struct Report {
    device: String,
    sppark_version: &'static str,
    pinned: bool,
    runs: usize,
    zeros_pct: u32,
    ones_pct: u32,
    rows: Vec<Row>,
    ntt_rows: Vec<NttRow>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sppark-vs-cuzk: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The inputs of one group: points, and two scalar sets each in both forms.
struct Inputs<P> {
    points: Vec<P>,
    random: Vec<Scalar>,
    random_c: Vec<Canonical>,
    witness: Vec<Scalar>,
    witness_c: Vec<Canonical>,
}

/// One group's two MSMs behind a common face.
trait Side: Sized + Copy + Send + Sync + 'static {
    type Proj: Group + Copy + PartialEq + std::fmt::Debug;
    const NAME: &'static str;
    fn generate(n: usize) -> Vec<Self>;
    fn cuzk(p: &[Self], s: &[Scalar], opt: Msm) -> Result<Self::Proj>;
    fn sppark(p: &[Self], s: &[Canonical]) -> Result<Self::Proj>;
    fn blstrs(p: &[Self], s: &[Scalar]) -> Self::Proj;
}

impl Side for G1Affine {
    type Proj = G1Projective;
    const NAME: &'static str = "g1";
    fn generate(n: usize) -> Vec<Self> {
        bench::points::<G1Projective>(n, SEED_POINTS_G1)
    }
    fn cuzk(p: &[Self], s: &[Scalar], opt: Msm) -> Result<G1Projective> {
        cuda::msm_g1(p, s, opt)
    }
    fn sppark(p: &[Self], s: &[Canonical]) -> Result<G1Projective> {
        sppark::msm_g1(p, s)
    }
    fn blstrs(p: &[Self], s: &[Scalar]) -> G1Projective {
        let proj: Vec<G1Projective> = p.iter().map(G1Projective::from).collect();
        G1Projective::multi_exp(&proj, s)
    }
}

impl Side for G2Affine {
    type Proj = G2Projective;
    const NAME: &'static str = "g2";
    fn generate(n: usize) -> Vec<Self> {
        bench::points::<G2Projective>(n, SEED_POINTS_G2)
    }
    fn cuzk(p: &[Self], s: &[Scalar], opt: Msm) -> Result<G2Projective> {
        cuda::msm_g2(p, s, opt)
    }
    fn sppark(p: &[Self], s: &[Canonical]) -> Result<G2Projective> {
        sppark::msm_g2(p, s)
    }
    fn blstrs(p: &[Self], s: &[Scalar]) -> G2Projective {
        let proj: Vec<G2Projective> = p.iter().map(G2Projective::from).collect();
        G2Projective::multi_exp(&proj, s)
    }
}

fn run(a: &Args) -> Result<()> {
    ensure!(a.runs >= 1, "--runs must be at least 1");
    ensure!(
        a.min_log <= a.max_log && a.max_log <= 28,
        "sizes: need --min-log ≤ --max-log ≤ 28"
    );
    ensure!(
        a.zeros + a.ones <= 100,
        "--zeros + --ones must be at most 100"
    );
    let ntt = a.ntt_max_log != 0 && a.ntt_max_log >= a.ntt_min_log;
    ensure!(
        !ntt || (a.ntt_min_log >= 1 && a.ntt_max_log <= sppark::ntt_max_log()),
        "NTT sizes: need 1 ≤ --ntt-min-log ≤ --ntt-max-log ≤ {} (or --ntt-max-log 0)",
        sppark::ntt_max_log()
    );
    ensure!(cuda::built(), "{}", cuda::NO_CUDA_BUILD);
    match sppark::device_count() {
        Ok(0) => bail!("no CUDA device"),
        Ok(_) => {}
        Err(e) => bail!("no CUDA device ({e:#})"),
    }
    sppark::check_layouts()?;
    let device = sppark::device_name()?;
    let sppark_version = env!("SPPARK_VERSION");
    println!(
        "device: {device}; sppark {sppark_version}; {} host memory; {} runs, median; \
         ratio = sppark / cuzk (>1: cuzk faster)",
        if a.pin { "pinned" } else { "pageable" },
        a.runs
    );

    let mut rows = Vec::new();
    let g1_max = a.max_log;
    bench_group::<G1Affine>(a, g1_max, &mut rows)?;
    let g2_max = a.g2_max_log.min(a.max_log);
    if g2_max >= a.min_log {
        bench_group::<G2Affine>(a, g2_max, &mut rows)?;
    }
    let mut ntt_rows = Vec::new();
    if ntt {
        bench_ntt(a, &mut ntt_rows)?;
    }

    if let Some(path) = &a.json {
        let report = Report {
            device,
            sppark_version,
            pinned: a.pin,
            runs: a.runs,
            zeros_pct: a.zeros,
            ones_pct: a.ones,
            rows,
            ntt_rows,
        };
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn bench_group<P: Side>(a: &Args, max_log: u32, rows: &mut Vec<Row>) -> Result<()> {
    let n = 1usize << max_log;
    let t = Instant::now();
    let random = bench::random_scalars(n, SEED_RANDOM);
    let witness = bench::witness_scalars(n, a.zeros, a.ones, SEED_WITNESS);
    let inputs = Inputs {
        points: P::generate(n),
        random_c: sppark::canonical(&random),
        witness_c: sppark::canonical(&witness),
        random,
        witness,
    };
    eprintln!(
        "{}: generated 2^{max_log} points and scalars in {:.1} s",
        P::NAME,
        t.elapsed().as_secs_f64()
    );

    let _pins = if a.pin {
        vec![
            sppark::Pinned::new(&inputs.points)?,
            sppark::Pinned::new(&inputs.random)?,
            sppark::Pinned::new(&inputs.random_c)?,
            sppark::Pinned::new(&inputs.witness)?,
            sppark::Pinned::new(&inputs.witness_c)?,
        ]
    } else {
        Vec::new()
    };

    verify(&inputs, 1 << a.verify_log.unwrap_or(a.min_log).min(max_log))?;
    if ODD_N <= n {
        verify(&inputs, ODD_N)?;
    }

    for k in a.min_log..=max_log {
        let m = 1usize << k;
        let p = &inputs.points[..m];
        for (label, s, c, split) in [
            ("random", &inputs.random[..m], &inputs.random_c[..m], false),
            (
                "witness",
                &inputs.witness[..m],
                &inputs.witness_c[..m],
                true,
            ),
        ] {
            let (sppark_ms, sppark_sum) = time(a.runs, || P::sppark(p, c))?;
            for &window in &a.cuzk_window {
                let cfg = Msm {
                window,
                split,
                windows_per_pass: 0,
            };
                let (cuzk_ms, cuzk_sum) = time(a.runs, || P::cuzk(p, s, cfg))?;
                ensure!(
                    cuzk_sum == sppark_sum,
                    "msm_{} {label} 2^{k}: cuzk and sppark disagree\n  cuzk   {cuzk_sum:?}\n  \
                     sppark {sppark_sum:?}",
                    P::NAME
                );
                let ratio = sppark_ms.median / cuzk_ms.median;
                println!(
                    "msm_{} {label:<7} 2^{k}: cuzk {:.1} ms{}{}, sppark {:.1} ms, ratio {ratio:.2}",
                    P::NAME,
                    cuzk_ms.median,
                    if split { " (split)" } else { "" },
                    if window > 0 {
                        format!(" (c = {window})")
                    } else {
                        String::new()
                    },
                    sppark_ms.median,
                );
                rows.push(Row {
                    group: P::NAME,
                    scalars: label,
                    log_n: k,
                    cuzk_split: split,
                    cuzk_window: window,
                    cuzk_ms,
                    sppark_ms,
                    ratio,
                });
            }
        }
    }
    Ok(())
}

/// Holds cuzk (split off and on) and sppark against blstrs at n points, for both scalar
/// sets; fails naming who disagrees.
fn verify<P: Side>(inp: &Inputs<P>, n: usize) -> Result<()> {
    let t = Instant::now();
    let p = &inp.points[..n];
    for (label, s, c) in [
        ("random", &inp.random[..n], &inp.random_c[..n]),
        ("witness", &inp.witness[..n], &inp.witness_c[..n]),
    ] {
        let want = P::blstrs(p, s);
        let split = Msm {
            split: true,
            ..Msm::default()
        };
        let got = [
            ("cuzk", P::cuzk(p, s, Msm::default())?),
            ("cuzk (split)", P::cuzk(p, s, split)?),
            ("sppark", P::sppark(p, c)?),
        ];
        let bad: Vec<&str> = got.iter().filter(|g| g.1 != want).map(|g| g.0).collect();
        ensure!(
            bad.is_empty(),
            "check failed: msm_{} {label} of {n} points: {} differ from blstrs; not timing",
            P::NAME,
            bad.join(", ")
        );
    }
    eprintln!(
        "{}: cuzk == sppark == blstrs at {n} points (random and witness scalars), {:.1} s",
        P::NAME,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One warm-up call, then `runs` timed calls: wall-clock ms (median, min, max) and the
/// warm-up's result.
fn time<T>(runs: usize, mut f: impl FnMut() -> Result<T>) -> Result<(Stats, T)> {
    let first = f()?;
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let r = f()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        drop(r);
    }
    Ok((stats(ms), first))
}

/// Median, min and max of at least one time.
fn stats(mut ms: Vec<f64>) -> Stats {
    ms.sort_by(f64::total_cmp);
    Stats {
        median: ms[ms.len() / 2],
        min: ms[0],
        max: ms[ms.len() - 1],
    }
}

/// NTT rows from 2^ntt_min_log to 2^ntt_max_log, forward and inverse: for each size one
/// random vector (at most three vectors of that size alive: it, sppark's result, cuzk's),
/// each implementation called once (its result checked against the other's) and then
/// `--runs` times, kernel time only.
fn bench_ntt(a: &Args, rows: &mut Vec<NttRow>) -> Result<()> {
    check_ntt_constants(a.ntt_min_log, a.ntt_max_log)?;
    verify_ntt(a.ntt_min_log)?;
    println!(
        "ntt: kernel time only (CUDA events, transfers excluded), natural order in and out; \
         {} runs, median; ratio = sppark / cuzk (>1: cuzk faster)",
        a.runs
    );
    for k in a.ntt_min_log..=a.ntt_max_log {
        let x = bench::random_scalars(1 << k, SEED_NTT);
        for inverse in [false, true] {
            let dir = if inverse { "inverse" } else { "forward" };
            // sppark: x's transform comes back in s; its timed runs stay on the device.
            let mut s = x.clone();
            let sppark_ms = stats(
                sppark::ntt(&mut s, inverse, a.runs)?
                    .into_iter()
                    .map(f64::from)
                    .collect(),
            );
            // cuzk: one call on x's copy, checked, then the timed calls on what it holds.
            let mut c = x.clone();
            cuda::ntt::ntt(&mut c, inverse)?;
            if let Some(i) = first_difference(&c, &s) {
                bail!("ntt {dir} 2^{k}: cuzk and sppark disagree, first at element {i}");
            }
            drop(s);
            let mut ms = Vec::with_capacity(a.runs);
            for _ in 0..a.runs {
                ms.push(f64::from(cuda::ntt::ntt(&mut c, inverse)?));
            }
            let cuzk_ms = stats(ms);
            let ratio = sppark_ms.median / cuzk_ms.median;
            println!(
                "ntt {dir} 2^{k}: cuzk {:.2} ms, sppark {:.2} ms, ratio {ratio:.2}",
                cuzk_ms.median, sppark_ms.median
            );
            rows.push(NttRow {
                direction: dir,
                log_n: k,
                cuzk_ms,
                sppark_ms,
                ratio,
            });
        }
    }
    Ok(())
}

/// Holds sppark's tables (its forward and inverse roots of unity and 1/n for each size)
/// against cuzk's ω = `omega(k)`, ω⁻¹ and 1/2^k.
fn check_ntt_constants(min_log: u32, max_log: u32) -> Result<()> {
    for k in min_log..=max_log {
        let [w, w_inv, n_inv] = sppark::ntt_constants(k)?;
        let want = [
            cuda::ntt::omega(k),
            cuda::ntt::omega(k).invert().unwrap(),
            Scalar::from(1u64 << k).invert().unwrap(),
        ];
        for (name, got, want) in [
            ("forward root of unity", w, want[0]),
            ("inverse root of unity", w_inv, want[1]),
            ("1/n", n_inv, want[2]),
        ] {
            ensure!(
                got == want,
                "sppark's {name} for 2^{k} is {got:?}, cuzk's {want:?}: the two compute \
                 different transforms; not timing"
            );
        }
    }
    Ok(())
}

/// Holds both NTTs against the CPU at 2^log: forward == `cpu_ntt` with ω = omega(log), and
/// inverse(forward(x)) == x.
fn verify_ntt(log: u32) -> Result<()> {
    let t = Instant::now();
    let x = bench::random_scalars(1 << log, SEED_NTT);
    let want = cpu_ntt(&x, cuda::ntt::omega(log));
    let mut c = x.clone();
    cuda::ntt::ntt(&mut c, false)?;
    let mut s = x.clone();
    sppark::ntt(&mut s, false, 0)?;
    for (who, got) in [("cuzk", &c), ("sppark", &s)] {
        if let Some(i) = first_difference(got, &want) {
            bail!(
                "check failed: {who}'s forward NTT of 2^{log} differs from the CPU NTT with \
                 ω = omega({log}), first at element {i} ({}); not timing",
                ntt_hint(got, &x)
            );
        }
    }
    cuda::ntt::ntt(&mut c, true)?;
    sppark::ntt(&mut s, true, 0)?;
    for (who, got) in [("cuzk", &c), ("sppark", &s)] {
        if let Some(i) = first_difference(got, &x) {
            let n = Scalar::from(x.len() as u64);
            let unscaled = got.par_iter().zip(&x).all(|(g, x)| *g == *x * n);
            bail!(
                "check failed: {who}'s inverse NTT of its forward NTT of 2^{log} is not the \
                 input, first at element {i}{}; not timing",
                if unscaled {
                    " (it is n times the input: no 1/n)"
                } else {
                    ""
                }
            );
        }
    }
    eprintln!(
        "ntt: cuzk == sppark == CPU NTT at 2^{log} (forward), and inverse(forward(x)) == x \
         for both, {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Which other common convention a forward NTT output `got` of `x` matches, for the error
/// message: the inverse root, 1/n scaling, or both.
fn ntt_hint(got: &[Scalar], x: &[Scalar]) -> String {
    let log = x.len().trailing_zeros();
    let w = cuda::ntt::omega(log);
    let w_inv = w.invert().unwrap();
    let n_inv = Scalar::from(x.len() as u64).invert().unwrap();
    for (name, root, scale) in [
        ("ω⁻¹", w_inv, Scalar::ONE),
        ("ω and a factor 1/n", w, n_inv),
        ("ω⁻¹ and a factor 1/n", w_inv, n_inv),
    ] {
        let mut r = cpu_ntt(x, root);
        r.par_iter_mut().for_each(|v| *v *= scale);
        if first_difference(got, &r).is_none() {
            return format!("it is the CPU NTT with {name}");
        }
    }
    "nor is it the CPU NTT with ω⁻¹, or either with 1/n".into()
}

/// The first index where `a` and `b` differ (or the shorter length, if one is a prefix of
/// the other).
fn first_difference(a: &[Scalar], b: &[Scalar]) -> Option<usize> {
    a.par_iter()
        .zip(b)
        .position_first(|(p, q)| p != q)
        .or((a.len() != b.len()).then_some(a.len().min(b.len())))
}

/// X_j = Σ_i x_i·w^(ij) for j < n on the CPU (n = x.len(), a power of two ≥ 2; w a
/// primitive n-th root of unity): radix-2 Cooley-Tukey, decimation in time on the
/// bit-reversed input, O(n log n).
fn cpu_ntt(x: &[Scalar], w: Scalar) -> Vec<Scalar> {
    let n = x.len();
    assert!(n >= 2 && n.is_power_of_two(), "cpu_ntt: length {n}");
    let log = n.trailing_zeros();
    let mut a: Vec<Scalar> = (0..n)
        .into_par_iter()
        .map(|i| x[i.reverse_bits() >> (usize::BITS - log)])
        .collect();
    let mut half = 1;
    while half < n {
        // A primitive (2·half)-th root, and its first `half` powers.
        let w_len = w.pow_vartime([(n / (2 * half)) as u64]);
        let tw: Vec<Scalar> = std::iter::successors(Some(Scalar::ONE), |t| Some(*t * w_len))
            .take(half)
            .collect();
        a.par_chunks_mut(2 * half).for_each(|block| {
            let (lo, hi) = block.split_at_mut(half);
            for ((u, v), t) in lo.iter_mut().zip(hi.iter_mut()).zip(&tw) {
                let tv = *v * t;
                let u0 = *u;
                *u = u0 + tv;
                *v = u0 - tv;
            }
        });
        half *= 2;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cpu_ntt against the O(n²) definition.
    #[test]
    fn cpu_ntt_is_the_dft() {
        for log in 1..=6 {
            let n = 1usize << log;
            let x = bench::random_scalars(n, 7);
            let w = cuda::ntt::omega(log);
            let want: Vec<Scalar> = (0..n)
                .map(|j| {
                    (0..n).fold(Scalar::ZERO, |acc, i| {
                        acc + x[i] * w.pow_vartime([(i * j % n) as u64])
                    })
                })
                .collect();
            assert!(cpu_ntt(&x, w) == want, "2^{log}");
        }
    }

    /// cpu_ntt against cuzk's NTT kernels run on the host.
    #[test]
    fn cpu_ntt_is_cuzks() {
        for log in [1, 5, 10, 13] {
            let x = bench::random_scalars(1 << log, 8);
            let mut c = x.clone();
            cuda::ntt::ntt_emulated(&mut c, false).unwrap();
            assert!(c == cpu_ntt(&x, cuda::ntt::omega(log)), "forward 2^{log}");
            cuda::ntt::ntt_emulated(&mut c, true).unwrap();
            assert!(c == x, "inverse 2^{log}");
        }
    }

    /// sppark's roots of unity and 1/n are cuzk's for every size it supports.
    #[test]
    fn sppark_constants_are_cuzks() {
        let max = sppark::ntt_max_log();
        assert_eq!(max, 28);
        check_ntt_constants(1, max).unwrap();
        assert!(sppark::ntt_constants(max + 1).is_err());
    }
}
