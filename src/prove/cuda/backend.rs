//! The CUDA backend: H by NTT on the GPU, the five products by GPU Pippenger MSMs. The flow
//! (sections decoded one at a time on the host, dense scalars picked by the A/B densities)
//! is the CPU backend's, so the two give identical products; every kernel result is
//! checked against the CPU in the tests.
//!
//! Not yet here (issue 4): SRS resident on the device, split MSM for 0/1 scalars,
//! pinned staging. Each MSM uploads its points.

use anyhow::Result;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use rayon::prelude::*;

use super::{msm_g1, msm_g2, ntt};
use crate::input::srs::Srs;
use crate::prove::{Backend, Products};
use crate::report::Timings;
use crate::synth::{Density, ProvingAssignment};

pub struct Cuda {
    /// Pippenger window bits; 0 chooses from the size.
    pub window: usize,
}

/// The groups the GPU MSM serves, so B in G1 and G2 is one body.
trait GpuPoint: Sized + Sync + crate::input::srs::SrsPoint {
    type Projective: Copy + std::ops::Add<Output = Self::Projective>;
    fn msm(points: &[Self], scalars: &[Fr], window: usize) -> Result<Self::Projective>;
}

impl GpuPoint for G1Affine {
    type Projective = G1Projective;
    fn msm(points: &[Self], scalars: &[Fr], window: usize) -> Result<G1Projective> {
        msm_g1(points, scalars, window)
    }
}

impl GpuPoint for G2Affine {
    type Projective = G2Projective;
    fn msm(points: &[Self], scalars: &[Fr], window: usize) -> Result<G2Projective> {
        msm_g2(points, scalars, window)
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
        let w = self.window;
        let mut device_ms = 0f32;
        let hs = t.time("H: NTT on the GPU (with transfers)", || {
            parts
                .iter_mut()
                .map(|p| {
                    let (a, b, c) = (
                        std::mem::take(&mut p.a),
                        std::mem::take(&mut p.b),
                        std::mem::take(&mut p.c),
                    );
                    let (h, ms) = ntt::quotient(&a, &b, &c)?;
                    device_ms += ms;
                    Ok(h)
                })
                .collect::<Result<Vec<_>>>()
        })?;
        t.add(
            "  of which NTT kernels (CUDA events)",
            std::time::Duration::from_secs_f64(device_ms as f64 / 1e3),
        );

        let pts: Vec<G1Affine> = t.time("decode SRS h", || srs.points(&srs.h, 0..srs.h.count))?;
        let h = t.time("MSM h (GPU)", || {
            hs.iter()
                .map(|h| G1Affine::msm(&pts[..h.len()], h, w))
                .collect::<Result<Vec<_>>>()
        })?;
        drop((pts, hs));

        let pts: Vec<G1Affine> = t.time("decode SRS l", || srs.points(&srs.l, 0..srs.l.count))?;
        let l = t.time("MSM l (GPU)", || {
            parts
                .iter()
                .map(|p| G1Affine::msm(&pts, &p.aux_assignment, w))
                .collect::<Result<Vec<_>>>()
        })?;
        drop(pts);

        let pts: Vec<G1Affine> = t.time("decode SRS a", || srs.points(&srs.a, 0..srs.a.count))?;
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
            w: usize,
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
        let pts: Vec<G1Affine> = t.time("decode SRS b_g1", || {
            srs.points(&srs.b_g1, 0..srs.b_g1.count)
        })?;
        let b_g1 = t.time("MSM b_g1 (GPU)", || b_products(&pts, parts, w))?;
        drop(pts);
        let pts: Vec<G2Affine> = t.time("decode SRS b_g2", || {
            srs.points(&srs.b_g2, 0..srs.b_g2.count)
        })?;
        let b_g2 = t.time("MSM b_g2 (GPU)", || b_products(&pts, parts, w))?;
        drop(pts);

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
