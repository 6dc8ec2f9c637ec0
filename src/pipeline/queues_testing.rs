//! For the tests of `--gpus` (tests/gpus.rs): the synthesis ∥ proving stage run on device
//! queues a test chooses — several queues, one GPU twice, a queue that fails — over
//! partition circuits of its own. The bundled C1s have one partition, and the sizes with
//! ten need 47 GB of parameters; a test's circuits (the 2KiB fixture's challenges in other
//! orders) give several partitions of the 2KiB shape instead. A CPU proof of that shape
//! takes ~30 s on CI's two cores, so the scheduler's own tests use a stand-in backend whose
//! products are cheap functions of the whole assignment (which queue proved a partition
//! must not change its proof; a mix-up of assignments or randomness would). Not part of
//! the prover's interface.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{bail, Result};

use super::schedule::{synthesize_and_prove, Run};
use crate::circuit::PartitionCircuits;
use crate::cli::{Config, Gpus};
use crate::input::srs::Srs;
use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use ff::Field;
use group::Group;

use crate::prove::cpu::Cpu;
use crate::prove::cuda::backend::Cuda;
use crate::prove::{Backend, Products};
use crate::report::{QueueInfo, Timings};
use crate::synth::ProvingAssignment;

/// A test's device queue.
#[derive(Clone, Copy, Debug)]
pub enum TestQueue {
    /// The stand-in backend (see the module's comment).
    Cheap,
    /// The stand-in, whose `n`-th products call (from 0) fails, leaving its partition
    /// whole.
    Failing(usize),
    Cpu,
    /// The CUDA backend on this GPU (its default settings).
    Gpu(usize),
}

/// What the stage gave: each partition's proof (192 bytes, in partition order) and what
/// each queue did.
#[derive(Debug)]
pub struct TestProved {
    pub proofs: Vec<Vec<u8>>,
    pub queues: Vec<QueueInfo>,
}

/// Proves `circuits`' partitions with the parameters at `params` on `queues`, the
/// randomness drawn from `seed`, synthesis overlapped (`--overlap-synth`) or batched; the
/// witnesses through a recording made in the run, their A·w, B·w, C·w left to the
/// backends (as the GPU pipeline does by default).
pub fn prove_partitions(
    circuits: &dyn PartitionCircuits,
    params: &Path,
    queues: &[TestQueue],
    overlap: bool,
    seed: u64,
) -> Result<TestProved> {
    let srs = Arc::new(Srs::open(params)?);
    let backends: Vec<Arc<dyn Backend>> = queues
        .iter()
        .map(|q| -> Arc<dyn Backend> {
            match *q {
                TestQueue::Cpu => Arc::new(Cpu),
                TestQueue::Gpu(i) => {
                    let msm = crate::prove::cuda::Msm {
                        window: 0,
                        split: true,
                        windows_per_pass: 0,
                    };
                    let c = Cuda::new(
                        msm,
                        Default::default(),
                        Default::default(),
                        i,
                        false,
                        false,
                        false,
                        true,
                    );
                    Arc::new(c)
                }
                TestQueue::Cheap => Arc::new(Cheap { fail_at: None }),
                TestQueue::Failing(n) => Arc::new(Cheap {
                    fail_at: Some((n, AtomicUsize::new(0))),
                }),
            }
        })
        .collect();
    for b in &backends {
        b.prefetch(&srs)?;
    }
    let mut cfg = Config::new("c1.json".into(), None);
    cfg.rng_seed = Some(seed);
    cfg.overlap_synth = overlap;
    cfg.gpus = Gpus::List((0..queues.len()).collect());
    cfg.quiet = true;
    let todo: Vec<usize> = (0..circuits.partitions()).collect();
    let run = Run {
        cfg: &cfg,
        circuits,
        todo: &todo,
        srs: &srs,
        queues: &backends,
        window: queues.len() + 1,
        found: None,
        defer: true,
        keep: &|_| (),
    };
    let proved = synthesize_and_prove(&run, &mut Timings::new(false))?;
    let proofs = proved
        .proofs
        .iter()
        .map(|(_, p)| crate::output::encode(std::slice::from_ref(p)))
        .collect::<Result<_>>()?;
    Ok(TestProved {
        proofs,
        queues: proved.queues,
    })
}

/// The stand-in backend: products that are cheap functions of the whole assignment, each
/// a generator times a sum of its values (a, b, c evaluated on the host); a planted
/// failure at its `n`-th call.
struct Cheap {
    fail_at: Option<(usize, AtomicUsize)>,
}

impl Backend for Cheap {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn queue_name(&self) -> String {
        match self.fail_at {
            Some(_) => "failing stand-in".into(),
            None => "stand-in".into(),
        }
    }

    fn products(
        &self,
        _: &Srs,
        parts: &mut [ProvingAssignment],
        _: &dyn crate::prove::NextPart,
        _: &mut Timings,
    ) -> Result<Vec<Products>> {
        if let Some((n, calls)) = &self.fail_at {
            if calls.fetch_add(1, Ordering::SeqCst) == *n {
                bail!("planted device failure");
            }
        }
        let sum = |v: &[Fr]| v.iter().fold(Fr::ZERO, |s, x| s + x);
        parts
            .iter_mut()
            .map(|p| {
                p.evaluate_on_host()?;
                let [a, b, c] = p.take_evaluations()?;
                let (aux, input) = (sum(&p.aux_assignment), sum(&p.input_assignment));
                let g1 = G1Projective::generator();
                Ok(Products {
                    h: g1 * (sum(&a) + sum(&b).double() + sum(&c) * Fr::from(3)),
                    l: g1 * aux,
                    a: g1 * input,
                    b_g1: g1 * (aux + input),
                    b_g2: G2Projective::generator() * aux,
                })
            })
            .collect()
    }
}
