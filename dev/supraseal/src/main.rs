//! supraseal-c2-bench: times Filecoin PoRep C2 (`seal_commit_phase2`) as Lotus/Curio run it
//! with supraseal-c2 as bellperson's Groth16 prover (filecoin-proofs-api, feature
//! `cuda-supraseal`), on the same C1 / meta.json / parameter files that cuzk-prove uses.

use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{anyhow, bail, ensure, Context, Result};
use base64::Engine;
use clap::Parser;
use filecoin_proofs_api::seal::{seal_commit_phase2, verify_seal, SealCommitPhase1Output};
use filecoin_proofs_api::{ApiFeature, RegisteredSealProof, SectorId};
use serde_json::{json, Value};

/// Times Filecoin PoRep C2 with supraseal-c2 (through filecoin-proofs-api 19.1,
/// feature cuda-supraseal) and verifies every proof.
#[derive(Parser, Debug)]
#[command(name = "supraseal-c2-bench", version, about, long_about = None)]
struct Args {
    /// C1 output: the lotus-bench/Curio wrapper {"SectorNum","Phase1Out","SectorSize"}
    /// or the raw filecoin-proofs-api SealCommitPhase1Output JSON.
    #[arg(long, value_name = "PATH")]
    c1: PathBuf,

    /// meta.json next to the C1: registered_proof, prover_id, sector_num, ticket, seed,
    /// comm_r, comm_d (32-byte values as hex).
    #[arg(long, value_name = "PATH")]
    meta: PathBuf,

    /// Groth16 parameter cache (v28-stacked-proof-of-replication-*.params/.vk);
    /// exported as FIL_PROOFS_PARAMETER_CACHE.
    #[arg(long, value_name = "DIR")]
    param_cache: PathBuf,

    /// Number of proofs in total; the first is the warm-up (loads the parameters into
    /// supraseal, initialises the GPU) and is left out of the median.
    #[arg(long, default_value_t = 4, value_name = "N")]
    runs: usize,

    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(args) {
        eprintln!("supraseal-c2-bench: error: {e:#}");
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------------------
// Inputs

/// Which of the two C1 forms the file was.
#[derive(Clone, Copy, Debug)]
enum C1Form {
    Wrapper,
    Raw,
}

struct C1 {
    form: C1Form,
    sector_num: Option<u64>,
    output: SealCommitPhase1Output,
}

fn read_c1(path: &Path) -> Result<C1> {
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read C1 file {}", path.display()))?;
    parse_c1(&bytes).with_context(|| format!("bad C1 file {}", path.display()))
}

fn parse_c1(bytes: &[u8]) -> Result<C1> {
    let top: Value = serde_json::from_slice(bytes).map_err(|e| anyhow!("not JSON: {e}"))?;
    let obj = top
        .as_object()
        .ok_or_else(|| anyhow!("the top level is not a JSON object"))?;

    let opt_u64 = |key: &str| -> Result<Option<u64>> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| anyhow!("\"{key}\" is not an unsigned integer")),
        }
    };

    let (form, sector_num, sector_size, inner) = match obj.get("Phase1Out") {
        Some(p1) => {
            let text = p1
                .as_str()
                .ok_or_else(|| anyhow!("\"Phase1Out\" is not a string"))?;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|e| anyhow!("\"Phase1Out\" is not standard base64: {e}"))?;
            let inner: Value = serde_json::from_slice(&decoded)
                .map_err(|e| anyhow!("decoded \"Phase1Out\" is not JSON: {e}"))?;
            (
                C1Form::Wrapper,
                opt_u64("SectorNum")?,
                opt_u64("SectorSize")?,
                inner,
            )
        }
        None if obj.contains_key("registered_proof") => (C1Form::Raw, None, None, top),
        None => bail!(
            "expected either a wrapper with \"Phase1Out\" or a SealCommitPhase1Output with \
             \"registered_proof\""
        ),
    };

    let output: SealCommitPhase1Output = serde_json::from_value(inner)
        .map_err(|e| anyhow!("not a filecoin-proofs-api SealCommitPhase1Output: {e}"))?;
    if let Some(size) = sector_size {
        let real = u64::from(output.registered_proof.sector_size());
        ensure!(
            size == real,
            "wrapper SectorSize {size} does not match {:?} ({real} bytes)",
            output.registered_proof
        );
    }
    Ok(C1 {
        form,
        sector_num,
        output,
    })
}

#[derive(serde::Deserialize)]
struct MetaJson {
    registered_proof: String,
    prover_id: String,
    sector_num: u64,
    ticket: String,
    seed: String,
    comm_r: String,
    comm_d: String,
}

struct Meta {
    registered_proof: RegisteredSealProof,
    prover_id: [u8; 32],
    sector_num: u64,
    ticket: [u8; 32],
    seed: [u8; 32],
    comm_r: [u8; 32],
    comm_d: [u8; 32],
}

fn read_meta(path: &Path) -> Result<Meta> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read meta file {}", path.display()))?;
    let m: MetaJson =
        serde_json::from_str(&text).with_context(|| format!("bad meta file {}", path.display()))?;
    let registered_proof: RegisteredSealProof =
        serde_json::from_value(Value::String(m.registered_proof.clone())).map_err(|_| {
            anyhow!(
                "meta file {}: unknown registered_proof '{}'",
                path.display(),
                m.registered_proof
            )
        })?;
    let field = |name: &str, v: &str| {
        hex32(v).with_context(|| format!("meta file {}: field {name}", path.display()))
    };
    Ok(Meta {
        registered_proof,
        prover_id: field("prover_id", &m.prover_id)?,
        sector_num: m.sector_num,
        ticket: field("ticket", &m.ticket)?,
        seed: field("seed", &m.seed)?,
        comm_r: field("comm_r", &m.comm_r)?,
        comm_d: field("comm_d", &m.comm_d)?,
    })
}

/// 32 bytes from 64 hex digits (an optional 0x prefix is accepted).
fn hex32(s: &str) -> Result<[u8; 32]> {
    let s = s.trim();
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    ensure!(
        s.len() == 64,
        "expected 64 hex digits (32 bytes), got {} characters",
        s.len()
    );
    let digit = |c: u8| -> Result<u8> {
        (c as char)
            .to_digit(16)
            .map(|d| d as u8)
            .ok_or_else(|| anyhow!("'{}' is not a hex digit", c as char))
    };
    let b = s.as_bytes();
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = digit(b[2 * i])? << 4 | digit(b[2 * i + 1])?;
    }
    Ok(out)
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .fold(String::with_capacity(2 * b.len()), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
}

/// The C1 must describe the same sector as meta.json, or verification would fail for
/// reasons that have nothing to do with the prover.
fn check_consistent(c1: &C1, meta: &Meta) -> Result<()> {
    let o = &c1.output;
    ensure!(
        o.registered_proof == meta.registered_proof,
        "C1 is {:?} but meta.json says {:?}",
        o.registered_proof,
        meta.registered_proof
    );
    for (name, a, b) in [
        ("comm_r", &o.comm_r, &meta.comm_r),
        ("comm_d", &o.comm_d, &meta.comm_d),
        ("ticket", &o.ticket, &meta.ticket),
        ("seed", &o.seed, &meta.seed),
    ] {
        ensure!(
            a == b,
            "{name} differs: C1 has {}, meta.json has {}",
            hex(a),
            hex(b)
        );
    }
    if let Some(n) = c1.sector_num {
        ensure!(
            n == meta.sector_num,
            "C1 wrapper SectorNum {n} but meta.json sector_num {}",
            meta.sector_num
        );
    }
    ensure!(
        !o.registered_proof
            .feature_enabled(ApiFeature::NonInteractivePoRep),
        "{:?} is non-interactive PoRep (aggregated C2 output); not benchmarked here",
        o.registered_proof
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Logging: env_logger for display, plus bellperson's per-proof timings captured for the
// table. bellperson's supraseal prover logs (at info) "synthesis time: {Duration:?}" after
// synthesising all partitions on the CPU and "prover time: {Duration:?}" after
// supraseal-c2's generate_groth16_proofs (CPU preprocessing + GPU NTT/MSM) returns.

#[derive(Default, Clone, Copy)]
struct Split {
    synthesis_s: Option<f64>,
    prover_s: Option<f64>,
}

static SPLIT: Mutex<Split> = Mutex::new(Split {
    synthesis_s: None,
    prover_s: None,
});

struct Logger {
    inner: env_logger::Logger,
}

fn is_bellperson_info(target: &str, level: log::Level) -> bool {
    level == log::Level::Info && target.starts_with("bellperson")
}

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata) -> bool {
        self.inner.enabled(m) || is_bellperson_info(m.target(), m.level())
    }

    fn log(&self, r: &log::Record) {
        if is_bellperson_info(r.target(), r.level()) {
            let msg = r.args().to_string();
            let hit = msg
                .strip_prefix("synthesis time: ")
                .map(|d| (true, d))
                .or_else(|| msg.strip_prefix("prover time: ").map(|d| (false, d)));
            if let Some((synth, d)) = hit {
                if let Some(secs) = parse_debug_duration(d) {
                    let mut s = SPLIT.lock().unwrap_or_else(|p| p.into_inner());
                    let slot = if synth {
                        &mut s.synthesis_s
                    } else {
                        &mut s.prover_s
                    };
                    *slot = Some(slot.unwrap_or(0.0) + secs);
                }
            }
        }
        if self.inner.matches(r) {
            self.inner.log(r);
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

fn init_logging() {
    let inner = env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or("warn,bellperson=info"),
    )
    .format_timestamp_millis()
    .build();
    let max = inner.filter().max(log::LevelFilter::Info);
    if log::set_boxed_logger(Box::new(Logger { inner })).is_ok() {
        log::set_max_level(max);
    }
}

/// Seconds from `Duration`'s Debug form: "1.5s", "812.25ms", "40.1µs", "300ns".
fn parse_debug_duration(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1e-9)
    } else if let Some(n) = s.strip_suffix("µs").or_else(|| s.strip_suffix("us")) {
        (n, 1e-6)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    num.parse::<f64>().ok().map(|v| v * scale)
}

// ---------------------------------------------------------------------------------------
// The benchmark

struct RunResult {
    run: usize,
    warmup: bool,
    seconds: f64,
    split: Split,
    verify_seconds: f64,
    verified: bool,
    proof_bytes: usize,
}

/// Runs `f`, turning a panic (supraseal-c2 panics on CUDA errors) into an error.
fn no_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".into());
            Err(anyhow!("{what} panicked: {msg}"))
        }
    }
}

fn run(args: Args) -> Result<()> {
    ensure!(args.runs >= 1, "--runs must be at least 1");

    // filecoin-proofs reads its settings (the parameter cache among them) once per
    // process, on first use: set it before anything from filecoin-proofs runs.
    let cache = args.param_cache.canonicalize().with_context(|| {
        format!(
            "parameter cache {} does not exist",
            args.param_cache.display()
        )
    })?;
    ensure!(
        cache.is_dir(),
        "parameter cache {} is not a directory",
        cache.display()
    );
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &cache);
    init_logging();

    let c1 = read_c1(&args.c1)?;
    let meta = read_meta(&args.meta)?;
    check_consistent(&c1, &meta)?;
    let proof = c1.output.registered_proof;
    let sector_size = u64::from(proof.sector_size());
    let partitions = proof.partitions();

    let params = proof
        .cache_params_path()
        .with_context(|| format!("cannot name the parameter file for {proof:?}"))?;
    let vk = proof
        .cache_verifying_key_path()
        .with_context(|| format!("cannot name the verifying key file for {proof:?}"))?;
    for f in [&params, &vk] {
        ensure!(
            f.is_file(),
            "{} not found (supraseal-c2 does not generate parameters; make them with \
             `cuzk-prove gen-params`)",
            f.display()
        );
    }

    let cuda_visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    println!(
        "supraseal-c2-bench: {proof:?} ({sector_size} bytes, {partitions} partition(s)), \
         C1 form {:?}, sector {}",
        c1.form, meta.sector_num
    );
    println!("  params: {}", params.display());
    println!(
        "  supraseal-c2 {}, sppark {}, bellperson {}, filecoin-proofs-api {}; \
         CUDA_VISIBLE_DEVICES={}",
        env!("BENCH_VERSION_SUPRASEAL_C2"),
        env!("BENCH_VERSION_SPPARK"),
        env!("BENCH_VERSION_BELLPERSON"),
        env!("BENCH_VERSION_FILECOIN_PROOFS_API"),
        cuda_visible.as_deref().unwrap_or("(unset: all GPUs)")
    );

    let sector_id = SectorId::from(meta.sector_num);
    let mut results = Vec::with_capacity(args.runs);
    for run in 1..=args.runs {
        *SPLIT.lock().unwrap_or_else(|p| p.into_inner()) = Split::default();
        let input = c1.output.clone();
        let t = Instant::now();
        let out = no_panic("seal_commit_phase2", || {
            seal_commit_phase2(input, meta.prover_id, sector_id).map_err(anyhow::Error::from)
        })
        .map_err(|e| {
            if format!("{e:#}").contains("No CUDA devices") {
                e.context(
                    "supraseal-c2 has no CPU fallback: it needs an NVIDIA GPU visible to the \
                     CUDA runtime (check nvidia-smi and CUDA_VISIBLE_DEVICES)",
                )
            } else {
                e
            }
        })
        .with_context(|| format!("run {run}: seal_commit_phase2 failed"))?;
        let seconds = t.elapsed().as_secs_f64();
        let split = *SPLIT.lock().unwrap_or_else(|p| p.into_inner());

        let t = Instant::now();
        let verified = no_panic("verify_seal", || {
            verify_seal(
                proof,
                meta.comm_r,
                meta.comm_d,
                meta.prover_id,
                sector_id,
                meta.ticket,
                meta.seed,
                &out.proof,
            )
            .map_err(anyhow::Error::from)
        })
        .with_context(|| format!("run {run}: verify_seal failed"))?;
        let verify_seconds = t.elapsed().as_secs_f64();

        let r = RunResult {
            run,
            warmup: run == 1,
            seconds,
            split,
            verify_seconds,
            verified,
            proof_bytes: out.proof.len(),
        };
        print_row(&r);
        results.push(r);
        if !verified {
            break;
        }
    }

    let warm: Vec<f64> = results
        .iter()
        .filter(|r| !r.warmup)
        .map(|r| r.seconds)
        .collect();
    let median_warm = median(&warm);
    println!();
    print_table(&results);
    match median_warm {
        Some(m) => println!("median of {} warm run(s): {m:.3} s", warm.len()),
        None => println!("no warm runs (--runs 1): only the warm-up was timed"),
    }

    let all_verified = results.iter().all(|r| r.verified);
    if let Some(path) = &args.json {
        let doc = json!({
            "tool": "supraseal-c2-bench",
            "prover": "supraseal-c2 via filecoin-proofs-api seal_commit_phase2",
            "versions": {
                "supraseal-c2": env!("BENCH_VERSION_SUPRASEAL_C2"),
                "sppark": env!("BENCH_VERSION_SPPARK"),
                "bellperson": env!("BENCH_VERSION_BELLPERSON"),
                "filecoin-proofs": env!("BENCH_VERSION_FILECOIN_PROOFS"),
                "filecoin-proofs-api": env!("BENCH_VERSION_FILECOIN_PROOFS_API"),
            },
            "c1": args.c1.display().to_string(),
            "c1_form": format!("{:?}", c1.form),
            "meta": args.meta.display().to_string(),
            "param_cache": cache.display().to_string(),
            "registered_proof": format!("{proof:?}"),
            "sector_size": sector_size,
            "sector_num": meta.sector_num,
            "partitions": partitions,
            "cuda_visible_devices": cuda_visible,
            "runs": results.iter().map(|r| json!({
                "run": r.run,
                "warmup": r.warmup,
                "seconds": r.seconds,
                "synthesis_seconds": r.split.synthesis_s,
                "prover_seconds": r.split.prover_s,
                "verify_seconds": r.verify_seconds,
                "verified": r.verified,
                "proof_bytes": r.proof_bytes,
            })).collect::<Vec<_>>(),
            "warmup_seconds": results.first().map(|r| r.seconds),
            "median_warm_seconds": median_warm,
            "all_verified": all_verified,
        });
        let text = serde_json::to_string_pretty(&doc)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("wrote {}", path.display());
    }

    if !all_verified {
        let bad = results.iter().find(|r| !r.verified).map(|r| r.run);
        bail!(
            "proof of run {} did NOT verify against {}",
            bad.unwrap_or(0),
            args.meta.display()
        );
    }
    Ok(())
}

fn secs(v: Option<f64>) -> String {
    v.map(|s| format!("{s:.3}")).unwrap_or_else(|| "-".into())
}

fn print_row(r: &RunResult) {
    println!(
        "run {}{}: {:.3} s (synthesis {} s, prover {} s), verify {:.3} s: {}",
        r.run,
        if r.warmup { " (warm-up)" } else { "" },
        r.seconds,
        secs(r.split.synthesis_s),
        secs(r.split.prover_s),
        r.verify_seconds,
        if r.verified {
            "verified"
        } else {
            "NOT VERIFIED"
        }
    );
}

fn print_table(results: &[RunResult]) {
    println!(
        "{:>5}  {:>10}  {:>11}  {:>10}  {:>9}  verified",
        "run", "seconds", "synthesis_s", "prover_s", "verify_s"
    );
    for r in results {
        println!(
            "{:>5}  {:>10.3}  {:>11}  {:>10}  {:>9.3}  {}{}",
            r.run,
            r.seconds,
            secs(r.split.synthesis_s),
            secs(r.split.prover_s),
            r.verify_seconds,
            if r.verified { "yes" } else { "NO" },
            if r.warmup { "  (warm-up)" } else { "" }
        );
    }
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_durations() {
        let h = "e807000000000000000000000000000000000000000000000000000000000000";
        assert_eq!(hex32(h).unwrap()[..2], [0xe8, 0x07]);
        assert_eq!(hex(&hex32(h).unwrap()), h);
        assert!(hex32("e8").is_err());
        assert!(hex32(&"zz".repeat(32)).is_err());
        assert_eq!(parse_debug_duration("1.5s"), Some(1.5));
        assert!((parse_debug_duration("812.5ms").unwrap() - 0.8125).abs() < 1e-12);
        assert!((parse_debug_duration("40µs").unwrap() - 40e-6).abs() < 1e-12);
        assert_eq!(parse_debug_duration("oops"), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn c1_forms() {
        assert!(parse_c1(b"[]").is_err());
        assert!(parse_c1(b"{\"x\":1}").is_err());
        assert!(parse_c1(b"{\"Phase1Out\":\"%%%\"}").is_err());
        for dir in ["2kib", "8mib"] {
            let p = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../testdata")
                .join(dir)
                .join("c1.json");
            if let Ok(c1) = read_c1(&p) {
                let meta = read_meta(&p.with_file_name("meta.json")).unwrap();
                check_consistent(&c1, &meta).unwrap();
            }
        }
    }
}
