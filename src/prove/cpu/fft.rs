//! Radix-2 FFT over Fr and the quotient polynomial H = (A·B − C) / Z, computed as
//! bellperson does: iFFT, coset FFT (coset generator = Fr's multiplicative generator),
//! pointwise A·B − C, division by Z(g) = gⁿ − 1, coset iFFT; the n − 1 low coefficients
//! are kept (the top one is zero for a satisfied circuit).

use anyhow::{ensure, Result};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use rayon::prelude::*;

pub struct Domain {
    pub log_n: u32,
    pub n: usize,
    omega: Fr,
    omega_inv: Fr,
    n_inv: Fr,
}

impl Domain {
    /// The smallest power-of-two domain holding `len` evaluations.
    pub fn for_len(len: usize) -> Result<Self> {
        let n = len.max(1).next_power_of_two();
        let log_n = n.trailing_zeros();
        ensure!(
            log_n <= Fr::S,
            "domain 2^{log_n} exceeds Fr's two-adicity 2^{}",
            Fr::S
        );
        let mut omega = Fr::ROOT_OF_UNITY;
        for _ in log_n..Fr::S {
            omega = omega.square();
        }
        Ok(Self {
            log_n,
            n,
            omega,
            omega_inv: omega.invert().unwrap(),
            n_inv: Fr::from(n as u64).invert().unwrap(),
        })
    }

    pub fn fft(&self, a: &mut [Fr]) {
        fft_in_place(a, self.omega, self.log_n);
    }

    pub(crate) fn ifft(&self, a: &mut [Fr]) {
        fft_in_place(a, self.omega_inv, self.log_n);
        let n_inv = self.n_inv;
        a.par_iter_mut()
            .with_min_len(1 << 14)
            .for_each(|x| *x *= n_inv);
    }

    pub(crate) fn coset_fft(&self, a: &mut [Fr]) {
        distribute_powers(a, Fr::MULTIPLICATIVE_GENERATOR);
        self.fft(a);
    }

    pub(crate) fn icoset_fft(&self, a: &mut [Fr]) {
        self.ifft(a);
        distribute_powers(a, Fr::MULTIPLICATIVE_GENERATOR.invert().unwrap());
    }
}

/// a[i] *= g^i.
fn distribute_powers(a: &mut [Fr], g: Fr) {
    const CHUNK: usize = 1 << 14;
    a.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let mut w = g.pow_vartime([(c * CHUNK) as u64]);
        for x in chunk {
            *x *= w;
            w *= g;
        }
    });
}

fn bit_reverse(a: &mut [Fr], log_n: u32) {
    if log_n == 0 {
        return;
    }
    let shift = usize::BITS - log_n;
    for i in 0..a.len() {
        let j = i.reverse_bits() >> shift;
        if i < j {
            a.swap(i, j);
        }
    }
}

/// Iterative Cooley–Tukey, decimation in time, natural order in and out.
fn fft_in_place(a: &mut [Fr], omega: Fr, log_n: u32) {
    let n = a.len();
    assert_eq!(n, 1 << log_n);
    if n == 1 {
        return;
    }
    bit_reverse(a, log_n);
    // twiddles[j] = omega^j for j < n/2; stage with half-size `half` uses stride n/(2·half).
    let half_n = n / 2;
    let mut twiddles = vec![Fr::ZERO; half_n];
    const CHUNK: usize = 1 << 12;
    twiddles
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut w = omega.pow_vartime([(c * CHUNK) as u64]);
            for t in chunk {
                *t = w;
                w *= omega;
            }
        });
    let mut half = 1;
    while half < n {
        let stride = half_n / half;
        let tw = &twiddles;
        let butterfly = |j: usize, lo: &mut Fr, hi: &mut Fr| {
            let t = *hi * tw[j * stride];
            *hi = *lo - t;
            *lo += t;
        };
        if n / (2 * half) >= 64 {
            a.par_chunks_mut(2 * half).for_each(|block| {
                let (lo, hi) = block.split_at_mut(half);
                for (j, (l, h)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                    butterfly(j, l, h);
                }
            });
        } else {
            for block in a.chunks_mut(2 * half) {
                let (lo, hi) = block.split_at_mut(half);
                lo.par_iter_mut()
                    .zip(hi.par_iter_mut())
                    .enumerate()
                    .with_min_len(1 << 12)
                    .for_each(|(j, (l, h))| butterfly(j, l, h));
            }
        }
        half *= 2;
    }
}

/// The coefficients of H, `domain − 1` of them, from the A, B, C evaluations.
pub fn quotient(mut a: Vec<Fr>, mut b: Vec<Fr>, mut c: Vec<Fr>) -> Result<Vec<Fr>> {
    ensure!(
        a.len() == b.len() && b.len() == c.len(),
        "A, B, C lengths differ"
    );
    let d = Domain::for_len(a.len())?;
    for v in [&mut a, &mut b, &mut c] {
        v.resize(d.n, Fr::ZERO);
    }
    rayon::join(
        || rayon::join(|| d.ifft(&mut a), || d.ifft(&mut b)),
        || d.ifft(&mut c),
    );
    rayon::join(
        || rayon::join(|| d.coset_fft(&mut a), || d.coset_fft(&mut b)),
        || d.coset_fft(&mut c),
    );
    // Z(x) = xⁿ − 1 is the constant gⁿ − 1 on the coset g·H.
    let z_inv = (Fr::MULTIPLICATIVE_GENERATOR.pow_vartime([d.n as u64]) - Fr::ONE)
        .invert()
        .unwrap();
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .with_min_len(1 << 14)
        .for_each(|((x, y), z)| *x = (*x * y - z) * z_inv);
    drop((b, c));
    d.icoset_fft(&mut a);
    a.truncate(d.n - 1);
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn naive_eval(coeffs: &[Fr], x: Fr) -> Fr {
        coeffs.iter().rev().fold(Fr::ZERO, |acc, c| acc * x + c)
    }

    #[test]
    fn fft_matches_naive_evaluation_and_inverts() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for log_n in [0u32, 1, 3, 7, 9] {
            let d = Domain::for_len(1 << log_n).unwrap();
            let coeffs: Vec<Fr> = (0..d.n).map(|_| Fr::random(&mut rng)).collect();
            let mut v = coeffs.clone();
            d.fft(&mut v);
            let mut x = Fr::ONE;
            for e in &v {
                assert_eq!(*e, naive_eval(&coeffs, x));
                x *= d.omega;
            }
            d.ifft(&mut v);
            assert_eq!(v, coeffs);
            d.coset_fft(&mut v);
            d.icoset_fft(&mut v);
            assert_eq!(v, coeffs);
        }
    }

    /// Recursive radix-2 (even and odd halves), the definition written differently.
    fn reference_fft(a: &[Fr], omega: Fr) -> Vec<Fr> {
        let n = a.len();
        if n == 1 {
            return a.to_vec();
        }
        let even: Vec<Fr> = a.iter().step_by(2).copied().collect();
        let odd: Vec<Fr> = a.iter().skip(1).step_by(2).copied().collect();
        let (e, o) = (
            reference_fft(&even, omega.square()),
            reference_fft(&odd, omega.square()),
        );
        let mut out = vec![Fr::ZERO; n];
        let mut w = Fr::ONE;
        for k in 0..n / 2 {
            out[k] = e[k] + w * o[k];
            out[k + n / 2] = e[k] - w * o[k];
            w *= omega;
        }
        out
    }

    /// Sizes where the stages go parallel by blocks and then within the last blocks
    /// (naive evaluation is too slow there).
    #[test]
    fn fft_matches_the_recursive_definition_at_larger_sizes() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for log_n in [11u32, 13, 17] {
            let d = Domain::for_len(1 << log_n).unwrap();
            let coeffs: Vec<Fr> = (0..d.n).map(|_| Fr::random(&mut rng)).collect();
            let mut v = coeffs.clone();
            d.fft(&mut v);
            assert!(v == reference_fft(&coeffs, d.omega), "2^{log_n}");
            d.ifft(&mut v);
            assert!(v == coeffs, "2^{log_n} round trip");
        }
    }

    #[test]
    fn quotient_divides_exactly() {
        // A·B − C vanishing on the domain: pick a, b at random, c = a·b pointwise.
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let n = 100; // padded to 128
        let a: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let b: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let c: Vec<Fr> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
        let h = quotient(a.clone(), b.clone(), c.clone()).unwrap();
        assert_eq!(h.len(), 127);
        // Check A(x)B(x) − C(x) = H(x)·(xⁿ − 1) at a random point.
        let d = Domain::for_len(n).unwrap();
        let interp = |v: &[Fr]| {
            let mut v = v.to_vec();
            v.resize(d.n, Fr::ZERO);
            d.ifft(&mut v);
            v
        };
        let (pa, pb, pc) = (interp(&a), interp(&b), interp(&c));
        let x = Fr::random(&mut rng);
        let lhs = naive_eval(&pa, x) * naive_eval(&pb, x) - naive_eval(&pc, x);
        let rhs = naive_eval(&h, x) * (x.pow_vartime([d.n as u64]) - Fr::ONE);
        assert_eq!(lhs, rhs);
    }
}
