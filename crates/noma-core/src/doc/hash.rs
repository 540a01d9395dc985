//! Hashes: the document sha256 (§5.4, raw bytes, no normalisation) and the
//! per-block source hash that `baseHash` preconditions compare against:
//! sha256 of the block's lines `startLine..=endLine` joined with `\n`, with
//! no trailing newline, each line as it is in the file: a line ended by
//! `\r\n` keeps its `\r` (as the reference, which splits the raw source on
//! `\n`, so a `baseHash` it computed on a CRLF document is accepted here).
//! A lone `\r` ends a line and is not hashed (the reference's hash of such
//! a document does not follow its own line numbers; no client can rely on
//! it). A leading U+FEFF is not part of line 1.

use sha2::{Digest, Sha256};

use super::ast::{Document, NodeKind};
use super::lines;

/// sha256 of no bytes: the `pre_sha256` of a transcript's genesis record,
/// which starts from the empty document (see `noma record`).
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// One addressable block with its source hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlockHash {
    /// Canonical id.
    pub id: String,
    /// Node type (`section`, `directive`, …).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Directive name, for directives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `[startLine, endLine]`, 1-based inclusive.
    pub lines: [u32; 2],
    /// sha256 of the block's source slice (the `baseHash` to send).
    pub sha256: String,
    /// Canonical id of the nearest ancestor with an id, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// The source hash of lines `start..=end` of `src`.
pub fn slice_hash(src: &str, start: u32, end: u32) -> String {
    let body = src.strip_prefix('\u{feff}').unwrap_or(src);
    SliceHasher::new(body).hash(start, end)
}

/// Hashes line ranges of one source without building the joined slice:
/// with `\n` terminators only, lines `start..=end` joined with `\n` are a
/// contiguous substring of the source; otherwise the lines are fed to the
/// hasher one by one (each with the `\r` of a `\r\n` end) with `\n`
/// between them. Either way nothing is copied, which matters because every
/// line is hashed once per enclosing block.
struct SliceHasher<'a> {
    src: &'a str,
    lines: Vec<lines::Line<'a>>,
    lf_only: bool,
}

impl<'a> SliceHasher<'a> {
    fn new(src: &'a str) -> Self {
        SliceHasher {
            src,
            lines: lines::split(src),
            lf_only: memchr::memchr(b'\r', src.as_bytes()).is_none(),
        }
    }

    fn hash(&self, start: u32, end: u32) -> String {
        let mut h = Sha256::new();
        self.feed(start, end, |b| h.update(b));
        hex(&h.finalize())
    }

    /// Where lines `start..=end` start and end (the last one's
    /// terminator excluded), as [`SliceHasher::feed`] reads them; `(0, 0)`
    /// when it feeds nothing.
    fn bytes(&self, start: u32, end: u32) -> (usize, usize) {
        let s = (start.max(1) - 1) as usize;
        let e = (end as usize).min(self.lines.len());
        match (
            self.lines.get(s),
            e.checked_sub(1).and_then(|i| self.lines.get(i)),
        ) {
            (Some(first), Some(last)) if s < e => (
                first.start_in(self.src),
                last.start_in(self.src) + last.text.len(),
            ),
            _ => (0, 0),
        }
    }

    /// Hands the block's source slice (lines `start..=end`, joined by
    /// `\n`) to `f`, in pieces.
    fn feed(&self, start: u32, end: u32, mut f: impl FnMut(&[u8])) {
        let s = (start.max(1) - 1) as usize;
        let e = (end as usize).min(self.lines.len());
        let (Some(first), Some(last)) = (
            self.lines.get(s),
            e.checked_sub(1).and_then(|i| self.lines.get(i)),
        ) else {
            return;
        };
        if s >= e {
            return;
        }
        if self.lf_only {
            let from = first.start_in(self.src);
            let end_byte = last.start_in(self.src) + last.text.len();
            return f(self.src.as_bytes().get(from..end_byte).unwrap_or_default());
        }
        let bytes = self.src.as_bytes();
        for (k, line) in self.lines[s..e].iter().enumerate() {
            if k > 0 {
                f(b"\n");
            }
            let end = line.start_in(self.src) + line.text.len();
            let crlf = bytes.get(end) == Some(&b'\r') && bytes.get(end + 1) == Some(&b'\n');
            f(&bytes[end - line.text.len()..end + usize::from(crlf)]);
        }
    }
}

fn hex(digest: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(digest.len() * 2);
    for b in digest {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// Every node with a canonical id, in document order, with its source hash.
/// `src` must be the text `doc` was parsed from.
pub fn block_hashes(src: &str, doc: &Document) -> Vec<BlockHash> {
    let mut out = Vec::new();
    walk_blocks(src, doc, |h, node, id, parent| {
        let name = match &node.kind {
            NodeKind::Directive { name, .. } => Some(name.to_string()),
            _ => None,
        };
        out.push(BlockHash {
            id: id.to_string(),
            kind: node.type_name(),
            name,
            lines: [node.span.start, node.span.end],
            sha256: h.hash(node.span.start, node.span.end),
            parent: parent.map(str::to_string),
        });
    });
    out
}

/// One block of [`block_slices`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSlice<'a> {
    /// Canonical id.
    pub id: &'a str,
    /// Canonical id of the nearest ancestor with an id, if any.
    pub parent: Option<&'a str>,
    /// The bytes [`block_hashes`] hashes for this block: borrowed from the
    /// source when its lines end in `\n` only, else joined as the hash
    /// joins them.
    pub bytes: std::borrow::Cow<'a, [u8]>,
}

/// [`block_hashes`]' blocks, in the same order, with the bytes each one's
/// sha256 is taken of instead of the sha256: two versions of a document
/// compared block by block need only say whether the bytes are equal,
/// and hashing every block costs each line once per enclosing block.
pub fn block_slices<'a>(src: &'a str, doc: &'a Document) -> Vec<BlockSlice<'a>> {
    let body = src.strip_prefix('\u{feff}').unwrap_or(src);
    let lf_only = memchr::memchr(b'\r', body.as_bytes()).is_none();
    let mut out = Vec::new();
    walk_blocks(src, doc, |h, node, id, parent| {
        let (start, end) = (node.span.start, node.span.end);
        let bytes = if lf_only {
            // What `feed` hands over in one piece, borrowed for as long
            // as the source lives.
            let (from, to) = h.bytes(start, end);
            std::borrow::Cow::Borrowed(body.as_bytes().get(from..to).unwrap_or_default())
        } else {
            let mut joined = Vec::new();
            h.feed(start, end, |b| joined.extend_from_slice(b));
            std::borrow::Cow::Owned(joined)
        };
        out.push(BlockSlice { id, parent, bytes });
    });
    out
}

/// [`block_hashes`]' blocks as (id, BLAKE3 of the same source slice,
/// parent id): for comparing states, where no `baseHash` is shown and the
/// sha256 of every block of every state would cost more than the rest.
pub fn block_digests(src: &str, doc: &Document) -> Vec<(String, [u8; 32], Option<String>)> {
    let mut out = Vec::new();
    walk_blocks(src, doc, |h, node, id, parent| {
        let mut d = blake3::Hasher::new();
        h.feed(node.span.start, node.span.end, |b| {
            d.update(b);
        });
        out.push((
            id.to_string(),
            *d.finalize().as_bytes(),
            parent.map(str::to_string),
        ));
    });
    out
}

/// One block's [`block_digests`] digest and where its lines are in the
/// source. The digest is a function of the bytes from the first line's
/// start to two bytes past the last line's end (whether that line ends in
/// `\r\n` is hashed): a block over the same lines, with the same bytes
/// there, has the same digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockDigest {
    /// Where the block's first line starts and its last line ends (before
    /// its terminator), in bytes of the source (a leading U+FEFF counted).
    pub bytes: (usize, usize),
    /// BLAKE3 of the block's source slice, as [`block_digests`] has it.
    pub digest: [u8; 32],
}

/// [`block_digests`]' digests, in the same order (the nodes with an id in
/// pre-order, as `doc.walk()` visits them), each with the bytes it depends
/// on. `known(bytes)` may give the digest of a block over the same lines
/// with the same bytes (two past the end included) from an earlier
/// version of the text (an editor's last keystroke): only
/// the blocks it does not know are hashed, so a keystroke costs the blocks
/// around it, not the document.
pub fn block_digests_reusing(
    src: &str,
    doc: &Document,
    mut known: impl FnMut((usize, usize)) -> Option<[u8; 32]>,
) -> Vec<BlockDigest> {
    let bom = src.len() - src.strip_prefix('\u{feff}').unwrap_or(src).len();
    let mut out = Vec::new();
    walk_blocks(src, doc, |h, node, _, _| {
        let (from, to) = h.bytes(node.span.start, node.span.end);
        let bytes = (bom + from, bom + to);
        let digest = known(bytes).unwrap_or_else(|| {
            let mut d = blake3::Hasher::new();
            h.feed(node.span.start, node.span.end, |b| {
                d.update(b);
            });
            *d.finalize().as_bytes()
        });
        out.push(BlockDigest { bytes, digest });
    });
    out
}

/// BLAKE3 digests of line ranges of one source, each the digest
/// [`block_digests`] gives a block spanning those lines; the source's
/// lines are split once, for comparing a few blocks of two states.
pub struct SliceDigests<'a>(SliceHasher<'a>);

impl<'a> SliceDigests<'a> {
    /// The digests of `src` (a leading U+FEFF is not part of line 1).
    pub fn new(src: &'a str) -> Self {
        SliceDigests(SliceHasher::new(
            src.strip_prefix('\u{feff}').unwrap_or(src),
        ))
    }

    /// The digest of lines `start..=end`.
    pub fn digest(&self, start: u32, end: u32) -> [u8; 32] {
        let mut d = blake3::Hasher::new();
        self.0.feed(start, end, |b| {
            d.update(b);
        });
        *d.finalize().as_bytes()
    }
}

/// Calls `f` for every node with a canonical id, in pre-order, with the
/// nearest id-bearing ancestor's id.
fn walk_blocks<'d>(
    src: &str,
    doc: &'d Document,
    mut f: impl FnMut(&SliceHasher<'_>, &'d super::ast::Node, &'d str, Option<&'d str>),
) {
    let hasher = SliceHasher::new(src.strip_prefix('\u{feff}').unwrap_or(src));
    let mut stack: Vec<(Option<&str>, std::slice::Iter<'_, super::ast::Node>)> =
        vec![(None, doc.children.iter())];
    while let Some((parent, iter)) = stack.last_mut() {
        let Some(node) = iter.next() else {
            stack.pop();
            continue;
        };
        let parent = *parent;
        if let Some(id) = &node.id {
            f(&hasher, node, id, parent);
        }
        let kids = node.children();
        if !kids.is_empty() {
            stack.push((node.id.as_deref().or(parent), kids.iter()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::parse;

    #[test]
    fn block_hash_is_sha_of_joined_slice() {
        let src = "# A\n\n::claim{id=\"c\"}\nx\n::\n";
        let doc = parse(src);
        let blocks = block_hashes(src, &doc);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[1].id, "c");
        assert_eq!(blocks[1].parent.as_deref(), Some("a"));
        assert_eq!(blocks[1].sha256, sha256_hex(b"::claim{id=\"c\"}\nx\n::"));
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(sha256_hex(b""), EMPTY_SHA256);
    }

    /// Lines `start..=end` as the file has them (a CRLF line keeps its
    /// `\r`, a lone CR is a terminator), joined with `\n`: the definition
    /// the zero-copy hasher must agree with.
    fn joined_as_in_file(body: &str, start: u32, end: u32) -> String {
        let mut lines: Vec<String> = Vec::new();
        for piece in body.split('\n') {
            let (rest, cr) = match piece.strip_suffix('\r') {
                Some(r) => (r, true),
                None => (piece, false),
            };
            let mut parts: Vec<String> = rest.split('\r').map(str::to_string).collect();
            if cr {
                parts.last_mut().expect("split yields one").push('\r');
            }
            lines.extend(parts);
        }
        let s = (start.max(1) - 1) as usize;
        let e = (end as usize).min(lines.len());
        if s >= e {
            return String::new();
        }
        lines[s..e].join("\n")
    }

    /// The reusing walk hashes as `block_digests` does, and what it is
    /// told it knows (for the bytes it names) is taken as it is.
    #[test]
    fn digests_reusing_agree_with_block_digests() {
        for src in [
            "# A\n\n::claim{id=\"c\"}\nx\n::\n",
            "\u{feff}# A\r\n\r\n::claim{id=\"c\"}\r\nx\r\n::",
            "# A\r\rb\n::claim{id=\"c\"}\rx\r\n::\r",
        ] {
            let doc = parse(src);
            let plain: Vec<[u8; 32]> = block_digests(src, &doc).iter().map(|b| b.1).collect();
            let fresh = block_digests_reusing(src, &doc, |_| None);
            let got: Vec<[u8; 32]> = fresh.iter().map(|b| b.digest).collect();
            assert_eq!(got, plain, "{src:?}");
            for b in &fresh {
                assert!(b.bytes.0 <= b.bytes.1 && b.bytes.1 <= src.len(), "{src:?}");
            }
            let told = block_digests_reusing(src, &doc, |_| Some([7; 32]));
            assert!(told.iter().all(|b| b.digest == [7; 32]));
            assert_eq!(
                told.iter().map(|b| b.bytes).collect::<Vec<_>>(),
                fresh.iter().map(|b| b.bytes).collect::<Vec<_>>()
            );
        }
    }

    /// Each block's slice is the bytes its `block_hashes` sha256 is of,
    /// with the same id and parent, whatever the line ends and a BOM.
    #[test]
    fn block_slices_are_what_block_hashes_hash() {
        for src in [
            "# A\n\n::claim{id=\"c\"}\nx\n::\n\n## B\n\nText.\n",
            "\u{feff}# A\r\n\r\n::claim{id=\"c\"}\r\nx\r\n::",
            "# A\r\rb\n::claim{id=\"c\"}\rx\r\n::\r",
            "",
        ] {
            let doc = parse(src);
            let hashes = block_hashes(src, &doc);
            let slices = block_slices(src, &doc);
            assert_eq!(slices.len(), hashes.len(), "{src:?}");
            for (s, h) in slices.iter().zip(&hashes) {
                assert_eq!(s.id, h.id, "{src:?}");
                assert_eq!(s.parent, h.parent.as_deref(), "{src:?}");
                assert_eq!(sha256_hex(&s.bytes), h.sha256, "{src:?} {}", s.id);
            }
        }
        // Lines ended by `\n` alone are borrowed from the source.
        let src = "# A\n\nText.\n";
        let doc = parse(src);
        assert!(matches!(
            block_slices(src, &doc)[0].bytes,
            std::borrow::Cow::Borrowed(b"# A\n\nText.")
        ));
    }

    /// CRLF lines are hashed with their `\r`, as the reference does (it
    /// splits the raw source on `\n`): the hash of a CRLF block is sha256
    /// of its bytes without the final line end.
    #[test]
    fn crlf_lines_keep_their_cr() {
        let src = "# T\r\n\r\n::claim{id=\"c\"}\r\nx\r\n::\r\n";
        let doc = parse(src);
        let blocks = block_hashes(src, &doc);
        let c = blocks.iter().find(|b| b.id == "c").expect("claim");
        assert_eq!(c.lines, [3, 5]);
        assert_eq!(c.sha256, sha256_hex(b"::claim{id=\"c\"}\r\nx\r\n::\r"));
        assert_eq!(
            blocks[0].sha256,
            sha256_hex(src.trim_end_matches('\n').as_bytes())
        );
    }

    /// The zero-copy hasher equals sha256 of the lines as in the file for
    /// every range, whatever the line terminators (LF, CRLF, CR, mixed,
    /// BOM, trailing newline or not), including out-of-range spans.
    #[test]
    fn slice_hash_equals_hash_of_joined_lines() {
        for src in [
            "a\nb\n\nc\nd",
            "a\r\nb\r\n\r\nc\r\nd\r\n",
            "a\rb\r\rc",
            "a\nb\r\nc\rd\n",
            "\u{feff}# T\n\npara\n",
            "",
            "\n\n",
        ] {
            let body = src.strip_prefix('\u{feff}').unwrap_or(src);
            let all = lines::split(body);
            for start in 0..=all.len() as u32 + 1 {
                for end in 0..=all.len() as u32 + 2 {
                    let want = sha256_hex(joined_as_in_file(body, start, end).as_bytes());
                    assert_eq!(slice_hash(src, start, end), want, "{src:?} {start}..={end}");
                }
            }
        }
    }
}
