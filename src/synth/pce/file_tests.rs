//! The recording's file (file.rs): a round trip, one flipped byte anywhere refused by the
//! load, a recording for another key or circuit refused by the probe and the load, files
//! of the older formats refused by both, and the loaded matrices read where they lie in
//! the file.

use std::path::{Path, PathBuf};

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
    let loaded = Pce::load(&path, &id()).unwrap();
    assert!(loaded == pce);
    // The matrices are the file's bytes (format 3 aligns them), the recording made in
    // memory has its own vectors.
    for m in [&loaded.a, &loaded.b, &loaded.c] {
        assert!(m.row_start.is_mapped() && m.cols.is_mapped() && m.coeffs.is_mapped());
    }
    assert!(!pce.a.cols.is_mapped());
    // A copy shares the mapping; the file stays mapped while either lives.
    let copy = loaded.clone();
    // Its pages dropped from the process (as once on the GPU): read again from the file.
    loaded.release_pages();
    assert!(loaded == pce);
    drop(loaded);
    assert!(copy == pce && copy.c.coeffs.is_mapped());
    drop(copy);
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
fn files_of_the_older_formats_are_refused() {
    let dir = scratch("older");
    let path = dir.join("x.pce");
    tiny().save(&path, false, &id()).unwrap();
    let good = std::fs::read(&path).unwrap();
    for (magic, needle) in [
        (
            b"CUZKPCE1",
            "older cuzk-prove (file format 1, without a digest)",
        ),
        (
            b"CUZKPCE2",
            "older cuzk-prove (file format 2, its arrays not aligned",
        ),
    ] {
        let mut b = good.clone();
        b[..8].copy_from_slice(magic);
        std::fs::write(&path, &b).unwrap();
        for err in [
            error(Pce::load(&path, &id())),
            error(Pce::probe(&path, &id())),
        ] {
            assert!(err.contains(needle), "{err}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The tiny recording saved in `dir` for an identity `extra` bytes longer than [`id`]'s
/// (which moves the arrays after it), with that identity and the file's sections.
fn saved_with_longer_id(dir: &Path, extra: usize) -> (PathBuf, Identity, Vec<Section>) {
    let path = dir.join(format!("x{extra}.pce"));
    let id = Identity {
        circuit: format!("{}{}", id().circuit, "x".repeat(extra)),
        ..id()
    };
    tiny().save(&path, false, &id).unwrap();
    let (_, sections) = Pce::frame(&path).unwrap();
    (path, id, sections)
}

#[test]
fn the_matrices_start_aligned_after_zero_padding() {
    let dir = scratch("aligned");
    // Identities of every length modulo 8 move the arrays after them.
    for extra in 0..8 {
        let (path, id, sections) = saved_with_longer_id(&dir, extra);
        let bytes = std::fs::read(&path).unwrap();
        let loaded = Pce::load(&path, &id).unwrap();
        assert!(
            loaded == tiny() && loaded.a.row_start.is_mapped(),
            "{extra}"
        );
        let offsets = sections.iter().filter(|s| s.0.ends_with("row offsets"));
        for ((name, r), nnz) in offsets.zip(loaded.nnz()) {
            // The section is the padding, the term count at a multiple of 8, the offsets.
            let at = r.start.next_multiple_of(8) as usize;
            assert!(
                bytes[r.start as usize..at].iter().all(|&b| b == 0),
                "{name}: padding"
            );
            let count = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
            assert_eq!(
                count, nnz as u64,
                "{name}: the term count after the padding"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn padding_that_is_not_zero_is_refused() {
    let dir = scratch("padding");
    // An identity that leaves A's arrays 1 byte short of a multiple of 8: 7 padding bytes.
    let (path, sections) = (0..8)
        .map(|extra| saved_with_longer_id(&dir, extra))
        .find_map(|(path, _, sections)| (sections[5].1.start % 8 == 1).then_some((path, sections)))
        .unwrap();
    assert_eq!(sections[5].0, "A row offsets");
    let mut b = std::fs::read(&path).unwrap();
    b[sections[5].1.start as usize + 3] = 0x5a;
    // Its digest made anew (a wrong writer, not damage).
    let n = b.len() - 32;
    let digest = blake3::hash(&b[..n]);
    b[n..].copy_from_slice(digest.as_bytes());
    std::fs::write(&path, &b).unwrap();
    let err = error(Pce::load(&path, &Pce::frame(&path).unwrap().0));
    assert!(err.contains("padding that is not zero"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}
