//! The proving assignment: what synthesis hands to every prover backend.
//!
//! Semantics follow bellperson 0.27's private `ProvingAssignment` exactly, so a proof made
//! from this type with given r, s is bit-identical to bellperson's:
//! - `alloc` pushes an aux value and grows both aux density trackers;
//! - `alloc_input` pushes an input value and grows the B input tracker;
//! - `enforce` evaluates the three linear combinations at the current assignment; a term
//!   with a non-zero coefficient marks its variable in the A (aux only: inputs are dense
//!   in A) and B (inputs and aux) trackers; C marks nothing (its query is dense).

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

/// A growable bit set that counts its set bits: which variables a query touches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    total: usize,
}

/// An empty vector with room for `n` elements, or an error naming the bytes.
fn reserved<T>(n: usize) -> anyhow::Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        anyhow::anyhow!(
            "cannot reserve {} bytes for --presize",
            n.saturating_mul(std::mem::size_of::<T>())
        )
    })?;
    Ok(v)
}

impl Density {
    pub fn with_capacity(bits: usize) -> Self {
        Self {
            words: Vec::with_capacity(bits.div_ceil(64)),
            len: 0,
            total: 0,
        }
    }

    /// Appends one variable, not (yet) in the query.
    #[inline]
    pub(crate) fn add_element(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Marks variable `i` as used by the query.
    #[inline]
    pub(crate) fn inc(&mut self, i: usize) {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        if self.words[w] & b == 0 {
            self.words[w] |= b;
            self.total += 1;
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.words[i / 64] & (1u64 << (i % 64)) != 0
    }

    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of variables in the query.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The raw words, bit `i % 64` of word `i / 64` set when variable `i` is used.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The values of the variables in the query, in order (the SRS holds points only for
    /// those). Chunks of words are counted, then filled in parallel into an output of
    /// exactly `total` values: a filtered parallel collect of 130 M values took seconds.
    pub fn select<T: Copy + Default + Send + Sync>(&self, values: &[T]) -> Vec<T> {
        use rayon::prelude::*;
        assert_eq!(values.len(), self.len, "density length mismatch");
        const WORDS: usize = 1 << 12; // 2^18 values per task
        let counts: Vec<usize> = self
            .words
            .par_chunks(WORDS)
            .map(|c| c.iter().map(|w| w.count_ones() as usize).sum())
            .collect();
        let mut out = vec![T::default(); self.total];
        let mut parts = Vec::with_capacity(counts.len());
        let mut rest = out.as_mut_slice();
        for &n in &counts {
            let (head, tail) = rest.split_at_mut(n);
            parts.push(head);
            rest = tail;
        }
        parts
            .into_par_iter()
            .zip(self.words.par_chunks(WORDS))
            .enumerate()
            .for_each(|(k, (dst, words))| {
                let mut j = 0;
                for (w, &bits) in words.iter().enumerate() {
                    let base = (k * WORDS + w) * 64;
                    let mut b = bits;
                    while b != 0 {
                        dst[j] = values[base + b.trailing_zeros() as usize];
                        j += 1;
                        b &= b - 1;
                    }
                }
            });
        out
    }

    /// The set of `len` variables whose bits `words` holds (as [`Self::words`] gives them).
    pub fn from_words(words: Vec<u64>, len: usize) -> anyhow::Result<Self> {
        anyhow::ensure!(
            words.len() == len.div_ceil(64),
            "{} density words for {len} variables",
            words.len()
        );
        if !len.is_multiple_of(64) {
            anyhow::ensure!(
                words[len / 64] >> (len % 64) == 0,
                "density bits beyond the last variable"
            );
        }
        let total = words.iter().map(|w| w.count_ones() as usize).sum();
        Ok(Self { words, len, total })
    }
}

/// Capacities to reserve up front (see `--presize`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SizeHint {
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
}

/// A·w, B·w, C·w of one partition: one value per constraint, the input constraints
/// included. What synthesis hands the prover, stated by the variant instead of by empty
/// vectors beside a recording.
#[derive(Clone, Debug, PartialEq)]
pub enum Abc {
    /// Evaluated on the host: during synthesis, or from the recording at the witness.
    Evaluated { a: Vec<Fr>, b: Vec<Fr>, c: Vec<Fr> },
    /// Left to the backend (`--pce-eval gpu`): this recording, evaluated at the
    /// assignment's witness on the GPU ([`ProvingAssignment::evaluate_on_host`] where the
    /// backend has no evaluation of its own).
    Deferred(std::sync::Arc<super::pce::Pce>),
}

impl Default for Abc {
    fn default() -> Self {
        Self::Evaluated {
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
        }
    }
}

impl Abc {
    /// a, b, c when evaluated.
    pub fn evaluated(&self) -> Option<[&[Fr]; 3]> {
        match self {
            Self::Evaluated { a, b, c } => Some([a, b, c]),
            Self::Deferred(_) => None,
        }
    }

    pub fn constraints(&self) -> usize {
        match self {
            Self::Evaluated { a, .. } => a.len(),
            Self::Deferred(pce) => pce.constraints(),
        }
    }
}

/// One synthesized partition circuit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProvingAssignment {
    pub abc: Abc,
    /// `input_assignment[0]` is the constant ONE.
    pub input_assignment: Vec<Fr>,
    pub aux_assignment: Vec<Fr>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
}

impl ProvingAssignment {
    /// An empty assignment with room for `hint`'s counts; an error (not an abort) when the
    /// memory cannot be reserved.
    pub fn with_hint(hint: SizeHint) -> anyhow::Result<Self> {
        let n = hint.constraints;
        let mut pa = Self {
            abc: Abc::Evaluated {
                a: reserved(n)?,
                b: reserved(n)?,
                c: reserved(n)?,
            },
            input_assignment: reserved(hint.inputs)?,
            aux_assignment: reserved(hint.aux)?,
            ..Self::default()
        };
        for (d, bits) in [
            (&mut pa.a_aux_density, hint.aux),
            (&mut pa.b_input_density, hint.inputs),
            (&mut pa.b_aux_density, hint.aux),
        ] {
            d.words = reserved(bits.div_ceil(64))?;
        }
        Ok(pa)
    }

    pub fn num_constraints(&self) -> usize {
        self.abc.constraints()
    }

    /// Evaluates a deferred assignment's a, b, c on the host (a backend without an
    /// evaluation of its own, e.g. the CUDA backend's CPU fallback); an evaluated one is
    /// left as it is.
    pub fn evaluate_on_host(&mut self) -> anyhow::Result<()> {
        if let Abc::Deferred(pce) = &self.abc {
            let [a, b, c] = pce.evaluations(&self.input_assignment, &self.aux_assignment)?;
            self.abc = Abc::Evaluated { a, b, c };
        }
        Ok(())
    }

    /// a, b, c moved out (evaluated on the host first if deferred); the assignment keeps
    /// empty evaluations.
    pub(crate) fn take_evaluations(&mut self) -> anyhow::Result<[Vec<Fr>; 3]> {
        self.evaluate_on_host()?;
        match std::mem::take(&mut self.abc) {
            Abc::Evaluated { a, b, c } => Ok([a, b, c]),
            Abc::Deferred(_) => anyhow::bail!("a deferred assignment left unevaluated"),
        }
    }

    /// Appends one constraint: evaluates its linear combinations, marks the densities.
    pub(crate) fn enforce_lcs(
        &mut self,
        a: &LinearCombination<Fr>,
        b: &LinearCombination<Fr>,
        c: &LinearCombination<Fr>,
    ) {
        let (inputs, aux) = (&self.input_assignment, &self.aux_assignment);
        let a = eval(a, None, Some(&mut self.a_aux_density), inputs, aux);
        let b = eval(
            b,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            inputs,
            aux,
        );
        let c = eval(c, None, None, inputs, aux);
        match &mut self.abc {
            Abc::Evaluated {
                a: va,
                b: vb,
                c: vc,
            } => {
                va.push(a);
                vb.push(b);
                vc.push(c);
            }
            // Only `Pce::deferred` makes one, from a witness: nothing synthesizes into it.
            Abc::Deferred(_) => unreachable!("a constraint enforced on a deferred assignment"),
        }
    }

    /// Appends the constraint `input_i * 0 = 0` for every input, as bellperson's prover
    /// does after synthesis: it makes the inputs linearly independent in A.
    pub(crate) fn enforce_input_constraints(&mut self) {
        for i in 0..self.input_assignment.len() {
            let (a, zero) = Self::input_constraint(i);
            self.enforce_lcs(&a, &zero, &zero);
        }
    }

    /// The linear combinations of input `i`'s constraint: A = input_i, B = C = 0.
    pub(crate) fn input_constraint(i: usize) -> (LinearCombination<Fr>, LinearCombination<Fr>) {
        (
            LinearCombination::zero() + Variable::new_unchecked(Index::Input(i)),
            LinearCombination::zero(),
        )
    }
}

/// coeff · value, without a field multiplication in the common cases: the witness is
/// mostly bits and most coefficients are 1.
#[inline(always)]
fn term(coeff: &Fr, value: &Fr) -> Fr {
    if *coeff == Fr::ONE || *value == Fr::ZERO {
        *value
    } else if *value == Fr::ONE {
        *coeff
    } else {
        *value * coeff
    }
}

#[inline]
fn eval(
    lc: &LinearCombination<Fr>,
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
    inputs: &[Fr],
    aux: &[Fr],
) -> Fr {
    let mut acc = Fr::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += term(coeff, &inputs[i]);
        if let Some(d) = input_density.as_deref_mut() {
            d.inc(i);
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += term(coeff, &aux[i]);
        if let Some(d) = aux_density.as_deref_mut() {
            d.inc(i);
        }
    }
    acc
}

impl ConstraintSystem<Fr> for ProvingAssignment {
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
        self.aux_assignment.push(f()?);
        self.a_aux_density.add_element();
        self.b_aux_density.add_element();
        Ok(Variable::new_unchecked(Index::Aux(
            self.aux_assignment.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.add_element();
        Ok(Variable::new_unchecked(Index::Input(
            self.input_assignment.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.enforce_lcs(
            &a(LinearCombination::zero()),
            &b(LinearCombination::zero()),
            &c(LinearCombination::zero()),
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_keeps_the_values_of_set_bits_in_order() {
        // Sizes around the parallel chunk (2^18 values) and the word (64), bits from an LCG.
        for n in [
            0usize,
            1,
            63,
            64,
            65,
            (1 << 18) - 1,
            1 << 18,
            (1 << 18) + 70,
            600_001,
        ] {
            let mut x = n as u64 ^ 0x9e37_79b9_7f4a_7c15;
            let words: Vec<u64> = (0..n.div_ceil(64))
                .map(|w| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let keep = if (w + 1) * 64 > n {
                        (1u64 << (n % 64)).wrapping_sub(1)
                    } else {
                        !0
                    };
                    if n % 64 == 0 {
                        x
                    } else {
                        x & keep
                    }
                })
                .collect();
            let d = Density::from_words(words, n).unwrap();
            let values: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
            let want: Vec<u64> = (0..n).filter(|&i| d.get(i)).map(|i| values[i]).collect();
            assert_eq!(d.select(&values), want, "n = {n}");
        }
    }

    #[test]
    fn density_counts_each_variable_once() {
        let mut d = Density::default();
        for _ in 0..130 {
            d.add_element();
        }
        d.inc(3);
        d.inc(3);
        d.inc(129);
        assert_eq!((d.len(), d.total()), (130, 2));
        assert!(d.get(3) && d.get(129) && !d.get(4));
    }

    #[test]
    fn enforce_tracks_densities_like_bellperson() {
        let mut cs = ProvingAssignment::default();
        let one = cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
        let x = cs.alloc(|| "x", || Ok(Fr::from(3u64))).unwrap();
        let y = cs.alloc(|| "y", || Ok(Fr::from(4u64))).unwrap();
        let z = cs.alloc(|| "z", || Ok(Fr::from(12u64))).unwrap();
        // A term with a zero coefficient marks nothing.
        cs.enforce(
            || "x*y=z",
            |lc| lc + x + (Fr::ZERO, y),
            |lc| lc + y + one,
            |lc| lc + z,
        );
        cs.enforce_input_constraints();
        let [a, b, c] = cs.abc.evaluated().unwrap();
        assert_eq!(a, [Fr::from(3u64), Fr::ONE]);
        assert_eq!(b, [Fr::from(5u64), Fr::ZERO]);
        assert_eq!(c, [Fr::from(12u64), Fr::ZERO]);
        assert_eq!(cs.a_aux_density.total(), 1);
        assert!(cs.a_aux_density.get(0) && !cs.a_aux_density.get(1));
        assert_eq!(cs.b_aux_density.total(), 1);
        assert!(cs.b_aux_density.get(1));
        assert_eq!(cs.b_input_density.total(), 1);
    }
}
