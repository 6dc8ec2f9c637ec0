//! Verification of the proofs before they are written: a proof that fails is never output.
//!
//! Two checks. [`verify`] is the Groth16 verification (a pairing product per partition,
//! on by default; `--no-verify` skips it). [`check_subgroups`] always runs: each proof's
//! A and C must be in G1 and B in G2. A proof outside them is refused by every verifier
//! when it is decoded (the chain's included), so writing one would only lose the sector's
//! time later. Its likely cause is parameter points on the curve but outside their
//! subgroup: the point decoders check flags, range and curve but not the subgroup, as
//! bellperson's reader of mapped parameters does, since checking every point costs far
//! more than the proof (docs/PERF.md); the three points of each proof cost microseconds.

use anyhow::{bail, ensure, Result};
use bellperson::groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar as Fr};

/// Verifies each partition proof against the public inputs built from the C1.
pub fn verify(
    vk: &VerifyingKey<Bls12>,
    proofs: &[(usize, Proof<Bls12>)],
    inputs: &[Vec<Fr>],
) -> Result<()> {
    let pvk = prepare_verifying_key(vk);
    for ((k, proof), inputs) in proofs.iter().zip(inputs) {
        match verify_proof(&pvk, proof, inputs) {
            Ok(true) => {}
            Ok(false) => bail!("the proof of partition {k} does not verify; nothing written"),
            Err(e) => bail!("cannot verify the proof of partition {k}: {e}"),
        }
    }
    Ok(())
}

/// Fails, naming the partition and the point, unless every proof's A and C are in G1 and
/// its B in G2 (on the curve and in the prime-order subgroup).
pub fn check_subgroups(proofs: &[(usize, Proof<Bls12>)]) -> Result<()> {
    for (k, p) in proofs {
        let checks = [
            ("A", bool::from(p.a.is_on_curve() & p.a.is_torsion_free())),
            ("B", bool::from(p.b.is_on_curve() & p.b.is_torsion_free())),
            ("C", bool::from(p.c.is_on_curve() & p.c.is_torsion_free())),
        ];
        for (name, ok) in checks {
            ensure!(
                ok,
                "the proof of partition {k} has its point {name} outside its subgroup: the \
                 parameters hold points that are not in their subgroup (damaged or forged \
                 parameters), or the prover faulted; nothing written"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine};
    use ff::Field;
    use group::{prime::PrimeCurveAffine, Curve, Group};

    /// A point of E(Fp): y² = x³ + 4, outside G1 (the cofactor is ≈ 2^125, so a point
    /// found from an x is in G1 with negligible chance; asserted below).
    fn outside_g1() -> G1Affine {
        let mut x = Fp::from(1u64);
        loop {
            let y2 = x.square() * x + Fp::from(4u64);
            if let Some(y) = Option::<Fp>::from(y2.sqrt()) {
                let p = G1Affine::from_raw_unchecked(x, y, false);
                assert!(bool::from(p.is_on_curve()));
                assert!(!bool::from(p.is_torsion_free()));
                return p;
            }
            x += Fp::ONE;
        }
    }

    /// A point of E'(Fp2): y² = x³ + 4(1 + i), outside G2 (likewise).
    fn outside_g2() -> G2Affine {
        let mut x = Fp2::new(Fp::ONE, Fp::ONE);
        let four = Fp2::new(Fp::from(4u64), Fp::from(4u64));
        loop {
            let y2 = x.square() * x + four;
            if let Some(y) = Option::<Fp2>::from(y2.sqrt()) {
                let p = G2Affine::from_raw_unchecked(x, y, false);
                assert!(bool::from(p.is_on_curve()));
                assert!(!bool::from(p.is_torsion_free()));
                return p;
            }
            x += Fp2::ONE;
        }
    }

    fn proof(a: G1Affine) -> Proof<Bls12> {
        Proof {
            a,
            b: G2Affine::generator(),
            c: (G1Projective::generator() * Fr::from(7u64)).to_affine(),
        }
    }

    #[test]
    fn points_in_their_subgroups_pass() {
        let a = G1Projective::random(&mut rand_core::OsRng).to_affine();
        check_subgroups(&[(0, proof(a)), (1, proof(G1Affine::generator()))]).unwrap();
    }

    #[test]
    fn a_point_outside_g1_is_refused_naming_partition_and_point() {
        let good = proof(G1Affine::generator());
        let mut bad = proof(outside_g1());
        let e = check_subgroups(&[(0, good.clone()), (3, bad.clone())]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("the proof of partition 3 has its point A outside its subgroup"),
            "{e}"
        );
        (bad.a, bad.c) = (good.a, outside_g1());
        let e = check_subgroups(&[(5, bad.clone())]).unwrap_err();
        assert!(e.to_string().contains("partition 5 has its point C"), "{e}");
        (bad.c, bad.b) = (good.c, outside_g2());
        let e = check_subgroups(&[(0, bad)]).unwrap_err();
        assert!(e.to_string().contains("partition 0 has its point B"), "{e}");
    }
}
