//! The CUDA backend: H by NTT on the GPU, the five products by GPU Pippenger MSMs. The flow
//! (sections decoded one at a time on the host, dense scalars picked by the A/B densities)
//! is the CPU backend's, so the two give identical products; every kernel result is
//! checked against the CPU in the tests. A helper thread decodes the next section while
//! the GPU works on the current one.
//!
//! Witness MSMs (L, A, B) run split by default (`--split-msm`): the device batch-adds the
//! points of scalars equal to one and buckets only the rest. `--b-g2 cpu` computes B in G2
//! with blst on the host cores, overlapping all the GPU work.
//!
//! Not yet here (issue 4): SRS resident on the device, pinned staging. Each MSM uploads
//! its points.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;
use rayon::prelude::*;

use super::{msm_g1, msm_g2, ntt, Msm};
use crate::input::srs::{Section, Srs};
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

pub struct Cuda {
    /// Window and split for the witness MSMs (L, A, B); H uses the window, never the split
    /// (its scalars are uniformly random).
    pub msm: Msm,
    pub b_g2: BG2,
}

/// The groups the GPU MSM serves, so B in G1 and G2 is one body.
trait GpuPoint: Sized + Sync + crate::input::srs::SrsPoint {
    type Projective: Copy + std::ops::Add<Output = Self::Projective>;
    fn msm(points: &[Self], scalars: &[Fr], cfg: Msm) -> Result<Self::Projective>;
}

impl GpuPoint for G1Affine {
    type Projective = G1Projective;
    fn msm(points: &[Self], scalars: &[Fr], cfg: Msm) -> Result<G1Projective> {
        msm_g1(points, scalars, cfg)
    }
}

impl GpuPoint for G2Affine {
    type Projective = G2Projective;
    fn msm(points: &[Self], scalars: &[Fr], cfg: Msm) -> Result<G2Projective> {
        msm_g2(points, scalars, cfg)
    }
}

/// The scalars whose density bit is set, in order (the section holds only their points).
fn dense(scalars: &[Fr], density: &Density) -> Vec<Fr> {
    scalars
        .par_iter()
        .enumerate()
        .filter(|(i, _)| density.get(*i))
        .map(|(_, s)| *s)
        .collect()
}

/// Decoded sections arrive from a helper thread in the order the MSMs use them, so host
/// decoding overlaps the GPU work (NTT, then the previous section's MSM). One section in
/// flight at a time bounds memory.
struct Decoded<P> {
    rx: mpsc::Receiver<(Result<Vec<P>>, Duration)>,
}

impl<P> Decoded<P> {
    fn next(&self, name: &str, t: &mut Timings) -> Result<Vec<P>> {
        let (points, took) = t
            .time(&format!("wait for SRS {name}"), || self.rx.recv())
            .map_err(|_| anyhow::anyhow!("the SRS decoding thread stopped before {name}"))?;
        t.add(&format!("  decode SRS {name} (overlapped)"), took);
        points
    }
}

fn decode<P: crate::input::srs::SrsPoint>(srs: &Srs, s: &Section) -> (Result<Vec<P>>, Duration) {
    let t0 = Instant::now();
    (srs.points(s, 0..s.count), t0.elapsed())
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
        std::thread::scope(|scope| {
            let (tx1, rx1) = mpsc::sync_channel(1);
            let (tx2, rx2) = mpsc::sync_channel(1);
            scope.spawn(move || {
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
            let mut products =
                self.products_with(abc, parts, t, &Decoded { rx: rx1 }, &Decoded { rx: rx2 })?;
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

        let pts = g1.next("h", t)?;
        let h_cfg = Msm { split: false, ..w };
        let h = t.time("MSM h (GPU)", || {
            hs.iter()
                .map(|h| G1Affine::msm(&pts[..h.len()], h, h_cfg))
                .collect::<Result<Vec<_>>>()
        })?;
        drop((pts, hs));

        let pts = g1.next("l", t)?;
        let l = t.time("MSM l (GPU)", || {
            parts
                .iter()
                .map(|p| G1Affine::msm(&pts, &p.aux_assignment, w))
                .collect::<Result<Vec<_>>>()
        })?;
        drop(pts);

        let pts = g1.next("a", t)?;
        let a = t.time("MSM a (GPU)", || {
            parts
                .iter()
                .map(|p| {
                    let (inputs, aux) = pts.split_at(p.input_assignment.len());
                    Ok(G1Affine::msm(inputs, &p.input_assignment, w)?
                        + G1Affine::msm(aux, &dense(&p.aux_assignment, &p.a_aux_density), w)?)
                })
                .collect::<Result<Vec<_>>>()
        })?;
        drop(pts);

        // B: one body for G1 and G2; inputs first (by B input density), then aux.
        fn b_products<P: GpuPoint>(
            pts: &[P],
            parts: &[ProvingAssignment],
            w: Msm,
        ) -> Result<Vec<P::Projective>> {
            parts
                .iter()
                .map(|p| {
                    let (inputs, aux) = pts.split_at(p.b_input_density.total());
                    Ok(
                        P::msm(inputs, &dense(&p.input_assignment, &p.b_input_density), w)?
                            + P::msm(aux, &dense(&p.aux_assignment, &p.b_aux_density), w)?,
                    )
                })
                .collect()
        }
        let pts = g1.next("b_g1", t)?;
        let b_g1 = t.time("MSM b_g1 (GPU)", || b_products(&pts, parts, w))?;
        drop(pts);
        let b_g2 = if self.b_g2 == BG2::Gpu {
            let pts = g2.next("b_g2", t)?;
            t.time("MSM b_g2 (GPU)", || b_products(&pts, parts, w))?
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
