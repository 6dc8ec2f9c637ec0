//! Recording the constraint system: serially, during one full synthesis (the reference),
//! or in parallel blocks — the circuit's challenges recorded independently and joined at
//! their variable offsets, equal to the serial recording bit for bit (tests/pce.rs).

use super::*;

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

/// The recording of one block of a circuit: its rows in the circuit's order, its
/// variables numbered from 0 as a circuit of that block alone allocates them (ONE first),
/// without the trailing input constraints a whole synthesis appends. What
/// [`join_blocks`] puts together.
#[derive(Clone, Debug)]
pub struct Block {
    inputs: usize,
    aux: usize,
    a: Csr,
    b: Csr,
    c: Csr,
    coeffs: Vec<Fr>,
}

impl Block {
    fn rows(&self) -> usize {
        self.a.rows()
    }

    /// Row `r` of the three matrices, coefficients as values: comparable across blocks
    /// whose coefficient tables differ.
    fn row(&self, r: usize) -> [(Vec<u32>, Vec<[u64; 4]>); 3] {
        [&self.a, &self.b, &self.c].map(|m| {
            let (s, e) = (m.row_start[r] as usize, m.row_start[r + 1] as usize);
            let cols = m.cols[s..e].to_vec();
            let coeffs = m.coeffs[s..e]
                .iter()
                .map(|&i| limbs(&self.coeffs[i as usize]))
                .collect();
            (cols, coeffs)
        })
    }
}

/// A constraint system that records rows and counts variables (computing each value, as
/// gadgets may read them back, but keeping none): a block's recording costs its matrices
/// only. Not a witness generator, so every gadget enforces its constraints.
struct BlockRecorder {
    inputs: usize,
    aux: usize,
    rec: PceBuilder,
}

impl bellperson::ConstraintSystem<Fr> for BlockRecorder {
    type Root = Self;

    fn new() -> Self {
        Self {
            inputs: 0,
            aux: 0,
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
        f()?;
        self.aux += 1;
        Ok(bellperson::Variable::new_unchecked(bellperson::Index::Aux(
            self.aux - 1,
        )))
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
        f()?;
        self.inputs += 1;
        Ok(bellperson::Variable::new_unchecked(
            bellperson::Index::Input(self.inputs - 1),
        ))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.rec.row(
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

/// Records `circuit` (one block of a larger one: see [`join_blocks`]) as a synthesis
/// would run it, the constant ONE input first.
pub fn record_block<C: bellperson::Circuit<Fr>>(circuit: C) -> Result<Block> {
    use bellperson::ConstraintSystem;
    let mut cs = BlockRecorder::new();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit
        .synthesize(&mut cs)
        .context("circuit synthesis failed")?;
    let BlockRecorder { inputs, aux, rec } = cs;
    Ok(Block {
        inputs,
        aux,
        a: rec.a,
        b: rec.b,
        c: rec.c,
        coeffs: rec.coeffs,
    })
}

/// Sizes of a circuit made of a header and `parts` equal parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    rows: usize,
    inputs: usize,
    aux: usize,
}

impl Layout {
    fn of(b: &Block) -> Self {
        Self {
            rows: b.rows(),
            inputs: b.inputs,
            aux: b.aux,
        }
    }

    /// `self − other`, or None where `other` is larger.
    fn minus(self, other: Self) -> Option<Self> {
        Some(Self {
            rows: self.rows.checked_sub(other.rows)?,
            inputs: self.inputs.checked_sub(other.inputs)?,
            aux: self.aux.checked_sub(other.aux)?,
        })
    }
}

/// The recording of a circuit made of a header and `n` parts (a PoRep partition: the
/// replica's values and commitments, then one part per challenge that reads only the
/// header's variables), from `n − 1` blocks recorded independently: block 0 is the
/// circuit of the first two parts (header + 2 parts), block j ≥ 1 the circuit of part
/// j + 1 alone (header + 1 part). A single block is a whole circuit.
///
/// Part p's rows and variables go to their offsets in the whole circuit (header
/// variables stay where they are), new coefficients are appended in order of first use,
/// the input constraints are appended and the densities taken from the matrices: the
/// serial recording of the whole circuit, bit for bit. Checked on the way: every block
/// has the same header rows, and the second part of block 0 has the rows of every other
/// part (a circuit whose part reads another part's variables fails here, instead of
/// giving a recording the circuit does not have).
pub fn join_blocks(blocks: Vec<Block>) -> Result<Pce> {
    ensure!(!blocks.is_empty(), "no blocks to join");
    if blocks.len() == 1 {
        let b = blocks.into_iter().next().expect("one block");
        return finish(b.inputs, b.aux, [b.a, b.b, b.c], b.coeffs);
    }
    let n = blocks.len() + 1;
    let two = Layout::of(&blocks[0]);
    let one = Layout::of(&blocks[1]);
    let bad = || anyhow::anyhow!("the circuit's challenge blocks do not share one layout");
    let part = two.minus(one).ok_or_else(bad)?;
    let head = one.minus(part).ok_or_else(bad)?;
    ensure!(
        blocks[1..].iter().all(|b| Layout::of(b) == one),
        "the circuit's challenge blocks differ in size"
    );
    let b0 = &blocks[0];
    // Every block's header rows are block 0's.
    let same_header = blocks[1..]
        .par_iter()
        .all(|b| (0..head.rows).all(|r| b.row(r) == b0.row(r)));
    ensure!(
        same_header,
        "the circuit's challenge blocks differ in their header"
    );
    // Block 0's second part, its own variables renumbered as a part alone, is block 1's.
    let own = |c: u32| -> u32 {
        let (base, width, flag) = if c & AUX != 0 {
            (head.aux, part.aux, AUX)
        } else {
            (head.inputs, part.inputs, 0)
        };
        let i = (c & !AUX) as usize;
        if i < base {
            c
        } else if i >= base + width {
            (i - width) as u32 | flag
        } else {
            u32::MAX // a variable of part 0: not one a part alone can have
        }
    };
    let b1 = &blocks[1];
    let same_parts = (0..part.rows).into_par_iter().all(|r| {
        let mut x = b0.row(head.rows + part.rows + r);
        for (cols, _) in &mut x {
            cols.iter_mut().for_each(|c| *c = own(*c));
        }
        x == b1.row(head.rows + r)
    });
    ensure!(
        same_parts,
        "the circuit's challenge parts differ (a part reads another part's variables?)"
    );

    // The coefficient table: block 0's, then each block's new ones in order of first use.
    let mut coeffs = b0.coeffs.clone();
    let mut index: HashMap<[u64; 4], u32> = coeffs
        .iter()
        .enumerate()
        .map(|(i, c)| (limbs(c), i as u32))
        .collect();
    let maps: Vec<Vec<u32>> = blocks
        .iter()
        .map(|b| {
            b.coeffs
                .iter()
                .map(|c| {
                    let next = coeffs.len() as u32;
                    *index.entry(limbs(c)).or_insert_with(|| {
                        coeffs.push(*c);
                        next
                    })
                })
                .collect()
        })
        .collect();
    let inputs = head.inputs + n * part.inputs;
    let aux = head.aux + n * part.aux;
    ensure!(
        aux < AUX as usize && inputs < AUX as usize,
        "{aux} aux variables: too many to record"
    );
    // Block j ≥ 1 holds part j + 1: its own variables move to that part's offsets.
    let place = |j: usize, c: u32| -> u32 {
        let (base, width, flag) = if c & AUX != 0 {
            (head.aux, part.aux, AUX)
        } else {
            (head.inputs, part.inputs, 0)
        };
        let i = (c & !AUX) as usize;
        if j == 0 || i < base {
            c
        } else {
            (i + (j + 1) * width) as u32 | flag
        }
    };
    let join = |pick: fn(&Block) -> &Csr| -> Csr {
        // (block, first row): block 0 whole, the others from their part's first row.
        let pieces: Vec<(usize, usize)> = (0..blocks.len())
            .map(|j| (j, if j == 0 { 0 } else { head.rows }))
            .collect();
        let nnz: Vec<usize> = pieces
            .iter()
            .map(|&(j, r0)| {
                let m = pick(&blocks[j]);
                (m.row_start[m.rows()] - m.row_start[r0]) as usize
            })
            .collect();
        let total: usize = nnz.iter().sum();
        let rows: usize = pieces.iter().map(|&(j, r0)| blocks[j].rows() - r0).sum();
        let mut out = Csr {
            row_start: vec![0; rows + 1],
            cols: vec![0; total],
            coeffs: vec![0; total],
        };
        // Each piece's slices of the output, filled in parallel.
        let mut jobs = Vec::with_capacity(pieces.len());
        let (mut rs, mut cs, mut ks) = (
            &mut out.row_start[1..],
            &mut out.cols[..],
            &mut out.coeffs[..],
        );
        let mut base = 0u64;
        for (&(j, r0), &nz) in pieces.iter().zip(&nnz) {
            let nrows = blocks[j].rows() - r0;
            let (r, rt) = std::mem::take(&mut rs).split_at_mut(nrows);
            let (c, ct) = std::mem::take(&mut cs).split_at_mut(nz);
            let (k, kt) = std::mem::take(&mut ks).split_at_mut(nz);
            jobs.push((j, r0, base, r, c, k));
            (rs, cs, ks) = (rt, ct, kt);
            base += nz as u64;
        }
        jobs.into_par_iter().for_each(|(j, r0, base, r, c, k)| {
            let m = pick(&blocks[j]);
            let first = m.row_start[r0];
            for (d, s) in r.iter_mut().zip(&m.row_start[r0 + 1..]) {
                *d = s - first + base;
            }
            let s = first as usize;
            for (d, &x) in c.iter_mut().zip(&m.cols[s..]) {
                *d = place(j, x);
            }
            for (d, &x) in k.iter_mut().zip(&m.coeffs[s..]) {
                *d = maps[j][x as usize];
            }
        });
        out
    };
    let matrices = [join(|b| &b.a), join(|b| &b.b), join(|b| &b.c)];
    drop(blocks);
    finish(inputs, aux, matrices, coeffs)
}

/// A recording from a whole circuit's rows: the input constraints appended (`input_i ·
/// 0 = 0`, as [`super::super::synthesize`] does) and the densities read off the
/// matrices (a variable is in A's or B's query when a row uses it with a non-zero
/// coefficient, which is every recorded term).
fn finish(
    inputs: usize,
    aux: usize,
    [mut a, mut b, mut c]: [Csr; 3],
    coeffs: Vec<Fr>,
) -> Result<Pce> {
    ensure!(
        aux < AUX as usize && inputs < AUX as usize,
        "{aux} aux variables: too many to record"
    );
    for i in 0..inputs {
        a.cols.push(i as u32);
        a.coeffs.push(0); // coefficient 1
        a.row_start.push(a.cols.len() as u64);
        b.row_start.push(b.cols.len() as u64);
        c.row_start.push(c.cols.len() as u64);
    }
    let (a_aux_density, (b_input_density, b_aux_density)) = rayon::join(
        || density(&a, aux, true),
        || rayon::join(|| density(&b, inputs, false), || density(&b, aux, true)),
    );
    Ok(Pce {
        inputs,
        aux,
        a,
        b,
        c,
        coeffs,
        a_aux_density: a_aux_density?,
        b_input_density: b_input_density?,
        b_aux_density: b_aux_density?,
    })
}

/// The variables of one kind (aux, or inputs) that `m` uses: `len` bits.
fn density(m: &Csr, len: usize, aux: bool) -> Result<Density> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let words: Vec<AtomicU64> = (0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
    m.cols.par_chunks(1 << 16).for_each(|chunk| {
        for &c in chunk {
            if (c & AUX != 0) == aux {
                let i = (c & !AUX) as usize;
                words[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
            }
        }
    });
    Density::from_words(words.into_iter().map(AtomicU64::into_inner).collect(), len)
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
    pub fn tiny_block() -> Block {
        record_block(Toy {
            parts: 2,
            cross: false,
        })
        .unwrap()
    }

    /// The blocks of a `parts`-part Toy, as the PoRep circuits cut theirs.
    pub fn toy_blocks(parts: usize, cross: bool) -> Vec<Block> {
        if parts < 3 {
            return vec![record_block(Toy { parts, cross }).unwrap()];
        }
        let mut b = vec![record_block(Toy { parts: 2, cross }).unwrap()];
        b.extend((2..parts).map(|_| record_block(Toy { parts: 1, cross }).unwrap()));
        b
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;

    #[test]
    fn joined_blocks_equal_the_serial_recording() {
        for parts in 1..7 {
            let (_, serial) = synthesize_recording(Toy {
                parts,
                cross: false,
            })
            .unwrap();
            let joined = join_blocks(toy_blocks(parts, false)).unwrap();
            assert!(joined == serial, "{parts} parts");
        }
    }

    #[test]
    fn a_part_reading_another_part_is_refused() {
        let e = join_blocks(toy_blocks(4, true)).unwrap_err();
        assert!(e.to_string().contains("parts differ"), "{e}");
        // Blocks of different circuits do not share a layout.
        let mut b = toy_blocks(4, false);
        b[2] = record_block(Toy {
            parts: 2,
            cross: false,
        })
        .unwrap();
        assert!(join_blocks(b).is_err());
    }
}
