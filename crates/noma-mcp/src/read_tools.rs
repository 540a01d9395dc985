//! The read-only document tools of Annex B: `read_doc` (§B.3), `list_ids`
//! (§B.4) and `validate_doc` (§B.5).

use std::path::Path;

use serde_json::{json, Map, Value};

use super::documents::{read_source, validate_options, FileArgs};
use super::registry::{ToolError, ToolResult};
use super::Context;
use noma_core::diag::Severity;
use noma_core::doc::{AttrValue, NodeKind};
use noma_store::engine;

/// `read_doc` (§B.3): every block in document order, as the reference's
/// server lists them: the frontmatter first (when it holds any text), then
/// each node pre-order, a list followed by its `list_item` entries (a list's
/// `childCount` is its item count). Blocks with an id carry their source
/// hash, the `base_hash` to send back.
pub fn read_doc(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "read_doc")?;
    let src = read_source(&path)?;
    let doc = noma_core::doc::parse(&src);
    let info = ctx.cache.doc_info(&src);
    let mut hashes = info.blocks.iter().peekable();
    let mut blocks = Vec::with_capacity(info.blocks.len() * 2);
    let plain = |kind: &str, lines: [u32; 2]| json!({"type": kind, "childCount": 0, "lines": lines, "patchable": false});
    if let Some(fm) = doc.frontmatter.as_ref().filter(|fm| !fm.raw.is_empty()) {
        blocks.push(plain("frontmatter", [fm.span.start, fm.span.end]));
    }
    for node in doc.walk() {
        let mut b = Map::with_capacity(10);
        if let Some(id) = &node.id {
            b.insert("id".into(), json!(id));
        }
        b.insert("type".into(), json!(node.type_name()));
        match &node.kind {
            NodeKind::Directive { name, attrs, .. } => {
                b.insert("name".into(), json!(name));
                let attrs: Map<String, Value> = attrs
                    .iter()
                    .filter(|(k, _)| *k != "id")
                    .map(|(k, v)| (k.to_string(), AttrValue::to_json(v)))
                    .collect();
                b.insert("attrs".into(), Value::Object(attrs));
            }
            NodeKind::Section { title, level, .. } => {
                b.insert("title".into(), json!(title));
                b.insert("level".into(), json!(level));
            }
            _ => {}
        }
        if !node.aliases.is_empty() {
            b.insert("aliases".into(), json!(node.aliases));
        }
        let items = match &node.kind {
            NodeKind::List { items, .. } => items.as_slice(),
            _ => &[],
        };
        b.insert(
            "childCount".into(),
            json!(node.children().len() + items.len()),
        );
        b.insert("lines".into(), json!([node.span.start, node.span.end]));
        let patchable = node.id.as_deref().is_some_and(|id| !id.is_empty());
        b.insert("patchable".into(), json!(patchable));
        if let Some(id) = &node.id {
            // The cache lists id-bearing nodes in the same pre-order; fall
            // back to hashing the slice if the two ever disagree.
            let hash = match hashes.peek() {
                Some(h) if h.id == id && h.lines == [node.span.start, node.span.end] => {
                    let s = h.sha256.clone();
                    hashes.next();
                    s
                }
                _ => noma_core::doc::hash::slice_hash(&src, node.span.start, node.span.end),
            };
            b.insert("hash".into(), json!(hash));
        }
        blocks.push(Value::Object(b));
        for item in items {
            blocks.push(plain("list_item", [item.span.start, item.span.end]));
        }
    }
    // Moved in, not through `json!`, which would serialize the blocks into
    // a second tree: that copy was the costliest part of a large read.
    let mut out = Map::with_capacity(4);
    out.insert("blocks".into(), Value::Array(blocks));
    out.insert("sha256".into(), json!(info.sha256));
    let mut out = Value::Object(out);
    match unrecorded_edit(ctx, &path) {
        Ok(edit) => out["unrecorded_edit"] = edit,
        Err(e) => {
            out["unrecorded_edit"] = Value::Null;
            out["transcript_error"] = json!(e);
        }
    }
    Ok(out)
}

/// `read_doc`'s `unrecorded_edit`: the edit a patch would be refused for
/// (code unrecorded_edit), found the way the engine's recovery finds it,
/// with the command a person runs to record it; `null` when there is none.
fn unrecorded_edit(ctx: &Context, path: &Path) -> Result<Value, String> {
    let tpath = ctx
        .derived(&engine::default_transcript_path(path))
        .map_err(|e| match e {
            ToolError::System { error, .. } | ToolError::User { error, .. } => error,
        })?;
    let Some(edit) =
        engine::recover::find_unrecorded_edit(path, &tpath).map_err(|e| e.to_string())?
    else {
        return Ok(Value::Null);
    };
    let shown = ctx.shown(path);
    let command = format!("noma record {}", noma_core::diag::shell_word(&shown));
    Ok(json!({
        "document_sha256": edit.document_sha256,
        "expected_sha256": edit.expected_sha256,
        "line": edit.line,
        "op_id": edit.op_id,
        "record_command": command,
        "message": format!(
            "{shown} holds an edit its transcript does not record (it is not the state record \
             {} at line {} leaves): patches are refused with unrecorded_edit until a person \
             reviews the edit and runs `{command}`",
            edit.op_id, edit.line
        ),
    }))
}

/// `list_ids` (§B.4).
pub fn list_ids(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "list_ids")?;
    let src = read_source(&path)?;
    let reg = noma_core::doc::ids::registry(&noma_core::doc::parse(&src));
    Ok(json!({ "ids": reg.ids, "aliases": reg.aliases }))
}

/// `validate_doc` (§B.5).
pub fn validate_doc(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "validate_doc")?;
    let src = read_source(&path)?;
    let diags =
        noma_core::validate::validate(&noma_core::doc::parse(&src), &validate_options(&path));
    let ok = !diags.iter().any(|d| d.severity == Severity::Error);
    Ok(json!({ "ok": ok, "diagnostics": diags }))
}
