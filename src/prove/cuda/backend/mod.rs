//! The CUDA backend: H by NTT on the GPU, the five products by GPU Pippenger MSMs. The
//! flow (dense scalars picked by the A/B densities, inputs then aux) is the CPU backend's,
//! so the two give identical products; every kernel result is checked against the CPU in
//! the tests.
//!
//! SRS sections go to the GPU raw and are decoded there (`--srs-decode gpu`, default): the
//! host only reads the mapping. With `--srs-decode cpu` a helper thread decodes the next
//! section on the host while the GPU works on the current one, and each MSM uploads its
//! points. Witness MSMs (L, A, B) run split by default (`--split-msm`): the device
//! batch-adds the points of scalars equal to one and buckets only the rest. `--b-g2 cpu`
//! computes B in G2 with blst on the host cores, overlapping all the GPU work.
//!
//! The CUDA context and the SRS are set up while the partitions are synthesized
//! (`prefetch`, started by the pipeline before synthesis): a helper thread creates the
//! context, then decodes every section on the device, where it stays for every batch of
//! the run (`--max-circuits`). The products then go partition by partition, each
//! partition's aux assignment uploaded once for L, A and B, while the GPU computes its H
//! MSM (`--overlap-aux`: the copy engine and a worker thread move it, the SMs run the
//! MSM; nothing else uses the bus then). When the GPU lacks the room
//! for all sections plus the MSMs' scratch, they go product by product instead, each
//! section uploaded and decoded just before its MSMs and freed after them.

pub(crate) mod gpu_lock;
mod phases;
mod probe;
mod products;
mod resident;
mod upload_ahead;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Result;
use blstrs::{G1Affine, G2Affine, G2Projective};

use super::pce_eval::DevicePce;
use super::Msm;
use crate::input::srs::Srs;
use crate::prove::{cpu, Backend, Products};
use crate::report::{GpuInfo, Timings};
use crate::synth::{Abc, ProvingAssignment};
use probe::Probe;
use resident::{decode, Decoded, Early, EarlySrs, Prefetch, Resident};
use upload_ahead::{PceAhead, Staged};

/// Where B in G2 is computed (`--b-g2`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BG2 {
    #[default]
    Gpu,
    Cpu,
}

/// Where a deferred PCE assignment's A·w, B·w, C·w are evaluated (`--pce-eval`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PceEval {
    /// On the GPU, from the recording kept on the device (pce_eval.rs).
    #[default]
    Gpu,
    /// On the host cores, during synthesis.
    Cpu,
}

/// Where SRS points are decoded (`--srs-decode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SrsDecode {
    /// Raw bytes to the device, decoded there.
    #[default]
    Gpu,
    /// Decoded by blstrs on the host cores (on a helper thread), uploaded per MSM.
    Cpu,
}

pub struct Cuda {
    /// Window and split for the witness MSMs (L, A, B); H uses the window, never the split
    /// (its scalars are uniformly random).
    pub msm: Msm,
    pub b_g2: BG2,
    pub srs_decode: SrsDecode,
    /// The GPU (`--gpu N`), made current on the thread that runs the kernels.
    pub gpu: usize,
    /// Page-lock each mapped SRS section, a chunk at a time, while it is copied to the
    /// device (`--pin-mapped on` or `--pin on`), else stage it through pinned
    /// buffers.
    pub pin: bool,
    /// With the SRS resident, upload each partition's aux assignment while its H MSM runs
    /// (`--overlap-aux on`, the default) rather than after it.
    pub overlap_aux: bool,
    /// `--pce-eval gpu`: take assignments whose a, b, c synthesis left unevaluated and
    /// evaluate them on the device.
    pub pce_eval: bool,
    /// `--upload-ahead`: the next partition's aux assignment uploaded beside this one's
    /// MSMs (upload_ahead.rs).
    pub upload_ahead: bool,
    /// `--pack-aux`: aux assignments go to the device packed (crate::prove::cuda::pack_aux).
    pub pack_aux: bool,
    /// The GPU that proved (name, memory), once `products` has run on it.
    device: OnceLock<GpuInfo>,
    /// An aux assignment uploaded ahead, waiting for its partition.
    staged: Mutex<Option<Staged>>,
    /// The recording on the device, kept for every batch of the run.
    pce_dev: Mutex<Option<Arc<DevicePce>>>,
    /// The recording's upload, started when synthesis had it (upload_ahead.rs).
    pce_ahead: Mutex<Option<PceAhead>>,
    /// The SRS on the device: being loaded during synthesis, then kept for every batch.
    pub resident: Mutex<Prefetch>,
    /// When the first partition waits for the SRS (`CUZK_EARLY_SRS`).
    early_srs: EarlySrs,
    /// The sections handed over as they arrive, and the bytes still to be loaded.
    early: Early,
    /// Set when the backend is dropped: a prefetch still uploading stops at its next
    /// section (a run that fails early, on a bad C1, then ends at once).
    cancel: Arc<AtomicBool>,
    /// Whether there is a usable GPU, settled by a probe that runs on a helper thread
    /// from the backend's creation (see [`Cuda::new`]).
    probe: Arc<Probe>,
}

impl Cuda {
    /// The backend for `--device cuda`, or `--device auto` (`fallback`: the CPU proves
    /// when there is no GPU, with a notice unless `quiet`). The GPU probe starts here, on
    /// a helper thread. `lock_gpu`: take bellperson's GPU lock (`--gpu-lock`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        msm: Msm,
        b_g2: BG2,
        srs_decode: SrsDecode,
        gpu: usize,
        pin: bool,
        fallback: bool,
        lock_gpu: bool,
        quiet: bool,
    ) -> Self {
        let probe = Probe::start(fallback, gpu, lock_gpu, quiet);
        Self::with_probe(msm, b_g2, srs_decode, pin, probe)
    }

    /// A backend on the probe's GPU, with the switches at their defaults and nothing on
    /// the device yet.
    fn with_probe(
        msm: Msm,
        b_g2: BG2,
        srs_decode: SrsDecode,
        pin: bool,
        probe: Arc<Probe>,
    ) -> Self {
        Cuda {
            msm,
            b_g2,
            srs_decode,
            gpu: probe.gpu,
            pin,
            overlap_aux: true,
            pce_eval: true,
            upload_ahead: true,
            pack_aux: true,
            staged: Default::default(),
            device: OnceLock::new(),
            pce_dev: Default::default(),
            pce_ahead: Default::default(),
            resident: Default::default(),
            early_srs: EarlySrs::from_env(),
            early: Default::default(),
            cancel: Default::default(),
            probe,
        }
    }

    /// `--overlap-aux`: the aux assignment's upload beside the H MSM (default on).
    pub fn overlap_aux(mut self, on: bool) -> Self {
        self.overlap_aux = on;
        self
    }

    /// `--upload-ahead`: the next partition's aux assignment beside this one's MSMs
    /// (default on).
    pub(crate) fn upload_ahead(mut self, on: bool) -> Self {
        self.upload_ahead = on;
        self
    }

    /// `--pack-aux`: aux assignments cross the bus packed (pack_aux.rs; default on).
    pub fn pack_aux(mut self, on: bool) -> Self {
        self.pack_aux = on;
        self
    }

    /// `--pce-eval gpu`: A·w, B·w, C·w of `--pce` assignments on the device (default on).
    pub fn pce_eval(mut self, on: bool) -> Self {
        self.pce_eval = on;
        self
    }

    /// Whether this backend proves on the GPU, waiting for the probe (see [`Probe::gpu`]).
    pub fn gpu(&self) -> Result<bool> {
        self.probe.gpu()
    }

    /// How many CUDA devices the driver shows, waiting for the probe (0 without a usable
    /// driver).
    pub fn device_count(&self) -> usize {
        self.probe.count()
    }

    /// The same backend on GPU `gpu` (`--gpus`): the same settings, the probe's answer and
    /// the GPU lock shared; its own SRS copy, recording and staging on that device.
    pub fn on_gpu(&self, gpu: usize) -> Cuda {
        let probe = self.probe.sibling(gpu);
        Self::with_probe(self.msm, self.b_g2, self.srs_decode, self.pin, probe)
            .overlap_aux(self.overlap_aux)
            .upload_ahead(self.upload_ahead)
            .pce_eval(self.pce_eval)
    }
}

/// B in G2 computed on the host (`--b-g2 cpu`): the products, decode time, MSM time.
type CpuBG2 = Result<(Vec<G2Projective>, Duration, Duration)>;

/// A run that stops before the products (an error in synthesis, say) still waits for the
/// SRS upload thread: exiting while it is inside the CUDA runtime could crash the exit.
impl Drop for Cuda {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        let ahead = self.pce_ahead.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = ahead.take() {
            let _ = a.join();
        }
        let state = self.resident.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Prefetch::Loading(handle) = std::mem::take(state) {
            let _ = handle.join();
        }
    }
}

impl Backend for Cuda {
    /// "cpu" when `--device auto` found no GPU (waits for the probe).
    fn name(&self) -> &'static str {
        match self.probe.gpu() {
            Ok(false) => "cpu",
            _ => "cuda",
        }
    }

    /// Starts uploading and decoding every section the GPU MSMs read, if the device has
    /// room for them and for the MSMs' scratch (else they are loaded per MSM).
    fn prefetch(&self, srs: &Arc<Srs>) -> Result<()> {
        if self.srs_decode != SrsDecode::Gpu {
            return Ok(());
        }
        let (srs, probe, pin, g2, cancel) = (
            srs.clone(),
            self.probe.clone(),
            self.pin,
            self.b_g2 == BG2::Gpu,
            self.cancel.clone(),
        );
        let early = self.early.sender(self.early_srs);
        let handle = std::thread::Builder::new()
            .name("srs-upload".into())
            .spawn(move || Resident::prefetch(&srs, &probe, pin, g2, &cancel, early))?;
        *self.resident.lock().unwrap_or_else(|e| e.into_inner()) = Prefetch::Loading(handle);
        Ok(())
    }

    fn evaluates_pce(&self) -> bool {
        self.pce_eval
    }

    fn prepare_pce(&self, pce: &Arc<crate::synth::pce::Pce>) {
        if let Err(e) = self.start_pce_upload(pce) {
            // The first partition uploads it instead.
            log::warn!("the recording's upload ahead did not start: {e:#}");
        }
    }

    fn queue_name(&self) -> String {
        match self.probe.gpu() {
            Ok(true) => format!("GPU {}", self.gpu),
            _ => "CPU".into(),
        }
    }

    fn device(&self) -> Option<GpuInfo> {
        self.device.get().cloned()
    }

    fn products(
        &self,
        srs: &Srs,
        parts: &mut [ProvingAssignment],
        next: &dyn crate::prove::NextPart,
        t: &mut Timings,
    ) -> Result<Vec<Products>> {
        if !self.probe.claim(true)? {
            return cpu::Cpu.products(srs, parts, next, t);
        }
        super::set_device(self.gpu)?;
        if self.device.get().is_none() {
            let (_, total) = super::mem_info()?;
            let name = super::device_name(self.gpu)?;
            let _ = self.device.set(GpuInfo {
                index: self.gpu,
                name,
                memory_bytes: total as u64,
            });
        }
        // The evaluations leave the assignments first, so the rest can be shared with the
        // helper threads.
        let abc: Vec<Abc> = parts
            .iter_mut()
            .map(|p| std::mem::take(&mut p.abc))
            .collect();
        let parts: &[ProvingAssignment] = parts;
        let g2_on_gpu = self.b_g2 == BG2::Gpu;
        let host_decode = self.srs_decode == SrsDecode::Cpu;
        std::thread::scope(|scope| {
            let (tx1, rx1) = mpsc::sync_channel(1);
            let (tx2, rx2) = mpsc::sync_channel(1);
            scope.spawn(move || {
                if !host_decode {
                    return;
                }
                for s in [&srs.h, &srs.l, &srs.a, &srs.b_g1] {
                    if tx1.send(decode::<G1Affine>(srs, s)).is_err() {
                        return; // the prover stopped on an error
                    }
                }
                if g2_on_gpu {
                    let _ = tx2.send(decode::<G2Affine>(srs, &srs.b_g2));
                }
            });
            let cpu_b_g2 = (!g2_on_gpu).then(|| {
                scope.spawn(move || -> CpuBG2 {
                    let (pts, decoded) = decode::<G2Affine>(srs, &srs.b_g2);
                    let t0 = Instant::now();
                    let b = cpu::b_products(&pts?, parts);
                    Ok((b, decoded, t0.elapsed()))
                })
            });
            let mut products = self.products_with(
                srs,
                abc,
                parts,
                next,
                t,
                &Decoded { rx: rx1 },
                &Decoded { rx: rx2 },
            )?;
            if let Some(handle) = cpu_b_g2 {
                let joined = t.time("wait for B in G2 (CPU)", || handle.join());
                let (b, decoded, took) =
                    joined.map_err(|_| anyhow::anyhow!("the B-in-G2 thread panicked"))??;
                t.add("  decode SRS b_g2 (CPU, overlapped)", decoded);
                t.add("  MSM b_g2 (CPU, overlapped)", took);
                for (p, b) in products.iter_mut().zip(b) {
                    p.b_g2 = b;
                }
            }
            Ok(products)
        })
    }
}
