//! The CUDA backend: H by NTT on the GPU, the five products by GPU Pippenger MSMs. The
//! flow (dense scalars picked by the A/B densities, inputs then aux) is the CPU backend's,
//! so the two give identical products; every kernel result is checked against the CPU in
//! the tests.
//!
//! SRS sections go to the GPU raw and are decoded there (`--srs-decode gpu`, default): the
//! host only reads the mapping. With `--srs-decode cpu` a helper thread decodes the next
//! section on the host while the GPU works on the current one, and each MSM uploads its
//! points. Witness MSMs (L, A, B) run split by default (`--split-msm`): the device
//! batch-adds the points of scalars equal to one and buckets only the rest. `--b-g2 cpu`
//! computes B in G2 with blst on the host cores, overlapping all the GPU work.
//!
//! The CUDA context and the SRS are set up while the partitions are synthesized
//! (`prefetch`, started by the pipeline before synthesis): a helper thread creates the
//! context, then decodes every section on the device, where it stays for every batch of
//! the run (`--max-circuits`). The products then go partition by partition, each
//! partition's aux assignment uploaded once for L, A and B, while the GPU computes its H
//! MSM (`--overlap-aux`: the copy engine and a worker thread move it, the SMs run the
//! MSM; nothing else uses the bus then). When the GPU lacks the room
//! for all sections plus the MSMs' scratch, they go product by product instead, each
//! section uploaded and decoded just before its MSMs and freed after them.

use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;

use super::pce_eval::DevicePce;
use super::{
    msm_with, ntt, DevicePoints, DeviceScalars, GpuAffine, Msm, MsmReport, Points, Scalars,
};
use crate::input::srs::{Section, Srs, SrsPoint};
use crate::prove::{cpu, Backend, Products};
use crate::report::Timings;
use crate::synth::pce::Pce;
use crate::synth::ProvingAssignment;

/// Where B in G2 is computed (`--b-g2`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BG2 {
    #[default]
    Gpu,
    Cpu,
}

/// Where a deferred PCE assignment's A·w, B·w, C·w are evaluated (`--pce-eval`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PceEval {
    /// On the GPU, from the recording kept on the device (pce_eval.rs).
    #[default]
    Gpu,
    /// On the host cores, during synthesis.
    Cpu,
}

/// Where SRS points are decoded (`--srs-decode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SrsDecode {
    /// Raw bytes to the device, decoded there.
    #[default]
    Gpu,
    /// Decoded by blstrs on the host cores (on a helper thread), uploaded per MSM.
    Cpu,
}

pub struct Cuda {
    /// Window and split for the witness MSMs (L, A, B); H uses the window, never the split
    /// (its scalars are uniformly random).
    pub msm: Msm,
    pub b_g2: BG2,
    pub srs_decode: SrsDecode,
    /// The GPU (`--gpu N`), made current on the thread that runs the kernels.
    pub gpu: usize,
    /// Page-lock each mapped SRS section while it is copied to the device (`--pin on`),
    /// else stage it through pinned buffers.
    pub pin: bool,
    /// With the SRS resident, upload each partition's aux assignment while its H MSM runs
    /// (`--overlap-aux on`, the default) rather than after it.
    pub overlap_aux: bool,
    /// `--pce-eval gpu`: take assignments whose a, b, c synthesis left unevaluated and
    /// evaluate them on the device.
    pub pce_eval: bool,
    /// The recording on the device, kept for every batch of the run.
    pce_dev: Mutex<Option<Arc<DevicePce>>>,
    /// The SRS on the device: being loaded during synthesis, then kept for every batch.
    pub resident: Mutex<Prefetch>,
    /// Whether there is a usable GPU, settled by a probe that runs on a helper thread
    /// from the backend's creation (see [`Cuda::new`]).
    probe: Arc<Probe>,
}

/// The GPU probe: how many CUDA devices the driver reports, found on a helper thread so
/// that initialising the driver (≈ 0.1 s on the H200 host) overlaps reading the inputs and
/// synthesis instead of preceding them; and what `--device` makes of the answer.
struct Probe {
    count: Arc<OnceLock<std::result::Result<usize, String>>>,
    thread: Option<JoinHandle<()>>,
    /// `--device auto`: without a GPU (or driver) the CPU backend proves instead.
    fallback: bool,
    gpu: usize,
}

fn probe_count(
    c: &OnceLock<std::result::Result<usize, String>>,
) -> &std::result::Result<usize, String> {
    c.get_or_init(|| super::device_count().map_err(|e| format!("{e:#}")))
}

impl Probe {
    fn start(fallback: bool, gpu: usize) -> Arc<Self> {
        let count = Arc::new(OnceLock::new());
        let c = count.clone();
        // If the thread cannot start, the first `gpu()` call probes instead.
        let thread = std::thread::Builder::new()
            .name("gpu-probe".into())
            .spawn(move || {
                probe_count(&c);
            })
            .ok();
        Arc::new(Probe {
            count,
            thread,
            fallback,
            gpu,
        })
    }

    /// Whether the CUDA backend proves (waiting for the probe if it is still at it): true
    /// with a usable GPU; false with none under `--device auto`; an error naming what is
    /// missing under `--device cuda`, or for a `--gpu` index the machine does not have.
    fn gpu(&self) -> Result<bool> {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match (probe_count(&self.count), self.fallback) {
            (Ok(0), true) | (Err(_), true) => Ok(false),
            (Ok(0), false) => bail!("--device cuda: no CUDA device found (use --device cpu)"),
            (Err(e), false) => bail!("--device cuda: {e}"),
            (&Ok(n), _) if self.gpu >= n => bail!(
                "--gpu {}: this machine has {n} CUDA device{} (numbered from 0)",
                self.gpu,
                plural(n)
            ),
            (Ok(_), _) => Ok(true),
        }
    }
}

/// The probe thread may be inside the driver: wait for it before the process exits.
impl Drop for Probe {
    fn drop(&mut self) {
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

/// The sections decoded on the GPU for the whole run (b_g2 only with `--b-g2 gpu`).
pub struct Resident {
    h: DevicePoints<G1Affine>,
    l: DevicePoints<G1Affine>,
    a: DevicePoints<G1Affine>,
    b_g1: DevicePoints<G1Affine>,
    b_g2: Option<DevicePoints<G2Affine>>,
}

/// Where the resident SRS stands.
#[derive(Default)]
pub enum Prefetch {
    /// Not asked for: sections are loaded per MSM.
    #[default]
    Off,
    /// A helper thread is creating the CUDA context and then, when the GPU has the room,
    /// uploading and decoding the sections.
    Loading(JoinHandle<Result<Prefetched>>),
    Ready(Arc<Resident>),
    /// The context exists, but the SRS did not fit: sections are loaded per MSM.
    NoRoom,
}

/// What the prefetch thread did.
pub struct Prefetched {
    /// None when the GPU lacks the room for every section plus the MSMs' scratch.
    resident: Option<Resident>,
    context: Duration,
    upload: Duration,
}

/// Device memory a partition needs beside the resident SRS and a recording on the device
/// (`--pce-eval gpu`), per domain element: its peak is MSM h's (≈ 450 bytes, see
/// [`SCRATCH_PER_DOMAIN_ELEMENT`]) with the aux assignment (32) and the NTT's twist
/// tables (64: kept for the process once made) beside it, plus ~30 of slack; the
/// evaluation and the NTT before it need less (a, b, c, H and the aux: 160). At 32GiB
/// on the H200: 8.8 GB of recording + 77 GB against ~94 GB free beside the SRS.
const PCE_SCRATCH_PER_DOMAIN_ELEMENT: usize = 576;

/// A deferred assignment's evaluations on the host cores, where its recording does not
/// fit the GPU.
fn host_evaluations(pce: &Pce, p: &ProvingAssignment, t: &mut Timings) -> Result<Abc> {
    let [a, b, c] = t.time(
        "A·w, B·w, C·w (PCE, CPU: the recording does not fit the GPU)",
        || pce.evaluations(&p.input_assignment, &p.aux_assignment),
    )?;
    Ok((a, b, c))
}

type Abc = (Vec<Fr>, Vec<Fr>, Vec<Fr>);

/// Device memory the MSMs and the NTT need besides the resident SRS, per domain element.
/// Estimated from the allocations (not measured): the H MSM's peak, while its 16 windows
/// of digits are sorted, is ≈ 450 bytes (H and its copy 64, keys and values in and out
/// 256, CUB's scratch ≈ 128); 640 leaves room for the allocator and CUB.
const SCRATCH_PER_DOMAIN_ELEMENT: usize = 640;

impl Resident {
    fn load(srs: &Srs, pin: bool, g2: bool) -> Result<Self> {
        fn decode<P: GpuAffine>(srs: &Srs, s: &Section, pin: bool) -> Result<DevicePoints<P>> {
            DevicePoints::decode(srs.section_bytes(s), pin).map_err(|e| {
                anyhow::anyhow!(
                    "parameters {}: section '{}': {e:#}",
                    srs.path.display(),
                    s.name
                )
            })
        }
        let r = Resident {
            h: decode(srs, &srs.h, pin)?,
            l: decode(srs, &srs.l, pin)?,
            a: decode(srs, &srs.a, pin)?,
            b_g1: decode(srs, &srs.b_g1, pin)?,
            b_g2: g2.then(|| decode(srs, &srs.b_g2, pin)).transpose()?,
        };
        Ok(r)
    }

    /// Runs on the prefetch thread, during synthesis: the probe's answer and the CUDA
    /// context first (0.10–0.12 s each on the H200, which a single-shot prover would
    /// otherwise pay before or after synthesis), then the sections if they fit beside the
    /// MSMs' scratch. Nothing without a GPU (`--device auto` then proves on the CPU).
    fn prefetch(srs: &Srs, probe: &Probe, pin: bool, g2: bool) -> Result<Prefetched> {
        let t0 = Instant::now();
        if !probe.gpu()? {
            return Ok(Prefetched {
                resident: None,
                context: t0.elapsed(),
                upload: Duration::ZERO,
            });
        }
        super::set_device(probe.gpu)?;
        let (free, _) = super::mem_info()?;
        let context = t0.elapsed();
        let mut bytes: usize = [&srs.h, &srs.l, &srs.a, &srs.b_g1]
            .iter()
            .map(|s| s.count * s.point_size)
            .sum();
        if g2 {
            bytes += srs.b_g2.count * srs.b_g2.point_size;
        }
        let need = bytes + SCRATCH_PER_DOMAIN_ELEMENT * srs.domain_size();
        if need > free {
            log::info!(
                "SRS loaded per MSM: resident it needs {need} bytes with the MSM scratch, the \
                 GPU has {free} free"
            );
            return Ok(Prefetched {
                resident: None,
                context,
                upload: Duration::ZERO,
            });
        }
        let t1 = Instant::now();
        let resident = Some(Self::load(srs, pin, g2)?);
        srs.release_pages();
        Ok(Prefetched {
            resident,
            context,
            upload: t1.elapsed(),
        })
    }
}

/// A section's points: decoded on the host, on the device for one MSM, or resident.
enum Loaded<'a, P: GpuAffine> {
    Host(Vec<P>),
    Device(DevicePoints<P>),
    Resident(&'a DevicePoints<P>),
}

impl<P: GpuAffine> Loaded<'_, P> {
    /// Σ scalars[i]·points[offset + i], adding what the device did to `sum`.
    fn msm(
        &self,
        offset: usize,
        scalars: &[Fr],
        cfg: Msm,
        sum: &mut DeviceWork,
    ) -> Result<P::Projective> {
        self.msm_with(offset, Scalars::Host(scalars), scalars.len(), cfg, sum)
    }

    /// [`Self::msm`] over scalars already on the device (all `n` of the set).
    fn msm_dev(
        &self,
        offset: usize,
        scalars: &DeviceScalars,
        cfg: Msm,
        sum: &mut DeviceWork,
    ) -> Result<P::Projective> {
        let n = scalars.len();
        self.msm_with(offset, Scalars::Device(scalars, 0, n), n, cfg, sum)
    }

    fn msm_with(
        &self,
        offset: usize,
        scalars: Scalars,
        n: usize,
        cfg: Msm,
        sum: &mut DeviceWork,
    ) -> Result<P::Projective> {
        let points = match self {
            Loaded::Host(v) => Points::Host(&v[offset..offset + n]),
            Loaded::Device(d) => Points::Device(d, offset),
            Loaded::Resident(d) => Points::Device(d, offset),
        };
        let (p, r) = msm_with(points, scalars, cfg)?;
        sum.add(&r, n);
        Ok(p)
    }
}

/// The device work of one product's MSMs, for the timing table and the JSON report.
#[derive(Default)]
struct DeviceWork {
    split_ms: f64,
    buckets_ms: f64,
    scalars: u64,
    ones: u64,
    bucketed: u64,
}

impl DeviceWork {
    fn add(&mut self, r: &MsmReport, n: usize) {
        self.split_ms += r.split_ms as f64;
        self.buckets_ms += r.buckets_ms as f64;
        self.scalars += n as u64;
        self.ones += r.ones;
        self.bucketed += r.bucketed;
    }

    /// Sub-rows under the product's row: kernel times, and what the split did.
    fn record(&self, t: &mut Timings, split: bool) {
        let ms = |x: f64| Duration::from_secs_f64(x / 1e3);
        if split {
            t.add(
                "  of which split + batch add (GPU events)",
                ms(self.split_ms),
            );
            t.add("  of which bucket MSM (GPU events)", ms(self.buckets_ms));
            log::info!(
                "{} scalars: {} ones batch-added, {} bucketed, {} zeros dropped",
                self.scalars,
                self.ones,
                self.bucketed,
                self.scalars - self.ones - self.bucketed
            );
        } else {
            t.add("  of which MSM kernels (GPU events)", ms(self.buckets_ms));
        }
    }
}

/// With `--srs-decode cpu`, decoded sections arrive from a helper thread in the order the
/// MSMs use them, so host decoding overlaps the GPU work (NTT, then the previous section's
/// MSM). One section in flight at a time bounds memory.
struct Decoded<P> {
    rx: mpsc::Receiver<(Result<Vec<P>>, Duration)>,
}

fn decode<P: SrsPoint>(srs: &Srs, s: &Section) -> (Result<Vec<P>>, Duration) {
    let t0 = Instant::now();
    (srs.points(s, 0..s.count), t0.elapsed())
}

impl Cuda {
    /// The backend for `--device cuda`, or `--device auto` (`fallback`: the CPU proves
    /// when there is no GPU). The GPU probe starts here, on a helper thread.
    pub fn new(
        msm: Msm,
        b_g2: BG2,
        srs_decode: SrsDecode,
        gpu: usize,
        pin: bool,
        fallback: bool,
    ) -> Self {
        Cuda {
            msm,
            b_g2,
            srs_decode,
            gpu,
            pin,
            overlap_aux: true,
            pce_eval: true,
            pce_dev: Default::default(),
            resident: Default::default(),
            probe: Probe::start(fallback, gpu),
        }
    }

    /// `--overlap-aux`: the aux assignment's upload beside the H MSM (default on).
    pub fn overlap_aux(mut self, on: bool) -> Self {
        self.overlap_aux = on;
        self
    }

    /// `--pce-eval gpu`: A·w, B·w, C·w of `--pce` assignments on the device (default on).
    pub fn pce_eval(mut self, on: bool) -> Self {
        self.pce_eval = on;
        self
    }

    /// The recording `pce` on the device: uploaded on first use, then kept for the run.
    /// None when it does not fit beside what the NTT and the MSMs need (8.8 GB at 32GiB):
    /// the host evaluates instead ([`host_evaluations`]).
    fn device_pce(&self, pce: &Arc<Pce>, t: &mut Timings) -> Result<Option<Arc<DevicePce>>> {
        let mut kept = self.pce_dev.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = kept.as_ref().filter(|d| Arc::ptr_eq(&d.pce, pce)) {
            return Ok(Some(d.clone()));
        }
        *kept = None; // another recording's memory goes first
        let m = pce.constraints().next_power_of_two();
        let need = DevicePce::bytes_for(pce) + PCE_SCRATCH_PER_DOMAIN_ELEMENT * m;
        let (free, _) = super::mem_info()?;
        if need > free {
            log::info!(
                "--pce-eval gpu: the recording needs {need} bytes with the NTT and MSM \
                 scratch, the GPU has {free} free: A·w, B·w, C·w on the host"
            );
            return Ok(None);
        }
        let d = t.time("upload PCE matrices (GPU, once per run)", || {
            DevicePce::upload(pce, false)
        })?;
        let d = Arc::new(d);
        *kept = Some(d.clone());
        Ok(Some(d))
    }

    /// Whether this backend proves on the GPU, waiting for the probe (see [`Probe::gpu`]).
    pub fn gpu(&self) -> Result<bool> {
        self.probe.gpu()
    }

    /// The resident SRS, waiting for its loading thread if needed; None when sections are
    /// loaded per MSM.
    fn resident(&self, t: &mut Timings) -> Result<Option<Arc<Resident>>> {
        let mut state = self.resident.lock().unwrap_or_else(|e| e.into_inner());
        if let Prefetch::Loading(_) = &*state {
            let Prefetch::Loading(handle) = std::mem::take(&mut *state) else {
                unreachable!()
            };
            let joined = t.time("wait for the GPU prefetch", || handle.join());
            let done = joined.map_err(|_| anyhow::anyhow!("the SRS upload thread panicked"))??;
            t.add(
                "  GPU probe + CUDA context (during synthesis)",
                done.context,
            );
            *state = match done.resident {
                Some(r) => {
                    t.add(
                        "  SRS upload + decode, all sections (GPU, during synthesis)",
                        done.upload,
                    );
                    Prefetch::Ready(Arc::new(r))
                }
                None => Prefetch::NoRoom,
            };
        }
        Ok(match &*state {
            Prefetch::Ready(r) => Some(r.clone()),
            _ => None,
        })
    }

    /// The points of section `s` when the SRS is not resident: decoded on the device from
    /// the mapped bytes, or the next section from the host decoding thread.
    fn load<P: GpuAffine + SrsPoint>(
        &self,
        srs: &Srs,
        s: &Section,
        host: &Decoded<P>,
        t: &mut Timings,
    ) -> Result<Loaded<'static, P>> {
        let name = s.name;
        if self.srs_decode == SrsDecode::Gpu {
            let d = t.time(&format!("upload + decode SRS {name} (GPU)"), || {
                DevicePoints::decode(srs.section_bytes(s), self.pin)
            });
            let d = d.map_err(|e| {
                anyhow::anyhow!("parameters {}: section '{name}': {e:#}", srs.path.display())
            })?;
            return Ok(Loaded::Device(d));
        }
        let (points, took) = t
            .time(&format!("wait for SRS {name}"), || host.rx.recv())
            .map_err(|_| anyhow::anyhow!("the SRS decoding thread stopped before {name}"))?;
        t.add(&format!("  decode SRS {name} (overlapped)"), took);
        Ok(Loaded::Host(points?))
    }
}

/// B in G2 computed on the host (`--b-g2 cpu`): the products, decode time, MSM time.
type CpuBG2 = Result<(Vec<G2Projective>, Duration, Duration)>;

/// A run that stops before the products (an error in synthesis, say) still waits for the
/// SRS upload thread: exiting while it is inside the CUDA runtime could crash the exit.
impl Drop for Cuda {
    fn drop(&mut self) {
        let state = self.resident.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Prefetch::Loading(handle) = std::mem::take(state) {
            let _ = handle.join();
        }
    }
}

impl Backend for Cuda {
    /// "cpu" when `--device auto` found no GPU (waits for the probe).
    fn name(&self) -> &'static str {
        match self.probe.gpu() {
            Ok(false) => "cpu",
            _ => "cuda",
        }
    }

    /// Starts uploading and decoding every section the GPU MSMs read, if the device has
    /// room for them and for the MSMs' scratch (else they are loaded per MSM).
    fn prefetch(&self, srs: &Arc<Srs>) -> Result<()> {
        if self.srs_decode != SrsDecode::Gpu {
            return Ok(());
        }
        let (srs, probe, pin, g2) = (
            srs.clone(),
            self.probe.clone(),
            self.pin,
            self.b_g2 == BG2::Gpu,
        );
        let handle = std::thread::Builder::new()
            .name("srs-upload".into())
            .spawn(move || Resident::prefetch(&srs, &probe, pin, g2))?;
        *self.resident.lock().unwrap_or_else(|e| e.into_inner()) = Prefetch::Loading(handle);
        Ok(())
    }

    fn evaluates_pce(&self) -> bool {
        self.pce_eval
    }

    fn products(
        &self,
        srs: &Srs,
        parts: &mut [ProvingAssignment],
        t: &mut Timings,
    ) -> Result<Vec<Products>> {
        if !self.probe.gpu()? {
            return cpu::Cpu.products(srs, parts, t);
        }
        super::set_device(self.gpu)?;
        // The evaluations leave the assignments first, so the rest can be shared with the
        // helper threads.
        let abc: Vec<_> = parts
            .iter_mut()
            .map(|p| {
                (
                    std::mem::take(&mut p.a),
                    std::mem::take(&mut p.b),
                    std::mem::take(&mut p.c),
                )
            })
            .collect();
        let parts: &[ProvingAssignment] = parts;
        let g2_on_gpu = self.b_g2 == BG2::Gpu;
        let host_decode = self.srs_decode == SrsDecode::Cpu;
        std::thread::scope(|scope| {
            let (tx1, rx1) = mpsc::sync_channel(1);
            let (tx2, rx2) = mpsc::sync_channel(1);
            scope.spawn(move || {
                if !host_decode {
                    return;
                }
                for s in [&srs.h, &srs.l, &srs.a, &srs.b_g1] {
                    if tx1.send(decode::<G1Affine>(srs, s)).is_err() {
                        return; // the prover stopped on an error
                    }
                }
                if g2_on_gpu {
                    let _ = tx2.send(decode::<G2Affine>(srs, &srs.b_g2));
                }
            });
            let cpu_b_g2 = (!g2_on_gpu).then(|| {
                scope.spawn(move || -> CpuBG2 {
                    let (pts, decoded) = decode::<G2Affine>(srs, &srs.b_g2);
                    let t0 = Instant::now();
                    let b = cpu::b_products(&pts?, parts);
                    Ok((b, decoded, t0.elapsed()))
                })
            });
            let mut products = self.products_with(
                srs,
                abc,
                parts,
                t,
                &Decoded { rx: rx1 },
                &Decoded { rx: rx2 },
            )?;
            if let Some(handle) = cpu_b_g2 {
                let joined = t.time("wait for B in G2 (CPU)", || handle.join());
                let (b, decoded, took) =
                    joined.map_err(|_| anyhow::anyhow!("the B-in-G2 thread panicked"))??;
                t.add("  decode SRS b_g2 (CPU, overlapped)", decoded);
                t.add("  MSM b_g2 (CPU, overlapped)", took);
                for (p, b) in products.iter_mut().zip(b) {
                    p.b_g2 = b;
                }
            }
            Ok(products)
        })
    }
}

/// The product phases, in the order of the timing table.
#[derive(Clone, Copy)]
enum Phase {
    Ntt,
    HMsm,
    AuxUpload,
    L,
    A,
    BG1,
    BG2,
}

const PHASES: usize = 7;

/// Wall time and device work per phase, summed over the partitions of a batch.
#[derive(Default)]
struct Phases {
    wall: [Duration; PHASES],
    work: [DeviceWork; PHASES],
    ntt_ms: f64,
    /// A·w, B·w, C·w on the device (`--pce-eval gpu`), and for how many partitions.
    eval_ms: f64,
    evaluated: usize,
}

impl Phases {
    fn time<T>(&mut self, p: Phase, f: impl FnOnce(&mut DeviceWork) -> Result<T>) -> Result<T> {
        let t0 = Instant::now();
        let r = f(&mut self.work[p as usize]);
        self.wall[p as usize] += t0.elapsed();
        r
    }

    fn record(&self, t: &mut Timings, split: bool, g2: bool, aux_once: bool, overlap_aux: bool) {
        let row = |t: &mut Timings, p: Phase, name: &str| t.add(name, self.wall[p as usize]);
        if self.evaluated > 0 {
            row(
                t,
                Phase::Ntt,
                "H: PCE evaluation + NTT on the GPU (with transfers)",
            );
            t.add(
                "  of which A·w, B·w, C·w kernels (PCE, GPU events)",
                Duration::from_secs_f64(self.eval_ms / 1e3),
            );
        } else {
            row(t, Phase::Ntt, "H: NTT on the GPU (with transfers)");
        }
        t.add(
            "  of which NTT kernels (GPU events)",
            Duration::from_secs_f64(self.ntt_ms / 1e3),
        );
        row(t, Phase::HMsm, "MSM h (GPU, H from the NTT on the device)");
        self.work[Phase::HMsm as usize].record(t, false);
        if aux_once || self.evaluated > 0 {
            row(
                t,
                Phase::AuxUpload,
                if self.evaluated > 0 {
                    "upload aux assignment (once per partition, before H: PCE on the GPU)"
                } else if overlap_aux {
                    "upload aux assignment (once per partition, beyond MSM h)"
                } else {
                    "upload aux assignment (once per partition)"
                },
            );
        }
        let products = [
            (Phase::L, "MSM l (GPU)"),
            (Phase::A, "MSM a (GPU)"),
            (Phase::BG1, "MSM b_g1 (GPU)"),
            (Phase::BG2, "MSM b_g2 (GPU)"),
        ];
        for (p, name) in products {
            if matches!(p, Phase::BG2) && !g2 {
                continue;
            }
            row(t, p, name);
            self.work[p as usize].record(t, split);
        }
    }
}

/// The witness queries: L and A read the aux assignment, B (G1 and G2) the B query.
#[derive(Clone, Copy)]
enum Query {
    L,
    A,
    B,
}

/// One query's MSMs for one partition, its aux assignment already on the device: the
/// inputs (A: all; B: by B's input density) from the host, then the aux scalars of the
/// query, selected on the device. L has no inputs.
fn query<P: GpuAffine>(
    q: Query,
    pts: &Loaded<P>,
    p: &ProvingAssignment,
    aux: &DeviceScalars,
    w: Msm,
    work: &mut DeviceWork,
) -> Result<P::Projective> {
    match q {
        Query::L => pts.msm_dev(0, aux, w, work),
        Query::A => {
            let inputs = p.input_assignment.len();
            let aux = aux.select(&p.a_aux_density)?;
            Ok(pts.msm(0, &p.input_assignment, w, work)? + pts.msm_dev(inputs, &aux, w, work)?)
        }
        Query::B => {
            let inputs = p.b_input_density.select(&p.input_assignment);
            let aux = aux.select(&p.b_aux_density)?;
            Ok(pts.msm(0, &inputs, w, work)?
                + pts.msm_dev(p.b_input_density.total(), &aux, w, work)?)
        }
    }
}

impl Cuda {
    /// H for one partition: the NTT leaves it on the device for its MSM. With `aux`, that
    /// assignment goes to the device during the MSM (returned; its upload's wait beyond
    /// the MSM is timed as the aux upload).
    fn h_product(
        &self,
        pts: &Loaded<G1Affine>,
        (a, b, c): (Vec<Fr>, Vec<Fr>, Vec<Fr>),
        aux: Option<&[Fr]>,
        ph: &mut Phases,
    ) -> Result<(G1Projective, Option<DeviceScalars>)> {
        let hd = ph.time(Phase::Ntt, |_| {
            let (hd, ms) = ntt::quotient_to_device(&a, &b, &c, false)?;
            drop((a, b, c));
            Ok((hd, ms))
        })?;
        ph.ntt_ms += hd.1 as f64;
        let h_cfg = Msm {
            split: false,
            ..self.msm
        };
        let Some(aux) = aux else {
            let h = ph.time(Phase::HMsm, |work| pts.msm_dev(0, &hd.0, h_cfg, work))?;
            return Ok((h, None));
        };
        let t0 = Instant::now();
        let (aux, (h, msm)) = DeviceScalars::upload_during(aux, false, || {
            let t1 = Instant::now();
            let h = pts.msm_dev(0, &hd.0, h_cfg, &mut ph.work[Phase::HMsm as usize])?;
            Ok((h, t1.elapsed()))
        })?;
        ph.wall[Phase::HMsm as usize] += msm;
        ph.wall[Phase::AuxUpload as usize] += t0.elapsed().saturating_sub(msm);
        Ok((h, Some(aux)))
    }

    /// H for a partition whose a, b, c synthesis left to the backend (`--pce-eval gpu`):
    /// its aux assignment goes to the device first (the evaluation reads it; L, A and B
    /// then reuse it), a, b, c are evaluated there, then the NTT and H's MSM.
    fn h_product_pce(
        &self,
        pts: &Loaded<G1Affine>,
        pce: &DevicePce,
        p: &ProvingAssignment,
        ph: &mut Phases,
    ) -> Result<(G1Projective, DeviceScalars)> {
        let aux = ph.time(Phase::AuxUpload, |_| {
            DeviceScalars::upload(&p.aux_assignment, false)
        })?;
        let (hd, eval_ms, ms) = ph.time(Phase::Ntt, |_| {
            ntt::quotient_pce_to_device(pce, &p.input_assignment, &aux)
        })?;
        ph.ntt_ms += ms as f64;
        ph.eval_ms += eval_ms as f64;
        ph.evaluated += 1;
        let h_cfg = Msm {
            split: false,
            ..self.msm
        };
        let h = ph.time(Phase::HMsm, |work| pts.msm_dev(0, &hd, h_cfg, work))?;
        Ok((h, aux))
    }

    /// With the SRS resident, partition by partition: H, then the aux assignment goes to
    /// the device once and serves L, A and B. Else (sections loaded per MSM) product by
    /// product over the partitions, each MSM uploading the aux assignment it narrows.
    fn products_with(
        &self,
        srs: &Srs,
        abc: Vec<Abc>,
        parts: &[ProvingAssignment],
        t: &mut Timings,
        g1: &Decoded<G1Affine>,
        g2: &Decoded<G2Affine>,
    ) -> Result<Vec<Products>> {
        let w = self.msm;
        let g2_on_gpu = self.b_g2 == BG2::Gpu;
        let mut out: Vec<Products> = parts
            .iter()
            .map(|_| Products {
                h: G1Projective::identity(),
                l: G1Projective::identity(),
                a: G1Projective::identity(),
                b_g1: G1Projective::identity(),
                b_g2: G2Projective::identity(), // with --b-g2 cpu, filled in by the caller
            })
            .collect();
        let mut ph = Phases::default();
        // The NTT does not read the SRS: only now wait for the sections' upload.
        let resident = self.resident(t)?;
        if let Some(r) = resident.as_deref() {
            let (h, l, a, b_g1) = (
                Loaded::Resident(&r.h),
                Loaded::Resident(&r.l),
                Loaded::Resident(&r.a),
                Loaded::Resident(&r.b_g1),
            );
            let b_g2 = r.b_g2.as_ref().map(Loaded::Resident);
            for ((o, abc), p) in out.iter_mut().zip(abc).zip(parts) {
                let on_device = match &p.deferred {
                    Some(pce) => self.device_pce(pce, t)?,
                    None => None,
                };
                let aux = if let Some(pce) = on_device {
                    let (h, aux) = self.h_product_pce(&h, &pce, p, &mut ph)?;
                    o.h = h;
                    aux
                } else {
                    let abc = match &p.deferred {
                        Some(pce) => host_evaluations(pce, p, t)?,
                        None => abc,
                    };
                    let beside = self.overlap_aux.then_some(&p.aux_assignment[..]);
                    let (h, aux) = self.h_product(&h, abc, beside, &mut ph)?;
                    o.h = h;
                    match aux {
                        Some(aux) => aux,
                        None => ph.time(Phase::AuxUpload, |_| {
                            DeviceScalars::upload(&p.aux_assignment, false)
                        })?,
                    }
                };
                o.l = ph.time(Phase::L, |k| query(Query::L, &l, p, &aux, w, k))?;
                o.a = ph.time(Phase::A, |k| query(Query::A, &a, p, &aux, w, k))?;
                o.b_g1 = ph.time(Phase::BG1, |k| query(Query::B, &b_g1, p, &aux, w, k))?;
                if let Some(b_g2) = &b_g2 {
                    o.b_g2 = ph.time(Phase::BG2, |k| query(Query::B, b_g2, p, &aux, w, k))?;
                }
            }
            ph.record(t, w.split, g2_on_gpu, true, self.overlap_aux);
            return Ok(out);
        }

        // H stays on the device from the NTT to its MSM; so one partition at a time (all
        // of a 32GiB proof's H at once would not fit beside the SRS).
        let pts = self.load(srs, &srs.h, g1, t)?;
        for ((o, abc), p) in out.iter_mut().zip(abc).zip(parts) {
            let on_device = match &p.deferred {
                Some(pce) => self.device_pce(pce, t)?,
                None => None,
            };
            o.h = match (on_device, &p.deferred) {
                (Some(pce), _) => self.h_product_pce(&pts, &pce, p, &mut ph)?.0,
                (None, Some(pce)) => {
                    let abc = host_evaluations(pce, p, t)?;
                    self.h_product(&pts, abc, None, &mut ph)?.0
                }
                (None, None) => self.h_product(&pts, abc, None, &mut ph)?.0,
            };
        }
        drop(pts);
        let upload = |p: &ProvingAssignment| DeviceScalars::upload(&p.aux_assignment, false);
        for (q, s, phase) in [
            (Query::L, &srs.l, Phase::L),
            (Query::A, &srs.a, Phase::A),
            (Query::B, &srs.b_g1, Phase::BG1),
        ] {
            let pts = self.load(srs, s, g1, t)?;
            for (o, p) in out.iter_mut().zip(parts) {
                let v = ph.time(phase, |k| query(q, &pts, p, &upload(p)?, w, k))?;
                match phase {
                    Phase::L => o.l = v,
                    Phase::A => o.a = v,
                    _ => o.b_g1 = v,
                }
            }
        }
        if g2_on_gpu {
            let pts = self.load(srs, &srs.b_g2, g2, t)?;
            for (o, p) in out.iter_mut().zip(parts) {
                o.b_g2 = ph.time(Phase::BG2, |k| query(Query::B, &pts, p, &upload(p)?, w, k))?;
            }
        }
        ph.record(t, w.split, g2_on_gpu, false, false);
        Ok(out)
    }
}
