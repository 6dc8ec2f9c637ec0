//! Checks a C1's vanilla proofs, so that a malformed or inconsistent C1 is one line
//! naming the partition, the challenge and the field, instead of a panic deep in the
//! gadgets, a circuit that cannot be satisfied, or a proof that `verify_seal` refuses.
//! When (pipeline/partition_checks.rs): pass 1 of every partition before any synthesis;
//! pass 2 of the first partition then, of each other when its witness is joined (so a
//! later partition's bad content costs the synthesis before it, never a proof).
//!
//! Two passes per challenge:
//! 1. **Shape.** storage-proofs keeps most of a vanilla proof's fields private, so the
//!    proof is re-read through [`raw`]'s mirror of its serde form. Every count is held
//!    against the registered proof's shape (Merkle path length and arity for each tree,
//!    parents per challenge, rows per column, labeling proofs, 37 parents per label) and
//!    every 32-byte value must be a canonical field element (the gadgets `expect` it).
//! 2. **Content**, through storage-proofs' own checks on the typed proof, now that they
//!    cannot panic on the shape: the challenges are the ones the seed derives, comm_r is
//!    H(comm_c, comm_r_last) and every challenge opens the same ones, every Merkle path
//!    hashes to its root, the columns open the challenge's DRG and expander parents, the
//!    labels are the parents' hash, the replica leaf encodes the data leaf. This is
//!    filecoin-proofs' vanilla verification plus what it leaves to the circuit.
//!
//! A panic that still escapes is caught here and reported against the challenge.

use anyhow::{bail, ensure, Context, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::MerkleTreeTrait;
use rayon::prelude::*;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{base_path_length, MerkleProofTrait};
use storage_proofs_porep::stacked::{self, TOTAL_PARENTS};
use typenum::Unsigned;

use super::Porep;

type Proof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

impl<Tree: 'static + MerkleTreeTrait> Porep<Tree> {
    /// Checks partition `k`'s vanilla proofs (see the module's text); its challenges in
    /// parallel on the current rayon pool.
    pub(crate) fn check_partition(&self, k: usize) -> Result<()> {
        self.check_passes(k, true)
    }

    /// Pass 1 alone for partition `k` (the challenge count, every count and value's form):
    /// what keeps the gadgets from panicking and sizes the witness work, about a tenth of
    /// the whole check.
    pub(crate) fn check_partition_shape(&self, k: usize) -> Result<()> {
        self.check_passes(k, false)
    }

    /// Pass 1, and pass 2 with `content`.
    fn check_passes(&self, k: usize, content: bool) -> Result<()> {
        let proofs = &self.vanilla[k];
        let pp = &self.public_params;
        let nodes = pp.graph.size();
        let challenges = crate::panics::catch("deriving the challenges", || {
            Ok(self
                .public_inputs
                .challenges(&pp.challenges, nodes, Some(k)))
        })?;
        ensure!(
            proofs.len() == challenges.len(),
            "partition {k} has {} challenge proofs, the registered proof has {}",
            proofs.len(),
            challenges.len()
        );
        proofs
            .par_iter()
            .zip(&challenges)
            .enumerate()
            .try_for_each(|(i, (proof, &node))| {
                crate::panics::catch("checking it", || self.check_challenge(proof, node, content))
                    .with_context(|| format!("partition {k}, challenge {i} (node {node})"))
            })?;
        match content {
            true => self
                .check_comm_r(proofs)
                .with_context(|| format!("partition {k}")),
            false => Ok(()),
        }
    }

    /// Every challenge opens the same comm_c and comm_r_last, and H(comm_c, comm_r_last)
    /// is the C1's comm_r.
    fn check_comm_r(&self, proofs: &[Proof<Tree>]) -> Result<()> {
        let (comm_c, comm_r_last) = (proofs[0].comm_c(), proofs[0].comm_r_last());
        for (i, p) in proofs.iter().enumerate() {
            ensure!(p.comm_c() == comm_c, "challenge {i} opens another comm_c");
            ensure!(
                p.comm_r_last() == comm_r_last,
                "challenge {i} opens another comm_r_last"
            );
        }
        let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
        let tau = self.public_inputs.tau.as_ref().context("no comm_r")?;
        ensure!(
            comm_r == tau.comm_r,
            "H(comm_c, comm_r_last) of the vanilla proofs is not the C1's comm_r"
        );
        Ok(())
    }

    fn check_challenge(&self, proof: &Proof<Tree>, node: usize, content: bool) -> Result<()> {
        let raw = raw::of(proof)?;
        let pp = &self.public_params;
        let graph = &pp.graph;
        let mut parents = vec![0u32; graph.degree()];
        graph.parents(node, &mut parents)?;
        let drg = graph.base_graph().degree();
        let shape = Shape {
            nodes: graph.size(),
            layers: pp.num_layers,
            drg,
            exp: graph.expansion_degree(),
        };
        shape.check::<Tree>(&raw, node, &parents)?;
        match content {
            true => self.check_content(proof, &raw, node, &parents),
            false => Ok(()),
        }
    }

    /// storage-proofs' checks on the typed proof, each named; run after the shape check.
    fn check_content(
        &self,
        proof: &Proof<Tree>,
        raw: &raw::Proof,
        node: usize,
        parents: &[u32],
    ) -> Result<()> {
        let tau = self.public_inputs.tau.as_ref().context("no comm_d")?;
        let replica_id = &self.public_inputs.replica_id;
        let d = &proof.comm_d_proofs;
        ensure!(d.proves_challenge(node), "comm_d_proofs opens another node");
        ensure!(
            d.verify(),
            "comm_d_proofs: the path does not hash to its root"
        );
        ensure!(
            d.root() == tau.comm_d,
            "comm_d_proofs: the root is not comm_d"
        );
        let r = &proof.comm_r_last_proof;
        ensure!(
            r.proves_challenge(node),
            "comm_r_last_proof opens another node"
        );
        ensure!(
            r.verify(),
            "comm_r_last_proof: the path does not hash to its root"
        );
        ensure!(
            proof.replica_column_proofs.verify(node, parents),
            "replica_column_proofs: a column does not open at its node under comm_c"
        );
        for (l, label) in proof.labeling_proofs.iter().enumerate() {
            let labeled = proof.replica_column_proofs.c_x.get_node_at_layer(l + 1)?;
            ensure!(
                label.verify(replica_id, labeled),
                "labeling_proofs[{l}]: the label is not the hash of its parents"
            );
        }
        raw.labels_follow_columns()?;
        ensure!(
            proof
                .encoding_proof
                .verify::<DefaultPieceHasher>(replica_id, &r.leaf(), &d.leaf()),
            "encoding_proof: the replica leaf does not encode the data leaf"
        );
        Ok(())
    }
}

/// What the registered proof says a challenge's proof holds.
struct Shape {
    nodes: usize,
    layers: usize,
    drg: usize,
    exp: usize,
}

impl Shape {
    fn check<Tree: MerkleTreeTrait>(
        &self,
        p: &raw::Proof,
        node: usize,
        parents: &[u32],
    ) -> Result<()> {
        use typenum::{U0, U2};
        // The data tree: binary, SHA-256, no sub or top trees.
        let data = [(2, base_path_length::<U2, U0, U0>(self.nodes))];
        p.comm_d_proofs.check(&data).context("comm_d_proofs")?;
        let tree = tree_shape::<Tree>(self.nodes);
        p.comm_r_last_proof
            .check(&tree)
            .context("comm_r_last_proof")?;
        let cols = &p.replica_column_proofs;
        self.check_column(&cols.c_x, node as u64, &tree)
            .context("replica_column_proofs.c_x")?;
        ensure!(
            cols.drg_parents.len() == self.drg,
            "replica_column_proofs has {} DRG parents, the graph has {}",
            cols.drg_parents.len(),
            self.drg
        );
        ensure!(
            cols.exp_parents.len() == self.exp,
            "replica_column_proofs has {} expander parents, the graph has {}",
            cols.exp_parents.len(),
            self.exp
        );
        for (j, (c, &parent)) in cols
            .drg_parents
            .iter()
            .chain(&cols.exp_parents)
            .zip(parents)
            .enumerate()
        {
            self.check_column(c, parent.into(), &tree)
                .with_context(|| format!("replica_column_proofs, parent {j}"))?;
        }
        ensure!(
            p.labeling_proofs.len() == self.layers,
            "{} labeling proofs, the registered proof has {} layers",
            p.labeling_proofs.len(),
            self.layers
        );
        for (l, label) in p.labeling_proofs.iter().enumerate() {
            check_label(label, l as u32 + 1, node as u64)
                .with_context(|| format!("labeling_proofs[{l}]"))?;
        }
        check_label(&p.encoding_proof, self.layers as u32, node as u64).context("encoding_proof")
    }

    fn check_column(&self, c: &raw::ColumnProof, node: u64, tree: &[(usize, usize)]) -> Result<()> {
        ensure!(
            u64::from(c.column.index) == node,
            "the column is node {}'s, not node {node}'s",
            c.column.index
        );
        ensure!(
            c.column.rows.len() == self.layers,
            "the column has {} rows, the registered proof has {} layers",
            c.column.rows.len(),
            self.layers
        );
        field_elements(&c.column.rows).context("column rows")?;
        c.inclusion_proof.check(tree).context("inclusion_proof")
    }
}

/// A tree's path as (arity, levels) pieces: the base tree's, then the sub and top trees'.
fn tree_shape<Tree: MerkleTreeTrait>(nodes: usize) -> Vec<(usize, usize)> {
    let (a, b, c) = (
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    );
    let mut shape = vec![(
        a,
        base_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(nodes),
    )];
    if b > 0 {
        shape.push((b, 1));
    }
    if c > 0 {
        shape.push((c, 1));
    }
    shape
}

fn check_label(l: &raw::Labeling, layer: u32, node: u64) -> Result<()> {
    ensure!(
        l.layer_index == layer,
        "layer {}, expected {layer}",
        l.layer_index
    );
    ensure!(l.node == node, "node {}, expected {node}", l.node);
    ensure!(
        l.parents.len() == TOTAL_PARENTS,
        "{} parents, a label has {TOTAL_PARENTS}",
        l.parents.len()
    );
    field_elements(&l.parents).context("parents")
}

/// Every value a canonical encoding of a field element.
fn field_elements(values: &[[u8; 32]]) -> Result<()> {
    for (i, v) in values.iter().enumerate() {
        let fr: Option<Fr> = ff::PrimeField::from_repr(*v).into();
        if fr.is_none() {
            bail!("value {i} is not a field element");
        }
    }
    Ok(())
}

/// The serde form of storage-proofs' vanilla proof, whose fields it keeps private: the
/// same names, every 32-byte domain value as bytes. Unknown fields are skipped.
mod raw {
    use anyhow::{ensure, Context, Result};
    use serde::Deserialize;

    pub(crate) type Bytes = [u8; 32];

    #[derive(Deserialize)]
    pub struct Proof {
        pub comm_d_proofs: Merkle,
        pub comm_r_last_proof: Merkle,
        pub replica_column_proofs: Columns,
        pub labeling_proofs: Vec<Labeling>,
        pub encoding_proof: Labeling,
    }

    #[derive(Deserialize)]
    pub struct Merkle {
        data: MerkleData,
    }

    #[derive(Deserialize)]
    enum MerkleData {
        Single {
            root: Bytes,
            leaf: Bytes,
            path: Path,
        },
        Sub {
            base_proof: Path,
            sub_proof: Path,
            root: Bytes,
            leaf: Bytes,
        },
        Top {
            base_proof: Path,
            sub_proof: Path,
            top_proof: Path,
            root: Bytes,
            leaf: Bytes,
        },
    }

    #[derive(Deserialize)]
    struct Path {
        path: Vec<Level>,
    }

    #[derive(Deserialize)]
    struct Level {
        hashes: Vec<Bytes>,
        index: usize,
    }

    #[derive(Deserialize)]
    pub(crate) struct Columns {
        pub c_x: ColumnProof,
        pub drg_parents: Vec<ColumnProof>,
        pub exp_parents: Vec<ColumnProof>,
    }

    #[derive(Deserialize)]
    pub(crate) struct ColumnProof {
        pub column: Column,
        pub inclusion_proof: Merkle,
    }

    #[derive(Deserialize)]
    pub(crate) struct Column {
        pub index: u32,
        pub rows: Vec<Bytes>,
    }

    #[derive(Deserialize)]
    pub(crate) struct Labeling {
        pub parents: Vec<Bytes>,
        pub layer_index: u32,
        pub node: u64,
    }

    /// `proof` through its serde form.
    pub fn of<T: serde::Serialize>(proof: &T) -> Result<Proof> {
        let json = serde_json::to_vec(proof)?;
        serde_json::from_slice(&json).context("a vanilla proof's form is not storage-proofs' v19")
    }

    impl Merkle {
        /// The path is `shape`'s pieces (arity, levels) in order, every level `arity − 1`
        /// siblings and an index below the arity, every value a field element.
        pub fn check(&self, shape: &[(usize, usize)]) -> Result<()> {
            let (paths, root, leaf): (Vec<&Path>, _, _) = match &self.data {
                MerkleData::Single { root, leaf, path } => (vec![path], root, leaf),
                MerkleData::Sub {
                    base_proof,
                    sub_proof,
                    root,
                    leaf,
                } => (vec![base_proof, sub_proof], root, leaf),
                MerkleData::Top {
                    base_proof,
                    sub_proof,
                    top_proof,
                    root,
                    leaf,
                } => (vec![base_proof, sub_proof, top_proof], root, leaf),
            };
            ensure!(
                paths.len() == shape.len(),
                "a path of {} trees, the registered proof's tree has {}",
                paths.len(),
                shape.len()
            );
            for (t, (path, &(arity, levels))) in paths.iter().zip(shape).enumerate() {
                ensure!(
                    path.path.len() == levels,
                    "tree {t} of the path has {} levels, the sector's has {levels}",
                    path.path.len()
                );
                for (h, level) in path.path.iter().enumerate() {
                    ensure!(
                        level.hashes.len() == arity - 1 && level.index < arity,
                        "level {h} of tree {t} has {} siblings and index {}, the arity is {arity}",
                        level.hashes.len(),
                        level.index
                    );
                    super::field_elements(&level.hashes)
                        .with_context(|| format!("level {h} of tree {t}"))?;
                }
            }
            super::field_elements(&[*root, *leaf]).context("root or leaf")
        }
    }

    impl Proof {
        /// Each labeling proof's parents are the parent columns' rows the label reads (the
        /// DRG parents at its layer, then the expander parents at the layer below), repeated
        /// to 37: the circuit computes the label from the columns, so a C1 whose labeling
        /// proofs say otherwise cannot be proved.
        pub(crate) fn labels_follow_columns(&self) -> Result<()> {
            let cols = &self.replica_column_proofs;
            for (l, label) in self.labeling_proofs.iter().enumerate() {
                let mut read: Vec<&Bytes> =
                    cols.drg_parents.iter().map(|c| &c.column.rows[l]).collect();
                if l > 0 {
                    read.extend(cols.exp_parents.iter().map(|c| &c.column.rows[l - 1]));
                }
                let expected = read.iter().cycle();
                ensure!(
                    label.parents.iter().zip(expected).all(|(a, b)| a == *b),
                    "labeling_proofs[{l}]: the parents are not the parent columns' rows"
                );
            }
            let last = self.labeling_proofs.last().map(|l| &l.parents);
            ensure!(
                last == Some(&self.encoding_proof.parents),
                "encoding_proof: the parents are not the last label's"
            );
            Ok(())
        }
    }
}
