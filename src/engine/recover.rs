//! Crash recovery (the rule is documented on [`crate::engine`]). Runs with
//! the transcript lock held, so nothing else is writing either file.

use std::path::Path;

use serde::Serialize;

use super::fsio::{self, LockedTranscript};
use super::ApplyFn;
use crate::doc::hash::sha256_hex;
use crate::transcript::{self, PatchResult, ReadError, Record};

/// What recovery found and did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Recovery {
    /// Bytes cut from the transcript end (torn line and/or torn request).
    pub truncated_bytes: u64,
    /// Complete lines removed because their request was torn.
    pub truncated_records: usize,
    /// Applied records whose ops were re-applied to the document.
    pub rolled_forward: usize,
    /// Temp files of killed writers that were deleted.
    pub stale_temps_removed: usize,
    /// An unrecorded edit tolerated because of `--force` (or reported by replay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrecorded_edit: Option<UnrecordedEdit>,
    /// Human-readable lines describing each repair.
    pub messages: Vec<String>,
    /// sha256 of the transcript's last line after recovery (the next record's
    /// `prev_entry_sha256`).
    #[serde(skip)]
    pub last_line_sha256: Option<String>,
    /// The document as recovery read it under the lock, when it found it
    /// to be the last record's result and left it alone: the patch that
    /// follows starts from it instead of reading and hashing it again.
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
    #[error("{0}")]
    Io(String),
    /// A complete transcript line that recovery needs is not a valid record.
    #[error("transcript {path}: {err}")]
    Transcript {
        /// Transcript path.
        path: String,
        /// The parse error (with its line).
        err: ReadError,
    },
    /// The document differs from what the transcript says (rule c).
    #[error(
        "unrecorded edit: the document's sha256 is {} but the transcript's last record (line {}, op_id {}) leaves it at {}; \
         inspect the change (noma replay), then re-run with --force to patch on top of it",
        .0.document_sha256, .0.line, .0.op_id, .0.expected_sha256
    )]
    UnrecordedEdit(UnrecordedEdit),
    /// Rolling a lagging request forward did not reproduce its hashes.
    #[error("cannot roll forward record at line {line} (op_id {op_id}): {message}")]
    RollForward {
        /// Line of the record.
        line: usize,
        /// Its op_id.
        op_id: String,
        /// What went wrong.
        message: String,
    },
}

impl RecoveryError {
    /// Exit 1 (the pair is inconsistent or the transcript corrupt) rather
    /// than exit 2 (could not run).
    pub fn is_check_failure(&self) -> bool {
        !matches!(self, RecoveryError::Io(_))
    }
}

/// The records of the transcript's last request, newest first, and the
/// index of its first line. Records without `op_list` are requests of one.
fn last_request(lines: &[transcript::RawLine<'_>]) -> Result<(Vec<Record>, usize), ReadError> {
    let Some(last) = lines.last() else {
        return Ok((Vec::new(), 0));
    };
    let rec = transcript::parse_record(last.number, last.raw)?;
    let Some(list) = rec.op_list.clone() else {
        return Ok((vec![rec], lines.len() - 1));
    };
    let mut tail = vec![rec];
    let mut i = lines.len() - 1;
    while i > 0 && tail.len() < list.len {
        let l = lines[i - 1];
        let r = transcript::parse_record(l.number, l.raw)?;
        if r.op_list.as_ref().map(|o| &o.id) != Some(&list.id) {
            break;
        }
        tail.push(r);
        i -= 1;
    }
    Ok((tail, i))
}

/// Whether `tail` (the last request, newest record first) holds every
/// record of its op-list, in order.
fn request_is_complete(tail: &[Record]) -> bool {
    match tail.first().and_then(|r| r.op_list.as_ref()) {
        Some(list) => {
            tail.len() == list.len
                && tail
                    .iter()
                    .rev()
                    .enumerate()
                    .all(|(k, r)| r.op_list.as_ref().is_some_and(|o| o.index == k))
        }
        None => true,
    }
}

/// Reads the document and hashes it.
fn read_checked(doc: &Path) -> std::io::Result<CheckedDocument> {
    let bytes = std::fs::read(doc)?;
    let sha256 = sha256_hex(&bytes);
    Ok(CheckedDocument { bytes, sha256 })
}

/// What the fast path learnt when nothing needs repair.
struct CleanTail {
    last_line_sha256: String,
    document: CheckedDocument,
}

/// The common case, read from the transcript's end only: its last request
/// is whole and the document is that request's result. Recovery then has
/// nothing to do, and its cost follows the last request instead of the
/// transcript's history. `None` means "look at the whole file": a torn or
/// unreadable tail, a lagging document, or an empty transcript (the full
/// path also reports line numbers, which a tail cannot know).
fn clean_tail(doc: &Path, t: &mut LockedTranscript) -> std::io::Result<Option<CleanTail>> {
    let mut window: u64 = 64 * 1024;
    loop {
        let (start, bytes) = t.read_tail(window)?;
        // Unless the window starts the file or a line, its first line is partial.
        let skip = if start == 0 {
            0
        } else {
            match memchr::memchr(b'\n', &bytes) {
                Some(at) => at + 1,
                None => {
                    window = window.saturating_mul(4);
                    continue;
                }
            }
        };
        let (lines, torn) = transcript::split_lines(&bytes[skip..]);
        if torn.is_some() || lines.is_empty() {
            return Ok(None);
        }
        let Ok((tail, first)) = last_request(&lines) else {
            return Ok(None);
        };
        // `first == 0` with more file before the window: the request may
        // reach further back (or begin exactly here); widen and look again.
        if first == 0 && start > 0 {
            window = window.saturating_mul(4);
            continue;
        }
        let (Some(last_line), Some(last)) = (lines.last(), tail.first()) else {
            return Ok(None);
        };
        if !request_is_complete(&tail) {
            return Ok(None);
        }
        // An unreadable document is the full path's to report.
        let Ok(document) = read_checked(doc) else {
            return Ok(None);
        };
        if document.sha256 != last.post_sha256 {
            return Ok(None);
        }
        return Ok(Some(CleanTail {
            last_line_sha256: sha256_hex(last_line.raw),
            document,
        }));
    }
}

/// Applies the recovery rule to `doc` and its locked transcript.
pub fn recover(
    doc: &Path,
    t: &mut LockedTranscript,
    apply: ApplyFn,
    force: bool,
) -> Result<Recovery, RecoveryError> {
    let tpath = t.path().display().to_string();
    let io = |what: &str, e: std::io::Error| RecoveryError::Io(format!("{tpath}: {what}: {e}"));
    let bad = |err: ReadError| RecoveryError::Transcript {
        path: tpath.clone(),
        err,
    };
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
    if let Some(clean) = clean_tail(doc, t).map_err(|e| io("cannot read", e))? {
        out.last_line_sha256 = Some(clean.last_line_sha256);
        out.document = Some(clean.document);
        return Ok(out);
    }
    let bytes = t.read_all().map_err(|e| io("cannot read", e))?;
    let (mut lines, torn) = transcript::split_lines(&bytes);
    let mut keep = bytes.len() - torn.map_or(0, <[u8]>::len);
    if keep < bytes.len() {
        out.messages.push(format!(
            "truncated a torn final line ({} bytes without a newline; never committed)",
            bytes.len() - keep
        ));
    }

    // Parse from the end only: recovery needs the last request, not history.
    let (mut tail, first) = last_request(&lines).map_err(bad)?;
    if !request_is_complete(&tail) {
        // A torn request: its append never completed, so it never committed.
        keep = lines[first].offset;
        out.truncated_records = lines.len() - first;
        out.messages.push(format!(
            "truncated {} record(s) of an incomplete op-list (lines {}..={}; never committed)",
            out.truncated_records,
            lines[first].number,
            lines.len()
        ));
        lines.truncate(first);
        tail = last_request(&lines).map_err(bad)?.0;
    }
    if keep < bytes.len() {
        t.truncate(keep as u64)
            .map_err(|e| io("cannot truncate", e))?;
        out.truncated_bytes = (bytes.len() - keep) as u64;
    }
    let Some(last_line) = lines.last().copied() else {
        return Ok(out);
    };
    out.last_line_sha256 = Some(sha256_hex(last_line.raw));
    tail.reverse(); // oldest first
    let Some(last) = tail.last() else {
        return Ok(out);
    };

    let document = read_checked(doc)
        .map_err(|e| RecoveryError::Io(format!("{}: cannot read: {e}", doc.display())))?;
    if document.sha256 == last.post_sha256 {
        out.document = Some(document);
        return Ok(out);
    }
    let CheckedDocument {
        bytes: doc_bytes,
        sha256: doc_sha,
    } = document;
    let complete = last
        .op_list
        .as_ref()
        .map_or(tail.len() == 1, |o| tail.len() == o.len);
    let accepted = tail.iter().all(|r| r.patch_result != PatchResult::Rejected);
    let first_line = last_line.number + 1 - tail.len();
    if complete && accepted && tail.first().is_some_and(|r| r.pre_sha256 == doc_sha) {
        let mut state = String::from_utf8(doc_bytes)
            .map_err(|e| RecoveryError::Io(format!("{}: not UTF-8: {e}", doc.display())))?;
        let mut n = 0;
        for (k, r) in tail.iter().enumerate() {
            let fail = |message: String| RecoveryError::RollForward {
                line: first_line + k,
                op_id: r.op_id.clone(),
                message,
            };
            if r.patch_result != PatchResult::Applied {
                continue;
            }
            let next = apply(&state, std::slice::from_ref(&r.op)).map_err(|e| {
                fail(format!(
                    "re-applying the op failed: {} {}",
                    e.code.as_str(),
                    e.message
                ))
            })?;
            let got = sha256_hex(next.as_bytes());
            if got != r.post_sha256 {
                return Err(fail(format!(
                    "re-applying the op gives sha256 {got}, the record says {}",
                    r.post_sha256
                )));
            }
            let _ = crate::doc::parse_shared_edited(&state, &next, || ());
            state = next;
            n += 1;
        }
        fsio::atomic_write(doc, state.as_bytes())
            .map_err(|e| RecoveryError::Io(format!("{}: cannot write: {e}", doc.display())))?;
        out.rolled_forward = n;
        out.messages.push(format!(
            "rolled forward {n} record(s) (lines {first_line}..={}): the document lagged its transcript",
            last_line.number
        ));
        return Ok(out);
    }
    let edit = UnrecordedEdit {
        document_sha256: doc_sha,
        expected_sha256: last.post_sha256.clone(),
        line: last_line.number,
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
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::{actor, fake_apply};
    use crate::engine::{chain_and_serialise, plan, Context, Options};
    use serde_json::json;

    fn setup(doc: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d.noma");
        std::fs::write(&d, doc).unwrap();
        let t = dir.path().join("d.noma.patches");
        (dir, d, t)
    }

    fn batch(src: &str, texts: &[&str]) -> (String, Vec<u8>) {
        let ops: Vec<_> = texts
            .iter()
            .map(|t| json!({"op":"append","text":t}))
            .collect();
        let mut p = plan(
            src,
            &Context::default(),
            &ops,
            &Options::new(actor()),
            fake_apply,
        );
        (
            p.new_text.clone(),
            chain_and_serialise(&mut p.records, None),
        )
    }

    #[test]
    fn the_tail_fast_path_agrees_with_the_whole_file_and_defers_the_rest() {
        // Two requests: a 150-op list (over 64 KiB of records, so the tail
        // window has to widen) and a one-op request after it.
        let (_d, doc, tp) = setup("x");
        let texts: Vec<String> = (0..150).map(|i| format!("<{i}>")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (mid, first) = batch("x", &refs);
        assert!(first.len() > 64 * 1024, "{} bytes", first.len());
        std::fs::write(&tp, &first).unwrap();
        std::fs::write(&doc, &mid).unwrap();
        let last_line = |bytes: &[u8]| {
            let body = &bytes[..bytes.len() - 1];
            let at = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            sha256_hex(&bytes[at..])
        };
        let mut t = LockedTranscript::open(&tp).unwrap();
        let clean = clean_tail(&doc, &mut t)
            .unwrap()
            .expect("clean after one big request");
        assert_eq!(clean.last_line_sha256, last_line(&first));
        assert_eq!(clean.document.bytes, mid.as_bytes());
        assert_eq!(clean.document.sha256, sha256_hex(mid.as_bytes()));
        let r = recover(&doc, &mut t, fake_apply, false).unwrap();
        assert!(r.is_clean());
        assert_eq!(
            r.last_line_sha256.as_deref(),
            Some(last_line(&first).as_str())
        );
        drop(t);

        let mut p = plan(
            &mid,
            &Context::default(),
            &[json!({"op":"append","text":"z"})],
            &Options::new(actor()),
            fake_apply,
        );
        let second = chain_and_serialise(&mut p.records, Some(last_line(&first)));
        let mut all = first.clone();
        all.extend_from_slice(&second);
        std::fs::write(&tp, &all).unwrap();
        std::fs::write(&doc, &p.new_text).unwrap();
        let mut t = LockedTranscript::open(&tp).unwrap();
        let clean = clean_tail(&doc, &mut t)
            .unwrap()
            .expect("clean after a small request");
        assert_eq!(clean.last_line_sha256, last_line(&all));

        // A lagging document, a torn tail and an empty transcript all go to
        // the whole-file path.
        std::fs::write(&doc, &mid).unwrap();
        assert!(clean_tail(&doc, &mut t).unwrap().is_none());
        std::fs::write(&doc, &p.new_text).unwrap();
        let mut torn = all.clone();
        torn.extend_from_slice(b"{\"protocol_version\":");
        std::fs::write(&tp, &torn).unwrap();
        assert!(clean_tail(&doc, &mut t).unwrap().is_none());
        std::fs::write(&tp, b"").unwrap();
        assert!(clean_tail(&doc, &mut t).unwrap().is_none());
    }

    #[test]
    fn rolls_forward_a_lagging_document() {
        let (_d, doc, tp) = setup("x");
        let (new, bytes) = batch("x", &["a", "b"]);
        std::fs::write(&tp, &bytes).unwrap();
        let mut t = LockedTranscript::open(&tp).unwrap();
        let r = recover(&doc, &mut t, fake_apply, false).unwrap();
        assert_eq!(r.rolled_forward, 2);
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), new);
        // Second run: consistent, nothing to do.
        assert!(recover(&doc, &mut t, fake_apply, false).unwrap().is_clean());
    }

    #[test]
    fn truncates_torn_line_and_torn_request() {
        let (_d, doc, tp) = setup("x");
        let (_, bytes) = batch("x", &["a", "b", "c"]);
        // Keep the first complete line plus half of the second.
        let first_nl = bytes.iter().position(|&b| b == b'\n').unwrap();
        std::fs::write(&tp, &bytes[..first_nl + 10]).unwrap();
        let mut t = LockedTranscript::open(&tp).unwrap();
        let r = recover(&doc, &mut t, fake_apply, false).unwrap();
        assert_eq!(r.truncated_records, 1);
        assert_eq!(r.truncated_bytes as usize, first_nl + 10);
        assert_eq!(std::fs::read(&tp).unwrap().len(), 0);
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), "x");
    }

    #[test]
    fn refuses_unrecorded_edit_unless_forced() {
        let (_d, doc, tp) = setup("x");
        let (new, bytes) = batch("x", &["a"]);
        std::fs::write(&tp, &bytes).unwrap();
        std::fs::write(&doc, format!("{new}edited")).unwrap();
        let mut t = LockedTranscript::open(&tp).unwrap();
        let e = recover(&doc, &mut t, fake_apply, false).unwrap_err();
        assert!(e.is_check_failure());
        assert!(e.to_string().contains("line 1"), "{e}");
        let r = recover(&doc, &mut t, fake_apply, true).unwrap();
        assert!(r.unrecorded_edit.is_some());
    }
}
