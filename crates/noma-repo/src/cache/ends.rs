//! How committed transcripts end (decision
//! `hook-remembers-transcript-ends`): the pre-commit hook that accepts an
//! append remembers the staged transcript's length, BLAKE3 digest, line
//! count and last line's hash under its git blob id, so the next commit,
//! whose HEAD holds that blob, checks its append by reading the staged
//! transcript alone ([`noma_core::transcript::prefix::extension_after`]).
//!
//! A row describes the bytes of the blob its key names, computed by noma
//! from those bytes; it is looked up only under the reference commit's
//! transcript blob id, and used only when the staged transcript's first
//! bytes have its digest. A row that does not decode is no row (the slow
//! path runs and replaces it). The engine names the noma version and the
//! row's meaning.

use rusqlite::{params, OptionalExtension};

use super::BlockCache;
use noma_core::transcript::prefix::End;

/// The noma version and the meaning of a row.
const ENDS_ENGINE: &str = concat!("noma ", env!("CARGO_PKG_VERSION"), " ends/1");

impl BlockCache {
    /// How the transcript whose git blob id is `blob` (raw bytes) ends, as
    /// [`BlockCache::remember_transcript_ends`] stored it.
    pub fn transcript_end(&self, blob: &[u8]) -> Option<End> {
        self.with_conn(|c| {
            c.prepare_cached(
                "SELECT nbytes, blake3, lines, last_line FROM transcript_ends
                 WHERE blob = ?1 AND engine = ?2",
            )?
            .query_row(params![blob, ENDS_ENGINE], |r| {
                let bytes: i64 = r.get(0)?;
                let digest: Vec<u8> = r.get(1)?;
                let lines: i64 = r.get(2)?;
                let last: Option<Vec<u8>> = r.get(3)?;
                Ok(decode(bytes, &digest, lines, last.as_deref()))
            })
            .optional()
        })
        .flatten()
        .flatten()
    }

    /// Remembers how each transcript (git blob id, raw bytes) ends, in one
    /// transaction; a row already there is replaced (it said something
    /// else only if it was wrong). A failed write only costs a slower
    /// check later.
    pub fn remember_transcript_ends(&self, ends: &[(&[u8], &End)]) {
        if ends.is_empty() {
            return;
        }
        let _ = self.with_conn_mut(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            for (blob, end) in ends {
                let last = end
                    .last_line_sha256
                    .as_deref()
                    .and_then(super::codec::hex_to_bytes);
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO transcript_ends(blob, engine, nbytes, blake3, lines, last_line)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![
                    blob,
                    ENDS_ENGINE,
                    i64::try_from(end.bytes).unwrap_or(i64::MAX),
                    &end.blake3[..],
                    i64::try_from(end.lines).unwrap_or(i64::MAX),
                    last.as_ref().map(|l| &l[..]),
                ])?;
            }
            tx.commit()
        });
    }
}

/// A row's [`End`]; None when a column is out of range (a damaged row).
fn decode(bytes: i64, digest: &[u8], lines: i64, last: Option<&[u8]>) -> Option<End> {
    let last_line_sha256 = match last {
        Some(l) if l.len() == 32 => Some(super::codec::bytes_to_hex(l)),
        Some(_) => return None,
        None => None,
    };
    let lines = usize::try_from(lines).ok()?;
    // Lines and a last line go together: an empty transcript has neither.
    if (lines == 0) != last_line_sha256.is_none() {
        return None;
    }
    Some(End {
        bytes: u64::try_from(bytes).ok()?,
        blake3: digest.try_into().ok()?,
        lines,
        last_line_sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{BlockCache, DB_FILE, SCHEMA_VERSION};
    use noma_core::transcript::prefix::End;
    use rusqlite::Connection;

    fn end(n: u8) -> End {
        End {
            bytes: 100 + u64::from(n),
            blake3: [n; 32],
            lines: 3,
            last_line_sha256: Some(format!("{n:02x}").repeat(32)),
        }
    }

    #[test]
    fn an_end_is_found_by_blob_id_and_cleared() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = BlockCache::open(dir.path());
        assert_eq!(c.transcript_end(b"t1"), None);
        let empty = End {
            bytes: 0,
            blake3: *blake3::hash(b"").as_bytes(),
            lines: 0,
            last_line_sha256: None,
        };
        c.remember_transcript_ends(&[(b"t1", &end(1)), (b"t0", &empty)]);
        drop(c);
        let c = BlockCache::open(dir.path());
        assert!(c.notice().is_none(), "{:?}", c.notice());
        assert_eq!(c.transcript_end(b"t1"), Some(end(1)));
        assert_eq!(c.transcript_end(b"t0"), Some(empty));
        assert_eq!(c.transcript_end(b"t2"), None);
        // Remembered again (it was wrong): replaced.
        c.remember_transcript_ends(&[(b"t1", &end(2))]);
        assert_eq!(c.transcript_end(b"t1"), Some(end(2)));
        assert_eq!(BlockCache::disabled().transcript_end(b"t1"), None);
        c.clear().expect("clears");
        assert_eq!(c.transcript_end(b"t1"), None);
    }

    /// A damaged row, or one another noma version wrote, is no row.
    #[test]
    fn a_damaged_or_foreign_row_is_not_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = BlockCache::open(dir.path());
        let conn = Connection::open(dir.path().join(".noma/cache").join(DB_FILE)).unwrap();
        for (sql, blob) in [
            ("UPDATE transcript_ends SET blake3 = x'00'", &b"a"[..]),
            ("UPDATE transcript_ends SET last_line = x'0102'", b"b"),
            ("UPDATE transcript_ends SET last_line = NULL", b"c"),
            ("UPDATE transcript_ends SET nbytes = -1", b"d"),
            ("UPDATE transcript_ends SET lines = 'many'", b"e"),
            (
                "UPDATE transcript_ends SET engine = 'noma 0.0.1 ends/1'",
                b"f",
            ),
        ] {
            c.remember_transcript_ends(&[(blob, &end(1))]);
            assert!(c.transcript_end(blob).is_some());
            conn.execute(sql, []).unwrap();
            assert_eq!(c.transcript_end(blob), None, "{sql}");
            conn.execute("DELETE FROM transcript_ends", []).unwrap();
        }
    }

    /// A version 3 cache (before this table) gains it and keeps its rows,
    /// without a notice.
    #[test]
    fn a_version_3_cache_gains_the_table_and_keeps_its_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = BlockCache::open(dir.path());
        let info = c.doc_info("# A\n");
        c.remember_replay(b"t", &info.sha256);
        c.remember_history(&info.sha256, &info.sha256, b"h");
        drop(c);
        let db = dir.path().join(".noma/cache").join(DB_FILE);
        let conn = Connection::open(db).unwrap();
        conn.execute_batch("DROP TABLE transcript_ends; PRAGMA user_version = 3;")
            .unwrap();
        drop(conn);
        let c = BlockCache::open(dir.path());
        assert!(c.notice().is_none(), "{:?}", c.notice());
        assert_eq!(c.stats().schema_version, SCHEMA_VERSION);
        assert_eq!(SCHEMA_VERSION, 4);
        assert_eq!(c.lookup_sha256(&info.sha256).as_deref(), Some(&*info));
        assert!(c.replay_known(b"t", &info.sha256));
        assert!(c.history_known(&info.sha256, &info.sha256).is_some());
        c.remember_transcript_ends(&[(b"t1", &end(1))]);
        assert_eq!(c.transcript_end(b"t1"), Some(end(1)));
    }
}
