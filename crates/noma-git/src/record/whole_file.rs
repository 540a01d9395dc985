//! The whole-file reading of the transcript `noma record` did before issue
//! 35, kept as the test oracle of the streamed one (`scan`, `state`): the
//! file read whole, every record parsed and held, the previous state
//! rebuilt from the list of applied records, and the whole file compared
//! again under the lock.

use std::collections::HashMap;
use std::path::Path;

use super::location::Location;
use super::{CannotRecord, CannotRun, Prior, RecordError};
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{self, PatchResult, Record};
use noma_store::fsio;

/// The transcript read whole and parsed.
pub(super) struct WholeFile {
    bytes: Vec<u8>,
    parsed: transcript::Transcript,
}

impl WholeFile {
    /// Reads and checks the transcript `tpath` of `doc_path`.
    pub(super) fn read(doc_path: &Path, tpath: &Path) -> Result<WholeFile, RecordError> {
        let bytes = match fsio::read_regular(tpath) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => {
                return Err(CannotRun::TranscriptUnreadable {
                    path: tpath.to_path_buf(),
                    source,
                }
                .into())
            }
        };
        if let Some(join) = noma_merge::joined::find_join(&bytes) {
            return Err(CannotRecord::Joined {
                transcript: tpath.to_path_buf(),
                advice: noma_merge::joined::advice(&doc_path.to_string_lossy(), join),
            }
            .into());
        }
        let parsed = transcript::parse_transcript(&bytes).map_err(|source| {
            CannotRecord::TranscriptInvalid {
                transcript: tpath.to_path_buf(),
                source,
            }
        })?;
        if parsed.torn_tail.is_some() {
            return Err(CannotRecord::TornTranscript {
                transcript: tpath.to_path_buf(),
                doc: doc_path.to_path_buf(),
            }
            .into());
        }
        Ok(WholeFile { bytes, parsed })
    }

    fn applied(&self) -> Vec<&Record> {
        self.parsed
            .entries
            .iter()
            .map(|e| &e.record)
            .filter(|r| r.patch_result == PatchResult::Applied)
            .collect()
    }
}

impl Prior for WholeFile {
    fn last_applied_post(&self) -> Option<&str> {
        self.applied().last().map(|r| r.post_sha256.as_str())
    }

    fn previous_state(&self, location: &Location) -> Result<String, RecordError> {
        let applied = self.applied();
        let head = location.head_text()?;
        let Some(first) = applied.first() else {
            return Err(CannotRecord::NoAppliedRecord {
                rel: location.rel.clone(),
            }
            .into());
        };
        // sha256 -> index of the next record to re-apply from that state.
        let mut resume: HashMap<&str, usize> = HashMap::new();
        resume.insert(first.pre_sha256.as_str(), 0);
        for (i, r) in applied.iter().enumerate() {
            resume.insert(r.post_sha256.as_str(), i + 1);
        }
        let known = if first.pre_sha256 == noma_core::doc::hash::EMPTY_SHA256 {
            Some(String::new())
        } else {
            match head.filter(|h| resume.contains_key(sha256_hex(h.as_bytes()).as_str())) {
                Some(h) => Some(h),
                None => location
                    .find_in_history(|t| resume.contains_key(sha256_hex(t.as_bytes()).as_str()))?,
            }
        };
        let Some(text) = known else {
            return Err(CannotRecord::NoBaseFound {
                rel: location.rel.clone(),
                pre_sha256: first.pre_sha256.clone(),
            }
            .into());
        };
        Ok(reapply_from(text, &applied, &resume)?)
    }

    fn last_line_sha(&self) -> Option<String> {
        self.parsed.entries.last().map(|e| e.line_sha256.clone())
    }

    fn unchanged(&self, locked: &mut fsio::LockedTranscript) -> std::io::Result<bool> {
        Ok(locked.read_all()? == self.bytes)
    }
}

/// Re-applies the `applied` records after the state `text` (found in
/// `resume`), every intermediate hash checked.
fn reapply_from(
    mut text: String,
    applied: &[&Record],
    resume: &HashMap<&str, usize>,
) -> Result<String, CannotRecord> {
    let from = resume
        .get(sha256_hex(text.as_bytes()).as_str())
        .copied()
        .unwrap_or(0);
    let mut memo = noma_core::doc::ParseMemo::new();
    for r in applied.iter().skip(from) {
        text = super::state::reapplied(&mut memo, &text, r)?;
    }
    Ok(text)
}
