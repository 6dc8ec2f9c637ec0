//! Scalars kept on the GPU between MSMs: a partition's aux assignment uploaded once (or
//! beside other work, on a stream of its own) and narrowed there to each query's
//! variables.

use anyhow::{ensure, Result};
use blstrs::Scalar as Fr;

use super::pack_aux::{Packed, MIN_SCALARS};

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

    /// A packed set ([`Packed`], `--pack-aux`) unpacked on the device (emulate: in host
    /// memory standing in for it).
    pub fn upload_packed(p: &Packed, emulate: bool) -> Result<Self> {
        #[cfg(cuzk_cuda)]
        {
            let words = p.n.div_ceil(64);
            ensure!(
                p.ones.len() == words && p.others.len() == words && p.first.len() == words,
                "packed scalars: {} bitmap words for {} scalars",
                p.ones.len(),
                p.n
            );
            let one = super::pack_aux::one_limbs();
            let mut set = std::ptr::null_mut();
            // SAFETY: the bitmaps and offsets hold ⌈n / 64⌉ entries each (checked above),
            // values n_values scalars of the blst_fr layout, one 32 bytes; the callee
            // writes the handle and the message.
            super::call(|e, l| unsafe {
                ffi::cuzk_scalars_new_packed(
                    p.n,
                    p.ones.as_ptr(),
                    p.others.as_ptr(),
                    p.first.as_ptr(),
                    p.values.as_ptr() as *const _,
                    p.values.len(),
                    one.as_ptr() as *const _,
                    emulate as i32,
                    &mut set,
                    e,
                    l,
                )
            })?;
            Ok(Self {
                set,
                len: p.n,
                emulated: emulate,
            })
        }
        #[cfg(not(cuzk_cuda))]
        {
            let _ = (p, emulate);
            anyhow::bail!(super::NO_CUDA_BUILD)
        }
    }

    /// A partition's aux assignment to the device: packed when `pack` (`--pack-aux`) and
    /// the set is large and mostly zeros and ones, else whole ([`Self::upload`]).
    pub fn upload_aux(scalars: &[Fr], pack: bool, emulate: bool) -> Result<Self> {
        let packed = (pack && scalars.len() >= MIN_SCALARS)
            .then(|| Packed::of(scalars, super::pack_aux::threads()))
            .flatten();
        match packed {
            Some(p) => Self::upload_packed(&p, emulate),
            None => Self::upload(scalars, emulate),
        }
    }

    /// `upload_aux` while `f` runs on this thread, so the device runs the work `f` queues
    /// meanwhile (the prover's MSMs, beside the next partition's aux assignment). Packed
    /// (`pack`), the packing, the copy of the pieces and their unpacking run on a helper
    /// thread (on the caller's GPU, its own default stream); whole, the copy runs on a
    /// worker thread and a stream of its own. Returns when both are done; an error of
    /// either is the result's (the upload's first).
    pub fn upload_during<T>(
        scalars: &[Fr],
        pack: bool,
        emulate: bool,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<(Self, T)> {
        if pack && scalars.len() >= MIN_SCALARS {
            let gpu = match emulate {
                true => None,
                false => Some(super::current_device()?),
            };
            return std::thread::scope(|s| {
                let up = std::thread::Builder::new()
                    .name("aux-upload".into())
                    .spawn_scoped(s, move || {
                        if let Some(g) = gpu {
                            super::set_device(g)?;
                        }
                        Self::upload_aux(scalars, true, emulate)
                    })?;
                let value = f();
                let set = up
                    .join()
                    .map_err(|_| anyhow::anyhow!("the aux assignment's upload thread panicked"))?;
                Ok((set?, value?))
            });
        }
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
