//! Joining independently recorded blocks of a circuit (a PoRep partition's challenge
//! blocks) into the recording of the whole circuit: what makes the first run's recording
//! parallel. The joined recording is the serial one bit for bit (the tests here on a toy
//! circuit, tests/pce.rs on the real ones).

use super::record::{limbs, Block};
use super::*;

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
pub(crate) fn join_blocks(blocks: Vec<Block>) -> Result<Pce> {
    ensure!(!blocks.is_empty(), "no blocks to join");
    if blocks.len() == 1 {
        let b = blocks.into_iter().next().expect("one block");
        return finish(b.inputs, b.aux, [b.a, b.b, b.c], b.coeffs);
    }
    let (head, part) = check_layout(&blocks)?;
    let (coeffs, maps) = merge_coeffs(&blocks);
    let n = blocks.len() + 1;
    let inputs = head.inputs + n * part.inputs;
    let aux = head.aux + n * part.aux;
    ensure!(
        aux < AUX as usize && inputs < AUX as usize,
        "{aux} aux variables: too many to record"
    );
    let join = |pick: fn(&Block) -> &Csr| join_matrix(&blocks, head, part, &maps, pick);
    let matrices = [join(|b| &b.a), join(|b| &b.b), join(|b| &b.c)];
    drop(blocks);
    finish(inputs, aux, matrices, coeffs)
}

/// The blocks' shared layout, checked: the header (rows and variables before the first
/// part) and one part. Every block has block 0's header rows, and block 0's second part,
/// renumbered as a part alone, has block 1's rows; else the circuit's parts are not
/// independent and the join would be wrong.
fn check_layout(blocks: &[Block]) -> Result<(Layout, Layout)> {
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
    let same_header = blocks[1..]
        .par_iter()
        .all(|b| (0..head.rows).all(|r| b.same_row(r, b0, r, |c| c)));
    ensure!(
        same_header,
        "the circuit's challenge blocks differ in their header"
    );
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
    let same_parts = (0..part.rows)
        .into_par_iter()
        .all(|r| b0.same_row(head.rows + part.rows + r, b1, head.rows + r, own));
    ensure!(
        same_parts,
        "the circuit's challenge parts differ (a part reads another part's variables?)"
    );
    Ok((head, part))
}

/// The joined coefficient table (block 0's, then each block's new ones in order of
/// first use) and, per block, where each of its coefficients went.
fn merge_coeffs(blocks: &[Block]) -> (Vec<Fr>, Vec<Vec<u32>>) {
    let mut coeffs = blocks[0].coeffs.clone();
    let mut index: HashMap<[u64; 4], u32> = coeffs
        .iter()
        .enumerate()
        .map(|(i, c)| (limbs(c), i as u32))
        .collect();
    let maps = blocks
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
    (coeffs, maps)
}

/// One matrix of the joined recording: block 0 whole, then each other block from its
/// part's first row, its own variables moved to its part's offsets (block j ≥ 1 holds
/// part j + 1) and its coefficients to the joined table's; the pieces copied in parallel.
fn join_matrix(
    blocks: &[Block],
    head: Layout,
    part: Layout,
    maps: &[Vec<u32>],
    pick: fn(&Block) -> &Csr,
) -> Csr {
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
        row_start: vec![0; rows + 1].into(),
        cols: vec![0; total].into(),
        coeffs: vec![0; total].into(),
    };
    // Each piece's slices of the output, filled in parallel.
    let mut jobs = Vec::with_capacity(pieces.len());
    let (mut rs, mut cs, mut ks) = (
        &mut out.row_start.to_mut()[1..],
        &mut out.cols.to_mut()[..],
        &mut out.coeffs.to_mut()[..],
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
mod tests {
    use super::super::record::tests_support::*;
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
