//! `--pack-aux`: a partition's aux assignment crosses the bus packed. Witness values are
//! nearly all 0 or 1 (at 32GiB, of 130.2 M aux scalars 61.6 M are one, 66.8 M zero and
//! 1.7 M anything else), so two bitmaps and the other values (≈ 90 MB at 32GiB) go to the
//! device instead of 32 bytes a scalar (4.2 GB), and a kernel unpacks them there
//! (cuda/msm/scalars.cu, `UnpackFn`). The first partition's upload shares the bus with
//! the SRS upload; the later ones, uploaded ahead, no longer hold host cores copying
//! through the staging buffers. Host threads classify the scalars; a set with more
//! other values than zeros and ones together goes whole.

use blstrs::Scalar as Fr;
use ff::Field;

/// Below this many scalars, packing is not worth its pass over them.
pub const MIN_SCALARS: usize = 1 << 16;

/// A set of scalars as it crosses the bus: bit i of `ones` set where scalar i is one, of
/// `others` where it is neither zero nor one; `first[w]` is the index in `values` of the
/// first other of word w (the others of words before it).
#[derive(Debug, PartialEq)]
pub struct Packed {
    pub(crate) n: usize,
    pub(crate) ones: Vec<u64>,
    pub(crate) others: Vec<u64>,
    pub(crate) first: Vec<u32>,
    pub(crate) values: Vec<Fr>,
}

/// A scalar's limbs as it is stored (blst_fr, Montgomery form; blstrs' Scalar is
/// `#[repr(transparent)]` over it, as the device's FrMont is laid out).
fn limbs(s: &[Fr]) -> &[[u64; 4]] {
    // SAFETY: Scalar is #[repr(transparent)] over blst_fr, four u64 limbs, 32 bytes with
    // the alignment of u64 (the FFI relies on the same layout).
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const [u64; 4], s.len()) }
}

/// The scalar one as stored (what the device writes for a set bit of `ones`).
pub(crate) fn one_limbs() -> [u64; 4] {
    limbs(&[Fr::ONE])[0]
}

impl Packed {
    /// `scalars` packed by up to `threads` host threads; None when more of them are
    /// neither zero nor one than are (the whole set is then smaller), or there are 2^32
    /// or more such.
    pub fn of(scalars: &[Fr], threads: usize) -> Option<Packed> {
        let n = scalars.len();
        let words = n.div_ceil(64);
        let raw = limbs(scalars);
        let one = one_limbs();
        // Whole words per thread, at least 4096 (256 Ki scalars).
        let per = words.div_ceil(threads.max(1)).max(4096);
        let mut ones = vec![0u64; words];
        let mut others = vec![0u64; words];
        let counts: Vec<usize> = std::thread::scope(|s| {
            let jobs: Vec<_> = ones
                .chunks_mut(per)
                .zip(others.chunks_mut(per))
                .enumerate()
                .map(|(c, (o, x))| {
                    s.spawn(move || {
                        let mut count = 0;
                        for (k, (ow, xw)) in o.iter_mut().zip(x.iter_mut()).enumerate() {
                            let base = (c * per + k) * 64;
                            for (j, v) in raw[base..n.min(base + 64)].iter().enumerate() {
                                if *v == one {
                                    *ow |= 1 << j;
                                } else if *v != [0; 4] {
                                    *xw |= 1 << j;
                                }
                            }
                            count += xw.count_ones() as usize;
                        }
                        count
                    })
                })
                .collect();
            jobs.into_iter().map(|j| j.join().unwrap()).collect()
        });
        let total: usize = counts.iter().sum();
        if total > n - total || u32::try_from(total).is_err() {
            return None;
        }
        let mut first = vec![0u32; words];
        let mut values = vec![Fr::ZERO; total];
        std::thread::scope(|s| {
            let mut rest = &mut values[..];
            let mut base = 0usize;
            for (c, (f, x)) in first.chunks_mut(per).zip(others.chunks(per)).enumerate() {
                let (mine, tail) = rest.split_at_mut(counts[c]);
                rest = tail;
                let start = base;
                base += counts[c];
                s.spawn(move || {
                    let mut at = 0;
                    for (k, (fw, &xw)) in f.iter_mut().zip(x).enumerate() {
                        *fw = (start + at) as u32;
                        let mut bits = xw;
                        while bits != 0 {
                            let j = bits.trailing_zeros() as usize;
                            mine[at] = scalars[(c * per + k) * 64 + j];
                            at += 1;
                            bits &= bits - 1;
                        }
                    }
                });
            }
        });
        Some(Packed {
            n,
            ones,
            others,
            first,
            values,
        })
    }

    /// The scalars back (the device's unpacking, on the host: for tests).
    pub fn unpack(&self) -> Vec<Fr> {
        (0..self.n)
            .map(|i| {
                let (w, bit) = (i / 64, 1u64 << (i % 64));
                if self.others[w] & bit != 0 {
                    let before = (self.others[w] & (bit - 1)).count_ones();
                    self.values[(self.first[w] + before) as usize]
                } else if self.ones[w] & bit != 0 {
                    Fr::ONE
                } else {
                    Fr::ZERO
                }
            })
            .collect()
    }

    /// Bytes sent to the device.
    pub fn bytes(&self) -> usize {
        self.ones.len() * 8 + self.others.len() * 8 + self.first.len() * 4 + self.values.len() * 32
    }
}

/// Host threads for packing: as many as the staged copy it replaces uses (at most 8, half
/// the cores).
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).clamp(1, 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scalars of every kind at positions that cross words and threads' chunks: one in
    /// four neither zero nor one, the others zero or one at random.
    fn mixed(n: usize, seed: u64) -> Vec<Fr> {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                match (i % 4, x >> 63) {
                    (3, _) => Fr::from(x) * Fr::from(x >> 7) - Fr::ONE,
                    (_, 0) => Fr::ZERO,
                    _ => Fr::ONE,
                }
            })
            .collect()
    }

    #[test]
    fn packs_and_unpacks_every_kind_at_every_length() {
        for n in [0, 1, 63, 64, 65, 4096 * 64 + 5, 3 * 4096 * 64 + 127] {
            let s = mixed(n, n as u64 + 1);
            for threads in [1, 3] {
                let p = Packed::of(&s, threads).expect("mostly zeros and ones");
                assert_eq!(p.unpack(), s, "n = {n}, {threads} threads");
                let others = s
                    .iter()
                    .filter(|v| **v != Fr::ZERO && **v != Fr::ONE)
                    .count();
                assert_eq!(p.values.len(), others);
            }
        }
    }

    #[test]
    fn the_same_packing_on_any_number_of_threads() {
        let s = mixed(5 * 4096 * 64 + 3, 9);
        assert_eq!(Packed::of(&s, 1), Packed::of(&s, 7));
    }

    #[test]
    fn mostly_other_values_go_whole() {
        let s: Vec<Fr> = (2..1000u64).map(Fr::from).collect();
        assert!(Packed::of(&s, 2).is_none());
        // Exactly as many others as zeros and ones: still packed.
        let half: Vec<Fr> = (0..1000u64)
            .map(|i| Fr::from(if i % 2 == 0 { 0 } else { i + 2 }))
            .collect();
        assert!(Packed::of(&half, 2).is_some());
    }

    #[test]
    fn one_is_blstrs_one() {
        // r − 1 and R-multiples are not mistaken for one or zero.
        let s = vec![
            Fr::ONE,
            -Fr::ONE,
            Fr::ZERO,
            Fr::ONE + Fr::ONE,
            Fr::ZERO,
            Fr::ZERO,
        ];
        let p = Packed::of(&s, 1).unwrap();
        assert_eq!(p.ones[0], 0b1);
        assert_eq!(p.others[0], 0b1010);
        assert_eq!(p.unpack(), s);
    }
}
