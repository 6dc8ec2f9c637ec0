//! The products of a partition on the GPU: H (the NTT, or the recording's evaluation
//! and the NTT, `--pce-eval gpu`), then the witness MSMs L, A, B over its aux assignment,
//! uploaded once; partition by partition with the SRS resident, else product by product.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;

use super::phases::{DeviceWork, Phase, Phases};
use super::resident::{Decoded, G1Section, Loaded, Sections};
use super::{Cuda, BG2};
use crate::input::srs::Srs;
use crate::prove::cuda::pce_eval::DevicePce;
use crate::prove::cuda::{ntt, DevicePoints, DeviceScalars, GpuAffine, Msm};
use crate::prove::Products;
use crate::report::Timings;
use crate::synth::pce::Pce;
use crate::synth::{Abc, ProvingAssignment};

/// Device memory a partition needs beside the resident SRS and a recording on the device
/// (`--pce-eval gpu`), per domain element: its peak is MSM h's (≈ 450 bytes, see
/// [`SCRATCH_PER_DOMAIN_ELEMENT`]) with the aux assignment (32) and the NTT's twist
/// tables (64: kept for the process once made) beside it, plus ~30 of slack; the
/// evaluation and the NTT before it need less (a, b, c, H and the aux: 160). At 32GiB
/// on the H200: 8.8 GB of recording + 77 GB against ~94 GB free beside the SRS.
/// `--upload-ahead` adds the next partition's aux assignment (32 more).
const PCE_SCRATCH_PER_DOMAIN_ELEMENT: usize = 576;

/// [`PCE_SCRATCH_PER_DOMAIN_ELEMENT`] with MSM h in window passes
/// (`CUZK_MSM_PASS_PLAN=1`, resident.rs): the evaluation and the NTT's a, b, c (96) with
/// the aux assignment (32) and the twist tables (≤ 32), or MSM h's H and its copy (64),
/// the aux (32), the tables and one window's pass (≤ 28); 176 leaves ~10 % (an H100 at
/// 32GiB: 8.9 GB of recording + 23.6 GB against the 28.2 GB the SRS leaves). Measure
/// before trusting: this is the tightest of the plans.
const PCE_PASS_SCRATCH_PER_DOMAIN_ELEMENT: usize = 176;

/// A deferred assignment's evaluations on the host cores, where its recording does not
/// fit the GPU.
fn host_evaluations(pce: &Pce, p: &ProvingAssignment, t: &mut Timings) -> Result<[Vec<Fr>; 3]> {
    t.time(
        "A·w, B·w, C·w (PCE, CPU: the recording does not fit the GPU)",
        || pce.evaluations(&p.input_assignment, &p.aux_assignment),
    )
}

/// Where a partition's H starts from: its recording on the device (`--pce-eval gpu`), or
/// a, b, c on the host (as synthesis evaluated them, or from a recording too large for
/// the GPU).
enum HInput {
    Device(Arc<DevicePce>),
    Host([Vec<Fr>; 3]),
}

impl Cuda {
    /// The one decision both proving orders take per partition: see [`HInput`].
    fn h_input(&self, abc: Abc, p: &ProvingAssignment, t: &mut Timings) -> Result<HInput> {
        Ok(match abc {
            Abc::Evaluated { a, b, c } => HInput::Host([a, b, c]),
            Abc::Deferred(pce) => match self.device_pce(&pce, t)? {
                Some(d) => HInput::Device(d),
                None => HInput::Host(host_evaluations(&pce, p, t)?),
            },
        })
    }

    /// The recording `pce` on the device: uploaded ahead when synthesis had it
    /// (`--upload-ahead`, upload_ahead.rs) or on first use, then kept for the run. None
    /// when it does not fit beside what the NTT and the MSMs need (8.8 GB at 32GiB): the
    /// host evaluates instead ([`host_evaluations`]).
    fn device_pce(&self, pce: &Arc<Pce>, t: &mut Timings) -> Result<Option<Arc<DevicePce>>> {
        let mut kept = self.pce_dev.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = kept.as_ref().filter(|d| Arc::ptr_eq(&d.pce, pce)) {
            return Ok(Some(d.clone()));
        }
        *kept = None; // another recording's memory goes first
        let d = match self.pce_uploaded_ahead(pce, t) {
            Some(d) => d,
            None if !PceRoom::of(self).fits(pce)? => return Ok(None),
            None => t.time("upload PCE matrices (GPU, once per run)", || {
                DevicePce::upload(pce, false, self.pin)
            })?,
        };
        let d = Arc::new(d);
        *kept = Some(d.clone());
        Ok(Some(d))
    }
}

/// Whether a recording fits on the device beside what a partition's NTT and MSMs need;
/// owned, so that the upload ahead can check from its own thread.
pub(super) struct PceRoom {
    upload_ahead: bool,
    pending: Arc<std::sync::atomic::AtomicUsize>,
    free_after: Arc<std::sync::atomic::AtomicUsize>,
}

impl PceRoom {
    pub(super) fn of(cuda: &Cuda) -> Self {
        Self {
            upload_ahead: cuda.upload_ahead,
            pending: cuda.early.pending.clone(),
            free_after: cuda.early.free_after.clone(),
        }
    }

    /// Checked against the memory free now, or, while SRS sections are still being
    /// uploaded, what will be free once they are resident (resident.rs, `Early`); on the
    /// current device.
    pub(super) fn fits(&self, pce: &Pce) -> Result<bool> {
        let m = pce.constraints().next_power_of_two();
        let base = if super::resident::pass_plan() {
            PCE_PASS_SCRATCH_PER_DOMAIN_ELEMENT
        } else {
            PCE_SCRATCH_PER_DOMAIN_ELEMENT
        };
        let per = base + if self.upload_ahead { 32 } else { 0 };
        let need = DevicePce::bytes_for(pce) + per * m;
        let free = match self.pending.load(Ordering::SeqCst) {
            0 => crate::prove::cuda::mem_info()?.0,
            _ => self.free_after.load(Ordering::SeqCst),
        };
        if need > free {
            log::info!(
                "--pce-eval gpu: the recording needs {need} bytes with the NTT and MSM \
                 scratch, the GPU has {free} free: A·w, B·w, C·w on the host"
            );
        }
        Ok(need <= free)
    }
}

/// The witness queries: L and A read the aux assignment, B (G1 and G2) the B query.
#[derive(Clone, Copy)]
enum Query {
    L,
    A,
    B,
}

/// One query's MSMs for one partition, its aux assignment already on the device: the
/// inputs (A: all; B: by B's input density) from the host, then the aux scalars of the
/// query, selected on the device. L has no inputs.
fn query<P: GpuAffine>(
    q: Query,
    pts: &Loaded<P>,
    p: &ProvingAssignment,
    aux: &DeviceScalars,
    w: Msm,
    work: &mut DeviceWork,
) -> Result<P::Projective> {
    match q {
        Query::L => pts.msm_dev(0, aux, w, work),
        Query::A => {
            let inputs = p.input_assignment.len();
            let aux = aux.select(&p.a_aux_density)?;
            Ok(pts.msm(0, &p.input_assignment, w, work)? + pts.msm_dev(inputs, &aux, w, work)?)
        }
        Query::B => {
            let inputs = p.b_input_density.select(&p.input_assignment);
            let aux = aux.select(&p.b_aux_density)?;
            Ok(pts.msm(0, &inputs, w, work)?
                + pts.msm_dev(p.b_input_density.total(), &aux, w, work)?)
        }
    }
}

impl Cuda {
    /// H for one partition: the NTT leaves it on the device for its MSM. With `aux`, that
    /// assignment goes to the device during the MSM (returned; its upload's wait beyond
    /// the MSM is timed as the aux upload).
    fn h_product(
        &self,
        pts: &Loaded<G1Affine>,
        [a, b, c]: [Vec<Fr>; 3],
        aux: Option<&[Fr]>,
        ph: &mut Phases,
    ) -> Result<(G1Projective, Option<DeviceScalars>)> {
        let hd = ph.time(Phase::Ntt, |_| {
            let (hd, ms) = ntt::quotient_to_device(&a, &b, &c, false)?;
            drop((a, b, c));
            Ok((hd, ms))
        })?;
        ph.ntt_ms += hd.1 as f64;
        let h_cfg = self.h_msm();
        let Some(aux) = aux else {
            let h = ph.time(Phase::HMsm, |work| pts.msm_dev(0, &hd.0, h_cfg, work))?;
            return Ok((h, None));
        };
        let t0 = Instant::now();
        let (aux, (h, msm)) = DeviceScalars::upload_during(aux, self.pack_aux, false, || {
            let t1 = Instant::now();
            let h = pts.msm_dev(0, &hd.0, h_cfg, &mut ph.work[Phase::HMsm as usize])?;
            Ok((h, t1.elapsed()))
        })?;
        ph.wall[Phase::HMsm as usize] += msm;
        ph.wall[Phase::AuxUpload as usize] += t0.elapsed().saturating_sub(msm);
        Ok((h, Some(aux)))
    }

    /// H for a partition whose a, b, c synthesis left to the backend (`--pce-eval gpu`),
    /// up to its MSM: a, b, c evaluated on the device from its aux assignment (there
    /// already; L, A and B then reuse it), then the NTT, which leaves H there.
    fn h_pce(
        &self,
        pce: &DevicePce,
        p: &ProvingAssignment,
        aux: &DeviceScalars,
        ph: &mut Phases,
    ) -> Result<DeviceScalars> {
        let (hd, eval_ms, ms) = ph.time(Phase::Ntt, |_| {
            ntt::quotient_pce_to_device(pce, &p.input_assignment, aux)
        })?;
        ph.ntt_ms += ms as f64;
        ph.eval_ms += eval_ms as f64;
        ph.evaluated += 1;
        Ok(hd)
    }

    /// The H MSM's settings: the window, never the split (H's scalars are uniformly
    /// random).
    fn h_msm(&self) -> Msm {
        Msm {
            split: false,
            ..self.msm
        }
    }

    /// A partition's witness MSMs (L, A, B) over its aux assignment on the device, each
    /// section waited for before its MSM.
    fn witness(
        &self,
        o: &mut Products,
        p: &ProvingAssignment,
        aux: &DeviceScalars,
        secs: &mut Sections,
        t: &mut Timings,
        ph: &mut Phases,
    ) -> Result<()> {
        let w = self.msm;
        let l = secs.g1(self, G1Section::L, t)?;
        o.l = ph.time(Phase::L, |k| {
            query(Query::L, &Loaded::Resident(&*l), p, aux, w, k)
        })?;
        let a = secs.g1(self, G1Section::A, t)?;
        o.a = ph.time(Phase::A, |k| {
            query(Query::A, &Loaded::Resident(&*a), p, aux, w, k)
        })?;
        let b = secs.g1(self, G1Section::BG1, t)?;
        o.b_g1 = ph.time(Phase::BG1, |k| {
            query(Query::B, &Loaded::Resident(&*b), p, aux, w, k)
        })?;
        if self.b_g2 == BG2::Gpu {
            if let Some(b) = secs.g2(self, t)? {
                let b = Loaded::Resident(&*b);
                o.b_g2 = ph.time(Phase::BG2, |k| query(Query::B, &b, p, aux, w, k))?;
            }
        }
        Ok(())
    }

    /// With the SRS resident, partition by partition: H, then the aux assignment goes to
    /// the device once and serves L, A and B. Else (sections loaded per MSM) product by
    /// product over the partitions, each MSM uploading the aux assignment it narrows.
    /// `next`: the partition the caller proves after these, once synthesized; with the
    /// SRS resident and `--pce-eval gpu`, each partition's aux assignment goes to the
    /// device beside the MSMs of the one before it (`--upload-ahead`, upload_ahead.rs).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn products_with(
        &self,
        srs: &Srs,
        abc: Vec<Abc>,
        parts: &[ProvingAssignment],
        next: &dyn crate::prove::NextPart,
        t: &mut Timings,
        g1: &Decoded<G1Affine>,
        g2: &Decoded<G2Affine>,
    ) -> Result<Vec<Products>> {
        let w = self.msm;
        let g2_on_gpu = self.b_g2 == BG2::Gpu;
        let mut out: Vec<Products> = parts
            .iter()
            .map(|_| Products {
                h: G1Projective::identity(),
                l: G1Projective::identity(),
                a: G1Projective::identity(),
                b_g1: G1Projective::identity(),
                b_g2: G2Projective::identity(), // with --b-g2 cpu, filled in by the caller
            })
            .collect();
        let mut ph = Phases::default();
        // The NTT does not read the SRS: with `CUZK_EARLY_SRS`, each section is waited
        // for only before its first MSM.
        if let Some(mut secs) = self.sections(t)? {
            let h_msm = |h: &DevicePoints<G1Affine>, hd: DeviceScalars, ph: &mut Phases| {
                ph.time(Phase::HMsm, |k| {
                    Loaded::Resident(h).msm_dev(0, &hd, self.h_msm(), k)
                })
            };
            for (i, ((o, abc), p)) in out.iter_mut().zip(abc).zip(parts).enumerate() {
                let abc = match self.h_input(abc, p, t)? {
                    HInput::Host(abc) => abc,
                    HInput::Device(pce) => {
                        // The next partition's aux assignment moves while this one's MSMs
                        // run: beside all of them when that partition is complete now,
                        // else beside the witness MSMs if it is by then.
                        let aux = self.aux_on_device(p, &mut ph)?;
                        let hd = self.h_pce(&pce, p, &aux, &mut ph)?;
                        let h = secs.g1(self, G1Section::H, t)?;
                        let after = || parts.get(i + 1).or_else(|| next.peek());
                        // H is freed once its MSM is done (4.3 GB at 32GiB).
                        match after() {
                            Some(n) => self.beside_next_upload(Some(n), &mut ph, |ph| {
                                o.h = h_msm(&h, hd, ph)?;
                                self.witness(o, p, &aux, &mut secs, t, ph)
                            })?,
                            None => {
                                o.h = h_msm(&h, hd, &mut ph)?;
                                self.beside_next_upload(after(), &mut ph, |ph| {
                                    self.witness(o, p, &aux, &mut secs, t, ph)
                                })?;
                            }
                        }
                        continue;
                    }
                };
                let h = secs.g1(self, G1Section::H, t)?;
                let beside = self.overlap_aux.then_some(&p.aux_assignment[..]);
                let (hp, aux) = self.h_product(&Loaded::Resident(&*h), abc, beside, &mut ph)?;
                o.h = hp;
                let aux = match aux {
                    Some(aux) => aux,
                    None => ph.time(Phase::AuxUpload, |_| {
                        DeviceScalars::upload_aux(&p.aux_assignment, self.pack_aux, false)
                    })?,
                };
                self.witness(o, p, &aux, &mut secs, t, &mut ph)?;
            }
            secs.settle_if_done(self, t)?;
            ph.record(t, w.split, g2_on_gpu, true, self.overlap_aux);
            return Ok(out);
        }

        // H stays on the device from the NTT to its MSM; so one partition at a time (all
        // of a 32GiB proof's H at once would not fit beside the SRS).
        let pts = self.load(srs, &srs.h, g1, t)?;
        for ((o, abc), p) in out.iter_mut().zip(abc).zip(parts) {
            let abc = match self.h_input(abc, p, t)? {
                HInput::Host(abc) => abc,
                HInput::Device(pce) => {
                    let aux = self.aux_on_device(p, &mut ph)?;
                    let hd = self.h_pce(&pce, p, &aux, &mut ph)?;
                    o.h = ph.time(Phase::HMsm, |k| pts.msm_dev(0, &hd, self.h_msm(), k))?;
                    continue;
                }
            };
            o.h = self.h_product(&pts, abc, None, &mut ph)?.0;
        }
        drop(pts);
        let upload = |p: &ProvingAssignment| {
            DeviceScalars::upload_aux(&p.aux_assignment, self.pack_aux, false)
        };
        for (q, s, phase) in [
            (Query::L, &srs.l, Phase::L),
            (Query::A, &srs.a, Phase::A),
            (Query::B, &srs.b_g1, Phase::BG1),
        ] {
            let pts = self.load(srs, s, g1, t)?;
            for (o, p) in out.iter_mut().zip(parts) {
                let v = ph.time(phase, |k| query(q, &pts, p, &upload(p)?, w, k))?;
                match phase {
                    Phase::L => o.l = v,
                    Phase::A => o.a = v,
                    _ => o.b_g1 = v,
                }
            }
        }
        if g2_on_gpu {
            let pts = self.load(srs, &srs.b_g2, g2, t)?;
            for (o, p) in out.iter_mut().zip(parts) {
                o.b_g2 = ph.time(Phase::BG2, |k| query(Query::B, &pts, p, &upload(p)?, w, k))?;
            }
        }
        ph.record(t, w.split, g2_on_gpu, false, false);
        Ok(out)
    }
}
