//! Scalars kept on the GPU between MSMs: a partition's aux assignment uploaded once (or
//! beside other work, on a stream of its own) and narrowed there to each query's
//! variables.

use anyhow::{ensure, Result};
use blstrs::Scalar as Fr;

#[cfg(cuzk_cuda)]
use super::msm::ffi;

/// Scalars (blstrs Scalars, Montgomery form) kept in device memory between calls, or,
/// emulated, in host memory standing in for it; freed on drop.
#[derive(Debug)]
pub struct DeviceScalars {
    pub(super) set: *mut std::ffi::c_void,
    pub(super) len: usize,
    pub(super) emulated: bool,
}

// SAFETY: as DevicePoints: written while created, then only read, freed by its one owner.
unsafe impl Send for DeviceScalars {}
unsafe impl Sync for DeviceScalars {}

/// The signature of `cuzk_scalars_new` and `cuzk_scalars_begin`: host scalars in, a handle
/// out.
#[cfg(cuzk_cuda)]
type ScalarsFn = unsafe extern "C" fn(
    *const std::ffi::c_void,
    usize,
    std::os::raw::c_int,
    *mut *mut std::ffi::c_void,
    *mut std::os::raw::c_char,
    usize,
) -> std::os::raw::c_int;

/// Calls `f` (a new set, or the start of an upload) on `scalars`; its handle.
#[cfg(cuzk_cuda)]
fn scalars_call(f: ScalarsFn, scalars: &[Fr], emulate: bool) -> Result<*mut std::ffi::c_void> {
    let mut out = std::ptr::null_mut();
    // SAFETY: Scalar is #[repr(transparent)] over blst_fr (the device's FrMont); the callee
    // reads n of them and writes the handle and the message.
    super::call(|e, l| unsafe {
        f(
            scalars.as_ptr() as *const _,
            scalars.len(),
            emulate as i32,
            &mut out,
            e,
            l,
        )
    })?;
    Ok(out)
}

impl DeviceScalars {
    /// Copies `scalars` to the device (emulate: to host memory standing in for it).
    pub fn upload(scalars: &[Fr], emulate: bool) -> Result<Self> {
        #[cfg(cuzk_cuda)]
        {
            let set = scalars_call(ffi::cuzk_scalars_new, scalars, emulate)?;
            Ok(Self {
                set,
                len: scalars.len(),
                emulated: emulate,
            })
        }
        #[cfg(not(cuzk_cuda))]
        {
            let _ = (scalars, emulate);
            anyhow::bail!(super::NO_CUDA_BUILD)
        }
    }

    /// `upload` while `f` runs on this thread: the copy goes on a worker thread and a
    /// stream of its own, so the device runs the work `f` queues meanwhile (the prover's H
    /// MSM, beside a partition's aux assignment). Returns when both are done; an error of
    /// either is the result's (the upload's first).
    pub fn upload_during<T>(
        scalars: &[Fr],
        emulate: bool,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<(Self, T)> {
        #[cfg(cuzk_cuda)]
        {
            // `scalars` stays borrowed, unchanged, until cuzk_scalars_end below has waited
            // for the copy, on every path.
            let pending = scalars_call(ffi::cuzk_scalars_begin, scalars, emulate)?;
            let value = f();
            let mut set = std::ptr::null_mut();
            // SAFETY: `pending` came from cuzk_scalars_begin and is consumed here, once.
            super::call(|e, l| unsafe { ffi::cuzk_scalars_end(pending, &mut set, e, l) })?;
            let this = Self {
                set,
                len: scalars.len(),
                emulated: emulate,
            };
            Ok((this, value?))
        }
        #[cfg(not(cuzk_cuda))]
        {
            let _ = (scalars, emulate, f);
            anyhow::bail!(super::NO_CUDA_BUILD)
        }
    }

    /// The scalars of the variables `density` marks, in order, selected where they are.
    pub fn select(&self, density: &crate::synth::Density) -> Result<Self> {
        ensure!(
            density.len() == self.len,
            "density of {} variables for {} scalars",
            density.len(),
            self.len
        );
        #[cfg(cuzk_cuda)]
        {
            let mut set = std::ptr::null_mut();
            // SAFETY: words holds ⌈len / 64⌉ u64, as the callee reads for this set's len.
            super::call(|e, l| unsafe {
                ffi::cuzk_scalars_select(
                    self.set,
                    density.words().as_ptr(),
                    density.total(),
                    &mut set,
                    e,
                    l,
                )
            })?;
            Ok(Self {
                set,
                len: density.total(),
                emulated: self.emulated,
            })
        }
        #[cfg(not(cuzk_cuda))]
        anyhow::bail!(super::NO_CUDA_BUILD)
    }

    /// A set that `ntt::quotient_to_device` filled (the FFI hands over ownership).
    #[cfg(cuzk_cuda)]
    pub(crate) fn from_raw(set: *mut std::ffi::c_void, len: usize, emulated: bool) -> Self {
        Self { set, len, emulated }
    }

    /// The FFI handle, for a kernel entry that reads the set (the device PCE evaluation).
    #[cfg(cuzk_cuda)]
    pub(crate) fn raw(&self) -> *mut std::ffi::c_void {
        self.set
    }

    pub(crate) fn is_emulated(&self) -> bool {
        self.emulated
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The scalars back in host memory (for tests).
    pub fn read(&self) -> Result<Vec<Fr>> {
        #[cfg(cuzk_cuda)]
        {
            let mut out = vec![Fr::from(0u64); self.len];
            // SAFETY: out holds len scalars of the blst_fr layout.
            super::call(|e, l| unsafe {
                ffi::cuzk_scalars_read(self.set, 0, self.len, out.as_mut_ptr() as *mut _, e, l)
            })?;
            Ok(out)
        }
        #[cfg(not(cuzk_cuda))]
        anyhow::bail!(super::NO_CUDA_BUILD)
    }
}

impl Drop for DeviceScalars {
    fn drop(&mut self) {
        #[cfg(cuzk_cuda)]
        // SAFETY: the set was created by the FFI and is freed exactly once, here.
        unsafe {
            ffi::cuzk_scalars_free(self.set)
        }
    }
}

/// Where an MSM's scalars are: host memory, or `len` of a [`DeviceScalars`] from `offset`.
#[derive(Clone, Copy)]
pub enum Scalars<'a> {
    Host(&'a [Fr]),
    Device(&'a DeviceScalars, usize, usize),
}

impl Scalars<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Scalars::Host(s) => s.len(),
            Scalars::Device(_, _, n) => *n,
        }
    }
}
