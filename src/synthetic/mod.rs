//! Inputs made locally, never downloaded: TEST-ONLY Groth16 parameters of production
//! shape (`--gen-test-params`, for trying the prover without the 47 GB download) and
//! valid C1s of any sector size (`cuzk-prove pce` records a circuit from one, since its
//! constraint system does not depend on the sector's data). The developers' tools in
//! dev/ (`cuzk-dev gen-params`, `gen-c1`) and the tests use the same code.

pub(crate) mod fixed_base;
pub mod gen_c1;
pub mod gen_params;
pub mod meta;

/// Printed wherever test parameters are created or used.
pub const TEST_ONLY_NOTICE: &str = "TEST-ONLY parameters: generated locally from a known seed; \
proofs made with them are worthless on chain";

/// Seed of the trapdoor of the test parameters `--gen-test-params` and the tests create,
/// so every machine makes the same files.
pub const TEST_PARAMS_SEED: u64 = 0;
