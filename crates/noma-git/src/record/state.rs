//! The transcript's last state rebuilt from a scanned transcript, walking
//! its records forward a line at a time: memory follows the
//! document and one record, never the transcript.
//!
//! The state is found as the whole-file path found it: the empty document
//! for a transcript that starts with a genesis record, else HEAD's
//! document when the transcript passes through it, else the first such
//! version in history; then the applied records after the *last* place
//! the transcript passes through that state are re-applied, every hash
//! checked: one pass over the records' hashes finds that place, a second
//! re-applies from it. In the everyday case HEAD holds the last state and
//! nothing is read again.

use std::collections::HashSet;

use super::location::Location;
use super::scan::Scanned;
use super::{CannotRecord, Prior, RecordError};
use noma_core::doc::hash::{sha256_hex, EMPTY_SHA256};
use noma_core::transcript::Record;
use noma_store::fsio::LockedTranscript;

impl Prior for Scanned {
    fn last_applied_post(&self) -> Option<&str> {
        self.last_applied_post.as_deref()
    }

    fn previous_state(&self, location: &Location) -> Result<String, RecordError> {
        let head = location.head_text()?;
        let Some(first_pre) = self.first_applied_pre.as_deref() else {
            return Err(CannotRecord::NoAppliedRecord {
                rel: location.rel.clone(),
            }
            .into());
        };
        // A genesis record starts from the empty document: no lookup.
        if first_pre == EMPTY_SHA256 {
            return Ok(walk(self, "")?.unwrap_or_default());
        }
        if let Some(head) = head {
            if self.last_applied_post.as_deref() == Some(sha256_hex(head.as_bytes()).as_str()) {
                // The everyday case: the last place the transcript passes
                // through HEAD's document is its end; nothing to re-apply.
                return Ok(head);
            }
            if let Some(text) = walk(self, &head)? {
                return Ok(text);
            }
        }
        from_history(self, location, first_pre)
    }

    fn last_line_sha(&self) -> Option<String> {
        self.last_line.as_ref().map(|(sha, _)| sha.clone())
    }

    fn unchanged(&self, locked: &mut LockedTranscript) -> std::io::Result<bool> {
        Scanned::unchanged(self, locked)
    }
}

/// The state the transcript ends at, from `base`: its applied records
/// after the last place it passes through `base` (the first applied
/// record's `pre_sha256` or any applied `post_sha256`) re-applied. None
/// when it never passes through `base`.
fn walk(scanned: &Scanned, base: &str) -> Result<Option<String>, RecordError> {
    let Some(from) = resume_at(scanned, &sha256_hex(base.as_bytes()))? else {
        return Ok(None);
    };
    let mut text = base.to_string();
    let mut memo = noma_core::doc::ParseMemo::new();
    scanned.applied_from(from, &mut |r| {
        text = reapplied(&mut memo, &text, &r)?;
        Ok(())
    })?;
    Ok(Some(text))
}

/// Where re-applying from the state `sha` starts: after the last applied
/// record that ends at it, else at the first applied record when that one
/// starts from it. A pass over the records' hashes only, so that a state
/// the transcript passes through again and again is re-applied from its
/// last time only.
fn resume_at(scanned: &Scanned, sha: &str) -> Result<Option<u64>, RecordError> {
    let (mut at, mut first) = (None, true);
    scanned.applied_hashes(&mut |h, (start, end)| {
        if first && h.pre_sha256 == sha {
            at = Some(start);
        }
        first = false;
        if h.post_sha256 == sha {
            at = Some(end);
        }
    })?;
    Ok(at)
}

/// `text` after the record's op, which must reproduce its `post_sha256`.
pub(super) fn reapplied(
    memo: &mut noma_core::doc::ParseMemo,
    text: &str,
    r: &Record,
) -> Result<String, CannotRecord> {
    use noma_core::transcript::reapply::{reapply, ReapplyError};
    match reapply(memo, text, r) {
        Ok(next) => Ok(next.text),
        Err(ReapplyError::Fails(e)) => Err(CannotRecord::ReapplyFailed {
            op_id: r.op_id.clone(),
            code: e.code.as_str().to_string(),
            message: e.message,
        }),
        Err(ReapplyError::Differs(_)) => Err(CannotRecord::ReapplyMismatch {
            op_id: r.op_id.clone(),
        }),
    }
}

/// The state from the first version in history the transcript passes
/// through (HEAD's document is none). The states are kept as the first 8
/// bytes of their sha256, a fraction of the records; a version that
/// matches one is confirmed by the walk from it.
fn from_history(
    scanned: &Scanned,
    location: &Location,
    first_pre: &str,
) -> Result<String, RecordError> {
    let mut keys = HashSet::from([key(first_pre)]);
    scanned.applied_hashes(&mut |h, _| {
        keys.insert(key(&h.post_sha256));
    })?;
    let mut walked = None;
    location.find_in_history(|text| {
        if !keys.contains(&key(&sha256_hex(text.as_bytes()))) {
            return false;
        }
        match walk(scanned, text) {
            Ok(None) => false,
            // Found (a failed re-application ends the search as well).
            found => {
                walked = Some(found);
                true
            }
        }
    })?;
    match walked {
        Some(found) => Ok(found?.unwrap_or_default()),
        None => Err(CannotRecord::NoBaseFound {
            rel: location.rel.clone(),
            pre_sha256: first_pre.to_string(),
        }
        .into()),
    }
}

/// The first 8 bytes of a sha256 given in hex.
fn key(sha: &str) -> u64 {
    sha.get(..16)
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .unwrap_or(0)
}
