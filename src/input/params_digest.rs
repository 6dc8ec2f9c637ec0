//! Which key the parameters hold: filecoin-proofs' production key for the circuit, our
//! TEST-ONLY parameters, or something else. filecoin-proofs lists every production
//! `.params` and `.vk` with a digest (storage-proofs-core's parameters.json, for the
//! circuit version this build follows): the first 32 hex digits of the file's BLAKE2b-512.
//! The verifying key (a few KB, the same bytes as the `.params` file's head) is checked
//! on every run; the whole `.params` file (47 GB at 32GiB, about a minute) with
//! `--verify-params` or `FIL_PROOFS_VERIFY_PRODUCTION_PARAMS=1`, as filecoin-proofs does
//! when that variable is set.

use anyhow::{bail, Result};
use storage_proofs_core::parameter_cache::ParameterMap;

/// What the run proves against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyStatus {
    /// The verifying key's digest is filecoin-proofs' for this file name.
    Production,
    /// TEST-ONLY parameters (their `.meta` says so): worthless on chain.
    Test,
    /// Neither: proofs made with it will not verify on chain.
    Unknown,
}

/// filecoin-proofs' digest of `bytes`: BLAKE2b-512, hex, the first 32 digits.
pub fn digest(bytes: &[u8]) -> String {
    digest_chunks(std::iter::once(bytes), |_| {})
}

/// [`digest`] of the concatenated `chunks`, calling `progress` with the bytes hashed so
/// far after each.
pub(crate) fn digest_chunks<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
    mut progress: impl FnMut(usize),
) -> String {
    let mut state = blake2b_simd::Params::new().to_state();
    let mut done = 0;
    for c in chunks {
        state.update(c);
        done += c.len();
        progress(done);
    }
    state.finalize().to_hex()[..32].to_owned()
}

/// The production table for this build's circuit version.
pub fn production() -> &'static ParameterMap {
    &storage_proofs_core::parameter_cache::PARAMETERS
}

/// Classifies the verifying key `vk` of the parameters whose `.vk` file is named
/// `vk_name`, against `table` (the production one: [`production`]).
pub(crate) fn key_status(
    vk_name: &str,
    vk: &[u8],
    test_only: bool,
    table: &ParameterMap,
) -> KeyStatus {
    match table.get(vk_name) {
        Some(entry) if entry.digest == digest(vk) => KeyStatus::Production,
        _ if test_only => KeyStatus::Test,
        _ => KeyStatus::Unknown,
    }
}

/// `--verify-params`: the whole file's digest against the table's entry for its name.
pub(crate) fn verify_file(
    name: &str,
    bytes: &[u8],
    table: &ParameterMap,
    progress: impl FnMut(usize),
) -> Result<()> {
    let Some(entry) = table.get(name) else {
        bail!(
            "--verify-params: {name} is not one of filecoin-proofs' production parameter \
             files: there is no digest to check it against"
        );
    };
    let got = digest_chunks(bytes.chunks(64 << 20), progress);
    if got != entry.digest {
        bail!(
            "parameters {name} do not match filecoin-proofs' digest ({got} instead of {}): a \
             partial or damaged download? fetch them again",
            entry.digest
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_proofs_core::parameter_cache::ParameterData;

    fn table(name: &str, digest: String) -> ParameterMap {
        let entry = ParameterData {
            cid: "test".into(),
            digest,
            sector_size: 2048,
        };
        ParameterMap::from([(name.to_owned(), entry)])
    }

    #[test]
    fn the_digest_is_filecoin_proofs_blake2b_prefix() {
        // BLAKE2b-512 of "abc" (RFC 7693, appendix A), first 32 hex digits.
        assert_eq!(digest(b"abc"), "ba80a53f981c4d0d6a2797b69f12f6e9");
        let chunks = [&b"a"[..], b"bc"];
        let mut seen = Vec::new();
        assert_eq!(digest_chunks(chunks, |n| seen.push(n)), digest(b"abc"));
        assert_eq!(seen, [1, 3]);
    }

    #[test]
    fn key_status_by_table_and_label() {
        let vk = b"a verifying key".to_vec();
        let t = table("x.vk", digest(&vk));
        assert_eq!(key_status("x.vk", &vk, false, &t), KeyStatus::Production);
        assert_eq!(key_status("x.vk", &vk, true, &t), KeyStatus::Production);
        assert_eq!(key_status("y.vk", &vk, true, &t), KeyStatus::Test);
        let mut tampered = vk.clone();
        tampered[0] ^= 1;
        assert_eq!(key_status("x.vk", &tampered, false, &t), KeyStatus::Unknown);
        assert_eq!(key_status("x.vk", &tampered, true, &t), KeyStatus::Test);
    }

    #[test]
    fn the_production_table_lists_the_32gib_key() {
        let t = production();
        let name = "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-\
                    sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820";
        assert!(t.contains_key(&format!("{name}.vk")));
        assert!(t.contains_key(&format!("{name}.params")));
    }

    #[test]
    fn verify_file_checks_the_whole_file() {
        let bytes = vec![7u8; 1000];
        let t = table("p.params", digest(&bytes));
        verify_file("p.params", &bytes, &t, |_| {}).unwrap();
        let e = verify_file("p.params", &bytes[..999], &t, |_| {}).unwrap_err();
        assert!(e.to_string().contains("do not match"), "{e}");
        let e = verify_file("q.params", &bytes, &t, |_| {}).unwrap_err();
        assert!(e.to_string().contains("no digest"), "{e}");
    }
}
