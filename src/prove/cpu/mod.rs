//! The CPU backend: the fallback without a GPU and the reference the GPU is tested against.
//!
//! Sections are decoded one at a time and dropped after use, so peak memory is one
//! section of points plus the assignments.

pub mod fft;
pub mod msm;

use anyhow::Result;
use blstrs::{G1Affine, G1Projective, G2Affine};
use rayon::prelude::*;

use super::{Backend, Products};
use crate::input::srs::Srs;
use crate::report::Timings;
use crate::synth::{Abc, ProvingAssignment};
use msm::{msm, msm_dense};

pub struct Cpu;

impl Backend for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn products(
        &self,
        srs: &Srs,
        parts: &mut [ProvingAssignment],
        _next: &dyn crate::prove::NextPart,
        t: &mut Timings,
    ) -> Result<Vec<Products>> {
        // Assignments left unevaluated for a GPU that turned out absent (--device auto).
        if parts.iter().any(|p| matches!(p.abc, Abc::Deferred(_))) {
            t.time("A·w, B·w, C·w (PCE, CPU)", || {
                parts
                    .iter_mut()
                    .try_for_each(ProvingAssignment::evaluate_on_host)
            })?;
        }
        let hs = t.time("H: iFFT, coset FFT, (ab−c)/Z, coset iFFT", || {
            parts
                .iter_mut()
                .map(|p| {
                    let [a, b, c] = p.take_evaluations()?;
                    fft::quotient(a, b, c)
                })
                .collect::<Result<Vec<_>>>()
        })?;

        let pts: Vec<G1Affine> = t.time("decode SRS h", || srs.points(&srs.h, 0..srs.h.count))?;
        let h: Vec<G1Projective> = t.time("MSM h", || hs.iter().map(|h| msm(&pts, h)).collect());
        drop((pts, hs));

        let pts: Vec<G1Affine> = t.time("decode SRS l", || srs.points(&srs.l, 0..srs.l.count))?;
        let l: Vec<G1Projective> = t.time("MSM l", || {
            parts.iter().map(|p| msm(&pts, &p.aux_assignment)).collect()
        });
        drop(pts);

        let pts: Vec<G1Affine> = t.time("decode SRS a", || srs.points(&srs.a, 0..srs.a.count))?;
        let a: Vec<G1Projective> = t.time("MSM a", || {
            parts
                .iter()
                .map(|p| {
                    let (inputs, aux) = pts.split_at(p.input_assignment.len());
                    msm(inputs, &p.input_assignment)
                        + msm_dense(aux, &p.aux_assignment, &p.a_aux_density)
                })
                .collect()
        });
        drop(pts);

        let pts: Vec<G1Affine> = t.time("decode SRS b_g1", || {
            srs.points(&srs.b_g1, 0..srs.b_g1.count)
        })?;
        let b_g1 = t.time("MSM b_g1", || b_products(&pts, parts));
        drop(pts);
        let pts: Vec<G2Affine> = t.time("decode SRS b_g2", || {
            srs.points(&srs.b_g2, 0..srs.b_g2.count)
        })?;
        let b_g2 = t.time("MSM b_g2", || b_products(&pts, parts));
        drop(pts);

        Ok((0..parts.len())
            .into_par_iter()
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

/// B in G1 or G2 (one body) for every partition: inputs first (by B input density), then
/// aux. Also the CUDA backend's `--b-g2 cpu`.
pub(crate) fn b_products<P: msm::MsmPoint>(
    pts: &[P],
    parts: &[ProvingAssignment],
) -> Vec<P::Projective> {
    parts
        .iter()
        .map(|p| {
            let (inputs, aux) = pts.split_at(p.b_input_density.total());
            msm_dense(inputs, &p.input_assignment, &p.b_input_density)
                + msm_dense(aux, &p.aux_assignment, &p.b_aux_density)
        })
        .collect()
}
