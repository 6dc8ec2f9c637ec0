//! Writing the proof: P × 192 bytes (compressed A ‖ B ‖ C per partition, in partition
//! order, as filecoin-proofs writes them), atomically: temp file in the same directory,
//! fsync, rename, directory fsync; or to standard output (`-o -`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use bellperson::groth16::Proof;
use blstrs::Bls12;

pub(crate) const PROOF_BYTES: usize = 192;

/// Checked before any heavy work (`-`, standard output, always passes here).
pub fn check_path(path: &Path) -> Result<()> {
    if is_stdout(path) {
        return Ok(());
    }
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

/// Writes `bytes` to `path` atomically (see [`write_file_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_file_atomic(path, true, |f| Ok(f.write_all(bytes)?)).map(|_| ())
}

/// Writes a file at `path` atomically, its contents from `fill`: a temporary file of an
/// unpredictable name in the same directory, created exclusively (a planted link is never
/// followed) with mode 0666 less the umask (as File::create; tempfile's own default 0600
/// would hide a proof from another user's pipeline), filled, fsynced, then renamed into
/// place and the directory fsynced so the rename survives a crash. With `replace` false
/// a file already at `path` wins and this one is dropped: returns false. On any error
/// the temporary file is removed and `path` is left as it was.
pub fn write_file_atomic(
    path: &Path,
    replace: bool,
    fill: impl FnOnce(&mut tempfile::NamedTempFile) -> Result<()>,
) -> Result<bool> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .with_context(|| format!("output path {} has no file name", path.display()))?;
    let result = (|| -> Result<bool> {
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".tmp")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(&dir)?;
        // Removed if the run is interrupted (SIGINT, SIGTERM, SIGHUP) before the rename.
        let _interrupted = crate::signals::Temporary::register(tmp.path());
        fill(&mut tmp)?;
        tmp.as_file().sync_all()?;
        let written = if replace {
            tmp.persist(path).map_err(|e| e.error)?;
            true
        } else {
            match tmp.persist_noclobber(path) {
                Ok(_) => true,
                // `e.file` is dropped: the temporary file is removed.
                Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => false,
                Err(e) => return Err(e.error.into()),
            }
        };
        sync_dir(&dir);
        Ok(written)
    })();
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// Makes a rename in `dir` durable (best effort: some file systems refuse to fsync a
/// directory, and the data itself is already on disk).
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// `-o -` / `--json -`: standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes a result to `path`, or to standard output for `-`: the raw bytes, refused on a
/// terminal when they are binary (`text` false).
pub fn write_to(path: &Path, bytes: &[u8], text: bool) -> Result<()> {
    if !is_stdout(path) {
        return write_atomic(path, bytes);
    }
    let mut out = std::io::stdout().lock();
    if !text && std::io::IsTerminal::is_terminal(&out) {
        bail!("-o -: standard output is a terminal; redirect it to a file or a pipe");
    }
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .context("cannot write to standard output")
}
