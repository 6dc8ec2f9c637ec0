//! Recording the constraint system: serially, during one full synthesis (the reference),
//! or block by block — the circuit's challenges recorded independently, to be joined at
//! their variable offsets by `join.rs`.

use super::*;

/// Records the matrices while a [`ProvingAssignment`] synthesizes (it calls [`Self::row`]
/// from `enforce`).
#[derive(Clone, Debug)]
pub(crate) struct PceBuilder {
    a: Csr,
    b: Csr,
    c: Csr,
    coeffs: Vec<Fr>,
    index: HashMap<[u64; 4], u32>,
}

/// The Montgomery limbs of `c`: a hash key without the conversion `to_repr` does.
#[inline(always)]
pub(super) fn limbs(c: &Fr) -> [u64; 4] {
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

/// What a recording synthesis does besides recording the rows: the serial reference keeps
/// the whole assignment ([`ProvingAssignment`]), a block's recording only counts the
/// variables ([`Counts`]: its matrices are all it costs).
trait Sink: Default + Send {
    fn alloc(&mut self, value: Fr) -> Result<bellperson::Variable, bellperson::SynthesisError>;
    fn alloc_input(
        &mut self,
        value: Fr,
    ) -> Result<bellperson::Variable, bellperson::SynthesisError>;
    fn row(
        &mut self,
        a: &LinearCombination<Fr>,
        b: &LinearCombination<Fr>,
        c: &LinearCombination<Fr>,
    );
}

impl Sink for ProvingAssignment {
    fn alloc(&mut self, value: Fr) -> Result<bellperson::Variable, bellperson::SynthesisError> {
        bellperson::ConstraintSystem::alloc(self, || "", || Ok(value))
    }

    fn alloc_input(
        &mut self,
        value: Fr,
    ) -> Result<bellperson::Variable, bellperson::SynthesisError> {
        bellperson::ConstraintSystem::alloc_input(self, || "", || Ok(value))
    }

    fn row(
        &mut self,
        a: &LinearCombination<Fr>,
        b: &LinearCombination<Fr>,
        c: &LinearCombination<Fr>,
    ) {
        self.enforce_lcs(a, b, c);
    }
}

/// The variables of a block, counted.
#[derive(Default)]
struct Counts {
    inputs: usize,
    aux: usize,
}

impl Sink for Counts {
    fn alloc(&mut self, _: Fr) -> Result<bellperson::Variable, bellperson::SynthesisError> {
        self.aux += 1;
        Ok(bellperson::Variable::new_unchecked(bellperson::Index::Aux(
            self.aux - 1,
        )))
    }

    fn alloc_input(&mut self, _: Fr) -> Result<bellperson::Variable, bellperson::SynthesisError> {
        self.inputs += 1;
        Ok(bellperson::Variable::new_unchecked(
            bellperson::Index::Input(self.inputs - 1),
        ))
    }

    fn row(
        &mut self,
        _: &LinearCombination<Fr>,
        _: &LinearCombination<Fr>,
        _: &LinearCombination<Fr>,
    ) {
    }
}

/// A synthesis that records the constraint system as it goes. Each value is computed
/// (gadgets may read it back) and handed to the sink. Not a witness generator, so every
/// gadget enforces its constraints.
struct Recording<S> {
    sink: S,
    rec: PceBuilder,
}

impl<S: Sink> bellperson::ConstraintSystem<Fr> for Recording<S> {
    type Root = Self;

    fn new() -> Self {
        Self {
            sink: S::default(),
            rec: PceBuilder::default(),
        }
    }

    fn alloc<F, A, AR>(
        &mut self,
        _: A,
        f: F,
    ) -> Result<bellperson::Variable, bellperson::SynthesisError>
    where
        F: FnOnce() -> Result<Fr, bellperson::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.sink.alloc(f()?)
    }

    fn alloc_input<F, A, AR>(
        &mut self,
        _: A,
        f: F,
    ) -> Result<bellperson::Variable, bellperson::SynthesisError>
    where
        F: FnOnce() -> Result<Fr, bellperson::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.sink.alloc_input(f()?)
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
        self.sink.row(&a, &b, &c);
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
    let mut cs = Recording::<ProvingAssignment>::new();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit
        .synthesize(&mut cs)
        .context("circuit synthesis failed")?;
    for i in 0..cs.sink.input_assignment.len() {
        let (a, zero) = ProvingAssignment::input_constraint(i);
        cs.rec.row(&a, &zero, &zero);
        cs.sink.enforce_lcs(&a, &zero, &zero);
    }
    let pce = cs.rec.finish(&cs.sink)?;
    Ok((cs.sink, pce))
}

/// The recording of one block of a circuit: its rows in the circuit's order, its
/// variables numbered from 0 as a circuit of that block alone allocates them (ONE first),
/// without the trailing input constraints a whole synthesis appends. What
/// [`join_blocks`] puts together.
#[derive(Clone, Debug)]
pub struct Block {
    pub(super) inputs: usize,
    pub(super) aux: usize,
    pub(super) a: Csr,
    pub(super) b: Csr,
    pub(super) c: Csr,
    pub(super) coeffs: Vec<Fr>,
}

impl Block {
    pub(super) fn rows(&self) -> usize {
        self.a.rows()
    }

    /// Whether row `r` of this block, its columns passed through `renumber`, is row `ro`
    /// of `other`: the same columns and coefficient values in A, B and C (the blocks'
    /// coefficient tables may differ). Allocates nothing: the join asks it of every row
    /// of a part (7 M at 32GiB).
    pub(super) fn same_row(
        &self,
        r: usize,
        other: &Block,
        ro: usize,
        renumber: impl Fn(u32) -> u32,
    ) -> bool {
        [
            (&self.a, &other.a),
            (&self.b, &other.b),
            (&self.c, &other.c),
        ]
        .iter()
        .all(|(m, n)| {
            let (s, e) = (m.row_start[r] as usize, m.row_start[r + 1] as usize);
            let so = n.row_start[ro] as usize;
            e - s == n.row_start[ro + 1] as usize - so
                && (0..e - s).all(|i| {
                    renumber(m.cols[s + i]) == n.cols[so + i]
                        && self.coeffs[m.coeffs[s + i] as usize]
                            == other.coeffs[n.coeffs[so + i] as usize]
                })
        })
    }
}

/// Records `circuit` (one block of a larger one: see [`join_blocks`]) as a synthesis
/// would run it, the constant ONE input first.
pub(crate) fn record_block<C: bellperson::Circuit<Fr>>(circuit: C) -> Result<Block> {
    use bellperson::ConstraintSystem;
    let mut cs = Recording::<Counts>::new();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit
        .synthesize(&mut cs)
        .context("circuit synthesis failed")?;
    let Recording { sink, rec } = cs;
    Ok(Block {
        inputs: sink.inputs,
        aux: sink.aux,
        a: rec.a,
        b: rec.b,
        c: rec.c,
        coeffs: rec.coeffs,
    })
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};

    /// A header (an input, a bit) and `parts` parts, each an input, two aux variables and
    /// three constraints reading the header and itself; `cross` makes each part after the
    /// first also read the previous part's variable (a layout the join must refuse).
    pub struct Toy {
        pub parts: usize,
        pub cross: bool,
    }

    impl Circuit<Fr> for Toy {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let h = cs.alloc_input(|| "h", || Ok(Fr::from(7u64)))?;
            let bit = cs.alloc(|| "bit", || Ok(Fr::ONE))?;
            cs.enforce(|| "bit", |lc| lc + bit, |lc| lc + CS::one() - bit, |lc| lc);
            let mut prev = None;
            for p in 0..self.parts {
                let y = cs.alloc_input(|| "y", || Ok(Fr::from(p as u64 + 2)))?;
                let x = cs.alloc(|| "x", || Ok(Fr::from(p as u64 + 3)))?;
                let z = cs.alloc(|| "z", || Ok(Fr::from(5u64)))?;
                let three = Fr::from(3u64);
                cs.enforce(|| "a", |lc| lc + (three, x) + h, |lc| lc + y, |lc| lc + z);
                cs.enforce(
                    || "b",
                    |lc| lc + bit,
                    |lc| lc + (Fr::from(9u64), z),
                    |lc| lc + x,
                );
                let before = match (self.cross, prev) {
                    (true, Some(v)) => v,
                    _ => x,
                };
                cs.enforce(
                    || "c",
                    |lc| lc + before + y,
                    |lc| lc + CS::one(),
                    |lc| lc + h,
                );
                prev = Some(z);
            }
            Ok(())
        }
    }

    /// A whole circuit's block.
    pub(crate) fn tiny_block() -> Block {
        record_block(Toy {
            parts: 2,
            cross: false,
        })
        .unwrap()
    }

    /// The blocks of a `parts`-part Toy, as the PoRep circuits cut theirs.
    pub(crate) fn toy_blocks(parts: usize, cross: bool) -> Vec<Block> {
        if parts < 3 {
            return vec![record_block(Toy { parts, cross }).unwrap()];
        }
        let mut b = vec![record_block(Toy { parts: 2, cross }).unwrap()];
        b.extend((2..parts).map(|_| record_block(Toy { parts: 1, cross }).unwrap()));
        b
    }
}
