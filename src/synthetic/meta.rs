//! The metadata file written beside a test C1 (`gen-c1`, `seal-test-c1`): what
//! filecoin-proofs' `verify_seal` needs to check a proof of it independently.

use anyhow::Result;

/// What a test needs to verify a proof of the fixture independently.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    pub registered_proof: String,
    pub miner_id: u64,
    pub prover_id: String,
    pub sector_num: u64,
    pub ticket: String,
    pub seed: String,
    pub comm_r: String,
    pub comm_d: String,
    /// The `gen-c1 --seed` a synthetic C1 was made from (absent for really sealed ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gen_c1_seed: Option<String>,
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex32(s: &str) -> Result<[u8; 32]> {
    anyhow::ensure!(s.len() == 64, "expected 64 hex digits, got {}", s.len());
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)?;
    }
    Ok(out)
}
