//! Whether one transcript extends another, read from two streams at once:
//! the committed transcript's bytes must be the staged one's first bytes,
//! and only what the staged one adds is kept (decision
//! `hook-streams-appends`: a hook checks a one-record append to a million
//! records without holding either file).
//!
//! A committed transcript's [`End`] (its length, BLAKE3 digest, line count
//! and last line's hash) is what a cache keeps of it, so that the next
//! append is checked by reading the staged transcript alone
//! ([`extension_after`], decision `hook-remembers-transcript-ends`).

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

/// How a transcript (empty, or ending with a newline) ends: enough to
/// check that another transcript extends it, and to chain records onto it,
/// without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct End {
    /// Its length in bytes.
    pub bytes: u64,
    /// BLAKE3 of all its bytes: a staged transcript whose first
    /// [`End::bytes`] bytes have this digest starts with this transcript.
    pub blake3: [u8; 32],
    /// Its lines.
    pub lines: usize,
    /// sha256 of its last line (`\n` included); None when it is empty.
    pub last_line_sha256: Option<String>,
}

impl End {
    /// How transcript `t` ends; None when it ends inside a line.
    pub fn of(t: &[u8]) -> Option<End> {
        let empty = End {
            bytes: 0,
            blake3: *blake3::hash(b"").as_bytes(),
            lines: 0,
            last_line_sha256: None,
        };
        empty.followed_by(t, blake3::Hasher::new())
    }

    /// The end of this transcript followed by `tail`, `hasher` having
    /// hashed this transcript's bytes; None when `tail` ends inside a line
    /// (a torn transcript is never remembered).
    fn followed_by(&self, tail: &[u8], mut hasher: blake3::Hasher) -> Option<End> {
        if tail.is_empty() {
            return Some(self.clone());
        }
        let body = tail.strip_suffix(b"\n")?;
        let start = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
        hasher.update(tail);
        Some(End {
            bytes: self.bytes + tail.len() as u64,
            blake3: *hasher.finalize().as_bytes(),
            lines: self.lines + memchr::memchr_iter(b'\n', tail).count(),
            last_line_sha256: Some(sha256_hex(&tail[start..])),
        })
    }
}

/// An [`Extension`] with the [`End`]s of both transcripts, for a cache to
/// remember.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extended {
    /// What the staged transcript adds.
    pub ext: Extension,
    /// How the committed transcript ends.
    pub committed: End,
    /// How the staged one ends; None when it ends inside a line.
    pub staged: Option<End>,
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
    Ok(compare(committed, staged, None)?.map(|(ext, _)| ext))
}

/// [`extension`] with both transcripts' [`End`]s (one BLAKE3 pass over the
/// committed bytes more).
pub fn extension_with_ends(
    committed: &mut dyn Read,
    staged: &mut dyn Read,
) -> io::Result<Option<Extended>> {
    let Some((ext, hasher)) = compare(committed, staged, Some(blake3::Hasher::new()))? else {
        return Ok(None);
    };
    let hasher = hasher.unwrap_or_default();
    let committed = End {
        bytes: hasher.count(),
        blake3: *hasher.finalize().as_bytes(),
        lines: ext.lines,
        last_line_sha256: ext.last_line_sha256.clone(),
    };
    let staged = committed.followed_by(&ext.tail, hasher);
    Ok(Some(Extended {
        ext,
        committed,
        staged,
    }))
}

/// The buffer [`extension_after`] grows to: reading a long prefix a MiB
/// at a time, an inflater copies its 32 KiB window once a MiB instead of
/// every other 64 KiB, and BLAKE3 hashes large runs.
const AFTER_CHUNK: usize = 1 << 20;

/// What `staged` adds to the transcript that ends as `end`, reading only
/// `staged`: its first `end.bytes` bytes must have `end.blake3` as their
/// digest. `None` when they do not (or `staged` is shorter): the caller
/// then compares the transcripts themselves. Memory: one chunk (up to
/// 1 MiB) and the tail.
pub fn extension_after(end: &End, staged: &mut dyn Read) -> io::Result<Option<Extended>> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; FIRST_CHUNK];
    let mut left = end.bytes;
    while left > 0 {
        let want = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
        let n = read_full(staged, &mut buf[..want])?;
        hasher.update(&buf[..n]);
        if n < want {
            return Ok(None);
        }
        left -= n as u64;
        if n == buf.len() && n < AFTER_CHUNK {
            buf.resize(4 * n, 0);
        }
    }
    if hasher.finalize().as_bytes() != &end.blake3 {
        return Ok(None);
    }
    let mut tail = Vec::new();
    staged.read_to_end(&mut tail)?;
    let staged = end.followed_by(&tail, hasher);
    Ok(Some(Extended {
        ext: Extension {
            lines: end.lines,
            last_line_sha256: end.last_line_sha256.clone(),
            tail,
        },
        committed: end.clone(),
        staged,
    }))
}

/// [`extension`], feeding the committed bytes to `hasher` when given.
fn compare(
    committed: &mut dyn Read,
    staged: &mut dyn Read,
    mut hasher: Option<blake3::Hasher>,
) -> io::Result<Option<(Extension, Option<blake3::Hasher>)>> {
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
        if let Some(h) = hasher.as_mut() {
            h.update(chunk);
        }
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
    let ext = Extension {
        lines,
        last_line_sha256: (lines > 0).then(|| sha256_hex(&last)),
        tail,
    };
    Ok(Some((ext, hasher)))
}

/// Fills `buf` unless the stream ends first; the bytes read (a read
/// that was interrupted is retried).
pub fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
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

    /// How `t` ends, computed from its bytes.
    fn end_of(t: &[u8]) -> Option<End> {
        if !t.is_empty() && !t.ends_with(b"\n") {
            return None;
        }
        let (lines, _) = crate::transcript::split_lines(t);
        Some(End {
            bytes: t.len() as u64,
            blake3: *blake3::hash(t).as_bytes(),
            lines: lines.len(),
            last_line_sha256: lines.last().map(|l| sha256_hex(l.raw)),
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
                let want = expected(c, &staged);
                let got = extension(&mut Trickle(c, step), &mut Trickle(&staged, step)).unwrap();
                prop_assert_eq!(&got, &want);
                let ends = extension_with_ends(&mut Trickle(c, step), &mut Trickle(&staged, step))
                    .unwrap();
                prop_assert_eq!(ends.as_ref().map(|e| &e.ext), want.as_ref());
                if let Some(e) = &ends {
                    prop_assert_eq!(Some(e.committed.clone()), end_of(c));
                    prop_assert_eq!(e.staged.clone(), end_of(&staged));
                }
                prop_assert_eq!(End::of(c), end_of(c));
                // Knowing only how the committed transcript ends gives the
                // same answer, reading the staged one alone.
                if let Some(end) = end_of(c) {
                    let after = extension_after(&end, &mut Trickle(&staged, step)).unwrap();
                    prop_assert_eq!(after, ends);
                }
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
        let end = end_of(b"a\n").unwrap();
        assert!(extension_after(&end, &mut Broken).is_err());
    }

    /// A remembered end whose digest is not the staged prefix's, or which
    /// is longer than the staged transcript, proves nothing.
    #[test]
    fn an_end_that_does_not_match_proves_nothing() {
        let staged = b"one\ntwo\nthree\n";
        let mut end = end_of(b"one\ntwo\n").unwrap();
        assert!(extension_after(&end, &mut &staged[..]).unwrap().is_some());
        end.blake3[0] ^= 1;
        assert_eq!(extension_after(&end, &mut &staged[..]).unwrap(), None);
        let long = end_of(b"one\ntwo\nthree\nfour\n").unwrap();
        assert_eq!(extension_after(&long, &mut &staged[..]).unwrap(), None);
        // Another transcript of the same length and lines.
        let other = end_of(b"one\ntwO\n").unwrap();
        assert_eq!(extension_after(&other, &mut &staged[..]).unwrap(), None);
    }
}
