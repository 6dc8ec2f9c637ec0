//! `--gpu-lock`: the lock files bellperson's provers use to share a GPU, so that a
//! WindowPoSt or WinningPoSt (bellperson, high priority) and this C2 never run on one
//! card at once. The convention (bellperson's gpu/locks.rs): `bellman.gpu.lock` in the
//! temporary directory (`$TMPDIR`, else /tmp), held with an exclusive flock while a
//! prover uses the GPU; `bellman.priority.lock` beside it, held by a high-priority proof
//! that wants the GPU next, which low-priority provers wait out before they take the GPU
//! lock. cuzk-prove is low priority: it waits for a held priority lock, then for the GPU
//! lock, and holds the latter until its GPU work is done. (bellperson's low-priority
//! kernels also stop mid-proof when a priority lock appears; a single-shot C2 holds the
//! GPU for tens of seconds and does not.)

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::Path;

use anyhow::{Context, Result};

pub(crate) const GPU_LOCK_NAME: &str = "bellman.gpu.lock";
pub(crate) const PRIORITY_LOCK_NAME: &str = "bellman.priority.lock";

/// The GPU lock, held until dropped (closing the file releases the flock).
#[derive(Debug)]
pub(crate) struct GpuLock {
    _file: File,
}

impl GpuLock {
    /// Takes the lock in the process's temporary directory, waiting as bellperson's
    /// low-priority provers do; `waiting` is told once if another prover holds it.
    pub(crate) fn acquire(waiting: impl Fn(&Path)) -> Result<Self> {
        Self::acquire_in(&std::env::temp_dir(), waiting)
    }

    pub(crate) fn acquire_in(dir: &Path, waiting: impl Fn(&Path)) -> Result<Self> {
        let open = |name: &str| {
            let path = dir.join(name);
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .with_context(|| format!("cannot open the GPU lock file {}", path.display()))
        };
        // A high-priority proof announced: let it have the GPU first.
        let priority = open(PRIORITY_LOCK_NAME)?;
        take(&priority, &dir.join(PRIORITY_LOCK_NAME), &waiting)?;
        drop(priority);
        let file = open(GPU_LOCK_NAME)?;
        take(&file, &dir.join(GPU_LOCK_NAME), &waiting)?;
        Ok(Self { _file: file })
    }
}

/// An exclusive flock on `f`, waiting (and saying so) while another process holds it.
fn take(f: &File, path: &Path, waiting: &impl Fn(&Path)) -> Result<()> {
    match f.try_lock() {
        Ok(()) => return Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => waiting(path),
        Err(std::fs::TryLockError::Error(e)) if e.kind() == ErrorKind::Unsupported => {
            log::warn!("{}: file locks unsupported here; not taken", path.display());
            return Ok(());
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
    f.lock()
        .with_context(|| format!("cannot lock {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_second_holder_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = GpuLock::acquire_in(dir.path(), |_| panic!("free lock")).unwrap();
        let waited = std::sync::Arc::new(AtomicUsize::new(0));
        let w = waited.clone();
        let d = dir.path().to_owned();
        let second = std::thread::spawn(move || {
            GpuLock::acquire_in(&d, |p| {
                assert!(p.ends_with(GPU_LOCK_NAME));
                w.fetch_add(1, Ordering::SeqCst);
            })
        });
        while waited.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        assert!(!second.is_finished());
        drop(first);
        second.join().unwrap().unwrap();
        assert_eq!(waited.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_held_priority_lock_is_waited_out() {
        let dir = tempfile::tempdir().unwrap();
        let post = File::create(dir.path().join(PRIORITY_LOCK_NAME)).unwrap();
        post.lock().unwrap();
        let d = dir.path().to_owned();
        let waited = std::sync::Arc::new(AtomicUsize::new(0));
        let w = waited.clone();
        let c2 = std::thread::spawn(move || {
            GpuLock::acquire_in(&d, |p| {
                assert!(p.ends_with(PRIORITY_LOCK_NAME));
                w.fetch_add(1, Ordering::SeqCst);
            })
        });
        while waited.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        drop(post);
        c2.join().unwrap().unwrap();
    }
}
