//! Reconciliation state: which block versions someone already reviewed.
//!
//! - The local store `<root>/.noma/cache/reconciled.json` (git-ignored with
//!   the rest of the cache) maps doc path → block id → the sha256 values
//!   marked reconciled. A missing file is empty; an unreadable or corrupt one
//!   is treated as empty with a notice (it is a cache, never fatal).
//! - The snapshot `<root>/.noma/reconciliation_state.json` is the same data
//!   plus the HEAD commit and each document's sha256, pretty-printed with
//!   sorted keys so it diffs well and can be committed as a shared baseline.
//!
//! Both are written atomically (temp file in the same directory + rename).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Path of the local store, relative to the repository root.
pub const STORE_PATH: &str = ".noma/cache/reconciled.json";
/// Path of the committable snapshot, relative to the repository root.
pub const SNAPSHOT_PATH: &str = ".noma/reconciliation_state.json";
/// Format version of both files.
pub const STATE_VERSION: u32 = 1;

/// doc path → block id → reconciled sha256 values.
pub type Marks = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The local store's file shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Store {
    /// Format version.
    pub version: u32,
    /// The reconciled block versions.
    pub docs: Marks,
}

/// One document in the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotDoc {
    /// sha256 of the document's working-tree bytes when the snapshot was
    /// taken (None when the document no longer exists).
    pub sha256: Option<String>,
    /// Block id → reconciled sha256 values.
    pub blocks: BTreeMap<String, BTreeSet<String>>,
}

/// The snapshot's file shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFile {
    /// Format version.
    pub version: u32,
    /// HEAD when the snapshot was taken (empty on an unborn branch).
    pub git_hash: String,
    /// Per document.
    pub docs: BTreeMap<String, SnapshotDoc>,
}

impl Store {
    /// Whether `(path, id, sha256)` is marked.
    pub(crate) fn contains(&self, path: &str, id: &str, sha256: &str) -> bool {
        self.docs
            .get(path)
            .and_then(|d| d.get(id))
            .is_some_and(|s| s.contains(sha256))
    }

    /// Adds every block of a committed snapshot (the shared baseline).
    pub(crate) fn merge_snapshot(&mut self, snap: SnapshotFile) {
        for (path, doc) in snap.docs {
            let d = self.docs.entry(path).or_default();
            for (id, shas) in doc.blocks {
                d.entry(id).or_default().extend(shas);
            }
        }
    }
}

/// A state file that is present but cannot be used; callers treat it as
/// empty and pass this on as a notice.
#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    /// Reading failed.
    #[error("{}: cannot read ({source}); ignoring it", path.display())]
    Read {
        /// The state file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bytes are not a state file.
    #[error("{}: not a valid state file ({source}); ignoring it", path.display())]
    Decode {
        /// The state file.
        path: std::path::PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
}

/// Reads a JSON state file: Ok(None) when absent.
pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(
    path: &Path,
) -> Result<Option<T>, StateFileError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StateFileError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|source| StateFileError::Decode {
            path: path.to_path_buf(),
            source,
        })
}

/// Loads the local store; a notice is pushed when it had to be ignored.
pub(crate) fn load_store(root: &Path, notices: &mut Vec<String>) -> Store {
    match read_json::<Store>(&root.join(STORE_PATH)) {
        Ok(Some(s)) if s.version == STATE_VERSION => s,
        Ok(Some(s)) => {
            notices.push(format!(
                "{STORE_PATH}: unknown version {}; ignoring it",
                s.version
            ));
            Store::default()
        }
        Ok(None) => Store::default(),
        Err(n) => {
            notices.push(n.to_string());
            Store::default()
        }
    }
}

/// Loads the committed snapshot, if any (notice when unusable).
pub(crate) fn load_snapshot(root: &Path, notices: &mut Vec<String>) -> Option<SnapshotFile> {
    match read_json::<SnapshotFile>(&root.join(SNAPSHOT_PATH)) {
        Ok(Some(s)) if s.version == STATE_VERSION => Some(s),
        Ok(Some(s)) => {
            notices.push(format!(
                "{SNAPSHOT_PATH}: unknown version {}; ignoring it",
                s.version
            ));
            None
        }
        Ok(None) => None,
        Err(n) => {
            notices.push(n.to_string());
            None
        }
    }
}

/// Writes `bytes` to `path` atomically (creating its directory): a temp
/// file beside it, fsynced, then renamed over it, so readers see the old or
/// the new file, never a part.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    noma_store::fsio::atomic_write(path, bytes)
}

/// The lock file serialising read-modify-writes of the local store.
pub const STORE_LOCK_PATH: &str = ".noma/cache/reconciled.json.lock";

/// An exclusive lock on the local store, released on drop (or when the
/// process dies): two `--mark-reconciled` runs at once both keep their marks.
#[derive(Debug)]
pub struct StoreLock {
    _file: std::fs::File,
}

/// Blocks until the store's lock under `root` is ours.
pub(crate) fn lock_store(root: &Path) -> std::io::Result<StoreLock> {
    let path = root.join(STORE_LOCK_PATH);
    if let Some(dir) = path.parent() {
        // Every store write holds this lock first: a `.noma/cache` committed
        // as a link is refused here, before anything is created through it.
        noma_store::fsio::contain::check_dir_inside(root, dir)?;
        std::fs::create_dir_all(dir)?;
    }
    use noma_store::fsio::contain::{open_write, WriteMode};
    let file = open_write(&path, WriteMode::Append)?;
    fs4::FileExt::lock(&file)?;
    Ok(StoreLock { _file: file })
}

/// Pretty JSON with a final newline (keys are sorted: every map is a BTreeMap).
pub(crate) fn to_pretty<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_or_foreign_store_is_empty_with_a_notice() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let mut notices = Vec::new();
        assert_eq!(load_store(root, &mut notices), Store::default());
        assert!(notices.is_empty());
        std::fs::create_dir_all(root.join(".noma/cache")).unwrap();
        std::fs::write(root.join(STORE_PATH), b"{not json").unwrap();
        assert_eq!(load_store(root, &mut notices), Store::default());
        assert_eq!(notices.len(), 1, "{notices:?}");
        std::fs::write(root.join(STORE_PATH), br#"{"version":99,"docs":{}}"#).unwrap();
        assert_eq!(load_store(root, &mut notices), Store::default());
        assert_eq!(notices.len(), 2);
    }

    #[test]
    fn atomic_write_round_trips_and_leaves_no_temp_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a/b/state.json");
        let mut s = Store {
            version: STATE_VERSION,
            ..Store::default()
        };
        s.docs
            .entry("d.noma".into())
            .or_default()
            .entry("x".into())
            .or_default()
            .insert("abc".into());
        write_atomic(&path, &to_pretty(&s)).unwrap();
        write_atomic(&path, &to_pretty(&s)).unwrap();
        let back: Store = read_json(&path).unwrap().unwrap();
        assert!(back.contains("d.noma", "x", "abc"));
        assert!(!back.contains("d.noma", "x", "abd"));
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
    }
}
