//! Element-wise base-field kernels (`cuda/ff/fp_test.cu`), exposed so tests can hold
//! the device's Fp and Fp2 arithmetic, on which the MSM is built, against blst.

use anyhow::{ensure, Result};
use blst::{blst_fp, blst_fp2};

#[cfg(cuzk_cuda)]
mod ffi {
    use std::os::raw::{c_char, c_int, c_void};
    pub(crate) type OpsFn = unsafe extern "C" fn(
        a: *const c_void,
        b: *const c_void,
        out: *mut c_void,
        n: usize,
        emulate: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    extern "C" {
        pub(crate) fn cuzk_fp_ops(
            a: *const c_void,
            b: *const c_void,
            out: *mut c_void,
            n: usize,
            emulate: c_int,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int;
        pub(crate) fn cuzk_fp2_ops(
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
    /// a·b − a², by the lazily reduced difference of products the curve formulas use.
    pub mul_sub: Vec<T>,
}

impl<T> FieldOps<T> {
    #[cfg_attr(not(cuzk_cuda), allow(dead_code))]
    fn split(mut out: Vec<T>, n: usize) -> Self {
        let mul_sub = out.split_off(5 * n);
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
            mul_sub,
        }
    }
}

/// The two base-field element types the kernels serve (blst layouts: Fp six u64 limbs,
/// Fp2 two of them), each with its element-wise entry point.
trait DeviceField: Copy + Default {
    const NAME: &'static str;
    #[cfg(cuzk_cuda)]
    const FFI: ffi::OpsFn;
}

impl DeviceField for blst_fp {
    const NAME: &'static str = "fp_ops";
    #[cfg(cuzk_cuda)]
    const FFI: ffi::OpsFn = ffi::cuzk_fp_ops;
}

impl DeviceField for blst_fp2 {
    const NAME: &'static str = "fp2_ops";
    #[cfg(cuzk_cuda)]
    const FFI: ffi::OpsFn = ffi::cuzk_fp2_ops;
}

fn ops<T: DeviceField>(a: &[T], b: &[T], emulate: bool) -> Result<FieldOps<T>> {
    ensure!(a.len() == b.len(), "{}: lengths differ", T::NAME);
    #[cfg(cuzk_cuda)]
    {
        let n = a.len();
        let mut out = vec![T::default(); 6 * n];
        // SAFETY: T is blst_fp or blst_fp2 (DeviceField is private), the device's Fp /
        // Fp2 layout; a and b hold n elements, out 6n.
        super::call(|e, l| unsafe {
            T::FFI(
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

/// a·b, a², a+b, a−b, −a, a·b − a² over Fp (Montgomery, blst layout) on the GPU, or with `emulate`
/// the same device code run on the host.
#[doc(hidden)]
pub fn fp_ops(a: &[blst_fp], b: &[blst_fp], emulate: bool) -> Result<FieldOps<blst_fp>> {
    ops(a, b, emulate)
}

/// [`fp_ops`] over Fp2.
#[doc(hidden)]
pub fn fp2_ops(a: &[blst_fp2], b: &[blst_fp2], emulate: bool) -> Result<FieldOps<blst_fp2>> {
    ops(a, b, emulate)
}
