//! cuzk-prove: a single-shot Groth16 prover for Filecoin PoRep commit phase 2.
//!
//! The pipeline, one module each: [`input`] (C1, SRS) → [`circuit`] → [`synth`] →
//! [`prove`] (backend: cpu or cuda) → [`verify`] and [`output`] → [`report`]; [`pipeline`]
//! runs them in order, [`cli`] turns flags into a validated [`cli::Config`]. [`synthetic`]
//! makes TEST-ONLY parameters and C1s locally. The developers' tools (test data,
//! benchmarks) are the `cuzk-dev` crate in dev/.

pub mod circuit;
pub mod cli;
pub mod huge_pages;
pub mod input;
pub mod output;
pub mod panics;
pub mod pipeline;
pub mod prove;
pub mod report;
pub mod signals;
pub mod synth;
pub mod synthetic;
pub mod verify;
