//! Seals a small sector for real with filecoin-proofs' API (add piece, PC1, PC2, C1)
//! and writes its C1 in the lotus-bench wrapper form plus a metadata file.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use base64::Engine;
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
};
use filecoin_proofs_api::{PaddedBytesAmount, RegisteredSealProof, SectorId, UnpaddedBytesAmount};
use rand::{Rng, RngCore};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use cuzk_prove::input::c1::prover_id_from_miner;
use cuzk_prove::synthetic::meta::{hex, Meta};

/// Seals one sector of `proof` in a scratch directory and writes `c1.json` and
/// `meta.json` into `out_dir`.
pub fn seal_fixture(
    proof: RegisteredSealProof,
    out_dir: &Path,
    miner_id: u64,
    sector_num: u64,
    seed: u64,
) -> Result<Meta> {
    let scratch = std::env::temp_dir().join(format!("cuzk-seal-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(scratch.join("cache"))?;
    // PC1 writes the graph's parent cache under FIL_PROOFS_PARENT_CACHE; keep it private.
    if std::env::var_os("FIL_PROOFS_PARENT_CACHE").is_none() {
        std::env::set_var("FIL_PROOFS_PARENT_CACHE", scratch.join("parents"));
    }
    let result = seal_in(proof, &scratch, out_dir, miner_id, sector_num, seed);
    let _ = fs::remove_dir_all(&scratch);
    result
}

fn seal_in(
    proof: RegisteredSealProof,
    scratch: &Path,
    out_dir: &Path,
    miner_id: u64,
    sector_num: u64,
    seed: u64,
) -> Result<Meta> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let sector_size = u64::from(proof.sector_size());
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);

    let staged = scratch.join("staged");
    let sealed = scratch.join("sealed");
    let cache = scratch.join("cache");
    let mut staged_file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)?;
    let (piece, _) =
        add_piece(proof, &data[..], &mut staged_file, unpadded, &[]).context("add_piece failed")?;
    drop(staged_file);
    fs::File::create(&sealed)?;

    let prover_id = prover_id_from_miner(miner_id);
    let sector_id = SectorId::from(sector_num);
    let ticket: [u8; 32] = rng.gen();
    let mut challenge_seed: [u8; 32] = rng.gen();
    challenge_seed[31] &= 0x3f;

    let pieces = [piece];
    let pc1 = seal_pre_commit_phase1(
        proof, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces,
    )
    .context("seal_pre_commit_phase1 failed")?;
    let pc2 =
        seal_pre_commit_phase2(pc1, &cache, &sealed).context("seal_pre_commit_phase2 failed")?;
    let c1 = seal_commit_phase1(
        cache.clone(),
        sealed.clone(),
        prover_id,
        sector_id,
        ticket,
        challenge_seed,
        pc2,
        &pieces,
    )
    .context("seal_commit_phase1 failed")?;

    fs::create_dir_all(out_dir)?;
    let raw = serde_json::to_vec(&c1)?;
    let wrapper = serde_json::json!({
        "SectorNum": sector_num,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&raw),
        "SectorSize": sector_size,
    });
    fs::write(
        out_dir.join("c1.json"),
        serde_json::to_vec_pretty(&wrapper)?,
    )?;
    let meta = Meta {
        registered_proof: format!("{proof:?}"),
        miner_id,
        prover_id: hex(&prover_id),
        sector_num,
        ticket: hex(&ticket),
        seed: hex(&challenge_seed),
        comm_r: hex(&c1.comm_r),
        comm_d: hex(&c1.comm_d),
        gen_c1_seed: None,
    };
    fs::write(out_dir.join("meta.json"), serde_json::to_vec_pretty(&meta)?)?;
    Ok(meta)
}
