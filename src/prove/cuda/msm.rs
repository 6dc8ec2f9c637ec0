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

use std::marker::PhantomData;
use std::ops::Range;

use anyhow::{bail, ensure, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;

/// Largest number of windows the device can return (window size 1).
const MAX_WINDOWS: usize = 256;

#[cfg(cuzk_cuda)]
mod ffi {
    use std::os::raw::{c_char, c_int, c_void};
    pub type MsmFn = unsafe extern "C" fn(
        set: *const c_void,
        offset: usize,
        points: *const c_void,
        scalar_set: *const c_void,
        scalar_offset: usize,
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
        ms: *mut f32,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    extern "C" {
        pub fn cuzk_msm_g1(
            set: *const c_void,
            offset: usize,
            points: *const c_void,
            scalar_set: *const c_void,
            scalar_offset: usize,
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
            ms: *mut f32,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_msm_g2(
            set: *const c_void,
            offset: usize,
            points: *const c_void,
            scalar_set: *const c_void,
            scalar_offset: usize,
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
            ms: *mut f32,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_msm_gather_min(emulate: c_int) -> usize;
        pub fn cuzk_points_new(
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
        pub fn cuzk_points_read(
            set: *const c_void,
            offset: usize,
            n: usize,
            out: *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_points_free(set: *mut c_void);
        pub fn cuzk_scalars_new(
            host: *const c_void,
            n: usize,
            emulate: c_int,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_scalars_begin(
            host: *const c_void,
            n: usize,
            emulate: c_int,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_scalars_end(
            upload: *mut c_void,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_scalars_select(
            set: *const c_void,
            words: *const u64,
            total: usize,
            out: *mut *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_scalars_read(
            set: *const c_void,
            offset: usize,
            n: usize,
            out: *mut c_void,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_scalars_free(set: *mut c_void);
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
    /// Compute time in ms of the split (classification and batch addition) and of the
    /// buckets and windows; transfers excluded.
    pub split_ms: f32,
    pub buckets_ms: f32,
}

/// Points of one group decoded into device memory (or, emulated, into host memory that
/// stands in for it), freed on drop.
pub struct DevicePoints<P: GpuAffine> {
    set: *mut std::ffi::c_void,
    len: usize,
    emulated: bool,
    _group: PhantomData<P>,
}

// SAFETY: the set is written only while it is created; afterwards it is read (MSMs, read)
// and finally freed by the one owner.
unsafe impl<P: GpuAffine> Send for DevicePoints<P> {}
unsafe impl<P: GpuAffine> Sync for DevicePoints<P> {}

impl<P: GpuAffine> DevicePoints<P> {
    /// Copies `raw` (uncompressed points as a .params section stores them) to the device
    /// and decodes it there, checking each point as blst does (on the curve, no subgroup
    /// check). An invalid point fails with its index. `pin` page-locks `raw` for the copy
    /// (`--pin`); if the driver refuses, the copy runs from pageable memory and a warning
    /// is logged.
    pub fn decode(raw: &[u8], pin: bool) -> Result<Self> {
        Self::create(raw, false, pin)
    }

    /// [`Self::decode`] with the device code run on the host (tests without a GPU).
    #[doc(hidden)]
    #[cfg(feature = "test-kernels")]
    pub fn decode_emulated(raw: &[u8]) -> Result<Self> {
        Self::create(raw, true, false)
    }

    fn create(raw: &[u8], emulate: bool, pin: bool) -> Result<Self> {
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
            if pin && pinned == 0 && n > 0 {
                log::warn!(
                    "--pin: could not page-lock the mapped SRS; copying from pageable memory"
                );
            }
            Ok(Self {
                set,
                len: n,
                emulated: emulate,
                _group: PhantomData,
            })
        }
        #[cfg(not(cuzk_cuda))]
        {
            let _ = (n, emulate, pin);
            bail!(super::NO_CUDA_BUILD)
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
        bail!(super::NO_CUDA_BUILD)
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

/// Scalars (blstrs Scalars, Montgomery form) kept in device memory between calls, or,
/// emulated, in host memory standing in for it; freed on drop.
#[derive(Debug)]
pub struct DeviceScalars {
    set: *mut std::ffi::c_void,
    len: usize,
    emulated: bool,
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
            bail!(super::NO_CUDA_BUILD)
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
            bail!(super::NO_CUDA_BUILD)
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
        bail!(super::NO_CUDA_BUILD)
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

    pub fn is_emulated(&self) -> bool {
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
        bail!(super::NO_CUDA_BUILD)
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
    fn len(&self) -> usize {
        match self {
            Scalars::Host(s) => s.len(),
            Scalars::Device(_, _, n) => *n,
        }
    }
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
        let mut counts = [0u64; 3];
        let mut ms = [0f32; 2];
        // SAFETY: P is G1Affine or G2Affine (GpuAffine is sealed), #[repr(transparent)]
        // over blst_p1_affine / blst_p2_affine, the device's Affine<Fp> / Affine<Fp2>;
        // Scalar is #[repr(transparent)] over blst_fr. The host points (if any) and the
        // scalars hold n elements; a set holds offset + n points (checked above and again
        // by the callee); a scalar set holds offset + n (checked above and by the callee);
        // out holds MAX_WINDOWS points of the blst layout and the callee
        // writes at most out_cap.
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
