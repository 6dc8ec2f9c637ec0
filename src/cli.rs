//! Command-line flags and their validation into a [`Config`].

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

pub use crate::prove::cuda::backend::{PceEval, SrsDecode, BG2};

pub const DEFAULT_PARAM_CACHE: &str = "/var/tmp/filecoin-proof-parameters";

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-prove",
    version = crate::report::VERSION,
    long_version = crate::report::LONG_VERSION,
    about = "Single-shot Groth16 prover for Filecoin PoRep commit phase 2 (C2)",
    long_about = "Single-shot Groth16 prover for Filecoin PoRep commit phase 2 (C2).\n\n\
        Reads a C1 output (lotus-bench wrapper or raw filecoin-proofs-api JSON), memory-maps \
        the Groth16 parameters, synthesizes the partition circuits, proves them, verifies the \
        proofs and writes 192 bytes per partition.",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub prove: ProveArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Record the constraint system of a sector size ahead of the first proof (as
    /// parameters are fetched ahead), where proving runs will look for it: beside the
    /// parameters, else in the user's cache directory, or --pce-cache DIR. Takes about
    /// a third of a minute of all cores at 32GiB and writes ~9 GB.
    #[command(name = "pce")]
    Pce {
        /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB (registered proof V1_1).
        #[arg(long, value_name = "SIZE")]
        sector_size: Option<String>,
        /// Registered seal proof instead of --sector-size, e.g. StackedDrg32GiBV1_1.
        #[arg(long, value_name = "NAME", conflicts_with = "sector_size")]
        proof: Option<String>,
        /// Directory holding the parameters (the recording is named after them and made
        /// for their verifying key: they must be there).
        #[arg(
            long,
            value_name = "DIR",
            env = "FIL_PROOFS_PARAMETER_CACHE",
            default_value = DEFAULT_PARAM_CACHE
        )]
        param_cache: PathBuf,
        /// Where to keep the recording instead of the default place.
        #[arg(long, value_name = "DIR")]
        pce_cache: Option<PathBuf>,
        /// Record it again even if an intact recording is there.
        #[arg(long)]
        force: bool,
        /// Threads (default: all cores).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// CUDA when a GPU and a CUDA build are present, else the CPU.
    Auto,
    Cpu,
    Cuda,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    On,
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// After reading the C1.
    Parse,
    /// After mapping and checking the parameters.
    Srs,
    /// After synthesizing the circuits.
    Synth,
    /// After proving (no verification, nothing written).
    Prove,
}

#[derive(Args, Debug)]
pub struct ProveArgs {
    /// C1 output: lotus-bench wrapper {"SectorNum","Phase1Out","SectorSize"} or raw
    /// SealCommitPhase1Output JSON; - reads standard input.
    #[arg(help_heading = "Input", long, value_name = "FILE", required = true)]
    pub c1: Option<PathBuf>,

    /// The largest C1 read (a 64GiB sector's is about 110 MB): a bigger file, or an endless
    /// one such as a device, is refused before it fills memory. A size: bytes or K/M/G
    /// (powers of 1024).
    #[arg(
        help_heading = "Input",
        long,
        value_name = "SIZE",
        default_value = "512MiB"
    )]
    pub c1_max_size: String,

    /// Where to write the proof (192 bytes per partition); written atomically, only after
    /// the proof verifies. - writes the raw bytes to standard output (not a terminal).
    #[arg(
        help_heading = "Output",
        short,
        long,
        value_name = "FILE",
        required_unless_present = "stop_after"
    )]
    pub output: Option<PathBuf>,

    /// The Groth16 parameters file (.params); overrides --param-cache.
    #[arg(help_heading = "Input", long, value_name = "FILE")]
    pub params: Option<PathBuf>,

    /// Directory holding v28-stacked-proof-of-replication-…-<hash>.params and .vk.
    #[arg(
        help_heading = "Input",
        long,
        value_name = "DIR",
        env = "FIL_PROOFS_PARAMETER_CACHE",
        default_value = DEFAULT_PARAM_CACHE
    )]
    pub param_cache: PathBuf,

    /// If the parameters are missing from --param-cache, generate TEST-ONLY parameters
    /// there first (minutes; proofs made with them are worthless on chain).
    #[arg(help_heading = "Input", long)]
    pub gen_test_params: bool,

    /// Check the whole .params file against filecoin-proofs' digest before proving (as
    /// FIL_PROOFS_VERIFY_PRODUCTION_PARAMS=1 asks; about a minute at 32GiB). The
    /// verifying key is checked on every run.
    #[arg(help_heading = "Input", long)]
    pub verify_params: bool,

    /// Miner actor id: with --sector-num, check that the C1's replica_id derives from them.
    #[arg(help_heading = "Input", long, value_name = "N")]
    pub miner_id: Option<u64>,

    /// Sector number for the replica_id check (default: the wrapper's SectorNum).
    #[arg(help_heading = "Input", long, value_name = "N")]
    pub sector_num: Option<u64>,

    /// Prover backend. auto takes the GPU when there is one (and BELLMAN_NO_GPU is not
    /// set), else the CPU, with a notice.
    #[arg(help_heading = "Device", long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,

    /// Take bellperson's GPU lock ($TMPDIR/bellman.gpu.lock, after any priority lock a
    /// PoSt holds) while the GPU works, so a PoSt and this C2 never share the card (on),
    /// or use the GPU without it (off).
    #[arg(help_heading = "Device", long, value_enum, value_name = "on|off", default_value_t = Switch::On)]
    pub gpu_lock: Switch,

    /// The one GPU the CUDA backend uses (0-based, as nvidia-smi numbers them unless
    /// CUDA_VISIBLE_DEVICES says otherwise): as --gpus N.
    #[arg(
        help_heading = "Device",
        long,
        value_name = "N",
        conflicts_with = "gpus"
    )]
    pub gpu: Option<usize>,

    /// The GPUs a sector's partitions are spread over: all (every GPU the CUDA runtime
    /// shows), or a comma-separated list of indices such as 0,2. Each GPU keeps its own
    /// copy of the parameters and takes the next synthesized partition when it is free;
    /// the proofs are the same as on one GPU. A GPU listed twice gets two queues (for
    /// testing only: each checks the room for its copy as if it were alone).
    #[arg(
        help_heading = "Device",
        long,
        value_name = "all|LIST",
        default_value = "all"
    )]
    pub gpus: String,

    /// GPU Pippenger window in bits (1–24), or auto (chosen from each MSM's size).
    #[arg(
        help_heading = "Performance tuning",
        long,
        value_name = "auto|N",
        default_value = "auto"
    )]
    pub msm_window: String,

    /// GPU split MSM for the witness products L, A, B: drop zero scalars, batch-add the
    /// points of scalars equal to one, bucket only the rest.
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::On)]
    pub split_msm: Switch,

    /// Where the CUDA backend computes B in G2: on the GPU, or with blst on the host cores
    /// while the GPU does everything else.
    #[arg(help_heading = "Performance tuning", long, value_enum, default_value_t = BG2::Gpu)]
    pub b_g2: BG2,

    /// Where the CUDA backend decodes the SRS points: raw bytes to the GPU and decoded
    /// there, or on the host cores (overlapping the GPU) and uploaded per MSM.
    #[arg(help_heading = "Performance tuning", long, value_enum, default_value_t = SrsDecode::Gpu)]
    pub srs_decode: SrsDecode,

    /// How the CUDA backend's large host-to-device copies (each mapped SRS section, the
    /// NTT's inputs, the aux assignment) reach the GPU: off (default) through two pinned
    /// buffers, host threads filling one while the DMA engine drains the other; on
    /// page-locks (registers) the host memory itself for each copy, no host copy but the
    /// registration's cost (slower on the H200 host: docs/PERF.md).
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::Off)]
    pub pin: Switch,

    /// How the CUDA backend copies mapped files to the GPU (the parameters' SRS sections,
    /// 47 GB at 32GiB, and a saved recording, 9 GB): on page-locks the file's mapping a
    /// chunk at a time, so the DMA engine reads the page cache itself at the bus's speed
    /// while synthesis has the cores; off (default until measured on a GPU) stages them
    /// through pinned buffers with host threads, fast only while cores are idle. Chunks
    /// the driver refuses to lock are staged.
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::Off)]
    pub pin_mapped: Switch,

    /// Upload each partition's aux assignment (the scalars of L, A and B) to the GPU while
    /// its H MSM runs (on), or after it (off).
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::On)]
    pub overlap_aux: Switch,

    /// With --pce-eval gpu, move inputs to the GPU before their partition's turn (on): the
    /// recording as soon as it is loaded or made, and the next partition's aux assignment
    /// while this partition's MSMs run, once the next one is synthesized; or each at its
    /// first use, before a partition's A·w, B·w, C·w evaluation (off).
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::On)]
    pub upload_ahead: Switch,

    /// Send each partition's aux assignment to the GPU packed (on): witness values are
    /// nearly all 0 or 1, so two bitmaps and the other values cross the bus (≈ 90 MB at
    /// 32GiB instead of 4.2 GB) and the GPU unpacks them; or whole (off, the default until
    /// it is measured on a GPU).
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::Off)]
    pub pack_aux: Switch,

    /// Ask the kernel for transparent huge pages (2 MiB) on the run's large memory blocks,
    /// the witnesses among them (on), or leave them on 4 KiB pages (off). Fewer page
    /// faults: at 32GiB half the system time (docs/PERF.md). Needs the kernel's THP mode
    /// `madvise` or `always` (/sys/kernel/mm/transparent_hugepage/enabled); where its
    /// defrag setting is `madvise` (the default) a host with fragmented memory may compact
    /// it on first touch, which off avoids.
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::On)]
    pub huge_pages: Switch,

    /// Synthesize later partitions while earlier ones are proved (on: partitions are
    /// completed one after another by all cores, each proved as soon as it is complete), or
    /// synthesize a batch (--max-circuits) and then prove it (off).
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::On)]
    pub overlap_synth: Switch,

    /// Threads for synthesis (default: all cores).
    #[arg(help_heading = "Performance tuning", long, value_name = "N")]
    pub synth_threads: Option<usize>,

    /// Reserve the assignment vectors up front from the parameter headers (default off:
    /// no gain measured at 2KiB, and the constraint vectors are reserved at domain size).
    #[arg(help_heading = "Performance tuning", long, overrides_with = "no_presize", action = ArgAction::SetTrue)]
    pub presize: bool,

    /// Grow the assignment vectors as synthesis goes (default).
    #[arg(help_heading = "Performance tuning", long, overrides_with = "presize", action = ArgAction::SetTrue)]
    pub no_presize: bool,

    /// Pre-compiled constraint system: the circuit's A, B, C are recorded once per sector
    /// size (the first run records them in parallel and keeps the file; `cuzk-prove pce`
    /// does it ahead), then every synthesis computes witnesses only and A·w, B·w, C·w
    /// come from the recording. Off: a full synthesis per partition.
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::On)]
    pub pce: Switch,

    /// Where the recording is looked up and kept (one file per parameter set, ~9 GB at
    /// 32GiB). Default: beside the parameters when that directory is writable, else
    /// $XDG_CACHE_HOME/cuzk-prove (~/.cache/cuzk-prove). Created if missing; when it
    /// cannot be written the run still proves, with a warning.
    #[arg(help_heading = "Performance tuning", long, value_name = "DIR")]
    pub pce_cache: Option<PathBuf>,

    /// Memory the run may use (its own, anonymous memory; mapped files are page cache):
    /// the partitions in flight are as many as fit. auto: the cgroup's free memory where
    /// a limit is set, else MemAvailable (9/10 of it). A size: bytes or K/M/G/T (powers
    /// of 1024), e.g. 48GiB. A budget too small for one partition fails before any work.
    #[arg(
        help_heading = "Performance tuning",
        long,
        value_name = "auto|SIZE",
        default_value = "auto"
    )]
    pub memory_budget: String,

    /// With --pce and the CUDA backend, where A·w, B·w, C·w are evaluated: on the GPU from
    /// the recording kept there (no evaluations cross the bus), or on the host cores
    /// during synthesis. The CPU backend always evaluates on the host.
    #[arg(help_heading = "Performance tuning", long, value_enum, default_value_t = PceEval::Gpu)]
    pub pce_eval: PceEval,

    /// With --pce, generate the witness of each label's SHA-256 natively (on: the same
    /// values, without the gadget's constraint bookkeeping) or through bellperson's
    /// gadget (off). Full syntheses always use the gadget.
    #[arg(help_heading = "Performance tuning", long, value_enum, value_name = "on|off", default_value_t = Switch::On)]
    pub native_label: Switch,

    /// Partitions synthesized and proved at once (bounds memory; default: all): with
    /// --overlap-synth, how many are being synthesized or waiting for the prover at a time
    /// (default with --pce: 3, which keeps the prover busy).
    #[arg(help_heading = "Performance tuning", long, value_name = "N")]
    pub max_circuits: Option<usize>,

    /// Prove only partition K (0-based); the output is then one 192-byte proof.
    #[arg(help_heading = "Diagnostics", long, value_name = "K")]
    pub partition: Option<usize>,

    /// Stop after a phase, e.g. to isolate it under `perf stat`.
    #[arg(help_heading = "Diagnostics", long, value_enum, value_name = "PHASE")]
    pub stop_after: Option<Phase>,

    /// Skip verifying the proof before writing it. The C1 is still checked (each
    /// partition before it is proved), the files' frames are still checked, and the proof's points are still
    /// checked to be in their groups (so parameter points outside their subgroup still
    /// fail the run); what then goes unchecked is the proof's validity: a fault of the
    /// prover (GPU or host memory errors) or damaged parameter points past the verifying
    /// key that still decode would give an invalid proof with exit status 0.
    #[arg(help_heading = "Output", long)]
    pub no_verify: bool,

    /// Print a table of phase timings on stderr.
    #[arg(help_heading = "Output", long)]
    pub timings: bool,

    /// Write the report as JSON to FILE (- for standard output): build, inputs, flags,
    /// sizes, memory, GPU, timings; also when the run fails, with an `error` object.
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Print nothing but errors.
    #[arg(help_heading = "Output", short, long)]
    pub quiet: bool,
}

/// Validated settings of one proving run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Config {
    pub c1: PathBuf,
    /// `--c1-max-size` in bytes.
    pub c1_max_bytes: u64,
    pub output: Option<PathBuf>,
    pub params: Option<PathBuf>,
    pub param_cache: PathBuf,
    pub gen_test_params: bool,
    /// Hash the whole .params file against the production digest.
    pub verify_params: bool,
    pub miner_id: Option<u64>,
    pub sector_num: Option<u64>,
    pub device: Device,
    /// The GPUs the CUDA backend proves on (`--gpus`, `--gpu`).
    pub gpus: Gpus,
    /// Take bellperson's GPU lock while the GPU works.
    pub gpu_lock: bool,
    /// GPU MSM window bits; 0 = auto.
    pub msm_window: usize,
    /// GPU split MSM for L, A, B.
    pub split_msm: bool,
    /// Where the CUDA backend computes B in G2.
    pub b_g2: BG2,
    /// Where the CUDA backend decodes SRS points.
    pub srs_decode: SrsDecode,
    /// Page-lock host memory for large copies to and from the GPU.
    pub pin: bool,
    /// Page-lock mapped files (SRS sections, a saved recording), chunk by chunk, for
    /// their upload.
    pub pin_mapped: bool,
    /// Upload the aux assignment beside the H MSM.
    pub overlap_aux: bool,
    /// Upload the next partition's aux assignment beside this one's MSMs.
    pub upload_ahead: bool,
    /// Send the aux assignment to the GPU as bitmaps and its other values.
    pub pack_aux: bool,
    /// Large memory blocks on transparent huge pages.
    pub huge_pages: bool,
    /// Synthesize later partitions while earlier ones are proved.
    pub overlap_synth: bool,
    pub synth_threads: usize,
    pub presize: bool,
    /// Pre-compiled constraint system, and where to keep it (None: the default place).
    pub pce: bool,
    pub pce_cache: Option<PathBuf>,
    /// `--memory-budget` in bytes; None: what the system has available.
    pub memory_budget: Option<u64>,
    /// Where the CUDA backend's PCE evaluations run.
    pub pce_eval: PceEval,
    /// Witness generation computes the labels' SHA-256 natively.
    pub native_label: bool,
    pub max_circuits: Option<usize>,
    pub partition: Option<usize>,
    pub stop_after: Option<Phase>,
    pub verify: bool,
    pub timings: bool,
    pub json: Option<PathBuf>,
    pub quiet: bool,
    /// Test-only: derive r, s from this seed instead of the OS (never from the CLI).
    #[serde(skip)]
    pub rng_seed: Option<u64>,
}

impl Config {
    /// Defaults for a run on `c1` writing `output` (as the CLI would with no other flags).
    pub fn new(c1: PathBuf, output: Option<PathBuf>) -> Self {
        Self {
            c1,
            c1_max_bytes: crate::input::c1::C1_MAX_BYTES,
            output,
            params: None,
            param_cache: PathBuf::from(DEFAULT_PARAM_CACHE),
            gen_test_params: false,
            verify_params: false,
            miner_id: None,
            sector_num: None,
            device: Device::Auto,
            gpus: Gpus::All,
            gpu_lock: true,
            msm_window: 0,
            split_msm: true,
            b_g2: BG2::Gpu,
            srs_decode: SrsDecode::Gpu,
            pin: false,
            pin_mapped: false,
            overlap_aux: true,
            upload_ahead: true,
            pack_aux: false,
            huge_pages: true,
            overlap_synth: true,
            synth_threads: rayon::current_num_threads(),
            presize: false,
            pce: true,
            pce_cache: None,
            memory_budget: None,
            pce_eval: PceEval::Gpu,
            native_label: true,
            max_circuits: None,
            partition: None,
            stop_after: None,
            verify: true,
            timings: false,
            json: None,
            quiet: false,
            rng_seed: None,
        }
    }
}

impl TryFrom<ProveArgs> for Config {
    type Error = anyhow::Error;

    fn try_from(a: ProveArgs) -> Result<Self> {
        let Some(c1) = a.c1 else {
            bail!("--c1 FILE is required")
        };
        if a.synth_threads == Some(0) {
            bail!("--synth-threads must be at least 1");
        }
        if a.max_circuits == Some(0) {
            bail!("--max-circuits must be at least 1");
        }
        let msm_window = parse_msm_window(&a.msm_window)?;
        if a.pce == Switch::Off && a.pce_cache.is_some() {
            bail!("--pce-cache names where the recording is kept: it needs --pce on");
        }
        if a.sector_num.is_some() && a.miner_id.is_none() {
            bail!("--sector-num needs --miner-id for the replica_id check");
        }
        let stdout = |p: &Option<PathBuf>| p.as_deref().is_some_and(crate::output::is_stdout);
        if stdout(&a.output) && stdout(&a.json) {
            bail!("-o - and --json - cannot both write to standard output");
        }
        // BELLMAN_NO_GPU (set, as bellperson reads it): --device auto proves on the CPU.
        let device = match a.device {
            Device::Auto if std::env::var_os("BELLMAN_NO_GPU").is_some() => Device::Cpu,
            d => d,
        };
        Ok(Self {
            c1,
            c1_max_bytes: crate::pipeline::memory_budget::parse_size(
                "--c1-max-size",
                &a.c1_max_size,
            )?,
            output: a.output,
            params: a.params,
            param_cache: a.param_cache,
            gen_test_params: a.gen_test_params,
            // filecoin-proofs' switch for the same check ("1" or "true").
            verify_params: a.verify_params
                || std::env::var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS")
                    .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true")),
            miner_id: a.miner_id,
            sector_num: a.sector_num,
            device,
            gpus: match a.gpu {
                Some(n) => Gpus::List(vec![n]),
                None => parse_gpus(&a.gpus)?,
            },
            gpu_lock: a.gpu_lock == Switch::On,
            msm_window,
            split_msm: a.split_msm == Switch::On,
            b_g2: a.b_g2,
            srs_decode: a.srs_decode,
            pin: a.pin == Switch::On,
            pin_mapped: a.pin_mapped == Switch::On,
            overlap_aux: a.overlap_aux == Switch::On,
            upload_ahead: a.upload_ahead == Switch::On,
            pack_aux: a.pack_aux == Switch::On,
            huge_pages: a.huge_pages == Switch::On,
            overlap_synth: a.overlap_synth == Switch::On,
            synth_threads: a
                .synth_threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            presize: a.presize && !a.no_presize,
            pce: a.pce == Switch::On,
            pce_cache: a.pce_cache,
            memory_budget: crate::pipeline::memory_budget::parse_budget(&a.memory_budget)?,
            pce_eval: a.pce_eval,
            native_label: a.native_label == Switch::On,
            max_circuits: a.max_circuits,
            partition: a.partition,
            stop_after: a.stop_after,
            verify: !a.no_verify,
            timings: a.timings,
            json: a.json,
            quiet: a.quiet,
            rng_seed: None,
        })
    }
}

/// Environment variables the prover reads (the man page's ENVIRONMENT section, which
/// `cuzk-dev manpage` renders).
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("FIL_PROOFS_PARAMETER_CACHE", "The parameter directory when --param-cache is not given (default /var/tmp/filecoin-proof-parameters); the recording is kept beside the parameters when that directory is writable."),
    ("XDG_CACHE_HOME, HOME", "The recording's home when the parameter directory is not writable: $XDG_CACHE_HOME/cuzk-prove, else $HOME/.cache/cuzk-prove."),
    ("CUDA_VISIBLE_DEVICES", "Which GPUs the CUDA runtime shows: --gpus all takes those, and --gpus and --gpu N count among them."),
    ("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS", "1 or true: as --verify-params (the whole .params file checked against filecoin-proofs' digest)."),
    ("BELLMAN_NO_GPU", "Set (to any value, as bellperson reads it): --device auto proves on the CPU."),
    ("TMPDIR", "Where bellperson's GPU lock files are (bellman.gpu.lock, bellman.priority.lock; default /tmp): see --gpu-lock."),
    ("RUST_LOG", "Log filter, e.g. cuzk_prove=info (default: warnings)."),
    ("CUZK_TRACE", "1: each GPU MSM's stage times and the aux upload's start and end on stderr."),
    ("CUZK_MSM_SLICE", "Developers: the MSM's first-level bucket sums over slices of N sorted entries (0: segments; default by size)."),
    ("CUZK_GPU_RESERVE_MIB", "Developers: N MiB of each GPU used are taken at the start and held, so that a large GPU plans and proves as a smaller one (e.g. 58000 on an H200 for an 80 GB H100)."),
    ("CUZK_MSM_PASS_PLAN", "Developers: 1 plans the SRS's residency and the recording's room on the GPU counting on MSM h's window passes (less memory: an 80 GB GPU keeps the 32GiB SRS resident; default 0 until measured)."),
    ("CUZK_MSM_PASS", "Developers: every MSM sorts at most N windows' digits at once (default: as many as the GPU's free memory holds, all where there is room)."),
    ("CUZK_UPLOAD_BATCHES", "Developers: host points arrive in N batches while scalars are sorted (default 4)."),
    ("CUZK_GATHER", "Developers: 1/0 forces the zero-copy gather of page-locked points on/off (default: from 2^21 points)."),
    ("CUZK_NTT_TWIST_LOG", "Developers: the largest NTT with a whole twist table, 2^N (default: 27 where it fits in 1/32 of the device)."),
    ("CUZK_EARLY_INPUTS", "Developers: 0 starts the SRS upload and the recording's load after the C1's check, not beside it (for comparison)."),
    ("CUZK_BACKGROUND_FREE", "Developers: 0 frees each proved partition's assignment on the prover's thread, not beside it (for comparison)."),
    ("CUZK_STARTUP_WINDOW", "Developers: partitions synthesized before the prover has its first (default 1 with --pce; 0: the whole --max-circuits window from the start)."),
    ("CUZK_CHECK_AHEAD", "Developers: 1 checks every partition of the C1 whole before any synthesis (default: every partition's shape and the first whole, each other whole before its witness is joined; for comparison)."),
    ("CUZK_EARLY_SRS", "Developers: when the first partition waits for the SRS upload: 0 before its H (default until measured), whole before its H MSM, 1 each section before its MSM, as each arrives."),
    ("CUZK_PCE_AHEAD", "Developers: 0 leaves the recording's upload to the first partition under --upload-ahead on (for comparison)."),
    ("CUZK_PIN_CHUNK_MIB", "Developers: MiB of a mapped file page-locked at a time by --pin-mapped (2 to 65536, default 256; three chunks are locked at once)."),
    ("CUZK_STAGING_PAIRS", "Developers: pairs of 64 MiB page-locked staging buffers, one per host-to-device copy in flight (1 to 16, default 4; 1 makes concurrent copies take turns, for comparison)."),
    ("CUZK_H_TRANSFORMS", "Developers: 7 computes H with seven transforms instead of six (for comparison)."),
];

/// `--gpus`: which GPUs prove, one device queue each.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Gpus {
    /// Every GPU the CUDA runtime shows.
    All,
    /// These indices, in this order (a repeated one: two queues on that GPU).
    List(Vec<usize>),
}

impl Gpus {
    /// The GPU the run starts on before it knows how many there are.
    pub fn first(&self) -> usize {
        match self {
            Gpus::All => 0,
            Gpus::List(l) => l[0],
        }
    }
}

/// The most queues `--gpus` may list (a host has at most 16 GPUs in practice).
pub const MAX_GPU_QUEUES: usize = 64;

/// `--gpus all|LIST`.
pub fn parse_gpus(s: &str) -> Result<Gpus> {
    if s == "all" {
        return Ok(Gpus::All);
    }
    let list = s
        .split(',')
        .map(|i| match i.trim().parse::<usize>() {
            Ok(n) if n < MAX_GPU_QUEUES => Ok(n),
            _ => bail!(
                "--gpus must be all or a comma-separated list of GPU indices (0–{}), got '{s}'",
                MAX_GPU_QUEUES - 1
            ),
        })
        .collect::<Result<Vec<_>>>()?;
    if list.len() > MAX_GPU_QUEUES {
        bail!("--gpus lists {} GPUs: at most {MAX_GPU_QUEUES}", list.len());
    }
    Ok(Gpus::List(list))
}

/// `--msm-window auto|N`: 0 for auto.
pub fn parse_msm_window(w: &str) -> Result<usize> {
    match w {
        "auto" => Ok(0),
        w => match w.parse::<usize>() {
            Ok(n) if (1..=24).contains(&n) => Ok(n),
            _ => bail!("--msm-window must be auto or a number of bits from 1 to 24, got '{w}'"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> Result<Config> {
        let base = ["cuzk-prove", "--c1", "c1.json", "-o", "proof.bin"];
        let cli = Cli::try_parse_from(base.iter().chain(args))?;
        Config::try_from(cli.prove)
    }

    #[test]
    fn gpu_flags() {
        let c = config(&[]).unwrap();
        assert_eq!((c.msm_window, c.split_msm, c.b_g2), (0, true, BG2::Gpu));
        assert_eq!((c.srs_decode, c.pin), (SrsDecode::Gpu, false));
        assert!(config(&["--pin", "on"]).unwrap().pin);
        assert!(!c.pin_mapped);
        assert!(config(&["--pin-mapped", "on"]).unwrap().pin_mapped);
        assert!(config(&[]).unwrap().overlap_aux);
        assert!(!config(&["--overlap-aux", "off"]).unwrap().overlap_aux);
        assert!(config(&[]).unwrap().upload_ahead);
        assert!(!config(&["--upload-ahead", "off"]).unwrap().upload_ahead);
        assert!(!config(&[]).unwrap().pack_aux);
        assert!(config(&["--pack-aux", "on"]).unwrap().pack_aux);
        assert!(config(&[]).unwrap().huge_pages);
        assert!(!config(&["--huge-pages", "off"]).unwrap().huge_pages);
        assert!(config(&[]).unwrap().overlap_synth);
        assert!(!config(&["--overlap-synth", "off"]).unwrap().overlap_synth);
        assert!(config(&[]).unwrap().native_label);
        assert!(!config(&["--native-label", "off"]).unwrap().native_label);
        assert!(config(&["--overlap-aux", "maybe"]).is_err());
        let c = config(&["--split-msm", "off", "--b-g2", "cpu", "--msm-window", "16"]).unwrap();
        assert_eq!((c.msm_window, c.split_msm, c.b_g2), (16, false, BG2::Cpu));
        assert_eq!(
            config(&["--srs-decode", "cpu"]).unwrap().srs_decode,
            SrsDecode::Cpu
        );
        let e = config(&["--msm-window", "25"]).unwrap_err();
        assert!(e.to_string().contains("--msm-window must be auto"), "{e}");
        assert!(config(&["--split-msm", "yes"]).is_err());
        assert!(config(&["--b-g2", "fpga"]).is_err());
    }

    #[test]
    fn gpus_flag() {
        assert_eq!(config(&[]).unwrap().gpus, Gpus::All);
        assert_eq!(config(&["--gpus", "all"]).unwrap().gpus, Gpus::All);
        assert_eq!(config(&["--gpus", "1"]).unwrap().gpus, Gpus::List(vec![1]));
        let c = config(&["--gpus", "2,0, 1"]).unwrap();
        assert_eq!(c.gpus, Gpus::List(vec![2, 0, 1]));
        assert_eq!(c.gpus.first(), 2);
        assert_eq!(
            config(&["--gpus", "0,0"]).unwrap().gpus,
            Gpus::List(vec![0, 0])
        );
        assert_eq!(config(&["--gpu", "3"]).unwrap().gpus, Gpus::List(vec![3]));
        for bad in [
            "", "x", "0,", ",1", "0,,1", "1-2", "1.5", "64", "ALL", "0;1",
        ] {
            let e = config(&["--gpus", bad]).unwrap_err().to_string();
            assert!(
                e.starts_with("--gpus must be all or a comma-separated"),
                "{bad}: {e}"
            );
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let many = vec!["1"; 65].join(",");
        let e = config(&["--gpus", &many]).unwrap_err().to_string();
        assert!(e.contains("at most 64"), "{e}");
        // --gpu N is the one-GPU choice: not both.
        assert!(config(&["--gpu", "0", "--gpus", "1"]).is_err());
    }
}
