//! `--pce-eval gpu`: A·w, B·w, C·w evaluated on the device from a recorded constraint
//! system give the quotient H of a full synthesis, bit for bit; a witness that does not
//! satisfy the recording fails at the same row as on the CPU. The `emulated` tests run the
//! kernels' per-thread code on the host (CI); the others need a GPU and skip visibly.

mod common;

use std::sync::Arc;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use cuzk_prove::prove::cpu::fft::quotient;
use cuzk_prove::prove::cuda::ntt::quotient_pce_to_device;
use cuzk_prove::prove::cuda::pce_eval::DevicePce;
use cuzk_prove::prove::cuda::DeviceScalars;
use cuzk_prove::synth::{self, pce, witness::Witness, Abc};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// A circuit with the PoRep circuit's kinds of rows: bits (b·(1 − b) = 0, coefficient
/// −1), long packing rows (Σ 2^i·b_i, many coefficients), products of field elements
/// with constant and input terms, and values 0, 1 and random. `bits` sets its size.
struct Toy {
    seed: u64,
    bits: usize,
}

impl Circuit<Fr> for Toy {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha20Rng::seed_from_u64(self.seed);
        let xv = Fr::random(&mut rng);
        let x = cs.alloc_input(|| "x", || Ok(xv))?;
        let mut bits = Vec::with_capacity(self.bits);
        for _ in 0..self.bits {
            let v = Fr::from((rng.next_u32() % 3 == 0) as u64);
            let b = cs.alloc(|| "bit", || Ok(v))?;
            cs.enforce(|| "bool", |lc| lc + b, |lc| lc + CS::one() - b, |lc| lc);
            bits.push((b, v));
        }
        for chunk in bits.chunks(64) {
            let (mut val, mut k) = (Fr::ZERO, Fr::ONE);
            for (_, v) in chunk {
                val += *v * k;
                k = k.double();
            }
            let p = cs.alloc(|| "packed", || Ok(val))?;
            cs.enforce(
                || "pack",
                |mut lc| {
                    let mut k = Fr::ONE;
                    for (b, _) in chunk {
                        lc = lc + (k, *b);
                        k = k.double();
                    }
                    lc
                },
                |lc| lc + CS::one(),
                |lc| lc + p,
            );
            // (3·x + packed + 5) · (packed − r) = y, with a random r.
            let rv = Fr::random(&mut rng);
            let r = cs.alloc(|| "r", || Ok(rv))?;
            let yv = (Fr::from(3u64) * xv + val + Fr::from(5u64)) * (val - rv);
            let y = cs.alloc(|| "y", || Ok(yv))?;
            cs.enforce(
                || "product",
                |lc| lc + (Fr::from(3u64), x) + p + (Fr::from(5u64), CS::one()),
                |lc| lc + p - r,
                |lc| lc + y,
            );
        }
        Ok(())
    }
}

fn check(emulate: bool) {
    for (seed, bits) in [(1u64, 1usize), (2, 200), (3, 3000)] {
        let toy = || Toy { seed, bits };
        let full = synth::synthesize(toy(), None).unwrap();
        let (_, recorded) = pce::synthesize_recording(toy()).unwrap();
        let recorded = Arc::new(recorded);
        let at = format!("bits = {bits}, emulate = {emulate}");

        // The CPU's deferred path gives the full synthesis's evaluations.
        let w = Witness {
            inputs: full.input_assignment.clone(),
            aux: full.aux_assignment.clone(),
        };
        let mut deferred = recorded.deferred(w).unwrap();
        assert!(matches!(deferred.abc, Abc::Deferred(_)));
        assert_eq!(deferred.num_constraints(), full.num_constraints(), "{at}");
        deferred.evaluate_on_host().unwrap();
        assert!(deferred == full, "{at}: deferred CPU evaluation differs");

        // On the device: H equals the CPU backend's H of the full synthesis.
        let dev = DevicePce::upload(&recorded, emulate, true).unwrap();
        let aux = DeviceScalars::upload(&full.aux_assignment, emulate).unwrap();
        let (h, _, _) = quotient_pce_to_device(&dev, &full.input_assignment, &aux).unwrap();
        let [a, b, c] = full.abc.evaluated().unwrap().map(<[_]>::to_vec);
        let cpu = quotient(a, b, c).unwrap();
        assert_eq!(h.len(), cpu.len(), "{at}");
        assert!(
            h.read().unwrap() == cpu,
            "{at}: H from the device PCE differs"
        );

        // A witness that breaks a row: the same error, at the same row, as on the CPU.
        let mut bad = full.aux_assignment.clone();
        let k = bad.len() / 2;
        bad[k] += Fr::ONE;
        let cpu_err = recorded
            .assignment(Witness {
                inputs: full.input_assignment.clone(),
                aux: bad.clone(),
            })
            .unwrap_err()
            .to_string();
        let bad = DeviceScalars::upload(&bad, emulate).unwrap();
        let err = format!(
            "{:#}",
            quotient_pce_to_device(&dev, &full.input_assignment, &bad).unwrap_err()
        );
        let row = |e: &str| {
            e.split(" at row ")
                .nth(1)
                .map(|r| r.split(' ').next().unwrap().to_string())
        };
        assert!(err.contains("witness does not satisfy constraint"), "{err}");
        assert_eq!(row(&err), row(&cpu_err), "{at}: {err} / {cpu_err}");

        // A witness of another shape is refused.
        let err = format!(
            "{:#}",
            quotient_pce_to_device(&dev, &full.input_assignment[1..], &aux).unwrap_err()
        );
        assert!(
            err.contains("pre-compiled constraint system is for"),
            "{err}"
        );
    }
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn pce_eval_quotient_matches_full_synthesis_emulated() {
    check(true);
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn pce_eval_quotient_matches_full_synthesis() {
    if !common::gpu_or_skip() {
        return;
    }
    check(false);
}
