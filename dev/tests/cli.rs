//! `cuzk-dev`'s command line: its subcommands fail in one line on bad arguments, and
//! `gen-c1` writes a C1 that the product reads.

use std::process::Command;

const DEV: &str = env!("CARGO_BIN_EXE_cuzk-dev");

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/test-scratch")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn gen_c1_bad_arguments_fail_with_one_line() {
    let dir = scratch("gen-c1-bad");
    for (args, needle) in [
        (
            vec!["--sector-size", "8MiB", "--seed", "xyz1"],
            "--seed is not hex",
        ),
        (vec!["--sector-size", "8MiB", "--seed", "123"], "even count"),
        (vec!["--sector-size", "3MiB"], "sector size"),
        (
            vec!["--proof", "StackedDrg8MiBV1_1_Feat_SyntheticPoRep"],
            "interactive PoRep C1s only",
        ),
        (vec![], "needs --sector-size or --proof"),
    ] {
        let out = dir.join("c1.json");
        let r = Command::new(DEV)
            .arg("gen-c1")
            .args(&args)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{args:?} succeeded");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(!out.exists());
    }
}

#[test]
fn gen_c1_writes_a_c1_and_its_metadata() {
    let dir = scratch("gen-c1-ok");
    let out = dir.join("c1.json");
    let r = Command::new(DEV)
        .args(["gen-c1", "--sector-size", "2KiB", "--seed", "0a0b", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let c1 = cuzk_prove::input::c1::read_c1(&out).unwrap();
    assert_eq!(c1.sector_num, Some(1));
    assert!(dir.join("c1.meta.json").exists());
}

#[test]
fn completions_and_manpage_name_the_product() {
    for args in [&["completions", "bash"][..], &["manpage"]] {
        let r = Command::new(DEV).args(args).output().unwrap();
        assert!(r.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&r.stdout).replace("\\-", "-");
        assert!(
            text.contains("cuzk-prove") && text.contains("memory-budget"),
            "{args:?}"
        );
    }
}
