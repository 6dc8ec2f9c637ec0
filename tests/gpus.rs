//! `--gpus`: a sector's partitions proved on several device queues give the proofs of one
//! queue, bit for bit, whatever queue takes which partition; a queue that fails hands its
//! partition to another; the flag's bad values are one line. The bundled C1s have one
//! partition (and the sizes with ten need 47 GB of parameters), so the partitions here are
//! the 2KiB fixture's circuit with its two challenges in other orders: the 2KiB shape, so
//! the fixture's parameters prove them. Without a GPU the queues are the stand-in backend
//! of queues_testing.rs (a CPU proof of each would take ~30 s on CI's two cores); with
//! one, GPU queues are checked against the CPU backend, and the fixture's own partition
//! (the first) against the C1's public inputs.

mod common;

use std::ffi::OsStr;

use anyhow::Result;
use blstrs::Scalar as Fr;
use common::*;
use cuzk_prove::circuit::{PartitionCircuits, Porep};
use cuzk_prove::input::c1::read_c1;
use cuzk_prove::pipeline::queues_testing::{prove_partitions, TestProved, TestQueue};
use cuzk_prove::synth::{self, pce, witness::Witness, ProvingAssignment, SizeHint};
use filecoin_proofs::constants::SectorShape2KiB;

type Tree = SectorShape2KiB;
type Piece = filecoin_proofs::constants::DefaultPieceHasher;

/// The fixture's partition with its challenges in each of `orders`.
struct Reordered {
    porep: Porep<Tree>,
    orders: Vec<[usize; 2]>,
}

/// Partitions 0 and 4 are the same circuit (their proofs differ by their randomness).
const ORDERS: [[usize; 2]; 5] = [[0, 1], [1, 0], [1, 1], [0, 0], [0, 1]];

impl Reordered {
    fn new() -> Self {
        let c1 = read_c1(&fixture_c1()).unwrap();
        Self {
            porep: Porep::new(&c1.registered_proof.as_v1_config(), c1.output).unwrap(),
            orders: ORDERS.to_vec(),
        }
    }

    fn proofs(&self, k: usize) -> Vec<storage_proofs_porep::stacked::Proof<Tree, Piece>> {
        let v = self.porep.vanilla(0);
        self.orders[k].iter().map(|&i| v[i].clone()).collect()
    }
}

impl PartitionCircuits for Reordered {
    fn partitions(&self) -> usize {
        self.orders.len()
    }
    fn public_inputs(&self, _: usize) -> Result<Vec<Fr>> {
        unreachable!("not used by the stage")
    }
    fn check(&self, _: usize) -> Result<()> {
        unreachable!("not used by the stage")
    }
    fn synthesize(&self, k: usize, hint: Option<SizeHint>) -> Result<ProvingAssignment> {
        synth::synthesize(self.porep.circuit_of(&self.proofs(k))?, hint)
    }
    fn witness(&self, k: usize) -> Result<Witness> {
        self.porep.witness_parallel(&self.proofs(k))
    }
    fn witness_tasks(&self, _: usize) -> usize {
        self.porep.witness_tasks(0)
    }
    fn witness_task(&self, k: usize, j: usize) -> Result<Witness> {
        self.porep.witness_part(&self.proofs(k), j)
    }
    fn witness_join(&self, k: usize, parts: Vec<Witness>) -> Result<Witness> {
        self.porep.join_parts(&self.proofs(k), parts)
    }
    fn record_task(&self, k: usize, j: usize) -> Result<pce::Block> {
        self.porep.record_part(&self.proofs(k), j)
    }
    fn set_native_label(&mut self, on: bool) {
        self.porep.set_native_label(on)
    }
}

const SEED: u64 = 26;

fn prove(c: &Reordered, queues: &[TestQueue], overlap: bool) -> TestProved {
    prove_partitions(c, &params_file(), queues, overlap, SEED).unwrap()
}

/// Every partition proved exactly once, over the queues.
fn each_once(p: &TestProved) {
    let mut all: Vec<usize> = p.queues.iter().flat_map(|q| q.partitions.clone()).collect();
    all.sort();
    assert_eq!(all, (0..ORDERS.len()).collect::<Vec<_>>(), "{:?}", p.queues);
}

/// The fixture's own partition (position 0) verifies against the C1's public inputs;
/// positions 0 and 4 (the same circuit, their own randomness) differ.
fn partition_0_verifies(c: &Reordered, p: &TestProved) {
    use bellperson::groth16::Proof;
    let vk = cuzk_prove::input::srs::Srs::open(&params_file())
        .unwrap()
        .vk;
    let proof = Proof::read(&p.proofs[0][..]).unwrap();
    let inputs = c.porep.public_inputs(0).unwrap();
    cuzk_prove::verify::verify(&vk, &[(0, proof)], &[inputs]).unwrap();
    assert_ne!(p.proofs[0], p.proofs[4]);
}

/// Proofs differ where their partitions' assignments or randomness do.
fn all_distinct(p: &TestProved) {
    for (i, a) in p.proofs.iter().enumerate() {
        assert_eq!(a.len(), 192);
        assert!(
            p.proofs[i + 1..].iter().all(|b| a != b),
            "proof {i} repeated"
        );
    }
}

#[test]
fn one_two_and_three_queues_give_the_same_proofs() {
    let c = Reordered::new();
    let one = prove(&c, &[TestQueue::Cheap], true);
    each_once(&one);
    all_distinct(&one);
    for overlap in [true, false] {
        for n in 1..=3 {
            let several = prove(&c, &vec![TestQueue::Cheap; n], overlap);
            each_once(&several);
            assert_eq!(several.queues.len(), n);
            assert_eq!(several.proofs, one.proofs, "{n} queues, overlap {overlap}");
            for q in &several.queues {
                assert!(q.failed.is_none() && q.device == "stand-in", "{q:?}");
            }
        }
    }
    // Another seed, other proofs.
    let other = prove_partitions(&c, &params_file(), &[TestQueue::Cheap], true, SEED + 1).unwrap();
    assert!(other.proofs.iter().zip(&one.proofs).all(|(a, b)| a != b));
}

#[test]
fn a_failing_queue_hands_its_partition_to_another() {
    use TestQueue::{Cheap, Failing};
    let c = Reordered::new();
    let one = prove(&c, &[Cheap], true);
    // The failing queue fails on its first partition, or on its second (when it gets
    // one); either way the other queues prove everything, with the same proofs.
    for (at, queues) in [
        (0, vec![Failing(0), Cheap]),
        (1, vec![Cheap, Failing(1), Cheap]),
    ] {
        let p = prove(&c, &queues, true);
        each_once(&p);
        assert_eq!(p.proofs, one.proofs, "failing at {at}");
        let failed: Vec<_> = p.queues.iter().filter(|q| q.failed.is_some()).collect();
        assert!(failed.len() <= 1);
        assert!(at == 1 || failed.len() == 1);
        for f in failed {
            let why = f.failed.as_deref().unwrap();
            assert!(
                why.starts_with("partition ")
                    && why.ends_with(": failing stand-in: planted device failure"),
                "{why}"
            );
            assert_eq!(f.partitions.len(), at);
        }
    }
    // Only failing queues: the run ends with the last one's error.
    let e =
        prove_partitions(&c, &params_file(), &[Failing(0), Failing(0)], true, SEED).unwrap_err();
    assert!(
        format!("{e:#}").ends_with("failing stand-in: planted device failure"),
        "{e:#}"
    );
    // A single queue that fails: the run ends with its error.
    let e = prove_partitions(&c, &params_file(), &[Failing(2)], true, SEED).unwrap_err();
    let msg = format!("{e:#}");
    assert_eq!(msg, "partition 2: failing stand-in: planted device failure");
}

#[test]
fn two_queues_on_one_gpu_give_the_cpu_s_proofs() {
    if !gpu_or_skip() {
        return;
    }
    let c = Reordered::new();
    let cpu = prove(&c, &[TestQueue::Cpu], true);
    partition_0_verifies(&c, &cpu);
    for queues in [
        vec![TestQueue::Gpu(0)],
        vec![TestQueue::Gpu(0), TestQueue::Gpu(0)],
    ] {
        let gpu = prove(&c, &queues, true);
        each_once(&gpu);
        assert_eq!(gpu.proofs, cpu.proofs, "{} GPU queues", queues.len());
        assert!(gpu
            .queues
            .iter()
            .all(|q| q.device == "GPU 0" && q.gpu.is_some()));
    }
    // A GPU queue beside a failing one.
    let p = prove(&c, &[TestQueue::Failing(0), TestQueue::Gpu(0)], true);
    each_once(&p);
    assert_eq!(p.proofs, cpu.proofs);
}

#[test]
fn bad_gpus_values_are_one_line() {
    for (bad, says) in [
        ("", "--gpus must be all or a comma-separated list"),
        ("0,,1", "--gpus must be all or a comma-separated list"),
        ("first", "--gpus must be all or a comma-separated list"),
        ("64", "--gpus must be all or a comma-separated list"),
    ] {
        let out = run(&[
            OsStr::new("--c1"),
            fixture_c1().as_os_str(),
            OsStr::new("-o"),
            OsStr::new("/nonexistent/p.bin"),
            OsStr::new("--gpus"),
            OsStr::new(bad),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--gpus '{bad}': {err}");
        assert!(err.contains(says), "--gpus '{bad}': {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "--gpus '{bad}': {err}");
    }
    // --gpu N is the one-GPU spelling of --gpus N: not both.
    let out = run(&[
        OsStr::new("--c1"),
        fixture_c1().as_os_str(),
        OsStr::new("-o"),
        OsStr::new("/nonexistent/p.bin"),
        OsStr::new("--gpu"),
        OsStr::new("0"),
        OsStr::new("--gpus"),
        OsStr::new("0"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}
