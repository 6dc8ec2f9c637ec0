//! `cuzk-dev`'s subcommands: test data (sealed and synthetic C1s, TEST-ONLY
//! parameters), benchmarks of the kernels and of witness generation, filecoin-proofs'
//! verifier on a proof, and the product's man page and shell completions.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use cuzk_prove::cli::{Switch, DEFAULT_PARAM_CACHE};

use crate::bench::PARTITION_LOGS;

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-dev",
    version,
    about = "Developers' tools for cuzk-prove: test data, benchmarks, the man page"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Seal a small sector for real with filecoin-proofs and write its C1 (test data).
    #[command(name = "seal-test-c1")]
    SealTestC1 {
        /// Sector size (2KiB or 8MiB are practical).
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        /// Output directory for c1.json and meta.json.
        #[arg(short, long)]
        out_dir: PathBuf,
        #[arg(long, default_value_t = 1000)]
        miner_id: u64,
        #[arg(long, default_value_t = 1)]
        sector_num: u64,
        /// Seed of the sector data, ticket and challenge seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Generate TEST-ONLY parameters with storage-proofs' generator into a cache directory.
    #[command(name = "test-params")]
    TestParams {
        /// Registered seal proof, e.g. StackedDrg2KiBV1_1.
        #[arg(long, default_value = "StackedDrg2KiBV1_1")]
        proof: String,
        #[arg(long)]
        param_cache: PathBuf,
    },
    /// Generate TEST-ONLY Groth16 parameters of production shape (fast; trapdoor forgotten).
    #[command(name = "gen-params")]
    GenParams {
        /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB (registered proof V1_1).
        #[arg(long, value_name = "SIZE")]
        sector_size: Option<String>,
        /// Registered seal proof instead of --sector-size, e.g. StackedDrg32GiBV1_1.
        #[arg(long, value_name = "NAME", conflicts_with = "sector_size")]
        proof: Option<String>,
        /// Output directory (a parameter cache: standard file names).
        #[arg(short, long, value_name = "DIR")]
        out_dir: PathBuf,
        /// Derive the trapdoor from this seed (reproducible files) instead of the OS.
        #[arg(long, value_name = "N")]
        seed: Option<u64>,
    },
    /// Generate a synthetic C1 of any sector size (TEST-ONLY: no sector is sealed).
    ///
    /// The vanilla proofs open a sector that repeats one random block, with labels
    /// computed for the challenged nodes and random elsewhere, in sparse Merkle trees of
    /// the true shape; filecoin-proofs' vanilla verifier accepts them and the PoRep circuit
    /// is satisfied. Also writes <OUTPUT minus .json>.meta.json (miner, sector, ticket,
    /// seed, commitments).
    #[command(name = "gen-c1")]
    GenC1 {
        /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB (registered proof V1_1).
        #[arg(long, value_name = "SIZE")]
        sector_size: Option<String>,
        /// Registered seal proof instead of --sector-size (it fixes the porep id), e.g.
        /// StackedDrg32GiBV1 or StackedDrg32GiBV1_1.
        #[arg(long, value_name = "NAME", conflicts_with = "sector_size")]
        proof: Option<String>,
        /// Where to write the C1.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Write the raw SealCommitPhase1Output JSON instead of the lotus-bench wrapper.
        #[arg(long)]
        raw: bool,
        #[arg(long, value_name = "N", default_value_t = 1000)]
        miner_id: u64,
        #[arg(long, value_name = "N", default_value_t = 1)]
        sector_num: u64,
        /// Seed of every random choice, up to 64 hex digits (default: drawn from the OS
        /// and recorded in the metadata file).
        #[arg(long, value_name = "HEX")]
        seed: Option<String>,
    },
    /// Witness generation benchmark: one partition's witness-only synthesis (as --pce
    /// runs it) with --native-label on and off, alternating; the witnesses are compared.
    /// Needs only a C1 (gen-c1 makes one of any size).
    #[command(name = "bench-witness")]
    BenchWitness {
        #[arg(long, value_name = "FILE")]
        c1: PathBuf,
        /// Which partition (0-based).
        #[arg(long, value_name = "K", default_value_t = 0)]
        partition: usize,
        #[arg(long, value_name = "N", default_value_t = 3)]
        runs: usize,
        /// Synthesis threads (default: all cores).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        /// Time only this path (e.g. under a profiler); both by default.
        #[arg(long, value_enum, value_name = "on|off")]
        only: Option<Switch>,
        /// Large blocks on transparent huge pages, as the prover's --huge-pages.
        #[arg(long, value_enum, value_name = "on|off", default_value_t = Switch::On)]
        huge_pages: Switch,
        /// Write the medians as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// GPU kernel benchmarks: MSM in G1 (random and witness-like scalars, split on and
    /// off) and G2, NTT, quotient H; warm-up, then the median of --runs runs per size.
    /// With --partition, one synthetic 32GiB-shape partition, phase by phase, instead.
    #[command(name = "bench-gpu")]
    BenchGpu {
        /// Smallest size, 2^N.
        #[arg(long, value_name = "N", default_value_t = 20)]
        min_log: u32,
        /// Largest G1 MSM, NTT and H, 2^N.
        #[arg(long, value_name = "N", default_value_t = 27)]
        max_log: u32,
        /// Largest G2 MSM, 2^N.
        #[arg(long, value_name = "N", default_value_t = 25)]
        g2_max_log: u32,
        /// Instead of the kernel rows: one synthetic PoRep partition (32GiB shape) through
        /// the CUDA backend's calls, H and the MSMs h, l, a, b_g1, b_g2 over resident
        /// points, each phase (with transfers and its kernels) and the total timed.
        #[arg(long, conflicts_with_all = ["min_log", "max_log", "g2_max_log"])]
        partition: bool,
        /// --partition's domain, 2^N: 27 is 32GiB; smaller domains scale constraints,
        /// aux and densities by the same fractions (inputs stay 328).
        #[arg(
            long,
            value_name = "N",
            default_value_t = *PARTITION_LOGS.end(),
            requires = "partition",
            value_parser = clap::value_parser!(u32)
                .range(*PARTITION_LOGS.start() as i64..=*PARTITION_LOGS.end() as i64)
        )]
        partition_log: u32,
        /// --partition's split MSM for L, A, B (the prover's --split-msm).
        #[arg(
            long,
            value_enum,
            value_name = "on|off",
            default_value_t = Switch::On,
            requires = "partition"
        )]
        split_msm: Switch,
        /// --partition: the aux assignment's upload beside MSM h (the prover's
        /// --overlap-aux).
        #[arg(
            long,
            value_enum,
            value_name = "on|off",
            default_value_t = Switch::On,
            requires = "partition"
        )]
        overlap_aux: Switch,
        /// Page-lock host buffers for large copies instead of staging them (the prover's
        /// --pin).
        #[arg(long, value_enum, value_name = "on|off", default_value_t = Switch::Off)]
        pin: Switch,
        /// Instead of the kernel rows: A·w, B·w, C·w from a recorded constraint system on
        /// the host cores and on the GPU (the prover's --pce-eval), each with H; the
        /// recording is this C1's first partition's, tiled --pce-tiles times.
        #[arg(long, value_name = "C1", conflicts_with_all = ["partition", "rows"])]
        pce_c1: Option<PathBuf>,
        /// --pce-c1's copies of the recording (48 of a 2KiB or 8MiB partition ≈ the
        /// 32GiB partition's 130 M constraints).
        #[arg(long, value_name = "N", default_value_t = 48, requires = "pce_c1")]
        pce_tiles: usize,
        /// Which kernel rows to run (comma-separated); all of them by default. Without
        /// the MSM rows no points are made, so NTT and H rows start at once.
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            value_name = "ROWS",
            conflicts_with = "partition"
        )]
        rows: Vec<BenchRows>,
        #[arg(long, value_name = "N", default_value_t = 5)]
        runs: usize,
        /// Which GPU (0-based).
        #[arg(long, value_name = "N", default_value_t = 0)]
        gpu: usize,
        /// Witness-like scalars: percent equal to 0 (default: PoRep's aux, 51 %).
        #[arg(long, value_name = "PCT", default_value_t = 51)]
        zeros: u32,
        /// Witness-like scalars: percent equal to 1 (default: PoRep's aux, 47 %).
        #[arg(long, value_name = "PCT", default_value_t = 47)]
        ones: u32,
        /// Pippenger window bits for every MSM row, or auto (chosen from the size).
        #[arg(long, value_name = "auto|N", default_value = "auto")]
        msm_window: String,
        /// Also write the rows as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Check a proof with filecoin-proofs' own verify_seal, from the metadata gen-c1 and
    /// seal-test-c1 write beside their C1 (test data).
    #[command(name = "verify-seal")]
    VerifySeal {
        /// The C1's metadata (<c1>.meta.json or meta.json).
        #[arg(long, value_name = "FILE")]
        meta: PathBuf,
        /// The proof file.
        #[arg(long, value_name = "FILE")]
        proof: PathBuf,
        #[arg(
            long,
            value_name = "DIR",
            env = "FIL_PROOFS_PARAMETER_CACHE",
            default_value = DEFAULT_PARAM_CACHE
        )]
        param_cache: PathBuf,
    },
    /// Mutation-fuzz one of cuzk-prove's readers (C1 + check, parameter header, recording):
    /// errors are expected, panics are crashes (inputs saved, exit status 1).
    #[command(name = "fuzz")]
    Fuzz {
        #[arg(long, value_enum)]
        target: crate::fuzz::Target,
        /// The valid starting input: a C1 (target c1) or a .params file (target params).
        #[arg(long, value_name = "FILE")]
        input: Option<PathBuf>,
        #[arg(long, default_value_t = 100_000)]
        runs: usize,
        /// Number of the first run (a crash names its run: --first N --runs 1 repeats it).
        #[arg(long, default_value_t = 0)]
        first: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where crashing inputs are written.
        #[arg(long, value_name = "DIR", default_value = "fuzz-crashes")]
        crashes: PathBuf,
    },
    /// Time a full subgroup check of a parameters file: every point (or the first N of
    /// each section) decoded with the checked decoder on all threads.
    #[command(name = "subgroup-check")]
    SubgroupCheck {
        #[arg(long, value_name = "FILE")]
        params: PathBuf,
        /// Check only the first N points of each section (the rest estimated).
        #[arg(long, value_name = "N")]
        sample: Option<usize>,
    },
    /// Print cuzk-prove's man page (roff), generated from its clap definition.
    #[command(name = "manpage")]
    Manpage,
    /// Print cuzk-prove's shell completions, generated from its clap definition.
    #[command(name = "completions")]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// `bench-gpu --rows`: groups of kernel rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
pub enum BenchRows {
    /// G1 MSM: random scalars from host and resident points, witness-like split off/on.
    MsmG1,
    /// G2 MSM, random scalars, resident points.
    MsmG2,
    /// Forward NTT (kernels).
    Ntt,
    /// The quotient H (kernels).
    Quotient,
}

/// The man page, rendered from the same clap definition as `--help`, with the sections
/// clap does not know: ENVIRONMENT, EXIT STATUS, EXAMPLES.
pub fn manpage() -> Result<String> {
    // The package version only: the commit in `--version` would make the page change at
    // every commit.
    let cmd = <cuzk_prove::cli::Cli as clap::CommandFactory>::command()
        .version(cuzk_prove::report::Build::this().version)
        .long_version(None::<&str>);
    let man = clap_mangen::Man::new(cmd);
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    man.render_subcommands_section(&mut out)?;
    let roff = |s: &str| s.replace('\\', "\\\\").replace('-', "\\-");
    let mut extra = String::from(".SH ENVIRONMENT\n");
    for (name, what) in cuzk_prove::cli::ENVIRONMENT {
        extra += &format!(".TP\n\\fB{}\\fR\n{}\n", roff(name), roff(what));
    }
    extra += ".SH \"EXIT STATUS\"\n";
    for (code, what) in [
        ("0", "A verified proof was written (or the subcommand succeeded)."),
        ("1", "A runtime fault: I/O, the GPU or CUDA, memory, an internal error."),
        ("2", "The command line could not be used: an unknown flag or a bad flag value."),
        ("3", "Bad input: the C1, the parameters or the recording is malformed, damaged or for another sector."),
        ("4", "The parameters for the C1's sector size are missing (fetch them with lotus or curio fetch-params)."),
    ] {
        extra += &format!(".TP\n{code}\n{}\n", roff(what));
    }
    extra += &roff(".PP\nOn failure one line goes to stderr, cuzk-prove: error: …, no output file is left, and --json still writes the report, with an error object (kind, exit_code, message).\n");
    extra += ".SH EXAMPLES\n";
    for (what, cmdline) in [
        ("Prove a sector (parameters from lotus/curio fetch-params; the first run records the circuit):", "cuzk-prove --c1 c1.json -o proof.bin"),
        ("Record the 32GiB circuit ahead of the first sector:", "cuzk-prove pce --sector-size 32GiB"),
        ("In a pipeline: the C1 on standard input, the proof on standard output, the report in a file:", "cuzk-prove --c1 - -o - --json report.json < c1.json > proof.bin"),
        ("Bound the run's memory and print where the time went:", "cuzk-prove --c1 c1.json -o proof.bin --memory-budget 48GiB --timings --json report.json"),
    ] {
        extra += &format!(".PP\n{}\n.PP\n.RS\n{}\n.RE\n", roff(what), roff(cmdline));
    }
    out.extend_from_slice(extra.as_bytes());
    man.render_version_section(&mut out)?;
    Ok(String::from_utf8(out)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_gpu_partition_flags() {
        let bench = |args: &[&str]| -> Result<_, clap::Error> {
            let cli = Cli::try_parse_from(["cuzk-dev", "bench-gpu"].iter().chain(args))?;
            match cli.command {
                Command::BenchGpu {
                    partition,
                    partition_log,
                    split_msm,
                    ..
                } => Ok((partition, partition_log, split_msm)),
                c => panic!("{c:?}"),
            }
        };
        assert_eq!(bench(&[]).unwrap(), (false, 27, Switch::On));
        assert_eq!(bench(&["--partition"]).unwrap(), (true, 27, Switch::On));
        let p = bench(&["--partition", "--partition-log", "16", "--split-msm", "off"]);
        assert_eq!(p.unwrap(), (true, 16, Switch::Off));
        for (args, msg) in [
            (
                &["--partition", "--partition-log", "5"][..],
                "5 is not in 10..=27",
            ),
            (
                &["--partition", "--partition-log", "28"],
                "28 is not in 10..=27",
            ),
            (&["--partition-log", "16"], "--partition"),
            (&["--split-msm", "off"], "--partition"),
            (&["--partition", "--max-log", "20"], "cannot be used with"),
        ] {
            let e = bench(args).unwrap_err().to_string();
            assert!(e.contains(msg), "{args:?}: {e}");
        }
    }
}
