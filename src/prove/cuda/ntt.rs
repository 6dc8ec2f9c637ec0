//! NTT over Fr and the quotient H on the GPU (`cuda/ntt/`, `cuda/groth16/quotient.cu`),
//! computed exactly as the CPU backend's `prove::cpu::fft::quotient`: the same domain,
//! roots, coset generator and truncation, so the two give identical coefficients.

use anyhow::{ensure, Result};

use super::pce_eval::DevicePce;
use super::DeviceScalars;
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};

#[cfg(cuzk_cuda)]
mod ffi {
    use blstrs::Scalar as Fr;
    use std::os::raw::{c_char, c_int, c_uint};

    /// `CuzkPowTables` in cuda/ntt/ntt.cuh: x^e = hi[e >> L] · lo[e & (2^L − 1)] for four x.
    #[repr(C)]
    pub(crate) struct PowTables {
        pub lo: [*const Fr; 4],
        pub hi: [*const Fr; 4],
        pub lo_len: usize,
        pub hi_len: usize,
        pub l: c_uint,
    }

    extern "C" {
        pub(crate) fn cuzk_ntt_quotient(
            a: *const Fr,
            b: *const Fr,
            c: *const Fr,
            n: usize,
            log_m: c_uint,
            tables: PowTables,
            z_inv: *const Fr,
            h: *mut Fr,
            h_set: *mut *mut std::ffi::c_void,
            emulate: c_int,
            ms_compute: *mut f32,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_ntt_quotient_pce(
            pce: *const std::ffi::c_void,
            inputs: *const Fr,
            n_inputs: usize,
            aux: *const std::ffi::c_void,
            log_m: c_uint,
            tables: PowTables,
            z_inv: *const Fr,
            h_set: *mut *mut std::ffi::c_void,
            emulate: c_int,
            ms_eval: *mut f32,
            ms_compute: *mut f32,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_ntt(
            x: *mut Fr,
            log_m: c_uint,
            inverse: c_int,
            tables: PowTables,
            emulate: c_int,
            ms_compute: *mut f32,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
    }
}

/// The primitive 2^log_m-th root of unity the CPU backend uses.
pub fn omega(log_m: u32) -> Fr {
    let mut w = Fr::ROOT_OF_UNITY;
    for _ in log_m..Fr::S {
        w = w.square();
    }
    w
}

/// (lo, hi) with x^e = hi[e >> L] · lo[e & (2^L − 1)] · scale for e < 2^log_m.
fn pow_table(x: Fr, scale: Fr, log_m: u32, l: u32) -> (Vec<Fr>, Vec<Fr>) {
    let mut lo = Vec::with_capacity(1 << l);
    let mut acc = Fr::ONE;
    for _ in 0..1usize << l {
        lo.push(acc);
        acc *= x;
    }
    let step = acc; // x^(2^L)
    let mut hi = Vec::with_capacity(1 << (log_m - l));
    let mut acc = scale;
    for _ in 0..1usize << (log_m - l) {
        hi.push(acc);
        acc *= step;
    }
    (lo, hi)
}

/// The four tables in the order cuda/ntt/ reads them (only the CUDA build reads them).
#[cfg_attr(not(cuzk_cuda), allow(dead_code))]
struct Tables {
    lo: Vec<Vec<Fr>>,
    hi: Vec<Vec<Fr>>,
    l: u32,
}

impl Tables {
    fn new(log_m: u32, bases: [(Fr, Fr); 4]) -> Self {
        let l = log_m.div_ceil(2);
        let (lo, hi) = bases
            .iter()
            .map(|&(x, s)| pow_table(x, s, log_m, l))
            .unzip();
        Tables { lo, hi, l }
    }

    #[cfg(cuzk_cuda)]
    fn ffi(&self) -> ffi::PowTables {
        let ptr = |v: &Vec<Vec<Fr>>, k: usize| v.get(k).map_or(std::ptr::null(), |t| t.as_ptr());
        ffi::PowTables {
            lo: [0, 1, 2, 3].map(|k| ptr(&self.lo, k)),
            hi: [0, 1, 2, 3].map(|k| ptr(&self.hi, k)),
            lo_len: self.lo[0].len(),
            hi_len: self.hi[0].len(),
            l: self.l,
        }
    }
}

/// H's m − 1 coefficients from the A, B, C evaluations (each at most m = the next power
/// of two), and the compute time in milliseconds (host transfers excluded).
pub fn quotient(a: &[Fr], b: &[Fr], c: &[Fr]) -> Result<(Vec<Fr>, f32)> {
    let (h, _, ms) = quotient_on(a, b, c, false, false)?;
    Ok((h, ms))
}

/// [`quotient`] with the kernels' per-thread code run on the host (tests without a GPU).
#[doc(hidden)]
#[cfg(feature = "test-kernels")]
pub fn quotient_emulated(a: &[Fr], b: &[Fr], c: &[Fr]) -> Result<Vec<Fr>> {
    Ok(quotient_on(a, b, c, true, false)?.0)
}

/// [`quotient`] leaving H on the device, where the H MSM reads it (no copy back and forth);
/// `emulate` runs it on the host (tests).
pub fn quotient_to_device(
    a: &[Fr],
    b: &[Fr],
    c: &[Fr],
    emulate: bool,
) -> Result<(DeviceScalars, f32)> {
    let (_, h, ms) = quotient_on(a, b, c, emulate, true)?;
    Ok((h.expect("asked for a device set"), ms))
}

/// The domain of `n` evaluations (log2), and the tables and Z⁻¹ of H's transforms on it.
#[cfg_attr(not(cuzk_cuda), allow(dead_code))]
fn quotient_setup(n: usize) -> Result<(u32, Tables, Fr)> {
    let m = n.max(1).next_power_of_two();
    let log_m = m.trailing_zeros();
    ensure!(log_m <= Fr::S, "domain 2^{log_m} exceeds Fr's two-adicity");
    let w = omega(log_m);
    let g = Fr::MULTIPLICATIVE_GENERATOR;
    let m_inv = Fr::from(m as u64).invert().unwrap();
    let z_inv = (g.pow_vartime([m as u64]) - Fr::ONE).invert().unwrap();
    let tables = Tables::new(
        log_m,
        [
            (w, Fr::ONE),
            (w.invert().unwrap(), Fr::ONE),
            (g, m_inv),
            (g.invert().unwrap(), m_inv),
        ],
    );
    Ok((log_m, tables, z_inv))
}

/// H on the device (as [`quotient_to_device`]) with a, b, c evaluated there from the
/// recording `pce` at the witness: `inputs` from the host, the aux assignment already on
/// the device (`--pce-eval gpu`). Also returns the evaluation's and the transforms'
/// device milliseconds. Fails, naming the row, where the witness does not satisfy the
/// recording.
pub fn quotient_pce_to_device(
    pce: &DevicePce,
    inputs: &[Fr],
    aux: &DeviceScalars,
) -> Result<(DeviceScalars, f32, f32)> {
    ensure!(
        pce.is_emulated() == aux.is_emulated(),
        "the recording and the aux assignment are not in the same memory"
    );
    ensure!(
        pce.pce.constraints() >= 2,
        "a constraint system of {} rows has no quotient to compute",
        pce.pce.constraints()
    );
    let (log_m, tables, z_inv) = quotient_setup(pce.pce.constraints())?;
    #[cfg(cuzk_cuda)]
    {
        let (mut ms_eval, mut ms) = (0f32, 0f32);
        let mut set = std::ptr::null_mut();
        // SAFETY: the handles are live (borrowed for the call) and in the memory `emulate`
        // names; inputs holds n_inputs scalars (the callee checks the count against the
        // recording's); the tables outlive the call.
        super::call(|e, l| unsafe {
            ffi::cuzk_ntt_quotient_pce(
                pce.raw(),
                inputs.as_ptr(),
                inputs.len(),
                aux.raw(),
                log_m,
                tables.ffi(),
                &z_inv,
                &mut set,
                pce.is_emulated() as i32,
                &mut ms_eval,
                &mut ms,
                e,
                l,
            )
        })?;
        let h = DeviceScalars::from_raw(set, (1usize << log_m) - 1, pce.is_emulated());
        Ok((h, ms_eval, ms))
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = (log_m, inputs, tables, z_inv);
        anyhow::bail!(super::NO_CUDA_BUILD)
    }
}

fn quotient_on(
    a: &[Fr],
    b: &[Fr],
    c: &[Fr],
    emulate: bool,
    to_device: bool,
) -> Result<(Vec<Fr>, Option<DeviceScalars>, f32)> {
    ensure!(
        a.len() == b.len() && b.len() == c.len(),
        "A, B, C lengths differ"
    );
    let (log_m, tables, z_inv) = quotient_setup(a.len())?;
    let m = 1usize << log_m;
    let mut h = vec![Fr::ZERO; if to_device { 0 } else { m - 1 }];
    #[cfg(cuzk_cuda)]
    {
        let mut ms = 0f32;
        let mut set = std::ptr::null_mut();
        // SAFETY: a, b, c hold n elements, h holds m − 1 unless the device keeps H (then
        // the callee writes the new set's pointer instead); the tables outlive the call;
        // Scalar is #[repr(transparent)] over blst_fr, the device's Fr layout.
        super::call(|e, l| unsafe {
            ffi::cuzk_ntt_quotient(
                a.as_ptr(),
                b.as_ptr(),
                c.as_ptr(),
                a.len(),
                log_m,
                tables.ffi(),
                &z_inv,
                h.as_mut_ptr(),
                if to_device {
                    &mut set
                } else {
                    std::ptr::null_mut()
                },
                emulate as i32,
                &mut ms,
                e,
                l,
            )
        })?;
        let set = to_device.then(|| DeviceScalars::from_raw(set, m - 1, emulate));
        Ok((h, set, ms))
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = (tables, z_inv, &mut h, emulate, to_device);
        anyhow::bail!(super::NO_CUDA_BUILD)
    }
}

/// In-place NTT (natural order) of a power-of-two vector: evaluations at ω^i from
/// coefficients, or back with `inverse`. Returns the compute milliseconds.
pub fn ntt(x: &mut [Fr], inverse: bool) -> Result<f32> {
    ntt_on(x, inverse, false)
}

/// [`ntt`] run on the host (tests without a GPU).
#[doc(hidden)]
#[cfg(feature = "test-kernels")]
pub fn ntt_emulated(x: &mut [Fr], inverse: bool) -> Result<()> {
    ntt_on(x, inverse, true).map(|_| ())
}

fn ntt_on(x: &mut [Fr], inverse: bool, emulate: bool) -> Result<f32> {
    ensure!(
        x.len().is_power_of_two(),
        "NTT length {} is not a power of two",
        x.len()
    );
    let log_m = x.len().trailing_zeros();
    ensure!(log_m <= Fr::S, "domain 2^{log_m} exceeds Fr's two-adicity");
    let w = omega(log_m);
    let m_inv = Fr::from(x.len() as u64).invert().unwrap();
    let tables = Tables::new(
        log_m,
        [
            (w, Fr::ONE),
            (w.invert().unwrap(), Fr::ONE),
            (Fr::ONE, m_inv),
            (Fr::ONE, Fr::ONE),
        ],
    );
    #[cfg(cuzk_cuda)]
    {
        let mut ms = 0f32;
        // SAFETY: x holds 2^log_m elements; see `quotient`.
        super::call(|e, l| unsafe {
            ffi::cuzk_ntt(
                x.as_mut_ptr(),
                log_m,
                inverse as i32,
                tables.ffi(),
                emulate as i32,
                &mut ms,
                e,
                l,
            )
        })?;
        Ok(ms)
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = (tables, inverse, emulate);
        anyhow::bail!(super::NO_CUDA_BUILD)
    }
}
