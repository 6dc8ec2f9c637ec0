//! Panics in the circuit code (storage-proofs' gadgets, on a malformed C1) become one-line
//! errors: the hook keeps the panic's message and location for the log only (debug), and
//! [`catch`] turns a panic of a synthesis step into that step's error. main catches
//! whatever escapes, so no input ends the process with a multi-line report and status 101.

use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::Result;

/// Replaces the default hook (which prints a multi-line report on stderr): the panic's
/// message and location go to the log at debug level (`RUST_LOG=cuzk_prove=debug`).
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        log::debug!("panic at {at}: {}", one_line(&payload(info.payload())));
    }));
}

/// `f`'s result, or its panic as the error "`what`: message" (one line).
pub fn catch<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(anyhow::Error::new(Panicked {
            what: what.to_owned(),
            message: message(&p),
        })),
    }
}

/// A panic caught by [`catch`]: where (`what`, e.g. [`SYNTHESIS`]) and its message.
#[derive(Debug)]
pub(crate) struct Panicked {
    pub what: String,
    pub message: String,
}

impl std::fmt::Display for Panicked {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.message)
    }
}

impl std::error::Error for Panicked {}

/// Whether `e` is (or wraps) a panic of the circuit code on the C1's data.
pub(crate) fn is_synthesis_panic(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<Panicked>()
            .is_some_and(|p| p.what == SYNTHESIS)
    })
}

/// What a synthesis step's panic is called: the circuit code refused the C1's data.
pub(crate) const SYNTHESIS: &str = "the circuit code failed on this C1 (malformed vanilla proofs?)";

/// A caught panic's message, on one line.
pub fn message(p: &Box<dyn std::any::Any + Send>) -> String {
    one_line(&payload(p.as_ref()))
}

fn payload(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Line breaks and control characters as spaces, at most 300 characters.
fn one_line(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect();
    if s.chars().count() > 300 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_one_line_error() {
        install_hook();
        let e = catch("synthesis", || -> Result<()> {
            panic!("index\nout of\rbounds")
        })
        .unwrap_err()
        .to_string();
        assert_eq!(e, "synthesis: index out of bounds");
        let e = catch("x", || -> Result<()> { std::panic::panic_any(7u8) }).unwrap_err();
        assert!(e.to_string().contains("(no message)"));
        assert_eq!(catch("y", || Ok(3)).unwrap(), 3);
        let long = catch("z", || -> Result<()> { panic!("{}", "a".repeat(1000)) }).unwrap_err();
        assert!(long.to_string().chars().count() < 330);
        let _ = std::panic::take_hook();
    }
}
