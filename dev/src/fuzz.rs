//! `cuzk-dev fuzz`: a mutation harness for what cuzk-prove reads from files it does not
//! control (issue 29), on stable Rust so CI runs it too. Each target starts from a valid
//! input, applies a few random mutations per run, and calls the product's own reader; an
//! error is the expected outcome, a panic is a crash (the input is saved, the run counted).
//!
//! - `c1`: the C1 parser and the check before synthesis (`parse_c1`, `porep_circuits`,
//!   every partition's `check`). Mutations mostly edit the JSON tree (numbers to edge
//!   values, arrays shortened, grown or emptied, keys dropped, types swapped), sometimes
//!   its bytes, in the raw form or inside the lotus-bench wrapper.
//! - `params`: the parameter file's header reader (`Srs::open`: the verifying key, the
//!   section counts against the file) on a compact file with the real key and short
//!   sections, its bytes mutated.
//! - `pce`: the recording's frame check and loader (`Pce::probe`, `Pce::load`) on a small
//!   circuit's recording, its bytes mutated.
//!
//! Runs are spread over the rayon pool; run `i`'s mutations come from `(seed, i)`, so a
//! crash is reproducible with `--first i --runs 1`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use base64::Engine;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    C1,
    Params,
    Pce,
}

/// What a campaign did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub runs: usize,
    /// Runs the reader accepted (the mutation kept the input valid).
    pub accepted: usize,
    /// Runs that panicked; their inputs are in the crash directory.
    pub crashes: usize,
    pub seconds: f64,
}

/// Fuzzes `target` for `runs` runs numbered from `first`, starting from `seed_input` (a C1,
/// a `.params` file, or None for the pce target's own small recording); crashing inputs go
/// to `crashes`.
pub fn run(
    target: Target,
    seed_input: Option<&Path>,
    runs: usize,
    first: u64,
    seed: u64,
    crashes: &Path,
) -> Result<Outcome> {
    std::fs::create_dir_all(crashes)?;
    let scratch = tempfile::tempdir()?;
    let base = Base::new(target, seed_input, scratch.path())?;
    let (accepted, crashed) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let t0 = Instant::now();
    // Panics are the findings: the default hook's report per panic would flood stderr.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    (first..first + runs as u64).into_par_iter().for_each(|i| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let input = base.mutate(&mut rng);
        let file = scratch.path().join(format!(
            "run-{}",
            rayon::current_thread_index().unwrap_or(0)
        ));
        match catch_unwind(AssertUnwindSafe(|| base.read(&input, &file))) {
            Ok(true) => {
                accepted.fetch_add(1, Ordering::Relaxed);
            }
            Ok(false) => {}
            Err(_) => {
                crashed.fetch_add(1, Ordering::Relaxed);
                let _ = std::fs::write(crashes.join(format!("{target:?}-{seed}-{i}")), &input);
            }
        }
    });
    std::panic::set_hook(hook);
    Ok(Outcome {
        runs,
        accepted: accepted.into_inner(),
        crashes: crashed.into_inner(),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// A target's valid starting input and its reader.
enum Base {
    C1 { raw: Value },
    Params { bytes: Vec<u8> },
    Pce { bytes: Vec<u8> },
}

impl Base {
    fn new(target: Target, seed_input: Option<&Path>, scratch: &Path) -> Result<Self> {
        let need = || seed_input.context("this target needs --input FILE");
        Ok(match target {
            Target::C1 => {
                let bytes = std::fs::read(need()?)?;
                let mut v: Value = serde_json::from_slice(&bytes)?;
                if let Some(p1) = v.get("Phase1Out").and_then(Value::as_str) {
                    let raw = base64::engine::general_purpose::STANDARD.decode(p1)?;
                    v = serde_json::from_slice(&raw)?;
                }
                Base::C1 { raw: v }
            }
            Target::Params => Base::Params {
                bytes: compact_params(need()?)?,
            },
            Target::Pce => Base::Pce {
                bytes: small_recording(scratch)?,
            },
        })
    }

    fn mutate(&self, rng: &mut ChaCha20Rng) -> Vec<u8> {
        match self {
            Base::C1 { raw } => {
                let mut v = raw.clone();
                for _ in 0..rng.gen_range(1..=3) {
                    mutate_json(&mut v, rng);
                }
                let mut bytes = serde_json::to_vec(&v).expect("a JSON value serializes");
                if rng.gen_ratio(1, 5) {
                    mutate_bytes(&mut bytes, rng);
                }
                if rng.gen_bool(0.5) {
                    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
                    let w =
                        serde_json::json!({"SectorNum": 1, "Phase1Out": b64, "SectorSize": 2048});
                    bytes = serde_json::to_vec(&w).expect("a JSON value serializes");
                }
                bytes
            }
            Base::Params { bytes } | Base::Pce { bytes } => {
                let mut b = bytes.clone();
                for _ in 0..rng.gen_range(1..=4) {
                    mutate_bytes(&mut b, rng);
                }
                b
            }
        }
    }

    /// Whether the product's reader accepted `input` (an error is a refusal); panics
    /// propagate to the caller.
    fn read(&self, input: &[u8], file: &Path) -> bool {
        match self {
            Base::C1 { .. } => read_c1(input).is_ok(),
            Base::Params { .. } => {
                std::fs::write(file, input).is_ok()
                    && cuzk_prove::input::srs::Srs::open(file).is_ok()
            }
            Base::Pce { .. } => {
                use cuzk_prove::synth::pce::Pce;
                if std::fs::write(file, input).is_err() {
                    return false;
                }
                // Both readers on every input: the frame check is not a gate for the loader.
                let probed = Pce::probe(file, &fuzz_identity()).is_ok();
                let loaded = Pce::load(file, &fuzz_identity()).is_ok();
                probed && loaded
            }
        }
    }
}

fn read_c1(bytes: &[u8]) -> Result<()> {
    let c1 = cuzk_prove::input::c1::parse_c1(bytes)?;
    let config = c1.registered_proof.as_v1_config();
    let circuits = cuzk_prove::circuit::porep_circuits(&config, c1.output)?;
    (0..circuits.partitions()).try_for_each(|k| circuits.check(k))
}

/// Values that break assumptions: zero, one, byte and word edges, huge, negative.
fn edge_number(rng: &mut impl RngCore) -> Value {
    let n: Value = match rng.gen_range(0..9) {
        0 => 0.into(),
        1 => 1.into(),
        2 => 255.into(),
        3 => 256.into(),
        4 => (-1).into(),
        5 => u32::MAX.into(),
        6 => u64::MAX.into(),
        7 => 1e300.into(),
        _ => rng.gen::<u8>().into(),
    };
    n
}

/// One edit at a random place of the tree (a random walk from the root).
fn mutate_json(v: &mut Value, rng: &mut ChaCha20Rng) {
    let depth = rng.gen_range(0..24);
    edit_at(v, depth, rng)
}

fn edit_at(node: &mut Value, depth: usize, rng: &mut ChaCha20Rng) {
    if depth > 0 {
        match node {
            Value::Array(a) if !a.is_empty() => {
                let i = rng.gen_range(0..a.len());
                return edit_at(&mut a[i], depth - 1, rng);
            }
            Value::Object(o) if !o.is_empty() => {
                let i = rng.gen_range(0..o.len());
                let child = o.values_mut().nth(i).expect("in range");
                return edit_at(child, depth - 1, rng);
            }
            _ => {}
        }
    }
    match node {
        Value::Array(a) => match rng.gen_range(0..5) {
            0 => a.clear(),
            1 if !a.is_empty() => {
                let keep = rng.gen_range(0..a.len());
                a.truncate(keep);
            }
            2 if !a.is_empty() => {
                let i = rng.gen_range(0..a.len());
                let x = a[i].clone();
                a.insert(i, x);
            }
            3 if !a.is_empty() => {
                let i = rng.gen_range(0..a.len());
                a[i] = edge_number(rng);
            }
            _ => *node = Value::Null,
        },
        Value::Object(o) => {
            if !o.is_empty() && rng.gen_bool(0.7) {
                let i = rng.gen_range(0..o.len());
                let k = o.keys().nth(i).expect("in range").clone();
                o.remove(&k);
            } else {
                o.insert("unexpected".into(), edge_number(rng));
            }
        }
        Value::Number(_) => *node = edge_number(rng),
        Value::String(s) => {
            *s = match rng.gen_range(0..3) {
                0 => String::new(),
                1 => "\u{1b}[2J\r".repeat(rng.gen_range(1..100)),
                _ => format!("{s}X"),
            }
        }
        _ => *node = edge_number(rng),
    }
}

/// One byte-level edit: a flipped bit, a byte or aligned word set to an edge value, a cut,
/// an insertion, a duplicated or deleted range.
fn mutate_bytes(b: &mut Vec<u8>, rng: &mut ChaCha20Rng) {
    if b.is_empty() {
        b.push(rng.gen());
        return;
    }
    let at = rng.gen_range(0..b.len());
    match rng.gen_range(0..7) {
        0 => b[at] ^= 1 << rng.gen_range(0..8),
        1 => b[at] = rng.gen(),
        2 => {
            let at = at & !7;
            let word: u64 = match rng.gen_range(0..5) {
                0 => 0,
                1 => u64::MAX,
                2 => 1 << 31,
                3 => rng.gen::<u32>() as u64,
                _ => rng.gen(),
            };
            for (i, x) in word.to_le_bytes().iter().enumerate() {
                if let Some(d) = b.get_mut(at + i) {
                    *d = *x;
                }
            }
        }
        3 => b.truncate(at),
        4 => {
            let n = rng.gen_range(1..64);
            let ins: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            b.splice(at..at, ins);
        }
        5 => {
            let end = (at + rng.gen_range(1..256)).min(b.len());
            let chunk = b[at..end].to_vec();
            b.splice(at..at, chunk);
        }
        _ => {
            let end = (at + rng.gen_range(1..256)).min(b.len());
            b.drain(at..end);
        }
    }
}

/// The real verifying key and input points of `params`, then its five sections with a few
/// points each (zeros: the header reader decodes only the key): a few KB to mutate.
fn compact_params(params: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(params)?;
    let mut head = vec![0u8; 3 * 96 + 3 * 192 + 4];
    f.read_exact(&mut head)?;
    let ic = u32::from_be_bytes(head[head.len() - 4..].try_into()?) as usize;
    let mut points = vec![0u8; ic * 96];
    f.read_exact(&mut points)?;
    head.extend(points);
    // h: 2^k − 1 points; l, a, b_g1, b_g2: two each.
    for (count, size) in [(3u32, 96), (2, 96), (2, 96), (2, 96), (2, 192)] {
        head.extend(count.to_be_bytes());
        head.extend(std::iter::repeat_n(0u8, count as usize * size));
    }
    Ok(head)
}

/// A small circuit's recording, as `Pce::save` writes it.
fn small_recording(dir: &Path) -> Result<Vec<u8>> {
    let (_, pce) = cuzk_prove::synth::pce::synthesize_recording(Chain(40))?;
    let path: PathBuf = dir.join("small.pce");
    pce.save(&path, true, &fuzz_identity())?;
    Ok(std::fs::read(&path)?)
}

/// The identity the small recording is saved under and read for.
fn fuzz_identity() -> cuzk_prove::synth::pce::Identity {
    cuzk_prove::synth::pce::Identity {
        vk_digest: "0123456789abcdef0123456789abcdef".into(),
        circuit: "fuzz chain".into(),
    }
}

/// x, x², x³, … as a chain of multiplications, with one public input: a recording with
/// coefficients, densities and all three matrices populated.
struct Chain(usize);

impl bellperson::Circuit<blstrs::Scalar> for Chain {
    fn synthesize<CS: bellperson::ConstraintSystem<blstrs::Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellperson::SynthesisError> {
        use ff::Field;
        let x = blstrs::Scalar::from(3u64);
        let xv = cs.alloc_input(|| "x", || Ok(x))?;
        let (mut v, mut acc) = (xv, x);
        for i in 0..self.0 {
            let next = acc * x;
            let nv = cs.alloc(|| format!("x^{}", i + 2), || Ok(next))?;
            cs.enforce(
                || format!("c{i}"),
                |lc| lc + v,
                |lc| lc + xv,
                |lc| lc + nv + (blstrs::Scalar::ZERO, v),
            );
            (v, acc) = (nv, next);
        }
        Ok(())
    }
}
