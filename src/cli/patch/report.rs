//! How a patch request's outcome is reported on a command line: the JSON
//! answer (the new document on a dry run), the lines for people (one per
//! record, the diagnostics worth reading, a dry run's unified diff), and a
//! request the engine could not carry out.

use std::path::Path;

use serde_json::{json, Value};

use noma_core::plan;
use noma_core::transcript::{PatchResult, Record};
use noma_store::engine::{self, EngineError, Options};

use crate::report::output::{Exit, Output, Part};

/// The JSON answer to a request refused before recording.
pub fn refusal_json(e: &plan::InvalidOp) -> Value {
    json!({
        "accepted": false,
        "records": [],
        "error": {
            "code": e.code().as_str(),
            "message": e.to_string(),
            "op_index": e.index,
        },
    })
}

/// The JSON answer to a request the engine carried out (with the new
/// document on a dry run).
pub fn outcome_json(outcome: &engine::Outcome, dry: bool) -> Value {
    let mut out = json!({ "accepted": outcome.accepted, "records": outcome.records });
    if let Some(r) = &outcome.recovery {
        out["recovery"] = serde_json::to_value(r).unwrap_or(Value::Null);
    }
    if let Some(t) = &outcome.transcript {
        out["transcript"] = json!(t.display().to_string());
    }
    if dry {
        out["document"] = json!(outcome.new_text);
    }
    out
}

/// The outcome for people: one line per record with the diagnostics worth
/// reading, then the validation summary; a dry run prints the changed
/// lines against `before` (without it, the new document) on stdout and the
/// rest on stderr.
pub fn human(outcome: engine::Outcome, dry: bool, before: Option<&str>, file: &Path) -> Output {
    let mut c = Output::default();
    if let Some(r) = &outcome.recovery {
        for m in &r.messages {
            c.err(format!("noma patch: recovery: {m}"));
        }
    }
    // A dry run prints the document on stdout, so the summary goes to stderr.
    let mut lines = Vec::new();
    for r in &outcome.records {
        record_lines(r, dry, &mut lines);
    }
    if let Some(first) = outcome.records.first() {
        lines.push(format!(
            "pre_validation: {}, post_validation: {}",
            first.pre_validation.as_str(),
            first.post_validation.as_str()
        ));
    }
    for line in lines {
        c.parts.push(if dry {
            Part::Stderr(format!("{line}\n"))
        } else {
            Part::Stdout(format!("{line}\n"))
        });
    }
    if !dry {
        return c;
    }
    c.err("dry run: nothing was written or recorded; `--inplace` writes the document and records the ops".to_string());
    match before {
        Some(old) => {
            let shown = file.display().to_string();
            let diff = similar::TextDiff::from_lines(old, outcome.new_text.as_str());
            c.out_text(
                diff.unified_diff()
                    .context_radius(2)
                    .header(&shown, &format!("{shown} (dry run)"))
                    .to_string(),
            );
        }
        None => c.out_text(outcome.new_text),
    }
    c
}

/// One record's line and the diagnostics a person needs from it: the
/// engine's own, and the errors of a rejected op. A dry run's op is one
/// that would apply: nothing was applied.
fn record_lines(r: &Record, dry: bool, lines: &mut Vec<String>) {
    let target = ["id", "from", "parent", "target"]
        .iter()
        .find_map(|k| r.op.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    let result = match r.patch_result {
        PatchResult::Applied if dry => "would apply",
        other => other.as_str(),
    };
    lines.push(format!(
        "{:<8} {} {}  {} -> {}",
        result,
        r.op_name(),
        target,
        r.pre_sha,
        r.post_sha
    ));
    for d in r.diagnostics.iter().flatten() {
        // The count of standing diagnostics is for the record, not the screen.
        if d.code == plan::UNCHANGED_DIAGNOSTICS {
            continue;
        }
        let engine_code = plan::EngineCode::of(d).is_some();
        if engine_code
            || r.patch_result == PatchResult::Rejected
                && d.severity == noma_core::diag::Severity::Error
        {
            lines.push(format!(
                "    {}: {} {}",
                d.severity.as_str(),
                d.code,
                d.message
            ));
        }
    }
}

/// A request the engine could not carry out: why (a joined transcript's
/// repair advice where that is the cause), the refusal's JSON when `json`,
/// and whether the check failed or the request could not run.
pub fn failure(e: &EngineError, file: &Path, opts: &Options, json: bool) -> Output {
    let joined = match e {
        // A joined transcript (a merge without the driver) ends at neither
        // branch's document: that is the cause, and `noma repair` the fix.
        EngineError::Recovery(_) if e.is_check_failure() => {
            let tpath = opts
                .transcript
                .clone()
                .unwrap_or_else(|| engine::default_transcript_path(file));
            noma_git::merge::joined_file::advice_for_file(&file.to_string_lossy(), &tpath)
        }
        _ => None,
    };
    let mut c = match joined {
        Some(advice) => Output::error(
            format!("noma patch: {}: {advice}", file.display()),
            Exit::Passed,
        ),
        None => Output::error(format!("noma patch: {e}"), Exit::Passed),
    };
    match e {
        // Refused before anything was recorded ("could not run"), but with
        // its §3.5 code, so a JSON client gets `error.code`.
        EngineError::InvalidOp(invalid) => {
            if json {
                c.json(refusal_json(invalid));
            }
            c.at_least(Exit::NotRun);
        }
        _ if e.is_check_failure() => c.at_least(Exit::Failed),
        _ => c.at_least(Exit::NotRun),
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_request_carries_its_code() {
        let unknown = plan::check_request(&[json!({"op": "explode", "id": "a"})]).unwrap_err();
        let v = refusal_json(&unknown);
        assert_eq!(v["error"]["code"], "unsupported_op");
        assert_eq!(v["accepted"], false);
        let missing = plan::check_request(&[
            json!({"op": "delete_block", "id": "a"}),
            json!({"op": "rename_id", "from": "a"}),
        ])
        .unwrap_err();
        let v = refusal_json(&missing);
        assert_eq!(v["error"]["code"], "invalid_content");
        assert_eq!(v["error"]["op_index"], 1);
    }
}
