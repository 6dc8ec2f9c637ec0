//! `cuzk-prove`: flags → [`Config`] → the pipeline, and the one-line error and exit code
//! on failure. The pipeline itself is `cuzk_prove::pipeline`.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use cuzk_prove::cli::{Cli, Command, Config};
use cuzk_prove::input::c1::registered_proof;
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
        None => prove(Config::try_from(cli.prove)?),
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
