//! sppark-vs-cuzk: times G1 (and G2) MSMs of the same inputs through cuzk-prove's GPU MSM
//! and through sppark's, in one process on one GPU, and prints the ratio
//! sppark time / cuzk time (above 1: cuzk is faster).
//!
//! Both are timed the same way: wall clock around one call, which copies the points and
//! scalars from host memory (pageable, or page-locked with --pin) and returns the sum on
//! the host. Scalars go to each in its own form, converted before timing: blstrs's
//! Montgomery form for cuzk, canonical integers for sppark.
//!
//! Before any timing, both are held against blstrs (CPU) at the smallest size and at one
//! odd size; afterwards every timed size still checks sppark == cuzk.

mod sppark;

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use clap::Parser;
use cuzk_prove::bench;
use cuzk_prove::prove::cuda::{self, Msm};
use group::Group;
use serde::Serialize;

use crate::sppark::Canonical;

const SEED_POINTS_G1: u64 = 0x5eed_0001;
const SEED_POINTS_G2: u64 = 0x5eed_0002;
const SEED_RANDOM: u64 = 0x5eed_0003;
const SEED_WITNESS: u64 = 0x5eed_0004;
/// An odd size (not a multiple of 32) checked against blstrs besides the smallest (when
/// there are that many points).
const ODD_N: usize = 4099;

#[derive(Parser, Debug)]
#[command(
    name = "sppark-vs-cuzk",
    about = "Times cuzk-prove's GPU MSM against sppark's (crates.io) on the same inputs and GPU"
)]
struct Args {
    /// Smallest MSM: 2^min_log points (also the size checked against blstrs).
    #[arg(long, default_value_t = 20)]
    min_log: u32,
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
    /// cuzk-prove's options for this row.
    cuzk_split: bool,
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
    fn cuzk(p: &[Self], s: &[Scalar], split: bool) -> Result<Self::Proj>;
    fn sppark(p: &[Self], s: &[Canonical]) -> Result<Self::Proj>;
    fn blstrs(p: &[Self], s: &[Scalar]) -> Self::Proj;
}

impl Side for G1Affine {
    type Proj = G1Projective;
    const NAME: &'static str = "g1";
    fn generate(n: usize) -> Vec<Self> {
        bench::points::<G1Projective>(n, SEED_POINTS_G1)
    }
    fn cuzk(p: &[Self], s: &[Scalar], split: bool) -> Result<G1Projective> {
        cuda::msm_g1(p, s, Msm { window: 0, split })
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
    fn cuzk(p: &[Self], s: &[Scalar], split: bool) -> Result<G2Projective> {
        cuda::msm_g2(p, s, Msm { window: 0, split })
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

    if let Some(path) = &a.json {
        let report = Report {
            device,
            sppark_version,
            pinned: a.pin,
            runs: a.runs,
            zeros_pct: a.zeros,
            ones_pct: a.ones,
            rows,
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

    verify(&inputs, 1 << a.min_log)?;
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
            let (cuzk_ms, cuzk_sum) = time(a.runs, || P::cuzk(p, s, split))?;
            let (sppark_ms, sppark_sum) = time(a.runs, || P::sppark(p, c))?;
            ensure!(
                cuzk_sum == sppark_sum,
                "msm_{} {label} 2^{k}: cuzk and sppark disagree\n  cuzk   {cuzk_sum:?}\n  \
                 sppark {sppark_sum:?}",
                P::NAME
            );
            let ratio = sppark_ms.median / cuzk_ms.median;
            println!(
                "msm_{} {label:<7} 2^{k}: cuzk {:.1} ms{}, sppark {:.1} ms, ratio {ratio:.2}",
                P::NAME,
                cuzk_ms.median,
                if split { " (split)" } else { "" },
                sppark_ms.median,
            );
            rows.push(Row {
                group: P::NAME,
                scalars: label,
                log_n: k,
                cuzk_split: split,
                cuzk_ms,
                sppark_ms,
                ratio,
            });
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
        let got = [
            ("cuzk", P::cuzk(p, s, false)?),
            ("cuzk (split)", P::cuzk(p, s, true)?),
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
    ms.sort_by(f64::total_cmp);
    let s = Stats {
        median: ms[ms.len() / 2],
        min: ms[0],
        max: ms[ms.len() - 1],
    };
    Ok((s, first))
}
