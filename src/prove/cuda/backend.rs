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
//! Not yet here (issue 4): sections resident across --max-circuits batches, pinned
//! double-buffered staging, upload of the next section during the current MSM.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;
use blstrs::{G1Affine, G2Affine, G2Projective, Scalar as Fr};
use group::Group;
use rayon::prelude::*;

use super::{msm_points, ntt, DevicePoints, GpuAffine, Msm, MsmReport, Points};
use crate::input::srs::{Section, Srs, SrsPoint};
use crate::prove::{cpu, Backend, Products};
use crate::report::Timings;
use crate::synth::{Density, ProvingAssignment};

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
}

/// A section's points, decoded on the host or on the device.
enum Loaded<P: GpuAffine> {
    Host(Vec<P>),
    Device(DevicePoints<P>),
}

impl<P: GpuAffine> Loaded<P> {
    /// Σ scalars[i]·points[offset + i], adding what the device did to `sum`.
    fn msm(
        &self,
        offset: usize,
        scalars: &[Fr],
        cfg: Msm,
        sum: &mut DeviceWork,
    ) -> Result<P::Projective> {
        let points = match self {
            Loaded::Host(v) => Points::Host(&v[offset..offset + scalars.len()]),
            Loaded::Device(d) => Points::Device(d, offset),
        };
        let (p, r) = msm_points(points, scalars, cfg)?;
        sum.add(&r, scalars.len());
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
    /// The points of section `s`: decoded on the device from the mapped bytes, or the next
    /// section from the host decoding thread.
    fn load<P: GpuAffine + SrsPoint>(
        &self,
        srs: &Srs,
        s: &Section,
        host: &Decoded<P>,
        t: &mut Timings,
    ) -> Result<Loaded<P>> {
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

impl Backend for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
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
        let mut device_ms = 0f32;
        let hs = t.time("H: NTT on the GPU (with transfers)", || {
            abc.into_iter()
                .map(|(a, b, c)| {
                    let (h, ms) = ntt::quotient(&a, &b, &c)?;
                    device_ms += ms;
                    Ok(h)
                })
                .collect::<Result<Vec<_>>>()
        })?;
        t.add(
            "  of which NTT kernels",
            Duration::from_secs_f64(device_ms as f64 / 1e3),
        );

        let pts = self.load(srs, &srs.h, g1, t)?;
        let h_cfg = Msm { split: false, ..w };
        let mut work = DeviceWork::default();
        let h = t.time("MSM h (GPU)", || {
            hs.iter()
                .map(|h| pts.msm(0, h, h_cfg, &mut work))
                .collect::<Result<Vec<_>>>()
        })?;
        work.record(t, false);
        drop((pts, hs));

        let pts = self.load(srs, &srs.l, g1, t)?;
        let mut work = DeviceWork::default();
        let l = t.time("MSM l (GPU)", || {
            parts
                .iter()
                .map(|p| pts.msm(0, &p.aux_assignment, w, &mut work))
                .collect::<Result<Vec<_>>>()
        })?;
        work.record(t, w.split);
        drop(pts);

        let pts = self.load(srs, &srs.a, g1, t)?;
        let mut work = DeviceWork::default();
        let a = t.time("MSM a (GPU)", || {
            parts
                .iter()
                .map(|p| {
                    let inputs = p.input_assignment.len();
                    let aux = p.a_aux_density.select(&p.aux_assignment);
                    Ok(pts.msm(0, &p.input_assignment, w, &mut work)?
                        + pts.msm(inputs, &aux, w, &mut work)?)
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
                    let aux = p.b_aux_density.select(&p.aux_assignment);
                    Ok(pts.msm(0, &inputs, w, work)?
                        + pts.msm(p.b_input_density.total(), &aux, w, work)?)
                })
                .collect()
        }
        let pts = self.load(srs, &srs.b_g1, g1, t)?;
        let mut work = DeviceWork::default();
        let b_g1 = t.time("MSM b_g1 (GPU)", || b_products(&pts, parts, w, &mut work))?;
        work.record(t, w.split);
        drop(pts);
        let b_g2 = if self.b_g2 == BG2::Gpu {
            let pts = self.load(srs, &srs.b_g2, g2, t)?;
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
