//! End to end on the bundled, really sealed 2KiB C1, checked by filecoin-proofs' verifier.

mod common;

use std::ffi::OsStr;

use base64::Engine;
use common::*;

#[test]
fn proves_the_2kib_fixture_and_filecoin_proofs_verifies_it() {
    let dir = scratch("e2e");
    let out = dir.join("proof.bin");
    let json = dir.join("report.json");
    let cache = param_cache();
    let res = run(&[
        OsStr::new("--c1"),
        fixture_c1().as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
        OsStr::new("--param-cache"),
        cache.as_os_str(),
        OsStr::new("--device"),
        OsStr::new("cpu"),
        OsStr::new("--miner-id"),
        OsStr::new("1000"),
        OsStr::new("--timings"),
        OsStr::new("--json"),
        json.as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "cuzk-prove failed: {stderr}");
    for phase in [
        "read C1",
        "map + check SRS",
        "build circuits",
        "synthesis",
        "MSM h",
        "MSM b_g2",
        "verify",
        "write proof",
        "total",
    ] {
        assert!(
            stderr.contains(phase),
            "timing table lacks '{phase}': {stderr}"
        );
    }

    let proof = std::fs::read(&out).unwrap();
    assert_eq!(proof.len(), 192, "one partition → 192 bytes");
    let meta = fixture_meta();
    assert!(
        verify_seal(&meta, &proof),
        "filecoin-proofs rejects our proof"
    );

    // Any flipped byte must make it fail.
    for pos in [0usize, 50, 100, 191] {
        let mut bad = proof.clone();
        bad[pos] ^= 0x01;
        assert!(
            !verify_seal(&meta, &bad),
            "flipped byte {pos} still verifies"
        );
    }

    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["c1"]["registered_proof"], "StackedDrg2KiBV1_1");
    assert_eq!(report["c1"]["format"], "Wrapper");
    assert_eq!(report["output"]["bytes"], 192);
    assert_eq!(report["verified"], true);
    assert_eq!(report["params"]["test_only"], true);
    assert!(
        stderr.contains("notice: using TEST-ONLY parameters"),
        "{stderr}"
    );
    assert_eq!(report["backend"], "cpu");
    let c = &report["circuit"];
    assert!(c["constraints"].as_u64().unwrap() > 0);
    assert_eq!(
        c["domain"].as_u64().unwrap(),
        c["constraints"].as_u64().unwrap().next_power_of_two()
    );
    assert!(report["timings_s"]["synthesis"].as_f64().unwrap() > 0.0);
    assert_eq!(report["flags"]["presize"], false);
}

#[test]
fn raw_c1_json_and_flag_variants_prove_too() {
    // Unwrap the fixture into the raw filecoin-proofs-api form.
    let dir = scratch("raw");
    let wrapper: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture_c1()).unwrap()).unwrap();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(wrapper["Phase1Out"].as_str().unwrap())
        .unwrap();
    let c1 = dir.join("raw.json");
    std::fs::write(&c1, raw).unwrap();
    let out = dir.join("proof.bin");
    let params = params_file();
    let res = run(&[
        OsStr::new("--c1"),
        c1.as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
        OsStr::new("--params"),
        params.as_os_str(),
        OsStr::new("--presize"),
        OsStr::new("--synth-threads"),
        OsStr::new("1"),
        OsStr::new("--partition"),
        OsStr::new("0"),
        OsStr::new("--max-circuits"),
        OsStr::new("1"),
        OsStr::new("--miner-id"),
        OsStr::new("1000"),
        OsStr::new("--sector-num"),
        OsStr::new("1"),
        OsStr::new("--quiet"),
    ]);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert!(
        res.stderr.is_empty(),
        "--quiet printed: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    let proof = std::fs::read(&out).unwrap();
    assert!(verify_seal(&fixture_meta(), &proof));
}

#[test]
fn stop_after_isolates_phases_and_writes_nothing() {
    let dir = scratch("stop");
    let cache = param_cache();
    for phase in ["parse", "srs", "synth"] {
        let json = dir.join(format!("{phase}.json"));
        let res = run(&[
            OsStr::new("--c1"),
            fixture_c1().as_os_str(),
            OsStr::new("--param-cache"),
            cache.as_os_str(),
            OsStr::new("--stop-after"),
            OsStr::new(phase),
            OsStr::new("--json"),
            json.as_os_str(),
        ]);
        assert!(
            res.status.success(),
            "{phase}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(report.get("output").is_none());
        assert_eq!(report["circuit"].is_object(), phase == "synth", "{phase}");
        assert_eq!(
            report["timings_s"].get("synthesis").is_some(),
            phase == "synth"
        );
    }
}

#[test]
fn wrong_miner_id_is_refused() {
    let dir = scratch("miner");
    let out = dir.join("proof.bin");
    let res = run(&[
        OsStr::new("--c1"),
        fixture_c1().as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
        OsStr::new("--miner-id"),
        OsStr::new("1001"),
        OsStr::new("--param-cache"),
        param_cache().as_os_str(),
    ]);
    assert!(!res.status.success());
    assert!(String::from_utf8_lossy(&res.stderr).contains("replica_id"));
    assert!(!out.exists());
}

/// `--overlap-synth` on (the default) and off give the same proof for the same r, s, with
/// a full synthesis (with a recording, recorded or loaded: tests/pce.rs, against the same
/// pinned proof; the scheduler itself, over several partitions: tests/overlap_synth.rs).
#[test]
fn overlap_synth_on_and_off_prove_the_same() {
    use cuzk_prove::cli::{Config, Device};
    let prove = |overlap: bool| {
        let mut cfg = Config::new(fixture_c1(), None);
        cfg.param_cache = param_cache().to_path_buf();
        cfg.device = Device::Cpu;
        cfg.rng_seed = Some(5);
        cfg.quiet = true;
        cfg.overlap_synth = overlap;
        cfg.pce = false;
        cuzk_prove::pipeline::run(&cfg).unwrap()
    };
    let off = prove(false);
    assert!(verify_seal(&fixture_meta(), &off.proof));
    // Pinned: the fixture's proof for the seeded test parameters and r, s from seed 5.
    // A refactor that changes a byte of it changed the prover.
    assert_eq!(
        hex(&off.proof),
        GOLDEN_2KIB_SEED_5,
        "the 2KiB fixture's proof changed"
    );
    let on = prove(true);
    assert_eq!(on.proof, off.proof, "--overlap-synth on");
    assert!(on.timings.get("synthesis").is_some());
    assert!(on
        .timings
        .get("  proving waited for synthesis (overlapped)")
        .is_some());
}
