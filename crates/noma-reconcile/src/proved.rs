//! What the checkpoint remembers about a transcript it proved (decision
//! `checkpoint-remembers-a-digest`),
//! so the next PR check against the same merge base reads HEAD's
//! transcript once and never the merge base's: the proved blob's length
//! and BLAKE3 digest (HEAD's first bytes must hash to it: the branch
//! rewrote no base record), its line count and last line's sha256 (where
//! the branch's records continue the chain), and the fingerprints of the
//! op_ids its lines carry (a branch record reusing one is left to the
//! whole-file check, which names it).
//!
//! The row is written only after the history was replayed from its first
//! state (`super::checkpoint`), keyed by the blob id and the merge base
//! document's sha256, so it holds what git and replay said about those
//! exact bytes; nothing a branch writes can make one.

use std::io::{self, Read};

use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::prefix::Extension;
use noma_core::transcript::replay::op_id_fingerprint;

/// A proved transcript, as the checkpoint row holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proved {
    /// Its length in bytes.
    pub len: u64,
    /// BLAKE3 of its bytes.
    pub digest: [u8; 32],
    /// Its line count.
    pub lines: usize,
    /// sha256 (hex) of its last line, `\n` included; None when empty.
    pub last_line_sha256: Option<String>,
    /// [`op_id_fingerprint`]s of every op_id its lines carry (a superset
    /// of its records' op_ids), sorted.
    pub op_ids: Vec<u64>,
}

/// The row's encoding version, first byte of [`Proved::encode`].
const VERSION: u8 = 1;

impl Proved {
    /// Whether a line of the proved transcript may carry `op_id`.
    pub(crate) fn may_hold(&self, op_id: &str) -> bool {
        self.op_ids.binary_search(&op_id_fingerprint(op_id)).is_ok()
    }

    /// What `head` adds when its first bytes are the proved transcript's
    /// (digest equal), read once; None when they are not (or it is
    /// shorter). Memory: one chunk and the tail.
    pub(crate) fn extension_of(&self, head: &mut dyn Read) -> io::Result<Option<Extension>> {
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut left = self.len;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = match head.read(&mut buf[..want]) {
                Ok(0) => return Ok(None),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.update(&buf[..n]);
            left -= n as u64;
        }
        if *hasher.finalize().as_bytes() != self.digest {
            return Ok(None);
        }
        let mut tail = Vec::new();
        head.read_to_end(&mut tail)?;
        Ok(Some(Extension {
            lines: self.lines,
            last_line_sha256: self.last_line_sha256.clone(),
            tail,
        }))
    }

    /// The checkpoint row's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(90 + 8 * self.op_ids.len());
        out.push(VERSION);
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.digest);
        out.extend_from_slice(&(self.lines as u64).to_le_bytes());
        match &self.last_line_sha256 {
            Some(h) => {
                out.push(1);
                out.extend_from_slice(h.as_bytes());
            }
            None => out.push(0),
        }
        for f in &self.op_ids {
            out.extend_from_slice(&f.to_le_bytes());
        }
        out
    }

    /// [`Proved::encode`]'s bytes read back; None for anything else.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Proved> {
        let (&version, rest) = bytes.split_first()?;
        if version != VERSION || rest.len() < 49 {
            return None;
        }
        let u64_at = |b: &[u8]| b.try_into().ok().map(u64::from_le_bytes);
        let len = u64_at(&rest[..8])?;
        let digest: [u8; 32] = rest[8..40].try_into().ok()?;
        let lines = usize::try_from(u64_at(&rest[40..48])?).ok()?;
        let (last_line_sha256, rest) = match rest[48] {
            0 => (None, &rest[49..]),
            1 if rest.len() >= 49 + 64 => {
                let hex = std::str::from_utf8(&rest[49..113]).ok()?;
                (Some(hex.to_string()), &rest[113..])
            }
            _ => return None,
        };
        if rest.len() % 8 != 0 {
            return None;
        }
        let op_ids: Vec<u64> = rest.chunks_exact(8).filter_map(u64_at).collect();
        if !op_ids.windows(2).all(|w| w[0] <= w[1]) {
            return None;
        }
        Some(Proved {
            len,
            digest,
            lines,
            last_line_sha256,
            op_ids,
        })
    }
}

/// Builds a [`Proved`] from the bytes a reader passes through
/// ([`Tee`]): one pass, memory one line and the fingerprints.
#[derive(Default)]
pub(crate) struct Builder {
    hasher: blake3::Hasher,
    len: u64,
    lines: usize,
    current: Vec<u8>,
    last: Vec<u8>,
    op_ids: Vec<u64>,
    unreadable: bool,
}

impl Builder {
    fn update(&mut self, mut bytes: &[u8]) {
        self.hasher.update(bytes);
        self.len += bytes.len() as u64;
        while let Some(i) = memchr::memchr(b'\n', bytes) {
            self.current.extend_from_slice(&bytes[..=i]);
            self.line_done();
            bytes = &bytes[i + 1..];
        }
        self.current.extend_from_slice(bytes);
    }

    fn line_done(&mut self) {
        self.lines += 1;
        if !op_ids_of(&self.current, &mut self.op_ids) {
            self.unreadable = true;
        }
        std::mem::swap(&mut self.current, &mut self.last);
        self.current.clear();
    }

    /// The proved transcript, when it ends with a newline and every line
    /// says its op_ids.
    pub(crate) fn finish(mut self) -> Option<Proved> {
        if !self.current.is_empty() || self.unreadable {
            return None;
        }
        self.op_ids.sort_unstable();
        self.op_ids.dedup();
        Some(Proved {
            len: self.len,
            digest: *self.hasher.finalize().as_bytes(),
            lines: self.lines,
            last_line_sha256: (self.lines > 0).then(|| sha256_hex(&self.last)),
            op_ids: self.op_ids,
        })
    }
}

/// A reader that shows a [`Builder`] every byte it passes on.
pub(crate) struct Tee<'a, R> {
    /// Where the bytes come from.
    pub inner: R,
    /// What sees them.
    pub builder: &'a mut Builder,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.builder.update(&buf[..n]);
        Ok(n)
    }
}

/// Adds the fingerprints of the op_ids `line` carries: the value of
/// every `…op_id":"…"` pair in it (`op_id`, `parent_op_id` — a copy's
/// origin — and nested ones: a superset is only cautious). A line with
/// such a key not in that plain form (a space, an escape) is parsed as
/// well; false when it does not parse.
fn op_ids_of(line: &[u8], out: &mut Vec<u64>) -> bool {
    const KEY: &[u8] = b"op_id\"";
    let mut keys = 0;
    let mut plain = 0;
    for at in memchr::memmem::find_iter(line, KEY) {
        keys += 1;
        let Some(value) = line[at + KEY.len()..].strip_prefix(b":\"") else {
            continue;
        };
        let Some(v) = memchr::memchr(b'"', value).map(|end| &value[..end]) else {
            continue;
        };
        if !v.contains(&b'\\') {
            plain += 1;
            out.push(op_id_fingerprint(&String::from_utf8_lossy(v)));
        }
    }
    if keys > 0 && plain == keys && memchr::memmem::find(line, b"\\u").is_none() {
        return true;
    }
    #[derive(serde::Deserialize)]
    struct Ids {
        op_id: String,
        parent_op_id: Option<String>,
    }
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    match serde_json::from_slice::<Ids>(body) {
        Ok(r) => {
            out.push(op_id_fingerprint(&r.op_id));
            out.extend(r.parent_op_id.as_deref().map(op_id_fingerprint));
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_core::transcript::prefix::extension;

    const A: &[u8] =
        b"{\"op_id\":\"a1\",\"x\":1}\n{\"op_id\": \"b2\",\"y\":{\"op_id\":\"c3\"},\"parent_op_id\":\"e5\"}\n";

    fn proved(bytes: &[u8]) -> Option<Proved> {
        let mut b = Builder::default();
        std::io::copy(
            &mut Tee {
                inner: bytes,
                builder: &mut b,
            },
            &mut std::io::sink(),
        )
        .unwrap();
        b.finish()
    }

    #[test]
    fn the_digest_path_says_what_the_two_stream_comparison_says() {
        let p = proved(A).expect("proved");
        assert!(["a1", "b2", "c3", "e5"].iter().all(|o| p.may_hold(o)));
        assert!(!p.may_hold("d4"));
        assert_eq!(Proved::decode(&p.encode()), Some(p.clone()));
        let head = [A, b"{\"op_id\":\"d4\"}\n"].concat();
        let slow = extension(&mut &A[..], &mut &head[..]).unwrap();
        assert_eq!(p.extension_of(&mut &head[..]).unwrap(), slow);
        // A rewritten history line, a shorter HEAD: no extension.
        let mut rewritten = head.clone();
        rewritten[12] = b'9';
        assert_eq!(p.extension_of(&mut &rewritten[..]).unwrap(), None);
        assert_eq!(p.extension_of(&mut &A[..10]).unwrap(), None);
        // A torn last line or a line that is no record proves nothing.
        assert_eq!(proved(&A[..A.len() - 1]), None);
        assert_eq!(proved(b"not json\n"), None);
        assert!(Proved::decode(&p.encode()[..20]).is_none());
        let empty = proved(b"").expect("empty");
        assert_eq!(Proved::decode(&empty.encode()), Some(empty));
    }
}
