//! Device field arithmetic against blstrs, bit for bit. Skipped, visibly, without a CUDA
//! build or a GPU.

mod common;

use common::gpu_or_skip;

use blstrs::Scalar as Fr;
use cuzk_prove::prove::cuda;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn fr_mul_add_sub_match_blstrs() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let edge = [Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(2u64), -Fr::from(2u64)];
    for n in [0usize, 1, 7, 1000, 1 << 16, (1 << 16) + 3] {
        let mut a: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let mut b: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        for (i, x) in edge.iter().enumerate() {
            for (j, y) in edge.iter().enumerate() {
                let k = i * edge.len() + j;
                if k < n {
                    a[k] = *x;
                    b[k] = *y;
                }
            }
        }
        let (mul, add, sub) = cuda::fr_ops(&a, &b).unwrap();
        for i in 0..n {
            assert_eq!(mul[i], a[i] * b[i], "mul n={n} i={i}");
            assert_eq!(add[i], a[i] + b[i], "add n={n} i={i}");
            assert_eq!(sub[i], a[i] - b[i], "sub n={n} i={i}");
        }
    }
}

// ---- The NTT's lazy Fr arithmetic (values in [0, 2r)), on raw Montgomery limbs ----

const R: [u64; 4] = [
    0xffffffff00000001,
    0x53bda402fffe5bfe,
    0x3339d80809a1d805,
    0x73eda753299d7d48,
];

/// x + y over 256 bits (the tests' values stay below 2r < 2^256).
fn add256(x: [u64; 4], y: [u64; 4]) -> [u64; 4] {
    let mut out = [0u64; 4];
    let mut carry = 0u128;
    for i in 0..4 {
        let s = x[i] as u128 + y[i] as u128 + carry;
        out[i] = s as u64;
        carry = s >> 64;
    }
    assert_eq!(carry, 0, "test value overflowed 256 bits");
    out
}

/// x − y over 256 bits, and whether it borrowed.
fn sub256(x: [u64; 4], y: [u64; 4]) -> ([u64; 4], bool) {
    let mut out = [0u64; 4];
    let mut borrow = 0i128;
    for i in 0..4 {
        let d = x[i] as i128 - y[i] as i128 - borrow;
        out[i] = d as u64;
        borrow = (d < 0) as i128;
    }
    (out, borrow != 0)
}

fn below(x: [u64; 4], bound: [u64; 4]) -> bool {
    sub256(x, bound).1
}

fn limbs(x: &Fr) -> [u64; 4] {
    // SAFETY: Scalar is #[repr(transparent)] over blst_fr, four u64 limbs (Montgomery).
    unsafe { *(x as *const Fr as *const [u64; 4]) }
}

/// The field element a lazy value (< 2r) stands for.
fn value(x: [u64; 4]) -> Fr {
    let two_r = add256(R, R);
    assert!(below(x, two_r), "lazy value {x:x?} is not below 2r");
    let reduced = if below(x, R) { x } else { sub256(x, R).0 };
    // SAFETY: as in limbs(); `reduced` < r is a valid Montgomery representation.
    unsafe { *(&reduced as *const [u64; 4] as *const Fr) }
}

fn check_lazy_ops(emulate: bool) {
    let mut rng = ChaCha20Rng::seed_from_u64(12);
    let two_r = add256(R, R);
    let one = [1, 0, 0, 0];
    let lazy_edges = [
        [0u64; 4],
        one,
        [1 << 32, 0, 0, 0],
        [0, 1 << 32, 0, 0],
        sub256(R, one).0,
        R,
        add256(R, one),
        sub256(two_r, one).0,
    ];
    // Beside the usual elements, raw words with zero low words: the reduction's rows
    // specialised to r's low words (carry.cuh, low_words_special) carry differently when
    // a word is zero.
    let mut reduced_edges: Vec<[u64; 4]> = [Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(2u64)]
        .iter()
        .map(limbs)
        .collect();
    reduced_edges.extend([
        [1, 0, 0, 0],
        [1 << 32, 0, 0, 0],
        [0, 1, 0, 0],
        [0, 0, 0, 1 << 40],
    ]);
    for n in [0usize, 1, 37, 300, 4096 + 5] {
        let mut a: Vec<[u64; 4]> = (0..n).map(|_| limbs(&Fr::random(&mut rng))).collect();
        // Lazy: a reduced value, or that value plus r (the same element), half each.
        let lazy = |rng: &mut ChaCha20Rng| {
            let x = limbs(&Fr::random(&mut *rng));
            if rand_core::RngCore::next_u32(rng) & 1 == 1 {
                add256(x, R)
            } else {
                x
            }
        };
        let mut b: Vec<[u64; 4]> = (0..n).map(|_| lazy(&mut rng)).collect();
        let mut c: Vec<[u64; 4]> = (0..n).map(|_| lazy(&mut rng)).collect();
        let mut k = 0;
        for x in &reduced_edges {
            for y in &lazy_edges {
                for z in &lazy_edges {
                    if k < n {
                        (a[k], b[k], c[k]) = (*x, *y, *z);
                    }
                    k += 1;
                }
            }
        }
        let (mul, add, sub, red) = cuda::fr_lazy_ops(&a, &b, &c, emulate).unwrap();
        for i in 0..n {
            let (va, vb, vc) = (value(a[i]), value(b[i]), value(c[i]));
            let at = format!("n={n} i={i} emulate={emulate}");
            assert_eq!(value(mul[i]), va * vb, "mul_lazy {at}");
            assert_eq!(value(add[i]), vb + vc, "add_lazy {at}");
            assert_eq!(value(sub[i]), vb - vc, "sub_lazy {at}");
            assert!(below(red[i], R), "reduce_lazy not below r, {at}");
            assert_eq!(value(red[i]), vb, "reduce_lazy {at}");
            // value() checks the other results are below 2r.
        }
    }
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn fr_lazy_ops_match_blstrs() {
    // The host emulation (the NTT's code path in CI) needs no GPU.
    check_lazy_ops(true);
    if gpu_or_skip() {
        check_lazy_ops(false);
    }
}
