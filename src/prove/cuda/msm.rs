//! Multi-scalar multiplication Σ sᵢ·Pᵢ on the GPU for G1 and G2 (`cuda/msm/`): signed-digit
//! Pippenger with the points sorted into buckets on the device. The device returns one
//! sum per window; the host folds them, Σ_k 2^(c·k)·W_k, with blstrs (c·windows ≈ 256
//! doublings).
//!
//! With [`Msm::split`] (`--split-msm on`, for witness scalars) zeros are dropped and the
//! points of the ones summed by batch addition on the device before the buckets, which
//! then see only the other scalars.

use anyhow::{bail, ensure, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;

/// Largest number of windows the device can return (window size 1).
const MAX_WINDOWS: usize = 256;

#[cfg(cuzk_cuda)]
mod ffi {
    use std::os::raw::{c_char, c_int, c_void};
    pub type MsmFn = unsafe extern "C" fn(
        points: *const c_void,
        scalars: *const c_void,
        n: usize,
        window: c_int,
        split: c_int,
        emulate: c_int,
        out: *mut c_void,
        out_cap: usize,
        c_out: *mut u32,
        windows_out: *mut u32,
        split_counts: *mut u64,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    extern "C" {
        pub fn cuzk_msm_g1(
            points: *const c_void,
            scalars: *const c_void,
            n: usize,
            window: c_int,
            split: c_int,
            emulate: c_int,
            out: *mut c_void,
            out_cap: usize,
            c_out: *mut u32,
            windows_out: *mut u32,
            split_counts: *mut u64,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_msm_g2(
            points: *const c_void,
            scalars: *const c_void,
            n: usize,
            window: c_int,
            split: c_int,
            emulate: c_int,
            out: *mut c_void,
            out_cap: usize,
            c_out: *mut u32,
            windows_out: *mut u32,
            split_counts: *mut u64,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
    }
}

/// The two groups the kernels serve; the FFI relies on the blst layouts of exactly
/// these types.
trait MsmGroup: Group {
    type Affine;
    #[cfg(cuzk_cuda)]
    const FFI: ffi::MsmFn;
}

impl MsmGroup for G1Projective {
    type Affine = G1Affine;
    #[cfg(cuzk_cuda)]
    const FFI: ffi::MsmFn = ffi::cuzk_msm_g1;
}

impl MsmGroup for G2Projective {
    type Affine = G2Affine;
    #[cfg(cuzk_cuda)]
    const FFI: ffi::MsmFn = ffi::cuzk_msm_g2;
}

/// How an MSM runs on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Msm {
    /// Pippenger window in bits, 1..=24, or 0 to choose it from the number of scalars
    /// that reach the buckets.
    pub window: usize,
    /// Sum the points of scalars equal to one by batch addition and drop zeros before
    /// the buckets (the split MSM).
    pub split: bool,
}

/// Σ scalars[i]·points[i] in G1 on the GPU.
pub fn msm_g1(points: &[G1Affine], scalars: &[Fr], cfg: Msm) -> Result<G1Projective> {
    msm::<G1Projective>(points, scalars, cfg, false)
}

/// Σ scalars[i]·points[i] in G2 on the GPU.
pub fn msm_g2(points: &[G2Affine], scalars: &[Fr], cfg: Msm) -> Result<G2Projective> {
    msm::<G2Projective>(points, scalars, cfg, false)
}

/// [`msm_g1`] with the device's per-thread code run on the host instead (slow; for tests
/// on machines without a GPU).
#[doc(hidden)]
pub fn msm_g1_emulated(points: &[G1Affine], scalars: &[Fr], cfg: Msm) -> Result<G1Projective> {
    msm::<G1Projective>(points, scalars, cfg, true)
}

/// [`msm_g2`] run on the host; see [`msm_g1_emulated`].
#[doc(hidden)]
pub fn msm_g2_emulated(points: &[G2Affine], scalars: &[Fr], cfg: Msm) -> Result<G2Projective> {
    msm::<G2Projective>(points, scalars, cfg, true)
}

fn msm<G: MsmGroup>(points: &[G::Affine], scalars: &[Fr], cfg: Msm, emulate: bool) -> Result<G> {
    let window = cfg.window;
    ensure!(
        points.len() == scalars.len(),
        "MSM: {} points but {} scalars",
        points.len(),
        scalars.len()
    );
    ensure!(
        window <= 24,
        "MSM window size {window} out of range (0 = automatic, 1..=24)"
    );
    #[cfg(cuzk_cuda)]
    {
        // The device writes Jacobian points in blst's layout, which is what G1Projective
        // and G2Projective are (#[repr(transparent)] over blst_p1 / blst_p2).
        let mut out = vec![G::identity(); MAX_WINDOWS];
        let (mut c, mut windows) = (0u32, 0u32);
        let mut counts = [0u64; 2];
        // SAFETY: G::Affine is G1Affine or G2Affine (MsmGroup is private), #[repr(transparent)] over
        // blst_p1_affine / blst_p2_affine, the device's Affine<Fp> / Affine<Fp2>; Scalar is
        // #[repr(transparent)] over blst_fr. points and scalars hold n elements; out holds
        // MAX_WINDOWS points of G's blst layout and the callee writes at most out_cap.
        super::call(|e, l| unsafe {
            G::FFI(
                points.as_ptr() as *const _,
                scalars.as_ptr() as *const _,
                points.len(),
                window as i32,
                cfg.split as i32,
                emulate as i32,
                out.as_mut_ptr() as *mut _,
                MAX_WINDOWS,
                &mut c,
                &mut windows,
                counts.as_mut_ptr(),
                e,
                l,
            )
        })?;
        if windows as usize > MAX_WINDOWS {
            bail!("MSM: device reported {windows} windows");
        }
        if cfg.split {
            log::debug!(
                "MSM of {}: {} ones batch-added, {} scalars in buckets (c = {c}), {} zeros",
                points.len(),
                counts[0],
                counts[1],
                points.len() as u64 - counts[0] - counts[1]
            );
        }
        let mut acc = G::identity();
        for w in out[..windows as usize].iter().rev() {
            for _ in 0..c {
                acc = acc.double();
            }
            acc += w;
        }
        Ok(acc)
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = (MAX_WINDOWS, emulate);
        bail!(super::NO_CUDA_BUILD)
    }
}
