//! Why a patch request was refused, in the words an agent can act on:
//! the failing op's engine code and index, a stale precondition before an
//! unrecorded edit (§3.4 order), and what to do about an edit the
//! transcript does not record (a person records it; a merge in progress
//! left `::conflict` blocks).

use std::path::Path;

use serde_json::{json, Map, Value};

use super::documents::read_source;
use super::registry::ToolError;
use super::Context;
use noma_core::diag::{Diagnostic, Phase, Severity};
use noma_core::plan::EngineCode;
use noma_core::transcript::{self, Record};
use noma_store::engine::{self, EngineError, Options, RecoveryError, WriteMode};

/// The ids of the merge driver's `::conflict` blocks in `text`.
fn conflict_blocks(text: &str) -> Vec<String> {
    let prefix = noma_core::validate::blocks::CONFLICT_ID_PREFIX;
    text.lines()
        .filter_map(|l| {
            let rest = l.trim_start_matches(':').strip_prefix("conflict{id=\"")?;
            rest.starts_with(prefix)
                .then(|| rest.split('"').next().unwrap_or_default().to_string())
        })
        .collect()
}

/// The `sha_mismatch` a request's `expected_sha` or `baseHash` earns
/// against the document as it is on disk (a dry run: nothing is read
/// under the lock, written or recorded), if any.
fn stale_precondition(path: &Path, ops: &[Value], opts: &Options) -> Option<ToolError> {
    let mut dry = opts.clone();
    dry.write = WriteMode::DryRun;
    let outcome = engine::patch_file(path, ops, &dry).ok()?;
    if accepted(&outcome.records) {
        return None;
    }
    let e = rejection(&outcome.records);
    matches!(&e, ToolError::User { code, .. } if code == "sha_mismatch").then_some(e)
}

/// The rejection reason of a refused request: the failing record's own
/// engine code (not `op_list_aborted`), with its index.
pub(crate) fn rejection(records: &[Record]) -> ToolError {
    fn engine_error(r: &Record) -> Option<&Diagnostic> {
        r.diagnostics.iter().flatten().rev().find(|d| {
            d.severity == Severity::Error
                && d.phase == Some(Phase::Pre)
                && EngineCode::of(d).is_some_and(|c| {
                    c != EngineCode::Patch(noma_core::patch::PatchErrorCode::OpListAborted)
                })
        })
    }
    for (i, r) in records.iter().enumerate().rev() {
        if let Some(d) = engine_error(r) {
            let mut extra = Map::new();
            extra.insert("op_index".into(), json!(i));
            return ToolError::User {
                code: d.code.clone(),
                error: d.message.clone(),
                extra,
            };
        }
    }
    ToolError::user("invalid_content", "the patch was rejected")
}

/// Whether a request was accepted: it has records and none was rejected.
pub(crate) fn accepted(records: &[Record]) -> bool {
    !records.is_empty()
        && records
            .iter()
            .all(|r| r.patch_result != transcript::PatchResult::Rejected)
}

/// The refusal of a request the engine could not carry out.
pub(crate) fn refusal(
    ctx: &Context,
    path: &Path,
    ops: &[Value],
    opts: &Options,
    e: EngineError,
) -> ToolError {
    match e {
        // A request that is not made of catalogue ops is refused whole and
        // writes nothing (the engine checks before it records).
        EngineError::InvalidOp(e) => ToolError::System {
            error: e.to_string(),
            code: Some(e.code().as_str().to_string()),
        },
        EngineError::Recovery(RecoveryError::UnrecordedEdit(edit)) => {
            // §3.4 order: the caller's own preconditions, checked against
            // the document on disk, come before the refusal.
            stale_precondition(path, ops, opts).unwrap_or_else(|| unrecorded(ctx, path, &edit))
        }
        e @ EngineError::Recovery(_) if e.is_check_failure() => ToolError::system(format!(
            "{e}. The document has edits its transcript does not explain; a person should \
             run `noma record` (or review the change) before agents patch it again"
        )),
        EngineError::UnsafeField(u) => ToolError::user(
            if u.field == "reason" {
                "invalid_reason"
            } else {
                "invalid_actor"
            },
            format!("{u}; nothing was written"),
        ),
        e => ToolError::system(e),
    }
}

/// The `unrecorded_edit` refusal: what the transcript does not record, why
/// (a joined transcript, a merge in progress, an edit outside noma), and
/// who records it.
fn unrecorded(ctx: &Context, path: &Path, edit: &engine::recover::UnrecordedEdit) -> ToolError {
    let shown = ctx.shown(path);
    let tpath = engine::default_transcript_path(path);
    if let Some(advice) = noma_git::merge::joined_file::advice_for_file(&shown, &tpath) {
        return ToolError::user(
            "unrecorded_edit",
            format!("{shown}: the transcript {advice}; nothing was written or recorded"),
        );
    }
    // A merge in progress leaves `::conflict` blocks the transcript does
    // not record: say so, an agent cannot resolve them.
    let conflicts = read_source(path)
        .map(|text| conflict_blocks(&text))
        .unwrap_or_default();
    let why = if conflicts.is_empty() {
        "someone edited it outside noma".to_string()
    } else {
        format!(
            "a merge in progress left {} unresolved ::conflict block(s) ({}); a person \
             keeps one version of each and deletes the ::conflict block",
            conflicts.len(),
            conflicts.join(", ")
        )
    };
    ToolError::user(
        "unrecorded_edit",
        format!(
            "unrecorded edit: {shown} (sha256 {}) is not the state its transcript's last \
             record (line {}, op_id {}) leaves ({}): {why}. \
             Nothing was written or recorded. A person should review the change and run \
             `noma record {}` to record it; then read_doc again and retry",
            transcript::short_sha(&edit.document_sha256),
            edit.line,
            edit.op_id,
            transcript::short_sha(&edit.expected_sha256),
            noma_core::diag::shell_word(&shown),
        ),
    )
}
