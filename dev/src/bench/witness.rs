//! `cuzk-dev bench-witness`: one partition's witness-only synthesis (what `--pce`
//! synthesizes per partition: its challenges in parallel on the pool), with
//! `--native-label` on and off in alternation: one warm-up round (untimed, the two
//! witnesses compared, so a faster path that computed something else fails the bench),
//! then the median of `--runs` rounds. `--only on|off` times one path (for a profiler).
//! It needs only a C1 (`gen-c1` makes one of any size): no parameters, no GPU.

use std::path::Path;
use std::time::Instant;

use anyhow::{ensure, Context, Result};

use cuzk_prove::circuit::porep_circuits;
use cuzk_prove::input::c1::read_c1;

#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub native_label: bool,
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub runs: usize,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    pub c1: String,
    pub partition: usize,
    pub threads: usize,
    pub aux: usize,
    pub rows: Vec<Row>,
}

pub fn run(
    c1_path: &Path,
    partition: usize,
    runs: usize,
    threads: usize,
    only: Option<bool>,
) -> Result<Report> {
    ensure!(runs >= 1, "--runs must be at least 1");
    let c1 = read_c1(c1_path)?;
    let config = c1.registered_proof.as_v1_config();
    let mut circuits = porep_circuits(&config, c1.output)?;
    ensure!(
        partition < circuits.partitions(),
        "--partition {partition}: the C1 has {} partitions",
        circuits.partitions()
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("cannot start the synthesis threads")?;
    let paths: Vec<bool> = match only {
        Some(native) => vec![native],
        None => vec![true, false],
    };
    let mut times = vec![Vec::new(); paths.len()];
    let mut aux = 0;
    for round in 0..=runs {
        let mut first = Vec::new();
        for (i, &native) in paths.iter().enumerate() {
            circuits.set_native_label(native);
            let t = Instant::now();
            let w = pool.install(|| circuits.witness(partition))?;
            let s = t.elapsed().as_secs_f64();
            aux = w.aux.len();
            if round == 0 {
                eprintln!("warm-up: --native-label {native}: {s:.3} s");
                first.push(w);
            } else {
                eprintln!("round {round}: --native-label {native}: {s:.3} s");
                times[i].push(s);
            }
        }
        if round == 0 && first.len() == 2 {
            ensure!(
                first[0] == first[1],
                "the witnesses with --native-label on and off differ"
            );
        }
    }
    let rows = paths
        .iter()
        .copied()
        .zip(times)
        .map(|(native_label, mut t)| {
            t.sort_by(f64::total_cmp);
            Row {
                native_label,
                median_s: t[t.len() / 2],
                min_s: t[0],
                max_s: t[t.len() - 1],
                runs: t.len(),
            }
        })
        .collect::<Vec<_>>();
    for r in &rows {
        eprintln!(
            "witness, --native-label {}: median {:.3} s (min {:.3}, max {:.3}, {} runs)",
            if r.native_label { "on " } else { "off" },
            r.median_s,
            r.min_s,
            r.max_s,
            r.runs
        );
    }
    if let [on, off] = &rows[..] {
        eprintln!(
            "on/off: {:.2}× faster; {aux} aux values, equal on both paths; {threads} threads",
            off.median_s / on.median_s
        );
    }
    Ok(Report {
        c1: c1_path.display().to_string(),
        partition,
        threads,
        aux,
        rows,
    })
}
