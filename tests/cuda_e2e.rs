//! The CUDA backend end to end: with the same r, s the GPU proof equals the CPU proof byte
//! for byte, and filecoin-proofs' `verify_seal` accepts it, for the 2KiB and 8MiB fixtures
//! (sealed for real). Skipped, visibly, without a CUDA build or a GPU.

mod common;

use common::*;
use cuzk_prove::cli::{Config, Device, PceEval, SrsDecode, BG2};
use cuzk_prove::pipeline;
use cuzk_prove::synthetic::meta::Meta;

fn prove(c1: &str, device: Device, seed: u64) -> pipeline::Outcome {
    prove_with(c1, device, seed, |_| {})
}

fn prove_with(
    c1: &str,
    device: Device,
    seed: u64,
    set: impl FnOnce(&mut Config),
) -> pipeline::Outcome {
    let mut cfg = Config::new(root().join(c1), None);
    cfg.param_cache = param_cache().to_path_buf();
    cfg.device = device;
    cfg.rng_seed = Some(seed);
    cfg.quiet = true;
    set(&mut cfg);
    pipeline::run(&cfg).unwrap()
}

#[test]
#[cfg_attr(
    not(cuzk_cuda),
    ignore = "SKIPPED: built without CUDA (nvcc not found)"
)]
fn gpu_proof_equals_cpu_proof_and_verifies() {
    if !gpu_or_skip() {
        return;
    }
    for (dir, size, proof) in [
        ("testdata/2kib", "2KiB", "StackedDrg2KiBV1_1"),
        ("testdata/8mib", "8MiB", "StackedDrg8MiBV1_1"),
    ] {
        ensure_params(proof);
        let meta: Meta =
            serde_json::from_slice(&std::fs::read(root().join(dir).join("meta.json")).unwrap())
                .unwrap();
        let c1 = format!("{dir}/c1.json");
        let cpu = prove(&c1, Device::Cpu, 7);
        // Twice: the first run includes CUDA context creation and module loading.
        let _ = prove(&c1, Device::Cuda, 8);
        let gpu = prove(&c1, Device::Cuda, 7);
        eprintln!("{size} CPU:\n{}", cpu.timings.table());
        eprintln!("{size} GPU:\n{}", gpu.timings.table());
        assert_eq!(gpu.report["backend"], "cuda");
        assert_eq!(gpu.proof, cpu.proof, "{size}: GPU and CPU proofs differ");
        assert!(
            verify_seal(&meta, &gpu.proof),
            "{size}: verify_seal rejected the GPU proof"
        );
        // Every optimization off, and B in G2 on the host: still the same proof.
        let plain = prove_with(&c1, Device::Cuda, 7, |c| {
            c.split_msm = false;
            c.b_g2 = BG2::Cpu;
            c.srs_decode = SrsDecode::Cpu;
        });
        // The aux assignment sent packed and unpacked on the GPU (--pack-aux on): the
        // same proof.
        let packed = prove_with(&c1, Device::Cuda, 7, |c| c.pack_aux = true);
        assert_eq!(
            packed.proof, cpu.proof,
            "{size}: GPU proof with --pack-aux on differs"
        );
        // Sections copied from pageable memory (--pin off): the same proof.
        let pageable = prove_with(&c1, Device::Cuda, 7, |c| c.pin = false);
        assert_eq!(
            pageable.proof, cpu.proof,
            "{size}: GPU proof with --pin off differs"
        );
        assert_eq!(
            plain.proof, cpu.proof,
            "{size}: GPU proof without the split MSM and GPU decoding, B in G2 on the CPU, differs"
        );
        // --pce from a cache file, A·w, B·w, C·w on the GPU (--pce-eval gpu) and on the
        // host: the same proof. The first run records (in parallel blocks) and saves the
        // recording, the others read it.
        let cache = scratch(&format!("pce-gpu-{size}"));
        let pce = |eval| {
            prove_with(&c1, Device::Cuda, 7, |c| {
                c.pce_cache = Some(cache.clone());
                c.pce = true;
                c.pce_eval = eval;
            })
        };
        let recorded = pce(PceEval::Gpu);
        assert!(recorded.timings.get("save PCE (beside proving)").is_some());
        assert_eq!(recorded.report["pce"]["source"], "recorded");
        let on_gpu = pce(PceEval::Gpu);
        eprintln!("{size} GPU, --pce-eval gpu:\n{}", on_gpu.timings.table());
        // Uploaded ahead when synthesis had it (`--upload-ahead`, the default), else by
        // the first partition.
        assert!(
            on_gpu
                .timings
                .get("  upload PCE matrices (GPU, beside synthesis)")
                .is_some()
                || on_gpu
                    .timings
                    .get("upload PCE matrices (GPU, once per run)")
                    .is_some(),
            "the recording went to the GPU"
        );
        assert_eq!(on_gpu.report["pce"]["eval"], "backend");
        assert_eq!(
            on_gpu.proof, cpu.proof,
            "{size}: --pce-eval gpu proof differs"
        );
        let on_host = pce(PceEval::Cpu);
        assert_eq!(on_host.report["pce"]["eval"], "cpu");
        assert_eq!(
            on_host.proof, cpu.proof,
            "{size}: --pce-eval cpu proof differs"
        );
        // The first partition waiting for the SRS only before its H MSM, or for each
        // section before its MSM, as it arrives (CUZK_EARLY_SRS, read when the backend is
        // made; this is the binary's only test, so nothing else reads the environment
        // meanwhile): the same proof.
        // Each section 300 ms later (CUZK_TEST_SECTION_DELAY_MS), so that the first
        // partition finds them still arriving.
        for (mode, row) in [
            ("whole", "wait for the GPU prefetch"),
            ("1", "wait for the GPU prefetch (section b_g1)"),
        ] {
            std::env::set_var("CUZK_EARLY_SRS", mode);
            std::env::set_var("CUZK_TEST_SECTION_DELAY_MS", "300");
            let early = pce(PceEval::Gpu);
            std::env::remove_var("CUZK_EARLY_SRS");
            std::env::remove_var("CUZK_TEST_SECTION_DELAY_MS");
            eprintln!(
                "{size} GPU, CUZK_EARLY_SRS={mode}:\n{}",
                early.timings.table()
            );
            assert!(
                early.timings.get(row).is_some(),
                "{size}, CUZK_EARLY_SRS={mode}: no row '{row}'"
            );
            assert_eq!(
                early.proof, cpu.proof,
                "{size}: proof with CUZK_EARLY_SRS={mode} differs"
            );
        }
        std::fs::remove_dir_all(&cache).unwrap();
    }
}
