//! Reading a C1 (`SealCommitPhase1Output`) in either of the two forms found in the wild:
//! - the lotus-bench / Curio wrapper `{"SectorNum", "Phase1Out", "SectorSize"}` where
//!   `Phase1Out` is the standard base64 of the raw JSON;
//! - the raw filecoin-proofs-api JSON (`registered_proof`, `vanilla_proofs`, `comm_r`, ...).

use std::path::Path;

use anyhow::{anyhow, bail, ensure, Context, Result};
use base64::Engine;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use serde_json::Value;
use storage_proofs_core::api_version::ApiFeature;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum C1Format {
    /// `{"SectorNum", "Phase1Out", "SectorSize"}` as lotus-bench and Curio write it.
    Wrapper,
    /// The filecoin-proofs-api `SealCommitPhase1Output` JSON.
    Raw,
}

pub struct C1 {
    pub format: C1Format,
    pub registered_proof: RegisteredSealProof,
    /// The wrapper's `SectorNum`, when present.
    pub sector_num: Option<u64>,
    pub output: SealCommitPhase1Output,
    pub file_bytes: usize,
}

impl C1 {
    pub fn sector_size(&self) -> u64 {
        u64::from(self.registered_proof.sector_size())
    }
}

/// Every registered proof this reader knows, for error messages.
fn known_proofs() -> String {
    use RegisteredSealProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
    ]
    .iter()
    .map(|p| format!("{p:?}"))
    .collect::<Vec<_>>()
    .join(", ")
}

pub fn parse_registered_proof(name: &str) -> Result<RegisteredSealProof> {
    let proof: RegisteredSealProof = serde_json::from_value(Value::String(name.to_owned()))
        .map_err(|_| {
            anyhow!(
                "unknown registered proof '{name}' (known: {})",
                known_proofs()
            )
        })?;
    if proof.feature_enabled(ApiFeature::NonInteractivePoRep) {
        bail!(
            "registered proof '{name}' is non-interactive PoRep, whose C2 output is an aggregate \
             of the partition proofs; cuzk-prove writes per-partition proofs only"
        );
    }
    Ok(proof)
}

/// The largest C1 read: a 64GiB sector's is about 110 MB in the lotus-bench wrapper, so
/// this leaves a margin of 4× while a file of another kind (or `/dev/zero`) is refused
/// before it fills memory.
pub const C1_MAX_BYTES: u64 = 512 << 20;

/// [`read_c1_within`] the default limit, [`C1_MAX_BYTES`].
pub fn read_c1(path: &Path) -> Result<C1> {
    read_c1_within(path, C1_MAX_BYTES)
}

/// Reads and parses a C1 from `path`, or from standard input for `-`. Only a regular file
/// is read (a FIFO or device would block or never end), and at most `limit` bytes
/// (`--c1-max-size`).
pub fn read_c1_within(path: &Path, limit: u64) -> Result<C1> {
    let bytes = read_input(path, limit)?;
    parse_c1(&bytes).context(input_name(path))
}

/// How errors name the C1 at `path`.
fn input_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "C1 from standard input".to_owned()
    } else {
        format!("C1 file {}", path.display())
    }
}

/// A C1 being parsed on a thread of its own, its proof type already read from its head:
/// the pipeline maps that type's parameters and starts their upload to the GPU while the
/// rest is parsed (0.4–0.7 s at 32GiB).
pub struct Reading {
    pub registered_proof: RegisteredSealProof,
    parse: std::thread::JoinHandle<Result<C1>>,
}

impl Reading {
    /// Reads `path` as [`read_c1_within`] does and finds its proof type; the whole parse
    /// goes on beside the caller until [`Reading::finish`]. The proof type is read from
    /// the first bytes where it comes first, as filecoin-proofs writes it ([`peek_proof`]:
    /// at 32GiB the head's whole pass, 0.27 s on the H200 host, came before the
    /// parameters' upload could start), else from the head, which then fails here with
    /// the same words the whole parse would use.
    pub fn start(path: &Path, limit: u64) -> Result<Self> {
        let bytes = read_input(path, limit)?;
        let name = input_name(path);
        let (registered_proof, head) = match peek_proof(&bytes) {
            Some(p) => (p, None),
            None => {
                let head = unwrap_c1(&bytes).with_context(|| name.clone())?;
                (head.registered_proof, Some(head))
            }
        };
        let parse = std::thread::Builder::new()
            .name("c1-parse".into())
            .spawn(move || {
                let whole = || -> Result<C1> {
                    let head = match head {
                        Some(h) => h,
                        None => unwrap_c1(&bytes)?,
                    };
                    ensure!(
                        head.registered_proof == registered_proof,
                        "registered_proof {:?}, but its first bytes say {registered_proof:?}",
                        head.registered_proof
                    );
                    typed(&bytes, head)
                };
                whole().context(name)
            })
            .context("cannot start the C1's parse")?;
        Ok(Self {
            registered_proof,
            parse,
        })
    }

    /// The parsed C1 (its proof type the head's).
    pub fn finish(self) -> Result<C1> {
        self.parse
            .join()
            .map_err(|p| anyhow!("the C1's parse panicked: {}", crate::panics::message(&p)))?
    }
}

/// A C1's bytes: a regular file's, or standard input's, up to `limit`.
fn read_input(path: &Path, limit: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let too_big = || {
        let size = match limit >> 20 {
            0 => format!("{limit} bytes"),
            mib => format!("{mib} MiB"),
        };
        anyhow!("larger than {size}: not a C1 (--c1-max-size raises the limit)")
    };
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .context("cannot read the C1 from standard input")?;
        ensure!(
            bytes.len() as u64 <= limit,
            "C1 from standard input is {}",
            too_big()
        );
        return Ok(bytes);
    }
    let what = || format!("cannot read C1 file {}", path.display());
    let file = std::fs::File::open(path).with_context(what)?;
    let meta = file.metadata().with_context(what)?;
    ensure!(
        meta.is_file(),
        "C1 {} is not a regular file (use --c1 - to read standard input)",
        path.display()
    );
    ensure!(
        meta.len() <= limit,
        "C1 file {} is {}",
        path.display(),
        too_big()
    );
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(what)?;
    ensure!(
        bytes.len() as u64 <= limit,
        "C1 file {} is {}",
        path.display(),
        too_big()
    );
    Ok(bytes)
}

/// The fields of a C1's top level that tell its format, read without building the
/// rest (serde skips unknown fields without allocating them): the wrapper's, or the raw
/// output's `registered_proof`.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "Phase1Out")]
    phase1_out: Option<Value>,
    #[serde(rename = "SectorNum")]
    sector_num: Option<Value>,
    #[serde(rename = "SectorSize")]
    sector_size: Option<Value>,
    registered_proof: Option<Value>,
}

/// [`Head`] of `bytes`, the errors in the words a user needs.
fn head(bytes: &[u8], what: &str) -> Result<Head> {
    serde_json::from_slice(bytes).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => anyhow!("expected a JSON object"),
        _ => anyhow!("{what}: {e}"),
    })
}

/// Parses a C1 straight into filecoin-proofs-api's typed output (no intermediate JSON
/// tree: that cost a 32GiB C1 about a second and 17× its size in memory).
pub fn parse_c1(bytes: &[u8]) -> Result<C1> {
    let head = unwrap_c1(bytes)?;
    typed(bytes, head)
}

/// What a C1's head says: its format, the wrapper's fields, the raw output (the
/// wrapper's Phase1Out decoded; None: `bytes` themselves) and the proof type it names.
struct Unwrapped {
    format: C1Format,
    sector_num: Option<u64>,
    inner: Option<Vec<u8>>,
    registered_proof: RegisteredSealProof,
}

/// The proof type from a C1's first bytes, when `registered_proof` comes before the
/// vanilla proofs in the SealCommitPhase1Output (as filecoin-proofs' serialization writes
/// it), raw or base64 in the wrapper's `Phase1Out` (which lotus-bench and Curio write
/// before or after `SectorNum`): a few kilobytes are read, not the whole. None whenever
/// the bytes are laid out otherwise (the head's whole pass then decides), never a wrong
/// answer: the whole parse checks it.
fn peek_proof(bytes: &[u8]) -> Option<RegisteredSealProof> {
    const PREFIX: usize = 4096;
    let raw = match string_value(bytes, "Phase1Out") {
        Some(b64) => {
            let b64 = &b64[..b64.len().min(PREFIX)];
            let whole = b64.len() / 4 * 4; // whole groups of four decode alone
            std::borrow::Cow::Owned(
                base64::engine::general_purpose::STANDARD
                    .decode(&b64[..whole])
                    .ok()?,
            )
        }
        None => std::borrow::Cow::Borrowed(&bytes[..bytes.len().min(PREFIX)]),
    };
    let name = string_value(&raw, "registered_proof")?;
    parse_registered_proof(std::str::from_utf8(name).ok()?).ok()
}

/// The string value of `key` in the JSON object `b` starts with, when only numbers,
/// strings and literals come before it at the top level and neither it nor they hold an
/// escape; the value may be cut short by the end of `b`. None otherwise.
fn string_value<'a>(b: &'a [u8], key: &str) -> Option<&'a [u8]> {
    // A string's bytes and what follows its closing quote (the end of `b` closes it).
    fn string(b: &[u8]) -> Option<(&[u8], &[u8])> {
        let rest = b.strip_prefix(b"\"")?;
        let end = rest.iter().position(|&c| c == b'"' || c == b'\\');
        match end {
            Some(i) if rest[i] == b'\\' => None,
            Some(i) => Some((&rest[..i], &rest[i + 1..])),
            None => Some((rest, &[])),
        }
    }
    let mut rest = b.trim_ascii_start().strip_prefix(b"{")?;
    loop {
        let (name, after) = string(rest.trim_ascii_start())?;
        let value = after
            .trim_ascii_start()
            .strip_prefix(b":")?
            .trim_ascii_start();
        if name == key.as_bytes() {
            return string(value).map(|(v, _)| v);
        }
        rest = match value.first()? {
            b'"' => string(value)?.1,
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                let end = value.iter().position(|&c| c == b',' || c == b'}')?;
                &value[end..]
            }
            _ => return None, // an object or array: give up
        };
        rest = rest.trim_ascii_start().strip_prefix(b",")?;
    }
}

/// [`Unwrapped`] from `bytes`: only their top level (and the wrapper's) is read, the
/// vanilla proofs are skipped.
fn unwrap_c1(bytes: &[u8]) -> Result<Unwrapped> {
    let outer = head(bytes, "not valid JSON")?;
    let (format, sector_num, declared_size, inner, name) = if let Some(p1) = outer.phase1_out {
        let b64 = p1
            .as_str()
            .ok_or_else(|| anyhow!("Phase1Out is not a string"))?;
        let inner = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|e| anyhow!("Phase1Out is not valid base64: {e}"))?;
        let num = |k: &str, v: Option<Value>| -> Result<Option<u64>> {
            match v {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .map(Some)
                    .ok_or_else(|| anyhow!("{k} is not an unsigned integer")),
            }
        };
        let sector_num = num("SectorNum", outer.sector_num)?;
        let sector_size = num("SectorSize", outer.sector_size)?;
        let h = head(&inner, "Phase1Out does not hold valid JSON")?;
        (
            C1Format::Wrapper,
            sector_num,
            sector_size,
            Some(inner),
            h.registered_proof,
        )
    } else if outer.registered_proof.is_some() {
        (C1Format::Raw, None, None, None, outer.registered_proof)
    } else {
        bail!(
            "neither a lotus-bench wrapper (no \"Phase1Out\") nor a SealCommitPhase1Output \
             (no \"registered_proof\")"
        );
    };
    let name = name
        .as_ref()
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("the C1 has no \"registered_proof\" string"))?;
    let registered_proof = parse_registered_proof(name)?;
    let size = u64::from(registered_proof.sector_size());
    if let Some(declared) = declared_size {
        if declared != size {
            bail!("wrapper says SectorSize {declared} but the C1 is for {name} ({size} bytes)");
        }
    }
    Ok(Unwrapped {
        format,
        sector_num,
        inner,
        registered_proof,
    })
}

/// The typed output of a C1 whose head is `head` (`bytes`: the whole file).
fn typed(bytes: &[u8], head: Unwrapped) -> Result<C1> {
    let raw = head.inner.as_deref().unwrap_or(bytes);
    let output: SealCommitPhase1Output = serde_json::from_slice(raw)
        .map_err(|e| anyhow!("malformed SealCommitPhase1Output: {e}"))?;
    Ok(C1 {
        format: head.format,
        registered_proof: head.registered_proof,
        sector_num: head.sector_num,
        output,
        file_bytes: bytes.len(),
    })
}

/// The 32-byte prover id Lotus derives from a miner actor id: the ID address payload
/// (unsigned LEB128 of the id), zero-padded.
pub fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let (mut v, mut i) = (miner_id, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// Parses `2KiB`, `8MiB`, `512MiB`, `32GiB`, `64GiB` or a byte count.
pub fn parse_sector_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let v = match t.to_ascii_lowercase().as_str() {
        "2kib" | "2k" => 2 << 10,
        "8mib" | "8m" => 8 << 20,
        "512mib" | "512m" => 512 << 20,
        "32gib" | "32g" => 32 << 30,
        "64gib" | "64g" => 64 << 30,
        other => other.parse::<u64>().map_err(|_| {
            anyhow!("unknown sector size '{s}' (use 2KiB, 8MiB, 512MiB, 32GiB or 64GiB)")
        })?,
    };
    match v {
        2048 | 8388608 | 536870912 | 34359738368 | 68719476736 => Ok(v),
        _ => bail!("unsupported sector size {v} (use 2KiB, 8MiB, 512MiB, 32GiB or 64GiB)"),
    }
}

pub(crate) fn sector_size_name(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{}GiB", b >> 30),
        b if b >= 1 << 20 => format!("{}MiB", b >> 20),
        b => format!("{}KiB", b >> 10),
    }
}

/// A subcommand's `--proof NAME` or `--sector-size SIZE` (its V1_1 proof).
pub fn registered_proof(
    cmd: &str,
    proof: Option<String>,
    sector_size: Option<String>,
) -> Result<RegisteredSealProof> {
    match (proof, sector_size) {
        (Some(p), _) => parse_registered_proof(&p),
        (None, Some(s)) => parse_registered_proof(v1_1_proof(parse_sector_size(&s)?)),
        (None, None) => bail!("{cmd} needs --sector-size or --proof"),
    }
}

pub fn v1_1_proof(sector_size: u64) -> &'static str {
    match sector_size {
        2048 => "StackedDrg2KiBV1_1",
        8388608 => "StackedDrg8MiBV1_1",
        536870912 => "StackedDrg512MiBV1_1",
        34359738368 => "StackedDrg32GiBV1_1",
        _ => "StackedDrg64GiBV1_1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proof_type_is_read_from_the_first_bytes() {
        let two = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/2kib/c1.json"
        ))
        .unwrap();
        let whole = parse_c1(&two).unwrap().registered_proof;
        assert_eq!(peek_proof(&two), Some(whole));
        // The raw output, and the wrapper with SectorNum first and odd spacing.
        let raw = unwrap_c1(&two).unwrap().inner.unwrap();
        assert_eq!(peek_proof(&raw), Some(whole));
        let b64 = base64::engine::general_purpose::STANDARD.encode(&raw);
        let w = format!("{{ \"SectorNum\" : 7 ,\n \"Phase1Out\":\"{b64}\",\"SectorSize\":2048}}");
        assert_eq!(peek_proof(w.as_bytes()), Some(whole));
        let w = format!(
            "{{\"Note\":\"x\",\"SectorNum\":null,\"Phase1Out\":\"{}\"}}",
            &b64[..100]
        );
        assert_eq!(peek_proof(w.as_bytes()), Some(whole));
        // Laid out otherwise, or not a C1: None (the whole parse decides).
        for other in [
            r#"{"vanilla_proofs":{},"registered_proof":"StackedDrg2KiBV1_1"}"#,
            r#"{"SectorNum":{"a":1},"Phase1Out":"eyJy"}"#,
            r#"{"registered_proof":"Stacked\u0044rg2KiBV1_1"}"#,
            r#"{"registered_proof":"StackedDrg4KiBV1"}"#,
            r#"{"registered_proof":7}"#,
            r#"["registered_proof"]"#,
            "",
            "{",
            r#"{"Phase1Out":"!!!!"}"#,
        ] {
            assert_eq!(peek_proof(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn prover_id_is_leb128_of_miner_id() {
        assert_eq!(prover_id_from_miner(1000)[..3], [0xe8, 0x07, 0x00]);
        assert_eq!(prover_id_from_miner(5)[..2], [5, 0]);
    }

    #[test]
    fn sector_sizes_parse() {
        assert_eq!(parse_sector_size("2KiB").unwrap(), 2048);
        assert_eq!(parse_sector_size("32GiB").unwrap(), 32 << 30);
        assert!(parse_sector_size("4KiB").is_err());
        assert_eq!(sector_size_name(8 << 20), "8MiB");
    }

    #[test]
    fn unknown_and_non_interactive_proofs_are_refused() {
        let e = parse_registered_proof("StackedDrg4KiBV1")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown registered proof 'StackedDrg4KiBV1'"),
            "{e}"
        );
        let e = parse_registered_proof("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep")
            .unwrap_err()
            .to_string();
        assert!(e.contains("non-interactive"), "{e}");
    }
}
