//! How cuzk-prove fits scripts and the Filecoin toolchain: the C1 from standard input and
//! the proof to standard output; the JSON report with snake_case keys, written on
//! failure too (with `error`); an exit status per class of failure; BELLMAN_NO_GPU;
//! `--version` naming the commit and CUDA.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::*;

/// cuzk-prove with the test parameters (FIL_PROOFS_PARAMETER_CACHE, so that a test can
/// name another --param-cache).
fn prove() -> Command {
    let mut c = Command::new(BIN);
    c.env("FIL_PROOFS_PARAMETER_CACHE", param_cache())
        .env("XDG_CACHE_HOME", scratch("toolchain-xdg"));
    c
}

/// Every object key in `v`, recursively (the `timings` rows' values are not keys).
fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.push(k.clone());
                keys(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

#[test]
fn c1_from_stdin_proof_to_stdout_verifies() {
    let dir = scratch("toolchain-pipe");
    let json = dir.join("report.json");
    let mut child = prove()
        .args(["--c1", "-", "-o", "-", "--json"])
        .arg(&json)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let c1 = std::fs::read(fixture_c1()).unwrap();
    child.stdin.take().unwrap().write_all(&c1).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(out.stdout.len(), 192, "{err}");
    assert!(verify_seal(&fixture_meta(), &out.stdout));
    assert!(err.contains("wrote 192 bytes to standard output"), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    assert_eq!(report["c1"]["path"], "-");
    assert_eq!(report["output"]["path"], "-");
    assert_eq!(report["output"]["bytes"], 192);
    // (A file run's proof and mode: tests/plain_command.rs. r and s are drawn fresh each
    // run, so two runs' bytes differ; both kinds verify.)
}

#[test]
fn the_report_has_snake_case_keys_a_schema_and_the_build() {
    let out = prove()
        .arg("--c1")
        .arg(fixture_c1())
        .args(["--stop-after", "srs", "--json", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert!(!report["build"]["commit"].as_str().unwrap().is_empty());
    assert_eq!(report["build"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        report["build"]["cuda_archs"].is_string(),
        cuzk_prove::prove::cuda::built()
    );
    assert!(report["memory"]["peak_rss_bytes"].as_u64().unwrap() > 0);
    assert!(report["timings_s"]["total"].as_f64().unwrap() > 0.0);
    assert!(report.get("error").is_none());
    let mut all = Vec::new();
    keys(&report, &mut all);
    let bad: Vec<_> = all
        .iter()
        .filter(|k| {
            !k.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .collect();
    assert!(bad.is_empty(), "keys not snake_case: {bad:?}");
}

#[test]
fn failures_have_an_exit_status_per_class_and_a_report() {
    let dir = scratch("toolchain-fail");
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, b"{\"not\": \"a C1\"}").unwrap();
    let empty = dir.join("no-params");
    std::fs::create_dir_all(&empty).unwrap();
    let out = dir.join("proof.bin");
    let cases: [(&str, Vec<std::ffi::OsString>, i32, &str); 3] = [
        (
            "bad C1",
            vec!["--c1".into(), garbage.into()],
            3,
            "bad_input",
        ),
        (
            "missing parameters",
            vec![
                "--c1".into(),
                fixture_c1().into(),
                "--param-cache".into(),
                empty.into(),
            ],
            4,
            "missing_parameters",
        ),
        (
            "budget too small",
            vec![
                "--c1".into(),
                fixture_c1().into(),
                "--memory-budget".into(),
                "1MiB".into(),
            ],
            1,
            "runtime",
        ),
    ];
    for (what, args, code, kind) in cases {
        let json = dir.join(format!("{kind}.json"));
        let o = prove()
            .args(&args)
            .arg("-o")
            .arg(&out)
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{what}: {err}");
        assert_eq!(
            err.lines()
                .filter(|l| l.starts_with("cuzk-prove: error: "))
                .count(),
            1
        );
        assert!(!out.exists(), "{what}");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(report["error"]["kind"], kind, "{what}");
        assert_eq!(report["error"]["exit_code"], code, "{what}");
        let message = report["error"]["message"].as_str().unwrap();
        assert!(err.contains(message), "{what}: {message} vs {err}");
    }
    // The missing-parameters message says how operators get them.
    let o = prove()
        .arg("--c1")
        .arg(fixture_c1())
        .arg("--param-cache")
        .arg(&dir)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("fetch-params 2KiB"));
    // A flag's bad value is a usage error, like clap's own, reported too.
    let json = dir.join("usage.json");
    let o = prove()
        .arg("--c1")
        .arg(fixture_c1())
        .args(["-o", "x", "--msm-window", "99", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["error"]["kind"], "usage");
    assert_eq!(report["error"]["exit_code"], 2);
    let o = prove()
        .arg("--c1")
        .arg(fixture_c1())
        .args(["-o", "-", "--json", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bellman_no_gpu_proves_on_the_cpu() {
    let o = prove()
        .env("BELLMAN_NO_GPU", "1")
        .arg("--c1")
        .arg(fixture_c1())
        .args(["--stop-after", "parse", "--json", "-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["backend"], "cpu");
    assert_eq!(report["flags"]["device"], "cpu");
}

#[test]
fn version_names_the_commit_and_cuda() {
    let version = |flag: &str| {
        let o = Command::new(BIN).arg(flag).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let (short, long) = (version("-V"), version("--version"));
    let ours = format!("cuzk-prove {}", env!("CARGO_PKG_VERSION"));
    assert!(
        short.starts_with(&ours) && long.starts_with(&ours),
        "{short} / {long}"
    );
    let cuda = match cuzk_prove::prove::cuda::built() {
        true => "cuda sm_",
        false => "cuda not compiled in",
    };
    assert!(
        short.contains(cuda) && long.contains(cuda),
        "{short} / {long}"
    );
    let commit = env!("CUZK_COMMIT");
    assert!(
        short.contains(commit) && long.contains(&format!("commit {commit}")),
        "{long}"
    );
    assert!(
        long.contains("filecoin-proofs") && long.contains("bellperson"),
        "{long}"
    );
}

/// The 2KiB test parameters linked into a directory of their own, with or without their
/// TEST-ONLY label (`.meta`).
fn params_copy(name: &str, label: bool) -> std::path::PathBuf {
    let dir = scratch(name);
    let params = params_file();
    let exts: &[&str] = if label {
        &["params", "vk", "meta"]
    } else {
        &["params", "vk"]
    };
    for ext in exts {
        let f = params.with_extension(ext);
        std::os::unix::fs::symlink(&f, dir.join(f.file_name().unwrap())).unwrap();
    }
    dir
}

#[test]
fn the_key_is_named_production_test_or_unknown() {
    let json = |dir: &std::path::Path, extra: &[&str]| {
        let o = prove()
            .arg("--c1")
            .arg(fixture_c1())
            .arg("--param-cache")
            .arg(dir)
            .args(["--stop-after", "srs", "--json", "-"])
            .args(extra)
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
            report,
        )
    };
    let (code, err, r) = json(&params_copy("key-test", true), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["params"]["key"], "test");
    assert!(!err.contains("warning"), "{err}");
    // The same key without its TEST-ONLY label: not filecoin-proofs' either.
    let (code, err, r) = json(&params_copy("key-unknown", false), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["params"]["key"], "unknown");
    assert_eq!(r["warnings"].as_array().map(Vec::len), Some(1));
    assert!(
        err.contains("warning: the verifying key") && err.contains("will not verify on chain"),
        "{err}"
    );
    // --verify-params: test parameters (under the production names) do not match
    // filecoin-proofs' digest, and the message says why.
    let (code, err, r) = json(&params_copy("key-verify", true), &["--verify-params"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("do not match filecoin-proofs' digest") && err.contains("TEST-ONLY"),
        "{err}"
    );
    assert_eq!(r["error"]["kind"], "bad_input");
    // A truncated file: one line, bad input.
    let dir = scratch("key-truncated");
    let params = params_file();
    let cut = dir.join(params.file_name().unwrap());
    let bytes = std::fs::read(&params).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (code, err, _) = json(&dir, &["--verify-params"]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn gen_test_params_refuses_the_production_directory() {
    let prod = std::path::Path::new(cuzk_prove::cli::DEFAULT_PARAM_CACHE);
    let proof = cuzk_prove::input::c1::parse_registered_proof("StackedDrg2KiBV1_1").unwrap();
    if cuzk_prove::input::srs::cache_paths(proof, prod)
        .unwrap()
        .params
        .exists()
    {
        eprintln!(
            "SKIPPED: this machine has 2KiB parameters in {}",
            prod.display()
        );
        return;
    }
    let o = prove()
        .arg("--c1")
        .arg(fixture_c1())
        .arg("--param-cache")
        .arg(prod)
        .args(["--gen-test-params", "-o", "/nonexistent-dir-cuzk/p.bin"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    // The output path is checked first; with a good one the refusal is the error.
    assert!(err.contains("does not exist"), "{err}");
    let out = scratch("gen-refuse").join("p.bin");
    let o = prove()
        .arg("--c1")
        .arg(fixture_c1())
        .arg("--param-cache")
        .arg(prod)
        .arg("--gen-test-params")
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("will not write TEST-ONLY parameters"), "{err}");
    assert!(!out.exists());
}
