//! The CUDA backend's timing rows: wall time and device work per product phase, summed
//! over a batch's partitions, for the timing table and the JSON report.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::prove::cuda::MsmReport;
use crate::report::Timings;

/// The device work of one product's MSMs, for the timing table and the JSON report.
#[derive(Default)]
pub(super) struct DeviceWork {
    split_ms: f64,
    buckets_ms: f64,
    scalars: u64,
    ones: u64,
    bucketed: u64,
}

impl DeviceWork {
    pub(super) fn add(&mut self, r: &MsmReport, n: usize) {
        self.split_ms += r.split_ms as f64;
        self.buckets_ms += r.buckets_ms as f64;
        self.scalars += n as u64;
        self.ones += r.ones;
        self.bucketed += r.bucketed;
    }

    /// Sub-rows under the product's row: kernel times, and what the split did.
    fn record(&self, t: &mut Timings, split: bool) {
        let ms = |x: f64| Duration::from_secs_f64(x / 1e3);
        if split {
            t.add(
                "  of which split + batch add (GPU events)",
                ms(self.split_ms),
            );
            t.add("  of which bucket MSM (GPU events)", ms(self.buckets_ms));
            log::info!(
                "{} scalars: {} ones batch-added, {} bucketed, {} zeros dropped",
                self.scalars,
                self.ones,
                self.bucketed,
                self.scalars - self.ones - self.bucketed
            );
        } else {
            t.add("  of which MSM kernels (GPU events)", ms(self.buckets_ms));
        }
    }
}

/// The product phases, in the order of the timing table.
#[derive(Clone, Copy)]
pub(super) enum Phase {
    Ntt,
    HMsm,
    AuxUpload,
    /// The next partition's aux upload beyond this one's MSMs (`--upload-ahead`).
    AuxAhead,
    L,
    A,
    BG1,
    BG2,
}

const PHASES: usize = 8;

/// Wall time and device work per phase, summed over the partitions of a batch.
#[derive(Default)]
pub(super) struct Phases {
    pub(super) wall: [Duration; PHASES],
    pub(super) work: [DeviceWork; PHASES],
    pub(super) ntt_ms: f64,
    /// A·w, B·w, C·w on the device (`--pce-eval gpu`), and for how many partitions.
    pub(super) eval_ms: f64,
    pub(super) evaluated: usize,
    /// Aux assignments uploaded ahead, beside the previous partition's MSMs.
    pub(super) staged: usize,
}

impl Phases {
    pub(super) fn time<T>(
        &mut self,
        p: Phase,
        f: impl FnOnce(&mut DeviceWork) -> Result<T>,
    ) -> Result<T> {
        let t0 = Instant::now();
        let r = f(&mut self.work[p as usize]);
        self.wall[p as usize] += t0.elapsed();
        r
    }

    pub(super) fn record(
        &self,
        t: &mut Timings,
        split: bool,
        g2: bool,
        aux_once: bool,
        overlap_aux: bool,
    ) {
        let row = |t: &mut Timings, p: Phase, name: &str| t.add(name, self.wall[p as usize]);
        if self.evaluated > 0 {
            row(
                t,
                Phase::Ntt,
                "H: PCE evaluation + NTT on the GPU (with transfers)",
            );
            t.add(
                "  of which A·w, B·w, C·w kernels (PCE, GPU events)",
                Duration::from_secs_f64(self.eval_ms / 1e3),
            );
        } else {
            row(t, Phase::Ntt, "H: NTT on the GPU (with transfers)");
        }
        t.add(
            "  of which NTT kernels (GPU events)",
            Duration::from_secs_f64(self.ntt_ms / 1e3),
        );
        row(t, Phase::HMsm, "MSM h (GPU, H from the NTT on the device)");
        self.work[Phase::HMsm as usize].record(t, false);
        if aux_once || self.evaluated > 0 {
            row(
                t,
                Phase::AuxUpload,
                if self.evaluated > 0 {
                    "upload aux assignment (once per partition, before H: PCE on the GPU)"
                } else if overlap_aux {
                    "upload aux assignment (once per partition, beyond MSM h)"
                } else {
                    "upload aux assignment (once per partition)"
                },
            );
        }
        if self.staged > 0 {
            row(
                t,
                Phase::AuxAhead,
                "upload next aux assignment (beside the MSMs; wait beyond them)",
            );
        }
        let products = [
            (Phase::L, "MSM l (GPU)"),
            (Phase::A, "MSM a (GPU)"),
            (Phase::BG1, "MSM b_g1 (GPU)"),
            (Phase::BG2, "MSM b_g2 (GPU)"),
        ];
        for (p, name) in products {
            if matches!(p, Phase::BG2) && !g2 {
                continue;
            }
            row(t, p, name);
            self.work[p as usize].record(t, split);
        }
    }
}
