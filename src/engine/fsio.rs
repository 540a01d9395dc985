//! The durable-I/O primitives the engine is built from: an advisory lock on
//! the transcript, a single-write append, and an atomic document replace.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Prefix of temp files: `.<doc name>.noma-tmp-<pid>-<random>`.
const TMP_MARK: &str = ".noma-tmp-";

/// An open transcript holding the exclusive advisory lock. The lock is
/// released when this value is dropped (closing the descriptor drops a
/// `flock`), including when the process dies.
#[derive(Debug)]
pub struct LockedTranscript {
    file: File,
    path: PathBuf,
}

impl LockedTranscript {
    /// Opens (creating if needed) `path` for append and blocks until the
    /// exclusive lock is ours. The transcript is never renamed, so every
    /// process locks the same inode.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)?;
        // Fully qualified: newer std has an inherent `File::lock` too.
        fs4::FileExt::lock(&file)?;
        Ok(LockedTranscript {
            file,
            path: path.to_path_buf(),
        })
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

    /// The whole file as it is now.
    pub fn read_all(&mut self) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.file.seek(SeekFrom::Start(0))?;
        self.file.read_to_end(&mut buf)?;
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

/// Replaces `path` with `bytes` atomically: temp file in the same directory,
/// fsync, rename over the target, fsync of the directory. A crash leaves
/// either the old or the new content, never a mix.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    StagedFile::write(path, bytes)?.commit()
}

/// The first half of [`atomic_write`]: the new content, durable in a temp
/// file beside its target, not yet in place. [`StagedFile::commit`] renames
/// it over the target; dropping it uncommitted removes the temp file. The
/// engine stages a document while it still validates it, then commits once
/// the transcript records are durable.
#[derive(Debug)]
pub struct StagedFile {
    tmp: PathBuf,
    path: PathBuf,
    committed: bool,
    /// The size of the file the commit replaces, if one exists.
    replaced_len: Option<u64>,
}

/// Replaced files at least this big are freed on a helper thread.
const BACKGROUND_RELEASE_BYTES: u64 = 1 << 20;

impl StagedFile {
    /// Writes and fsyncs `bytes` to a fresh temp file beside `path`.
    pub fn write(path: &Path, bytes: &[u8]) -> io::Result<StagedFile> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
        let tmp_name = format!(
            ".{}{TMP_MARK}{}-{}",
            name.to_string_lossy(),
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        );
        let mut staged = StagedFile {
            tmp: parent_dir(path).join(tmp_name),
            path: path.to_path_buf(),
            committed: false,
            replaced_len: None,
        };
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&staged.tmp)?;
        if let Ok(meta) = std::fs::metadata(path) {
            // Keep the document's permissions across the replace.
            let _ = f.set_permissions(meta.permissions());
            staged.replaced_len = Some(meta.len());
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        Ok(staged)
    }

    /// Renames the temp file over the target and makes the rename durable.
    pub fn commit(mut self) -> io::Result<()> {
        // Renaming over a file frees it, which for a 3 MB document costs
        // ~2 ms of page-cache and block release inside the rename. Holding
        // it open moves that work to the last close, done on a helper
        // thread while this one syncs the directory and reports.
        let replaced = self
            .replaced_len
            .filter(|&len| cfg!(unix) && len >= BACKGROUND_RELEASE_BYTES)
            .and_then(|_| File::open(&self.path).ok());
        std::fs::rename(&self.tmp, &self.path)?;
        self.committed = true;
        if let Some(replaced) = replaced {
            crate::threads::drop_on_helper("noma-release", replaced);
        }
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

    #[test]
    fn replacing_a_big_file_keeps_only_the_new_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.noma");
        let old = vec![b'o'; BACKGROUND_RELEASE_BYTES as usize + 1];
        std::fs::write(&p, &old).unwrap();
        let staged = StagedFile::write(&p, b"new").unwrap();
        assert_eq!(staged.replaced_len, Some(old.len() as u64));
        staged.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // Again over the now small file: no helper, same result.
        atomic_write(&p, &old).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), old);
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
