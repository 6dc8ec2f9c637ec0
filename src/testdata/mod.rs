//! Test data made locally: a really sealed small sector's C1, synthetic C1s of any sector
//! size, and TEST-ONLY Groth16 parameters (ours and storage-proofs' generator). Nothing
//! here is ever downloaded.

pub mod fixed_base;
pub mod gen_c1;
pub mod gen_params;
pub mod params;
pub mod seal;

/// Printed wherever test parameters are created or used.
pub const TEST_ONLY_NOTICE: &str = "TEST-ONLY parameters: generated locally from a known seed; \
proofs made with them are worthless on chain";

/// Seed of the trapdoor of the test parameters `--gen-test-params` and the tests create,
/// so every machine makes the same files.
pub const TEST_PARAMS_SEED: u64 = 0;
