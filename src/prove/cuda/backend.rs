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
//! The SRS goes to the GPU while the partitions are synthesized (`prefetch`, started by
//! the pipeline before synthesis): every section is decoded on the device by a helper
//! thread and stays resident for every batch of the run (`--max-circuits`). When the GPU
//! lacks the room for all sections plus the MSMs' scratch, each section is instead
//! uploaded and decoded just before its MSM and freed after it.

use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;
use blstrs::{G1Affine, G2Affine, G2Projective, Scalar as Fr};
use group::Group;

use super::{
    msm_with, ntt, DevicePoints, DeviceScalars, GpuAffine, Msm, MsmReport, Points, Scalars,
};
use crate::input::srs::{Section, Srs, SrsPoint};
use crate::prove::{cpu, Backend, Products};
use crate::report::Timings;
use crate::synth::ProvingAssignment;

/// Where B in G2 is computed (`--b-g2`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BG2 {
    #[default]
    Gpu,
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
    /// Page-lock each mapped SRS section while it is copied to the device (`--pin`).
    pub pin: bool,
    /// The SRS on the device: being loaded during synthesis, then kept for every batch.
    pub resident: Mutex<Prefetch>,
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
    /// Not asked for (or not possible): sections are loaded per MSM.
    #[default]
    Off,
    /// A helper thread is uploading and decoding; it returns the sections and its time.
    Loading(JoinHandle<Result<(Resident, Duration)>>),
    Ready(Arc<Resident>),
}

/// Device memory the MSMs and the NTT need besides the resident SRS, per domain element.
/// Estimated from the allocations (not measured): the H MSM's peak, while its 16 windows
/// of digits are sorted, is ≈ 450 bytes (H and its copy 64, keys and values in and out
/// 256, CUB's scratch ≈ 128); 640 leaves room for the allocator and CUB.
const SCRATCH_PER_DOMAIN_ELEMENT: usize = 640;

impl Resident {
    fn load(srs: &Srs, gpu: usize, pin: bool, g2: bool) -> Result<(Self, Duration)> {
        let t0 = Instant::now();
        super::set_device(gpu)?;
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
        Ok((r, t0.elapsed()))
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
            t.add("  of which split + batch add (GPU)", ms(self.split_ms));
            t.add("  of which bucket MSM (GPU)", ms(self.buckets_ms));
            log::info!(
                "{} scalars: {} ones batch-added, {} bucketed, {} zeros dropped",
                self.scalars,
                self.ones,
                self.bucketed,
                self.scalars - self.ones - self.bucketed
            );
        } else {
            t.add("  of which MSM kernels (GPU)", ms(self.buckets_ms));
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
    /// The resident SRS, waiting for its loading thread if needed; None when sections are
    /// loaded per MSM.
    fn resident(&self, t: &mut Timings) -> Result<Option<Arc<Resident>>> {
        let mut state = self.resident.lock().unwrap_or_else(|e| e.into_inner());
        if let Prefetch::Loading(_) = &*state {
            let Prefetch::Loading(handle) = std::mem::take(&mut *state) else {
                unreachable!()
            };
            let joined = t.time("wait for the SRS on the GPU", || handle.join());
            let (r, took) =
                joined.map_err(|_| anyhow::anyhow!("the SRS upload thread panicked"))??;
            t.add(
                "  SRS upload + decode, all sections (GPU, during synthesis)",
                took,
            );
            *state = Prefetch::Ready(Arc::new(r));
        }
        Ok(match &*state {
            Prefetch::Ready(r) => Some(r.clone()),
            _ => None,
        })
    }

    /// The points of section `s`: resident, decoded on the device from the mapped bytes,
    /// or the next section from the host decoding thread.
    fn load<'a, P: GpuAffine + SrsPoint>(
        &self,
        srs: &Srs,
        s: &Section,
        host: &Decoded<P>,
        resident: Option<&'a DevicePoints<P>>,
        t: &mut Timings,
    ) -> Result<Loaded<'a, P>> {
        let name = s.name;
        if let Some(d) = resident {
            return Ok(Loaded::Resident(d));
        }
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
    fn name(&self) -> &'static str {
        "cuda"
    }

    /// Starts uploading and decoding every section the GPU MSMs read, if the device has
    /// room for them and for the MSMs' scratch (else they are loaded per MSM).
    fn prefetch(&self, srs: &Arc<Srs>) -> Result<()> {
        if self.srs_decode != SrsDecode::Gpu {
            return Ok(());
        }
        super::set_device(self.gpu)?;
        let g2 = self.b_g2 == BG2::Gpu;
        let mut bytes: usize = [&srs.h, &srs.l, &srs.a, &srs.b_g1]
            .iter()
            .map(|s| s.count * s.point_size)
            .sum();
        if g2 {
            bytes += srs.b_g2.count * srs.b_g2.point_size;
        }
        let need = bytes + SCRATCH_PER_DOMAIN_ELEMENT * srs.domain_size();
        let (free, _) = super::mem_info()?;
        if need > free {
            log::info!(
                "SRS loaded per MSM: resident it needs {need} bytes with the MSM scratch, the \
                 GPU has {free} free"
            );
            return Ok(());
        }
        let (srs, gpu, pin) = (srs.clone(), self.gpu, self.pin);
        let handle = std::thread::Builder::new()
            .name("srs-upload".into())
            .spawn(move || Resident::load(&srs, gpu, pin, g2))?;
        *self.resident.lock().unwrap_or_else(|e| e.into_inner()) = Prefetch::Loading(handle);
        Ok(())
    }

    fn products(
        &self,
        srs: &Srs,
        parts: &mut [ProvingAssignment],
        t: &mut Timings,
    ) -> Result<Vec<Products>> {
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

impl Cuda {
    fn products_with(
        &self,
        srs: &Srs,
        abc: Vec<(Vec<Fr>, Vec<Fr>, Vec<Fr>)>,
        parts: &[ProvingAssignment],
        t: &mut Timings,
        g1: &Decoded<G1Affine>,
        g2: &Decoded<G2Affine>,
    ) -> Result<Vec<Products>> {
        let w = self.msm;
        // H stays on the device from the NTT to its MSM; so one partition at a time (all
        // of a 32GiB proof's H at once would not fit beside the SRS). The NTT does not read
        // the SRS: only now wait for the sections' upload.
        let resident = self.resident(t)?;
        let res = resident.as_deref();
        let pts = self.load(srs, &srs.h, g1, res.map(|r| &r.h), t)?;
        let h_cfg = Msm { split: false, ..w };
        let mut work = DeviceWork::default();
        let (mut ntt_wall, mut ntt_ms, mut msm_wall) = (Duration::ZERO, 0f32, Duration::ZERO);
        let mut h = Vec::with_capacity(abc.len());
        for (a, b, c) in abc {
            let t0 = Instant::now();
            let (hd, ms) = ntt::quotient_to_device(&a, &b, &c, false)?;
            drop((a, b, c));
            ntt_wall += t0.elapsed();
            ntt_ms += ms;
            let t0 = Instant::now();
            h.push(pts.msm_dev(0, &hd, h_cfg, &mut work)?);
            msm_wall += t0.elapsed();
        }
        t.add("H: NTT on the GPU (with transfers)", ntt_wall);
        t.add(
            "  of which NTT kernels",
            Duration::from_secs_f64(ntt_ms as f64 / 1e3),
        );
        t.add("MSM h (GPU, H from the NTT on the device)", msm_wall);
        work.record(t, false);
        drop(pts);

        // The aux assignment goes to the device once per MSM and is narrowed there to the
        // A or B query's variables (no host-side copy of 130 M scalars).
        let upload = |p: &ProvingAssignment| DeviceScalars::upload(&p.aux_assignment, false);
        let pts = self.load(srs, &srs.l, g1, res.map(|r| &r.l), t)?;
        let mut work = DeviceWork::default();
        let l = t.time("MSM l (GPU)", || {
            parts
                .iter()
                .map(|p| pts.msm_dev(0, &upload(p)?, w, &mut work))
                .collect::<Result<Vec<_>>>()
        })?;
        work.record(t, w.split);
        drop(pts);

        let pts = self.load(srs, &srs.a, g1, res.map(|r| &r.a), t)?;
        let mut work = DeviceWork::default();
        let a = t.time("MSM a (GPU)", || {
            parts
                .iter()
                .map(|p| {
                    let inputs = p.input_assignment.len();
                    let aux = upload(p)?.select(&p.a_aux_density)?;
                    Ok(pts.msm(0, &p.input_assignment, w, &mut work)?
                        + pts.msm_dev(inputs, &aux, w, &mut work)?)
                })
                .collect::<Result<Vec<_>>>()
        })?;
        work.record(t, w.split);
        drop(pts);

        // B: one body for G1 and G2; inputs first (by B input density), then aux.
        fn b_products<P: GpuAffine>(
            pts: &Loaded<P>,
            parts: &[ProvingAssignment],
            w: Msm,
            work: &mut DeviceWork,
        ) -> Result<Vec<P::Projective>> {
            parts
                .iter()
                .map(|p| {
                    let inputs = p.b_input_density.select(&p.input_assignment);
                    let aux = DeviceScalars::upload(&p.aux_assignment, false)?
                        .select(&p.b_aux_density)?;
                    Ok(pts.msm(0, &inputs, w, work)?
                        + pts.msm_dev(p.b_input_density.total(), &aux, w, work)?)
                })
                .collect()
        }
        let pts = self.load(srs, &srs.b_g1, g1, res.map(|r| &r.b_g1), t)?;
        let mut work = DeviceWork::default();
        let b_g1 = t.time("MSM b_g1 (GPU)", || b_products(&pts, parts, w, &mut work))?;
        work.record(t, w.split);
        drop(pts);
        let b_g2 = if self.b_g2 == BG2::Gpu {
            let pts = self.load(srs, &srs.b_g2, g2, res.and_then(|r| r.b_g2.as_ref()), t)?;
            let mut work = DeviceWork::default();
            let b = t.time("MSM b_g2 (GPU)", || b_products(&pts, parts, w, &mut work))?;
            work.record(t, w.split);
            b
        } else {
            vec![G2Projective::identity(); parts.len()] // filled in by the caller
        };

        Ok((0..parts.len())
            .map(|i| Products {
                h: h[i],
                l: l[i],
                a: a[i],
                b_g1: b_g1[i],
                b_g2: b_g2[i],
            })
            .collect())
    }
}
