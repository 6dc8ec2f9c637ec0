//! `gen-params`: TEST-ONLY Groth16 parameters of production shape, fast.
//!
//! The same parameters bellperson's generator defines (a trapdoor τ, α, β, γ, δ drawn and
//! then dropped), computed differently:
//! 1. one counting pass over the blank circuit fixes the domain size m;
//! 2. the Lagrange basis at τ is computed for all m points at once (batch inversion);
//! 3. one evaluating pass over the constraints accumulates each variable's QAP values
//!    u_j(τ), v_j(τ), w_j(τ) — no per-variable constraint lists are stored;
//! 4. every point is a fixed-base product of the standard generator, from window tables,
//!    normalised to affine in batches (blst), streamed to the file section by section.
//!
//! Sections and densities equal storage-proofs' output for the same circuit: `a`, `b_g1`,
//! `b_g2` keep only variables with a non-zero u_j(τ) or v_j(τ), as bellperson filters out
//! points at infinity.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{ensure, Context, Result};
use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use filecoin_proofs::constants::{
    DefaultPieceHasher, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB,
    SectorShape8MiB,
};
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;
use group::{Group, UncompressedEncoding};
use rand_chacha::ChaCha20Rng;
use rand_core::{OsRng, RngCore, SeedableRng};
use rayon::prelude::*;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use super::fixed_base::{AffinePoint, FixedBase};
use crate::input::srs::{cache_paths, CachePaths};

/// One pass over the blank circuit. Without a Lagrange basis it only counts variables and
/// constraints (the linear combinations are not even built); with one it accumulates
/// u_j(τ), v_j(τ), w_j(τ) per variable (inputs first, then aux). Input 0 is the ONE the
/// prover allocates before synthesis.
struct Qap<'a> {
    lagrange: Option<&'a [Fr]>,
    inputs: usize,
    next_input: usize,
    next_aux: usize,
    constraint: usize,
    u: Vec<Fr>,
    v: Vec<Fr>,
    w: Vec<Fr>,
}

impl<'a> Qap<'a> {
    /// A pass for a circuit of `inputs` (with ONE) and `aux` variables; `None` counts them.
    fn new(lagrange: Option<&'a [Fr]>, inputs: usize, aux: usize) -> Self {
        Self {
            lagrange,
            inputs,
            next_input: 1,
            next_aux: 0,
            constraint: 0,
            u: vec![Fr::ZERO; inputs + aux],
            v: vec![Fr::ZERO; inputs + aux],
            w: vec![Fr::ZERO; inputs + aux],
        }
    }
}

impl ConstraintSystem<Fr> for Qap<'_> {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.next_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.next_aux - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.next_input += 1;
        Ok(Variable::new_unchecked(Index::Input(self.next_input - 1)))
    }
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let Some(lagrange) = self.lagrange else {
            self.constraint += 1;
            return;
        };
        let l = lagrange[self.constraint];
        self.constraint += 1;
        let inputs = self.inputs;
        let slot = |v: Variable| match v.get_unchecked() {
            Index::Input(i) => i,
            Index::Aux(i) => inputs + i,
        };
        for (v, c) in a(LinearCombination::zero()).iter() {
            self.u[slot(v)] += *c * l;
        }
        for (v, c) in b(LinearCombination::zero()).iter() {
            self.v[slot(v)] += *c * l;
        }
        for (v, c) in c(LinearCombination::zero()).iter() {
            self.w[slot(v)] += *c * l;
        }
    }
    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}
    fn pop_namespace(&mut self) {}
    fn get_root(&mut self) -> &mut Self {
        self
    }
}

/// L_i(τ) = (τᵐ − 1)/m · ωⁱ / (τ − ωⁱ) for i < m.
fn lagrange_at(tau: Fr, m: usize) -> Vec<Fr> {
    let log_m = m.trailing_zeros();
    let mut omega = Fr::ROOT_OF_UNITY;
    for _ in log_m..Fr::S {
        omega = omega.square();
    }
    let z = (tau.pow_vartime([m as u64]) - Fr::ONE) * Fr::from(m as u64).invert().unwrap();
    let mut out = vec![Fr::ZERO; m];
    const CHUNK: usize = 1 << 14;
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut w = omega.pow_vartime([(c * CHUNK) as u64]);
            let mut powers = Vec::with_capacity(chunk.len());
            for x in chunk.iter_mut() {
                powers.push(w);
                *x = tau - w;
                w *= omega;
            }
            ff::BatchInvert::batch_invert(chunk.iter_mut());
            for (x, p) in chunk.iter_mut().zip(powers) {
                *x *= p * z;
            }
        });
    out
}

/// Writes `count` then the points `scalar(i)·G` for i < count, uncompressed.
fn write_section<A: AffinePoint + UncompressedEncoding>(
    table: &FixedBase<A>,
    out: &mut impl Write,
    count: usize,
    scalar: impl Fn(usize) -> Fr + Sync,
) -> Result<()> {
    out.write_all(&(count as u32).to_be_bytes())?;
    const CHUNK: usize = 1 << 16;
    for start in (0..count).step_by(CHUNK) {
        let end = (start + CHUNK).min(count);
        let ks: Vec<Fr> = (start..end).into_par_iter().map(&scalar).collect();
        let points = table.mul_many(&ks);
        ensure!(
            !points.par_iter().any(|p| bool::from(p.is_identity())),
            "a parameter point is the identity"
        );
        // Encoding (two conversions out of Montgomery form per coordinate) is a tenth of
        // the work: in parallel too, not on the writing thread.
        let size = A::Uncompressed::default().as_ref().len();
        let mut bytes = vec![0u8; points.len() * size];
        bytes
            .par_chunks_mut(size)
            .zip(points.par_iter())
            .for_each(|(b, p)| b.copy_from_slice(p.to_uncompressed().as_ref()));
        out.write_all(&bytes)?;
    }
    Ok(())
}

fn nonzero(rng: &mut dyn RngCore) -> Fr {
    loop {
        let x = Fr::random(&mut *rng);
        if !bool::from(x.is_zero()) {
            return x;
        }
    }
}

/// The toxic waste. Drawn in this order from the generator's RNG; dropped when the
/// parameters are written (tests re-derive it from a seed to check the points).
pub struct Trapdoor {
    pub tau: Fr,
    pub alpha: Fr,
    pub beta: Fr,
    pub gamma: Fr,
    pub delta: Fr,
}

impl Trapdoor {
    pub fn draw(rng: &mut dyn RngCore) -> Self {
        Self {
            tau: nonzero(rng),
            alpha: nonzero(rng),
            beta: nonzero(rng),
            gamma: nonzero(rng),
            delta: nonzero(rng),
        }
    }

    /// The trapdoor `generate` uses for `seed`.
    pub fn from_seed(seed: u64) -> Self {
        Self::draw(&mut ChaCha20Rng::seed_from_u64(seed))
    }
}

/// Shape of the generated parameters, for tests and logs.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Generated {
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
    pub domain: usize,
}

fn generate_shape<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    paths: &CachePaths,
    rng: &mut dyn RngCore,
) -> Result<Generated> {
    let config = proof.as_v1_config();
    let pp = filecoin_proofs::parameters::public_params::<Tree>(&config)?;
    let blank = || {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::blank_circuit(&pp)
    };
    let t0 = std::time::Instant::now();
    let lap = |what: &str| {
        log::info!(
            "gen-params: {what} done at {:.2} s",
            t0.elapsed().as_secs_f64()
        )
    };
    let qap = QapAtTau::evaluate(blank, rng, &lap)?;
    let keys = Keys::new(&qap);
    lap("tables");
    let vk = keys.verifying_key(&qap)?;
    // The verifying key and the metadata first: the parameters become visible last, so
    // a reader that finds them finds their key (each file written atomically).
    crate::output::write_file_atomic(&paths.vk, true, |f| Ok(f.write_all(&vk)?))?;
    let meta = serde_json::json!({
        "sector_size": u64::from(proof.sector_size()),
        "test_only": super::TEST_ONLY_NOTICE,
    });
    crate::output::write_file_atomic(&paths.meta, true, |f| {
        Ok(f.write_all(&serde_json::to_vec(&meta)?)?)
    })?;
    crate::output::write_file_atomic(&paths.params, true, |f| {
        let mut out = BufWriter::with_capacity(1 << 22, f.as_file_mut());
        out.write_all(&vk)?;
        keys.write_sections(&qap, &mut out, &lap)?;
        out.flush()?;
        Ok(())
    })?;
    Ok(Generated {
        constraints: qap.constraints,
        inputs: qap.inputs,
        aux: qap.aux,
        domain: qap.m,
    })
}

/// The circuit's QAP polynomials u, v, w per variable evaluated at the trapdoor's τ.
struct QapAtTau {
    trapdoor: Trapdoor,
    u: Vec<Fr>,
    v: Vec<Fr>,
    w: Vec<Fr>,
    inputs: usize,
    aux: usize,
    constraints: usize,
    /// The FFT domain size.
    m: usize,
}

impl QapAtTau {
    /// Two synthesis passes over the blank circuit: its sizes, then the evaluations.
    fn evaluate<C: Circuit<Fr>>(
        blank: impl Fn() -> C,
        rng: &mut dyn RngCore,
        lap: &dyn Fn(&str),
    ) -> Result<Self> {
        // Pass 1: sizes. The prover adds ONE as input 0 and one constraint per input.
        let mut count = Qap::new(None, 0, 0);
        blank().synthesize(&mut count)?;
        let (inputs, aux) = (count.next_input, count.next_aux);
        let constraints = count.constraint + inputs;
        lap("counting pass");
        let m = constraints.next_power_of_two();
        ensure!(
            m.trailing_zeros() <= Fr::S,
            "circuit too large for Fr's FFT domain"
        );
        let trapdoor = Trapdoor::draw(rng);
        let lagrange = lagrange_at(trapdoor.tau, m);
        lap("Lagrange basis");

        // Pass 2: QAP evaluations at τ.
        let mut qap = Qap::new(Some(&lagrange), inputs, aux);
        blank().synthesize(&mut qap)?;
        for j in 0..inputs {
            qap.u[j] += lagrange[qap.constraint + j];
        }
        let Qap { u, v, w, .. } = qap;
        lap("QAP pass");
        Ok(Self {
            trapdoor,
            u,
            v,
            w,
            inputs,
            aux,
            constraints,
            m,
        })
    }
}

/// What the sections are made with: fixed-base tables, the trapdoor's inverses, and
/// which variables A and B use.
struct Keys {
    g1: FixedBase<G1Affine>,
    g2: FixedBase<G2Affine>,
    gamma_inv: Fr,
    delta_inv: Fr,
    a_idx: Vec<usize>,
    b_idx: Vec<usize>,
}

impl Keys {
    fn new(q: &QapAtTau) -> Self {
        let used = |p: &[Fr]| -> Vec<usize> {
            (0..q.inputs + q.aux)
                .filter(|&j| !bool::from(p[j].is_zero()))
                .collect()
        };
        Self {
            g1: FixedBase::<G1Affine>::new(),
            g2: FixedBase::<G2Affine>::new(),
            gamma_inv: q.trapdoor.gamma.invert().unwrap(),
            delta_inv: q.trapdoor.delta.invert().unwrap(),
            a_idx: used(&q.u),
            b_idx: used(&q.v),
        }
    }

    /// α, β (G1, G2), γ, δ (G1, G2) and the inputs' IC points, uncompressed.
    fn verifying_key(&self, q: &QapAtTau) -> Result<Vec<u8>> {
        let Trapdoor {
            alpha,
            beta,
            gamma,
            delta,
            ..
        } = q.trapdoor;
        let g1p = |s: Fr| (G1Projective::generator() * s).to_affine_uncompressed();
        let g2p = |s: Fr| (G2Projective::generator() * s).to_affine_uncompressed();
        let mut vk = Vec::new();
        vk.extend_from_slice(&g1p(alpha));
        vk.extend_from_slice(&g1p(beta));
        vk.extend_from_slice(&g2p(beta));
        vk.extend_from_slice(&g2p(gamma));
        vk.extend_from_slice(&g1p(delta));
        vk.extend_from_slice(&g2p(delta));
        write_section(&self.g1, &mut vk, q.inputs, |j| {
            (beta * q.u[j] + alpha * q.v[j] + q.w[j]) * self.gamma_inv
        })?;
        Ok(vk)
    }

    /// The sections after the verifying key: h, l, a, b_g1, b_g2.
    fn write_sections(&self, q: &QapAtTau, out: &mut impl Write, lap: &dyn Fn(&str)) -> Result<()> {
        let Trapdoor {
            tau, alpha, beta, ..
        } = q.trapdoor;
        let (m, inputs) = (q.m, q.inputs);
        // h_i = τⁱ (τᵐ − 1) / δ for i < m − 1.
        let zd = (tau.pow_vartime([m as u64]) - Fr::ONE) * self.delta_inv;
        let mut h = vec![Fr::ZERO; m - 1];
        h.par_chunks_mut(1 << 14)
            .enumerate()
            .for_each(|(c, chunk)| {
                let mut x = tau.pow_vartime([(c << 14) as u64]) * zd;
                for e in chunk {
                    *e = x;
                    x *= tau;
                }
            });
        write_section(&self.g1, out, m - 1, |i| h[i])?;
        drop(h);
        lap("h");
        write_section(&self.g1, out, q.aux, |j| {
            let j = inputs + j;
            (beta * q.u[j] + alpha * q.v[j] + q.w[j]) * self.delta_inv
        })?;
        lap("l");
        let (a, b) = (&self.a_idx, &self.b_idx);
        write_section(&self.g1, out, a.len(), |k| q.u[a[k]])?;
        lap("a");
        write_section(&self.g1, out, b.len(), |k| q.v[b[k]])?;
        lap("b_g1");
        write_section(&self.g2, out, b.len(), |k| q.v[b[k]])?;
        lap("b_g2");
        Ok(())
    }
}

trait Uncompressed {
    fn to_affine_uncompressed(&self) -> Vec<u8>;
}
impl Uncompressed for G1Projective {
    fn to_affine_uncompressed(&self) -> Vec<u8> {
        group::Curve::to_affine(self)
            .to_uncompressed()
            .as_ref()
            .to_vec()
    }
}
impl Uncompressed for G2Projective {
    fn to_affine_uncompressed(&self) -> Vec<u8> {
        group::Curve::to_affine(self)
            .to_uncompressed()
            .as_ref()
            .to_vec()
    }
}

/// Generates TEST-ONLY parameters for `proof` into `dir` under the standard names. With a
/// seed the trapdoor is reproducible; without one it comes from the OS and is forgotten.
pub fn generate(
    proof: RegisteredSealProof,
    dir: &Path,
    seed: Option<u64>,
) -> Result<(CachePaths, Generated)> {
    fs::create_dir_all(dir)
        .with_context(|| format!("cannot create parameter directory {}", dir.display()))?;
    let paths = cache_paths(proof, dir)?;
    let mut rng: Box<dyn RngCore> = match seed {
        Some(s) => Box::new(ChaCha20Rng::seed_from_u64(s)),
        None => Box::new(OsRng),
    };
    let g = match u64::from(proof.sector_size()) {
        2048 => generate_shape::<SectorShape2KiB>(proof, &paths, &mut rng),
        8388608 => generate_shape::<SectorShape8MiB>(proof, &paths, &mut rng),
        536870912 => generate_shape::<SectorShape512MiB>(proof, &paths, &mut rng),
        34359738368 => generate_shape::<SectorShape32GiB>(proof, &paths, &mut rng),
        _ => generate_shape::<SectorShape64GiB>(proof, &paths, &mut rng),
    }?;
    Ok((paths, g))
}
