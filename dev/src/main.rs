//! `cuzk-dev`: the developers' tools beside the `cuzk-prove` binary (cli.rs lists them).
//! Not shipped: the product binary holds proving and the operator's subcommands only.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use cuzk_dev::cli::{self, Cli, Command};
use cuzk_dev::{bench, seal, test_params};
use cuzk_prove::cli::Switch;
use cuzk_prove::input::c1::{
    parse_registered_proof, parse_sector_size, registered_proof, v1_1_proof,
};
use cuzk_prove::output;
use cuzk_prove::synthetic::{self, gen_c1, TEST_ONLY_NOTICE};

/// The prover's allocator, so that benchmarks allocate as it does (`--huge-pages`).
#[global_allocator]
static ALLOC: cuzk_prove::huge_pages::HugePages = cuzk_prove::huge_pages::HugePages;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("cuzk_prove=warn"))
        .format_timestamp_millis()
        .init();
    match real_main(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzk-dev: error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

fn real_main(cli: Cli) -> Result<()> {
    match cli.command {
        Command::SealTestC1 {
            sector_size,
            out_dir,
            miner_id,
            sector_num,
            seed,
        } => {
            let proof = v1_1_proof(parse_sector_size(&sector_size)?);
            let meta = seal::seal_fixture(
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
        Command::TestParams { proof, param_cache } => {
            let proof = parse_registered_proof(&proof)?;
            eprintln!("notice: generating {TEST_ONLY_NOTICE}");
            let paths = test_params::generate(proof, &param_cache, 0)?;
            eprintln!("{}", paths.params.display());
            Ok(())
        }
        Command::GenParams {
            sector_size,
            proof,
            out_dir,
            seed,
        } => {
            let proof = registered_proof("gen-params", proof, sector_size)?;
            eprintln!("notice: generating {TEST_ONLY_NOTICE}");
            let t = std::time::Instant::now();
            let (paths, g) = synthetic::gen_params::generate(proof, &out_dir, seed)?;
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
        Command::GenC1 {
            sector_size,
            proof,
            output: out,
            raw,
            miner_id,
            sector_num,
            seed,
        } => {
            let proof = registered_proof("gen-c1", proof, sector_size)?;
            let seed = match seed {
                Some(s) => gen_c1::parse_seed(&s)?,
                None => rand::random(),
            };
            let opts = gen_c1::Options {
                proof,
                miner_id,
                sector_num,
                seed,
            };
            let (g, len) = gen_c1::write_files(&opts, &out, raw)?;
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
                len,
                gen_c1::meta_path(&out).display()
            );
            Ok(())
        }
        Command::BenchGpu {
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
        } => {
            if let Some(j) = &json {
                output::check_path(j)?;
            }
            cuzk_prove::prove::cuda::set_pin_transfers(pin == Switch::On);
            let rows = bench::run(&bench::Options {
                min_log,
                max_log,
                g2_max_log,
                runs,
                gpu,
                zeros,
                ones,
                window: cuzk_prove::cli::parse_msm_window(&msm_window)?,
                partition: partition.then_some(partition_log),
                split: split_msm == Switch::On,
                overlap_aux: overlap_aux == Switch::On,
                rows,
                pce_c1,
                pce_tiles,
            })?;
            write_json(json.as_deref(), &rows)
        }
        Command::BenchWitness {
            c1,
            partition,
            runs,
            threads,
            only,
            huge_pages,
            json,
        } => {
            if let Some(j) = &json {
                output::check_path(j)?;
            }
            cuzk_prove::huge_pages::set(huge_pages == Switch::On);
            let threads = threads.unwrap_or_else(rayon::current_num_threads);
            let report =
                bench::witness::run(&c1, partition, runs, threads, only.map(|s| s == Switch::On))?;
            write_json(json.as_deref(), &report)
        }
        Command::VerifySeal {
            meta,
            proof,
            param_cache,
        } => {
            use cuzk_prove::synthetic::meta::{unhex32, Meta};
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
        Command::Fuzz {
            target,
            input,
            runs,
            first,
            seed,
            crashes,
        } => {
            let o = cuzk_dev::fuzz::run(target, input.as_deref(), runs, first, seed, &crashes)?;
            println!(
                "fuzz {target:?}: {} runs from {first} (seed {seed}) in {:.1} s, {} accepted, {} \
                 crashes{}",
                o.runs,
                o.seconds,
                o.accepted,
                o.crashes,
                if o.crashes > 0 {
                    format!(" (inputs in {})", crashes.display())
                } else {
                    String::new()
                }
            );
            anyhow::ensure!(o.crashes == 0, "{} crashing inputs", o.crashes);
            Ok(())
        }
        Command::SubgroupCheck { params, sample } => {
            let rows = cuzk_dev::subgroup::run(&params, sample)?;
            let threads = rayon::current_num_threads();
            println!(
                "section  points      checked     seconds  whole section (s, {threads} threads)"
            );
            let mut total = 0.0;
            for r in &rows {
                println!(
                    "{:<8} {:<11} {:<11} {:<8.3} {:.3}",
                    r.section, r.points, r.checked, r.seconds, r.whole_seconds
                );
                total += r.whole_seconds;
            }
            println!("all sections: {total:.3} s; every checked point is in its subgroup");
            Ok(())
        }
        Command::Manpage => {
            print!("{}", cli::manpage()?);
            Ok(())
        }
        Command::Completions { shell } => {
            let mut cmd = <cuzk_prove::cli::Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "cuzk-prove", &mut std::io::stdout());
            Ok(())
        }
    }
}

/// A benchmark's `--json FILE`, if given (its path was checked before the run).
fn write_json(path: Option<&std::path::Path>, value: &impl serde::Serialize) -> Result<()> {
    match path {
        Some(p) => output::write_atomic(p, &serde_json::to_vec_pretty(value)?),
        None => Ok(()),
    }
}
