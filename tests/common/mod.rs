//! Shared test helpers: the bundled 2KiB fixture and locally generated TEST-ONLY parameters.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use cuzk_prove::synthetic::meta::Meta;

pub const BIN: &str = env!("CARGO_BIN_EXE_cuzk-prove");

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture_c1() -> PathBuf {
    root().join("testdata/2kib/c1.json")
}

pub fn fixture_meta() -> Meta {
    let bytes = std::fs::read(root().join("testdata/2kib/meta.json")).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The TEST-ONLY parameter cache shared by the tests and the README's main command
/// (`target/test-params`, or `$CUZK_TEST_PARAMS`), generated on first use with
/// `cuzk-dev gen-params` and the same seed `--gen-test-params` uses (storage-proofs'
/// generator makes the same shape, minutes slower: see tests/gen_params.rs). Also points
/// filecoin-proofs' own verifier at it.
pub fn param_cache() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::var_os("CUZK_TEST_PARAMS")
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target/test-params"));
        let proof = cuzk_prove::input::c1::parse_registered_proof("StackedDrg2KiBV1_1").unwrap();
        if !cuzk_prove::input::srs::cache_paths(proof, &dir)
            .unwrap()
            .params
            .exists()
        {
            generate_params(proof, &dir);
        }
        // filecoin-proofs reads its settings once per process, from the environment.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        dir
    })
}

/// Makes sure the TEST-ONLY parameters of `proof` are in [`param_cache`],
/// generating them with `cuzk-dev gen-params` if missing (8MiB: ~2 min on 2 cores).
pub fn ensure_params(proof: &str) -> &'static Path {
    let dir = param_cache();
    let registered = cuzk_prove::input::c1::parse_registered_proof(proof).unwrap();
    if !cuzk_prove::input::srs::cache_paths(registered, dir)
        .unwrap()
        .params
        .exists()
    {
        generate_params(registered, dir);
    }
    dir
}

/// `cuzk-dev gen-params` in this process, with the seed `--gen-test-params` uses.
fn generate_params(proof: filecoin_proofs_api::RegisteredSealProof, dir: &Path) {
    let seed = Some(cuzk_prove::synthetic::TEST_PARAMS_SEED);
    if let Err(e) = cuzk_prove::synthetic::gen_params::generate(proof, dir, seed) {
        panic!("{proof:?} test parameter generation failed: {e:#}");
    }
}

/// Removes the TEST-ONLY parameters of `proof` (and the recording beside them) from
/// [`param_cache`] when
/// `$CUZK_TEST_PRUNE_PARAMS` is set (`.ci/run` sets it): the 8MiB and 512MiB sets are
/// 1.1 and 2.1 GB, used by one test each there, and CI's disk is at times nearly full.
/// Never the 2KiB set, which most tests share.
pub fn prune_params(proof: &str) {
    if std::env::var_os("CUZK_TEST_PRUNE_PARAMS").is_none() || proof == "StackedDrg2KiBV1_1" {
        return;
    }
    let registered = cuzk_prove::input::c1::parse_registered_proof(proof).unwrap();
    let p = cuzk_prove::input::srs::cache_paths(registered, param_cache()).unwrap();
    let pce = p.params.with_extension("pce"); // the recording a plain run keeps beside
    for f in [p.params, p.vk, p.meta, pce] {
        let _ = std::fs::remove_file(f);
    }
}

pub fn params_file() -> PathBuf {
    let proof = cuzk_prove::input::c1::parse_registered_proof("StackedDrg2KiBV1_1").unwrap();
    cuzk_prove::input::srs::cache_paths(proof, param_cache())
        .unwrap()
        .params
}

pub fn scratch(name: &str) -> PathBuf {
    let d = root()
        .join("target/test-scratch")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// cuzk-prove with `args`; its temporary directory (where bellperson's GPU lock files
/// are) its own, so that the tests running at once on a GPU host do not wait for each
/// other's lock and say so.
pub fn run(args: &[&std::ffi::OsStr]) -> Output {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = root()
        .join("target/test-scratch/tmp")
        .join(format!("{}-{n}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    Command::new(BIN)
        .args(args)
        .env("TMPDIR", &tmp)
        .env_remove("FIL_PROOFS_PARAMETER_CACHE")
        .output()
        .expect("run cuzk-prove")
}

/// filecoin-proofs' own verifier on a proof of the fixture.
pub fn verify_seal(meta: &Meta, proof: &[u8]) -> bool {
    use cuzk_prove::synthetic::meta::unhex32;
    param_cache();
    let registered = cuzk_prove::input::c1::parse_registered_proof(&meta.registered_proof).unwrap();
    filecoin_proofs_api::seal::verify_seal(
        registered,
        unhex32(&meta.comm_r).unwrap(),
        unhex32(&meta.comm_d).unwrap(),
        unhex32(&meta.prover_id).unwrap(),
        filecoin_proofs_api::SectorId::from(meta.sector_num),
        unhex32(&meta.ticket).unwrap(),
        unhex32(&meta.seed).unwrap(),
        proof,
    )
    .unwrap_or(false)
}

/// The 2KiB fixture's proof with the test parameters of `TEST_PARAMS_SEED` and r, s drawn
/// from `rng_seed` 5, as of the architecture step (issue 27). The tests that prove the
/// fixture in process with seed 5 (tests/e2e.rs, pce.rs, native_label.rs) compare against
/// it rather than proving a second time to compare with, and bellperson's proof with the
/// same r, s must equal it (tests/equivalence.rs). A change of a byte changed the prover.
pub const GOLDEN_2KIB_SEED_5: &str = "8df192bbadc15bcc2ba50d92382e612afc7abc77cd8be7b8706a839844454c614bb0cce485e0a5a86e89b17ac8477a218ee73da98b7366997a70197129a2377f1e7e0fe8aa2c5dbbc652dc1da592f1336c0d2a51ca54e195f05b19fcde8ee5b316bc8a88e9a21042d5e3395c5e68769975e635bf052d55fee1c1bd868bdd91669ad930665acfcdfb4c12a05c9955a65787f76476d99822d9f9e719205830f02aa0965b3e77745f4b758076d97c0d6f819fdaa5f086867419881fff9dba2f391f";

/// `proof` in lower-case hex, to compare with [`GOLDEN_2KIB_SEED_5`].
pub fn hex(proof: &[u8]) -> String {
    proof.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the GPU tests can run here: false (printing SKIPPED and why) without a CUDA
/// build or without a device; a failing device query is a test failure.
pub fn gpu_or_skip() -> bool {
    use cuzk_prove::prove::cuda;
    use std::io::Write;
    // Straight to the process's stderr: libtest captures eprintln! of passing tests, and a
    // skip must show in the CI log.
    let skip = |why: &str| {
        let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
        false
    };
    if !cuda::built() {
        return skip("built without CUDA (nvcc not found)");
    }
    match cuda::device_count() {
        Ok(0) => skip("no CUDA device"),
        Ok(_) => true,
        Err(e) => panic!("CUDA device query failed: {e}"),
    }
}

/// For checks of a path an environment variable selects (read once a process): runs the
/// test `name` of this test binary again in a child process with `var=value` and asserts
/// it passed. Returns false in that child (var set), where the caller runs its checks.
pub fn rerun_with_env(name: &str, var: &str, value: &str) -> bool {
    rerun_with_env_stderr(name, var, value).is_some()
}

/// [`rerun_with_env`], giving the child's stderr (None in the child).
pub fn rerun_with_env_stderr(name: &str, var: &str, value: &str) -> Option<String> {
    if std::env::var_os(var).is_some() {
        return None;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture"])
        .env(var, value)
        .output()
        .expect("run this test binary again");
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{name} with {var}={value}: {text}{err}"
    );
    Some(err)
}
