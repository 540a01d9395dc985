//! Why a transcript's history could not be traced.

use std::path::PathBuf;

use crate::history_replay::{NotSearched, Searched};

/// Why the records of a transcript could not be followed to the blocks
/// they changed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TraceError {
    /// The transcript could not be read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A record does not parse.
    #[error("{0}")]
    Record(#[from] noma_core::transcript::ReadError),
    /// The stored attribution was made of another transcript.
    #[error("the transcript is not the one its stored attribution read")]
    Foreign,
    /// The transcript changed while it was read.
    #[error("changed while it was read; run the query again")]
    Changed,
    /// An indexed line is past the transcript's end.
    #[error("a line that is not there")]
    NoSuchLine,
    /// The first applied record starts from no known state.
    #[error("line {0}: the first applied record does not start from a known document state (no base found)")]
    NoStart(usize),
    /// A record does not start from the replayed state.
    #[error("line {line} (op_id {op_id}): the record does not start from the replayed state (run `noma replay`)")]
    PreMismatch {
        /// The transcript line.
        line: usize,
        /// The record.
        op_id: String,
    },
    /// A record's op does not apply to the replayed state.
    #[error("line {line} (op_id {op_id}): the op does not apply again: {message}")]
    OpFails {
        /// The transcript line.
        line: usize,
        /// The record.
        op_id: String,
        /// The patch engine's message.
        message: String,
    },
    /// A record's op does not give its post_sha256.
    #[error("line {line} (op_id {op_id}): re-applying the op does not give its post_sha256 (run `noma replay`)")]
    PostMismatch {
        /// The transcript line.
        line: usize,
        /// The record.
        op_id: String,
    },
    /// No version of the document is the state replay starts from.
    #[error("no version of {} with sha256 {sha} (the state the transcript starts from) in {}", doc.display(), searched.as_ref().map_or_else(|e| e.to_string(), |s| s.to_string()))]
    NoBase {
        /// The document.
        doc: PathBuf,
        /// The sha256 looked for.
        sha: String,
        /// Where it was looked for, or why nowhere.
        searched: Result<Searched, NotSearched>,
    },
}
