//! Phase timings: the `--timings` table on stderr and the `--json` report.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Wall-clock time per named phase, in first-seen order; repeated phases (one per batch
/// of partitions) accumulate.
pub struct Timings {
    entries: Vec<(String, Duration)>,
    start: Instant,
    spinners: bool,
}

impl Timings {
    /// `spinners`: draw an indicatif spinner on stderr during each phase (only if it is a
    /// terminal).
    pub fn new(spinners: bool) -> Self {
        Self {
            entries: Vec::new(),
            start: Instant::now(),
            spinners: spinners && std::io::stderr().is_terminal(),
        }
    }

    pub fn add(&mut self, name: &str, d: Duration) {
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some((_, t)) => *t += d,
            None => self.entries.push((name.to_owned(), d)),
        }
    }

    pub fn time<T>(&mut self, name: &str, f: impl FnOnce() -> T) -> T {
        let bar = self.spinners.then(|| {
            let b = ProgressBar::new_spinner();
            b.set_style(ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap());
            b.set_message(name.to_owned());
            b.enable_steady_tick(Duration::from_millis(120));
            b
        });
        let t0 = Instant::now();
        let out = f();
        self.add(name, t0.elapsed());
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        out
    }

    pub fn entries(&self) -> &[(String, Duration)] {
        &self.entries
    }

    pub fn get(&self, name: &str) -> Option<Duration> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| *d)
    }

    pub fn total(&self) -> Duration {
        self.start.elapsed()
    }

    /// The table printed by `--timings`.
    pub fn table(&self) -> String {
        let width = self
            .entries
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(0)
            .max(5);
        let mut s = format!("{:<width$}  {:>10}\n", "phase", "seconds");
        for (n, d) in &self.entries {
            s += &format!("{:<width$}  {:>10.3}\n", n, d.as_secs_f64());
        }
        s += &format!(
            "{:<width$}  {:>10.3}\n",
            "total",
            self.total().as_secs_f64()
        );
        s
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (n, d) in &self.entries {
            m.insert(n.clone(), serde_json::json!(d.as_secs_f64()));
        }
        m.insert(
            "total".into(),
            serde_json::json!(self.total().as_secs_f64()),
        );
        serde_json::Value::Object(m)
    }
}

/// The process's peak memory: resident (the kernel's VmHWM, file-backed pages of the
/// mapped parameters included) and anonymous (what `--memory-budget` bounds: sampled
/// every 10 ms by a helper thread, as the kernel keeps no high-water mark of it).
pub struct PeakMemory {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    sampler: Option<std::thread::JoinHandle<u64>>,
}

/// Peak memory in bytes, as reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Peaks {
    pub peak_rss_bytes: u64,
    pub peak_anon_bytes: u64,
}

impl PeakMemory {
    pub fn start() -> Self {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let sampler = std::thread::Builder::new()
            .name("peak-memory".into())
            .spawn(move || {
                let mut peak = 0;
                loop {
                    peak = peak.max(anon_bytes().unwrap_or(0));
                    if flag.load(Ordering::Relaxed) {
                        return peak;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
            .ok();
        Self { stop, sampler }
    }

    /// The peaks so far (stops the sampler).
    pub fn finish(mut self) -> Peaks {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let anon = self.sampler.take().and_then(|h| h.join().ok()).unwrap_or(0);
        Peaks {
            peak_rss_bytes: status_kib("VmHWM").map_or(0, |k| k * 1024),
            peak_anon_bytes: anon.max(status_kib("RssAnon").map_or(0, |k| k * 1024)),
        }
    }
}

impl Peaks {
    /// Rows for the `--timings` table.
    pub fn table(&self) -> String {
        let gb = |b: u64| b as f64 / 1e9;
        format!(
            "peak RSS (VmHWM)          {:>8.2} GB\npeak anonymous memory     {:>8.2} GB\n",
            gb(self.peak_rss_bytes),
            gb(self.peak_anon_bytes)
        )
    }
}

/// Resident anonymous memory from /proc/self/statm (resident − shared pages: one short
/// read, cheap enough to sample).
fn anon_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut f = s.split_whitespace().skip(1).map(|x| x.parse::<u64>().ok());
    let (resident, shared) = (f.next()??, f.next()??);
    Some(resident.saturating_sub(shared) * 4096)
}

/// A /proc/self/status field in KiB.
fn status_kib(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_see_a_large_allocation() {
        let m = PeakMemory::start();
        let v = vec![1u8; 256 << 20];
        std::thread::sleep(Duration::from_millis(50));
        std::hint::black_box(&v);
        drop(v);
        let p = m.finish();
        assert!(p.peak_anon_bytes >= 256 << 20, "{p:?}");
        assert!(p.peak_rss_bytes >= 256 << 20, "{p:?}");
        assert!(p.table().contains("peak anonymous memory"));
    }
}
