//! Crash recovery (the rule is documented on [`crate::engine`]). Runs with
//! the transcript lock held, so nothing else is writing either file.
//!
//! Writers ([`recover`], [`repair`]) act only on the evidence of an
//! interrupted write — the intent marker ([`Intent`]) — and otherwise only
//! report; [`inspect`] is the read-only view verifiers print.

use noma_core::transcript::reapply::ReapplyError;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::fsio::{self, Intent, LockedTranscript};
use noma_core::doc::hash::sha256_hex;
use noma_core::doc::ParseMemo;
use noma_core::transcript::{self, PatchResult, ReadError};

/// What recovery found and did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Recovery {
    /// Bytes cut from the transcript end (a partial append of an interrupted
    /// request, or with `noma repair` a torn line moved aside).
    pub truncated_bytes: u64,
    /// Applied records whose ops were re-applied to the document.
    pub rolled_forward: usize,
    /// Temp files of killed writers that were deleted.
    pub stale_temps_removed: usize,
    /// An unrecorded edit tolerated because of `--force`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrecorded_edit: Option<UnrecordedEdit>,
    /// Human-readable lines describing each repair.
    pub messages: Vec<String>,
    /// The command that finishes what recovery left (`noma repair` found
    /// an edit no record explains: `noma record DOC`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// sha256 of the transcript's last line after recovery (the next record's
    /// `prev_entry_sha256`).
    #[serde(skip)]
    pub last_line_sha256: Option<String>,
    /// The document as recovery read it under the lock, when it found it
    /// to be the last record's result: the patch that follows starts from
    /// it instead of reading and hashing it again.
    #[serde(skip)]
    pub document: Option<CheckedDocument>,
}

/// Document bytes together with their sha256.
#[derive(Debug, Clone)]
pub struct CheckedDocument {
    /// The bytes as read.
    pub bytes: Vec<u8>,
    /// Their sha256 (lowercase hex).
    pub sha256: String,
}

impl Recovery {
    /// True when recovery changed nothing and found nothing.
    pub fn is_clean(&self) -> bool {
        self.messages.is_empty() && self.unrecorded_edit.is_none()
    }
}

/// The document is in a state no record explains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnrecordedEdit {
    /// sha256 of the document on disk.
    pub document_sha256: String,
    /// The `post_sha256` of the transcript's last record.
    pub expected_sha256: String,
    /// Line of that record.
    pub line: usize,
    /// op_id of that record.
    pub op_id: String,
}

/// Recovery could not establish a consistent pair.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    /// File-system failure.
    #[error("{}: {what}: {source}", .path.display())]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// The transcript's last line, which a writer chains to, is not a
    /// valid record.
    #[error(
        "transcript {path}: {err}; a writer needs its last record: restore the transcript \
         from version control (`git checkout -- {path_sh}`), then patch again",
        path_sh = noma_core::diag::shell_word(.path)
    )]
    Transcript {
        /// Transcript path.
        path: String,
        /// The parse error (with its line).
        err: ReadError,
    },
    /// The transcript ends in git's conflict markers: a merge without
    /// noma's merge driver stopped on it. Restoring it from version
    /// control fails on an unmerged path and would drop a side's records.
    #[error(
        "transcript {path}: {err}: git's conflict markers (a merge without noma's merge driver); \
         run `noma repair {doc_sh}`, which keeps both sides' records and rebases them as the \
         driver does",
        doc_sh = noma_core::diag::shell_word(.doc)
    )]
    ConflictMarkers {
        /// Transcript path.
        path: String,
        /// The document path.
        doc: String,
        /// The parse error (with its line).
        err: ReadError,
    },
    /// Bytes after the last newline that no interrupted write of noma's
    /// explains (a hand edit, a foreign writer).
    #[error(
        "transcript {path}: {bytes} byte(s) after the last newline (line {line}) are not a \
         complete record and no interrupted noma write explains them; run `noma repair {doc_sh}` \
         to move them aside",
        doc_sh = noma_core::diag::shell_word(.doc)
    )]
    TornTail {
        /// Transcript path.
        path: String,
        /// The document path.
        doc: String,
        /// Number of torn bytes.
        bytes: usize,
        /// The line they start.
        line: usize,
    },
    /// The document differs from what the transcript says.
    #[error(
        "unrecorded edit: the document's sha256 is {} but the transcript's last record (line {}, op_id {}) leaves it at {}; \
         inspect the change (`noma replay`), record it (`noma record`), or re-run with --force to patch on top of it",
        .0.document_sha256, .0.line, .0.op_id, .0.expected_sha256
    )]
    UnrecordedEdit(UnrecordedEdit),
    /// Rolling an interrupted request forward did not reproduce its hashes.
    #[error("cannot roll forward record at line {line} (op_id {op_id}): {message}")]
    RollForward {
        /// Line of the record.
        line: usize,
        /// Its op_id.
        op_id: String,
        /// What went wrong.
        message: String,
    },
    /// The intent marker does not fit the transcript (a foreign writer).
    #[error("transcript {path}: {message}")]
    Inconsistent {
        /// Transcript path.
        path: String,
        /// What does not fit.
        message: String,
    },
}

impl RecoveryError {
    fn io(path: &Path, what: &'static str, source: std::io::Error) -> Self {
        RecoveryError::Io {
            path: path.to_path_buf(),
            what,
            source,
        }
    }

    /// Exit 1 (the pair is inconsistent or the transcript corrupt) rather
    /// than exit 2 (could not run).
    pub fn is_check_failure(&self) -> bool {
        !matches!(self, RecoveryError::Io { .. })
    }
}

/// The error for a transcript whose last line `raw` is no record: git's
/// conflict markers name `noma repair`, anything else a restore.
fn unreadable_last(path: &Path, doc: &Path, raw: &[u8], err: ReadError) -> RecoveryError {
    let path = path.display().to_string();
    let marker = [&b"<<<<<<<"[..], b"=======", b">>>>>>>", b"|||||||"];
    if marker.iter().any(|m| raw.starts_with(m)) {
        let doc = doc.display().to_string();
        return RecoveryError::ConflictMarkers { path, doc, err };
    }
    RecoveryError::Transcript { path, err }
}

/// Reads the document and hashes it (regular files only, size-capped).
fn read_checked(doc: &Path) -> Result<CheckedDocument, RecoveryError> {
    let bytes = fsio::read_regular(doc).map_err(|e| RecoveryError::io(doc, "cannot read", e))?;
    let sha256 = sha256_hex(&bytes);
    Ok(CheckedDocument { bytes, sha256 })
}

/// The end of a transcript: its last complete line and any bytes after it.
struct Tail {
    /// Offset and bytes (with `\n`) of the last complete line.
    last: Option<(u64, Vec<u8>)>,
    /// Offset and bytes after the last newline.
    torn: Option<(u64, Vec<u8>)>,
}

/// Reads the transcript's end only, widening the window until it holds
/// the whole last line: recovery's cost follows the last record, not the
/// transcript's history.
fn read_tail(t: &mut LockedTranscript) -> std::io::Result<Tail> {
    let mut window: u64 = 64 * 1024;
    loop {
        let (start, bytes) = t.read_tail(window)?;
        let widen = start > 0;
        let Some(nl) = memchr::memrchr(b'\n', &bytes) else {
            if widen {
                window = window.saturating_mul(4);
                continue;
            }
            let torn = (!bytes.is_empty()).then_some((0, bytes));
            return Ok(Tail { last: None, torn });
        };
        let line_start = match memchr::memrchr(b'\n', &bytes[..nl]) {
            Some(p) => p + 1,
            None if widen => {
                window = window.saturating_mul(4);
                continue;
            }
            None => 0,
        };
        let torn =
            (nl + 1 < bytes.len()).then(|| (start + nl as u64 + 1, bytes[nl + 1..].to_vec()));
        let last = Some((start + line_start as u64, bytes[line_start..=nl].to_vec()));
        return Ok(Tail { last, torn });
    }
}

/// The 1-based line number of the line starting at `offset` (0 when the
/// file cannot be read): counted only on the paths that report one, a
/// buffer at a time, so a million-record transcript is never held.
fn line_at(t: &mut LockedTranscript, offset: u64) -> usize {
    use std::io::BufRead;
    let Ok(mut r) = t.reader() else {
        return 0;
    };
    let (mut left, mut newlines) = (offset, 0);
    while left > 0 {
        let buf = match r.fill_buf() {
            Ok([]) => break,
            Ok(b) => b,
            Err(_) => return 0,
        };
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        newlines += memchr::memchr_iter(b'\n', &buf[..n]).count();
        r.consume(n);
        left -= n as u64;
    }
    newlines + 1
}

/// Applies the recovery rule to `doc` and its locked transcript, as a
/// writer about to append: finishes an interrupted write (the marker's
/// evidence), then requires a clean end and a document that is the last
/// record's result (or `force`).
pub fn recover(
    doc: &Path,
    t: &mut LockedTranscript,
    force: bool,
) -> Result<Recovery, RecoveryError> {
    run(doc, t, force, false)
}

/// `noma repair`: [`recover`], and bytes after the last newline that no
/// marker explains are moved aside to `<transcript>.torn` (appended, so
/// nothing is lost) instead of refused. An unrecorded edit is a person's
/// change, for `noma record` to explain: it is kept, never overwritten,
/// and named as the next step. A request that committed its records but
/// not its document, whose document was edited since, is rolled forward
/// onto the edit where its ops still apply ([`roll_onto_edit`]).
pub fn repair(doc: &Path, t: &mut LockedTranscript) -> Result<Recovery, RecoveryError> {
    run(doc, t, false, true)
}

/// The recovery rule: stale temps removed, the intent marker settled, the
/// transcript's end checked ([`settle_torn_tail`]) and the document held
/// against its last record ([`check_last_record`]). `repairing`: `noma
/// repair`'s rule ([`repair`]).
fn run(
    doc: &Path,
    t: &mut LockedTranscript,
    force: bool,
    repairing: bool,
) -> Result<Recovery, RecoveryError> {
    let mut out = Recovery {
        stale_temps_removed: fsio::remove_stale_temps(doc),
        ..Recovery::default()
    };
    if out.stale_temps_removed > 0 {
        out.messages.push(format!(
            "removed {} stale temp file(s) of a killed writer",
            out.stale_temps_removed
        ));
    }
    settle_intent(doc, t, EditedSince { force, repairing }, &mut out)?;

    let tail = read_tail(t).map_err(|e| RecoveryError::io(t.path(), "cannot read", e))?;
    if let Some((offset, torn)) = tail.torn {
        settle_torn_tail(doc, t, offset, &torn, repairing, &mut out)?;
    }
    let Some((offset, raw)) = tail.last else {
        return Ok(out);
    };
    check_last_record(doc, t, offset, &raw, force || repairing, &mut out)?;
    if repairing {
        if let Some(edit) = out.unrecorded_edit.as_ref() {
            // Not repaired: a person's edit, kept for `noma record`.
            out.messages.pop();
            out.next_step = Some(format!(
                "the document (sha256 {}) has an edit no record explains; `noma record {}` records it",
                transcript::short_sha(&edit.document_sha256),
                noma_core::diag::shell_word(&doc.to_string_lossy())
            ));
        }
    }
    Ok(out)
}

/// Bytes after the transcript's last newline (at `offset`) that no marker
/// explained: refused, or with `move_torn_aside` (`noma repair`) appended
/// to `<transcript>.torn` and cut from the transcript.
fn settle_torn_tail(
    doc: &Path,
    t: &mut LockedTranscript,
    offset: u64,
    torn: &[u8],
    move_torn_aside: bool,
    out: &mut Recovery,
) -> Result<(), RecoveryError> {
    let tpath = t.path().to_path_buf();
    let io = |what, e| RecoveryError::io(&tpath, what, e);
    let line = line_at(t, offset);
    if !move_torn_aside {
        return Err(RecoveryError::TornTail {
            path: tpath.display().to_string(),
            doc: doc.display().to_string(),
            bytes: torn.len(),
            line,
        });
    }
    let aside = tpath.with_file_name(format!(
        "{}.torn",
        tpath
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    append_aside(&aside, torn).map_err(|e| io("cannot save the torn bytes", e))?;
    t.truncate(offset).map_err(|e| io("cannot truncate", e))?;
    out.truncated_bytes += torn.len() as u64;
    out.messages.push(format!(
        "moved {} byte(s) after the last newline (line {line}) to {}",
        torn.len(),
        aside.display()
    ));
    Ok(())
}

/// Holds the document against the transcript's last line `raw` (at
/// `offset`): it must be a record whose result the document is, unless
/// `force` tolerates an unrecorded edit (reported in `out`).
fn check_last_record(
    doc: &Path,
    t: &mut LockedTranscript,
    offset: u64,
    raw: &[u8],
    force: bool,
    out: &mut Recovery,
) -> Result<(), RecoveryError> {
    out.last_line_sha256 = Some(sha256_hex(raw));
    let last = match transcript::parse_record(0, raw) {
        Ok(r) => r,
        Err(_) => {
            let line = line_at(t, offset);
            let err = transcript::parse_record(line, raw)
                .err()
                .unwrap_or(ReadError::Malformed {
                    line,
                    message: "unreadable".into(),
                });
            return Err(unreadable_last(t.path(), doc, raw, err));
        }
    };
    let document = read_checked(doc)?;
    if document.sha256 == last.post_sha256 {
        out.document = Some(document);
        return Ok(());
    }
    let edit = UnrecordedEdit {
        document_sha256: document.sha256,
        expected_sha256: last.post_sha256.clone(),
        line: line_at(t, offset),
        op_id: last.op_id.clone(),
    };
    if !force {
        return Err(RecoveryError::UnrecordedEdit(edit));
    }
    out.messages.push(format!(
        "unrecorded edit: the document (sha256 {}) is not the state the transcript's last record (line {}) leaves ({})",
        transcript::short_sha(&edit.document_sha256),
        edit.line,
        transcript::short_sha(&edit.expected_sha256)
    ));
    out.unrecorded_edit = Some(edit);
    Ok(())
}

/// Acts on the intent marker, if there is one: finishes the interrupted
/// request it records, or removes a marker whose writer died writing it.
fn settle_intent(
    doc: &Path,
    t: &mut LockedTranscript,
    mode: EditedSince,
    out: &mut Recovery,
) -> Result<(), RecoveryError> {
    let tpath = t.path().to_path_buf();
    let io = |what, e| RecoveryError::io(&tpath, what, e);
    match Intent::read(&tpath) {
        Ok(Some(intent)) => finish_interrupted(doc, t, &intent, mode, out)?,
        Ok(None) => {}
        // The marker is made durable before the append starts, so a marker
        // that is not whole means its writer died writing it: nothing
        // else of that request was written.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            Intent::clear(&tpath).map_err(|e| io("cannot remove the intent marker", e))?;
            out.messages.push(
                "removed an incomplete intent marker (its writer died before appending anything)"
                    .into(),
            );
        }
        Err(e) => return Err(io("cannot read the intent marker", e)),
    }
    Ok(())
}

fn append_aside(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = crate::fsio::contain::open_write(path, crate::fsio::contain::WriteMode::Append)?;
    f.write_all(bytes)?;
    f.write_all(b"\n")?;
    f.sync_all()
}

/// What an intent marker says happened, given the transcript's length and
/// the bytes after the marker's recorded length.
#[derive(Debug, PartialEq, Eq)]
enum Interrupted {
    /// Nothing was appended.
    NothingWritten,
    /// The append is partial (or not the marker's bytes): never committed.
    PartialAppend,
    /// The append is whole: the request committed.
    Committed,
    /// The transcript does not fit the marker.
    Inconsistent(String),
}

fn classify(intent: &Intent, len: u64, appended: &[u8]) -> Interrupted {
    let end = intent.transcript_len.saturating_add(intent.append_len);
    if len == intent.transcript_len {
        Interrupted::NothingWritten
    } else if len < intent.transcript_len {
        Interrupted::Inconsistent(format!(
            "the transcript ({len} bytes) is shorter than before the interrupted write ({} bytes)",
            intent.transcript_len
        ))
    } else if len < end || (len == end && sha256_hex(appended) != intent.append_sha256) {
        Interrupted::PartialAppend
    } else if len == end {
        Interrupted::Committed
    } else {
        Interrupted::Inconsistent(format!(
            "the transcript grew past an interrupted write ({len} bytes, the write ends at {end}); \
             restore it from version control"
        ))
    }
}

/// What recovery does with a committed request whose document was edited
/// since: refuses (neither), leaves it to the edit (`force`), or rolls it
/// forward onto the edit (`repairing`, `noma repair`).
#[derive(Debug, Clone, Copy)]
struct EditedSince {
    force: bool,
    repairing: bool,
}

/// Completes or undoes the request an intent marker describes; `mode`
/// says what happens when its document was edited since.
fn finish_interrupted(
    doc: &Path,
    t: &mut LockedTranscript,
    intent: &Intent,
    EditedSince { force, repairing }: EditedSince,
    out: &mut Recovery,
) -> Result<(), RecoveryError> {
    let tpath = t.path().to_path_buf();
    let shown = tpath.display().to_string();
    let io = |what, e| RecoveryError::io(&tpath, what, e);
    let len = t.byte_len().map_err(|e| io("cannot read", e))?;
    let appended = if len > intent.transcript_len {
        t.read_from(intent.transcript_len)
            .map_err(|e| io("cannot read", e))?
    } else {
        Vec::new()
    };
    let clear = || Intent::clear(&tpath).map_err(|e| io("cannot remove the intent marker", e));
    match classify(intent, len, &appended) {
        Interrupted::NothingWritten => {
            out.messages.push(
                "cleared the intent marker of an interrupted request that wrote nothing".into(),
            );
            clear()
        }
        Interrupted::PartialAppend => {
            t.truncate(intent.transcript_len)
                .map_err(|e| io("cannot truncate", e))?;
            out.truncated_bytes += len - intent.transcript_len;
            out.messages.push(format!(
                "removed the partial append of an interrupted request ({} bytes; never committed, the document was not touched)",
                len - intent.transcript_len
            ));
            clear()
        }
        Interrupted::Inconsistent(message) => Err(RecoveryError::Inconsistent {
            path: shown,
            message,
        }),
        Interrupted::Committed => {
            let document = read_checked(doc)?;
            if document.sha256 == intent.doc_post_sha256 {
                // The rename happened; only the marker's removal was lost.
                return clear();
            }
            if document.sha256 != intent.doc_pre_sha256 {
                if force {
                    // The next step reports the edit; the marker is spent.
                    return clear();
                }
                let first_line = line_at(t, intent.transcript_len);
                if repairing {
                    roll_onto_edit(doc, document, &appended, first_line, &shown, out)?;
                    return clear();
                }
                let records = split_records(&appended, first_line).map_err(|err| {
                    RecoveryError::Transcript {
                        path: shown.clone(),
                        err,
                    }
                })?;
                let last = records.last();
                return Err(RecoveryError::UnrecordedEdit(UnrecordedEdit {
                    document_sha256: document.sha256,
                    expected_sha256: intent.doc_post_sha256.clone(),
                    line: last.map_or(first_line, |(l, _)| *l),
                    op_id: last.map(|(_, r)| r.op_id.clone()).unwrap_or_default(),
                }));
            }
            let first_line = line_at(t, intent.transcript_len);
            let n = roll_forward(doc, document, &appended, first_line, &shown)?;
            out.rolled_forward = n;
            out.messages.push(format!(
                "rolled forward {n} record(s) from line {first_line}: an interrupted request had committed its records but not its document"
            ));
            clear()
        }
    }
}

/// `noma repair` of a committed request whose document was edited since
/// (it is neither the request's pre- nor its post-state): the killed
/// writer left the document at its pre-state, so that is what the person
/// edited. The request's applied ops are re-applied onto the edit; when
/// all apply, the document keeps both changes, else it is left as edited.
/// Either way the transcript ends with the request's records, and the
/// edit, which no record explains, is `noma record`'s to record.
fn roll_onto_edit(
    doc: &Path,
    document: CheckedDocument,
    appended: &[u8],
    first_line: usize,
    shown: &str,
    out: &mut Recovery,
) -> Result<(), RecoveryError> {
    let records = split_records(appended, first_line).map_err(|err| RecoveryError::Transcript {
        path: shown.to_string(),
        err,
    })?;
    let mut state = String::from_utf8(document.bytes).map_err(|e| {
        let e = std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        RecoveryError::io(doc, "not UTF-8", e)
    })?;
    let what = format!("an interrupted request had committed its records (from line {first_line}) but not its document, and the document was edited since");
    let mut memo = ParseMemo::new();
    let mut n = 0;
    for (line, r) in records
        .iter()
        .filter(|(_, r)| r.patch_result == PatchResult::Applied)
    {
        match noma_core::patch::apply_ops_with(&mut memo, &state, std::slice::from_ref(&r.op)) {
            Ok(next) => {
                memo.parse_edited(&state, &next);
                state = next;
                n += 1;
            }
            Err(e) => {
                out.messages.push(format!(
                    "{what}; its op at line {line} does not apply to the edit ({}: {}), so the document is left as edited",
                    e.code.as_str(),
                    e.message
                ));
                return Ok(());
            }
        }
    }
    fsio::atomic_write(doc, state.as_bytes())
        .map_err(|e| RecoveryError::io(doc, "cannot write", e))?;
    out.rolled_forward = n;
    out.messages.push(format!(
        "rolled forward {n} record(s) onto the edit: {what}"
    ));
    Ok(())
}

/// The records of an appended request with their file line numbers.
fn split_records(
    appended: &[u8],
    first_line: usize,
) -> Result<Vec<(usize, transcript::Record)>, ReadError> {
    let (lines, _) = transcript::split_lines(appended);
    lines
        .iter()
        .map(|l| {
            let line = first_line + l.number - 1;
            transcript::parse_record(line, l.raw).map(|r| (line, r))
        })
        .collect()
}

/// Re-applies the applied records of a committed request to the document
/// at the request's pre-state, checking every hash, and writes the result.
fn roll_forward(
    doc: &Path,
    document: CheckedDocument,
    appended: &[u8],
    first_line: usize,
    shown: &str,
) -> Result<usize, RecoveryError> {
    let records = split_records(appended, first_line).map_err(|err| RecoveryError::Transcript {
        path: shown.to_string(),
        err,
    })?;
    let mut state = String::from_utf8(document.bytes).map_err(|e| {
        let e = std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        RecoveryError::io(doc, "not UTF-8", e)
    })?;
    let mut n = 0;
    let mut memo = ParseMemo::new();
    for (line, r) in &records {
        if r.patch_result != PatchResult::Applied {
            continue;
        }
        let fail = |message: String| RecoveryError::RollForward {
            line: *line,
            op_id: r.op_id.clone(),
            message,
        };
        let next = match noma_core::transcript::reapply::reapply(&mut memo, &state, r) {
            Ok(next) => next.text,
            Err(ReapplyError::Fails(e)) => {
                return Err(fail(format!(
                    "re-applying the op failed: {} {}",
                    e.code.as_str(),
                    e.message
                )))
            }
            Err(ReapplyError::Differs(left)) => {
                return Err(fail(format!(
                    "re-applying the op gives sha256 {}, the record says {}",
                    left.sha256, r.post_sha256
                )))
            }
        };
        // The next record's op reads this state's tree, spliced from the last.
        memo.parse_edited(&state, &next);
        state = next;
        n += 1;
    }
    fsio::atomic_write(doc, state.as_bytes())
        .map_err(|e| RecoveryError::io(doc, "cannot write", e))?;
    Ok(n)
}

/// Read-only: what a writer would repair, in words (an interrupted write
/// pending behind an intent marker). Verifiers print these and change nothing.
pub fn inspect(doc: &Path, transcript_path: &Path) -> Vec<String> {
    let intent = match Intent::read(transcript_path) {
        Ok(Some(i)) => i,
        Ok(None) => return Vec::new(),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return vec![format!(
                "an incomplete intent marker is pending ({e}); its writer died before appending anything, and the next writer (`noma patch`, or `noma repair {}`) removes it",
                noma_core::diag::shell_word(&doc.to_string_lossy())
            )]
        }
        Err(e) => return vec![format!("{e}")],
    };
    let bytes = match fsio::read_regular(transcript_path) {
        Ok(b) => b,
        Err(e) => return vec![format!("{}: cannot read: {e}", transcript_path.display())],
    };
    let start = (intent.transcript_len as usize).min(bytes.len());
    let due = match classify(&intent, bytes.len() as u64, &bytes[start..]) {
        Interrupted::NothingWritten => "clear its marker (it wrote nothing)".to_string(),
        Interrupted::PartialAppend => format!(
            "remove its partial append ({} bytes, never committed)",
            bytes.len() - start
        ),
        Interrupted::Committed => {
            let doc_sha = fsio::read_regular(doc)
                .map(|b| sha256_hex(&b))
                .unwrap_or_default();
            if doc_sha == intent.doc_post_sha256 {
                "clear its marker (the request completed)".to_string()
            } else if doc_sha == intent.doc_pre_sha256 {
                "roll the document forward to the request's committed records".to_string()
            } else {
                "roll the request's committed records forward onto the document's later edit where they apply, and leave the edit for `noma record`".to_string()
            }
        }
        Interrupted::Inconsistent(m) => format!("refuse: {m}"),
    };
    vec![format!(
        "an interrupted write is pending; the next writer (`noma patch`, or `noma repair {}`) will {due}",
        noma_core::diag::shell_word(&doc.to_string_lossy())
    )]
}

/// Read-only: the unrecorded edit a writer would refuse with
/// [`RecoveryError::UnrecordedEdit`] — the document is not the state the
/// transcript's last complete record leaves — checked the way [`recover`]
/// checks it, under the readers' shared lock, repairing nothing. `None`
/// when there is no transcript or no record yet, or when an interrupted
/// write is pending (the next writer settles it first; [`inspect`] says
/// how). A last record that does not parse is the writer's error too.
pub fn find_unrecorded_edit(
    doc: &Path,
    transcript_path: &Path,
) -> Result<Option<UnrecordedEdit>, RecoveryError> {
    if !matches!(Intent::read(transcript_path), Ok(None)) {
        return Ok(None);
    }
    let mut t = match LockedTranscript::open_shared(transcript_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RecoveryError::io(transcript_path, "cannot open", e)),
    };
    let tail =
        read_tail(&mut t).map_err(|e| RecoveryError::io(transcript_path, "cannot read", e))?;
    let Some((offset, raw)) = tail.last else {
        return Ok(None);
    };
    let last = transcript::parse_record(0, &raw).map_err(|_| {
        let line = line_at(&mut t, offset);
        let err = transcript::parse_record(line, &raw)
            .err()
            .unwrap_or(ReadError::Malformed {
                line,
                message: "unreadable".into(),
            });
        unreadable_last(transcript_path, doc, &raw, err)
    })?;
    let document = read_checked(doc)?;
    if document.sha256 == last.post_sha256 {
        return Ok(None);
    }
    Ok(Some(UnrecordedEdit {
        document_sha256: document.sha256,
        expected_sha256: last.post_sha256,
        line: line_at(&mut t, offset),
        op_id: last.op_id,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::actor;
    use noma_core::patch::testing::append_applier as fake_apply;
    use noma_core::plan::{chain_and_serialise, plan, Context, Request};
    use serde_json::json;

    fn setup(doc: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d.noma");
        std::fs::write(&d, doc).unwrap();
        let t = dir.path().join("d.noma.patches");
        (dir, d, t)
    }

    #[test]
    fn find_unrecorded_edit_sees_what_a_writer_refuses_and_changes_nothing() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let (_dir, d, t) = setup("base\n");
        // No transcript: nothing to compare with.
        assert_eq!(find_unrecorded_edit(&d, &t).unwrap(), None);
        let (src, bytes) = batch("base\n", &["x"], None);
        std::fs::write(&d, &src).unwrap();
        std::fs::write(&t, &bytes).unwrap();
        assert_eq!(find_unrecorded_edit(&d, &t).unwrap(), None);
        std::fs::write(&d, "base\nx by hand\n").unwrap();
        let found = find_unrecorded_edit(&d, &t).unwrap().expect("an edit");
        assert_eq!(found.line, 1);
        assert_eq!(found.document_sha256, sha256_hex(b"base\nx by hand\n"));
        // A writer's recovery refuses the same edit, and the check wrote nothing.
        assert_eq!(std::fs::read(&t).unwrap(), bytes);
        let mut locked = LockedTranscript::open(&t).unwrap();
        match recover(&d, &mut locked, false) {
            Err(RecoveryError::UnrecordedEdit(e)) => assert_eq!(e, found),
            other => panic!("{other:?}"),
        }
        drop(locked);
        // A last line that is not a record is reported, not taken for clean.
        std::fs::write(&t, b"{not a record}\n").unwrap();
        assert!(matches!(
            find_unrecorded_edit(&d, &t),
            Err(RecoveryError::Transcript { .. })
        ));
    }

    /// Line numbers counted a buffer at a time agree with counting the
    /// whole file, across buffer edges and past the end.
    #[test]
    fn line_at_counts_lines_before_an_offset() {
        let (_dir, _d, t) = setup("x");
        let bytes: Vec<u8> = (0..30_000u32)
            .flat_map(|i| format!("{}\n", "r".repeat((i % 7) as usize)).into_bytes())
            .collect();
        std::fs::write(&t, &bytes).unwrap();
        let mut locked = LockedTranscript::open(&t).unwrap();
        let len = bytes.len() as u64;
        for offset in [0, 1, 8191, 8192, 8193, 65_537, len - 1, len, len + 10] {
            let end = (offset as usize).min(bytes.len());
            let want = memchr::memchr_iter(b'\n', &bytes[..end]).count() + 1;
            assert_eq!(line_at(&mut locked, offset), want, "offset {offset}");
        }
    }

    #[test]
    fn an_io_failure_keeps_its_cause_and_is_not_a_check_failure() {
        let (_dir, d, _t) = setup("x");
        let missing = d.with_file_name("gone.noma");
        let err = read_checked(&missing).map(|_| ()).unwrap_err();
        let RecoveryError::Io { path, what, source } = &err else {
            panic!("not an I/O error: {err}");
        };
        assert_eq!((path, *what), (&missing, "cannot read"));
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        assert!(err
            .to_string()
            .starts_with(&format!("{}: cannot read: ", missing.display())));
        assert!(!err.is_check_failure(), "exit 2 (could not run), not 1");
    }

    fn batch(src: &str, texts: &[&str], prev: Option<String>) -> (String, Vec<u8>) {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let ops: Vec<_> = texts
            .iter()
            .map(|t| json!({"op":"append","text":t}))
            .collect();
        let mut p = plan(src, &Context::default(), &ops, &Request::new(actor()));
        (
            p.new_text.clone(),
            chain_and_serialise(&mut p.records, prev),
        )
    }

    fn intent_for(before: &[u8], append: &[u8], pre: &str, post: &str) -> Intent {
        Intent {
            transcript_len: before.len() as u64,
            append_len: append.len() as u64,
            append_sha256: sha256_hex(append),
            doc_pre_sha256: sha256_hex(pre.as_bytes()),
            doc_post_sha256: sha256_hex(post.as_bytes()),
        }
    }

    #[test]
    fn a_long_last_line_is_found_past_the_first_window() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        // One 150-op request: over 64 KiB of records, so the window widens.
        let (_d, doc, tp) = setup("x");
        let texts: Vec<String> = (0..150)
            .map(|i| format!("<{i}>{}", "y".repeat(500)))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (mid, first) = batch("x", &refs, None);
        assert!(first.len() > 64 * 1024, "{} bytes", first.len());
        std::fs::write(&tp, &first).unwrap();
        std::fs::write(&doc, &mid).unwrap();
        let mut t = LockedTranscript::open(&tp).unwrap();
        let r = recover(&doc, &mut t, false).unwrap();
        assert!(r.is_clean());
        let body = &first[..first.len() - 1];
        let at = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        assert_eq!(r.last_line_sha256, Some(sha256_hex(&first[at..])));
        assert_eq!(r.document.unwrap().bytes, mid.as_bytes());
    }

    #[test]
    fn rolls_forward_only_with_an_intent_marker() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let (_d, doc, tp) = setup("x");
        let (new, bytes) = batch("x", &["a", "b"], None);
        std::fs::write(&tp, &bytes).unwrap();
        // Without a marker the lagging document is an edit like any other.
        let mut t = LockedTranscript::open(&tp).unwrap();
        let e = recover(&doc, &mut t, false).unwrap_err();
        assert!(matches!(e, RecoveryError::UnrecordedEdit(_)), "{e}");
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), "x");
        // With the marker of the interrupted request it is rolled forward.
        intent_for(b"", &bytes, "x", &new).write(&tp).unwrap();
        let r = recover(&doc, &mut t, false).unwrap();
        assert_eq!(r.rolled_forward, 2);
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), new);
        assert_eq!(Intent::read(&tp).unwrap(), None);
        assert!(recover(&doc, &mut t, false).unwrap().is_clean());
    }

    #[test]
    fn repair_rolls_a_committed_request_onto_a_later_edit_and_names_record() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let (_d, doc, tp) = setup("x");
        let (new, bytes) = batch("x", &["a", "b"], None);
        std::fs::write(&tp, &bytes).unwrap();
        intent_for(b"", &bytes, "x", &new).write(&tp).unwrap();
        // A person edited the pre-state the killed writer left.
        std::fs::write(&doc, "x, edited").unwrap();
        let mut t = LockedTranscript::open(&tp).unwrap();
        // A writer refuses (an edit no record explains) and keeps the marker.
        let e = recover(&doc, &mut t, false).unwrap_err();
        assert!(matches!(e, RecoveryError::UnrecordedEdit(_)), "{e}");
        assert!(Intent::read(&tp).unwrap().is_some());
        // Repair keeps both changes and leaves the edit to `noma record`.
        let r = repair(&doc, &mut t).unwrap();
        assert_eq!(r.rolled_forward, 2);
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), "x, editedab");
        assert_eq!(Intent::read(&tp).unwrap(), None);
        assert_eq!(std::fs::read(&tp).unwrap(), bytes);
        assert!(r.unrecorded_edit.is_some());
        let next = r.next_step.clone().unwrap();
        assert!(next.contains("`noma record "), "{next}");
        assert!(!r.messages.iter().any(|m| m.contains("--force")), "{r:?}");
    }

    #[test]
    fn a_partial_append_is_cut_only_back_to_the_marker() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let (_d, doc, tp) = setup("x");
        let (mid, first) = batch("x", &["a"], None);
        let prev = {
            let (lines, _) = transcript::split_lines(&first);
            Some(sha256_hex(lines[0].raw))
        };
        let (new, second) = batch(&mid, &["b", "c"], prev);
        std::fs::write(&doc, &mid).unwrap();
        // The second request died inside its append: a line and a half.
        let nl = second.iter().position(|&b| b == b'\n').unwrap();
        let mut torn = first.clone();
        torn.extend_from_slice(&second[..nl + 10]);
        std::fs::write(&tp, &torn).unwrap();
        intent_for(&first, &second, &mid, &new).write(&tp).unwrap();
        let mut t = LockedTranscript::open(&tp).unwrap();
        let r = recover(&doc, &mut t, false).unwrap();
        assert_eq!(r.truncated_bytes as usize, nl + 10);
        assert_eq!(std::fs::read(&tp).unwrap(), first);
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), mid);
        assert_eq!(Intent::read(&tp).unwrap(), None);
    }

    #[test]
    fn a_torn_tail_without_a_marker_is_refused_by_writers_and_moved_aside_by_repair() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let (dir, doc, tp) = setup("x");
        let (new, bytes) = batch("x", &["a"], None);
        let mut with_junk = bytes.clone();
        with_junk.extend_from_slice(b"{\"protocol_version\":");
        std::fs::write(&tp, &with_junk).unwrap();
        std::fs::write(&doc, &new).unwrap();
        let mut t = LockedTranscript::open(&tp).unwrap();
        let e = recover(&doc, &mut t, false).unwrap_err();
        assert!(e.to_string().contains("noma repair"), "{e}");
        assert_eq!(std::fs::read(&tp).unwrap(), with_junk);
        let r = repair(&doc, &mut t).unwrap();
        assert_eq!(r.truncated_bytes, 20);
        assert_eq!(std::fs::read(&tp).unwrap(), bytes);
        let aside = std::fs::read(dir.path().join("d.noma.patches.torn")).unwrap();
        assert_eq!(aside, b"{\"protocol_version\":\n");
    }

    #[test]
    fn refuses_unrecorded_edit_unless_forced() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let (_d, doc, tp) = setup("x");
        let (new, bytes) = batch("x", &["a"], None);
        std::fs::write(&tp, &bytes).unwrap();
        std::fs::write(&doc, format!("{new}edited")).unwrap();
        let mut t = LockedTranscript::open(&tp).unwrap();
        let e = recover(&doc, &mut t, false).unwrap_err();
        assert!(e.is_check_failure());
        assert!(e.to_string().contains("line 1"), "{e}");
        let r = recover(&doc, &mut t, true).unwrap();
        assert!(r.unrecorded_edit.is_some());
    }

    #[test]
    fn an_incomplete_marker_is_removed_and_nothing_else_changes() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let (_d, doc, tp) = setup("x");
        let (new, bytes) = batch("x", &["a"], None);
        std::fs::write(&tp, &bytes).unwrap();
        std::fs::write(&doc, &new).unwrap();
        // A writer died inside Intent::write: the file exists, half written.
        std::fs::write(fsio::intent_path(&tp), b"{\"transcript_len\":").unwrap();
        assert!(!inspect(&doc, &tp).is_empty());
        let mut t = LockedTranscript::open(&tp).unwrap();
        let r = recover(&doc, &mut t, false).unwrap();
        assert_eq!(r.messages.len(), 1, "{:?}", r.messages);
        assert_eq!(Intent::read(&tp).unwrap(), None);
        assert_eq!(std::fs::read(&tp).unwrap(), bytes);
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), new);
    }

    #[test]
    fn classify_covers_every_marker_state() {
        let i = Intent {
            transcript_len: 10,
            append_len: 3,
            append_sha256: sha256_hex(b"abc"),
            doc_pre_sha256: String::new(),
            doc_post_sha256: String::new(),
        };
        assert_eq!(classify(&i, 10, b""), Interrupted::NothingWritten);
        assert_eq!(classify(&i, 12, b"ab"), Interrupted::PartialAppend);
        assert_eq!(classify(&i, 13, b"abd"), Interrupted::PartialAppend);
        assert_eq!(classify(&i, 13, b"abc"), Interrupted::Committed);
        assert!(matches!(classify(&i, 9, b""), Interrupted::Inconsistent(_)));
        assert!(matches!(
            classify(&i, 14, b"abcd"),
            Interrupted::Inconsistent(_)
        ));
    }
}
