//! Safe wrappers over cuda/sppark_msm.cu and cuda/sppark_ntt.cu: sppark's MSM for G1 and
//! G2, its NTT over Fr, and the few CUDA runtime calls the bench makes itself.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::size_of;

use anyhow::{bail, ensure, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;
use rayon::prelude::*;

/// A scalar as sppark reads it with `mont = false`: the canonical integer in four
/// little-endian 64-bit limbs.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
#[repr(C)]
pub struct Canonical(pub [u64; 4]);

extern "C" {
    fn sppark_bench_msm_g1(
        out: *mut c_void,
        points: *const c_void,
        n: usize,
        scalars: *const Canonical,
        point_size: usize,
    ) -> sppark::Error;
    fn sppark_bench_msm_g2(
        out: *mut c_void,
        points: *const c_void,
        n: usize,
        scalars: *const Canonical,
        point_size: usize,
    ) -> sppark::Error;
    fn sppark_bench_sizes(out: *mut usize);
    fn sppark_bench_device_count(count: *mut c_int) -> c_int;
    fn sppark_bench_device_name(name: *mut c_char, len: usize) -> c_int;
    fn sppark_bench_pin(ptr: *mut c_void, bytes: usize) -> c_int;
    fn sppark_bench_unpin(ptr: *mut c_void) -> c_int;
    fn sppark_bench_error_string(code: c_int) -> *const c_char;
    fn sppark_bench_ntt(
        host_inout: *mut Scalar,
        lg: u32,
        inverse: c_int,
        runs: c_int,
        ms_each: *mut f32,
    ) -> sppark::Error;
    fn sppark_bench_ntt_constants(lg: u32, out: *mut Scalar) -> c_int;
    fn sppark_bench_ntt_fr_size() -> usize;
    fn sppark_bench_ntt_max_lg() -> u32;
}

fn cuda_error(code: c_int) -> String {
    // SAFETY: cudaGetErrorString returns a static NUL-terminated string for any code.
    let s = unsafe { CStr::from_ptr(sppark_bench_error_string(code)) };
    format!("{} (CUDA error {code})", s.to_string_lossy())
}

/// The canonical integers of `scalars` (blstrs keeps them in Montgomery form).
pub fn canonical(scalars: &[Scalar]) -> Vec<Canonical> {
    scalars
        .par_iter()
        .map(|s| {
            let b = s.to_bytes_le();
            let mut l = [0u64; 4];
            for (i, limb) in l.iter_mut().enumerate() {
                *limb = u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap());
            }
            Canonical(l)
        })
        .collect()
}

/// Checks that sppark's host types have the sizes of the blstrs (blst) types passed for
/// them: affine points, Jacobian results, scalars.
pub fn check_layouts() -> Result<()> {
    let mut s = [0usize; 5];
    // SAFETY: the callee writes exactly five sizes.
    unsafe { sppark_bench_sizes(s.as_mut_ptr()) };
    let want = [
        size_of::<G1Affine>(),
        size_of::<G1Projective>(),
        size_of::<G2Affine>(),
        size_of::<G2Projective>(),
        size_of::<Canonical>(),
    ];
    ensure!(
        s == want,
        "sppark's types [G1 affine, G1 Jacobian, G2 affine, G2 Jacobian, scalar] are {s:?} \
         bytes, blstrs's {want:?}"
    );
    // SAFETY: no arguments; returns a constant.
    let fr = unsafe { sppark_bench_ntt_fr_size() };
    ensure!(
        fr == size_of::<Scalar>(),
        "sppark's NTT element (host fr_t) is {fr} bytes, blstrs::Scalar {}",
        size_of::<Scalar>()
    );
    Ok(())
}

/// Number of CUDA devices; an error says why none can be counted (no driver, one too old).
pub fn device_count() -> Result<usize> {
    let mut n: c_int = 0;
    // SAFETY: the callee writes one int.
    let rc = unsafe { sppark_bench_device_count(&mut n) };
    match rc {
        0 => {}
        // cudaErrorNoDevice
        100 => return Ok(0),
        // cudaErrorInsufficientDriver: also what the runtime says when no driver loads.
        35 => bail!("no NVIDIA driver loaded, or one older than CUDA 13.0"),
        _ => bail!("cudaGetDeviceCount: {}", cuda_error(rc)),
    }
    Ok(n.max(0) as usize)
}

pub fn device_name() -> Result<String> {
    let mut buf = [0 as c_char; 256];
    // SAFETY: the callee writes at most buf.len() bytes, NUL-terminated.
    let rc = unsafe { sppark_bench_device_name(buf.as_mut_ptr(), buf.len()) };
    if rc != 0 {
        bail!("cudaGetDeviceProperties: {}", cuda_error(rc));
    }
    // SAFETY: NUL-terminated above.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// Host memory page-locked with cudaHostRegister until dropped.
pub struct Pinned {
    ptr: *mut c_void,
}

impl Pinned {
    /// Page-locks the memory of `data` (which must outlive the guard and not move).
    pub fn new<T>(data: &[T]) -> Result<Self> {
        let ptr = data.as_ptr() as *mut c_void;
        // SAFETY: the range is one live allocation; registering does not write to it.
        let rc = unsafe { sppark_bench_pin(ptr, std::mem::size_of_val(data)) };
        if rc != 0 {
            bail!(
                "cudaHostRegister of {} MiB: {}",
                std::mem::size_of_val(data) >> 20,
                cuda_error(rc)
            );
        }
        Ok(Self { ptr })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: ptr was registered by Pinned::new.
        let rc = unsafe { sppark_bench_unpin(self.ptr) };
        if rc != 0 {
            eprintln!(
                "sppark-vs-cuzk: warning: cudaHostUnregister: {}",
                cuda_error(rc)
            );
        }
    }
}

/// Σ scalars[i]·points[i] in G1 by sppark.
pub fn msm_g1(points: &[G1Affine], scalars: &[Canonical]) -> Result<G1Projective> {
    ensure!(points.len() == scalars.len(), "sppark MSM: lengths differ");
    let mut out = G1Projective::identity();
    // SAFETY: G1Affine is #[repr(transparent)] over blst_p1_affine (x, y in Montgomery
    // form) and G1Projective over blst_p1 (Jacobian X, Y, Z in Montgomery form), the
    // layouts of sppark's affine_t and point_t for BLS12-381 (sizes checked by
    // check_layouts); the callee reads n points and n scalars and writes out.
    let err = unsafe {
        sppark_bench_msm_g1(
            &mut out as *mut G1Projective as *mut c_void,
            points.as_ptr() as *const c_void,
            points.len(),
            scalars.as_ptr(),
            size_of::<G1Affine>(),
        )
    };
    if err.code != 0 {
        bail!(
            "sppark G1 MSM of {} points: {err} (code {})",
            points.len(),
            err.code
        );
    }
    Ok(out)
}

/// Σ scalars[i]·points[i] in G2 by sppark.
pub fn msm_g2(points: &[G2Affine], scalars: &[Canonical]) -> Result<G2Projective> {
    ensure!(points.len() == scalars.len(), "sppark MSM: lengths differ");
    let mut out = G2Projective::identity();
    // SAFETY: as in msm_g1, with blst_p2_affine / blst_p2 (Fp2 coordinates as (c0, c1)).
    let err = unsafe {
        sppark_bench_msm_g2(
            &mut out as *mut G2Projective as *mut c_void,
            points.as_ptr() as *const c_void,
            points.len(),
            scalars.as_ptr(),
            size_of::<G2Affine>(),
        )
    };
    if err.code != 0 {
        bail!(
            "sppark G2 MSM of {} points: {err} (code {})",
            points.len(),
            err.code
        );
    }
    Ok(out)
}

/// sppark's largest NTT: 2^ntt_max_log().
pub fn ntt_max_log() -> u32 {
    // SAFETY: no arguments; returns a constant.
    unsafe { sppark_bench_ntt_max_lg() }
}

/// sppark's constants for a 2^lg domain, from its tables (host memory, no GPU): the
/// forward root of unity, the inverse one, and 1/2^lg.
pub fn ntt_constants(lg: u32) -> Result<[Scalar; 3]> {
    let mut out = [Scalar::from(0u64); 3];
    // SAFETY: the callee writes three elements; Scalar is #[repr(transparent)] over
    // blst_fr, four little-endian u64 limbs in Montgomery form, the layout of sppark's
    // host fr_t (size checked by check_layouts).
    let rc = unsafe { sppark_bench_ntt_constants(lg, out.as_mut_ptr()) };
    ensure!(rc == 0, "sppark has no NTT constants for 2^{lg}");
    Ok(out)
}

/// sppark's NTT of `x` in place, natural order in and out (order NN, standard domain):
/// forward, or inverse including 1/n. `x` gets the result of one untimed call; then `runs`
/// more run on the device buffer, and their kernel times (CUDA events, transfers
/// excluded) come back in milliseconds.
pub fn ntt(x: &mut [Scalar], inverse: bool, runs: usize) -> Result<Vec<f32>> {
    ensure!(
        x.len().is_power_of_two() && x.len() >= 2,
        "sppark NTT: length {} is not a power of two ≥ 2",
        x.len()
    );
    let lg = x.len().trailing_zeros();
    ensure!(
        lg <= ntt_max_log(),
        "sppark NTT: 2^{lg} exceeds its largest domain 2^{}",
        ntt_max_log()
    );
    let runs_c = c_int::try_from(runs)?;
    let mut ms = vec![0f32; runs];
    // SAFETY: x holds 2^lg elements in sppark's fr_t layout (see ntt_constants); ms holds
    // `runs` floats.
    let err = unsafe {
        sppark_bench_ntt(
            x.as_mut_ptr(),
            lg,
            inverse as c_int,
            runs_c,
            ms.as_mut_ptr(),
        )
    };
    if err.code != 0 {
        bail!(
            "sppark {} NTT of 2^{lg}: {err} (code {})",
            if inverse { "inverse" } else { "forward" },
            err.code
        );
    }
    Ok(ms)
}
