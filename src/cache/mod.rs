//! Content-addressed per-block hash cache. INTERFACE STUB: computes without
//! caching; the SQLite-backed implementation replaces the internals while
//! keeping these signatures.

use std::path::Path;
use std::sync::Arc;

use crate::doc::hash::{block_hashes, sha256_hex, BlockHash};

/// What the cache knows about one document content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocInfo {
    /// sha256 of the raw bytes (§5.4).
    pub sha256: String,
    /// Every addressable block with its source hash.
    pub blocks: Vec<BlockHash>,
}

/// Handle on a repository's cache (`<root>/.noma/cache/`).
#[derive(Debug)]
pub struct BlockCache {
    _private: (),
}

impl BlockCache {
    /// Opens (or creates) the cache under `root`. Never fails: a broken cache
    /// is rebuilt or bypassed with a notice on stderr.
    pub fn open(_root: &Path) -> BlockCache {
        BlockCache { _private: () }
    }

    /// An in-memory cache that stores nothing (for one-off commands).
    pub fn disabled() -> BlockCache {
        BlockCache { _private: () }
    }

    /// Block table and sha256 for document text `text` (already decoded).
    pub fn doc_info(&self, text: &str) -> Arc<DocInfo> {
        let doc = crate::doc::parse(text);
        Arc::new(DocInfo {
            sha256: sha256_hex(text.as_bytes()),
            blocks: block_hashes(text, &doc),
        })
    }
}
