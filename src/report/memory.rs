//! The process's peak memory, for the `--timings` table and the report.

use std::time::Duration;

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
