//! `--native-label`: a partition circuit's witness with each label's SHA-256 generated
//! natively ([`crate::synth::sha256`]).
//!
//! storage-proofs' `StackedCircuit` and its per-challenge `Proof::synthesize` are followed
//! step by step, calling the same public gadgets for everything but the labels (the
//! header, the Merkle inclusion proofs, the columns' Poseidon hashes, the parents' bit
//! decompositions, the encoding), so the witness has the same values in the same order as
//! `synth::witness::witness(circuit)`. The labels and tree D's path are nearly all of a
//! PoRep circuit's SHA-256, and SHA-256 most of its witness-generation time (docs/PERF.md,
//! session 20).
//! Full syntheses (recording the PCE, or without `--pce`) still run the gadgets: they need
//! the constraints.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, num::AllocatedNum};
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use filecoin_hashers::{
    HashFunction, Hasher, PoseidonArity, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2,
};
use filecoin_proofs::constants::{DefaultPieceDomain, DefaultPieceHasher};
use filecoin_proofs::types::MerkleTreeTrait;
use storage_proofs_core::gadgets::insertion::insert;
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::{constraint, encode::encode, uint64::UInt64, variables::Root};
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::merkle::{DiskStore, MerkleTreeWrapper};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{self, StackedCircuit};
use typenum::{U11, U2};

use crate::synth::sha256::{self, Bit};
use crate::synth::witness::Witness;

type PublicInputs<Tree> = stacked::PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain,
    DefaultPieceDomain,
>;

/// The witness of the circuit of `proofs` (as `StackedCompound::circuit` builds it), with
/// the ONE input first; its aux values go to `buffer`'s memory.
pub fn witness<Tree: 'static + MerkleTreeTrait>(
    public_inputs: &PublicInputs<Tree>,
    layers: usize,
    proofs: &[stacked::Proof<Tree, DefaultPieceHasher>],
    buffer: Vec<Fr>,
) -> Result<Witness, SynthesisError> {
    let missing = || SynthesisError::AssignmentMissing;
    let first = proofs.first().ok_or(missing())?;
    let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
    if proofs
        .iter()
        .any(|p| p.comm_r_last() != comm_r_last || p.comm_c() != comm_c)
    {
        return Err(SynthesisError::Unsatisfiable);
    }
    let tau = public_inputs.tau.as_ref().ok_or(missing())?;

    let mut cs = Witness::starting_in(buffer);

    // The header, as StackedCircuit::synthesize allocates it.
    let num = |cs: &mut Witness, v: Fr| AllocatedNum::alloc(cs, || Ok(v));
    let replica_id = num(&mut cs, public_inputs.replica_id.into())?;
    replica_id.inputize(&mut cs)?;
    let replica_id_bits = bits(&reverse_bit_numbering(replica_id.to_bits_le(&mut cs)?))?;
    let comm_d = num(&mut cs, tau.comm_d.into())?;
    comm_d.inputize(&mut cs)?;
    let comm_r = num(&mut cs, tau.comm_r.into())?;
    comm_r.inputize(&mut cs)?;
    let comm_r_last = num(&mut cs, comm_r_last.into())?;
    let comm_c = num(&mut cs, comm_c.into())?;
    let hash = <Tree::Hasher as Hasher>::Function::hash2_circuit(&mut cs, &comm_c, &comm_r_last)?;
    constraint::equal(&mut cs, || "comm_r", &comm_r, &hash);

    // storage-proofs' circuit form of a challenge's proof lives in a private module: its
    // type is taken from StackedCircuit::synthesize's signature, its fields are public.
    let circuit_proofs: Vec<_> = proofs.iter().cloned().map(Into::into).collect();
    same_element_type(
        &circuit_proofs,
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize::<Witness>,
    );

    for (p, vanilla) in circuit_proofs.into_iter().zip(proofs) {
        // Proof::synthesize, step by step.
        let data_leaf = AllocatedNum::alloc(&mut cs, || p.data_leaf.ok_or(missing()))?;
        // Tree D is a binary SHA-256 tree: its hashes natively too (the circuit form of
        // the path hides its elements; the vanilla proof's are the same).
        sha256_inclusion(&mut cs, vanilla.comm_d_proofs.as_options(), &data_leaf)?;
        // The DRG parents' columns, then the expander parents': each allocated, hashed and
        // opened in tree C.
        let [mut drg, mut exp] = [Vec::new(), Vec::new()];
        for (parents, columns) in [
            (p.drg_parents_proofs, &mut drg),
            (p.exp_parents_proofs, &mut exp),
        ] {
            for parent in parents {
                let (column, path) = parent.alloc(&mut cs)?;
                let hash = column.hash(&mut cs)?;
                inclusion(&mut cs, path, &comm_c, &hash)?;
                columns.push(column);
            }
        }
        if drg.is_empty() || exp.is_empty() {
            return Err(SynthesisError::Unsatisfiable);
        }

        let challenge = UInt64::alloc(&mut cs, p.challenge)?;
        challenge.pack_into_input(&mut cs)?;
        let node = bits(&challenge.to_bits_be())?;

        let mut labels = Vec::with_capacity(layers);
        for layer in 1..=layers {
            let mut parents = Vec::with_capacity(drg.len() + exp.len());
            for column in &drg {
                let value = column.get_value(layer);
                parents.push(bits(&reverse_bit_numbering(value.to_bits_le(&mut cs)?))?);
            }
            if layer > 1 {
                for column in &exp {
                    let value = column.get_value(layer - 1);
                    parents.push(bits(&reverse_bit_numbering(value.to_bits_le(&mut cs)?))?);
                }
            }
            let label = label(&mut cs, &replica_id_bits, layer, &node, &parents)?;
            labels.push(num(&mut cs, label)?);
        }

        let key = labels.last().ok_or(missing())?;
        let encoded = encode(&mut cs, key, &data_leaf)?;
        inclusion(&mut cs, p.comm_r_last_path, &comm_r_last, &encoded)?;
        let column_hash = match labels.len() {
            2 => neptune::circuit::poseidon_hash::<_, Fr, U2>(
                &mut cs,
                labels,
                &POSEIDON_CONSTANTS_2,
            )?,
            11 => neptune::circuit::poseidon_hash::<_, Fr, U11>(
                &mut cs,
                labels,
                &POSEIDON_CONSTANTS_11,
            )?,
            _ => return Err(SynthesisError::Unsatisfiable),
        };
        inclusion(&mut cs, p.comm_c_path, &comm_c, &column_hash)?;
    }
    Ok(cs)
}

/// The label of `node` at `layer` from its parents' bits (the DRG parents', then at
/// layers above the first the expander parents'), repeated in the hashing order to 37.
fn label(
    cs: &mut Witness,
    replica_id_bits: &[Bit],
    layer: usize,
    node: &[Bit],
    parents: &[Vec<Bit>],
) -> Result<Fr, SynthesisError> {
    let mut expanded: Vec<&[Bit]> = parents.iter().map(Vec::as_slice).collect();
    if layer > 1 {
        expanded.extend(parents.iter().map(Vec::as_slice));
        let first = parents.get(..9).ok_or(SynthesisError::Unsatisfiable)?;
        expanded.extend(first.iter().map(Vec::as_slice));
    } else {
        for _ in 0..5 {
            expanded.extend(parents.iter().map(Vec::as_slice));
        }
        expanded.push(parents.first().ok_or(SynthesisError::Unsatisfiable)?);
    }
    if expanded.len() != stacked::TOTAL_PARENTS {
        return Err(SynthesisError::Unsatisfiable);
    }
    Ok(sha256::label(
        &mut cs.aux,
        replica_id_bits,
        layer as u32,
        node,
        &expanded,
    ))
}

/// Pins `T` to the element type of a function's `Vec<T>` argument.
fn same_element_type<T, S, A, B, C, D, E, R>(_: &[T], _: fn(S, A, B, C, D, E, Vec<T>) -> R) {}

/// storage-proofs' `enforce_inclusion` for a binary SHA-256 tree (tree D) without sub or
/// top trees, its hashes natively: per level the index bit, the sibling, the two picks of
/// `insert_2`, the two leaves' bit decompositions (the gadget), then the SHA-256 of their
/// bytes and its packed value; the index bits packed into inputs at the end. The root is
/// an allocated number already, so `Root::allocated` adds nothing, and the equality with
/// it is a constraint only.
fn sha256_inclusion(
    cs: &mut Witness,
    path: Vec<(Vec<Option<Fr>>, Option<usize>)>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError> {
    let mut cur = leaf.clone();
    let mut index_bits = Vec::with_capacity(path.len());
    for (hashes, index) in path {
        let [sibling] = hashes[..] else {
            return Err(SynthesisError::Unsatisfiable);
        };
        let bit = Boolean::from(AllocatedBit::alloc(&mut *cs, index.map(|i| i & 1 == 1))?);
        index_bits.push(bit.clone());
        let sibling = AllocatedNum::alloc(&mut *cs, || {
            sibling.ok_or(SynthesisError::AssignmentMissing)
        })?;
        let inserted = insert(cs, &cur, &[bit], &[sibling])?;
        // Sha256Function::hash_multi_leaf_circuit: each leaf's bits by bytes, bit order
        // reversed within a byte; the digest packed from its bytes likewise.
        let mut preimage = Vec::with_capacity(512);
        for leaf in &inserted {
            preimage.extend(sha256::reverse_bit_numbering(bits(
                &leaf.to_bits_le(&mut *cs)?,
            )?));
        }
        let digest = sha256::sha256(&mut sha256::Aux(&mut cs.aux), &preimage);
        let value = sha256::pack(&sha256::reverse_bit_numbering(digest));
        cur = AllocatedNum::alloc(&mut *cs, || Ok(value))?;
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)
}

/// storage-proofs' `enforce_inclusion`.
fn inclusion<H, U, V, W>(
    cs: &mut Witness,
    path: AuthPath<H, U, V, W>,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError>
where
    H: 'static + Hasher,
    U: 'static + PoseidonArity,
    V: 'static + PoseidonArity,
    W: 'static + PoseidonArity,
{
    let root = Root::from_allocated::<Witness>(root.clone());
    let leaf = Root::from_allocated::<Witness>(leaf.clone());
    PoRCircuit::<MerkleTreeWrapper<H, DiskStore<H::Domain>, U, V, W>>::synthesize(
        cs, leaf, path, root, true,
    )
}

/// The gadget's bits as [`Bit`]s (their values must be known: this is witness generation).
fn bits(bits: &[Boolean]) -> Result<Vec<Bit>, SynthesisError> {
    bits.iter()
        .map(|b| {
            let v = b.get_value().ok_or(SynthesisError::AssignmentMissing)?;
            Ok(match b {
                Boolean::Constant(c) => Bit::Const(*c),
                Boolean::Is(_) => Bit::Is(v),
                Boolean::Not(_) => Bit::Not(!v),
            })
        })
        .collect()
}
