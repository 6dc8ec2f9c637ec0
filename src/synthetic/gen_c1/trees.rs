//! The sparse Merkle trees of a synthetic sector (gen-c1): tree D of a sector that repeats
//! one random block, and trees C and R of which only the opened paths are computed; each
//! of the true shape (arity, sub and top trees) so the vanilla proofs verify.

use super::*;

/// (arity, height) of each level of tree C / R from the leaves up: the base arity until
/// one base tree is covered, then one level each of sub-tree and top-tree arity
/// (storage-proofs' compound trees). The height counts inside each part, as the path
/// verifier passes it to the hash.
pub(super) fn tree_levels<Tree: MerkleTreeTrait>(nodes: usize) -> Result<Vec<(usize, usize)>> {
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
pub(super) struct SparseTree<H: Hasher> {
    arities: Vec<usize>,
    levels: Vec<BTreeMap<usize, H::Domain>>,
}

impl<H: Hasher> SparseTree<H> {
    pub(super) fn build(
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

    pub(super) fn root(&self) -> H::Domain {
        let top = self.levels.last().expect("a tree has levels");
        debug_assert_eq!(top.len(), 1);
        top[&0]
    }

    pub(super) fn leaf(&self, i: usize) -> H::Domain {
        self.levels[0][&i]
    }

    /// (siblings, position) per level, leaf first: storage-proofs' path form.
    pub(super) fn path(&self, mut i: usize) -> Vec<(Vec<H::Domain>, usize)> {
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
pub(super) struct PeriodicTreeD {
    /// levels[l] holds the block's nodes at height l (block_len >> l of them); above the
    /// block, one value per level.
    levels: Vec<Vec<Sha256Domain>>,
}

impl PeriodicTreeD {
    pub(super) fn new(nodes: usize, rng: &mut impl RngCore) -> Result<Self> {
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

    pub(super) fn root(&self) -> Sha256Domain {
        self.levels.last().expect("tree D has levels")[0]
    }

    pub(super) fn leaf(&self, i: usize) -> Sha256Domain {
        self.at(0, i)
    }

    pub(super) fn path(&self, i: usize) -> Vec<(Vec<Sha256Domain>, usize)> {
        (0..self.levels.len() - 1)
            .map(|l| {
                let j = i >> l;
                (vec![self.at(l, j ^ 1)], j & 1)
            })
            .collect()
    }
}
