//! The exact PoRep circuit: storage-proofs' `StackedCircuit` for each partition of a C1.
//!
//! Everything generic over the Merkle tree shape stays in this module; the rest of the
//! pipeline sees only [`PartitionCircuits`] and concrete assignment types.

use anyhow::{anyhow, bail, ensure, Context, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::Hasher;
use filecoin_proofs::constants::{
    DefaultPieceDomain, DefaultPieceHasher, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB,
    SectorShape64GiB, SectorShape8MiB,
};
use filecoin_proofs::types::{MerkleTreeTrait, PoRepConfig};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

use crate::synth::{self, ProvingAssignment, SizeHint};

mod check;
mod native_label;

/// The partition circuits of one C1, ready to synthesize.
pub trait PartitionCircuits: Send + Sync {
    fn partitions(&self) -> usize;
    /// Public inputs of partition `k` (without the leading ONE).
    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>>;
    /// Checks partition `k`'s vanilla proofs against the registered proof's shape and
    /// content (`check.rs`) before it is proved: one line naming what is wrong.
    fn check(&self, k: usize) -> Result<()>;
    /// The shape half of [`Self::check`] (counts and forms: what the gadgets and the
    /// witness's size rely on), which every partition passes before any synthesis; the
    /// whole check where there is no cheaper half.
    fn check_shape(&self, k: usize) -> Result<()> {
        self.check(k)
    }
    /// Builds and synthesizes partition `k`.
    fn synthesize(&self, k: usize, hint: Option<SizeHint>) -> Result<ProvingAssignment>;
    /// Builds partition `k` and computes its variable values only (witness generation),
    /// its tasks in parallel on the current rayon pool.
    fn witness(&self, k: usize) -> Result<synth::witness::Witness>;
    /// Partition `k`'s witness generation in independent tasks (its challenges), so that
    /// a scheduler can interleave partitions ([`crate::pipeline::overlap_synth`]): how many,
    fn witness_tasks(&self, k: usize) -> usize;
    /// task `j`'s part,
    fn witness_task(&self, k: usize, j: usize) -> Result<synth::witness::Witness>;
    /// and the witness from all the parts in task order.
    fn witness_join(
        &self,
        k: usize,
        parts: Vec<synth::witness::Witness>,
    ) -> Result<synth::witness::Witness>;
    /// Partition `k`'s constraint system (`--pce`) in independent blocks, the same tasks
    /// as its witness's: block `j`'s recording, joined by [`synth::pce::join_blocks`].
    fn record_task(&self, k: usize, j: usize) -> Result<synth::pce::Block>;
    /// Partition `k`'s constraint system, its blocks recorded in parallel on the current
    /// rayon pool: the serial recording's bytes (tests/pce.rs), in a fraction of its time.
    fn record(&self, k: usize) -> Result<synth::pce::Pce> {
        use rayon::prelude::*;
        let blocks = (0..self.witness_tasks(k))
            .into_par_iter()
            .map(|j| self.record_task(k, j))
            .collect::<Result<Vec<_>>>()?;
        synth::pce::join_blocks(blocks)
    }
    /// `--native-label`: whether witness generation computes the labels' SHA-256 natively
    /// (default) or through bellperson's gadget. Full syntheses always use the gadget.
    fn set_native_label(&mut self, on: bool);
}

/// Witness part buffers kept for reuse (a 32GiB part's is ~230 MB).
const SPARE_BUFFERS: usize = 64;

/// Tasks of a partition's witness with `challenges` challenges: the first two together,
/// then one per challenge (a single one below three).
fn witness_tasks(challenges: usize) -> usize {
    if challenges < 3 {
        1
    } else {
        challenges - 1
    }
}

/// The challenges of task `j` of a circuit for `proofs`: the first two for `j = 0`, else
/// challenge `j + 1` alone (all of them when there are fewer than 3).
fn task_proofs<T>(proofs: &[T], j: usize) -> &[T] {
    match (proofs.len(), j) {
        (n, _) if n < 3 => proofs,
        (_, 0) => &proofs[..2],
        (_, j) => &proofs[j + 1..j + 2],
    }
}

type VanillaProofs<Tree> = Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>;

/// The circuits of one C1 for the tree shape `Tree`.
pub struct Porep<Tree: 'static + MerkleTreeTrait> {
    public_inputs: stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, DefaultPieceDomain>,
    public_params: stacked::PublicParams<Tree>,
    vanilla: VanillaProofs<Tree>,
    /// `--native-label`: witness-only synthesis computes the labels' SHA-256 natively.
    native_label: bool,
    /// Aux buffers of joined witness parts, kept for later parts: a 32GiB partition's
    /// parts are ~4 GB, and fresh memory costs a page fault and a zeroed page for every
    /// 4 KiB, plus the copies of a growing vector (half the native witness's time on 2
    /// cores before, docs/PERF.md session 20).
    spare: std::sync::Mutex<Vec<Vec<Fr>>>,
}

impl<Tree: 'static + MerkleTreeTrait> PartitionCircuits for Porep<Tree> {
    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>> {
        StackedCompound::<Tree, DefaultPieceHasher>::generate_public_inputs(
            &self.public_inputs,
            &self.public_params,
            Some(k),
        )
    }

    fn check(&self, k: usize) -> Result<()> {
        self.check_partition(k)
    }

    fn check_shape(&self, k: usize) -> Result<()> {
        self.check_partition_shape(k)
    }

    fn synthesize(&self, k: usize, hint: Option<SizeHint>) -> Result<ProvingAssignment> {
        synth::synthesize(self.circuit(k)?, hint)
    }

    fn witness(&self, k: usize) -> Result<synth::witness::Witness> {
        self.witness_parallel(&self.vanilla[k])
    }

    fn witness_tasks(&self, k: usize) -> usize {
        witness_tasks(self.vanilla[k].len())
    }

    fn witness_task(&self, k: usize, j: usize) -> Result<synth::witness::Witness> {
        self.witness_part(&self.vanilla[k], j)
    }

    fn witness_join(
        &self,
        k: usize,
        parts: Vec<synth::witness::Witness>,
    ) -> Result<synth::witness::Witness> {
        self.join_parts(&self.vanilla[k], parts)
    }

    fn record_task(&self, k: usize, j: usize) -> Result<synth::pce::Block> {
        self.record_part(&self.vanilla[k], j)
    }

    fn set_native_label(&mut self, on: bool) {
        self.native_label = on;
    }
}

impl<Tree: 'static + MerkleTreeTrait> Porep<Tree> {
    /// storage-proofs' circuit for partition `k`.
    pub fn circuit(&self, k: usize) -> Result<StackedCircuit<Tree, DefaultPieceHasher>> {
        self.circuit_of(&self.vanilla[k])
    }

    /// The vanilla proofs (one per challenge) of partition `k`.
    pub fn vanilla(&self, k: usize) -> &[stacked::Proof<Tree, DefaultPieceHasher>] {
        &self.vanilla[k]
    }

    /// The circuit proving the challenges `proofs` (a partition's, or any subset).
    pub fn circuit_of(
        &self,
        proofs: &[stacked::Proof<Tree, DefaultPieceHasher>],
    ) -> Result<StackedCircuit<Tree, DefaultPieceHasher>> {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::circuit(
            &self.public_inputs,
            (),
            &proofs.to_vec(),
            &self.public_params,
            None,
        )
    }

    /// The witness of the circuit for `proofs`, its challenges generated in parallel.
    ///
    /// The circuit allocates a header (replica_id and its bits, the commitments, the
    /// comm_r check) and then one part per challenge that reads only header values, all
    /// parts the same length; in a witness-only synthesis variable indices are never used.
    /// So the witness is the header followed by each challenge's part as a circuit of that
    /// challenge alone would allocate it. One circuit of the first two challenges gives
    /// header + 2 parts; circuits of one challenge each give header + 1 part; their
    /// difference is the part length, and every header is checked against the first.
    pub fn witness_parallel(
        &self,
        proofs: &[stacked::Proof<Tree, DefaultPieceHasher>],
    ) -> Result<synth::witness::Witness> {
        use rayon::prelude::*;
        let parts = (0..witness_tasks(proofs.len()))
            .into_par_iter()
            .map(|j| self.witness_part(proofs, j))
            .collect::<Result<Vec<_>>>()?;
        self.join_parts(proofs, parts)
    }

    /// Task `j` of [`Self::witness_parallel`]: the first two challenges' circuit for
    /// `j = 0`, else challenge `j + 1`'s alone (all of them when there are fewer than 3).
    pub fn witness_part(
        &self,
        proofs: &[stacked::Proof<Tree, DefaultPieceHasher>],
        j: usize,
    ) -> Result<synth::witness::Witness> {
        self.witness_of(task_proofs(proofs, j))
    }

    /// The constraint system of the circuit for `proofs`, recorded in the blocks of
    /// [`Self::witness_parallel`]'s tasks, in parallel, and joined.
    pub fn record_parallel(
        &self,
        proofs: &[stacked::Proof<Tree, DefaultPieceHasher>],
    ) -> Result<synth::pce::Pce> {
        use rayon::prelude::*;
        let blocks = (0..witness_tasks(proofs.len()))
            .into_par_iter()
            .map(|j| self.record_part(proofs, j))
            .collect::<Result<Vec<_>>>()?;
        synth::pce::join_blocks(blocks)
    }

    /// Block `j` of [`Self::record_parallel`]: the recording of task `j`'s circuit.
    pub fn record_part(
        &self,
        proofs: &[stacked::Proof<Tree, DefaultPieceHasher>],
        j: usize,
    ) -> Result<synth::pce::Block> {
        synth::pce::record_block(self.circuit_of(task_proofs(proofs, j))?)
    }

    /// The witness of [`Self::circuit_of`]`(proofs)`: through the gadgets, or with
    /// `--native-label` the same values from [`native_label::witness`].
    pub fn witness_of(
        &self,
        proofs: &[stacked::Proof<Tree, DefaultPieceHasher>],
    ) -> Result<synth::witness::Witness> {
        let buffer = self.spare.lock().ok().and_then(|mut s| s.pop());
        let buffer = buffer.unwrap_or_default();
        if self.native_label {
            native_label::witness(
                &self.public_inputs,
                self.public_params.num_layers,
                proofs,
                buffer,
            )
            .context("witness generation failed")
        } else {
            synth::witness::witness_in(self.circuit_of(proofs)?, buffer)
        }
    }

    /// The witness from [`Self::witness_part`]'s parts, in task order.
    pub fn join_parts(
        &self,
        proofs: &[stacked::Proof<Tree, DefaultPieceHasher>],
        mut parts: Vec<synth::witness::Witness>,
    ) -> Result<synth::witness::Witness> {
        use synth::witness::Witness;
        ensure!(
            parts.len() == witness_tasks(proofs.len()),
            "{} witness parts for {} challenges",
            parts.len(),
            proofs.len()
        );
        if parts.len() == 1 {
            return Ok(parts.pop().expect("one part"));
        }
        let rest = parts.split_off(1);
        let mut w = parts.pop().expect("the first two challenges");
        let one = &rest[0];
        let (part_in, part_aux) = (
            w.inputs.len().saturating_sub(one.inputs.len()),
            w.aux.len().saturating_sub(one.aux.len()),
        );
        let (head_in, head_aux) = (
            one.inputs.len().saturating_sub(part_in),
            one.aux.len().saturating_sub(part_aux),
        );
        let fits = |r: &Witness| {
            r.inputs.len() == head_in + part_in
                && r.aux.len() == head_aux + part_aux
                && r.inputs[..head_in] == w.inputs[..head_in]
                && r.aux[..head_aux] == w.aux[..head_aux]
        };
        if !rest.iter().all(fits) {
            // Not the layout assumed above (another circuit version?): one at a time.
            log::warn!("challenge circuits differ in their header; witness generated serially");
            return self.witness_of(proofs);
        }
        // Exact: a 32GiB partition's aux is 4.2 GB, doubling growth would hold up to twice.
        w.aux.reserve_exact(rest.len() * part_aux);
        w.inputs.reserve_exact(rest.len() * part_in);
        for r in &rest {
            w.inputs.extend_from_slice(&r.inputs[head_in..]);
        }
        // The parts' copies in parallel: the destination is fresh memory, whose page faults
        // would otherwise all land on one thread.
        {
            use rayon::prelude::*;
            let start = w.aux.len();
            let mut dst = &mut w.aux.spare_capacity_mut()[..rest.len() * part_aux];
            let mut jobs = Vec::with_capacity(rest.len());
            for r in &rest {
                let (d, tail) = dst.split_at_mut(part_aux);
                jobs.push((d, &r.aux[head_aux..]));
                dst = tail;
            }
            jobs.into_par_iter().for_each(|(d, s)| {
                for (d, s) in d.iter_mut().zip(s) {
                    d.write(*s);
                }
            });
            // SAFETY: every element of the reserved range was written just above.
            unsafe { w.aux.set_len(start + rest.len() * part_aux) };
        }
        // Kept for the next parts (the witness paths clear them); at most a few
        // partitions' worth.
        if let Ok(mut spare) = self.spare.lock() {
            let room = SPARE_BUFFERS.saturating_sub(spare.len());
            spare.extend(rest.into_iter().map(|r| r.aux).take(room));
        }
        Ok(w)
    }

    pub fn new(config: &PoRepConfig, c1: SealCommitPhase1Output) -> Result<Self> {
        build::<Tree>(config, c1)
    }
}

fn build<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    c1: SealCommitPhase1Output,
) -> Result<Porep<Tree>> {
    let SealCommitPhase1Output {
        vanilla_proofs,
        comm_r,
        comm_d,
        replica_id,
        seed,
        ..
    } = c1;
    ensure!(comm_d != [0; 32], "the C1 has an all-zero comm_d");
    ensure!(comm_r != [0; 32], "the C1 has an all-zero comm_r");
    ensure!(seed != [0; 32], "the C1 has an all-zero seed");
    let vanilla: VanillaProofs<Tree> = vanilla_proofs
        .try_into()
        .map_err(|e| anyhow!("vanilla proofs do not match the registered proof: {e}"))?;
    let partitions = usize::from(config.partitions);
    ensure!(
        vanilla.len() == partitions,
        "the C1 holds vanilla proofs for {} partitions, {:?} has {}",
        vanilla.len(),
        config.sector_size,
        partitions
    );
    ensure!(
        vanilla.iter().all(|p| !p.is_empty()),
        "the C1 has a partition without vanilla proofs"
    );
    let comm_r = filecoin_proofs::as_safe_commitment(&comm_r, "comm_r")
        .map_err(|e| anyhow!("the C1's comm_r is not a field element: {e}"))?;
    let comm_d = filecoin_proofs::as_safe_commitment(&comm_d, "comm_d")
        .map_err(|e| anyhow!("the C1's comm_d is not a field element: {e}"))?;
    let public_params = filecoin_proofs::parameters::public_params::<Tree>(config)?;
    let replica_bytes: [u8; 32] = AsRef::<[u8]>::as_ref(&replica_id).try_into()?;
    let fr: Option<Fr> = ff::PrimeField::from_repr(replica_bytes).into();
    let fr = fr.context("the C1's replica_id is not a field element")?;
    let public_inputs = stacked::PublicInputs {
        replica_id: fr.into(),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
        seed: Some(seed),
    };
    Ok(Porep {
        public_inputs,
        public_params,
        vanilla,
        native_label: true,
        spare: Default::default(),
    })
}

/// Builds the partition circuits of `c1` for its registered proof's sector shape.
pub fn porep_circuits(
    config: &PoRepConfig,
    c1: SealCommitPhase1Output,
) -> Result<Box<dyn PartitionCircuits>> {
    Ok(match u64::from(config.sector_size) {
        2048 => Box::new(build::<SectorShape2KiB>(config, c1)?),
        8388608 => Box::new(build::<SectorShape8MiB>(config, c1)?),
        536870912 => Box::new(build::<SectorShape512MiB>(config, c1)?),
        34359738368 => Box::new(build::<SectorShape32GiB>(config, c1)?),
        68719476736 => Box::new(build::<SectorShape64GiB>(config, c1)?),
        other => bail!("unsupported sector size {other}"),
    })
}
