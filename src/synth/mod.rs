//! Synthesis: partition circuits → [`ProvingAssignment`]s, in parallel with rayon.

mod assignment;
pub mod presize;

pub use assignment::{Density, ProvingAssignment, SizeHint};

use anyhow::{Context, Result};
use bellperson::{Circuit, ConstraintSystem};
use blstrs::Scalar as Fr;
use ff::Field;

/// Synthesizes one circuit exactly as bellperson's prover does: the constant ONE input
/// first, then the circuit, then one `input × 0 = 0` constraint per input.
pub fn synthesize<C: Circuit<Fr>>(circuit: C, hint: Option<SizeHint>) -> Result<ProvingAssignment> {
    let mut cs = hint.map(ProvingAssignment::with_hint).unwrap_or_default();
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
