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

/// Nodes of the random block the synthetic sector repeats (128 KiB of data).
pub const DATA_BLOCK_NODES: usize = 4096;

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
    let graph = &pp.graph;
    let nodes = graph.size();
    let layers = pp.num_layers;
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
    let mut parents: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
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
    let mut columns: BTreeMap<usize, Vec<TreeDomain<Tree>>> = BTreeMap::new();
    let opened: BTreeSet<usize> = parents
        .iter()
        .flat_map(|(&c, p)| std::iter::once(c).chain(p.iter().map(|&x| x as usize)))
        .collect();
    for &n in &opened {
        let rows = (1..=layers)
            .map(|l| labels.get(n, l, &mut rng))
            .collect::<Vec<_>>();
        columns.insert(n, rows);
    }
    let overlaps = parents
        .keys()
        .filter(|c| parents.values().flatten().any(|&p| p as usize == **c))
        .count();

    // 4. Trees C and R, sparse, of the tree's true shape.
    let shape = tree_levels::<Tree>(nodes)?;
    let leaves_c: BTreeMap<usize, TreeDomain<Tree>> = columns
        .iter()
        .map(|(&n, rows)| -> Result<_> {
            Ok((
                n,
                Column::<Tree::Hasher>::new(n as u32, rows.clone())?
                    .hash()
                    .into(),
            ))
        })
        .collect::<Result<_>>()?;
    let tree_c = SparseTree::<Tree::Hasher>::build(leaves_c, &shape, &mut rng);
    let leaves_r: BTreeMap<usize, TreeDomain<Tree>> = parents
        .keys()
        .map(|&c| {
            let data: Fr = tree_d.leaf(c).into();
            let key: Fr = labels.known[&(c, layers)].into();
            (c, (data + key).into())
        })
        .collect();
    let tree_r = SparseTree::<Tree::Hasher>::build(leaves_r, &shape, &mut rng);
    let comm_c = tree_c.root();
    let comm_r_last = tree_r.root();
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);

    // The vanilla proofs, field by field as storage-proofs lays them out.
    let col_proof = |n: usize| -> ColumnProof<TreeProof<Tree>> {
        ColumnProof::new(
            n as u32,
            columns[&n].clone(),
            MerkleProof::from_parts(tree_c.leaf(n), comm_c, tree_c.path(n)),
        )
    };
    let proofs: Vec<Vec<RawProof<Tree>>> = challenges
        .iter()
        .map(|cs| {
            cs.iter()
                .map(|&c| {
                    let ps = &parents[&c];
                    let labeling_proofs: Vec<LabelingProof<Tree::Hasher>> = (1..=layers)
                        .map(|l| LabelingProof::new(l as u32, c as u64, labels.parent_labels(c, l)))
                        .collect();
                    RawProof::<Tree> {
                        comm_d_proofs: MerkleProof::from_parts(
                            tree_d.leaf(c),
                            comm_d,
                            tree_d.path(c),
                        ),
                        comm_r_last_proof: MerkleProof::from_parts(
                            tree_r.leaf(c),
                            comm_r_last,
                            tree_r.path(c),
                        ),
                        replica_column_proofs: ReplicaColumnProof {
                            c_x: col_proof(c),
                            drg_parents: ps[..BASE_DEGREE]
                                .iter()
                                .map(|&p| col_proof(p as usize))
                                .collect(),
                            exp_parents: ps[BASE_DEGREE..]
                                .iter()
                                .map(|&p| col_proof(p as usize))
                                .collect(),
                        },
                        labeling_proofs,
                        encoding_proof: EncodingProof::new(
                            layers as u32,
                            c as u64,
                            labels.parent_labels(c, layers),
                        ),
                    }
                })
                .collect()
        })
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
    Ok((
        proofs,
        Commitments {
            comm_r: comm_r_bytes,
            comm_d: comm_d_bytes,
            replica_id: replica_fr.into(),
            seed,
            ticket,
            stats: Stats {
                partitions,
                challenges: challenges.iter().map(Vec::len).sum(),
                layers,
                columns: opened.len(),
                overlaps,
                generate_s,
                verify_s,
            },
        },
    ))
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

/// (arity, height) of each level of tree C / R from the leaves up: the base arity until
/// one base tree is covered, then one level each of sub-tree and top-tree arity
/// (storage-proofs' compound trees). The height counts inside each part, as the path
/// verifier passes it to the hash.
fn tree_levels<Tree: MerkleTreeTrait>(nodes: usize) -> Result<Vec<(usize, usize)>> {
    use typenum::Unsigned;
    let base = Tree::Arity::to_usize();
    let sub = Tree::SubTreeArity::to_usize();
    let top = Tree::TopTreeArity::to_usize();
    let mut base_leaves = nodes;
    for a in [sub, top] {
        base_leaves = base_leaves.checked_div(a).unwrap_or(base_leaves);
    }
    let mut levels = Vec::new();
    let mut n = 1;
    while n < base_leaves {
        levels.push((base, levels.len()));
        n *= base;
    }
    ensure!(
        n == base_leaves,
        "{nodes} nodes do not make a {base}-{sub}-{top} tree"
    );
    levels.extend([sub, top].into_iter().filter(|&a| a > 0).map(|a| (a, 0)));
    Ok(levels)
}

/// A Merkle tree of which only some paths are known: the given leaves and every node
/// above them are computed, the other children of those nodes are random digests.
struct SparseTree<H: Hasher> {
    arities: Vec<usize>,
    levels: Vec<BTreeMap<usize, H::Domain>>,
}

impl<H: Hasher> SparseTree<H> {
    fn build(
        leaves: BTreeMap<usize, H::Domain>,
        shape: &[(usize, usize)],
        rng: &mut impl RngCore,
    ) -> Self {
        let mut levels = vec![leaves];
        for (l, &(a, height)) in shape.iter().enumerate() {
            let parents: BTreeSet<usize> = levels[l].keys().map(|i| i / a).collect();
            let mut up = BTreeMap::new();
            for p in parents {
                let children: Vec<H::Domain> = (p * a..(p + 1) * a)
                    .map(|i| {
                        *levels[l]
                            .entry(i)
                            .or_insert_with(|| H::Domain::from(Fr::random(&mut *rng)))
                    })
                    .collect();
                let mut f = H::Function::default();
                up.insert(p, f.multi_node(&children, height));
            }
            levels.push(up);
        }
        SparseTree {
            arities: shape.iter().map(|&(a, _)| a).collect(),
            levels,
        }
    }

    fn root(&self) -> H::Domain {
        let top = self.levels.last().expect("a tree has levels");
        debug_assert_eq!(top.len(), 1);
        top[&0]
    }

    fn leaf(&self, i: usize) -> H::Domain {
        self.levels[0][&i]
    }

    /// (siblings, position) per level, leaf first: storage-proofs' path form.
    fn path(&self, mut i: usize) -> Vec<(Vec<H::Domain>, usize)> {
        self.arities
            .iter()
            .enumerate()
            .map(|(l, &a)| {
                let p = i / a;
                let sibs = (p * a..(p + 1) * a)
                    .filter(|&j| j != i)
                    .map(|j| self.levels[l][&j])
                    .collect();
                let pos = i % a;
                i = p;
                (sibs, pos)
            })
            .collect()
    }
}

/// Tree D of a sector that repeats one random block: the block's own tree, then one node
/// per level above it.
struct PeriodicTreeD {
    /// levels[l] holds the block's nodes at height l (block_len >> l of them); above the
    /// block, one value per level.
    levels: Vec<Vec<Sha256Domain>>,
}

impl PeriodicTreeD {
    fn new(nodes: usize, rng: &mut impl RngCore) -> Result<Self> {
        ensure!(
            nodes.is_power_of_two(),
            "{nodes} nodes is not a power of two"
        );
        let block = DATA_BLOCK_NODES.min(nodes);
        let mut levels = vec![(0..block)
            .map(|_| random_trimmed::<Sha256Domain>(rng))
            .collect::<Vec<_>>()];
        let height = nodes.trailing_zeros() as usize;
        for h in 0..height {
            let below = &levels[h];
            let up: Vec<Sha256Domain> = if below.len() > 1 {
                below
                    .chunks(2)
                    .map(|c| Sha256Function::default().multi_node(c, h))
                    .collect()
            } else {
                vec![Sha256Function::default().multi_node(&[below[0], below[0]], h)]
            };
            levels.push(up);
        }
        Ok(PeriodicTreeD { levels })
    }

    fn at(&self, level: usize, i: usize) -> Sha256Domain {
        let v = &self.levels[level];
        v[i % v.len()]
    }

    fn root(&self) -> Sha256Domain {
        self.levels.last().expect("tree D has levels")[0]
    }

    fn leaf(&self, i: usize) -> Sha256Domain {
        self.at(0, i)
    }

    fn path(&self, i: usize) -> Vec<(Vec<Sha256Domain>, usize)> {
        (0..self.levels.len() - 1)
            .map(|l| {
                let j = i >> l;
                (vec![self.at(l, j ^ 1)], j & 1)
            })
            .collect()
    }
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
