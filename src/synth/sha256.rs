//! The witness of bellperson's SHA-256 gadget, computed natively (`--native-label`,
//! wired into the PoRep circuit by `circuit/native_label.rs`).
//!
//! A PoRep partition is mostly SHA-256: every challenge re-derives its column's labels, one
//! 20-block SHA-256 per layer. In a witness-only synthesis the gadgets still build the
//! linear combinations of every constraint (bellperson's `MultiEq` packs each addition
//! into a growing combination before handing it over; session 19's profile put that at
//! ~40 % of witness generation), although nothing reads them.
//!
//! Here the same allocations are made in the same order with the same values, without any
//! constraint: each bit is a [`Bit`] (a constant, or an allocated variable's value,
//! possibly negated), and every gadget rule that decides whether a bit is allocated
//! (constant folding in XOR, AND, Ch, Maj and in additions of constant words) is followed
//! exactly as bellperson 0.27 (`gadgets::sha256`, `uint32`, bellpepper-core's `boolean`)
//! does. The result is bit for bit the gadget's witness: this module's tests compare the
//! allocations with the gadget's own on mixed inputs, and `tests/native_label.rs` compares
//! whole witnesses of real circuits; a missed rule changes the aux vector's length or
//! contents at once.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};

/// One bit as the gadgets see it: a constant, or an allocated variable (its value), used
/// as is or negated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bit {
    Const(bool),
    Is(bool),
    Not(bool),
}

impl Bit {
    pub fn value(self) -> bool {
        match self {
            Bit::Const(b) | Bit::Is(b) => b,
            Bit::Not(b) => !b,
        }
    }

    fn not(self) -> Bit {
        match self {
            Bit::Const(b) => Bit::Const(!b),
            Bit::Is(b) => Bit::Not(b),
            Bit::Not(b) => Bit::Is(b),
        }
    }

    fn is_const(self) -> bool {
        matches!(self, Bit::Const(_))
    }
}

/// The aux assignment being generated: an allocation appends its value.
pub struct Aux<'a>(pub &'a mut Vec<Fr>);

impl Aux<'_> {
    #[inline]
    fn alloc(&mut self, v: bool) -> Bit {
        self.0.push(if v { Fr::ONE } else { Fr::ZERO });
        Bit::Is(v)
    }

    /// `Boolean::xor`.
    fn xor(&mut self, a: Bit, b: Bit) -> Bit {
        use Bit::*;
        match (a, b) {
            (Const(false), x) | (x, Const(false)) => x,
            (Const(true), x) | (x, Const(true)) => x.not(),
            // xor(is, not.not()).not(): one variable, is ^ the negated one's variable.
            (Is(p), Not(q)) | (Not(q), Is(p)) => self.alloc(p ^ q).not(),
            (Is(p), Is(q)) | (Not(p), Not(q)) => self.alloc(p ^ q),
        }
    }

    /// `Boolean::and`.
    fn and(&mut self, a: Bit, b: Bit) -> Bit {
        use Bit::*;
        match (a, b) {
            (Const(false), _) | (_, Const(false)) => Const(false),
            (Const(true), x) | (x, Const(true)) => x,
            (Is(p), Not(q)) | (Not(q), Is(p)) => self.alloc(p & !q),
            (Not(p), Not(q)) => self.alloc(!p & !q),
            (Is(p), Is(q)) => self.alloc(p & q),
        }
    }

    /// `Boolean::sha256_ch`: (a ∧ b) ⊕ (¬a ∧ c).
    fn ch(&mut self, a: Bit, b: Bit, c: Bit) -> Bit {
        use Bit::*;
        let v = (a.value() & b.value()) ^ (!a.value() & c.value());
        match (a, b, c) {
            (Const(_), Const(_), Const(_)) => Const(v),
            (Const(false), _, c) => c,
            (a, Const(false), c) => self.and(a.not(), c),
            (a, b, Const(false)) => self.and(a, b),
            (a, b, Const(true)) => self.and(a, b.not()).not(),
            (a, Const(true), c) => self.and(a.not(), c.not()).not(),
            // Also a constant true `a` with variable b and c: the gadget allocates then.
            _ => self.alloc(v),
        }
    }

    /// `Boolean::sha256_maj`: (a ∧ b) ⊕ (a ∧ c) ⊕ (b ∧ c).
    fn maj(&mut self, a: Bit, b: Bit, c: Bit) -> Bit {
        use Bit::*;
        let (x, y, z) = (a.value(), b.value(), c.value());
        let v = (x & y) ^ (x & z) ^ (y & z);
        match (a, b, c) {
            (Const(_), Const(_), Const(_)) => Const(v),
            (Const(false), b, c) => self.and(b, c),
            (a, Const(false), c) => self.and(a, c),
            (a, b, Const(false)) => self.and(a, b),
            (a, b, Const(true)) => self.and(a.not(), b.not()).not(),
            (a, Const(true), c) => self.and(a.not(), c.not()).not(),
            (Const(true), b, c) => self.and(b.not(), c.not()).not(),
            _ => {
                let maj = self.alloc(v);
                self.and(b, c); // the gadget's "b and c", allocated after maj
                maj
            }
        }
    }
}

/// `UInt32`: bits least significant first, and the value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Word {
    bits: [Bit; 32],
    value: u32,
}

impl Word {
    pub fn constant(value: u32) -> Self {
        Word {
            bits: std::array::from_fn(|i| Bit::Const((value >> i) & 1 == 1)),
            value,
        }
    }

    /// `UInt32::from_bits_be`: 32 bits, most significant first.
    pub(crate) fn from_bits_be(bits: &[Bit]) -> Self {
        assert_eq!(bits.len(), 32);
        let value = bits.iter().fold(0u32, |v, b| (v << 1) | b.value() as u32);
        Word {
            bits: std::array::from_fn(|i| bits[31 - i]),
            value,
        }
    }

    /// `UInt32::into_bits_be`.
    pub(crate) fn bits_be(&self) -> impl Iterator<Item = Bit> + '_ {
        self.bits.iter().rev().copied()
    }

    fn rotr(&self, by: usize) -> Self {
        Word {
            bits: std::array::from_fn(|i| self.bits[(i + by) % 32]),
            value: self.value.rotate_right(by as u32),
        }
    }

    fn shr(&self, by: usize) -> Self {
        Word {
            bits: std::array::from_fn(|i| {
                self.bits.get(i + by).copied().unwrap_or(Bit::Const(false))
            }),
            value: self.value >> by,
        }
    }

    fn xor(&self, aux: &mut Aux, other: &Self) -> Self {
        Word {
            bits: std::array::from_fn(|i| aux.xor(self.bits[i], other.bits[i])),
            value: self.value ^ other.value,
        }
    }

    fn ch(aux: &mut Aux, a: &Self, b: &Self, c: &Self) -> Self {
        Word {
            bits: std::array::from_fn(|i| aux.ch(a.bits[i], b.bits[i], c.bits[i])),
            value: (a.value & b.value) ^ (!a.value & c.value),
        }
    }

    fn maj(aux: &mut Aux, a: &Self, b: &Self, c: &Self) -> Self {
        Word {
            bits: std::array::from_fn(|i| aux.maj(a.bits[i], b.bits[i], c.bits[i])),
            value: (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value),
        }
    }

    /// `UInt32::addmany`: a constant when every operand bit is; else the sum's bits up to
    /// the largest possible sum's length are allocated (carries included), the low 32 kept.
    fn addmany(aux: &mut Aux, ops: &[Word]) -> Self {
        assert!((2..=10).contains(&ops.len()));
        let sum: u64 = ops.iter().map(|w| u64::from(w.value)).sum();
        if ops.iter().all(|w| w.bits.iter().all(|b| b.is_const())) {
            return Word::constant(sum as u32);
        }
        let max = ops.len() as u64 * u64::from(u32::MAX);
        let len = 64 - max.leading_zeros() as usize;
        let mut bits = [Bit::Const(false); 32];
        for i in 0..len {
            let b = aux.alloc((sum >> i) & 1 == 1);
            if let Some(slot) = bits.get_mut(i) {
                *slot = b;
            }
        }
        Word {
            bits,
            value: sum as u32,
        }
    }
}

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A working variable: a word, or (as the gadget leaves it until it is read) a pending sum
/// of up to 7 operands (temp1 + temp2), plus one when the final state adds its word.
struct Pending {
    ops: [Word; 8],
    /// 1: a word, read as it is (the gadget ignores the final state's word then too).
    n: usize,
}

impl Pending {
    fn of(words: &[Word]) -> Self {
        let mut ops = [Word::constant(0); 8];
        ops[..words.len()].copy_from_slice(words);
        Pending {
            ops,
            n: words.len(),
        }
    }

    fn get(mut self, aux: &mut Aux, more: Option<Word>) -> Word {
        if self.n == 1 {
            return self.ops[0];
        }
        if let Some(w) = more {
            self.ops[self.n] = w;
            self.n += 1;
        }
        Word::addmany(aux, &self.ops[..self.n])
    }
}

/// `sha256_compression_function`: one 512-bit block (bits most significant first).
fn compress(aux: &mut Aux, block: &[Bit], state: &[Word; 8]) -> [Word; 8] {
    assert_eq!(block.len(), 512);
    let mut w = [Word::constant(0); 64];
    for (w, bits) in w.iter_mut().zip(block.chunks(32)) {
        *w = Word::from_bits_be(bits);
    }
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(aux, &w[i - 15].rotr(18));
        let s0 = s0.xor(aux, &w[i - 15].shr(3));
        let s1 = w[i - 2].rotr(17).xor(aux, &w[i - 2].rotr(19));
        let s1 = s1.xor(aux, &w[i - 2].shr(10));
        w[i] = Word::addmany(aux, &[w[i - 16], s0, w[i - 7], s1]);
    }

    let mut a = Pending::of(&[state[0]]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *state;
    let mut e = Pending::of(&[state[4]]);
    for (i, wi) in w.iter().enumerate() {
        let new_e = e.get(aux, None);
        let s1 = new_e.rotr(6).xor(aux, &new_e.rotr(11));
        let s1 = s1.xor(aux, &new_e.rotr(25));
        let ch = Word::ch(aux, &new_e, &f, &g);
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), *wi];

        let new_a = a.get(aux, None);
        let s0 = new_a.rotr(2).xor(aux, &new_a.rotr(13));
        let s0 = s0.xor(aux, &new_a.rotr(22));
        let maj = Word::maj(aux, &new_a, &b, &c);

        h = g;
        g = f;
        f = new_e;
        e = Pending::of(&[temp1[0], temp1[1], temp1[2], temp1[3], temp1[4], d]);
        d = c;
        c = b;
        b = new_a;
        a = Pending::of(&[temp1[0], temp1[1], temp1[2], temp1[3], temp1[4], s0, maj]);
    }

    let h0 = a.get(aux, Some(state[0]));
    let h1 = Word::addmany(aux, &[state[1], b]);
    let h2 = Word::addmany(aux, &[state[2], c]);
    let h3 = Word::addmany(aux, &[state[3], d]);
    let h4 = e.get(aux, Some(state[4]));
    let h5 = Word::addmany(aux, &[state[5], f]);
    let h6 = Word::addmany(aux, &[state[6], g]);
    let h7 = Word::addmany(aux, &[state[7], h]);
    [h0, h1, h2, h3, h4, h5, h6, h7]
}

/// bellperson's `sha256` gadget: padding, then one compression a block; the digest's 256
/// bits, each word most significant bit first.
pub(crate) fn sha256(aux: &mut Aux, input: &[Bit]) -> Vec<Bit> {
    assert!(input.len().is_multiple_of(8));
    let mut padded = input.to_vec();
    let len = padded.len() as u64;
    padded.push(Bit::Const(true));
    while !(padded.len() + 64).is_multiple_of(512) {
        padded.push(Bit::Const(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Const((len >> i) & 1 == 1)));
    let mut state = IV.map(Word::constant);
    for block in padded.chunks(512) {
        state = compress(aux, block, &state);
    }
    state.iter().flat_map(Word::bits_be).collect()
}

/// storage-proofs' `reverse_bit_numbering`: padded to whole bytes, each byte's bits reversed.
pub(crate) fn reverse_bit_numbering(mut bits: Vec<Bit>) -> Vec<Bit> {
    while !bits.len().is_multiple_of(8) {
        bits.push(Bit::Const(false));
    }
    bits.chunks(8)
        .flat_map(|c| c.iter().rev().copied())
        .collect()
}

/// The value `multipack::pack_bits` gives the first `Fr::CAPACITY` bits (little-endian).
pub fn pack(bits: &[Bit]) -> Fr {
    let mut repr = [0u8; 32];
    for (i, b) in bits.iter().take(Fr::CAPACITY as usize).enumerate() {
        repr[i / 8] |= (b.value() as u8) << (i % 8);
    }
    Fr::from_repr_vartime(repr).expect("fewer bits than the modulus")
}

/// `create_label_circuit`'s hash: the SHA-256 of replica id | layer | node | 37 parents
/// (each 32 bytes), its allocations appended to `aux`; returns the label's value (the
/// packed digest, which the caller allocates as the gadget does).
pub fn label(
    aux: &mut Vec<Fr>,
    replica_id: &[Bit],
    layer: u32,
    node_be: &[Bit],
    parents: &[&[Bit]],
) -> Fr {
    let mut data = Vec::with_capacity((2 + parents.len()) * 256);
    data.extend_from_slice(replica_id);
    data.resize(256, Bit::Const(false));
    data.extend(Word::constant(layer).bits_be());
    data.extend_from_slice(node_be);
    data.resize(512, Bit::Const(false));
    for p in parents {
        data.extend_from_slice(p);
        data.resize(data.len().next_multiple_of(256), Bit::Const(false));
    }
    let digest = sha256(&mut Aux(aux), &data);
    pack(&reverse_bit_numbering(digest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    fn bytes_to_bits(bytes: &[u8]) -> Vec<bool> {
        bytes
            .iter()
            .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1 == 1))
            .collect()
    }

    /// The values are SHA-256 whatever mix of constant, allocated and negated input bits.
    #[test]
    fn digest_is_sha256() {
        for len in [0usize, 3, 55, 56, 64, 100, 1248] {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let expect = bytes_to_bits(&sha2::Sha256::digest(&data));
            for kind in 0..3 {
                let bits: Vec<Bit> = bytes_to_bits(&data)
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| match (kind + i) % 3 {
                        0 => Bit::Const(v),
                        1 => Bit::Is(v),
                        _ => Bit::Not(!v),
                    })
                    .collect();
                let mut aux = Vec::new();
                let got: Vec<bool> = sha256(&mut Aux(&mut aux), &bits)
                    .iter()
                    .map(|b| b.value())
                    .collect();
                assert_eq!(got, expect, "length {len}, mix {kind}");
                assert!(aux.iter().all(|v| *v == Fr::ZERO || *v == Fr::ONE));
            }
        }
    }

    /// The allocations are the gadget's, in order, for inputs mixing constant, allocated
    /// and negated bits (every folding rule of XOR, AND, Ch, Maj and addmany is reached:
    /// constant words meet variable ones in the schedule and the rounds).
    #[test]
    fn allocations_are_the_gadgets() {
        use crate::synth::witness::Witness;
        use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20);
        for (len, mix) in [
            (64usize, 0u32),
            (64, 1),
            (64, 2),
            (448, 3),
            (1248, 4),
            (1248, 5),
        ] {
            // mix: which kinds appear, including long constant runs (as the label's padding).
            let kinds: Vec<u32> = (0..len * 8)
                .map(|i| match mix {
                    0 => 1,
                    1 => 0,
                    2 => rng.gen_range(0..3),
                    3 => {
                        if (i / 64) % 2 == 0 {
                            0
                        } else {
                            rng.gen_range(1..3)
                        }
                    }
                    _ => {
                        if (i / 256) % 3 == 0 {
                            rng.gen_range(0..3)
                        } else {
                            rng.gen_range(0..2)
                        }
                    }
                })
                .collect();
            let values: Vec<bool> = (0..len * 8).map(|_| rng.gen()).collect();
            let mut cs = Witness::default();
            let gadget_in: Vec<Boolean> = kinds
                .iter()
                .zip(&values)
                .map(|(k, &v)| match k {
                    0 => Boolean::constant(v),
                    1 => Boolean::from(AllocatedBit::alloc(&mut cs, Some(v)).unwrap()),
                    _ => Boolean::from(AllocatedBit::alloc(&mut cs, Some(!v)).unwrap()).not(),
                })
                .collect();
            let before = cs.aux.len();
            let digest = bellperson::gadgets::sha256::sha256(&mut cs, &gadget_in).unwrap();
            let native_in: Vec<Bit> = kinds
                .iter()
                .zip(&values)
                .map(|(k, &v)| match k {
                    0 => Bit::Const(v),
                    1 => Bit::Is(v),
                    _ => Bit::Not(!v),
                })
                .collect();
            let mut aux = Vec::new();
            let native = sha256(&mut Aux(&mut aux), &native_in);
            assert_eq!(
                aux.len(),
                cs.aux.len() - before,
                "length {len}, mix {mix}: allocations"
            );
            assert!(aux == cs.aux[before..], "length {len}, mix {mix}: values");
            let kind = |b: &Boolean| match b {
                Boolean::Constant(c) => Bit::Const(*c),
                Boolean::Is(x) => Bit::Is(x.get_value().unwrap()),
                Boolean::Not(x) => Bit::Not(x.get_value().unwrap()),
            };
            assert_eq!(native, digest.iter().map(kind).collect::<Vec<_>>());
        }
    }
}
