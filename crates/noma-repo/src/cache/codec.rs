//! The compact binary form of a document's block table, stored as ONE blob
//! per document.
//!
//! One blob beats one SQLite row per block on the read path: a hit is one
//! B-tree lookup plus a linear decode, instead of stepping a statement once
//! per block (measured in `benches/cache.rs`, see `super` docs).
//!
//! Layout (all integers LEB128 varints unless said otherwise):
//!
//! ```text
//! FORMAT(u8 = 1) count
//! count × { id_len id  kind(u8)  name_len+1 (0 = none) name
//!           start  end  sha256(32 raw bytes)  parent (0 = none, i+1 = block i) }
//! checksum(8 bytes LE: foldhash of everything before it)
//! ```
//!
//! The checksum exists because SQLite does not checksum pages: a flipped bit
//! inside the blob would otherwise hand a caller a wrong `baseHash` or span.
//! It guards against accidents, not adversaries (anyone who can write the
//! file can write a valid entry), so a fast 64-bit hash is enough: foldhash
//! reads a 50 KB table in ~2 µs where blake3 took ~20 µs, a tenth of a hit.
//! If a foldhash upgrade changed its output, entries would just be
//! recomputed once (damaged rows are replaced). The
//! decoder treats every byte as untrusted and returns `None` on anything
//! malformed (never panics, never allocates more than the blob can justify).

use noma_core::doc::hash::BlockHash;

const FORMAT: u8 = 1;
const CHECKSUM_LEN: usize = 8;

/// Every node type name, indexed by the kind byte.
const KINDS: [&str; 8] = [
    "section",
    "paragraph",
    "code",
    "list",
    "quote",
    "thematic_break",
    "table",
    "directive",
];

/// Encodes a block table. `None` when a block cannot be represented (an
/// unknown type name or a malformed hash): such documents are not cached.
pub(super) fn encode(blocks: &[BlockHash]) -> Option<Vec<u8>> {
    // ~50 bytes per block for typical ids; one allocation in the common case.
    let mut out = Vec::with_capacity(16 + blocks.len() * 56 + CHECKSUM_LEN);
    out.push(FORMAT);
    put_varint(&mut out, blocks.len() as u64);
    // Parents are always earlier blocks (pre-order), so they are stored as
    // positions; duplicate ids map to any block with that id (same string).
    let mut position: foldhash::HashMap<&str, usize> = Default::default();
    for (i, b) in blocks.iter().enumerate() {
        put_bytes(&mut out, b.id.as_bytes());
        let kind = KINDS.iter().position(|k| *k == b.kind)?;
        out.push(kind as u8);
        match &b.name {
            None => put_varint(&mut out, 0),
            Some(n) => {
                put_varint(&mut out, n.len() as u64 + 1);
                out.extend_from_slice(n.as_bytes());
            }
        }
        put_varint(&mut out, u64::from(b.lines[0]));
        put_varint(&mut out, u64::from(b.lines[1]));
        out.extend_from_slice(&hex_to_bytes(&b.sha256)?);
        match &b.parent {
            None => put_varint(&mut out, 0),
            Some(p) => put_varint(&mut out, *position.get(p.as_str())? as u64 + 1),
        }
        position.entry(b.id.as_str()).or_insert(i);
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum);
    Some(out)
}

/// Decodes a blob written by [`encode`]; `None` if it is damaged.
pub(super) fn decode(blob: &[u8]) -> Option<Vec<BlockHash>> {
    let body_len = blob.len().checked_sub(CHECKSUM_LEN)?;
    let (body, sum) = blob.split_at(body_len);
    if checksum(body) != sum {
        return None;
    }
    let mut r = Reader { buf: body, pos: 0 };
    if r.byte()? != FORMAT {
        return None;
    }
    let count = usize::try_from(r.varint()?).ok()?;
    // Each block takes at least 37 bytes: a corrupt count cannot make us
    // reserve more than the blob justifies.
    if count > body.len() / 37 {
        return None;
    }
    let mut out: Vec<BlockHash> = Vec::with_capacity(count);
    for _ in 0..count {
        let id = r.string()?;
        let kind = *KINDS.get(usize::from(r.byte()?))?;
        let name = match r.varint()? {
            0 => None,
            n => Some(r.str_of_len(usize::try_from(n - 1).ok()?)?),
        };
        let start = u32::try_from(r.varint()?).ok()?;
        let end = u32::try_from(r.varint()?).ok()?;
        let sha256 = bytes_to_hex(r.take(32)?);
        let parent = match r.varint()? {
            0 => None,
            p => Some(out.get(usize::try_from(p - 1).ok()?)?.id.clone()),
        };
        out.push(BlockHash {
            id,
            kind,
            name,
            lines: [start, end],
            sha256,
            parent,
        });
    }
    (r.pos == body.len()).then_some(out)
}

/// The fixed-seed 64-bit checksum of `body`.
fn checksum(body: &[u8]) -> [u8; CHECKSUM_LEN] {
    use std::hash::{BuildHasher, Hasher};
    let mut h = foldhash::quality::FixedState::with_seed(0x6e6f_6d61_6361_6368).build_hasher();
    h.write(body);
    h.finish().to_le_bytes()
}

/// Two lowercase hex digits for every byte value.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 15]];
        i += 1;
    }
    t
};

/// Lowercase hex of raw bytes.
pub(super) fn bytes_to_hex(bytes: &[u8]) -> String {
    // Built on the stack, allocated once: pushing chars one by one made
    // hex the most expensive part of a cache hit (perf, 100 KB document).
    if let Ok(b32) = <&[u8; 32]>::try_from(bytes) {
        let mut buf = [0u8; 64];
        for (pair, &b) in buf.chunks_exact_mut(2).zip(b32) {
            pair.copy_from_slice(&HEX_PAIRS[usize::from(b)]);
        }
        return std::str::from_utf8(&buf)
            .map(str::to_owned)
            .unwrap_or_default();
    }
    let mut v = Vec::with_capacity(bytes.len() * 2);
    for &b in bytes {
        v.extend_from_slice(&HEX_PAIRS[usize::from(b)]);
    }
    String::from_utf8(v).unwrap_or_default()
}

/// Raw bytes of a 64-digit lowercase or uppercase hex sha256.
pub(super) fn hex_to_bytes(hex: &str) -> Option<[u8; 32]> {
    let h = hex.as_bytes();
    if h.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(h.chunks_exact(2)) {
        let hi = char::from(*pair.first()?).to_digit(16)?;
        let lo = char::from(*pair.get(1)?).to_digit(16)?;
        *o = (hi * 16 + lo) as u8;
    }
    Some(out)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    fn str_of_len(&mut self, n: usize) -> Option<String> {
        std::str::from_utf8(self.take(n)?).ok().map(str::to_owned)
    }

    fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.str_of_len(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<BlockHash> {
        let src = noma_sample();
        let doc = noma_core::doc::parse(&src);
        noma_core::doc::hash::block_hashes(&src, &doc)
    }

    fn noma_sample() -> String {
        noma_testutil::synth::document(12)
    }

    #[test]
    fn round_trips_a_real_block_table() {
        let blocks = sample();
        assert!(blocks.iter().any(|b| b.parent.is_some()));
        assert!(blocks.iter().any(|b| b.name.is_some()));
        let blob = encode(&blocks).expect("encodable");
        assert_eq!(decode(&blob), Some(blocks));
    }

    #[test]
    fn empty_table_round_trips() {
        let blob = encode(&[]).expect("encodable");
        assert_eq!(decode(&blob), Some(vec![]));
    }

    #[test]
    fn any_flipped_bit_or_truncation_is_rejected() {
        let blob = encode(&sample()).expect("encodable");
        for i in (0..blob.len()).step_by(7) {
            let mut bad = blob.clone();
            if let Some(b) = bad.get_mut(i) {
                *b ^= 0x10;
            }
            assert_eq!(decode(&bad), None, "flip at {i}");
        }
        for n in [0, 1, 7, 8, 9, blob.len() - 1] {
            assert_eq!(decode(&blob[..n]), None, "truncated to {n}");
        }
    }

    #[test]
    fn garbage_with_valid_checksum_is_rejected_without_panic() {
        // A well-checksummed body that lies about its count and lengths.
        for body in [
            vec![FORMAT, 0xff, 0xff, 0xff, 0xff, 0x0f],
            vec![FORMAT, 1, 200, b'a'],
            vec![FORMAT, 1, 1, b'a', 99],
            vec![2, 0],
            vec![FORMAT, 0, 0],
        ] {
            let mut blob = body.clone();
            blob.extend_from_slice(&checksum(&body));
            assert_eq!(decode(&blob), None, "{body:?}");
        }
    }

    proptest::proptest! {
        // Random bodies with a valid checksum reach the structural decoder:
        // it must refuse or decode, never panic or over-allocate.
        #[test]
        fn random_checksummed_bodies_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let mut blob = body.clone();
            blob.extend_from_slice(&checksum(&body));
            let _ = decode(&blob);
            let mut framed = vec![FORMAT];
            framed.extend_from_slice(&body);
            let sum = checksum(&framed);
            framed.extend_from_slice(&sum);
            let _ = decode(&framed);
        }
    }

    #[test]
    fn unknown_kind_or_bad_hash_is_not_encoded() {
        let mut blocks = sample();
        blocks[0].sha256 = "zz".into();
        assert_eq!(encode(&blocks), None);
        let mut blocks = sample();
        blocks[0].kind = "mystery";
        assert_eq!(encode(&blocks), None);
    }

    #[test]
    fn hex_round_trip() {
        let h = noma_core::doc::hash::sha256_hex(b"abc");
        assert_eq!(bytes_to_hex(&hex_to_bytes(&h).expect("hex")), h);
    }
}
