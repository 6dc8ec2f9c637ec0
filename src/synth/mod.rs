//! Synthesis: partition circuits → [`ProvingAssignment`]s, in parallel with rayon.

mod assignment;
pub mod pce;
pub mod presize;
pub(crate) mod sha256;
pub mod witness;

pub use assignment::{Abc, Density, ProvingAssignment, SizeHint};

use anyhow::{Context, Result};
use bellperson::{Circuit, ConstraintSystem};
use blstrs::Scalar as Fr;
use ff::Field;

/// Synthesizes one circuit exactly as bellperson's prover does: the constant ONE input
/// first, then the circuit, then one `input × 0 = 0` constraint per input.
pub fn synthesize<C: Circuit<Fr>>(circuit: C, hint: Option<SizeHint>) -> Result<ProvingAssignment> {
    let mut cs = match hint {
        Some(h) => ProvingAssignment::with_hint(h)?,
        None => ProvingAssignment::default(),
    };
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit
        .synthesize(&mut cs)
        .context("circuit synthesis failed")?;
    cs.enforce_input_constraints();
    Ok(cs)
}

/// Counts the circuit shape a prover needs, for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
    pub a_aux_density: usize,
    pub b_input_density: usize,
    pub b_aux_density: usize,
    /// FFT domain size: the smallest power of two ≥ constraints.
    pub domain: usize,
}

impl Shape {
    pub fn of(pa: &ProvingAssignment) -> Self {
        Self {
            constraints: pa.num_constraints(),
            inputs: pa.input_assignment.len(),
            aux: pa.aux_assignment.len(),
            a_aux_density: pa.a_aux_density.total(),
            b_input_density: pa.b_input_density.total(),
            b_aux_density: pa.b_aux_density.total(),
            domain: pa.num_constraints().next_power_of_two(),
        }
    }
}

/// How many witness scalars are 0 or 1: what the split MSM saves (reported per run, from
/// the first partition).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WitnessStats {
    pub aux: usize,
    pub aux_zeros: usize,
    pub aux_ones: usize,
    /// The aux scalars B uses (its density), and how many of those are 0 or 1.
    pub b_aux: usize,
    pub b_aux_zeros: usize,
    pub b_aux_ones: usize,
}

impl WitnessStats {
    pub fn of(pa: &ProvingAssignment) -> Self {
        use rayon::prelude::*;
        let (zero, one) = (Fr::ZERO, Fr::ONE);
        let kind = |s: &Fr| ((*s == zero) as usize, (*s == one) as usize);
        let sum = |a: (usize, usize), b: (usize, usize)| (a.0 + b.0, a.1 + b.1);
        let (aux_zeros, aux_ones) = pa
            .aux_assignment
            .par_iter()
            .map(kind)
            .reduce(|| (0, 0), sum);
        let (b_aux_zeros, b_aux_ones) = pa
            .aux_assignment
            .par_iter()
            .enumerate()
            .filter(|(i, _)| pa.b_aux_density.get(*i))
            .map(|(_, s)| kind(s))
            .reduce(|| (0, 0), sum);
        Self {
            aux: pa.aux_assignment.len(),
            aux_zeros,
            aux_ones,
            b_aux: pa.b_aux_density.total(),
            b_aux_zeros,
            b_aux_ones,
        }
    }
}
