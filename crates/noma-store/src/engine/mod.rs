//! The patch engine's durable side: one patch request on a file (the
//! document, its op-list and [`Options`]) → one transcript record per
//! attempted op appended, the document written once.
//!
//! The request itself is planned in memory by [`noma_core::plan`] (its
//! policy order and what a record's diagnostics hold are documented
//! there); this module reads the document and its capability descriptor,
//! and puts the plan on disk.
//!
//! # Durability and recovery
//!
//! Writers of one document are serialised by an exclusive advisory lock
//! (`flock`) on its transcript file, held for the whole
//! read-modify-write. The transcript is never renamed, so all processes
//! lock the same file. Under the lock a request ([`commit_request`]):
//!
//! 1. runs recovery ([`recover`]);
//! 2. computes every record in memory and writes the new document to a
//!    temp file beside it (fsynced);
//! 3. writes the *intent marker* ([`crate::fsio::Intent`]): the
//!    transcript's length, the length and sha256 of the bytes about to be
//!    appended, and the document's sha256 before and after (fsynced);
//! 4. appends all records with ONE `write(2)` and fsyncs — the commit point;
//! 5. renames the temp file over the document and fsyncs the directory;
//! 6. removes the marker.
//!
//! Records come first, so a crash can only leave the document behind the
//! transcript, never ahead of it; and the marker is the only evidence of
//! an interrupted write recovery accepts. With a marker present, recovery
//! (run by the next writer or `noma repair`) cuts a partial append back to
//! the recorded length, rolls a committed request forward when the
//! document is still at the request's pre-state (re-applying its ops and
//! checking every hash), and clears the marker. Without a marker nothing is
//! ever cut or re-applied: complete lines are history, bytes after the last
//! newline are reported (`noma repair` moves them aside), and a document
//! that is not the last record's result is an edit no record explains —
//! even when it equals an earlier state, as after `git checkout -- doc`.
//! Verifiers (`noma replay`, the hooks) never change either file.

use std::path::{Path, PathBuf};

use serde::Serialize;

use noma_core::diag::Diagnostic;
use noma_core::plan::{InvalidOp, Request};
use noma_core::transcript::{Actor, Record};

pub mod capability;
mod durable_io;
pub mod recover;

pub use durable_io::{commit_request, patch_file, remove_file, repair_file, replay_file};
pub use recover::{Recovery, RecoveryError};

/// Where the result goes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum WriteMode {
    /// Compute only: nothing is written, no transcript.
    #[default]
    DryRun,
    /// Replace the document and append to its transcript (locked, durable).
    InPlace,
    /// Write the new text to another file; the document and transcript are untouched.
    Out(PathBuf),
}

/// Options of one patch request on a file: the pure [`Request`] the
/// planner reads, and where its result goes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Who acts, why, against which state, how to validate.
    pub request: Request,
    /// Transcript path (default `<doc>.patches`).
    pub transcript: Option<PathBuf>,
    /// `doc_uri` of the records (default: the document's `file://` URI).
    pub doc_uri: Option<String>,
    /// Where the result goes.
    pub write: WriteMode,
    /// Patch even when recovery finds an unrecorded edit.
    pub force: bool,
    /// In place, on a transcript with no line yet: write a genesis record
    /// (the empty document to the document as found, by the tool) before
    /// the request's records, so the transcript replays from its own
    /// content. The shell sets it when no commit holds the document's
    /// bytes at its path (a new or copied document), where a first
    /// record's `pre_sha256` would name a state no clone can find.
    pub genesis: bool,
    /// Called under the transcript's lock with a request's records before
    /// they are appended (a shell signs them into its provenance sidecar);
    /// an error stops the request before anything is written.
    pub before_append: Option<BeforeAppend>,
}

/// The function of a [`BeforeAppend`]: given the document path, the
/// records about to be appended and the transcript's first record once
/// they are (its own, or the first of them for a new transcript; None when
/// there is neither), which names the document's lineage.
pub type BeforeAppendFn =
    dyn Fn(&Path, &[Record], Option<&Record>) -> std::io::Result<()> + Send + Sync;

/// The first record of the transcript at `tpath` once `records` are
/// appended to it: its own first record, else the first of `records`.
pub fn genesis_after(tpath: &Path, records: &[Record]) -> std::io::Result<Option<Record>> {
    let own = match crate::fsio::open_lines(tpath) {
        Ok(mut r) => noma_core::transcript::genesis::first_record_in(&mut r)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    Ok(own.or_else(|| records.first().cloned()))
}

/// A shell's step between planning a request's records and appending them
/// ([`Options::before_append`]).
#[derive(Clone)]
pub struct BeforeAppend(pub std::sync::Arc<BeforeAppendFn>);

impl std::fmt::Debug for BeforeAppend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeAppend(..)")
    }
}

impl Options {
    /// Defaults with the given actor.
    pub fn new(actor: Actor) -> Self {
        Options {
            request: Request::new(actor),
            transcript: None,
            doc_uri: None,
            write: WriteMode::DryRun,
            force: false,
            genesis: false,
            before_append: None,
        }
    }

    /// Defaults for a request on `doc` by `actor`, as every writer shell
    /// starts them: the records' `doc_uri` is the document's path relative
    /// to the work tree `root` ([`crate::uri::portable_doc_uri`]) and the
    /// validator reads datasets beside the document.
    pub fn for_document(doc: &Path, root: Option<&Path>, actor: Actor) -> Self {
        let mut opts = Options::new(actor);
        opts.doc_uri = Some(crate::uri::portable_doc_uri(root, doc));
        opts.request.validate.datasets = doc.parent().map(crate::fsio::datasets_in);
        opts
    }
}

/// The conventional transcript path: the document path plus
/// [`TRANSCRIPT_SUFFIX`](noma_core::transcript::TRANSCRIPT_SUFFIX) (§5.1).
///
/// A symlinked document is the file it points to: its transcript is the
/// target's, so a patch through the link writes through to the one
/// transcript the hook checks (it refuses staged links) and the MCP server
/// uses (it resolves links).
pub fn default_transcript_path(doc: &Path) -> PathBuf {
    let target;
    let doc = match std::fs::symlink_metadata(doc) {
        Ok(m) if m.file_type().is_symlink() => {
            target = std::fs::canonicalize(doc).unwrap_or_else(|_| doc.to_path_buf());
            target.as_path()
        }
        _ => doc,
    };
    let mut name = doc
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(noma_core::transcript::TRANSCRIPT_SUFFIX);
    doc.with_file_name(name)
}

/// True for a book manifest path, which is never a patch target.
pub fn is_book_manifest(path: &Path) -> bool {
    path.file_name()
        .map(|n| n.to_string_lossy().ends_with(".noma.yml"))
        .unwrap_or(false)
}

/// Why a request could not be carried out at all (no records written).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The document could not be read as text.
    #[error(transparent)]
    Source(#[from] noma_core::doc::source::SourceError),
    /// An op is not an op of the catalogue; nothing was recorded.
    #[error(transparent)]
    InvalidOp(#[from] InvalidOp),
    /// File-system failure.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// Unreadable or malformed capability descriptor.
    #[error(transparent)]
    Capability(#[from] capability::CapabilityError),
    /// Recovery failed or found an unrecorded edit.
    #[error(transparent)]
    Recovery(#[from] RecoveryError),
    /// The actor or reason holds a control character; nothing was
    /// recorded.
    #[error(transparent)]
    UnsafeField(#[from] noma_core::display::UnsafeField),
}

impl EngineError {
    /// True when the failure is a check failure (exit 1), not a usage error.
    pub fn is_check_failure(&self) -> bool {
        matches!(self, EngineError::Recovery(e) if e.is_check_failure())
    }
}

fn io_err<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> EngineError + 'a {
    move |source| EngineError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

/// What a patch request did.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The records (written to the transcript in `InPlace` mode).
    pub records: Vec<Record>,
    /// Every op was applied or noop.
    pub accepted: bool,
    /// The document after the request.
    #[serde(skip)]
    pub new_text: String,
    /// The full post-validation of the result.
    #[serde(skip)]
    pub post_diagnostics: Vec<Diagnostic>,
    /// The document bytes changed and were written (InPlace/Out).
    pub wrote_document: bool,
    /// The transcript appended to, if any.
    pub transcript: Option<PathBuf>,
    /// What recovery did before the request (InPlace only).
    pub recovery: Option<Recovery>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use noma_core::transcript::ActorKind;

    pub(crate) fn actor() -> Actor {
        Actor {
            kind: ActorKind::Agent,
            name: "t".into(),
            model: None,
            version: None,
        }
    }

    #[test]
    fn a_document_s_options_name_it_relative_to_its_work_tree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        let doc = dir.path().join("docs/a.noma");
        std::fs::write(&doc, "# A\n").unwrap();
        let opts = Options::for_document(&doc, Some(dir.path()), actor());
        assert_eq!(opts.doc_uri.as_deref(), Some("docs/a.noma"));
        assert!(opts.request.validate.datasets.is_some());
        assert!(opts.before_append.is_none() && !opts.genesis && !opts.request.strict);
    }
}
