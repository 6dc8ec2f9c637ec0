//! One proving run: input (C1, SRS) → circuit → synth → prove backend → verify → write →
//! report.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, ensure, Context, Result};
use bellperson::groth16::Proof;
use blstrs::Bls12;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_proofs_api::RegisteredSealProof;
use rayon::prelude::*;

use crate::circuit::{porep_circuits, PartitionCircuits};
use crate::cli::PceEval;
use crate::cli::{Config, Device, Gpus, Phase};
use crate::input::c1::{prover_id_from_miner, sector_size_name, Reading, C1};
use crate::input::params_digest;
use crate::input::srs::{cache_paths, Srs};
use crate::prove::cuda::backend::Cuda;
use crate::prove::{self, devices::Devices};
use crate::report::{C1Info, Classify, ErrorKind, Failure, OutputInfo, PceInfo, Report, Timings};
use crate::synth::pce::Identity;
use crate::synthetic::{self};
use crate::{output, verify};

mod gpus;
pub(crate) mod memory_budget;
pub mod overlap_synth;
mod params;
mod partition_checks;
pub mod pce_cache;
#[doc(hidden)]
pub mod queues_testing;
mod save;
mod schedule;

use params::parameters;
use save::{finish_save, Saver};

use overlap_synth::PendingLoad;
use pce_cache::PceCache;

/// `--overlap-synth`'s default window with `--pce` (`--max-circuits`; the memory planner
/// may choose fewer): partitions being synthesized or waiting for the prover.
pub(crate) const OVERLAP_WINDOW: usize = 3;

fn log(cfg: &Config, msg: &str) {
    if !cfg.quiet {
        eprintln!("{msg}");
    }
}

/// Checks that the C1's replica_id is the one derived from miner id and sector number.
fn check_replica_id(cfg: &Config, c1: &C1) -> Result<()> {
    let Some(miner_id) = cfg.miner_id else {
        return Ok(());
    };
    let sector_num = cfg.sector_num.or(c1.sector_num).context(
        "--miner-id needs --sector-num (or a wrapper C1 with SectorNum) for the replica_id check",
    )?;
    let config = c1.registered_proof.as_v1_config();
    let o = &c1.output;
    let expected = storage_proofs_porep::stacked::generate_replica_id::<PoseidonHasher, _>(
        &prover_id_from_miner(miner_id),
        sector_num,
        &o.ticket,
        o.comm_d,
        &config.porep_id,
    );
    ensure!(
        expected == o.replica_id,
        "the C1's replica_id is not the one of miner {miner_id}, sector {sector_num} (wrong \
         --miner-id/--sector-num, or the C1 belongs to another sector)"
    );
    Ok(())
}

/// `--device`: cuda needs a CUDA build and a GPU (and says which is missing, before
/// anything else is done); auto takes the GPU when both are there, else the CPU, and
/// settles that on a helper thread: the driver's initialisation (≈ 0.1 s) then overlaps
/// the inputs and synthesis. `--gpus`: a queue per GPU (devices.rs).
fn choose_backend(cfg: &Config) -> Result<Devices> {
    Ok(match cfg.device {
        Device::Cpu => Devices::cpu(),
        Device::Cuda if !prove::cuda::built() => {
            bail!("--device cuda: {}", prove::cuda::NO_CUDA_BUILD)
        }
        Device::Auto if !prove::cuda::built() => Devices::cpu(),
        Device::Cuda | Device::Auto => {
            prove::cuda::set_pin_transfers(cfg.pin);
            let msm = prove::cuda::Msm {
                window: cfg.msm_window,
                split: cfg.split_msm,
                windows_per_pass: 0,
            };
            let auto = cfg.device == Device::Auto;
            let (lock, quiet) = (cfg.gpu_lock, cfg.quiet);
            let b = Cuda::new(
                msm,
                cfg.b_g2,
                cfg.srs_decode,
                cfg.gpus.first(),
                cfg.pin || cfg.pin_mapped,
                auto,
                lock,
                quiet,
            )
            .overlap_aux(cfg.overlap_aux)
            .upload_ahead(cfg.upload_ahead)
            .pack_aux(cfg.pack_aux)
            .pce_eval(cfg.pce_eval == PceEval::Gpu);
            let devices = Devices::cuda(b, cfg.gpus.clone());
            // Waited for under --device cuda, and for GPUs named by index other than 0:
            // the only index that can be out of range under auto (no GPU at all means
            // the CPU). Every listed index is checked here, before any heavy work.
            let named = matches!(&cfg.gpus, Gpus::List(l) if l.iter().any(|&i| i > 0));
            if !auto || named {
                devices.count(usize::MAX)?;
            }
            devices
        }
    })
}

/// What a run produced, for callers of the library (the tests): the proof's bytes (empty
/// when stopped before proving), the timings, and the report as JSON.
pub struct Outcome {
    pub proof: Vec<u8>,
    pub timings: Timings,
    pub report: serde_json::Value,
}

/// [`run_with`] for a library caller: its own timings and report; the error one chain.
pub fn run(cfg: &Config) -> Result<Outcome> {
    let mut timings = Timings::new(false);
    let mut report = Report::default();
    let proof = run_with(cfg, &mut timings, &mut report).map_err(|f| f.error)?;
    report.set_timings(&timings);
    Ok(Outcome {
        proof,
        timings,
        report: report.to_json(),
    })
}

/// One proving run, stage by stage: inputs → parameters → circuits → plan → synthesis ∥
/// proving → verification → output. Fills `report` as it goes (also when it fails) and
/// returns the proof's bytes (none when `--stop-after` stops it before).
pub fn run_with(cfg: &Config, t: &mut Timings, report: &mut Report) -> Result<Vec<u8>, Failure> {
    report.flags = serde_json::to_value(cfg).ok();
    // Process-wide, for the blocks allocated from here on (a binary that installs the
    // allocator: cuzk-prove does).
    crate::huge_pages::set(cfg.huge_pages);
    check_outputs(cfg).kind(ErrorKind::BadInput)?;
    // With CUDA this starts the GPU probe (and waits for it under --device cuda); the
    // context is created during synthesis, by the backend's prefetch.
    let backend = t.time("choose backend", || choose_backend(cfg))?;
    let proved = prove_sector(cfg, &backend, t, report);
    if proved.is_ok() {
        for w in &report.warnings {
            log(cfg, w);
        }
    }
    // The backend's name waits for the GPU probe: asked for once the run is over.
    report.backend = Some(backend.name());
    report.gpu = backend.first_device();
    proved
}

/// The output paths, checked before any heavy work.
fn check_outputs(cfg: &Config) -> Result<()> {
    if let Some(out) = &cfg.output {
        output::check_path(out)?;
    }
    if let Some(json) = &cfg.json {
        output::check_path(json)?;
    }
    Ok(())
}

fn prove_sector(
    cfg: &Config,
    backend: &Devices,
    t: &mut Timings,
    report: &mut Report,
) -> Result<Vec<u8>, Failure> {
    let Some(Inputs {
        c1,
        partitions,
        params_path,
        srs,
        pce_id,
        early,
        upload,
        prefetched,
    }) = read_inputs(cfg, backend, t, report)?
    else {
        return Ok(Vec::new()); // --stop-after parse
    };
    let c1_bytes = c1.file_bytes as u64;
    if cfg.stop_after == Some(Phase::Srs) {
        build_circuits(cfg, c1, partitions, &srs, t).kind(ErrorKind::BadInput)?;
        return Ok(Vec::new());
    }

    // --pce: where the recording is found or kept, and what this run holds in memory.
    let todo = to_prove(cfg, c1.registered_proof);
    let (cache, defer, plan) = plan_run(cfg, backend, &srs, c1_bytes, &params_path, &pce_id, todo)?;
    log::info!("memory plan: {plan:?}");
    report.memory_plan = Some(plan);
    // The slow inputs start before the C1's check: the SRS's upload to the GPU (above,
    // beside the C1's parse) and the recording's load (at 32GiB 5 s and 3.5 s, which the
    // first partition waits for).
    let start_inputs = || -> Result<Option<PendingLoad>> {
        if upload && !prefetched {
            backend.prefetch(&srs, todo)?;
        }
        cache
            .path
            .clone()
            .filter(|_| cache.found)
            .map(|p| PendingLoad::start(p, pce_id.clone()))
            .transpose()
    };
    let mut found = if early { start_inputs()? } else { None };
    let circuits = build_circuits(cfg, c1, partitions, &srs, t).kind(ErrorKind::BadInput)?;
    if !early {
        found = start_inputs()?;
    }
    // A recording made in this run is saved on a thread of its own while the partitions
    // are proved (9 GB at 32GiB); a found file that failed to load is replaced.
    let saver = Saver::new(cache.path.clone(), cache.replace || cache.found, &pce_id);
    let run = schedule::Run {
        cfg,
        circuits: &*circuits.circuits,
        todo: &circuits.todo,
        srs: &srs,
        queues: &backend.queues(todo)?,
        window: plan.window,
        found: found.as_ref(),
        defer,
        keep: &|p| saver.start(p),
    };
    let proved = schedule::synthesize_and_prove(&run, t).map_err(|e| {
        let bad = crate::panics::is_synthesis_panic(&e) || partition_checks::is_bad_c1(&e);
        let kind = match bad {
            true => ErrorKind::BadInput,
            false => ErrorKind::Runtime,
        };
        Failure { kind, error: e }
    })?;
    report.circuit = proved.shape;
    report.queues = proved.queues;
    report.witness = proved.witness;
    report.pce = proved.pce.as_ref().map(|p| PceInfo {
        path: cache.path.clone(),
        source: if proved.recorded {
            "recorded"
        } else {
            "loaded"
        },
        terms: p.nnz(),
        eval: if defer { "backend" } else { "cpu" },
        saved: None,
    });
    if matches!(cfg.stop_after, Some(Phase::Synth) | Some(Phase::Prove)) {
        return Ok(Vec::new());
    }

    // Always, --no-verify too: a proof with a point outside its group is never written.
    t.time("check proof points", || {
        verify::check_subgroups(&proved.proofs)
    })?;
    if cfg.verify {
        t.time("verify", || {
            verify::verify(&srs.vk, &proved.proofs, &circuits.inputs)
        })?;
    }
    report.verified = Some(cfg.verify);
    let just: Vec<Proof<Bls12>> = proved.proofs.into_iter().map(|(_, p)| p).collect();
    let bytes = output::encode(&just)?;
    if let Some(out) = &cfg.output {
        t.time("write proof", || output::write_to(out, &bytes, false))?;
        report.output = Some(OutputInfo {
            path: out.clone(),
            bytes: bytes.len(),
        });
    }
    // The proof is written: the recording's save is waited for last, and its failure is
    // a warning (later runs record it again).
    let saved = finish_save(cfg, &saver, cache.path.as_deref(), t);
    if let Some(p) = report.pce.as_mut() {
        p.saved = saved;
    }
    Ok(bytes)
}

/// How many partitions the run proves: all of the sector's, or the one `--partition`
/// names.
fn to_prove(cfg: &Config, proof: RegisteredSealProof) -> usize {
    match cfg.partition {
        Some(_) => 1,
        None => usize::from(proof.as_v1_config().partitions),
    }
}

/// The inputs stage's outcome.
struct Inputs {
    c1: C1,
    partitions: usize,
    params_path: PathBuf,
    srs: Arc<Srs>,
    /// What a recording must be for to be used: these parameters and this circuit.
    pce_id: Identity,
    /// The slow inputs start before the C1's check (`CUZK_EARLY_INPUTS`, default on).
    early: bool,
    /// The run goes on to the GPU's products: the SRS is uploaded.
    upload: bool,
    /// The upload has started already, beside the C1's parse.
    prefetched: bool,
}

/// The C1 and its parameters. The C1's proof type comes from its head and the rest is
/// parsed on a thread beside the parameters' map and the start of their upload to the
/// GPU (the first partition waits for it); the parameters are then located, checked and
/// reported as if the C1 had come first. None after `--stop-after parse`.
fn read_inputs(
    cfg: &Config,
    backend: &Devices,
    t: &mut Timings,
    report: &mut Report,
) -> Result<Option<Inputs>, Failure> {
    let reading = t
        .time("read C1", || Reading::start(&cfg.c1, cfg.c1_max_bytes))
        .kind(ErrorKind::BadInput)?;
    if cfg.stop_after == Some(Phase::Parse) {
        read_input(cfg, reading, t, report).kind(ErrorKind::BadInput)?;
        return Ok(None);
    }
    let proof = reading.registered_proof;
    // CUZK_EARLY_INPUTS=0: the SRS upload and the recording's load start after the C1's
    // check instead, as before (for comparison).
    let early = std::env::var("CUZK_EARLY_INPUTS").map_or(true, |v| v != "0");
    let upload = !matches!(cfg.stop_after, Some(Phase::Srs) | Some(Phase::Synth));
    let mapped = (early && upload)
        .then(|| params::map_early(cfg, proof))
        .flatten();
    if let Some(srs) = &mapped {
        backend.prefetch(srs, to_prove(cfg, proof))?;
    }
    let prefetched = mapped.is_some();
    let (c1, partitions) = read_input(cfg, reading, t, report).kind(ErrorKind::BadInput)?;
    let (params_path, srs, vk_digest) = parameters(cfg, proof, mapped, t, report)?;
    let pce_id = pce_cache::identity(proof, vk_digest)?;
    Ok(Some(Inputs {
        c1,
        partitions,
        params_path,
        srs,
        pce_id,
        early,
        upload,
        prefetched,
    }))
}

/// The C1, parsed and checked against `--miner-id`/`--partition`; its partition count.
fn read_input(
    cfg: &Config,
    reading: Reading,
    t: &mut Timings,
    report: &mut Report,
) -> Result<(C1, usize)> {
    let c1 = t.time("parse C1 (beside the parameters)", || reading.finish())?;
    let proof = c1.registered_proof;
    check_replica_id(cfg, &c1)?;
    let partitions = usize::from(proof.as_v1_config().partitions);
    if let Some(k) = cfg.partition {
        ensure!(
            k < partitions,
            "--partition {k} is out of range: {proof:?} has {partitions} partitions (0..{})",
            partitions - 1
        );
    }
    report.c1 = Some(C1Info {
        path: cfg.c1.clone(),
        format: c1.format,
        bytes: c1.file_bytes,
        registered_proof: format!("{proof:?}"),
        sector_size: c1.sector_size(),
        sector_size_name: sector_size_name(c1.sector_size()).to_string(),
        sector_num: c1.sector_num,
    });
    report.partitions = Some(partitions);
    Ok((c1, partitions))
}

/// The partition circuits to prove and their public inputs.
struct Circuits {
    circuits: Box<dyn PartitionCircuits>,
    /// The partitions to prove, in order.
    todo: Vec<usize>,
    inputs: Vec<Vec<blstrs::Scalar>>,
}

/// The C1's partition circuits (those `--partition` names), their public inputs, and
/// their count checked against the parameters.
fn build_circuits(
    cfg: &Config,
    c1: C1,
    partitions: usize,
    srs: &Srs,
    t: &mut Timings,
) -> Result<Circuits> {
    let porep_config = c1.registered_proof.as_v1_config();
    let mut circuits: Box<dyn PartitionCircuits> = t.time("build circuits", || {
        porep_circuits(&porep_config, c1.output)
    })?;
    circuits.set_native_label(cfg.native_label);
    let circuits = partition_checks::Checked::new(circuits);
    let todo: Vec<usize> = match cfg.partition {
        Some(k) => vec![k],
        None => (0..partitions).collect(),
    };
    // Before any synthesis: every partition's shape, the first partition whole (the
    // others whole before they are joined, partition_checks.rs): a malformed C1 is one
    // line, not a panic in the gadgets or a circuit that cannot be satisfied. All of them
    // whole when nothing is synthesized after (`--stop-after srs`).
    let all = partition_checks::ahead() || cfg.stop_after == Some(Phase::Srs);
    let whole = match all {
        true => &todo[..],
        false => &todo[..1],
    };
    t.time("check C1", || circuits.check_before_synthesis(&todo, whole))?;
    let circuits: Box<dyn PartitionCircuits> = Box::new(circuits);
    let inputs: Vec<Vec<blstrs::Scalar>> = t.time("public inputs", || {
        todo.par_iter()
            .map(|&k| circuits.public_inputs(k))
            .collect::<Result<_>>()
    })?;
    srs.check_public_inputs(inputs[0].len())?;
    Ok(Circuits {
        circuits,
        todo,
        inputs,
    })
}

/// Before any heavy work: the recording's home (`--pce`), whether the backend evaluates
/// A·w, B·w, C·w, and the memory plan for `partitions` partitions.
fn plan_run(
    cfg: &Config,
    backend: &Devices,
    srs: &Srs,
    c1_bytes: u64,
    params_path: &std::path::Path,
    pce_id: &Identity,
    partitions: usize,
) -> Result<(PceCache, bool, memory_budget::Plan)> {
    let cache = match cfg.pce {
        true => pce_cache::locate(cfg.pce_cache.as_deref(), params_path, pce_id),
        false => PceCache::default(),
    };
    for w in &cache.warnings {
        log(cfg, w);
    }
    let found = cache.path.as_deref().filter(|_| cache.found);
    // --pce-eval gpu: A·w, B·w, C·w left to a backend that evaluates them on its device.
    let defer = cfg.pce && backend.evaluates_pce();
    // Without waiting for the GPU probe (it overlaps synthesis): a CUDA build under
    // --device auto proves on the GPU wherever the driver's device node exists.
    let host_prover = match cfg.device {
        Device::Cpu => true,
        Device::Cuda => false,
        Device::Auto => !prove::cuda::built() || !std::path::Path::new("/dev/nvidiactl").exists(),
    };
    // One partition being proved on each device queue (--gpus), besides those ahead.
    let queues = match host_prover || partitions == 1 {
        true => 1,
        false => backend.count(partitions)?,
    };
    let wanted = match (cfg.overlap_synth && cfg.pce, cfg.max_circuits) {
        (_, Some(n)) => n,
        // --overlap-synth with --pce: a few partitions ahead of the prover keep it busy
        // (their challenges are tasks for all cores; native witnesses outrun the GPU).
        (true, None) => OVERLAP_WINDOW + queues - 1,
        // Without --pce a partition is one single-threaded task: all at once if they fit.
        (false, None) => partitions,
    }
    .min(partitions);
    let plan = plan_memory(
        cfg,
        srs,
        c1_bytes,
        found,
        defer && !host_prover,
        host_prover,
        wanted,
    )?;
    Ok((cache, defer, plan))
}

/// `--memory-budget`: the partitions in flight, from the parameters' counts and what this
/// run holds (see [`memory_budget`]).
fn plan_memory(
    cfg: &Config,
    srs: &Srs,
    c1_bytes: u64,
    found: Option<&std::path::Path>,
    device_eval: bool,
    host_prover: bool,
    wanted: usize,
) -> Result<memory_budget::Plan> {
    use memory_budget::{Need, Pce as Mode};
    let domain = srs.domain_size() as u64;
    let pce = match (cfg.pce, found) {
        (false, _) => Mode::Off,
        (true, found) => Mode::On {
            bytes: found
                .and_then(|p| std::fs::metadata(p).ok())
                .map_or(Need::estimated_recording(domain), |m| m.len()),
            recording: found.is_none(),
            host_eval: !device_eval,
        },
    };
    let need = Need {
        domain,
        aux: srs.l.count as u64,
        pce,
        host_prover,
        c1_bytes,
    };
    let (budget, source) = memory_budget::available(cfg.memory_budget);
    memory_budget::plan(&need, budget, source, wanted)
}

/// `cuzk-prove pce`: records the constraint system of `proof`'s circuit where proving
/// runs look for it (from a generated C1 of that sector size: the constraint system does
/// not depend on the sector's data), for the parameters in `param_cache` (their verifying
/// key is in the recording's identity). Returns the file, or None when an intact one for
/// them was there already (and `force` is off).
pub fn prepare_pce(
    proof: RegisteredSealProof,
    param_cache: &std::path::Path,
    pce_dir: Option<&std::path::Path>,
    force: bool,
    quiet: bool,
) -> Result<Option<PathBuf>> {
    let params = cache_paths(proof, param_cache)?.params;
    let vk_digest = Srs::open(&params)
        .map(|srs| params_digest::digest(srs.vk_bytes()))
        .context("a recording is made for its parameters' verifying key (fetch them first)")?;
    let id = pce_cache::identity(proof, vk_digest)?;
    let cache = pce_cache::locate(pce_dir, &params, &id);
    for w in cache.warnings.iter().filter(|_| !quiet) {
        eprintln!("{w}");
    }
    let path = cache
        .path
        .clone()
        .context("no writable place for the recording (see the warning above)")?;
    if cache.found && !force {
        return Ok(None);
    }
    let g = synthetic::gen_c1::generate(&synthetic::gen_c1::Options {
        proof,
        miner_id: 1000,
        sector_num: 1,
        seed: [0x9c; 32],
    })
    .context("cannot make a circuit to record")?;
    let circuits = porep_circuits(&proof.as_v1_config(), g.c1)?;
    let pce = circuits.record(0)?;
    log::info!(
        "recorded the constraint system: {} rows, {:?} terms in A, B, C",
        pce.constraints(),
        pce.nnz()
    );
    pce.save(&path, cache.replace || cache.found, &id)?;
    Ok(Some(path))
}
