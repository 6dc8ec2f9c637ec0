//! Element-wise base-field kernels (`cuda/field/fp_test.cu`), exposed so tests can hold
//! the device's Fp and Fp2 arithmetic, on which the MSM is built, against blst.

use anyhow::{ensure, Result};
use blst::{blst_fp, blst_fp2};

#[cfg(cuzk_cuda)]
mod ffi {
    use std::os::raw::{c_char, c_int, c_void};
    extern "C" {
        pub fn cuzk_fp_ops(
            a: *const c_void,
            b: *const c_void,
            out: *mut c_void,
            n: usize,
            emulate: c_int,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub fn cuzk_fp2_ops(
            a: *const c_void,
            b: *const c_void,
            out: *mut c_void,
            n: usize,
            emulate: c_int,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
    }
}

/// Results of [`fp_ops`] / [`fp2_ops`], element-wise.
pub struct FieldOps<T> {
    pub mul: Vec<T>,
    pub sqr: Vec<T>,
    pub add: Vec<T>,
    pub sub: Vec<T>,
    pub neg: Vec<T>,
}

impl<T> FieldOps<T> {
    fn split(mut out: Vec<T>, n: usize) -> Self {
        let neg = out.split_off(4 * n);
        let sub = out.split_off(3 * n);
        let add = out.split_off(2 * n);
        let sqr = out.split_off(n);
        FieldOps {
            mul: out,
            sqr,
            add,
            sub,
            neg,
        }
    }
}

/// a·b, a², a+b, a−b, −a over Fp (Montgomery, blst layout) on the GPU, or with `emulate`
/// the same device code run on the host.
#[doc(hidden)]
pub fn fp_ops(a: &[blst_fp], b: &[blst_fp], emulate: bool) -> Result<FieldOps<blst_fp>> {
    ensure!(a.len() == b.len(), "fp_ops: lengths differ");
    #[cfg(cuzk_cuda)]
    {
        let n = a.len();
        let mut out = vec![blst_fp::default(); 5 * n];
        // SAFETY: blst_fp is six u64 limbs, the device's Fp; a and b hold n elements, out 5n.
        super::call(|e, l| unsafe {
            ffi::cuzk_fp_ops(
                a.as_ptr() as *const _,
                b.as_ptr() as *const _,
                out.as_mut_ptr() as *mut _,
                n,
                emulate as i32,
                e,
                l,
            )
        })?;
        Ok(FieldOps::split(out, n))
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = emulate;
        anyhow::bail!(super::NO_CUDA_BUILD)
    }
}

/// [`fp_ops`] over Fp2.
#[doc(hidden)]
pub fn fp2_ops(a: &[blst_fp2], b: &[blst_fp2], emulate: bool) -> Result<FieldOps<blst_fp2>> {
    ensure!(a.len() == b.len(), "fp2_ops: lengths differ");
    #[cfg(cuzk_cuda)]
    {
        let n = a.len();
        let mut out = vec![blst_fp2::default(); 5 * n];
        // SAFETY: blst_fp2 is two blst_fp (c0, c1), the device's Fp2; sizes as above.
        super::call(|e, l| unsafe {
            ffi::cuzk_fp2_ops(
                a.as_ptr() as *const _,
                b.as_ptr() as *const _,
                out.as_mut_ptr() as *mut _,
                n,
                emulate as i32,
                e,
                l,
            )
        })?;
        Ok(FieldOps::split(out, n))
    }
    #[cfg(not(cuzk_cuda))]
    {
        let _ = emulate;
        anyhow::bail!(super::NO_CUDA_BUILD)
    }
}
