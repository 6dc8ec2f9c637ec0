use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use cuzk_prove::cli::{Cli, Command, Config};
use cuzk_prove::input::c1::{parse_registered_proof, parse_sector_size};
use cuzk_prove::testdata::{self, gen_c1, TEST_ONLY_NOTICE};
use cuzk_prove::{output, pipeline};

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("cuzk_prove=warn"))
        .format_timestamp_millis()
        .init();
    let cli = Cli::parse();
    cuzk_prove::panics::install_hook();
    let result = cuzk_prove::panics::catch("internal error", || real_main(cli));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the context chain, outermost first.
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("cuzk-prove: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn real_main(cli: Cli) -> Result<()> {
    match cli.command {
        Some(Command::SealTestC1 {
            sector_size,
            out_dir,
            miner_id,
            sector_num,
            seed,
        }) => {
            let proof = v1_1_proof(parse_sector_size(&sector_size)?);
            let meta = testdata::seal::seal_fixture(
                parse_registered_proof(proof)?,
                &out_dir,
                miner_id,
                sector_num,
                seed,
            )?;
            eprintln!(
                "sealed {} sector {}: comm_r {} → {}",
                meta.registered_proof,
                meta.sector_num,
                meta.comm_r,
                out_dir.join("c1.json").display()
            );
            Ok(())
        }
        Some(Command::TestParams { proof, param_cache }) => {
            let proof = parse_registered_proof(&proof)?;
            eprintln!("notice: generating {TEST_ONLY_NOTICE}");
            let paths = testdata::params::generate(proof, &param_cache, 0)?;
            eprintln!("{}", paths.params.display());
            Ok(())
        }
        Some(Command::GenParams {
            sector_size,
            proof,
            out_dir,
            seed,
        }) => {
            let proof = registered_proof("gen-params", proof, sector_size)?;
            eprintln!("notice: generating {TEST_ONLY_NOTICE}");
            let t = std::time::Instant::now();
            let (paths, g) = testdata::gen_params::generate(proof, &out_dir, seed)?;
            eprintln!(
                "{proof:?}: {} constraints, {} inputs, {} aux, domain {} → {} ({:.1} s)",
                g.constraints,
                g.inputs,
                g.aux,
                g.domain,
                paths.params.display(),
                t.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Some(Command::GenC1 {
            sector_size,
            proof,
            output: out,
            raw,
            miner_id,
            sector_num,
            seed,
        }) => {
            let proof = registered_proof("gen-c1", proof, sector_size)?;
            let seed = match seed {
                Some(s) => gen_c1::parse_seed(&s)?,
                None => rand::random(),
            };
            output::check_path(&out)?;
            let meta_path = gen_c1::meta_path(&out);
            let g = gen_c1::generate(&gen_c1::Options {
                proof,
                miner_id,
                sector_num,
                seed,
            })?;
            let bytes = gen_c1::encode(&g.c1, sector_num, raw)?;
            output::write_atomic(&out, &bytes)
                .with_context(|| format!("cannot write {}", out.display()))?;
            if let Err(e) = output::write_atomic(&meta_path, &serde_json::to_vec_pretty(&g.meta)?) {
                // No C1 without its metadata: the pair is the output.
                let _ = std::fs::remove_file(&out);
                return Err(e).with_context(|| format!("cannot write {}", meta_path.display()));
            }
            let s = &g.stats;
            eprintln!(
                "{proof:?}: {} partitions × {} challenges, {} layers, {} columns opened, {} \
                 overlaps; generated in {:.2} s, vanilla proofs verified in {:.2} s; comm_r {} \
                 → {} ({} bytes), {}",
                s.partitions,
                s.challenges / s.partitions.max(1),
                s.layers,
                s.columns,
                s.overlaps,
                s.generate_s,
                s.verify_s,
                g.meta.comm_r,
                out.display(),
                bytes.len(),
                meta_path.display()
            );
            Ok(())
        }
        Some(Command::BenchGpu {
            min_log,
            max_log,
            g2_max_log,
            partition,
            partition_log,
            split_msm,
            overlap_aux,
            pin,
            rows,
            pce_c1,
            pce_tiles,
            runs,
            gpu,
            zeros,
            ones,
            msm_window,
            json,
        }) => {
            if let Some(j) = &json {
                output::check_path(j)?;
            }
            cuzk_prove::prove::cuda::set_pin_transfers(pin == cuzk_prove::cli::Switch::On);
            let rows = cuzk_prove::bench::run(&cuzk_prove::bench::Options {
                min_log,
                max_log,
                g2_max_log,
                runs,
                gpu,
                zeros,
                ones,
                window: cuzk_prove::cli::parse_msm_window(&msm_window)?,
                partition: partition.then_some(partition_log),
                split: split_msm == cuzk_prove::cli::Switch::On,
                overlap_aux: overlap_aux == cuzk_prove::cli::Switch::On,
                rows,
                pce_c1,
                pce_tiles,
            })?;
            write_json(json.as_deref(), &rows)
        }
        Some(Command::BenchWitness {
            c1,
            partition,
            runs,
            threads,
            only,
            json,
        }) => {
            if let Some(j) = &json {
                output::check_path(j)?;
            }
            let threads = threads.unwrap_or_else(rayon::current_num_threads);
            let report = cuzk_prove::bench::witness::run(
                &c1,
                partition,
                runs,
                threads,
                only.map(|s| s == cuzk_prove::cli::Switch::On),
            )?;
            write_json(json.as_deref(), &report)
        }
        Some(Command::Pce {
            sector_size,
            proof,
            param_cache,
            pce_cache,
            force,
            threads,
        }) => {
            let proof = registered_proof("pce", proof, sector_size)?;
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads.unwrap_or(0))
                .build()?;
            let t0 = std::time::Instant::now();
            let done = pool.install(|| {
                pipeline::prepare_pce(proof, &param_cache, pce_cache.as_deref(), force, false)
            })?;
            match done {
                Some(path) => eprintln!(
                    "recorded the constraint system of {proof:?} in {} ({:.1} s)",
                    path.display(),
                    t0.elapsed().as_secs_f64()
                ),
                None => eprintln!(
                    "the constraint system of {proof:?} is already recorded (--force records it \
                     again)"
                ),
            }
            Ok(())
        }
        Some(Command::VerifySeal {
            meta,
            proof,
            param_cache,
        }) => {
            use testdata::seal::{unhex32, Meta};
            let m: Meta = serde_json::from_slice(
                &std::fs::read(&meta).with_context(|| format!("cannot read {}", meta.display()))?,
            )?;
            let bytes = std::fs::read(&proof)?;
            // filecoin-proofs reads its settings once, from the environment.
            std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &param_cache);
            let t0 = std::time::Instant::now();
            let ok = filecoin_proofs_api::seal::verify_seal(
                parse_registered_proof(&m.registered_proof)?,
                unhex32(&m.comm_r)?,
                unhex32(&m.comm_d)?,
                unhex32(&m.prover_id)?,
                filecoin_proofs_api::SectorId::from(m.sector_num),
                unhex32(&m.ticket)?,
                unhex32(&m.seed)?,
                &bytes,
            )?;
            anyhow::ensure!(ok, "verify_seal refuses {}", proof.display());
            eprintln!(
                "verify_seal accepts {} ({} bytes, {:.2} s)",
                proof.display(),
                bytes.len(),
                t0.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Some(Command::Manpage) => {
            print!("{}", cuzk_prove::cli::manpage()?);
            Ok(())
        }
        None => prove(Config::try_from(cli.prove)?),
    }
}

/// A benchmark's `--json FILE`, if given (its path was checked before the run).
fn write_json(path: Option<&std::path::Path>, value: &impl serde::Serialize) -> Result<()> {
    match path {
        Some(p) => output::write_atomic(p, &serde_json::to_vec_pretty(value)?),
        None => Ok(()),
    }
}

/// A subcommand's `--proof NAME` or `--sector-size SIZE` (its V1_1 proof).
fn registered_proof(
    cmd: &str,
    proof: Option<String>,
    sector_size: Option<String>,
) -> Result<filecoin_proofs_api::RegisteredSealProof> {
    match (proof, sector_size) {
        (Some(p), _) => parse_registered_proof(&p),
        (None, Some(s)) => parse_registered_proof(v1_1_proof(parse_sector_size(&s)?)),
        (None, None) => anyhow::bail!("{cmd} needs --sector-size or --proof"),
    }
}

fn v1_1_proof(sector_size: u64) -> &'static str {
    match sector_size {
        2048 => "StackedDrg2KiBV1_1",
        8388608 => "StackedDrg8MiBV1_1",
        536870912 => "StackedDrg512MiBV1_1",
        34359738368 => "StackedDrg32GiBV1_1",
        _ => "StackedDrg64GiBV1_1",
    }
}

fn prove(cfg: Config) -> Result<()> {
    let memory = cuzk_prove::report::PeakMemory::start();
    let out = pipeline::run(&cfg)?;
    let peaks = memory.finish();
    if cfg.timings {
        eprint!("{}", out.timings.table());
        eprint!("{}", peaks.table());
    }
    if let Some(path) = &cfg.json {
        let mut report = out.report;
        report["memory"] = serde_json::json!(peaks);
        report["timings_s"] = out.timings.to_json();
        let bytes = serde_json::to_vec_pretty(&report)?;
        output::write_atomic(path, &bytes)
            .with_context(|| format!("cannot write the JSON report {}", path.display()))?;
    }
    if !cfg.quiet {
        if let Some(o) = &cfg.output {
            if !out.proof.is_empty() {
                eprintln!("wrote {} bytes to {}", out.proof.len(), o.display());
            }
        }
    }
    Ok(())
}
