//! TEST-ONLY parameters from storage-proofs' own generator (bellperson's
//! `generate_random_parameters` over the blank PoRep circuit), seeded so that the same
//! seed gives the same files, written under the standard cache file names.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use bellperson::groth16::generate_random_parameters;
use blstrs::Bls12;
use filecoin_proofs::constants::{
    DefaultPieceHasher, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB,
    SectorShape8MiB,
};
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

pub use cuzk_prove::input::srs::{cache_paths, CachePaths};

fn generate_shape<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    rng: &mut ChaCha20Rng,
) -> Result<bellperson::groth16::Parameters<Bls12>> {
    let config = proof.as_v1_config();
    let pp = filecoin_proofs::parameters::public_params::<Tree>(&config)?;
    let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(&pp);
    Ok(generate_random_parameters::<Bls12, _, _>(circuit, rng)?)
}

/// Generates the parameters of `proof` into `dir` unless they are there already.
/// Files appear atomically (written under temporary names, then renamed).
pub fn generate(proof: RegisteredSealProof, dir: &Path, seed: u64) -> Result<CachePaths> {
    let paths = cache_paths(proof, dir)?;
    if paths.params.exists() && paths.vk.exists() {
        return Ok(paths);
    }
    fs::create_dir_all(dir)
        .with_context(|| format!("cannot create parameter directory {}", dir.display()))?;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let params = match u64::from(proof.sector_size()) {
        2048 => generate_shape::<SectorShape2KiB>(proof, &mut rng),
        8388608 => generate_shape::<SectorShape8MiB>(proof, &mut rng),
        536870912 => generate_shape::<SectorShape512MiB>(proof, &mut rng),
        34359738368 => generate_shape::<SectorShape32GiB>(proof, &mut rng),
        _ => generate_shape::<SectorShape64GiB>(proof, &mut rng),
    }?;
    let tmp = |p: &Path| p.with_extension(format!("tmp-{}", std::process::id()));
    let write = |path: &Path, f: &dyn Fn(&mut fs::File) -> std::io::Result<()>| -> Result<()> {
        let t = tmp(path);
        let mut file = fs::File::create(&t)?;
        f(&mut file)?;
        file.sync_all()?;
        fs::rename(&t, path)?;
        Ok(())
    };
    let mut bytes = Vec::new();
    params.write(&mut bytes)?;
    write(&paths.params, &|f| std::io::Write::write_all(f, &bytes))
        .with_context(|| format!("cannot write {}", paths.params.display()))?;
    write(&paths.vk, &|f| params.vk.write(f))
        .with_context(|| format!("cannot write {}", paths.vk.display()))?;
    let meta = serde_json::json!({
        "sector_size": u64::from(proof.sector_size()),
        "test_only": cuzk_prove::synthetic::TEST_ONLY_NOTICE,
    });
    write(&paths.meta, &|f| {
        serde_json::to_writer(f, &meta).map_err(std::io::Error::other)
    })
    .with_context(|| format!("cannot write {}", paths.meta.display()))?;
    Ok(paths)
}
