//! The incremental changed-document listing of a long-running process (the
//! MCP server): a file-system watcher over the work tree keeps, per merge
//! base, the raw listing of [`Repo::worktree_changes`] current, so a query
//! asks git about the paths that changed since the last query only.
//!
//! Why it is exact. The listing is git's diff of the merge base's tree
//! against the working tree through the index (`diff-index -M`) plus the
//! untracked, not ignored files, restricted to `*.noma`. While HEAD, the
//! refs and git's configuration stay as they were (any change there drops
//! the kept listings), a path's entry can change only if its bytes or
//! metadata in the work tree changed, each such change a watcher event
//! naming the path, or if its entry in the index changed. An index rewrite
//! is an event too: the query reads the index file's `.noma` entries
//! (`changes/index_file.rs`) and compares them whole (stat data, object
//! id, mode, flags) with the ones the listings agree with; the paths whose
//! entry differs join the touched paths (none after a `git status` that
//! rewrote the index with the same entries). A query asks git about those
//! paths only (`ls-files --others` for the untracked ones, `diff-index`
//! for the tracked ones and those that left the index) and replaces their
//! entries; the `diff-index` entries are first worked out in-process from
//! the index entry, the merge base's tree entry and the file's stat data
//! (`changes/staged_view.rs`, git's own rule), and git is asked only when
//! that cannot be sure. The index is read before any git process of the
//! query starts, so a rewrite git saw and this read did not is an event
//! the next query takes in. Renames are the one non-local part of git's
//! answer: git pairs deleted with added tracked paths. When a touched path is, was or becomes such a candidate, git is
//! asked about every candidate of the listing together with the touched
//! paths, which is exactly the set the full diff pairs among, so even the
//! pairs are the full diff's.
//!
//! Why it is current. Before answering, the query creates a uniquely named
//! "cookie" file inside `.git/` (watched by the same inotify instance, so
//! its event is queued after every event of a change that finished before
//! the query began) and waits for that event: every earlier event has then
//! been seen. The wait is bounded; past the bound the query scans the whole
//! tree (and the watcher is rebuilt) — a slow answer, never a wrong one.
//!
//! Everything the watcher cannot follow falls back to the full scan: a
//! queue overflow (the kernel's, or the bounded queue between the
//! watcher's thread and the query) or watcher error (watcher rebuilt), any
//! change inside `.git/` other than objects, logs, lock files, `ORIG_HEAD`,
//! `AUTO_MERGE` and the index (HEAD, refs, config, `info/exclude`: the
//! listing is dropped), an index that cannot be followed entry by entry
//! (split or sparse index, unreadable, more than [`MAX_PATHSPECS`] entries
//! changed), a new directory (its watch is added after its first files
//! may have been written: rebuilt), a directory removed or moved away, a changed `.gitignore` or
//! `.gitattributes`, a changed user or system git configuration or global
//! excludes or attributes file (not watched: their length and modification
//! time are compared on each query), too many touched paths, an index with
//! unmerged entries, a repository whose git directory is not `<root>/.git`
//! (linked worktrees), a work tree on a network or host-shared file system
//! (`changes/remote_fs.rs`), a watcher that cannot start (inotify watch
//! limit), or no `git` CLI. Not followed: files the user's git
//! configuration includes (`include.path`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use notify::event::{CreateKind, ModifyKind, RemoveKind, RenameMode};
use notify::{Event, EventKind, RecursiveMode, Watcher};

use super::index_file::{self, IndexEntries};
use super::staged_view::staged_views;
use crate::git::repo::{ChangeKind, GitError, Repo, StagedChange};
use crate::git::Oid;

/// How long a query waits for its cookie before scanning instead.
const COOKIE_WAIT: Duration = Duration::from_secs(5);
/// Past this many pathspecs a query scans the whole tree instead.
const MAX_PATHSPECS: usize = 2000;
/// Merge bases whose listings are kept.
const MAX_BASES: usize = 4;
/// Events queued between two queries at most; past it the next query
/// scans (bounded memory however busy the tree is between queries).
/// Public so a test can overflow it for certain: events still in the
/// kernel's queue when a query starts are drained by that query, so only
/// more than this plus the kernel's `max_queued_events` guarantees a loss.
pub const QUEUE: usize = 1 << 16;
/// How often a query waiting for its cookie looks at the lost flag.
const COOKIE_POLL: Duration = Duration::from_millis(50);
/// The name every cookie file starts with (inside `.git/`).
const COOKIE_PREFIX: &str = "noma-sync-";

/// How a query was answered (for tests and the server's log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// From the kept listing and the paths touched since.
    Incremental,
    /// By scanning the whole work tree.
    FullScan,
}

/// The watched listing of one repository. Queries are serialised.
pub struct WatchedChanges {
    root: PathBuf,
    git_dir: PathBuf,
    inner: Mutex<Inner>,
    /// Git processes incremental answers have started.
    asked: AtomicU64,
}

impl std::fmt::Debug for WatchedChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchedChanges")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

struct Live {
    // Dropping the watcher stops its thread and closes the channel.
    _watcher: notify::RecommendedWatcher,
    events: Receiver<notify::Result<Event>>,
    /// Set by the watcher's thread when an event did not fit the queue.
    lost: Arc<AtomicBool>,
}

/// The kept listing against one merge base.
struct Kept {
    /// `diff-index` entries, in git's order.
    tracked: Vec<StagedChange>,
    /// Untracked, not ignored documents (additions), in git's order.
    untracked: Vec<StagedChange>,
    /// `.noma` paths touched since the listing was made.
    paths: BTreeSet<String>,
    /// `.noma` paths whose index entry changed since the listing was made.
    restaged: BTreeSet<String>,
    last_use: u64,
}

impl Kept {
    /// The listing as [`Repo::worktree_changes_by_cli`] orders it.
    fn listing(&self) -> Vec<StagedChange> {
        let mut out = self.tracked.clone();
        out.extend(self.untracked.iter().cloned());
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }
}

#[derive(Default)]
struct Inner {
    live: Option<Live>,
    /// The watcher must be made anew (overflow, error, new directory).
    rebuild: bool,
    /// Every kept listing must be dropped (git's own state changed).
    invalidate: bool,
    kept: HashMap<Oid, Kept>,
    /// The index's `.noma` entries the kept listings agree with (None:
    /// not read, or not followable: nothing is kept then).
    index: Option<IndexEntries>,
    /// The index file was replaced or written since the last query.
    index_moved: bool,
    /// An earlier read's memory, for the next read of the index.
    spare: Option<IndexEntries>,
    /// The work tree's directories when the watcher started (a path moved
    /// away is a directory of documents only if it is one of these, as
    /// every newer directory rebuilds the watcher).
    dirs: HashSet<PathBuf>,
    clock: u64,
    /// Why the last watcher could not start, if it could not.
    unusable: Option<String>,
    /// The metadata of git's inputs outside the work tree at the last
    /// query (see [`outside_inputs`]).
    outside: Option<Vec<Option<FileStamp>>>,
}

/// A file's length and modification time.
type FileStamp = (u64, Option<SystemTime>);

static COOKIES: AtomicU64 = AtomicU64::new(0);

impl WatchedChanges {
    /// Watches the work tree of `repo`. None when the layout is one this
    /// index cannot follow (bare, or the git directory not `<root>/.git`);
    /// a watcher that cannot start (unsupported file system, inotify watch
    /// limit) makes every query a full scan, and is retried on each query.
    pub fn new(repo: &Repo) -> Option<WatchedChanges> {
        let root = std::fs::canonicalize(repo.workdir()?).ok()?;
        let git_dir = std::fs::canonicalize(repo.git_dir()).ok()?;
        if git_dir != root.join(".git") {
            return None;
        }
        let w = WatchedChanges {
            root,
            git_dir,
            asked: AtomicU64::new(0),
            inner: Mutex::new(Inner {
                rebuild: true,
                ..Inner::default()
            }),
        };
        // Start watching now, so the first query's full scan already
        // begins the incremental life.
        let mut inner = w.inner.lock().ok()?;
        w.restart(&mut inner);
        drop(inner);
        Some(w)
    }

    /// How many git processes incremental answers have started so far
    /// (full scans not counted): the entries of paths git's index and the
    /// work tree settle are worked out in-process (see
    /// `changes/staged_view.rs`), and only the others are asked.
    pub fn git_processes(&self) -> u64 {
        self.asked.load(Ordering::Relaxed)
    }

    /// Why the watcher is not running, if it is not.
    pub fn unusable(&self) -> Option<String> {
        self.inner.lock().ok().and_then(|i| i.unusable.clone())
    }

    /// Makes a new watcher over the whole root (the old one is dropped
    /// first) and drops every kept listing. `watch` returns once every
    /// directory present is watched, so a full scan started after it
    /// misses nothing later events would not report.
    fn restart(&self, inner: &mut Inner) {
        inner.live = None;
        inner.kept.clear();
        inner.index = None;
        inner.index_moved = false;
        inner.dirs.clear();
        inner.invalidate = false;
        inner.rebuild = false;
        if let Some(fs) = super::remote_fs::remote_file_system(&self.root) {
            inner.unusable = Some(format!(
                "the work tree is on {fs}, where changes made elsewhere are no events"
            ));
            inner.rebuild = true;
            return;
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let lost = Arc::new(AtomicBool::new(false));
        let handler = queue_events(tx, Arc::clone(&lost));
        // Git does not follow symbolic links to directories; neither do we.
        let config = notify::Config::default().with_follow_symlinks(false);
        let started = notify::RecommendedWatcher::new(handler, config).and_then(|mut w| {
            w.watch(&self.root, RecursiveMode::Recursive)?;
            Ok(w)
        });
        match started {
            Ok(w) => {
                inner.live = Some(Live {
                    _watcher: w,
                    events: rx,
                    lost,
                });
                inner.unusable = None;
                // After the watch: a directory made since has an event.
                directories(&self.root, &self.git_dir, &mut inner.dirs);
            }
            Err(e) => {
                inner.unusable = Some(e.to_string());
                inner.rebuild = true;
            }
        }
    }

    /// The listing of [`Repo::worktree_changes`]`(mb, "*.noma")`, kept
    /// current by the watcher; says whether it was answered incrementally.
    pub fn worktree_changes(
        &self,
        repo: &Repo,
        mb: Oid,
    ) -> Result<(Vec<StagedChange>, Answered), GitError> {
        let mut guard = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let inner = &mut *guard;
        if inner.live.is_some() && !self.sync(inner) {
            inner.rebuild = true;
        }
        if inner.rebuild {
            self.restart(inner);
        }
        drop_on_outside_change(repo, inner);
        self.follow_index(inner);
        inner.clock += 1;
        let clock = inner.clock;
        if let (Some(kept), Some(index)) = (inner.kept.get_mut(&mb), inner.index.as_ref()) {
            let at = Refresh {
                repo,
                root: &self.root,
                mb,
                index,
                asked: &self.asked,
            };
            let refreshed = refresh(&at, kept);
            if let Ok(Some(())) = refreshed {
                kept.last_use = clock;
                return Ok((kept.listing(), Answered::Incremental));
            }
            // The touched paths were taken: this listing cannot be
            // brought up to date any more.
            inner.kept.remove(&mb);
            refreshed?;
        }
        if inner.live.is_none() {
            return Ok((repo.worktree_changes(mb, "*.noma")?, Answered::FullScan));
        }
        // The index is read before git starts: a rewrite after this read
        // is an event the next query diffs against what was read here,
        // whether or not git's scan saw it.
        if inner.index.is_none() {
            inner.index = index_file::read(&self.git_dir, inner.spare.take()).ok();
        }
        let scan = repo.start_worktree_scan(mb, &["*.noma".to_string()]);
        let scanned = match scan.finish() {
            Some(found) => {
                let (tracked, untracked) = found?;
                Kept {
                    tracked,
                    untracked,
                    paths: BTreeSet::new(),
                    restaged: BTreeSet::new(),
                    last_use: clock,
                }
            }
            None => return Ok((repo.worktree_changes(mb, "*.noma")?, Answered::FullScan)),
        };
        let listing = scanned.listing();
        if inner.index.is_some() {
            if inner.kept.len() >= MAX_BASES {
                let oldest = inner.kept.iter().min_by_key(|(_, k)| k.last_use);
                if let Some(old) = oldest.map(|(id, _)| *id) {
                    inner.kept.remove(&old);
                }
            }
            inner.kept.insert(mb, scanned);
        }
        Ok((listing, Answered::FullScan))
    }

    /// Takes in a rewritten index: the paths whose entry it changed are
    /// asked about again by each kept listing's next refresh (none after a
    /// stat refresh that changed no entry). An index that cannot be
    /// followed (see [`index_file`]) drops the listings.
    fn follow_index(&self, inner: &mut Inner) {
        if !std::mem::take(&mut inner.index_moved) {
            return;
        }
        let Some(old) = inner.index.take() else {
            return;
        };
        if inner.kept.is_empty() {
            return;
        }
        let new = index_file::read(&self.git_dir, inner.spare.take()).ok();
        let changed = new
            .as_ref()
            .and_then(|new| old.changed_paths(new, MAX_PATHSPECS));
        inner.spare = Some(old);
        match changed {
            Some(changed) => {
                for k in inner.kept.values_mut() {
                    k.restaged.extend(changed.iter().cloned());
                }
                inner.index = new;
            }
            None => inner.kept.clear(),
        }
    }

    /// Waits until every event of a change finished before this call has
    /// been taken in; false when the watcher failed or the cookie did not
    /// come back in time.
    fn sync(&self, inner: &mut Inner) -> bool {
        let n = COOKIES.fetch_add(1, Ordering::Relaxed);
        let name = format!("{COOKIE_PREFIX}{}-{n}", std::process::id());
        let cookie = self.git_dir.join(&name);
        if std::fs::write(&cookie, b"").is_err() {
            return false;
        }
        let deadline = Instant::now() + COOKIE_WAIT;
        let mut seen = false;
        while !seen {
            let Some(live) = inner.live.as_ref() else {
                break;
            };
            // An event was dropped (the cookie's may be one): scan.
            if live.lost.load(Ordering::Acquire) {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match live.events.recv_timeout(left.min(COOKIE_POLL)) {
                Ok(Ok(ev)) => {
                    if ev.need_rescan() {
                        inner.rebuild = true;
                    }
                    if ev.paths.iter().any(|p| p == &cookie) && is_create(&ev.kind) {
                        seen = true;
                    } else {
                        self.take(inner, &ev);
                    }
                }
                Ok(Err(_)) => inner.rebuild = true,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        let _ = std::fs::remove_file(&cookie);
        let lost = inner
            .live
            .as_ref()
            .is_none_or(|l| l.lost.load(Ordering::Acquire));
        seen && !lost
    }

    /// Files one event into the kept listings' touched paths or flags.
    fn take(&self, inner: &mut Inner, ev: &Event) {
        if matches!(ev.kind, EventKind::Access(_)) {
            return;
        }
        for p in &ev.paths {
            match Self::classify(&ev.kind, p, &self.root, &self.git_dir) {
                Touch::Nothing => {}
                Touch::Rebuild => inner.rebuild = true,
                Touch::Invalidate => inner.invalidate = true,
                Touch::Index => inner.index_moved = true,
                // A directory named like a document holds documents.
                Touch::Path(_) if inner.dirs.contains(p) => inner.invalidate = true,
                Touch::Path(rel) => inner.kept.values_mut().for_each(|k| {
                    k.paths.insert(rel.clone());
                }),
                Touch::Directory => {
                    if inner.dirs.contains(p) {
                        inner.invalidate = true;
                    }
                }
            }
        }
    }

    fn classify(kind: &EventKind, p: &Path, root: &Path, git_dir: &Path) -> Touch {
        if let Ok(rel) = p.strip_prefix(git_dir) {
            return Self::classify_git(rel);
        }
        let Ok(rel) = p.strip_prefix(root) else {
            return Touch::Nothing;
        };
        let Some(rel) = rel.to_str().map(|s| s.replace('\\', "/")) else {
            return Touch::Rebuild;
        };
        if rel.is_empty() {
            // The root itself moved or went away.
            return Touch::Rebuild;
        }
        let arrived = matches!(
            kind,
            EventKind::Create(_)
                | EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both))
        );
        if arrived && (matches!(kind, EventKind::Create(CreateKind::Folder)) || p.is_dir()) {
            return Touch::Rebuild;
        }
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        if rel.ends_with(".noma") {
            return Touch::Path(rel);
        }
        if name == ".gitignore" || name == ".gitattributes" {
            return Touch::Invalidate;
        }
        match kind {
            EventKind::Remove(RemoveKind::Folder) => Touch::Invalidate,
            // Gone: a directory of documents if it was a directory.
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_)) => Touch::Directory,
            _ => Touch::Nothing,
        }
    }
}

impl WatchedChanges {
    /// What a change of `rel` inside the git directory means. Lock files
    /// are nothing: git replaces a file by renaming its lock onto it, and
    /// that rename is an event naming the file itself. `ORIG_HEAD` (which
    /// `git reset` writes) and `AUTO_MERGE` (the tree a merge, `stash pop`
    /// among them, leaves for `git diff AUTO_MERGE`, removed by the next
    /// `git reset`) are no inputs of the listing.
    fn classify_git(rel: &Path) -> Touch {
        if rel == Path::new("index") {
            return Touch::Index;
        }
        let first = rel.components().next().map(|c| c.as_os_str());
        let ignorable = first.is_some_and(|f| {
            f == "objects"
                || f == "logs"
                || f == "ORIG_HEAD"
                || f == "AUTO_MERGE"
                || f.to_str().is_some_and(|s| s.starts_with(COOKIE_PREFIX))
        });
        let lock = rel.extension().is_some_and(|x| x == "lock");
        if ignorable || lock {
            Touch::Nothing
        } else {
            Touch::Invalidate
        }
    }
}

/// The watcher thread's handler: queues every event but reads (the
/// watcher reports opens and closes, which never change git's answer),
/// and flags `lost` instead of blocking when the queue is full.
fn queue_events(
    tx: SyncSender<notify::Result<Event>>,
    lost: Arc<AtomicBool>,
) -> impl FnMut(notify::Result<Event>) + Send + 'static {
    move |ev| {
        if matches!(&ev, Ok(e) if matches!(e.kind, EventKind::Access(_))) {
            return;
        }
        if let Err(TrySendError::Full(_)) = tx.try_send(ev) {
            lost.store(true, Ordering::Release);
        }
    }
}

enum Touch {
    Nothing,
    Rebuild,
    Invalidate,
    /// The index file was written or replaced.
    Index,
    Path(String),
    /// A path that left: a directory of documents if it was a directory.
    Directory,
}

fn is_create(kind: &EventKind) -> bool {
    matches!(kind, EventKind::Create(_))
}

/// Git's inputs outside the work tree that decide what is ignored or how
/// files compare: the user's and the system's configuration and the
/// global excludes and attributes files (files they include are not
/// followed).
fn outside_inputs(repo: &Repo) -> Vec<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME");
    let xdg = var("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    let mut files = Vec::new();
    match var("GIT_CONFIG_GLOBAL") {
        Some(g) => files.push(g),
        None => {
            files.extend(home.as_ref().map(|h| h.join(".gitconfig")));
            files.extend(xdg.as_ref().map(|x| x.join("git/config")));
        }
    }
    if var("GIT_CONFIG_NOSYSTEM").is_none() {
        files.push(var("GIT_CONFIG_SYSTEM").unwrap_or_else(|| "/etc/gitconfig".into()));
    }
    for (key, default) in [
        ("core.excludesFile", "git/ignore"),
        ("core.attributesFile", "git/attributes"),
    ] {
        match repo.config_string(key) {
            Some(v) => match (v.strip_prefix("~/"), &home) {
                (Some(rest), Some(h)) => files.push(h.join(rest)),
                _ => files.push(PathBuf::from(v)),
            },
            None => files.extend(xdg.as_ref().map(|x| x.join(default))),
        }
    }
    files
}

/// `path`'s length and modification time (None: absent or unreadable).
fn stamp(path: &Path) -> Option<FileStamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()))
}

/// Every directory under `root` but `.git`.
fn directories(root: &Path, git_dir: &Path, out: &mut HashSet<PathBuf>) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let p = e.path();
                if p != git_dir {
                    out.insert(p.clone());
                    stack.push(p);
                }
            }
        }
    }
}

/// A rename candidate of git's pairing: a deletion, an addition of a
/// tracked path (the `diff-index` half holds no other), or a pair.
fn candidate(c: &StagedChange) -> bool {
    matches!(
        c.kind,
        ChangeKind::Deleted | ChangeKind::Added | ChangeKind::Renamed
    )
}

fn literal<'a>(paths: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    paths
        .into_iter()
        .map(|p| format!(":(literal){p}"))
        .collect()
}

/// What [`refresh`] works from.
struct Refresh<'a> {
    repo: &'a Repo,
    root: &'a Path,
    mb: Oid,
    index: &'a IndexEntries,
    asked: &'a AtomicU64,
}

impl Refresh<'_> {
    /// `git diff-index` of the merge base for `paths` (counted).
    fn tracked(&self, paths: &BTreeSet<String>) -> Option<Result<Vec<StagedChange>, GitError>> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        self.repo.tracked_changes_by_cli(self.mb, &literal(paths))
    }
}

/// Drops the kept listings when asked to, or when the user's
/// configuration or global ignore rules changed: the watcher does not see
/// them.
fn drop_on_outside_change(repo: &Repo, inner: &mut Inner) {
    let outside: Vec<_> = outside_inputs(repo).iter().map(|f| stamp(f)).collect();
    if inner.outside.as_ref() != Some(&outside) {
        inner.invalidate = true;
        inner.outside = Some(outside);
    }
    if inner.invalidate {
        inner.kept.clear();
        inner.index = None;
        inner.invalidate = false;
    }
}

/// Whether `c` is about one of `set`'s paths (as its path or a rename's
/// old path).
fn involves(c: &StagedChange, set: &BTreeSet<String>) -> bool {
    set.contains(&c.path) || c.old_path.as_ref().is_some_and(|o| set.contains(o))
}

/// Brings `kept` up to date by asking git about its touched and
/// restaged paths only (see the module docs), or by working their
/// entries out in-process when the index and the work tree settle
/// them (`changes/staged_view.rs`); None when git cannot run or too
/// many paths were touched (the caller scans instead).
fn refresh(at: &Refresh<'_>, kept: &mut Kept) -> Result<Option<()>, GitError> {
    let (repo, index) = (at.repo, at.index);
    let restaged = std::mem::take(&mut kept.restaged);
    let mut touched = std::mem::take(&mut kept.paths);
    touched.extend(restaged.iter().cloned());
    let (mut known, unknown): (BTreeSet<String>, BTreeSet<String>) =
        touched.into_iter().partition(|p| index.contains(p));
    if known.len() + unknown.len() > MAX_PATHSPECS {
        return Ok(None);
    }
    // A tracked path is no untracked file (it may just have been added).
    kept.untracked.retain(|c| !known.contains(&c.path));
    if !unknown.is_empty() {
        at.asked.fetch_add(1, Ordering::Relaxed);
        let Some(found) = repo.untracked_by_cli(&literal(&unknown)) else {
            return Ok(None);
        };
        let found = found?;
        kept.untracked.retain(|c| !unknown.contains(&c.path));
        kept.untracked.extend(found);
    }
    // A path that left the index: its tracked entry (a deletion, or none)
    // follows from the index alone, so only a restaged one is asked.
    known.extend(unknown.into_iter().filter(|p| restaged.contains(p)));
    if known.is_empty() {
        return Ok(Some(()));
    }
    let paired = kept
        .tracked
        .iter()
        .any(|c| candidate(c) && involves(c, &known));
    // A pair involving a touched path may dissolve, leaving its other
    // path's entry to git.
    let renamed = kept
        .tracked
        .iter()
        .any(|c| c.kind == ChangeKind::Renamed && involves(c, &known));
    let found = match renamed {
        true => None,
        false => match staged_views(repo, at.root, at.mb, index, &known) {
            Some(found) => Some(found),
            None if !paired => match at.tracked(&known) {
                Some(found) => Some(found?),
                None => return Ok(None),
            },
            None => None,
        },
    };
    if let Some(found) = found {
        // No candidate before or after: the pairs among the others
        // stay. Git pairs a deletion with an addition: with no deletion
        // or no addition in the whole listing there is no pair at all.
        let candidates: Vec<&StagedChange> = kept
            .tracked
            .iter()
            .filter(|c| !known.contains(&c.path))
            .chain(&found)
            .filter(|c| candidate(c))
            .collect();
        let sources = candidates.iter().any(|c| c.kind != ChangeKind::Added);
        let targets = candidates.iter().any(|c| c.kind != ChangeKind::Deleted);
        if (!paired && !found.iter().any(candidate)) || !(sources && targets) {
            kept.tracked.retain(|c| !known.contains(&c.path));
            kept.tracked.extend(found);
            return Ok(Some(()));
        }
    }
    ask_with_candidates(at, kept, known)
}

/// Asks git about `known` and every rename candidate of `kept` (pairs may
/// change) and replaces their entries; None when git cannot run or too
/// many paths are involved.
fn ask_with_candidates(
    at: &Refresh<'_>,
    kept: &mut Kept,
    known: BTreeSet<String>,
) -> Result<Option<()>, GitError> {
    let mut set = known;
    for c in kept.tracked.iter().filter(|c| candidate(c)) {
        set.insert(c.path.clone());
        if let Some(o) = &c.old_path {
            set.insert(o.clone());
        }
    }
    if set.len() > MAX_PATHSPECS {
        return Ok(None);
    }
    let Some(found) = at.tracked(&set) else {
        return Ok(None);
    };
    let found = found?;
    kept.tracked.retain(|c| !involves(c, &set));
    kept.tracked.extend(found);
    Ok(Some(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_candidates_are_deletions_additions_and_pairs() {
        let change = |kind| StagedChange {
            kind,
            path: "a.noma".into(),
            old_path: None,
            new_id: None,
            old_id: None,
            new_link: false,
        };
        assert!(candidate(&change(ChangeKind::Deleted)));
        assert!(candidate(&change(ChangeKind::Added)));
        assert!(candidate(&change(ChangeKind::Renamed)));
        assert!(!candidate(&change(ChangeKind::Modified)));
        assert_eq!(
            literal(&["a b.noma".to_string()]),
            [":(literal)a b.noma".to_string()]
        );
    }
}
