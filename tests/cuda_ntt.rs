//! GPU NTT and quotient H against the CPU backend, bit for bit. Skipped, visibly, without
//! a CUDA build or a GPU.

mod common;

use common::gpu_or_skip;

use blstrs::Scalar as Fr;
use cuzk_prove::prove::cpu::fft::{quotient, Domain};
use cuzk_prove::prove::cuda;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn random(n: usize, rng: &mut ChaCha20Rng) -> Vec<Fr> {
    (0..n).map(|_| Fr::random(&mut *rng)).collect()
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn ntt_matches_cpu_fft_and_inverts() {
    if !gpu_or_skip() {
        return;
    }
    // 2^26: the first size whose last pass takes its twists from the two-product power
    // tables (smaller ones read every twist from a table of all of them).
    round_trips(&[1, 2, 3, 5, 10, 13, 16, 20, 26], 21);
    // All-zero and all-one vectors.
    for v in [Fr::ZERO, Fr::ONE] {
        let d = Domain::for_len(1 << 12).unwrap();
        let mut cpu = vec![v; 1 << 12];
        let mut gpu = cpu.clone();
        d.fft(&mut cpu);
        cuda::ntt::ntt(&mut gpu, false).unwrap();
        assert!(gpu == cpu);
    }
}

/// Every size up to two fused passes (the GPU's blocks hold 2^11 elements), small enough
/// for compute-sanitizer's racecheck.
#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn ntt_fused_passes_small() {
    if !gpu_or_skip() {
        return;
    }
    round_trips(&(1..=13).collect::<Vec<_>>(), 22);
}

/// GPU forward NTT of random vectors of 2^log_n equals the CPU FFT, and the inverse
/// gives them back.
fn round_trips(log_ns: &[u32], seed: u64) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    for &log_n in log_ns {
        let d = Domain::for_len(1 << log_n).unwrap();
        let coeffs = random(1 << log_n, &mut rng);
        let mut cpu = coeffs.clone();
        d.fft(&mut cpu);
        let mut gpu = coeffs.clone();
        cuda::ntt::ntt(&mut gpu, false).unwrap();
        assert!(gpu == cpu, "forward NTT 2^{log_n} differs from the CPU FFT");
        cuda::ntt::ntt(&mut gpu, true).unwrap();
        assert!(gpu == coeffs, "inverse NTT 2^{log_n} does not invert");
    }
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn quotient_matches_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(22);
    // Sizes padded to the next power of two, odd ones included; satisfied (c = a·b) and
    // unsatisfied (random c) evaluations: the two backends must agree either way.
    for n in [
        1usize,
        2,
        3,
        100,
        1000,
        4097,
        (1 << 16) + 3,
        1 << 20,
        2_687_961,
    ] {
        let a = random(n, &mut rng);
        let b = random(n, &mut rng);
        for satisfied in [true, false] {
            let c: Vec<Fr> = if satisfied {
                a.iter().zip(&b).map(|(x, y)| *x * y).collect()
            } else {
                random(n, &mut rng)
            };
            let cpu = quotient(a.clone(), b.clone(), c.clone()).unwrap();
            let (gpu, ms) = cuda::ntt::quotient(&a, &b, &c).unwrap();
            assert_eq!(gpu.len(), cpu.len(), "n = {n}");
            assert!(gpu == cpu, "H differs for n = {n} (satisfied: {satisfied})");
            if n > 1 << 19 {
                eprintln!("quotient n = {n}: {ms:.2} ms on the device");
            }
        }
    }
}

/// The kernels' per-thread code run on the host: checks the algorithm on machines without
/// a GPU (CI), against the CPU backend.
/// H left on the device (for the H MSM) holds what the host copy would.
fn check_quotient_to_device(emulate: bool) {
    let mut rng = ChaCha20Rng::seed_from_u64(24);
    for n in [1usize, 2, 5, 1000, 4097] {
        let (a, b, c) = (
            random(n, &mut rng),
            random(n, &mut rng),
            random(n, &mut rng),
        );
        let cpu = quotient(a.clone(), b.clone(), c.clone()).unwrap();
        let (h, _) = cuda::ntt::quotient_to_device(&a, &b, &c, emulate).unwrap();
        assert_eq!(h.len(), cpu.len(), "n = {n}");
        assert!(
            h.read().unwrap() == cpu,
            "H on the device differs for n = {n}"
        );
    }
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn quotient_to_device_matches_cpu() {
    if !gpu_or_skip() {
        return;
    }
    check_quotient_to_device(false);
}

/// The seven-transform quotient (`CUZK_H_TRANSFORMS=7`, kept for measuring) in the
/// emulation: the environment is read once a process, so this test runs its checks in a
/// child process of this test binary with it set.
#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn emulated_seven_transform_quotient_matches_cpu() {
    if common::rerun_with_env(
        "emulated_seven_transform_quotient_matches_cpu",
        "CUZK_H_TRANSFORMS",
        "7",
    ) {
        return;
    }
    check_quotient_to_device(true);
    check_quotient_emulated(&mut ChaCha20Rng::seed_from_u64(25));
}

/// Emulated quotients against the CPU backend's, for satisfied (c = a·b) and random c.
fn check_quotient_emulated(rng: &mut ChaCha20Rng) {
    for n in [1usize, 2, 3, 5, 100, 1000, 4097] {
        let a = random(n, rng);
        let b = random(n, rng);
        for satisfied in [true, false] {
            let c: Vec<Fr> = if satisfied {
                a.iter().zip(&b).map(|(x, y)| *x * y).collect()
            } else {
                random(n, rng)
            };
            let cpu = quotient(a.clone(), b.clone(), c.clone()).unwrap();
            let emu = cuda::ntt::quotient_emulated(&a, &b, &c).unwrap();
            assert!(
                emu == cpu,
                "emulated H differs for n = {n} (satisfied: {satisfied})"
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn emulated_ntt_and_quotient_match_cpu() {
    check_quotient_to_device(true);
    let mut rng = ChaCha20Rng::seed_from_u64(23);
    // The emulation's blocks hold 2^6 elements: these sizes meet passes of 1..6 stages, so
    // register groups of 1, 2 and 3 stages (remainders included) and their exchanges.
    for log_n in [1u32, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13] {
        let d = Domain::for_len(1 << log_n).unwrap();
        let coeffs = random(1 << log_n, &mut rng);
        let mut cpu = coeffs.clone();
        d.fft(&mut cpu);
        let mut emu = coeffs.clone();
        cuda::ntt::ntt_emulated(&mut emu, false).unwrap();
        assert!(emu == cpu, "emulated forward NTT 2^{log_n} differs");
        cuda::ntt::ntt_emulated(&mut emu, true).unwrap();
        assert!(
            emu == coeffs,
            "emulated inverse NTT 2^{log_n} does not invert"
        );
    }
    check_quotient_emulated(&mut rng);
}
