//! The patch engine: one patch request (document + op-list + options) →
//! one transcript record per attempted op, the document written once.
//!
//! # Policy (§3.2, §3.4)
//!
//! A request whose ops are not all objects of the v1.0 catalogue with the
//! right field types is refused before anything is recorded
//! ([`check_request`]): such a request was never attempted, and a record
//! whose `op` is not an op would make the transcript unreadable. The
//! refusal still carries a §3.5 code ([`InvalidOp::code`]): `unsupported_op`
//! for an unknown op, `invalid_content` for a missing or mistyped field.
//!
//! Then, in order: a book manifest (`*.noma.yml`) rejects every op with
//! `unsupported_op`; an `expected_sha` that is not the document's 8-char
//! `pre_sha` rejects every op with `sha_mismatch`; strict mode with
//! pre-validation errors rejects every op with `pre_validation_blocked`;
//! a `base_sha256` different from `pre_sha256` adds a `base_sha_drift`
//! warning and proceeds. The ops are then applied one at a time so each
//! record carries its exact intermediate hashes (record k's `pre_sha256`
//! is record k-1's `post_sha256`). If op k fails, op k is rejected with
//! its own code, ops 0..k are rejected with `op_list_aborted`, later ops
//! are not attempted and nothing is written. Engine diagnostics carry
//! `phase: "pre"` and count towards `pre_validation`, because §4.2 makes
//! the summary derivable from the array. A capability descriptor
//! (Annex A) only ever adds advisory warnings.
//!
//! # What a record's diagnostics hold
//!
//! A record carries what the request changed, not the document's whole
//! standing report: the pre-validation diagnostics the request resolved
//! (phase `pre`), the post-validation diagnostics it introduced (phase
//! `post`), the engine's own diagnostics, and for each phase one
//! `unchanged_diagnostics` entry that counts the diagnostics present both
//! before and after, with the worst severity among them, so that
//! `pre_validation` and `post_validation` stay derivable from the array
//! (§4.2). A patch on a document with 20,000 standing warnings thus adds a
//! few hundred bytes per record, not megabytes. A rejected record lists
//! its own cause first (`target_missing`, `op_list_aborted`, …), then its
//! advisories, then the summaries, so the first error a client reads is
//! why the op was refused, not what the document already had.
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
use noma_core::transcript::{Actor, Record};

pub mod capability;
mod codes;
mod diagnostic_delta;
mod durable_io;
mod planner;
mod record_maker;
pub mod recover;
mod request;

pub use codes::EngineCode;
pub use diagnostic_delta::UNCHANGED_DIAGNOSTICS;
pub use durable_io::{commit_request, patch_file, remove_file, repair_file, replay_file};
pub use planner::{plan, plan_with};
pub use record_maker::chain_and_serialise;
pub use recover::{Recovery, RecoveryError};
pub use request::{check_request, InvalidOp};

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

/// Options of one patch request.
#[derive(Debug, Clone)]
pub struct Options {
    /// Reject the list when pre-validation has errors.
    pub strict: bool,
    /// `reason` for every record.
    pub reason: Option<String>,
    /// Who acts.
    pub actor: Actor,
    /// 8-char display hash the caller expects the document to have.
    pub expected_sha: Option<String>,
    /// Full sha256 the caller prepared the patch against.
    pub base_sha256: Option<String>,
    /// `parent_op_id` for every record.
    pub parent_op_id: Option<String>,
    /// Transcript path (default `<doc>.patches`).
    pub transcript: Option<PathBuf>,
    /// `doc_uri` of the records (default: the document's `file://` URI).
    pub doc_uri: Option<String>,
    /// Where the result goes.
    pub write: WriteMode,
    /// Patch even when recovery finds an unrecorded edit.
    pub force: bool,
    /// Validator options for pre- and post-validation.
    pub validate: noma_core::validate::Options,
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
            strict: false,
            reason: None,
            actor,
            expected_sha: None,
            base_sha256: None,
            parent_op_id: None,
            transcript: None,
            doc_uri: None,
            write: WriteMode::DryRun,
            force: false,
            validate: noma_core::validate::Options::default(),
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
        opts.validate.datasets = doc.parent().map(crate::fsio::datasets_in);
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

/// Everything a pure planning run needs besides the source and the ops.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// `doc_uri` of the records.
    pub doc_uri: String,
    /// The target is a book manifest.
    pub book_manifest: bool,
    /// Parsed capability descriptor, if the sidecar exists.
    pub capability: Option<capability::CapabilityFile>,
    /// The source's sha256, when the caller already hashed exactly those
    /// bytes (recovery does, under the lock): spares hashing them again.
    pub source_sha256: Option<String>,
}

/// The computed result of a request, before anything is written.
#[derive(Debug, Clone)]
pub struct Plan {
    /// One record per attempted op (no chain hashes yet).
    pub records: Vec<Record>,
    /// The document after the list (the source itself when rejected).
    pub new_text: String,
    /// Every op was applied or noop.
    pub accepted: bool,
    /// The full post-validation of the result (phase `post`); records carry
    /// only what changed.
    pub post_diagnostics: Vec<Diagnostic>,
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
mod replay_tests;

#[cfg(test)]
pub(crate) mod tests {
    use super::diagnostic_delta::{changed_diagnostics, tag};
    use super::*;
    use noma_core::diag::{Phase, Summary};
    use noma_core::doc::hash::sha256_hex;
    use noma_core::doc::ParseMemo;
    use noma_core::patch::{PatchError, PatchErrorCode};
    use noma_core::transcript::ActorKind;
    use noma_core::transcript::{self, PatchResult};
    use serde_json::json;
    use serde_json::Value;

    /// Test applier: `{"op":"append","text":T}` appends T; `{"op":"same"}`
    /// is a noop; `{"op":"fail"}` fails with target_missing.
    pub(crate) fn fake_apply(
        _memo: &mut ParseMemo,
        src: &str,
        ops: &[Value],
    ) -> Result<String, PatchError> {
        let mut s = src.to_string();
        for (i, op) in ops.iter().enumerate() {
            match op.get("op").and_then(Value::as_str) {
                Some("append") => s.push_str(op.get("text").and_then(Value::as_str).unwrap_or("")),
                Some("same") => {}
                _ => {
                    return Err(PatchError {
                        code: PatchErrorCode::TargetMissing,
                        message: "no such block".into(),
                        op_index: i,
                    })
                }
            }
        }
        Ok(s)
    }

    pub(crate) fn actor() -> Actor {
        Actor {
            kind: ActorKind::Agent,
            name: "t".into(),
            model: None,
            version: None,
        }
    }

    fn codes(r: &Record) -> Vec<String> {
        r.diagnostics
            .iter()
            .flatten()
            .map(|d| d.code.clone())
            .collect()
    }

    #[test]
    fn a_document_s_options_name_it_relative_to_its_work_tree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        let doc = dir.path().join("docs/a.noma");
        std::fs::write(&doc, "# A\n").unwrap();
        let opts = Options::for_document(&doc, Some(dir.path()), actor());
        assert_eq!(opts.doc_uri.as_deref(), Some("docs/a.noma"));
        assert!(opts.validate.datasets.is_some());
        assert!(opts.before_append.is_none() && !opts.genesis && !opts.strict);
    }

    #[test]
    fn applied_noop_chain_is_exact() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let ops = [
            json!({"op":"append","text":"a\n"}),
            json!({"op":"same"}),
            json!({"op":"append","text":"b\n"}),
        ];
        let p = plan("x\n", &Context::default(), &ops, &Options::new(actor()));
        assert!(p.accepted);
        assert_eq!(p.new_text, "x\na\nb\n");
        let r = &p.records;
        assert_eq!(
            r.iter().map(|r| r.patch_result).collect::<Vec<_>>(),
            [
                PatchResult::Applied,
                PatchResult::Noop,
                PatchResult::Applied
            ]
        );
        assert_eq!(r[0].pre_sha256, sha256_hex(b"x\n"));
        assert_eq!(r[1].pre_sha256, r[0].post_sha256);
        assert_eq!(r[1].post_sha256, r[1].pre_sha256);
        assert_eq!(r[2].pre_sha256, r[1].post_sha256);
        assert_eq!(r[2].post_sha256, sha256_hex(b"x\na\nb\n"));
        for rec in r {
            rec.check_shape().unwrap();
        }
    }

    #[test]
    fn failure_aborts_earlier_ops_and_skips_later() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let ops = [
            json!({"op":"append","text":"a"}),
            json!({"op":"fail"}),
            json!({"op":"append","text":"b"}),
        ];
        let p = plan("x", &Context::default(), &ops, &Options::new(actor()));
        assert!(!p.accepted);
        assert_eq!(p.new_text, "x");
        assert_eq!(p.records.len(), 2);
        assert_eq!(codes(&p.records[0]), ["op_list_aborted"]);
        assert_eq!(codes(&p.records[1]), ["target_missing"]);
        for r in &p.records {
            assert_eq!(r.patch_result, PatchResult::Rejected);
            assert_eq!(r.pre_sha256, r.post_sha256);
            assert_eq!(r.pre_validation, Summary::Error);
        }
    }

    #[test]
    fn expected_sha_drift_manifest_and_chain() {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        let ops = [
            json!({"op":"append","text":"a"}),
            json!({"op":"append","text":"b"}),
        ];
        let mut o = Options::new(actor());
        o.expected_sha = Some("00000000".into());
        let p = plan("x", &Context::default(), &ops, &o);
        assert!(p.records.iter().all(|r| codes(r) == ["sha_mismatch"]));
        o.expected_sha = Some(transcript::short_sha(&sha256_hex(b"x")));
        o.base_sha256 = Some(sha256_hex(b"older"));
        let mut p = plan("x", &Context::default(), &ops, &o);
        assert!(p.accepted);
        assert_eq!(codes(&p.records[0]), ["base_sha_drift"]);
        assert_eq!(p.records[0].pre_validation, Summary::Warn);
        let bytes = chain_and_serialise(&mut p.records, None);
        let t = transcript::parse_transcript(&bytes).unwrap();
        assert_eq!(t.entries[0].record.prev_entry_sha256, None);
        assert_eq!(
            t.entries[1].record.prev_entry_sha256.as_deref(),
            Some(t.entries[0].line_sha256.as_str())
        );
        let ctx = Context {
            book_manifest: true,
            ..Context::default()
        };
        let p = plan("x", &ctx, &ops, &Options::new(actor()));
        assert!(p.records.iter().all(|r| codes(r) == ["unsupported_op"]));
    }

    #[test]
    fn strict_blocks_on_pre_errors() {
        // An unclosed directive is a parse issue, i.e. a pre-validation error.
        let src = "::claim{id=\"c\"}\nnever closed\n";
        if Summary::of(&validate_parsed(src)) != Summary::Error {
            return; // the parser recovered silently; nothing to test here
        }
        let mut o = Options::new(actor());
        o.strict = true;
        let p = plan_noop(src, &o);
        assert!(codes(&p.records[0])
            .iter()
            .any(|c| c == "pre_validation_blocked"));
        assert_eq!(p.records[0].patch_result, PatchResult::Rejected);
        o.strict = false;
        assert!(plan_noop(src, &o).accepted);
    }

    fn validate_parsed(src: &str) -> Vec<Diagnostic> {
        noma_core::validate::validate(&noma_core::doc::parse(src), &Default::default())
    }

    /// One `same` (noop) op on `src` with the test applier.
    fn plan_noop(src: &str, opts: &Options) -> Plan {
        let _stand_in = noma_core::patch::testing::use_applier(fake_apply);
        plan(src, &Context::default(), &[json!({"op":"same"})], opts)
    }

    #[test]
    fn records_carry_what_changed_and_a_count_of_the_rest() {
        // 300 standing warnings (claims without evidence) plus one the op
        // fixes: the record lists the resolved one and counts the rest.
        let mut src = String::new();
        for i in 0..300 {
            src.push_str(&format!("::claim{{id=\"c{i}\"}}\nText {i}.\n::\n\n"));
        }
        let p = plan(
            &src,
            &Context::default(),
            &[json!({"op":"delete_block","id":"c7"})],
            &Options::new(actor()),
        );
        assert!(p.accepted);
        let r = &p.records[0];
        let diags = r.diagnostics.as_ref().unwrap();
        let pre_all = tag(validate_parsed(&src), Phase::Pre);
        assert!(pre_all.len() >= 300, "{}", pre_all.len());
        assert!(diags.len() < 10, "{diags:?}");
        let unchanged: Vec<_> = diags
            .iter()
            .filter(|d| d.code == UNCHANGED_DIAGNOSTICS)
            .collect();
        assert_eq!(unchanged.len(), 2);
        assert!(unchanged[0]
            .message
            .starts_with(&format!("{} ", pre_all.len() - 1)));
        // The summaries stay derivable from the array (§4.2).
        assert_eq!(r.pre_validation, Summary::of(&pre_all));
        assert_eq!(r.post_validation, Summary::of(&p.post_diagnostics));
        assert_eq!(p.post_diagnostics.len(), pre_all.len() - 1);
        assert!(r.to_line().len() < 4096, "{}", r.to_line().len());
    }

    #[test]
    fn a_re_validated_change_records_what_a_full_comparison_would() {
        // Single ops take the delta path; the record must hold exactly what
        // comparing the full pre and post reports gives.
        let src =
            "# A\n\n::claim{id=\"ca\"}\nA.\n::\n\n::claim{id=\"cb\" confidence=2}\nB.\n::\n\n\
                   ::evidence{id=\"ev\" for=\"ca\"}\nE.\n::\n";
        let ops = [
            json!({"op":"update_attribute","id":"ca","key":"n","value":1}),
            json!({"op":"update_attribute","id":"cb","key":"confidence","value":0.5}),
            json!({"op":"replace_body","id":"ev","content":"F."}),
            json!({"op":"update_attribute","id":"cb","key":"confidence","value":7}),
        ];
        for op in ops {
            let p = plan(
                src,
                &Context::default(),
                std::slice::from_ref(&op),
                &Options::new(actor()),
            );
            assert!(p.accepted, "{op}");
            let pre = tag(validate_parsed(src), Phase::Pre);
            let post = tag(validate_parsed(&p.new_text), Phase::Post);
            let (pre_part, post_part) = changed_diagnostics(&pre, &post);
            let mut want = pre_part;
            want.extend(post_part);
            let got = p.records[0].diagnostics.clone().unwrap();
            let strip = |v: Vec<Diagnostic>| -> Vec<Diagnostic> {
                v.into_iter()
                    .map(|mut d| {
                        d.pos = None;
                        d
                    })
                    .collect()
            };
            assert_eq!(strip(got), strip(want), "{op}");
            assert_eq!(p.post_diagnostics, post, "{op}");
        }
    }
}
