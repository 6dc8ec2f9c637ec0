//! `cuzk-prove`: flags → [`Config`] → the pipeline, and the one-line error and exit code
//! on failure. The pipeline itself is `cuzk_prove::pipeline`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use cuzk_prove::cli::{Cli, Command, Config};
use cuzk_prove::input::c1::registered_proof;
use cuzk_prove::report::{ErrorKind, Failure, PeakMemory, Report, Timings};
use cuzk_prove::{output, pipeline};

/// Large blocks on transparent huge pages (`--huge-pages`, src/huge_pages.rs).
#[global_allocator]
static ALLOC: cuzk_prove::huge_pages::HugePages = cuzk_prove::huge_pages::HugePages;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("cuzk_prove=warn"))
        .format_timestamp_millis()
        .init();
    let cli = Cli::parse();
    cuzk_prove::panics::install_hook();
    if let Err(e) = cuzk_prove::signals::install() {
        log::warn!("{e:#}: an interrupted run may leave temporary files");
    }
    if cli.command.is_none() {
        let json = cli.prove.json.clone();
        return match Config::try_from(cli.prove) {
            Ok(cfg) => {
                let run = std::panic::catch_unwind(|| prove(cfg));
                run.unwrap_or_else(|p| {
                    let msg = cuzk_prove::panics::message(&p);
                    eprintln!("cuzk-prove: error: internal error: {msg}");
                    ExitCode::FAILURE
                })
            }
            Err(e) => {
                // A flag's value: a usage error, as clap's own (still reported with --json).
                let failure = Failure {
                    kind: ErrorKind::Usage,
                    error: e,
                };
                eprintln!("cuzk-prove: error: {}", failure.message());
                let report = Report {
                    error: Some(failure.info()),
                    ..Report::default()
                };
                if let Some(path) = json.filter(|p| output::check_path(p).is_ok()) {
                    let _ = write_report(&path, &report);
                }
                ExitCode::from(ErrorKind::Usage.exit_code() as u8)
            }
        };
    }
    let result = cuzk_prove::panics::catch("internal error", || real_main(cli));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the context chain, outermost first.
            let msg = cuzk_prove::report::one_line(&format!("{e:#}"));
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
        None => unreachable!("main handles the proving run"),
    }
}

/// A proving run: the proof written, the timing table and the JSON report (on failure
/// too, with `error`); the exit status by the failure's class.
fn prove(cfg: Config) -> ExitCode {
    let memory = PeakMemory::start();
    let mut t = Timings::new(!cfg.quiet);
    let mut report = Report::default();
    let result = pipeline::run_with(&cfg, &mut t, &mut report);
    let peaks = memory.finish();
    report.memory = Some(peaks);
    report.set_timings(&t);
    if cfg.timings {
        eprint!("{}", t.table());
        eprint!("{}", peaks.table());
    }
    let failure = result.err();
    report.error = failure.as_ref().map(Failure::info);
    let mut code = failure.as_ref().map_or(0, |f| f.kind.exit_code());
    if let Some(f) = &failure {
        eprintln!("cuzk-prove: error: {}", f.message());
    }
    if let Some(path) = &cfg.json {
        if let Err(e) = write_report(path, &report) {
            eprintln!(
                "cuzk-prove: error: cannot write the JSON report {}: {e:#}",
                path.display()
            );
            code = code.max(1);
        }
    }
    if failure.is_none() && !cfg.quiet {
        if let (Some(o), Some(out)) = (&cfg.output, &report.output) {
            let to = match output::is_stdout(o) {
                true => "standard output".to_owned(),
                false => o.display().to_string(),
            };
            eprintln!("wrote {} bytes to {to}", out.bytes);
        }
    }
    ExitCode::from(code as u8)
}

/// `--json FILE|-`: the report, pretty JSON and a final newline.
fn write_report(path: &std::path::Path, report: &Report) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(report)?;
    bytes.push(b'\n');
    output::write_to(path, &bytes, true)
}
