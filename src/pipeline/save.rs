//! The recording's save: a recording made in this run is written on a thread of its own
//! while the partitions are proved (9 GB at 32GiB), and waited for once the proof is
//! written; its failure is a warning, never a lost proof.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Result};

use super::log;
use crate::cli::Config;
use crate::report::Timings;
use crate::synth::pce::{Identity, Pce, Saved};

/// Waits for the recording's save, if one was started, and says how it went; whether it
/// was kept.
pub(super) fn finish_save(
    cfg: &Config,
    saver: &Saver,
    path: Option<&std::path::Path>,
    t: &mut Timings,
) -> Option<bool> {
    if !saver.saving() {
        return None;
    }
    let saved = t.time("  waited for the PCE save", || saver.finish())?;
    match &saved {
        Ok((Saved::Written, d)) => {
            t.add("save PCE (beside proving)", *d);
            let path = path.expect("a saver has a path").display();
            log(cfg, &format!("recorded the constraint system in {path}"));
        }
        Ok((Saved::AlreadyThere, _)) => log::info!("another run saved the recording first"),
        Err(e) => log(cfg, &format!("warning: {e:#}: the recording is not kept")),
    }
    Some(saved.is_ok())
}

/// What a recording's save did, and how long it took.
type SaveOutcome = Result<(Saved, Duration)>;

/// Saves a recording made in this run, for the identity it was made for, on a thread of
/// its own; waited for at the end (or when dropped: a save is never cut short by the
/// process's exit).
pub(super) struct Saver {
    path: Option<PathBuf>,
    replace: bool,
    id: Identity,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<SaveOutcome>>>,
}

impl Saver {
    pub(super) fn new(path: Option<PathBuf>, replace: bool, id: &Identity) -> Self {
        Self {
            path,
            replace,
            id: id.clone(),
            thread: Default::default(),
        }
    }

    /// Starts saving `p` (once; nothing without a place to keep it).
    pub(super) fn start(&self, p: Arc<Pce>) {
        let Some(path) = self.path.clone() else {
            return;
        };
        let mut slot = self.thread.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return;
        }
        let (replace, id) = (self.replace, self.id.clone());
        let spawned = std::thread::Builder::new()
            .name("pce-save".into())
            .spawn(move || {
                let t0 = std::time::Instant::now();
                p.save(&path, replace, &id).map(|s| (s, t0.elapsed()))
            });
        match spawned {
            Ok(h) => *slot = Some(h),
            Err(e) => log::warn!("cannot start the recording's save: {e}"),
        }
    }

    /// Whether a save was started and not yet waited for.
    fn saving(&self) -> bool {
        self.thread.lock().is_ok_and(|t| t.is_some())
    }

    /// The save's outcome, once it is done; None when nothing was saved.
    fn finish(&self) -> Option<SaveOutcome> {
        let h = self
            .thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        Some(
            h.join()
                .unwrap_or_else(|_| Err(anyhow!("the recording's save panicked"))),
        )
    }
}

impl Drop for Saver {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
