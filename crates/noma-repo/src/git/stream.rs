//! A blob read as a stream, so that a hook can compare two transcripts of
//! hundreds of megabytes without holding either (decision
//! `hook-streams-appends`).
//!
//! Small blobs are read whole through libgit2 (no process to start); a
//! blob over [`WHOLE_UP_TO`] that is a loose or
//! undeltified packed object of the repository is inflated in-process a
//! buffer at a time ([`super::object`], decision
//! `hook-inflates-in-process`), and any other is streamed by `git cat-file
//! blob`. A corrupt object, or a git that fails mid-way, ends the stream
//! with an error, never a short read that looks like the end of the blob.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use git2::{Oid, Repository};

/// Blobs up to this size are read whole (their bytes are cheaper than a
/// process).
pub const WHOLE_UP_TO: usize = 4 << 20;

/// Overrides [`WHOLE_UP_TO`] (bytes; `0` streams every blob through git,
/// which is how the tests exercise the stream on small repositories).
/// A test seam: read only with the `test-seams` feature, which the
/// binary's dev-dependency turns on for `cargo test` builds (decision
/// `test-seams-behind-features`); a release build ignores it.
#[cfg(feature = "test-seams")]
pub const WHOLE_UP_TO_ENV: &str = "NOMA_STREAM_BLOBS_OVER";

#[cfg(feature = "test-seams")]
fn whole_up_to() -> usize {
    std::env::var(WHOLE_UP_TO_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(WHOLE_UP_TO)
}

#[cfg(not(feature = "test-seams"))]
fn whole_up_to() -> usize {
    WHOLE_UP_TO
}

#[cfg(all(test, not(feature = "test-seams")))]
mod without_test_seams {
    /// Built without the feature (`cargo test -p noma-git`), the limit is
    /// the constant whatever the environment says: the variable the
    /// integration tests set is not read.
    #[test]
    fn the_limit_ignores_the_test_variable() {
        // No other code of this build reads the variable, so setting it
        // here races with nothing.
        std::env::set_var("NOMA_STREAM_BLOBS_OVER", "0");
        assert_eq!(super::whole_up_to(), super::WHOLE_UP_TO);
        std::env::remove_var("NOMA_STREAM_BLOBS_OVER");
    }
}

/// The last few small blobs a repository handle read whole, by id: one
/// document's check reads the same transcript version several times (its
/// prefix against HEAD's, its op_ids, its first state), and a PR check
/// does that for each of hundreds of documents, where each read of a loose
/// object was an open, a header inflate and a whole inflate. A blob's id
/// names its bytes, so a kept copy is never stale.
#[derive(Debug, Default)]
pub struct RecentBlobs(Mutex<VecDeque<(Oid, Arc<Vec<u8>>)>>);

impl RecentBlobs {
    /// Blobs kept: the versions one document's check reads (document,
    /// transcript and sidecar at three revisions) with room to spare.
    const KEEP: usize = 16;
    /// Bytes of the largest blob kept (16 MiB kept at most).
    const UP_TO: usize = 1 << 20;

    fn get(&self, id: Oid) -> Option<Arc<Vec<u8>>> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().find(|(k, _)| *k == id).map(|(_, b)| b.clone())
    }

    fn put(&self, id: Oid, bytes: &Arc<Vec<u8>>) {
        if bytes.len() > Self::UP_TO {
            return;
        }
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.iter().any(|(k, _)| *k == id) {
            return;
        }
        if kept.len() == Self::KEEP {
            kept.pop_front();
        }
        kept.push_back((id, bytes.clone()));
    }

    /// The content of blob `id` ([`blob_content`]), kept for the next read
    /// when small.
    pub(super) fn content(&self, repo: &Repository, id: Oid) -> Result<Vec<u8>, git2::Error> {
        if let Some(b) = self.get(id) {
            return Ok(b.to_vec());
        }
        let bytes = blob_content(repo, id)?;
        if bytes.len() <= Self::UP_TO {
            self.put(id, &Arc::new(bytes.clone()));
        }
        Ok(bytes)
    }
}

/// Shared bytes a [`BlobStream::Whole`] reads.
#[derive(Debug, Clone)]
pub struct Shared(Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The bytes of one blob, read as they are asked for.
pub enum BlobStream {
    /// Read whole already.
    Whole(io::Cursor<Shared>),
    /// Inflated from the repository's object file.
    Object(super::object::ObjectStream),
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
    /// Whether the blob was read whole already (a small one): reading it
    /// costs no more than copying.
    pub fn is_whole(&self) -> bool {
        matches!(self, BlobStream::Whole(_))
    }

    /// Opens blob `id` of `repo` (`recent`: the blobs it read lately).
    pub(super) fn open(repo: &Repository, recent: &RecentBlobs, id: Oid) -> io::Result<BlobStream> {
        BlobStream::open_whole_up_to((repo, recent), id, whole_up_to())
    }

    /// [`BlobStream::open`], reading blobs up to `limit` bytes whole.
    fn open_whole_up_to(
        (repo, recent): (&Repository, &RecentBlobs),
        id: Oid,
        limit: usize,
    ) -> io::Result<BlobStream> {
        let whole = |b: Arc<Vec<u8>>| BlobStream::Whole(io::Cursor::new(Shared(b)));
        if let Some(b) = recent.get(id).filter(|b| b.len() <= limit) {
            return Ok(whole(b));
        }
        let size = repo.odb().and_then(|db| db.read_header(id)).map(|(s, _)| s);
        if let Ok(size) = size {
            if size <= limit {
                let bytes = Arc::new(blob_content(repo, id).map_err(io::Error::other)?);
                recent.put(id, &bytes);
                return Ok(whole(bytes));
            }
        }
        let objects = repo.commondir().join("objects");
        if let Some(object) = super::object::open(&objects, id)? {
            return Ok(BlobStream::Object(object));
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
            BlobStream::Object(o) => o.read(buf),
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

/// A blob read as a stream that can be read again from an earlier place
/// (replay's exact op_id check behind a fingerprint hit seeks back to the
/// start): going back reopens the stream and skips forward, which costs a
/// pass over the blob but keeps memory at one buffer.
pub struct RereadBlob<'r> {
    repo: (&'r Repository, &'r RecentBlobs),
    id: Oid,
    /// [`BlobStream::open_whole_up_to`]'s limit.
    limit: usize,
    reader: io::BufReader<BlobStream>,
    /// Bytes consumed from the start of the blob.
    pos: u64,
}

impl<'r> RereadBlob<'r> {
    pub(super) fn open(
        repo: &'r Repository,
        recent: &'r RecentBlobs,
        id: Oid,
    ) -> io::Result<RereadBlob<'r>> {
        RereadBlob::open_whole_up_to((repo, recent), id, whole_up_to())
    }

    fn open_whole_up_to(
        repo: (&'r Repository, &'r RecentBlobs),
        id: Oid,
        limit: usize,
    ) -> io::Result<RereadBlob<'r>> {
        let stream = BlobStream::open_whole_up_to(repo, id, limit)?;
        Ok(RereadBlob {
            repo,
            id,
            limit,
            reader: io::BufReader::with_capacity(64 * 1024, stream),
            pos: 0,
        })
    }

    /// Moves to byte `to`: forward by reading, backward by reopening.
    fn move_to(&mut self, to: u64) -> io::Result<()> {
        if to < self.pos {
            *self = RereadBlob::open_whole_up_to(self.repo, self.id, self.limit)?;
        }
        let skip = to - self.pos;
        let skipped = io::copy(&mut (&mut *self).take(skip), &mut io::sink())?;
        if skipped < skip {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "seek past the end of the blob",
            ));
        }
        Ok(())
    }
}

impl Read for RereadBlob<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.reader.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl io::BufRead for RereadBlob<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.reader.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.reader.consume(amt);
        self.pos += amt as u64;
    }
}

impl io::Seek for RereadBlob<'_> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let target = match to {
            io::SeekFrom::Start(p) => Some(p),
            io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            // The end is not known without reading to it.
            io::SeekFrom::End(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "a blob stream cannot seek from its end",
                ))
            }
        };
        let target = target
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        self.move_to(target)?;
        Ok(self.pos)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, Seek, SeekFrom};

    /// Seeking back and forth reads the bytes that are there, whether the
    /// blob is held whole or streamed through `git cat-file`.
    #[test]
    fn a_reread_blob_seeks_back_and_forth() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(tmp.path()).expect("init");
        let bytes: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let id = repo.blob(&bytes).expect("blob");
        for limit in [usize::MAX, 0] {
            let recent = RecentBlobs::default();
            let mut r = RereadBlob::open_whole_up_to((&repo, &recent), id, limit).expect("opens");
            let mut line = Vec::new();
            r.read_until(b'\n', &mut line).expect("reads");
            assert_eq!(line, b"line 0\n");
            assert_eq!(r.stream_position().expect("pos"), 7);
            let mut all = Vec::new();
            r.read_to_end(&mut all).expect("reads");
            assert_eq!(all, &bytes[7..]);
            for at in [0u64, 1_000_000, 5, bytes.len() as u64] {
                assert_eq!(r.seek(SeekFrom::Start(at)).expect("seeks"), at, "{limit}");
                let mut rest = Vec::new();
                r.read_to_end(&mut rest).expect("reads");
                assert_eq!(rest, &bytes[at as usize..], "{limit} at {at}");
            }
            assert!(r.seek(SeekFrom::Start(bytes.len() as u64 + 1)).is_err());
            assert!(r.seek(SeekFrom::End(0)).is_err());
        }
    }

    /// A blob stored as a delta is not inflated in-process: `git cat-file`
    /// streams it, and the bytes are the same.
    #[test]
    fn a_delta_is_streamed_by_git() {
        use std::io::Write;
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(tmp.path()).expect("init");
        let base: Vec<u8> = (0..50_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let versions: Vec<Vec<u8>> = (0..3)
            .map(|k| [base.as_slice(), format!("{k}\n").as_bytes()].concat())
            .collect();
        let ids: Vec<Oid> = versions
            .iter()
            .map(|v| repo.blob(v).expect("blob"))
            .collect();
        let git = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(tmp.path())
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .expect("git runs")
        };
        let mut pack = git(&["pack-objects", ".git/objects/pack/pack"]);
        let list: String = ids.iter().map(|o| format!("{o}\n")).collect();
        let mut stdin = pack.stdin.take().expect("stdin");
        stdin.write_all(list.as_bytes()).expect("writes");
        drop(stdin);
        assert!(pack.wait().expect("waits").success());
        assert!(git(&["prune-packed"]).wait().expect("waits").success());
        let objects = tmp.path().join(".git/objects");
        let mut by_git = 0;
        for (id, bytes) in ids.iter().zip(&versions) {
            if super::super::object::open(&objects, *id)
                .expect("opens")
                .is_none()
            {
                by_git += 1;
            }
            let recent = RecentBlobs::default();
            let mut s = BlobStream::open_whole_up_to((&repo, &recent), *id, 0).expect("opens");
            let mut all = Vec::new();
            s.read_to_end(&mut all).expect("reads");
            assert_eq!(&all, bytes);
        }
        assert!(by_git > 0, "one is a delta");
    }
}
