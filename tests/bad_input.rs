//! Bad input: one clear line naming the problem, a non-zero exit, no panic, no output.

mod common;

use std::ffi::OsStr;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use common::*;

/// Runs the prover on `c1` with `extra` flags and checks the failure contract.
fn expect_error(name: &str, c1: &Path, extra: &[&OsStr], needle: &str) {
    let dir = scratch(name);
    let out = dir.join("proof.bin");
    let mut args: Vec<&OsStr> = vec![
        OsStr::new("--c1"),
        c1.as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
    ];
    args.extend_from_slice(extra);
    if !extra
        .iter()
        .any(|a| *a == "--params" || *a == "--param-cache")
    {
        args.push(OsStr::new("--param-cache"));
        args.push(param_cache().as_os_str());
    }
    expect_failure(name, &args, needle, &out);
}

fn expect_failure(name: &str, args: &[&OsStr], needle: &str, out: &Path) {
    let res = run(args);
    let stderr = String::from_utf8_lossy(&res.stderr);
    // 1 runtime, 2 usage, 3 bad input, 4 missing parameters (tests/toolchain.rs checks
    // which class each kind of failure gets); never a signal or a panic's 101.
    assert!(
        matches!(res.status.code(), Some(1..=4)),
        "{name}: exit status {:?}: {stderr}",
        res.status
    );
    assert!(!stderr.contains("panicked"), "{name}: panicked: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{name}: expected one line, got: {stderr}");
    assert!(
        lines[0].starts_with("cuzk-prove: error: "),
        "{name}: {stderr}"
    );
    assert!(
        lines[0].contains(needle),
        "{name}: '{needle}' not in: {stderr}"
    );
    assert!(!out.exists(), "{name}: output left behind");
    if let Some(dir) = out.parent().filter(|d| d.exists()) {
        let leftovers: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
        assert!(
            leftovers.iter().all(|e| {
                let n = e.as_ref().unwrap().file_name();
                !n.to_string_lossy().ends_with(".tmp")
            }),
            "{name}: temp file left behind"
        );
    }
}

fn write_c1(name: &str, contents: &[u8]) -> PathBuf {
    let p = scratch(&format!("{name}-in")).join("c1.json");
    std::fs::write(&p, contents).unwrap();
    p
}

#[test]
fn missing_c1_file() {
    expect_error(
        "missing",
        Path::new("/nonexistent/c1.json"),
        &[],
        "cannot read C1 file /nonexistent/c1.json",
    );
}

#[test]
fn malformed_json() {
    let c1 = write_c1("malformed", b"{\"SectorNum\": 1, \"Phase1Out\": ");
    expect_error("malformed", &c1, &[], "not valid JSON");
}

#[test]
fn bad_base64() {
    let c1 = write_c1(
        "b64",
        br#"{"SectorNum":1,"Phase1Out":"@@not base64@@","SectorSize":2048}"#,
    );
    expect_error("b64", &c1, &[], "Phase1Out is not valid base64");
}

#[test]
fn unknown_registered_proof() {
    let c1 = write_c1(
        "unknown",
        br#"{"registered_proof":"StackedDrg4KiBV1","vanilla_proofs":{}}"#,
    );
    expect_error(
        "unknown",
        &c1,
        &[],
        "unknown registered proof 'StackedDrg4KiBV1'",
    );
}

/// A C1 over `--c1-max-size` (default 512 MiB) is refused before it is read whole, and a
/// device (endless) is refused as not a regular file.
#[test]
fn c1_size_limit_and_devices() {
    expect_error(
        "c1-max-size",
        &fixture_c1(),
        &[OsStr::new("--c1-max-size"), OsStr::new("4KiB")],
        "larger than 4096 bytes: not a C1 (--c1-max-size raises the limit)",
    );
    expect_error(
        "c1-dev-zero",
        Path::new("/dev/zero"),
        &[],
        "is not a regular file",
    );
    expect_error(
        "c1-max-size-bad",
        &fixture_c1(),
        &[OsStr::new("--c1-max-size"), OsStr::new("lots")],
        "--c1-max-size must be a size such as 512MiB, got 'lots'",
    );
}

/// A C1's strings reach the error line escaped and cut: no terminal escape sequence, no
/// carriage return, no 100 KB line.
#[test]
fn c1_strings_in_messages_are_escaped_and_cut() {
    let name = format!("\u{1b}[2J\rEVIL{}", "A".repeat(100_000));
    let c1 = serde_json::json!({ "registered_proof": name, "vanilla_proofs": {} });
    let path = write_c1("escaped", &serde_json::to_vec(&c1).unwrap());
    let dir = scratch("escaped");
    let out = dir.join("proof.bin");
    let res = run(&[
        OsStr::new("--c1"),
        path.as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(3), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\r'),
        "{stderr:?}"
    );
    assert!(stderr.contains("\\u{1b}[2J\\rEVIL"), "{stderr:?}");
    assert!(stderr.len() < 2000, "{} bytes", stderr.len());
    assert_eq!(stderr.lines().count(), 1);
}

#[test]
fn wrapper_sector_size_disagrees_with_the_c1() {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture_c1()).unwrap()).unwrap();
    v["SectorSize"] = serde_json::json!(8 << 20);
    let c1 = write_c1("size", &serde_json::to_vec(&v).unwrap());
    expect_error("size", &c1, &[], "SectorSize 8388608");
}

#[test]
fn c1_for_another_sector_size_than_the_parameters() {
    let c1 = root().join("testdata/8mib/c1.json");
    let params = params_file();
    expect_error(
        "8mib-vs-2kib",
        &c1,
        &[OsStr::new("--params"), params.as_os_str()],
        "another sector size",
    );
    // Renamed, the same file is caught by its section counts, before any proving.
    let renamed = scratch("renamed-params").join("mine.params");
    std::os::unix::fs::symlink(&params, &renamed).unwrap();
    expect_error(
        "8mib-vs-renamed-2kib",
        &c1,
        &[OsStr::new("--params"), renamed.as_os_str()],
        "do not match the circuit",
    );
    // In a cache directory holding only 2KiB parameters, the 8MiB file name is missing.
    let cache = scratch("2kib-only-cache");
    std::os::unix::fs::symlink(&params, cache.join(params.file_name().unwrap())).unwrap();
    expect_error(
        "8mib-cache",
        &c1,
        &[OsStr::new("--param-cache"), cache.as_os_str()],
        "no parameters for StackedDrg8MiBV1_1",
    );
}

/// A sparse copy of the fixture's parameters: same length, the verifying key and every
/// section count copied, the points left as holes (all checks these tests trigger run
/// before any point is decoded). A full copy would put 1.1 GB on disk per test, which a
/// small CI disk does not have. Then `edit` changes the copy.
fn edited_params(name: &str, edit: impl FnOnce(&mut std::fs::File, u64)) -> PathBuf {
    let dst = scratch(&format!("{name}-params")).join("test.params");
    let mut src = std::fs::File::open(params_file()).unwrap();
    let len = src.metadata().unwrap().len();
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&dst)
        .unwrap();
    f.set_len(len).unwrap();
    // The verifying key and the ic points, then each section's 4-byte count.
    let sections = counts(&mut src);
    let mut regions = vec![(0u64, sections[1].0)];
    regions.extend(sections[1..].iter().map(|&(at, _, _)| (at, 4)));
    for (at, n) in regions {
        let mut b = vec![0u8; n as usize];
        src.seek(SeekFrom::Start(at)).unwrap();
        src.read_exact(&mut b).unwrap();
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&b).unwrap();
    }
    edit(&mut f, len);
    dst
}

#[test]
fn truncated_parameters() {
    let p = edited_params("trunc", |f, len| f.set_len(len / 2).unwrap());
    expect_error(
        "trunc",
        &fixture_c1(),
        &[OsStr::new("--params"), p.as_os_str()],
        "truncated or corrupt",
    );
    let p = edited_params("tiny", |f, _| f.set_len(100).unwrap());
    expect_error(
        "tiny",
        &fixture_c1(),
        &[OsStr::new("--params"), p.as_os_str()],
        "truncated or corrupt",
    );
}

/// (offset, count, point size) of the sections after the verifying key's fixed part:
/// ic, h, l, a, b_g1, b_g2.
fn counts(f: &mut std::fs::File) -> Vec<(u64, u32, u64)> {
    let mut at = 3 * 96 + 3 * 192;
    let mut out = Vec::new();
    for size in [96u64, 96, 96, 96, 96, 192] {
        let mut b = [0u8; 4];
        f.seek(SeekFrom::Start(at)).unwrap();
        f.read_exact(&mut b).unwrap();
        let n = u32::from_be_bytes(b);
        out.push((at, n, size));
        at += 4 + n as u64 * size;
    }
    out
}

#[test]
fn parameters_with_wrong_counts() {
    // A self-consistent file whose B sections hold one point too few for the circuit.
    let p = edited_params("counts", |f, _| {
        let c = counts(f);
        let ((b1_at, b1_n, _), (b2_at, b2_n, _)) = (c[4], c[5]);
        // The copy's points are holes, so shifting b_g2 back by one G1 point is rewriting
        // its count 96 bytes earlier and dropping one G2 point from the end.
        let new_b2_at = b2_at - 96;
        f.seek(SeekFrom::Start(b1_at)).unwrap();
        f.write_all(&(b1_n - 1).to_be_bytes()).unwrap();
        f.seek(SeekFrom::Start(new_b2_at)).unwrap();
        f.write_all(&(b2_n - 1).to_be_bytes()).unwrap();
        f.set_len(new_b2_at + 4 + (b2_n as u64 - 1) * 192).unwrap();
    });
    expect_error(
        "counts",
        &fixture_c1(),
        &[OsStr::new("--params"), p.as_os_str()],
        "section 'b_g1' has",
    );
    // A count that runs past the end of the file.
    let p = edited_params("count-past-end", |f, _| {
        let (h_at, h_n, _) = counts(f)[1];
        f.seek(SeekFrom::Start(h_at)).unwrap();
        f.write_all(&(h_n + 1000).to_be_bytes()).unwrap();
    });
    expect_error(
        "count-past-end",
        &fixture_c1(),
        &[OsStr::new("--params"), p.as_os_str()],
        "truncated or corrupt",
    );
}

#[test]
fn output_in_a_missing_directory() {
    let out = Path::new("/nonexistent-dir/sub/proof.bin");
    let args = [
        OsStr::new("--c1"),
        fixture_c1().into_os_string().leak(),
        OsStr::new("-o"),
        out.as_os_str(),
        OsStr::new("--param-cache"),
        param_cache().as_os_str(),
    ];
    expect_failure(
        "missing-dir",
        &args,
        "output directory /nonexistent-dir/sub does not exist",
        out,
    );
}

#[test]
fn cuda_device_without_cuda_build_or_gpu_is_refused_clearly() {
    use cuzk_prove::prove::cuda;
    if cuda::built() && cuda::device_count().unwrap_or(0) > 0 {
        eprintln!("SKIPPED: a GPU is present (tests/cuda_e2e.rs proves with it)");
        return;
    }
    // CPU build: "no CUDA backend (built without nvcc) …"; CUDA build on a machine
    // without a GPU or driver: "no CUDA device found" or the driver's own error.
    expect_error(
        "cuda",
        &fixture_c1(),
        &[OsStr::new("--device"), OsStr::new("cuda")],
        "--device cuda: ",
    );
}

#[test]
fn gpu_index_out_of_range_is_refused() {
    use cuzk_prove::prove::cuda;
    if !(cuda::built() && cuda::device_count().unwrap_or(0) > 0) {
        eprintln!("SKIPPED: no CUDA build or no GPU");
        return;
    }
    for device in ["cuda", "auto"] {
        for (flag, list) in [("--gpu", "63"), ("--gpus", "0,63")] {
            expect_error(
                &format!("gpu-{device}{flag}"),
                &fixture_c1(),
                &[
                    OsStr::new("--device"),
                    OsStr::new(device),
                    OsStr::new(flag),
                    OsStr::new(list),
                ],
                "GPU 63: this machine has",
            );
        }
    }
}

#[test]
fn partition_out_of_range() {
    expect_error(
        "partition",
        &fixture_c1(),
        &[OsStr::new("--partition"), OsStr::new("1")],
        "--partition 1 is out of range",
    );
}

/// The fixture's C1 with its first partition's first challenge changed by `edit` (the raw
/// JSON inside the wrapper's base64), written to `dir/name.json`.
fn mutated_c1(dir: &Path, name: &str, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut w: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture_c1()).unwrap()).unwrap();
    let mut raw: serde_json::Value =
        serde_json::from_slice(&b64.decode(w["Phase1Out"].as_str().unwrap()).unwrap()).unwrap();
    edit(&mut raw);
    w["Phase1Out"] = b64.encode(serde_json::to_vec(&raw).unwrap()).into();
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_vec(&w).unwrap()).unwrap();
    path
}

/// Each class of malformed vanilla proofs the audit found (most made storage-proofs'
/// gadgets panic), and C1s whose redundant data disagree: refused by the check before
/// synthesis with one line naming partition, challenge and field; exit 3, no output.
#[test]
fn malformed_vanilla_proofs_are_one_line_naming_the_field() {
    use serde_json::{json, Value};
    let dir = scratch("malformed-c1");
    let ff = || Value::from(vec![255u8; 32]);
    // The first partition's first challenge's proof, edited.
    let edit = |name: &str, f: &dyn Fn(&mut Value)| {
        mutated_c1(&dir, name, |r| {
            f(&mut r["vanilla_proofs"]["StackedDrg2KiBV1"][0][0])
        })
    };
    let single = |p: &mut Value, tree: &str| -> Value { p[tree]["data"]["Single"].take() };
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        (
            "no-labels",
            edit("no-labels", &|p| p["labeling_proofs"] = json!([])),
            "partition 0, challenge 0 (node 58): 0 labeling proofs, the registered proof has 2 layers",
        ),
        (
            "short-drg",
            edit("short-drg", &|p| {
                let drg = &mut p["replica_column_proofs"]["drg_parents"];
                *drg = drg.as_array().unwrap()[..2].to_vec().into();
            }),
            "has 2 DRG parents, the graph has 6",
        ),
        (
            "no-exp",
            edit("no-exp", &|p| p["replica_column_proofs"]["exp_parents"] = json!([])),
            "has 0 expander parents, the graph has 8",
        ),
        (
            "short-column",
            edit("short-column", &|p| {
                let rows = &mut p["replica_column_proofs"]["exp_parents"][3]["column"]["rows"];
                *rows = rows.as_array().unwrap()[..1].to_vec().into();
            }),
            "replica_column_proofs, parent 9: the column has 1 rows",
        ),
        (
            "sibling-ff",
            edit("sibling-ff", &|p| {
                let mut s = single(p, "comm_r_last_proof");
                s["path"]["path"][1]["hashes"][3] = ff();
                p["comm_r_last_proof"]["data"]["Single"] = s;
            }),
            "comm_r_last_proof: level 1 of tree 0: value 3 is not a field element",
        ),
        (
            "leaf-ff",
            edit("leaf-ff", &|p| {
                let mut s = single(p, "comm_d_proofs");
                s["leaf"] = ff();
                p["comm_d_proofs"]["data"]["Single"] = s;
            }),
            "comm_d_proofs: root or leaf",
        ),
        (
            "empty-level",
            edit("empty-level", &|p| {
                let mut s = single(p, "comm_d_proofs");
                s["path"]["path"][2]["hashes"] = json!([]);
                p["comm_d_proofs"]["data"]["Single"] = s;
            }),
            "comm_d_proofs: level 2 of tree 0 has 0 siblings",
        ),
        (
            "short-path",
            edit("short-path", &|p| {
                let mut s = single(p, "comm_r_last_proof");
                s["path"]["path"].as_array_mut().unwrap().pop();
                p["comm_r_last_proof"]["data"]["Single"] = s;
            }),
            "comm_r_last_proof: tree 0 of the path has 1 levels, the sector's has 2",
        ),
        (
            "label-parents",
            edit("label-parents", &|p| p["labeling_proofs"][1]["parents"][0] = Value::from(vec![0u8; 32])),
            "labeling_proofs[1]: the label is not the hash of its parents",
        ),
        (
            // Redundant data that disagrees: filecoin-proofs' vanilla verifier refuses it,
            // the prover used to prove it without a word.
            "replica-leaf",
            edit("replica-leaf", &|p| {
                let mut s = single(p, "comm_r_last_proof");
                s["leaf"][0] = json!(s["leaf"][0].as_u64().unwrap() ^ 1);
                p["comm_r_last_proof"]["data"]["Single"] = s;
            }),
            "comm_r_last_proof: the path does not hash to its root",
        ),
        (
            "too-few-challenges",
            mutated_c1(&dir, "too-few-challenges", |r| {
                r["vanilla_proofs"]["StackedDrg2KiBV1"][0].as_array_mut().unwrap().pop();
            }),
            "partition 0 has 1 challenge proofs, the registered proof has 2",
        ),
        (
            "swapped-challenges",
            mutated_c1(&dir, "swapped-challenges", |r| {
                r["vanilla_proofs"]["StackedDrg2KiBV1"][0].as_array_mut().unwrap().swap(0, 1);
            }),
            "replica_column_proofs.c_x: the column is node 5's, not node 58's",
        ),
        (
            "replica-ff",
            mutated_c1(&dir, "replica-ff", |r| r["replica_id"] = ff()),
            "replica_id is not a field element",
        ),
    ];
    for (name, c1, needle) in &cases {
        expect_error(name, c1, &[OsStr::new("--quiet")], needle);
    }
    // Pass 1 alone, which every partition passes before any synthesis (later partitions
    // are checked whole only at their join): each case of the wrong shape is refused by
    // it with the same line; the others are content, refused by the whole check.
    let content = ["label-parents", "replica-leaf"];
    let mut by_shape = 0;
    for (name, c1, needle) in &cases {
        let Ok(c1) = cuzk_prove::input::c1::read_c1(c1) else {
            continue; // refused while read
        };
        let config = c1.registered_proof.as_v1_config();
        let Ok(circuits) = cuzk_prove::circuit::porep_circuits(&config, c1.output) else {
            continue; // refused while the circuits are built
        };
        let whole = format!("{:#}", circuits.check(0).unwrap_err());
        assert!(whole.contains(needle), "{name}: {whole}");
        match (circuits.check_shape(0), content.contains(name)) {
            (Err(e), false) => {
                assert_eq!(format!("{e:#}"), whole, "{name}");
                by_shape += 1;
            }
            (Ok(()), true) => {}
            (shape, _) => panic!("{name}: the shape pass gave {shape:?}"),
        }
    }
    assert!(by_shape >= 10, "{by_shape} cases refused by their shape");
    // The check comes before every synthesis mode.
    let cache = dir.join("pce");
    for (name, c1, needle) in &cases[..2] {
        for (overlap, pce, partition) in [("on", "on", false), ("off", "off", true)] {
            let mut extra = vec![
                OsStr::new("--device"),
                OsStr::new("cpu"),
                OsStr::new("--overlap-synth"),
                OsStr::new(overlap),
                OsStr::new("--pce"),
                OsStr::new(pce),
                OsStr::new("--quiet"),
            ];
            if pce == "on" {
                extra.extend([OsStr::new("--pce-cache"), cache.as_os_str()]);
            }
            if partition {
                extra.extend([OsStr::new("--partition"), OsStr::new("0")]);
            }
            expect_error(&format!("{name}-{overlap}-{pce}"), c1, &extra, needle);
        }
    }
}

/// A parameters file that is a FIFO is refused before it is opened (an open would block).
#[test]
fn a_fifo_as_parameters_is_refused() {
    let dir = scratch("fifo-params");
    let fifo = dir.join("params.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (out, c1) = (dir.join("proof.bin"), fixture_c1());
    let args: Vec<&OsStr> = vec![
        OsStr::new("--c1"),
        c1.as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
        OsStr::new("--params"),
        fifo.as_os_str(),
        OsStr::new("--quiet"),
    ];
    expect_failure("fifo-params", &args, "is not a regular file", &out);
}

/// A mapped file truncated while in use: the SIGBUS handler writes one line naming the
/// file and exits 1 instead of the process dying silently. The fault is provoked in a
/// child (this test re-run with `CUZK_SIGBUS_CHILD` set), as it ends the process.
#[test]
fn a_mapped_file_truncated_while_in_use_is_one_line() {
    if let Some(path) = std::env::var_os("CUZK_SIGBUS_CHILD") {
        let path = PathBuf::from(path);
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let map = unsafe { memmap2::Mmap::map(&file).unwrap() };
        cuzk_prove::signals::install().unwrap();
        let _named = cuzk_prove::signals::Mapped::register(&map, &path);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        // Every thread faults at once, as the decoders on every core do: one line, and
        // status 1, not a death by the signal (the standard library's own SIGBUS handler
        // reset the action to its default for the whole process).
        let map = &map;
        let go = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for t in 0..8 {
                let go = &go;
                s.spawn(move || {
                    go.wait();
                    let byte = unsafe { std::ptr::read_volatile(&map[(1 << 19) + t * 4096]) };
                    panic!("read {byte} from a truncated map without a fault");
                });
            }
        });
        unreachable!();
    }
    let path = scratch("sigbus").join("mapped.bin");
    let res = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_mapped_file_truncated_while_in_use_is_one_line",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CUZK_SIGBUS_CHILD", &path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(
        res.status.code(),
        Some(1),
        "status {:?}: {stderr}",
        res.status
    );
    let want = format!(
        "cuzk-prove: error: {} changed or was truncated while in use",
        path.display()
    );
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("cuzk-prove: error"))
        .collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with(&want),
        "not one line naming the file: {stderr}"
    );
}

/// An interrupted write (SIGINT, SIGTERM, SIGHUP while a proof, report or recording is
/// being written) leaves no temporary file, and the process ends as the signal's default
/// action would. The writer is a child (this test re-run with `CUZK_SIGNAL_CHILD` set)
/// whose `fill` says when it is halfway and then waits to be interrupted.
#[test]
fn an_interrupted_write_leaves_no_temporary_file() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    if let Some(path) = std::env::var_os("CUZK_SIGNAL_CHILD") {
        cuzk_prove::signals::install().unwrap();
        let _ = cuzk_prove::output::write_file_atomic(Path::new(&path), true, |f| {
            f.write_all(&[1u8; 4096])?;
            println!("halfway");
            std::io::stdout().flush()?;
            std::thread::sleep(std::time::Duration::from_secs(60));
            Ok(())
        });
        panic!("not interrupted");
    }
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let dir = scratch(&format!("signal-{signal}"));
        let path = dir.join("proof.bin");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "an_interrupted_write_leaves_no_temporary_file",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("CUZK_SIGNAL_CHILD", &path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(
            lines.any(|l| l.unwrap().ends_with("halfway")),
            "the child never wrote"
        );
        let names = || -> Vec<String> {
            std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        };
        assert!(
            names().iter().any(|n| n.ends_with(".tmp")),
            "no temporary: {:?}",
            names()
        );
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        assert!(
            names().is_empty(),
            "left after signal {signal}: {:?}",
            names()
        );
    }
}

/// `--presize` with section counts no PoRep circuit has (a sparse file whose h section
/// claims 2^29 points, the sections after it moved to match): one line, not an abort on
/// a reservation of tens of GB.
#[test]
fn presize_with_absurd_counts_is_one_line() {
    let p = edited_params("presize", |f, len| {
        let c = counts(f);
        let grow = (1u64 << 29) - 1 - c[1].1 as u64;
        f.seek(SeekFrom::Start(c[1].0)).unwrap();
        f.write_all(&(((1u64 << 29) - 1) as u32).to_be_bytes())
            .unwrap();
        for &(at, n, _) in &c[2..] {
            f.seek(SeekFrom::Start(at + grow * 96)).unwrap();
            f.write_all(&n.to_be_bytes()).unwrap();
        }
        f.set_len(len + grow * 96).unwrap();
    });
    expect_error(
        "presize",
        &fixture_c1(),
        &[
            OsStr::new("--params"),
            p.as_os_str(),
            OsStr::new("--presize"),
            // Past the memory planner, which refuses these counts first on a small host.
            OsStr::new("--memory-budget"),
            OsStr::new("4000GiB"),
            OsStr::new("--pce"),
            OsStr::new("off"),
            OsStr::new("--device"),
            OsStr::new("cpu"),
            OsStr::new("--quiet"),
        ],
        "--presize: parameters",
    );
}

/// The verifying key's points must be plain uncompressed encodings: α at infinity, or a
/// point whose first byte carries the compression flag, is refused in one line.
#[test]
fn a_verifying_key_at_infinity_or_flagged_is_refused() {
    let p = edited_params("vk-alpha-inf", |f, _| {
        let mut inf = vec![0u8; 96];
        inf[0] = 0x40;
        f.seek(SeekFrom::Start(0)).unwrap();
        f.write_all(&inf).unwrap();
    });
    expect_error(
        "vk-alpha-inf",
        &fixture_c1(),
        &[OsStr::new("--params"), p.as_os_str()],
        "alpha_g1 is not a plain uncompressed point",
    );
    let p = edited_params("vk-flag", |f, _| {
        let mut b = [0u8; 1];
        f.seek(SeekFrom::Start(96 + 96)).unwrap();
        f.read_exact(&mut b).unwrap();
        f.seek(SeekFrom::Start(96 + 96)).unwrap();
        f.write_all(&[b[0] | 0x80]).unwrap();
    });
    expect_error(
        "vk-flag",
        &fixture_c1(),
        &[OsStr::new("--params"), p.as_os_str()],
        "beta_g2 is not a plain uncompressed point",
    );
}

/// A full copy of the fixture's parameters (1.1 GB), for the tests whose run decodes
/// points; the caller removes it.
fn full_params_copy(name: &str) -> PathBuf {
    let dst = scratch(&format!("{name}-params")).join("test.params");
    std::fs::copy(params_file(), &dst).unwrap();
    dst
}

/// A point of E(Fp) (y² = x³ + 4) outside G1, as a .params section stores it.
fn point_outside_g1() -> [u8; 96] {
    use blstrs::Fp;
    use ff::Field;
    let mut x = Fp::from(5u64);
    let y = loop {
        if let Some(y) = Option::<Fp>::from((x.square() * x + Fp::from(4u64)).sqrt()) {
            break y;
        }
        x += Fp::ONE;
    };
    let p = blstrs::G1Affine::from_raw_unchecked(x, y, false);
    assert!(bool::from(p.is_on_curve()) && !bool::from(p.is_torsion_free()));
    let mut raw = [0u8; 96];
    raw[..48].copy_from_slice(&x.to_bytes_be());
    raw[48..].copy_from_slice(&y.to_bytes_be());
    raw
}

/// Parameters whose points decode (flags, range, curve) but are not all in their
/// subgroup: no decoder checks that (it would cost more than the proof), but the proof's
/// own points are always checked, so even `--no-verify` writes nothing; exit 1.
/// Then the same file truncated while the proof runs (after synthesis has started, before
/// the points are read): one line naming the file, exit 1, not a silent SIGBUS.
#[test]
fn points_outside_their_subgroup_and_a_truncation_mid_proof() {
    let params = full_params_copy("subgroup");
    let (h_at, _, _) = counts(&mut std::fs::File::open(&params).unwrap())[1];
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&params)
        .unwrap();
    f.seek(SeekFrom::Start(h_at + 4)).unwrap();
    f.write_all(&point_outside_g1()).unwrap();
    drop(f);
    // The fixture's recording fits these parameters (the same verifying key): loaded, not
    // made again.
    let pce_cache = param_cache().as_os_str();
    expect_error(
        "subgroup",
        &fixture_c1(),
        &[
            OsStr::new("--device"),
            OsStr::new("cpu"),
            OsStr::new("--params"),
            params.as_os_str(),
            OsStr::new("--pce-cache"),
            pce_cache,
            OsStr::new("--no-verify"),
            OsStr::new("--quiet"),
        ],
        "the proof of partition 0 has its point C outside its subgroup",
    );

    // The truncation: the prover's log says when the memory is planned, which comes after
    // the parameters' header and the verifying key are read and before synthesis; the
    // CPU backend reads the points after synthesis.
    let dir = scratch("trunc-mid-proof");
    let out = dir.join("proof.bin");
    let mut child = std::process::Command::new(BIN)
        .args([OsStr::new("--c1"), fixture_c1().as_os_str()])
        .args([OsStr::new("-o"), out.as_os_str()])
        .args([OsStr::new("--params"), params.as_os_str()])
        .args([OsStr::new("--pce-cache"), pce_cache])
        .args(["--device", "cpu", "--quiet"])
        .env("RUST_LOG", "cuzk_prove=info")
        .env_remove("FIL_PROOFS_PARAMETER_CACHE")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "the prover ended before planning its memory: {log}");
        log.push_str(&line);
        if line.contains("memory plan") {
            break;
        }
    }
    // At a page boundary: every byte past it faults (the bytes after the end of a file in
    // its last page would read as zeros, and be refused as a point that does not decode).
    let len = std::fs::metadata(&params).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&params)
        .unwrap()
        .set_len((len / 2) & !4095)
        .unwrap();
    stderr.read_to_string(&mut log).unwrap();
    let status = child.wait().unwrap();
    std::fs::remove_file(&params).unwrap();
    assert_eq!(status.code(), Some(1), "status {status:?}: {log}");
    let errors: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("cuzk-prove: error: "))
        .collect();
    let want = format!("{} changed or was truncated while in use", params.display());
    assert!(
        errors.len() == 1 && errors[0].contains(&want),
        "expected one line naming the file: {log}"
    );
    assert!(!log.contains("panicked"), "{log}");
    assert!(!out.exists(), "output left behind");
}
