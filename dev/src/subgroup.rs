//! `cuzk-dev subgroup-check`: how much a full subgroup check of a parameters file costs
//! (issue 29). Every point of every section decoded with the checked decoder (flags,
//! range, curve and subgroup, as blst's `from_uncompressed`), on all threads; or a sample
//! of each section, with the time the whole section would take. cuzk-prove's decoders
//! skip the subgroup; the proof's own points are checked instead (src/verify.rs).

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};
use blstrs::{G1Affine, G2Affine};
use cuzk_prove::input::srs::{Section, Srs};
use group::UncompressedEncoding;
use rayon::prelude::*;

/// One section's check.
#[derive(Debug, serde::Serialize)]
pub struct Row {
    pub section: &'static str,
    pub points: usize,
    pub checked: usize,
    pub seconds: f64,
    /// The whole section at the sample's rate.
    pub whole_seconds: f64,
}

/// Checks the first `sample` points of each section (all with None), failing at the first
/// point that is not in its subgroup.
pub fn run(params: &Path, sample: Option<usize>) -> Result<Vec<Row>> {
    let srs = Srs::open(params)?;
    let g1 = [srs.h, srs.l, srs.a, srs.b_g1];
    let mut rows: Vec<Row> = g1
        .iter()
        .map(|s| check::<G1Affine>(&srs, s, sample))
        .collect::<Result<_>>()?;
    rows.push(check::<G2Affine>(&srs, &srs.b_g2, sample)?);
    Ok(rows)
}

fn check<P: UncompressedEncoding + Send>(
    srs: &Srs,
    s: &Section,
    sample: Option<usize>,
) -> Result<Row> {
    let n = sample.map_or(s.count, |k| k.min(s.count));
    let bytes = srs.section_bytes(s);
    let t0 = Instant::now();
    let bad = (0..n)
        .into_par_iter()
        .with_min_len(1 << 10)
        .find_first(|&i| {
            let mut repr = P::Uncompressed::default();
            repr.as_mut()
                .copy_from_slice(&bytes[i * s.point_size..(i + 1) * s.point_size]);
            bool::from(P::from_uncompressed(&repr).is_none())
        });
    let seconds = t0.elapsed().as_secs_f64();
    if let Some(i) = bad {
        bail!(
            "point {i} of section '{}' is not in its subgroup (or does not decode)",
            s.name
        );
    }
    Ok(Row {
        section: s.name,
        points: s.count,
        checked: n,
        seconds,
        whole_seconds: seconds * s.count as f64 / n.max(1) as f64,
    })
}
