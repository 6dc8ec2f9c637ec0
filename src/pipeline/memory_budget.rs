//! `--memory-budget`: how many partitions are in flight (synthesized or waiting to be
//! proved), chosen from the memory the run may use, so that no sector size runs the host
//! out of memory. The budget is the memory actually available — the cgroup's limit less
//! its use where one is set, else the kernel's MemAvailable — or `--memory-budget SIZE`.
//! Mapped files (the parameters, a recording loaded from its file: its arrays are used in
//! place) are page cache, not budget: what is counted is the process's own (anonymous)
//! memory.
//!
//! The counts come from the parameters' header (domain, aux variables); the bytes per
//! item are the vectors the pipeline holds (docs/ARCHITECTURE.md has the table):
//! - a partition's witness: its challenge parts, then the joined aux vector, 64 B per aux
//!   variable (32 B each, both at the join);
//! - with the recording evaluated on the host (CPU backend, `--pce-eval cpu`): A·w, B·w,
//!   C·w, 96 B per constraint;
//! - a full synthesis (`--pce off`): a, b, c and aux in vectors that grow by doubling,
//!   192 B per constraint and 64 B per aux variable;
//! - fixed: the recording (its file's size, or ≈ 70 B per domain element before one
//!   exists; twice that while a new one's blocks are joined; a loaded one is its file's
//!   mapping, but is counted still: a file whose digest fails at load is recorded anew), the CPU
//!   prover's a, b, c and FFT (96 B per domain element; the GPU's prover holds none),
//!   and the process's base (the parsed C1 and ~1 GiB).

use anyhow::{bail, Result};

/// Bytes in a GiB.
pub(crate) const GIB: u64 = 1 << 30;

/// What the planner needs to know of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    /// FFT domain (≥ constraints) and aux variables of one partition.
    pub domain: u64,
    pub aux: u64,
    pub pce: Pce,
    /// The prover's backend keeps its vectors on the device (CUDA) or on the host.
    pub host_prover: bool,
    /// Bytes of the C1 file (parsed, ≈ 20× that).
    pub c1_bytes: u64,
}

/// How synthesis runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pce {
    /// Full syntheses (`--pce off`).
    Off,
    /// Witnesses through a recording of `bytes` (its file, or an estimate) that is
    /// `recording` in this run; `host_eval`: A·w, B·w, C·w on the host cores.
    On {
        bytes: u64,
        recording: bool,
        host_eval: bool,
    },
}

impl Need {
    /// A recording's size before one exists: 66 B per domain element at 32GiB (8.86 GB
    /// for 2^27), rounded up.
    pub(crate) fn estimated_recording(domain: u64) -> u64 {
        70 * domain
    }

    /// Bytes one more partition in flight holds.
    pub(crate) fn per_partition(&self) -> u64 {
        let witness = 64 * self.aux;
        match self.pce {
            Pce::Off => 192 * self.domain + witness,
            Pce::On { host_eval, .. } => witness + if host_eval { 96 * self.domain } else { 0 },
        }
    }

    /// Bytes held whatever the number of partitions.
    pub fn fixed(&self) -> u64 {
        let recording = match self.pce {
            Pce::Off => 0,
            Pce::On {
                bytes, recording, ..
            } => bytes * if recording { 2 } else { 1 },
        };
        let prover = if self.host_prover {
            96 * self.domain
        } else {
            0
        };
        recording + prover + GIB + 20 * self.c1_bytes
    }
}

/// The planner's choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Plan {
    /// Bytes the run may use, and where that number came from.
    pub budget: u64,
    pub source: Source,
    pub fixed: u64,
    pub per_partition: u64,
    /// Partitions in flight at once.
    pub window: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `--memory-budget SIZE`.
    Flag,
    /// The cgroup's limit less its current use.
    Cgroup,
    /// /proc/meminfo's MemAvailable.
    MemAvailable,
    /// Nothing could be read: no limit assumed.
    Unknown,
}

/// The window for `need` under `budget`: as many partitions as fit, at most `wanted` (the
/// scheduler's own choice); an error in one line when not even one fits.
pub(crate) fn plan(need: &Need, budget: u64, source: Source, wanted: usize) -> Result<Plan> {
    let (fixed, per) = (need.fixed(), need.per_partition().max(1));
    let fits = budget.saturating_sub(fixed) / per;
    if fits == 0 {
        bail!(
            "the memory budget of {} ({}) cannot hold one partition of this sector: it needs \
             about {} ({} for the recording, prover and process, {} a partition); free \
             memory, or set --memory-budget if more may be used",
            gib(budget),
            source.describe(),
            gib(fixed + per),
            gib(fixed),
            gib(per)
        );
    }
    Ok(Plan {
        budget,
        source,
        fixed,
        per_partition: per,
        window: (fits.min(usize::MAX as u64) as usize).clamp(1, wanted.max(1)),
    })
}

impl Source {
    fn describe(self) -> &'static str {
        match self {
            Source::Flag => "--memory-budget",
            Source::Cgroup => "the cgroup's free memory",
            Source::MemAvailable => "MemAvailable",
            Source::Unknown => "unknown",
        }
    }
}

/// `n` bytes in GiB, one decimal.
pub(crate) fn gib(n: u64) -> String {
    format!("{:.1} GiB", n as f64 / GIB as f64)
}

/// The memory this run may use: `--memory-budget SIZE`, else what the system has
/// available (9/10 of it: the page cache the parameters need, and the kernel's own, keep
/// the rest).
pub(crate) fn available(flag: Option<u64>) -> (u64, Source) {
    if let Some(b) = flag {
        return (b, Source::Flag);
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let avail = meminfo
        .as_deref()
        .and_then(|m| meminfo_kib(m, "MemAvailable"))
        .map(|k| k * 1024);
    let cgroup = cgroup_free();
    let (bytes, source) = match (cgroup, avail) {
        (Some(c), Some(a)) if c < a => (c, Source::Cgroup),
        (Some(c), None) => (c, Source::Cgroup),
        (_, Some(a)) => (a, Source::MemAvailable),
        (None, None) => return (u64::MAX, Source::Unknown),
    };
    (bytes / 10 * 9, source)
}

/// A `/proc/meminfo` field in KiB.
fn meminfo_kib(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The cgroup v2 (or v1) memory limit less its use, when a limit is set.
fn cgroup_free() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let num = |s: Option<String>| s.and_then(|s| s.trim().parse::<u64>().ok());
    // v2: this process's group from /proc/self/cgroup ("0::/path").
    let group = read("/proc/self/cgroup").and_then(|c| {
        c.lines()
            .find_map(|l| l.strip_prefix("0::").map(str::to_owned))
    });
    if let Some(g) = group {
        let base = format!("/sys/fs/cgroup{}", g.trim_end_matches('/'));
        if let Some(max) = num(read(&format!("{base}/memory.max"))) {
            let cur = num(read(&format!("{base}/memory.current"))).unwrap_or(0);
            return Some(max.saturating_sub(cur));
        }
    }
    let max = num(read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))?;
    if max >= 1 << 60 {
        return None; // v1's "no limit"
    }
    let cur = num(read("/sys/fs/cgroup/memory/memory.usage_in_bytes")).unwrap_or(0);
    Some(max.saturating_sub(cur))
}

/// `--memory-budget auto|SIZE`: None for auto; SIZE is bytes, or a number with K, M, G,
/// T (powers of 1024, an optional `iB`/`B`), e.g. `48GiB`.
pub(crate) fn parse_budget(s: &str) -> Result<Option<u64>> {
    if s == "auto" {
        return Ok(None);
    }
    parse_size("--memory-budget", s).map(Some).map_err(|_| {
        anyhow::anyhow!("--memory-budget must be auto or a size such as 48GiB, got '{s}'")
    })
}

/// A size flag's value: bytes, or a number with K, M, G or T (powers of 1024, an optional
/// "iB" or "B"), e.g. 48GiB or 1.5G.
pub(crate) fn parse_size(flag: &str, s: &str) -> Result<u64> {
    let bad = || anyhow::anyhow!("{flag} must be a size such as 512MiB, got '{s}'");
    let t = s.trim();
    let digits = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let n: f64 = n.parse().map_err(|_| bad())?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.trim_end_matches('b').trim_end_matches('i');
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(bad()),
    };
    let bytes = n * (1u64 << shift) as f64;
    if !(1.0..1e19).contains(&bytes) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Domain and aux variables of one partition per sector size (2KiB … 64GiB, the
    /// parameters' headers).
    const SIZES: [(&str, u64, u64); 5] = [
        ("2KiB", 1 << 17, 130_000),
        ("8MiB", 1 << 20, 1_000_000),
        ("512MiB", 1 << 23, 7_000_000),
        ("32GiB", 1 << 27, 131_000_000),
        ("64GiB", 1 << 27, 131_000_000),
    ];

    fn need(domain: u64, aux: u64, pce: Pce, host_prover: bool) -> Need {
        Need {
            domain,
            aux,
            pce,
            host_prover,
            c1_bytes: 50 << 20,
        }
    }

    fn cached(domain: u64) -> Pce {
        Pce::On {
            bytes: Need::estimated_recording(domain),
            recording: false,
            host_eval: false,
        }
    }

    #[test]
    fn the_window_fits_the_budget_at_every_size() {
        for (name, domain, aux) in SIZES {
            for budget in [16 * GIB, 48 * GIB, 115 * GIB, 1024 * GIB] {
                for pce in [
                    Pce::Off,
                    cached(domain),
                    Pce::On {
                        bytes: Need::estimated_recording(domain),
                        recording: true,
                        host_eval: true,
                    },
                ] {
                    for host in [false, true] {
                        let n = need(domain, aux, pce, host);
                        match plan(&n, budget, Source::Flag, 10) {
                            Ok(p) => {
                                assert!(p.window >= 1 && p.window <= 10);
                                assert!(
                                    p.fixed + p.window as u64 * p.per_partition <= budget,
                                    "{name} {pce:?} {budget}: {p:?}"
                                );
                                // One more would not fit, unless the wanted number is reached.
                                assert!(
                                    p.window == 10
                                        || p.fixed + (p.window as u64 + 1) * p.per_partition
                                            > budget
                                );
                            }
                            Err(e) => assert!(n.fixed() + n.per_partition() > budget, "{e}"),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn what_32gib_gets() {
        let (_, domain, aux) = SIZES[3];
        // The H200 host (~115 GiB available), GPU prover, recording cached: the
        // scheduler's 3; recording evaluated on the host cores: still 3; full syntheses
        // (each ~33 GB): 3 of 10.
        let gpu = need(domain, aux, cached(domain), false);
        assert_eq!(
            plan(&gpu, 115 * GIB, Source::MemAvailable, 3)
                .unwrap()
                .window,
            3
        );
        let full = need(domain, aux, Pce::Off, false);
        assert_eq!(
            plan(&full, 115 * GIB, Source::MemAvailable, 10)
                .unwrap()
                .window,
            3
        );
        // --memory-budget 48GiB, first run (recording twice held while joined): 3.
        let first = need(
            domain,
            aux,
            Pce::On {
                bytes: 70 * domain,
                recording: true,
                host_eval: false,
            },
            false,
        );
        let p = plan(&first, 48 * GIB, Source::Flag, 3).unwrap();
        assert_eq!(p.window, 3, "{p:?}");
        // 16 GiB cannot hold a 32GiB partition with its recording: one line, before work.
        let e = plan(&first, 16 * GIB, Source::Flag, 3)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot hold one partition") && !e.contains('\n'),
            "{e}"
        );
        // The 2KiB fixture needs little.
        let (_, d, a) = SIZES[0];
        assert_eq!(
            plan(&need(d, a, Pce::Off, true), 3 * GIB, Source::Flag, 1)
                .unwrap()
                .window,
            1
        );
    }

    #[test]
    fn budget_sizes_parse() {
        assert_eq!(parse_budget("auto").unwrap(), None);
        assert_eq!(parse_budget("48GiB").unwrap(), Some(48 * GIB));
        assert_eq!(parse_budget("48G").unwrap(), Some(48 * GIB));
        assert_eq!(parse_budget("512MiB").unwrap(), Some(512 << 20));
        assert_eq!(parse_budget("1.5T").unwrap(), Some(3 << 39));
        assert_eq!(parse_budget("4096").unwrap(), Some(4096));
        for bad in ["", "lots", "-1G", "0", "12X", "GiB"] {
            let e = parse_budget(bad).unwrap_err().to_string();
            assert!(
                e.contains("--memory-budget must be auto or a size"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn meminfo_fields() {
        let m = "MemTotal:       131072000 kB\nMemAvailable:   120000000 kB\n";
        assert_eq!(meminfo_kib(m, "MemAvailable"), Some(120_000_000));
        assert_eq!(meminfo_kib(m, "MemFree"), None);
        let (b, s) = available(None);
        assert!(b > 0 && s != Source::Flag);
        assert_eq!(available(Some(7)), (7, Source::Flag));
    }
}
