//! The §B.8 directions that read what lies beside a document:
//! `transcript_read` (its newest records, with who signed and approved
//! them) and `describe_capabilities` (its Annex A descriptor).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::documents::FileArgs;
use super::registry::{ToolError, ToolResult};
use super::Context;
use noma_core::transcript::{self, Record};
use noma_store::engine::{self, capability};

/// Arguments of `transcript_read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TranscriptReadArgs {
    /// The .noma file's path.
    pub file: String,
    /// Most records returned (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// Only records after this op_id.
    #[serde(default)]
    pub after_op_id: Option<String>,
}

/// Default and ceiling of `transcript_read.limit`.
const TRANSCRIPT_LIMIT: (u32, u32) = (20, 500);

/// `transcript_read` (§B.8 direction).
pub fn transcript_read(ctx: &Context, args: TranscriptReadArgs) -> ToolResult {
    let doc = ctx.doc_path(&args.file, "transcript_read")?;
    let tpath = ctx.derived(&engine::default_transcript_path(&doc))?;
    let shown = ctx.shown(&tpath);
    let bytes = match noma_store::fsio::read_regular(&tpath) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(json!({
                "transcript": shown, "exists": false, "total": 0,
                "records": [], "truncated": false,
            }))
        }
        Err(e) => return Err(ToolError::system(format!("{shown}: cannot read: {e}"))),
    };
    let parsed = transcript::parse_transcript(&bytes).map_err(|e| {
        let mut extra = Map::new();
        extra.insert("line".into(), json!(e.line()));
        ToolError::User {
            code: "transcript_invalid".into(),
            error: format!("{shown}: {e}"),
            extra,
        }
    })?;
    let total = parsed.entries.len();
    let start = match &args.after_op_id {
        None => 0,
        Some(id) => match parsed.entries.iter().position(|e| &e.record.op_id == id) {
            Some(i) => i + 1,
            None => {
                return Err(ToolError::user(
                    "unknown_op_id",
                    format!("{shown} has no record with op_id {id}"),
                ))
            }
        },
    };
    let limit = args
        .limit
        .unwrap_or(TRANSCRIPT_LIMIT.0)
        .clamp(1, TRANSCRIPT_LIMIT.1) as usize;
    let tail = &parsed.entries[start..];
    let skip = tail.len().saturating_sub(limit);
    let records: Vec<&Record> = tail[skip..].iter().map(|e| &e.record).collect();
    let mut out = json!({
        "transcript": shown,
        "exists": true,
        "total": total,
        "records": records,
        "truncated": skip > 0,
        "torn_tail": parsed.torn_tail.is_some(),
    });
    // Who signed and approved each record, when the document has a
    // provenance sidecar (trusting the workspace's allowed signers).
    if noma_git::provenance::sidecar_path(&doc).exists() {
        let shown_ids: std::collections::HashSet<&str> =
            records.iter().map(|r| r.op_id.as_str()).collect();
        match noma_git::provenance::check::check_worktree(&doc, &bytes) {
            Ok(rep) => {
                let statuses: Vec<_> = rep
                    .records
                    .iter()
                    .filter(|s| shown_ids.contains(s.op_id.as_str()))
                    .collect();
                out["provenance"] = json!({"records": statuses, "sidecar": rep.sidecar});
            }
            Err(e) => out["provenance"] = json!({"error": e}),
        }
    }
    Ok(out)
}

/// `describe_capabilities` (§B.8 direction, Annex A).
pub fn describe_capabilities(ctx: &Context, args: FileArgs) -> ToolResult {
    let doc = ctx.doc_path(&args.file, "describe_capabilities")?;
    let sidecar = ctx.derived(&capability::sidecar_path(&doc))?;
    let shown = ctx.shown(&sidecar);
    let loaded = capability::load(&doc).map_err(|e| {
        ToolError::user(
            "invalid_descriptor",
            e.to_string()
                .replace(&doc.parent().unwrap_or(&doc).display().to_string(), "."),
        )
    })?;
    let extension_ops = extension_ops(ctx);
    let Some((_, file)) = loaded else {
        return Ok(json!({
            "extension_ops": extension_ops,
            "sidecar": shown,
            "exists": false,
            "descriptor": null,
            "grants": {},
            "rename_ids": false,
            "enforcement": "advisory",
            "note": "No descriptor: nothing is granted to agents (Annex A.2). In v1.0 this is \
        advisory only; patches are not refused on its account.",
        }));
    };
    let d = &file.noma_agent;
    let grants: Map<String, Value> = d
        .blocks
        .iter()
        .flatten()
        .map(|(name, policy)| {
            let ops: Vec<&str> = policy.ops.iter().flatten().map(|o| o.as_str()).collect();
            (name.clone(), json!(ops))
        })
        .collect();
    let rename = d.ids.as_ref().and_then(|i| i.rename).unwrap_or(false);
    Ok(json!({
        "extension_ops": extension_ops,
        "sidecar": shown,
        "exists": true,
        "descriptor": file,
        "grants": grants,
        "rename_ids": rename,
        "enforcement": "advisory",
        "note": "v1.0: advisory only. Ops not granted here still apply but are flagged with \
    capability_not_granted warnings in the transcript.",
    }))
}

/// The one extension op, as `describe_capabilities` lists it: agents'
/// requests refuse it; `noma record` writes it for hand edits when the
/// repository's policy allows (`record_text_edits`).
fn extension_ops(ctx: &Context) -> Value {
    let policy = noma_git::config::Policy::load(ctx.workspace.root());
    let (allowed, error) = match &policy {
        Ok(p) => (json!(p.file.record_text_edits), Value::Null),
        Err(e) => (Value::Null, json!(e.to_string())),
    };
    json!([{
        "op": noma_core::patch::REPLACE_LINES,
        "fields": {"line": "1-based line where `old` starts", "old": "the replaced whole lines", "new": "the new whole lines"},
        "accepted_in_patch_requests": false,
        "written_by": "noma record (actor kind human): hand edits no v1.0 op expresses, and a transcript's genesis record; noma itself (actor kind tool): the genesis record before the first patch of a document no commit holds",
        "allowed_by_policy": allowed,
        "policy_error": error,
    }])
}
