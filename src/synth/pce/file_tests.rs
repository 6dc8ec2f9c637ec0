//! The recording's file (file.rs): a round trip, one flipped byte anywhere refused by the
//! load, a recording for another key or circuit refused by the probe and the load, and a
//! format-1 file refused by both.

use std::path::PathBuf;

use super::*;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cuzk-pce-file-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tiny() -> Pce {
    join_blocks(vec![super::super::tests_support_tiny_block()]).unwrap()
}

fn id() -> Identity {
    Identity {
        vk_digest: "0123456789abcdef0123456789abcdef".into(),
        circuit: "v28-test-circuit (storage-proofs-porep 0.0.0)".into(),
    }
}

fn error(r: Result<impl std::fmt::Debug>) -> String {
    format!("{:#}", r.unwrap_err())
}

#[test]
fn a_recording_round_trips_and_its_sections_cover_the_file() {
    let dir = scratch("round-trip");
    let path = dir.join("x.pce");
    let pce = tiny();
    assert_eq!(pce.save(&path, false, &id()).unwrap(), Saved::Written);
    assert!(Pce::load(&path, &id()).unwrap() == pce);
    Pce::probe(&path, &id()).unwrap();
    let (found, sections) = Pce::frame(&path).unwrap();
    assert_eq!(found, id());
    let size = std::fs::metadata(&path).unwrap().len();
    let mut at = 0;
    for (name, r) in &sections {
        assert_eq!(r.start, at, "{name} follows the one before it");
        assert!(
            r.end > r.start || *name == "B input density",
            "{name} is empty"
        );
        at = r.end;
    }
    assert_eq!(at, size);
    assert_eq!(sections.last().unwrap().0, "digest");
    assert_eq!(sections.len(), 1 + 1 + 3 + 9 + 1);
    // The digest is BLAKE3 of everything before it.
    let bytes = std::fs::read(&path).unwrap();
    let (body, digest) = bytes.split_at(bytes.len() - 32);
    assert_eq!(blake3::hash(body).as_bytes(), digest);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn one_flipped_byte_anywhere_is_refused() {
    let dir = scratch("flip");
    let (good, bad) = (dir.join("good.pce"), dir.join("bad.pce"));
    tiny().save(&good, false, &id()).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let (_, sections) = Pce::frame(&good).unwrap();
    let header = sections[0].1.end as usize;
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= flip;
            std::fs::write(&bad, &b).unwrap();
            let err = error(Pce::load(&bad, &id()));
            let section = sections.iter().find(|s| s.1.contains(&(i as u64))).unwrap();
            // Past the header nothing is decoded before the digest is checked.
            if i >= header {
                assert!(
                    err.contains("do not match their digest (damaged)"),
                    "byte {i} ({}): {err}",
                    section.0
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_recording_for_another_key_or_circuit_is_refused() {
    let dir = scratch("identity");
    let path = dir.join("x.pce");
    tiny().save(&path, false, &id()).unwrap();
    let other_key = Identity {
        vk_digest: "fedcba9876543210fedcba9876543210".into(),
        ..id()
    };
    let other_circuit = Identity {
        circuit: "v28-test-circuit (storage-proofs-porep 0.0.1)".into(),
        ..id()
    };
    for (other, needle) in [
        (
            &other_key,
            "recorded for another verifying key (digest 0123",
        ),
        (
            &other_circuit,
            "recorded for another circuit (v28-test-circuit",
        ),
    ] {
        for err in [
            error(Pce::load(&path, other)),
            error(Pce::probe(&path, other)),
        ] {
            assert!(err.contains(needle), "{err}");
            assert!(
                err.starts_with("pre-compiled constraint system ") && !err.contains('\n'),
                "one line naming the file: {err}"
            );
        }
    }
    // Identity fields are bounded.
    let long = Identity {
        circuit: "x".repeat(MAX_TEXT + 1),
        ..id()
    };
    let err = error(tiny().save(&dir.join("long.pce"), false, &long));
    assert!(err.contains("an identity field of 1025 bytes"), "{err}");
    assert!(!dir.join("long.pce").exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_format_1_file_is_refused() {
    let dir = scratch("v1");
    let path = dir.join("x.pce");
    tiny().save(&path, false, &id()).unwrap();
    let mut b = std::fs::read(&path).unwrap();
    b[..8].copy_from_slice(b"CUZKPCE1");
    std::fs::write(&path, &b).unwrap();
    for err in [
        error(Pce::load(&path, &id())),
        error(Pce::probe(&path, &id())),
    ] {
        assert!(err.contains("file format 1, without a digest"), "{err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
