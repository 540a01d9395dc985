//! Whether one transcript extends another, read from two streams at once:
//! the committed transcript's bytes must be the staged one's first bytes,
//! and only what the staged one adds is kept (issue 35: a hook checks a
//! one-record append to a million records without holding either file).

use std::io::{self, Read};

use crate::doc::hash::sha256_hex;

/// What a staged transcript adds to the committed one it extends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extension {
    /// Lines of the committed transcript.
    pub lines: usize,
    /// sha256 of its last line (`\n` included); None when it is empty.
    pub last_line_sha256: Option<String>,
    /// The bytes after it.
    pub tail: Vec<u8>,
}

/// The buffers' size once the streams prove long; they start at
/// [`FIRST_CHUNK`] and double while reads fill them, so a hook checking a
/// few small transcripts does not zero 128 KiB for each.
const CHUNK: usize = 64 * 1024;
const FIRST_CHUNK: usize = 4 * 1024;

/// Reads `committed` and `staged` side by side. `Some` when `committed`
/// (empty, or ending with a newline) is a prefix of `staged`; `None` when
/// it is not, or when it ends with a torn line (a caller then reads both
/// whole to say which line differs). Memory: two chunks, the last line and
/// the tail.
pub fn extension(committed: &mut dyn Read, staged: &mut dyn Read) -> io::Result<Option<Extension>> {
    let mut a = vec![0u8; FIRST_CHUNK];
    let mut b = vec![0u8; FIRST_CHUNK];
    let mut lines = 0usize;
    // The bytes since the last newline, and the last complete line.
    let mut current: Vec<u8> = Vec::new();
    let mut last: Vec<u8> = Vec::new();
    loop {
        let n = read_full(committed, &mut a)?;
        if n == 0 {
            break;
        }
        if read_full(staged, &mut b[..n])? < n || a[..n] != b[..n] {
            return Ok(None);
        }
        if n == a.len() && n < CHUNK {
            a.resize(2 * n, 0);
            b.resize(2 * n, 0);
        }
        let chunk = &a[..n];
        let count = memchr::memchr_iter(b'\n', chunk).count();
        if count == 0 {
            current.extend_from_slice(chunk);
            continue;
        }
        lines += count;
        let end = memchr::memrchr(b'\n', chunk).unwrap_or_default();
        match memchr::memrchr(b'\n', &chunk[..end]) {
            Some(start) => {
                last.clear();
                last.extend_from_slice(&chunk[start + 1..=end]);
            }
            None => {
                last = std::mem::take(&mut current);
                last.extend_from_slice(&chunk[..=end]);
            }
        }
        current.clear();
        current.extend_from_slice(&chunk[end + 1..]);
    }
    if !current.is_empty() {
        return Ok(None);
    }
    let mut tail = Vec::new();
    staged.read_to_end(&mut tail)?;
    Ok(Some(Extension {
        lines,
        last_line_sha256: (lines > 0).then(|| sha256_hex(&last)),
        tail,
    }))
}

/// Fills `buf` unless the stream ends first; the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A reader that hands out at most `step` bytes a call (pipes do).
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// What the whole-file check says: the same answer by other means.
    fn expected(committed: &[u8], staged: &[u8]) -> Option<Extension> {
        if !committed.is_empty() && !committed.ends_with(b"\n") {
            return None;
        }
        let tail = staged.strip_prefix(committed)?;
        let (lines, _) = crate::transcript::split_lines(committed);
        Some(Extension {
            lines: lines.len(),
            last_line_sha256: lines.last().map(|l| sha256_hex(l.raw)),
            tail: tail.to_vec(),
        })
    }

    fn text() -> impl Strategy<Value = Vec<u8>> {
        // Long lines and short ones, so lines cross chunk edges.
        proptest::collection::vec(
            prop_oneof![
                Just(b"\n".to_vec()),
                proptest::collection::vec(b'a'..=b'c', 0..5),
                proptest::collection::vec(b'x'..=b'y', 60_000..140_000),
            ],
            0..6,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn agrees_with_the_whole_file_check(
            committed in text(),
            more in text(),
            cut in any::<prop::sample::Index>(),
            flip in any::<Option<prop::sample::Index>>(),
            step in 1usize..200_000,
        ) {
            let mut staged = [committed.as_slice(), more.as_slice()].concat();
            if let Some(at) = flip {
                // A byte changed anywhere (inside the prefix or after it).
                if !staged.is_empty() {
                    let i = at.index(staged.len());
                    staged[i] ^= 1;
                }
            }
            let short = &committed[..cut.index(committed.len() + 1)];
            for c in [committed.as_slice(), short] {
                let got = extension(&mut Trickle(c, step), &mut Trickle(&staged, step)).unwrap();
                prop_assert_eq!(got, expected(c, &staged));
            }
        }
    }

    #[test]
    fn a_read_error_is_an_error() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("git died"))
            }
        }
        assert!(extension(&mut &b"a\n"[..], &mut Broken).is_err());
        assert!(extension(&mut Broken, &mut &b"a\n"[..]).is_err());
    }
}
