//! `--presize`: reserve the assignment vectors at their final size before synthesis.
//!
//! The SRS header fixes the circuit's size: `l` has one point per aux variable, `ic` one
//! per input, and `h` has domain − 1 points with constraints ≤ domain. Reserving up front
//! spares the doubling copies of growing vectors (at 32GiB: five vectors of ~130 M
//! field elements per partition).

use super::SizeHint;
use crate::input::srs::Srs;

pub(crate) fn hint_from_srs(srs: &Srs) -> SizeHint {
    SizeHint {
        constraints: srs.h.count + 1,
        inputs: srs.vk_ic_count,
        aux: srs.l.count,
    }
}
