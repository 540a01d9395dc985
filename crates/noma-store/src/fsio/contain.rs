//! Write containment: the one way noma opens a file it writes (the
//! document's temp file, the transcript, the provenance sidecar, the intent
//! marker, the merge driver's output, `noma init`'s files).
//!
//! A repository is untrusted input: a clone can commit any of those paths
//! as a symlink (to `~/.bashrc`, dangling, to `/dev/zero`) and a work tree
//! can hold a FIFO. So a file noma writes is either absent (then created)
//! or a regular file, and never a symbolic link, wherever the link points:
//! "inside the work tree" needs no resolving when nothing is followed. The
//! kind is checked before opening (for a message naming what the path is),
//! and the open itself neither follows a link (`O_NOFOLLOW`) nor blocks
//! (`O_NONBLOCK`); the opened descriptor is then checked again (`fstat`),
//! so a path swapped between the check and the open is still refused.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Component, Path};

/// How [`open_write`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Read and append, created when absent (a transcript, a sidecar).
    Append,
    /// Write from the start, created when absent, emptied when present.
    Replace,
    /// Write a file that must not exist yet (a temp file).
    CreateNew,
}

/// Why a path is not a file noma writes: what the path is, worded for a
/// person (the caller names the path).
fn refusal(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

/// Refuses a path noma is about to write when it exists as anything but a
/// regular file: a symbolic link (whatever its target), a FIFO, a socket,
/// a device or a directory. An absent path is fine (it will be created).
/// This looks at the path itself, not through a link.
pub fn check_writable(path: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    check_meta(path, &meta)
}

fn check_meta(path: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
    let t = meta.file_type();
    if t.is_file() {
        return Ok(());
    }
    if t.is_symlink() {
        let target = std::fs::read_link(path)
            .map(|t| format!(" to {}", t.display()))
            .unwrap_or_default();
        return Err(refusal(format!(
            "is a symbolic link{target}; noma never writes through a link \
             (replace it with a regular file)"
        )));
    }
    if t.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory, not a file noma can write",
        ));
    }
    Err(refusal(format!(
        "is {}, not a regular file; noma writes only regular files",
        special_kind(meta)
    )))
}

#[cfg(unix)]
fn special_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::Metadata) -> &'static str {
    "a special file"
}

/// Opens `path` for writing as `mode` says, refusing anything but a
/// regular file or an absent one ([`check_writable`]), without following a
/// symbolic link and without ever blocking (a FIFO swapped in after the
/// check fails the open or the check of the opened file).
pub fn open_write(path: &Path, mode: WriteMode) -> io::Result<File> {
    check_writable(path)?;
    let mut opts = OpenOptions::new();
    match mode {
        WriteMode::Append => opts.read(true).append(true).create(true),
        WriteMode::Replace => opts.write(true).truncate(true).create(true),
        WriteMode::CreateNew => opts.write(true).create_new(true),
    };
    no_follow(&mut opts);
    // A file a scanner holds for a moment (Windows) is waited for.
    let file =
        super::retry_transient(|| opts.open(path)).map_err(|e| match check_writable(path) {
            // Swapped for a link or a FIFO since the check: say what it is.
            Err(kind) => kind,
            Ok(()) => e,
        })?;
    check_meta(path, &file.metadata()?)?;
    Ok(file)
}

/// `std::fs::write` for a file noma writes: `bytes` replace its content,
/// through [`open_write`] (never through a link, never blocking).
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    io::Write::write_all(&mut open_write(path, WriteMode::Replace)?, bytes)
}

/// Opens `path` to read it, following a link (reads through links are
/// allowed) but never blocking on a FIFO: the opened file must be a
/// regular file. `NotFound` when it does not exist.
pub fn open_read(path: &Path) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    non_blocking(&mut opts);
    let file = super::retry_transient(|| opts.open(path))?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    if !meta.is_file() {
        return Err(refusal(
            "not a regular file (a FIFO, socket or device); noma reads only regular files".into(),
        ));
    }
    Ok(file)
}

/// Refuses `dir` (a directory noma creates files in, such as `.noma/cache`)
/// when a component of it below `root` is a symbolic link or not a
/// directory: files created there would land wherever the link points.
/// Components that do not exist yet are fine (they will be created).
pub fn check_dir_inside(root: &Path, dir: &Path) -> io::Result<()> {
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    let mut cur = root.to_path_buf();
    for c in rel.components() {
        match c {
            Component::Normal(name) => cur.push(name),
            Component::CurDir => continue,
            _ => {
                return Err(refusal(format!(
                    "{} is not a plain path below {}",
                    dir.display(),
                    root.display()
                )))
            }
        }
        let meta = match std::fs::symlink_metadata(&cur) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if meta.file_type().is_symlink() {
            return Err(refusal(format!(
                "{} is a symbolic link; noma creates no file through a link",
                cur.display()
            )));
        }
        if !meta.is_dir() {
            return Err(refusal(format!("{} is not a directory", cur.display())));
        }
    }
    Ok(())
}

// O_NONBLOCK stays set on the opened file: it changes nothing for a
// regular file's reads and writes, nor for `flock`, which blocks or not by
// its own flag.
#[cfg(unix)]
fn no_follow(opts: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
}

// Windows' O_NOFOLLOW: FILE_FLAG_OPEN_REPARSE_POINT opens a symbolic link
// (or junction) itself, never its target; the check of the opened file
// then refuses it as not a regular file.
#[cfg(windows)]
fn no_follow(opts: &mut OpenOptions) {
    use std::os::windows::fs::OpenOptionsExt;
    const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
    opts.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
}

#[cfg(not(any(unix, windows)))]
fn no_follow(_: &mut OpenOptions) {}

#[cfg(unix)]
fn non_blocking(opts: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    opts.custom_flags(libc::O_NONBLOCK);
}

#[cfg(not(unix))]
fn non_blocking(_: &mut OpenOptions) {}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn links_and_fifos_are_refused_and_nothing_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let dangling = dir.path().join("d");
        std::os::unix::fs::symlink(outside.path().join("new"), &dangling).unwrap();
        for mode in [WriteMode::Append, WriteMode::Replace, WriteMode::CreateNew] {
            let e = open_write(&link, mode).unwrap_err();
            assert!(e.to_string().contains("symbolic link to"), "{e}");
            assert!(open_write(&dangling, mode).is_err());
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(!outside.path().join("new").exists());

        let fifo = dir.path().join("f");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = open_write(&fifo, WriteMode::Append).unwrap_err();
        assert!(e.to_string().contains("is a FIFO"), "{e}");
        assert!(open_read(&fifo).is_err());
        // The same FIFO opened past the kind check: refused, not blocked.
        let mut opts = OpenOptions::new();
        opts.read(true).append(true);
        no_follow(&mut opts);
        let f = opts.open(&fifo);
        assert!(f.is_err() || check_meta(&fifo, &f.unwrap().metadata().unwrap()).is_err());

        let plain = dir.path().join("p");
        open_write(&plain, WriteMode::Append).unwrap();
        assert!(open_write(&plain, WriteMode::CreateNew).is_err());
        assert!(open_write(&plain, WriteMode::Replace).is_ok());
    }

    #[test]
    fn a_linked_directory_below_the_root_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".noma")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join(".noma/cache")).unwrap();
        let cache = root.path().join(".noma/cache");
        assert!(check_dir_inside(root.path(), &cache).is_err());
        assert!(check_dir_inside(root.path(), &root.path().join(".noma/x/y")).is_ok());
    }
}
