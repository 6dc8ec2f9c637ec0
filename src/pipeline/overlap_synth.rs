//! `--overlap-synth`: later partitions are synthesized while earlier ones are proved.
//!
//! Without it, a batch of partitions is synthesized, then proved: at 32GiB the GPU waits
//! for the witnesses of all ten partitions, then the cores wait while it proves them.
//! Here synthesis is cut into tasks in partition order — a partition's witness parts
//! (its challenges, [`PartitionCircuits::witness_task`]) with `--pce`, whole partitions
//! without — and the tasks enter the synthesis pool's queue in that order (FIFO), so the
//! partitions are completed one after another, each by all cores. Each one goes to the
//! caller's `prove` (on a device queue's thread, gpus.rs) as soon as it is complete,
//! while the pool goes on with the next ones. At most `window` partitions
//! (`--max-circuits`) are being synthesized, waiting or being proved at once.
//!
//! The PCE recording need not be there at the start: read from its cache file (seconds
//! at 32GiB) it is loaded by one task while the others generate witness parts; without a
//! cache file (or when the file fails to load), the first partition's circuit is recorded
//! in blocks, one task per challenge block ahead of every witness task, and joined by the
//! last block's task. A partition whose parts are done before the recording waits for it,
//! holding no thread.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::gpus::{serve, Events, Failed, Prove, Queue};
use crate::circuit::PartitionCircuits;
use crate::synth::pce::{join_blocks, Block, Identity, Pce};
use crate::synth::witness::Witness;
use crate::synth::{ProvingAssignment, SizeHint};

/// How partitions are synthesized.
pub enum Synthesis<'a> {
    /// A full synthesis per partition.
    Full(Option<SizeHint>),
    /// Witnesses through a pre-compiled constraint system; `defer` leaves A·w, B·w, C·w
    /// to the backend; `keep` is handed a recording made here as soon as it is joined
    /// (the caller saves it while the partitions are proved); `ready` is handed the
    /// recording, loaded or made, as soon as partitions can use it (the caller's backends
    /// move it to their devices before the first partition is complete).
    Pce {
        pce: PceSource<'a>,
        defer: bool,
        keep: Option<Keep<'a>>,
        ready: Option<Keep<'a>>,
    },
}

/// What the caller does with a recording made during the run.
pub(crate) type Keep<'a> = &'a (dyn Fn(Arc<Pce>) + Sync);

/// Where the recording comes from.
pub enum PceSource<'a> {
    Ready(Arc<Pce>),
    /// Its cache file, loaded during synthesis if it is for this identity and intact
    /// (recorded instead if it fails to load).
    Load(PathBuf, Identity),
    /// The same, its load started earlier by the caller.
    Loading(&'a PendingLoad),
    /// Recorded from the first partition's circuit, in parallel blocks.
    Record,
}

/// A recording's load on a thread of its own (its parallel parts on the global pool),
/// started as soon as its file is known: the pipeline starts it before the C1's check,
/// beside the SRS upload, so that the first partition no longer waits for all of it
/// after synthesis starts. The synthesis task that hands the recording over waits for it.
pub struct PendingLoad {
    rx: Mutex<Option<mpsc::Receiver<Loaded>>>,
}

/// A load's outcome and how long it took.
type Loaded = (Result<Pce>, Duration);

impl PendingLoad {
    pub fn start(path: PathBuf, id: Identity) -> Result<Self> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("pce-load".into())
            .spawn(move || {
                let t0 = Instant::now();
                let r = std::panic::catch_unwind(|| Pce::load(&path, &id)).unwrap_or_else(|p| {
                    Err(anyhow!(
                        "loading {} panicked: {}",
                        path.display(),
                        crate::panics::message(&p)
                    ))
                });
                let _ = tx.send((r, t0.elapsed())); // no receiver: the run has stopped
            })
            .context("cannot start the recording's load")?;
        Ok(Self {
            rx: Mutex::new(Some(rx)),
        })
    }

    /// The loaded recording (once) and how long its load took.
    pub fn wait(&self) -> Loaded {
        let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner()).take();
        match rx.map(|rx| rx.recv()) {
            Some(Ok(done)) => done,
            Some(Err(_)) => (Err(anyhow!("the recording's load stopped")), Duration::ZERO),
            None => (
                Err(anyhow!("the recording was taken already")),
                Duration::ZERO,
            ),
        }
    }
}

/// What the run measured, and the recording it used.
pub struct Overlapped {
    /// From the start until the last partition was synthesized.
    pub synthesis: Duration,
    /// Time the prover waited for a partition to be complete (one queue, [`run`]).
    pub waited: Duration,
    /// The recording (`Synthesis::Pce`): given, loaded or made.
    pub pce: Option<Arc<Pce>>,
    /// How long loading it took (`PceSource::Load`), beside the witness tasks.
    pub loaded: Option<Duration>,
    /// How long recording it took, from the start (`PceSource::Record`, or a file that
    /// failed to load): the caller keeps a recording made here.
    pub recorded: Option<Duration>,
}

#[derive(Clone, Copy)]
enum Task {
    Full,
    /// Block `j` of the recording.
    Record(usize),
    Load,
    Part(usize),
}

/// The recording's load: started by the caller, or here.
enum Loading<'a> {
    Caller(&'a PendingLoad),
    Here(PendingLoad),
}

/// One partition's witness parts as they arrive.
struct Slot {
    parts: Vec<Option<Witness>>,
    left: usize,
    /// Every part is in, but the recording is not there yet.
    waiting: bool,
}

/// A partition's position in `todo` and its synthesis.
type Done = (usize, Result<ProvingAssignment>);

struct Shared<'a> {
    circuits: &'a dyn PartitionCircuits,
    todo: &'a [usize],
    hint: Option<SizeHint>,
    defer: bool,
    slots: Vec<Mutex<Slot>>,
    /// The recording, set once; guards the slots' `waiting` handover with it.
    pce: Mutex<Option<Arc<Pce>>>,
    /// Partitions proved so far: the window's lower end.
    proved: Mutex<usize>,
    /// The prover has its first partition: the startup window gives way to the window.
    started: AtomicBool,
    more: Condvar,
    abort: AtomicBool,
    load: Option<Loading<'a>>,
    loaded: Mutex<Option<Duration>>,
    /// The recording's blocks as they arrive, and how many are still to come.
    blocks: Mutex<(Vec<Option<Block>>, usize)>,
    recorded: Mutex<Option<Duration>>,
    keep: Option<Keep<'a>>,
    ready: Option<Keep<'a>>,
    t0: Instant,
    tx: Mutex<Option<mpsc::Sender<Done>>>,
}

impl Shared<'_> {
    fn send(&self, pos: usize, r: Result<ProvingAssignment>) {
        let k = self.todo[pos];
        self.deliver(pos, r.with_context(|| format!("partition {k}")));
    }

    fn deliver(&self, pos: usize, r: Result<ProvingAssignment>) {
        if r.is_err() {
            self.stop();
        } else {
            log::info!("partition {} synthesized", self.todo[pos]);
        }
        if let Some(tx) = &*self.tx.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = tx.send((pos, r)); // the receiver is gone only when the run stopped
        }
    }

    fn stop(&self) {
        self.abort.store(true, Ordering::SeqCst);
        let _guard = self.proved.lock();
        self.more.notify_all();
    }

    fn stopped(&self) -> bool {
        self.abort.load(Ordering::SeqCst)
    }

    /// Witness → assignment through the recording.
    fn assignment(&self, pce: &Arc<Pce>, w: Witness) -> Result<ProvingAssignment> {
        if self.defer {
            pce.deferred(w)
        } else {
            pce.assignment(w)
        }
    }

    fn join(&self, pos: usize, parts: Vec<Witness>, pce: &Arc<Pce>) {
        let r = self
            .circuits
            .witness_join(self.todo[pos], parts)
            .and_then(|w| self.assignment(pce, w));
        self.send(pos, r);
    }

    fn take_parts(&self, pos: usize) -> Vec<Witness> {
        let mut slot = self.slots[pos].lock().unwrap_or_else(|e| e.into_inner());
        slot.waiting = false;
        slot.parts
            .iter_mut()
            .map(|p| p.take().expect("every part is in"))
            .collect()
    }

    /// Makes the recording available: partitions joined from now on use it, and those
    /// that were waiting for it are joined, each as a task of its own.
    fn publish<'s>(&'s self, pce: Arc<Pce>, scope: &rayon::ScopeFifo<'s>) {
        if let Some(ready) = self.ready {
            ready(pce.clone());
        }
        let waiting: Vec<usize> = {
            let mut kept = self.pce.lock().unwrap_or_else(|e| e.into_inner());
            *kept = Some(pce.clone());
            (0..self.slots.len())
                .filter(|&p| self.slots[p].lock().map(|s| s.waiting).unwrap_or(false))
                .collect()
        };
        for p in waiting {
            let pce = pce.clone();
            scope.spawn_fifo(move |_| {
                self.guarded(p, || {
                    let parts = self.take_parts(p);
                    self.join(p, parts, &pce)
                })
            });
        }
    }

    /// Runs a task's body; a panic in it (the circuit code's) becomes the partition's
    /// error, so the run stops with a message instead of waiting for it.
    fn guarded(&self, pos: usize, body: impl FnOnce()) {
        if self.stopped() {
            return;
        }
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            let msg = crate::panics::message(&p);
            self.send(pos, Err(anyhow!("{}: {msg}", crate::panics::SYNTHESIS)));
        }
    }

    /// Queues the recording's blocks (of the first partition's circuit).
    fn record<'s>(&'s self, scope: &rayon::ScopeFifo<'s>) {
        let n = self.circuits.witness_tasks(self.todo[0]);
        *self.blocks.lock().unwrap_or_else(|e| e.into_inner()) =
            ((0..n).map(|_| None).collect(), n);
        for j in 0..n {
            scope.spawn_fifo(move |scope| self.run(0, Task::Record(j), scope));
        }
    }

    fn run<'s>(&'s self, pos: usize, task: Task, scope: &rayon::ScopeFifo<'s>) {
        self.guarded(pos, || self.task(pos, task, scope))
    }

    fn task<'s>(&'s self, pos: usize, task: Task, scope: &rayon::ScopeFifo<'s>) {
        let k = self.todo[pos];
        match task {
            Task::Full => self.send(pos, self.circuits.synthesize(k, self.hint)),
            Task::Record(j) => {
                let block = match self.circuits.record_task(k, j) {
                    Ok(b) => b,
                    Err(e) => return self.send(pos, Err(e.context("recording the circuit"))),
                };
                let blocks = {
                    let mut b = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
                    b.0[j] = Some(block);
                    b.1 -= 1;
                    if b.1 > 0 {
                        return;
                    }
                    std::mem::take(&mut b.0)
                };
                let blocks = blocks.into_iter().map(|b| b.expect("every block is in"));
                match join_blocks(blocks.collect()) {
                    Ok(pce) => {
                        log::info!(
                            "recorded the constraint system: {} rows, {:?} terms in A, B, C",
                            pce.constraints(),
                            pce.nnz()
                        );
                        *self.recorded.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(self.t0.elapsed());
                        let pce = Arc::new(pce);
                        if let Some(keep) = self.keep {
                            keep(pce.clone());
                        }
                        self.publish(pce, scope);
                    }
                    Err(e) => self.send(pos, Err(e.context("recording the circuit"))),
                }
            }
            Task::Load => {
                let (loaded, took) = match self.load.as_ref().expect("a load task has a load") {
                    Loading::Caller(p) => p.wait(),
                    Loading::Here(p) => p.wait(),
                };
                match loaded {
                    Ok(pce) => {
                        log::info!("recording loaded in {:.3} s", took.as_secs_f64());
                        *self.loaded.lock().unwrap_or_else(|e| e.into_inner()) = Some(took);
                        self.publish(Arc::new(pce), scope);
                    }
                    // Never used: recorded anew, and the caller replaces the file.
                    Err(e) => {
                        log::warn!("{e:#}; recording the circuit anew");
                        self.record(scope);
                    }
                }
            }
            Task::Part(j) => {
                let part = match self.circuits.witness_task(k, j) {
                    Ok(w) => w,
                    Err(e) => return self.send(pos, Err(e)),
                };
                let pce = {
                    // The recording's lock first, as in the recording's handover.
                    let pce = self.pce.lock().unwrap_or_else(|e| e.into_inner());
                    let mut slot = self.slots[pos].lock().unwrap_or_else(|e| e.into_inner());
                    slot.parts[j] = Some(part);
                    slot.left -= 1;
                    if slot.left > 0 {
                        return;
                    }
                    match &*pce {
                        Some(p) => p.clone(),
                        None => {
                            slot.waiting = true; // the recording's task joins it
                            return;
                        }
                    }
                };
                let parts = self.take_parts(pos);
                self.join(pos, parts, &pce)
            }
        }
    }
}

/// Synthesizes `todo`'s partitions on `pool` and hands each, complete, to `prove` with its
/// position in `todo`, in the order they are completed (`todo`'s order but for ties), and
/// the partition handed over next when it is already complete (so that the prover can
/// move its inputs ahead). Stops at the first error, of synthesis or of `prove`. (One
/// device queue: [`run_on`] is the scheduler with several.)
pub fn run<'a>(
    circuits: &'a dyn PartitionCircuits,
    todo: &'a [usize],
    synthesis: Synthesis<'a>,
    window: usize,
    pool: &rayon::ThreadPool,
    prove: impl FnMut(usize, ProvingAssignment, Option<&ProvingAssignment>) -> Result<()> + Send,
) -> Result<Overlapped> {
    let prove = Mutex::new(prove);
    let one = crate::prove::cpu::Cpu;
    let mut queues = [Queue::new(&one)];
    let mut done = run_on(
        circuits,
        todo,
        synthesis,
        window,
        pool,
        &mut queues,
        &|_, pos, pa, next| {
            let mut prove = prove.lock().unwrap_or_else(|e| e.into_inner());
            (*prove)(pos, pa, next.peek()).map_err(Failed::from)
        },
    )?;
    done.waited = queues[0].waited;
    Ok(done)
}

/// [`run`] with the partitions proved on `queues` (gpus.rs): each queue takes the next
/// complete partition when it is free. `waited` is left to the caller (each queue's own).
pub(crate) fn run_on<'a>(
    circuits: &'a dyn PartitionCircuits,
    todo: &'a [usize],
    synthesis: Synthesis<'a>,
    window: usize,
    pool: &rayon::ThreadPool,
    queues: &mut [Queue],
    prove: &Prove,
) -> Result<Overlapped> {
    let t0 = Instant::now();
    let window = window.max(1);
    // Witness-only synthesis: until the prover has its first partition, only that one is
    // synthesized (`CUZK_STARTUP_WINDOW`, default 1; 0: the whole window from the start).
    // At 32GiB the cores are oversubscribed then (the C1's check, the recording's load,
    // the SRS upload's copies): three partitions' witnesses and joins at once delayed the
    // first, and the GPU needs the second only ~1.5 s after the first. Full syntheses
    // (one single-threaded task each) keep the whole window.
    let startup = match (&synthesis, std::env::var("CUZK_STARTUP_WINDOW").ok()) {
        (Synthesis::Full(_), _) => window,
        (_, Some(v)) if v == "0" => window,
        (_, Some(v)) => v.parse::<usize>().map_or(1, |n| n.clamp(1, window)),
        (_, None) => 1,
    };
    let mut tasks: VecDeque<(usize, Task)> = VecDeque::new();
    let mut slots = Vec::with_capacity(todo.len());
    let mut blocks = (Vec::new(), 0);
    let (hint, pce, defer, load, keep, ready) = match synthesis {
        Synthesis::Full(hint) => {
            tasks.extend((0..todo.len()).map(|pos| (pos, Task::Full)));
            (hint, None, false, None, None, None)
        }
        Synthesis::Pce {
            pce,
            defer,
            keep,
            ready,
        } => {
            let (pce, load) = match pce {
                PceSource::Ready(p) => (Some(p), None),
                PceSource::Load(path, id) => {
                    tasks.push_back((0, Task::Load));
                    (None, Some(Loading::Here(PendingLoad::start(path, id)?)))
                }
                PceSource::Loading(p) => {
                    tasks.push_back((0, Task::Load));
                    (None, Some(Loading::Caller(p)))
                }
                PceSource::Record => (None, None),
            };
            if pce.is_none() && load.is_none() {
                let n = circuits.witness_tasks(todo[0]);
                tasks.extend((0..n).map(|j| (0, Task::Record(j))));
                blocks = ((0..n).map(|_| None).collect(), n);
            }
            for (pos, &k) in todo.iter().enumerate() {
                let n = circuits.witness_tasks(k);
                tasks.extend((0..n).map(|j| (pos, Task::Part(j))));
            }
            // A recording given ready is handed over at once.
            if let (Some(p), Some(ready)) = (&pce, ready) {
                ready(p.clone());
            }
            (None, pce, defer, load, keep, ready)
        }
    };
    for &k in todo {
        let n = circuits.witness_tasks(k);
        slots.push(Mutex::new(Slot {
            parts: (0..n).map(|_| None).collect(),
            left: n,
            waiting: false,
        }));
    }
    let (tx, rx) = mpsc::channel();
    let shared = Shared {
        circuits,
        todo,
        hint,
        defer,
        slots,
        pce: Mutex::new(pce),
        proved: Mutex::new(0),
        started: AtomicBool::new(false),
        more: Condvar::new(),
        abort: AtomicBool::new(false),
        load,
        loaded: Mutex::new(None),
        blocks: Mutex::new(blocks),
        recorded: Mutex::new(None),
        keep,
        ready,
        t0,
        tx: Mutex::new(Some(tx)),
    };
    let shared = &shared;
    std::thread::scope(|s| {
        let producer = s.spawn(move || {
            let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.in_place_scope_fifo(|scope| {
                    for (pos, task) in tasks {
                        let mut proved = shared.proved.lock().unwrap_or_else(|e| e.into_inner());
                        let open = |started: bool| if started { window } else { startup };
                        while pos >= *proved + open(shared.started.load(Ordering::Acquire))
                            && !shared.stopped()
                        {
                            proved = shared.more.wait(proved).unwrap_or_else(|e| e.into_inner());
                        }
                        drop(proved);
                        if shared.stopped() {
                            break;
                        }
                        scope.spawn_fifo(move |scope| shared.run(pos, task, scope));
                    }
                })
            }));
            let synthesis = t0.elapsed();
            // Every task is done (or skipped): a partition never sent would leave the
            // receiver waiting, so the channel closes here.
            shared.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
            spawned.map(|()| synthesis)
        });
        // The prover's side: the partitions as they are complete, to the queues.
        let events = Events {
            started: &|| {
                let _guard = shared.proved.lock();
                shared.started.store(true, Ordering::Release);
                shared.more.notify_all();
            },
            proved: &|| {
                *shared.proved.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                shared.more.notify_all();
            },
            stop: &|| shared.stop(),
        };
        let source = || match rx.recv() {
            Ok((_, Err(e))) => Some(Err(e)),
            Ok((pos, Ok(pa))) => Some(Ok((pos, pa))),
            Err(_) => None,
        };
        let outcome = serve(todo, todo.len(), queues, source, prove, &events);
        drop(rx);
        let synthesis = producer
            .join()
            .ok()
            .and_then(|r| r.ok())
            .ok_or_else(|| anyhow!("a synthesis thread panicked"));
        outcome?;
        Ok(Overlapped {
            synthesis: synthesis?,
            waited: Duration::ZERO,
            pce: shared.pce.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            loaded: *shared.loaded.lock().unwrap_or_else(|e| e.into_inner()),
            recorded: *shared.recorded.lock().unwrap_or_else(|e| e.into_inner()),
        })
    })
}
