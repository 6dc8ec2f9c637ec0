//! The developers' crate of cuzk-prove: test data (a really sealed small sector's C1,
//! TEST-ONLY parameters from storage-proofs' own generator), the GPU kernel and witness
//! benchmarks, and the `cuzk-dev` command line. The tests of both crates use it; the
//! product binary does not contain it.

pub mod bench;
pub mod cli;
pub mod fuzz;
pub mod seal;
pub mod subgroup;
pub mod test_params;
