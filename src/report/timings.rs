//! Phase timings: the `--timings` table on stderr and the report's `timings` rows.

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

    /// Whether phases draw spinners; returns the previous setting (a progress bar of its
    /// own, over partitions, replaces them while partitions are proved).
    pub(crate) fn set_spinners(&mut self, on: bool) -> bool {
        std::mem::replace(&mut self.spinners, on && std::io::stderr().is_terminal())
    }

    pub fn add(&mut self, name: &str, d: Duration) {
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some((_, t)) => *t += d,
            None => self.entries.push((name.to_owned(), d)),
        }
    }

    /// Adds `other`'s rows (a device queue's, gpus.rs) to these.
    pub(crate) fn absorb(&mut self, other: &Timings) {
        for (n, d) in &other.entries {
            self.add(n, *d);
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

    /// The rows for the JSON report: each phase's name as the table shows it, a stable
    /// snake_case key made from it, and its seconds; `total` last.
    pub fn rows(&self) -> Vec<TimingRow> {
        let row = |name: &str, d: Duration| TimingRow {
            key: key(name),
            name: name.trim().to_owned(),
            nested: name.starts_with(' '),
            seconds: d.as_secs_f64(),
        };
        let mut rows: Vec<_> = self.entries.iter().map(|(n, d)| row(n, *d)).collect();
        rows.push(row("total", self.total()));
        rows
    }
}

/// One timing row of the JSON report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TimingRow {
    /// snake_case, from the name: "MSM h (GPU, …)" → "msm_h_gpu_…".
    pub key: String,
    pub name: String,
    /// A part of the row above it ("  of which …" in the table).
    pub nested: bool,
    pub seconds: f64,
}

/// A phase name as a snake_case key: lowercase ASCII letters and digits, every other run
/// of characters one underscore.
pub fn key(name: &str) -> String {
    let mut k = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            k.push(c.to_ascii_lowercase());
        } else if !k.is_empty() && !k.ends_with('_') {
            k.push('_');
        }
    }
    k.trim_end_matches('_').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_snake_case() {
        assert_eq!(
            key("  of which MSM kernels (GPU events)"),
            "of_which_msm_kernels_gpu_events"
        );
        assert_eq!(key("A·w, B·w, C·w (PCE, CPU)"), "a_w_b_w_c_w_pce_cpu");
        assert_eq!(key("synthesis"), "synthesis");
        let mut t = Timings::new(false);
        t.add("  of which x", Duration::from_millis(5));
        let rows = t.rows();
        assert!(rows[0].nested && rows[0].key == "of_which_x" && rows[0].name == "of which x");
        assert_eq!(rows.last().unwrap().key, "total");
    }
}
