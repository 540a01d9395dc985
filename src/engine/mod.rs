//! The patch engine: one patch request (document + op-list + options) →
//! one transcript record per attempted op, the document written once.
//!
//! # Policy (§3.2, §3.4)
//!
//! In order: a book manifest (`*.noma.yml`) rejects every op with
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
//! # Durability and recovery
//!
//! Writers of one document are serialised by an exclusive advisory lock
//! (`flock`) on its transcript file, held for the whole
//! read-modify-write. The transcript is never renamed, so all processes
//! lock the same file. Under the lock a request:
//!
//! 1. runs recovery (below);
//! 2. reads the document and computes every record in memory, while a
//!    helper thread writes the new document to a temp file in the same
//!    directory and fsyncs it ([`fsio::StagedFile`]);
//! 3. appends all records of the request with ONE `write(2)` on the
//!    O_APPEND transcript, then fsyncs it — this is the commit point;
//! 4. renames the temp file over the document and fsyncs the directory.
//!
//! Records come first, so a crash can only leave the document behind the
//! transcript, never ahead of it. Each record carries an `op_list`
//! extension (`{id, index, len}`) so a reader can tell a complete request
//! from a torn one.
//!
//! Recovery rule, run under the lock at the start of every `noma patch`
//! and by `noma replay`:
//!
//! - (a) Torn tail. Bytes after the last `\n`, and a trailing request
//!   with fewer records than its `op_list.len`, were never committed (the
//!   document rename only happens after the whole append is durable): they
//!   are truncated away and reported.
//! - (b) Roll forward. If the document's sha256 is not the last record's
//!   `post_sha256` but equals the `pre_sha256` of the last request's first
//!   record, and that request is complete and was accepted (applied/noop),
//!   the process died between steps 3 and 4: its ops are re-applied
//!   deterministically, every intermediate hash is checked against the
//!   records, and the document is written ("rolled forward N records").
//! - (c) Anything else is an edit no record explains. `noma patch`
//!   refuses with exit 1 (unless `--force`, which patches on top and lets
//!   the transcript show the break); `noma replay` reports it.
//!
//! So after a `kill -9` at any instant the pair (document, transcript) is
//! the old state, the new state, or detected and repaired on the next run.
//! Temp files left by a killed writer are removed under the lock.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::diag::{Diagnostic, Phase, Severity, Summary};
use crate::doc::hash::sha256_hex;
use crate::patch::{PatchError, PatchErrorCode};
use crate::transcript::{self, Actor, OpList, PatchResult, Record};

pub mod capability;
pub mod fsio;
pub mod recover;

pub use recover::{Recovery, RecoveryError};

/// Applies an op-list to a source; [`crate::patch::apply_ops`] in production.
pub type ApplyFn = fn(&str, &[Value]) -> Result<String, PatchError>;

/// The production op applier.
pub const APPLY: ApplyFn = crate::patch::apply_ops;

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
    /// Where the result goes.
    pub write: WriteMode,
    /// Patch even when recovery finds an unrecorded edit.
    pub force: bool,
    /// Validator options for pre- and post-validation.
    pub validate: crate::validate::Options,
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
            write: WriteMode::DryRun,
            force: false,
            validate: crate::validate::Options::default(),
        }
    }
}

/// The conventional transcript path: the document path plus `.patches` (§5.1).
pub fn default_transcript_path(doc: &Path) -> PathBuf {
    let mut name = doc
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".patches");
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

/// Documents at least this long get helper threads (pre-validation, the
/// staged write); for smaller ones a thread costs more than the work it hides.
const HELPER_THREAD_BYTES: usize = 64 * 1024;

/// A value computed on a scoped helper thread, joined on first use.
struct Joined<'scope, T> {
    handle: std::cell::Cell<Option<std::thread::ScopedJoinHandle<'scope, T>>>,
    value: std::cell::OnceCell<T>,
}

impl<'scope, T> Joined<'scope, T> {
    fn ready(value: T) -> Self {
        Joined {
            handle: std::cell::Cell::new(None),
            value: std::cell::OnceCell::from(value),
        }
    }
    fn pending(handle: std::thread::ScopedJoinHandle<'scope, T>) -> Self {
        Joined {
            handle: std::cell::Cell::new(Some(handle)),
            value: std::cell::OnceCell::new(),
        }
    }
    /// `job` on a scoped helper thread named `name`, or on this thread at
    /// once when no thread can be had.
    fn spawn<'env, F>(scope: &'scope std::thread::Scope<'scope, 'env>, name: &str, job: F) -> Self
    where
        F: FnOnce() -> T + Send + Clone + 'scope,
        T: Send + 'scope,
    {
        match crate::threads::spawn_scoped(scope, name, job.clone()) {
            Ok(handle) => Joined::pending(handle),
            Err(_) => Joined::ready(job()),
        }
    }
    fn get(&self) -> &T {
        self.value.get_or_init(|| {
            let handle = self.handle.take().expect("a pending value has its handle");
            // The helper only runs the validator; should it ever panic, the
            // panic continues here as if the work had run on this thread.
            handle
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }
    fn into_inner(self) -> T {
        self.get();
        self.value
            .into_inner()
            .expect("get() leaves the value in place")
    }
}

/// Computes the records and the new text for `ops` on `source`. Pure: no I/O.
///
/// Pre-validation needs only the source tree, so it runs on a second
/// thread while the ops are applied and the result is parsed and
/// post-validated here: on a big document that hides most of its cost.
pub fn plan(source: &str, ctx: &Context, ops: &[Value], opts: &Options, apply: ApplyFn) -> Plan {
    plan_staged(source, ctx, ops, opts, apply, None).0
}

/// Writes an accepted result somewhere durable, not yet in place.
type Stage<'a> = dyn Fn(&str) -> std::io::Result<fsio::StagedFile> + Sync + 'a;

/// [`plan`], and when the list is accepted and changes the text, `stage`
/// called with the new text while the last splice and post-validation run
/// (on a helper thread for big documents): the document's temp file is
/// written and fsynced meanwhile, leaving only the rename after the
/// transcript commit.
fn plan_staged(
    source: &str,
    ctx: &Context,
    ops: &[Value],
    opts: &Options,
    apply: ApplyFn,
    stage: Option<&Stage<'_>>,
) -> (Plan, Option<std::io::Result<fsio::StagedFile>>) {
    std::thread::scope(|scope| {
        let tree = (!ctx.book_manifest).then(|| crate::doc::parse_shared(source));
        let validate = &opts.validate;
        let pre_validate = move |tree: &crate::doc::Document| {
            let report = crate::validate::validate_report(tree, validate);
            let diags = tag(report.diagnostics(validate), Phase::Pre);
            PreValidation { report, diags }
        };
        let pre_validation = match tree {
            // Book manifests are not validated (every op is rejected).
            None => Joined::ready(PreValidation {
                report: Default::default(),
                diags: Vec::new(),
            }),
            // Validating a small document costs less than starting a thread.
            Some(tree) if source.len() < HELPER_THREAD_BYTES => Joined::ready(pre_validate(&tree)),
            Some(tree) => Joined::spawn(scope, "noma-prevalidate", move || pre_validate(&tree)),
        };
        plan_with(source, ctx, ops, opts, apply, &pre_validation, stage)
    })
}

/// The pre-validation of a request: the report, kept to re-validate a
/// spliced tree from, and its diagnostics (phase `pre`), which every
/// record carries.
struct PreValidation {
    report: crate::validate::Validation,
    diags: Vec<Diagnostic>,
}

fn plan_with(
    source: &str,
    ctx: &Context,
    ops: &[Value],
    opts: &Options,
    apply: ApplyFn,
    pre_validation: &Joined<'_, PreValidation>,
    stage: Option<&Stage<'_>>,
) -> (Plan, Option<std::io::Result<fsio::StagedFile>>) {
    let pre_sha256 = match &ctx.source_sha256 {
        Some(known) => {
            debug_assert_eq!(*known, sha256_hex(source.as_bytes()));
            known.clone()
        }
        None => sha256_hex(source.as_bytes()),
    };
    let list_id = transcript::new_uuid();
    let mut shared = Vec::new();
    if let Some(base) = &opts.base_sha256 {
        if !base.eq_ignore_ascii_case(&pre_sha256) {
            shared.push(engine_diag(
                Severity::Warning,
                "base_sha_drift",
                format!(
                    "the document changed since the caller read it: base_sha256 {} but pre_sha256 {}",
                    transcript::short_sha(base),
                    transcript::short_sha(&pre_sha256)
                ),
            ));
        }
    }
    let make = |index: usize,
                op: &Value,
                pre: &str,
                post: &str,
                result: PatchResult,
                extra: Vec<Diagnostic>,
                post_diags: &[Diagnostic],
                elapsed: Option<f64>| {
        let mut diags = pre_validation.get().diags.clone();
        diags.extend(shared.iter().cloned());
        diags.extend(extra);
        diags.extend(post_diags.iter().cloned());
        Record {
            protocol_version: transcript::PROTOCOL_VERSION.into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            op_id: transcript::new_uuid(),
            ts: transcript::now_ts(),
            actor: opts.actor.clone(),
            doc_uri: ctx.doc_uri.clone(),
            pre_sha256: pre.to_string(),
            post_sha256: post.to_string(),
            pre_sha: transcript::short_sha(pre),
            post_sha: transcript::short_sha(post),
            op: op.clone(),
            patch_result: result,
            pre_validation: transcript::summary_for(&diags, Phase::Pre),
            post_validation: transcript::summary_for(&diags, Phase::Post),
            reason: opts.reason.clone(),
            parent_op_id: opts.parent_op_id.clone(),
            base_sha256: opts.base_sha256.clone(),
            diagnostics: Some(diags),
            elapsed_ms: elapsed,
            prev_entry_sha256: None,
            signature: None,
            op_list: Some(OpList {
                id: list_id.clone(),
                index,
                len: ops.len(),
            }),
        }
    };
    // Rejected lists: post state == pre state, so post-validation is the pre result.
    let post_of_pre = || tag(pre_validation.get().diags.clone(), Phase::Post);
    let reject_all = |code: PatchErrorCode, message: &str| Plan {
        records: ops
            .iter()
            .enumerate()
            .map(|(i, op)| {
                let d = engine_diag(Severity::Error, code.as_str(), message.to_string());
                make(
                    i,
                    op,
                    &pre_sha256,
                    &pre_sha256,
                    PatchResult::Rejected,
                    vec![d],
                    &post_of_pre(),
                    None,
                )
            })
            .collect(),
        new_text: source.to_string(),
        accepted: false,
    };

    if ctx.book_manifest {
        return (
            reject_all(
                PatchErrorCode::UnsupportedOp,
                "book manifests (.noma.yml) are not patch targets in v1.0",
            ),
            None,
        );
    }
    if let Some(expected) = &opts.expected_sha {
        let want = expected.to_ascii_lowercase();
        let ok = want.len() >= 8 && pre_sha256.starts_with(&want);
        if !ok {
            return (
                reject_all(
                    PatchErrorCode::ShaMismatch,
                    &format!(
                        "expected_sha {expected} does not match the document's pre_sha {}",
                        transcript::short_sha(&pre_sha256)
                    ),
                ),
                None,
            );
        }
    }
    if opts.strict && Summary::of(&pre_validation.get().diags) == Summary::Error {
        return (
            reject_all(
                PatchErrorCode::PreValidationBlocked,
                "strict mode: pre-validation found errors; no op was applied",
            ),
            None,
        );
    }

    // Apply one op at a time to get exact intermediate states.
    struct Step {
        pre: String,
        post: String,
        result: PatchResult,
        advisories: Vec<Diagnostic>,
        elapsed: f64,
    }
    /// The sha256 of `state`, hashed on first need and given to the step
    /// that produced it (`pending`), whose `post` waits for it.
    fn settle(
        state: &str,
        state_sha: &mut Option<String>,
        steps: &mut [Step],
        pending: &mut Option<usize>,
    ) -> String {
        let sha = state_sha
            .get_or_insert_with(|| sha256_hex(state.as_bytes()))
            .clone();
        if let Some(step) = pending.take().and_then(|i| steps.get_mut(i)) {
            step.post.clone_from(&sha);
        }
        sha
    }
    let mut steps: Vec<Step> = Vec::with_capacity(ops.len());
    let mut state = std::borrow::Cow::Borrowed(source);
    let mut state_sha = Some(pre_sha256.clone());
    // The last applied step, while the text it produced is not hashed yet:
    // the last change's text is hashed once its write has started.
    let mut pending: Option<usize> = None;
    // The tree of `state` (with what its splice replaced), once built.
    let mut state_tree = None;
    // The text before the last change while its tree is not built yet:
    // only the next op or post-validation need it, and the last change's
    // write is started first.
    let mut unspliced: Option<std::borrow::Cow<'_, str>> = None;
    // The pre-validation helper still reads the source tree; waiting for it
    // once the splice is planned lets the splice edit the tree in place
    // instead of copying 20 MB.
    let splice = |before: &str, after: &str| {
        crate::doc::parse_shared_edited(before, after, || {
            pre_validation.get();
        })
    };
    for (k, op) in ops.iter().enumerate() {
        if let Some(before) = unspliced.take() {
            state_tree = Some(splice(&before, &state));
        }
        let advisories = match &ctx.capability {
            Some(cap) => capability::advise(cap, &crate::doc::parse_shared(&state), op),
            None => Vec::new(),
        };
        let started = Instant::now();
        match apply(&state, std::slice::from_ref(op)) {
            Ok(next) => {
                let elapsed = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
                let pre = settle(&state, &mut state_sha, &mut steps, &mut pending);
                if next == state {
                    steps.push(Step {
                        post: pre.clone(),
                        pre,
                        result: PatchResult::Noop,
                        advisories,
                        elapsed,
                    });
                } else {
                    steps.push(Step {
                        pre,
                        post: String::new(),
                        result: PatchResult::Applied,
                        advisories,
                        elapsed,
                    });
                    pending = Some(steps.len() - 1);
                    state_sha = None;
                    unspliced = Some(std::mem::replace(&mut state, std::borrow::Cow::Owned(next)));
                }
            }
            Err(err) => {
                let post_of_pre = post_of_pre();
                let mut records = Vec::with_capacity(k + 1);
                for (i, (op, step)) in ops.iter().zip(steps).enumerate() {
                    let d = engine_diag(
                        Severity::Error,
                        PatchErrorCode::OpListAborted.as_str(),
                        format!(
                            "rolled back: op {k} of this list failed ({})",
                            err.code.as_str()
                        ),
                    );
                    let mut extra = step.advisories;
                    extra.push(d);
                    records.push(make(
                        i,
                        op,
                        &pre_sha256,
                        &pre_sha256,
                        PatchResult::Rejected,
                        extra,
                        &post_of_pre,
                        None,
                    ));
                }
                let mut extra = advisories;
                extra.push(engine_diag(
                    Severity::Error,
                    err.code.as_str(),
                    err.message.clone(),
                ));
                records.push(make(
                    k,
                    op,
                    &pre_sha256,
                    &pre_sha256,
                    PatchResult::Rejected,
                    extra,
                    &post_of_pre,
                    None,
                ));
                return (
                    Plan {
                        records,
                        new_text: source.to_string(),
                        accepted: false,
                    },
                    None,
                );
            }
        }
    }
    let applied = steps
        .iter()
        .filter(|s| s.result == PatchResult::Applied)
        .count();
    let changed = applied > 0;
    let (post_diags, staged) = std::thread::scope(|scope| {
        // The document's temp file is written and fsynced meanwhile.
        let staged = match stage {
            Some(stage) if changed && state.len() >= HELPER_THREAD_BYTES => {
                Some(Joined::spawn(scope, "noma-stage", || stage(&state)))
            }
            Some(stage) if changed => Some(Joined::ready(stage(&state))),
            _ => None,
        };
        // Hashed while the write runs and the pre-validation helper may.
        settle(&state, &mut state_sha, &mut steps, &mut pending);
        if let Some(before) = unspliced.take() {
            state_tree = Some(splice(&before, &state));
        }
        let post_diags = match &state_tree {
            Some((tree, replaced)) => {
                // A single change is re-validated from the pre-validation
                // when it allows; otherwise the tree is validated in full.
                let revalidated = replaced
                    .as_ref()
                    .filter(|_| applied == 1)
                    .and_then(|replaced| {
                        let pre = &pre_validation.get().report;
                        crate::validate::revalidate(pre, tree, replaced, &opts.validate)
                    });
                match revalidated {
                    Some(report) => report.into_diagnostics(&opts.validate),
                    None => crate::validate::validate(tree, &opts.validate),
                }
            }
            // No op changed the text: it is the pre-validated source.
            None => pre_validation.get().diags.clone(),
        };
        (post_diags, staged.map(Joined::into_inner))
    });
    let post_diags = tag(post_diags, Phase::Post);
    let records = ops
        .iter()
        .zip(steps)
        .enumerate()
        .map(|(i, (op, s))| {
            make(
                i,
                op,
                &s.pre,
                &s.post,
                s.result,
                s.advisories,
                &post_diags,
                Some(s.elapsed),
            )
        })
        .collect();
    let plan = Plan {
        records,
        new_text: state.into_owned(),
        accepted: true,
    };
    (plan, staged)
}

/// Fills `prev_entry_sha256` along the batch and serialises it to JSONL.
/// `prev` is the sha256 of the transcript's current last line, if any.
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
    Source(#[from] crate::doc::source::SourceError),
    /// File-system failure.
    #[error("{0}")]
    Io(String),
    /// Malformed capability descriptor.
    #[error("{0}")]
    Capability(String),
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

fn io_err(what: &str, path: &Path, e: std::io::Error) -> EngineError {
    EngineError::Io(format!("{}: {what}: {e}", path.display()))
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
    /// The document bytes changed and were written (InPlace/Out).
    pub wrote_document: bool,
    /// The transcript appended to, if any.
    pub transcript: Option<PathBuf>,
    /// What recovery did before the request (InPlace only).
    pub recovery: Option<Recovery>,
}

/// Pause hook for the crash tests: sleep this many milliseconds between the
/// transcript commit and the document rename, widening the crash window.
const PAUSE_ENV: &str = "NOMA_TEST_PAUSE_BEFORE_RENAME_MS";

/// Runs one patch request against a file.
pub fn patch_file(
    doc_path: &Path,
    ops: &[Value],
    opts: &Options,
    apply: ApplyFn,
) -> Result<Outcome, EngineError> {
    let book_manifest = is_book_manifest(doc_path);
    let capability = if book_manifest {
        None
    } else {
        capability::load(doc_path)
            .map_err(EngineError::Capability)?
            .map(|(_, f)| f)
    };
    let mut ctx = Context {
        doc_uri: transcript::doc_uri(doc_path),
        book_manifest,
        capability,
        source_sha256: None,
    };
    match &opts.write {
        WriteMode::DryRun | WriteMode::Out(_) => {
            let source = crate::doc::source::read_file(doc_path)?;
            let plan = plan(&source, &ctx, ops, opts, apply);
            let mut wrote = false;
            if let (WriteMode::Out(out), true) = (&opts.write, plan.accepted) {
                fsio::atomic_write(out, plan.new_text.as_bytes())
                    .map_err(|e| io_err("cannot write", out, e))?;
                wrote = true;
            }
            Ok(Outcome {
                records: plan.records,
                accepted: plan.accepted,
                new_text: plan.new_text,
                wrote_document: wrote,
                transcript: None,
                recovery: None,
            })
        }
        WriteMode::InPlace => {
            let tpath = opts
                .transcript
                .clone()
                .unwrap_or_else(|| default_transcript_path(doc_path));
            // An unreadable document must not leave a new, empty transcript
            // behind: check it before opening creates one. With a transcript
            // in place the read under the lock reports the same errors, so
            // the common case reads the document once.
            if !tpath.exists() {
                crate::doc::source::read_file(doc_path)?;
            }
            let mut locked = fsio::LockedTranscript::open(&tpath)
                .map_err(|e| io_err("cannot open transcript", &tpath, e))?;
            let mut recovery = match recover::recover(doc_path, &mut locked, apply, opts.force) {
                Ok(recovery) => recovery,
                Err(e) => {
                    // A document that is not text explains itself better
                    // than "an edit no record explains".
                    crate::doc::source::read_file(doc_path)?;
                    return Err(e.into());
                }
            };
            let source = match recovery.document.take() {
                Some(read) => {
                    ctx.source_sha256 = Some(read.sha256);
                    crate::doc::source::decode_owned(doc_path, read.bytes)?
                }
                None => crate::doc::source::read_file(doc_path)?,
            };
            let stage = |text: &str| fsio::StagedFile::write(doc_path, text.as_bytes());
            let (mut plan, staged) = plan_staged(&source, &ctx, ops, opts, apply, Some(&stage));
            // A staged temp file is removed if anything below fails.
            let staged = staged
                .transpose()
                .map_err(|e| io_err("cannot write", doc_path, e))?;
            let bytes = chain_and_serialise(&mut plan.records, recovery.last_line_sha256.clone());
            locked
                .append(&bytes)
                .map_err(|e| io_err("cannot append to transcript", &tpath, e))?;
            let changed = plan.accepted && plan.new_text != source;
            if changed {
                if let Some(ms) = std::env::var(PAUSE_ENV)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
                let staged = match staged {
                    Some(staged) => Ok(staged),
                    None => fsio::StagedFile::write(doc_path, plan.new_text.as_bytes()),
                };
                staged
                    .and_then(fsio::StagedFile::commit)
                    .map_err(|e| io_err("cannot write", doc_path, e))?;
            }
            drop(locked);
            Ok(Outcome {
                records: plan.records,
                accepted: plan.accepted,
                new_text: plan.new_text,
                wrote_document: changed,
                transcript: Some(tpath),
                recovery: Some(recovery),
            })
        }
    }
}

/// Runs recovery and then replays the transcript of `doc_path`.
pub fn replay_file(
    doc_path: &Path,
    transcript_path: Option<&Path>,
    base: Option<&Path>,
    apply: ApplyFn,
) -> Result<(Recovery, transcript::replay::Report), EngineError> {
    crate::doc::source::read_file(doc_path)?;
    let tpath = transcript_path
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_transcript_path(doc_path));
    if !tpath.exists() {
        return Err(EngineError::Io(format!(
            "{}: no such transcript",
            tpath.display()
        )));
    }
    let base_text = match base {
        Some(b) => Some(crate::doc::source::read_file(b)?),
        None => None,
    };
    let mut locked = fsio::LockedTranscript::open(&tpath)
        .map_err(|e| io_err("cannot open transcript", &tpath, e))?;
    // Replay reports an unrecorded edit rather than refusing: force = true.
    let recovery = match recover::recover(doc_path, &mut locked, apply, true) {
        Ok(r) => r,
        // A bad record is exactly what replay reports (with its line): go on without repairs.
        Err(RecoveryError::Transcript { err, .. }) => Recovery {
            messages: vec![format!("recovery skipped: {err}")],
            ..Recovery::default()
        },
        Err(e) => return Err(e.into()),
    };
    let bytes = locked
        .read_all()
        .map_err(|e| io_err("cannot read", &tpath, e))?;
    let doc = crate::doc::source::read_file(doc_path)?;
    drop(locked);
    let report = transcript::replay::replay(&bytes, base_text.as_deref(), &doc, apply);
    Ok((recovery, report))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::transcript::ActorKind;
    use serde_json::json;

    /// Test applier: `{"op":"append","text":T}` appends T; `{"op":"same"}`
    /// is a noop; `{"op":"fail"}` fails with target_missing.
    pub(crate) fn fake_apply(src: &str, ops: &[Value]) -> Result<String, PatchError> {
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
        let ops = [
            json!({"op":"append","text":"a\n"}),
            json!({"op":"same"}),
            json!({"op":"append","text":"b\n"}),
        ];
        let p = plan(
            "x\n",
            &Context::default(),
            &ops,
            &Options::new(actor()),
            fake_apply,
        );
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
        let ops = [
            json!({"op":"append","text":"a"}),
            json!({"op":"fail"}),
            json!({"op":"append","text":"b"}),
        ];
        let p = plan(
            "x",
            &Context::default(),
            &ops,
            &Options::new(actor()),
            fake_apply,
        );
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
        let ops = [
            json!({"op":"append","text":"a"}),
            json!({"op":"append","text":"b"}),
        ];
        let mut o = Options::new(actor());
        o.expected_sha = Some("00000000".into());
        let p = plan("x", &Context::default(), &ops, &o, fake_apply);
        assert!(p.records.iter().all(|r| codes(r) == ["sha_mismatch"]));
        o.expected_sha = Some(transcript::short_sha(&sha256_hex(b"x")));
        o.base_sha256 = Some(sha256_hex(b"older"));
        let mut p = plan("x", &Context::default(), &ops, &o, fake_apply);
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
        let p = plan("x", &ctx, &ops, &Options::new(actor()), fake_apply);
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
        crate::validate::validate(&crate::doc::parse(src), &Default::default())
    }

    /// One `same` (noop) op on `src` with the test applier.
    fn plan_noop(src: &str, opts: &Options) -> Plan {
        plan(
            src,
            &Context::default(),
            &[json!({"op":"same"})],
            opts,
            fake_apply,
        )
    }

    #[test]
    fn big_documents_are_pre_validated_on_a_helper_thread_with_the_same_result() {
        // Over the threshold, with a pre-validation error (an unclosed
        // directive at the end): the threaded path must report it exactly
        // like the inline one, tagged `pre`, and strict mode must block.
        let mut src = crate::synth::document(300);
        src.push_str("\n::claim{id=\"open\"}\nnever closed\n");
        assert!(src.len() >= HELPER_THREAD_BYTES);
        let inline = tag(validate_parsed(&src), Phase::Pre);
        assert_eq!(Summary::of(&inline), Summary::Error);
        let mut o = Options::new(actor());
        let p = plan_noop(&src, &o);
        let pre: Vec<&Diagnostic> = p.records[0]
            .diagnostics
            .iter()
            .flatten()
            .filter(|d| d.phase == Some(Phase::Pre))
            .collect();
        assert_eq!(pre.len(), inline.len());
        assert!(pre.iter().zip(&inline).all(|(a, b)| **a == *b));
        assert!(p.accepted);
        o.strict = true;
        let p = plan_noop(&src, &o);
        assert!(codes(&p.records[0])
            .iter()
            .any(|c| c == "pre_validation_blocked"));
    }
}
