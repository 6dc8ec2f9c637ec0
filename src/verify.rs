//! Verification of the proofs before they are written: a proof that fails is never output.

use anyhow::{bail, Result};
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
