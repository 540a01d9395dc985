//! Hashes: the document sha256 (§5.4, raw bytes, no normalisation) and the
//! per-block source hash that `baseHash` preconditions compare against:
//! sha256 of the block's lines `startLine..=endLine` joined with `\n`, with
//! no trailing newline.

use sha2::{Digest, Sha256};

use super::ast::{Document, NodeKind};
use super::lines;

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from_digit((b >> 4) as u32, 16).expect("nibble"));
        out.push(char::from_digit((b & 15) as u32, 16).expect("nibble"));
    }
    out
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
    let all = lines::split(src.strip_prefix('\u{feff}').unwrap_or(src));
    sha256_hex(lines::slice_joined(&all, start, end).as_bytes())
}

/// Every node with a canonical id, in document order, with its source hash.
/// `src` must be the text `doc` was parsed from.
pub fn block_hashes(src: &str, doc: &Document) -> Vec<BlockHash> {
    let all = lines::split(src.strip_prefix('\u{feff}').unwrap_or(src));
    let mut out = Vec::new();
    // Pre-order walk with the nearest id-bearing ancestor.
    let mut stack: Vec<(Option<String>, std::slice::Iter<'_, super::ast::Node>)> =
        vec![(None, doc.children.iter())];
    while let Some((parent, iter)) = stack.last_mut() {
        let Some(node) = iter.next() else {
            stack.pop();
            continue;
        };
        let parent = parent.clone();
        if let Some(id) = &node.id {
            let name = match &node.kind {
                NodeKind::Directive { name, .. } => Some(name.clone()),
                _ => None,
            };
            out.push(BlockHash {
                id: id.clone(),
                kind: node.type_name(),
                name,
                lines: [node.span.start, node.span.end],
                sha256: sha256_hex(
                    lines::slice_joined(&all, node.span.start, node.span.end).as_bytes(),
                ),
                parent: parent.clone(),
            });
        }
        let kids = node.children();
        if !kids.is_empty() {
            stack.push((node.id.clone().or(parent), kids.iter()));
        }
    }
    out
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
    }
}
