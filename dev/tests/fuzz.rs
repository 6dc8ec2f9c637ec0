//! The mutation harness in CI: a few thousand runs per reader (the C1 parser and check,
//! the parameter header, the recording loader), no crash allowed. The long campaigns
//! (≥ 1 M runs per target) are run with `cuzk-dev fuzz` and reported in docs/PERF.md.

use std::path::{Path, PathBuf};

use cuzk_dev::fuzz::{run, Target};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The 2KiB TEST-ONLY parameters the product's tests use (made here if missing).
fn params_2kib() -> PathBuf {
    let dir = std::env::var_os("CUZK_TEST_PARAMS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/test-params"));
    let proof = cuzk_prove::input::c1::parse_registered_proof("StackedDrg2KiBV1_1").unwrap();
    let path = cuzk_prove::input::srs::cache_paths(proof, &dir)
        .unwrap()
        .params;
    if !path.exists() {
        let seed = Some(cuzk_prove::synthetic::TEST_PARAMS_SEED);
        cuzk_prove::synthetic::gen_params::generate(proof, &dir, seed).unwrap();
    }
    path
}

fn campaign(target: Target, input: Option<&Path>, runs: usize) {
    let crashes = root().join("target/test-scratch/fuzz-crashes");
    let o = run(target, input, runs, 0, 29, &crashes).unwrap();
    assert_eq!(o.runs, runs);
    assert_eq!(
        o.crashes,
        0,
        "{target:?}: crashing inputs in {}",
        crashes.display()
    );
    // The mutations reach past the first check: some inputs are still accepted.
    assert!(o.accepted > 0 && o.accepted < runs, "{target:?}: {o:?}");
}

#[test]
fn c1_parser_and_check() {
    campaign(
        Target::C1,
        Some(&root().join("testdata/2kib/c1.json")),
        2000,
    );
}

#[test]
fn parameter_header() {
    campaign(Target::Params, Some(&params_2kib()), 4000);
}

#[test]
fn recording_loader() {
    campaign(Target::Pce, None, 4000);
}
