//! What a run reports: the `--timings` table ([`Timings`], [`Peaks`]) and the `--json`
//! document ([`Report`]), typed and filled by the stages as they go. The document is
//! written on success and on failure (then with `error`); its keys are snake_case and
//! stable, and `schema_version` changes whenever one is renamed or removed.

mod memory;
mod timings;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

pub use memory::{PeakMemory, Peaks};
pub use timings::{key, TimingRow, Timings};

use crate::input::c1::C1Format;
use crate::input::params_digest::KeyStatus;
use crate::input::srs::Section;
use crate::pipeline::memory_budget::Plan;
use crate::synth::{Shape, WitnessStats};

/// The report format's version (1: the first typed report, cuzk-prove 0.1).
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// The `--json` document.
#[derive(Debug, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub build: Build,
    /// The settings the run used (every flag, defaults included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flags: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c1: Option<C1Info>,
    /// The sector's partitions (all of them, also with `--partition`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<ParamsInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_plan: Option<Plan>,
    /// "cuda" or "cpu": the backend that proved (or would have).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuInfo>,
    /// The device queues that proved (`--gpus`: one per GPU), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<QueueInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub circuit: Option<Shape>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pce: Option<PceInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Peaks>,
    /// The timing table's rows, in order, `total` last.
    pub timings: Vec<TimingRow>,
    /// The same seconds by key, for scripts.
    pub timings_s: BTreeMap<String, f64>,
    /// Warnings of the run (printed at its end when it succeeds).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
}

impl Default for Report {
    fn default() -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            build: Build::this(),
            flags: None,
            c1: None,
            partitions: None,
            params: None,
            memory_plan: None,
            backend: None,
            gpu: None,
            queues: Vec::new(),
            circuit: None,
            witness: None,
            pce: None,
            verified: None,
            output: None,
            memory: None,
            timings: Vec::new(),
            timings_s: BTreeMap::new(),
            warnings: Vec::new(),
            error: None,
        }
    }
}

impl Report {
    /// Takes the timing rows (when the run is over, or has failed).
    pub fn set_timings(&mut self, t: &Timings) {
        self.timings = t.rows();
        self.timings_s = self
            .timings
            .iter()
            .map(|r| (r.key.clone(), r.seconds))
            .collect();
    }

    /// The document as JSON.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a report serializes")
    }
}

/// This binary: its version and commit, whether CUDA kernels are compiled in and for
/// which architectures, and the versions of the crates whose circuit and proof format
/// it follows.
#[derive(Clone, Debug, Serialize)]
pub struct Build {
    pub version: &'static str,
    /// The git commit it was built from ("unknown" outside a git checkout).
    pub commit: &'static str,
    /// The SM architectures of the compiled kernels ("80,89,90,120"), or None without
    /// CUDA.
    pub cuda_archs: Option<&'static str>,
    pub filecoin_proofs: &'static str,
    pub storage_proofs_porep: &'static str,
    pub bellperson: &'static str,
    pub blstrs: &'static str,
    pub blst: &'static str,
}

impl Build {
    pub fn this() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("CUZK_COMMIT"),
            cuda_archs: option_env!("CUZK_CUDA_ARCHS_BUILT"),
            filecoin_proofs: env!("CUZK_DEP_FILECOIN_PROOFS"),
            storage_proofs_porep: env!("CUZK_DEP_STORAGE_PROOFS_POREP"),
            bellperson: env!("CUZK_DEP_BELLPERSON"),
            blstrs: env!("CUZK_DEP_BLSTRS"),
            blst: env!("CUZK_DEP_BLST"),
        }
    }
}

/// `--version`'s long form.
pub(crate) const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit ",
    env!("CUZK_COMMIT"),
    "\ncuda ",
    env!("CUZK_CUDA_BUILD"),
    "\nfollows filecoin-proofs ",
    env!("CUZK_DEP_FILECOIN_PROOFS"),
    ", storage-proofs-porep ",
    env!("CUZK_DEP_STORAGE_PROOFS_POREP"),
    ", bellperson ",
    env!("CUZK_DEP_BELLPERSON"),
    "\nblstrs ",
    env!("CUZK_DEP_BLSTRS"),
    ", blst ",
    env!("CUZK_DEP_BLST"),
);

/// `--version`'s short form.
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CUZK_COMMIT"),
    ", cuda ",
    env!("CUZK_CUDA_BUILD"),
    ")"
);

#[derive(Clone, Debug, Serialize)]
pub struct C1Info {
    /// The file, or "-" for standard input.
    pub path: PathBuf,
    /// "Wrapper" (lotus-bench / Curio) or "Raw" (filecoin-proofs-api JSON).
    pub format: C1Format,
    pub bytes: usize,
    pub registered_proof: String,
    pub sector_size: u64,
    pub sector_size_name: String,
    pub sector_num: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ParamsInfo {
    pub path: PathBuf,
    pub bytes: usize,
    pub domain: usize,
    /// Made by `--gen-test-params` / `cuzk-dev gen-params` (worthless on chain).
    pub test_only: bool,
    /// Whose verifying key: "production" (filecoin-proofs' digest), "test", "unknown".
    pub key: KeyStatus,
    /// The whole file was checked against the production digest (`--verify-params`).
    pub digest_verified: bool,
    pub sections: Vec<Section>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GpuInfo {
    pub index: usize,
    pub name: String,
    pub memory_bytes: u64,
}

/// What one device queue did.
#[derive(Clone, Debug, Serialize)]
pub struct QueueInfo {
    /// "GPU 1", or "CPU".
    pub device: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuInfo>,
    /// The partitions it proved, in the order it proved them.
    pub partitions: Vec<usize>,
    /// Seconds spent proving, and waiting for synthesized partitions.
    pub busy_s: f64,
    pub waited_s: f64,
    /// Why it stopped taking partitions (its partition then went to another queue).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PceInfo {
    pub path: Option<PathBuf>,
    /// "recorded" in this run, or "loaded".
    pub source: &'static str,
    /// Terms in A, B, C.
    pub terms: [usize; 3],
    /// Where A·w, B·w, C·w were evaluated: "backend" (the GPU) or "cpu".
    pub eval: &'static str,
    /// Whether a recording made here was kept (None: none was made).
    pub saved: Option<bool>,
}

#[derive(Clone, Debug, Serialize)]
pub struct OutputInfo {
    /// The file, or "-" for standard output.
    pub path: PathBuf,
    pub bytes: usize,
}

/// Why a run failed: what the exit status says, and the one-line message.
#[derive(Clone, Debug, Serialize)]
pub struct ErrorInfo {
    pub kind: ErrorKind,
    pub exit_code: i32,
    pub message: String,
}

/// The class of a failure, each with its exit status (the man page's EXIT STATUS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Anything else: I/O, the GPU, memory, an internal error.
    Runtime,
    /// A flag's value the command line cannot use (clap's own errors exit 2 too).
    Usage,
    /// The C1, the parameters or a flag's value is wrong or damaged.
    BadInput,
    /// The parameters for the C1's sector size are not where they are looked for.
    MissingParameters,
}

impl ErrorKind {
    /// 1 runtime, 2 usage (as clap's), 3 bad input, 4 missing parameters.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Runtime => 1,
            ErrorKind::Usage => 2,
            ErrorKind::BadInput => 3,
            ErrorKind::MissingParameters => 4,
        }
    }
}

/// A failed run: its class and the error.
#[derive(Debug)]
pub struct Failure {
    pub kind: ErrorKind,
    pub error: anyhow::Error,
}

impl Failure {
    /// The one line printed and reported.
    pub fn message(&self) -> String {
        one_line(&format!("{:#}", self.error))
    }

    pub fn info(&self) -> ErrorInfo {
        ErrorInfo {
            kind: self.kind,
            exit_code: self.kind.exit_code(),
            message: self.message(),
        }
    }
}

/// The longest error line printed: a C1 or file can put any text into a message.
const MAX_LINE: usize = 1000;

/// An error chain as one safe terminal line: line breaks become spaces, other control
/// characters (escape sequences, carriage returns) are shown escaped, and past
/// [`MAX_LINE`] characters the rest is cut.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_LINE + 16));
    for (n, c) in s.chars().enumerate() {
        if n == MAX_LINE {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push(' '),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// Unclassified errors are runtime faults.
impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure {
            kind: ErrorKind::Runtime,
            error,
        }
    }
}

/// Classifies a stage's error: `stage().kind(ErrorKind::BadInput)?`.
pub(crate) trait Classify<T> {
    fn kind(self, kind: ErrorKind) -> Result<T, Failure>;
}

impl<T> Classify<T> for anyhow::Result<T> {
    fn kind(self, kind: ErrorKind) -> Result<T, Failure> {
        self.map_err(|error| Failure { kind, error })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_line_escapes_controls_and_cuts() {
        assert_eq!(super::one_line("a\nb"), "a b");
        assert_eq!(super::one_line("x\u{1b}[31my\rz"), "x\\u{1b}[31my\\rz");
        let long = super::one_line(&"é".repeat(5000));
        assert_eq!(long.chars().count(), super::MAX_LINE + 1);
        assert!(long.ends_with('…'));
    }
}
