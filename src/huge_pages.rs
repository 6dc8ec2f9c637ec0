//! `--huge-pages`: the process's large heap blocks are backed by transparent huge pages
//! where the kernel allows it (`madvise` mode, the common default).
//!
//! Why: every 32GiB partition's witness (its aux assignment alone is 4.2 GB) is written
//! into fresh memory, and with 4 KiB pages each run took ~12 M page faults and 33–41 s of
//! system time on the H200 host (16 cores), the kernel clearing pages on the cores that
//! synthesis, the SRS upload's staging copies and the recording's load share. With 2 MiB
//! pages (the same as `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, measured there: system
//! time 16–18 s, wall median −1.5 to −2.3 s, docs/PERF.md) a fault clears 512 pages at
//! once.
//!
//! How: [`HugePages`] is the binary's global allocator. Blocks of at least
//! [`MIN_BLOCK`] bytes get a mapping of their own (`mmap`, grown by `mremap`, freed by
//! `munmap`, as glibc serves blocks this large) and, with the switch on, the advice
//! `madvise(MADV_HUGEPAGE)` on the whole mapping before anything is written to it; the
//! advice stays with the mapping when `mremap` grows or moves it. Everything smaller goes
//! to the system allocator. Routing is by size alone (a block's layout at `dealloc` is its
//! layout at `alloc`), so turning the switch mid-run is safe. Letting glibc map the large
//! blocks and advising them afterwards does not work: a vector growing past the threshold
//! is copied into its new mapping inside `realloc`, before any advice, and an advised
//! part of a mapping splits it, after which glibc can no longer `mremap` it and copies
//! every later growth too (measured: 2.0 M of 5.0 M faults left). A kernel without
//! transparent huge pages refuses the advice and the mapping stays on small pages; a
//! kernel set to `never` ignores it, one set to `always` needs none.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Blocks from this size on get a mapping of their own (glibc's largest mmap threshold).
pub const MIN_BLOCK: usize = 32 << 20;

const PAGE: usize = 4096;

/// Mapped lengths are whole huge pages: the kernel (6.7 on) places such anonymous mappings
/// on a 2 MiB boundary, so no head or tail of the block is left on small pages, and
/// mremap can move them page by page. A pure function of the size, like all the
/// bookkeeping here.
const HUGE_PAGE: usize = 2 << 20;

static ON: AtomicBool = AtomicBool::new(true);

/// Turns the advice on or off for mappings made from now on (`--huge-pages on|off`).
pub fn set(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Whether mappings made now are advised.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The system allocator, with large blocks on advised mappings of their own (see the
/// module).
pub struct HugePages;

/// Whether a block of this layout is (or is to be) a mapping of its own: large, and
/// aligned no more strictly than a page (mmap's guarantee).
fn mapped(layout: &Layout) -> bool {
    layout.size() >= MIN_BLOCK && layout.align() <= PAGE
}

fn pages(size: usize) -> usize {
    size.next_multiple_of(HUGE_PAGE)
}

/// A new zeroed mapping of `size` bytes, advised when the switch is on; null if refused.
fn map(size: usize) -> *mut u8 {
    // SAFETY: a fresh private anonymous mapping; no existing memory is involved.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            pages(size),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    if on() {
        // SAFETY: the whole of the mapping just made; the advice changes how later faults
        // are served, never the contents. Refused on kernels without THP: no matter.
        unsafe { libc::madvise(p, pages(size), libc::MADV_HUGEPAGE) };
    }
    p as *mut u8
}

impl HugePages {
    /// `ptr`'s bytes (as many as both layouts hold) in a new block of `new_layout`, the
    /// old block freed; null, the old block intact, if the new one cannot be had.
    unsafe fn moved(&self, ptr: *mut u8, layout: Layout, new_layout: Layout) -> *mut u8 {
        let p = self.alloc(new_layout);
        if !p.is_null() {
            std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_layout.size()));
            self.dealloc(ptr, layout);
        }
        p
    }
}

// SAFETY: blocks below MIN_BLOCK (or aligned beyond a page) are the system allocator's,
// with the same arguments. Larger ones are page-aligned private mappings of at least
// their size, zeroed by the kernel, unmapped with the size of their layout (the same
// rounding as at mapping), grown or shrunk by mremap (which keeps the contents; when it
// fails the old mapping is intact: a growth then maps anew and copies, a shrink returns
// null), and copied across when a block changes sides of the threshold.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match mapped(&layout) {
            true => map(layout.size()),
            false => System.alloc(layout),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match mapped(&layout) {
            true => map(layout.size()), // the kernel's pages are zero
            false => System.alloc_zeroed(layout),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match mapped(&layout) {
            true => {
                libc::munmap(ptr as *mut libc::c_void, pages(layout.size()));
            }
            false => System.dealloc(ptr, layout),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        match (mapped(&layout), mapped(&new_layout)) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => {
                // The kernel moves the pages (no copy, no faults); the advice goes along.
                let p = libc::mremap(
                    ptr as *mut libc::c_void,
                    pages(layout.size()),
                    pages(new_size),
                    libc::MREMAP_MAYMOVE,
                );
                if p != libc::MAP_FAILED {
                    return p as *mut u8;
                }
                if new_size <= layout.size() {
                    return std::ptr::null_mut(); // the block stays as it was
                }
                // Refused (the mapping split by someone's mprotect or mlock, or the
                // process's map count at its limit): a new mapping and a copy, as glibc
                // falls back.
                self.moved(ptr, layout, new_layout)
            }
            // Across the threshold: a block of the other kind (advised before it is
            // written).
            _ => self.moved(ptr, layout, new_layout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping that holds `addr`, from /proc/self/smaps.
    fn vm_flags(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                    {
                        inside = (lo..hi).contains(&addr);
                        continue;
                    }
                }
            }
            if inside {
                if let Some(f) = line.strip_prefix("VmFlags:") {
                    return Some(f.trim().to_string());
                }
            }
        }
        None
    }

    /// This thread's minor page faults so far.
    fn minor_faults() -> i64 {
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes the struct it is given.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
        u.ru_minflt
    }

    fn thp_kernel() -> bool {
        std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists()
    }

    fn fill(p: *mut u8, len: usize, seed: u8) {
        for i in (0..len).step_by(4093) {
            unsafe { *p.add(i) = (i as u8).wrapping_add(seed) };
        }
    }

    fn same(p: *const u8, len: usize, seed: u8) -> bool {
        (0..len)
            .step_by(4093)
            .all(|i| unsafe { *p.add(i) } == (i as u8).wrapping_add(seed))
    }

    /// Large blocks are mappings of their own, advised (the kernel shows `hg` among the
    /// mapping's flags), grown by mremap without a copy and still advised, shrunk with
    /// their bytes, zeroed when asked; blocks cross the threshold both ways with their
    /// bytes; with the switch off a new mapping
    /// is not advised; a block below the threshold is the heap's and never advised. One
    /// test: `set` is process-wide.
    #[test]
    fn large_blocks_are_advised_mappings_and_keep_their_bytes() {
        if !thp_kernel() {
            eprintln!("SKIPPED: this kernel has no transparent huge pages");
            return;
        }
        let a = HugePages;
        let hg = |p: *mut u8, len: usize| {
            let f = vm_flags(p as usize + len / 2).expect("the block is in /proc/self/smaps");
            f.split_whitespace().any(|x| x == "hg")
        };
        let layout = |n: usize| Layout::from_size_align(n, 64).unwrap();
        unsafe {
            let p = a.alloc(layout(64 << 20));
            assert!(hg(p, 64 << 20), "a 64 MiB block is not advised");
            fill(p, 64 << 20, 1);
            // Grown by mremap: the pages move, none is copied (a copy of 64 MiB would
            // fault at least 32 times, huge pages or not). This thread's faults only.
            let faults = minor_faults();
            let q = a.realloc(p, layout(64 << 20), 256 << 20);
            let copied = minor_faults() - faults;
            assert!(copied < 32, "growth copied the block ({copied} faults)");
            assert!(
                hg(q, 256 << 20),
                "the block grown to 256 MiB is not advised"
            );
            assert!(same(q, 64 << 20, 1), "growth lost bytes");
            // Shrunk, still a mapping of its own.
            let q = a.realloc(q, layout(256 << 20), 40 << 20);
            assert!(same(q, 40 << 20, 1), "shrinking lost bytes");
            assert!(hg(q, 40 << 20), "the block shrunk to 40 MiB is not advised");
            // Down across the threshold, then up again from the heap.
            let r = a.realloc(q, layout(40 << 20), 1 << 20);
            assert!(
                same(r, 1 << 20, 1),
                "shrinking below the threshold lost bytes"
            );
            let t = a.realloc(r, layout(1 << 20), 48 << 20);
            assert!(
                hg(t, 48 << 20),
                "a block grown past the threshold is not advised"
            );
            assert!(same(t, 1 << 20, 1), "growing past the threshold lost bytes");
            a.dealloc(t, layout(48 << 20));

            let z = a.alloc_zeroed(layout(64 << 20));
            assert!(hg(z, 64 << 20), "a zeroed 64 MiB block is not advised");
            assert!(std::slice::from_raw_parts(z, 64 << 20)
                .iter()
                .all(|&b| b == 0));
            a.dealloc(z, layout(64 << 20));

            set(false);
            let p = a.alloc(layout(64 << 20));
            let off = hg(p, 64 << 20);
            a.dealloc(p, layout(64 << 20));
            set(true);
            assert!(!off, "advised with --huge-pages off");

            // Below the threshold: the heap's. (glibc's own tunable, if set, advises its
            // blocks itself.)
            let p = a.alloc(layout(MIN_BLOCK / 4));
            let advised = hg(p, MIN_BLOCK / 4);
            a.dealloc(p, layout(MIN_BLOCK / 4));
            let glibc_thp = std::env::var("GLIBC_TUNABLES").is_ok_and(|v| v.contains("hugetlb"));
            assert!(!advised || glibc_thp, "an 8 MiB block was advised");
        }
    }
}
