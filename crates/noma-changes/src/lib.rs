//! What changed since a base branch, at block granularity.
//!
//! The question an agent (or a reviewer) asks before reconciling: which
//! addressable blocks of which `.noma` documents differ between the merge
//! base of HEAD with `base` and the working tree (committed, staged,
//! unstaged and untracked-but-not-ignored changes alike)?
//!
//! Cost follows the change, not the repository: the changed paths come from
//! ONE git diff of the merge base's tree against the working tree through
//! the index (so unchanged files are settled by the index's stat data),
//! restricted to `*.noma`; only those documents are read. Block tables come
//! from the [`BlockCache`] (old versions keyed by blob id), so a repeated
//! query hashes nothing new. The block diff itself is [`noma_merge::diff`].
//!
//! Documents: a document added since the base is `added` and its top-level
//! blocks are listed as `added` (their children are part of them); a deleted
//! one is `removed` with its top-level blocks `removed`. A document moved
//! since the base (`git mv`, or any move git's rename detection pairs: a
//! tracked old path gone, a tracked new path at least 50% similar) is one
//! `renamed` document: `path` is the new path, `old_path` the path at the
//! merge base, and `blocks` are only the blocks that differ between the
//! two versions (none for a pure move). Renames are detected between
//! tracked paths only (an untracked copy is an addition until it is
//! added). `files` may name either path of a moved document.
//!
//! Reconciliation ([`state`]): [`mark_reconciled`] records the currently
//! changed block versions of some documents; later queries list those, while
//! unchanged since, under `skipped` (by id) instead of `blocks`.
//! [`snapshot_state`] writes the committable baseline, which later queries
//! honour too. `bypass_cache` ignores both and the block cache.

#[cfg(target_os = "linux")]
use noma_repo::git::index_file;
use noma_repo::{cache, git};
pub mod questions;
#[cfg(target_os = "linux")]
mod remote_fs;
#[cfg(target_os = "linux")]
mod staged_view;
pub mod state;
#[cfg(target_os = "linux")]
pub mod watch;

/// No watcher outside Linux: the watcher relies on inotify's guarantees
/// (one queue per watcher, in order), and other systems' notifications are
/// not tested against them, so [`watch::WatchedChanges::new`] is None
/// there and every changed-blocks call scans the work tree.
#[cfg(not(target_os = "linux"))]
pub mod watch {
    use crate::git::repo::{GitError, Repo, StagedChange};
    use crate::git::Oid;

    /// How a query was answered (as on Linux).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Answered {
        /// From the kept listing and the paths touched since.
        Incremental,
        /// By scanning the whole work tree.
        FullScan,
    }

    /// Never made on this system.
    #[derive(Debug)]
    pub enum WatchedChanges {}

    impl WatchedChanges {
        /// None: no watcher on this system.
        pub fn new(_repo: &Repo) -> Option<WatchedChanges> {
            None
        }

        /// Unreachable: no value exists.
        pub fn unusable(&self) -> Option<String> {
            match *self {}
        }

        /// Unreachable: no value exists.
        pub(crate) fn worktree_changes(
            &self,
            _repo: &Repo,
            _mb: Oid,
        ) -> Result<(Vec<StagedChange>, Answered), GitError> {
            match *self {}
        }
    }
}

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::git::repo::GitError;
use crate::git::Oid;
use serde::Serialize;

use crate::cache::{BlockCache, DocInfo};
use crate::git::repo::Repo;
use noma_core::doc::hash::{block_hashes, sha256_hex};

use noma_merge::diff::{diff_blocks, BlockChange, Change, DocDiff, Side};

/// A changed-blocks query.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Query {
    /// Branch (or any revision) to compare with; its merge base with HEAD
    /// is the old side.
    pub base: String,
    /// Restrict to these repository-relative `.noma` paths (empty: all).
    #[serde(default)]
    pub files: Vec<String>,
    /// Glob patterns of paths to leave out (`*` also matches `/`).
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Include each changed block's source at the base.
    #[serde(default)]
    pub include_old_source: bool,
    /// Ignore the block cache and the reconciliation state.
    #[serde(default)]
    pub bypass_cache: bool,
}

/// Why a query could not run.
#[derive(Debug, thiserror::Error)]
pub enum ChangesError {
    /// The base does not name a commit.
    #[error("{msg}")]
    UnknownBase {
        /// The revision as given.
        rev: String,
        /// Why, naming the revision (and a near branch name, if any).
        msg: String,
    },
    /// HEAD and the base share no history.
    #[error("{0}: no common ancestor with HEAD{1}")]
    NoMergeBase(String, String),
    /// HEAD has no commit yet.
    #[error("HEAD has no commit yet; commit something first")]
    UnbornHead,
    /// A bare repository has no working tree to compare.
    #[error("the repository has no working tree (bare)")]
    Bare,
    /// A path is absolute outside the root, or climbs out with `..`.
    #[error("{0}: outside the repository (paths are repository-relative)")]
    OutsideRepository(String),
    /// A path is not a `.noma` document.
    #[error("{0}: not a .noma document")]
    NotADocument(String),
    /// A path exists neither at the merge base nor in the working tree.
    #[error("{0}: no such document at the merge base or in the working tree")]
    UnknownFile(String),
    /// An exclude pattern is not a valid glob.
    #[error("bad exclude pattern {pattern:?}: {msg}")]
    BadGlob {
        /// The pattern.
        pattern: String,
        /// The parser's reason.
        msg: String,
    },
    /// A git failure (object database, index, working tree scan).
    #[error("{0}")]
    Git(#[from] GitError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The failure.
        source: std::io::Error,
    },
}

impl ChangesError {
    /// True when the caller asked for something impossible (bad base, path
    /// or pattern); false for faults of the system (git, I/O).
    pub fn is_user_error(&self) -> bool {
        !matches!(self, ChangesError::Git(_) | ChangesError::Io { .. })
    }
}

/// How a document differs from the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DocChange {
    /// New since the base.
    Added,
    /// Present on both sides with different bytes.
    Modified,
    /// Gone since the base.
    Removed,
    /// Moved since the base (`old_path` says from where), maybe edited.
    Renamed,
}

/// Block counts of one document (skipped blocks are not counted here).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Added blocks.
    pub added: usize,
    /// Modified blocks.
    pub modified: usize,
    /// Removed blocks.
    pub removed: usize,
    /// Renamed blocks.
    pub renamed: usize,
    /// Moved blocks.
    pub moved: usize,
    /// Changed blocks already reconciled at their current hash.
    pub skipped: usize,
}

impl Counts {
    fn add(&mut self, c: Change) {
        match c {
            Change::Added => self.added += 1,
            Change::Modified => self.modified += 1,
            Change::Removed => self.removed += 1,
            Change::Renamed => self.renamed += 1,
            Change::Moved => self.moved += 1,
        }
    }
}

/// One changed document with its changed blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocBlocks {
    /// Repository-relative path.
    pub path: String,
    /// The path at the merge base, for a renamed document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// How the document differs.
    pub change: DocChange,
    /// sha256 of the working-tree bytes (absent when removed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// sha256 of the bytes at the merge base (absent when added).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_sha256: Option<String>,
    /// Lines outside every block (frontmatter, loose text) changed.
    pub outside_blocks_changed: bool,
    /// Counts of `blocks` by change.
    pub counts: Counts,
    /// The smallest changed blocks, not yet reconciled.
    pub blocks: Vec<BlockChange>,
    /// Ids of changed blocks already reconciled at their current hash.
    pub skipped: Vec<String>,
    /// Why the document could not be diffed (not UTF-8 text, unreadable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Answer of [`changed_blocks`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedBlocks {
    /// The base as asked.
    pub base: String,
    /// The merge base commit compared against.
    pub merge_base: String,
    /// Changed documents, sorted by path.
    pub docs: Vec<DocBlocks>,
    /// Changed documents left out by `exclude_patterns`.
    pub excluded: Vec<String>,
    /// Problems that did not stop the query (an ignored corrupt state file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// One entry of [`list_changed_docs`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedDoc {
    /// Repository-relative path.
    pub path: String,
    /// The path at the merge base, for a renamed document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// How the document differs.
    pub change: DocChange,
    /// Block counts.
    pub counts: Counts,
    /// Lines outside every block changed.
    pub outside_blocks_changed: bool,
    /// Why the document could not be diffed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Answer of [`list_changed_docs`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedDocs {
    /// The base as asked.
    pub base: String,
    /// The merge base commit compared against.
    pub merge_base: String,
    /// Changed documents, sorted by path.
    pub docs: Vec<ChangedDoc>,
    /// Problems that did not stop the query.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// Answer of [`mark_reconciled`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Marked {
    /// Block versions recorded.
    pub updated: usize,
    /// Documents whose marks were replaced.
    pub docs: usize,
    /// Problems that did not stop the command.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// Answer of [`snapshot_state`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// Absolute path of the written file.
    pub state_path: String,
    /// Documents in the snapshot.
    pub docs: usize,
    /// Block versions in the snapshot.
    pub blocks: usize,
    /// HEAD at snapshot time (empty on an unborn branch).
    pub git_hash: String,
    /// Problems that did not stop the command.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// Answer of [`clear_cache`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cleared {
    /// Whether a local store existed and was deleted.
    pub cleared: bool,
}

/// The changed documents with block counts (skipped blocks counted apart).
pub(crate) fn list_changed_docs(
    repo: &Repo,
    base: &str,
    cache: &BlockCache,
) -> Result<ChangedDocs, ChangesError> {
    list_changed_docs_watched(repo, base, cache, None)
}

/// [`list_changed_docs`], listing the changed paths through `watched`
/// (a running process's incremental index) when given.
pub fn list_changed_docs_watched(
    repo: &Repo,
    base: &str,
    cache: &BlockCache,
    watched: Option<&watch::WatchedChanges>,
) -> Result<ChangedDocs, ChangesError> {
    let q = Query {
        base: base.to_string(),
        ..Query::default()
    };
    Ok(changed_blocks_watched(repo, &q, cache, watched)?.into())
}

/// Per document, the smallest changed blocks since the merge base of HEAD
/// with `q.base`; see the module docs.
pub fn changed_blocks(
    repo: &Repo,
    q: &Query,
    cache: &BlockCache,
) -> Result<ChangedBlocks, ChangesError> {
    changed_blocks_watched(repo, q, cache, None)
}

/// [`changed_blocks`], listing the changed paths through `watched` (a
/// running process's incremental index, see [`watch`]) when given; the
/// answer is the same either way.
pub fn changed_blocks_watched(
    repo: &Repo,
    q: &Query,
    cache: &BlockCache,
    watched: Option<&watch::WatchedChanges>,
) -> Result<ChangedBlocks, ChangesError> {
    let (root, merge_base, raw) = compute(repo, q, cache, watched)?;
    let mut notices = Vec::new();
    let marks = if q.bypass_cache {
        state::Store::default()
    } else {
        let mut s = state::load_store(&root, &mut notices);
        if let Some(snap) = state::load_snapshot(&root, &mut notices) {
            s.merge_snapshot(snap);
        }
        s
    };
    let docs = raw
        .docs
        .into_iter()
        .map(|d| {
            let mut counts = Counts::default();
            let mut blocks = Vec::new();
            let mut skipped = Vec::new();
            for mut b in d.diff.changes {
                let sha = b
                    .sha256
                    .as_deref()
                    .or(b.old_sha256.as_deref())
                    .unwrap_or("");
                if marks.contains(&d.path, &b.id, sha) {
                    counts.skipped += 1;
                    skipped.push(b.id);
                    continue;
                }
                if !q.include_old_source {
                    b.old_source = None;
                }
                counts.add(b.change);
                blocks.push(b);
            }
            DocBlocks {
                path: d.path,
                old_path: d.old_path,
                change: d.change,
                sha256: d.sha256,
                old_sha256: d.old_sha256,
                outside_blocks_changed: d.diff.outside_blocks_changed,
                counts,
                blocks,
                skipped,
                error: d.error,
            }
        })
        .collect();
    Ok(ChangedBlocks {
        base: q.base.clone(),
        merge_base: merge_base.to_string(),
        docs,
        excluded: raw.excluded,
        notices,
    })
}

/// Records the changed blocks of `files` (as they are now, against the
/// merge base with `base`) as reconciled, replacing earlier marks of those
/// documents. Returns how many block versions were recorded.
pub fn mark_reconciled(
    repo: &Repo,
    base: &str,
    files: &[String],
    cache: &BlockCache,
) -> Result<Marked, ChangesError> {
    let q = Query {
        base: base.to_string(),
        files: files.to_vec(),
        bypass_cache: false,
        ..Query::default()
    };
    let (root, _, raw) = compute(repo, &q, cache, None)?;
    let mut notices = Vec::new();
    let _lock = lock_store(&root)?;
    let mut store = state::load_store(&root, &mut notices);
    store.version = state::STATE_VERSION;
    // Documents named but unchanged have nothing left to reconcile.
    let mut paths: BTreeSet<String> = raw.selected.into_iter().collect();
    let mut updated = 0;
    for d in &raw.docs {
        paths.insert(d.path.clone());
    }
    for p in &paths {
        store.docs.remove(p);
    }
    for d in raw.docs {
        let entry = store.docs.entry(d.path).or_default();
        for b in d.diff.changes {
            let Some(sha) = b.sha256.or(b.old_sha256) else {
                continue;
            };
            if entry.entry(b.id).or_default().insert(sha) {
                updated += 1;
            }
        }
    }
    store.docs.retain(|_, ids| !ids.is_empty());
    let path = root.join(state::STORE_PATH);
    state::write_atomic(&path, &state::to_pretty(&store)).map_err(|e| ChangesError::Io {
        path: path.display().to_string(),
        source: e,
    })?;
    Ok(Marked {
        updated,
        docs: paths.len(),
        notices,
    })
}

/// Takes the local store's lock (see [`state::lock_store`]).
fn lock_store(root: &std::path::Path) -> Result<state::StoreLock, ChangesError> {
    state::lock_store(root).map_err(|e| ChangesError::Io {
        path: root.join(state::STORE_LOCK_PATH).display().to_string(),
        source: e,
    })
}

/// Deletes the local reconciliation store (not the committed snapshot, not
/// the block cache).
pub fn clear_cache(repo: &Repo) -> Result<Cleared, ChangesError> {
    let root = repo.workdir().ok_or(ChangesError::Bare)?;
    let path = root.join(state::STORE_PATH);
    if !path.exists() {
        return Ok(Cleared { cleared: false });
    }
    let _lock = lock_store(&root)?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(Cleared { cleared: true }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Cleared { cleared: false }),
        Err(e) => Err(ChangesError::Io {
            path: path.display().to_string(),
            source: e,
        }),
    }
}

/// Writes `.noma/reconciliation_state.json`: the local store's marks, HEAD,
/// and each marked document's current sha256 — a baseline to commit.
pub fn snapshot_state(repo: &Repo) -> Result<Snapshot, ChangesError> {
    let root = repo.workdir().ok_or(ChangesError::Bare)?;
    let mut notices = Vec::new();
    let store = state::load_store(&root, &mut notices);
    let git_hash = repo
        .head_commit()
        .map(|c| c.to_string())
        .unwrap_or_default();
    let mut docs = std::collections::BTreeMap::new();
    let mut blocks = 0;
    for (path, ids) in store.docs {
        let sha256 = match std::fs::read(root.join(&path)) {
            Ok(bytes) => Some(sha256_hex(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ChangesError::Io { path, source: e });
            }
        };
        blocks += ids.values().map(BTreeSet::len).sum::<usize>();
        docs.insert(
            path,
            state::SnapshotDoc {
                sha256,
                blocks: ids,
            },
        );
    }
    let file = state::SnapshotFile {
        version: state::STATE_VERSION,
        git_hash: git_hash.clone(),
        docs,
    };
    let path = root.join(state::SNAPSHOT_PATH);
    state::write_atomic(&path, &state::to_pretty(&file)).map_err(|e| ChangesError::Io {
        path: path.display().to_string(),
        source: e,
    })?;
    Ok(Snapshot {
        state_path: path.display().to_string(),
        docs: file.docs.len(),
        blocks,
        git_hash,
        notices,
    })
}

/// One diffed document before reconciliation filtering.
struct RawDoc {
    path: String,
    old_path: Option<String>,
    change: DocChange,
    sha256: Option<String>,
    old_sha256: Option<String>,
    diff: DocDiff,
    error: Option<String>,
}

struct Raw {
    docs: Vec<RawDoc>,
    excluded: Vec<String>,
    /// The validated `files` of the query.
    selected: Vec<String>,
}

/// Turns a caller's path into a repository-relative `/` path, refusing
/// anything that leaves the root.
fn relative_path(root: &Path, given: &str) -> Result<String, ChangesError> {
    let outside = || ChangesError::OutsideRepository(given.to_string());
    let p = Path::new(given);
    let rel: PathBuf = if p.is_absolute() {
        let canon_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        match p
            .strip_prefix(root)
            .or_else(|_| p.strip_prefix(&canon_root))
        {
            Ok(r) => r.to_path_buf(),
            Err(_) => return Err(outside()),
        }
    } else {
        p.to_path_buf()
    };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str().ok_or_else(outside)?.to_string()),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(outside())
            }
        }
    }
    if parts.is_empty() {
        return Err(outside());
    }
    let joined = parts.join("/");
    if !joined.ends_with(".noma") {
        return Err(ChangesError::NotADocument(given.to_string()));
    }
    Ok(joined)
}

fn exclude_set(patterns: &[String]) -> Result<globset::GlobSet, ChangesError> {
    let mut b = globset::GlobSetBuilder::new();
    for p in patterns {
        let g = globset::GlobBuilder::new(p)
            .literal_separator(false)
            .build()
            .map_err(|e| ChangesError::BadGlob {
                pattern: p.clone(),
                msg: e.kind().to_string(),
            })?;
        b.add(g);
    }
    b.build().map_err(|e| ChangesError::BadGlob {
        pattern: patterns.join(" "),
        msg: e.to_string(),
    })
}

/// Block table of one version: from `cache` (by blob id or content), or
/// computed when the cache is bypassed (`None`).
fn info(cache: Option<&BlockCache>, blob: Option<Oid>, text: &str) -> Arc<DocInfo> {
    let Some(cache) = cache else {
        return Arc::new(DocInfo {
            sha256: sha256_hex(text.as_bytes()),
            blocks: block_hashes(text, &noma_core::doc::parse(text)),
        });
    };
    match blob {
        Some(id) => cache.doc_info_for_blob(&id.to_string(), text),
        None => cache.doc_info(text),
    }
}

/// The shared core: validate, diff the trees, diff each changed document.
fn compute(
    repo: &Repo,
    q: &Query,
    cache: &BlockCache,
    watched: Option<&watch::WatchedChanges>,
) -> Result<(PathBuf, Oid, Raw), ChangesError> {
    let root = repo.workdir().ok_or(ChangesError::Bare)?;
    let mb = merge_base_with(repo, &q.base)?;
    let excludes = exclude_set(&q.exclude_patterns)?;
    let selected = selected_files(repo, &root, mb, &q.files)?;
    let changed = changed_documents(repo, mb, &selected, watched)?;
    let mut docs = Vec::new();
    let mut excluded = Vec::new();
    for c in &changed {
        if !c.path.ends_with(".noma") {
            continue;
        }
        if !excludes.is_empty() && excludes.is_match(&c.path) {
            excluded.push(c.path.clone());
            continue;
        }
        if let Some(doc) = diff_changed(repo, &root, (!q.bypass_cache).then_some(cache), c)? {
            docs.push(doc);
        }
    }
    docs.sort_by(|a, b| a.path.cmp(&b.path));
    excluded.sort();
    Ok((
        root,
        mb,
        Raw {
            docs,
            excluded,
            selected,
        },
    ))
}

/// The merge base of HEAD and the revision `base` names.
fn merge_base_with(repo: &Repo, base: &str) -> Result<Oid, ChangesError> {
    let base_id = repo
        .resolve_base(base)
        .map_err(|e| ChangesError::UnknownBase {
            rev: base.to_string(),
            msg: format!("{}{}", e.detail(), repo.shallow_note_for(base)),
        })?;
    let head = repo.head_commit().ok_or(ChangesError::UnbornHead)?;
    repo.merge_base(base_id, head)
        .ok_or_else(|| ChangesError::NoMergeBase(base.to_string(), repo.shallow_note_for(base)))
}

/// The query's `files` as repository-relative paths, each a document at
/// the merge base `mb` or in the working tree.
fn selected_files(
    repo: &Repo,
    root: &Path,
    mb: Oid,
    files: &[String],
) -> Result<Vec<String>, ChangesError> {
    let mut selected = Vec::with_capacity(files.len());
    for f in files {
        let rel = relative_path(root, f)?;
        let in_base = repo.blob_id_at(mb, &rel)?.is_some();
        if !in_base && !root.join(&rel).is_file() {
            return Err(ChangesError::UnknownFile(f.clone()));
        }
        selected.push(rel);
    }
    Ok(selected)
}

/// A path changed since the merge base.
struct Changed {
    path: String,
    /// Its path at the merge base when renamed.
    old_path: Option<String>,
    /// Its blob at the merge base.
    old_id: Option<Oid>,
    /// It is in the working tree.
    has_new: bool,
}

/// The paths changed since `mb` that the selection names (all when it
/// is empty). The whole diff, narrowed afterwards: a document moved since
/// the base is one rename only when git sees both of its paths, and
/// naming either path asks about that document.
fn changed_documents(
    repo: &Repo,
    mb: Oid,
    selected: &[String],
    watched: Option<&watch::WatchedChanges>,
) -> Result<Vec<Changed>, ChangesError> {
    let named = |c: &crate::git::repo::StagedChange| {
        selected.is_empty()
            || selected.contains(&c.path)
            || c.old_path.as_ref().is_some_and(|p| selected.contains(p))
    };
    let listing = match watched {
        Some(w) => w.worktree_changes(repo, mb)?.0,
        None => repo.worktree_changes(mb, "*.noma")?,
    };
    Ok(listing
        .into_iter()
        .filter(named)
        .map(|c| Changed {
            has_new: c.kind != crate::git::repo::ChangeKind::Deleted,
            path: c.path,
            old_path: c.old_path,
            old_id: c.old_id,
        })
        .collect())
}

/// Reads both versions of the changed document `c` and diffs them; None
/// when nothing changed (same bytes, same path).
fn diff_changed(
    repo: &Repo,
    root: &Path,
    cache: Option<&BlockCache>,
    c: &Changed,
) -> Result<Option<RawDoc>, ChangesError> {
    let path = c.path.as_str();
    // A document renamed from (or to) something that is not a
    // document is an addition (or is not ours).
    let old_path = c.old_path.as_deref().filter(|p| p.ends_with(".noma"));
    let old_bytes = match c.old_id {
        Some(id) => Some(repo.blob(id)?),
        None => None,
    };
    let new_bytes = if c.has_new {
        match std::fs::read(root.join(path)) {
            Ok(b) => Some(b),
            // Gone between the scan and the read, or not a file.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ChangesError::Io {
                    path: path.to_string(),
                    source: e,
                })
            }
        }
    } else {
        None
    };
    if old_bytes == new_bytes && old_path.is_none() {
        return Ok(None);
    }
    Ok(Some(diff_one(
        cache,
        Versions {
            path,
            old_path,
            old_id: c.old_id,
            old: old_bytes,
            new: new_bytes,
        },
    )))
}

/// One changed document's two versions, either of which may be absent.
struct Versions<'a> {
    /// Its path now.
    path: &'a str,
    /// Its path at the merge base, when renamed.
    old_path: Option<&'a str>,
    /// The blob of the old version (its block table is cached by it).
    old_id: Option<Oid>,
    /// The bytes at the merge base.
    old: Option<Vec<u8>>,
    /// The bytes now.
    new: Option<Vec<u8>>,
}

/// A version of a changed document that is no readable `.noma` text.
#[derive(Debug, thiserror::Error)]
#[error("{side}: {error}")]
struct Undecodable {
    /// Which version: at the merge base, or now.
    side: &'static str,
    error: noma_core::doc::source::SourceError,
}

/// Diffs one document's two versions; block tables from `cache` unless
/// it is bypassed (`None`).
fn diff_one(cache: Option<&BlockCache>, v: Versions<'_>) -> RawDoc {
    let Versions {
        mut path,
        old_path,
        old_id,
        old,
        new,
    } = v;
    let (change, old_path) = match (&old, &new) {
        (None, _) => (DocChange::Added, None),
        (_, None) => {
            // Moved, then deleted from the working tree: the old document is gone.
            path = old_path.unwrap_or(path);
            (DocChange::Removed, None)
        }
        _ if old_path.is_some() => (DocChange::Renamed, old_path),
        _ => (DocChange::Modified, None),
    };
    let mut doc = RawDoc {
        path: path.to_string(),
        old_path: old_path.map(str::to_string),
        change,
        sha256: new.as_deref().map(sha256_hex),
        old_sha256: old.as_deref().map(sha256_hex),
        diff: DocDiff::default(),
        error: None,
    };
    let decode = |bytes: &Option<Vec<u8>>, side: &'static str| -> Result<String, Undecodable> {
        match bytes {
            None => Ok(String::new()),
            Some(b) => noma_core::doc::source::decode(path, b)
                .map(str::to_string)
                .map_err(|error| Undecodable { side, error }),
        }
    };
    let (old_text, new_text) = match (decode(&old, "at the merge base"), decode(&new, "now")) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) | (_, Err(e)) => {
            doc.error = Some(e.to_string());
            return doc;
        }
    };
    let oi = info(cache, old_id, &old_text);
    let ni = info(cache, None, &new_text);
    doc.diff = diff_blocks(
        Side {
            text: &old_text,
            blocks: &oi.blocks,
        },
        Side {
            text: &new_text,
            blocks: &ni.blocks,
        },
    );
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_testutil::git;

    /// The `git` CLI listing (used when git can run) and the libgit2 one
    /// (the fallback) agree on committed, staged, unstaged, untracked,
    /// deleted and ignored paths, with and without explicit files.
    #[test]
    fn cli_and_libgit2_listings_agree() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(d.join("sub dir")).unwrap();
        for f in [
            "keep.noma",
            "edit.noma",
            "gone.noma",
            "sub dir/staged.noma",
            "notes.txt",
            "moved.noma",
        ] {
            std::fs::write(d.join(f), format!("# {f}\n")).unwrap();
        }
        let long: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(d.join("moved-edited.noma"), &long).unwrap();
        std::fs::write(d.join(".gitignore"), "ignored.noma\n").unwrap();
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "base"]);
        let base = Repo::discover(d).unwrap().head_commit().unwrap();
        std::fs::write(d.join("edit.noma"), "# edited\n").unwrap();
        std::fs::write(d.join("sub dir/staged.noma"), "# staged\n").unwrap();
        git(d, &["add", "sub dir/staged.noma"]);
        std::fs::remove_file(d.join("gone.noma")).unwrap();
        std::fs::write(d.join("new.noma"), "# new\n").unwrap();
        std::fs::write(d.join("ignored.noma"), "# ignored\n").unwrap();
        std::fs::write(d.join("notes.txt"), "changed\n").unwrap();
        git(d, &["mv", "moved.noma", "sub dir/moved.noma"]);
        git(d, &["mv", "moved-edited.noma", "edited-move.noma"]);
        std::fs::write(d.join("edited-move.noma"), long.replace("line 3", "LINE 3")).unwrap();
        let repo = Repo::discover(d).unwrap();
        type Tuple = (String, Option<String>, Option<Oid>, bool);
        let tuples = |list: Vec<crate::git::repo::StagedChange>| -> Vec<Tuple> {
            list.into_iter()
                .map(|c| {
                    let has_new = c.kind != crate::git::repo::ChangeKind::Deleted;
                    (c.path, c.old_path, c.old_id, has_new)
                })
                .collect()
        };
        let cli = tuples(
            repo.worktree_changes_by_cli(base, &["*.noma".into()])
                .expect("git runs")
                .unwrap(),
        );
        let lib = tuples(repo.worktree_changes_by_libgit2(base, "*.noma").unwrap());
        assert_eq!(cli, lib);
        let paths: Vec<(&str, Option<&str>)> =
            cli.iter().map(|c| (c.0.as_str(), c.1.as_deref())).collect();
        assert_eq!(
            paths,
            [
                ("edit.noma", None),
                ("edited-move.noma", Some("moved-edited.noma")),
                ("gone.noma", None),
                ("new.noma", None),
                ("sub dir/moved.noma", Some("moved.noma")),
                ("sub dir/staged.noma", None),
            ]
        );
    }

    #[test]
    fn paths_must_stay_inside_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        assert_eq!(relative_path(root, "a/b.noma").unwrap(), "a/b.noma");
        assert_eq!(relative_path(root, "./a/./b.noma").unwrap(), "a/b.noma");
        let abs = root.join("x.noma");
        assert_eq!(
            relative_path(root, abs.to_str().unwrap()).unwrap(),
            "x.noma"
        );
        for bad in ["../x.noma", "a/../../x.noma", "/etc/x.noma", ".", ""] {
            let e = relative_path(root, bad).unwrap_err();
            assert!(e.is_user_error());
            assert!(
                matches!(e, ChangesError::OutsideRepository(_)),
                "{bad}: {e}"
            );
        }
        assert!(matches!(
            relative_path(root, "a.txt"),
            Err(ChangesError::NotADocument(_))
        ));
    }

    #[test]
    fn bad_globs_are_user_errors() {
        let e = exclude_set(&["a[".to_string()]).unwrap_err();
        assert!(e.is_user_error(), "{e}");
        let set = exclude_set(&["drafts/*".to_string()]).unwrap();
        assert!(set.is_match("drafts/x/y.noma"));
        assert!(!set.is_match("docs/y.noma"));
    }
}
