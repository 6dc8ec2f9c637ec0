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
