//! Content-addressed per-block hash cache.
//!
//! Parsing a document and hashing every block's source slice is the cost of
//! every command that needs `baseHash` values or a document's sha256. Git
//! hooks and agents ask for the same contents over and over, so the result
//! is stored per content in `<repo root>/.noma/cache/blocks.sqlite3`:
//!
//! - `docs`: (blake3 of the bytes, engine) → sha256, block count, byte
//!   count and the block table as ONE compact blob (`codec`). The engine
//!   string names the noma version, so a parser change never serves old
//!   tables (two versions used side by side keep separate rows).
//! - `blobs`: git blob id → blake3 of its bytes, so revision reads skip even
//!   the blake3 pass.
//! - `replays`: (transcript blob id, sha256 of a document, engine) for each
//!   transcript this noma version replayed, from its first state, to that
//!   document (`noma reconcile`'s checkpoint, [`BlockCache::replay_known`]).
//! - `histories`: (sha256 of a transcript, sha256 of its document, engine)
//!   → which records changed which blocks (`noma log`, `noma blame`,
//!   [`BlockCache::history_known`]); schema version 3. Under its own
//!   engine it also holds the checkpoint's rows, keyed like `replays`
//!   ([`BlockCache::checkpoint_known`]).
//! - `transcript_ends`: (transcript blob id, engine) → its length, BLAKE3,
//!   lines and last line's sha256, so the pre-commit hook checks an append
//!   reading only the staged transcript ([`BlockCache::transcript_end`]);
//!   schema version 4.
//!
//! One blob per document was measured against one row per block
//! (`benches/cache.rs`, 96 KB document, 991 blocks): reading the rows took
//! ~740 µs, a whole hit through the blob (blake3 key, lookup, decode) ~220
//! µs, against ~2-2.8 ms to parse and hash. So the blob won.
//!
//! Robustness: WAL mode, a busy timeout, write transactions taken with
//! `BEGIN IMMEDIATE` and `INSERT OR IGNORE` (content-addressed rows never
//! change, so concurrent writers of the same content are harmless). The file
//! carries an `application_id` and a `user_version`; a file that is not
//! SQLite, is damaged, belongs to something else or has another schema
//! version is deleted and recreated (under an exclusive lock file, so
//! concurrent processes rebuild once). When the directory cannot be written
//! the cache falls back to a process-local in-memory database. Either way
//! the handle records ONE notice and hands it to the shell's notice sink
//! ([`BlockCache::with_notice_sink`]; the CLI prints it on stderr), and the
//! command goes on. A zero-length
//! file is treated as a new, empty cache (SQLite creates files that way).
//!
//! Size: no cap. An entry is ~50 bytes per block (a 3 MB, 30,000-block
//! document is ~1.6 MB); `noma cache clear` empties it. Eviction would need a
//! write on every hit, which would cost more than the lookups save.

mod codec;
mod ends;
mod histories;
mod replays;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{ffi::ErrorCode, params, Connection, OpenFlags, OptionalExtension};

use noma_core::doc::hash::{block_hashes, sha256_hex, BlockHash};

/// Schema version stored in `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 4;
/// The version before `replays`: opened, it gains the table (same rows).
const SCHEMA_VERSION_WITHOUT_REPLAYS: i64 = 1;
/// The schema before the `histories` table (its rows stay valid).
const SCHEMA_VERSION_WITHOUT_HISTORIES: i64 = 2;
/// The schema before the `transcript_ends` table (its rows stay valid).
const SCHEMA_VERSION_WITHOUT_ENDS: i64 = 3;
/// `PRAGMA application_id` of a noma cache ("NOMA").
const APPLICATION_ID: i64 = 0x4e4f_4d41;
/// The `.gitignore` entry for the block cache (`noma init` adds it).
pub const CACHE_IGNORE: &str = ".noma/cache/";
/// File name of the cache database inside the cache directory.
pub const DB_FILE: &str = "blocks.sqlite3";
/// Lock file taken while a broken cache is rebuilt.
const LOCK_FILE: &str = "blocks.lock";
/// How long a process waits for another's write lock before skipping.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Rows written by another noma version are kept apart from ours. The
/// `blocks/N` tag names the meaning of the block table: bump it whenever
/// spans or hashes change for the same bytes, so tables computed by an
/// older build (same package version) are recomputed, never served.
/// `blocks/2`: sections end at their last child, headings inside
/// directives do not fold, CRLF lines hash with their `\r`.
/// `blocks/3`: a heading inside a directive is a section of its own line,
/// without children, as in the reference engine. Both follow decision
/// `spans-match-the-reference`.
const ENGINE: &str = concat!("noma ", env!("CARGO_PKG_VERSION"), " blocks/3");
/// Documents remembered in-process (besides SQLite) before the memo resets.
const MEMO_MAX: usize = 64;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS docs(
    key     BLOB NOT NULL,
    engine  TEXT NOT NULL,
    sha256  BLOB NOT NULL,
    nblocks INTEGER NOT NULL,
    nbytes  INTEGER NOT NULL,
    blocks  BLOB NOT NULL,
    UNIQUE(key, engine)
);
CREATE INDEX IF NOT EXISTS docs_sha256 ON docs(sha256);
CREATE TABLE IF NOT EXISTS blobs(
    oid BLOB PRIMARY KEY,
    key BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS replays(
    transcript BLOB NOT NULL,
    document   BLOB NOT NULL,
    engine     TEXT NOT NULL,
    PRIMARY KEY(transcript, document, engine)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS histories(
    transcript  BLOB NOT NULL,
    document    BLOB NOT NULL,
    engine      TEXT NOT NULL,
    attribution BLOB NOT NULL,
    PRIMARY KEY(transcript, document, engine)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transcript_ends(
    blob      BLOB NOT NULL,
    engine    TEXT NOT NULL,
    nbytes    INTEGER NOT NULL,
    blake3    BLOB NOT NULL,
    lines     INTEGER NOT NULL,
    last_line BLOB,
    PRIMARY KEY(blob, engine)
) WITHOUT ROWID;
";

/// What the cache knows about one document content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocInfo {
    /// sha256 of the raw bytes (§5.4).
    pub sha256: String,
    /// Every addressable block with its source hash.
    pub blocks: Vec<BlockHash>,
}

/// Where a cache keeps its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backing {
    /// The SQLite file under `.noma/cache/`.
    File,
    /// A process-local in-memory database (the file was unusable).
    Memory,
    /// Nothing is stored.
    Disabled,
}

/// Figures for `noma cache stats`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// The database file (even when it could not be used).
    pub path: Option<PathBuf>,
    /// Where entries live for this handle.
    pub backing: Backing,
    /// Cached document contents (all noma versions).
    pub entries: u64,
    /// Blocks over all cached documents.
    pub blocks: u64,
    /// Git blob ids mapped to contents.
    pub blob_ids: u64,
    /// Bytes on disk: the database plus its WAL and shared-memory files.
    pub size_bytes: u64,
    /// `PRAGMA user_version` of the schema.
    pub schema_version: i64,
}

/// Handle on a repository's cache (`<root>/.noma/cache/`). `Sync`: one
/// handle may be shared by threads (lookups are serialised on it).
pub struct BlockCache {
    /// The cache directory, when file-backed was attempted.
    dir: Option<PathBuf>,
    conn: Mutex<Option<Connection>>,
    backing: Mutex<Backing>,
    memo: Mutex<foldhash::HashMap<[u8; 32], Arc<DocInfo>>>,
    /// `replays` and checkpoint rows not written yet
    /// ([`BlockCache::remember_replay`]).
    pending_replays: Mutex<replays::Pending>,
    /// Whether the tables of replays and checkpoint rows held no row when
    /// first asked ([`BlockCache::replay_known`]).
    nothing_proved: std::sync::OnceLock<bool>,
    notice: Mutex<Option<String>>,
    /// Where a notice goes when it is recorded (the library never prints).
    notice_sink: Option<NoticeSink>,
    recovered: AtomicBool,
    memo_on: AtomicBool,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Receives a handle's notice line (a rebuilt or bypassed cache).
pub type NoticeSink = Box<dyn Fn(&str) + Send + Sync>;

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("dir", &self.dir)
            .field("backing", &self.backing())
            .field("notice", &self.notice())
            .finish_non_exhaustive()
    }
}

/// Why the file could not be used.
enum OpenError {
    /// The file is damaged or not ours: delete and recreate.
    Broken(String),
    /// The file cannot be opened or written here: go in-memory.
    Unavailable(String),
}

impl BlockCache {
    /// Opens (or creates) the cache under `root`. Never fails: a broken cache
    /// is rebuilt or bypassed, and the handle records a notice saying so.
    pub fn open(root: &Path) -> BlockCache {
        let dir = root.join(".noma").join("cache");
        let path = dir.join(DB_FILE);
        let (conn, backing, notice) = match open_file(&dir, false) {
            Ok(c) => (Some(c), Backing::File, None),
            Err(OpenError::Broken(why)) => match rebuild(&dir) {
                // Another process repaired (or finished creating) it while we
                // waited for the lock: nothing to report.
                Ok((c, false)) => (Some(c), Backing::File, None),
                Ok((c, true)) => (
                    Some(c),
                    Backing::File,
                    Some(format!("{} was unusable ({why}); rebuilt it", path.display())),
                ),
                Err(again) => (
                    open_memory(),
                    Backing::Memory,
                    Some(format!(
                        "{} was unusable ({why}) and could not be rebuilt ({}); using a temporary in-memory cache",
                        path.display(),
                        again.reason()
                    )),
                ),
            },
            Err(OpenError::Unavailable(why)) => (
                open_memory(),
                Backing::Memory,
                Some(format!(
                    "{} is unavailable ({why}); using a temporary in-memory cache",
                    path.display()
                )),
            ),
        };
        let backing = if conn.is_some() {
            backing
        } else {
            Backing::Disabled
        };
        let cache = BlockCache {
            dir: Some(dir),
            conn: Mutex::new(conn),
            backing: Mutex::new(backing),
            memo: Mutex::default(),
            pending_replays: Mutex::default(),
            nothing_proved: std::sync::OnceLock::new(),
            notice: Mutex::new(None),
            notice_sink: None,
            recovered: AtomicBool::new(false),
            memo_on: AtomicBool::new(true),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        };
        if let Some(n) = notice {
            cache.set_notice(n);
        }
        cache
    }

    /// An in-memory cache that stores nothing (for one-off commands).
    pub fn disabled() -> BlockCache {
        BlockCache {
            dir: None,
            conn: Mutex::new(None),
            backing: Mutex::new(Backing::Disabled),
            memo: Mutex::default(),
            pending_replays: Mutex::default(),
            nothing_proved: std::sync::OnceLock::new(),
            notice: Mutex::new(None),
            notice_sink: None,
            recovered: AtomicBool::new(false),
            memo_on: AtomicBool::new(true),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Block table and sha256 for document text `text` (already decoded).
    pub fn doc_info(&self, text: &str) -> Arc<DocInfo> {
        if self.is_disabled() {
            return Arc::new(compute(text));
        }
        let key = *blake3::hash(text.as_bytes()).as_bytes();
        self.info_for_key(key, text, None)
    }

    /// Like [`BlockCache::doc_info`] for the contents of git blob `oid_hex`
    /// (40 or 64 hex digits). `text` must be that blob's text: a hit on the
    /// blob id skips hashing the text at all. A malformed id falls back to
    /// [`BlockCache::doc_info`].
    pub fn doc_info_for_blob(&self, oid_hex: &str, text: &str) -> Arc<DocInfo> {
        let Some(oid) = hex_to_vec(oid_hex) else {
            return self.doc_info(text);
        };
        if self.is_disabled() {
            return Arc::new(compute(text));
        }
        let found = self.with_conn(|c| {
            c.prepare_cached(
                "SELECT d.key, d.sha256, d.blocks FROM blobs b JOIN docs d ON d.key = b.key
                 WHERE b.oid = ?1 AND d.engine = ?2",
            )?
            .query_row(params![oid, ENGINE], |r| {
                let key: [u8; 32] = r.get(0)?;
                let sha = r.get_ref(1)?.as_blob()?;
                let blob = r.get_ref(2)?.as_blob()?;
                Ok((key, decode_row(sha, blob)))
            })
            .optional()
        });
        if let Some((key, Some(info))) = found.flatten() {
            self.hits.fetch_add(1, Ordering::Relaxed);
            let info = Arc::new(info);
            self.remember(key, &info);
            return info;
        }
        let key = *blake3::hash(text.as_bytes()).as_bytes();
        self.info_for_key(key, text, Some(oid))
    }

    /// sha256 of `text`. Computed directly, never looked up: hashing the
    /// text for the cache key costs as much as the sha256 itself (sha2 uses
    /// the CPU's SHA extensions), so a lookup could only be slower.
    #[cfg(test)]
    pub fn sha256_of(&self, text: &str) -> String {
        sha256_hex(text.as_bytes())
    }

    /// The cached document whose sha256 is `sha256_hex`, if this noma
    /// version has seen it (e.g. a transcript record's `pre_sha256`).
    #[cfg(test)]
    pub fn lookup_sha256(&self, sha256_hex: &str) -> Option<Arc<DocInfo>> {
        let sha = codec::hex_to_bytes(sha256_hex)?;
        let found = self.with_conn(|c| {
            c.prepare_cached(
                "SELECT key, sha256, blocks FROM docs WHERE sha256 = ?1 AND engine = ?2 LIMIT 1",
            )?
            .query_row(params![&sha[..], ENGINE], |r| {
                let key: [u8; 32] = r.get(0)?;
                let sha = r.get_ref(1)?.as_blob()?;
                let blob = r.get_ref(2)?.as_blob()?;
                Ok((key, decode_row(sha, blob)))
            })
            .optional()
        })??;
        let (key, info) = found;
        let info = Arc::new(info?);
        self.remember(key, &info);
        Some(info)
    }

    /// Entry counts and sizes. Counts are zero when the cache is disabled.
    pub fn stats(&self) -> Stats {
        let path = self.db_path();
        let backing = self.backing();
        let counts = self.with_conn(|c| {
            let (entries, blocks): (i64, i64) = c.query_row(
                "SELECT count(*), coalesce(sum(nblocks), 0) FROM docs",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let blob_ids: i64 = c.query_row("SELECT count(*) FROM blobs", [], |r| r.get(0))?;
            let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            Ok((entries, blocks, blob_ids, version))
        });
        let (entries, blocks, blob_ids, version) = counts.unwrap_or((0, 0, 0, SCHEMA_VERSION));
        let size_bytes = match (&path, backing) {
            (Some(p), Backing::File) => ["", "-wal", "-shm"]
                .iter()
                .filter_map(|s| {
                    let mut f = p.as_os_str().to_owned();
                    f.push(s);
                    std::fs::metadata(f).ok()
                })
                .map(|m| m.len())
                .sum(),
            _ => 0,
        };
        Stats {
            path,
            backing,
            entries: u64::try_from(entries).unwrap_or(0),
            blocks: u64::try_from(blocks).unwrap_or(0),
            blob_ids: u64::try_from(blob_ids).unwrap_or(0),
            size_bytes,
            schema_version: version,
        }
    }

    /// Deletes every entry (all noma versions) and shrinks the file.
    /// Returns how many documents were removed, or SQLite's reason why not.
    pub fn clear(&self) -> Result<u64, rusqlite::Error> {
        self.memo_lock().clear();
        *self
            .pending_replays
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = replays::Pending::default();
        let mut guard = self.conn_lock();
        let Some(conn) = guard.as_mut() else {
            return Ok(0);
        };
        let run = |conn: &mut Connection| -> rusqlite::Result<u64> {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM blobs", [])?;
            tx.execute("DELETE FROM replays", [])?;
            tx.execute("DELETE FROM histories", [])?;
            tx.execute("DELETE FROM transcript_ends", [])?;
            let n = tx.execute("DELETE FROM docs", [])?;
            tx.commit()?;
            Ok(n as u64)
        };
        let n = run(conn)?;
        // Shrinking is best effort: VACUUM needs every other reader gone.
        let _ = conn.execute_batch("VACUUM");
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        Ok(n)
    }

    /// Turns the in-process memo (the last documents seen by this handle)
    /// on or off; off makes every hit go to SQLite (benchmarks, tests).
    pub fn set_memo(&self, on: bool) {
        self.memo_on.store(on, Ordering::Relaxed);
        if !on {
            self.memo_lock().clear();
        }
    }

    /// Where entries live for this handle.
    pub fn backing(&self) -> Backing {
        *self.backing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends this handle's notice, the one already recorded and any later
    /// one, to `sink` (the shell decides where it goes: stderr, a log).
    pub fn with_notice_sink(mut self, sink: NoticeSink) -> BlockCache {
        if let Some(n) = self.notice() {
            sink(&n);
        }
        self.notice_sink = Some(sink);
        self
    }

    /// The notice recorded for this handle (rebuild or fallback), if any.
    pub fn notice(&self) -> Option<String> {
        self.notice
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `(hits, misses)` served by this handle so far.
    #[cfg(test)]
    pub fn counters(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    fn db_path(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(DB_FILE))
    }

    fn is_disabled(&self) -> bool {
        self.backing() == Backing::Disabled
    }

    fn info_for_key(&self, key: [u8; 32], text: &str, oid: Option<Vec<u8>>) -> Arc<DocInfo> {
        if let Some(info) = self.memo_lock().get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            let info = Arc::clone(info);
            if let Some(oid) = oid {
                self.store(key, None, Some(oid));
            }
            return info;
        }
        let found = self.with_conn(|c| {
            c.prepare_cached("SELECT sha256, blocks FROM docs WHERE key = ?1 AND engine = ?2")?
                .query_row(params![&key[..], ENGINE], |r| {
                    let sha = r.get_ref(0)?.as_blob()?;
                    let blob = r.get_ref(1)?.as_blob()?;
                    Ok(decode_row(sha, blob))
                })
                .optional()
        });
        if let Some(Some(Some(info))) = found {
            self.hits.fetch_add(1, Ordering::Relaxed);
            let info = Arc::new(info);
            self.remember(key, &info);
            if let Some(oid) = oid {
                self.store(key, None, Some(oid));
            }
            return info;
        }
        // A row that exists but does not decode is damaged: replace it.
        let damaged = matches!(found, Some(Some(None)));
        self.misses.fetch_add(1, Ordering::Relaxed);
        let info = Arc::new(compute(text));
        if damaged {
            let _ = self.with_conn(|c| {
                c.execute(
                    "DELETE FROM docs WHERE key = ?1 AND engine = ?2",
                    params![&key[..], ENGINE],
                )
            });
        }
        self.store(key, Some((&info, text.len())), oid);
        self.remember(key, &info);
        info
    }

    /// Writes a document row and/or a blob-id row in one transaction.
    /// Failures (busy beyond the timeout, disk full) only cost a future miss.
    fn store(&self, key: [u8; 32], doc: Option<(&DocInfo, usize)>, oid: Option<Vec<u8>>) {
        let row = match doc {
            Some((info, nbytes)) => {
                let (Some(blob), Some(sha)) = (
                    codec::encode(&info.blocks),
                    codec::hex_to_bytes(&info.sha256),
                ) else {
                    return;
                };
                Some((blob, sha, info.blocks.len(), nbytes))
            }
            None => None,
        };
        if row.is_none() && oid.is_none() {
            return;
        }
        let _ = self.with_conn_mut(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            if let Some((blob, sha, nblocks, nbytes)) = &row {
                tx.prepare_cached(
                    "INSERT OR IGNORE INTO docs(key, engine, sha256, nblocks, nbytes, blocks)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![
                    &key[..],
                    ENGINE,
                    &sha[..],
                    *nblocks as i64,
                    *nbytes as i64,
                    blob
                ])?;
            }
            if let Some(oid) = &oid {
                tx.prepare_cached("INSERT OR IGNORE INTO blobs(oid, key) VALUES (?1, ?2)")?
                    .execute(params![oid, &key[..]])?;
            }
            tx.commit()
        });
    }

    fn remember(&self, key: [u8; 32], info: &Arc<DocInfo>) {
        if !self.memo_on.load(Ordering::Relaxed) {
            return;
        }
        let mut memo = self.memo_lock();
        if memo.len() >= MEMO_MAX {
            memo.clear();
        }
        memo.insert(key, Arc::clone(info));
    }

    fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Option<T> {
        self.with_conn_mut(|c| f(c))
    }

    /// Runs `f` on the connection. A damaged file found mid-command is
    /// rebuilt once (then in-memory); other errors just skip the cache.
    fn with_conn_mut<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Option<T> {
        let mut guard = self.conn_lock();
        let conn = guard.as_mut()?;
        match f(conn) {
            Ok(v) => Some(v),
            Err(e) if is_corruption(&e) => {
                self.recover(&mut guard, &e.to_string());
                None
            }
            Err(_) => None,
        }
    }

    fn recover(&self, guard: &mut MutexGuard<'_, Option<Connection>>, why: &str) {
        // Close our handle first so the rebuild can delete the files.
        **guard = None;
        self.memo_lock().clear();
        let path = self.db_path().unwrap_or_default();
        let first = !self.recovered.swap(true, Ordering::Relaxed);
        let rebuilt = match (&self.dir, first, self.backing()) {
            (Some(dir), true, Backing::File) => rebuild(dir).ok().map(|(c, _)| c),
            _ => None,
        };
        let msg = match rebuilt {
            Some(c) => {
                **guard = Some(c);
                format!("{} was damaged ({why}); rebuilt it", path.display())
            }
            None => {
                **guard = open_memory();
                *self.backing.lock().unwrap_or_else(|e| e.into_inner()) = if guard.is_some() {
                    Backing::Memory
                } else {
                    Backing::Disabled
                };
                format!(
                    "{} was damaged ({why}); using a temporary in-memory cache",
                    path.display()
                )
            }
        };
        self.set_notice(msg);
    }

    /// Records the handle's notice and hands it to the sink; at most one
    /// per handle.
    fn set_notice(&self, msg: String) {
        let mut n = self.notice.lock().unwrap_or_else(|e| e.into_inner());
        if n.is_none() {
            if let Some(sink) = &self.notice_sink {
                sink(&msg);
            }
            *n = Some(msg);
        }
    }

    fn conn_lock(&self) -> MutexGuard<'_, Option<Connection>> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn memo_lock(&self) -> MutexGuard<'_, foldhash::HashMap<[u8; 32], Arc<DocInfo>>> {
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl OpenError {
    fn reason(&self) -> &str {
        match self {
            OpenError::Broken(s) | OpenError::Unavailable(s) => s,
        }
    }
}

/// Parses and hashes `text` (the miss path).
fn compute(text: &str) -> DocInfo {
    let doc = noma_core::doc::parse(text);
    DocInfo {
        sha256: sha256_hex(text.as_bytes()),
        blocks: block_hashes(text, &doc),
    }
}

fn decode_row(sha: &[u8], blob: &[u8]) -> Option<DocInfo> {
    if sha.len() != 32 {
        return None;
    }
    Some(DocInfo {
        sha256: codec::bytes_to_hex(sha),
        blocks: codec::decode(blob)?,
    })
}

fn hex_to_vec(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || hex.is_empty() || hex.len() > 128 {
        return None;
    }
    hex.as_bytes()
        .chunks_exact(2)
        .map(|p| {
            let s = std::str::from_utf8(p).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

fn classify(e: rusqlite::Error) -> OpenError {
    if is_corruption(&e) {
        OpenError::Broken(e.to_string())
    } else {
        OpenError::Unavailable(e.to_string())
    }
}

/// Takes the cache's setup lock file (exclusive), if it can be created.
fn setup_lock(dir: &Path) -> Option<std::fs::File> {
    use noma_store::fsio::contain::{open_write, WriteMode};
    let f = open_write(&dir.join(LOCK_FILE), WriteMode::Append).ok()?;
    fs4::FileExt::lock(&f).ok()?;
    Some(f)
}

/// Opens the file-backed cache in `dir`, creating the schema if the file is
/// new. Does not delete anything. `holding_lock`: the caller already holds
/// the setup lock.
///
/// A ready cache opens without any lock. Setting one up (schema, WAL mode)
/// happens under the setup lock file: SQLite answers a journal-mode switch
/// that races another connection with SQLITE_BUSY at once, without waiting
/// for its busy timeout, which would push a process onto the in-memory
/// fallback for no reason.
fn open_file(dir: &Path, holding_lock: bool) -> Result<Connection, OpenError> {
    use noma_store::fsio::contain::{check_dir_inside, open_write, WriteMode};
    // `dir` is `<root>/.noma/cache`: neither part may be a committed link.
    let root = dir.parent().and_then(Path::parent).unwrap_or(dir);
    check_dir_inside(root, dir).map_err(|e| OpenError::Unavailable(e.to_string()))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| OpenError::Unavailable(format!("cannot create {}: {e}", dir.display())))?;
    // The cache ignores itself, so it never shows up in `git status` even
    // in a repository where `noma init` has not written .gitignore rules.
    let ignore = dir.join(".gitignore");
    if let Ok(mut f) = open_write(&ignore, WriteMode::CreateNew) {
        let _ = std::io::Write::write_all(&mut f, b"# Local noma block cache: never commit.\n*\n");
    }
    let path = dir.join(DB_FILE);
    if path.is_dir() {
        return Err(OpenError::Unavailable(format!(
            "{} is a directory",
            path.display()
        )));
    }
    let conn = Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(classify)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(classify)?;
    if conn.is_readonly("main").unwrap_or(true) {
        return Err(OpenError::Unavailable("read-only".into()));
    }
    let is_wal = |conn: &Connection| -> Result<bool, OpenError> {
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(classify)?;
        Ok(mode.eq_ignore_ascii_case("wal"))
    };
    if !(schema_ready(&conn)? && is_wal(&conn)?) {
        let _lock = if holding_lock { None } else { setup_lock(dir) };
        if !schema_ready(&conn)? {
            init_schema(&conn)?;
        }
        if !is_wal(&conn)? {
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                .map_err(classify)?;
        }
    }
    // WAL + NORMAL: durable across process crashes, which is all a cache needs.
    conn.execute_batch("PRAGMA synchronous = NORMAL")
        .map_err(classify)?;
    Ok(conn)
}

/// Whether the schema is ours and present; `Ok(false)` for an empty file;
/// `Broken` for anything else.
fn schema_ready(conn: &Connection) -> Result<bool, OpenError> {
    // One statement, so one read snapshot: reading the pragmas one by one
    // can straddle another process's schema commit and see version 0 with
    // tables present, which looks like a foreign file.
    let (version, app, objects, tables): (i64, i64, i64, i64) = conn
        .query_row(
            "SELECT (SELECT user_version FROM pragma_user_version), \
                    (SELECT application_id FROM pragma_application_id), \
                    (SELECT count(*) FROM sqlite_master), \
                    (SELECT count(*) FROM sqlite_master \
                       WHERE type = 'table' AND name IN ('docs', 'blobs', 'replays', 'histories', 'transcript_ends'))",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .map_err(classify)?;
    if version == 0 && app == 0 && objects == 0 {
        return Ok(false);
    }
    if app != APPLICATION_ID {
        return Err(OpenError::Broken(format!(
            "not a noma cache (application_id {app:#x})"
        )));
    }
    if (version == SCHEMA_VERSION_WITHOUT_REPLAYS && tables == 2)
        || (version == SCHEMA_VERSION_WITHOUT_HISTORIES && tables == 3)
        || (version == SCHEMA_VERSION_WITHOUT_ENDS && tables == 4)
    {
        // Not ready: `init_schema` adds the tables and the version, and
        // the rows stay.
        return Ok(false);
    }
    if version != SCHEMA_VERSION {
        return Err(OpenError::Broken(format!(
            "schema version {version}, expected {SCHEMA_VERSION}"
        )));
    }
    if tables != 5 {
        return Err(OpenError::Broken("tables missing".into()));
    }
    Ok(true)
}

/// Creates the schema in one `BEGIN IMMEDIATE` transaction, re-checking
/// under the write lock because another process may have just done it.
fn init_schema(conn: &Connection) -> Result<(), OpenError> {
    conn.execute_batch("BEGIN IMMEDIATE").map_err(classify)?;
    let result = (|| {
        if schema_ready(conn)? {
            return Ok(());
        }
        conn.execute_batch(SCHEMA).map_err(classify)?;
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
        ))
        .map_err(classify)
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT").map_err(classify),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Deletes and recreates the cache file under an exclusive lock file, unless
/// another process already repaired it while we waited. The flag says
/// whether this call deleted and recreated the file.
fn rebuild(dir: &Path) -> Result<(Connection, bool), OpenError> {
    let lock = setup_lock(dir);
    match open_file(dir, true) {
        Ok(c) => return Ok((c, false)),
        Err(OpenError::Unavailable(why)) => return Err(OpenError::Unavailable(why)),
        Err(OpenError::Broken(_)) => {}
    }
    let path = dir.join(DB_FILE);
    for suffix in ["-wal", "-shm", ""] {
        let mut f = path.as_os_str().to_owned();
        f.push(suffix);
        match std::fs::remove_file(&f) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(OpenError::Unavailable(format!(
                    "cannot delete {}: {e}",
                    Path::new(&f).display()
                )))
            }
        }
    }
    let conn = open_file(dir, true);
    drop(lock);
    conn.map(|c| (c, true))
}

/// A process-local database with the same schema (fallback).
fn open_memory() -> Option<Connection> {
    let conn = Connection::open_in_memory().ok()?;
    conn.execute_batch(SCHEMA).ok()?;
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
    ))
    .ok()?;
    Some(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(root: &Path) -> PathBuf {
        root.join(".noma").join("cache").join(DB_FILE)
    }

    fn text() -> String {
        noma_testutil::synth::document(15)
    }

    fn expected(text: &str) -> DocInfo {
        compute(text)
    }

    /// Many handles creating the same fresh cache at once must all agree it
    /// is ours: none may see a half-created schema and "rebuild" it.
    #[test]
    fn simultaneous_first_opens_report_nothing() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().expect("tempdir");
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
            let handles: Vec<_> = (0..6)
                .map(|_| {
                    let root = dir.path().to_path_buf();
                    let barrier = barrier.clone();
                    std::thread::spawn(move || {
                        barrier.wait();
                        let c = BlockCache::open(&root);
                        (c.backing(), c.notice())
                    })
                })
                .collect();
            for h in handles {
                let (backing, notice) = h.join().expect("thread");
                assert_eq!((backing, notice), (Backing::File, None));
            }
        }
    }

    #[test]
    fn miss_then_hit_across_handles() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = text();
        let a = BlockCache::open(dir.path());
        assert_eq!(a.backing(), Backing::File);
        assert_eq!(*a.doc_info(&t), expected(&t));
        assert_eq!(a.counters(), (0, 1));
        // Same handle: memo hit.
        assert_eq!(*a.doc_info(&t), expected(&t));
        assert_eq!(a.counters(), (1, 1));
        // A new handle (as a new process would) hits SQLite.
        let b = BlockCache::open(dir.path());
        b.set_memo(false);
        assert_eq!(*b.doc_info(&t), expected(&t));
        assert_eq!(*b.doc_info(&t), expected(&t));
        assert_eq!(b.counters(), (2, 0));
        assert_eq!(b.notice(), None);
        let s = b.stats();
        assert_eq!((s.entries, s.schema_version), (1, SCHEMA_VERSION));
        assert_eq!(s.blocks, expected(&t).blocks.len() as u64);
        // Other content is a miss.
        assert_eq!(*b.doc_info("# Other\n"), expected("# Other\n"));
        assert_eq!(b.counters(), (2, 1));
        assert_eq!(b.stats().entries, 2);
    }

    /// A row stored under an older `blocks/N` tag (spans of a previous
    /// parser, for the same package version) is never served: the table is
    /// recomputed under the current tag.
    #[test]
    fn rows_of_an_older_block_table_are_not_served() {
        assert!(ENGINE.ends_with(" blocks/3"), "{ENGINE}");
        let dir = tempfile::tempdir().expect("tempdir");
        let t = "# A\n\npara\n\n\n# B\n";
        let mut stale = expected(t);
        stale.blocks[0].lines = [1, 5];
        stale.blocks[0].sha256 = sha256_hex(b"# A\n\npara\n\n");
        drop(BlockCache::open(dir.path()));
        {
            let old_engine = ENGINE.replace(" blocks/3", " blocks/2");
            let c = Connection::open(db(dir.path())).expect("open");
            let key = blake3::hash(t.as_bytes());
            c.execute(
                "INSERT INTO docs(key, engine, sha256, nblocks, nbytes, blocks) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    &key.as_bytes()[..],
                    old_engine,
                    codec::hex_to_bytes(&stale.sha256).expect("hex"),
                    stale.blocks.len() as i64,
                    t.len() as i64,
                    codec::encode(&stale.blocks).expect("encode"),
                ],
            )
            .expect("insert");
        }
        let cache = BlockCache::open(dir.path());
        cache.set_memo(false);
        let got = cache.doc_info(t);
        assert_eq!(*got, expected(t));
        assert_eq!(got.blocks[0].lines, [1, 3]);
        assert_eq!(cache.counters(), (0, 1));
    }

    #[test]
    fn blob_ids_and_sha256_lookups() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = text();
        let oid = "0123456789abcdef0123456789abcdef01234567";
        let a = BlockCache::open(dir.path());
        assert_eq!(*a.doc_info_for_blob(oid, &t), expected(&t));
        let b = BlockCache::open(dir.path());
        b.set_memo(false);
        // Hit by blob id: the text is not even looked at.
        assert_eq!(*b.doc_info_for_blob(oid, "ignored"), expected(&t));
        assert_eq!(b.counters(), (1, 0));
        assert_eq!(b.stats().blob_ids, 1);
        let sha = sha256_hex(t.as_bytes());
        assert_eq!(
            b.lookup_sha256(&sha).map(|i| (*i).clone()),
            Some(expected(&t))
        );
        assert_eq!(b.lookup_sha256(&sha256_hex(b"unseen")), None);
        assert_eq!(b.lookup_sha256("not hex"), None);
        // A malformed blob id is just a content lookup.
        assert_eq!(*b.doc_info_for_blob("xyz", &t), expected(&t));
    }

    #[test]
    fn other_schema_version_is_rebuilt_with_a_notice() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = text();
        drop(BlockCache::open(dir.path()).doc_info(&t));
        {
            let c = Connection::open(db(dir.path())).expect("open");
            c.execute_batch("PRAGMA user_version = 99").expect("bump");
        }
        let cache = BlockCache::open(dir.path());
        assert_eq!(cache.backing(), Backing::File);
        let notice = cache.notice().expect("notice");
        assert!(
            notice.contains("schema version 99") && notice.contains("rebuilt"),
            "{notice}"
        );
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.stats().schema_version, SCHEMA_VERSION);
        assert_eq!(*cache.doc_info(&t), expected(&t));
        assert_eq!(cache.stats().entries, 1);
        // The next handle finds a healthy file.
        assert_eq!(BlockCache::open(dir.path()).notice(), None);
    }

    /// The library prints nothing: a notice goes to the shell's sink, once,
    /// including one recorded while the handle was opening.
    #[test]
    fn the_notice_goes_to_the_sink_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(BlockCache::open(dir.path()).doc_info(&text()));
        std::fs::write(db(dir.path()), b"not a database at all").expect("damage");
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink_seen = Arc::clone(&seen);
        let cache = BlockCache::open(dir.path()).with_notice_sink(Box::new(move |m| {
            sink_seen.lock().expect("lock").push(m.to_string())
        }));
        drop(cache.doc_info(&text()));
        let seen = seen.lock().expect("lock").clone();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(Some(&seen[0]), cache.notice().as_ref());
    }

    #[test]
    fn foreign_database_is_rebuilt() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(".noma/cache")).expect("mkdir");
        {
            let c = Connection::open(db(dir.path())).expect("open");
            c.execute_batch("CREATE TABLE other(x); INSERT INTO other VALUES (1);")
                .expect("foreign");
        }
        let cache = BlockCache::open(dir.path());
        assert!(cache
            .notice()
            .is_some_and(|n| n.contains("not a noma cache")));
        assert_eq!(cache.backing(), Backing::File);
        assert_eq!(*cache.doc_info("# A\n"), expected("# A\n"));
    }

    #[test]
    fn garbage_truncated_and_empty_files() {
        let t = text();
        for (what, bytes, notice) in [
            (
                "garbage",
                b"garbage bytes, no sqlite header here".repeat(100),
                true,
            ),
            ("zero-length", Vec::new(), false),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::create_dir_all(dir.path().join(".noma/cache")).expect("mkdir");
            std::fs::write(db(dir.path()), &bytes).expect("write");
            let cache = BlockCache::open(dir.path());
            assert_eq!(
                cache.notice().is_some(),
                notice,
                "{what}: {:?}",
                cache.notice()
            );
            assert_eq!(cache.backing(), Backing::File, "{what}");
            assert_eq!(*cache.doc_info(&t), expected(&t), "{what}");
            assert_eq!(BlockCache::open(dir.path()).stats().entries, 1, "{what}");
        }
        // Truncated: whatever SQLite makes of it, answers stay right and at
        // most one notice is printed.
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let cache = BlockCache::open(dir.path());
            for n in 0..40 {
                drop(cache.doc_info(&noma_testutil::synth::document(n)));
            }
        }
        let full = std::fs::read(db(dir.path())).expect("read");
        std::fs::write(db(dir.path()), &full[..full.len() / 3]).expect("truncate");
        let cache = BlockCache::open(dir.path());
        cache.set_memo(false);
        for n in 0..40 {
            let t = noma_testutil::synth::document(n);
            assert_eq!(*cache.doc_info(&t), expected(&t), "doc {n}");
        }
    }

    #[test]
    fn damaged_row_is_recomputed_and_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = text();
        drop(BlockCache::open(dir.path()).doc_info(&t));
        {
            let c = Connection::open(db(dir.path())).expect("open");
            c.execute_batch("UPDATE docs SET blocks = x'0102030405'")
                .expect("damage");
        }
        let cache = BlockCache::open(dir.path());
        cache.set_memo(false);
        assert_eq!(*cache.doc_info(&t), expected(&t));
        assert_eq!(cache.counters(), (0, 1));
        assert_eq!(*cache.doc_info(&t), expected(&t));
        assert_eq!(cache.counters(), (1, 1));
    }

    #[test]
    fn unwritable_location_falls_back_to_memory() {
        let dir = tempfile::tempdir().expect("tempdir");
        // `.noma/cache` is a file, so the directory cannot be created.
        std::fs::create_dir_all(dir.path().join(".noma")).expect("mkdir");
        std::fs::write(dir.path().join(".noma/cache"), b"x").expect("file");
        let cache = BlockCache::open(dir.path());
        assert_eq!(cache.backing(), Backing::Memory);
        assert!(cache.notice().is_some_and(|n| n.contains("in-memory")));
        let t = text();
        cache.set_memo(false);
        assert_eq!(*cache.doc_info(&t), expected(&t));
        assert_eq!(*cache.doc_info(&t), expected(&t));
        assert_eq!(cache.counters(), (1, 1));
        assert_eq!(cache.stats().size_bytes, 0);
    }

    #[cfg(unix)]
    #[test]
    fn read_only_directory_falls_back_to_memory() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let cache_dir = dir.path().join(".noma/cache");
        std::fs::create_dir_all(&cache_dir).expect("mkdir");
        std::fs::set_permissions(&cache_dir, std::fs::Permissions::from_mode(0o555))
            .expect("chmod");
        // Root ignores permissions: nothing to test then.
        let probe = cache_dir.join("probe");
        if std::fs::write(&probe, b"").is_ok() {
            let _ = std::fs::remove_file(probe);
            return;
        }
        let cache = BlockCache::open(dir.path());
        assert_eq!(cache.backing(), Backing::Memory);
        assert!(cache.notice().is_some());
        assert_eq!(*cache.doc_info("# A\n"), expected("# A\n"));
        let _ = std::fs::set_permissions(&cache_dir, std::fs::Permissions::from_mode(0o755));
    }

    #[test]
    fn disabled_stores_nothing() {
        let cache = BlockCache::disabled();
        let t = text();
        assert_eq!(*cache.doc_info(&t), expected(&t));
        assert_eq!(*cache.doc_info(&t), expected(&t));
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.stats().path, None);
        assert_eq!(cache.clear(), Ok(0));
        assert_eq!(cache.sha256_of("abc"), sha256_hex(b"abc"));
    }

    #[test]
    fn clear_empties_and_stays_usable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = BlockCache::open(dir.path());
        drop(cache.doc_info("# A\n"));
        drop(cache.doc_info_for_blob("aa", "# B\n"));
        assert_eq!(cache.clear(), Ok(2));
        let s = cache.stats();
        assert_eq!((s.entries, s.blocks, s.blob_ids), (0, 0, 0));
        drop(cache.doc_info("# A\n"));
        assert_eq!(cache.stats().entries, 1);
    }

    #[test]
    fn threads_share_one_handle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = BlockCache::open(dir.path());
        std::thread::scope(|s| {
            for i in 0..4 {
                let cache = &cache;
                s.spawn(move || {
                    for n in 0..10 {
                        let t = noma_testutil::synth::document(i + n);
                        assert_eq!(*cache.doc_info(&t), expected(&t));
                    }
                });
            }
        });
        assert_eq!(cache.stats().entries, 13);
    }
}
