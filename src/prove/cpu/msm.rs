//! CPU multi-scalar multiplication: blst's multi-threaded Pippenger, one generic body for
//! G1 and G2.

use blst::MultiPoint;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;
use rayon::prelude::*;

use crate::synth::Density;

/// An affine point type blst can multi-exponentiate.
pub trait MsmPoint: Copy + Send + Sync {
    type Projective: Group + Send;
    fn multi_exp(points: &[Self], scalars_le: &[u8]) -> Self::Projective;
}

impl MsmPoint for G1Affine {
    type Projective = G1Projective;
    fn multi_exp(points: &[Self], scalars_le: &[u8]) -> G1Projective {
        // SAFETY: G1Affine is #[repr(transparent)] over blst_p1_affine.
        let raw = unsafe {
            std::slice::from_raw_parts(points.as_ptr() as *const blst::blst_p1_affine, points.len())
        };
        let mut out = G1Projective::identity();
        *out.as_mut() = raw.mult(scalars_le, 255);
        out
    }
}

impl MsmPoint for G2Affine {
    type Projective = G2Projective;
    fn multi_exp(points: &[Self], scalars_le: &[u8]) -> G2Projective {
        // SAFETY: G2Affine is #[repr(transparent)] over blst_p2_affine.
        let raw = unsafe {
            std::slice::from_raw_parts(points.as_ptr() as *const blst::blst_p2_affine, points.len())
        };
        let mut out = G2Projective::identity();
        *out.as_mut() = raw.mult(scalars_le, 255);
        out
    }
}

fn to_le_bytes<'a>(scalars: impl IndexedParallelIterator<Item = &'a Fr>, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; 32 * n];
    out.par_chunks_mut(32)
        .zip(scalars)
        .for_each(|(o, s)| o.copy_from_slice(&s.to_bytes_le()));
    out
}

/// Σ scalars[i] · points[i].
pub fn msm<P: MsmPoint>(points: &[P], scalars: &[Fr]) -> P::Projective {
    assert_eq!(points.len(), scalars.len(), "MSM length mismatch");
    if points.is_empty() {
        return P::Projective::identity();
    }
    P::multi_exp(points, &to_le_bytes(scalars.par_iter(), scalars.len()))
}

/// Σ over the set bits i of `density` of scalars[i] · points[j], j counting set bits:
/// the SRS stores points only for variables the query uses.
pub(crate) fn msm_dense<P: MsmPoint>(
    points: &[P],
    scalars: &[Fr],
    density: &Density,
) -> P::Projective {
    assert_eq!(density.len(), scalars.len(), "density length mismatch");
    assert_eq!(
        points.len(),
        density.total(),
        "density does not match the points"
    );
    msm(points, &density.select(scalars))
}
