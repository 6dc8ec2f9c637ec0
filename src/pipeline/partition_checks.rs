//! When the C1's check (`circuit/check.rs`) runs. Pass 1 (counts and forms: what the
//! gadgets and the size of the witness work rely on, about a tenth of the check) of every
//! partition, and the whole check of the first, before any synthesis; the whole check of
//! every other partition once, when its witness is joined (or before its full synthesis
//! or its recording). At 32GiB the whole check of ten partitions took 0.37 s of the H200's
//! 16 cores before partition 0's witness could start, beside the SRS upload's copies and
//! the recording's load, which all gate the GPU's start; the later partitions' checks now
//! run on the synthesis pool while the GPU proves.
//!
//! What the check guarantees is kept: no partition reaches the prover without the whole
//! check, no witness task runs on a partition whose shape is wrong, and a malformed C1 is
//! the check's one line, exit 3. A later partition's content (hashes, roots) is checked
//! after its witness tasks ran; a task that fails or panics on a partition that does not
//! hold reports the check's error in place of its own. The line then names the partition
//! twice ("partition 7: the C1's vanilla proofs do not hold: partition 7, challenge 3
//! …"), and it comes after partitions 0–6 were synthesized and proved instead of before:
//! time lost on a C1 that cannot be proved, never a written proof.
//!
//! No lock is held while a check runs: a thread waiting inside a check's parallel
//! iterator may pick up another task of the same partition (rayon's work stealing), and a
//! `OnceLock` initialised there would wait for itself. Two threads may then check one
//! partition at once, with the same result.
//!
//! `CUZK_CHECK_AHEAD=1` checks every partition whole before synthesis, as before
//! (measuring); `--stop-after srs`, which synthesizes nothing, does too.

use std::sync::OnceLock;

use anyhow::Result;
use blstrs::Scalar as Fr;

use crate::circuit::PartitionCircuits;
use crate::synth::{self, ProvingAssignment, SizeHint};

/// A partition whose vanilla proofs do not hold (the check's error, on one line): bad
/// input wherever in the run it is found.
#[derive(Debug)]
pub(crate) struct DoNotHold(String);

impl std::fmt::Display for DoNotHold {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "the C1's vanilla proofs do not hold: {}", self.0)
    }
}

impl std::error::Error for DoNotHold {}

/// Whether `e` is (or wraps) a failed check of the C1.
pub(crate) fn is_bad_c1(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<DoNotHold>().is_some())
}

/// `check`'s result, a panic in it caught, its error as one line.
fn caught(check: impl FnOnce() -> Result<()>) -> std::result::Result<(), String> {
    crate::panics::catch(crate::panics::SYNTHESIS, check).map_err(|e| format!("{e:#}"))
}

/// A check's line as the run's error.
fn do_not_hold(line: String) -> anyhow::Error {
    anyhow::Error::new(DoNotHold(line))
}

/// Whether every partition is checked whole before synthesis (`CUZK_CHECK_AHEAD=1`).
pub(crate) fn ahead() -> bool {
    std::env::var("CUZK_CHECK_AHEAD").is_ok_and(|v| v == "1")
}

/// `inner`'s partitions, each checked whole before it is handed on.
pub(crate) struct Checked {
    inner: Box<dyn PartitionCircuits>,
    done: Vec<OnceLock<std::result::Result<(), String>>>,
}

impl Checked {
    pub(crate) fn new(inner: Box<dyn PartitionCircuits>) -> Self {
        let done = (0..inner.partitions()).map(|_| OnceLock::new()).collect();
        Self { inner, done }
    }

    /// Before any synthesis: pass 1 of every partition in `todo`, and the whole check of
    /// those in `whole`; in parallel on the current pool.
    pub(crate) fn check_before_synthesis(&self, todo: &[usize], whole: &[usize]) -> Result<()> {
        use rayon::prelude::*;
        let shapes = todo.par_iter().filter(|k| !whole.contains(k));
        shapes.try_for_each(|&k| caught(|| self.inner.check_shape(k)).map_err(do_not_hold))?;
        whole.par_iter().try_for_each(|&k| self.checked(k))
    }

    /// Partition `k`'s whole check: its result when it has one, else run here (its
    /// challenges in parallel on the current pool) and kept.
    pub(crate) fn checked(&self, k: usize) -> Result<()> {
        let r = match self.done[k].get() {
            Some(r) => r.clone(),
            None => {
                let r = caught(|| self.inner.check(k));
                self.done[k].get_or_init(|| r).clone()
            }
        };
        r.map_err(do_not_hold)
    }

    /// `f`'s result for partition `k`, but the check's error when `f` fails (or panics)
    /// on a partition that does not hold.
    fn or_check<T>(&self, k: usize, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let r = crate::panics::catch(crate::panics::SYNTHESIS, f);
        if r.is_err() {
            self.checked(k)?;
        }
        r
    }
}

impl PartitionCircuits for Checked {
    fn partitions(&self) -> usize {
        self.inner.partitions()
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>> {
        self.inner.public_inputs(k)
    }

    fn check(&self, k: usize) -> Result<()> {
        self.checked(k)
    }

    fn check_shape(&self, k: usize) -> Result<()> {
        self.inner.check_shape(k)
    }

    fn synthesize(&self, k: usize, hint: Option<SizeHint>) -> Result<ProvingAssignment> {
        self.checked(k)?;
        self.inner.synthesize(k, hint)
    }

    fn witness(&self, k: usize) -> Result<synth::witness::Witness> {
        self.checked(k)?;
        self.inner.witness(k)
    }

    fn witness_tasks(&self, k: usize) -> usize {
        self.inner.witness_tasks(k)
    }

    fn witness_task(&self, k: usize, j: usize) -> Result<synth::witness::Witness> {
        self.or_check(k, || self.inner.witness_task(k, j))
    }

    fn witness_join(
        &self,
        k: usize,
        parts: Vec<synth::witness::Witness>,
    ) -> Result<synth::witness::Witness> {
        self.checked(k)?;
        self.inner.witness_join(k, parts)
    }

    fn record_task(&self, k: usize, j: usize) -> Result<synth::pce::Block> {
        self.checked(k)?;
        self.inner.record_task(k, j)
    }

    fn record(&self, k: usize) -> Result<synth::pce::Pce> {
        self.checked(k)?;
        self.inner.record(k)
    }

    fn set_native_label(&mut self, on: bool) {
        self.inner.set_native_label(on)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use synth::witness::Witness;

    /// Partitions of `tasks` tasks each, witnesses of `aux` values; partition `bad` fails
    /// its whole check (its shape too with `bad_shape`), and its tasks fail (`Fail`),
    /// panic (`Panic`) or succeed (`Pass`) on the bad data. Checks run a parallel
    /// iterator, as the real one does.
    struct Toy {
        bad: usize,
        bad_shape: bool,
        tasks: Tasks,
        inputs: usize,
        aux: usize,
        checks: Arc<Vec<AtomicUsize>>,
        shapes: Arc<Vec<AtomicUsize>>,
        /// The inner calls, in order ("check 1", "join 1", …).
        events: Arc<std::sync::Mutex<Vec<String>>>,
    }

    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Tasks {
        Pass,
        Fail,
        Panic,
        /// The shape pass panics too.
        ShapePanic,
    }

    const N: usize = 4;
    const TASKS: usize = 6;

    type Counts = Arc<Vec<AtomicUsize>>;

    fn counter() -> Counts {
        Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect())
    }

    /// The partitions, how often each was checked whole, and how often its shape.
    fn toy(bad: usize, tasks: Tasks) -> (Checked, Counts, Counts) {
        toy_with(bad, false, tasks, 1, 1)
    }

    type Events = Arc<std::sync::Mutex<Vec<String>>>;

    /// The partitions and the log of their inner calls.
    fn logged(bad: usize) -> (Checked, Events) {
        let events = Events::default();
        let c = Checked::new(Box::new(Toy {
            bad,
            bad_shape: false,
            tasks: Tasks::Pass,
            inputs: 1,
            aux: 1,
            checks: counter(),
            shapes: counter(),
            events: events.clone(),
        }));
        (c, events)
    }

    fn toy_with(
        bad: usize,
        bad_shape: bool,
        tasks: Tasks,
        inputs: usize,
        aux: usize,
    ) -> (Checked, Counts, Counts) {
        let (checks, shapes) = (counter(), counter());
        let c = Checked::new(Box::new(Toy {
            bad,
            bad_shape,
            tasks,
            inputs,
            aux,
            checks: checks.clone(),
            shapes: shapes.clone(),
            events: Events::default(),
        }));
        (c, checks, shapes)
    }

    fn counts(c: &[AtomicUsize]) -> Vec<usize> {
        c.iter().map(|n| n.load(Ordering::SeqCst)).collect()
    }

    impl Toy {
        fn log(&self, what: &str, k: usize) {
            self.events.lock().unwrap().push(format!("{what} {k}"));
        }

        fn witness_of(&self, k: usize, j: usize) -> Witness {
            Witness {
                inputs: vec![Fr::from(1u64); self.inputs],
                aux: vec![Fr::from((10 * k + j) as u64); self.aux],
            }
        }
    }

    impl PartitionCircuits for Toy {
        fn partitions(&self) -> usize {
            N
        }
        fn public_inputs(&self, _: usize) -> Result<Vec<Fr>> {
            Ok(vec![])
        }
        fn check(&self, k: usize) -> Result<()> {
            use rayon::prelude::*;
            self.log("check", k);
            self.checks[k].fetch_add(1, Ordering::SeqCst);
            (0..64).into_par_iter().try_for_each(|i| {
                std::thread::sleep(std::time::Duration::from_micros(200));
                anyhow::ensure!(
                    k != self.bad || i != 37,
                    "partition {k}, challenge 1: a bad path"
                );
                Ok(())
            })
        }
        fn check_shape(&self, k: usize) -> Result<()> {
            self.shapes[k].fetch_add(1, Ordering::SeqCst);
            if k == self.bad && self.tasks == Tasks::ShapePanic {
                panic!("a count out of range");
            }
            anyhow::ensure!(
                !(k == self.bad && self.bad_shape),
                "partition {k}: 3 challenges, 4 expected"
            );
            Ok(())
        }
        fn synthesize(&self, k: usize, _: Option<SizeHint>) -> Result<ProvingAssignment> {
            self.log("synthesize", k);
            anyhow::bail!("full synthesis: not in this test")
        }
        fn witness(&self, k: usize) -> Result<Witness> {
            self.log("witness", k);
            Ok(self.witness_of(k, 0))
        }
        fn witness_tasks(&self, _: usize) -> usize {
            TASKS
        }
        fn witness_task(&self, k: usize, j: usize) -> Result<Witness> {
            self.log("task", k);
            match (k == self.bad, self.tasks) {
                (true, Tasks::Fail) => anyhow::bail!("a gadget refused it"),
                (true, Tasks::Panic) => panic!("index out of bounds"),
                _ => Ok(self.witness_of(k, j)),
            }
        }
        fn witness_join(&self, k: usize, mut parts: Vec<Witness>) -> Result<Witness> {
            self.log("join", k);
            Ok(parts.remove(0))
        }
        fn record_task(&self, k: usize, _: usize) -> Result<synth::pce::Block> {
            self.log("record", k);
            anyhow::bail!("recording: not in this test")
        }
        fn set_native_label(&mut self, _: bool) {}
    }

    const LINE: &str = "the C1's vanilla proofs do not hold: partition 2, challenge 1: a bad path";

    #[test]
    fn every_way_to_an_assignment_checks_the_partition_once_first() {
        type Way = fn(&Checked, usize) -> bool;
        let ways: [(&str, Way); 6] = [
            ("join", |c, k| {
                c.witness_join(k, vec![Witness::default()]).is_ok()
            }),
            ("witness", |c, k| c.witness(k).is_ok()),
            ("synthesize", |c, k| c.synthesize(k, None).is_ok()),
            ("record", |c, k| c.record_task(k, 0).is_ok()),
            ("record", |c, k| c.record(k).is_ok()),
            ("check", |c, k| c.check(k).is_ok()),
        ];
        for (name, way) in ways {
            let (c, events) = logged(usize::MAX);
            c.witness_task(1, 0).unwrap();
            way(&c, 1);
            way(&c, 1);
            let mut want = vec!["task 1".to_string(), "check 1".into()];
            if name != "check" {
                want.extend([format!("{name} 1"), format!("{name} 1")]);
            }
            let got = events.lock().unwrap().clone();
            assert_eq!(
                got[..want.len().min(got.len())],
                want[..],
                "{name}: {got:?}"
            );
            assert_eq!(
                got.iter().filter(|e| e.starts_with("check")).count(),
                1,
                "{name}"
            );
            // A bad partition never gets past it.
            let (c, events) = logged(2);
            assert!(!way(&c, 2), "{name}");
            assert_eq!(
                *events.lock().unwrap(),
                ["check 2"],
                "{name}: nothing after the check"
            );
        }
    }

    #[test]
    fn before_synthesis_every_shape_and_the_first_whole() {
        let (c, checks, shapes) = toy(usize::MAX, Tasks::Pass);
        c.check_before_synthesis(&[0, 1, 2, 3], &[0]).unwrap();
        assert_eq!(counts(&checks), [1, 0, 0, 0]);
        assert_eq!(counts(&shapes), [0, 1, 1, 1]);
        // A bad shape anywhere stops the run there, a bad content only in the first.
        let (c, _, _) = toy_with(3, true, Tasks::Pass, 1, 1);
        let e = c.check_before_synthesis(&[0, 1, 2, 3], &[0]).unwrap_err();
        assert!(is_bad_c1(&e));
        assert_eq!(
            format!("{e:#}"),
            "the C1's vanilla proofs do not hold: partition 3: 3 challenges, 4 expected"
        );
        let (c, _, _) = toy(3, Tasks::ShapePanic);
        let e = c.check_before_synthesis(&[0, 1, 2, 3], &[0]).unwrap_err();
        assert!(
            is_bad_c1(&e) && format!("{e:#}").contains("a count out of range"),
            "{e:#}"
        );
        let (c, _, _) = toy(2, Tasks::Pass);
        c.check_before_synthesis(&[0, 1, 2, 3], &[0]).unwrap();
        assert_eq!(
            format!("{:#}", c.check_before_synthesis(&[2], &[2]).unwrap_err()),
            LINE
        );
    }

    #[test]
    fn a_bad_partition_is_the_check_s_line_however_its_tasks_fail() {
        for tasks in [Tasks::Pass, Tasks::Fail, Tasks::Panic] {
            let (c, checks, _) = toy(2, tasks);
            let task = c.witness_task(2, 1);
            let e = match tasks {
                Tasks::Pass => c.witness_join(2, vec![task.unwrap()]).unwrap_err(),
                _ => task.unwrap_err(),
            };
            assert!(is_bad_c1(&e), "{tasks:?}: {e:#}");
            assert_eq!(format!("{e:#}"), LINE, "{tasks:?}");
            assert_eq!(counts(&checks), [0, 0, 1, 0], "{tasks:?}: checked once");
            // The good partitions go on.
            c.witness(1).unwrap();
        }
    }

    /// Through the real scheduler on a pool of 3 threads, every task of partition 2
    /// failing (or panicking) on its bad data: each failing task asks for the check while
    /// other threads wait inside it and may pick up more of partition 2's tasks. The run
    /// ends with the check's line; partitions before it are proved.
    #[test]
    fn a_bad_later_partition_ends_the_real_scheduler_with_the_check_s_line() {
        use crate::pipeline::overlap_synth::{self, PceSource, Synthesis};
        let pce = Arc::new(
            crate::synth::pce::join_blocks(vec![crate::synth::pce::tests_support_tiny_block()])
                .unwrap(),
        );
        // The blocking version hung 2 runs in 3: four rounds of each.
        for tasks in [Tasks::Fail, Tasks::Panic].repeat(4) {
            let (tx, rx) = std::sync::mpsc::channel();
            let pce = pce.clone();
            std::thread::spawn(move || {
                let (c, checks, _) = toy_with(2, false, tasks, pce.inputs, pce.aux);
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(3)
                    .build()
                    .unwrap();
                let todo = [0, 1, 2, 3];
                c.check_before_synthesis(&todo, &todo[..1]).unwrap();
                let mut proved = Vec::new();
                let r = overlap_synth::run(
                    &c,
                    &todo,
                    Synthesis::Pce {
                        pce: PceSource::Ready(pce),
                        defer: true,
                        keep: None,
                        ready: None,
                    },
                    2,
                    &pool,
                    |pos, _, _| {
                        proved.push(pos);
                        Ok(())
                    },
                );
                let e = r.err().map(|e| (is_bad_c1(&e), format!("{e:#}")));
                let _ = tx.send((e, proved, counts(&checks)));
            });
            let (e, proved, checks) = rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("{tasks:?}: the run hangs"));
            assert_eq!(e, Some((true, format!("partition 2: {LINE}"))), "{tasks:?}");
            assert!(proved.iter().all(|&p| p < 2), "{tasks:?}: {proved:?}");
            assert!(checks[2] >= 1 && checks[0] == 1, "{tasks:?}: {checks:?}");
        }
    }
}
