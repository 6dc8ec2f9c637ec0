//! One proving run: input (C1, SRS) → circuit → synth → prove backend → verify → write →
//! report.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use bellperson::groth16::Proof;
use blstrs::Bls12;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_proofs_api::RegisteredSealProof;
use rand_chacha::ChaCha20Rng;
use rand_core::{OsRng, SeedableRng};
use rayon::prelude::*;
use serde_json::json;

use crate::circuit::{porep_circuits, PartitionCircuits};
use crate::cli::PceEval;
use crate::cli::{Config, Device, Phase};
use crate::input::c1::{prover_id_from_miner, read_c1, sector_size_name, C1};
use crate::input::srs::{cache_paths, Srs};
use crate::prove::cuda::backend::Cuda;
use crate::prove::{self, assemble, cpu::Cpu, Backend, Randomness};
use crate::report::Timings;
use crate::synth::pce::Pce;
use crate::synth::{presize, ProvingAssignment, Shape, WitnessStats};
use crate::testdata::{self, TEST_ONLY_NOTICE, TEST_PARAMS_SEED};
use crate::{output, verify};

pub mod overlap_synth;

/// What a run produced.
pub struct Outcome {
    /// The proof bytes (empty when stopped before proving).
    pub proof: Vec<u8>,
    pub timings: Timings,
    /// The `--json` report.
    pub report: serde_json::Value,
}

/// `--overlap-synth`'s default window with `--pce` (`--max-circuits`): partitions being
/// synthesized or waiting for the prover.
pub const OVERLAP_WINDOW: usize = 3;

fn log(cfg: &Config, msg: &str) {
    if !cfg.quiet {
        eprintln!("{msg}");
    }
}

/// Resolves the parameters file: `--params`, else the standard name in `--param-cache`
/// (generating TEST-ONLY parameters there first with `--gen-test-params`).
fn locate_params(cfg: &Config, proof: RegisteredSealProof, t: &mut Timings) -> Result<PathBuf> {
    let paths = cache_paths(proof, &cfg.param_cache)?;
    if let Some(p) = &cfg.params {
        // A file under a standard cache name must be the one for this C1's circuit.
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let expected = paths
            .params
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if let Some(name) = name.filter(|n| n.starts_with("v28-stacked-proof-of-replication")) {
            ensure!(
                name == expected,
                "parameters {} are for another circuit than the C1's {proof:?} (another sector \
                 size or proof type): expected {expected}",
                p.display()
            );
        }
        return Ok(p.clone());
    }
    if paths.params.exists() {
        return Ok(paths.params);
    }
    if !cfg.gen_test_params {
        bail!(
            "no parameters for {proof:?} in {}: expected {} (cuzk-prove never downloads \
             parameters; fetch them, pass --params FILE, or use --gen-test-params for \
             TEST-ONLY ones)",
            cfg.param_cache.display(),
            paths.params.display()
        );
    }
    log(
        cfg,
        &format!(
            "notice: generating {TEST_ONLY_NOTICE}.\n        {proof:?} → {} (this takes \
             minutes, once)",
            cfg.param_cache.display()
        ),
    );
    let (paths, _) = t.time("generate test parameters", || {
        testdata::gen_params::generate(proof, &cfg.param_cache, Some(TEST_PARAMS_SEED))
    })?;
    Ok(paths.params)
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
/// the inputs and synthesis.
fn choose_backend(cfg: &Config) -> Result<Box<dyn Backend>> {
    Ok(match cfg.device {
        Device::Cpu => Box::new(Cpu),
        Device::Cuda if !prove::cuda::built() => {
            bail!("--device cuda: {}", prove::cuda::NO_CUDA_BUILD)
        }
        Device::Auto if !prove::cuda::built() => Box::new(Cpu),
        Device::Cuda | Device::Auto => {
            prove::cuda::set_pin_transfers(cfg.pin);
            let msm = prove::cuda::Msm {
                window: cfg.msm_window,
                split: cfg.split_msm,
            };
            let auto = cfg.device == Device::Auto;
            let b = Cuda::new(msm, cfg.b_g2, cfg.srs_decode, cfg.gpu, cfg.pin, auto)
                .overlap_aux(cfg.overlap_aux)
                .pce_eval(cfg.pce_eval == PceEval::Gpu);
            // Waited for under --device cuda, and for a --gpu other than 0: the only
            // index that can be out of range under auto (no GPU at all means the CPU).
            if !auto || cfg.gpu > 0 {
                b.gpu()?;
            }
            Box::new(b)
        }
    })
}

pub fn run(cfg: &Config) -> Result<Outcome> {
    let mut t = Timings::new(!cfg.quiet);
    if let Some(out) = &cfg.output {
        output::check_path(out)?;
    }
    if let Some(json) = &cfg.json {
        output::check_path(json)?;
    }
    // With CUDA this starts the GPU probe (and waits for it under --device cuda); the
    // context is created during synthesis, by the backend's prefetch.
    let backend = t.time("choose backend", || choose_backend(cfg))?;

    let c1 = t.time("read C1", || read_c1(&cfg.c1))?;
    let proof = c1.registered_proof;
    let porep_config = proof.as_v1_config();
    check_replica_id(cfg, &c1)?;
    let partitions = usize::from(porep_config.partitions);
    if let Some(k) = cfg.partition {
        ensure!(
            k < partitions,
            "--partition {k} is out of range: {proof:?} has {partitions} partitions (0..{})",
            partitions - 1
        );
    }
    let mut report = json!({
        "versions": {
            "cuzk-prove": env!("CARGO_PKG_VERSION"),
            "filecoin-proofs": env!("CUZK_DEP_FILECOIN_PROOFS"),
            "storage-proofs-porep": env!("CUZK_DEP_STORAGE_PROOFS_POREP"),
            "bellperson": env!("CUZK_DEP_BELLPERSON"),
            "blstrs": env!("CUZK_DEP_BLSTRS"),
            "blst": env!("CUZK_DEP_BLST"),
        },
        "c1": { "path": cfg.c1, "format": c1.format, "bytes": c1.file_bytes,
                "registered_proof": format!("{proof:?}"),
                "sector_size": c1.sector_size(),
                "sector_size_name": sector_size_name(c1.sector_size()),
                "sector_num": c1.sector_num },
        "partitions": partitions,
        "flags": cfg,
    });
    // The backend's name waits for the GPU probe: asked for once the run is over.
    let done = |t: Timings, mut report: serde_json::Value| {
        report["backend"] = json!(backend.name());
        Ok(Outcome {
            proof: Vec::new(),
            timings: t,
            report,
        })
    };
    if cfg.stop_after == Some(Phase::Parse) {
        return done(t, report);
    }

    let params_path = locate_params(cfg, proof, &mut t)?;
    let srs = t.time("map + check SRS", || -> Result<Arc<Srs>> {
        let srs = Srs::open(&params_path)?;
        let vk_path = params_path.with_extension("vk");
        if let Ok(vk) = std::fs::read(&vk_path) {
            ensure!(
                vk == srs.vk_bytes(),
                "{} does not match the verifying key in {}",
                vk_path.display(),
                params_path.display()
            );
        }
        Ok(Arc::new(srs))
    })?;
    // Test parameters carry a label in their .meta file; say so wherever they are used.
    let test_only = std::fs::read_to_string(params_path.with_extension("meta"))
        .is_ok_and(|m| m.contains("\"test_only\""));
    if test_only {
        log(cfg, &format!("notice: using {TEST_ONLY_NOTICE}"));
    }
    report["params"] = json!({
        "path": srs.path, "bytes": srs.file_len(), "domain": srs.domain_size(),
        "test_only": test_only,
        "sections": [srs.h, srs.l, srs.a, srs.b_g1, srs.b_g2],
    });

    let mut circuits: Box<dyn PartitionCircuits> = t.time("build circuits", || {
        porep_circuits(&porep_config, c1.output)
    })?;
    circuits.set_native_label(cfg.native_label);
    let todo: Vec<usize> = match cfg.partition {
        Some(k) => vec![k],
        None => (0..circuits.partitions()).collect(),
    };
    let inputs: Vec<Vec<blstrs::Scalar>> = t.time("public inputs", || {
        todo.par_iter()
            .map(|&k| circuits.public_inputs(k))
            .collect::<Result<_>>()
    })?;
    srs.check_public_inputs(inputs[0].len())?;
    if cfg.stop_after == Some(Phase::Srs) {
        return done(t, report);
    }

    if cfg.stop_after != Some(Phase::Synth) {
        backend.prefetch(&srs)?;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cfg.synth_threads)
        .build()?;
    let hint = cfg.presize.then(|| presize::hint_from_srs(&srs));
    let randomness = match cfg.rng_seed {
        Some(seed) => Randomness::draw(&mut ChaCha20Rng::seed_from_u64(seed), todo.len()),
        None => Randomness::draw(&mut OsRng, todo.len()),
    };
    // --overlap-synth with --pce: a few partitions ahead of the prover keep it busy (their
    // challenges are tasks for all cores); with native witnesses (~0.9 s a 32GiB
    // partition on 16 cores against ~1.6 s of GPU work) all ten would otherwise be held at
    // once (4.2 GB of aux each: 121 GB peak RSS on the 128 GB H200 host, docs/PERF.md
    // session 20). Without --pce a partition is one single-threaded task: all at once.
    let default_batch = if cfg.overlap_synth && cfg.pce {
        OVERLAP_WINDOW
    } else {
        todo.len()
    };
    let batch = cfg.max_circuits.unwrap_or(default_batch).max(1);
    let mut proofs: Vec<(usize, Proof<Bls12>)> = Vec::with_capacity(todo.len());
    let mut shape = None;
    let mut witness = None;
    // --pce: the recorded constraint system, from the cache file when there is one.
    let pce_path = cfg.pce_cache.as_ref().map(|dir| {
        let stem = params_path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy();
        dir.join(format!("{stem}.pce"))
    });
    let mut pce = None;
    let cached = pce_path.as_ref().filter(|p| p.exists());
    let mut pce_saved = cached.is_some();
    // --overlap-synth loads the recording beside the first witness tasks.
    if let (Some(path), false) = (cached, cfg.overlap_synth) {
        pce = Some(Arc::new(t.time("load PCE", || Pce::load(path))?));
    }
    // --pce-eval gpu: A·w, B·w, C·w left to a backend that evaluates them on its device.
    let defer = cfg.pce && backend.evaluates_pce();
    // The partitions at positions `pos..` of `todo`, synthesized: checked, then proved.
    let mut prove_parts =
        |pos: usize, mut parts: Vec<ProvingAssignment>, t: &mut Timings| -> Result<()> {
            for p in &parts {
                let s = Shape::of(p);
                ensure!(
                    shape.is_none() || shape == Some(s),
                    "partition circuits differ in shape: {s:?} vs {shape:?}"
                );
                shape = Some(s);
            }
            srs.check_circuit(shape.as_ref().unwrap())?;
            if witness.is_none() {
                let w = WitnessStats::of(&parts[0]);
                log::debug!("witness of partition {}: {w:?}", todo[pos]);
                witness = Some(w);
            }
            if cfg.stop_after == Some(Phase::Synth) {
                return Ok(());
            }
            let products = backend.products(&srs, &mut parts, t)?;
            drop(parts);
            let assembled = t.time("assemble proofs", || {
                products
                    .iter()
                    .zip(&randomness[pos..])
                    .map(|(p, r)| assemble(&srs.vk, p, *r))
                    .collect::<Result<Vec<_>>>()
            })?;
            proofs.extend(todo[pos..].iter().copied().zip(assembled));
            Ok(())
        };
    // A recording made in this run goes to the cache (once the first batch is
    // synthesized, or with --overlap-synth once every partition is proved).
    let save_pce = |p: &Pce, t: &mut Timings| -> Result<()> {
        let Some(path) = &pce_path else {
            return Ok(());
        };
        t.time("save PCE", || p.save(path))?;
        log(
            cfg,
            &format!("recorded the constraint system in {}", path.display()),
        );
        Ok(())
    };
    if cfg.overlap_synth {
        use overlap_synth::{PceSource, Synthesis};
        let how = match (cfg.pce, cached) {
            (false, _) => Synthesis::Full(hint),
            (true, Some(path)) => Synthesis::Pce {
                pce: PceSource::Load(path.clone()),
                defer,
            },
            (true, None) => Synthesis::Pce {
                pce: PceSource::Record,
                defer,
            },
        };
        // The rows first, though measured last: synthesis comes before proving.
        let (load, synthesis, waited) = (
            "load PCE (beside synthesis)",
            "synthesis",
            "  proving waited for synthesis (overlapped)",
        );
        if cached.is_some() {
            t.add(load, Duration::ZERO);
        }
        t.add(synthesis, Duration::ZERO);
        t.add(waited, Duration::ZERO);
        let done = overlap_synth::run(&*circuits, &todo, how, batch, &pool, |pos, pa| {
            prove_parts(pos, vec![pa], &mut t)
        })?;
        t.add(synthesis, done.synthesis);
        t.add(waited, done.waited);
        if let Some(d) = done.loaded {
            t.add(load, d);
        }
        pce = done.pce;
    } else {
        for (b, ks) in todo.chunks(batch).enumerate() {
            let parts = if cfg.pce {
                pool.install(|| synthesize_pce(&*circuits, ks, &mut pce, defer, &mut t))?
            } else {
                t.time("synthesis", || {
                    pool.install(|| {
                        ks.par_iter()
                            .map(|&k| {
                                circuits
                                    .synthesize(k, hint)
                                    .with_context(|| format!("partition {k}"))
                            })
                            .collect::<Result<Vec<_>>>()
                    })
                })?
            };
            if let (Some(p), false) = (&pce, pce_saved) {
                save_pce(p, &mut t)?;
                pce_saved = true;
            }
            prove_parts(b * batch, parts, &mut t)?;
        }
    }
    if let (Some(p), false) = (&pce, pce_saved) {
        save_pce(p, &mut t)?;
    }
    // Overlapped partitions are proved as they are complete: in partition order here.
    proofs.sort_by_key(|(k, _)| *k);
    report["circuit"] = json!(shape);
    if let Some(p) = &pce {
        report["pce"] = json!({
            "path": pce_path,
            "terms": p.nnz(),
            "eval": if defer { "backend" } else { "cpu" },
        });
    }
    report["witness"] = json!(witness);
    if matches!(cfg.stop_after, Some(Phase::Synth) | Some(Phase::Prove)) {
        return done(t, report);
    }

    if cfg.verify {
        t.time("verify", || verify::verify(&srs.vk, &proofs, &inputs))?;
    }
    report["verified"] = json!(cfg.verify);
    report["backend"] = json!(backend.name());
    let just: Vec<Proof<Bls12>> = proofs.into_iter().map(|(_, p)| p).collect();
    let bytes = output::encode(&just)?;
    if let Some(out) = &cfg.output {
        t.time("write proof", || output::write_atomic(out, &bytes))?;
        report["output"] = json!({ "path": out, "bytes": bytes.len() });
    }
    Ok(Outcome {
        proof: bytes,
        timings: t,
        report,
    })
}

/// `--pce`: partition circuits → assignments through the recorded constraint system.
/// Without a recording yet, the first partition is synthesized in full and recorded while
/// the others' witnesses are generated; then A·w, B·w, C·w for those, or (`defer`) not:
/// the backend evaluates them on its device.
fn synthesize_pce(
    circuits: &dyn PartitionCircuits,
    ks: &[usize],
    pce: &mut Option<Arc<Pce>>,
    defer: bool,
    t: &mut Timings,
) -> Result<Vec<ProvingAssignment>> {
    let ctx = |k: usize| move || format!("partition {k}");
    let (first, todo) = match pce {
        Some(_) => (None, ks),
        None => (Some(ks[0]), &ks[1..]),
    };
    let phase = match first {
        Some(_) => "synthesis: record + witnesses (PCE)",
        None => "synthesis: witnesses (PCE)",
    };
    let (recorded, witnesses) = t.time(phase, || {
        rayon::join(
            || first.map(|k| circuits.synthesize_recording(k).with_context(ctx(k))),
            || {
                todo.par_iter()
                    .map(|&k| circuits.witness(k).with_context(ctx(k)))
                    .collect::<Result<Vec<_>>>()
            },
        )
    });
    let mut parts = Vec::with_capacity(ks.len());
    if let Some(r) = recorded {
        let (pa, p) = r?;
        log::info!(
            "recorded the constraint system: {} rows, {:?} terms in A, B, C",
            p.constraints(),
            p.nnz()
        );
        parts.push(pa);
        *pce = Some(Arc::new(p));
    }
    let p = pce.as_ref().expect("recorded or loaded above");
    let witnesses = witnesses?;
    if defer {
        for (w, &k) in witnesses.into_iter().zip(todo) {
            parts.push(p.deferred(w).with_context(ctx(k))?);
        }
        return Ok(parts);
    }
    t.time("synthesis: A·w, B·w, C·w (PCE)", || {
        for (w, &k) in witnesses.into_iter().zip(todo) {
            parts.push(p.assignment(w).with_context(ctx(k))?);
        }
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(parts)
}
