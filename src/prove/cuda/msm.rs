//! Multi-scalar multiplication Σ sᵢ·Pᵢ on the GPU for G1 and G2 (`cuda/msm/`): signed-digit
//! Pippenger with the points sorted into buckets on the device. The device returns one
//! sum per window; the host folds them, Σ_k 2^(c·k)·W_k, with blstrs (c·windows ≈ 256
//! doublings).
//!
//! The points come from host memory, or from a [`DevicePoints`] set: an SRS section
//! copied raw to the device and decoded there (`cuda/srs/`), so the host decodes nothing
//! and the MSMs of every partition read the same copy.
//!
//! With [`Msm::split`] (`--split-msm on`, for witness scalars) zeros are dropped and the
//! points of the ones summed by batch addition on the device before the buckets, which
//! then see only the other scalars.

use anyhow::{bail, ensure, Result};

pub use super::points::{DevicePoints, Points};
pub use super::scalars::{DeviceScalars, Scalars};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;

/// Largest number of windows the device can return (window size 1).
const MAX_WINDOWS: usize = 256;

#[cfg(cuzk_cuda)]
pub(super) mod ffi {
    use std::os::raw::{c_char, c_int, c_void};
    pub(crate) type MsmFn = unsafe extern "C" fn(
        set: *const c_void,
        offset: usize,
        points: *const c_void,
        scalar_set: *const c_void,
        scalar_offset: usize,
        scalars: *const c_void,
        n: usize,
        window: c_int,
        split: c_int,
        max_pass: u32,
        emulate: c_int,
        out: *mut c_void,
        out_cap: usize,
        c_out: *mut u32,
        windows_out: *mut u32,
        split_counts: *mut u64,
        ms: *mut f32,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    extern "C" {
        pub(crate) fn cuzk_msm_g1(
            set: *const c_void,
            offset: usize,
            points: *const c_void,
            scalar_set: *const c_void,
            scalar_offset: usize,
            scalars: *const c_void,
            n: usize,
            window: c_int,
            split: c_int,
            max_pass: u32,
            emulate: c_int,
            out: *mut c_void,
            out_cap: usize,
            c_out: *mut u32,
            windows_out: *mut u32,
            split_counts: *mut u64,
            ms: *mut f32,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_msm_g2(
            set: *const c_void,
            offset: usize,
            points: *const c_void,
            scalar_set: *const c_void,
            scalar_offset: usize,
            scalars: *const c_void,
            n: usize,
            window: c_int,
            split: c_int,
            max_pass: u32,
            emulate: c_int,
            out: *mut c_void,
            out_cap: usize,
            c_out: *mut u32,
            windows_out: *mut u32,
            split_counts: *mut u64,
            ms: *mut f32,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_msm_gather_min(emulate: c_int) -> usize;
        #[cfg(feature = "test-kernels")]
        pub(crate) fn cuzk_msm_emulated_memory(bytes: usize);
        pub(crate) fn cuzk_points_new(
            g2: c_int,
            raw: *const c_void,
            n: usize,
            emulate: c_int,
            pin: c_int,
            pinned: *mut c_int,
            out: *mut *mut c_void,
            bad: *mut u64,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_points_read(
            set: *const c_void,
            offset: usize,
            n: usize,
            out: *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_points_free(set: *mut c_void);
        pub(crate) fn cuzk_scalars_new(
            host: *const c_void,
            n: usize,
            emulate: c_int,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn cuzk_scalars_new_packed(
            n: usize,
            ones: *const u64,
            others: *const u64,
            first: *const u32,
            values: *const c_void,
            n_values: usize,
            one: *const c_void,
            emulate: c_int,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_scalars_begin(
            host: *const c_void,
            n: usize,
            emulate: c_int,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_scalars_end(
            upload: *mut c_void,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_scalars_select(
            set: *const c_void,
            words: *const u64,
            total: usize,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_scalars_read(
            set: *const c_void,
            offset: usize,
            n: usize,
            out: *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_scalars_free(set: *mut c_void);
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for blstrs::G1Affine {}
    impl Sealed for blstrs::G2Affine {}
}

/// The two groups the kernels serve (G1Affine, G2Affine); the FFI relies on the blst
/// layouts of exactly these types.
pub trait GpuAffine: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    type Projective: Group + Copy;
    const NAME: &'static str;
    /// Bytes of one uncompressed point in a .params file (= the decoded affine size).
    const RAW_SIZE: usize;
    #[cfg(cuzk_cuda)]
    const FFI: ffi::MsmFn;
}

impl GpuAffine for G1Affine {
    type Projective = G1Projective;
    const NAME: &'static str = "G1";
    const RAW_SIZE: usize = 96;
    #[cfg(cuzk_cuda)]
    const FFI: ffi::MsmFn = ffi::cuzk_msm_g1;
}

impl GpuAffine for G2Affine {
    type Projective = G2Projective;
    const NAME: &'static str = "G2";
    const RAW_SIZE: usize = 192;
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
    /// At most this many windows' digits sorted at once, or 0: as many as the device's
    /// free memory holds (all of them where there is room; fewer, in passes, on a device
    /// the SRS and a recording fill). For tests and measurements.
    pub windows_per_pass: u32,
}

/// What one MSM did on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MsmReport {
    /// Scalars equal to one (batch-added) and scalars that went through the buckets;
    /// without the split, 0 and all of them.
    pub ones: u64,
    pub bucketed: u64,
    /// Points that crossed from host memory: none for resident points, all for a copy,
    /// only those of nonzero scalars when a split MSM reads page-locked host points
    /// directly (see [`super::PageLocked`]).
    pub copied: u64,
    /// Pippenger window bits.
    pub window: u32,
    /// Windows sorted at once (all of them unless memory or [`Msm::windows_per_pass`]
    /// made it fewer; 0 when no scalar reached the buckets).
    pub windows_per_pass: u32,
    /// Compute time in ms of the split (classification and batch addition) and of the
    /// buckets and windows; transfers excluded.
    pub split_ms: f32,
    pub buckets_ms: f32,
}

/// Fewest points for which a split MSM over page-locked host points ([`super::PageLocked`])
/// copies only the points of nonzero scalars (when at most 90 % of them are needed);
/// smaller ones copy all. `emulated`: the host emulation's (0: always). `CUZK_GATHER=0`
/// never gathers, `=1` always.
pub fn gather_min_points(emulated: bool) -> usize {
    #[cfg(cuzk_cuda)]
    // SAFETY: reads a process-wide setting.
    return unsafe { ffi::cuzk_msm_gather_min(emulated as std::os::raw::c_int) };
    #[cfg(not(cuzk_cuda))]
    {
        let _ = emulated;
        usize::MAX
    }
}

/// Tests: the device memory the host emulation pretends is free for the MSMs this thread
/// runs (`usize::MAX`: no limit, the default), so that they take their windows in passes
/// as a GPU short of memory does.
#[cfg(feature = "test-kernels")]
pub fn emulate_free_memory(bytes: usize) {
    #[cfg(cuzk_cuda)]
    // SAFETY: sets a thread-local value of the emulation.
    unsafe {
        ffi::cuzk_msm_emulated_memory(bytes)
    };
    #[cfg(not(cuzk_cuda))]
    let _ = bytes;
}

/// Σ scalars[i]·points[i] in G1 on the GPU.
pub fn msm_g1(points: &[G1Affine], scalars: &[Fr], cfg: Msm) -> Result<G1Projective> {
    Ok(msm(Points::Host(points), Scalars::Host(scalars), cfg, false)?.0)
}

/// Σ scalars[i]·points[i] in G2 on the GPU.
pub fn msm_g2(points: &[G2Affine], scalars: &[Fr], cfg: Msm) -> Result<G2Projective> {
    Ok(msm(Points::Host(points), Scalars::Host(scalars), cfg, false)?.0)
}

/// [`msm_g1`] with the device's per-thread code run on the host instead (slow; for tests
/// on machines without a GPU).
#[doc(hidden)]
#[cfg(feature = "test-kernels")]
pub fn msm_g1_emulated(points: &[G1Affine], scalars: &[Fr], cfg: Msm) -> Result<G1Projective> {
    Ok(msm(Points::Host(points), Scalars::Host(scalars), cfg, true)?.0)
}

/// [`msm_g2`] run on the host; see [`msm_g1_emulated`].
#[doc(hidden)]
#[cfg(feature = "test-kernels")]
pub fn msm_g2_emulated(points: &[G2Affine], scalars: &[Fr], cfg: Msm) -> Result<G2Projective> {
    Ok(msm(Points::Host(points), Scalars::Host(scalars), cfg, true)?.0)
}

/// [`msm_points`] run on the host (see [`msm_g1_emulated`]), with what the emulated device
/// did.
#[doc(hidden)]
#[cfg(feature = "test-kernels")]
pub fn msm_points_emulated<P: GpuAffine>(
    points: &[P],
    scalars: &[Fr],
    cfg: Msm,
) -> Result<(P::Projective, MsmReport)> {
    msm(Points::Host(points), Scalars::Host(scalars), cfg, true)
}

/// Σ scalars[i]·points[i] on the GPU, the points in host memory or in a decoded set (then
/// on the executor that decoded it), with what the device did.
pub fn msm_points<P: GpuAffine>(
    points: Points<P>,
    scalars: &[Fr],
    cfg: Msm,
) -> Result<(P::Projective, MsmReport)> {
    msm_with(points, Scalars::Host(scalars), cfg)
}

/// [`msm_points`] with the scalars in host memory or already on the device (on the same
/// executor as the points, when those are a set).
pub fn msm_with<P: GpuAffine>(
    points: Points<P>,
    scalars: Scalars,
    cfg: Msm,
) -> Result<(P::Projective, MsmReport)> {
    let emulate = match (points, scalars) {
        (Points::Device(d, _), _) => d.emulated,
        (_, Scalars::Device(s, _, _)) => s.emulated,
        _ => false,
    };
    msm(points, scalars, cfg, emulate)
}

/// Σ scalars[i]·points[offset + i] over a decoded set, on the executor that decoded it.
pub fn msm_resident<P: GpuAffine>(
    points: &DevicePoints<P>,
    offset: usize,
    scalars: &[Fr],
    cfg: Msm,
) -> Result<P::Projective> {
    Ok(msm(
        Points::Device(points, offset),
        Scalars::Host(scalars),
        cfg,
        points.emulated,
    )?
    .0)
}

fn msm<P: GpuAffine>(
    points: Points<P>,
    scalars: Scalars,
    cfg: Msm,
    emulate: bool,
) -> Result<(P::Projective, MsmReport)> {
    let n = scalars.len();
    let (scalar_set, scalar_offset, scalars_host) = match scalars {
        Scalars::Host(s) => (std::ptr::null_mut(), 0, s.as_ptr()),
        Scalars::Device(d, offset, len) => {
            ensure!(
                offset <= d.len && len <= d.len - offset,
                "MSM: scalars [{offset}, {}) of a set of {}",
                offset + len,
                d.len
            );
            ensure!(
                d.emulated == emulate,
                "MSM: scalars and points on different executors"
            );
            (d.set, offset, std::ptr::null())
        }
    };
    let (set, offset, host) = match points {
        Points::Host(p) => {
            ensure!(p.len() == n, "MSM: {} points but {n} scalars", p.len());
            (std::ptr::null_mut(), 0, p.as_ptr())
        }
        Points::Device(d, offset) => {
            ensure!(
                offset <= d.len && n <= d.len - offset,
                "MSM: {n} scalars for points from {offset} of a set of {}",
                d.len
            );
            (d.set, offset, std::ptr::null())
        }
    };
    let window = cfg.window;
    ensure!(
        window <= 24,
        "MSM window size {window} out of range (0 = automatic, 1..=24)"
    );
    #[cfg(cuzk_cuda)]
    {
        // The device writes Jacobian points in blst's layout, which is what G1Projective
        // and G2Projective are (#[repr(transparent)] over blst_p1 / blst_p2).
        let mut out = vec![P::Projective::identity(); MAX_WINDOWS];
        let (mut c, mut windows) = (0u32, 0u32);
        let mut counts = [0u64; 4];
        let mut ms = [0f32; 2];
        // SAFETY: P is G1Affine or G2Affine (GpuAffine is sealed), #[repr(transparent)]
        // over blst_p1_affine / blst_p2_affine, the device's Affine<Fp> / Affine<Fp2>;
        // Scalar is #[repr(transparent)] over blst_fr. The host points (if any) and the
        // scalars hold n elements; a set holds offset + n points (checked above and again
        // by the callee); a scalar set holds offset + n (checked above and by the callee);
        // out holds MAX_WINDOWS points of the blst layout and the callee
        // writes at most out_cap; counts holds the 4 values the callee writes.
        super::call(|e, l| unsafe {
            P::FFI(
                set,
                offset,
                host as *const _,
                scalar_set as *const _,
                scalar_offset,
                scalars_host as *const _,
                n,
                window as i32,
                cfg.split as i32,
                cfg.windows_per_pass,
                emulate as i32,
                out.as_mut_ptr() as *mut _,
                MAX_WINDOWS,
                &mut c,
                &mut windows,
                counts.as_mut_ptr(),
                ms.as_mut_ptr(),
                e,
                l,
            )
        })?;
        if windows as usize > MAX_WINDOWS {
            bail!("MSM: device reported {windows} windows");
        }
        if cfg.split {
            log::debug!(
                "MSM of {n}: {} ones batch-added, {} scalars in buckets (c = {c}), {} zeros",
                counts[0],
                counts[1],
                n as u64 - counts[0] - counts[1]
            );
        }
        let mut acc = P::Projective::identity();
        for w in out[..windows as usize].iter().rev() {
            for _ in 0..c {
                acc = acc.double();
            }
            acc += w;
        }
        let report = MsmReport {
            ones: counts[0],
            bucketed: counts[1],
            copied: counts[2],
            window: c,
            windows_per_pass: counts[3] as u32,
            split_ms: ms[0],
            buckets_ms: ms[1],
        };
        Ok((acc, report))
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = (MAX_WINDOWS, emulate, set, offset, host);
        let _ = (scalar_set, scalar_offset, scalars_host);
        bail!(super::NO_CUDA_BUILD)
    }
}
