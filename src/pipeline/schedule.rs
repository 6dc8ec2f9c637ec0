//! Synthesis ∥ proving: the partitions synthesized (witnesses through the recording, or
//! full syntheses) and handed to the device queues as they are complete (`--overlap-synth`,
//! its scheduler in overlap_synth.rs; the queues' in gpus.rs), or batch by batch; the
//! recording loaded, or made here and handed to the caller's `keep` to be saved. Each
//! partition is checked against the parameters before it is proved.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use bellperson::groth16::Proof;
use blstrs::Bls12;
use rand_chacha::ChaCha20Rng;
use rand_core::{OsRng, SeedableRng};
use rayon::prelude::*;

use super::gpus::{self, Failed, Queue};
use super::overlap_synth::PendingLoad;
use super::{log, overlap_synth};
use crate::circuit::PartitionCircuits;
use crate::cli::{Config, Phase};
use crate::input::srs::Srs;
use crate::panics::{catch, SYNTHESIS};
use crate::prove::{assemble, Backend, Randomness};
use crate::report::{QueueInfo, Timings};
use crate::synth::pce::Pce;
use crate::synth::{presize, Abc, ProvingAssignment, Shape, WitnessStats};

/// What the stage needs: the run's settings and inputs, and its plan.
pub(crate) struct Run<'a> {
    pub cfg: &'a Config,
    pub circuits: &'a dyn PartitionCircuits,
    /// The partitions to prove, in order.
    pub todo: &'a [usize],
    pub srs: &'a Srs,
    /// The device queues' backends (`--gpus`), the first first.
    pub queues: &'a [Arc<dyn Backend>],
    /// Partitions in flight (the memory plan's).
    pub window: usize,
    /// The recording's load, when its file was found intact (started by the caller; it
    /// checks the file's identity and digest).
    pub found: Option<&'a PendingLoad>,
    /// A·w, B·w, C·w left to the backend.
    pub defer: bool,
    /// Handed a recording made in this run.
    pub keep: overlap_synth::Keep<'a>,
}

/// What the stage gives: the proofs by partition (in order) and what the report says of
/// the circuit, the witness and the recording.
pub(crate) struct Proved {
    pub proofs: Vec<(usize, Proof<Bls12>)>,
    pub shape: Option<Shape>,
    pub witness: Option<WitnessStats>,
    pub pce: Option<Arc<Pce>>,
    /// The recording was made in this run (not loaded).
    pub recorded: bool,
    /// What each device queue did.
    pub queues: Vec<QueueInfo>,
}

pub(crate) fn synthesize_and_prove(run: &Run, t: &mut Timings) -> Result<Proved> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(run.cfg.synth_threads)
        .build()?;
    let mut prover = Prover::new(run);
    let mut queues: Vec<Queue> = run.queues.iter().map(|b| Queue::new(&**b)).collect();
    // On a terminal, a bar over the partitions instead of the phases' spinners.
    let spinners = t.set_spinners(false);
    if spinners && run.todo.len() > 1 {
        prover.bar = Some(progress_bar(run.todo.len()));
    }
    let done = if run.cfg.overlap_synth {
        overlapped(run, &pool, &prover, &mut queues, t)
    } else {
        batched(run, &pool, &prover, &mut queues, t)
    };
    t.set_spinners(spinners);
    if let Some(b) = prover.bar.take() {
        b.finish_and_clear();
    }
    // The queues' rows, whatever the outcome (the report of a failed run has them too).
    let several = queues.len() > 1;
    for q in &queues {
        t.absorb(&q.t);
    }
    for q in queues.iter().filter(|_| several) {
        let name = q.backend.queue_name();
        t.add(&format!("  {name}: proving"), q.busy);
        t.add(&format!("  {name}: waited for synthesis"), q.waited);
    }
    let queues: Vec<QueueInfo> = queues
        .iter()
        .map(|q| QueueInfo {
            device: q.backend.queue_name(),
            gpu: q.backend.device(),
            partitions: q.proved.iter().map(|&pos| run.todo[pos]).collect(),
            busy_s: q.busy.as_secs_f64(),
            waited_s: q.waited.as_secs_f64(),
            failed: q.failed.clone(),
        })
        .collect();
    let (pce, recorded) = done?;
    let State {
        mut proofs,
        shape,
        witness,
    } = prover.state.into_inner().unwrap_or_else(|e| e.into_inner());
    let freeing = prover
        .freeing
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(h) = freeing {
        let _ = h.join(); // a drop does not panic; the memory is back when the stage ends
    }
    // Partitions are proved as they are complete, on any queue: in partition order here.
    proofs.sort_by_key(|(k, _)| *k);
    Ok(Proved {
        proofs,
        shape,
        witness,
        pce,
        recorded,
        queues,
    })
}

/// "proved 3 of 10 partitions", elapsed time and ETA, on stderr.
fn progress_bar(n: usize) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(n as u64);
    let style = indicatif::ProgressStyle::with_template(
        "{bar:30} proved {pos} of {len} partitions  {elapsed} (ETA {eta})",
    )
    .expect("a valid template");
    bar.set_style(style);
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// Proves synthesized partitions on the device queue given to each call, and collects
/// their proofs; shared by the queues' threads.
struct Prover<'a> {
    run: &'a Run<'a>,
    bar: Option<indicatif::ProgressBar>,
    /// By position in `todo`, whichever queue proves it.
    randomness: Vec<Randomness>,
    state: Mutex<State>,
    /// The assignment being freed beside the proving (joined by the next free, or when
    /// the stage ends).
    freeing: Mutex<Option<std::thread::JoinHandle<()>>>,
    background_free: bool,
}

/// What the partitions proved so far gave.
#[derive(Default)]
struct State {
    proofs: Vec<(usize, Proof<Bls12>)>,
    shape: Option<Shape>,
    witness: Option<WitnessStats>,
}

impl<'a> Prover<'a> {
    fn new(run: &'a Run<'a>) -> Self {
        let n = run.todo.len();
        let randomness = match run.cfg.rng_seed {
            Some(seed) => Randomness::draw(&mut ChaCha20Rng::seed_from_u64(seed), n),
            None => Randomness::draw(&mut OsRng, n),
        };
        Self {
            run,
            bar: None,
            randomness,
            state: Mutex::new(State {
                proofs: Vec::with_capacity(n),
                ..Default::default()
            }),
            freeing: Mutex::new(None),
            background_free: std::env::var("CUZK_BACKGROUND_FREE").map_or(true, |v| v != "0"),
        }
    }

    /// Frees proved assignments on a thread of their own: a 32GiB partition's is ~4.2 GB,
    /// whose pages take ~0.2 s to give back (the 32GiB timeline showed ~0.19 s a
    /// partition between the GPU's phases), time the next partition's GPU work would
    /// otherwise wait for. One free at a time: the previous one (done long before, a
    /// partition's GPU work later) is waited for first, so at most one proved assignment
    /// outlives its proof beyond the memory plan's window. `CUZK_BACKGROUND_FREE=0` frees
    /// them here (for comparison).
    fn free_beside(&self, parts: Vec<ProvingAssignment>) {
        if !self.background_free {
            return drop(parts);
        }
        let mut freeing = self.freeing.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = freeing.take() {
            let _ = h.join();
        }
        let spawned = std::thread::Builder::new()
            .name("free-assignment".into())
            .spawn(move || drop(parts));
        // Without a thread, the closure (and the parts in it) was dropped here.
        *freeing = spawned.ok();
    }

    /// Checks the partitions' shape against the parameters (and takes the witness's
    /// statistics from the first).
    fn check(&self, pos: usize, parts: &[ProvingAssignment]) -> Result<()> {
        let run = self.run;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for p in parts {
            let s = Shape::of(p);
            ensure!(
                state.shape.is_none() || state.shape == Some(s),
                "partition circuits differ in shape: {s:?} vs {:?}",
                state.shape
            );
            state.shape = Some(s);
        }
        run.srs
            .check_circuit(state.shape.as_ref().expect("set above"))?;
        if state.witness.is_none() {
            let w = WitnessStats::of(&parts[0]);
            log::debug!("witness of partition {}: {w:?}", run.todo[pos]);
            state.witness = Some(w);
        }
        Ok(())
    }

    /// The partitions at positions `pos..` of `todo`, synthesized: checked, then proved on
    /// queue `q`. `next`: the partition that comes after them, when it is already
    /// synthesized. A single partition whose products failed comes back whole in the
    /// error when its a, b, c were left to the backend (the recording's evaluation,
    /// shared: cheap to keep), so that another queue can prove it; host-evaluated a, b, c
    /// are consumed by the products (12 GB at 32GiB, freed as they go to the device).
    fn prove(
        &self,
        q: &mut Queue,
        pos: usize,
        mut parts: Vec<ProvingAssignment>,
        next: &dyn crate::prove::NextPart,
    ) -> Result<(), Failed> {
        let run = self.run;
        self.check(pos, &parts)?;
        if run.cfg.stop_after == Some(Phase::Synth) {
            return Ok(());
        }
        let kept = match &parts[..] {
            [p] if matches!(p.abc, Abc::Deferred(_)) => Some(p.abc.clone()),
            _ => None,
        };
        let products = match q.backend.products(run.srs, &mut parts, next, &mut q.t) {
            Ok(p) => p,
            Err(e) => {
                let error = e.context(q.backend.queue_name());
                let retry = kept.map(|abc| {
                    let mut p = parts.pop().expect("one partition");
                    p.abc = abc;
                    Box::new(p)
                });
                return Err(Failed { error, retry });
            }
        };
        self.free_beside(parts);
        let assembled = q.t.time("assemble proofs", || {
            products
                .iter()
                .zip(&self.randomness[pos..])
                .map(|(p, r)| assemble(&run.srs.vk, p, *r))
                .collect::<Result<Vec<_>>>()
        })?;
        if let Some(b) = &self.bar {
            b.inc(assembled.len() as u64);
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state
            .proofs
            .extend(run.todo[pos..].iter().copied().zip(assembled));
        Ok(())
    }
}

/// `--overlap-synth on`: the scheduler's tasks on `pool`, each partition proved as soon as
/// it is complete. The recording and whether it was made here.
fn overlapped(
    run: &Run,
    pool: &rayon::ThreadPool,
    prover: &Prover,
    queues: &mut [Queue],
    t: &mut Timings,
) -> Result<(Option<Arc<Pce>>, bool)> {
    use overlap_synth::{PceSource, Synthesis};
    let cfg = run.cfg;
    let hint = cfg
        .presize
        .then(|| presize::hint_from_srs(run.srs))
        .transpose()?;
    // A recording whose evaluations the backends make goes to their devices as soon as
    // synthesis has it (`--upload-ahead`), unless the run stops after synthesis.
    let to_devices = |p: Arc<Pce>| run.queues.iter().for_each(|q| q.prepare_pce(&p));
    let to_devices = (run.defer && cfg.stop_after != Some(Phase::Synth))
        .then_some(&to_devices as overlap_synth::Keep);
    let how = match (cfg.pce, run.found) {
        (false, _) => Synthesis::Full(hint),
        (true, found) => Synthesis::Pce {
            pce: found.map_or(PceSource::Record, PceSource::Loading),
            defer: run.defer,
            keep: Some(run.keep),
            ready: to_devices,
        },
    };
    // The rows first, though measured last: synthesis comes before proving.
    let (load, record, synthesis, waited) = (
        "load PCE (beside synthesis)",
        "record PCE (beside synthesis)",
        "synthesis",
        "  proving waited for synthesis (overlapped)",
    );
    if run.found.is_some() {
        t.add(load, Duration::ZERO);
    } else if cfg.pce {
        t.add(record, Duration::ZERO);
    }
    t.add(synthesis, Duration::ZERO);
    t.add(waited, Duration::ZERO);
    let done = overlap_synth::run_on(
        run.circuits,
        run.todo,
        how,
        run.window,
        pool,
        queues,
        &|q, pos, pa, next| prover.prove(q, pos, vec![pa], next),
    )?;
    t.add(synthesis, done.synthesis);
    t.add(waited, queues.iter().map(|q| q.waited).sum());
    if let Some(d) = done.loaded {
        t.add(load, d);
    }
    if let Some(d) = done.recorded {
        t.add(record, d);
    }
    Ok((done.pce, done.recorded.is_some()))
}

/// `--overlap-synth off`: batches of the plan's window, each synthesized, then proved: on
/// one queue in one call, or partition by partition on several.
fn batched(
    run: &Run,
    pool: &rayon::ThreadPool,
    prover: &Prover,
    queues: &mut [Queue],
    t: &mut Timings,
) -> Result<(Option<Arc<Pce>>, bool)> {
    let cfg = run.cfg;
    let hint = cfg
        .presize
        .then(|| presize::hint_from_srs(run.srs))
        .transpose()?;
    let mut pce = None;
    let mut recorded = false;
    if let Some(pending) = run.found {
        let (loaded, took) = pending.wait();
        t.add("load PCE", took);
        match loaded {
            Ok(p) => pce = Some(Arc::new(p)),
            Err(e) => log(
                cfg,
                &format!("warning: {e:#}: not used; the circuit is recorded anew"),
            ),
        }
    }
    for (b, ks) in run.todo.chunks(run.window).enumerate() {
        let parts = if cfg.pce {
            if pce.is_none() {
                let circuits = run.circuits;
                let p = t.time("record PCE", || {
                    catch(SYNTHESIS, || pool.install(|| circuits.record(ks[0])))
                        .with_context(|| format!("partition {} (recording the circuit)", ks[0]))
                })?;
                log::info!(
                    "recorded the constraint system: {} rows, {:?} terms in A, B, C",
                    p.constraints(),
                    p.nnz()
                );
                let p = Arc::new(p);
                (run.keep)(p.clone());
                pce = Some(p);
                recorded = true;
            }
            let (p, circuits, defer) = (
                pce.as_ref().expect("loaded or recorded above"),
                run.circuits,
                run.defer,
            );
            pool.install(|| synthesize_pce(circuits, ks, p, defer, t))?
        } else {
            let circuits = run.circuits;
            t.time("synthesis", || {
                pool.install(|| {
                    ks.par_iter()
                        .map(|&k| {
                            catch(SYNTHESIS, || circuits.synthesize(k, hint))
                                .with_context(|| format!("partition {k}"))
                        })
                        .collect::<Result<Vec<_>>>()
                })
            })?
        };
        let first = b * run.window;
        if let [q] = queues {
            let t0 = std::time::Instant::now();
            prover.prove(q, first, parts, &None).map_err(|f| f.error)?;
            q.busy += t0.elapsed();
            q.proved.extend(first..first + ks.len());
            continue;
        }
        let mut parts = parts.into_iter().enumerate();
        let events = gpus::Events {
            started: &|| (),
            proved: &|| (),
            stop: &|| (),
        };
        gpus::serve(
            &run.todo[..first + ks.len()],
            ks.len(),
            queues,
            || parts.next().map(|(i, pa)| Ok((first + i, pa))),
            &|q, pos, pa, next| prover.prove(q, pos, vec![pa], next),
            &events,
        )?;
    }
    Ok((pce, recorded))
}

/// `--pce`: partition circuits → assignments through the recorded constraint system:
/// their witnesses, then A·w, B·w, C·w, or (`defer`) not: the backend evaluates them on
/// its device.
fn synthesize_pce(
    circuits: &dyn PartitionCircuits,
    ks: &[usize],
    pce: &Arc<Pce>,
    defer: bool,
    t: &mut Timings,
) -> Result<Vec<ProvingAssignment>> {
    let ctx = |k: usize| move || format!("partition {k}");
    let witnesses = t.time("synthesis: witnesses (PCE)", || {
        ks.par_iter()
            .map(|&k| catch(SYNTHESIS, || circuits.witness(k)).with_context(ctx(k)))
            .collect::<Result<Vec<_>>>()
    })?;
    if defer {
        return witnesses
            .into_iter()
            .zip(ks)
            .map(|(w, &k)| pce.deferred(w).with_context(ctx(k)))
            .collect();
    }
    t.time("synthesis: A·w, B·w, C·w (PCE)", || {
        witnesses
            .into_iter()
            .zip(ks)
            .map(|(w, &k)| pce.assignment(w).with_context(ctx(k)))
            .collect()
    })
}
