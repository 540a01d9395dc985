//! `noma record`: turn a hand edit into ops and append them to the
//! transcript as `actor.kind = "human"` records.
//!
//! The previous state is the transcript's last applied `post_sha256`. The
//! transcript stores ops, not texts, so that state is rebuilt: from HEAD's
//! committed document when its sha256 is one the transcript passes through
//! (the first `pre_sha256` or any applied `post_sha256`), else from the
//! first such version in the path's git history, then by re-applying the
//! remaining records (every intermediate hash checked).
//!
//! The edit is expressed first by rounds of v1.0 block ops (delete_block,
//! the narrowest of replace_block, replace_body and update_attribute on
//! the innermost changed directives, update_heading, add_block), each round re-diffing the result against the file, so
//! coarser replacements happen only when finer ones do not suffice. What
//! no v1.0 op reaches (prose in a section, paragraphs, list items, tables
//! and cards outside addressable directives, frontmatter, layout) is then
//! recorded as line hunks with the extension op
//! [`noma_core::patch::REPLACE_LINES`], unless the policy's
//! `record_text_edits: false` forbids it; then those lines are named
//! (the differ is the `ops` module).
//!
//! **Genesis.** A transcript with no applied record starts with one
//! record from the empty document (`pre_sha256` = sha256 of no bytes) to
//! the document, one `x-noma/replace_lines` op: the transcript then
//! replays from its own content (§5.5) without any committed base, which
//! is what a new document under `require_transcript` needs. When the file
//! differs from its committed version, the genesis record reaches the
//! committed version and the edit since is recorded after it.
//!
//! Records are planned by the engine against the previous state and
//! appended under the transcript lock in one write; the document itself is
//! not rewritten (it already holds the result).
//!
//! **Memory.** The transcript is never held: it is read a line
//! at a time and checked as it goes (`scan`: every line a record, no torn
//! line, not joined), keeping the last applied state's sha256 and the
//! last line's. In the everyday case HEAD's document is that state and no
//! record is read again; otherwise the records are walked forward a line
//! at a time from the state found (`state`). Under the lock, the
//! transcript's length and last line show that nobody wrote since.

mod line_endings;
mod location;
mod scan;
mod state;

pub use line_endings::LineEndings;

use noma_merge::hand_edit::{edit_ops, TextEditsOff};

use noma_core::diag::shell_word;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::git::repo::{GitError, Repo};
use location::Location;
use noma_core::doc::hash::sha256_hex;
use noma_core::patch::REPLACE_LINES;
use noma_core::plan::{chain_and_serialise, Context, Plan, Request, UNCHANGED_DIAGNOSTICS};
use noma_core::transcript::{self, Actor, Record};
use noma_provenance::config::Policy;
use noma_store::engine;
use noma_store::fsio;

/// What `record` did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    /// The file is already the transcript's last state.
    NothingToRecord,
    /// Records were appended.
    Recorded {
        /// The ops, in order.
        ops: Vec<Value>,
        /// The transcript written to.
        transcript: String,
        /// The records start the transcript from the empty document.
        genesis: bool,
        /// The file was saved with other line endings than the state
        /// recorded from; the records keep the recorded ones.
        #[serde(skip_serializing_if = "Option::is_none")]
        line_endings: Option<LineEndings>,
    },
    /// The file differed from the transcript's last state only by the
    /// line endings it was saved with, and was given back the recorded
    /// ones (git would have committed the saved ones); nothing recorded.
    LineEndingsRestored {
        /// What differed.
        line_endings: LineEndings,
    },
}

/// Why a hand edit could not be recorded, by class: the CLI exits 2 on
/// [`RecordError::Usage`] and 1 on [`RecordError::Check`], and prints the
/// cause's message.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The command cannot run (unreadable file, not a repository, I/O).
    #[error(transparent)]
    Usage(#[from] CannotRun),
    /// The edit or the transcript cannot be turned into records.
    #[error(transparent)]
    Check(#[from] CannotRecord),
}

/// Why `noma record` cannot run.
#[derive(Debug, thiserror::Error)]
pub enum CannotRun {
    /// The actor or reason holds a control character; nothing was
    /// recorded.
    #[error(transparent)]
    UnsafeField(#[from] noma_core::display::UnsafeField),
    /// The document cannot be read as text.
    #[error(transparent)]
    Document(#[from] noma_core::doc::source::SourceError),
    /// The transcript exists but cannot be read.
    #[error("{}: {source}", path.display())]
    TranscriptUnreadable {
        /// The transcript.
        path: PathBuf,
        /// The read's error.
        source: std::io::Error,
    },
    /// The document's path cannot be resolved.
    #[error("{}: {source}", path.display())]
    Unresolvable {
        /// The document.
        path: PathBuf,
        /// The error resolving it.
        source: std::io::Error,
    },
    /// The document is in no git repository: name the two ways on.
    #[error(
        "{}: not in a git repository (noma record finds the state to record from in git): \
         run `git init` and commit it; without git, `noma patch --inplace` writes and records \
         edits itself",
        path.display()
    )]
    NotARepository {
        /// The document.
        path: PathBuf,
        /// The discovery's error.
        source: GitError,
    },
    /// The repository has no working tree.
    #[error("{}: bare repository: no working tree", path.display())]
    Bare {
        /// The document.
        path: PathBuf,
    },
    /// The document lies outside its repository's working tree.
    #[error("{}: outside the repository", path.display())]
    OutsideRepository {
        /// The document.
        path: PathBuf,
    },
    /// The document's path in the repository is not UTF-8.
    #[error("{}: path is not valid UTF-8", path.display())]
    NonUtf8Path {
        /// The document.
        path: PathBuf,
    },
    /// The repository's policy cannot be loaded.
    #[error(transparent)]
    Policy(#[from] noma_provenance::config::ConfigError),
    /// Reading the document's history failed.
    #[error(transparent)]
    History(#[from] GitError),
    /// The caller's signing step failed.
    #[error("{}: cannot sign: {source}", path.display())]
    CannotSign {
        /// The document.
        path: PathBuf,
        /// The step's error.
        source: std::io::Error,
    },
    /// The transcript cannot be opened and locked for the append.
    #[error("{}: cannot open: {source}", path.display())]
    CannotLock {
        /// The transcript.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The marker of an interrupted write cannot be read.
    #[error("{0}")]
    PendingWrite(#[source] std::io::Error),
    /// The document could not be given back its recorded line endings.
    #[error("{}: cannot rewrite: {source}", path.display())]
    CannotRewrite {
        /// The document.
        path: PathBuf,
        /// The write's error.
        source: std::io::Error,
    },
    /// The append failed.
    #[error("{}: cannot append: {source}", path.display())]
    CannotAppend {
        /// The transcript.
        path: PathBuf,
        /// The write's error.
        source: std::io::Error,
    },
}

/// Why the edit or the transcript cannot be turned into records.
#[derive(Debug, thiserror::Error)]
pub enum CannotRecord {
    /// Two branches' records were joined into the transcript line by line;
    /// `advice` says how to make it linear.
    #[error("{}: {advice}", transcript.display())]
    Joined {
        /// The transcript.
        transcript: PathBuf,
        /// What to do ([`noma_merge::joined::advice`]).
        advice: String,
    },
    /// A line of the transcript is not a valid record.
    #[error("{}: {source}", transcript.display())]
    TranscriptInvalid {
        /// The transcript.
        transcript: PathBuf,
        /// The parse error.
        source: transcript::ReadError,
    },
    /// The transcript ends in a torn line (an interrupted append).
    #[error(
        "{}: the last line is torn; run `noma repair {}` first",
        transcript.display(),
        shell_word(&doc.to_string_lossy())
    )]
    TornTranscript {
        /// The transcript.
        transcript: PathBuf,
        /// Its document.
        doc: PathBuf,
    },
    /// A genesis record needs the extension op the policy forbids.
    #[error(
        "starting a transcript with a genesis record needs {REPLACE_LINES}, which {} forbids (record_text_edits: false); an empty transcript is a valid start instead: touch \"{}\"",
        noma_provenance::config::CONFIG_PATH,
        transcript.display()
    )]
    GenesisNeedsTextEdits {
        /// The transcript.
        transcript: PathBuf,
    },
    /// The document differs from the state to record from only by the
    /// line endings it was saved or checked out with, which git converts
    /// back on commit: nothing to record, and the file cannot be patched.
    #[error(
        "differs from {} only by {} line endings, which git converts back on commit ({by}): a checkout or an editor's save converted it; `noma hooks install` restores the committed bytes and keeps documents byte-exact (nothing was recorded)",
        if *from_committed { "its committed version" } else { "the state its transcript ends at" },
        saved.name()
    )]
    LineEndingsConverted {
        /// The state compared is the committed version (a genesis start),
        /// not the transcript's last state.
        from_committed: bool,
        /// The line endings the file has.
        saved: noma_core::doc::lines::Eol,
        /// The setting that converts them on commit.
        by: String,
    },
    /// Only text ops could record the edit, and the policy forbids them.
    #[error(
        "{0} ({config} has record_text_edits: false, so only v1.0 block ops may record it)",
        config = noma_provenance::config::CONFIG_PATH
    )]
    TextEditsOff(#[from] TextEditsOff),
    /// The planned records do not reproduce the file.
    #[error("the engine did not reproduce the file with the computed ops; nothing was recorded")]
    NotReproduced,
    /// The edit introduces validation errors (described).
    #[error("the edit introduces {0}; fix the document and record again (nothing was recorded)")]
    IntroducesErrors(String),
    /// An interrupted write of the transcript is pending.
    #[error(
        "an interrupted write of {} is pending; run `noma repair {}` first",
        transcript.display(),
        shell_word(&doc.to_string_lossy())
    )]
    InterruptedWrite {
        /// The transcript.
        transcript: PathBuf,
        /// Its document.
        doc: PathBuf,
    },
    /// The document or its transcript changed while recording.
    #[error("the document or its transcript changed while recording; run noma record again")]
    ChangedWhileRecording,
    /// The transcript has no applied record to rebuild a state from.
    #[error("{rel}: the transcript has no applied record")]
    NoAppliedRecord {
        /// The document's repository-relative path.
        rel: String,
    },
    /// No version in history is a state the transcript passes through.
    #[error(
        "{rel}: cannot rebuild the transcript's last state: no committed version of the document has sha256 {pre_sha256} (the first applied record's pre_sha256) or any later recorded state"
    )]
    NoBaseFound {
        /// The document's repository-relative path.
        rel: String,
        /// The first applied record's pre_sha256.
        pre_sha256: String,
    },
    /// Re-applying a recorded op failed.
    #[error("re-applying record {op_id} failed: {code} ({message})")]
    ReapplyFailed {
        /// The record.
        op_id: String,
        /// The engine's error code.
        code: String,
        /// The engine's message.
        message: String,
    },
    /// Re-applying a recorded op does not reproduce its post_sha256.
    #[error("re-applying record {op_id} does not reproduce its post_sha256; run noma replay")]
    ReapplyMismatch {
        /// The record.
        op_id: String,
    },
}

/// Records the hand edit of `doc_path`, with a step run on the records before they are
/// appended (a signer's, see [`engine::Options::before_append`]).
pub fn record_file_with(
    doc_path: &Path,
    actor: Actor,
    reason: Option<String>,
    before_append: Option<&engine::BeforeAppend>,
) -> Result<Outcome, RecordError> {
    noma_core::transcript::check_writer_fields(&actor, reason.as_deref())
        .map_err(CannotRun::from)?;
    let text = noma_store::fsio::read_document(doc_path).map_err(CannotRun::from)?;
    let tpath = engine::default_transcript_path(doc_path);
    // Recording appends to it: a link or a FIFO there is refused before
    // it is read (fsio::contain), as the append would refuse it.
    fsio::contain::check_writable(&tpath).map_err(|source| CannotRun::CannotLock {
        path: tpath.clone(),
        source,
    })?;
    let prior = scan::scan(doc_path, &tpath)?;
    record_after(
        (doc_path, &tpath),
        &text,
        &prior,
        (actor, reason, before_append),
    )
}

/// The transcript's last state for `doc_path`: the text `noma record`
/// diffs the file against (so an editor can show the hook's verdict before
/// a commit). `Ok(None)` when the document has no transcript or the
/// transcript no applied record.
pub fn last_state(doc_path: &Path) -> Result<Option<String>, RecordError> {
    let tpath = engine::default_transcript_path(doc_path);
    if !tpath.is_file() {
        return Ok(None);
    }
    let prior = scan::scan(doc_path, &tpath)?;
    if prior.last_applied_post().is_none() {
        return Ok(None);
    }
    let location = Location::discover(doc_path)?;
    prior.previous_state(&location).map(Some)
}

/// What recording needs of the transcript once it has been read and found
/// valid (not joined, every line a record, no torn line).
trait Prior {
    /// The last applied record's `post_sha256`, if any: the state to record from.
    fn last_applied_post(&self) -> Option<&str>;
    /// The text of that state, rebuilt (see the module docs).
    fn previous_state(&self, location: &Location) -> Result<String, RecordError>;
    /// The sha256 of the last line, which the first appended record chains onto.
    fn last_line_sha(&self) -> Option<String>;
    /// Under the lock: whether the transcript is still the one read.
    fn unchanged(&self, locked: &mut fsio::LockedTranscript) -> std::io::Result<bool>;
}

/// The person who acts, why, and the step run before the append.
type Acting<'a> = (Actor, Option<String>, Option<&'a engine::BeforeAppend>);

/// Records the edit of `doc_path` (whose text is `text`) after its
/// transcript `tpath`, as `prior` read it.
fn record_after(
    (doc_path, tpath): (&Path, &Path),
    text: &str,
    prior: &dyn Prior,
    (actor, reason, before_append): Acting<'_>,
) -> Result<Outcome, RecordError> {
    let doc_sha = sha256_hex(text.as_bytes());
    if prior.last_applied_post() == Some(doc_sha.as_str()) {
        return Ok(Outcome::NothingToRecord);
    }
    let location = Location::discover(doc_path)?;
    let policy = Policy::load(&location.root).map_err(CannotRun::from)?;
    let text_edits = policy.file.record_text_edits;
    let (prev, genesis) = starting_point(&location, prior, text_edits, text, tpath)?;
    if prev == text {
        return Ok(Outcome::NothingToRecord);
    }
    let from = genesis.as_deref().unwrap_or(&prev);
    let resaved = line_endings::resaved(&location, from, text);
    let target = resaved.as_ref().map_or(text, |r| r.text.as_str());
    if let Some(r) = resaved.as_ref().filter(|_| target == from) {
        if let Some(by) = &r.line_endings.git_converts {
            return Err(CannotRecord::LineEndingsConverted {
                from_committed: genesis.is_some(),
                saved: r.line_endings.saved,
                by: by.clone(),
            }
            .into());
        }
        if genesis.is_none() {
            let _locked = lock_unchanged(doc_path, tpath, prior, text)?;
            rewrite(doc_path, target)?;
            return Ok(Outcome::LineEndingsRestored {
                line_endings: r.line_endings.clone(),
            });
        }
    }
    let ops = ops_from((&prev, genesis.as_deref()), target, text_edits)?;
    let genesis = genesis.is_some();

    let mut opts = Request::new(actor);
    opts.reason = reason.or_else(|| genesis.then(|| "start of the transcript".to_string()));
    let ctx = Context {
        doc_uri: noma_store::uri::portable_doc_uri(Some(&location.root), doc_path),
        ..Context::default()
    };
    let mut locked = lock_unchanged(doc_path, tpath, prior, text)?;
    let mut plan = noma_core::plan::plan(&prev, &ctx, &ops, &opts);
    check_plan(&plan, target)?;
    before(before_append, (doc_path, tpath), &plan.records)?;
    let bytes = chain_and_serialise(&mut plan.records, prior.last_line_sha());
    let line_endings = resaved.as_ref().map(|r| r.line_endings.clone());
    let doc_sha = if line_endings.as_ref().is_some_and(|l| l.rewritten) {
        // The file first: stopped before the append, it holds the same
        // edit with the recorded line endings, which `noma record`
        // records again.
        rewrite(doc_path, target)?;
        sha256_hex(target.as_bytes())
    } else {
        doc_sha
    };
    // The document already holds the edit: the request changes no bytes
    // of it, so the marker's pre- and post-state are the same.
    engine::commit_request(&mut locked, &bytes, &doc_sha, &doc_sha, None).map_err(|source| {
        CannotRun::CannotAppend {
            path: tpath.to_path_buf(),
            source,
        }
    })?;
    Ok(Outcome::Recorded {
        ops,
        transcript: tpath.display().to_string(),
        genesis,
        line_endings,
    })
}

/// Gives the document `text`: its own edit with the recorded line
/// endings (see [`line_endings`]), replaced atomically.
fn rewrite(doc_path: &Path, text: &str) -> Result<(), CannotRun> {
    fsio::atomic_write(doc_path, text.as_bytes()).map_err(|source| CannotRun::CannotRewrite {
        path: doc_path.to_path_buf(),
        source,
    })
}

/// The state to record from and, for a transcript without an applied
/// record, the state a genesis record writes (the record then starts from
/// the empty document): the committed version first when the file has
/// changed since. A policy without text edits starts from the committed
/// version instead (found again in history by replay and the hooks).
fn starting_point(
    location: &Location,
    prior: &dyn Prior,
    text_edits: bool,
    text: &str,
    tpath: &Path,
) -> Result<(String, Option<String>), RecordError> {
    if prior.last_applied_post().is_some() {
        return Ok((prior.previous_state(location)?, None));
    }
    let head = location.head_text()?;
    match (text_edits, head) {
        (true, head) => Ok((
            String::new(),
            Some(
                head.filter(|h| h != text)
                    .unwrap_or_else(|| text.to_string()),
            ),
        )),
        (false, Some(head)) if head != text => Ok((head, None)),
        (false, _) => Err(CannotRecord::GenesisNeedsTextEdits {
            transcript: tpath.to_path_buf(),
        }
        .into()),
    }
}

/// The ops from `prev` to `text`, after a genesis record writing `genesis`
/// when there is one (`prev` is then the empty document).
fn ops_from(
    (prev, genesis): (&str, Option<&str>),
    text: &str,
    text_edits: bool,
) -> Result<Vec<Value>, CannotRecord> {
    let mut ops = Vec::new();
    let mut from = prev;
    if let Some(start) = genesis {
        ops.push(noma_core::patch::genesis_op(start));
        from = start;
    }
    ops.extend(edit_ops(from, text, text_edits)?);
    Ok(ops)
}

/// The planned records must reproduce the file and bring in no error.
fn check_plan(plan: &Plan, text: &str) -> Result<(), CannotRecord> {
    if !plan.accepted || plan.new_text != text {
        return Err(CannotRecord::NotReproduced);
    }
    if let Some(why) = introduced_errors(&plan.records) {
        // Hooks do not run during a rebase, so this is the last guard
        // before, say, an unresolved `::conflict` block enters history as
        // an edit.
        return Err(CannotRecord::IntroducesErrors(why));
    }
    Ok(())
}

/// Whether a patch of `doc_path` should open its transcript `tpath` with a
/// genesis record ([`engine::Options::genesis`]): the transcript has no
/// line yet, the document is in a git work tree whose HEAD does not hold
/// its bytes at its path (a new or copied document, or one edited since
/// it was committed), and the policy allows the extension op. A
/// transcript that starts at a committed document needs no genesis: its
/// first state is found in history by content.
pub(crate) fn first_patch_needs_genesis<'r>(
    repo: impl FnOnce() -> Option<&'r Repo>,
    policy: impl FnOnce() -> Option<&'r Policy>,
    doc_path: &Path,
    tpath: &Path,
) -> bool {
    if std::fs::metadata(tpath).is_ok_and(|m| m.len() > 0) {
        return false;
    }
    let Some(repo) = repo() else {
        return false;
    };
    if !policy().is_some_and(|p| p.file.record_text_edits) {
        return false;
    }
    let Some(rel) = repo.relative_path(doc_path) else {
        return false;
    };
    let Ok(bytes) = fsio::read_regular(doc_path) else {
        return false;
    };
    match repo.head_blob(&rel) {
        Ok(Some(committed)) => committed != bytes,
        Ok(None) => true,
        Err(_) => false,
    }
}

/// Runs the caller's step on the records before they are appended.
fn before(
    step: Option<&engine::BeforeAppend>,
    (doc_path, tpath): (&Path, &Path),
    records: &[Record],
) -> Result<(), CannotRun> {
    match step {
        Some(engine::BeforeAppend(step)) => {
            let first =
                engine::genesis_after(tpath, records).map_err(|source| CannotRun::CannotSign {
                    path: tpath.to_path_buf(),
                    source,
                })?;
            step(doc_path, records, first.as_ref()).map_err(|source| CannotRun::CannotSign {
                path: doc_path.to_path_buf(),
                source,
            })
        }
        None => Ok(()),
    }
}

/// Locks the transcript for the append and checks, under the lock, that
/// neither file changed since they were read (nobody patched meanwhile)
/// and no interrupted write is pending.
fn lock_unchanged(
    doc_path: &Path,
    tpath: &Path,
    prior: &dyn Prior,
    text: &str,
) -> Result<fsio::LockedTranscript, RecordError> {
    let mut locked =
        fsio::LockedTranscript::open(tpath).map_err(|source| CannotRun::CannotLock {
            path: tpath.to_path_buf(),
            source,
        })?;
    if fsio::Intent::read(tpath)
        .map_err(CannotRun::PendingWrite)?
        .is_some()
    {
        return Err(CannotRecord::InterruptedWrite {
            transcript: tpath.to_path_buf(),
            doc: doc_path.to_path_buf(),
        }
        .into());
    }
    let same = prior
        .unchanged(&mut locked)
        .map_err(|source| CannotRun::TranscriptUnreadable {
            path: tpath.to_path_buf(),
            source,
        })?;
    let again = noma_store::fsio::read_document(doc_path).map_err(CannotRun::from)?;
    if !same || again != text {
        return Err(CannotRecord::ChangedWhileRecording.into());
    }
    Ok(locked)
}

/// The validation errors the records say their ops introduced, as one
/// line (`None` when there are none).
fn introduced_errors(records: &[Record]) -> Option<String> {
    let errors: Vec<String> = records
        .iter()
        .flat_map(|r| r.diagnostics.iter().flatten())
        .filter(|d| {
            d.phase == Some(noma_core::diag::Phase::Post)
                && d.severity == noma_core::diag::Severity::Error
                && d.code != UNCHANGED_DIAGNOSTICS
        })
        .map(|d| match d.pos {
            Some(p) => format!("[{}] line {}: {}", d.code, p.line, d.message),
            None => format!("[{}] {}", d.code, d.message),
        })
        .collect();
    let first = errors.first()?;
    Some(format!(
        "{} validation error(s), first {first}",
        errors.len()
    ))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod whole_file;
