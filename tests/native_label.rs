//! `--native-label`: witness generation with the labels' and tree D's SHA-256 computed
//! natively gives the gadgets' witness bit for bit, on the real 2KiB and 8MiB circuits (2
//! layers, binary and 8-ary trees) and on one challenge of generated 512MiB, 32GiB and
//! 64GiB C1s (11 layers, the production tree shapes); and a proof with it off is the
//! fixture's pinned proof.

mod common;

use common::*;
use cuzk_prove::circuit::{PartitionCircuits, Porep};
use cuzk_prove::cli::{Config, Device, Phase};
use cuzk_prove::input::c1::read_c1;
use cuzk_prove::pipeline;
use cuzk_prove::synth::witness;
use cuzk_prove::synthetic::gen_c1::{generate, Options};
use filecoin_proofs::constants::{
    SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
};
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;

fn porep<Tree: 'static + MerkleTreeTrait>(dir: &str, native: bool) -> Porep<Tree> {
    let c1 = read_c1(&root().join(dir).join("c1.json")).unwrap();
    let mut p = Porep::new(&c1.registered_proof.as_v1_config(), c1.output).unwrap();
    p.set_native_label(native);
    p
}

/// Partition 0, whole and in its parallel parts, native against the gadgets.
fn same_witness<Tree: 'static + MerkleTreeTrait>(dir: &str) {
    let native = porep::<Tree>(dir, true);
    let gadget = witness::witness(native.circuit(0).unwrap()).unwrap();
    let whole = native.witness_of(native.vanilla(0)).unwrap();
    assert_eq!(whole.inputs, gadget.inputs, "{dir}: inputs");
    assert_eq!(whole.aux.len(), gadget.aux.len(), "{dir}: aux length");
    assert!(whole.aux == gadget.aux, "{dir}: aux values");
    let parallel = native.witness(0).unwrap();
    assert!(parallel == gadget, "{dir}: the parallel parts joined");
    // And `off` really is the gadget path.
    let off = porep::<Tree>(dir, false);
    assert!(
        off.witness(0).unwrap() == gadget,
        "{dir}: --native-label off"
    );
}

#[test]
fn native_witness_equals_the_gadgets_2kib_8mib() {
    same_witness::<SectorShape2KiB>("testdata/2kib");
    same_witness::<SectorShape8MiB>("testdata/8mib");
}

/// One challenge of a C1 from gen-c1 at each larger size: 512MiB (2 layers), 32GiB and
/// 64GiB (11 labels of 20 SHA-256 blocks each, the U11 column hash, octal trees with
/// their sub and top arities).
fn same_challenge_witness<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof) {
    let g = generate(&Options {
        proof,
        miner_id: 1000,
        sector_num: 1,
        seed: [32; 32],
    })
    .unwrap();
    let mut p = Porep::<Tree>::new(&g.c1.registered_proof.as_v1_config(), g.c1).unwrap();
    let k = p.partitions() - 1;
    let one = &p.vanilla(k)[1..2].to_vec();
    let gadget = witness::witness(p.circuit_of(one).unwrap()).unwrap();
    let native = p.witness_of(one).unwrap();
    assert_eq!(native.inputs, gadget.inputs, "{proof:?}: inputs");
    assert_eq!(native.aux.len(), gadget.aux.len(), "{proof:?}: aux length");
    assert!(native.aux == gadget.aux, "{proof:?}: aux values");
    p.set_native_label(false);
    assert!(p.witness_of(one).unwrap() == gadget, "{proof:?}: off");
}

#[test]
fn native_witness_equals_the_gadgets_512mib_32gib_64gib_challenge() {
    same_challenge_witness::<SectorShape512MiB>(RegisteredSealProof::StackedDrg512MiBV1_1);
    same_challenge_witness::<SectorShape32GiB>(RegisteredSealProof::StackedDrg32GiBV1_1);
    same_challenge_witness::<SectorShape64GiB>(RegisteredSealProof::StackedDrg64GiBV1_1);
}

/// A whole proof from a PCE cache with the native witness off gives the fixture's pinned
/// proof (same r, s; tests/e2e.rs), verified by filecoin-proofs' verify_seal. (With it on,
/// the default, tests/pce.rs proves from a cache the same way.)
#[test]
fn proofs_with_native_labels_off_are_the_same() {
    let cache = ensure_params("StackedDrg2KiBV1_1");
    let dir = scratch("native-label");
    let config = |native: bool, out: &str| {
        let mut cfg = Config::new(fixture_c1(), Some(dir.join(out)));
        cfg.param_cache = cache.to_path_buf();
        cfg.device = Device::Cpu;
        cfg.pce_cache = Some(dir.clone());
        cfg.pce = true;
        cfg.native_label = native;
        cfg.rng_seed = Some(5);
        cfg.quiet = true;
        cfg
    };
    // The first run records the cache; up to synthesis is enough for that.
    let mut record = config(true, "record.bin");
    record.stop_after = Some(Phase::Synth);
    let recorded = pipeline::run(&record).unwrap();
    assert_eq!(recorded.report["pce"]["source"], "recorded");
    let off = pipeline::run(&config(false, "off.bin")).unwrap();
    assert_eq!(off.report["pce"]["source"], "loaded");
    assert_eq!(hex(&off.proof), GOLDEN_2KIB_SEED_5);
    assert!(verify_seal(&fixture_meta(), &off.proof));
}
