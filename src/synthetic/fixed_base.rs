//! Bulk fixed-base scalar multiplication k·G for millions of scalars k, one generic body
//! for G1 and G2.
//!
//! Window tables hold d·2^(w·i)·G in affine form. A batch of scalars walks the windows
//! together with affine accumulators, and each window's additions share one field
//! inversion (Montgomery's trick): about 6 field multiplications per addition instead of
//! the ~15 of a constant-time mixed addition. Results come out affine, ready to write.

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

/// An affine point type with coordinates in `F`.
pub(crate) trait AffinePoint: PrimeCurveAffine<Scalar = Fr> + Send + Sync + Copy {
    type F: Field;
    type Proj: Group<Scalar = Fr> + Curve<AffineRepr = Self> + Send + Sync + Copy;
    fn xy(&self) -> (Self::F, Self::F);
    fn from_xy(x: Self::F, y: Self::F) -> Self;
    /// a + b by the general (slow) formulas; `None` for the identity.
    fn add_slow(a: Self, b: Self) -> Option<Self>;
    fn batch_affine(points: &[Self::Proj]) -> Vec<Self>;
}

impl AffinePoint for G1Affine {
    type F = Fp;
    type Proj = G1Projective;
    fn xy(&self) -> (Fp, Fp) {
        (self.x(), self.y())
    }
    fn from_xy(x: Fp, y: Fp) -> Self {
        G1Affine::from_raw_unchecked(x, y, false)
    }
    fn add_slow(a: Self, b: Self) -> Option<Self> {
        let s = G1Projective::from(a) + b;
        (!bool::from(s.is_identity())).then(|| s.to_affine())
    }
    fn batch_affine(points: &[G1Projective]) -> Vec<Self> {
        let mut out = vec![G1Affine::identity(); points.len()];
        if points.is_empty() {
            return out;
        }
        let ptrs: [*const blst::blst_p1; 2] = [points.as_ptr() as *const _, std::ptr::null()];
        // SAFETY: G1Projective / G1Affine are #[repr(transparent)] over blst's types; blst
        // reads `points.len()` contiguous points from the first pointer.
        unsafe {
            blst::blst_p1s_to_affine(out.as_mut_ptr() as *mut _, ptrs.as_ptr(), points.len())
        };
        out
    }
}

impl AffinePoint for G2Affine {
    type F = Fp2;
    type Proj = G2Projective;
    fn xy(&self) -> (Fp2, Fp2) {
        (self.x(), self.y())
    }
    fn from_xy(x: Fp2, y: Fp2) -> Self {
        G2Affine::from_raw_unchecked(x, y, false)
    }
    fn add_slow(a: Self, b: Self) -> Option<Self> {
        let s = G2Projective::from(a) + b;
        (!bool::from(s.is_identity())).then(|| s.to_affine())
    }
    fn batch_affine(points: &[G2Projective]) -> Vec<Self> {
        let mut out = vec![G2Affine::identity(); points.len()];
        if points.is_empty() {
            return out;
        }
        let ptrs: [*const blst::blst_p2; 2] = [points.as_ptr() as *const _, std::ptr::null()];
        // SAFETY: as for G1.
        unsafe {
            blst::blst_p2s_to_affine(out.as_mut_ptr() as *mut _, ptrs.as_ptr(), points.len())
        };
        out
    }
}

/// Signed windows of WINDOW bits: digits in [−2^(WINDOW−1), 2^(WINDOW−1)], so a row holds
/// 2^(WINDOW−1) multiples and a negative digit negates y for free.
const WINDOW: usize = 16;
/// Scalars are below 2^255, so the top window holds at most 2^(WINDOW−1) − 1 plus a carry:
/// no carry leaves it.
const WINDOWS: usize = 255usize.div_ceil(WINDOW);
const HALF: i32 = 1 << (WINDOW - 1);
/// Scalars per batch: enough to amortise the inversion, small enough for cache.
const BATCH: usize = 512;

/// rows[i][d − 1] = d · 2^(WINDOW·i) · G for 1 ≤ d ≤ 2^(WINDOW−1).
pub(crate) struct FixedBase<A: AffinePoint> {
    rows: Vec<Vec<A>>,
}

/// The signed base-2^WINDOW digits of a scalar, least significant first.
fn signed_digits(k: &Fr) -> [i32; WINDOWS] {
    let bytes = k.to_bytes_le();
    let mut out = [0i32; WINDOWS];
    let mut carry = 0i32;
    for (w, d) in out.iter_mut().enumerate() {
        let bit = w * WINDOW;
        let mut raw = 0u32;
        for k in 0..3 {
            let byte = bit / 8 + k;
            if byte < 32 {
                raw |= (bytes[byte] as u32) << (8 * k);
            }
        }
        let v = ((raw >> (bit % 8)) & ((1 << WINDOW) - 1)) as i32 + carry;
        (*d, carry) = if v > HALF {
            (v - (1 << WINDOW), 1)
        } else {
            (v, 0)
        };
    }
    debug_assert_eq!(carry, 0);
    out
}

impl<A: AffinePoint> FixedBase<A> {
    /// Tables for the group's standard generator.
    pub fn new() -> Self {
        let mut base = A::Proj::generator();
        let mut rows = Vec::with_capacity(WINDOWS);
        for _ in 0..WINDOWS {
            let mut row = Vec::with_capacity(HALF as usize);
            let mut acc = base;
            for _ in 0..HALF {
                row.push(acc);
                acc += base;
            }
            // acc = (2^(WINDOW−1) + 1)·base; the next row's base is 2^WINDOW · base.
            base = row[HALF as usize - 1].double();
            rows.push(A::batch_affine(&row));
        }
        Self { rows }
    }

    /// k·G for every k, in order, in affine form (identity for k = 0).
    pub(crate) fn mul_many(&self, scalars: &[Fr]) -> Vec<A> {
        let mut out = vec![A::identity(); scalars.len()];
        out.par_chunks_mut(BATCH)
            .zip(scalars.par_chunks(BATCH))
            .for_each(|(out, ks)| self.batch(ks, out));
        out
    }

    fn batch(&self, ks: &[Fr], out: &mut [A]) {
        let n = ks.len();
        let digits: Vec<[i32; WINDOWS]> = ks.iter().map(signed_digits).collect();
        let mut acc: Vec<Option<(A::F, A::F)>> = vec![None; n];
        // Lanes adding this window: (lane, table point), and the x-differences to invert.
        let mut lanes: Vec<(usize, A::F, A::F)> = Vec::with_capacity(n);
        let mut dens: Vec<A::F> = Vec::with_capacity(n);
        for (w, row) in self.rows.iter().enumerate() {
            lanes.clear();
            dens.clear();
            // The batch's table reads are random within a 3 MB row: request them all
            // first so their cache misses overlap instead of stalling one by one.
            #[cfg(target_arch = "x86_64")]
            for dj in &digits {
                let d = dj[w];
                if d != 0 {
                    let p = &row[d.unsigned_abs() as usize - 1] as *const A as *const i8;
                    // SAFETY: a prefetch of a valid address has no effect but on the cache.
                    unsafe {
                        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                        _mm_prefetch(p, _MM_HINT_T0);
                        _mm_prefetch(p.add(64), _MM_HINT_T0);
                    }
                }
            }
            for j in 0..n {
                let d = digits[j][w];
                if d == 0 {
                    continue;
                }
                let (tx, ty) = row[d.unsigned_abs() as usize - 1].xy();
                let ty = if d < 0 { -ty } else { ty };
                match acc[j] {
                    None => acc[j] = Some((tx, ty)),
                    Some((ax, ay)) if ax == tx => {
                        // Doubling or cancellation: rare, done the slow way.
                        let t = A::from_xy(tx, ty);
                        acc[j] = A::add_slow(A::from_xy(ax, ay), t).map(|p| p.xy());
                    }
                    Some((ax, _)) => {
                        lanes.push((j, tx, ty));
                        dens.push(tx - ax);
                    }
                }
            }
            batch_invert(&mut dens);
            for (&(j, tx, ty), inv) in lanes.iter().zip(&dens) {
                let (ax, ay) = acc[j].unwrap();
                let lambda = (ty - ay) * inv;
                let x3 = lambda.square() - ax - tx;
                let y3 = lambda * (ax - x3) - ay;
                acc[j] = Some((x3, y3));
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            if let Some((x, y)) = a {
                *o = A::from_xy(x, y);
            }
        }
    }
}

impl<A: AffinePoint> Default for FixedBase<A> {
    fn default() -> Self {
        Self::new()
    }
}

/// Montgomery's trick: inverts every element (all non-zero) with one field inversion.
fn batch_invert<F: Field>(v: &mut [F]) {
    if v.is_empty() {
        return;
    }
    let mut prefix = Vec::with_capacity(v.len());
    let mut acc = F::ONE;
    for x in v.iter() {
        prefix.push(acc);
        acc *= x;
    }
    let mut inv = acc.invert().unwrap();
    for (x, p) in v.iter_mut().zip(prefix).rev() {
        let next = inv * *x;
        *x = inv * p;
        inv = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn check<A: AffinePoint>() {
        let table = FixedBase::<A>::new();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut ks: Vec<Fr> = (0..1500).map(|_| Fr::random(&mut rng)).collect();
        ks[3] = Fr::ZERO;
        ks[4] = Fr::ONE;
        ks[5] = -Fr::ONE;
        ks[6] = Fr::from(1u64 << 15);
        ks[7] = Fr::from((1u64 << 15) + 1);
        ks[8] = Fr::from((1u64 << 16) - 1);
        ks[9] = -Fr::from(1u64 << 15);
        let got = table.mul_many(&ks);
        for (k, p) in ks.iter().zip(&got) {
            assert_eq!(*p, (A::Proj::generator() * k).to_affine(), "k = {k:?}");
        }
    }

    #[test]
    fn g1_and_g2_match_scalar_multiplication() {
        check::<G1Affine>();
        check::<G2Affine>();
    }
}
