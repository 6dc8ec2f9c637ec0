//! `cuzk-dev bench-gpu`: kernel benchmarks on the GPU, each size warmed up once and then
//! timed `--runs` times, median reported. G1 MSM over random scalars and over witness-like
//! ones (mostly 0 and 1, as PoRep's are) with the split on and off, G2 MSM, the NTT, and
//! the quotient H. MSM times are wall clock around one call: "host points" rows include
//! copying the points and scalars from (pageable) host memory to the device, as a
//! one-off MSM library call would; "resident" rows use points decoded on the device
//! beforehand, as the prover's SRS is, and include only the scalars' copy. NTT times are
//! the kernels' (CUDA events).
//!
//! With `--partition`, instead: one synthetic PoRep partition of 32GiB shape (or scaled
//! down, `--partition-log`) through the same calls, in the same order, as the CUDA
//! backend's `products_with` makes for one partition (H by `ntt::quotient`, then the MSMs
//! h, l, a, b_g1, b_g2 over resident points), each phase timed with its transfers and host
//! work, and the kernel times the calls report. The SRS is one resident G1 set and one G2
//! set, each MSM reading a prefix of it: distinct points per section would cost 47 GB and
//! the MSM's time does not depend on which points it reads.
//!
//! The inputs generators are shared with the tests (tests/cuda_msm.rs).

pub mod witness;

use std::time::Instant;

use anyhow::{ensure, Context, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group, UncompressedEncoding};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

use crate::cli::BenchRows;
use cuzk_prove::prove::cuda::{self, DevicePoints, DeviceScalars, GpuAffine, Msm, Points, Scalars};
use cuzk_prove::synth::{Abc, Density, ProvingAssignment};

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
    /// One synthetic partition of domain 2^N instead of the kernel rows.
    pub partition: Option<u32>,
    /// The partition's witness MSMs (l, a, b) split, as the prover's `--split-msm`.
    pub split: bool,
    /// The partition's aux upload beside MSM h, as the prover's `--overlap-aux`.
    pub overlap_aux: bool,
    /// The kernel rows to run; empty: all.
    pub rows: Vec<BenchRows>,
    /// Instead: A·w, B·w, C·w on the host and on the GPU (`--pce-eval`), for the recording
    /// of this C1's first partition tiled `pce_tiles` times.
    pub pce_c1: Option<std::path::PathBuf>,
    pub pce_tiles: usize,
}

impl Options {
    fn wants(&self, r: BenchRows) -> bool {
        self.rows.is_empty() || self.rows.contains(&r)
    }
}

/// `--partition-log` bounds: 27 is a 32GiB partition's domain.
pub const PARTITION_LOGS: std::ops::RangeInclusive<u32> = 10..=27;

#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub kernel: String,
    pub log_n: u32,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub runs: usize,
}

/// Median, min and max.
fn stats(mut ms: Vec<f64>) -> (f64, f64, f64) {
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[0], ms[ms.len() - 1])
}

/// Median, min and max of `runs` timings after one warm-up call.
fn time(runs: usize, mut f: impl FnMut() -> Result<f64>) -> Result<(f64, f64, f64)> {
    f()?;
    Ok(stats((0..runs).map(|_| f()).collect::<Result<_>>()?))
}

fn wall(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// The points decoded into device memory, as the prover holds its SRS.
fn resident<A>(points: &[A]) -> Result<DevicePoints<A>>
where
    A: cuda::GpuAffine + UncompressedEncoding + PrimeCurveAffine + Sync,
{
    // Written in place: a collected flat_map would hold the bytes twice (12.9 GB at 2^27).
    let mut raw = vec![0u8; points.len() * A::RAW_SIZE];
    raw.par_chunks_mut(A::RAW_SIZE)
        .zip(points)
        .for_each(|(r, p)| r.copy_from_slice(p.to_uncompressed().as_ref()));
    DevicePoints::decode(&raw, false)
}

/// The rows, each printed as it is pushed.
struct Rows {
    runs: usize,
    rows: Vec<Row>,
}

impl Rows {
    fn push(&mut self, kernel: String, log_n: u32, (median_ms, min_ms, max_ms): (f64, f64, f64)) {
        eprintln!(
            "{kernel:<40} 2^{log_n:<3} median {median_ms:>9.2} ms  (min {min_ms:.2}, max {max_ms:.2}, {} runs)",
            self.runs
        );
        self.rows.push(Row {
            kernel,
            log_n,
            median_ms,
            min_ms,
            max_ms,
            runs: self.runs,
        });
    }
}

/// Runs every kernel benchmark, or the partition, printing each row as it completes.
pub fn run(o: &Options) -> Result<Vec<Row>> {
    ensure!(cuda::built(), "bench-gpu: {}", cuda::NO_CUDA_BUILD);
    ensure!(cuda::device_count()? > 0, "bench-gpu: no CUDA device found");
    ensure!(o.runs >= 1, "--runs must be at least 1");
    cuda::set_device(o.gpu).map_err(|e| anyhow::anyhow!("--gpu {}: {e:#}", o.gpu))?;
    ensure!(
        o.zeros + o.ones <= 100,
        "--zeros + --ones must be at most 100"
    );
    let mut rows = Rows {
        runs: o.runs,
        rows: Vec::new(),
    };
    match (o.partition, &o.pce_c1) {
        (_, Some(c1)) => pce_eval(o, c1, &mut rows)?,
        (Some(log), None) => partition(o, log, &mut rows)?,
        (None, None) => kernels(o, &mut rows)?,
    }
    Ok(rows.rows)
}

fn kernels(o: &Options, rows: &mut Rows) -> Result<()> {
    ensure!(
        o.min_log <= o.max_log && o.max_log <= 28 && o.g2_max_log <= o.max_log,
        "sizes: need --min-log ≤ --max-log ≤ 28 and --g2-max-log ≤ --max-log"
    );
    let logs = |max: u32| o.min_log..=max;

    let n = 1usize << o.max_log;
    let full = random_scalars(n, 2);
    let (plain, split) = (
        Msm {
            window: o.window,
            split: false,
            windows_per_pass: 0,
        },
        Msm {
            window: o.window,
            split: true,
            windows_per_pass: 0,
        },
    );
    if o.wants(BenchRows::MsmG1) {
        let t = Instant::now();
        let p1 = points::<G1Projective>(n, 1);
        let wit = witness_scalars(n, o.zeros, o.ones, 3);
        eprintln!(
            "inputs: 2^{} G1 points and scalars in {:.1} s",
            o.max_log,
            t.elapsed().as_secs_f64()
        );
        let d1 = resident(&p1)?;
        for log in logs(o.max_log) {
            let n = 1usize << log;
            let (p, f, w) = (&p1[..n], &full[..n], &wit[..n]);
            let r = time(o.runs, || wall(|| cuda::msm_g1(p, f, plain).map(drop)))?;
            rows.push("msm_g1 random, host points".into(), log, r);
            let on_device = |s: &[Fr], cfg: Msm| {
                wall(|| cuda::msm_points(cuda::Points::Device(&d1, 0), s, cfg).map(drop))
            };
            let r = time(o.runs, || on_device(f, plain))?;
            rows.push("msm_g1 random, resident".into(), log, r);
            let r = time(o.runs, || on_device(w, plain))?;
            rows.push(
                format!("msm_g1 witness {}/{} split off, res.", o.zeros, o.ones),
                log,
                r,
            );
            let r = time(o.runs, || on_device(w, split))?;
            rows.push(
                format!("msm_g1 witness {}/{} split on, res.", o.zeros, o.ones),
                log,
                r,
            );
        }
    }

    if o.wants(BenchRows::MsmG2) {
        let p2 = points::<G2Projective>(1usize << o.g2_max_log, 4);
        let d2 = resident(&p2)?;
        for log in logs(o.g2_max_log) {
            let n = 1usize << log;
            let f = &full[..n];
            let r = time(o.runs, || {
                wall(|| cuda::msm_points(cuda::Points::Device(&d2, 0), f, plain).map(drop))
            })?;
            rows.push("msm_g2 random, resident".into(), log, r);
        }
    }

    if o.wants(BenchRows::Ntt) {
        for log in logs(o.max_log) {
            let mut x = full[..1usize << log].to_vec();
            let r = time(o.runs, || Ok(cuda::ntt::ntt(&mut x, false)? as f64))?;
            rows.push("ntt (kernels)".into(), log, r);
        }
    }
    if o.wants(BenchRows::Quotient) {
        for log in logs(o.max_log) {
            let n = (1usize << log) - 5; // a constraint count just under the domain
            let (a, b, c) = (&full[..n], &full[1..n + 1], &full[2..n + 2]);
            let r = time(o.runs, || Ok(cuda::ntt::quotient(a, b, c)?.1 as f64))?;
            rows.push("quotient H (kernels)".into(), log, r);
        }
    }
    Ok(())
}

/// One 32GiB PoRep partition (docs/PERF.md): domain 2^27, its constraints and aux
/// variables, and the aux variables in the A and B queries (99.68 %, 25.44 %).
const P32_LOG: u32 = 27;
const P32_CONSTRAINTS: usize = 130_278_869;
const P32_AUX: usize = 130_169_893;
const P32_A_AUX: usize = 129_753_292;
const P32_B_AUX: usize = 33_112_281;
/// Public inputs at every scale, the constant ONE first.
const INPUTS: usize = 328;

/// `k` of `n` variables spread evenly, the first one included: variable i is in iff
/// ⌈(i+1)k/n⌉ > ⌈ik/n⌉, exactly k of them. (Which ones does not matter: the scalars are
/// drawn independently of their index.)
fn spread(n: usize, k: usize) -> Density {
    let words = (0..n.div_ceil(64))
        .into_par_iter()
        .map(|w| {
            (w * 64..n.min(w * 64 + 64))
                .filter(|&i| ((i + 1) * k).div_ceil(n) > (i * k).div_ceil(n))
                .fold(0, |acc, i| acc | 1u64 << (i % 64))
        })
        .collect();
    Density::from_words(words, n).expect("one bit per variable")
}

/// `f()`, then a progress line: what it made, how long it took.
fn step<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let t = Instant::now();
    let v = f()?;
    eprintln!(
        "partition inputs: {what}: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Ok(v)
}

/// n distinct points decoded on the device, the host copy freed before returning.
fn resident_points<G>(n: usize, seed: u64) -> Result<DevicePoints<G::AffineRepr>>
where
    G: Curve + Group + Send + Sync,
    G::AffineRepr: GpuAffine + UncompressedEncoding + PrimeCurveAffine + Sync,
{
    let name = <G::AffineRepr as GpuAffine>::NAME;
    let p = step(&format!("{n} {name} points generated"), || {
        Ok(points::<G>(n, seed))
    })?;
    step(&format!("{n} {name} points decoded on the GPU"), || {
        resident(&p)
    })
}

/// Σ s[i]·set[offset + i] on the device, adding its split and bucket times to `k`.
fn msm<P: GpuAffine>(
    set: &DevicePoints<P>,
    offset: usize,
    s: Scalars,
    cfg: Msm,
    k: &mut [f64; 2],
) -> Result<P::Projective> {
    let (p, r) = cuda::msm_with(Points::Device(set, offset), s, cfg)?;
    k[0] += r.split_ms as f64;
    k[1] += r.buckets_ms as f64;
    Ok(p)
}

/// All of a device scalar set.
fn all(s: &DeviceScalars) -> Scalars<'_> {
    Scalars::Device(s, 0, s.len())
}

/// B in G1 or G2 as the backend's B query: B's dense inputs, then its dense aux, narrowed
/// on the device from the partition's uploaded aux assignment.
fn b_msm<P: GpuAffine>(
    set: &DevicePoints<P>,
    p: &ProvingAssignment,
    aux: &DeviceScalars,
    w: Msm,
    k: &mut [f64; 2],
) -> Result<P::Projective> {
    let inputs = p.b_input_density.select(&p.input_assignment);
    let aux = aux.select(&p.b_aux_density)?;
    Ok(msm(set, 0, Scalars::Host(&inputs), w, k)?
        + msm(set, p.b_input_density.total(), all(&aux), w, k)?)
}

/// One partition run's rows, (name, ms) in order, and the sums for the totals.
#[derive(Default)]
struct Timed {
    rows: Vec<(String, f64)>,
    wall: f64,
    kernels: f64,
}

impl Timed {
    /// Runs one phase: a row of its wall time, and rows of the kernel times its calls
    /// report (`k`: split + batch add, buckets; an NTT's kernels in `k[1]`).
    fn phase<T>(
        &mut self,
        name: &str,
        note: &str,
        split: bool,
        f: impl FnOnce(&mut [f64; 2]) -> Result<T>,
    ) -> Result<T> {
        let mut k = [0f64; 2];
        let t = Instant::now();
        let v = f(&mut k)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        self.wall += ms;
        self.kernels += k[0] + k[1];
        self.rows.push((format!("partition: {name}{note}"), ms));
        if split {
            self.rows
                .push((format!("partition: {name}, split + batch add"), k[0]));
            self.rows
                .push((format!("partition: {name}, buckets"), k[1]));
        } else {
            self.rows
                .push((format!("partition: {name}, kernels"), k[1]));
        }
        Ok(v)
    }
}

/// One partition's products through the calls, in the order, of the backend's
/// `products_with` (everything it times but the SRS upload).
fn partition_once(
    p: &ProvingAssignment,
    g1: &DevicePoints<G1Affine>,
    g2: &DevicePoints<G2Affine>,
    w: Msm,
    overlap_aux: bool,
) -> Result<Timed> {
    let mut t = Timed::default();
    let h = t.phase("H", " (NTT, with transfers)", false, |k| {
        let [a, b, c] = p.abc.evaluated().context("bench-gpu synthesizes a, b, c")?;
        let (h, ms) = cuda::ntt::quotient_to_device(a, b, c, false)?;
        k[1] = ms as f64;
        Ok(h)
    })?;
    let h_cfg = Msm { split: false, ..w };
    let aux = if overlap_aux {
        // The aux assignment's upload beside MSM h, as the backend's `--overlap-aux on`:
        // the row "aux upload" is the wait beyond the MSM.
        let t0 = Instant::now();
        let (aux, ms) = DeviceScalars::upload_during(&p.aux_assignment, true, false, || {
            let t1 = Instant::now();
            t.phase("MSM h", "", false, |k| msm(g1, 0, all(&h), h_cfg, k))?;
            Ok(t1.elapsed().as_secs_f64() * 1e3)
        })?;
        let beyond = (t0.elapsed().as_secs_f64() * 1e3 - ms).max(0.0);
        t.wall += beyond;
        t.rows
            .push(("partition: aux upload (beyond MSM h)".into(), beyond));
        aux
    } else {
        t.phase("MSM h", "", false, |k| msm(g1, 0, all(&h), h_cfg, k))?;
        t.phase("aux upload", " (once per partition)", false, |_| {
            DeviceScalars::upload_aux(&p.aux_assignment, true, false)
        })?
    };
    drop(h);
    t.phase("MSM l", "", w.split, |k| msm(g1, 0, all(&aux), w, k))?;
    t.phase("MSM a", "", w.split, |k| {
        let a_aux = aux.select(&p.a_aux_density)?;
        let inputs = p.input_assignment.len();
        Ok(msm(g1, 0, Scalars::Host(&p.input_assignment), w, k)?
            + msm(g1, inputs, all(&a_aux), w, k)?)
    })?;
    t.phase("MSM b_g1", "", w.split, |k| b_msm(g1, p, &aux, w, k))?;
    t.phase("MSM b_g2", "", w.split, |k| b_msm(g2, p, &aux, w, k))?;
    t.rows.push(("partition: total GPU".into(), t.wall));
    t.rows.push(("partition: total, kernels".into(), t.kernels));
    Ok(t)
}

/// A synthetic partition of domain 2^log, the 32GiB one's counts scaled by 2^(log − 27)
/// (inputs stay 328): A, B, C evaluations uniformly random (as A·w, B·w, C·w of a real
/// witness effectively are), aux witness-like (`--zeros`, `--ones`), inputs random after
/// ONE, B's query holding only ONE of the inputs (as in the 2KiB circuit). The points are
/// one G1 set as large as the largest G1 section (h or l plus the inputs) and one G2 set
/// of B's size.
fn partition(o: &Options, log: u32, rows: &mut Rows) -> Result<()> {
    ensure!(
        PARTITION_LOGS.contains(&log),
        "--partition-log must be from {} to {}, got {log}",
        PARTITION_LOGS.start(),
        PARTITION_LOGS.end()
    );
    let scale = |n: usize| n >> (P32_LOG - log);
    let (constraints, aux) = (scale(P32_CONSTRAINTS), scale(P32_AUX));
    let (a_aux, b_aux) = (scale(P32_A_AUX), scale(P32_B_AUX));
    eprintln!(
        "partition 2^{log}: {constraints} constraints, {INPUTS} inputs, {aux} aux ({}/{} % \
         zeros/ones); A: all inputs + {a_aux} aux, B: 1 input + {b_aux} aux; split MSM {}",
        o.zeros,
        o.ones,
        if o.split { "on" } else { "off" }
    );
    let g1 = resident_points::<G1Projective>(((1 << log) - 1).max(INPUTS + aux), 11)?;
    let g2 = resident_points::<G2Projective>(1 + b_aux, 12)?;
    let p = step("evaluations, assignment and densities", || {
        let mut inputs = random_scalars(INPUTS, 13);
        inputs[0] = Fr::ONE;
        Ok(ProvingAssignment {
            abc: Abc::Evaluated {
                a: random_scalars(constraints, 14),
                b: random_scalars(constraints, 15),
                c: random_scalars(constraints, 16),
            },
            input_assignment: inputs,
            aux_assignment: witness_scalars(aux, o.zeros, o.ones, 17),
            a_aux_density: spread(aux, a_aux),
            b_input_density: spread(INPUTS, 1),
            b_aux_density: spread(aux, b_aux),
        })
    })?;
    let w = Msm {
        window: o.window,
        split: o.split,
        windows_per_pass: 0,
    };
    partition_once(&p, &g1, &g2, w, o.overlap_aux)?; // warm-up
    let runs = (1..=o.runs)
        .map(|i| {
            let t = partition_once(&p, &g1, &g2, w, o.overlap_aux)?;
            eprintln!("partition run {i}: total {:.1} ms", t.wall);
            Ok(t.rows)
        })
        .collect::<Result<Vec<_>>>()?;
    for (k, (name, _)) in runs[0].iter().enumerate() {
        rows.push(
            name.clone(),
            log,
            stats(runs.iter().map(|r| r[k].1).collect()),
        );
    }
    Ok(())
}

/// `--pce-c1`: the evaluations of a partition from a recorded constraint system on the
/// host cores (as `--pce-eval cpu` does during synthesis) and on the GPU (`--pce-eval
/// gpu`), each followed by H: the host path uploads a, b, c for the NTT, the device path
/// the aux assignment (which the prover uploads for L, A and B anyway, so it is a row of
/// its own) and evaluates there. The recording is the C1's first partition's, tiled
/// `--pce-tiles` times (48 × 2KiB's 2.69 M constraints ≈ 32GiB's 130 M, domain 2^27): the
/// real circuit's rows, terms and coefficients at the 32GiB size. H from both paths is
/// checked equal.
fn pce_eval(o: &Options, c1: &std::path::Path, rows: &mut Rows) -> Result<()> {
    use cuzk_prove::prove::cuda::{ntt, pce_eval::DevicePce};
    use std::sync::Arc;
    let c1 = cuzk_prove::input::c1::read_c1(c1)?;
    let circuits =
        cuzk_prove::circuit::porep_circuits(&c1.registered_proof.as_v1_config(), c1.output)?;
    let pce = step("recording the first partition", || circuits.record(0))?;
    let w = step("its witness", || circuits.witness(0))?;
    let pce = Arc::new(step("tiling", || pce.tiled(o.pce_tiles))?);
    let inputs = w.inputs;
    let aux: Vec<Fr> = step("tiling the witness", || Ok(w.aux.repeat(o.pce_tiles)))?;
    let log = pce.constraints().next_power_of_two().trailing_zeros();
    eprintln!(
        "recording × {}: {} constraints (domain 2^{log}), {} aux, {:?} terms",
        o.pce_tiles,
        pce.constraints(),
        pce.aux,
        pce.nnz()
    );
    let mut abc = None;
    let cpu = time(o.runs, || {
        let t = Instant::now();
        abc = Some(pce.evaluations(&inputs, &aux)?);
        Ok(t.elapsed().as_secs_f64() * 1e3)
    })?;
    rows.push(
        format!(
            "pce: A·w, B·w, C·w host ({} threads)",
            rayon::current_num_threads()
        ),
        log,
        cpu,
    );
    let [a, b, c] = abc.expect("evaluated above");
    let mut host_h = None;
    let mut host_ms = Vec::new();
    let host = time(o.runs, || {
        let t = Instant::now();
        let (h, ms) = ntt::quotient_to_device(&a, &b, &c, false)?;
        host_ms.push(ms as f64);
        host_h = Some(h);
        Ok(t.elapsed().as_secs_f64() * 1e3)
    })?;
    rows.push("pce: host path, H with a, b, c uploads".into(), log, host);
    // The kernel times of the timed runs (the first was time()'s warm-up).
    rows.push(
        "pce: host path, NTT kernels".into(),
        log,
        stats(host_ms.split_off(1)),
    );
    drop((a, b, c));
    let host_h = host_h.expect("computed above").read()?;

    let mut dev = None;
    let upload = wall(|| {
        dev = Some(DevicePce::upload(&pce, false, true)?);
        Ok(())
    })?;
    let dev = dev.expect("uploaded above");
    eprintln!(
        "recording on the device: {:.1} GB",
        dev.bytes() as f64 / 1e9
    );
    rows.push(
        "pce: matrices upload (once per run)".into(),
        log,
        (upload, upload, upload),
    );
    let mut aux_dev = None;
    let aux_up = time(o.runs, || {
        let t = Instant::now();
        aux_dev = Some(DeviceScalars::upload(&aux, false)?);
        Ok(t.elapsed().as_secs_f64() * 1e3)
    })?;
    rows.push("pce: aux upload".into(), log, aux_up);
    let aux_dev = aux_dev.expect("uploaded above");
    let (mut eval_ms, mut ntt_ms, mut dev_h) = (Vec::new(), Vec::new(), None);
    let gpu = time(o.runs, || {
        let t = Instant::now();
        let (h, e, n) = ntt::quotient_pce_to_device(&dev, &inputs, &aux_dev)?;
        eval_ms.push(e as f64);
        ntt_ms.push(n as f64);
        dev_h = Some(h);
        Ok(t.elapsed().as_secs_f64() * 1e3)
    })?;
    rows.push("pce: device path, eval + H".into(), log, gpu);
    rows.push(
        "pce: device path, eval kernels".into(),
        log,
        stats(eval_ms.split_off(1)),
    );
    rows.push(
        "pce: device path, NTT kernels".into(),
        log,
        stats(ntt_ms.split_off(1)),
    );
    ensure!(
        dev_h.expect("computed above").read()? == host_h,
        "H from the device evaluation differs from the host path's"
    );
    eprintln!("H equal on both paths");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_picks_exactly_k_evenly() {
        for (n, k) in [(328, 1), (1000, 997), (993, 252), (130, 130), (70, 0)] {
            let d = spread(n, k);
            assert_eq!((d.len(), d.total()), (n, k));
            let on: Vec<usize> = (0..n).filter(|&i| d.get(i)).collect();
            assert!(k == 0 || on[0] == 0, "first variable in for k = {k}");
            // Gaps between picks differ by at most one.
            let gaps: Vec<usize> = on.windows(2).map(|w| w[1] - w[0]).collect();
            let (lo, hi) = (gaps.iter().min(), gaps.iter().max());
            assert!(
                lo.zip(hi).is_none_or(|(l, h)| h - l <= 1),
                "{n} {k}: {gaps:?}"
            );
        }
    }
}
