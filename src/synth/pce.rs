//! `--pce`: the pre-compiled constraint system. Every partition of a proof type has the
//! same R1CS; only the witness differs. So the matrices A, B, C (and the A/B densities) are
//! recorded once, during one full synthesis, and every other synthesis is witness-only
//! (`witness.rs`, about twice as fast: no linear combination is built) followed by the
//! sparse products A·w, B·w, C·w, parallel over rows. With `--pce-cache DIR` the recording
//! is kept on disk, so later runs never do a full synthesis.
//!
//! Matrices are CSR: per row, the terms' columns (an input index, or an aux index with
//! [`AUX`] set) and an index into a table of distinct coefficients (a handful: ±1, powers
//! of two, a few constants), 8 bytes per term.
//!
//! A recording that does not belong to the circuit cannot produce a valid proof; the
//! evaluation also checks a·b = c on every row, so a stale or damaged cache file fails
//! with a clear error instead of a proof that does not verify.

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
use super::{Density, ProvingAssignment};

/// Column flag of an aux variable (inputs have it clear).
pub const AUX: u32 = 1 << 31;

const MAGIC: &[u8; 8] = b"CUZKPCE1";

/// One sparse matrix, rows of (column, coefficient index) terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Csr {
    row_start: Vec<u64>,
    cols: Vec<u32>,
    coeffs: Vec<u32>,
}

impl Csr {
    fn new() -> Self {
        Self {
            row_start: vec![0],
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

/// Records the matrices while a [`ProvingAssignment`] synthesizes (it calls [`Self::row`]
/// from `enforce`).
#[derive(Clone, Debug)]
pub struct PceBuilder {
    a: Csr,
    b: Csr,
    c: Csr,
    coeffs: Vec<Fr>,
    index: HashMap<[u64; 4], u32>,
}

/// The Montgomery limbs of `c`: a hash key without the conversion `to_repr` does.
#[inline(always)]
fn limbs(c: &Fr) -> [u64; 4] {
    // SAFETY: blstrs' Scalar is #[repr(transparent)] over blst_fr, four u64 limbs (the FFI
    // to the CUDA kernels relies on the same layout).
    unsafe { *(c as *const Fr as *const [u64; 4]) }
}

impl Default for PceBuilder {
    fn default() -> Self {
        Self {
            a: Csr::new(),
            b: Csr::new(),
            c: Csr::new(),
            coeffs: vec![Fr::ONE],
            index: HashMap::from([(limbs(&Fr::ONE), 0)]),
        }
    }
}

impl PceBuilder {
    fn coeff(&mut self, c: &Fr) -> u32 {
        if *c == Fr::ONE {
            return 0;
        }
        let next = self.coeffs.len() as u32;
        *self.index.entry(limbs(c)).or_insert_with(|| {
            self.coeffs.push(*c);
            next
        })
    }

    fn push(m: &mut Csr, coeffs: &mut dyn FnMut(&Fr) -> u32, lc: &LinearCombination<Fr>) {
        for (&i, c) in lc.iter_inputs() {
            if !bool::from(c.is_zero()) {
                m.cols.push(i as u32);
                m.coeffs.push(coeffs(c));
            }
        }
        for (&i, c) in lc.iter_aux() {
            if !bool::from(c.is_zero()) {
                m.cols.push(i as u32 | AUX);
                m.coeffs.push(coeffs(c));
            }
        }
        m.row_start.push(m.cols.len() as u64);
    }

    /// Records one constraint (zero coefficients dropped, as the evaluation drops them).
    pub fn row(
        &mut self,
        a: &LinearCombination<Fr>,
        b: &LinearCombination<Fr>,
        c: &LinearCombination<Fr>,
    ) {
        let (mut ma, mut mb, mut mc) = (
            std::mem::take(&mut self.a),
            std::mem::take(&mut self.b),
            std::mem::take(&mut self.c),
        );
        let mut f = |x: &Fr| self.coeff(x);
        Self::push(&mut ma, &mut f, a);
        Self::push(&mut mb, &mut f, b);
        Self::push(&mut mc, &mut f, c);
        (self.a, self.b, self.c) = (ma, mb, mc);
    }

    /// The recording, with the shape and densities of the synthesis that made it.
    pub fn finish(self, pa: &ProvingAssignment) -> Result<Pce> {
        ensure!(
            pa.aux_assignment.len() < AUX as usize,
            "{} aux variables: too many to record",
            pa.aux_assignment.len()
        );
        ensure!(
            self.a.rows() == pa.num_constraints(),
            "the recording has {} rows for {} constraints",
            self.a.rows(),
            pa.num_constraints()
        );
        Ok(Pce {
            inputs: pa.input_assignment.len(),
            aux: pa.aux_assignment.len(),
            a: self.a,
            b: self.b,
            c: self.c,
            coeffs: self.coeffs,
            a_aux_density: pa.a_aux_density.clone(),
            b_input_density: pa.b_input_density.clone(),
            b_aux_density: pa.b_aux_density.clone(),
        })
    }
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
    pub fn coeff_table(&self) -> &[Fr] {
        &self.coeffs
    }

    /// Terms in A, B, C.
    pub fn nnz(&self) -> [usize; 3] {
        [self.a.cols.len(), self.b.cols.len(), self.c.cols.len()]
    }

    /// M·w for every row, in parallel.
    fn eval(&self, m: &Csr, inputs: &[Fr], aux: &[Fr]) -> Vec<Fr> {
        let mut out = vec![Fr::ZERO; m.rows()];
        out.par_chunks_mut(1 << 14)
            .enumerate()
            .for_each(|(k, chunk)| {
                let r0 = k << 14;
                for (j, o) in chunk.iter_mut().enumerate() {
                    let (s, e) = (
                        m.row_start[r0 + j] as usize,
                        m.row_start[r0 + j + 1] as usize,
                    );
                    let mut acc = Fr::ZERO;
                    for t in s..e {
                        let col = m.cols[t];
                        let v = if col & AUX != 0 {
                            &aux[(col & !AUX) as usize]
                        } else {
                            &inputs[col as usize]
                        };
                        if *v != Fr::ZERO {
                            acc += term(m.coeffs[t], &self.coeffs, v);
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
            let mut t = Csr {
                row_start: Vec::with_capacity(rows * k + 1),
                cols: Vec::with_capacity(m.cols.len() * k),
                coeffs: Vec::with_capacity(m.coeffs.len() * k),
            };
            t.row_start.push(0);
            for j in 0..k as u32 {
                let base = j as u64 * nnz;
                t.row_start
                    .extend(m.row_start[1..].iter().map(|&r| r + base));
                t.cols.extend(
                    m.cols
                        .iter()
                        .map(|&c| if c & AUX != 0 { c + j * aux } else { c }),
                );
                t.coeffs.extend_from_slice(&m.coeffs);
            }
            t
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
        let bad = a
            .par_iter()
            .zip(&b)
            .zip(&c)
            .position_first(|((a, b), c)| *a * b != *c);
        if let Some(row) = bad {
            bail!(
                "the witness does not satisfy the pre-compiled constraint system at row {row} \
                 of {} (a damaged or foreign --pce-cache file? delete it to record anew)",
                a.len()
            );
        }
        Ok([a, b, c])
    }

    /// `w` with this recording's densities, a, b, c empty.
    fn unevaluated(&self, w: Witness) -> ProvingAssignment {
        ProvingAssignment {
            input_assignment: w.inputs,
            aux_assignment: w.aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
            ..ProvingAssignment::default()
        }
    }

    /// The proving assignment of `w`: what a full synthesis of the same circuit gives.
    /// Fails if the witness does not fit the recording or does not satisfy it.
    pub fn assignment(&self, w: Witness) -> Result<ProvingAssignment> {
        let [a, b, c] = self.evaluations(&w.inputs, &w.aux)?;
        Ok(ProvingAssignment {
            a,
            b,
            c,
            ..self.unevaluated(w)
        })
    }

    /// The proving assignment of `w` with a, b, c left to the backend (`--pce-eval gpu`):
    /// [`Self::assignment`] without the evaluations, which `deferred` will give.
    pub fn deferred(self: &Arc<Self>, w: Witness) -> Result<ProvingAssignment> {
        self.check_witness(w.inputs.len(), w.aux.len())?;
        Ok(ProvingAssignment {
            deferred: Some(Arc::clone(self)),
            ..self.unevaluated(w)
        })
    }

    /// Writes the recording to `path` (through a temporary file, renamed at the end).
    pub fn save(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        let write = || -> Result<()> {
            let mut f = BufWriter::with_capacity(1 << 22, std::fs::File::create(&tmp)?);
            f.write_all(MAGIC)?;
            for x in [self.inputs, self.aux, self.constraints(), self.coeffs.len()] {
                f.write_all(&(x as u64).to_le_bytes())?;
            }
            for c in &self.coeffs {
                f.write_all(&c.to_repr())?;
            }
            for d in [
                &self.a_aux_density,
                &self.b_input_density,
                &self.b_aux_density,
            ] {
                f.write_all(&(d.len() as u64).to_le_bytes())?;
                write_all(&mut f, d.words())?;
            }
            for m in [&self.a, &self.b, &self.c] {
                f.write_all(&(m.cols.len() as u64).to_le_bytes())?;
                write_all(&mut f, &m.row_start)?;
                write_all(&mut f, &m.cols)?;
                write_all(&mut f, &m.coeffs)?;
            }
            f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&tmp, path)?;
            Ok(())
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            e.context(format!("cannot write {}", path.display()))
        })
    }

    /// Reads a recording written by [`Self::save`]. The file is memory-mapped and each
    /// array decoded by all threads of the current pool (a 32GiB recording is 9 GB: read
    /// through one buffer it took 10.5 s on the H200 host, the whole run's first critical
    /// step once witnesses became fast; docs/PERF.md, session 20).
    pub fn load(path: &Path) -> Result<Self> {
        let read = || -> Result<Self> {
            let file = std::fs::File::open(path)?;
            // SAFETY: the cache file is only ever replaced by a rename, never written in
            // place, so the mapping does not change under us; every read below is bounds
            // checked against the mapping's length.
            let map = unsafe { memmap2::Mmap::map(&file)? };
            let size = map.len() as u64;
            // Every count read below is held against the file's size before anything of
            // that size is allocated: a damaged header gives an error, not an abort.
            let fits = |count: u64, bytes_each: u64| {
                count.checked_mul(bytes_each).is_some_and(|b| b <= size)
            };
            let mut f = Cursor(&map[..]);
            ensure!(
                f.take(8)? == MAGIC,
                "not a cuzk-prove PCE file (or another version)"
            );
            let h: Vec<u64> = f.array(4)?;
            let (inputs, aux, rows, ncoeffs) = (h[0], h[1], h[2], h[3]);
            ensure!(
                aux < AUX as u64
                    && inputs < AUX as u64
                    && fits(ncoeffs, 32)
                    && fits(rows.saturating_add(1), 24),
                "implausible header"
            );
            let coeffs = f
                .take(ncoeffs as usize * 32)?
                .chunks_exact(32)
                .map(|b| {
                    let c: Option<Fr> = Fr::from_repr(b.try_into().expect("32 bytes")).into();
                    c.context("a coefficient is not a field element")
                })
                .collect::<Result<Vec<_>>>()?;
            let mut densities = Vec::new();
            for _ in 0..3 {
                let len = f.u64()? as usize;
                ensure!(
                    len <= aux.max(inputs) as usize && fits(len as u64, 1),
                    "implausible density length"
                );
                let words = f.array(len.div_ceil(64))?;
                densities.push(Density::from_words(words, len)?);
            }
            let mut mats = Vec::new();
            for _ in 0..3 {
                let nnz = f.u64()? as usize;
                ensure!(fits(nnz as u64, 8), "implausible term count");
                let row_start: Vec<u64> = f.array(rows as usize + 1)?;
                let cols: Vec<u32> = f.array(nnz)?;
                let cidx: Vec<u32> = f.array(nnz)?;
                ensure!(
                    row_start[0] == 0
                        && row_start.par_windows(2).all(|w| w[0] <= w[1])
                        && row_start[rows as usize] == nnz as u64,
                    "row offsets out of order"
                );
                ensure!(
                    cols.par_iter().all(|&c| if c & AUX != 0 {
                        ((c & !AUX) as u64) < aux
                    } else {
                        (c as u64) < inputs
                    }),
                    "a column is out of range"
                );
                ensure!(
                    cidx.par_iter().all(|&c| (c as u64) < ncoeffs),
                    "a coefficient index is out of range"
                );
                mats.push(Csr {
                    row_start,
                    cols,
                    coeffs: cidx,
                });
            }
            ensure!(f.0.is_empty(), "trailing bytes");
            let (c, b, a) = (
                mats.pop().unwrap(),
                mats.pop().unwrap(),
                mats.pop().unwrap(),
            );
            let (b_aux, b_in, a_aux) = (
                densities.pop().unwrap(),
                densities.pop().unwrap(),
                densities.pop().unwrap(),
            );
            ensure!(
                a_aux.len() == aux as usize
                    && b_aux.len() == aux as usize
                    && b_in.len() == inputs as usize,
                "density lengths do not match the variable counts"
            );
            Ok(Self {
                inputs: inputs as usize,
                aux: aux as usize,
                a,
                b,
                c,
                coeffs,
                a_aux_density: a_aux,
                b_input_density: b_in,
                b_aux_density: b_aux,
            })
        };
        read().with_context(|| {
            format!(
                "pre-compiled constraint system {} is unreadable (delete it to record anew)",
                path.display()
            )
        })
    }
}

/// Fills the a, b, c of an assignment whose evaluations were deferred (a backend without an
/// evaluation of its own, e.g. the CUDA backend's CPU fallback); others are left as they are.
pub fn evaluate_deferred(pa: &mut ProvingAssignment) -> Result<()> {
    if let Some(p) = pa.deferred.take() {
        [pa.a, pa.b, pa.c] = p.evaluations(&pa.input_assignment, &pa.aux_assignment)?;
    }
    Ok(())
}

/// Fixed-width little-endian integers, for the file's arrays.
trait Le: Copy {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! le {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
        }
    )*};
}
le!(u32, u64);

const ARRAY_CHUNK: usize = 1 << 16;

fn write_all<T: Le>(f: &mut impl Write, v: &[T]) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(ARRAY_CHUNK * T::SIZE);
    for chunk in v.chunks(ARRAY_CHUNK) {
        bytes.clear();
        chunk.iter().for_each(|x| x.put(&mut bytes));
        f.write_all(&bytes)?;
    }
    Ok(())
}

/// The unread rest of a mapped recording.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        ensure!(n <= self.0.len(), "the file ends early");
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::get(self.take(8)?))
    }

    /// `n` little-endian values, decoded in parallel straight into the vector.
    fn array<T: Le + Send>(&mut self, n: usize) -> Result<Vec<T>> {
        let bytes = self.take(n.checked_mul(T::SIZE).context("implausible length")?)?;
        let mut out = Vec::with_capacity(n);
        out.par_extend(bytes.par_chunks_exact(T::SIZE).map(T::get));
        Ok(out)
    }
}

/// A full synthesis that also records the constraint system.
struct Recording {
    pa: ProvingAssignment,
    rec: PceBuilder,
}

impl bellperson::ConstraintSystem<Fr> for Recording {
    type Root = Self;

    fn new() -> Self {
        Self {
            pa: ProvingAssignment::default(),
            rec: PceBuilder::default(),
        }
    }

    fn alloc<F, A, AR>(
        &mut self,
        a: A,
        f: F,
    ) -> Result<bellperson::Variable, bellperson::SynthesisError>
    where
        F: FnOnce() -> Result<Fr, bellperson::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.pa.alloc(a, f)
    }

    fn alloc_input<F, A, AR>(
        &mut self,
        a: A,
        f: F,
    ) -> Result<bellperson::Variable, bellperson::SynthesisError>
    where
        F: FnOnce() -> Result<Fr, bellperson::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.pa.alloc_input(a, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let (a, b, c) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        self.rec.row(&a, &b, &c);
        self.pa.enforce_lcs(&a, &b, &c);
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
}

/// Synthesizes `circuit` as [`super::synthesize`] does and records its constraint system.
pub fn synthesize_recording<C: bellperson::Circuit<Fr>>(
    circuit: C,
) -> Result<(ProvingAssignment, Pce)> {
    use bellperson::ConstraintSystem;
    let mut cs = Recording::new();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit
        .synthesize(&mut cs)
        .context("circuit synthesis failed")?;
    for i in 0..cs.pa.input_assignment.len() {
        let (a, zero) = ProvingAssignment::input_constraint(i);
        cs.rec.row(&a, &zero, &zero);
        cs.pa.enforce_lcs(&a, &zero, &zero);
    }
    let pce = cs.rec.finish(&cs.pa)?;
    Ok((cs.pa, pce))
}
