//! The plain command is the fast path: `cuzk-prove --c1 c1.json -o proof.bin` records the
//! constraint system on its first run and keeps it beside the parameters (or where
//! `--pce-cache` says), later runs load it; a place that cannot be written, a damaged
//! file (recorded anew, even with `--no-verify`) or two runs at once never cost the proof; a memory budget too small for one
//! partition fails before any work; `cuzk-prove pce` records ahead the same file a
//! proving run would.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// A parameter directory of its own holding the 2KiB TEST-ONLY parameters (links).
fn param_dir(name: &str) -> PathBuf {
    let dir = scratch(name).join("params");
    std::fs::create_dir_all(&dir).unwrap();
    let params = params_file();
    for ext in ["params", "vk", "meta"] {
        let f = params.with_extension(ext);
        std::os::unix::fs::symlink(&f, dir.join(f.file_name().unwrap())).unwrap();
    }
    dir
}

/// The recording's file in `dir`.
fn recording(dir: &Path) -> PathBuf {
    dir.join(params_file().with_extension("pce").file_name().unwrap())
}

/// The plain command on the fixture, with `extra` flags; `XDG_CACHE_HOME` points into
/// the test's scratch space so that no run touches the user's cache.
fn plain(dir: &Path, out: &Path, extra: &[&OsStr]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--c1")
        .arg(fixture_c1())
        .arg("-o")
        .arg(out)
        .arg("--param-cache")
        .arg(dir)
        .args(extra)
        .env_remove("FIL_PROOFS_PARAMETER_CACHE")
        .env("XDG_CACHE_HOME", dir.parent().unwrap().join("xdg"));
    c
}

/// `--stop-after synth`: up to the recording's save (and its wait), no proof.
fn synth_only() -> [&'static OsStr; 2] {
    [OsStr::new("--stop-after"), OsStr::new("synth")]
}

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    err
}

fn report(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Files in `dir` a save could have left behind.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn the_first_run_records_beside_the_parameters_and_later_runs_load_it() {
    let dir = param_dir("plain-default");
    let base = dir.parent().unwrap().to_path_buf();
    let (out, json) = (base.join("proof.bin"), base.join("run.json"));
    let o = plain(&dir, &out, &[OsStr::new("--json"), json.as_os_str()])
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(err.contains("recorded the constraint system in"), "{err}");
    let r = report(&json);
    assert_eq!(r["pce"]["source"], "recorded");
    assert_eq!(r["pce"]["saved"], true);
    assert_eq!(r["pce"]["path"], recording(&dir).to_str().unwrap());
    Pce::probe(&recording(&dir), &identity()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(recording(&dir))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "readable by all, like the parameters");
    assert!(
        !base.join("xdg").exists(),
        "the user's cache was not needed"
    );
    let first = std::fs::read(&out).unwrap();
    assert!(verify_seal(&fixture_meta(), &first));
    // The proof's mode is what File::create gives here (0666 less the umask), not the
    // temporary file's private 0600.
    {
        use std::os::unix::fs::PermissionsExt;
        let plain = out.with_file_name("plain");
        std::fs::File::create(&plain).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&out), mode(&plain));
    }
    // Peak memory and the planner's choice are reported.
    assert!(r["memory"]["peak_rss_bytes"].as_u64().unwrap() > 0);
    assert!(r["memory"]["peak_anon_bytes"].as_u64().unwrap() > 0);
    assert_eq!(r["memory_plan"]["window"], 1);

    // A later run loads it (up to synthesis: a CLI proof from a loaded recording is
    // tests/toolchain.rs's, in process tests/pce.rs's).
    std::fs::remove_file(&out).unwrap();
    let o = plain(
        &dir,
        &out,
        &[
            OsStr::new("--json"),
            json.as_os_str(),
            OsStr::new("--timings"),
            OsStr::new("--stop-after"),
            OsStr::new("synth"),
        ],
    )
    .output()
    .unwrap();
    let err = ok(&o);
    assert!(err.contains("peak anonymous memory"), "{err}");
    assert_eq!(report(&json)["pce"]["source"], "loaded");
    assert!(!out.exists(), "--stop-after writes no proof");
    assert!(temporaries(&dir).is_empty());
}

#[test]
fn a_place_that_cannot_be_written_costs_only_the_recording() {
    let dir = param_dir("plain-unwritable");
    let out = dir.parent().unwrap().join("proof.bin");
    // A directory under a regular file cannot be made, even by root.
    let o = plain(
        &dir,
        &out,
        &[OsStr::new("--pce-cache"), OsStr::new("/dev/null/cuzk")],
    )
    .output()
    .unwrap();
    let err = ok(&o);
    assert!(
        err.contains("warning: the recorded constraint system will not be kept")
            && err.contains("cannot create /dev/null/cuzk"),
        "{err}"
    );
    assert!(verify_seal(&fixture_meta(), &std::fs::read(&out).unwrap()));
    assert!(!recording(&dir).exists());
}

/// Both record at once and race to save (the recording is saved beside proving); one of
/// them goes on to prove, the other stops after synthesis (a second CPU proof would cost
/// CI a minute and test nothing more).
#[test]
fn two_runs_at_once_on_an_empty_cache_both_finish_and_leave_one_recording() {
    let dir = param_dir("plain-concurrent");
    let base = dir.parent().unwrap().to_path_buf();
    let outs = [base.join("a.bin"), base.join("b.bin")];
    let children: Vec<_> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut args = vec![OsStr::new("--quiet")];
            if i == 1 {
                args.extend(synth_only());
            }
            plain(&dir, o, &args).spawn().unwrap()
        })
        .collect();
    for c in children {
        ok(&c.wait_with_output().unwrap());
    }
    assert!(verify_seal(
        &fixture_meta(),
        &std::fs::read(&outs[0]).unwrap()
    ));
    assert!(!outs[1].exists());
    let pce: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".pce"))
        .collect();
    assert_eq!(pce.len(), 1, "{pce:?}");
    assert!(temporaries(&dir).is_empty(), "{:?}", temporaries(&dir));
    Pce::load(&recording(&dir), &identity()).unwrap();
}

#[test]
fn a_recording_cut_short_is_never_used_and_is_replaced() {
    let dir = param_dir("plain-cut");
    let out = dir.parent().unwrap().join("proof.bin");
    ok(&plain(&dir, &out, &synth_only()).output().unwrap());
    let good = std::fs::read(recording(&dir)).unwrap();
    // Cut short mid-write (what a reader never sees from a save, but a disk may give).
    std::fs::write(recording(&dir), &good[..good.len() / 2]).unwrap();
    for overlap in ["on", "off"] {
        let o = plain(
            &dir,
            &out,
            // Up to the recording's save (proving is the other tests' business).
            &[
                OsStr::new("--overlap-synth"),
                OsStr::new(overlap),
                OsStr::new("--stop-after"),
                OsStr::new("synth"),
            ],
        )
        .output()
        .unwrap();
        let err = ok(&o);
        if overlap == "on" {
            assert!(
                err.contains("not used; the circuit is recorded anew"),
                "{err}"
            );
        }
        assert!(
            std::fs::read(recording(&dir)).unwrap() == good,
            "replaced by a good one"
        );
        if overlap == "on" {
            // The arrays damaged behind an intact frame (C's last coefficient indices out
            // of range): loaded, refused, recorded anew.
            let mut bad = good.clone();
            let n = bad.len();
            bad[n - 8..].copy_from_slice(&[0xff; 8]);
            std::fs::write(recording(&dir), &bad).unwrap();
        }
    }
    assert!(std::fs::read(recording(&dir)).unwrap() == good);
    // A file of format 2, as cuzk-prove wrote before its arrays were aligned for use in
    // place: recorded anew in the current format once, then used.
    let mut older = good.clone();
    older[..8].copy_from_slice(b"CUZKPCE2");
    std::fs::write(recording(&dir), &older).unwrap();
    let err = ok(&plain(&dir, &out, &synth_only()).output().unwrap());
    assert!(
        err.contains(
            "(file format 2, its arrays not aligned for use in place): not used; the \
                      circuit is recorded anew"
        ),
        "{err}"
    );
    assert!(std::fs::read(recording(&dir)).unwrap() == good);
    let err = ok(&plain(&dir, &out, &synth_only()).output().unwrap());
    assert!(!err.contains("recorded anew"), "{err}");
}

/// The audit's case: one bit of B's aux density moved within a word (its frame intact, its
/// count of set bits and every row's a·b = c unchanged). Before the recording had a
/// digest this loaded and, with `--no-verify`, wrote a proof that does not verify with
/// exit status 0; now it is refused, recorded anew and replaced.
#[test]
fn a_damaged_recording_is_recorded_anew_even_without_verification() {
    let dir = param_dir("plain-damaged");
    let base = dir.parent().unwrap().to_path_buf();
    let (out, json) = (base.join("proof.bin"), base.join("run.json"));
    ok(&plain(&dir, &out, &synth_only()).output().unwrap());
    let good = std::fs::read(recording(&dir)).unwrap();
    let (id, sections) = Pce::frame(&recording(&dir)).unwrap();
    assert_eq!(
        id,
        identity(),
        "the run's recording is for its parameters and circuit"
    );
    let density = &sections.iter().find(|s| s.0 == "B aux density").unwrap().1;
    // Past the length, before the last word (whose bits beyond the count must be 0): a
    // word with a set and a clear bit, the two swapped.
    let words = (density.start as usize + 8..density.end as usize - 8).step_by(8);
    let (at, w) = words
        .map(|at| (at, u64::from_le_bytes(good[at..at + 8].try_into().unwrap())))
        .find(|(_, w)| *w != 0 && *w != u64::MAX)
        .expect("a mixed density word");
    let swapped = w ^ (1 << w.trailing_zeros()) ^ (1 << w.trailing_ones());
    assert_eq!(swapped.count_ones(), w.count_ones());
    let mut bad = good.clone();
    bad[at..at + 8].copy_from_slice(&swapped.to_le_bytes());
    // The whole proof with the default scheduling; the batched one only up to synthesis
    // (its refusal and re-recording; a CPU proof costs CI half a minute).
    for overlap in ["on", "off"] {
        std::fs::write(recording(&dir), &bad).unwrap();
        let _ = std::fs::remove_file(&out);
        let mut args = vec![
            OsStr::new("--no-verify"),
            OsStr::new("--overlap-synth"),
            OsStr::new(overlap),
            OsStr::new("--json"),
            json.as_os_str(),
        ];
        if overlap == "off" {
            args.extend(synth_only());
        }
        let o = plain(&dir, &out, &args).output().unwrap();
        let err = ok(&o);
        assert!(
            err.contains("do not match their digest (damaged)"),
            "{overlap}: {err}"
        );
        let r = report(&json);
        assert_eq!(r["pce"]["source"], "recorded", "{overlap}");
        if overlap == "on" {
            assert_eq!(r["verified"], false);
            assert!(
                verify_seal(&fixture_meta(), &std::fs::read(&out).unwrap()),
                "{overlap}: the proof verifies"
            );
        }
        assert!(
            std::fs::read(recording(&dir)).unwrap() == good,
            "{overlap}: replaced by a good one"
        );
    }
}

#[test]
fn a_budget_too_small_for_one_partition_fails_before_any_work() {
    let dir = param_dir("plain-budget");
    let out = dir.parent().unwrap().join("proof.bin");
    let o = plain(
        &dir,
        &out,
        &[OsStr::new("--memory-budget"), OsStr::new("64MiB")],
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(1), "a runtime fault, not bad input");
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<_> = err
        .lines()
        .filter(|l| !l.starts_with("notice:") && !l.starts_with("  "))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("cannot hold one partition"), "{err}");
    assert!(!out.exists() && !recording(&dir).exists());
    let o = plain(
        &dir,
        &out,
        &[OsStr::new("--memory-budget"), OsStr::new("lots")],
    )
    .output()
    .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("--memory-budget must be auto or a size"));
}

#[test]
fn the_pce_subcommand_records_ahead_what_a_run_would() {
    let ahead = param_dir("plain-ahead");
    let o = Command::new(BIN)
        .args(["pce", "--sector-size", "2KiB", "--param-cache"])
        .arg(&ahead)
        .env("XDG_CACHE_HOME", ahead.parent().unwrap().join("xdg"))
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(
        err.contains("recorded the constraint system of StackedDrg2KiBV1_1"),
        "{err}"
    );
    // Again: already there.
    let o = Command::new(BIN)
        .args(["pce", "--sector-size", "2KiB", "--param-cache"])
        .arg(&ahead)
        .output()
        .unwrap();
    assert!(ok(&o).contains("already recorded"));
    // The same bytes a proving run records (from the real sector's C1), and a run loads it.
    let dir = param_dir("plain-ahead-run");
    let out = dir.parent().unwrap().join("proof.bin");
    ok(&plain(&dir, &out, &synth_only()).output().unwrap());
    assert!(std::fs::read(recording(&dir)).unwrap() == std::fs::read(recording(&ahead)).unwrap());
    let json = ahead.parent().unwrap().join("run.json");
    ok(&plain(
        &ahead,
        &out,
        &[
            OsStr::new("--json"),
            json.as_os_str(),
            OsStr::new("--stop-after"),
            OsStr::new("synth"),
        ],
    )
    .output()
    .unwrap());
    assert_eq!(report(&json)["pce"]["source"], "loaded");
}

use cuzk_prove::synth::pce::{Identity, Pce};

/// What the fixture's recording is for: the 2KiB parameters' verifying key (its digest as
/// filecoin-proofs' parameters.json gives it: BLAKE2b-512 of the `.vk`, 32 hex digits) and
/// the circuit.
fn identity() -> Identity {
    let vk = std::fs::read(params_file().with_extension("vk")).unwrap();
    let digest = blake2b_simd::Params::new().hash(&vk).to_hex()[..32].to_owned();
    let proof = cuzk_prove::input::c1::parse_registered_proof("StackedDrg2KiBV1_1").unwrap();
    cuzk_prove::pipeline::pce_cache::identity(proof, digest).unwrap()
}

/// `$XDG_CACHE_HOME` names the user's cache (read in a child process: the environment
/// is the process's); without it, `$HOME/.cache`; the parameters' directory comes first.
#[test]
fn the_user_cache_follows_xdg_cache_home() {
    use cuzk_prove::pipeline::pce_cache::{candidates, user_cache_dir};
    let xdg = root().join("target/test-scratch/xdg-home");
    if !rerun_with_env(
        "the_user_cache_follows_xdg_cache_home",
        "XDG_CACHE_HOME",
        xdg.to_str().unwrap(),
    ) {
        assert_eq!(user_cache_dir(), Some(xdg.join("cuzk-prove")));
        let c = candidates(None, &params_file());
        assert_eq!(
            c,
            vec![
                params_file().parent().unwrap().to_path_buf(),
                xdg.join("cuzk-prove")
            ]
        );
        return;
    }
    if std::env::var_os("XDG_CACHE_HOME").is_none() {
        if let Some(home) = std::env::var_os("HOME") {
            assert_eq!(
                user_cache_dir(),
                Some(PathBuf::from(home).join(".cache/cuzk-prove"))
            );
        }
    }
}
