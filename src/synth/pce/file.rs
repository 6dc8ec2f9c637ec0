//! The recording's file: `CUZKPCE1`, four counts, the coefficient table, the three
//! densities and the three CSR matrices, little-endian. Written through an unpredictable
//! temporary file in the same directory, synced, then renamed into place (a reader never
//! sees a partial file); read through a memory map, each array decoded by all threads.

use super::*;

/// What [`Pce::save`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    Written,
    /// Another run saved the same recording first; its file was kept.
    AlreadyThere,
}

const MAGIC: &[u8; 8] = b"CUZKPCE1";

impl Pce {
    /// Writes the recording to `path`: into a temporary file of unpredictable name in the
    /// same directory (created exclusively, never through a planted link), synced, then
    /// renamed into place and the directory synced. A reader never sees a partial file.
    /// With `replace` false an existing file wins: two runs recording at once keep the
    /// first one's file (the same bytes) and the loser's temporary file is removed.
    pub fn save(&self, path: &Path, replace: bool) -> Result<Saved> {
        let written = crate::output::write_file_atomic(path, replace, |tmp| {
            let mut f = BufWriter::with_capacity(1 << 22, tmp.as_file_mut());
            self.write_to(&mut f)?;
            f.flush()?;
            drop(f);
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

    fn write_to(&self, f: &mut impl Write) -> Result<()> {
        f.write_all(MAGIC)?;
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
            f.write_all(&(m.cols.len() as u64).to_le_bytes())?;
            write_all(f, &m.row_start)?;
            write_all(f, &m.cols)?;
            write_all(f, &m.coeffs)?;
        }
        Ok(())
    }

    /// Checks a recording file's frame without reading its arrays: the magic, and a
    /// length that is exactly what its counts say (a file cut short, or with bytes
    /// appended, fails here in microseconds; the arrays are checked by [`Self::load`]).
    pub fn probe(path: &Path) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let check = || -> Result<()> {
            ensure!(std::fs::metadata(path)?.is_file(), "not a regular file");
            let file = std::fs::File::open(path)?;
            let meta = file.metadata()?;
            let size = meta.len();
            let u64_at = |at: u64| -> Result<u64> {
                let mut b = [0u8; 8];
                file.read_exact_at(&mut b, at)
                    .context("the file ends early")?;
                Ok(u64::from_le_bytes(b))
            };
            let mut magic = [0u8; 8];
            file.read_exact_at(&mut magic, 0)
                .context("the file ends early")?;
            ensure!(
                &magic == MAGIC,
                "not a cuzk-prove PCE file (or another version)"
            );
            let (inputs, aux, rows, ncoeffs) = (u64_at(8)?, u64_at(16)?, u64_at(24)?, u64_at(32)?);
            ensure!(
                inputs < AUX as u64 && aux < AUX as u64 && rows < size && ncoeffs < size,
                "implausible header"
            );
            let mut at = 40 + 32 * ncoeffs;
            for len in [aux, inputs, aux] {
                ensure!(u64_at(at)? == len, "implausible density length");
                at += 8 + 8 * len.div_ceil(64);
            }
            for _ in 0..3 {
                let nnz = u64_at(at)?;
                ensure!(nnz < size, "implausible term count");
                at += 8 + 8 * (rows + 1) + 8 * nnz;
            }
            ensure!(
                at == size,
                "the file is {size} bytes, its counts say {at} (cut short or damaged)"
            );
            Ok(())
        };
        check().with_context(|| format!("pre-compiled constraint system {}", path.display()))
    }

    /// Reads a recording written by [`Self::save`]. The file is memory-mapped and each
    /// array decoded by all threads of the current pool (a 32GiB recording is 9 GB: read
    /// through one buffer it took 10.5 s on the H200 host, the whole run's first critical
    /// step once witnesses became fast; docs/PERF.md, session 20).
    pub fn load(path: &Path) -> Result<Self> {
        let read = || -> Result<Self> {
            ensure!(std::fs::metadata(path)?.is_file(), "not a regular file");
            let file = std::fs::File::open(path)?;
            // SAFETY: the cache file is only ever replaced by a rename, never written in
            // place, so the mapping does not change under us; every read below is bounds
            // checked against the mapping's length.
            let map = unsafe { memmap2::Mmap::map(&file)? };
            let _named = crate::signals::Mapped::register(&map, path);
            let size = map.len() as u64;
            // Every count read below is held against the file's size before anything of
            // that size is allocated: a damaged header gives an error, not an abort.
            let fits = |count: u64, bytes_each: u64| {
                count.checked_mul(bytes_each).is_some_and(|b| b <= size)
            };
            let mut f = Cursor(&map[..]);
            ensure!(
                f.take(8)? == MAGIC,
                "not a cuzk-prove PCE file (or another version)"
            );
            let h: Vec<u64> = f.array(4)?;
            let (inputs, aux, rows, ncoeffs) = (h[0], h[1], h[2], h[3]);
            ensure!(
                aux < AUX as u64
                    && inputs < AUX as u64
                    && fits(ncoeffs, 32)
                    && fits(rows.saturating_add(1), 24),
                "implausible header"
            );
            let coeffs = f
                .take(ncoeffs as usize * 32)?
                .chunks_exact(32)
                .map(|b| {
                    let c: Option<Fr> = Fr::from_repr(b.try_into().expect("32 bytes")).into();
                    c.context("a coefficient is not a field element")
                })
                .collect::<Result<Vec<_>>>()?;
            let mut densities = Vec::new();
            for _ in 0..3 {
                let len = f.u64()? as usize;
                ensure!(
                    len <= aux.max(inputs) as usize && fits(len as u64, 1),
                    "implausible density length"
                );
                let words = f.array(len.div_ceil(64))?;
                densities.push(Density::from_words(words, len)?);
            }
            let mut mats = Vec::new();
            for _ in 0..3 {
                let nnz = f.u64()? as usize;
                ensure!(fits(nnz as u64, 8), "implausible term count");
                let row_start: Vec<u64> = f.array(rows as usize + 1)?;
                let cols: Vec<u32> = f.array(nnz)?;
                let cidx: Vec<u32> = f.array(nnz)?;
                ensure!(
                    row_start[0] == 0
                        && row_start.par_windows(2).all(|w| w[0] <= w[1])
                        && row_start[rows as usize] == nnz as u64,
                    "row offsets out of order"
                );
                ensure!(
                    cols.par_iter().all(|&c| if c & AUX != 0 {
                        ((c & !AUX) as u64) < aux
                    } else {
                        (c as u64) < inputs
                    }),
                    "a column is out of range"
                );
                ensure!(
                    cidx.par_iter().all(|&c| (c as u64) < ncoeffs),
                    "a coefficient index is out of range"
                );
                mats.push(Csr {
                    row_start,
                    cols,
                    coeffs: cidx,
                });
            }
            ensure!(f.0.is_empty(), "trailing bytes");
            let (c, b, a) = (
                mats.pop().unwrap(),
                mats.pop().unwrap(),
                mats.pop().unwrap(),
            );
            let (b_aux, b_in, a_aux) = (
                densities.pop().unwrap(),
                densities.pop().unwrap(),
                densities.pop().unwrap(),
            );
            ensure!(
                a_aux.len() == aux as usize
                    && b_aux.len() == aux as usize
                    && b_in.len() == inputs as usize,
                "density lengths do not match the variable counts"
            );
            Ok(Self {
                inputs: inputs as usize,
                aux: aux as usize,
                a,
                b,
                c,
                coeffs,
                a_aux_density: a_aux,
                b_input_density: b_in,
                b_aux_density: b_aux,
            })
        };
        read().with_context(|| {
            format!(
                "pre-compiled constraint system {} is unreadable (delete it to record anew)",
                path.display()
            )
        })
    }
}

/// Fixed-width little-endian integers, for the file's arrays.
trait Le: Copy {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! le {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
        }
    )*};
}
le!(u32, u64);

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

/// The unread rest of a mapped recording.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        ensure!(n <= self.0.len(), "the file ends early");
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::get(self.take(8)?))
    }

    /// `n` little-endian values, decoded in parallel straight into the vector.
    fn array<T: Le + Send>(&mut self, n: usize) -> Result<Vec<T>> {
        let bytes = self.take(n.checked_mul(T::SIZE).context("implausible length")?)?;
        let mut out = Vec::with_capacity(n);
        out.par_extend(bytes.par_chunks_exact(T::SIZE).map(T::get));
        Ok(out)
    }
}
