//! The devices a run proves on (`--gpus`): one backend per device queue. The CPU is one
//! queue; the CUDA backend is one queue per GPU listed (`--gpus 0,1`) or shown by the
//! driver (`--gpus all`, the default), each with its own copy of the SRS uploaded while
//! the partitions are synthesized. The scheduler (pipeline/gpus.rs) hands each queue the
//! next synthesized partition when it is free.
//!
//! The first GPU's backend is made at once, so its context and SRS upload start as early
//! as with one GPU; under `--gpus all` the others are made once the GPU probe has counted
//! the devices, on a helper thread started with the first one's prefetch (the run never
//! waits for the driver before it must).

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{anyhow, bail, Result};

use super::cuda::backend::Cuda;
use super::{cpu::Cpu, Backend};
use crate::cli::Gpus;
use crate::input::srs::Srs;
use crate::report::GpuInfo;

pub(crate) struct Devices {
    first: Arc<dyn Backend>,
    /// The CUDA backend's other queues: made (and prefetching) on a helper thread, or
    /// made when first asked for.
    rest: Mutex<Rest>,
    /// `--gpus` under the CUDA backend.
    gpus: Option<(Arc<Cuda>, Gpus)>,
}

#[derive(Default)]
enum Rest {
    /// Not made yet (a CPU run has none).
    #[default]
    Unmade,
    Making(JoinHandle<Result<Vec<Arc<dyn Backend>>>>),
    Made(Vec<Arc<dyn Backend>>),
}

impl Devices {
    pub(crate) fn cpu() -> Self {
        Self {
            first: Arc::new(Cpu),
            rest: Default::default(),
            gpus: None,
        }
    }

    /// The CUDA backend `first` on `gpus.first()`, and `gpus`' other devices after it.
    pub(crate) fn cuda(first: Cuda, gpus: Gpus) -> Self {
        let first = Arc::new(first);
        Self {
            first: first.clone(),
            rest: Default::default(),
            gpus: Some((first, gpus)),
        }
    }

    /// The first queue's backend name ("cuda", or "cpu" when `--device auto` found no
    /// GPU).
    pub(crate) fn name(&self) -> &'static str {
        self.first.name()
    }

    pub(crate) fn evaluates_pce(&self) -> bool {
        self.first.evaluates_pce()
    }

    /// Starts the prefetch of the queues that `partitions` partitions can keep busy: the
    /// first's at once, the others' once they are made (see the module's comment). A
    /// sector of one partition (2KiB to 512MiB) never sets up a second GPU.
    pub(crate) fn prefetch(&self, srs: &Arc<Srs>, partitions: usize) -> Result<()> {
        let others = partitions.max(1) - 1;
        self.first.prefetch(srs)?;
        let Some((first, gpus)) = self.gpus.clone() else {
            return Ok(());
        };
        let mut rest = self.rest.lock().unwrap_or_else(|e| e.into_inner());
        match &*rest {
            Rest::Making(_) => return Ok(()),
            // Made when the run checked the list against the driver (choose_backend).
            Rest::Made(made) => return made.iter().take(others).try_for_each(|b| b.prefetch(srs)),
            Rest::Unmade => {}
        }
        let srs = srs.clone();
        let handle = std::thread::Builder::new()
            .name("gpus".into())
            .spawn(move || {
                let made = make_rest(&first, &gpus)?;
                for b in made.iter().take(others) {
                    b.prefetch(&srs)?;
                }
                Ok(made)
            })?;
        *rest = Rest::Making(handle);
        Ok(())
    }

    /// The backends of the queues that prove `partitions` partitions, the first first
    /// (waits for the GPU probe under `--gpus all`).
    pub(crate) fn queues(&self, partitions: usize) -> Result<Vec<Arc<dyn Backend>>> {
        let mut rest = self.rest.lock().unwrap_or_else(|e| e.into_inner());
        let made = match std::mem::take(&mut *rest) {
            Rest::Made(m) => m,
            Rest::Making(h) => h
                .join()
                .map_err(|_| anyhow!("the thread setting up the GPUs panicked"))??,
            Rest::Unmade => match &self.gpus {
                Some((first, gpus)) => make_rest(first, gpus)?,
                None => Vec::new(),
            },
        };
        *rest = Rest::Made(made.clone());
        let others = partitions.max(1) - 1;
        Ok(std::iter::once(self.first.clone())
            .chain(made.into_iter().take(others))
            .collect())
    }

    /// How many queues prove `partitions` partitions (waits for the GPU probe under
    /// `--gpus all`; checks every listed index against the driver's count).
    pub(crate) fn count(&self, partitions: usize) -> Result<usize> {
        Ok(self.queues(partitions)?.len())
    }

    /// The GPU of each queue that proved, for the report.
    pub(crate) fn first_device(&self) -> Option<GpuInfo> {
        self.first.device()
    }
}

/// The backends of `gpus`' devices after the first: none when the first proves on the
/// CPU (`--device auto` without a GPU); each listed index checked against the driver's
/// count.
fn make_rest(first: &Cuda, gpus: &Gpus) -> Result<Vec<Arc<dyn Backend>>> {
    if !first.gpu()? {
        return Ok(Vec::new());
    }
    let n = first.device_count();
    let rest: Vec<usize> = match gpus {
        Gpus::All => (1..n).collect(),
        Gpus::List(l) => {
            if let Some(&i) = l.iter().find(|&&i| i >= n) {
                let s = if n == 1 { "" } else { "s" };
                bail!("GPU {i}: this machine has {n} CUDA device{s} (numbered from 0; see --gpus)");
            }
            l[1..].to_vec()
        }
    };
    Ok(rest
        .into_iter()
        .map(|i| Arc::new(first.on_gpu(i)) as Arc<dyn Backend>)
        .collect())
}
