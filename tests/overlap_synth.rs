//! `--overlap-synth`: the scheduler that synthesizes later partitions while earlier ones
//! are proved hands every partition over exactly as a synthesis of its own gives it, in
//! every synthesis mode (full, PCE recording, PCE loaded beside the witness tasks, PCE
//! given, deferred evaluation), keeps to
//! its window, and stops cleanly on an error on either side. The bundled C1s have one
//! partition of two challenges, so the partitions here are the 2KiB fixture's circuit
//! with its challenges repeated (three per partition: two witness tasks each); the
//! pipeline's own on/off check on the fixture is in tests/e2e.rs.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Result};
use blstrs::Scalar as Fr;
use common::*;
use cuzk_prove::circuit::{PartitionCircuits, Porep};
use cuzk_prove::input::c1::read_c1;
use cuzk_prove::pipeline::overlap_synth::{self, PceSource, Synthesis};
use cuzk_prove::synth::{self, pce, witness::Witness, ProvingAssignment, SizeHint};
use filecoin_proofs::constants::SectorShape2KiB;

/// Partitions made of the fixture's challenges in the orders given; `fail` makes
/// partition `fail`'s last witness task fail, `panic` partition `panic`'s first panic.
struct Repeated {
    porep: Porep<SectorShape2KiB>,
    orders: Vec<Vec<usize>>,
    fail: Option<usize>,
    panic: Option<usize>,
    /// Witness tasks of partitions other than this one say they started 50 ms late: a task
    /// the prover's taking of its first partition lets start is then seen after the
    /// prover's first call, and one started before it (long before: the first partition
    /// takes seconds) still before.
    late_but: Option<usize>,
    tasks_run: AtomicUsize,
    /// The partition of every witness task, in the order they started.
    started: Mutex<Vec<usize>>,
}

impl Repeated {
    fn new(orders: &[[usize; 3]]) -> Self {
        let c1 = read_c1(&root().join("testdata/2kib/c1.json")).unwrap();
        Self {
            porep: Porep::new(&c1.registered_proof.as_v1_config(), c1.output).unwrap(),
            orders: orders.iter().map(|o| o.to_vec()).collect(),
            fail: None,
            panic: None,
            late_but: None,
            tasks_run: AtomicUsize::new(0),
            started: Mutex::new(Vec::new()),
        }
    }

    fn proofs(&self, k: usize) -> Vec<storage_proofs_porep::stacked::Proof<Tree, Piece>> {
        let v = self.porep.vanilla(0);
        self.orders[k].iter().map(|&i| v[i].clone()).collect()
    }

    /// What a synthesis of partition `k` on its own gives.
    fn alone(&self, k: usize) -> ProvingAssignment {
        synth::synthesize(self.porep.circuit_of(&self.proofs(k)).unwrap(), None).unwrap()
    }
}

type Tree = SectorShape2KiB;
type Piece = filecoin_proofs::constants::DefaultPieceHasher;

impl PartitionCircuits for Repeated {
    fn partitions(&self) -> usize {
        self.orders.len()
    }
    fn public_inputs(&self, _: usize) -> Result<Vec<Fr>> {
        unreachable!("not used by the scheduler")
    }
    fn check(&self, _: usize) -> Result<()> {
        unreachable!("not used by the scheduler")
    }
    fn synthesize(&self, k: usize, hint: Option<SizeHint>) -> Result<ProvingAssignment> {
        self.tasks_run.fetch_add(1, Ordering::SeqCst);
        synth::synthesize(self.porep.circuit_of(&self.proofs(k))?, hint)
    }
    fn witness(&self, k: usize) -> Result<Witness> {
        self.porep.witness_parallel(&self.proofs(k))
    }
    fn witness_tasks(&self, _: usize) -> usize {
        2
    }
    fn witness_task(&self, k: usize, j: usize) -> Result<Witness> {
        self.tasks_run.fetch_add(1, Ordering::SeqCst);
        if self.late_but.is_some_and(|f| f != k) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        self.started.lock().unwrap().push(k);
        if self.fail == Some(k) && j == 1 {
            bail!("planted failure");
        }
        if self.panic == Some(k) && j == 0 {
            panic!("planted panic");
        }
        self.porep.witness_part(&self.proofs(k), j)
    }
    fn witness_join(&self, k: usize, parts: Vec<Witness>) -> Result<Witness> {
        self.porep.join_parts(&self.proofs(k), parts)
    }
    fn record_task(&self, k: usize, j: usize) -> Result<pce::Block> {
        self.tasks_run.fetch_add(1, Ordering::SeqCst);
        self.porep.record_part(&self.proofs(k), j)
    }
    fn set_native_label(&mut self, on: bool) {
        self.porep.set_native_label(on)
    }
}

const ORDERS: [[usize; 3]; 3] = [[0, 1, 0], [1, 0, 1], [1, 1, 0]];

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap()
}

/// Runs the scheduler over `todo`, returning each handed-over partition by position and
/// the positions in the order they came. A partition named as the next one must be the
/// one handed over next.
fn schedule(
    c: &Repeated,
    todo: &[usize],
    how: Synthesis,
    window: usize,
) -> (
    Vec<Option<ProvingAssignment>>,
    Vec<usize>,
    overlap_synth::Overlapped,
) {
    let got = Mutex::new((vec![None; todo.len()], Vec::new()));
    let mut named: Option<ProvingAssignment> = None;
    let done = overlap_synth::run(c, todo, how, window, &pool(), |pos, pa, next| {
        if let Some(n) = named.take() {
            assert_eq!(
                n.aux_assignment, pa.aux_assignment,
                "position {pos}: not the next"
            );
            assert_eq!(n.input_assignment, pa.input_assignment, "position {pos}");
        }
        named = next.cloned();
        let mut g = got.lock().unwrap();
        assert!(g.0[pos].is_none(), "position {pos} handed over twice");
        g.0[pos] = Some(pa);
        g.1.push(pos);
        Ok(())
    })
    .unwrap();
    let (parts, order) = got.into_inner().unwrap();
    (parts, order, done)
}

#[test]
fn every_mode_hands_over_what_a_synthesis_alone_gives() {
    let c = Repeated::new(&ORDERS);
    let todo = [0, 1, 2];
    let alone: Vec<ProvingAssignment> = todo.iter().map(|&k| c.alone(k)).collect();
    let same = |parts: &[Option<ProvingAssignment>], what: &str| {
        for (pos, (p, a)) in parts.iter().zip(&alone).enumerate() {
            let p = p
                .as_ref()
                .unwrap_or_else(|| panic!("{what}: position {pos} missing"));
            assert!(p == a, "{what}: partition {} differs", todo[pos]);
        }
    };

    // Window 1: one partition at a time, so strictly in order.
    let (parts, order, done) = schedule(&c, &todo, Synthesis::Full(None), 1);
    same(&parts, "full, window 1");
    assert_eq!(order, [0, 1, 2]);
    assert!(done.pce.is_none());
    let (parts, _, _) = schedule(&c, &todo, Synthesis::Full(None), 3);
    same(&parts, "full, window 3");

    // No recording yet: the first partition's circuit is recorded in blocks (its two
    // witness tasks' circuits) ahead of the witness tasks, the partitions wait for it,
    // and the caller is handed it once to keep and once as ready for the backends; it is
    // the serial recording.
    let kept = Mutex::new(Vec::new());
    let keep = |p: std::sync::Arc<pce::Pce>| kept.lock().unwrap().push(p);
    let handed = Mutex::new(Vec::new());
    let ready = |p: std::sync::Arc<pce::Pce>| handed.lock().unwrap().push(p);
    let how = Synthesis::Pce {
        pce: PceSource::Record,
        defer: false,
        keep: Some(&keep),
        ready: Some(&ready),
    };
    let (parts, _, done) = schedule(&c, &todo, how, 3);
    same(&parts, "PCE recording");
    let recorded = done.pce.expect("the first partition's recording");
    let (_, serial) = pce::synthesize_recording(c.porep.circuit_of(&c.proofs(0)).unwrap()).unwrap();
    assert!(
        *recorded == serial,
        "the blocks joined are the serial recording"
    );
    assert!(done.loaded.is_none() && done.recorded.is_some());
    let kept = kept.into_inner().unwrap();
    assert!(kept.len() == 1 && std::sync::Arc::ptr_eq(&kept[0], &recorded));
    let ready_once = |what: &str, pce: &std::sync::Arc<pce::Pce>| {
        let mut h = handed.lock().unwrap();
        assert!(
            h.len() == 1 && std::sync::Arc::ptr_eq(&h[0], pce),
            "{what}: the recording is handed over as ready once"
        );
        h.clear();
    };
    ready_once("recorded", &recorded);

    // From its file, loaded by one task while the others generate witness parts.
    let dir = scratch("overlap-pce");
    let file = dir.join("recorded.pce");
    let id = pce::Identity {
        vk_digest: "0123456789abcdef".repeat(2),
        circuit: "the 2KiB circuit".into(),
    };
    recorded.save(&file, false, &id).unwrap();
    let how = Synthesis::Pce {
        pce: PceSource::Load(file.clone(), id.clone()),
        defer: false,
        keep: None,
        ready: Some(&ready),
    };
    let (parts, _, done) = schedule(&c, &todo, how, 3);
    same(&parts, "PCE loaded");
    assert!(done.loaded.is_some() && done.recorded.is_none());
    let loaded = done.pce.unwrap();
    assert_eq!(loaded.nnz(), recorded.nnz());
    ready_once("loaded", &loaded);
    // A file that is no recording, or one for other parameters, is never used: the
    // circuit is recorded instead.
    let junk = dir.join("junk.pce");
    std::fs::write(&junk, b"not a recording").unwrap();
    let other = pce::Identity {
        vk_digest: "fedcba9876543210".repeat(2),
        ..id.clone()
    };
    for source in [PceSource::Load(junk, id), PceSource::Load(file, other)] {
        let how = Synthesis::Pce {
            pce: source,
            defer: false,
            keep: None,
            ready: None,
        };
        let (parts, _, done) = schedule(&c, &todo, how, 3);
        same(&parts, "PCE file damaged or foreign, recorded anew");
        assert!(done.loaded.is_none() && done.recorded.is_some());
        assert!(*done.pce.unwrap() == serial);
    }
    std::fs::remove_dir_all(&dir).unwrap();

    // From the recording: witnesses only, evaluated here or left to the backend.
    let how = Synthesis::Pce {
        pce: PceSource::Ready(recorded.clone()),
        defer: false,
        keep: None,
        ready: Some(&ready),
    };
    let (parts, order, _) = schedule(&c, &todo, how, 2);
    same(&parts, "PCE cached");
    assert_eq!(order.len(), 3);
    ready_once("given", &recorded);
    let how = Synthesis::Pce {
        pce: PceSource::Ready(recorded),
        defer: true,
        keep: None,
        ready: None,
    };
    let (parts, _, _) = schedule(&c, &[2, 0], how, 1);
    for (p, k) in parts.into_iter().zip([2, 0]) {
        let mut p = p.unwrap();
        assert!(
            matches!(p.abc, cuzk_prove::synth::Abc::Deferred(_)),
            "deferred evaluation"
        );
        p.evaluate_on_host().unwrap();
        assert!(p == alone[k], "deferred partition {k}");
    }
}

#[test]
fn errors_stop_the_run_on_either_side() {
    // A failing witness task: the run names the partition and stops; with window 1 no
    // later partition's task starts.
    let mut c = Repeated::new(&ORDERS);
    c.fail = Some(1);
    let pce = pce::synthesize_recording(c.porep.circuit_of(&c.proofs(0)).unwrap())
        .unwrap()
        .1;
    let how = Synthesis::Pce {
        pce: PceSource::Ready(std::sync::Arc::new(pce)),
        defer: true,
        keep: None,
        ready: None,
    };
    let mut proved = Vec::new();
    let err = overlap_synth::run(&c, &[0, 1, 2], how, 1, &pool(), |pos, _, _| {
        proved.push(pos);
        Ok(())
    })
    .err()
    .expect("the planted failure");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("partition 1") && msg.contains("planted failure"),
        "{msg}"
    );
    assert_eq!(proved, [0]);
    // Partition 0's two tasks and partition 1's failing one; its other task may be
    // skipped once its sibling has failed (3 tasks then), partition 2's never start.
    let (ran, started) = (
        c.tasks_run.load(Ordering::SeqCst),
        c.started.lock().unwrap(),
    );
    assert!(
        (3..=4).contains(&ran) && !started.contains(&2),
        "partition 2 was started: {ran} tasks, partitions {started:?}"
    );

    // A panic in the circuit code: that partition's error, not a hang (the window would
    // otherwise wait for a partition that never comes).
    let mut c = Repeated::new(&ORDERS);
    c.panic = Some(1);
    let how = Synthesis::Pce {
        pce: PceSource::Record,
        defer: true,
        keep: None,
        ready: None,
    };
    let err = overlap_synth::run(&c, &[0, 1, 2], how, 1, &pool(), |_, _, _| Ok(()));
    let msg = format!("{:#}", err.err().expect("the planted panic"));
    assert!(
        msg.contains("partition 1")
            && msg.contains("failed on this C1")
            && msg.contains("planted panic"),
        "{msg}"
    );

    // The prover's error: returned naming the partition, the rest not waited for.
    let c = Repeated::new(&ORDERS);
    let err = overlap_synth::run(
        &c,
        &[0, 1, 2],
        Synthesis::Full(None),
        1,
        &pool(),
        |_, _, _| bail!("prover says no"),
    )
    .err()
    .expect("the prover's error");
    assert_eq!(format!("{err:#}"), "partition 0: prover says no");
    assert_eq!(
        c.tasks_run.load(Ordering::SeqCst),
        1,
        "a later partition started"
    );
}

/// With witness-only synthesis, no later partition's witness task starts before the
/// prover has the first partition (the startup window, `CUZK_STARTUP_WINDOW`, default 1);
/// then the whole window is synthesized ahead.
#[test]
fn only_the_first_partition_is_synthesized_until_the_prover_has_it() {
    let mut c = Repeated::new(&ORDERS);
    c.late_but = Some(2);
    let pce = pce::synthesize_recording(c.porep.circuit_of(&c.proofs(0)).unwrap())
        .unwrap()
        .1;
    let how = Synthesis::Pce {
        pce: PceSource::Ready(std::sync::Arc::new(pce)),
        defer: true,
        keep: None,
        ready: None,
    };
    let mut before_first: Option<Vec<usize>> = None;
    overlap_synth::run(&c, &[2, 0, 1], how, 3, &pool(), |_, _, _| {
        before_first.get_or_insert_with(|| c.started.lock().unwrap().clone());
        // Give the scheduler time to start the window's next partitions.
        std::thread::sleep(std::time::Duration::from_millis(300));
        Ok(())
    })
    .unwrap();
    let before_first = before_first.unwrap();
    assert_eq!(
        before_first,
        [2, 2],
        "only partition 2's tasks before the prover had it"
    );
    let all = c.started.lock().unwrap().clone();
    assert_eq!(all.len(), 6);
    assert_eq!(&all[..2], [2, 2]);
}
