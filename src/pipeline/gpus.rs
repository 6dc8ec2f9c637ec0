//! `--gpus`: synthesized partitions proved on several device queues at once, one per GPU
//! (prove/devices.rs makes their backends). A sector's partitions are independent
//! proofs: each queue takes the next ready partition when it is free, on a thread of its
//! own, while the caller's thread receives partitions from synthesis. Each partition
//! keeps its own randomness whichever queue proves it, so the proofs are those of a run
//! on one GPU.
//!
//! A queue whose device fails (a CUDA error, its memory exhausted) stops taking work, and
//! the partition it held goes back to the front of the line for another queue, when the
//! failure left its assignment whole (the prover says so: [`Failed::retry`]); when no
//! queue is left, or the assignment is gone, the run ends with the error. With one queue
//! this is the plain hand-over: the queue also takes the partition after its own when
//! that one is ready (the backend moves its inputs ahead, `--upload-ahead`), which with
//! several queues would keep it from a free one.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use crate::prove::{Backend, NextPart};
use crate::report::Timings;
use crate::synth::ProvingAssignment;

/// One device queue and what it did.
pub(crate) struct Queue<'a> {
    pub backend: &'a dyn Backend,
    /// Its rows of the timing table (added to the run's when the stage ends).
    pub t: Timings,
    /// Time spent proving (the backend's products and the proofs' assembly).
    pub busy: Duration,
    /// Time spent waiting for a synthesized partition.
    pub waited: Duration,
    /// The positions (in `todo`) of the partitions it proved.
    pub proved: Vec<usize>,
    /// Why it stopped taking partitions, when it failed.
    pub failed: Option<String>,
}

impl<'a> Queue<'a> {
    pub(crate) fn new(backend: &'a dyn Backend) -> Self {
        Self {
            backend,
            t: Timings::new(false),
            busy: Duration::ZERO,
            waited: Duration::ZERO,
            proved: Vec::new(),
            failed: None,
        }
    }
}

/// A synthesized partition: its position in `todo`, and its assignment.
pub(crate) type Ready = (usize, ProvingAssignment);

/// A partition's proving failed: the error, and the assignment when the failure left it
/// whole (it can then be proved on another queue).
pub(crate) struct Failed {
    pub error: anyhow::Error,
    pub retry: Option<Box<ProvingAssignment>>,
}

impl From<anyhow::Error> for Failed {
    fn from(error: anyhow::Error) -> Self {
        Self { error, retry: None }
    }
}

/// How a queue proves one partition: `(queue, position, assignment, next)`, `next` giving
/// the partition it takes after this one once that one is ready ([`Lookahead`]).
pub(crate) type Prove<'p> =
    dyn Fn(&mut Queue, usize, ProvingAssignment, &dyn NextPart) -> Result<(), Failed> + Sync + 'p;

/// With one queue, the partition it proves after the current one: ready when the current
/// one was taken, or taken from the line when the prover asks and it is ready by then (at
/// 32GiB the second partition completes while the first is proved, and its upload ahead
/// then still hides behind the first one's MSMs).
struct Lookahead<'l> {
    slot: OnceLock<Ready>,
    line: &'l Mutex<Line>,
}

impl NextPart for Lookahead<'_> {
    fn peek(&self) -> Option<&ProvingAssignment> {
        if self.slot.get().is_none() {
            let mut l = self.line.lock().unwrap_or_else(|e| e.into_inner());
            if l.live == 1 && l.error.is_none() {
                if let Some(r) = l.ready.pop_front() {
                    let _ = self.slot.set(r);
                }
            }
        }
        self.slot.get().map(|(_, pa)| pa)
    }
}

/// What the scheduler tells its caller as it goes.
pub(crate) struct Events<'e> {
    /// A queue took its first partition.
    pub started: &'e (dyn Fn() + Sync),
    /// A partition is proved (the window of partitions in flight moves).
    pub proved: &'e (dyn Fn() + Sync),
    /// The run fails: synthesis stops.
    pub stop: &'e (dyn Fn() + Sync),
}

/// The partitions waiting for a queue, and where the run stands.
struct Line {
    ready: VecDeque<Ready>,
    proved: usize,
    /// Queues still taking partitions.
    live: usize,
    started: bool,
    error: Option<anyhow::Error>,
    /// `events.stop` was told.
    stopped: bool,
}

impl Line {
    /// The run fails with `e` (unless it failed already); synthesis is told once.
    fn fail(&mut self, e: anyhow::Error, events: &Events) {
        self.error.get_or_insert(e);
        if !std::mem::replace(&mut self.stopped, true) {
            (events.stop)();
        }
    }
}

/// Proves the `n` partitions that `source` gives (blocking; None when it has no more;
/// positions in `todo`) on `queues`, each proved partition told to `events.proved`.
/// Returns the first error, of the source or of a partition no queue could prove.
pub(crate) fn serve(
    todo: &[usize],
    n: usize,
    queues: &mut [Queue],
    mut source: impl FnMut() -> Option<Result<Ready>>,
    prove: &Prove,
    events: &Events,
) -> Result<()> {
    let line = Mutex::new(Line {
        ready: VecDeque::new(),
        proved: 0,
        // A queue that failed in an earlier call (a batch before) takes no more.
        live: queues.iter().filter(|q| q.failed.is_none()).count(),
        started: false,
        error: None,
        stopped: false,
    });
    let more = Condvar::new();
    let lock = || line.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::scope(|s| {
        if lock().live == 0 {
            lock().fail(anyhow!("no device queue is left to prove on"), events);
        }
        for (i, q) in queues.iter_mut().enumerate() {
            if q.failed.is_some() {
                continue;
            }
            let (line, more) = (&line, &more);
            let work = move || work(i, q, todo, n, line, more, prove, events);
            if let Err(e) = std::thread::Builder::new()
                .name(format!("queue-{i}"))
                .spawn_scoped(s, work)
            {
                let mut l = lock();
                l.live -= 1;
                l.fail(anyhow!("cannot start device queue {i}: {e}"), events);
            }
        }
        // The caller's thread takes the partitions from synthesis as they come.
        for _ in 0..n {
            if lock().error.is_some() {
                break;
            }
            let got = source();
            let mut l = lock();
            match got {
                Some(Ok(r)) => l.ready.push_back(r),
                Some(Err(e)) => l.fail(e, events),
                None => l.fail(
                    anyhow!("synthesis stopped before every partition was done"),
                    events,
                ),
            }
            more.notify_all();
        }
        let mut l = lock();
        if l.live == 0 && l.proved < n {
            l.fail(anyhow!("no device queue could start"), events);
        }
        more.notify_all();
    });
    let l = line.into_inner().unwrap_or_else(|e| e.into_inner());
    match l.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Queue `i`'s thread: takes ready partitions until every one is proved or the run fails.
#[allow(clippy::too_many_arguments)]
fn work(
    i: usize,
    q: &mut Queue,
    todo: &[usize],
    n: usize,
    line: &Mutex<Line>,
    more: &Condvar,
    prove: &Prove,
    events: &Events,
) {
    let lock = || line.lock().unwrap_or_else(|e| e.into_inner());
    // The partition taken after the current one (one queue only).
    let mut ahead: Option<Ready> = None;
    loop {
        let t = Instant::now();
        let (pos, pa, first) = {
            let mut l = lock();
            let taken = loop {
                if l.error.is_some() || l.proved == n {
                    return;
                }
                if let Some(r) = ahead.take().or_else(|| l.ready.pop_front()) {
                    break r;
                }
                l = more.wait(l).unwrap_or_else(|e| e.into_inner());
            };
            if l.live == 1 {
                ahead = l.ready.pop_front();
            }
            let first = !std::mem::replace(&mut l.started, true);
            (taken.0, taken.1, first)
        };
        q.waited += t.elapsed();
        let k = todo[pos];
        // The timeline (RUST_LOG=cuzk_prove=info, millisecond timestamps).
        log::info!(
            "proving partition {k} on queue {i} (next ready: {})",
            ahead.is_some()
        );
        let next = Lookahead {
            slot: ahead.take().map(OnceLock::from).unwrap_or_default(),
            line,
        };
        if first {
            (events.started)(); // as close to the prover's start as can be
        }
        let t = Instant::now();
        // A panic in the prover (its code, not the device's) ends the run like an error
        // instead of leaving the other queues and synthesis waiting for this partition.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prove(q, pos, pa, &next)))
            .unwrap_or_else(|p| {
                Err(Failed::from(anyhow!(
                    "the prover panicked: {}",
                    crate::panics::message(&p)
                )))
            });
        q.busy += t.elapsed();
        ahead = next.slot.into_inner();
        let mut l = lock();
        match r {
            Ok(()) => {
                log::info!("proved partition {k}");
                q.proved.push(pos);
                l.proved += 1;
                (events.proved)();
                more.notify_all();
            }
            Err(Failed { error, retry }) => {
                let error = error.context(format!("partition {k}"));
                match retry {
                    Some(pa) if l.live > 1 && l.error.is_none() => {
                        log::warn!(
                            "device queue {i} stops: {error:#}; partition {k} goes to another"
                        );
                        q.failed = Some(format!("{error:#}"));
                        l.live -= 1;
                        if let Some(a) = ahead.take() {
                            l.ready.push_front(a);
                        }
                        l.ready.push_front((pos, *pa));
                    }
                    _ => {
                        q.failed = Some(format!("{error:#}"));
                        l.fail(error, events);
                    }
                }
                more.notify_all();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The scheduler alone, with queues that "prove" by recording what they were given
    //! (the whole pipeline with several CPU queues: tests/gpus.rs).

    use super::*;
    use crate::prove::cpu::Cpu;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An assignment told apart by its first aux value.
    fn part(pos: usize) -> ProvingAssignment {
        ProvingAssignment {
            aux_assignment: vec![blstrs::Scalar::from(pos as u64)],
            ..Default::default()
        }
    }

    fn id(pa: &ProvingAssignment) -> usize {
        let b = pa.aux_assignment[0].to_bytes_le();
        b[0] as usize
    }

    struct Outcome {
        result: Result<()>,
        /// Every queue's proved positions.
        proved: Vec<Vec<usize>>,
        failed: Vec<Option<String>>,
        events: [usize; 3],
    }

    /// `n` partitions on `queues` queues; `fails(queue, pos)` makes that proving fail
    /// (with the assignment whole when `whole`). `hold`: the partitions that do not fail
    /// wait (up to 10 s) for a failure, so that a failing queue surely takes one.
    fn schedule(
        n: usize,
        queues: usize,
        fails: impl Fn(usize, usize) -> bool + Sync,
        whole: bool,
        hold: bool,
    ) -> Outcome {
        let failed_once = std::sync::atomic::AtomicBool::new(false);
        let cpu = Cpu;
        let mut qs: Vec<Queue> = (0..queues).map(|_| Queue::new(&cpu)).collect();
        // Which queue is which: its Timings have a row named after it.
        for (i, q) in qs.iter_mut().enumerate() {
            q.t.add(&format!("queue {i}"), Duration::ZERO);
        }
        let todo: Vec<usize> = (0..n).map(|p| 10 + p).collect();
        let mut next = 0;
        let source = || {
            (next < n).then(|| {
                next += 1;
                std::thread::sleep(Duration::from_millis(2));
                Ok((next - 1, part(next - 1)))
            })
        };
        let prove = |q: &mut Queue, pos: usize, pa: ProvingAssignment, _: &dyn NextPart| {
            assert_eq!(id(&pa), pos, "each position with its own assignment");
            let i = (0..queues)
                .find(|i| q.t.get(&format!("queue {i}")).is_some())
                .unwrap();
            std::thread::sleep(Duration::from_millis(3));
            let t0 = Instant::now();
            while hold
                && !fails(i, pos)
                && !failed_once.load(Ordering::SeqCst)
                && t0.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            if fails(i, pos) {
                failed_once.store(true, Ordering::SeqCst);
                return Err(Failed {
                    error: anyhow!("device {i} broke"),
                    retry: whole.then(|| Box::new(pa)),
                });
            }
            Ok(())
        };
        let counts = [0, 1, 2].map(|_| AtomicUsize::new(0));
        let events = Events {
            started: &|| {
                counts[0].fetch_add(1, Ordering::SeqCst);
            },
            proved: &|| {
                counts[1].fetch_add(1, Ordering::SeqCst);
            },
            stop: &|| {
                counts[2].fetch_add(1, Ordering::SeqCst);
            },
        };
        let result = serve(&todo, n, &mut qs, source, &prove, &events);
        Outcome {
            result,
            proved: qs.iter().map(|q| q.proved.clone()).collect(),
            failed: qs.iter().map(|q| q.failed.clone()).collect(),
            events: counts.map(|c| c.into_inner()),
        }
    }

    fn all_once(o: &Outcome, n: usize) {
        let mut all: Vec<usize> = o.proved.concat();
        all.sort();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn every_partition_is_proved_once_on_one_two_and_three_queues() {
        for queues in 1..=3 {
            let o = schedule(10, queues, |_, _| false, true, false);
            o.result.as_ref().unwrap();
            all_once(&o, 10);
            assert_eq!(o.events, [1, 10, 0]);
            // Each queue proves its partitions in the order they were synthesized.
            for p in &o.proved {
                assert!(p.windows(2).all(|w| w[0] < w[1]), "{p:?}");
            }
        }
    }

    #[test]
    fn one_queue_finds_a_next_partition_completed_while_it_proves() {
        // Partition 1 comes from synthesis only once partition 0 is being proved: the
        // prover's second look finds it, and the queue then proves it next.
        let cpu = Cpu;
        let mut qs = [Queue::new(&cpu)];
        let proving = std::sync::Barrier::new(2);
        let mut given = 0;
        let source = || {
            given += 1;
            if given == 2 {
                proving.wait(); // partition 0 is in the prover, which looked once
            }
            (given <= 3).then(|| Ok((given - 1, part(given - 1))))
        };
        let seen = Mutex::new(Vec::new());
        let prove = |_: &mut Queue, pos: usize, _, next: &dyn NextPart| {
            let first = next.peek().map(id);
            if pos == 0 {
                proving.wait();
                let t0 = Instant::now();
                while next.peek().is_none() && t0.elapsed() < Duration::from_secs(10) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            seen.lock().unwrap().push((pos, first, next.peek().map(id)));
            Ok(())
        };
        let events = Events {
            started: &|| {},
            proved: &|| {},
            stop: &|| {},
        };
        serve(&[0, 1, 2], 3, &mut qs, source, &prove, &events).unwrap();
        assert_eq!(qs[0].proved, [0, 1, 2]);
        let seen = seen.into_inner().unwrap();
        assert_eq!(
            seen[0],
            (0, None, Some(1)),
            "found while partition 0 was proved"
        );
        assert_eq!(seen[2], (2, None, None), "nothing after the last");
    }

    #[test]
    fn a_failing_queue_s_partition_is_retried_on_another() {
        // Queue 1 fails on the first partition it takes: the others prove everything.
        for queues in [2, 3] {
            let o = schedule(10, queues, |q, _| q == 1, true, true);
            o.result.as_ref().unwrap();
            all_once(&o, 10);
            assert!(o.proved[1].is_empty());
            let why = o.failed[1].as_deref().unwrap();
            assert!(
                why.starts_with("partition 1") && why.contains("device 1 broke"),
                "{why}"
            );
            assert!(o.failed.iter().filter(|f| f.is_some()).count() == 1);
            assert_eq!(o.events[2], 0, "the run goes on");
        }
    }

    #[test]
    fn the_run_ends_when_no_queue_is_left_or_the_assignment_is_gone() {
        // Every queue fails: the last one's error ends the run.
        let o = schedule(6, 2, |_, _| true, true, false);
        let e = format!("{:#}", o.result.unwrap_err());
        assert!(e.contains("broke"), "{e}");
        assert_eq!(o.events[2], 1);
        assert!(o.failed.iter().all(|f| f.is_some()));
        // A failure that consumed the assignment: no retry, even with a queue left.
        let o = schedule(6, 2, |q, _| q == 0, false, true);
        let e = format!("{:#}", o.result.unwrap_err());
        assert!(
            e.starts_with("partition ") && e.ends_with("device 0 broke"),
            "{e}"
        );
        // One queue: its failure is the run's.
        let o = schedule(4, 1, |_, pos| pos == 2, true, false);
        assert!(o.result.is_err());
        assert_eq!(o.proved[0], vec![0, 1]);
    }

    #[test]
    fn a_panic_in_the_prover_ends_the_run() {
        for queues in [1, 2] {
            let cpu = Cpu;
            let mut qs: Vec<Queue> = (0..queues).map(|_| Queue::new(&cpu)).collect();
            let mut next = 0;
            let source = || {
                (next < 4).then(|| {
                    next += 1;
                    Ok((next - 1, part(next - 1)))
                })
            };
            let prove = |_: &mut Queue, pos: usize, _, _: &dyn NextPart| {
                assert!(pos != 1, "planted panic");
                Ok(())
            };
            let events = Events {
                started: &|| (),
                proved: &|| (),
                stop: &|| (),
            };
            let e = serve(&[10, 11, 12, 13], 4, &mut qs, source, &prove, &events).unwrap_err();
            let msg = format!("{e:#}");
            assert!(
                msg.starts_with("partition 11: the prover panicked: planted panic"),
                "{msg}"
            );
        }
    }

    #[test]
    fn a_queue_that_failed_in_one_call_takes_nothing_in_the_next() {
        // Batches (--overlap-synth off): one serve call each, the same queues; queue 1
        // failed in an earlier one.
        let cpu = Cpu;
        let mut qs = vec![Queue::new(&cpu), Queue::new(&cpu)];
        qs[1].t.add("broken", Duration::ZERO);
        qs[1].failed = Some("partition 0: device broke".into());
        let events = Events {
            started: &|| (),
            proved: &|| (),
            stop: &|| (),
        };
        let prove = |q: &mut Queue, _, _, _: &dyn NextPart| {
            assert!(
                q.t.get("broken").is_none(),
                "a failed queue was given a partition"
            );
            Ok(())
        };
        for batch in 0..3 {
            let mut given = 0;
            let source = || {
                given += 1;
                (given <= 2).then(|| Ok((batch * 2 + given - 1, part(batch * 2 + given - 1))))
            };
            serve(&[0, 1, 2, 3, 4, 5], 2, &mut qs, source, &prove, &events).unwrap();
        }
        assert!(qs[1].proved.is_empty());
        assert_eq!(qs[0].proved, [0, 1, 2, 3, 4, 5]);
        // Only failed queues: the call fails at once.
        qs[0].failed = Some("gone".into());
        let e = serve(&[0], 1, &mut qs, || Some(Ok((0, part(0)))), &prove, &events).unwrap_err();
        assert_eq!(e.to_string(), "no device queue is left to prove on");
    }

    #[test]
    fn a_source_that_stops_early_ends_the_run() {
        let cpu = Cpu;
        let mut qs = vec![Queue::new(&cpu), Queue::new(&cpu)];
        let mut given = 0;
        let source = || {
            given += 1;
            match given {
                1 => Some(Ok((0, part(0)))),
                2 => Some(Err(anyhow!("partition 11: synthesis failed"))),
                _ => None,
            }
        };
        let prove = |_: &mut Queue, _, _, _: &dyn NextPart| Ok(());
        let stopped = AtomicUsize::new(0);
        let events = Events {
            started: &|| (),
            proved: &|| (),
            stop: &|| {
                stopped.fetch_add(1, Ordering::SeqCst);
            },
        };
        let e = serve(&[10, 11, 12], 3, &mut qs, source, &prove, &events).unwrap_err();
        assert_eq!(e.to_string(), "partition 11: synthesis failed");
        assert_eq!(stopped.into_inner(), 1);
        assert_eq!(given, 2);
    }
}
