//! `--pce` (default on): the pre-compiled constraint system. Every partition of a proof
//! type has the same R1CS; only the witness differs. So the matrices A, B, C (and the A/B
//! densities) are recorded once — the circuit's challenge blocks recorded in parallel and
//! joined (`record.rs`, `join.rs`) — and every synthesis is witness-only (`witness.rs`:
//! no linear combination is built) followed by the sparse products A·w, B·w, C·w,
//! parallel over rows, here or on the GPU. The recording is kept on disk (`file.rs`; where:
//! `pipeline/pce_cache.rs`), so later runs never record.
//!
//! Matrices are CSR: per row, the terms' columns (an input index, or an aux index with
//! [`AUX`] set) and an index into a table of distinct coefficients (a handful: ±1, powers
//! of two, a few constants), 8 bytes per term.
//!
//! A recording that does not belong to the circuit cannot produce a valid proof: its file
//! carries the identity of its circuit and parameters and a digest of its bytes, both
//! checked before it is used (`file.rs`); the evaluation also checks a·b = c on every
//! row, so a wrong recording fails with a clear error instead of a proof that does not
//! verify.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, ensure, Context, Result};
use bellperson::LinearCombination;
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::witness::Witness;
use super::{Abc, Density, ProvingAssignment};

mod array;
mod file;
mod join;
mod record;

use array::Array;

pub use file::{Identity, Saved, Section};
pub(crate) use join::join_blocks;
pub(crate) use record::record_block;
pub use record::{synthesize_recording, Block};

/// Column flag of an aux variable (inputs have it clear).
pub(crate) const AUX: u32 = 1 << 31;

/// One sparse matrix, rows of (column, coefficient index) terms: vectors while recorded
/// or joined, the file's own bytes once loaded (`array.rs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Csr {
    row_start: Array<u64>,
    cols: Array<u32>,
    coeffs: Array<u32>,
}

impl Csr {
    fn new() -> Self {
        Self {
            row_start: vec![0].into(),
            ..Self::default()
        }
    }

    fn rows(&self) -> usize {
        self.row_start.len() - 1
    }
}

/// The recorded constraint system of one circuit shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Pce {
    pub inputs: usize,
    pub aux: usize,
    a: Csr,
    b: Csr,
    c: Csr,
    coeffs: Vec<Fr>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

/// coeff · value for a non-zero value, without a multiplication for coefficient 1 or
/// value 1 (the witness is mostly bits; see assignment.rs).
#[inline(always)]
fn term(coeff_idx: u32, coeffs: &[Fr], value: &Fr) -> Fr {
    if coeff_idx == 0 {
        *value
    } else if *value == Fr::ONE {
        coeffs[coeff_idx as usize]
    } else {
        *value * coeffs[coeff_idx as usize]
    }
}

impl Pce {
    pub fn constraints(&self) -> usize {
        self.a.rows()
    }

    /// A, B and C as CSR arrays (row offsets, columns with [`AUX`] marking aux variables,
    /// coefficient indices), for an evaluation elsewhere (the GPU's, `--pce-eval gpu`).
    pub fn matrices(&self) -> [(&[u64], &[u32], &[u32]); 3] {
        [&self.a, &self.b, &self.c].map(|m| (&m.row_start[..], &m.cols[..], &m.coeffs[..]))
    }

    /// The distinct coefficients the matrices index (entry 0 is 1).
    pub(crate) fn coeff_table(&self) -> &[Fr] {
        &self.coeffs
    }

    /// Fails, in one line, if a loaded recording's file was written in place since its
    /// check (by something else: cuzk-prove replaces it only by a rename): the values
    /// read from it since may not be the checked ones (`array.rs`).
    pub fn unchanged(&self) -> Result<()> {
        match self.a.row_start.file() {
            Some(f) => f.unchanged(),
            None => Ok(()),
        }
    }

    /// Drops a loaded recording's mapped pages from this process's resident memory once
    /// the matrices have been copied elsewhere (the GPU's); they stay in the page cache,
    /// so a later read (a retry on the host) costs page faults, not disk reads. Nothing
    /// for a recording in vectors of its own.
    pub fn release_pages(&self) {
        // A loaded recording's arrays all lie in its one file.
        if let Some(f) = self.a.row_start.file() {
            f.release_pages();
        }
    }

    /// Whether the arrays lie in a saved recording's file mapping (a loaded recording),
    /// rather than in vectors of their own (one just recorded).
    pub fn mapped(&self) -> bool {
        self.a.row_start.file().is_some()
    }

    /// Terms in A, B, C.
    pub fn nnz(&self) -> [usize; 3] {
        [self.a.cols.len(), self.b.cols.len(), self.c.cols.len()]
    }

    /// M·w for every row, in parallel.
    fn eval(&self, m: &Csr, inputs: &[Fr], aux: &[Fr]) -> Vec<Fr> {
        let mut out = vec![Fr::ZERO; m.rows()];
        let (row_start, cols, coeffs) = (&m.row_start[..], &m.cols[..], &m.coeffs[..]);
        out.par_chunks_mut(1 << 14)
            .enumerate()
            .for_each(|(k, chunk)| {
                let r0 = k << 14;
                for (j, o) in chunk.iter_mut().enumerate() {
                    let (s, e) = (row_start[r0 + j] as usize, row_start[r0 + j + 1] as usize);
                    let mut acc = Fr::ZERO;
                    for t in s..e {
                        let col = cols[t];
                        let v = if col & AUX != 0 {
                            &aux[(col & !AUX) as usize]
                        } else {
                            &inputs[col as usize]
                        };
                        if *v != Fr::ZERO {
                            acc += term(coeffs[t], &self.coeffs, v);
                        }
                    }
                    *o = acc;
                }
            });
        out
    }

    /// Fails unless `w` has this recording's numbers of inputs and aux variables.
    fn check_witness(&self, inputs: usize, aux: usize) -> Result<()> {
        ensure!(
            inputs == self.inputs && aux == self.aux,
            "the pre-compiled constraint system is for {} inputs and {} aux variables, the \
             circuit has {inputs} and {aux} (a cache file for another circuit?)",
            self.inputs,
            self.aux,
        );
        Ok(())
    }

    /// `k` copies of this system side by side, sharing the inputs; copy j's aux variables
    /// are j·aux.. (j + 1)·aux. For benchmarks: a recording of one small circuit tiled to
    /// the 32GiB partition's size keeps the circuit's own rows, terms and coefficients.
    #[doc(hidden)]
    pub fn tiled(&self, k: usize) -> Result<Self> {
        ensure!(
            k >= 1 && self.aux.saturating_mul(k) < AUX as usize,
            "{k} copies of {} aux variables do not fit a recording",
            self.aux
        );
        let aux = self.aux as u32;
        let tile = |m: &Csr| {
            let (rows, nnz) = (m.rows(), m.cols.len() as u64);
            let mut row_start = Vec::with_capacity(rows * k + 1);
            let mut cols = Vec::with_capacity(m.cols.len() * k);
            let mut coeffs = Vec::with_capacity(m.coeffs.len() * k);
            row_start.push(0);
            for j in 0..k as u32 {
                let base = j as u64 * nnz;
                row_start.extend(m.row_start[1..].iter().map(|&r| r + base));
                cols.extend(
                    m.cols
                        .iter()
                        .map(|&c| if c & AUX != 0 { c + j * aux } else { c }),
                );
                coeffs.extend_from_slice(&m.coeffs);
            }
            Csr {
                row_start: row_start.into(),
                cols: cols.into(),
                coeffs: coeffs.into(),
            }
        };
        let repeat = |d: &Density| {
            let mut r = Density::with_capacity(d.len() * k);
            for j in 0..k {
                for i in 0..d.len() {
                    r.add_element();
                    if d.get(i) {
                        r.inc(j * d.len() + i);
                    }
                }
            }
            r
        };
        Ok(Self {
            inputs: self.inputs,
            aux: self.aux * k,
            a: tile(&self.a),
            b: tile(&self.b),
            c: tile(&self.c),
            coeffs: self.coeffs.clone(),
            a_aux_density: repeat(&self.a_aux_density),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: repeat(&self.b_aux_density),
        })
    }

    /// A·w, B·w, C·w on the host cores, checked: a·b = c on every row.
    pub fn evaluations(&self, inputs: &[Fr], aux: &[Fr]) -> Result<[Vec<Fr>; 3]> {
        self.check_witness(inputs.len(), aux.len())?;
        let ((a, b), c) = rayon::join(
            || {
                rayon::join(
                    || self.eval(&self.a, inputs, aux),
                    || self.eval(&self.b, inputs, aux),
                )
            },
            || self.eval(&self.c, inputs, aux),
        );
        self.unchanged()?;
        let bad = a
            .par_iter()
            .zip(&b)
            .zip(&c)
            .position_first(|((a, b), c)| *a * b != *c);
        if let Some(row) = bad {
            bail!(
                "the C1's witness does not satisfy constraint {row} of {} of the recorded \
                 circuit: the C1 is inconsistent in a way its check before synthesis does not \
                 see, or the recording is not this circuit's",
                a.len()
            );
        }
        Ok([a, b, c])
    }

    /// `w` with this recording's densities and `abc`.
    fn with_witness(&self, w: Witness, abc: Abc) -> ProvingAssignment {
        ProvingAssignment {
            abc,
            input_assignment: w.inputs,
            aux_assignment: w.aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        }
    }

    /// The proving assignment of `w`: what a full synthesis of the same circuit gives.
    /// Fails if the witness does not fit the recording or does not satisfy it.
    pub fn assignment(&self, w: Witness) -> Result<ProvingAssignment> {
        let [a, b, c] = self.evaluations(&w.inputs, &w.aux)?;
        Ok(self.with_witness(w, Abc::Evaluated { a, b, c }))
    }

    /// The proving assignment of `w` with a, b, c left to the backend (`--pce-eval gpu`):
    /// [`Self::assignment`] without the evaluations, which the backend makes from this
    /// recording ([`Abc::Deferred`]).
    pub fn deferred(self: &Arc<Self>, w: Witness) -> Result<ProvingAssignment> {
        self.check_witness(w.inputs.len(), w.aux.len())?;
        Ok(self.with_witness(w, Abc::Deferred(Arc::clone(self))))
    }
}

/// A small whole-circuit block, for other modules' tests.
#[cfg(test)]
pub(crate) fn tests_support_tiny_block() -> Block {
    record::tests_support::tiny_block()
}
