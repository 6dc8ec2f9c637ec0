//! `--pce`: the recorded constraint system plus witness-only synthesis gives exactly the
//! assignment of a full synthesis, survives a round trip through its cache file, refuses
//! damaged (one byte in any section) or foreign recordings clearly, is recorded in
//! parallel blocks equal to the serial recording, and proves end to end.

mod common;

use common::*;
use cuzk_prove::circuit::Porep;
use cuzk_prove::cli::{Config, Device};
use cuzk_prove::input::c1::read_c1;
use cuzk_prove::pipeline;
use cuzk_prove::synth::{self, pce, witness};
use filecoin_proofs::constants::{SectorShape2KiB, SectorShape32GiB, SectorShape8MiB};
use filecoin_proofs::types::MerkleTreeTrait;

fn porep<Tree: 'static + MerkleTreeTrait>(dir: &str) -> Porep<Tree> {
    let c1 = read_c1(&root().join(dir).join("c1.json")).unwrap();
    Porep::new(&c1.registered_proof.as_v1_config(), c1.output).unwrap()
}

/// Recording changes nothing; witness + recording = full synthesis, bit for bit.
fn same_assignment<Tree: 'static + MerkleTreeTrait>(dir: &str) -> pce::Pce {
    let p = porep::<Tree>(dir);
    let full = synth::synthesize(p.circuit(0).unwrap(), None).unwrap();
    let (recorded, pce) = pce::synthesize_recording(p.circuit(0).unwrap()).unwrap();
    assert!(recorded == full, "{dir}: recording changed the synthesis");
    assert_eq!(pce.constraints(), full.num_constraints());
    let w = witness::witness(p.circuit(0).unwrap()).unwrap();
    assert_eq!(w.inputs, full.input_assignment, "{dir}: witness inputs");
    assert!(w.aux == full.aux_assignment, "{dir}: witness aux");
    let via_pce = pce.assignment(w).unwrap();
    assert!(
        via_pce == full,
        "{dir}: PCE assignment differs from full synthesis"
    );
    pce
}

#[test]
fn pce_assignment_equals_full_synthesis_and_round_trips() {
    let pce2k = same_assignment::<SectorShape2KiB>("testdata/2kib");
    let pce8m = same_assignment::<SectorShape8MiB>("testdata/8mib");

    // Tiled (bench-gpu --pce-c1): two copies evaluate to the evaluations twice over.
    let full = synth::synthesize(
        porep::<SectorShape2KiB>("testdata/2kib")
            .circuit(0)
            .unwrap(),
        None,
    )
    .unwrap();
    let twice = pce2k.tiled(2).unwrap();
    assert_eq!(
        (twice.constraints(), twice.aux),
        (2 * pce2k.constraints(), 2 * pce2k.aux)
    );
    let [a, b, c] = twice
        .evaluations(&full.input_assignment, &full.aux_assignment.repeat(2))
        .unwrap();
    let [fa, fb, fc] = full.abc.evaluated().unwrap();
    assert!(a == fa.repeat(2) && b == fb.repeat(2) && c == fc.repeat(2));
    drop((a, b, c, full, twice));

    // Through the file and back.
    let dir = scratch("pce-file");
    let path = dir.join("2k.pce");
    let id = pce::Identity {
        vk_digest: "0123456789abcdef".repeat(2),
        circuit: "the 2KiB circuit".into(),
    };
    pce2k.save(&path, false, &id).unwrap();
    let loaded = pce::Pce::load(&path, &id).unwrap();
    assert!(loaded == pce2k, "the loaded recording differs");

    // A recording for another circuit is refused by shape.
    let w8 = witness::witness(
        porep::<SectorShape8MiB>("testdata/8mib")
            .circuit(0)
            .unwrap(),
    )
    .unwrap();
    let err = pce2k.assignment(w8).unwrap_err().to_string();
    assert!(err.contains("a cache file for another circuit?"), "{err}");
    drop(pce8m);

    damaged_files_are_refused(&path, &id);
}

/// Damaged copies of the recording at `path`: cut short, a wrong magic, an implausible
/// header, one flipped byte in each section: refused by the load before use. Damage with
/// its digest made anew (a wrong writer): loaded, refused by the evaluation.
fn damaged_files_are_refused(path: &std::path::Path, id: &pce::Identity) {
    let bytes = std::fs::read(path).unwrap();
    let (_, sections) = pce::Pce::frame(path).unwrap();
    let bad = path.with_file_name("bad.pce");
    let refused = |b: &[u8]| {
        std::fs::write(&bad, b).unwrap();
        format!("{:#}", pce::Pce::load(&bad, id).unwrap_err())
    };
    let err = refused(&bytes[..bytes.len() - 9]);
    assert!(
        err.starts_with("pre-compiled constraint system") && err.ends_with("(damaged)"),
        "{err}"
    );
    assert!(format!("{:#}", pce::Pce::probe(&bad, id).unwrap_err()).contains("cut short"));
    // A header claiming 2^40 rows (the third of the four counts that end the header):
    // refused before anything that size is allocated.
    let mut b = bytes.clone();
    let end = sections[0].1.end as usize;
    b[end - 16..end - 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(refused(&b).contains("implausible header"));
    let mut b = bytes.clone();
    b[0] ^= 1;
    assert!(refused(&b).contains("not a cuzk-prove PCE file"));
    // One byte in the middle of each section after the header.
    for (name, r) in &sections[1..] {
        let mut b = bytes.clone();
        b[((r.start + r.end) / 2) as usize] ^= 0x10;
        let err = refused(&b);
        assert!(err.contains("do not match their digest"), "{name}: {err}");
    }
    // The last coefficient index (before the digest) pointed at another coefficient, the
    // digest made anew: the file loads, the evaluation refuses it.
    let mut b = bytes.clone();
    let n = b.len() - 32;
    let last = u32::from_le_bytes(b[n - 4..n].try_into().unwrap());
    b[n - 4..n].copy_from_slice(&(if last == 0 { 1u32 } else { 0 }).to_le_bytes());
    let digest = blake3::hash(&b[..n]);
    b[n..].copy_from_slice(digest.as_bytes());
    std::fs::write(&bad, &b).unwrap();
    let damaged = pce::Pce::load(&bad, id).unwrap();
    let w = witness::witness(
        porep::<SectorShape2KiB>("testdata/2kib")
            .circuit(0)
            .unwrap(),
    )
    .unwrap();
    let err = damaged.assignment(w).unwrap_err().to_string();
    assert!(err.contains("witness does not satisfy constraint"), "{err}");
}

#[test]
fn pce_cache_proves_and_filecoin_proofs_verifies() {
    let cache = scratch("pce-cache");
    let prove_with = |device, overlap_synth| {
        let mut cfg = Config::new(fixture_c1(), None);
        cfg.overlap_synth = overlap_synth;
        cfg.param_cache = param_cache().to_path_buf();
        cfg.device = device;
        cfg.rng_seed = Some(5);
        cfg.quiet = true;
        cfg.pce = true;
        cfg.pce_cache = Some(cache.clone());
        pipeline::run(&cfg).unwrap()
    };
    let prove_on = |device| prove_with(device, true);
    let prove = || prove_on(Device::Cpu);
    let recorded = prove();
    assert!(recorded
        .timings
        .get("record PCE (beside synthesis)")
        .is_some());
    assert!(recorded.timings.get("save PCE (beside proving)").is_some());
    assert_eq!(recorded.report["pce"]["source"], "recorded");
    // r, s from seed 5: the fixture's pinned proof, as a full synthesis gives it
    // (tests/e2e.rs).
    assert_eq!(hex(&recorded.proof), GOLDEN_2KIB_SEED_5, "recording run");
    let loaded = prove();
    // --overlap-synth (default) loads the file beside the witness tasks, off before them.
    assert!(loaded.timings.get("load PCE (beside synthesis)").is_some());
    assert!(loaded.timings.get("save PCE (beside proving)").is_none());
    assert_eq!(loaded.report["pce"]["source"], "loaded");
    assert_eq!(recorded.proof, loaded.proof);
    assert!(verify_seal(&fixture_meta(), &loaded.proof));
    let serial = prove_with(Device::Cpu, false);
    assert!(serial.timings.get("load PCE").is_some());
    assert_eq!(serial.proof, loaded.proof, "--overlap-synth off");
    // --device auto: a CUDA build leaves A·w, B·w, C·w to the backend (--pce-eval gpu),
    // which evaluates them on the GPU: the same proof. Without a GPU (CI's CUDA build)
    // that run is the CPU backend evaluating what was left for the absent GPU, the path
    // every plain command of tests/plain_command.rs takes there (its proofs checked by
    // verify_seal): not proved once more here (a 2KiB CPU proof is ~1 min of the suite on
    // 2 cores).
    if common::gpu_or_skip() {
        let auto = prove_on(Device::Auto);
        assert_eq!(auto.proof, loaded.proof, "--device auto with a PCE cache");
        assert_eq!(auto.report["backend"], "cuda");
    }
    // The recorded system is about half a gigabyte: not left for the tests after this one.
    std::fs::remove_dir_all(&cache).unwrap();
}

/// The constraint system recorded in parallel blocks (the witness tasks' circuits) and
/// joined is the serial recording of the whole circuit, bit for bit: the fixtures'
/// challenges repeated into longer lists (3 and 5 challenges: 2 and 4 blocks), and the
/// first three challenges of a generated 32GiB C1 (11 layers, octal trees: block 0 with
/// challenges 0 and 1, block 1 with challenge 2 at its offsets).
#[test]
fn parallel_recording_equals_serial() {
    fn check<Tree: 'static + MerkleTreeTrait>(
        p: &Porep<Tree>,
        proofs: &[storage_proofs_porep::stacked::Proof<
            Tree,
            filecoin_proofs::constants::DefaultPieceHasher,
        >],
        what: &str,
    ) {
        let (_, serial) = pce::synthesize_recording(p.circuit_of(proofs).unwrap()).unwrap();
        let parallel = p.record_parallel(proofs).unwrap();
        assert_eq!(parallel.nnz(), serial.nnz(), "{what}: terms");
        assert!(parallel == serial, "{what}: parallel recording differs");
    }
    fn repeated<Tree: 'static + MerkleTreeTrait>(dir: &str) {
        let p = porep::<Tree>(dir);
        let v = p.vanilla(0);
        for idx in [vec![0, 1, 0], vec![1, 0, 1, 1, 0], vec![0, 1]] {
            let proofs: Vec<_> = idx.iter().map(|&i| v[i].clone()).collect();
            check(&p, &proofs, &format!("{dir} {idx:?}"));
        }
    }
    repeated::<SectorShape2KiB>("testdata/2kib");
    repeated::<SectorShape8MiB>("testdata/8mib");
    let g = cuzk_prove::synthetic::gen_c1::generate(&cuzk_prove::synthetic::gen_c1::Options {
        proof: filecoin_proofs_api::RegisteredSealProof::StackedDrg32GiBV1_1,
        miner_id: 1000,
        sector_num: 1,
        seed: [24; 32],
    })
    .unwrap();
    let p = Porep::<SectorShape32GiB>::new(&g.c1.registered_proof.as_v1_config(), g.c1).unwrap();
    check(&p, &p.vanilla(0)[..3], "32GiB, 3 challenges");
}

/// Challenges generated in parallel and joined give the witness of the whole circuit.
/// The fixtures have two challenges per partition (below the parallel threshold), so the
/// test repeats them into longer lists; the circuit does not mind repeated challenges.
#[test]
fn parallel_challenge_witness_equals_serial() {
    fn check<Tree: 'static + MerkleTreeTrait>(dir: &str) {
        let p = porep::<Tree>(dir);
        let v = p.vanilla(0);
        for idx in [vec![0, 1, 0], vec![1, 0, 1, 1, 0], vec![0, 1]] {
            let proofs: Vec<_> = idx.iter().map(|&i| v[i].clone()).collect();
            let serial = witness::witness(p.circuit_of(&proofs).unwrap()).unwrap();
            let parallel = p.witness_parallel(&proofs).unwrap();
            assert!(
                parallel == serial,
                "{dir} {idx:?}: parallel witness differs"
            );
        }
    }
    check::<SectorShape2KiB>("testdata/2kib");
    check::<SectorShape8MiB>("testdata/8mib");
}
