//! Synthetic C1 for any sector size: vanilla proofs that satisfy the PoRep circuit and
//! filecoin-proofs' own vanilla verifier, made without sealing.
//!
//! A C2 prover only ever sees the openings a C1 holds, never the sector. So only the nodes
//! the proofs open have to be right; every other node of every tree may be any value, as
//! long as the roots are computed from them. The order follows a real seal:
//!
//! 1. **Data and comm_d.** The sector is one random block of [`DATA_BLOCK_NODES`] nodes
//!    repeated to fill it (a deal sector holding one repeated piece). Every level of the
//!    binary SHA-256 tree D above the block is then one value, so any leaf can be opened
//!    without building a tree over all 2^30 nodes.
//! 2. **replica_id** from prover id, sector number, ticket, comm_d and porep id, exactly as
//!    filecoin-proofs does; then the **challenges** of every partition from replica_id and
//!    the interactive seed, and each challenge's 14 **parents** from the real stacked graph
//!    of the porep id and API version (storage-proofs' own code for both).
//! 3. **Labels.** A challenged node's label in each layer is computed with the real
//!    labelling function from its parents' labels (base parents in the same layer,
//!    expander parents in the layer below); every other node's label is random. A parent
//!    that is itself challenged (an overlap) gets its computed labels, so all openings of
//!    one node agree; labels are computed layer by layer in node order, which is the
//!    dependency order of the graph.
//! 4. **Trees C and R** of the true shape (8-0-0, 8-8-0, 8-8-2 Poseidon) are sparse: the
//!    opened leaves (column hashes; replica = data + last-layer label) and the nodes above
//!    them are computed, every sibling off those paths is a random digest.
//!    comm_r = H(comm_c, comm_r_last).
//!
//! The result is verified with `StackedDrg::verify_all_partitions` before it is returned.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use base64::Engine;
use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Function};
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::constants::{
    DefaultPieceHasher, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB,
    SectorShape8MiB,
};
use filecoin_proofs::types::{MerkleTreeTrait, PoRepConfig};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::RegisteredSealProof;
use merkletree::hash::Algorithm;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use sha2::{Digest, Sha256};
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::drgraph::{Graph, BASE_DEGREE};
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, Column, ColumnProof, EncodingProof, LabelingProof,
    ReplicaColumnProof, StackedDrg, TOTAL_PARENTS,
};

use super::meta::{hex, Meta};
use crate::input::c1::prover_id_from_miner;

mod trees;
use trees::{tree_levels, PeriodicTreeD, SparseTree};

/// Nodes of the random block the synthetic sector repeats (128 KiB of data).
pub(crate) const DATA_BLOCK_NODES: usize = 4096;

/// What to generate.
#[derive(Clone, Debug)]
pub struct Options {
    pub proof: RegisteredSealProof,
    pub miner_id: u64,
    pub sector_num: u64,
    /// Seeds every random choice: the same seed gives the same C1.
    pub seed: [u8; 32],
}

/// Counts worth printing.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Stats {
    pub partitions: usize,
    pub challenges: usize,
    pub layers: usize,
    /// Distinct columns opened (challenges and their parents).
    pub columns: usize,
    /// Challenged nodes that are also a parent of some challenge.
    pub overlaps: usize,
    pub generate_s: f64,
    pub verify_s: f64,
}

pub struct Generated {
    pub c1: SealCommitPhase1Output,
    pub meta: Meta,
    pub stats: Stats,
}

/// Generates a C1 for `opts` and checks it with filecoin-proofs' vanilla verifier.
pub fn generate(opts: &Options) -> Result<Generated> {
    let proof = opts.proof;
    if proof.feature_enabled(ApiFeature::SyntheticPoRep) {
        bail!(
            "gen-c1 makes interactive PoRep C1s only: synthetic PoRep derives its challenges \
             from comm_r, which depends on the labels of the challenged nodes"
        );
    }
    let config = proof.as_v1_config();
    let size = u64::from(proof.sector_size());
    macro_rules! shape {
        ($tree:ty, $variant:ident) => {{
            let (proofs, c) = gen::<$tree>(&config, opts)?;
            (VanillaSealProof::$variant(proofs), c)
        }};
    }
    let (vanilla_proofs, c) = match size {
        2048 => shape!(SectorShape2KiB, StackedDrg2KiBV1),
        8388608 => shape!(SectorShape8MiB, StackedDrg8MiBV1),
        536870912 => shape!(SectorShape512MiB, StackedDrg512MiBV1),
        34359738368 => shape!(SectorShape32GiB, StackedDrg32GiBV1),
        68719476736 => shape!(SectorShape64GiB, StackedDrg64GiBV1),
        other => bail!("unsupported sector size {other}"),
    };
    let prover_id = prover_id_from_miner(opts.miner_id);
    let meta = Meta {
        registered_proof: format!("{proof:?}"),
        miner_id: opts.miner_id,
        prover_id: hex(&prover_id),
        sector_num: opts.sector_num,
        ticket: hex(&c.ticket),
        seed: hex(&c.seed),
        comm_r: hex(&c.comm_r),
        comm_d: hex(&c.comm_d),
        gen_c1_seed: Some(hex(&opts.seed)),
    };
    let c1 = SealCommitPhase1Output {
        registered_proof: proof,
        vanilla_proofs,
        comm_r: c.comm_r,
        comm_d: c.comm_d,
        replica_id: c.replica_id,
        seed: c.seed,
        ticket: c.ticket,
    };
    Ok(Generated {
        c1,
        meta,
        stats: c.stats,
    })
}

/// The scalar fields of the C1 besides the vanilla proofs.
struct Commitments {
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    replica_id: <filecoin_proofs::constants::DefaultTreeHasher as Hasher>::Domain,
    seed: [u8; 32],
    ticket: [u8; 32],
    stats: Stats,
}

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;
type RawProof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

fn gen<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    opts: &Options,
) -> Result<(Vec<Vec<RawProof<Tree>>>, Commitments)> {
    let t0 = Instant::now();
    let pp = filecoin_proofs::parameters::public_params::<Tree>(config)?;
    let (nodes, layers) = (pp.graph.size(), pp.num_layers);
    let partitions = usize::from(config.partitions);
    let mut rng = ChaCha20Rng::from_seed(opts.seed);

    let ticket: [u8; 32] = rng.gen();
    let mut seed: [u8; 32] = rng.gen();
    seed[31] &= 0x3f;

    // 1. Data and tree D.
    let tree_d = PeriodicTreeD::new(nodes, &mut rng)?;
    let comm_d = tree_d.root();

    // 2. replica_id, challenges, parents.
    let prover_id = prover_id_from_miner(opts.miner_id);
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &prover_id,
        opts.sector_num,
        &ticket,
        comm_d,
        &config.porep_id,
    );
    let mut pub_inputs = stacked::PublicInputs::<TreeDomain<Tree>, Sha256Domain> {
        replica_id,
        seed: Some(seed),
        tau: Some(stacked::Tau {
            comm_d,
            comm_r: Default::default(),
        }),
        k: None,
    };
    let challenges: Vec<Vec<usize>> = (0..partitions)
        .map(|k| pub_inputs.challenges(&pp.challenges, nodes, Some(k)))
        .collect();
    let parents = parents_of(&pp.graph, &challenges)?;

    // 3. Labels: computed for challenged nodes, in dependency order; random elsewhere.
    let mut labels = Labels::<TreeDomain<Tree>> {
        replica_id,
        parents: &parents,
        known: HashMap::new(),
    };
    for layer in 1..=layers {
        for &c in parents.keys() {
            labels.compute(c, layer, &mut rng)?;
        }
    }
    let columns = open_columns(&mut labels, layers, &mut rng);

    // 4. Trees C and R, sparse, of the tree's true shape.
    let trees = Trees::<Tree>::build(nodes, tree_d, &columns, &labels, layers, &mut rng)?;
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&trees.comm_c, &trees.comm_r_last);
    let opened = Opened {
        parents: &parents,
        labels: &labels,
        columns: &columns,
        trees: &trees,
        layers,
    };
    let proofs: Vec<Vec<RawProof<Tree>>> = challenges
        .iter()
        .map(|cs| cs.iter().map(|&c| opened.proof(c)).collect())
        .collect();
    let generate_s = t0.elapsed().as_secs_f64();

    // filecoin-proofs' own check, as its C1 does before returning.
    let t1 = Instant::now();
    pub_inputs.tau = Some(stacked::Tau { comm_d, comm_r });
    let ok =
        StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(&pp, &pub_inputs, &proofs)
            .context("vanilla verification of the generated proofs")?;
    ensure!(
        ok,
        "the generated vanilla proofs do not verify (generator bug)"
    );
    let verify_s = t1.elapsed().as_secs_f64();

    let comm_r_bytes: [u8; 32] = AsRef::<[u8]>::as_ref(&comm_r)
        .try_into()
        .expect("a domain element is 32 bytes");
    let comm_d_bytes: [u8; 32] = comm_d.into();
    let replica_fr: Fr = replica_id.into();
    let stats = Stats {
        partitions,
        challenges: challenges.iter().map(Vec::len).sum(),
        layers,
        columns: columns.len(),
        overlaps: overlaps(&parents),
        generate_s,
        verify_s,
    };
    Ok((
        proofs,
        Commitments {
            comm_r: comm_r_bytes,
            comm_d: comm_d_bytes,
            replica_id: replica_fr.into(),
            seed,
            ticket,
            stats,
        },
    ))
}

/// Every challenged node's DRG and expander parents.
fn parents_of<G: Graph<H>, H: Hasher>(
    graph: &G,
    challenges: &[Vec<usize>],
) -> Result<BTreeMap<usize, Vec<u32>>> {
    let mut parents = BTreeMap::new();
    for &c in challenges.iter().flatten() {
        let mut p = vec![0u32; graph.degree()];
        graph
            .parents(c, &mut p)
            .with_context(|| format!("parents of node {c}"))?;
        ensure!(
            p.len() == BASE_DEGREE + stacked::EXP_DEGREE,
            "the graph has {} parents per node, expected {}",
            p.len(),
            BASE_DEGREE + stacked::EXP_DEGREE
        );
        parents.insert(c, p);
    }
    Ok(parents)
}

/// How many challenged nodes are also another challenge's parent.
fn overlaps(parents: &BTreeMap<usize, Vec<u32>>) -> usize {
    parents
        .keys()
        .filter(|c| parents.values().flatten().any(|&p| p as usize == **c))
        .count()
}

/// The columns the proofs open (the challenges' and their parents'): every layer's label.
fn open_columns<D: Domain>(
    labels: &mut Labels<'_, D>,
    layers: usize,
    rng: &mut impl RngCore,
) -> BTreeMap<usize, Vec<D>> {
    let opened: BTreeSet<usize> = labels
        .parents
        .iter()
        .flat_map(|(&c, p)| std::iter::once(c).chain(p.iter().map(|&x| x as usize)))
        .collect();
    opened
        .into_iter()
        .map(|n| (n, (1..=layers).map(|l| labels.get(n, l, rng)).collect()))
        .collect()
}

/// Trees D, C (column hashes) and R (replica leaves), with their roots.
struct Trees<Tree: MerkleTreeTrait> {
    d: PeriodicTreeD,
    c: SparseTree<Tree::Hasher>,
    r: SparseTree<Tree::Hasher>,
    comm_d: Sha256Domain,
    comm_c: TreeDomain<Tree>,
    comm_r_last: TreeDomain<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> Trees<Tree> {
    fn build(
        nodes: usize,
        d: PeriodicTreeD,
        columns: &BTreeMap<usize, Vec<TreeDomain<Tree>>>,
        labels: &Labels<'_, TreeDomain<Tree>>,
        layers: usize,
        rng: &mut impl RngCore,
    ) -> Result<Self> {
        let shape = tree_levels::<Tree>(nodes)?;
        let leaves_c: BTreeMap<usize, TreeDomain<Tree>> = columns
            .iter()
            .map(|(&n, rows)| -> Result<_> {
                let column = Column::<Tree::Hasher>::new(n as u32, rows.clone())?;
                Ok((n, column.hash().into()))
            })
            .collect::<Result<_>>()?;
        let c = SparseTree::<Tree::Hasher>::build(leaves_c, &shape, rng);
        // The replica leaf: data + key, the key being the last layer's label.
        let leaves_r: BTreeMap<usize, TreeDomain<Tree>> = labels
            .parents
            .keys()
            .map(|&n| {
                let data: Fr = d.leaf(n).into();
                let key: Fr = labels.known[&(n, layers)].into();
                (n, (data + key).into())
            })
            .collect();
        let r = SparseTree::<Tree::Hasher>::build(leaves_r, &shape, rng);
        Ok(Self {
            comm_d: d.root(),
            comm_c: c.root(),
            comm_r_last: r.root(),
            d,
            c,
            r,
        })
    }
}

/// What the vanilla proofs open.
struct Opened<'a, Tree: MerkleTreeTrait> {
    parents: &'a BTreeMap<usize, Vec<u32>>,
    labels: &'a Labels<'a, TreeDomain<Tree>>,
    columns: &'a BTreeMap<usize, Vec<TreeDomain<Tree>>>,
    trees: &'a Trees<Tree>,
    layers: usize,
}

impl<Tree: 'static + MerkleTreeTrait> Opened<'_, Tree> {
    fn column(&self, n: usize) -> ColumnProof<TreeProof<Tree>> {
        let t = self.trees;
        ColumnProof::new(
            n as u32,
            self.columns[&n].clone(),
            MerkleProof::from_parts(t.c.leaf(n), t.comm_c, t.c.path(n)),
        )
    }

    /// Challenge `c`'s vanilla proof, field by field as storage-proofs lays it out.
    fn proof(&self, c: usize) -> RawProof<Tree> {
        let (t, layers) = (self.trees, self.layers);
        let ps = &self.parents[&c];
        let labeling_proofs: Vec<LabelingProof<Tree::Hasher>> = (1..=layers)
            .map(|l| LabelingProof::new(l as u32, c as u64, self.labels.parent_labels(c, l)))
            .collect();
        let columns = |ps: &[u32]| ps.iter().map(|&p| self.column(p as usize)).collect();
        RawProof::<Tree> {
            comm_d_proofs: MerkleProof::from_parts(t.d.leaf(c), t.comm_d, t.d.path(c)),
            comm_r_last_proof: MerkleProof::from_parts(t.r.leaf(c), t.comm_r_last, t.r.path(c)),
            replica_column_proofs: ReplicaColumnProof {
                c_x: self.column(c),
                drg_parents: columns(&ps[..BASE_DEGREE]),
                exp_parents: columns(&ps[BASE_DEGREE..]),
            },
            labeling_proofs,
            encoding_proof: EncodingProof::new(
                layers as u32,
                c as u64,
                self.labels.parent_labels(c, layers),
            ),
        }
    }
}

/// 32 random bytes with the top two bits clear: what fr32 padding and the SHA-256
/// based hashes (labels, tree D) produce.
fn random_trimmed<D: Domain>(rng: &mut impl RngCore) -> D {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b[31] &= 0x3f;
    D::from(b)
}

/// Labels of the opened nodes, per layer (1-based).
struct Labels<'a, D: Domain> {
    replica_id: D,
    parents: &'a BTreeMap<usize, Vec<u32>>,
    known: HashMap<(usize, usize), D>,
}

impl<D: Domain> Labels<'_, D> {
    /// The label of `node` in `layer`: computed if `node` is challenged, else random.
    fn get(&mut self, node: usize, layer: usize, rng: &mut impl RngCore) -> D {
        if let Some(l) = self.known.get(&(node, layer)) {
            return *l;
        }
        assert!(
            !self.parents.contains_key(&node),
            "challenged node {node} read in layer {layer} before it was labelled"
        );
        let l = random_trimmed(rng);
        self.known.insert((node, layer), l);
        l
    }

    /// The 37 parent labels a challenged node's label hashes in `layer`, as storage-proofs
    /// orders them: base parents in `layer`, then (above layer 1) expander parents in the
    /// layer below, repeated cyclically.
    fn parent_labels(&self, node: usize, layer: usize) -> Vec<D> {
        let p = &self.parents[&node];
        let mut own: Vec<D> = p[..BASE_DEGREE]
            .iter()
            .map(|&x| self.known[&(x as usize, layer)])
            .collect();
        if layer > 1 {
            own.extend(
                p[BASE_DEGREE..]
                    .iter()
                    .map(|&x| self.known[&(x as usize, layer - 1)]),
            );
        }
        own.iter().copied().cycle().take(TOTAL_PARENTS).collect()
    }

    fn compute(&mut self, node: usize, layer: usize, rng: &mut impl RngCore) -> Result<()> {
        let p = self.parents[&node].clone();
        for &x in &p[..BASE_DEGREE] {
            let x = x as usize;
            if self.parents.contains_key(&x) && !self.known.contains_key(&(x, layer)) {
                bail!("node {node}'s base parent {x} is challenged but not yet labelled in layer {layer}");
            }
            self.get(x, layer, rng);
        }
        if layer > 1 {
            for &x in &p[BASE_DEGREE..] {
                self.get(x as usize, layer - 1, rng);
            }
        }
        let label = create_label(
            &self.replica_id,
            layer,
            node,
            &self.parent_labels(node, layer),
        );
        self.known.insert((node, layer), label);
        Ok(())
    }
}

/// The stacked-DRG labelling function: SHA-256 of replica_id, layer (u32 BE), node
/// (u64 BE) in a 64-byte block, then the parent labels; top two bits cleared.
fn create_label<D: Domain>(replica_id: &D, layer: usize, node: usize, parents: &[D]) -> D {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(replica_id.as_ref());
    block[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
    block[36..44].copy_from_slice(&(node as u64).to_be_bytes());
    let mut h = Sha256::new();
    h.update(block);
    for p in parents {
        h.update(p.as_ref());
    }
    let mut out: [u8; 32] = h.finalize().into();
    out[31] &= 0x3f;
    D::from(out)
}

/// Generates a C1 and writes it to `out` (lotus-bench wrapper, or `raw` JSON) with its
/// metadata beside it ([`meta_path`]); both or neither are left. Returns what was made
/// and the C1's size in bytes.
pub fn write_files(opts: &Options, out: &Path, raw: bool) -> Result<(Generated, usize)> {
    crate::output::check_path(out)?;
    let meta_path = meta_path(out);
    let g = generate(opts)?;
    let bytes = encode(&g.c1, opts.sector_num, raw)?;
    crate::output::write_atomic(out, &bytes)
        .with_context(|| format!("cannot write {}", out.display()))?;
    if let Err(e) = crate::output::write_atomic(&meta_path, &serde_json::to_vec_pretty(&g.meta)?) {
        // No C1 without its metadata: the pair is the output.
        let _ = std::fs::remove_file(out);
        return Err(e).with_context(|| format!("cannot write {}", meta_path.display()));
    }
    Ok((g, bytes.len()))
}

/// The metadata file written next to a generated C1: `x.json` → `x.meta.json`.
pub fn meta_path(c1: &Path) -> PathBuf {
    let name = c1
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    c1.with_file_name(format!("{stem}.meta.json"))
}

/// The C1 as lotus-bench writes it (`{"SectorNum","Phase1Out","SectorSize"}` with the
/// base64 of the raw JSON), or the raw filecoin-proofs-api JSON.
pub fn encode(c1: &SealCommitPhase1Output, sector_num: u64, raw: bool) -> Result<Vec<u8>> {
    let json = serde_json::to_vec(c1)?;
    if raw {
        return Ok(json);
    }
    let wrapper = serde_json::json!({
        "SectorNum": sector_num,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&json),
        "SectorSize": u64::from(c1.registered_proof.sector_size()),
    });
    Ok(serde_json::to_vec_pretty(&wrapper)?)
}

/// Parses `--seed`: up to 64 hex digits, zero-padded on the right into 32 bytes.
pub fn parse_seed(s: &str) -> Result<[u8; 32]> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    ensure!(
        !s.is_empty() && s.len() <= 64 && s.len().is_multiple_of(2),
        "--seed must be 2 to 64 hex digits (an even count), got {} characters",
        s.len()
    );
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().take(s.len() / 2).enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
            .with_context(|| format!("--seed is not hex: '{s}'"))?;
    }
    Ok(out)
}
