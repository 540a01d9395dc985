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
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::fsio::{self, Intent, LockedTranscript, StagedFile};
use noma_core::diag::{Diagnostic, Phase, Severity};
use noma_core::doc::hash::sha256_hex;
use noma_core::doc::reparse::Replaced;
use noma_core::doc::ParseMemo;
use noma_core::patch::{PatchError, PatchErrorCode};
use noma_core::transcript::{self, Actor, PatchResult, Record};

pub mod capability;
pub mod recover;

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

/// The function of a [`BeforeAppend`]: given the document path and the
/// records about to be appended.
pub type BeforeAppendFn = dyn Fn(&Path, &[Record]) -> std::io::Result<()> + Send + Sync;

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

/// An op that is not an op of the v1.0 catalogue (not a JSON object, an
/// unknown `op`, a missing field or a field of the wrong type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("op {index} of the request is not a v1.0 patch op: {message}; nothing was recorded")]
pub struct InvalidOp {
    /// 0-based position of the op in the request.
    pub index: usize,
    /// What is wrong with it.
    pub message: String,
    /// Whether the op names an op of the catalogue (then only a field is
    /// wrong).
    pub known_op: bool,
}

impl InvalidOp {
    /// The §3.5 code of the refusal: `unsupported_op` when the op is not
    /// in the catalogue (§3.1); a catalogue op with a missing or mistyped
    /// field is `invalid_content`, as the reference answers (§3.5 names
    /// no code for it).
    pub fn code(&self) -> PatchErrorCode {
        if self.known_op {
            PatchErrorCode::InvalidContent
        } else {
            PatchErrorCode::UnsupportedOp
        }
    }
}

/// Checks that every op of a request is an op of the v1.0 catalogue with
/// the right field types. A request that fails is refused whole and writes
/// nothing: it was never attempted. The extension op
/// [`noma_core::patch::REPLACE_LINES`] is refused here too: it records hand
/// edits and is written only by `noma record`, which plans directly.
pub fn check_request(ops: &[Value]) -> Result<(), InvalidOp> {
    for (index, op) in ops.iter().enumerate() {
        if !op.is_object() {
            return Err(InvalidOp {
                index,
                message: format!("expected a JSON object, got {}", json_kind(op)),
                known_op: false,
            });
        }
        if let Some(name) = noma_core::patch::op_name(op) {
            if !noma_core::patch::is_catalogue_op(name) {
                let message = if name == noma_core::patch::REPLACE_LINES {
                    format!("`{name}` records hand edits and is written only by `noma record`")
                } else {
                    noma_core::patch::unknown_op_message(name)
                };
                return Err(InvalidOp {
                    index,
                    message,
                    known_op: false,
                });
            }
        }
        let known_op = noma_core::patch::op_name(op).is_some();
        noma_core::patch::Op::parse(op).map_err(|e| InvalidOp {
            index,
            message: e.to_string(),
            known_op,
        })?;
    }
    Ok(())
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn tag(mut diags: Vec<Diagnostic>, phase: Phase) -> Vec<Diagnostic> {
    for d in &mut diags {
        d.phase = Some(phase);
    }
    diags
}

fn engine_diag(severity: Severity, code: &str, message: String) -> Diagnostic {
    let mut d = Diagnostic::new(severity, code, message);
    d.phase = Some(Phase::Pre);
    d
}

/// The code of the per-phase summary of diagnostics a request left as they were.
pub const UNCHANGED_DIAGNOSTICS: &str = "unchanged_diagnostics";

/// What a request changed in the validator's report (see the module doc):
/// `(pre, post)`, each tagged with its phase and ending with the
/// `unchanged_diagnostics` summary when anything stood unchanged.
fn changed_diagnostics(
    pre: &[Diagnostic],
    post: &[Diagnostic],
) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    use std::collections::HashMap;
    // Positions move with any edit above them: identity is the rest.
    type Key<'a> = (Severity, &'a str, &'a str, Option<&'a str>);
    fn key(d: &Diagnostic) -> Key<'_> {
        (d.severity, &d.code, &d.message, d.node_id.as_deref())
    }
    let mut after: HashMap<Key<'_>, usize> = HashMap::new();
    for d in post {
        *after.entry(key(d)).or_default() += 1;
    }
    let mut resolved = Vec::new();
    let mut unchanged: Vec<&Diagnostic> = Vec::new();
    for d in pre {
        match after.get_mut(&key(d)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                unchanged.push(d);
            }
            _ => resolved.push(d.clone()),
        }
    }
    let mut before: HashMap<Key<'_>, usize> = HashMap::new();
    for d in &unchanged {
        *before.entry(key(d)).or_default() += 1;
    }
    let mut introduced = Vec::new();
    for d in post {
        match before.get_mut(&key(d)) {
            Some(n) if *n > 0 => *n -= 1,
            _ => introduced.push(d.clone()),
        }
    }
    let standing = noma_core::diag::SeverityCounts::of(unchanged.iter().copied());
    let mut pre_part = tag(resolved, Phase::Pre);
    pre_part.extend(unchanged_summary(standing, Phase::Pre));
    let mut post_part = tag(introduced, Phase::Post);
    post_part.extend(unchanged_summary(standing, Phase::Post));
    (pre_part, post_part)
}

/// [`changed_diagnostics`] of a single re-validated change, from its delta
/// alone: what it removed is resolved, what it added is introduced (a
/// finding in both, as for a claim whose attribute changed, stands), and
/// the rest of the pre-validation's `standing` counts stand.
fn delta_parts(
    delta: noma_core::validate::Delta,
    standing: noma_core::diag::SeverityCounts,
    opts: &noma_core::validate::Options,
) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let kept = |d: &Diagnostic| !opts.ignore_rules.contains(&d.code);
    let mut added: Vec<Diagnostic> = delta.added.into_iter().filter(kept).collect();
    let mut resolved = Vec::new();
    for gone in delta.gone.into_iter().filter(kept) {
        let same = |d: &Diagnostic| {
            (d.severity, &d.code, &d.message, &d.node_id)
                == (gone.severity, &gone.code, &gone.message, &gone.node_id)
        };
        match added.iter().position(same) {
            Some(at) => {
                added.remove(at);
            }
            None => resolved.push(gone),
        }
    }
    let gone = noma_core::diag::SeverityCounts::of(&resolved);
    let unchanged = noma_core::diag::SeverityCounts {
        error: standing.error.saturating_sub(gone.error),
        warning: standing.warning.saturating_sub(gone.warning),
        info: standing.info.saturating_sub(gone.info),
    };
    let mut pre_part = tag(resolved, Phase::Pre);
    pre_part.extend(unchanged_summary(unchanged, Phase::Pre));
    let mut post_part = tag(added, Phase::Post);
    post_part.extend(unchanged_summary(unchanged, Phase::Post));
    (pre_part, post_part)
}

/// The `unchanged_diagnostics` entry of one phase: the count of what stood
/// unchanged, at its worst severity (so the phase's summary stays
/// derivable); `None` when nothing did.
fn unchanged_summary(
    standing: noma_core::diag::SeverityCounts,
    phase: Phase,
) -> Option<Diagnostic> {
    let mut d = Diagnostic::new(
        standing.worst()?,
        UNCHANGED_DIAGNOSTICS,
        format!(
            "{} diagnostic(s) stand before and after this request and are not repeated \
             ({} error, {} warning, {} info; `noma check` lists them)",
            standing.total(),
            standing.error,
            standing.warning,
            standing.info
        ),
    );
    d.phase = Some(phase);
    Some(d)
}

/// The diagnostic parts of records whose request changed nothing: every
/// pre-validation diagnostic stands, counted once per phase.
fn standing_parts(standing: noma_core::diag::SeverityCounts) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    (
        unchanged_summary(standing, Phase::Pre)
            .into_iter()
            .collect(),
        unchanged_summary(standing, Phase::Post)
            .into_iter()
            .collect(),
    )
}

/// The pre-validation of a request: the report, kept to re-validate a
/// spliced tree from, and its severity counts. Its diagnostics are built
/// only once, when the post-validation is known: on a big document the
/// list is hundreds of megabytes.
#[derive(Default)]
struct PreValidation {
    report: noma_core::validate::Validation,
    counts: noma_core::diag::SeverityCounts,
}

impl PreValidation {
    /// Validates `source`, whose tree stays in `memo` for the first op.
    /// This function's handle on the tree is dropped on return, before any
    /// splice, so that the splice can edit it in place.
    fn of(memo: &mut ParseMemo, source: &str, opts: &Options) -> Self {
        let tree = memo.parse(source);
        let report = noma_core::validate::validate_report(&tree, &opts.validate);
        let counts = report.counts(&opts.validate);
        PreValidation { report, counts }
    }

    /// The report's diagnostics tagged with `phase`, consuming it.
    fn into_diagnostics(self, opts: &Options, phase: Phase) -> Vec<Diagnostic> {
        tag(self.report.into_diagnostics(&opts.validate), phase)
    }
}

/// One applied-or-noop step of an accepted list.
struct Step {
    pre: String,
    post: String,
    result: PatchResult,
    advisories: Vec<Diagnostic>,
    elapsed_ms: u64,
}

/// Computes the records and the new text for `ops` on `source`. Pure: no I/O.
pub fn plan(source: &str, ctx: &Context, ops: &[Value], opts: &Options) -> Plan {
    plan_with(&mut ParseMemo::new(), source, ctx, ops, opts)
}

/// [`plan`] through `memo`: every step parses through it, so the source is
/// parsed once (not at all when the caller's memo already holds it) and
/// each op's result is spliced from the tree before it.
pub fn plan_with(
    memo: &mut ParseMemo,
    source: &str,
    ctx: &Context,
    ops: &[Value],
    opts: &Options,
) -> Plan {
    let pre_sha256 = source_sha256(source, ctx);
    // Book manifests are not validated (every op is rejected).
    let pre_validation = if ctx.book_manifest {
        PreValidation::default()
    } else {
        PreValidation::of(memo, source, opts)
    };
    let shared = drift_warning(opts, &pre_sha256);
    let planner = Planner {
        source,
        ops,
        opts,
        records: RecordMaker {
            ctx,
            opts,
            shared: &shared,
        },
        pre_sha256,
        standing: standing_parts(pre_validation.counts),
    };
    if let Some((code, message)) = planner.refusal(ctx, &pre_validation) {
        return planner.reject_all(code, &message, pre_validation);
    }
    match planner.apply_each(memo, ctx.capability.as_ref()) {
        Ok(applied) => planner.accept(applied, pre_validation),
        Err(failure) => planner.abort(failure, pre_validation),
    }
}

/// The source's sha256: the one the caller already computed, else hashed here.
fn source_sha256(source: &str, ctx: &Context) -> String {
    match &ctx.source_sha256 {
        Some(known) => {
            debug_assert_eq!(*known, sha256_hex(source.as_bytes()));
            known.clone()
        }
        None => sha256_hex(source.as_bytes()),
    }
}

/// The `base_sha_drift` warning every record carries when the caller
/// prepared the patch against another state (§3.4); empty otherwise.
fn drift_warning(opts: &Options, pre_sha256: &str) -> Vec<Diagnostic> {
    let mut shared = Vec::new();
    if let Some(base) = &opts.base_sha256 {
        if !base.eq_ignore_ascii_case(pre_sha256) {
            shared.push(engine_diag(
                Severity::Warning,
                "base_sha_drift",
                format!(
                    "the document changed since the caller read it: base_sha256 {} but pre_sha256 {}",
                    transcript::short_sha(base),
                    transcript::short_sha(pre_sha256)
                ),
            ));
        }
    }
    shared
}

/// The states an accepted list went through.
struct Applied<'a> {
    /// One step per op.
    steps: Vec<Step>,
    /// The document after the last op.
    text: std::borrow::Cow<'a, str>,
    /// The tree of `text` and what its splice replaced, when an op changed
    /// the text.
    tree: Option<(std::sync::Arc<noma_core::doc::Document>, Option<Replaced>)>,
}

/// An op of the list failed: the list is rolled back.
struct Failure {
    /// 0-based position of the failed op.
    index: usize,
    /// The steps of the ops before it.
    steps: Vec<Step>,
    /// The capability advisories of the failed op.
    advisories: Vec<Diagnostic>,
    /// Why it failed.
    error: PatchError,
}

/// One request being planned: what its three outcomes (refused whole,
/// rolled back, accepted) all need.
struct Planner<'a> {
    source: &'a str,
    ops: &'a [Value],
    opts: &'a Options,
    records: RecordMaker<'a>,
    pre_sha256: String,
    /// The `(pre, post)` diagnostic parts of a request that leaves the text
    /// as it was: every pre-validation diagnostic stands.
    standing: (Vec<Diagnostic>, Vec<Diagnostic>),
}

impl<'a> Planner<'a> {
    /// Why the whole request is rejected before any op is tried, in the
    /// module doc's order (book manifest, `expected_sha`, strict mode).
    fn refusal(
        &self,
        ctx: &Context,
        pre_validation: &PreValidation,
    ) -> Option<(PatchErrorCode, String)> {
        if ctx.book_manifest {
            return Some((
                PatchErrorCode::UnsupportedOp,
                "book manifests (.noma.yml) are not patch targets in v1.0".into(),
            ));
        }
        if let Some(expected) = &self.opts.expected_sha {
            let want = expected.to_ascii_lowercase();
            if !(want.len() >= 8 && self.pre_sha256.starts_with(&want)) {
                return Some((
                    PatchErrorCode::ShaMismatch,
                    format!(
                        "expected_sha {expected} does not match the document's pre_sha {}",
                        transcript::short_sha(&self.pre_sha256)
                    ),
                ));
            }
        }
        if self.opts.strict && pre_validation.counts.error > 0 {
            return Some((
                PatchErrorCode::PreValidationBlocked,
                "strict mode: pre-validation found errors; no op was applied".into(),
            ));
        }
        None
    }

    /// A rejected record of `op` with the engine diagnostics `extra`: the
    /// document stays at its pre-state.
    fn rejected_record(&self, op: &Value, extra: Vec<Diagnostic>) -> Record {
        self.records.make(
            op,
            &self.pre_sha256,
            &self.pre_sha256,
            PatchResult::Rejected,
            &self.standing.0,
            extra,
            &self.standing.1,
            None,
        )
    }

    /// The plan of a rejected list: the text is the source, and the
    /// post-validation is the pre-validation.
    fn rejected(&self, records: Vec<Record>, pre_validation: PreValidation) -> Plan {
        Plan {
            records,
            new_text: self.source.to_string(),
            accepted: false,
            post_diagnostics: pre_validation.into_diagnostics(self.opts, Phase::Post),
        }
    }

    /// Every op rejected with the same `code` and `message` (a refusal).
    fn reject_all(
        &self,
        code: PatchErrorCode,
        message: &str,
        pre_validation: PreValidation,
    ) -> Plan {
        let list = self
            .ops
            .iter()
            .map(|op| {
                let d = engine_diag(Severity::Error, code.as_str(), message.to_string());
                self.rejected_record(op, vec![d])
            })
            .collect();
        self.rejected(list, pre_validation)
    }

    /// Applies the ops one at a time, so each step has its exact
    /// intermediate hashes; stops at the first op that fails.
    fn apply_each(
        &self,
        memo: &mut ParseMemo,
        capability: Option<&capability::CapabilityFile>,
    ) -> Result<Applied<'a>, Failure> {
        let mut steps: Vec<Step> = Vec::with_capacity(self.ops.len());
        let mut state = std::borrow::Cow::Borrowed(self.source);
        let mut state_sha = self.pre_sha256.clone();
        // The tree of the last state and what its splice replaced, when the
        // last op changed the text.
        let mut state_tree = None;
        for (index, op) in self.ops.iter().enumerate() {
            let advisories = match capability {
                Some(cap) => capability::advise(cap, &memo.parse(&state), op),
                None => Vec::new(),
            };
            let started = Instant::now();
            let next =
                match noma_core::patch::apply_ops_with(memo, &state, std::slice::from_ref(op)) {
                    Ok(next) => next,
                    Err(error) => {
                        return Err(Failure {
                            index,
                            steps,
                            advisories,
                            error,
                        })
                    }
                };
            let elapsed_ms = started.elapsed().as_millis() as u64;
            if next == *state {
                steps.push(Step {
                    pre: state_sha.clone(),
                    post: state_sha.clone(),
                    result: PatchResult::Noop,
                    advisories,
                    elapsed_ms,
                });
                continue;
            }
            let next_sha = sha256_hex(next.as_bytes());
            steps.push(Step {
                pre: std::mem::replace(&mut state_sha, next_sha.clone()),
                post: next_sha,
                result: PatchResult::Applied,
                advisories,
                elapsed_ms,
            });
            // The next op and post-validation read this state's tree:
            // splice it from the previous one instead of parsing it all.
            state_tree = Some(memo.parse_edited(&state, &next));
            state = std::borrow::Cow::Owned(next);
        }
        Ok(Applied {
            steps,
            text: state,
            tree: state_tree,
        })
    }

    /// The plan of a list whose op failed: that op is rejected with its own
    /// code, the ops before it with `op_list_aborted`, later ops are not
    /// attempted.
    fn abort(&self, failure: Failure, pre_validation: PreValidation) -> Plan {
        let Failure {
            index: k,
            steps,
            advisories,
            error: err,
        } = failure;
        let mut list = Vec::with_capacity(k + 1);
        // Each record's own cause comes first, its advisories after.
        for (op, step) in self.ops.iter().zip(steps) {
            let mut extra = vec![engine_diag(
                Severity::Error,
                PatchErrorCode::OpListAborted.as_str(),
                format!(
                    "rolled back: op {k} of this list failed ({})",
                    err.code.as_str()
                ),
            )];
            extra.extend(step.advisories);
            list.push(self.rejected_record(op, extra));
        }
        let mut extra = vec![engine_diag(
            Severity::Error,
            err.code.as_str(),
            err.message.clone(),
        )];
        extra.extend(advisories);
        list.push(self.rejected_record(&self.ops[k], extra));
        self.rejected(list, pre_validation)
    }

    /// The plan of an accepted list: one record per step, carrying what
    /// the list changed in the validator's report.
    fn accept(&self, applied: Applied<'_>, pre_validation: PreValidation) -> Plan {
        let changed = applied
            .steps
            .iter()
            .filter(|s| s.result == PatchResult::Applied)
            .count();
        let (post_diagnostics, (pre_part, post_part)) =
            post_validate(applied.tree, changed, pre_validation, self.opts);
        let list = self
            .ops
            .iter()
            .zip(applied.steps)
            .map(|(op, s)| {
                self.records.make(
                    op,
                    &s.pre,
                    &s.post,
                    s.result,
                    &pre_part,
                    s.advisories,
                    &post_part,
                    Some(s.elapsed_ms),
                )
            })
            .collect();
        Plan {
            records: list,
            new_text: applied.text.into_owned(),
            accepted: true,
            post_diagnostics,
        }
    }
}

/// The post-validation of an accepted list (phase `post`) and the
/// `(pre, post)` diagnostic parts of its records. `tree` is the final
/// state's tree when an op changed the text; `changed` counts the ops that
/// did.
fn post_validate(
    tree: Option<(std::sync::Arc<noma_core::doc::Document>, Option<Replaced>)>,
    changed: usize,
    pre_validation: PreValidation,
    opts: &Options,
) -> (Vec<Diagnostic>, (Vec<Diagnostic>, Vec<Diagnostic>)) {
    let Some((tree, replaced)) = tree else {
        // No op changed the text: it is the pre-validated source.
        let parts = standing_parts(pre_validation.counts);
        return (pre_validation.into_diagnostics(opts, Phase::Post), parts);
    };
    // A single change is re-validated from the pre-validation when it
    // allows (one report in memory, the change's delta beside it);
    // otherwise the tree is validated in full and the two lists compared.
    let delta = replaced
        .as_ref()
        .filter(|_| changed == 1)
        .and_then(|replaced| {
            noma_core::validate::revalidate_delta(
                &pre_validation.report,
                &tree,
                replaced,
                &opts.validate,
            )
        });
    match delta {
        Some(delta) => {
            let standing = pre_validation.counts;
            let post = pre_validation
                .report
                .apply(&delta, &tree, &opts.validate)
                .into_diagnostics(&opts.validate);
            drop(tree);
            let parts = delta_parts(delta, standing, &opts.validate);
            (tag(post, Phase::Post), parts)
        }
        None => {
            let post = tag(
                noma_core::validate::validate(&tree, &opts.validate),
                Phase::Post,
            );
            drop(tree);
            let pre = pre_validation.into_diagnostics(opts, Phase::Pre);
            let parts = changed_diagnostics(&pre, &post);
            (post, parts)
        }
    }
}

/// Builds the records of one request: the fields every record of the
/// request shares, and the per-op ones.
struct RecordMaker<'a> {
    ctx: &'a Context,
    opts: &'a Options,
    /// Engine diagnostics of the whole request (`base_sha_drift`).
    shared: &'a [Diagnostic],
}

impl RecordMaker<'_> {
    #[allow(clippy::too_many_arguments)]
    fn make(
        &self,
        op: &Value,
        pre: &str,
        post: &str,
        result: PatchResult,
        pre_part: &[Diagnostic],
        extra: Vec<Diagnostic>,
        post_part: &[Diagnostic],
        elapsed_ms: Option<u64>,
    ) -> Record {
        let mut diags = Vec::with_capacity(pre_part.len() + extra.len() + post_part.len() + 1);
        // A rejected record leads with why it was rejected: a client that
        // reads the first error must not find the standing-diagnostics
        // summary there (issue 33).
        if result == PatchResult::Rejected {
            diags.extend(extra);
            diags.extend(pre_part.iter().cloned());
            diags.extend(self.shared.iter().cloned());
        } else {
            diags.extend(pre_part.iter().cloned());
            diags.extend(self.shared.iter().cloned());
            diags.extend(extra);
        }
        diags.extend(post_part.iter().cloned());
        Record {
            protocol_version: transcript::PROTOCOL_VERSION.into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            op_id: transcript::new_uuid(),
            ts: transcript::now_ts(),
            actor: self.opts.actor.clone(),
            doc_uri: self.ctx.doc_uri.clone(),
            pre_sha256: pre.to_string(),
            post_sha256: post.to_string(),
            pre_sha: transcript::short_sha(pre),
            post_sha: transcript::short_sha(post),
            op: op.clone(),
            patch_result: result,
            pre_validation: transcript::summary_for(&diags, Phase::Pre),
            post_validation: transcript::summary_for(&diags, Phase::Post),
            reason: self.opts.reason.clone(),
            parent_op_id: self.opts.parent_op_id.clone(),
            base_sha256: self.opts.base_sha256.clone(),
            diagnostics: Some(diags),
            elapsed_ms,
            prev_entry_sha256: None,
            signature: None,
        }
    }
}

/// Fills `prev_entry_sha256` along the batch and serialises it to JSONL.
/// `prev` is the sha256 of the transcript's current last line, if any; the
/// first line of a transcript has none (the chain rule of
/// [`transcript::replay`]).
pub fn chain_and_serialise(records: &mut [Record], mut prev: Option<String>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records.iter_mut() {
        r.prev_entry_sha256 = prev.take();
        let line = r.to_line();
        prev = Some(sha256_hex(line.as_bytes()));
        out.extend_from_slice(line.as_bytes());
    }
    out
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

/// Pause hook for the crash tests: sleep this many milliseconds between the
/// transcript commit and the document rename, widening the crash window.
/// Only in builds with the `fault-injection` feature, which the binary's
/// integration tests turn on through their dev-dependency; release builds
/// do not read it.
#[cfg(feature = "fault-injection")]
const PAUSE_ENV: &str = "NOMA_TEST_PAUSE_BEFORE_RENAME_MS";

/// Runs one patch request against a file.
pub fn patch_file(doc_path: &Path, ops: &[Value], opts: &Options) -> Result<Outcome, EngineError> {
    check_request(ops)?;
    let book_manifest = is_book_manifest(doc_path);
    let capability = if book_manifest {
        None
    } else {
        capability::load(doc_path)?.map(|(_, f)| f)
    };
    let ctx = Context {
        doc_uri: opts
            .doc_uri
            .clone()
            .unwrap_or_else(|| crate::uri::doc_uri(doc_path)),
        book_manifest,
        capability,
        source_sha256: None,
    };
    match &opts.write {
        WriteMode::DryRun | WriteMode::Out(_) => patch_copy(doc_path, &ctx, ops, opts),
        WriteMode::InPlace => patch_in_place(doc_path, ctx, ops, opts),
    }
}

/// [`patch_file`] without the transcript: a dry run, or the new text
/// written to another file.
fn patch_copy(
    doc_path: &Path,
    ctx: &Context,
    ops: &[Value],
    opts: &Options,
) -> Result<Outcome, EngineError> {
    let source = crate::fsio::read_document(doc_path)?;
    let plan = plan(&source, ctx, ops, opts);
    let mut wrote = false;
    if let (WriteMode::Out(out), true) = (&opts.write, plan.accepted) {
        fsio::atomic_write(out, plan.new_text.as_bytes()).map_err(io_err("cannot write", out))?;
        wrote = true;
    }
    Ok(Outcome {
        records: plan.records,
        accepted: plan.accepted,
        new_text: plan.new_text,
        post_diagnostics: plan.post_diagnostics,
        wrote_document: wrote,
        transcript: None,
        recovery: None,
    })
}

/// [`patch_file`] in place: under the transcript's lock, recovery, then the
/// request committed by the write protocol (module doc).
fn patch_in_place(
    doc_path: &Path,
    mut ctx: Context,
    ops: &[Value],
    opts: &Options,
) -> Result<Outcome, EngineError> {
    let tpath = opts
        .transcript
        .clone()
        .unwrap_or_else(|| default_transcript_path(doc_path));
    // An unreadable document must not leave a new, empty transcript
    // behind: check it before opening creates one. With a transcript
    // in place the read under the lock reports the same errors, so
    // the common case reads the document once.
    if !tpath.exists() {
        crate::fsio::read_document(doc_path)?;
    }
    let mut locked =
        LockedTranscript::open(&tpath).map_err(io_err("cannot open transcript", &tpath))?;
    let mut recovery = match recover::recover(doc_path, &mut locked, opts.force) {
        Ok(recovery) => recovery,
        Err(e) => {
            // A document that is not text explains itself better
            // than "an edit no record explains".
            crate::fsio::read_document(doc_path)?;
            return Err(e.into());
        }
    };
    let source = match recovery.document.take() {
        Some(read) => {
            ctx.source_sha256 = Some(read.sha256);
            noma_core::doc::source::decode_owned(doc_path, read.bytes)?
        }
        None => crate::fsio::read_document(doc_path)?,
    };
    let mut plan = plan(&source, &ctx, ops, opts);
    if let Some(BeforeAppend(step)) = &opts.before_append {
        step(doc_path, &plan.records).map_err(io_err("cannot sign the records", &tpath))?;
    }
    let changed = plan.accepted && plan.new_text != source;
    let mut records = match opts.genesis && recovery.last_line_sha256.is_none() {
        true => genesis_records(&source, &ctx, opts),
        false => Vec::new(),
    };
    let request = records.len();
    records.append(&mut plan.records);
    let bytes = chain_and_serialise(&mut records, recovery.last_line_sha256.clone());
    plan.records = records.split_off(request);
    let pre = plan
        .records
        .first()
        .map(|r| r.pre_sha256.clone())
        .unwrap_or_default();
    let post = plan
        .records
        .last()
        .map(|r| r.post_sha256.clone())
        .unwrap_or_default();
    // The document's size cap is checked before the first byte is written:
    // a request that would carry it over is refused whole. The transcript
    // has no cap of its own: every reader streams it (issue 35), and one
    // request adds at most its records.
    if changed {
        fsio::check_growth(plan.new_text.len() as u64).map_err(io_err("refused", doc_path))?;
    }
    let staged = if changed {
        Some(
            StagedFile::write(doc_path, plan.new_text.as_bytes())
                .map_err(io_err("cannot write", doc_path))?,
        )
    } else {
        None
    };
    commit_request(&mut locked, &bytes, &pre, &post, staged)
        .map_err(io_err("cannot commit the request", &tpath))?;
    drop(locked);
    Ok(Outcome {
        records: plan.records,
        accepted: plan.accepted,
        new_text: plan.new_text,
        post_diagnostics: plan.post_diagnostics,
        wrote_document: changed,
        transcript: Some(tpath),
        recovery: Some(recovery),
    })
}

/// The genesis record of a transcript that starts at `source` (none for
/// an empty document, which needs no start): the tool writes the document
/// as found, from the empty document.
fn genesis_records(source: &str, ctx: &Context, opts: &Options) -> Vec<Record> {
    if source.is_empty() {
        return Vec::new();
    }
    let mut gopts = Options::new(Actor {
        kind: noma_core::transcript::ActorKind::Tool,
        name: "noma".into(),
        model: None,
        version: Some(env!("CARGO_PKG_VERSION").into()),
    });
    gopts.reason =
        Some("start of the transcript: the document as found before its first patch".into());
    gopts.validate = opts.validate.clone();
    let ops = [noma_core::patch::genesis_op(source)];
    // The tool's start, not an agent's op: a capability descriptor that
    // limits agents' ops does not apply to it.
    let mut ctx = ctx.clone();
    ctx.source_sha256 = None;
    ctx.capability = None;
    let g = plan("", &ctx, &ops, &gopts);
    if g.accepted && g.new_text == source {
        g.records
    } else {
        // Never expected (the op writes exactly `source`); the request
        // then goes on without a genesis, as before it existed.
        Vec::new()
    }
}

/// Appends a request's records under the write protocol (module doc, steps
/// 3–6): intent marker, one append (the commit point), the staged
/// document's rename, marker removed. `doc_pre_sha256`/`doc_post_sha256`
/// are the document's hashes before and after the request (equal when it
/// does not change the document, as for `noma record`).
pub fn commit_request(
    locked: &mut LockedTranscript,
    records: &[u8],
    doc_pre_sha256: &str,
    doc_post_sha256: &str,
    staged: Option<StagedFile>,
) -> std::io::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let tpath = locked.path().to_path_buf();
    let intent = Intent {
        transcript_len: locked.byte_len()?,
        append_len: records.len() as u64,
        append_sha256: sha256_hex(records),
        doc_pre_sha256: doc_pre_sha256.to_string(),
        doc_post_sha256: doc_post_sha256.to_string(),
    };
    intent.write(&tpath)?;
    locked.append(records)?;
    if let Some(staged) = staged {
        #[cfg(feature = "fault-injection")]
        if let Some(ms) = std::env::var(PAUSE_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        staged.commit()?;
    }
    // Done either way: a marker left behind by a failure here is cleared by
    // the next writer, which finds the document at the request's result.
    let _ = Intent::clear(&tpath);
    Ok(())
}

/// Checks that the document reads as text and that its transcript (the
/// given path, or the conventional one) exists; returns the transcript path.
fn existing_transcript(
    doc_path: &Path,
    transcript_path: Option<&Path>,
    what: &'static str,
) -> Result<PathBuf, EngineError> {
    crate::fsio::read_document(doc_path)?;
    let tpath = transcript_path
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_transcript_path(doc_path));
    if !tpath.exists() {
        return Err(EngineError::Io {
            path: tpath,
            what,
            // The fix, not just the fact: a document edited by hand before
            // noma was set up has no transcript until `noma record` starts one.
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "no such transcript; `noma record {}` starts one from the document as it is",
                    doc_path.display()
                ),
            ),
        });
    }
    Ok(tpath)
}

/// `noma repair`: runs [`recover::repair`] on `doc_path` and its transcript
/// under the writers' lock.
pub fn repair_file(
    doc_path: &Path,
    transcript_path: Option<&Path>,
) -> Result<Recovery, EngineError> {
    let tpath = existing_transcript(doc_path, transcript_path, "cannot repair")?;
    let mut locked =
        LockedTranscript::open(&tpath).map_err(io_err("cannot open transcript", &tpath))?;
    Ok(recover::repair(doc_path, &mut locked)?)
}

/// Replays the transcript of `doc_path` without changing any file: a
/// verifier reports what a writer would repair (the notes) and never
/// repairs it.
///
/// The base is the file `base` when given; otherwise `find_base` is asked
/// with the first applied record's `pre_sha256` (None when there is none)
/// and the document's text, and returns the base text when it knows one (a
/// shell looks it up, e.g. in the document's git history; the engine reads
/// no repository). None leaves the choice to the replay: the document
/// itself. The transcript is read a line at a time, under the shared lock,
/// so memory follows the longest record, not the transcript.
pub fn replay_file(
    doc_path: &Path,
    transcript_path: Option<&Path>,
    base: Option<&Path>,
    find_base: &mut dyn FnMut(Option<&str>, &str) -> Option<String>,
) -> Result<(Vec<String>, transcript::replay::Report), EngineError> {
    let tpath = existing_transcript(doc_path, transcript_path, "cannot replay")?;
    let given = match base {
        Some(b) => Some(crate::fsio::read_document(b)?),
        None => None,
    };
    let mut locked =
        LockedTranscript::open_shared(&tpath).map_err(io_err("cannot open transcript", &tpath))?;
    let notes = recover::inspect(doc_path, &tpath);
    let doc = crate::fsio::read_document(doc_path)?;
    let mut reader = locked.reader().map_err(io_err("cannot read", &tpath))?;
    let first_pre = transcript::replay::first_applied_pre_sha256_in(&mut reader);
    let base_text = given.or_else(|| find_base(first_pre.as_deref(), &doc));
    let mut reader = locked.reader().map_err(io_err("cannot read", &tpath))?;
    let report = transcript::replay::replay_reader(&mut reader, base_text.as_deref(), &doc);
    drop(locked);
    Ok((notes, report))
}

#[cfg(test)]
mod replay_tests;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use noma_core::diag::Summary;
    use noma_core::transcript::ActorKind;
    use serde_json::json;

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

    #[test]
    fn a_request_of_non_ops_is_refused_before_anything_is_recorded() {
        for bad in [
            json!("delete_block"),
            json!(3),
            json!([]),
            json!(null),
            json!(true),
        ] {
            let e = check_request(&[json!({"op":"delete_block","id":"a"}), bad]).unwrap_err();
            assert_eq!(e.index, 1);
            assert_eq!(e.code(), PatchErrorCode::UnsupportedOp);
        }
        assert!(check_request(&[json!({"op":"explode","id":"a"})]).is_err());
        let lines =
            json!({"op": noma_core::patch::REPLACE_LINES, "line": 1, "old": "", "new": "x\n"});
        assert!(noma_core::patch::apply_one("", &lines).is_ok());
        let e = check_request(&[lines]).unwrap_err();
        assert!(e.message.contains("noma record"), "{e}");
        let e = check_request(&[json!({"op":"explode","id":"a"})]).unwrap_err();
        assert_eq!(e.code(), PatchErrorCode::UnsupportedOp);
        let e = check_request(&[json!({"id":"a"})]).unwrap_err();
        assert_eq!(e.code(), PatchErrorCode::UnsupportedOp);
        for bad in [
            json!({"op":"replace_body","id":"a"}),
            json!({"op":"rename_id","from":"a","to":3}),
        ] {
            let e = check_request(&[bad]).unwrap_err();
            assert_eq!(e.code(), PatchErrorCode::InvalidContent, "{e}");
        }
        assert!(check_request(&[json!({"op":"delete_block","id":"a"})]).is_ok());
    }
}
