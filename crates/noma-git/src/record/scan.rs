//! The transcript as `noma record` reads it: a line at a time, keeping
//! what the next check needs and never the file.
//!
//! One pass ([`scan`]) refuses what the whole-file read refused, with the
//! same errors in the same order: a joined transcript
//! ([`noma_merge::joined::JoinScan`] follows the chain line by line), a
//! line that is no record (the first one), a torn last line. It keeps the
//! first applied record's `pre_sha256`, the last one's `post_sha256`, and
//! the last line's sha256 and length. Later passes
//! ([`Scanned::applied_hashes`], [`Scanned::applied_from`]) read the same
//! bytes again, a record at a time, when the state must be rebuilt by
//! re-applying records.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::path::{Path, PathBuf};

use super::{CannotRecord, CannotRun, RecordError};
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{parse_record, PatchResult, ReadError, Record};
use noma_merge::joined::{advice, JoinScan, Link};
use noma_store::fsio::{self, LockedTranscript};

/// A record's state hashes, read without the rest of it: the walks that
/// look for a state read only these.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Hashes {
    /// applied | rejected | noop.
    pub(super) patch_result: PatchResult,
    /// The state before.
    pub(super) pre_sha256: String,
    /// The state after.
    pub(super) post_sha256: String,
}

/// What one pass over a valid transcript kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Scanned {
    /// The transcript.
    pub(super) path: PathBuf,
    /// Its length when it was read (0 when it does not exist).
    pub(super) len: u64,
    /// The last line's sha256 (what an append chains onto) and length.
    pub(super) last_line: Option<(String, usize)>,
    /// The first applied record's `pre_sha256`.
    pub(super) first_applied_pre: Option<String>,
    /// The last applied record's `post_sha256`: the state to record from.
    pub(super) last_applied_post: Option<String>,
}

/// Reads the transcript `tpath` of `doc_path` a line at a time; refuses it
/// when it is joined, invalid or torn (the state to record from is then
/// no state of it). A missing transcript is an empty one.
pub(super) fn scan(doc_path: &Path, tpath: &Path) -> Result<Scanned, RecordError> {
    let unreadable = |source| CannotRun::TranscriptUnreadable {
        path: tpath.to_path_buf(),
        source,
    };
    let mut scanned = Scanned {
        path: tpath.to_path_buf(),
        len: 0,
        last_line: None,
        first_applied_pre: None,
        last_applied_post: None,
    };
    // FIFOs and devices are refused before they are opened; a transcript
    // has no size cap, as it is never held.
    let mut reader = match fsio::open_lines(tpath) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(scanned),
        Err(e) => return Err(unreadable(e).into()),
    };
    let mut join = JoinScan::default();
    let (first_error, torn) = scanned.read_lines(&mut reader, &mut join)?;
    reader.rewind().map_err(unreadable)?;
    if let Some(join) = join.finish(torn, &mut reader).map_err(unreadable)? {
        return Err(CannotRecord::Joined {
            transcript: tpath.to_path_buf(),
            advice: advice(&doc_path.to_string_lossy(), join),
        }
        .into());
    }
    if let Some(e) = first_error {
        return Err(invalid(tpath, e).into());
    }
    if torn {
        return Err(CannotRecord::TornTranscript {
            transcript: tpath.to_path_buf(),
            doc: doc_path.to_path_buf(),
        }
        .into());
    }
    Ok(scanned)
}

/// Why a line made the transcript unusable.
fn invalid(tpath: &Path, source: ReadError) -> CannotRecord {
    CannotRecord::TranscriptInvalid {
        transcript: tpath.to_path_buf(),
        source,
    }
}

impl Scanned {
    /// Reads every line of `reader` into `self` and `join`. Returns a first
    /// line that is no record (a join may still explain the transcript:
    /// its first line is never read for one) and whether the last line is
    /// torn; an invalid later line ends the read with the first invalid
    /// line's error.
    fn read_lines(
        &mut self,
        reader: &mut impl BufRead,
        join: &mut JoinScan,
    ) -> Result<(Option<ReadError>, bool), RecordError> {
        let (mut buf, mut number, mut first_error) = (Vec::new(), 0, None);
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).map_err(|source| {
                CannotRun::TranscriptUnreadable {
                    path: self.path.clone(),
                    source,
                }
            })?;
            if n == 0 || buf.last() != Some(&b'\n') {
                return Ok((first_error, n > 0));
            }
            number += 1;
            let sha = sha256_hex(&buf);
            match parse_record(number, &buf) {
                Ok(r) => {
                    join.line(n, &sha, Ok(Link::of(&r)));
                    if r.patch_result == PatchResult::Applied {
                        self.first_applied_pre.get_or_insert(r.pre_sha256);
                        self.last_applied_post = Some(r.post_sha256);
                    }
                }
                // The whole-file read also looks for a join first, which
                // never reads the first line.
                Err(e) if number == 1 => {
                    join.line(n, &sha, Err(()));
                    first_error = Some(e);
                }
                Err(e) => return Err(invalid(&self.path, first_error.unwrap_or(e)).into()),
            }
            self.len += n as u64;
            self.last_line = Some((sha, n));
        }
    }

    /// Calls `f` with every line (its `\n` included) from byte `from` on
    /// and the offset after it, read again a line at a time from the bytes
    /// scanned.
    fn lines_from(
        &self,
        from: u64,
        mut f: impl FnMut(&[u8], u64) -> Result<(), RecordError>,
    ) -> Result<(), RecordError> {
        let unreadable = |source| CannotRun::TranscriptUnreadable {
            path: self.path.clone(),
            source,
        };
        let mut file = File::open(&self.path).map_err(unreadable)?;
        file.seek(io::SeekFrom::Start(from)).map_err(unreadable)?;
        let part = file.take(self.len.saturating_sub(from));
        let mut reader = BufReader::with_capacity(64 * 1024, part);
        let (mut buf, mut offset) = (Vec::new(), from);
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).map_err(unreadable)?;
            if n == 0 {
                return Ok(());
            }
            offset += n as u64;
            f(&buf, offset)?;
        }
    }

    /// Calls `f` with the hashes of every applied record, in order, and
    /// the offsets its line starts and ends at.
    pub(super) fn applied_hashes(
        &self,
        f: &mut dyn FnMut(&Hashes, (u64, u64)),
    ) -> Result<(), RecordError> {
        self.lines_from(0, |line, end| {
            let h: Hashes = serde_json::from_slice(line)
                // The scan read every line as a record: the file changed.
                .map_err(|_| CannotRecord::ChangedWhileRecording)?;
            if h.patch_result == PatchResult::Applied {
                f(&h, (end - line.len() as u64, end));
            }
            Ok(())
        })
    }

    /// Calls `f` with every applied record from byte `from` on, in order.
    pub(super) fn applied_from(
        &self,
        from: u64,
        f: &mut dyn FnMut(Record) -> Result<(), RecordError>,
    ) -> Result<(), RecordError> {
        self.lines_from(from, |line, _| {
            let r = parse_record(0, line).map_err(|_| CannotRecord::ChangedWhileRecording)?;
            match r.patch_result {
                PatchResult::Applied => f(r),
                _ => Ok(()),
            }
        })
    }

    /// Under the lock: whether the transcript is still the one scanned.
    /// Writers only append under the lock, or cut back to bytes that were
    /// there (a torn tail, an interrupted append), so a write since shows
    /// in the length; a file replaced or edited behind the lock shows in
    /// the last line, which names its predecessor's sha256 (and so, along
    /// the chain, every line before it).
    pub(super) fn unchanged(&self, locked: &mut LockedTranscript) -> io::Result<bool> {
        if locked.byte_len()? != self.len {
            return Ok(false);
        }
        let Some((sha, len)) = &self.last_line else {
            return Ok(true);
        };
        let (_, tail) = locked.read_tail(*len as u64)?;
        Ok(sha256_hex(&tail) == *sha)
    }
}
