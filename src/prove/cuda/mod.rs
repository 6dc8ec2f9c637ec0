//! The CUDA side: device discovery and the kernels under `cuda/`, behind safe wrappers
//! that turn every CUDA error into one clear `anyhow` error. Present only in builds made
//! with nvcc (`cfg(cuzk_cuda)`); otherwise every entry point says how to get one.

use anyhow::{bail, Result};
use blstrs::Scalar as Fr;

pub mod backend;
#[cfg(feature = "test-kernels")]
pub mod field;
mod msm;
pub mod ntt;
pub mod pack_aux;
pub mod pce_eval;
mod points;
mod scalars;
#[cfg(feature = "test-kernels")]
pub use msm::{emulate_free_memory, msm_g1_emulated, msm_g2_emulated, msm_points_emulated};
pub use msm::{
    gather_min_points, msm_g1, msm_g2, msm_points, msm_resident, msm_with, DevicePoints,
    DeviceScalars, GpuAffine, Msm, MsmReport, Points, Scalars,
};

pub const NO_CUDA_BUILD: &str = "this build of cuzk-prove has no CUDA backend (built without \
nvcc); rebuild with the CUDA toolkit (README: building with CUDA) or use --device cpu";

#[cfg(cuzk_cuda)]
mod ffi {
    use std::os::raw::{c_char, c_int};
    extern "C" {
        pub(crate) fn cuzk_device_count(
            count: *mut c_int,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_set_device(dev: c_int, err: *mut c_char, errlen: usize) -> c_int;
        pub(crate) fn cuzk_get_device(dev: *mut c_int, err: *mut c_char, errlen: usize) -> c_int;
        pub(crate) fn cuzk_set_pin_transfers(on: c_int);
        pub(crate) fn cuzk_device_name(
            dev: c_int,
            name: *mut c_char,
            len: usize,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_host_register(
            ptr: *const std::os::raw::c_void,
            bytes: usize,
            read_only: c_int,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_host_unregister(ptr: *const std::os::raw::c_void);
        pub(crate) fn cuzk_mem_info(
            free: *mut usize,
            total: *mut usize,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_fr_ops(
            a: *const u64,
            b: *const u64,
            out: *mut u64,
            n: usize,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_fr_lazy_ops(
            a: *const u64,
            b: *const u64,
            c: *const u64,
            out: *mut u64,
            n: usize,
            emulate: c_int,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
    }
}

#[cfg(cuzk_cuda)]
fn call(f: impl FnOnce(*mut std::os::raw::c_char, usize) -> std::os::raw::c_int) -> Result<()> {
    let mut err = [0u8; 512];
    let rc = f(err.as_mut_ptr() as *mut _, err.len());
    if rc != 0 {
        let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
        bail!("CUDA: {}", String::from_utf8_lossy(&err[..end]));
    }
    Ok(())
}

/// Whether this binary was built with the CUDA kernels.
pub fn built() -> bool {
    cfg!(cuzk_cuda)
}

/// Number of usable CUDA devices (0 without a driver or GPU).
pub fn device_count() -> Result<usize> {
    #[cfg(cuzk_cuda)]
    {
        let mut n = 0;
        // SAFETY: the callee writes one int and at most `errlen` bytes.
        call(|e, l| unsafe { ffi::cuzk_device_count(&mut n, e, l) })?;
        Ok(n as usize)
    }
    #[cfg(not(cuzk_cuda))]
    bail!(NO_CUDA_BUILD)
}

/// The calling thread's current GPU (for a helper thread that works beside it).
pub(crate) fn current_device() -> Result<usize> {
    #[cfg(cuzk_cuda)]
    {
        let mut dev = 0;
        // SAFETY: the callee writes one int and at most `errlen` bytes.
        call(|e, l| unsafe { ffi::cuzk_get_device(&mut dev, e, l) })?;
        Ok(dev as usize)
    }
    #[cfg(not(cuzk_cuda))]
    bail!(NO_CUDA_BUILD)
}

/// Makes GPU `index` current for the calling thread: the CUDA runtime keeps the current
/// device per host thread, so call it on the thread that runs the kernels.
pub fn set_device(index: usize) -> Result<()> {
    #[cfg(cuzk_cuda)]
    {
        let dev =
            i32::try_from(index).map_err(|_| anyhow::anyhow!("GPU {index} does not exist"))?;
        // SAFETY: the callee writes at most `errlen` bytes.
        call(|e, l| unsafe { ffi::cuzk_set_device(dev, e, l) })
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = index;
        bail!(NO_CUDA_BUILD)
    }
}

/// Whether large host-to-device copies page-lock (register) their host memory (`--pin
/// on`) or go through pinned staging buffers (off, the default). Process-wide.
pub fn set_pin_transfers(on: bool) {
    #[cfg(cuzk_cuda)]
    // SAFETY: sets one process-wide flag the CUDA code reads before each copy.
    unsafe {
        ffi::cuzk_set_pin_transfers(on as std::os::raw::c_int)
    }
    #[cfg(not(cuzk_cuda))]
    let _ = on;
}

/// Host memory page-locked (registered with the driver) while this lives. Copies from it
/// run at the bus's speed without staging, and a split MSM ([`Msm::split`]) over points
/// in it has the device read only the points of nonzero scalars, straight from host
/// memory, instead of copying them all. For callers that keep points in host memory
/// across MSMs; registering costs about 40 ms a GB, so lock once and reuse.
pub struct PageLocked<'a, T> {
    data: &'a [T],
}

impl<'a, T> PageLocked<'a, T> {
    pub fn new(data: &'a [T]) -> Result<Self> {
        Self::lock(data, false)
    }

    /// Locked for the device to read only: what a file's shared mapping needs (Linux 6.5
    /// and later refuse a long-term writable pin of file-backed pages), and what
    /// `--pin-mapped` takes of the parameters' mapping (util/transfer.cuh).
    pub fn read_only(data: &'a [T]) -> Result<Self> {
        Self::lock(data, true)
    }

    fn lock(data: &'a [T], read_only: bool) -> Result<Self> {
        #[cfg(cuzk_cuda)]
        {
            if !data.is_empty() {
                let bytes = std::mem::size_of_val(data);
                // SAFETY: the range is one live allocation borrowed for 'a; the driver
                // only page-locks it (the device reads it, never writes).
                call(|e, l| unsafe {
                    ffi::cuzk_host_register(
                        data.as_ptr() as *const _,
                        bytes,
                        read_only as std::os::raw::c_int,
                        e,
                        l,
                    )
                })?;
            }
            Ok(Self { data })
        }
        #[cfg(not(cuzk_cuda))]
        {
            let _ = (data, read_only);
            bail!(NO_CUDA_BUILD)
        }
    }

    pub fn get(&self) -> &'a [T] {
        self.data
    }
}

impl<T> Drop for PageLocked<'_, T> {
    fn drop(&mut self) {
        #[cfg(cuzk_cuda)]
        if !self.data.is_empty() {
            // SAFETY: the range was registered by new() and is unregistered once.
            unsafe { ffi::cuzk_host_unregister(self.data.as_ptr() as *const _) }
        }
    }
}

/// GPU `index`'s name, e.g. "NVIDIA H200".
pub fn device_name(index: usize) -> Result<String> {
    #[cfg(cuzk_cuda)]
    {
        let mut name = [0u8; 256];
        // SAFETY: the callee writes at most name.len() and `errlen` bytes, NUL-terminated.
        call(|e, l| unsafe {
            ffi::cuzk_device_name(
                index as std::os::raw::c_int,
                name.as_mut_ptr().cast(),
                name.len(),
                e,
                l,
            )
        })?;
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        Ok(String::from_utf8_lossy(&name[..end]).into_owned())
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = index;
        bail!(NO_CUDA_BUILD)
    }
}

/// Free and total memory of the calling thread's current GPU, in bytes (free counting
/// what the memory pool holds unused).
pub(crate) fn mem_info() -> Result<(usize, usize)> {
    #[cfg(cuzk_cuda)]
    {
        let (mut free, mut total) = (0, 0);
        // SAFETY: the callee writes two size_t and at most `errlen` bytes.
        call(|e, l| unsafe { ffi::cuzk_mem_info(&mut free, &mut total, e, l) })?;
        Ok((free, total))
    }
    #[cfg(not(cuzk_cuda))]
    bail!(NO_CUDA_BUILD)
}

/// (a·b, a+b, a−b) element-wise on the GPU: the field arithmetic the kernels build on,
/// exposed so tests can hold it against blstrs.
/// Fr's lazy arithmetic (the NTT's: values in [0, 2r), cuda/ff/mont.cuh) on raw
/// Montgomery limbs: for reduced `a` and lazy `b`, `c` (below 2r), returns
/// (mul_lazy(a, b), add_lazy(b, c), sub_lazy(b, c), reduce_lazy(b)) as computed, unreduced.
/// `emulate` runs the same code on the host. For tests.
#[allow(clippy::type_complexity)]
pub fn fr_lazy_ops(
    a: &[[u64; 4]],
    b: &[[u64; 4]],
    c: &[[u64; 4]],
    emulate: bool,
) -> Result<(Vec<[u64; 4]>, Vec<[u64; 4]>, Vec<[u64; 4]>, Vec<[u64; 4]>)> {
    anyhow::ensure!(
        a.len() == b.len() && b.len() == c.len(),
        "fr_lazy_ops: lengths differ"
    );
    #[cfg(cuzk_cuda)]
    {
        let n = a.len();
        let mut out = vec![[0u64; 4]; 4 * n];
        // SAFETY: [u64; 4] is the device Fr's layout; the buffers hold n, n, n and 4n.
        call(|e, l| unsafe {
            ffi::cuzk_fr_lazy_ops(
                a.as_ptr() as *const u64,
                b.as_ptr() as *const u64,
                c.as_ptr() as *const u64,
                out.as_mut_ptr() as *mut u64,
                n,
                emulate as _,
                e,
                l,
            )
        })?;
        let red = out.split_off(3 * n);
        let sub = out.split_off(2 * n);
        let add = out.split_off(n);
        Ok((out, add, sub, red))
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = emulate;
        bail!(NO_CUDA_BUILD)
    }
}

pub fn fr_ops(a: &[Fr], b: &[Fr]) -> Result<(Vec<Fr>, Vec<Fr>, Vec<Fr>)> {
    anyhow::ensure!(a.len() == b.len(), "fr_ops: lengths differ");
    #[cfg(cuzk_cuda)]
    {
        let n = a.len();
        let mut out = vec![Fr::from(0u64); 3 * n];
        // SAFETY: Scalar is #[repr(transparent)] over blst_fr, four u64 limbs in Montgomery
        // form, the layout of the device's Fr; the buffers hold n, n and 3n elements.
        call(|e, l| unsafe {
            ffi::cuzk_fr_ops(
                a.as_ptr() as *const u64,
                b.as_ptr() as *const u64,
                out.as_mut_ptr() as *mut u64,
                n,
                e,
                l,
            )
        })?;
        let sub = out.split_off(2 * n);
        let add = out.split_off(n);
        Ok((out, add, sub))
    }
    #[cfg(not(cuzk_cuda))]
    bail!(NO_CUDA_BUILD)
}
