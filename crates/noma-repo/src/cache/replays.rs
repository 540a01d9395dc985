//! Transcripts known to replay: `noma reconcile` replays the merge base's
//! transcript from its first state to prove the checkpoint its branch's
//! records start from (decision `reconcile-from-a-checkpoint`). A git blob
//! id names the bytes and a sha256 the document, so a row can never go
//! stale; the engine names the noma version whose replay said yes.
//!
//! A PR check remembers a replay and a checkpoint row per document it
//! proves, hundreds in one run: the rows wait in the handle and are
//! written together, in one transaction, when [`FLUSH_AT`] are waiting and
//! when the handle is dropped, instead of one write transaction (and its
//! locks) each.
//!
//! A cold PR check (a fresh CI checkout) asks for a row per document and
//! finds none: when both tables were empty at the handle's first question,
//! it answers from the rows waiting in the handle and asks SQLite nothing
//! more. A row written since (by this handle's own flush, or by another
//! process) is then not found, which costs a replay, never a wrong pass: a
//! row only ever says "proved before".

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{codec, BlockCache, ENGINE};

/// A `replays` row waiting to be written: transcript blob id, document
/// sha256.
type Row = (Vec<u8>, [u8; 32]);

/// A checkpoint row waiting to be written: transcript blob id, document
/// sha256, the row's bytes.
type CheckpointRow = (Vec<u8>, [u8; 32], Vec<u8>);

/// Rows a handle has not written yet.
#[derive(Default)]
pub(super) struct Pending {
    replays: Vec<Row>,
    checkpoints: Vec<CheckpointRow>,
}

impl Pending {
    fn len(&self) -> usize {
        self.replays.len() + self.checkpoints.len()
    }
}

/// Rows waiting at most before they are written.
const FLUSH_AT: usize = 1024;

impl BlockCache {
    /// Whether this noma version replayed the transcript whose git blob id
    /// is `transcript` (raw bytes) to the document whose sha256 is
    /// `document_sha256` before.
    pub fn replay_known(&self, transcript: &[u8], document_sha256: &str) -> bool {
        let Some(doc) = codec::hex_to_bytes(document_sha256) else {
            return false;
        };
        if self
            .pending()
            .replays
            .iter()
            .any(|(t, d)| t == transcript && *d == doc)
        {
            return true;
        }
        if self.nothing_proved() {
            return false;
        }
        self.with_conn(|c| {
            c.prepare_cached(
                "SELECT 1 FROM replays WHERE transcript = ?1 AND document = ?2 AND engine = ?3",
            )?
            .query_row(params![transcript, &doc[..], ENGINE], |_| Ok(()))
            .optional()
        })
        .flatten()
        .is_some()
    }

    /// Remembers that the transcript `transcript` replays to the document
    /// whose sha256 is `document_sha256` (written with the rows waiting,
    /// see the module's doc). A failed write only costs a replay later.
    pub fn remember_replay(&self, transcript: &[u8], document_sha256: &str) {
        let Some(doc) = codec::hex_to_bytes(document_sha256) else {
            return;
        };
        if self.is_disabled() {
            return;
        }
        self.wait_or_write(|p| p.replays.push((transcript.to_vec(), doc)));
    }

    /// Adds a row to the waiting ones with `add`, and writes them all once
    /// [`FLUSH_AT`] wait.
    fn wait_or_write(&self, add: impl FnOnce(&mut Pending)) {
        let mut pending = self.pending();
        add(&mut pending);
        if pending.len() >= FLUSH_AT {
            let rows = std::mem::take(&mut *pending);
            drop(pending);
            self.write_pending(rows);
        }
    }

    /// Writes the rows waiting (the handle's `Drop` calls it).
    pub(super) fn flush_replays(&self) {
        let rows = std::mem::take(&mut *self.pending());
        self.write_pending(rows);
    }

    fn write_pending(&self, rows: Pending) {
        if rows.len() == 0 {
            return;
        }
        let _ = self.with_conn_mut(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR IGNORE INTO replays(transcript, document, engine) VALUES (?1, ?2, ?3)",
                )?;
                for (transcript, doc) in &rows.replays {
                    insert.execute(params![transcript, &doc[..], ENGINE])?;
                }
                let mut insert = tx.prepare_cached(
                    "INSERT OR REPLACE INTO histories(transcript, document, engine, attribution) \
                     VALUES (?1, ?2, ?3, ?4)",
                )?;
                for (transcript, doc, row) in &rows.checkpoints {
                    insert.execute(params![transcript, &doc[..], CHECKPOINT_ENGINE, row])?;
                }
            }
            tx.commit()
        });
    }

    /// Whether no replay and no checkpoint row was stored when this
    /// handle first asked (see the module's doc); false when SQLite could
    /// not say.
    fn nothing_proved(&self) -> bool {
        *self.nothing_proved.get_or_init(|| {
            self.with_conn(|c| {
                c.query_row(
                    "SELECT NOT EXISTS(SELECT 1 FROM replays) AND NOT EXISTS(SELECT 1 FROM histories)",
                    [],
                    |r| r.get::<_, bool>(0),
                )
            })
            .unwrap_or(false)
        })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending_replays
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        self.flush_replays();
    }
}

/// The noma version and the meaning of a checkpoint row's bytes (what
/// `merge::proved` encodes). Rows live in the `histories` table under this
/// engine: same key shape (blob id, document sha256), no schema change.
const CHECKPOINT_ENGINE: &str =
    concat!("noma ", env!("CARGO_PKG_VERSION"), " blocks/3 checkpoint/1");

/// The noma version and the meaning of a signed-base row's bytes (what
/// `merge::reconcile::signed` encodes), keyed by the merge base's
/// transcript and sidecar blob ids.
const SIGNED_BASE_ENGINE: &str = concat!(
    "noma ",
    env!("CARGO_PKG_VERSION"),
    " blocks/3 signed-base/1"
);

impl BlockCache {
    /// The checkpoint row stored for the transcript whose git blob id is
    /// `transcript` (raw bytes), proved to replay to the document whose
    /// sha256 is `document_sha256`, as [`BlockCache::remember_checkpoint`]
    /// stored it.
    pub fn checkpoint_known(&self, transcript: &[u8], document_sha256: &str) -> Option<Vec<u8>> {
        let doc = codec::hex_to_bytes(document_sha256)?;
        let waiting = self
            .pending()
            .checkpoints
            .iter()
            .rev()
            .find(|(t, d, _)| t == transcript && *d == doc)
            .map(|(_, _, row)| row.clone());
        if waiting.is_some() || self.nothing_proved() {
            return waiting;
        }
        self.with_conn(|c| {
            c.prepare_cached(
                "SELECT attribution FROM histories WHERE transcript = ?1 AND document = ?2 AND engine = ?3",
            )?
            .query_row(params![transcript, &doc[..], CHECKPOINT_ENGINE], |r| r.get(0))
            .optional()
        })
        .flatten()
    }

    /// Stores what the checkpoint learned about a proved transcript
    /// (opaque bytes), written with the rows waiting (see the module's
    /// doc). A failed write only costs a slower check later.
    pub fn remember_checkpoint(&self, transcript: &[u8], document_sha256: &str, row: &[u8]) {
        let Some(doc) = codec::hex_to_bytes(document_sha256) else {
            return;
        };
        if self.is_disabled() {
            return;
        }
        self.wait_or_write(|p| p.checkpoints.push((transcript.to_vec(), doc, row.to_vec())));
    }

    /// The signed-base row stored for the merge base's transcript blob
    /// `transcript` and sidecar blob `sidecar` (raw ids), as
    /// [`BlockCache::remember_signed_base`] stored it.
    pub fn signed_base_known(&self, transcript: &[u8], sidecar: &[u8]) -> Option<Vec<u8>> {
        self.with_conn(|c| {
            c.prepare_cached(
                "SELECT attribution FROM histories WHERE transcript = ?1 AND document = ?2 AND engine = ?3",
            )?
            .query_row(params![transcript, sidecar, SIGNED_BASE_ENGINE], |r| r.get(0))
            .optional()
        })
        .flatten()
    }

    /// Stores what a signed check learned about a merge base's transcript
    /// and sidecar (opaque bytes). A failed write only costs a slower
    /// check later.
    pub fn remember_signed_base(&self, transcript: &[u8], sidecar: &[u8], row: &[u8]) {
        let _ = self.with_conn(|c| {
            c.prepare_cached(
                "INSERT OR REPLACE INTO histories(transcript, document, engine, attribution) \
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![transcript, sidecar, SIGNED_BASE_ENGINE, row])
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BlockCache, DB_FILE};
    use rusqlite::Connection;

    const DOC: &str = "4e4f4d414e4f4d414e4f4d414e4f4d414e4f4d414e4f4d414e4f4d414e4f4d41";

    #[test]
    fn a_replay_is_remembered_by_transcript_and_document() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = BlockCache::open(dir.path());
        assert!(!c.replay_known(b"t1", DOC));
        c.remember_replay(b"t1", DOC);
        c.remember_replay(b"t1", DOC); // twice is once
        drop(c);
        let c = BlockCache::open(dir.path());
        assert!(c.notice().is_none(), "{:?}", c.notice());
        assert!(c.replay_known(b"t1", DOC));
        assert!(!c.replay_known(b"t2", DOC));
        assert!(!c.replay_known(b"t1", &DOC.replace('4', "5")));
        assert!(!c.replay_known(b"t1", "not hex"));
        // Another noma version's answer is not ours.
        let conn = Connection::open(dir.path().join(".noma/cache").join(DB_FILE)).unwrap();
        conn.execute("UPDATE replays SET engine = 'noma 0.0.1 blocks/1'", [])
            .unwrap();
        assert!(!c.replay_known(b"t1", DOC));
        assert!(!BlockCache::disabled().replay_known(b"t1", DOC));
        // `noma cache clear` forgets them too.
        c.remember_replay(b"t3", DOC);
        c.remember_checkpoint(b"t3", DOC, b"row");
        assert_eq!(c.checkpoint_known(b"t3", DOC).as_deref(), Some(&b"row"[..]));
        assert_eq!(c.checkpoint_known(b"t1", DOC), None);
        c.clear().expect("clears");
        assert!(!c.replay_known(b"t3", DOC));
        assert_eq!(c.checkpoint_known(b"t3", DOC), None);
        // Checkpoint rows wait with the replays and are written when the
        // handle goes; the last one for a key wins.
        c.remember_checkpoint(b"t4", DOC, b"old");
        c.remember_checkpoint(b"t4", DOC, b"new");
        assert_eq!(c.checkpoint_known(b"t4", DOC).as_deref(), Some(&b"new"[..]));
        drop(c);
        let c = BlockCache::open(dir.path());
        assert_eq!(c.checkpoint_known(b"t4", DOC).as_deref(), Some(&b"new"[..]));
    }

    /// A handle that found both tables empty answers from its waiting
    /// rows; one that found rows asks SQLite, so a row stored before it
    /// was opened is found.
    #[test]
    fn an_empty_cache_answers_from_the_rows_waiting() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = BlockCache::open(dir.path());
        assert!(!c.replay_known(b"t1", DOC));
        assert_eq!(c.checkpoint_known(b"t1", DOC), None);
        assert!(c.nothing_proved());
        c.remember_replay(b"t1", DOC);
        c.remember_checkpoint(b"t1", DOC, b"row");
        assert!(c.replay_known(b"t1", DOC), "waiting rows answer");
        assert_eq!(c.checkpoint_known(b"t1", DOC).as_deref(), Some(&b"row"[..]));
        drop(c);
        // Only a checkpoint row stored: the next handle asks SQLite.
        let conn = Connection::open(dir.path().join(".noma/cache").join(DB_FILE)).unwrap();
        conn.execute("DELETE FROM replays", []).unwrap();
        let c = BlockCache::open(dir.path());
        assert_eq!(c.checkpoint_known(b"t1", DOC).as_deref(), Some(&b"row"[..]));
        assert!(!c.nothing_proved());
        assert!(!c.replay_known(b"t1", DOC));
        drop(c);
        // Only a replay row stored: found too.
        conn.execute("DELETE FROM histories", []).unwrap();
        conn.execute(
            "INSERT INTO replays(transcript, document, engine) VALUES (?1, ?2, ?3)",
            rusqlite::params![
                &b"t2"[..],
                &super::super::codec::hex_to_bytes(DOC).unwrap()[..],
                super::super::ENGINE
            ],
        )
        .unwrap();
        let c = BlockCache::open(dir.path());
        assert!(c.replay_known(b"t2", DOC));
    }

    /// A cache written before the table existed gains it and keeps its
    /// rows, without a notice.
    #[test]
    fn a_version_1_cache_gains_the_table_and_keeps_its_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = BlockCache::open(dir.path());
        let info = c.doc_info("# A\n");
        drop(c);
        let conn = Connection::open(dir.path().join(".noma/cache").join(DB_FILE)).unwrap();
        conn.execute_batch(
            "DROP TABLE replays; DROP TABLE histories; DROP TABLE transcript_ends; PRAGMA user_version = 1;",
        )
            .unwrap();
        drop(conn);
        let c = BlockCache::open(dir.path());
        assert!(c.notice().is_none(), "{:?}", c.notice());
        assert_eq!(c.stats().schema_version, super::super::SCHEMA_VERSION);
        assert_eq!(c.stats().entries, 1);
        assert_eq!(c.lookup_sha256(&info.sha256).as_deref(), Some(&*info));
        c.remember_replay(b"t", DOC);
        assert!(c.replay_known(b"t", DOC));
    }
}
