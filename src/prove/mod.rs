//! Groth16 proving backends. A backend turns synthesized assignments plus the mapped SRS
//! into the five multi-scalar products of each partition; [`assemble`] turns those and
//! the randomness (r, s) into the proof, identically for every backend and bellperson.

pub mod cpu;
pub mod cuda;
pub(crate) mod devices;

use anyhow::{bail, Result};
use bellperson::groth16::{Proof, VerifyingKey};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use rand_core::RngCore;

use crate::input::srs::Srs;
use crate::report::Timings;
use crate::synth::ProvingAssignment;

/// The zero-knowledge randomness of one proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Randomness {
    pub r: Fr,
    pub s: Fr,
}

impl Randomness {
    /// Draws `n` pairs in bellperson's order (all r first, then all s), so a seeded run
    /// reproduces `create_random_proof_batch` bit for bit.
    pub fn draw(rng: &mut impl RngCore, n: usize) -> Vec<Self> {
        let r: Vec<Fr> = (0..n).map(|_| Fr::random(&mut *rng)).collect();
        let s: Vec<Fr> = (0..n).map(|_| Fr::random(&mut *rng)).collect();
        r.into_iter().zip(s).map(|(r, s)| Self { r, s }).collect()
    }
}

/// The multi-scalar products of one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Products {
    /// Σ h_i · H_i over the quotient polynomial's coefficients.
    pub h: G1Projective,
    /// Σ aux_i · L_i.
    pub l: G1Projective,
    /// Σ over inputs and A-dense aux of w_i · A_i.
    pub a: G1Projective,
    /// Σ over B-dense inputs and aux of w_i · B_i, in G1 and G2.
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// The partition a queue proves after the current one, when it is synthesized: asked for
/// when a backend can use it (`--upload-ahead` moves its inputs to the device beside the
/// current partition's MSMs), so that one completed while the current partition is
/// being proved is found too.
pub(crate) trait NextPart: Sync {
    fn peek(&self) -> Option<&ProvingAssignment>;
}

/// A next partition known when proving starts (or none).
impl NextPart for Option<&ProvingAssignment> {
    fn peek(&self) -> Option<&ProvingAssignment> {
        *self
    }
}

/// A prover backend: one device queue (devices.rs), whose `products` may run beside
/// other queues' on threads of their own.
pub(crate) trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    /// Starts, in the background, whatever `products` will need from the SRS (the CUDA
    /// backend: every section decoded on the GPU), so that it overlaps synthesis.
    fn prefetch(&self, _srs: &std::sync::Arc<Srs>) -> Result<()> {
        Ok(())
    }
    /// The device queue's name in the report and the timeline: "GPU 1", or "CPU".
    fn queue_name(&self) -> String {
        "CPU".into()
    }
    /// The GPU that proved, for the report (None for the CPU, or before any proving).
    fn device(&self) -> Option<crate::report::GpuInfo> {
        None
    }
    /// Whether `products` evaluates assignments whose a, b, c synthesis deferred
    /// (`--pce-eval gpu`) itself, on its device; else synthesis evaluates them.
    fn evaluates_pce(&self) -> bool {
        false
    }
    /// The recording that assignments deferring their evaluations (`evaluates_pce`) will
    /// name, as soon as synthesis has it: a backend may start moving it to its device
    /// (the CUDA backend's `--upload-ahead`).
    fn prepare_pce(&self, _pce: &std::sync::Arc<crate::synth::pce::Pce>) {}
    /// Computes the products of every assignment (consuming their a, b, c evaluations,
    /// made first where deferred). `next`: the partition the caller will hand over next,
    /// once it is synthesized ([`NextPart`]).
    fn products(
        &self,
        srs: &Srs,
        parts: &mut [ProvingAssignment],
        next: &dyn NextPart,
        timings: &mut Timings,
    ) -> Result<Vec<Products>>;
}

/// A = α + a + rδ,  B = β + b + sδ,  C = s·a + r·b₁ + rs·δ + s·α + r·β + h + l
/// (in bellperson's order of operations; the result is unique anyway).
pub(crate) fn assemble(
    vk: &VerifyingKey<Bls12>,
    p: &Products,
    rs: Randomness,
) -> Result<Proof<Bls12>> {
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        bail!("the verifying key's delta is the identity: refusing a subverted SRS");
    }
    let Randomness { r, s } = rs;
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + p.a;
    let g_b = vk.delta_g2 * s + vk.beta_g2 + p.b_g2;
    let g_c =
        p.a * s + p.b_g1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + p.h + p.l;
    Ok(Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    })
}
