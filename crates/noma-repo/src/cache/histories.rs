//! What replay learned about a transcript (which records changed which
//! blocks, `crate::history`), so a repeated `noma log`, `noma blame` or
//! `block_history` does not replay again. Keyed by the BLAKE3 hash of the
//! transcript's bytes and of the document: content, so a row can never go
//! stale, and never served for a transcript with any other bytes (one that
//! extends the cached one is replayed whole). The engine names the noma
//! version and the meaning of the stored bytes.
//!
//! The same table holds finished answers (`noma blame`, one `noma log`
//! question) under their own engine: there the `transcript` column is the
//! BLAKE3 hash of the transcript and the `document` column the hash of
//! everything else the answer depends on (`crate::history::answer`), so a
//! warm query parses nothing.

use rusqlite::{params, OptionalExtension};

use super::{codec, BlockCache};

/// The noma version and the attribution encoding the rows hold.
const HISTORY_ENGINE: &str = concat!("noma ", env!("CARGO_PKG_VERSION"), " blocks/3 history/3");

/// The noma version and the answer encoding the answer rows hold.
const ANSWER_ENGINE: &str = concat!("noma ", env!("CARGO_PKG_VERSION"), " blocks/3 answer/1");

/// The noma version and the encoding of the rows that say where a
/// transcript's attribution stopped (`crate::history`'s tail rows).
const TAIL_ENGINE: &str = concat!("noma ", env!("CARGO_PKG_VERSION"), " blocks/3 tail/1");

/// The `document` column of tail rows (one row per transcript path).
const TAIL_DOCUMENT: &str = "0000000000000000000000000000000000000000000000000000000000000000";

impl BlockCache {
    /// The attribution stored for the transcript and document with these
    /// hashes (hex), as [`BlockCache::remember_history`] stored it.
    pub fn history_known(&self, transcript_hash: &str, document_hash: &str) -> Option<Vec<u8>> {
        self.history_row(transcript_hash, document_hash, HISTORY_ENGINE)
    }

    /// The finished answer stored for the transcript with this hash (hex)
    /// and the rest of its inputs (`inputs_hash`), as
    /// [`BlockCache::remember_answer`] stored it.
    pub fn answer_known(&self, transcript_hash: &str, inputs_hash: &str) -> Option<Vec<u8>> {
        self.history_row(transcript_hash, inputs_hash, ANSWER_ENGINE)
    }

    /// Stores a finished answer (opaque bytes). A failed write only costs
    /// a slower query later.
    pub fn remember_answer(&self, transcript_hash: &str, inputs_hash: &str, answer: &[u8]) {
        self.store_history_row(transcript_hash, inputs_hash, ANSWER_ENGINE, answer);
    }

    /// Where the attribution of the transcript at the path with this hash
    /// (hex) last stopped, as [`BlockCache::remember_tail`] stored it.
    pub fn tail_known(&self, path_hash: &str) -> Option<Vec<u8>> {
        self.history_row(path_hash, TAIL_DOCUMENT, TAIL_ENGINE)
    }

    /// Stores where a transcript's attribution stopped (opaque bytes),
    /// replacing the row before. A failed write only costs a whole replay
    /// later.
    pub fn remember_tail(&self, path_hash: &str, tail: &[u8]) {
        self.store_history_row(path_hash, TAIL_DOCUMENT, TAIL_ENGINE, tail);
    }

    fn history_row(
        &self,
        transcript_sha256: &str,
        document_sha256: &str,
        engine: &str,
    ) -> Option<Vec<u8>> {
        let t = codec::hex_to_bytes(transcript_sha256)?;
        let d = codec::hex_to_bytes(document_sha256)?;
        self.with_conn(|c| {
            c.prepare_cached(
                "SELECT attribution FROM histories WHERE transcript = ?1 AND document = ?2 AND engine = ?3",
            )?
            .query_row(params![&t[..], &d[..], engine], |r| r.get(0))
            .optional()
        })
        .flatten()
    }

    /// Stores an attribution (opaque bytes) for the transcript and document
    /// with these hashes (hex). A failed write only costs a replay later.
    pub fn remember_history(&self, transcript_hash: &str, document_hash: &str, attribution: &[u8]) {
        self.store_history_row(transcript_hash, document_hash, HISTORY_ENGINE, attribution);
    }

    fn store_history_row(
        &self,
        transcript_sha256: &str,
        document_sha256: &str,
        engine: &str,
        bytes: &[u8],
    ) {
        let (Some(t), Some(d)) = (
            codec::hex_to_bytes(transcript_sha256),
            codec::hex_to_bytes(document_sha256),
        ) else {
            return;
        };
        let _ = self.with_conn(|c| {
            c.prepare_cached(
                "INSERT OR REPLACE INTO histories(transcript, document, engine, attribution) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![&t[..], &d[..], engine, bytes])
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::BlockCache;

    const T: &str = "4e4f4d414e4f4d414e4f4d414e4f4d414e4f4d414e4f4d414e4f4d414e4f4d41";
    const D: &str = "5e4f4d414e4f4d414e4f4d414e4f4d414e4f4d414e4f4d414e4f4d414e4f4d41";

    #[test]
    fn a_history_is_found_by_transcript_and_document_and_cleared() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = BlockCache::open(dir.path());
        assert_eq!(c.history_known(T, D), None);
        c.remember_history(T, D, b"[1]");
        drop(c);
        let c = BlockCache::open(dir.path());
        assert!(c.notice().is_none(), "{:?}", c.notice());
        assert_eq!(c.history_known(T, D).as_deref(), Some(&b"[1]"[..]));
        assert_eq!(c.history_known(D, T), None);
        assert_eq!(c.history_known("not hex", D), None);
        assert_eq!(BlockCache::disabled().history_known(T, D), None);
        c.clear().expect("clears");
        assert_eq!(c.history_known(T, D), None);
    }

    /// A version 2 cache (before this table) gains it and keeps its rows.
    #[test]
    fn a_version_2_cache_gains_the_table_and_keeps_its_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = BlockCache::open(dir.path());
        let info = c.doc_info("# A\n");
        drop(c);
        let db = dir.path().join(".noma/cache").join(super::super::DB_FILE);
        let conn = rusqlite::Connection::open(db).unwrap();
        conn.execute_batch(
            "DROP TABLE histories; DROP TABLE transcript_ends; PRAGMA user_version = 2;",
        )
        .unwrap();
        drop(conn);
        let c = BlockCache::open(dir.path());
        assert!(c.notice().is_none(), "{:?}", c.notice());
        assert_eq!(c.stats().schema_version, super::super::SCHEMA_VERSION);
        assert_eq!(c.lookup_sha256(&info.sha256).as_deref(), Some(&*info));
        c.remember_history(T, D, b"x");
        assert!(c.history_known(T, D).is_some());
    }
}
