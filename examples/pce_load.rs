//! Reference timing: loading a recording of the 32GiB size from a page-cached file, what a
//! cached run does first (docs/PERF.md). The recording is a C1's first partition's,
//! tiled (48 copies of the 2KiB partition ≈ the 32GiB partition's 130 M constraints).
//!
//! cargo run --release --example pce_load -- C1.json DIR TILES RUNS
//!
//! writes DIR/tiled.pce once, then loads it RUNS times in this process, printing each
//! load's wall time and the process's resident memory after it (anonymous and file).

use std::time::Instant;

use anyhow::{Context, Result};
use cuzk_prove::synth::pce::{Identity, Pce};

/// (RssAnon, RssFile) in MB, from /proc/self/status.
fn rss() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        s.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (kb("RssAnon:") / 1000, kb("RssFile:") / 1000)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(args.len() == 5, "usage: pce_load C1.json DIR TILES RUNS");
    let dir = std::path::Path::new(&args[2]);
    let tiles: usize = args[3].parse().context("TILES")?;
    let runs: usize = args[4].parse().context("RUNS")?;
    let id = Identity {
        vk_digest: "0".repeat(64),
        circuit: format!("tiled x{tiles}"),
    };
    let path = dir.join("tiled.pce");
    if Pce::probe(&path, &id).is_err() {
        let c1 = cuzk_prove::input::c1::read_c1(args[1].as_ref())?;
        let circuits =
            cuzk_prove::circuit::porep_circuits(&c1.registered_proof.as_v1_config(), c1.output)?;
        let pce = circuits.record(0)?.tiled(tiles)?;
        std::fs::create_dir_all(dir)?;
        let t = Instant::now();
        pce.save(&path, true, &id)?;
        eprintln!(
            "saved {} ({} constraints, {:?} terms) in {:.2} s",
            path.display(),
            pce.constraints(),
            pce.nnz(),
            t.elapsed().as_secs_f64()
        );
    }
    let size = std::fs::metadata(&path)?.len();
    for run in 0..runs {
        let before = rss();
        let t = Instant::now();
        let pce = Pce::load(&path, &id)?;
        let s = t.elapsed().as_secs_f64();
        let after = rss();
        println!(
            "load {run}: {s:.3} s for {:.2} GB ({:.1} GB/s); RSS anon {} → {} MB, file {} → {} MB",
            size as f64 / 1e9,
            size as f64 / 1e9 / s,
            before.0,
            after.0,
            before.1,
            after.1
        );
        let t = Instant::now();
        drop(pce);
        println!("  dropped in {:.3} s", t.elapsed().as_secs_f64());
    }
    Ok(())
}
