//! A blob read as a stream, so that a hook can compare two transcripts of
//! hundreds of megabytes without holding either (issue 35).
//!
//! Small blobs are read whole through libgit2 (no process to start); a
//! blob over [`WHOLE_UP_TO`] ([`WHOLE_UP_TO_ENV`]) is streamed by `git cat-file blob`, which
//! inflates a loose or undeltified packed object a buffer at a time. A git
//! that fails mid-way ends the stream with an error, never a short read
//! that looks like the end of the blob.

use std::io::{self, Read};
use std::process::{Child, ChildStdout, Command, Stdio};

use git2::{Oid, Repository};

/// Blobs up to this size are read whole (their bytes are cheaper than a
/// process), unless [`WHOLE_UP_TO_ENV`] says otherwise.
pub const WHOLE_UP_TO: usize = 4 << 20;

/// Overrides [`WHOLE_UP_TO`] (bytes; `0` streams every blob through git,
/// which is how the tests exercise the stream on small repositories).
pub const WHOLE_UP_TO_ENV: &str = "NOMA_STREAM_BLOBS_OVER";

fn whole_up_to() -> usize {
    std::env::var(WHOLE_UP_TO_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(WHOLE_UP_TO)
}

/// The bytes of one blob, read as they are asked for.
pub enum BlobStream {
    /// Read whole already.
    Whole(io::Cursor<Vec<u8>>),
    /// `git cat-file blob` writing it into a pipe.
    Git {
        /// The process (reaped at the end of the stream, killed if dropped
        /// before).
        child: Child,
        /// Its standard output.
        out: ChildStdout,
        /// The end was reached and the exit status checked.
        done: bool,
    },
}

impl BlobStream {
    /// Opens blob `id` of `repo`.
    pub(super) fn open(repo: &Repository, id: Oid) -> io::Result<BlobStream> {
        let size = repo.odb().and_then(|db| db.read_header(id)).map(|(s, _)| s);
        if let Ok(size) = size {
            if size <= whole_up_to() {
                let bytes = blob_content(repo, id).map_err(io::Error::other)?;
                return Ok(BlobStream::Whole(io::Cursor::new(bytes)));
            }
        }
        let mut child = Command::new("git")
            .arg("--git-dir")
            .arg(repo.path())
            // git maps a pack in windows of up to 1 GiB and keeps what it
            // read resident: a 682 MB transcript blob (packed, as git
            // stores blobs over core.bigFileThreshold) peaked at 127 MiB.
            // 1 MiB windows read it as fast at 20 MiB.
            .args(["-c", "core.packedGitWindowSize=1m"])
            .args(["-c", "core.packedGitLimit=16m"])
            .args(["cat-file", "blob"])
            .arg(id.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let out = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("git cat-file: no output pipe"))?;
        Ok(BlobStream::Git {
            child,
            out,
            done: false,
        })
    }
}

impl Read for BlobStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            BlobStream::Whole(c) => c.read(buf),
            BlobStream::Git { child, out, done } => {
                if *done {
                    return Ok(0);
                }
                let n = out.read(buf)?;
                if n == 0 && !buf.is_empty() {
                    let status = child.wait()?;
                    *done = true;
                    if !status.success() {
                        return Err(io::Error::other(format!(
                            "git cat-file could not read the blob ({status})"
                        )));
                    }
                }
                Ok(n)
            }
        }
    }
}

impl Drop for BlobStream {
    fn drop(&mut self) {
        if let BlobStream::Git {
            child, done: false, ..
        } = self
        {
            // Stopped before the end (the prefix differed): the rest is
            // not wanted.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The content of a blob. A partial clone (`git clone --filter=blob:none`,
/// common in CI) holds only the blobs it checked out, and libgit2 cannot
/// fetch the others from the promisor remote: a blob missing locally is
/// asked of the `git` CLI, which fetches it. Elsewhere a missing blob makes
/// `git cat-file` fail at once, and libgit2's error stands.
pub(super) fn blob_content(repo: &Repository, id: Oid) -> Result<Vec<u8>, git2::Error> {
    let err = match repo.find_blob(id) {
        Ok(b) => return Ok(b.content().to_vec()),
        Err(e) if e.code() == git2::ErrorCode::NotFound => e,
        Err(e) => return Err(e),
    };
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(repo.path())
        .args(["cat-file", "blob"])
        .arg(id.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(o.stdout),
        _ => Err(err),
    }
}
