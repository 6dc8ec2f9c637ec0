//! Witness-only synthesis: the circuit runs for its variable values alone. `enforce` does
//! nothing (its linear-combination closures are never called, so none is built), and the
//! constraint system says it is a witness generator, so gadgets that have a native path
//! for that (neptune's Poseidon) compute their values directly instead of gate by gate.
//! The values and their order are those of a full synthesis (tests/pce.rs checks it on
//! the real circuits): with a pre-compiled constraint system (`pce`), they are all the
//! prover needs.

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;

/// The variable values of one circuit: inputs (ONE first) and aux.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Witness {
    pub inputs: Vec<Fr>,
    pub aux: Vec<Fr>,
}

impl ConstraintSystem<Fr> for Witness {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Fr]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Fr]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Fr], &mut [Fr]) {
        let (a, i) = (self.aux.len(), self.inputs.len());
        self.aux.resize(a + aux_n, Fr::from(0u64));
        self.inputs.resize(i + inputs_n, Fr::from(0u64));
        (&mut self.aux[a..], &mut self.inputs[i..])
    }

    fn inputs_slice(&self) -> &[Fr] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Fr] {
        &self.aux
    }
}

impl Witness {
    /// An empty witness but for the constant ONE input, as [`super::synthesize`] starts;
    /// its aux values go to `buffer` (cleared: only its memory is reused).
    pub(crate) fn starting_in(mut buffer: Vec<Fr>) -> Self {
        buffer.clear();
        Self {
            inputs: vec![Fr::from(1u64)],
            aux: buffer,
        }
    }
}

/// The witness of `circuit`, with the constant ONE input first as in [`super::synthesize`].
pub fn witness<C: bellperson::Circuit<Fr>>(circuit: C) -> anyhow::Result<Witness> {
    witness_in(circuit, Vec::new())
}

/// [`witness`], its aux values written into `buffer`'s memory.
pub(crate) fn witness_in<C: bellperson::Circuit<Fr>>(
    circuit: C,
    buffer: Vec<Fr>,
) -> anyhow::Result<Witness> {
    use anyhow::Context;
    let mut cs = Witness::starting_in(buffer);
    circuit
        .synthesize(&mut cs)
        .context("witness generation failed")?;
    Ok(cs)
}
