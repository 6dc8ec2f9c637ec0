//! Reference timing: filecoin-proofs' own `seal_commit_phase2` (bellperson on the CPU) on a
//! C1 file, with parameters from a cache directory, for comparison with cuzk-prove.
//!
//! cargo run --release --example filecoin_c2 -- C1.json PARAM_CACHE MINER_ID [SECTOR_NUM]

use std::time::Instant;

use anyhow::{Context, Result};
use cuzk_prove::input::c1::{prover_id_from_miner, read_c1};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        args.len() >= 4,
        "usage: filecoin_c2 C1.json PARAM_CACHE MINER_ID [SECTOR_NUM]"
    );
    // filecoin-proofs reads its settings once, from the environment.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &args[2]);
    let miner: u64 = args[3].parse().context("MINER_ID")?;
    let c1 = read_c1(args[1].as_ref())?;
    let sector = match args.get(4) {
        Some(s) => s.parse().context("SECTOR_NUM")?,
        None => c1
            .sector_num
            .context("no SectorNum in the C1; pass SECTOR_NUM")?,
    };
    let t = Instant::now();
    let out = filecoin_proofs_api::seal::seal_commit_phase2(
        c1.output,
        prover_id_from_miner(miner),
        filecoin_proofs_api::SectorId::from(sector),
    )?;
    println!(
        "filecoin-proofs seal_commit_phase2: {:.3} s, {} bytes (verified by filecoin-proofs)",
        t.elapsed().as_secs_f64(),
        out.proof.len()
    );
    Ok(())
}
