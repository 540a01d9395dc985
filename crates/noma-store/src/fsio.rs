//! File utilities shared by the engine and the shells: bounded reads of
//! regular files only, an advisory lock on the transcript, a single-write
//! append, an atomic replace, the intent marker of a patch request, and
//! the `.noma` documents under a directory. Every file noma writes is
//! opened by [`contain::open_write`].

pub mod contain;

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Files larger than this are refused unless `NOMA_MAX_FILE_BYTES` says
/// otherwise: generous for documents and transcripts, small enough that a
/// mistaken path (a disk image, `/dev/zero`) fails at once.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// The environment variable that overrides [`DEFAULT_MAX_FILE_BYTES`].
pub const MAX_FILE_BYTES_ENV: &str = "NOMA_MAX_FILE_BYTES";

/// The `.noma` documents under `dir`, sorted: what `.gitignore` (and
/// `.ignore`, `.git/info/exclude`) leaves, hidden directories included
/// (the project's own docs live in `.noma/`) but never `.git`. Symlinks
/// are not followed, so a link cycle cannot loop.
pub fn noma_files_under(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let walk = ignore::WalkBuilder::new(dir)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walk {
        let entry = entry.map_err(|e| match e.into_io_error() {
            Some(io) => io,
            None => io::Error::other("unreadable ignore file"),
        })?;
        let path = entry.path();
        if entry.file_type().is_some_and(|t| t.is_file())
            && path.extension().is_some_and(|x| x == "noma")
        {
            out.push(path.to_path_buf());
        }
    }
    out.sort();
    Ok(out)
}

/// The size cap in force: `NOMA_MAX_FILE_BYTES` when it is a whole number,
/// otherwise [`DEFAULT_MAX_FILE_BYTES`].
pub fn max_file_bytes() -> u64 {
    std::env::var(MAX_FILE_BYTES_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_MAX_FILE_BYTES)
}

/// Refuses anything but a regular file (after following symlinks) and a
/// file over the size cap. A FIFO would block the reader forever and a
/// device can be endless, so both are refused before they are opened.
pub fn check_regular(path: &Path) -> io::Result<std::fs::Metadata> {
    let meta = check_kind(path)?;
    let cap = max_file_bytes();
    if meta.len() > cap {
        return Err(too_big(meta.len(), cap));
    }
    Ok(meta)
}

/// [`check_regular`] without the size cap: for a transcript, which is read
/// a line or a tail at a time and so has no cap of its own.
pub fn check_kind(path: &Path) -> io::Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket or device); noma reads only regular files",
        ));
    }
    Ok(meta)
}

/// A transcript opened to be read a line at a time: FIFOs, devices and
/// directories are refused as [`read_regular`] refuses them (by
/// [`contain::open_read`], which never blocks), but no size cap applies,
/// since memory then follows the longest line, not the file.
pub fn open_lines(path: &Path) -> io::Result<io::BufReader<File>> {
    Ok(io::BufReader::with_capacity(
        64 * 1024,
        contain::open_read(path)?,
    ))
}

fn too_big(len: u64, cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "file of {len} bytes is over the {cap}-byte limit (raise it with {MAX_FILE_BYTES_ENV})"
        ),
    )
}

/// Refuses a write that would make a file `len` bytes long when that is
/// over the size cap: checked before anything is written, so a request
/// that would cross the cap leaves the file as it was (instead of writing
/// a file every later read refuses).
pub fn check_growth(len: u64) -> io::Result<()> {
    let cap = max_file_bytes();
    if len > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the request would make it {len} bytes, over the {cap}-byte limit (raise it with {MAX_FILE_BYTES_ENV}); nothing was written"
            ),
        ));
    }
    Ok(())
}

/// Reads a whole regular file, refusing FIFOs, devices and files over the
/// size cap. The read itself is bounded too, so a file that grows while it
/// is read cannot exhaust memory.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let file = contain::open_read(path)?;
    let cap = max_file_bytes();
    let len = file.metadata()?.len();
    if len > cap {
        return Err(too_big(len, cap));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_big(bytes.len() as u64, cap));
    }
    Ok(bytes)
}

/// Prefix of temp files: `.<doc name>.noma-tmp-<pid>-<random>`.
const TMP_MARK: &str = ".noma-tmp-";

/// An open transcript holding the exclusive advisory lock. The lock is
/// released when this value is dropped (closing the descriptor drops a
/// `flock`), including when the process dies.
///
/// A transcript this value created and left empty (a first write that was
/// refused) is removed on drop, so a refused request leaves no 0-byte
/// `.patches` file behind for `git add -A` to stage.
#[derive(Debug)]
pub struct LockedTranscript {
    file: File,
    path: PathBuf,
    /// This open created the file (it did not exist before).
    created: bool,
}

impl LockedTranscript {
    /// Opens (creating if needed) `path` for append and blocks until the
    /// exclusive lock is ours. The transcript is never renamed, so every
    /// process locks the same inode; a lock won on a file another writer
    /// removed meanwhile (its refused first write) is dropped and taken
    /// again on the file now at `path`.
    pub fn open(path: &Path) -> io::Result<Self> {
        loop {
            let existed = path.symlink_metadata().is_ok();
            // A link, FIFO or device is refused; the size is not: a
            // transcript has no cap of its own (its growth is checked per
            // request).
            let file = contain::open_write(path, contain::WriteMode::Append)?;
            lock_exclusive(&file)?;
            if still_at(&file, path) {
                return Ok(LockedTranscript {
                    file,
                    path: path.to_path_buf(),
                    created: !existed,
                });
            }
        }
    }

    /// Opens an existing transcript read-only under a shared lock: a
    /// verifier sees no append half-done and never changes the file.
    pub fn open_shared(path: &Path) -> io::Result<Self> {
        let file = contain::open_read(path)?;
        lock_shared(&file)?;
        Ok(LockedTranscript {
            file,
            path: path.to_path_buf(),
            created: false,
        })
    }

    /// The file's current length.
    pub fn byte_len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    /// The transcript path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last `max` bytes of the file (all of it when shorter), with the
    /// offset they start at.
    pub fn read_tail(&mut self, max: u64) -> io::Result<(u64, Vec<u8>)> {
        let len = self.file.metadata()?.len();
        let start = len.saturating_sub(max);
        let mut buf = Vec::with_capacity((len - start) as usize);
        self.file.seek(SeekFrom::Start(start))?;
        self.file.read_to_end(&mut buf)?;
        Ok((start, buf))
    }

    /// A buffered reader of the file from its start, for reading it a line
    /// at a time (replay) instead of whole.
    pub fn reader(&mut self) -> io::Result<io::BufReader<&File>> {
        self.file.seek(SeekFrom::Start(0))?;
        Ok(io::BufReader::with_capacity(64 * 1024, &self.file))
    }

    /// The whole file as it is now (bounded by the size cap).
    pub fn read_all(&mut self) -> io::Result<Vec<u8>> {
        self.read_from(0)
    }

    /// The file from byte `start` to its end (the bytes read bounded by the
    /// size cap, not the file).
    pub fn read_from(&mut self, start: u64) -> io::Result<Vec<u8>> {
        let cap = max_file_bytes();
        let len = self.byte_len()?;
        if len.saturating_sub(start) > cap {
            return Err(too_big(len - start, cap));
        }
        let mut buf = Vec::with_capacity(len.saturating_sub(start) as usize);
        self.file.seek(SeekFrom::Start(start))?;
        (&mut self.file).take(cap + 1).read_to_end(&mut buf)?;
        Ok(buf)
    }

    /// Cuts the file to `len` bytes and makes that durable (torn-tail repair).
    pub fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        self.file.sync_all()
    }

    /// Appends `bytes` with one `write(2)` on the O_APPEND descriptor, then
    /// fsyncs. `write_all` only loops if the kernel reports a short write.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.file.write_all(bytes)?;
        self.file.sync_data()
    }
}

impl Drop for LockedTranscript {
    fn drop(&mut self) {
        // Still holding the lock: a writer waiting for it re-checks the
        // path when it wins (`still_at`) and creates the file afresh.
        if self.created && self.file.metadata().is_ok_and(|m| m.len() == 0) {
            remove_if_same(&self.file, &self.path);
        }
    }
}

/// Whether `path` still names the file `file` has open.
#[cfg(unix)]
fn still_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), path.symlink_metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Elsewhere the empty file is kept (see `remove_if_same`), so the path
/// always names the file that was opened.
#[cfg(not(unix))]
fn still_at(_file: &File, _path: &Path) -> bool {
    true
}

/// Removes `path` when it is still `file`. Only on Unix, where a waiting
/// writer can tell (by inode) that the file it locked was removed; on
/// other systems the empty file stays, as it did before.
#[cfg(unix)]
fn remove_if_same(file: &File, path: &Path) {
    if still_at(file, path) {
        // Best effort: the file is empty, so nothing is lost if it stays.
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(not(unix))]
fn remove_if_same(_file: &File, _path: &Path) {}

/// The byte the transcript lock covers, far past any data. Windows' locks
/// are mandatory: a lock over the file's bytes (as `fs4` and std take it)
/// fails every read of them by another handle, so a reader (`noma log`,
/// an editor, a scanner) would fail during a write. A lock on this one
/// byte excludes the other noma processes, which all lock it, and no
/// reader.
#[cfg(windows)]
const LOCK_OFFSET: u64 = 1 << 62;

/// Takes the transcript's exclusive lock, blocking until it is ours:
/// `flock` on Unix (advisory); on Windows `LockFileEx` on one byte past
/// the data ([`LOCK_OFFSET`]).
fn lock_exclusive(file: &File) -> io::Result<()> {
    #[cfg(windows)]
    {
        win_lock(file, true)
    }
    #[cfg(not(windows))]
    {
        // Fully qualified: newer std has an inherent `File::lock` too.
        fs4::FileExt::lock(file)
    }
}

/// Takes the transcript's shared lock (a verifier's), blocking while a
/// writer holds the exclusive one.
fn lock_shared(file: &File) -> io::Result<()> {
    #[cfg(windows)]
    {
        win_lock(file, false)
    }
    #[cfg(not(windows))]
    {
        fs4::FileExt::lock_shared(file)
    }
}

/// `LockFileEx` on the byte at [`LOCK_OFFSET`]; released when the handle
/// is closed (dropping the [`LockedTranscript`]).
#[cfg(windows)]
fn win_lock(file: &File, exclusive: bool) -> io::Result<()> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{LockFileEx, LOCKFILE_EXCLUSIVE_LOCK};
    use windows_sys::Win32::System::IO::OVERLAPPED;
    // SAFETY: a zeroed OVERLAPPED is valid; its offset fields say where
    // the range starts. The handle is open for the call's duration, and a
    // synchronous handle makes the call return only once the lock is held.
    let ok = unsafe {
        let mut ov: OVERLAPPED = std::mem::zeroed();
        ov.Anonymous.Anonymous.Offset = LOCK_OFFSET as u32;
        ov.Anonymous.Anonymous.OffsetHigh = (LOCK_OFFSET >> 32) as u32;
        let flags = if exclusive {
            LOCKFILE_EXCLUSIVE_LOCK
        } else {
            0
        };
        LockFileEx(file.as_raw_handle() as _, flags, 0, 1, 0, &mut ov)
    };
    if ok == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// How long [`retry_transient`] waits before each retry: about 2.5 s in
/// all, as cargo and rustup wait out a scanner or an indexer.
const RETRY_DELAYS_MS: [u64; 8] = [10, 20, 40, 80, 160, 320, 640, 1280];

/// Runs `op`, retrying it with backoff while it fails as a file another
/// process holds open fails on Windows (access denied, sharing or lock
/// violation): an editor's save, a virus scanner or a search indexer
/// has the file for a moment. Elsewhere no error is transient and `op`
/// runs once.
pub fn retry_transient<T>(op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let delays = RETRY_DELAYS_MS.map(std::time::Duration::from_millis);
    retry_when(is_transient, &delays, op)
}

/// [`retry_transient`] with the test of an error and the delays given.
fn retry_when<T>(
    transient: impl Fn(&io::Error) -> bool,
    delays: &[std::time::Duration],
    mut op: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    let mut delays = delays.iter();
    loop {
        match op() {
            Err(e) if transient(&e) => match delays.next() {
                Some(d) => std::thread::sleep(*d),
                None => return Err(e),
            },
            done => return done,
        }
    }
}

/// Whether `e` is Windows' "someone else has the file open" error:
/// ERROR_ACCESS_DENIED (a pending delete or a handle without delete
/// sharing), ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION.
fn is_transient(e: &io::Error) -> bool {
    cfg!(windows) && matches!(e.raw_os_error(), Some(5 | 32 | 33))
}

/// The validator's dataset files, read from the directory a document is
/// in (`src=` is relative to it).
#[derive(Debug, Clone)]
struct DirDatasets {
    dir: PathBuf,
}

/// The validator's dataset files relative to `dir` (the document's
/// directory), for [`noma_core::validate::Options::datasets`].
pub fn datasets_in(
    dir: impl Into<PathBuf>,
) -> std::sync::Arc<dyn noma_core::validate::DatasetFiles> {
    std::sync::Arc::new(DirDatasets { dir: dir.into() })
}

impl noma_core::validate::DatasetFiles for DirDatasets {
    fn readable(&self, src: &str) -> bool {
        let path = self.dir.join(src);
        path.is_file() && File::open(path).is_ok()
    }

    fn read_small(&self, src: &str, max: u64) -> Option<String> {
        let path = self.dir.join(src);
        let small = std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= max);
        small.then(|| std::fs::read_to_string(&path).ok()).flatten()
    }
}

/// Reads a file and checks it is document text. Only regular files under
/// the size cap are read ([`read_regular`]).
pub fn read_document(path: &Path) -> Result<String, noma_core::doc::source::SourceError> {
    let shown = path.display().to_string();
    let bytes = read_regular(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => noma_core::doc::source::SourceError::Missing {
            path: shown.clone(),
        },
        std::io::ErrorKind::IsADirectory => noma_core::doc::source::SourceError::Directory {
            path: shown.clone(),
        },
        _ => noma_core::doc::source::SourceError::Io {
            path: shown.clone(),
            source: e,
        },
    })?;
    noma_core::doc::source::decode_owned(path, bytes)
}

/// Replaces `path` with `bytes` atomically: temp file in the same directory,
/// fsync, rename over the target, fsync of the directory. A crash leaves
/// either the old or the new content, never a mix.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    StagedFile::write(path, bytes)?.commit()
}

/// The first half of [`atomic_write`]: the new content, durable in a temp
/// file beside its target, not yet in place. [`StagedFile::commit`] renames
/// it over the target; dropping it uncommitted removes the temp file. The
/// engine stages a document before it appends the records, then commits
/// once they are durable.
///
/// A target that is a symbolic link (or a FIFO, a device) is refused
/// ([`contain::check_writable`]): the rename would replace the link, and
/// writing through it could land outside the work tree.
#[derive(Debug)]
pub struct StagedFile {
    tmp: PathBuf,
    path: PathBuf,
    committed: bool,
}

impl StagedFile {
    /// Writes and fsyncs `bytes` to a fresh temp file beside `path`.
    pub fn write(path: &Path, bytes: &[u8]) -> io::Result<StagedFile> {
        contain::check_writable(path)?;
        let path = path.to_path_buf();
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
        let tmp_name = format!(
            ".{}{TMP_MARK}{}-{}",
            name.to_string_lossy(),
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        );
        let staged = StagedFile {
            tmp: parent_dir(&path).join(tmp_name),
            path,
            committed: false,
        };
        let mut f = contain::open_write(&staged.tmp, contain::WriteMode::CreateNew)?;
        if let Ok(meta) = std::fs::symlink_metadata(&staged.path) {
            // Keep the document's permissions across the replace.
            let _ = f.set_permissions(meta.permissions());
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        Ok(staged)
    }

    /// Renames the temp file over the target and makes the rename durable.
    /// On Windows a target an editor or a virus scanner holds open without
    /// delete sharing fails the rename for a moment; it is retried with
    /// backoff ([`retry_transient`]) before the error is reported.
    pub fn commit(mut self) -> io::Result<()> {
        retry_transient(|| std::fs::rename(&self.tmp, &self.path))?;
        self.committed = true;
        sync_dir(&parent_dir(&self.path))
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Removes temp files a killed writer of `doc` left behind. Only call it
/// while holding the document's transcript lock: then no live writer owns one.
pub fn remove_stale_temps(doc: &Path) -> usize {
    let Some(name) = doc.file_name() else {
        return 0;
    };
    let prefix = format!(".{}{TMP_MARK}", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(parent_dir(doc)) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix)
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// The write-ahead intent of one patch request: created (durably) before
/// the transcript append and removed after the document rename. It is the
/// only evidence recovery accepts of an interrupted write, so a document a
/// person restored to an earlier state is never "rolled forward".
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Intent {
    /// Transcript length before the append.
    pub transcript_len: u64,
    /// Bytes the append adds.
    pub append_len: u64,
    /// sha256 of the appended bytes.
    pub append_sha256: String,
    /// The document's sha256 before the request.
    pub doc_pre_sha256: String,
    /// The document's sha256 after it.
    pub doc_post_sha256: String,
}

/// Where the intent marker of the transcript at `transcript` lives: a
/// hidden file beside it.
pub fn intent_path(transcript: &Path) -> PathBuf {
    let name = transcript
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent_dir(transcript).join(format!(".{name}.noma-intent"))
}

impl Intent {
    /// Writes the marker and makes it durable (file and directory entry).
    pub fn write(&self, transcript: &Path) -> io::Result<()> {
        let path = intent_path(transcript);
        let mut f = contain::open_write(&path, contain::WriteMode::Replace)?;
        f.write_all(serde_json::to_string(self)?.as_bytes())?;
        f.sync_all()?;
        sync_dir(&parent_dir(&path))
    }

    /// The marker, if one exists. A marker that does not parse is an
    /// `InvalidData` error: it comes from a crash inside [`Intent::write`]
    /// (before the append, so nothing else was written).
    pub fn read(transcript: &Path) -> io::Result<Option<Intent>> {
        let path = intent_path(transcript);
        // A marker is noma's own file: a link in its place is refused
        // (unread), as its write would be.
        let read = contain::check_writable(&path).and_then(|()| read_regular(&path));
        let bytes = match read {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: unreadable intent marker: {e}", path.display()),
            )
        })
    }

    /// Removes the marker (done: the request is complete either way).
    pub fn clear(transcript: &Path) -> io::Result<()> {
        match std::fs::remove_file(intent_path(transcript)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Makes a rename durable: fsync the directory entry (no-op off Unix).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_transcript_created_and_left_empty_is_removed_and_others_stay() {
        let dir = tempfile::tempdir().unwrap();
        // Created, nothing appended (a refused first write): gone.
        let fresh = dir.path().join("a.noma.patches");
        drop(LockedTranscript::open(&fresh).unwrap());
        assert!(!fresh.exists());
        // Created and appended to: kept.
        let written = dir.path().join("b.noma.patches");
        let mut t = LockedTranscript::open(&written).unwrap();
        t.append(b"{}\n").unwrap();
        drop(t);
        assert_eq!(std::fs::read(&written).unwrap(), b"{}\n");
        // Empty before the open (not ours to remove): kept.
        let existing = dir.path().join("c.noma.patches");
        std::fs::write(&existing, b"").unwrap();
        drop(LockedTranscript::open(&existing).unwrap());
        assert!(existing.exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_writer_that_waited_on_a_removed_transcript_writes_to_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.noma.patches");
        let first = LockedTranscript::open(&path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p2 = path.clone();
        let waiter = std::thread::spawn(move || {
            // Opens the same inode and blocks on the lock the first holds.
            tx.send(()).unwrap();
            let mut t = LockedTranscript::open(&p2).unwrap();
            t.append(b"kept\n").unwrap();
        });
        rx.recv().unwrap();
        // The first writer's request is refused: its empty file goes.
        // Whether the waiter opened it before or after the removal, its
        // append must land in the file at `path`.
        drop(first);
        waiter.join().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"kept\n");
    }

    #[test]
    fn atomic_write_replaces_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.noma");
        std::fs::write(&p, "old").unwrap();
        atomic_write(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        std::fs::write(dir.path().join(".d.noma.noma-tmp-1-x"), "junk").unwrap();
        assert_eq!(remove_stale_temps(&p), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_target_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.noma");
        let link = dir.path().join("link.noma");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = atomic_write(&link, b"new").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        // A linked intent marker is neither read nor written through.
        let t = dir.path().join("t.patches");
        std::os::unix::fs::symlink(&real, intent_path(&t)).unwrap();
        assert!(Intent::read(&t).is_err());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "old");
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.noma");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("run mkfifo");
        assert!(made.success(), "mkfifo failed: {made}");
        let e = read_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(LockedTranscript::open(&fifo).is_err());
        let e = read_regular(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(read_regular(dir.path()).is_err());
    }

    #[test]
    fn intent_marker_round_trips_and_clears() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("d.noma.patches");
        assert_eq!(Intent::read(&t).unwrap(), None);
        let i = Intent {
            transcript_len: 3,
            append_len: 4,
            append_sha256: "a".into(),
            doc_pre_sha256: "b".into(),
            doc_post_sha256: "c".into(),
        };
        i.write(&t).unwrap();
        assert_eq!(Intent::read(&t).unwrap(), Some(i));
        Intent::clear(&t).unwrap();
        Intent::clear(&t).unwrap();
        assert_eq!(Intent::read(&t).unwrap(), None);
        std::fs::write(intent_path(&t), "{").unwrap();
        assert!(Intent::read(&t).is_err());
    }

    #[test]
    fn a_staged_file_is_invisible_until_committed_and_gone_if_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.noma");
        std::fs::write(&p, "old").unwrap();
        let staged = StagedFile::write(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        drop(staged);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        StagedFile::write(&p, b"new").unwrap().commit().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn transient_failures_are_retried_and_others_are_not() {
        let busy = || io::Error::other("busy");
        let is_busy = |e: &io::Error| e.to_string() == "busy";
        let delays = [std::time::Duration::ZERO; 3];
        // Busy twice, then done: done, after three tries.
        let mut tries = 0;
        let r = retry_when(is_busy, &delays, || {
            tries += 1;
            if tries < 3 {
                Err(busy())
            } else {
                Ok(tries)
            }
        });
        assert_eq!(r.unwrap(), 3);
        // Busy for good: the error, after one try per delay and the first.
        let mut tries = 0;
        let r: io::Result<()> = retry_when(is_busy, &delays, || {
            tries += 1;
            Err(busy())
        });
        assert_eq!((r.unwrap_err().to_string(), tries), ("busy".into(), 4));
        // Not transient: reported at once.
        let mut tries = 0;
        let r: io::Result<()> = retry_when(is_busy, &delays, || {
            tries += 1;
            Err(io::Error::from(io::ErrorKind::NotFound))
        });
        assert_eq!((r.unwrap_err().kind(), tries), (io::ErrorKind::NotFound, 1));
        // Off Windows no OS error is transient.
        let denied = io::Error::from_raw_os_error(if cfg!(windows) { 32 } else { 13 });
        assert_eq!(is_transient(&denied), cfg!(windows));
    }

    #[test]
    fn a_reader_reads_the_transcript_while_a_writer_holds_its_lock() {
        // Windows' locks are mandatory: a lock over the data would fail
        // this read (the lock is on a byte past the data instead).
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.noma.patches");
        let mut t = LockedTranscript::open(&p).unwrap();
        t.append(b"{\"a\":1}\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"a\":1}\n");
        let mut lines = String::new();
        open_lines(&p).unwrap().read_to_string(&mut lines).unwrap();
        assert_eq!(lines, "{\"a\":1}\n");
        // And the writer still writes after the read.
        t.append(b"{\"b\":2}\n").unwrap();
        assert_eq!(t.read_all().unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
    }

    /// Windows semantics: a handle reading the document (opened as std
    /// and most programs open files, sharing read, write and delete) does
    /// not stop the replace; it goes on reading the old content.
    #[cfg(windows)]
    #[test]
    fn a_document_is_replaced_while_another_handle_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.noma");
        std::fs::write(&p, "old content\n").unwrap();
        let mut reader = File::open(&p).unwrap();
        let mut head = [0u8; 4];
        reader.read_exact(&mut head).unwrap();
        atomic_write(&p, b"new content\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new content\n");
        let mut rest = String::new();
        reader.read_to_string(&mut rest).unwrap();
        assert_eq!((&head[..], rest.as_str()), (&b"old "[..], "content\n"));
        drop(reader);
        // No temp file is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Windows semantics: a transcript under a verifier's shared lock is
    /// readable by a third handle, and a writer waits for the lock, not
    /// for the readers.
    #[cfg(windows)]
    #[test]
    fn shared_and_exclusive_transcript_locks_leave_reads_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.noma.patches");
        std::fs::write(&p, b"x\n").unwrap();
        let mut shared = LockedTranscript::open_shared(&p).unwrap();
        assert_eq!(shared.read_all().unwrap(), b"x\n");
        assert_eq!(std::fs::read(&p).unwrap(), b"x\n");
        drop(shared);
        let mut w = LockedTranscript::open(&p).unwrap();
        w.append(b"y\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"x\ny\n");
    }

    #[test]
    fn append_truncate_and_relock() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.patches");
        {
            let mut t = LockedTranscript::open(&p).unwrap();
            t.append(b"a\nb").unwrap();
            assert_eq!(t.read_all().unwrap(), b"a\nb");
            t.truncate(2).unwrap();
            t.append(b"c\n").unwrap();
            assert_eq!(t.read_all().unwrap(), b"a\nc\n");
        }
        // The lock died with the handle: a second open does not block.
        let mut t = LockedTranscript::open(&p).unwrap();
        assert_eq!(t.read_all().unwrap(), b"a\nc\n");
    }
}
