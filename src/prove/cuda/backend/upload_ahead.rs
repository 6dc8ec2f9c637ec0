//! `--upload-ahead`: inputs go to the device before the partition that needs them is
//! proved.
//!
//! The recording (`--pce-eval gpu`; 8.8 GB at 32GiB) goes as soon as synthesis has it
//! (loaded or made), on a thread of its own beside the SRS upload and the first
//! partition's witness: otherwise the first partition's proving starts with its upload
//! (0.5–1.1 s on the H200 host). `CUZK_PCE_AHEAD=0` leaves it to the first partition
//! (for measuring).
//!
//! And the next partition's aux assignment goes to the device while this partition's
//! MSMs run. With `--pce-eval gpu` a partition's A·w, B·w, C·w evaluation
//! reads its whole aux assignment, so without this its upload (0.3 s per 32GiB partition
//! on the H200 host) waits between one partition's last MSM and the next one's NTT with
//! the GPU idle. The caller names the next partition once it is synthesized (`next` of
//! [`crate::prove::Backend::products`], asked before the H MSM and again before the
//! witness MSMs); the upload runs on its own stream and
//! a worker thread beside the MSMs, and the staged scalars wait here for the call that
//! proves that partition, which finds them by its aux assignment's address and length.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use super::phases::{Phase, Phases};
use super::products::PceRoom;
use super::resident::Prefetch;
use super::Cuda;
use crate::prove::cuda::pce_eval::DevicePce;
use crate::prove::cuda::DeviceScalars;
use crate::report::Timings;
use crate::synth::pce::Pce;
use crate::synth::ProvingAssignment;

/// The recording on its way to the device: None from the thread when it did not fit (or
/// there is no GPU), else the copy and how long the upload took.
pub(super) struct PceAhead {
    pce: Arc<Pce>,
    handle: JoinHandle<Result<Option<(DevicePce, Duration)>>>,
}

impl PceAhead {
    /// Waits for the thread (a panic in it an error).
    pub(super) fn join(self) -> Result<Option<(DevicePce, Duration)>> {
        self.handle
            .join()
            .map_err(|_| anyhow!("the recording's upload thread panicked"))?
    }
}

/// Whether the recording goes ahead (`CUZK_PCE_AHEAD`, default 1).
fn pce_ahead_on() -> bool {
    std::env::var("CUZK_PCE_AHEAD").map_or(true, |v| v != "0")
}

/// A partition's aux assignment, on the device ahead of its turn.
pub(super) struct Staged {
    key: (usize, usize),
    aux: DeviceScalars,
}

/// Which assignment: its aux vector's address and length (the vector is neither moved
/// nor changed between the call that stages it and the call that proves it).
fn key(p: &ProvingAssignment) -> (usize, usize) {
    (p.aux_assignment.as_ptr() as usize, p.aux_assignment.len())
}

impl Cuda {
    /// Starts the upload of `pce` to the device on a thread of its own, when this backend
    /// evaluates recordings there and moves inputs ahead. The thread waits for the SRS
    /// prefetch to count what it will hold, then checks the room as the prover would.
    pub(super) fn start_pce_upload(&self, pce: &Arc<Pce>) -> Result<()> {
        if !(self.pce_eval && self.upload_ahead && pce_ahead_on()) {
            return Ok(());
        }
        let prefetching = matches!(
            &*self.resident.lock().unwrap_or_else(|e| e.into_inner()),
            Prefetch::Loading(_)
        );
        let (probe, pin, room) = (self.probe.clone(), self.pin, PceRoom::of(self));
        let (decided, p) = (self.early.decided.clone(), pce.clone());
        let handle = std::thread::Builder::new()
            .name("pce-upload".into())
            .spawn(move || -> Result<Option<(DevicePce, Duration)>> {
                if !probe.claim(false)? {
                    return Ok(None);
                }
                crate::prove::cuda::set_device(probe.gpu)?;
                if prefetching {
                    decided.wait();
                }
                if !room.fits(&p)? {
                    return Ok(None);
                }
                let t0 = Instant::now();
                let d = DevicePce::upload(&p, false, pin)?;
                log::info!("recording on the GPU ({:.3} s)", t0.elapsed().as_secs_f64());
                Ok(Some((d, t0.elapsed())))
            })?;
        let before = self
            .pce_ahead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(PceAhead {
                pce: pce.clone(),
                handle,
            });
        if let Some(b) = before {
            let _ = b.join(); // an earlier recording's copy, never used: freed
        }
        Ok(())
    }

    /// `pce` on the device if its upload went ahead: waited for (timed). None when none
    /// went ahead, it did not fit, or it was another recording's (freed).
    pub(super) fn pce_uploaded_ahead(&self, pce: &Arc<Pce>, t: &mut Timings) -> Option<DevicePce> {
        let ahead = self
            .pce_ahead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let ahead = ahead?;
        if !Arc::ptr_eq(&ahead.pce, pce) {
            let _ = ahead.join();
            return None;
        }
        let done = t.time(
            "wait for the recording's upload (GPU, started when loaded)",
            || ahead.join(),
        );
        // A failed upload ahead is tried again by the caller (its error, if any, is then
        // the run's).
        let done = done.unwrap_or_else(|e| {
            log::warn!("the recording's upload ahead failed: {e:#}; uploading it now");
            None
        });
        done.map(|(d, took)| {
            t.add("  upload PCE matrices (GPU, beside synthesis)", took);
            d
        })
    }

    /// `p`'s aux assignment on the device: staged by the previous partition's MSMs, else
    /// uploaded now (timed as the aux upload). A staged set of another partition (the
    /// caller proved something else after all) is freed.
    pub(super) fn aux_on_device(
        &self,
        p: &ProvingAssignment,
        ph: &mut Phases,
    ) -> Result<DeviceScalars> {
        let staged = self.staged.lock().unwrap_or_else(|e| e.into_inner()).take();
        match staged {
            Some(s) if s.key == key(p) => Ok(s.aux),
            _ => ph.time(Phase::AuxUpload, |_| {
                DeviceScalars::upload_aux(&p.aux_assignment, self.pack_aux, false)
            }),
        }
    }

    /// Runs `msms` (one partition's MSMs) with `next`'s aux assignment uploaded beside
    /// them and staged for its turn (when `--upload-ahead` is on and there is a next).
    /// What the upload takes beyond the MSMs is timed as its own row.
    pub(super) fn beside_next_upload<T>(
        &self,
        next: Option<&ProvingAssignment>,
        ph: &mut Phases,
        msms: impl FnOnce(&mut Phases) -> Result<T>,
    ) -> Result<T> {
        let Some(n) = next.filter(|_| self.upload_ahead) else {
            return msms(ph);
        };
        let t0 = Instant::now();
        let mut ran = Duration::ZERO;
        let (aux, value) =
            DeviceScalars::upload_during(&n.aux_assignment, self.pack_aux, false, || {
                let t1 = Instant::now();
                let r = msms(ph);
                ran = t1.elapsed();
                r
            })?;
        ph.wall[Phase::AuxAhead as usize] += t0.elapsed().saturating_sub(ran);
        ph.staged += 1;
        *self.staged.lock().unwrap_or_else(|e| e.into_inner()) = Some(Staged { key: key(n), aux });
        Ok(value)
    }
}
