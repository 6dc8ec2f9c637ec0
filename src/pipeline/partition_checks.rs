//! When the C1's check (`circuit/check.rs`) runs: the first partition's before any
//! synthesis, every other partition's as its witness is joined — no longer all of them
//! before the first witness task. At 32GiB the check of ten partitions took 0.37 s on the
//! H200's 16 cores, all of it before partition 0's witness, which gates the GPU once
//! section h goes ahead (`CUZK_EARLY_H`); one partition's check is a tenth of that, and the
//! others' run on the synthesis pool beside witness tasks, ahead of the GPU.
//!
//! What the check guarantees is kept: no partition reaches the prover unchecked, and a
//! malformed C1 is still the check's one line, exit 3. A later partition's witness tasks
//! may start on data the check would refuse; a task that fails or panics then reports the
//! check's error in place of its own, so the line is the same as before. A bad partition
//! 7 now fails after partitions 0–6 were synthesized (and proved) instead of before:
//! wasted time on a C1 that cannot be proved, never a written proof.
//!
//! `CUZK_CHECK_AHEAD=1` checks every partition before synthesis, as before (measuring).

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

/// Whether every partition is checked before synthesis (`CUZK_CHECK_AHEAD=1`).
pub(crate) fn ahead() -> bool {
    std::env::var("CUZK_CHECK_AHEAD").is_ok_and(|v| v == "1")
}

/// `inner`'s partitions, each checked once, before it is handed on.
pub(crate) struct Checked {
    inner: Box<dyn PartitionCircuits>,
    done: Vec<OnceLock<std::result::Result<(), String>>>,
}

impl Checked {
    pub(crate) fn new(inner: Box<dyn PartitionCircuits>) -> Self {
        let done = (0..inner.partitions()).map(|_| OnceLock::new()).collect();
        Self { inner, done }
    }

    /// Partition `k`'s check, run by the first caller (its challenges in parallel on the
    /// current pool); later callers get its result.
    pub(crate) fn checked(&self, k: usize) -> Result<()> {
        let r = self.done[k].get_or_init(|| {
            crate::panics::catch(crate::panics::SYNTHESIS, || self.inner.check(k))
                .map_err(|e| format!("{e:#}"))
        });
        r.clone().map_err(|e| anyhow::Error::new(DoNotHold(e)))
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

    /// Partitions of one-value witnesses; partition `bad` fails its check, and its tasks
    /// fail (`Fail`), panic (`Panic`) or succeed (`Pass`) on the bad data.
    struct Toy {
        bad: usize,
        tasks: Tasks,
        checks: Arc<Vec<AtomicUsize>>,
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Tasks {
        Pass,
        Fail,
        Panic,
    }

    /// The partitions, and how often each was checked.
    fn toy(bad: usize, tasks: Tasks) -> (Checked, Arc<Vec<AtomicUsize>>) {
        let checks = Arc::new((0..4).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
        let c = Checked::new(Box::new(Toy {
            bad,
            tasks,
            checks: checks.clone(),
        }));
        (c, checks)
    }

    fn counts(checks: &[AtomicUsize]) -> Vec<usize> {
        checks.iter().map(|n| n.load(Ordering::SeqCst)).collect()
    }

    fn w(x: u64) -> Witness {
        Witness {
            inputs: vec![Fr::from(1u64)],
            aux: vec![Fr::from(x)],
        }
    }

    impl PartitionCircuits for Toy {
        fn partitions(&self) -> usize {
            4
        }
        fn public_inputs(&self, _: usize) -> Result<Vec<Fr>> {
            Ok(vec![])
        }
        fn check(&self, k: usize) -> Result<()> {
            self.checks[k].fetch_add(1, Ordering::SeqCst);
            anyhow::ensure!(k != self.bad, "partition {k}, challenge 1: a bad path");
            Ok(())
        }
        fn synthesize(&self, _: usize, _: Option<SizeHint>) -> Result<ProvingAssignment> {
            anyhow::bail!("not used")
        }
        fn witness(&self, k: usize) -> Result<Witness> {
            self.witness_task(k, 0)
        }
        fn witness_tasks(&self, _: usize) -> usize {
            2
        }
        fn witness_task(&self, k: usize, j: usize) -> Result<Witness> {
            match (k == self.bad, self.tasks) {
                (true, Tasks::Fail) => anyhow::bail!("a gadget refused it"),
                (true, Tasks::Panic) => panic!("index out of bounds"),
                _ => Ok(w((10 * k + j) as u64)),
            }
        }
        fn witness_join(&self, _: usize, mut parts: Vec<Witness>) -> Result<Witness> {
            Ok(parts.remove(0))
        }
        fn record_task(&self, _: usize, _: usize) -> Result<synth::pce::Block> {
            anyhow::bail!("not used")
        }
        fn set_native_label(&mut self, _: bool) {}
    }

    #[test]
    fn each_partition_is_checked_once_before_it_is_joined() {
        let (c, checks) = toy(usize::MAX, Tasks::Pass);
        for k in 0..4 {
            let parts = (0..2).map(|j| c.witness_task(k, j).unwrap()).collect();
            assert_eq!(counts(&checks)[k], 0, "tasks run before the check");
            assert!(c.witness_join(k, parts).unwrap().aux == w(10 * k as u64).aux);
            c.witness(k).unwrap();
            c.check(k).unwrap();
            assert_eq!(counts(&checks)[k], 1, "partition {k}: once");
        }
    }

    #[test]
    fn a_bad_partition_is_the_check_s_line_however_its_tasks_fail() {
        for tasks in [Tasks::Pass, Tasks::Fail, Tasks::Panic] {
            let (c, checks) = toy(2, tasks);
            let task = c.witness_task(2, 1);
            if tasks == Tasks::Pass {
                task.unwrap();
                let e = c.witness_join(2, vec![w(0), w(1)]).unwrap_err();
                assert!(is_bad_c1(&e));
            } else {
                let e = task.unwrap_err();
                assert!(is_bad_c1(&e), "{e:#}");
                assert_eq!(
                    format!("{e:#}"),
                    "the C1's vanilla proofs do not hold: partition 2, challenge 1: a bad path"
                );
            }
            for e in [c.witness(2).unwrap_err(), c.check(2).unwrap_err()] {
                assert!(is_bad_c1(&e), "{e:#}");
            }
            assert_eq!(
                counts(&checks),
                [0, 0, 1, 0],
                "checked once, only where needed"
            );
            // The good partitions go on.
            c.witness(1).unwrap();
        }
    }
}
