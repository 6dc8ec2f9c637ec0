//! Test data made locally: a really sealed small sector's C1, and TEST-ONLY Groth16
//! parameters from storage-proofs' own generator. Nothing here is ever downloaded.

pub mod params;
pub mod seal;

/// Printed wherever test parameters are created or used.
pub const TEST_ONLY_NOTICE: &str = "TEST-ONLY parameters: generated locally from a known seed; \
proofs made with them are worthless on chain";
