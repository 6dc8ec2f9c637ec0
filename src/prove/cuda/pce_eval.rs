//! `--pce-eval gpu`: A·w, B·w, C·w evaluated on the GPU from the pre-compiled constraint
//! system (`synth::pce`), instead of on the host cores during synthesis.
//!
//! With `--pce` the host synthesizes witnesses only and leaves each partition's a, b, c
//! unevaluated ([`ProvingAssignment::deferred`](crate::synth::ProvingAssignment)). The
//! CUDA backend uploads the recording's matrices once per run ([`DevicePce`], ~8.9 GB at
//! 32GiB) and, per partition, evaluates them on the device at the aux assignment it
//! uploads for the MSMs anyway, straight into the NTT's buffers (`cuda/pce/eval.cuh`,
//! `ntt::quotient_pce_to_device`). The 3 × 2^27 evaluations (12.9 GB at 32GiB) then never
//! cross the bus, and the host's cores never compute them. The device checks a·b = c on
//! every row, as the CPU evaluation does, so a damaged cache file still fails clearly.

use std::sync::Arc;

use anyhow::Result;

use crate::synth::pce::Pce;

#[cfg(cuzk_cuda)]
mod ffi {
    use std::os::raw::{c_char, c_int, c_void};

    /// `CuzkCsr` in cuda/pce/pce.cu.
    #[repr(C)]
    pub(crate) struct Csr {
        pub row_start: *const u64,
        pub cols: *const u32,
        pub coeffs: *const u32,
        pub nnz: usize,
    }

    extern "C" {
        pub(crate) fn cuzk_pce_new(
            m: *const Csr,
            rows: usize,
            table: *const c_void,
            ntable: usize,
            inputs: usize,
            aux: usize,
            emulate: c_int,
            from_mapping: c_int,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_pce_free(pce: *mut c_void);
    }
}

/// A recording's matrices where the kernels read them (device memory; emulated: host
/// memory standing in for it), with the recording they came from.
#[cfg_attr(not(cuzk_cuda), allow(dead_code))]
pub struct DevicePce {
    raw: *mut std::ffi::c_void,
    pub pce: Arc<Pce>,
    emulated: bool,
}

// SAFETY: written once when created, then only read by kernels; freed by its one owner.
unsafe impl Send for DevicePce {}
unsafe impl Sync for DevicePce {}

impl DevicePce {
    /// Copies `pce`'s matrices and coefficients to the device (`emulate`: host memory).
    /// `pin` (`--pin-mapped`): a loaded recording's file mapping is page-locked chunk by
    /// chunk for the copy (DMA from the page cache), not staged.
    pub fn upload(pce: &Arc<Pce>, emulate: bool, pin: bool) -> Result<Self> {
        #[cfg(cuzk_cuda)]
        {
            let m = pce.matrices().map(|(row_start, cols, coeffs)| ffi::Csr {
                row_start: row_start.as_ptr(),
                cols: cols.as_ptr(),
                coeffs: coeffs.as_ptr(),
                nnz: cols.len(),
            });
            let table = pce.coeff_table();
            let mut raw = std::ptr::null_mut();
            // SAFETY: each matrix holds rows + 1 offsets and nnz columns and indices, every
            // index in range (Pce's invariant: recorded, or checked when loaded, its file
            // unchanged since: checked below, before a kernel reads the copy); Scalar is
            // #[repr(transparent)] over blst_fr, the device's FrMont.
            super::call(|e, l| unsafe {
                ffi::cuzk_pce_new(
                    m.as_ptr(),
                    pce.constraints(),
                    table.as_ptr() as *const _,
                    table.len(),
                    pce.inputs,
                    pce.aux,
                    emulate as i32,
                    (pin && pce.mapped()) as i32,
                    &mut raw,
                    e,
                    l,
                )
            })?;
            // The kernels index with the copied values: they must be the checked ones (a
            // failure frees the copy). From now on the device's copy is read, not the
            // host's pages.
            let copy = Self {
                raw,
                pce: Arc::clone(pce),
                emulated: emulate,
            };
            pce.unchanged()?;
            if !emulate {
                pce.release_pages();
            }
            Ok(copy)
        }
        #[cfg(not(cuzk_cuda))]
        {
            let _ = (pce, emulate, pin);
            anyhow::bail!(super::NO_CUDA_BUILD)
        }
    }

    #[cfg(cuzk_cuda)]
    pub(crate) fn raw(&self) -> *mut std::ffi::c_void {
        self.raw
    }

    pub(crate) fn is_emulated(&self) -> bool {
        self.emulated
    }

    /// Bytes the recording takes on the device.
    pub fn bytes(&self) -> usize {
        Self::bytes_for(&self.pce)
    }

    /// Bytes `pce` would take on the device: per matrix its row offsets (8 bytes a row)
    /// and terms (8 bytes each), and the coefficient table.
    pub(crate) fn bytes_for(pce: &Pce) -> usize {
        let rows = pce.constraints() + 1;
        let terms: usize = pce.nnz().iter().sum();
        3 * rows * 8 + terms * 8 + pce.coeff_table().len() * 32
    }
}

impl Drop for DevicePce {
    fn drop(&mut self) {
        #[cfg(cuzk_cuda)]
        // SAFETY: made by cuzk_pce_new, freed exactly once, here.
        unsafe {
            ffi::cuzk_pce_free(self.raw)
        }
    }
}
