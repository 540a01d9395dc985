//! `noma rm`: a document's removal as a recorded event. One
//! `x-noma/remove_document` record (signed like any other write: the same
//! [`noma_git::patch::context()`] as `noma patch`) is appended to the transcript, then
//! the document is deleted; the transcript and the provenance sidecar stay
//! as its tombstone, so the hook and `noma reconcile` can tell a recorded
//! removal from a deletion nobody signed. Nothing is staged: as with
//! `noma patch`, the person commits what the command wrote.

use std::path::Path;

use noma_core::diag::shell_word;
use noma_store::engine::{self, EngineError, Outcome};

use crate::report::output::{Exit, Output};

/// `noma rm`'s answer to the engine's `result` for `file`: passed when the
/// removal is recorded and the document deleted (or was already), failed
/// when the request was refused (an unrecorded edit first needs `noma
/// record`), not run when it could not be carried out.
pub fn answer(file: &Path, result: Result<Outcome, EngineError>, json: bool) -> Output {
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            let verdict = if e.is_check_failure() {
                Exit::Failed
            } else {
                Exit::NotRun
            };
            let mut c = Output::error(format!("noma rm: {e}"), verdict);
            if e.is_check_failure() {
                c.err(format!(
                    "noma rm: record the edit first (noma record {}), then remove it",
                    shell_word(&file.to_string_lossy())
                ));
            }
            return c;
        }
    };
    let tpath = outcome
        .transcript
        .clone()
        .unwrap_or_else(|| engine::default_transcript_path(file));
    let side = noma_provenance::sidecar::sidecar_path(file);
    let mut c = Output::default();
    if json {
        let mut v = super::report::outcome_json(&outcome, false);
        v["removed"] = serde_json::json!(!file.exists());
        c.json(v);
    } else if !outcome.accepted {
        c.err(format!(
            "noma rm: {}: the removal was refused",
            file.display()
        ));
        for r in &outcome.records {
            for d in r.diagnostics.iter().flatten() {
                c.err(format!(
                    "    {}: {} {}",
                    d.severity.as_str(),
                    d.code,
                    d.message
                ));
            }
        }
    } else {
        let stage: Vec<String> = [file, tpath.as_path(), side.as_path()]
            .iter()
            .filter(|p| *p == &file || p.exists())
            .map(|p| shell_word(&p.to_string_lossy()))
            .collect();
        let what = match outcome.records.last() {
            Some(r) => format!("recorded at {} ({})", tpath.display(), r.op_id),
            None => "already recorded".to_string(),
        };
        c.out(format!(
            "removed {}: {what}; the transcript stays as its tombstone",
            file.display()
        ));
        c.out(format!("commit it: git add -A -- {}", stage.join(" ")));
    }
    if !outcome.accepted {
        c.at_least(Exit::Failed);
    }
    c
}
