//! Inputs: the C1 JSON and the memory-mapped SRS.

pub mod c1;
pub(crate) mod params_digest;
pub mod srs;
