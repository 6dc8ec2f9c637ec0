//! What a signal leaves behind.
//!
//! - **SIGINT, SIGTERM, SIGHUP** (Ctrl-C, a pipeline's timeout, a closed terminal): the
//!   temporary files the run is writing (the proof's, the report's, a 9 GB recording's; all
//!   made by `output::write_file_atomic`) are removed, then the process ends as the signal's
//!   default action would, so the caller still sees "killed by SIGINT". A thread of its own
//!   waits for them (signal-hook's iterator), so the cleanup is ordinary code.
//! - **SIGBUS**: reading a memory-mapped file that was truncated or rewritten in place while
//!   the run uses it (the parameters, a loaded recording) faults. Instead of a silent
//!   kill, the handler writes one line naming the file and exits with status 1. It may only
//!   use async-signal-safe calls, so the mapped ranges and their lines are kept in fixed
//!   atomic slots (no allocation), filled when the file is mapped.
//!
//! SIGKILL cannot be caught: the temporaries of a killed run are never read by the next one
//! (unpredictable names, never a file the prover looks for), only left on disk.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use anyhow::{Context, Result};

static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A temporary file to remove if the run is interrupted; unregistered when dropped (after
/// the file was renamed into place or removed).
pub struct Temporary(PathBuf);

impl Temporary {
    pub fn register(path: &Path) -> Self {
        lock().push(path.to_owned());
        Self(path.to_owned())
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        let mut list = lock();
        if let Some(i) = list.iter().position(|p| *p == self.0) {
            list.swap_remove(i);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Installs both: the interrupt thread and the SIGBUS handler. Once per process.
pub fn install() -> Result<()> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| result = install_interrupts().and_then(|()| install_sigbus()));
    result
}

fn install_interrupts() -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("cannot install the signal handlers")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                for path in lock().drain(..) {
                    let _ = std::fs::remove_file(path);
                }
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        })
        .context("cannot start the signal thread")?;
    Ok(())
}

/// Mapped ranges the SIGBUS handler can name: start, length, and the line to write, in
/// fixed memory (no allocation to leak or free while a handler may read it).
const SLOTS: usize = 8;
const LINE: usize = 512;

struct Slot {
    start: AtomicUsize,
    /// 0: free; `usize::MAX`: being filled; else the mapped length.
    len: AtomicUsize,
    line: [AtomicU8; LINE],
    line_len: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    line: [const { AtomicU8::new(0) }; LINE],
    line_len: AtomicUsize::new(0),
};

static MAPPED: [Slot; SLOTS] = [EMPTY; SLOTS];

/// A mapped file the SIGBUS handler names while this lives.
pub struct Mapped(Option<usize>);

impl Mapped {
    /// Registers `bytes` (a memory map of `path`). With every slot taken the file is not
    /// named, and a fault there gets the generic line.
    pub fn register(bytes: &[u8], path: &Path) -> Self {
        let line = format!(
            "cuzk-prove: error: {} changed or was truncated while in use (a read of its \
             memory map failed); run again once the file is complete\n",
            path.display()
        );
        let line = line.as_bytes();
        for (i, s) in MAPPED.iter().enumerate() {
            if s.len
                .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            // A path too long for the slot keeps its end, the line its newline.
            let cut = &line[line.len().saturating_sub(LINE)..];
            for (d, &b) in s.line.iter().zip(cut) {
                d.store(b, Ordering::Relaxed);
            }
            s.line_len.store(cut.len(), Ordering::Release);
            s.start.store(bytes.as_ptr() as usize, Ordering::Release);
            s.len.store(bytes.len().max(1), Ordering::Release);
            return Self(Some(i));
        }
        Self(None)
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            MAPPED[i].len.store(0, Ordering::Release);
        }
    }
}

/// Installs [`on_sigbus`] with sigaction(2) directly, replacing the standard library's
/// handler rather than chaining to it (as signal-hook's registry would): that handler,
/// finding a fault outside a stack guard page, resets SIGBUS to its default action for the
/// whole process and returns, so a second thread faulting at once (the decoders read the
/// map on every core) was killed by the signal before the first could exit with its line.
/// The standard library's stack-overflow report on Linux comes from SIGSEGV, kept as is.
fn install_sigbus() -> Result<()> {
    // SAFETY: a zeroed sigaction is valid; the handler only reads atomics and calls
    // write(2), pause(2) and _exit(2), all async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = sigbus_handler as *const () as libc::sighandler_t;
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error())
                .context("cannot install the SIGBUS handler");
        }
    }
    Ok(())
}

extern "C" fn sigbus_handler(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO.
    on_sigbus(unsafe { &*info })
}

/// Set by the first faulting thread: the others wait for its exit (one line, status 1).
static FAULTED: AtomicBool = AtomicBool::new(false);

fn on_sigbus(info: &libc::siginfo_t) {
    if FAULTED.swap(true, Ordering::AcqRel) {
        loop {
            // SAFETY: async-signal-safe; the first thread's _exit ends this one.
            unsafe { libc::pause() };
        }
    }
    const GENERIC: &[u8] = b"cuzk-prove: error: a read of a memory-mapped file failed \
        (SIGBUS): a file in use was truncated or changed\n";
    // SAFETY: si_addr is valid for SIGBUS.
    let at = unsafe { info.si_addr() } as usize;
    let mut buf = [0u8; LINE];
    let mut line: &[u8] = GENERIC;
    for s in &MAPPED {
        let (start, n) = (
            s.start.load(Ordering::Acquire),
            s.len.load(Ordering::Acquire),
        );
        if n != 0 && n != usize::MAX && at >= start && at - start < n {
            let len = s.line_len.load(Ordering::Acquire).min(LINE);
            for (d, b) in buf.iter_mut().zip(&s.line).take(len) {
                *d = b.load(Ordering::Relaxed);
            }
            line = &buf[..len];
            break;
        }
    }
    // SAFETY: write(2) and _exit(2) are async-signal-safe; `line` is valid memory.
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
        libc::_exit(1);
    }
}
