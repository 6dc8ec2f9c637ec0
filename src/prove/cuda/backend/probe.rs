//! The GPU probe (`--device auto|cuda`, `--gpu N`): whether there is a usable GPU,
//! found on a helper thread while the inputs are read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use anyhow::{bail, Result};

use super::gpu_lock::GpuLock;

/// The GPU probe: how many CUDA devices the driver reports, found on a helper thread so
/// that initialising the driver (≈ 0.1 s on the H200 host) overlaps reading the inputs and
/// synthesis instead of preceding them; and what `--device` makes of the answer.
/// A backend on another GPU of the same run (`--gpus`) gets a probe of its own that
/// shares the first one's answer and GPU lock ([`Probe::sibling`]).
pub(super) struct Probe {
    count: Arc<OnceLock<std::result::Result<usize, String>>>,
    thread: Option<JoinHandle<()>>,
    /// `--device auto`: without a GPU (or driver) the CPU backend proves instead.
    fallback: bool,
    pub(super) gpu: usize,
    /// `--gpu-lock`: take bellperson's GPU lock before using the GPU (gpu_lock.rs). One
    /// lock for the process, whichever GPUs it uses (bellperson's lock is not per GPU,
    /// and a second flock on the same file from this process would wait for the first).
    lock_gpu: bool,
    lock: Arc<Mutex<Option<GpuLock>>>,
    /// Say on stderr when waiting for the lock, or when `auto` falls back to the CPU.
    quiet: bool,
    said_cpu: Arc<AtomicBool>,
}

fn probe_count(
    c: &OnceLock<std::result::Result<usize, String>>,
) -> &std::result::Result<usize, String> {
    c.get_or_init(|| crate::prove::cuda::device_count().map_err(|e| format!("{e:#}")))
}

impl Probe {
    pub(super) fn start(fallback: bool, gpu: usize, lock_gpu: bool, quiet: bool) -> Arc<Self> {
        let count = Arc::new(OnceLock::new());
        let c = count.clone();
        // If the thread cannot start, the first `gpu()` call probes instead.
        let thread = std::thread::Builder::new()
            .name("gpu-probe".into())
            .spawn(move || {
                probe_count(&c);
            })
            .ok();
        Arc::new(Probe {
            count,
            thread,
            fallback,
            gpu,
            lock_gpu,
            lock: Default::default(),
            quiet,
            said_cpu: Default::default(),
        })
    }

    /// The probe of a backend on GPU `gpu` of the same run: the same answer (the driver is
    /// asked once) and the same GPU lock.
    pub(super) fn sibling(&self, gpu: usize) -> Arc<Self> {
        Arc::new(Probe {
            count: self.count.clone(),
            thread: None,
            fallback: self.fallback,
            gpu,
            lock_gpu: self.lock_gpu,
            lock: self.lock.clone(),
            quiet: self.quiet,
            said_cpu: self.said_cpu.clone(),
        })
    }

    /// How many CUDA devices the driver shows (waiting for the probe); 0 without a
    /// usable driver.
    pub(super) fn count(&self) -> usize {
        probe_count(&self.count).as_ref().map_or(0, |&n| n)
    }

    /// [`Self::gpu`], and with a GPU, the GPU lock taken (once: held until the backend
    /// is dropped); without one under `--device auto`, when `proving` (the prover asks,
    /// not the prefetch), a notice that the CPU proves.
    pub(super) fn claim(&self, proving: bool) -> Result<bool> {
        let gpu = self.gpu()?;
        if !gpu {
            if proving && !self.quiet && !self.said_cpu.swap(true, Ordering::Relaxed) {
                let why = match probe_count(&self.count) {
                    Err(e) => format!("no usable CUDA driver ({e})"),
                    Ok(_) => "no CUDA device".to_owned(),
                };
                eprintln!(
                    "notice: {why}: proving on the CPU (slow: over an hour for a 32GiB \
                     sector); --device cuda makes a missing GPU an error"
                );
            }
            return Ok(false);
        }
        if self.lock_gpu {
            let mut held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            if held.is_none() {
                let quiet = self.quiet;
                *held = Some(GpuLock::acquire(|path| {
                    if !quiet {
                        eprintln!(
                            "notice: waiting for {} (another prover uses the GPU; \
                             --gpu-lock off skips the lock)",
                            path.display()
                        );
                    }
                })?);
            }
        }
        Ok(true)
    }

    /// Whether the CUDA backend proves (waiting for the probe if it is still at it): true
    /// with a usable GPU; false with none under `--device auto`; an error naming what is
    /// missing under `--device cuda`, or for a `--gpu` index the machine does not have.
    pub(super) fn gpu(&self) -> Result<bool> {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match (probe_count(&self.count), self.fallback) {
            (Ok(0), true) | (Err(_), true) => Ok(false),
            (Ok(0), false) => bail!("--device cuda: no CUDA device found (use --device cpu)"),
            (Err(e), false) => bail!("--device cuda: {e}"),
            (&Ok(n), _) if self.gpu >= n => bail!(
                "GPU {}: this machine has {n} CUDA device{} (numbered from 0; see --gpus)",
                self.gpu,
                plural(n)
            ),
            (Ok(_), _) => Ok(true),
        }
    }
}

/// The probe thread may be inside the driver: wait for it before the process exits.
impl Drop for Probe {
    fn drop(&mut self) {
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}
