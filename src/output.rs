//! Writing the proof: P × 192 bytes (compressed A ‖ B ‖ C per partition, in partition
//! order, as filecoin-proofs writes them), atomically: temp file in the same directory,
//! fsync, rename.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use bellperson::groth16::Proof;
use blstrs::Bls12;

pub const PROOF_BYTES: usize = 192;

/// Checked before any heavy work.
pub fn check_path(path: &Path) -> Result<()> {
    if path.is_dir() {
        bail!("output path {} is a directory", path.display());
    }
    let dir = parent_dir(path);
    if !dir.is_dir() {
        bail!(
            "output directory {} does not exist (for output {})",
            dir.display(),
            path.display()
        );
    }
    Ok(())
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

pub fn encode(proofs: &[Proof<Bls12>]) -> Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(PROOF_BYTES * proofs.len());
    for p in proofs {
        p.write(&mut buf).context("cannot encode a proof")?;
    }
    debug_assert_eq!(buf.len(), PROOF_BYTES * proofs.len());
    Ok(buf)
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .with_context(|| format!("output path {} has no file name", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}
