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
