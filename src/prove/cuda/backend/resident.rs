//! The SRS on the GPU: every section uploaded raw and decoded there while the partitions
//! are synthesized, then resident for the run (`--srs-decode gpu`); or, where the GPU is
//! too small, each section loaded for its MSMs (decoded on the device, or on the host
//! cores with `--srs-decode cpu`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;
use blstrs::{G1Affine, G2Affine, Scalar as Fr};

use super::phases::DeviceWork;
use super::probe::Probe;
use super::{Cuda, SrsDecode};
use crate::input::srs::{Section, Srs, SrsPoint};
use crate::prove::cuda::{msm_with, DevicePoints, DeviceScalars, GpuAffine, Msm, Points, Scalars};
use crate::report::Timings;

/// The sections decoded on the GPU for the whole run (b_g2 only with `--b-g2 gpu`).
pub struct Resident {
    /// Shared: handed to the prover as soon as it is decoded (see [`Early`]).
    pub(super) h: Arc<DevicePoints<G1Affine>>,
    pub(super) l: DevicePoints<G1Affine>,
    pub(super) a: DevicePoints<G1Affine>,
    pub(super) b_g1: DevicePoints<G1Affine>,
    pub(super) b_g2: Option<DevicePoints<G2Affine>>,
}

/// Where the resident SRS stands.
#[derive(Default)]
pub enum Prefetch {
    /// Not asked for: sections are loaded per MSM.
    #[default]
    Off,
    /// A helper thread is creating the CUDA context and then, when the GPU has the room,
    /// uploading and decoding the sections.
    Loading(JoinHandle<Result<Prefetched>>),
    Ready(Arc<Resident>),
    /// The context exists, but the SRS did not fit: sections are loaded per MSM.
    NoRoom,
}

/// What the prefetch thread did.
pub struct Prefetched {
    /// None when the GPU lacks the room for every section plus the MSMs' scratch.
    pub(super) resident: Option<Resident>,
    pub(super) context: Duration,
    pub(super) upload: Duration,
}

/// Device memory the MSMs and the NTT need besides the resident SRS, per domain element.
/// Estimated from the allocations (not measured): the H MSM's peak, while its 16 windows
/// of digits are sorted, is ≈ 450 bytes (H and its copy 64, keys and values in and out
/// 256, CUB's scratch ≈ 128); 640 leaves room for the allocator and CUB.
const SCRATCH_PER_DOMAIN_ELEMENT: usize = 640;

/// Section h before the rest (`CUZK_EARLY_H=1`; off by default until measured, see
/// docs/PERF.md): the first partition's H (its NTT needs no SRS) and H MSM run as soon as
/// section h is decoded, while the other sections are still uploaded (at 32GiB the prover
/// waits 1.1–1.5 s for the whole SRS). While sections are pending, the prover's check of
/// whether the recording fits on the device takes the memory that will be free once the
/// SRS is resident (`free_after`), as the check does after it: the memory free now also
/// lacks the section being decoded, and with that the first measurement evaluated the
/// first partition's A·w, B·w, C·w on the host.
#[derive(Default)]
pub struct Early {
    /// Section h, sent once decoded (dropped unsent when the SRS is not made resident).
    pub(super) h: Mutex<Option<mpsc::Receiver<Arc<DevicePoints<G1Affine>>>>>,
    /// Device bytes of the sections not decoded yet.
    pub(super) pending: Arc<AtomicUsize>,
    /// Device memory free once every section is resident (set with `pending`).
    pub(super) free_after: Arc<AtomicUsize>,
    /// Set once the prefetch has counted what it will hold (`pending`, `free_after`) or
    /// has stopped: the recording's upload ahead (upload_ahead.rs) waits for it before
    /// it checks the room.
    pub(super) decided: Arc<Decided>,
}

/// A one-way flag a thread can wait for.
#[derive(Default)]
pub(super) struct Decided {
    set: Mutex<bool>,
    cv: Condvar,
}

impl Decided {
    pub(super) fn set(&self) {
        *self.set.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    pub(super) fn wait(&self) {
        let mut set = self.set.lock().unwrap_or_else(|e| e.into_inner());
        while !*set {
            set = self.cv.wait(set).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Early {
    /// Whether section h goes ahead (`CUZK_EARLY_H=1`; default off).
    pub(super) fn on() -> bool {
        std::env::var("CUZK_EARLY_H").is_ok_and(|v| v == "1")
    }

    /// The prefetch thread's side: section h's sender when it goes ahead (the receiver
    /// kept here), and the counts.
    pub(super) fn sender(&self) -> EarlySender {
        let h = Self::on().then(|| {
            let (tx, rx) = mpsc::sync_channel(1);
            *self.h.lock().unwrap_or_else(|e| e.into_inner()) = Some(rx);
            tx
        });
        EarlySender {
            h,
            pending: self.pending.clone(),
            free_after: self.free_after.clone(),
            decided: self.decided.clone(),
        }
    }
}

/// What the prefetch thread tells the prover early ([`Early`]); `decided` is set when it
/// is dropped at the latest (the prefetch stopped before counting).
pub(super) struct EarlySender {
    h: Option<mpsc::SyncSender<Arc<DevicePoints<G1Affine>>>>,
    pending: Arc<AtomicUsize>,
    free_after: Arc<AtomicUsize>,
    decided: Arc<Decided>,
}

impl Drop for EarlySender {
    fn drop(&mut self) {
        self.decided.set();
    }
}

impl Resident {
    /// Every section, in the order the MSMs use them, h sent to `early_h` as soon as it is
    /// decoded and each section's bytes taken off `pending`; stops (with an error no one
    /// sees) before the next section once `cancel` is set.
    fn load(
        srs: &Srs,
        pin: bool,
        g2: bool,
        cancel: &AtomicBool,
        early_h: Option<mpsc::SyncSender<Arc<DevicePoints<G1Affine>>>>,
        pending: &AtomicUsize,
    ) -> Result<Self> {
        let decode = |s: &Section| {
            anyhow::ensure!(!cancel.load(Ordering::Relaxed), "the run stopped");
            let d = decode_section(srs, s, pin)?;
            pending.fetch_sub(s.count * s.point_size, Ordering::SeqCst);
            Ok(d)
        };
        let h = Arc::new(decode(&srs.h)?);
        if let Some(tx) = early_h {
            log::info!("SRS section h resident");
            let _ = tx.send(h.clone()); // the prover may be gone (a failed run)
        }
        let r = Resident {
            h,
            l: decode(&srs.l)?,
            a: decode(&srs.a)?,
            b_g1: decode(&srs.b_g1)?,
            b_g2: match g2 {
                true => {
                    anyhow::ensure!(!cancel.load(Ordering::Relaxed), "the run stopped");
                    let d = decode_section(srs, &srs.b_g2, pin)?;
                    pending.fetch_sub(srs.b_g2.count * srs.b_g2.point_size, Ordering::SeqCst);
                    Some(d)
                }
                false => None,
            },
        };
        Ok(r)
    }
}

/// One section uploaded and decoded on the device, an error naming file and section.
fn decode_section<P: GpuAffine>(srs: &Srs, s: &Section, pin: bool) -> Result<DevicePoints<P>> {
    DevicePoints::decode(srs.section_bytes(s), pin).map_err(|e| {
        anyhow::anyhow!(
            "parameters {}: section '{}': {e:#}",
            srs.path.display(),
            s.name
        )
    })
}

impl Resident {
    /// Runs on the prefetch thread, during synthesis: the probe's answer and the CUDA
    /// context first (0.10–0.12 s each on the H200, which a single-shot prover would
    /// otherwise pay before or after synthesis), then the sections if they fit beside the
    /// MSMs' scratch. Nothing without a GPU (`--device auto` then proves on the CPU).
    pub(super) fn prefetch(
        srs: &Srs,
        probe: &Probe,
        pin: bool,
        g2: bool,
        cancel: &AtomicBool,
        mut early: EarlySender,
    ) -> Result<Prefetched> {
        let t0 = Instant::now();
        if !probe.claim(false)? {
            return Ok(Prefetched {
                resident: None,
                context: t0.elapsed(),
                upload: Duration::ZERO,
            });
        }
        crate::prove::cuda::set_device(probe.gpu)?;
        let (free, _) = crate::prove::cuda::mem_info()?;
        let context = t0.elapsed();
        let mut bytes: usize = [&srs.h, &srs.l, &srs.a, &srs.b_g1]
            .iter()
            .map(|s| s.count * s.point_size)
            .sum();
        if g2 {
            bytes += srs.b_g2.count * srs.b_g2.point_size;
        }
        let need = bytes + SCRATCH_PER_DOMAIN_ELEMENT * srs.domain_size();
        if need > free {
            log::info!(
                "SRS loaded per MSM: resident it needs {need} bytes with the MSM scratch, the \
                 GPU has {free} free"
            );
            return Ok(Prefetched {
                resident: None,
                context,
                upload: Duration::ZERO,
            });
        }
        let t1 = Instant::now();
        log::info!("SRS upload starts");
        early.free_after.store(free - bytes, Ordering::SeqCst);
        early.pending.store(bytes, Ordering::SeqCst);
        early.decided.set();
        let loaded = Self::load(srs, pin, g2, cancel, early.h.take(), &early.pending);
        if loaded.is_err() {
            early.pending.store(0, Ordering::SeqCst);
        }
        let resident = Some(loaded?);
        log::info!(
            "SRS resident on the GPU ({:.3} s)",
            t1.elapsed().as_secs_f64()
        );
        srs.release_pages();
        Ok(Prefetched {
            resident,
            context,
            upload: t1.elapsed(),
        })
    }
}

/// A section's points: decoded on the host, on the device for one MSM, or resident.
pub(super) enum Loaded<'a, P: GpuAffine> {
    Host(Vec<P>),
    Device(DevicePoints<P>),
    Resident(&'a DevicePoints<P>),
}

impl<P: GpuAffine> Loaded<'_, P> {
    /// Σ scalars[i]·points[offset + i], adding what the device did to `sum`.
    pub(super) fn msm(
        &self,
        offset: usize,
        scalars: &[Fr],
        cfg: Msm,
        sum: &mut DeviceWork,
    ) -> Result<P::Projective> {
        self.msm_with(offset, Scalars::Host(scalars), scalars.len(), cfg, sum)
    }

    /// [`Self::msm`] over scalars already on the device (all `n` of the set).
    pub(super) fn msm_dev(
        &self,
        offset: usize,
        scalars: &DeviceScalars,
        cfg: Msm,
        sum: &mut DeviceWork,
    ) -> Result<P::Projective> {
        let n = scalars.len();
        self.msm_with(offset, Scalars::Device(scalars, 0, n), n, cfg, sum)
    }

    fn msm_with(
        &self,
        offset: usize,
        scalars: Scalars,
        n: usize,
        cfg: Msm,
        sum: &mut DeviceWork,
    ) -> Result<P::Projective> {
        let points = match self {
            Loaded::Host(v) => Points::Host(&v[offset..offset + n]),
            Loaded::Device(d) => Points::Device(d, offset),
            Loaded::Resident(d) => Points::Device(d, offset),
        };
        let (p, r) = msm_with(points, scalars, cfg)?;
        sum.add(&r, n);
        Ok(p)
    }
}

/// With `--srs-decode cpu`, decoded sections arrive from a helper thread in the order the
/// MSMs use them, so host decoding overlaps the GPU work (NTT, then the previous section's
/// MSM). One section in flight at a time bounds memory.
pub(super) struct Decoded<P> {
    pub(super) rx: mpsc::Receiver<(Result<Vec<P>>, Duration)>,
}

pub(super) fn decode<P: SrsPoint>(srs: &Srs, s: &Section) -> (Result<Vec<P>>, Duration) {
    let t0 = Instant::now();
    (srs.points(s, 0..s.count), t0.elapsed())
}

impl Cuda {
    /// Section h, while the other sections are still being loaded ([`Early`]): waits for
    /// h only. None when the SRS is not being loaded (resident already, or per MSM), or is
    /// not made resident after all: the caller then waits for [`Self::resident`].
    pub(super) fn early_h(&self, t: &mut Timings) -> Option<Arc<DevicePoints<G1Affine>>> {
        let loading = matches!(
            &*self.resident.lock().unwrap_or_else(|e| e.into_inner()),
            Prefetch::Loading(_)
        );
        let rx = self
            .early
            .h
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let rx = rx.filter(|_| loading)?;
        t.time("wait for the GPU prefetch (section h)", || rx.recv().ok())
    }

    /// The resident SRS, waiting for its loading thread if needed; None when sections are
    /// loaded per MSM.
    pub(super) fn resident(&self, t: &mut Timings) -> Result<Option<Arc<Resident>>> {
        let mut state = self.resident.lock().unwrap_or_else(|e| e.into_inner());
        if let Prefetch::Loading(_) = &*state {
            let Prefetch::Loading(handle) = std::mem::take(&mut *state) else {
                unreachable!()
            };
            let joined = t.time("wait for the GPU prefetch", || handle.join());
            let done = joined.map_err(|_| anyhow::anyhow!("the SRS upload thread panicked"))??;
            t.add(
                "  GPU probe + CUDA context (during synthesis)",
                done.context,
            );
            *state = match done.resident {
                Some(r) => {
                    t.add(
                        "  SRS upload + decode, all sections (GPU, during synthesis)",
                        done.upload,
                    );
                    Prefetch::Ready(Arc::new(r))
                }
                None => Prefetch::NoRoom,
            };
        }
        Ok(match &*state {
            Prefetch::Ready(r) => Some(r.clone()),
            _ => None,
        })
    }

    /// The points of section `s` when the SRS is not resident: decoded on the device from
    /// the mapped bytes, or the next section from the host decoding thread.
    pub(super) fn load<P: GpuAffine + SrsPoint>(
        &self,
        srs: &Srs,
        s: &Section,
        host: &Decoded<P>,
        t: &mut Timings,
    ) -> Result<Loaded<'static, P>> {
        let name = s.name;
        if self.srs_decode == SrsDecode::Gpu {
            let d = t.time(&format!("upload + decode SRS {name} (GPU)"), || {
                DevicePoints::decode(srs.section_bytes(s), self.pin)
            });
            let d = d.map_err(|e| {
                anyhow::anyhow!("parameters {}: section '{name}': {e:#}", srs.path.display())
            })?;
            return Ok(Loaded::Device(d));
        }
        let (points, took) = t
            .time(&format!("wait for SRS {name}"), || host.rx.recv())
            .map_err(|_| anyhow::anyhow!("the SRS decoding thread stopped before {name}"))?;
        t.add(&format!("  decode SRS {name} (overlapped)"), took);
        Ok(Loaded::Host(points?))
    }
}
