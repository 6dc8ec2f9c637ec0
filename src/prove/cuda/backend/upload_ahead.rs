//! `--upload-ahead`: the next partition's aux assignment goes to the device while this
//! partition's MSMs run. With `--pce-eval gpu` a partition's A·w, B·w, C·w evaluation
//! reads its whole aux assignment, so without this its upload (0.3 s per 32GiB partition
//! on the H200 host) waits between one partition's last MSM and the next one's NTT with
//! the GPU idle. The caller names the next partition when it is already synthesized
//! (`next` of [`crate::prove::Backend::products`]); the upload runs on its own stream and
//! a worker thread beside the MSMs, and the staged scalars wait here for the call that
//! proves that partition, which finds them by its aux assignment's address and length.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::phases::{Phase, Phases};
use super::Cuda;
use crate::prove::cuda::DeviceScalars;
use crate::synth::ProvingAssignment;

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
                DeviceScalars::upload(&p.aux_assignment, false)
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
        let (aux, value) = DeviceScalars::upload_during(&n.aux_assignment, false, || {
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
