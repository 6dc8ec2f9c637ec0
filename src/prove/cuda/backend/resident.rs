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

/// The sections decoded on the GPU for the whole run (b_g2 only with `--b-g2 gpu`), each
/// shared: the prover may take it as soon as it is decoded (see [`Early`]).
pub struct Resident {
    pub(super) h: Arc<DevicePoints<G1Affine>>,
    pub(super) l: Arc<DevicePoints<G1Affine>>,
    pub(super) a: Arc<DevicePoints<G1Affine>>,
    pub(super) b_g1: Arc<DevicePoints<G1Affine>>,
    pub(super) b_g2: Option<Arc<DevicePoints<G2Affine>>>,
}

/// A G1 section of the resident SRS.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum G1Section {
    H = 0,
    L = 1,
    A = 2,
    BG1 = 3,
}

impl G1Section {
    fn name(self) -> &'static str {
        ["h", "l", "a", "b_g1"][self as usize]
    }
}

/// A section the prefetch has decoded and checked, handed to the prover early.
pub(super) enum Arrived {
    G1(G1Section, Arc<DevicePoints<G1Affine>>),
    G2(Arc<DevicePoints<G2Affine>>),
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
/// Estimated from the allocations (not measured): the H MSM's peak with all its windows'
/// digits sorted at once was ≈ 450 bytes (H and its copy 64, keys and values in and out
/// 256, CUB's copy of them 128); 640 leaves room for the allocator. Since the sort runs
/// between two buffers (no copy of CUB's own) and the MSM sorts its windows in passes
/// where memory is short (`cuda/msm/pippenger.cuh`), the need is [`PASS_PLAN_SCRATCH_PER_DOMAIN_ELEMENT`]'s
/// under `CUZK_MSM_PASS_PLAN=1`; 640 stays the default until that plan is measured on a
/// device it changes (an 80 GB H100 at 32GiB: the SRS resident instead of loaded per MSM).
const SCRATCH_PER_DOMAIN_ELEMENT: usize = 640;

/// Whether the memory plan counts on MSM h's window passes (`CUZK_MSM_PASS_PLAN=1`).
pub(super) fn pass_plan() -> bool {
    std::env::var("CUZK_MSM_PASS_PLAN").is_ok_and(|v| v == "1")
}

/// Per domain element, beside the resident SRS, with MSM h in window passes: the NTT's
/// a, b, c and H (128) with its twist tables (≤ 32 at 2^27, kept once made), or later
/// MSM h's H and its copy (64) with the aux assignment arriving (32), the tables and one
/// window's digits in the sort's two buffers (16) and their partial sums (≤ 12); 256
/// leaves ~25 % for the allocator (34 GB at 2^27: 47 + 34 GB beside the 84 GB an H100
/// has free).
const PASS_PLAN_SCRATCH_PER_DOMAIN_ELEMENT: usize = 256;

/// [`SCRATCH_PER_DOMAIN_ELEMENT`], or [`PASS_PLAN_SCRATCH_PER_DOMAIN_ELEMENT`] under `CUZK_MSM_PASS_PLAN=1`.
fn scratch_per_domain_element() -> usize {
    if pass_plan() {
        PASS_PLAN_SCRATCH_PER_DOMAIN_ELEMENT
    } else {
        SCRATCH_PER_DOMAIN_ELEMENT
    }
}

/// When the first partition waits for the SRS (`CUZK_EARLY_SRS`; at 32GiB the prover
/// waited ~1.9 s for it):
/// - `0` (the default until measured, docs/PERF.md): for the whole SRS, before its H;
/// - `whole`: for the whole SRS, but only before its H MSM (the NTT needs no SRS);
/// - `1`: for each section only before its MSM, as each is decoded: the sections are
///   uploaded in the order the MSMs read them (h, l, a, b_g1, b_g2).
///
/// While sections are pending, the prover's check of whether the recording fits on the
/// device takes the memory that will be free once the SRS is resident (`free_after`), as
/// the check does after it: the memory free now also lacks the section being decoded,
/// and with that the first measurement evaluated the first partition's A·w, B·w, C·w on
/// the host.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum EarlySrs {
    Off,
    Whole,
    Sections,
}

impl EarlySrs {
    pub(super) fn from_env() -> Self {
        match std::env::var("CUZK_EARLY_SRS").as_deref() {
            Ok("1") => EarlySrs::Sections,
            Ok("whole") => EarlySrs::Whole,
            _ => EarlySrs::Off,
        }
    }
}

#[derive(Default)]
pub struct Early {
    /// The sections, sent as each is decoded and checked (the sender dropped when the
    /// prefetch ends, done or not).
    pub(super) sections: Mutex<Option<mpsc::Receiver<Arrived>>>,
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
    /// The prefetch thread's side: the sections' sender when they go early (the receiver
    /// kept here), and the counts.
    pub(super) fn sender(&self, when: EarlySrs) -> EarlySender {
        let sections = (when == EarlySrs::Sections).then(|| {
            let (tx, rx) = mpsc::channel();
            *self.sections.lock().unwrap_or_else(|e| e.into_inner()) = Some(rx);
            tx
        });
        EarlySender {
            sections,
            pending: self.pending.clone(),
            free_after: self.free_after.clone(),
            decided: self.decided.clone(),
        }
    }
}

/// What the prefetch thread tells the prover early ([`Early`]); `decided` is set when it
/// is dropped at the latest (the prefetch stopped before counting).
pub(super) struct EarlySender {
    sections: Option<mpsc::Sender<Arrived>>,
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
    /// Every section, in the order the MSMs use them, each sent to `early` as soon as it
    /// is decoded and its bytes taken off `pending`; stops (with an error no one sees)
    /// before the next section once `cancel` is set.
    fn load(
        srs: &Srs,
        pin: bool,
        g2: bool,
        cancel: &AtomicBool,
        early: Option<mpsc::Sender<Arrived>>,
        pending: &AtomicUsize,
    ) -> Result<Self> {
        // For tests: each section this much later, so that the first partition of a small
        // sector finds them arriving.
        let delay = std::env::var("CUZK_TEST_SECTION_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis);
        let before_each = || -> Result<()> {
            anyhow::ensure!(!cancel.load(Ordering::Relaxed), "the run stopped");
            if let Some(d) = delay {
                std::thread::sleep(d);
            }
            Ok(())
        };
        fn decoded<P: GpuAffine>(
            srs: &Srs,
            s: &Section,
            pin: bool,
            pending: &AtomicUsize,
        ) -> Result<Arc<DevicePoints<P>>> {
            let d = decode_section(srs, s, pin)?;
            pending.fetch_sub(s.count * s.point_size, Ordering::SeqCst);
            Ok(Arc::new(d))
        }
        let g1 = |w: G1Section| -> Result<Arc<DevicePoints<G1Affine>>> {
            before_each()?;
            let s = [&srs.h, &srs.l, &srs.a, &srs.b_g1][w as usize];
            let d = decoded(srs, s, pin, pending)?;
            if let Some(tx) = &early {
                log::info!("SRS section {} resident", w.name());
                let _ = tx.send(Arrived::G1(w, d.clone())); // the prover may be gone
            }
            Ok(d)
        };
        let (h, l, a, b_g1) = (
            g1(G1Section::H)?,
            g1(G1Section::L)?,
            g1(G1Section::A)?,
            g1(G1Section::BG1)?,
        );
        let b_g2 = match g2 {
            true => {
                before_each()?;
                let d = decoded(srs, &srs.b_g2, pin, pending)?;
                if let Some(tx) = &early {
                    log::info!("SRS section b_g2 resident");
                    let _ = tx.send(Arrived::G2(d.clone()));
                }
                Some(d)
            }
            false => None,
        };
        Ok(Resident {
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
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
        let need = bytes + scratch_per_domain_element() * srs.domain_size();
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
        let loaded = Self::load(srs, pin, g2, cancel, early.sections.take(), &early.pending);
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
    /// The resident SRS for the prover, section by section ([`EarlySrs`]): as each
    /// arrives while the prefetch still loads them, or the whole, joined now or when the
    /// first section is needed. None when sections are loaded per MSM (known once the
    /// prefetch has counted the room, right after the CUDA context).
    pub(super) fn sections(&self, t: &mut Timings) -> Result<Option<Sections>> {
        let loading = matches!(
            &*self.resident.lock().unwrap_or_else(|e| e.into_inner()),
            Prefetch::Loading(_)
        );
        let rx = self
            .early
            .sections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if loading && self.early_srs != EarlySrs::Off {
            self.early.decided.wait();
            if self.early.pending.load(Ordering::SeqCst) > 0 {
                return Ok(Some(Sections {
                    arriving: rx,
                    loading: true,
                    ..Default::default()
                }));
            }
        }
        Ok(self.resident(t)?.map(|r| Sections::whole(&r)))
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

/// The resident sections as the prover takes them ([`Cuda::sections`]).
#[derive(Default)]
pub(super) struct Sections {
    /// The prefetch's channel while sections are still arriving (`CUZK_EARLY_SRS=1`).
    arriving: Option<mpsc::Receiver<Arrived>>,
    /// The prefetch thread is still to be joined for the whole.
    loading: bool,
    g1: [Option<Arc<DevicePoints<G1Affine>>>; 4],
    g2: Option<Arc<DevicePoints<G2Affine>>>,
}

impl Sections {
    fn whole(r: &Resident) -> Self {
        Sections {
            arriving: None,
            loading: false,
            g1: [
                Some(r.h.clone()),
                Some(r.l.clone()),
                Some(r.a.clone()),
                Some(r.b_g1.clone()),
            ],
            g2: r.b_g2.clone(),
        }
    }

    /// A G1 section, waiting for it if it has not arrived.
    pub(super) fn g1(
        &mut self,
        cuda: &Cuda,
        w: G1Section,
        t: &mut Timings,
    ) -> Result<Arc<DevicePoints<G1Affine>>> {
        loop {
            if let Some(p) = &self.g1[w as usize] {
                return Ok(p.clone());
            }
            anyhow::ensure!(
                self.loading,
                "the SRS upload stopped before section {}",
                w.name()
            );
            self.next(cuda, w.name(), t)?;
        }
    }

    /// Section b_g2 when it is on the GPU (`--b-g2 gpu`: the caller asks only then),
    /// waiting for it if it has not arrived.
    pub(super) fn g2(
        &mut self,
        cuda: &Cuda,
        t: &mut Timings,
    ) -> Result<Option<Arc<DevicePoints<G2Affine>>>> {
        while self.g2.is_none() && self.loading {
            self.next(cuda, "b_g2", t)?;
        }
        Ok(self.g2.clone())
    }

    /// The next section from the prefetch; once it sends no more (every section sent, or
    /// it failed), or sends none, the whole from its thread, with its error if it failed.
    fn next(&mut self, cuda: &Cuda, want: &str, t: &mut Timings) -> Result<()> {
        let got = self.arriving.as_ref().map(|rx| {
            t.time(
                &format!("wait for the GPU prefetch (section {want})"),
                || rx.recv(),
            )
        });
        match got {
            Some(Ok(Arrived::G1(w, p))) => self.g1[w as usize] = Some(p),
            Some(Ok(Arrived::G2(p))) => self.g2 = Some(p),
            _ => self.settle(cuda, t)?,
        }
        Ok(())
    }

    /// Joins the prefetch (its timing rows, and its error if a section failed) and takes
    /// the whole from it.
    fn settle(&mut self, cuda: &Cuda, t: &mut Timings) -> Result<()> {
        let r = cuda
            .resident(t)?
            .ok_or_else(|| anyhow::anyhow!("the SRS upload stopped before every section"))?;
        *self = Sections::whole(&r);
        Ok(())
    }

    /// [`Self::settle`] if the prefetch thread has ended by now: a run of one partition
    /// then still reports the upload's rows (a thread still releasing the mapping's pages
    /// is left to the next partition, or to the backend's drop).
    pub(super) fn settle_if_done(&mut self, cuda: &Cuda, t: &mut Timings) -> Result<()> {
        let done = matches!(
            &*cuda.resident.lock().unwrap_or_else(|e| e.into_inner()),
            Prefetch::Loading(h) if h.is_finished()
        );
        if self.loading && done {
            self.settle(cuda, t)?;
        }
        Ok(())
    }
}
