//! SRS points on the GPU: a section copied raw and decoded there (`cuda/srs/`), so that
//! the host decodes nothing and every partition's MSMs read the same copy.

use std::marker::PhantomData;
use std::ops::Range;

use anyhow::{ensure, Result};

#[cfg(cuzk_cuda)]
use super::msm::ffi;
use super::msm::GpuAffine;

/// Points of one group decoded into device memory (or, emulated, into host memory that
/// stands in for it), freed on drop.
pub struct DevicePoints<P: GpuAffine> {
    pub(super) set: *mut std::ffi::c_void,
    pub(super) len: usize,
    pub(super) emulated: bool,
    pub(super) _group: PhantomData<P>,
}

// SAFETY: the set is written only while it is created; afterwards it is read (MSMs, read)
// and finally freed by the one owner.
unsafe impl<P: GpuAffine> Send for DevicePoints<P> {}
unsafe impl<P: GpuAffine> Sync for DevicePoints<P> {}

impl<P: GpuAffine> DevicePoints<P> {
    /// Copies `raw` (uncompressed points as a .params section stores them) to the device
    /// and decodes it there, checking each point as blst does (on the curve, no subgroup
    /// check). An invalid point fails with its index. `pin` (`--pin-mapped`, `--pin`): `raw`
    /// is a read-only file mapping, page-locked a chunk at a time for the copy (DMA
    /// straight from the page cache); chunks the driver refuses to lock are staged, and
    /// that is logged.
    pub fn decode(raw: &[u8], pin: bool) -> Result<Self> {
        let (set, locked) = Self::create(raw, false, pin)?;
        if pin && !locked {
            log::info!(
                "--pin-mapped: some of the mapped SRS could not be page-locked; those parts \
                 were staged"
            );
        }
        Ok(set)
    }

    /// [`Self::decode`] of a mapping page-locked chunk by chunk, and whether every chunk
    /// could be locked (else some were staged): for tests.
    #[doc(hidden)]
    pub fn decode_page_locked(raw: &[u8]) -> Result<(Self, bool)> {
        Self::create(raw, false, true)
    }

    /// [`Self::decode`] with the device code run on the host (tests without a GPU).
    #[doc(hidden)]
    #[cfg(feature = "test-kernels")]
    pub fn decode_emulated(raw: &[u8]) -> Result<Self> {
        Self::create(raw, true, false).map(|(set, _)| set)
    }

    /// The set, and whether `pin` had every chunk page-locked.
    fn create(raw: &[u8], emulate: bool, pin: bool) -> Result<(Self, bool)> {
        ensure!(
            raw.len().is_multiple_of(P::RAW_SIZE),
            "{} bytes are not a whole number of {}-byte {} points",
            raw.len(),
            P::RAW_SIZE,
            P::NAME
        );
        let n = raw.len() / P::RAW_SIZE;
        #[cfg(cuzk_cuda)]
        {
            let mut set = std::ptr::null_mut();
            let mut bad = u64::MAX;
            let mut pinned = 0;
            // SAFETY: raw holds n points of RAW_SIZE bytes; the callee writes the set
            // pointer, the bad index and at most errlen bytes of message.
            super::call(|e, l| unsafe {
                ffi::cuzk_points_new(
                    (P::RAW_SIZE == 192) as i32,
                    raw.as_ptr() as *const _,
                    n,
                    emulate as i32,
                    pin as i32,
                    &mut pinned,
                    &mut set,
                    &mut bad,
                    e,
                    l,
                )
            })?;
            let set = Self {
                set,
                len: n,
                emulated: emulate,
                _group: PhantomData,
            };
            Ok((set, pinned != 0 || n == 0))
        }
        #[cfg(not(cuzk_cuda))]
        {
            let _ = (n, emulate, pin);
            anyhow::bail!(super::NO_CUDA_BUILD)
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The decoded points of `range`, back in host memory (for tests).
    pub fn read(&self, range: Range<usize>) -> Result<Vec<P>> {
        ensure!(
            range.start <= range.end && range.end <= self.len,
            "points {range:?} of a set of {}",
            self.len
        );
        #[cfg(cuzk_cuda)]
        {
            let mut out = vec![P::default(); range.len()];
            // SAFETY: P is #[repr(transparent)] over blst's affine type, the device layout;
            // out holds range.len() of them.
            super::call(|e, l| unsafe {
                ffi::cuzk_points_read(
                    self.set,
                    range.start,
                    range.len(),
                    out.as_mut_ptr() as *mut _,
                    e,
                    l,
                )
            })?;
            Ok(out)
        }
        #[cfg(not(cuzk_cuda))]
        anyhow::bail!(super::NO_CUDA_BUILD)
    }
}

impl<P: GpuAffine> Drop for DevicePoints<P> {
    fn drop(&mut self) {
        #[cfg(cuzk_cuda)]
        // SAFETY: the set came from cuzk_points_new and is freed once.
        unsafe {
            ffi::cuzk_points_free(self.set)
        };
    }
}

/// Where an MSM's points are.
#[derive(Clone, Copy)]
pub enum Points<'a, P: GpuAffine> {
    Host(&'a [P]),
    Device(&'a DevicePoints<P>, usize),
}
