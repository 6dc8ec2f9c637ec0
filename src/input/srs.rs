//! The Groth16 SRS (`.params`), memory-mapped; one reader for every backend.
//!
//! Layout (bellperson's `Parameters::write`): the verifying key (alpha_g1, beta_g1,
//! beta_g2, gamma_g2, delta_g1, delta_g2, then `ic` as a u32 big-endian count and points),
//! followed by the sections h, l, a, b_g1 (G1) and b_g2 (G2), each a u32 big-endian count
//! and that many uncompressed points. Opening checks every count against the file length;
//! points are decoded later, in parallel, section by section, only when a prover needs them.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use filecoin_proofs_api::RegisteredSealProof;

use anyhow::{bail, ensure, Context, Result};
use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use memmap2::Mmap;
use rayon::prelude::*;

use crate::synth::Shape;

/// `v28-<circuit id>.params` / `.vk` / `.meta` in `dir`.
pub struct CachePaths {
    pub params: PathBuf,
    pub vk: PathBuf,
    pub meta: PathBuf,
}

pub fn cache_paths(proof: RegisteredSealProof, dir: &Path) -> Result<CachePaths> {
    let id = proof
        .circuit_identifier()
        .context("cannot compute the circuit identifier")?;
    let v = storage_proofs_core::parameter_cache::VERSION;
    Ok(CachePaths {
        params: dir.join(format!("v{v}-{id}.params")),
        vk: dir.join(format!("v{v}-{id}.vk")),
        meta: dir.join(format!("v{v}-{id}.meta")),
    })
}

pub(crate) const G1_SIZE: usize = 96;
pub(crate) const G2_SIZE: usize = 192;
/// alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2.
const VK_FIXED: usize = 3 * G1_SIZE + 3 * G2_SIZE;

/// The verifying key's points as the file stores them, before the decoder sees them: each
/// uncompressed (no compression, infinity or sort flag on its first byte: the decoder
/// would otherwise accept α at infinity, or a flagged encoding of a valid point).
fn check_vk_encoding(vk: &[u8]) -> Result<()> {
    let names = [
        "alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2",
    ];
    let sizes = [G1_SIZE, G1_SIZE, G2_SIZE, G2_SIZE, G1_SIZE, G2_SIZE];
    let mut at = 0;
    let fixed = names.iter().zip(sizes).map(|(n, s)| {
        let p = (n.to_string(), at);
        at += s;
        p
    });
    let fixed: Vec<(String, usize)> = fixed.collect();
    let ic = (VK_FIXED + 4..vk.len())
        .step_by(G1_SIZE)
        .enumerate()
        .map(|(i, at)| (format!("ic point {i}"), at));
    for (name, at) in fixed.into_iter().chain(ic) {
        let flags = vk.get(at).copied().unwrap_or(0) & 0xe0;
        ensure!(
            flags == 0,
            "{name} is not a plain uncompressed point (flags {flags:#04x}: compressed, at \
             infinity or sorted)"
        );
    }
    Ok(())
}

/// One section of points in the file.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Section {
    pub name: &'static str,
    /// Byte offset of the first point.
    pub offset: usize,
    pub count: usize,
    pub point_size: usize,
}

impl Section {
    fn end(&self) -> usize {
        self.offset + self.count * self.point_size
    }
}

pub struct Srs {
    pub path: PathBuf,
    mmap: Mmap,
    /// Names this file in the SIGBUS handler's line while the map lives.
    _named: crate::signals::Mapped,
    pub vk: VerifyingKey<Bls12>,
    /// Number of `ic` points: public inputs + 1.
    pub vk_ic_count: usize,
    pub h: Section,
    pub l: Section,
    pub a: Section,
    pub b_g1: Section,
    pub b_g2: Section,
}

/// A point type stored uncompressed in the SRS: G1 and G2 share one decoder.
pub trait SrsPoint: UncompressedEncoding + PrimeCurveAffine + Send + Sync {}
impl SrsPoint for G1Affine {}
impl SrsPoint for G2Affine {}

impl Srs {
    /// Maps `path` and checks its structure; decodes only the verifying key.
    pub fn open(path: &Path) -> Result<Self> {
        // Before opening: a FIFO would block the open, a device never end.
        let meta = std::fs::metadata(path)
            .with_context(|| format!("cannot open parameters file {}", path.display()))?;
        anyhow::ensure!(
            meta.is_file(),
            "parameters file {} is not a regular file",
            path.display()
        );
        let file = File::open(path)
            .with_context(|| format!("cannot open parameters file {}", path.display()))?;
        // SAFETY: the mapping is read-only; the file is not expected to change while we run
        // (the same assumption bellperson and supraseal make for the parameter cache).
        let mmap = unsafe { Mmap::map(&file) }
            .with_context(|| format!("cannot map parameters file {}", path.display()))?;
        let len = mmap.len();
        let bad = |what: String| -> anyhow::Error {
            anyhow::anyhow!(
                "parameters file {} is truncated or corrupt: {what} (file is {len} bytes)",
                path.display()
            )
        };
        let read_u32 = |at: usize, what: &str| -> Result<usize> {
            let bytes = mmap
                .get(at..at + 4)
                .ok_or_else(|| bad(format!("no room for the {what} count at byte {at}")))?;
            Ok(u32::from_be_bytes(bytes.try_into().unwrap()) as usize)
        };
        let section = |name: &'static str, at: usize, point_size: usize| -> Result<Section> {
            let count = read_u32(at, name)?;
            let s = Section {
                name,
                offset: at + 4,
                count,
                point_size,
            };
            if s.end() > len {
                return Err(bad(format!(
                    "section '{name}' declares {count} points ({} bytes) but only {} bytes remain",
                    count * point_size,
                    len.saturating_sub(s.offset)
                )));
            }
            Ok(s)
        };

        let ic = section("ic", VK_FIXED, G1_SIZE)?;
        check_vk_encoding(&mmap[..ic.end()]).map_err(|e| bad(format!("verifying key: {e}")))?;
        let vk = VerifyingKey::<Bls12>::read(&mmap[..ic.end()])
            .map_err(|e| bad(format!("verifying key does not decode: {e}")))?;
        let h = section("h", ic.end(), G1_SIZE)?;
        let l = section("l", h.end(), G1_SIZE)?;
        let a = section("a", l.end(), G1_SIZE)?;
        let b_g1 = section("b_g1", a.end(), G1_SIZE)?;
        let b_g2 = section("b_g2", b_g1.end(), G2_SIZE)?;
        if b_g2.end() != len {
            return Err(bad(format!(
                "{} bytes follow the last section",
                len - b_g2.end()
            )));
        }
        ensure!(
            (h.count + 1).is_power_of_two(),
            "parameters file {} is corrupt: section 'h' has {} points, which is not 2^k − 1",
            path.display(),
            h.count
        );
        ensure!(
            b_g1.count == b_g2.count,
            "parameters file {} is corrupt: b_g1 has {} points but b_g2 has {}",
            path.display(),
            b_g1.count,
            b_g2.count
        );
        Ok(Self {
            path: path.to_owned(),
            vk_ic_count: ic.count,
            _named: crate::signals::Mapped::register(&mmap, path),
            mmap,
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    pub fn file_len(&self) -> usize {
        self.mmap.len()
    }

    /// Drops the mapped pages from this process once their points live elsewhere (the
    /// GPU's resident copy): they stay in the page cache, and a later read faults them in
    /// again, but they no longer count in the process's resident memory (47 GB at 32GiB).
    pub(crate) fn release_pages(&self) {
        // SAFETY: the mapping is a read-only view of a file: MADV_DONTNEED discards only
        // this process's page table entries, and later reads see the file's bytes again.
        if let Err(e) = unsafe {
            self.mmap
                .unchecked_advise(memmap2::UncheckedAdvice::DontNeed)
        } {
            log::debug!("madvise(DONTNEED) on the parameters: {e}");
        }
    }

    /// The raw bytes of the verifying key, as a `.vk` file holds them.
    /// The whole mapped file (for its digest).
    pub fn file_bytes(&self) -> &[u8] {
        &self.mmap
    }

    pub(crate) fn vk_bytes(&self) -> &[u8] {
        &self.mmap[..self.h.offset - 4]
    }

    /// The raw mapped bytes of a section's points (for backends that decode themselves).
    pub fn section_bytes(&self, s: &Section) -> &[u8] {
        &self.mmap[s.offset..s.end()]
    }

    /// FFT domain size these parameters were made for.
    pub fn domain_size(&self) -> usize {
        self.h.count + 1
    }

    /// Checked before any heavy work: the C1's public inputs fit the verifying key.
    pub(crate) fn check_public_inputs(&self, public_inputs: usize) -> Result<()> {
        ensure!(
            self.vk_ic_count == public_inputs + 1,
            "parameters {} do not match the C1: the verifying key has {} input points but the \
             circuit has {} public inputs (+1); are they for another sector size or proof type?",
            self.path.display(),
            self.vk_ic_count,
            public_inputs
        );
        Ok(())
    }

    /// Checked after synthesis, before proving: every section count against the circuit.
    pub(crate) fn check_circuit(&self, shape: &Shape) -> Result<()> {
        let expect = [
            (&self.h, shape.domain - 1, "domain size − 1"),
            (&self.l, shape.aux, "aux variables"),
            (
                &self.a,
                shape.inputs + shape.a_aux_density,
                "inputs + A aux density",
            ),
            (
                &self.b_g1,
                shape.b_input_density + shape.b_aux_density,
                "B input + aux density",
            ),
            (
                &self.b_g2,
                shape.b_input_density + shape.b_aux_density,
                "B input + aux density",
            ),
        ];
        for (s, want, what) in expect {
            if s.count != want {
                bail!(
                    "parameters {} do not match the circuit: section '{}' has {} points, the \
                     circuit needs {} ({}); are they for another sector size or proof type?",
                    self.path.display(),
                    s.name,
                    s.count,
                    want,
                    what
                );
            }
        }
        ensure!(
            self.vk_ic_count == shape.inputs,
            "parameters {} do not match the circuit: {} ic points for {} inputs",
            self.path.display(),
            self.vk_ic_count,
            shape.inputs
        );
        Ok(())
    }

    /// Decodes points `range` of section `s` in parallel (curve check, no subgroup check,
    /// as bellperson does for mapped parameters).
    pub fn points<P: SrsPoint>(&self, s: &Section, range: Range<usize>) -> Result<Vec<P>> {
        let size = std::mem::size_of::<P::Uncompressed>();
        assert_eq!(
            size, s.point_size,
            "point type does not match section {}",
            s.name
        );
        assert!(range.end <= s.count);
        let bytes = self.section_bytes(s);
        range
            .into_par_iter()
            .with_min_len(1 << 12)
            .map(|i| {
                let mut repr = P::Uncompressed::default();
                repr.as_mut()
                    .copy_from_slice(&bytes[i * size..(i + 1) * size]);
                let p: Option<P> = P::from_uncompressed_unchecked(&repr).into();
                match p {
                    Some(p) if !bool::from(p.is_identity()) => Ok(p),
                    _ => bail!(
                        "parameters file {} is corrupt: point {i} of section '{}' is not a valid \
                         curve point",
                        self.path.display(),
                        s.name
                    ),
                }
            })
            .collect()
    }
}
