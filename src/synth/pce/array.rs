//! A recording's matrix arrays (row offsets, columns, coefficient indices) either in a
//! vector of their own — recorded, joined, tiled — or where they lie in a loaded file's
//! memory map. A 32GiB recording is 9 GB: copied out of its file it cost a second 9 GB of
//! process memory that cannot be reclaimed (the mapping's pages are page cache, which can)
//! and about half of the load's time (2.2 M fresh pages faulted and written). File format 3
//! aligns the arrays so that they can be used in place (`file.rs`).
//!
//! The mapped form is read-only; `to_mut` copies it into a vector first, as
//! `Cow::to_mut` does, so the recording's builders use one type throughout.
//!
//! The file's bytes are checked once, when loaded (`file.rs`), and read for the rest of
//! the run. cuzk-prove only ever replaces a recording by a rename, which leaves a mapped
//! file as it was; a file written in place by something else while a run uses it is
//! caught by [`MappedFile::unchanged`] (its inode's size and modification time) before the matrices'
//! values are trusted elsewhere: after the GPU's copy, after a host evaluation.

use std::ops::{Deref, Range};
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;

use anyhow::{ensure, Result};

/// Integers whose every bit pattern is a value, read from a little-endian file.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid value: [`Array`] views
/// a file's bytes as `[Self]`.
pub(crate) unsafe trait Plain: Copy + Send + Sync + 'static {
    fn from_le(bytes: &[u8]) -> Self;
}

// SAFETY: plain integers.
unsafe impl Plain for u32 {
    fn from_le(b: &[u8]) -> Self {
        u32::from_le_bytes(b.try_into().expect("4 bytes"))
    }
}

// SAFETY: plain integers.
unsafe impl Plain for u64 {
    fn from_le(b: &[u8]) -> Self {
        u64::from_le_bytes(b.try_into().expect("8 bytes"))
    }
}

/// What identifies a file's contents short of reading them: written in place, its size
/// or its modification time moves. (Not its change time: a rename over its name, as a
/// save of another run does, changes that of the file it unlinks.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
}

impl Stamp {
    fn of(file: &std::fs::File) -> std::io::Result<Self> {
        let m = file.metadata()?;
        Ok(Self {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
        })
    }
}

/// A read-only shared memory map of a file, named to the SIGBUS handler while it lives (a
/// file truncated under the run gives one line naming it, not a crash), with the open
/// file and its [`Stamp`] at mapping time.
pub(crate) struct MappedFile {
    // Unregistered before the unmap (fields drop in order).
    _named: crate::signals::Mapped,
    map: memmap2::Mmap,
    file: std::fs::File,
    stamp: Stamp,
    path: std::path::PathBuf,
}

impl MappedFile {
    /// Maps `file` (opened from `path`).
    pub(crate) fn new(file: std::fs::File, path: &std::path::Path) -> Result<Arc<Self>> {
        let stamp = Stamp::of(&file)?;
        // SAFETY: read-only and shared; a change to the file under the mapping is what
        // `unchanged` reports (see the top of this file), a truncation is the SIGBUS
        // handler's one line.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Arc::new(Self {
            _named: crate::signals::Mapped::register(&map, path),
            map,
            file,
            stamp,
            path: path.to_path_buf(),
        }))
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Fails, in one line naming the file, if it was written since it was mapped: the
    /// values read from it since its check may not be the checked ones.
    pub(crate) fn unchanged(&self) -> Result<()> {
        let now = Stamp::of(&self.file)?;
        ensure!(
            now == self.stamp,
            "pre-compiled constraint system {} changed while in use (written in place by \
             something else); run again, and it is checked anew",
            self.path.display()
        );
        Ok(())
    }

    /// Drops the mapped pages from this process (its resident memory), as once the GPU
    /// has its copy: they stay in the page cache and a later read faults them in again.
    pub(crate) fn release_pages(&self) {
        // SAFETY: a read-only MAP_SHARED view of a file: MADV_DONTNEED discards only this
        // process's page table entries, and later reads see the file's bytes again.
        if let Err(e) = unsafe {
            self.map
                .unchecked_advise(memmap2::UncheckedAdvice::DontNeed)
        } {
            log::debug!("madvise(DONTNEED) on a recording: {e}");
        }
    }
}

/// The little-endian values of `bytes` (a whole number of them), decoded by all threads
/// of the current pool.
pub(crate) fn decode<T: Plain>(bytes: &[u8]) -> Vec<T> {
    use rayon::prelude::*;
    let mut v = Vec::with_capacity(bytes.len() / std::mem::size_of::<T>());
    v.par_extend(
        bytes
            .par_chunks_exact(std::mem::size_of::<T>())
            .map(T::from_le),
    );
    v
}

/// A `[T]` owned or borrowed from a [`MappedFile`].
#[derive(Clone)]
pub(crate) struct Array<T: Plain>(Data<T>);

#[derive(Clone)]
enum Data<T> {
    Owned(Vec<T>),
    Mapped {
        file: Arc<MappedFile>,
        start: usize,
        len: usize,
    },
}

impl<T: Plain> Array<T> {
    /// The values in `file`'s bytes `range`: used in place when they are aligned for `T`
    /// on a little-endian machine, else decoded into a vector (by all threads). None when
    /// the range is outside the file or not a whole number of values.
    pub(crate) fn mapped(file: &Arc<MappedFile>, range: Range<usize>) -> Option<Self> {
        let size = std::mem::size_of::<T>();
        let bytes = file.bytes().get(range.clone())?;
        if !bytes.len().is_multiple_of(size) {
            return None;
        }
        let len = bytes.len() / size;
        let aligned = (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>());
        if aligned && cfg!(target_endian = "little") {
            return Some(Self(Data::Mapped {
                file: Arc::clone(file),
                start: range.start,
                len,
            }));
        }
        Some(Self(Data::Owned(decode(bytes))))
    }

    /// Whether the values are read from a file's mapping (not copied).
    pub(crate) fn is_mapped(&self) -> bool {
        self.file().is_some()
    }

    /// The file whose mapping holds the values, if one does.
    pub(crate) fn file(&self) -> Option<&Arc<MappedFile>> {
        match &self.0 {
            Data::Mapped { file, .. } => Some(file),
            Data::Owned(_) => None,
        }
    }

    /// The vector, the mapped values copied into one first (9 GB at 32GiB: nothing does
    /// this to a loaded recording).
    pub(crate) fn to_mut(&mut self) -> &mut Vec<T> {
        if let Data::Mapped { .. } = self.0 {
            self.0 = Data::Owned(self.to_vec());
        }
        match &mut self.0 {
            Data::Owned(v) => v,
            Data::Mapped { .. } => unreachable!("copied just above"),
        }
    }

    pub(crate) fn push(&mut self, x: T) {
        self.to_mut().push(x)
    }
}

impl<T: Plain> Deref for Array<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.0 {
            Data::Owned(v) => v,
            // SAFETY: `mapped` checked that the range lies in the mapping, holds `len`
            // values and is aligned for T; any bit pattern is a T (Plain: u32, u64) and
            // the file is little-endian like the machine. The mapping lives as long as
            // the Arc, and the recording's file is only ever replaced by a rename, never
            // written in place, so the bytes do not change under the slice.
            Data::Mapped { file, start, len } => unsafe {
                std::slice::from_raw_parts(file.bytes().as_ptr().add(*start) as *const T, *len)
            },
        }
    }
}

impl<T: Plain> From<Vec<T>> for Array<T> {
    fn from(v: Vec<T>) -> Self {
        Self(Data::Owned(v))
    }
}

impl<T: Plain> Default for Array<T> {
    fn default() -> Self {
        Vec::new().into()
    }
}

impl<T: Plain + PartialEq> PartialEq for Array<T> {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl<T: Plain + Eq> Eq for Array<T> {}

impl<T: Plain> std::fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.is_mapped() { "mapped" } else { "owned" };
        write!(f, "Array({} values, {how})", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(bytes: &[u8]) -> (tempfile::TempDir, Arc<MappedFile>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, bytes).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        (dir, MappedFile::new(f, &path).unwrap())
    }

    #[test]
    fn aligned_values_are_read_in_place_and_others_decoded() {
        let mut bytes = Vec::new();
        for x in 0u64..9 {
            bytes.extend_from_slice(&(x * 0x0101_0101_0101).to_le_bytes());
        }
        let (_dir, f) = file(&bytes);
        let a = Array::<u64>::mapped(&f, 8..72).unwrap();
        assert!(a.is_mapped());
        assert_eq!(
            a[..],
            (1u64..9).map(|x| x * 0x0101_0101_0101).collect::<Vec<_>>()[..]
        );
        let b = Array::<u32>::mapped(&f, 4..72).unwrap();
        assert!(b.is_mapped() && b.len() == 17);
        // Misaligned for u64: decoded, the same values.
        let c = Array::<u64>::mapped(&f, 4..68).unwrap();
        assert!(!c.is_mapped());
        let want: Vec<u64> = bytes[4..68]
            .chunks(8)
            .map(<u64 as Plain>::from_le)
            .collect();
        assert_eq!(c[..], want[..]);
        // Outside the file, or not whole values.
        assert!(Array::<u64>::mapped(&f, 8..80).is_none());
        assert!(Array::<u64>::mapped(&f, 8..12).is_none());
    }

    #[test]
    fn a_mutable_borrow_copies_the_mapping_first() {
        let bytes: Vec<u8> = (0u32..4).flat_map(|x| x.to_le_bytes()).collect();
        let (_dir, f) = file(&bytes);
        let mut a = Array::<u32>::mapped(&f, 0..16).unwrap();
        let same = a.clone();
        a.push(4);
        a.to_mut()[0] = 7;
        assert!(!a.is_mapped() && same.is_mapped());
        assert_eq!(a[..], [7, 1, 2, 3, 4]);
        assert_eq!(same[..], [0, 1, 2, 3]);
        assert_eq!(f.bytes(), &bytes[..], "the file's bytes are untouched");
    }

    #[test]
    fn a_file_written_in_place_is_noticed() {
        let (dir, f) = file(&[0u8; 64]);
        f.unchanged().unwrap();
        // Released pages read the file again.
        f.release_pages();
        assert_eq!(f.bytes(), &[0u8; 64]);
        // A rename over it (what a save does) leaves the mapped file as it was.
        let other = dir.path().join("g");
        std::fs::write(&other, [1u8; 64]).unwrap();
        std::fs::rename(&other, dir.path().join("f")).unwrap();
        f.unchanged().unwrap();
        assert_eq!(f.bytes(), &[0u8; 64]);
        // Written in place: the same size, other bytes.
        let (dir, f) = file(&[0u8; 64]);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("f"))
            .and_then(|mut w| std::io::Write::write_all(&mut w, &[2u8; 8]))
            .unwrap();
        let e = format!("{:#}", f.unchanged().unwrap_err());
        assert!(
            e.contains("changed while in use") && e.contains("/f "),
            "{e}"
        );
    }
}
