//! Where the recorded constraint system (`--pce`, on by default) is kept: looked up and
//! kept beside the parameters when their directory is writable, else in the user's cache
//! directory (`$XDG_CACHE_HOME/cuzk-prove`, `~/.cache/cuzk-prove`); `--pce-cache DIR`
//! names the one directory to use. Settled before any heavy work: a damaged file, or one
//! recorded for another circuit or other parameters ([`identity`]), is never used (it is
//! recorded anew and replaced), and a place that cannot be written is a warning — the run
//! still proves, verifies and writes its proof, and only later runs lose the recording.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use filecoin_proofs_api::RegisteredSealProof;

use crate::synth::pce::{Identity, Pce};

/// The recording's file for this run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PceCache {
    /// Where the recording was found, or where this run's recording will be kept; None
    /// when there is no place to keep it.
    pub path: Option<PathBuf>,
    /// Found there, its frame intact: loaded, not recorded.
    pub found: bool,
    /// Found damaged there: the new recording replaces it.
    pub replace: bool,
    /// What the user should know (a damaged file, no writable place).
    pub warnings: Vec<String>,
}

/// The recording's file name for a parameters file: its stem (the circuit's identity,
/// e.g. `v28-stacked-proof-of-replication-…-<hash>`) with `.pce`.
pub fn file_name(params: &Path) -> String {
    let stem = params.file_stem().unwrap_or_default().to_string_lossy();
    format!("{stem}.pce")
}

/// What a recording for `proof`'s circuit and the parameters whose verifying key has
/// `vk_digest` (filecoin-proofs' digest of the `.vk`) must say it is for: that digest, and
/// the circuit's version — its identifier (what names its parameters: the same for every
/// registered proof that shares them) and the storage-proofs-porep version whose gadgets
/// build its constraint system.
pub fn identity(proof: RegisteredSealProof, vk_digest: String) -> Result<Identity> {
    let circuit = proof
        .circuit_identifier()
        .context("cannot compute the circuit identifier")?;
    Ok(Identity {
        vk_digest,
        circuit: format!(
            "v{}-{circuit} (storage-proofs-porep {})",
            storage_proofs_core::parameter_cache::VERSION,
            env!("CUZK_DEP_STORAGE_PROOFS_POREP")
        ),
    })
}

/// The user's cache directory for recordings: `$XDG_CACHE_HOME/cuzk-prove`, else
/// `$HOME/.cache/cuzk-prove` (None without either).
pub fn user_cache_dir() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").and_then(abs) {
        return Some(x.join("cuzk-prove"));
    }
    std::env::var_os("HOME")
        .and_then(abs)
        .map(|h| h.join(".cache").join("cuzk-prove"))
}

/// The directories to look in, in order: `explicit` alone, else the parameters'
/// directory and the user's cache directory.
pub fn candidates(explicit: Option<&Path>, params: &Path) -> Vec<PathBuf> {
    if let Some(d) = explicit {
        return vec![d.to_path_buf()];
    }
    let params_dir = params
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let mut dirs = vec![params_dir];
    if let Some(d) = user_cache_dir() {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// Whether a recording can be written in `dir`: created if missing, then a temporary file
/// made there and removed (what the save will do).
pub(crate) fn writable(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    tempfile::Builder::new()
        .prefix(".cuzk-prove-probe.")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))
}

/// Settles the recording's file among `dirs` for `name` and `id`: the first directory
/// holding it intact; else the first holding it damaged or for another identity (replaced
/// there) or, with none, the first where `can_write` succeeds.
pub(crate) fn settle(
    dirs: &[PathBuf],
    name: &str,
    id: &Identity,
    can_write: impl Fn(&Path) -> Result<(), String>,
) -> PceCache {
    let mut out = PceCache::default();
    let mut damaged = None;
    for d in dirs {
        let f = d.join(name);
        if !f.exists() {
            continue;
        }
        match Pce::probe(&f, id) {
            Ok(()) => {
                out.path = Some(f);
                out.found = true;
                return out;
            }
            Err(e) => {
                out.warnings.push(format!(
                    "warning: {e:#}: not used; the circuit is recorded anew"
                ));
                damaged.get_or_insert(d.clone());
            }
        }
    }
    let mut why = Vec::new();
    let order = damaged
        .iter()
        .chain(dirs.iter().filter(|d| Some(*d) != damaged.as_ref()));
    for d in order {
        match can_write(d) {
            Ok(()) => {
                out.replace = damaged.as_ref() == Some(d);
                out.path = Some(d.join(name));
                return out;
            }
            Err(e) => why.push(e),
        }
    }
    out.warnings.push(format!(
        "warning: the recorded constraint system will not be kept ({}); this run records it \
         and proves, later runs record it again (--pce-cache DIR names a writable place)",
        why.join("; ")
    ));
    out
}

/// [`settle`] in the real file system.
pub(crate) fn locate(explicit: Option<&Path>, params: &Path, id: &Identity) -> PceCache {
    settle(
        &candidates(explicit, params),
        &file_name(params),
        id,
        writable,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> Identity {
        identity(
            RegisteredSealProof::StackedDrg2KiBV1_1,
            "0123456789abcdef".repeat(2),
        )
        .unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cuzk-pce-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_parameters_directory_first_then_the_user_cache() {
        let (p, u) = (
            PathBuf::from("/params"),
            PathBuf::from("/home/u/.cache/cuzk-prove"),
        );
        let dirs = [p.clone(), u.clone()];
        // Both writable: beside the parameters.
        let c = settle(&dirs, "x.pce", &id(), |_| Ok(()));
        assert_eq!((c.path, c.found), (Some(p.join("x.pce")), false));
        // Parameters read-only (an operator's shared cache): the user's cache.
        let c = settle(&dirs, "x.pce", &id(), |d| {
            if d == p {
                Err("read-only".into())
            } else {
                Ok(())
            }
        });
        assert_eq!(c.path, Some(u.join("x.pce")));
        assert!(c.warnings.is_empty());
        // Neither: not kept, one warning naming both reasons.
        let c = settle(&dirs, "x.pce", &id(), |d| {
            Err(format!("no {}", d.display()))
        });
        assert_eq!(c.path, None);
        assert_eq!(c.warnings.len(), 1);
        assert!(
            c.warnings[0].contains("no /params; no /home/u"),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn an_intact_file_is_found_a_damaged_one_replaced() {
        let (a, b) = (scratch("a"), scratch("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        // A file cut short in the first directory, none in the second.
        std::fs::write(a.join("x.pce"), b"CUZKPCE1\x01\x00").unwrap();
        let c = settle(&[a.clone(), b.clone()], "x.pce", &id(), |_| Ok(()));
        assert_eq!(c.path, Some(a.join("x.pce")));
        assert!(!c.found && c.replace);
        assert!(c.warnings[0].contains("not used"), "{:?}", c.warnings);
        // An intact file in the second directory is used as it is.
        let pce =
            crate::synth::pce::join_blocks(vec![crate::synth::pce::tests_support_tiny_block()])
                .unwrap();
        pce.save(&b.join("x.pce"), false, &id()).unwrap();
        let c = settle(&[a.clone(), b.clone()], "x.pce", &id(), |_| Ok(()));
        assert_eq!(c.path, Some(b.join("x.pce")));
        assert!(c.found && !c.replace);
        // The same file for other parameters (another verifying key): replaced there.
        let other = Identity {
            vk_digest: "fedcba9876543210".repeat(2),
            ..id()
        };
        let c = settle(std::slice::from_ref(&b), "x.pce", &other, |_| Ok(()));
        assert_eq!(c.path, Some(b.join("x.pce")));
        assert!(!c.found && c.replace);
        assert!(
            c.warnings[0].contains("recorded for another verifying key")
                && c.warnings[0].ends_with("not used; the circuit is recorded anew"),
            "{:?}",
            c.warnings
        );
        let _ = (std::fs::remove_dir_all(a), std::fs::remove_dir_all(b));
    }

    #[test]
    fn the_identity_names_the_circuit_not_the_proof_version() {
        let c = id().circuit;
        assert!(
            c.starts_with("v28-stacked-proof-of-replication-")
                && c.ends_with(&format!(
                    "(storage-proofs-porep {})",
                    env!("CUZK_DEP_STORAGE_PROOFS_POREP")
                )),
            "{c}"
        );
        // V1 and V1_1 share their parameters (the same circuit), hence their recording.
        let v1 = identity(RegisteredSealProof::StackedDrg2KiBV1, id().vk_digest).unwrap();
        assert_eq!(v1, id());
        let other = identity(RegisteredSealProof::StackedDrg8MiBV1_1, id().vk_digest).unwrap();
        assert_ne!(other.circuit, c);
    }

    #[test]
    fn candidates_and_user_cache() {
        let params = Path::new("/var/tmp/filecoin-proof-parameters/v28-x.params");
        assert_eq!(file_name(params), "v28-x.pce");
        let c = candidates(Some(Path::new("/mine")), params);
        assert_eq!(c, vec![PathBuf::from("/mine")]);
        let c = candidates(None, params);
        assert_eq!(c[0], PathBuf::from("/var/tmp/filecoin-proof-parameters"));
        assert_eq!(
            candidates(None, Path::new("p.params"))[0],
            PathBuf::from(".")
        );
    }

    #[test]
    fn an_unwritable_place_is_reported() {
        // A directory under a regular file cannot be created, even by root.
        let e = writable(Path::new("/dev/null/cuzk")).unwrap_err();
        assert!(e.contains("cannot create /dev/null/cuzk"), "{e}");
        let d = scratch("w");
        writable(&d).unwrap();
        assert!(d.is_dir());
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            0,
            "the probe file is removed"
        );
        let _ = std::fs::remove_dir_all(d);
    }
}
