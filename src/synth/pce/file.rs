//! The recording's file, format 3, little-endian:
//!
//! | field | bytes |
//! |---|---|
//! | magic `CUZKPCE3` | 8 |
//! | identity ([`Identity`]): the verifying key's digest, then the circuit's version, each a u64 length and UTF-8 (≤ 1 KiB) | 16 + … |
//! | inputs, aux, rows, distinct coefficients | 4 × 8 |
//! | the coefficient table | 32 each |
//! | A's aux, B's input, B's aux densities: each its length, then its 64-bit words | … |
//! | A, B, C: each zero bytes up to a multiple of 8 from the file's start, its term count, row offsets (u64, rows + 1), columns, coefficient indices (u32) | … |
//! | BLAKE3 of every byte before it | 32 |
//!
//! A recording is used only for the circuit and the parameters it was made for, and only
//! intact: [`Pce::load`] refuses another identity, then hashes the whole file on all
//! threads (BLAKE3's tree: the save's serial hash, in parallel) before reading anything
//! else; the callers record anew and replace a refused file. Files of formats 1
//! (`CUZKPCE1`, no identity, no digest) and 2 (`CUZKPCE2`, arrays not aligned) are
//! refused like damaged ones. [`Pce::probe`] checks the header and the frame in
//! microseconds. Written through an unpredictable temporary file in the same directory,
//! synced, then renamed into place (a reader never sees a partial file, and a mapped file
//! never changes); read through a memory map that the loaded recording keeps: the
//! matrices' arrays, aligned by their padding, are used where they lie (`array.rs`), each
//! checked by all threads; the small rest is decoded.

use std::ops::Range;

use super::array::{Array, MappedFile, Plain};
use super::*;

/// What [`Pce::save`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    Written,
    /// Another run saved the same recording first; its file was kept.
    AlreadyThere,
}

/// What a recording belongs to, written in its header and checked whenever it is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// filecoin-proofs' digest of the verifying key of the parameters it was recorded for
    /// (`input::params_digest::digest`).
    pub vk_digest: String,
    /// The circuit's version: what built its constraint system
    /// (`pipeline::pce_cache::identity`).
    pub circuit: String,
}

impl Identity {
    /// Fails, in one line, unless `found` (a file's) is this one.
    fn check(&self, found: &Identity) -> Result<()> {
        ensure!(
            found.vk_digest == self.vk_digest,
            "recorded for another verifying key (digest {}; these parameters' is {})",
            found.vk_digest,
            self.vk_digest
        );
        ensure!(
            found.circuit == self.circuit,
            "recorded for another circuit ({}; this run's is {})",
            found.circuit,
            self.circuit
        );
        Ok(())
    }
}

/// One named byte range of a recording file ([`Pce::frame`]).
pub type Section = (&'static str, Range<u64>);

const MAGIC: &[u8; 8] = b"CUZKPCE3";
/// Older formats, and what they lacked.
const OLDER: [(&[u8; 8], &str); 2] = [
    (b"CUZKPCE1", "file format 1, without a digest"),
    (
        b"CUZKPCE2",
        "file format 2, its arrays not aligned for use in place",
    ),
];
/// The matrices' arrays start at multiples of this from the file's start.
const ALIGN: u64 = 8;
/// The longest identity field.
const MAX_TEXT: usize = 1024;
/// The longest header: magic, two identity fields, four counts.
const HEADER_MAX: usize = 8 + 2 * (8 + MAX_TEXT) + 32;
/// The BLAKE3 digest that ends the file.
const DIGEST: usize = 32;

/// The file's header: what it is for, and the counts that size its arrays.
struct Header {
    id: Identity,
    inputs: u64,
    aux: u64,
    rows: u64,
    ncoeffs: u64,
    /// Its length in bytes: the arrays start there.
    len: u64,
}

impl Header {
    /// The header at the start of `bytes` (the file's first [`HEADER_MAX`] bytes, or all
    /// of it), its counts held against the file's `size`: a damaged header gives an
    /// error, never an allocation of that size.
    fn parse(bytes: &[u8], size: u64) -> Result<Self> {
        let mut f = Cursor::new(bytes, 0);
        let magic = f.take(8)?;
        for (older, lacks) in OLDER {
            ensure!(magic != older, "written by an older cuzk-prove ({lacks})");
        }
        ensure!(
            magic == MAGIC,
            "not a cuzk-prove PCE file (or another version)"
        );
        let id = Identity {
            vk_digest: f.text()?,
            circuit: f.text()?,
        };
        let (inputs, aux, rows, ncoeffs) = (f.u64()?, f.u64()?, f.u64()?, f.u64()?);
        let fits =
            |count: u64, bytes_each: u64| count.checked_mul(bytes_each).is_some_and(|b| b <= size);
        ensure!(
            inputs < AUX as u64
                && aux < AUX as u64
                && fits(ncoeffs, 32)
                && fits(rows.saturating_add(1), 24),
            "implausible header"
        );
        let len = f.at;
        Ok(Self {
            id,
            inputs,
            aux,
            rows,
            ncoeffs,
            len,
        })
    }

    /// The file's sections after this header, sized by its counts and by the density
    /// lengths and term counts that `u64_at` reads; they must end exactly at `size`.
    fn sections(&self, size: u64, u64_at: impl Fn(u64) -> Result<u64>) -> Result<Vec<Section>> {
        let mut list = vec![("header", 0..self.len)];
        let mut push = |name, len: u64| {
            let at = list.last().map_or(0, |s: &Section| s.1.end);
            list.push((name, at..at.saturating_add(len)));
            at.saturating_add(len)
        };
        let mut at = push("coefficients", self.ncoeffs.saturating_mul(32));
        for (name, len) in DENSITIES.into_iter().zip([self.aux, self.inputs, self.aux]) {
            ensure!(u64_at(at)? == len, "implausible density length");
            at = push(name, 8 + 8 * len.div_ceil(64));
        }
        for names in MATRICES {
            let pad = padding(at);
            let nnz = u64_at(at + pad)?;
            ensure!(nnz < size, "implausible term count");
            // The padding is counted in the row offsets' section.
            push(names[0], pad + 8 + 8 * (self.rows + 1));
            push(names[1], 4 * nnz);
            at = push(names[2], 4 * nnz);
        }
        at = push("digest", DIGEST as u64);
        ensure!(
            at == size,
            "the file is {size} bytes, its counts say {at} (cut short or damaged)"
        );
        Ok(list)
    }
}

const DENSITIES: [&str; 3] = ["A aux density", "B input density", "B aux density"];
const MATRICES: [[&str; 3]; 3] = [
    ["A row offsets", "A columns", "A coefficient indices"],
    ["B row offsets", "B columns", "B coefficient indices"],
    ["C row offsets", "C columns", "C coefficient indices"],
];

/// Zero bytes from file offset `at` to the next multiple of [`ALIGN`].
fn padding(at: u64) -> u64 {
    at.next_multiple_of(ALIGN) - at
}

/// BLAKE3 of `bytes`, hashed by all threads of the current pool.
fn digest(bytes: &[u8]) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    h.update_rayon(bytes);
    h.finalize()
}

/// A writer that hashes what it passes on (serially: the save has a thread of its own).
struct Hashing<W> {
    inner: W,
    hash: blake3::Hasher,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(b)?;
        self.hash.update(&b[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl Pce {
    /// Writes the recording for `id` to `path`, its digest last: into a temporary file of
    /// unpredictable name in the same directory (created exclusively, never through a
    /// planted link), synced, then renamed into place and the directory synced. A reader
    /// never sees a partial file. With `replace` false an existing file wins: two runs
    /// recording at once keep the first one's file (the same bytes) and the loser's
    /// temporary file is removed.
    pub fn save(&self, path: &Path, replace: bool, id: &Identity) -> Result<Saved> {
        let written = crate::output::write_file_atomic(path, replace, |tmp| {
            let hashing = Hashing {
                inner: tmp.as_file_mut(),
                hash: blake3::Hasher::new(),
            };
            let mut f = BufWriter::with_capacity(1 << 22, hashing);
            self.write_to(&mut f, id)?;
            let Hashing { inner, hash } = f.into_inner().map_err(|e| e.into_error())?;
            inner.write_all(hash.finalize().as_bytes())?;
            // Readable by every user, as the parameters beside it are, whatever the umask.
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))?;
            Ok(())
        })?;
        Ok(match written {
            true => Saved::Written,
            false => Saved::AlreadyThere,
        })
    }

    /// Everything but the digest.
    fn write_to(&self, f: &mut impl Write, id: &Identity) -> Result<()> {
        let f = &mut Tally { inner: f, at: 0 };
        f.write_all(MAGIC)?;
        for text in [&id.vk_digest, &id.circuit] {
            ensure!(
                text.len() <= MAX_TEXT,
                "an identity field of {} bytes (at most {MAX_TEXT})",
                text.len()
            );
            f.write_all(&(text.len() as u64).to_le_bytes())?;
            f.write_all(text.as_bytes())?;
        }
        for x in [self.inputs, self.aux, self.constraints(), self.coeffs.len()] {
            f.write_all(&(x as u64).to_le_bytes())?;
        }
        for c in &self.coeffs {
            f.write_all(&c.to_repr())?;
        }
        for d in [
            &self.a_aux_density,
            &self.b_input_density,
            &self.b_aux_density,
        ] {
            f.write_all(&(d.len() as u64).to_le_bytes())?;
            write_all(f, d.words())?;
        }
        for m in [&self.a, &self.b, &self.c] {
            f.write_all(&vec![0u8; padding(f.at) as usize])?;
            f.write_all(&(m.cols.len() as u64).to_le_bytes())?;
            write_all(f, &m.row_start)?;
            write_all(f, &m.cols)?;
            write_all(f, &m.coeffs)?;
        }
        Ok(())
    }

    /// Checks a recording file's header and frame without reading its arrays: the magic,
    /// the identity `id`, and a length that is exactly what its counts say (a file cut
    /// short, with bytes appended or for another circuit fails here in microseconds; the
    /// digest and the arrays are checked by [`Self::load`]).
    pub fn probe(path: &Path, id: &Identity) -> Result<()> {
        frame(path, Some(id)).map(drop)
    }

    /// A recording file's identity and named byte ranges, from its header and frame (as
    /// [`Self::probe`] reads them, whatever the identity): for tests that damage one.
    #[doc(hidden)]
    pub fn frame(path: &Path) -> Result<(Identity, Vec<Section>)> {
        frame(path, None)
    }

    /// Reads the recording for `id` that [`Self::save`] wrote. The file is memory-mapped,
    /// its identity checked, the whole of it hashed by all threads of the current pool,
    /// and the recording returned keeps the mapping: its matrices are the file's bytes,
    /// not a copy (a 32GiB recording is 9 GB: read through one buffer it took 10.5 s on
    /// the H200 host, the whole run's first critical step once witnesses became fast;
    /// then, decoded into vectors by all threads, 1.1–1.3 s; docs/PERF.md).
    pub fn load(path: &Path, id: &Identity) -> Result<Self> {
        let read = || -> Result<Self> {
            ensure!(std::fs::metadata(path)?.is_file(), "not a regular file");
            // Every read below is bounds checked against the mapping's length; the
            // arrays are used after this check for the rest of the run (see array.rs).
            let map = MappedFile::new(std::fs::File::open(path)?, path)?;
            let bytes = map.bytes();
            let h = Header::parse(bytes, bytes.len() as u64)?;
            id.check(&h.id)?;
            let body = bytes
                .len()
                .checked_sub(DIGEST)
                .filter(|&n| n as u64 >= h.len)
                .context("the file ends early")?;
            let (body, stored) = bytes.split_at(body);
            ensure!(
                digest(body) == *stored,
                "its bytes do not match their digest (damaged)"
            );
            Self::decode(Cursor::new(&body[h.len as usize..], h.len), &h, &map)
        };
        read().with_context(|| format!("pre-compiled constraint system {}", path.display()))
    }

    /// The arrays after header `h`: the matrices' in `map` where they lie, the rest
    /// decoded; each checked by all threads (densities of the variable counts, row
    /// offsets in order, columns and coefficient indices in range): an intact file of a
    /// buggy writer still gives an error, not a panic.
    fn decode(mut f: Cursor, h: &Header, map: &Arc<MappedFile>) -> Result<Self> {
        let coeffs = f
            .take(h.ncoeffs as usize * 32)?
            .chunks_exact(32)
            .map(|b| {
                let c: Option<Fr> = Fr::from_repr(b.try_into().expect("32 bytes")).into();
                c.context("a coefficient is not a field element")
            })
            .collect::<Result<Vec<_>>>()?;
        let a_aux_density = f.density(h.aux)?;
        let b_input_density = f.density(h.inputs)?;
        let b_aux_density = f.density(h.aux)?;
        let a = f.csr(h, map)?;
        let b = f.csr(h, map)?;
        let c = f.csr(h, map)?;
        ensure!(f.rest.is_empty(), "trailing bytes");
        Ok(Self {
            inputs: h.inputs as usize,
            aux: h.aux as usize,
            a,
            b,
            c,
            coeffs,
            a_aux_density,
            b_input_density,
            b_aux_density,
        })
    }
}

/// The identity and frame of the file at `path` ([`Header::sections`]), its identity held
/// against `id` when given.
fn frame(path: &Path, id: Option<&Identity>) -> Result<(Identity, Vec<Section>)> {
    use std::os::unix::fs::FileExt;
    let check = || -> Result<(Identity, Vec<Section>)> {
        // Before opening: a FIFO would block the open.
        ensure!(std::fs::metadata(path)?.is_file(), "not a regular file");
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        let size = meta.len();
        let mut head = vec![0u8; size.min(HEADER_MAX as u64) as usize];
        file.read_exact_at(&mut head, 0)
            .context("the file ends early")?;
        let h = Header::parse(&head, size)?;
        if let Some(id) = id {
            id.check(&h.id)?;
        }
        let sections = h.sections(size, |at| {
            let mut b = [0u8; 8];
            file.read_exact_at(&mut b, at)
                .context("the file ends early")?;
            Ok(u64::from_le_bytes(b))
        })?;
        Ok((h.id, sections))
    };
    check().with_context(|| format!("pre-compiled constraint system {}", path.display()))
}

/// The file's integers written little-endian (read by [`Plain::from_le`]).
trait Le: Plain {
    const SIZE: usize = std::mem::size_of::<Self>();
    fn put(self, out: &mut Vec<u8>);
}

impl Le for u32 {
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl Le for u64 {
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

const ARRAY_CHUNK: usize = 1 << 16;

fn write_all<T: Le>(f: &mut impl Write, v: &[T]) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(ARRAY_CHUNK * T::SIZE);
    for chunk in v.chunks(ARRAY_CHUNK) {
        bytes.clear();
        chunk.iter().for_each(|x| x.put(&mut bytes));
        f.write_all(&bytes)?;
    }
    Ok(())
}

/// A writer that counts the bytes it passes on (the padding depends on the offset).
struct Tally<'w, W> {
    inner: &'w mut W,
    at: u64,
}

impl<W: Write> Write for Tally<'_, W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(b)?;
        self.at += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The unread rest of a recording, which starts at byte `at` of its file.
struct Cursor<'a> {
    rest: &'a [u8],
    at: u64,
}

impl<'a> Cursor<'a> {
    fn new(rest: &'a [u8], at: u64) -> Self {
        Self { rest, at }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        ensure!(n <= self.rest.len(), "the file ends early");
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        self.at += n as u64;
        Ok(head)
    }

    /// The padding before an aligned array: zero bytes.
    fn padding(&mut self) -> Result<()> {
        let pad = self.take(padding(self.at) as usize)?;
        ensure!(pad.iter().all(|&b| b == 0), "padding that is not zero");
        Ok(())
    }

    /// `n` values of `map`'s, from here on: in place (see `array.rs`).
    fn mapped<T: Plain>(&mut self, n: usize, map: &Arc<MappedFile>) -> Result<Array<T>> {
        let at = self.at as usize;
        let len = n
            .checked_mul(std::mem::size_of::<T>())
            .context("implausible length")?;
        self.take(len)?;
        Array::mapped(map, at..at + len).context("the file ends early")
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(<u64 as Plain>::from_le(self.take(8)?))
    }

    /// An identity field: its length, then UTF-8.
    fn text(&mut self) -> Result<String> {
        let n = self.u64()?;
        ensure!(n <= MAX_TEXT as u64, "implausible header");
        let bytes = self.take(n as usize)?.to_vec();
        String::from_utf8(bytes).ok().context("implausible header")
    }

    /// `n` little-endian values, decoded in parallel into a vector.
    fn array<T: Le>(&mut self, n: usize) -> Result<Vec<T>> {
        let bytes = self.take(n.checked_mul(T::SIZE).context("implausible length")?)?;
        Ok(super::array::decode(bytes))
    }

    /// A density over `len` variables: its length, then its words.
    fn density(&mut self, len: u64) -> Result<Density> {
        ensure!(
            self.u64()? == len,
            "density lengths do not match the variable counts"
        );
        let words = self.array(len.div_ceil(64) as usize)?;
        Density::from_words(words, len as usize)
    }

    /// A matrix of `h.rows` rows in `map`: its padding, term count, row offsets, columns
    /// and coefficient indices, each checked.
    fn csr(&mut self, h: &Header, map: &Arc<MappedFile>) -> Result<Csr> {
        self.padding()?;
        let nnz = self.u64()? as usize;
        let rows = h.rows as usize;
        let row_start: Array<u64> =
            self.mapped(rows.checked_add(1).context("implausible header")?, map)?;
        let cols: Array<u32> = self.mapped(nnz, map)?;
        let coeffs: Array<u32> = self.mapped(nnz, map)?;
        ensure!(
            row_start[0] == 0
                && row_start.par_windows(2).all(|w| w[0] <= w[1])
                && row_start[rows] == nnz as u64,
            "row offsets out of order"
        );
        ensure!(
            cols.par_iter().all(|&c| if c & AUX != 0 {
                ((c & !AUX) as u64) < h.aux
            } else {
                (c as u64) < h.inputs
            }),
            "a column is out of range"
        );
        ensure!(
            coeffs.par_iter().all(|&c| (c as u64) < h.ncoeffs),
            "a coefficient index is out of range"
        );
        Ok(Csr {
            row_start,
            cols,
            coeffs,
        })
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
