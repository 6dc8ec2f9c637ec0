//! `--presize`: reserve the assignment vectors at their final size before synthesis.
//!
//! The SRS header fixes the circuit's size: `l` has one point per aux variable, `ic` one
//! per input, and `h` has domain − 1 points with constraints ≤ domain. Reserving up front
//! spares the doubling copies of growing vectors (at 32GiB: five vectors of ~130 M
//! field elements per partition).

//!
//! The counts come from the file, so they are held against what a PoRep circuit can be
//! before anything is reserved (a damaged or sparse file would otherwise ask for hundreds
//! of GB and abort the process), and the reservation itself fails as an error.

use anyhow::{ensure, Result};

use super::SizeHint;
use crate::input::srs::Srs;

/// The largest FFT domain of a PoRep partition circuit (32GiB and 64GiB: 2^27), with room.
const MAX_DOMAIN: usize = 1 << 28;

pub(crate) fn hint_from_srs(srs: &Srs) -> Result<SizeHint> {
    let domain = srs.domain_size();
    ensure!(
        domain.is_power_of_two()
            && domain <= MAX_DOMAIN
            && srs.l.count < domain
            && srs.vk_ic_count < domain,
        "--presize: parameters {} give domain {domain}, {} aux and {} input points, not a \
         PoRep circuit's sizes (run without --presize, or check the file)",
        srs.path.display(),
        srs.l.count,
        srs.vk_ic_count
    );
    Ok(SizeHint {
        constraints: domain,
        inputs: srs.vk_ic_count,
        aux: srs.l.count,
    })
}
